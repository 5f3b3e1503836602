"""Verdicts: what a check found, with the numbers that show it.

A bound check compares a measured left side with a computed right side under a stated
tolerance; the evidence keeps both (worst ratio, worst excess, counts, tolerance), so a reader
can judge the margin, not only the word.

The trend rules are in :mod:`boundbench.framework.stats.trends`, the rules that combine verdicts over
readings and steps in :mod:`boundbench.framework.verdicts.readings`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import numpy as np

from boundbench.errors import InvalidArgument
from boundbench.framework.inputs.validate import Array, Float, checked
from boundbench.framework.inputs.values import real

STATUSES = ("holds", "violated", "ill-posed", "supported", "contradicted", "no-effect",
            "depends-on-reading", "inconclusive", "not-testable")
"""What a verdict can say (the report's glossary, ``boundbench.report.vocabulary.VERDICT_HELP``, defines
each): a bound or identity ``holds`` or is ``violated``, or is ``ill-posed`` where it
presupposes a unique optimum that does not exist (it holds for the closest pair of optima and
fails for the farthest); a trend is ``supported``, ``contradicted`` (the data exclude it: the
opposite direction, or a rate beyond the predicted exponent) or shows ``no-effect`` (a change
inside the no-effect band); ``depends-on-reading`` where the readings of a choice the paper
leaves open disagree; ``inconclusive``; ``not-testable``."""

FINDINGS = ("violated", "contradicted", "no-effect", "ill-posed", "depends-on-reading")
"""The verdicts that can go against a paper's claim (as stated, or as read). Whether a claim's
result does is one predicate, :func:`boundbench.framework.verdicts.readings.against_paper` (the
report's :func:`boundbench.report.vocabulary.is_finding`; a
``depends-on-reading`` verdict only when a decided reading goes against the paper; never a
self-test): the errata sheet, the report, the records and ``check``'s exit status all ask it."""


class Evidence(dict):
    """A verdict's evidence: a plain dict for readers (JSON, pandas), read-only for writers."""

    def _read_only(self, *args: Any, **kwargs: Any):
        raise InvalidArgument("a verdict's evidence is built once: use Verdict.with_evidence(...)")

    __setitem__ = __delitem__ = update = pop = popitem = clear = setdefault = _read_only
    __ior__ = _read_only

    def __reduce__(self):
        return (Evidence, (dict(self),))


class BoundSides(NamedTuple):
    """Both sides of an inequality ``lhs <= rhs``, elementwise over instances.

    Parameters
    ----------
    lhs, rhs : numpy.ndarray
        The measured left side and the bound's right side, one value per instance.

    Examples
    --------
    >>> from boundbench.framework.verdicts.rules import BoundSides
    >>> BoundSides(lhs=1.0, rhs=2.0).rhs
    2.0
    """

    lhs: np.ndarray
    rhs: np.ndarray


@dataclass(frozen=True)
class Verdict:
    """A claim's decision: its status, the reason in words and the evidence behind it.

    Parameters
    ----------
    status : str
        One of :data:`STATUSES` (``holds``, ``violated``, ``supported``, ...).
    reason : str
        What was measured and why it decides, in words: what the report prints.
    evidence : mapping, optional
        Names to numbers behind the decision, kept read-only.
    figure, table : str, optional
        The files of the claim's figure and data, once written.

    Examples
    --------
    >>> from boundbench.framework.verdicts.rules import Verdict
    >>> v = Verdict("holds", "every instance", {"n_instances": 3})
    >>> v.status, v.evidence["n_instances"]
    ('holds', 3)
    """

    status: str
    reason: str
    evidence: Mapping[str, Any] = field(default_factory=dict)
    figure: str | None = None
    table: str | None = None

    def __post_init__(self) -> None:
        if self.status not in STATUSES:
            raise InvalidArgument(f"status must be one of {STATUSES} (got {self.status!r})")
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


TERMS = {
    "lhs/rhs": "a bound's left side over its right side on one instance; above 1 (beyond the "
    "tolerance) breaks it; 'worst' is the largest found, '1 (attained to 5e-13)' a bound tight "
    "to that relative distance",
    "margin to flip": "how far the deciding number is from the threshold that would change the "
    "verdict, in the statistic's own units; 'fragile' marks one so close (e.g. 4e-6 relative "
    "for a bound, 0.02 in rho) that another machine's last bits could flip it",
    "end-to-end ratio": "a trend's last level over its first (e.g. the stability at the most "
    "heads over that at the fewest); 1 +- 0.1 is no effect",
    "std ratio": "the spread over seeds of one method over another's (below 1: more stable)",
    "rho": "Spearman's rank correlation of the measurement with the level, with its interval",
    "certified": "a violation's standalone replay (numpy and mpmath, 50 digits), or how a "
    "'holds' is backed: proven on the box, on the function class, or not refuted in N "
    "evaluations",
}


def plural(n: int, word: str) -> str:
    """``n`` and ``word``, plural unless n is 1: "1 claim", "3 claims".

    >>> plural(1, "claim"), plural(0, "claim")
    ('1 claim', '0 claims')
    """
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def fmt_ratio(ratio: float, digits: int = 3) -> str:
    """A ratio at a reader's precision: ``digits`` significant digits (up to two more where
    fewer print 1: "1.003"); one that still rounds to 1 says how far from 1 it is instead of
    printing sixteen digits: within the checks' tolerance (:data:`NUMERIC_RTOL`) "1 (attained
    to 2e-16)", beyond it "1 + 2.2e-05" (a violation by 2e-5 never reads "1"). The full value
    stays in the evidence.

    >>> fmt_ratio(1.0000224), fmt_ratio(2.583214), fmt_ratio(1.0033), fmt_ratio(1 - 2.2e-16)
    ('1 + 2.2e-05', '2.58', '1.003', '1 (attained to 2e-16)')
    """
    if not np.isfinite(ratio):
        return "inf" if ratio > 0 else "-inf" if ratio < 0 else "nan"
    if ratio == 1:
        return "1"
    for p in range(digits, digits + 3):  # 1.0033 as "1.003", not "1"
        text = f"{ratio:.{p}g}"
        if float(text) != 1:
            return text
    d = ratio - 1
    if abs(d) <= NUMERIC_RTOL:
        return f"1 (attained to {abs(d):.0e})"
    return f"1 {'+' if d > 0 else '-'} {abs(d):.1e}"


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
           "band half-width": 0.05, "log p": 0.1}
"""A verdict is *fragile* when its deciding statistic lies within this distance of the nearest
threshold, in the statistic's own units (``margin_units``): ``relative``, lhs - rhs over the
sides' size for a bound or identity (twice what :data:`PERTURBATION` can move it); ``rho``, a
Spearman interval's edge from 0; ``ratio``, a ratio interval's edge from 1 or from the no-effect
band; ``log ratio``, a reversal's interval from 0; ``exponent``, a fitted power's interval from
the predicted power; ``band half-width``, an interval's distance from the edge of a claim's no-effect
band that would change its outcome, over the band's half-width
(:func:`~boundbench.framework.stats.bands.band_margin`; 0.05 of a half-width is what ``ratio``'s 0.005
is of the 1 +- 10% band); ``log p``, a permutation test's |log(p / alpha)| (a p-value within
10% of alpha, :mod:`~boundbench.framework.stats.calibration`). The report flags fragile verdicts, and the
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
        raise InvalidArgument(f"units must be one of {sorted(FRAGILE)} (got {units!r})")
    m = float(margin)
    return {**ev, "margin_to_flip": m, "margin_units": units,
            "fragile": bool(not np.isfinite(m) or m < FRAGILE[units])}


@checked(rtol=Float(0), atol=Float(0))
def bound_evidence(sides: BoundSides, *, rtol: float, atol: float) -> dict[str, Any]:
    """Counts and extremes of ``lhs <= rhs * (1 + rtol) + atol`` over all instances."""
    lhs = real("lhs", sides.lhs, allow_empty=True, finite=False).ravel()
    rhs = real("rhs", sides.rhs, allow_empty=True, finite=False).ravel()
    if lhs.shape != rhs.shape:
        raise InvalidArgument(f"lhs and rhs must have one shape (got {lhs.shape} and {rhs.shape})")
    if lhs.size == 0:
        raise InvalidArgument("a bound check needs at least one instance")
    if not (np.all(np.isfinite(lhs)) and np.all(np.isfinite(rhs))):
        raise InvalidArgument("lhs and rhs must be finite")
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
    the sides' size (:func:`with_margin`).

    Parameters
    ----------
    sides : BoundSides
        ``lhs`` and ``rhs``, one pair per instance (any shapes that broadcast).
    rtol, atol : float
        The tolerance: an instance holds when ``lhs - rhs <= rtol |rhs| + atol``.
    what : str
        The bound in words, for the reason.
    evidence : mapping, optional
        The check's own keys (controls, sizes), added to the counts.

    Returns
    -------
    Verdict
        ``holds`` or ``violated``, with the counts, the worst ``lhs / rhs`` and
        ``margin_to_flip`` in its evidence.

    References
    ----------
    The verdict rules of boundbench (``docs/contributing.md``); used by every bound claim.

    Examples
    --------
    >>> import numpy as np
    >>> from boundbench.framework.verdicts.rules import BoundSides, bound_verdict
    >>> x = np.linspace(-3, 3, 101)
    >>> bound_verdict(BoundSides(np.abs(np.sin(x)), np.abs(x)), what="|sin x| <= |x|").reason
    '|sin x| <= |x| on all 101 instances; worst lhs/rhs = 0.999; 26 within 10% of the bound'
    >>> bound_verdict(BoundSides(np.array([1.0, 2.1]), np.array([1.0, 2.0])), what="a <= b").status
    'violated'
    """
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
        tight = f"; worst lhs/rhs = {fmt_ratio(ratio)}" if ratio is not None else ""
        tight += f"; {ev['n_binding']} within {BINDING:.0%} of the bound"
        return Verdict("holds", f"{what} on all {n} instances{tight}", ev)
    ratio = ev.get("worst_lhs_over_rhs")
    worst = f"worst lhs/rhs = {fmt_ratio(ratio)}, " if ratio is not None else ""
    return Verdict(
        "violated",
        f"{what} fails on {nv} of {n} instances ({worst}max lhs - rhs = "
        f"{ev['max_lhs_minus_rhs']:.3g})",
        ev,
    )


@checked(measured=Array(), expected=Array(), atol=Float(0), rtol=Float(0))
def equality_verdict(
    measured: np.ndarray, expected: np.ndarray, *, atol: float, what: str,
    evidence: Mapping[str, Any] | None = None, rtol: float = NUMERIC_RTOL,
) -> Verdict:
    """``holds`` when ``|measured - expected| <= atol + rtol |expected|`` everywhere, else
    ``violated``; ``margin_to_flip`` as :func:`bound_verdict`'s.

    Parameters
    ----------
    measured, expected : numpy.ndarray
        The two sides, of one shape.
    atol : float
        The absolute tolerance.
    what : str
        The identity in words, for the reason.
    evidence : mapping, optional
        The check's own keys.
    rtol : float
        The relative tolerance.

    Returns
    -------
    Verdict
        ``holds`` or ``violated``, with ``max_abs_error`` and the counts in its evidence.

    References
    ----------
    The verdict rules of boundbench; used by the equality claims (e.g. ``ad.cor1.huber-tight``).

    Examples
    --------
    >>> import numpy as np
    >>> from boundbench.framework.verdicts.rules import equality_verdict
    >>> equality_verdict(np.array([1.0, 2.0]), np.array([1.0, 2.0 + 1e-12]), atol=1e-9,
    ...                  what="x = y").reason
    'x = y: max |error| = 1e-12 <= 1e-09 + 1e-05 |expected|'
    """
    m = np.asarray(_as_measured(measured), dtype=np.float64).ravel()
    e = np.asarray(_as_measured(expected), dtype=np.float64).ravel()
    if m.shape != e.shape or m.size == 0:
        raise InvalidArgument("measured and expected must be non-empty and of one shape")
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
