"""Verdicts: what a check found, with the numbers that show it.

A bound check compares a measured left side with a computed right side under a stated
tolerance; the evidence keeps both (worst ratio, worst excess, counts, tolerance), so a reader
can judge the margin, not only the word.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import numpy as np

from boundbench.framework.validate import (
    Array,
    Bool,
    Choice,
    Float,
    Int,
    Rng,
    Text,
    broadcastable,
    checked,
    real,
)

STATUSES = ("holds", "violated", "ill-posed", "supported", "contradicted", "no-effect",
            "depends-on-reading", "inconclusive", "not-testable")
"""What a verdict can say (the report's glossary, ``boundbench.audit.VERDICT_HELP``, defines
each): a bound or identity ``holds`` or is ``violated``, or is ``ill-posed`` where it
presupposes a unique optimum that does not exist (it holds for the closest pair of optima and
fails for the farthest); a trend is ``supported``, ``contradicted`` (the opposite effect) or
shows ``no-effect`` (a change inside the no-effect band); ``depends-on-reading`` where the
readings of a choice the paper leaves open disagree; ``inconclusive``; ``not-testable``."""

FINDINGS = ("violated", "contradicted", "no-effect", "ill-posed", "depends-on-reading")
"""The verdicts that go against a paper's claim (as stated, or as read), listed on the errata
sheet."""


class Evidence(dict):
    """A verdict's evidence: a plain dict for readers (JSON, pandas), read-only for writers."""

    def _read_only(self, *args: Any, **kwargs: Any):
        raise TypeError("a verdict's evidence is built once: use Verdict.with_evidence(...)")

    __setitem__ = __delitem__ = update = pop = popitem = clear = setdefault = _read_only
    __ior__ = _read_only

    def __reduce__(self):
        return (Evidence, (dict(self),))


class BoundSides(NamedTuple):
    """Both sides of an inequality ``lhs <= rhs``, elementwise over instances."""

    lhs: np.ndarray
    rhs: np.ndarray


@dataclass(frozen=True)
class Verdict:
    status: str
    reason: str
    evidence: Mapping[str, Any] = field(default_factory=dict)
    figure: str | None = None
    table: str | None = None

    def __post_init__(self) -> None:
        if self.status not in STATUSES:
            raise ValueError(f"status must be one of {STATUSES} (got {self.status!r})")
        # evidence is built once: a read-only copy
        object.__setattr__(self, "evidence", Evidence(self.evidence))

    def with_outputs(self, figure: str | None, table: str | None) -> Verdict:
        return Verdict(self.status, self.reason, self.evidence, figure, table)

    def with_evidence(self, **extra: Any) -> Verdict:
        """A new verdict whose evidence adds ``extra`` (for keys known only after the verdict,
        e.g. from its status); the status and reason are unchanged."""
        return Verdict(self.status, self.reason, {**self.evidence, **extra}, self.figure,
                       self.table)


def _num(x: Any) -> Any:
    """Plain Python scalars for JSON."""
    if isinstance(x, np.generic):
        return x.item()
    return x


def fmt_sides(lhs: float, rhs: float, digits: int = 4) -> tuple[str, str]:
    """Both sides of a bound to the same number of significant digits (at least ``digits``), as
    many as it takes for unequal sides to print unequally: a violation by 9e-4 at 10.17 must not
    read "lhs = 10.17, rhs = 10.17".

    >>> fmt_sides(10.1709, 10.1700)
    ('10.171', '10.17')
    """
    for p in range(digits, 18):
        a, b = f"{lhs:.{p}g}", f"{rhs:.{p}g}"
        if a != b or lhs == rhs:
            return a, b
    return f"{lhs!r}", f"{rhs!r}"


def fmt_ratio(ratio: float, digits: int = 4) -> str:
    """A ratio to at least ``digits`` significant digits, and as many more as it takes to print
    a ratio that is not exactly 1 as something other than 1 (``1.0001``, never ``1``).

    >>> fmt_ratio(1.00009), fmt_ratio(2.583214), fmt_ratio(1.0)
    ('1.0001', '2.583', '1')
    """
    for p in range(digits, 18):
        text = f"{ratio:.{p}g}"
        if ratio == 1 or float(text) != 1:
            return text
    return repr(ratio)


BINDING = 0.10  # an instance binds when its lhs is within 10% of its rhs

NUMERIC_RTOL = 1e-5
"""The relative tolerance of the bound and identity checks: lhs may exceed rhs by 1e-5 of the
sides' size before a bound counts as violated. Float64 evaluation errs by < 1e-12 and the
solvers by ~1e-8; 1e-5 is ten times what the metamorphic test's perturbation (each measured value
changed by a relative :data:`PERTURBATION`) can move a ratio, so a bound that binds exactly
(lhs = rhs up to rounding, as Lemma A.1.2 does at eta = 2/beta) holds on every machine instead of
flipping with the last bits of a BLAS kernel."""

PERTURBATION = 1e-6
"""The relative change of every measured value under which a verdict must not flip (the
metamorphic test, ``tests/test_metamorphic.py``)."""

FRAGILE = {"relative": 4e-6, "rho": 0.02, "ratio": 0.005, "log ratio": 0.005, "exponent": 0.01,
           "band half-width": 0.05}
"""A verdict is *fragile* when its deciding statistic lies within this distance of the nearest
threshold, in the statistic's own units (``margin_units``): ``relative``, lhs - rhs over the
sides' size for a bound or identity (twice what :data:`PERTURBATION` can move it); ``rho``, a
Spearman interval's edge from 0; ``ratio``, a ratio interval's edge from 1 or from the no-effect
band; ``log ratio``, a reversal's interval from 0; ``exponent``, a fitted power's interval from
the predicted power; ``band half-width``, an interval's distance from the edge of a claim's no-effect
band that would change its outcome, over the band's half-width
(:func:`~boundbench.framework.bands.band_margin`; 0.05 of a half-width is what ``ratio``'s 0.005
is of the 1 +- 10% band). The report flags fragile verdicts, and the
quick-audit test does not compare them with the record."""

_PERTURB: list[tuple[np.random.Generator, float]] = []
PERTURBED_CALLS = [0]  # how many measurements a perturbed block changed (the test's coverage)


class perturbed:
    """Within this block every verdict rule of this module decides on its measured values each
    multiplied by ``1 + rel u`` (``u`` uniform in [-1, 1], drawn from ``seed``): the metamorphic
    test re-decides a claim from measurements perturbed far above rounding and checks that its
    verdict stands.

    >>> with perturbed(seed=0):
    ...     v = bound_verdict(BoundSides(np.array([1.0]), np.array([1.0])))
    >>> v.status
    'holds'
    """

    def __init__(self, *, seed: int, rel: float = PERTURBATION) -> None:
        self.rng, self.rel = np.random.default_rng(seed), float(rel)

    def __enter__(self) -> perturbed:
        _PERTURB.append((self.rng, self.rel))
        return self

    def __exit__(self, *exc: Any) -> None:
        _PERTURB.pop()


def measured(x: Any) -> Any:
    """``x`` as the rules see it: unchanged, or perturbed inside :class:`perturbed`. Every
    verdict rule passes its measured inputs through it, and so does a check that compares a
    measurement with a threshold itself, so that the metamorphic test reaches its decision."""
    if not _PERTURB:
        return x
    PERTURBED_CALLS[0] += 1
    rng, rel = _PERTURB[-1]
    a = np.asarray(x, dtype=np.float64)
    return a * (1.0 + rel * rng.uniform(-1.0, 1.0, a.shape))


_as_measured = measured  # for rules whose parameter is named ``measured``


def with_margin(ev: Mapping[str, Any], margin: float, units: str) -> dict[str, Any]:
    """``ev`` with ``margin_to_flip`` (how far the deciding statistic is from the nearest
    threshold, in ``units``), ``margin_units`` and ``fragile`` (within :data:`FRAGILE`)."""
    if units not in FRAGILE:
        raise ValueError(f"units must be one of {sorted(FRAGILE)} (got {units!r})")
    m = float(margin)
    return {**ev, "margin_to_flip": m, "margin_units": units,
            "fragile": bool(not np.isfinite(m) or m < FRAGILE[units])}


@checked(rtol=Float(0), atol=Float(0))
def bound_evidence(sides: BoundSides, *, rtol: float, atol: float) -> dict[str, Any]:
    """Counts and extremes of ``lhs <= rhs * (1 + rtol) + atol`` over all instances."""
    lhs = real("lhs", sides.lhs, allow_empty=True, finite=False).ravel()
    rhs = real("rhs", sides.rhs, allow_empty=True, finite=False).ravel()
    if lhs.shape != rhs.shape:
        raise ValueError(f"lhs and rhs must have one shape (got {lhs.shape} and {rhs.shape})")
    if lhs.size == 0:
        raise ValueError("a bound check needs at least one instance")
    if not (np.all(np.isfinite(lhs)) and np.all(np.isfinite(rhs))):
        raise ValueError("lhs and rhs must be finite")
    excess = lhs - rhs
    allowed = rtol * np.abs(rhs) + atol
    bad = excess > allowed
    ev: dict[str, Any] = {
        "n_instances": int(lhs.size),
        "n_violations": int(bad.sum()),
        "rtol": rtol,
        "atol": atol,
        "max_lhs_minus_rhs": _num(excess.max()),
    }
    pos = rhs > 0
    # instances where the bound binds (lhs within 10% of rhs) or fails: a check with none of
    # them would pass a bound many times too loose
    # (0 <= 0, e.g. a dead unit's zero Hessian, binds nothing)
    ev["n_binding"] = int((lhs[pos] >= (1 - BINDING) * rhs[pos]).sum()
                          + ((excess[~pos] >= 0) & (lhs[~pos] != 0)).sum())
    if pos.any():
        ratio = lhs[pos] / rhs[pos]
        ev["worst_lhs_over_rhs"] = _num(ratio.max())
        ev["median_lhs_over_rhs"] = _num(np.median(ratio))
        # control: the same check against a right side half as large (a wrong constant, a
        # missing factor 2) must fail somewhere, else the check could not tell them apart
        ev["control_bound_halved_worst_ratio"] = _num(2.0 * ratio.max())
    return ev


@checked(rtol=Float(0), atol=Float(0))
def bound_verdict(
    sides: BoundSides, *, rtol: float = NUMERIC_RTOL, atol: float = 0.0,
    what: str = "lhs <= rhs", evidence: Mapping[str, Any] | None = None,
) -> Verdict:
    """``holds`` when every instance satisfies the bound within tolerance, else ``violated``;
    ``evidence`` adds the check's own keys (controls, sizes) to the counts, and
    ``margin_to_flip`` is the instance nearest the threshold's distance from it, relative to
    the sides' size (:func:`with_margin`)."""
    sides = BoundSides(measured(sides.lhs), measured(sides.rhs))
    ev = {**bound_evidence(sides, rtol=rtol, atol=atol), **(evidence or {})}
    lhs = np.asarray(sides.lhs, dtype=np.float64).ravel()
    rhs = np.asarray(sides.rhs, dtype=np.float64).ravel()
    size = np.maximum(np.abs(lhs), np.abs(rhs))
    # 0 <= 0 (a dead unit's Hessian) cannot flip under a relative change: no margin to count
    live = size > 0
    slack = (rtol * np.abs(rhs) + atol - (lhs - rhs))[live] / size[live]
    margin = (1.0 if slack.size == 0 else slack.min() if ev["n_violations"] == 0
              else -slack.min())
    ev = with_margin(ev, margin, "relative")
    n, nv = ev["n_instances"], ev["n_violations"]
    if nv == 0:
        ratio = ev.get("worst_lhs_over_rhs")
        tight = f"; worst lhs/rhs = {fmt_ratio(ratio, 6)}" if ratio is not None else ""
        tight += f"; {ev['n_binding']} within {BINDING:.0%} of the bound"
        return Verdict("holds", f"{what} on all {n} instances{tight}", ev)
    ratio = ev.get("worst_lhs_over_rhs")
    worst = f"worst lhs/rhs = {fmt_ratio(ratio)}, " if ratio is not None else ""
    return Verdict(
        "violated",
        f"{what} fails on {nv} of {n} instances ({worst}max lhs - rhs = "
        f"{ev['max_lhs_minus_rhs']:.4g})",
        ev,
    )


@checked(measured=Array(), expected=Array(), atol=Float(0), rtol=Float(0))
def equality_verdict(
    measured: np.ndarray, expected: np.ndarray, *, atol: float, what: str,
    evidence: Mapping[str, Any] | None = None, rtol: float = NUMERIC_RTOL,
) -> Verdict:
    """``holds`` when ``|measured - expected| <= atol + rtol |expected|`` everywhere, else
    ``violated``; ``margin_to_flip`` as :func:`bound_verdict`'s."""
    m = np.asarray(_as_measured(measured), dtype=np.float64).ravel()
    e = np.asarray(_as_measured(expected), dtype=np.float64).ravel()
    if m.shape != e.shape or m.size == 0:
        raise ValueError("measured and expected must be non-empty and of one shape")
    err = np.abs(m - e)
    allowed = atol + rtol * np.abs(e)
    size = np.maximum(np.abs(m), np.abs(e))
    live = size > 0  # 0 = 0 cannot flip under a relative change
    slack = (allowed - err)[live] / size[live]
    bad = err > allowed
    ev = with_margin({
        "n_instances": int(m.size),
        "max_abs_error": _num(err.max()),
        "atol": atol,
        "rtol": rtol,
        "n_violations": int(bad.sum()),
        **(evidence or {}),
    }, 1.0 if slack.size == 0 else slack.min() if not bad.any() else -slack.min(), "relative")
    tol = f"{atol:g} + {rtol:g} |expected|" if rtol else f"{atol:g}"
    if ev["n_violations"] == 0:
        return Verdict("holds", f"{what}: max |error| = {err.max():.3g} <= {tol}", ev)
    return Verdict(
        "violated", f"{what}: max |error| = {err.max():.3g} > {tol} on "
        f"{ev['n_violations']} of {m.size} instances", ev)


TIE_RTOL = 1e-5
"""Values closer than this (relative) rank as ties: a solver's or a kernel's last bits must not
order them (Fig. 7's realised margins are equal to the requested one up to 1e-9, and their order
within a level was noise that moved the rank correlation)."""


def tied_ranks(a: np.ndarray, rtol: float = TIE_RTOL) -> np.ndarray:
    """Average ranks along the last axis, with values within ``rtol`` (relative) of their
    neighbour in sorted order counted as ties (chains of near-ties form one tie).

    >>> tied_ranks(np.array([3.0, 1.0, 1.0 + 1e-9, 2.0])).tolist()
    [4.0, 1.5, 1.5, 3.0]
    """
    from scipy.stats import rankdata

    a = np.asarray(a, dtype=np.float64)
    order = np.argsort(a, axis=-1, kind="stable")
    srt = np.take_along_axis(a, order, axis=-1)
    gap = np.diff(srt, axis=-1)
    size = np.maximum(np.abs(srt[..., 1:]), np.abs(srt[..., :-1]))
    new = gap > rtol * np.where(size > 0, size, 1.0)
    gid_sorted = np.concatenate([np.zeros(a.shape[:-1] + (1,)), np.cumsum(new, axis=-1)],
                                axis=-1)
    gid = np.empty_like(gid_sorted)
    np.put_along_axis(gid, order, gid_sorted, axis=-1)
    return rankdata(gid, axis=-1)


@checked(x=Array(ndim=(1, 2)), y=Array(ndim=2))
def spearman_rows(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Spearman rank correlation of ``x`` and ``y`` along the last axis, one per row (0 where a
    row is constant)."""
    broadcastable(x=x, y=y)  # a length that differs along the last axis is named here too
    rx = tied_ranks(x)
    ry = tied_ranks(y)
    rx -= rx.mean(-1, keepdims=True)
    ry -= ry.mean(-1, keepdims=True)
    den = np.sqrt((rx**2).sum(-1) * (ry**2).sum(-1))
    return np.where(den > 0, (rx * ry).sum(-1) / np.where(den > 0, den, 1), 0.0)


def _trend_status(lo: float, hi: float, expected: str, what: str, ci: str, ev: dict) -> Verdict:
    # decided or not, the interval edge nearest 0 is what a change would have to move
    ev = with_margin(ev, min(abs(lo), abs(hi)), "rho")
    sign = 1.0 if expected == "increasing" else -1.0
    if sign * lo > 0 and sign * hi > 0:
        return Verdict("supported", f"{what} is {expected}: {ci}", ev)
    if sign * lo < 0 and sign * hi < 0:
        return Verdict("contradicted", f"{what} is not {expected} but the opposite: {ci}", ev)
    return Verdict("inconclusive", f"{what}: no clear trend, the interval contains 0 ({ci})", ev)


@checked(x=Array(ndim=1), y=Array(ndim=2), expected=Choice("increasing", "decreasing"), rng=Rng(),
         what=Text())
def paired_trend_verdict(
    x: np.ndarray,
    y: np.ndarray,
    *,
    expected: str,
    rng: np.random.Generator,
    what: str,
    evidence: Mapping[str, Any] | None = None,
) -> Verdict:
    """The trend of ``y (sets, levels)`` in ``x (levels,)`` when every set (a training set, a
    seed) is measured at every level: the mean over sets of their own Spearman correlation, with
    a bootstrap interval over sets, so the spread between sets does not hide the effect.
    Statuses as :func:`trend_verdict`."""
    if expected not in ("increasing", "decreasing"):
        raise ValueError(f"expected must be 'increasing' or 'decreasing' (got {expected!r})")
    y = np.asarray(measured(y), dtype=np.float64)
    x = np.asarray(x, dtype=np.float64)
    if y.ndim != 2 or x.shape != y.shape[1:] or y.shape[0] < 2 or y.shape[1] < 2:
        raise ValueError(f"y must be (sets >= 2, levels >= 2) with x (levels,) (got {y.shape}, "
                         f"{x.shape})")
    rho = spearman_rows(np.broadcast_to(x, y.shape), y)
    mean, lo, hi = bootstrap_mean(rho, rng=rng)
    ev = {"mean_within_set_spearman": mean, "ci_low": lo, "ci_high": hi, "n_sets": len(rho),
          "n_levels": y.shape[1], "expected": expected, **(evidence or {})}
    ci = (f"mean within-set Spearman rho = {mean:.3f}, 95% CI [{lo:.3f}, {hi:.3f}], "
          f"{len(rho)} sets x {y.shape[1]} levels")
    return _trend_status(lo, hi, expected, what, ci, ev)


@checked(
    x=Array(ndim=1), y=Array(ndim=1), expected=Choice("increasing", "decreasing"), rng=Rng(), what=Text(),
    n_boot=Int(10), level=Float(0, 1, lo_open=True, hi_open=True))
def trend_verdict(
    x: np.ndarray,
    y: np.ndarray,
    *,
    expected: str,
    rng: np.random.Generator,
    what: str,
    n_boot: int = 1000,
    level: float = 0.95,
    evidence: Mapping[str, Any] | None = None,
) -> Verdict:
    """Spearman rank correlation of ``y`` with ``x`` and its bootstrap interval (rows resampled).

    ``supported`` when the interval lies on the ``expected`` side of 0 (``"increasing"`` or
    ``"decreasing"``), ``contradicted`` when it lies on the other side, else ``inconclusive``.
    """
    if expected not in ("increasing", "decreasing"):
        raise ValueError(f"expected must be 'increasing' or 'decreasing' (got {expected!r})")
    x = np.asarray(measured(x), dtype=np.float64).ravel()
    y = np.asarray(measured(y), dtype=np.float64).ravel()
    if x.shape != y.shape or x.size < 4:
        raise ValueError("a trend needs x and y of one shape with at least 4 points")

    rho = float(spearman_rows(x[None], y[None])[0])
    ix = rng.integers(0, x.size, (n_boot, x.size))
    boot = spearman_rows(x[ix], y[ix])
    lo, hi = np.quantile(boot, [(1 - level) / 2, (1 + level) / 2])
    ev = {"spearman_rho": rho, "ci_low": float(lo), "ci_high": float(hi), "ci_level": level,
          "n_points": int(x.size), "n_bootstrap": n_boot, "expected": expected,
          **(evidence or {})}
    ci = f"Spearman rho = {rho:.3f}, {level:.0%} CI [{lo:.3f}, {hi:.3f}], {x.size} points"
    return _trend_status(lo, hi, expected, what, ci, ev)


EQUIVALENCE = 0.10  # the smallest effect that counts: a 10% change of the median across a range


@checked(low_level=Array(ndim=1), high_level=Array(ndim=1), rng=Rng(), paired=Bool(),
         n_boot=Int(10))
def end_ratio(
    low_level: np.ndarray, high_level: np.ndarray, *, rng: np.random.Generator, paired: bool,
    n_boot: int = 1000,
) -> tuple[float, float, float]:
    """``(ratio, low, high)``: the change of a measurement from the smallest level of a factor
    (``low_level``, one value per training set) to the largest (``high_level``). ``paired``
    (set ``j`` measured at both levels): the median over sets of their own ratio; else the
    ratio of the two medians. 95% bootstrap interval over sets."""
    lo_v = np.asarray(measured(low_level), dtype=np.float64)
    hi_v = np.asarray(measured(high_level), dtype=np.float64)
    if np.any(lo_v <= 0) or np.any(hi_v < 0):
        raise ValueError("low_level must be > 0 and high_level >= 0 (a ratio of magnitudes; got "
                         f"min {lo_v.min():.3g} and {hi_v.min():.3g})")
    if paired:
        if lo_v.shape != hi_v.shape:
            raise ValueError(f"low_level and high_level must have one value per set when "
                             f"paired (got {lo_v.shape} and {hi_v.shape})")
        r = hi_v / lo_v
        boot = np.median(r[rng.integers(0, len(r), (n_boot, len(r)))], 1)
        est = float(np.median(r))
    else:
        boot = (np.median(hi_v[rng.integers(0, len(hi_v), (n_boot, len(hi_v)))], 1)
                / np.median(lo_v[rng.integers(0, len(lo_v), (n_boot, len(lo_v)))], 1))
        est = float(np.median(hi_v) / np.median(lo_v))
    a, b = np.quantile(boot, [0.025, 0.975])
    return est, float(a), float(b)


@checked(ratio=Array(ndim=1), factor=Text(), margin=Float(0, 1, lo_open=True, hi_open=True))
def decide_no_effect(verdict: Verdict, ratio: tuple[float, float, float], factor: str, *,
                     margin: float = EQUIVALENCE, before_trend: bool = False) -> Verdict:
    """A trend the rank test cannot see is decided by the size of the change: an interval of the
    end-to-end ratio (:func:`end_ratio`) inside ``1 +- margin`` means the predicted effect is
    absent (``no-effect``); otherwise the verdict stands, with the ratio as evidence.
    ``before_trend``: no effect is tested first, so an interval inside the band is
    ``no-effect`` whatever the rank test says (a drift of 0.1% over hundreds of datasets is a
    significant trend, but no effect of the size claimed); the trend's direction is stated."""
    if not isinstance(verdict, Verdict):
        raise TypeError(f"verdict must be a Verdict (got {type(verdict).__name__})")
    # a bootstrap percentile interval need not contain the point estimate: only low <= high
    if len(ratio) != 3 or not ratio[1] <= ratio[2]:
        raise ValueError(f"ratio must be (estimate, low, high) with low <= high (got "
                         f"{tuple(ratio)})")
    r, a, b = (float(v) for v in ratio)
    ev: dict[str, Any] = {"end_ratio": r, "end_ratio_ci_low": a, "end_ratio_ci_high": b,
          "equivalence_margin": margin}
    # how far the interval is from the band's edge: inside (> 0) it would have to grow by this
    # to leave it, outside (< 0) to enter it
    inside = min(a - (1 - margin), (1 + margin) - b)
    ev["no_effect_band_margin"] = inside
    tested = verdict.status == "inconclusive" or (
        before_trend and verdict.status in ("supported", "contradicted"))
    if tested and 1 - margin <= a and b <= 1 + margin:
        if verdict.status != "inconclusive":
            ev["trend_inside_band"] = verdict.status
        return Verdict("no-effect", f"no effect: over the whole range of {factor} the median "
                       f"changes by a factor {r:.3f} (95% CI [{a:.3f}, {b:.3f}], inside 1 +- "
                       f"{margin:g}); {verdict.reason}",
                       with_margin({**verdict.evidence, **ev}, inside, "ratio"))
    if verdict.status == "inconclusive" and abs(inside) < FRAGILE["ratio"]:
        # an interval at the band's edge: as near a flip as a trend interval at 0
        return verdict.with_evidence(**with_margin({**verdict.evidence, **ev}, abs(inside),
                                                   "ratio"))
    return verdict.with_evidence(**ev)


def median_reversals(groups: list[np.ndarray], *, expected: str, rng: np.random.Generator,
                     n_boot: int = 1000, level: float = 0.95) -> dict[str, Any]:
    """Do the medians of ``groups`` (the measurements at each level of a factor, in the level's
    order) move against the ``expected`` trend anywhere, beyond sampling noise? For each pair of
    adjacent levels a percentile bootstrap interval of ``log(median_{k+1} / median_k)`` (each
    level resampled on its own); a *reversal* is a pair whose whole interval lies on the wrong
    side of 0. Point medians that wander by a few per cent (0.378 -> 0.390 at 30 datasets a
    level) are noise, not a reversal; deciding on them flipped Fig. 7's verdict with the CPU.

    Returns ``monotone`` (no reversal), ``reversals`` (the pairs, with their intervals) and
    ``margin`` (in log-ratio units: the interval edge nearest to making, or unmaking, a
    reversal)."""
    if expected not in ("increasing", "decreasing"):
        raise ValueError(f"expected must be 'increasing' or 'decreasing' (got {expected!r})")
    if len(groups) < 2:
        raise ValueError(f"need at least 2 levels (got {len(groups)})")
    sign = 1.0 if expected == "increasing" else -1.0
    meds = []
    for g in groups:
        g = np.asarray(measured(g), dtype=np.float64)
        if g.size < 2 or np.any(g <= 0):
            raise ValueError("each level needs at least 2 positive measurements")
        meds.append(np.median(g[rng.integers(0, g.size, (n_boot, g.size))], axis=1))
    # every adjacent pair at once: (levels - 1, n_boot) log ratios, signed so that the expected
    # direction is positive; a reversal is a pair whose whole interval is below 0
    logs = sign * np.log(np.stack(meds[1:]) / np.stack(meds[:-1]))
    lo, hi = np.quantile(logs, [(1 - level) / 2, (1 + level) / 2], axis=1)
    bad = hi < 0
    reversals = [{"between_levels": [int(k), int(k) + 1],
                  "log_ratio_ci": sorted([float(sign * lo[k]), float(sign * hi[k])])}
                 for k in np.flatnonzero(bad)]
    # monotone: the pair nearest to reversing; else the strongest reversal, which must vanish
    margin = float(-hi[bad].min()) if bad.any() else float(hi.min())
    return {"monotone": not reversals, "reversals": reversals, "margin": margin}


@checked(x=Array(ndim=1), rng=Rng(), n_boot=Int(10), level=Float(0, 1, lo_open=True, hi_open=True))
def bootstrap_mean(
    x: np.ndarray, *, rng: np.random.Generator, n_boot: int = 1000, level: float = 0.95
) -> tuple[float, float, float]:
    """``(mean, low, high)``: the mean of ``x`` with a percentile bootstrap interval (rows
    resampled with replacement, all resamples drawn in one call)."""
    x = np.asarray(x, dtype=np.float64)
    if x.ndim != 1 or x.size < 2:
        raise ValueError(f"x must be a 1-D array of at least 2 values (got shape {x.shape})")
    boot = x[rng.integers(0, x.size, (n_boot, x.size))].mean(1)
    lo, hi = np.quantile(boot, [(1 - level) / 2, (1 + level) / 2])
    return float(x.mean()), float(lo), float(hi)


@checked(low=Float(), high=Float(), expected_sign=Choice(-1, 1))
def interval_status(low: float, high: float, *, expected_sign: int) -> str:
    """``supported`` when the interval lies on the expected side of 0, ``contradicted`` when on
    the other side, else ``inconclusive``."""
    if expected_sign * low > 0 and expected_sign * high > 0:
        return "supported"
    if expected_sign * low < 0 and expected_sign * high < 0:
        return "contradicted"
    return "inconclusive"


Z_ALPHA, Z_BETA = 1.959964, 0.841621  # two-sided 5% test, 80% power


@checked(a=Array(ndim=1), b=Array(ndim=1), rng=Rng(), n_boot=Int(10))
def std_ratio_verdict(
    a: np.ndarray,
    b: np.ndarray,
    *,
    rng: np.random.Generator,
    what: str,
    names: tuple[str, str] = ("a", "b"),
    equivalence: float | None = None,
    n_boot: int = 2000,
    evidence: dict[str, Any] | None = None,
) -> Verdict:
    """Is the spread of ``a`` smaller than that of ``b``? The ratio of their standard deviations
    with a 95% bootstrap interval (each sample resampled on its own): ``supported`` below 1,
    ``contradicted`` above 1, ``no-effect`` (with ``equivalence``) when the interval lies inside
    ``1 +- equivalence``; otherwise ``inconclusive`` with the runs per sample an F
    test of the variances would need at this ratio, ``1 + ((z_a + z_b) / ln r)^2``."""
    a, b = np.asarray(measured(a), dtype=float), np.asarray(measured(b), dtype=float)
    if min(len(a), len(b)) < 3:
        raise ValueError(f"a and b need at least 3 values each (got {len(a)} and {len(b)})")
    sa, sb = float(np.std(a, ddof=1)), float(np.std(b, ddof=1))
    r = sa / sb if sb > 0 else np.inf
    boot_a = np.std(a[rng.integers(0, len(a), (n_boot, len(a)))], axis=1, ddof=1)
    boot_b = np.std(b[rng.integers(0, len(b), (n_boot, len(b)))], axis=1, ddof=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratios = np.where(boot_b > 0, boot_a / np.where(boot_b > 0, boot_b, 1), np.inf)
    # resamples of a few runs can repeat one value (std 0): an infinite ratio, whose
    # interpolated quantile would be inf - inf; then quantiles without interpolation
    finite = bool(np.all(np.isfinite(ratios)))
    lo, hi = (float(q) for q in np.quantile(ratios, [0.025, 0.975],
                                            method="linear" if finite else "inverted_cdf"))
    need = (None if not np.isfinite(r) or r <= 0 or r == 1 else
            max(3, int(np.ceil(1 + ((Z_ALPHA + Z_BETA) / np.log(r)) ** 2))))
    na, nb = names
    ev = {**(evidence or {}), f"std_{na}": sa, f"std_{nb}": sb, f"mean_{na}": float(a.mean()),
          f"mean_{nb}": float(b.mean()), f"n_{na}": len(a), f"n_{nb}": len(b),
          "std_ratio": r if np.isfinite(r) else None, "effect": r if np.isfinite(r) else None,
          "ci_low": lo, "ci_high": hi,
          "seeds_needed": need}
    txt = (f"{what}: std {na} {sa:.4g} vs {nb} {sb:.4g} (ratio {r:.3g}, 95% bootstrap CI "
           f"[{lo:.3g}, {hi:.3g}], {len(a)} and {len(b)} runs)")
    edge = min(abs(1 - lo), abs(hi - 1)) if np.isfinite(hi) else abs(1 - lo)
    if equivalence is not None and 1 - equivalence <= lo and hi <= 1 + equivalence:
        edge = min(edge, lo - (1 - equivalence), (1 + equivalence) - hi)
    ev = with_margin(ev, edge, "ratio")
    if hi < 1:
        return Verdict("supported", txt, ev)
    if lo > 1:
        return Verdict("contradicted", txt, ev)
    if equivalence is not None and 1 - equivalence <= lo and hi <= 1 + equivalence:
        ev["equivalence_margin"] = equivalence
        return Verdict("no-effect", f"no effect: the interval lies inside 1 +- {equivalence:g}; "
                       + txt, ev)
    if need:
        txt += f"; a decision at this ratio needs about {need} runs each"
    return Verdict("inconclusive", txt, ev)


UNDECIDED = ("inconclusive", "not-testable")
"""The verdicts that decide nothing: a reading that gives one neither supports nor goes against
the paper, and is outvoted by none."""

AGAINST = ("violated", "contradicted", "no-effect", "ill-posed")
"""The decided verdicts that go against a paper's claim: a claim counts against its paper only
when its verdict, or the verdict of one of its decided readings, is one of these."""


def against_paper(result: Mapping[str, Any]) -> bool:
    """Does a claim's result (a report entry: ``verdict`` and ``evidence``, or a record entry
    with ``against_paper``) go against its paper? A decided verdict in :data:`AGAINST`, or a
    ``depends-on-reading`` one of whose decided readings is; a claim supported under one reading
    and undecided under another is not a finding."""
    if "against_paper" in result:
        return bool(result["against_paper"])
    status = result.get("verdict", result.get("status"))
    if status in AGAINST:
        return True
    if status != "depends-on-reading":
        return False
    ev = result.get("evidence") or {}
    if isinstance(ev.get("readings_against_paper"), list):
        return bool(ev["readings_against_paper"]) or any(
            s in AGAINST for s in (ev.get("by_t") or {}).values())
    table = ev.get("by_reading") or {}
    steps = ev.get("by_t") or {}
    # an old record without the tables: as before, a disagreement counts
    return (not table and not steps) or any(v.get("status") in AGAINST for v in table.values()) \
        or any(s in AGAINST for s in steps.values())


def _goes_against(v: Verdict) -> bool:
    """A verdict against the paper: in :data:`AGAINST`, or split (by reading or along t) with a
    part in it."""
    if v.status in AGAINST:
        return True
    if v.status != "depends-on-reading":
        return False
    parts = list((v.evidence.get("by_t") or {}).values())
    parts += [r.get("status") for r in (v.evidence.get("by_reading") or {}).values()]
    return any(p in AGAINST for p in parts)


def readings_verdict(by_reading: Mapping[str, Verdict], *, default: str, what: str) -> Verdict:
    """One verdict over the readings of a choice the paper leaves open (``by_reading``: reading
    name -> its verdict; ``default``: the reading the paper's text describes, or ours where it
    describes none).

    Only decided readings vote (an ``inconclusive`` or ``not-testable`` reading decides
    nothing): every decided reading agreeing gives that verdict, naming the undecided readings;
    two different decided verdicts give ``depends-on-reading``, naming which readings give which;
    no decided reading gives ``inconclusive``. The evidence keeps the deciding reading's evidence
    (the default where it decided), every reading's status and reason (``by_reading``), and the
    readings against the paper (``readings_against_paper``)."""
    if not by_reading:
        raise ValueError("by_reading must name at least one reading")
    if default not in by_reading:
        raise ValueError(f"default must be one of the readings {sorted(by_reading)} (got "
                         f"{default!r})")
    for name, v in by_reading.items():
        if not isinstance(v, Verdict):
            raise TypeError(f"by_reading[{name!r}] must be a Verdict (got {type(v).__name__})")
    decided = {n: v for n, v in by_reading.items() if v.status not in UNDECIDED}
    deciding = default if (default in decided or not decided) else next(iter(decided))
    base = by_reading[deciding]
    table: dict[str, dict[str, Any]] = {name: {"status": v.status, "reason": v.reason}
                                         for name, v in by_reading.items()}
    ev: dict[str, Any] = {**base.evidence, "by_reading": table, "default_reading": default,
          "deciding_reading": deciding, "n_readings": len(by_reading),
          "readings_against_paper": [n for n, v in by_reading.items() if _goes_against(v)]}
    # the combined verdict flips when any reading's does: the reading nearest its threshold
    margins = {n: v.evidence for n, v in by_reading.items()
               if isinstance(v.evidence.get("margin_to_flip"), int | float)
               and v.evidence.get("margin_units") in FRAGILE}
    for name, e in margins.items():
        table[name]["margin_to_flip"] = e["margin_to_flip"]
        table[name]["fragile"] = bool(e.get("fragile"))
    if margins:
        near = min(margins, key=lambda n: margins[n]["margin_to_flip"]
                   / FRAGILE[margins[n]["margin_units"]])
        ev = with_margin(ev, margins[near]["margin_to_flip"], margins[near]["margin_units"])
        ev["margin_reading"] = near
        ev["fragile"] = any(bool(e.get("fragile")) for e in margins.values())
    groups: dict[str, list[str]] = {}
    for name, v in by_reading.items():
        groups.setdefault(v.status, []).append(name)
    if len(groups) == 1:
        return Verdict(base.status, f"{what}: {base.status} under every reading "
                       f"({', '.join(by_reading)}); {default}: {base.reason}", ev)
    parts = "; ".join(f"{status} under {', '.join(names)}" for status, names in groups.items())
    decided_groups = {s for s in groups if s not in UNDECIDED}
    if not decided_groups:
        return Verdict("inconclusive", f"{what}: no reading decides ({parts}). Default reading "
                       f"({default}): {base.reason}", ev)
    if len(decided_groups) == 1:
        (status,) = decided_groups
        undecided = [n for n in by_reading if n not in decided]
        return Verdict(status, f"{what}: {status} under {', '.join(decided)}; undecided under "
                       f"{', '.join(undecided)} ({parts}). {deciding}: {base.reason}",
                       {**ev, "undecided_readings": undecided})
    return Verdict("depends-on-reading", f"{what}: {parts}. Default reading ({default}): "
                   f"{base.reason}", ev)


def log_spaced(steps: Any, k: int = 5) -> list[int]:
    """Up to ``k`` of the recorded ``steps``, nearest to a log-spaced grid from the first to the
    last: where a claim about a training curve is decided (the paper plots t on a log axis).

    >>> log_spaced([1, 2, 5, 10, 20, 50, 100, 200, 600], 4)
    [1, 10, 100, 600]
    """
    st = np.unique(np.asarray(steps, dtype=np.int64))
    st = st[st > 0]
    if st.size == 0:
        raise ValueError("steps must hold at least one step > 0")
    grid = np.geomspace(st[0], st[-1], min(k, st.size))
    return sorted({int(st[np.abs(np.log(st) - np.log(g)).argmin()]) for g in grid})


def along_t_verdict(by_t: Mapping[int, Verdict], *, what: str) -> Verdict:
    """One verdict for a claim about a curve over training steps, decided at several steps
    (``by_t``: step -> the verdict there). The same decided verdict at every step (undecided
    steps named) gives it; decided verdicts that change along t make t an axis like a reading:
    ``depends-on-reading`` with the ranges, e.g. "supported for t <= 30; no-effect for t >= 300".
    The evidence keeps the last step's evidence, each step's status (``by_t``), the ranges and
    the smallest margin over the steps."""
    if not by_t:
        raise ValueError("by_t must hold at least one step")
    ts = sorted(by_t)
    runs: list[tuple[str, list[int]]] = []
    for t in ts:
        st = by_t[t].status
        if runs and runs[-1][0] == st:
            runs[-1][1].append(t)
        else:
            runs.append((st, [t]))

    def span(t: list[int], i: int) -> str:
        if len(runs) == 1:
            return f"at every t in [{t[0]}, {t[-1]}]"
        if len(t) == 1 and 0 < i < len(runs) - 1:
            return f"at t = {t[0]}"
        if i == 0:
            return f"for t <= {t[-1]}"
        if i == len(runs) - 1:
            return f"for t >= {t[0]}"
        return f"for {t[0]} <= t <= {t[-1]}"

    ranges = "; ".join(f"{st} {span(t, i)}" for i, (st, t) in enumerate(runs))
    last = by_t[ts[-1]]
    ev: dict[str, Any] = {**last.evidence, "by_t": {str(t): by_t[t].status for t in ts},
                          "t_ranges": ranges, "decided_at_steps": ts}
    margins = [(v.evidence["margin_to_flip"], v.evidence["margin_units"]) for v in by_t.values()
               if isinstance(v.evidence.get("margin_to_flip"), int | float)
               and v.evidence.get("margin_units") in FRAGILE]
    if margins:
        m, u = min(margins, key=lambda mu: mu[0] / FRAGILE[mu[1]])
        ev = with_margin(ev, m, u)
        ev["fragile"] = any(bool(v.evidence.get("fragile")) for v in by_t.values())
    decided = {v.status for v in by_t.values() if v.status not in UNDECIDED}
    if len(decided) > 1:
        return Verdict("depends-on-reading", f"{what} depends on the step t: {ranges}", ev)
    status = decided.pop() if decided else "inconclusive"
    # one run: every step says the same, so ``ranges`` is "<status> at every t in [a, b]"
    return Verdict(status, f"{what}: {ranges}. At t = {ts[-1]}: {last.reason}", ev)
