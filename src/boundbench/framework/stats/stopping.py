"""Stopping rules on confidence sequences: decide a fine-tuning claim from the last interval
(:func:`decide`, :func:`first_decision`), say when the seeds left cannot decide (:func:`futile`)
or how many would (:func:`seeds_to_decide`, :func:`fixed_n` for a fixed-size design), and turn
the probes of a run into a verdict (:func:`sequential_verdict`) with its cost in words. The
sequences themselves are in :mod:`boundbench.framework.stats.sequential`.
"""

from __future__ import annotations

import numpy as np

from boundbench.errors import InvalidArgument
from boundbench.framework.inputs.validate import Array, Choice, Float, Int, Real, checked
from boundbench.framework.stats.bands import Band, band_margin, band_outcome
from boundbench.framework.stats.sequential import ALPHA, CSPath, ratio_intervals, t_halfwidth


def as_band(band, *, null: float, scale: str = "linear") -> Band | None:
    """``band`` as a :class:`~boundbench.framework.stats.bands.Band`: a Band, its dict (a probe's
    JSON), a half-width ``h > 0`` (``0 +- h`` for a difference, ``1 +- h`` for a ratio with
    ``scale='ratio'``) or ``None``."""
    if band is None or isinstance(band, Band):
        return band
    if isinstance(band, dict):
        return Band(**band)
    if isinstance(band, bool) or not isinstance(band, int | float) or not band > 0 \
            or not np.isfinite(band):
        raise InvalidArgument(f"band must be a positive number, a Band or None (got {band!r})")
    if scale not in ("linear", "ratio"):
        raise InvalidArgument(f"scale must be 'linear' or 'ratio' (got {scale!r})")
    if null not in (0.0, 1.0):
        raise InvalidArgument(f"a band is around a difference's null 0 or a ratio's null 1 (got "
                              f"null={null:g})")
    if scale == "ratio" and band >= 1:
        raise InvalidArgument(f"a ratio band must be below 1 (got {band!r})")
    lo, hi = (null - band, null + band) if scale == "linear" else (null * (1 - band),
                                                                     null * (1 + band))
    return Band(lo, hi, "difference" if null == 0 else "ratio", "given",
                f"{null:g} +- {band:g}" if scale == "linear" else f"{null:g} x (1 +- {band:g})")


@checked(low=Real(), high=Real(), null=Float(), expected=Choice("increase", "decrease"))
def decide(low: float, high: float, *, null: float, expected: str,
           band=None, scale: str = "linear") -> str | None:
    """What an interval decides about an effect expected to ``increase`` or ``decrease`` from
    ``null``. Without a band: ``supported`` when it lies wholly on the expected side,
    ``contradicted`` when wholly on the other, else ``None`` (go on). With a no-effect
    ``band`` (a :class:`~boundbench.framework.stats.bands.Band`, or a half-width: ``null +- band``,
    ``null * (1 +- band)`` with ``scale='ratio'``) the four outcomes of
    :func:`~boundbench.framework.stats.bands.band_outcome`: ``no-effect`` inside it, ``supported`` or
    ``contradicted`` wholly beyond it, ``None`` across an edge."""
    if scale not in ("linear", "ratio"):
        raise InvalidArgument(f"scale must be 'linear' or 'ratio' (got {scale!r})")
    if not low <= high:
        raise InvalidArgument(f"low must be <= high (got {low:g} > {high:g})")
    b = as_band(band, null=null, scale=scale)
    if b is None:
        up, down = low > null, high < null
        if up or down:
            return "supported" if up == (expected == "increase") else "contradicted"
        return None
    return band_outcome(low, high, b, expected=expected)


@checked(low=Array(ndim=1, finite=False), high=Array(ndim=1, finite=False), null=Float(),
         expected=Choice("increase", "decrease"), scale=Choice("linear", "ratio"))
def first_decision(low: np.ndarray, high: np.ndarray, *, null: float, expected: str,
                   band=None, scale: str = "linear") -> tuple[str | None, int]:
    """The first decision (:func:`decide`) along a confidence sequence and the number of
    observations it took; ``(None, len(low))`` when none is reached. What the stopping rule
    does: look after every seed, stop at the first decision."""
    low, high = np.asarray(low, dtype=float), np.asarray(high, dtype=float)
    if low.shape != high.shape:
        raise InvalidArgument(f"low and high must have one shape (got {low.shape} and {high.shape})")
    b = as_band(band, null=null, scale=scale)
    if b is None:
        hit = (low > null) | (high < null)
    else:  # band_outcome's three decisions, elementwise
        hit = ((b.low <= low) & (high <= b.high)) | (low > b.high) | (high < b.low)
    if not hit.any():
        return None, int(low.size)
    i = int(np.argmax(hit))
    return decide(float(low[i]), float(high[i]), null=null, expected=expected, band=b,
                  scale=scale), i + 1


def _projected(n: int, *, estimate: float, spread: float, kind: str,
               alpha: float) -> tuple[float, float, str]:
    """The interval after ``n`` seeds if the estimate and spread stayed as they are."""
    if kind == "mean":
        hw = float(t_halfwidth(np.array([n]), np.array([spread ** 2 * (n - 1)]), alpha,
                                1.0)[0])
        return estimate - hw, estimate + hw, "linear"
    ssb = max(spread, 1e-300) ** 2 * (n - 1)
    _, lows, highs = ratio_intervals(np.array([n]), np.array([n]),
                                      np.array([estimate ** 2 * ssb]), np.array([ssb]), alpha,
                                      1.0)
    return float(lows[0]), float(highs[0]), "ratio"


@checked(n=Int(1), n_max=Int(1), estimate=Float(), spread=Float(0),
         null=Float(), alpha=Float(0, 1, lo_open=True, hi_open=True),
         kind=Choice("mean", "std_ratio"))
def futile(*, n: int, n_max: int, estimate: float, spread: float, null: float,
           kind: str, band=None, alpha: float = ALPHA) -> bool:
    """Can the seeds left not decide? The interval the sequence would give after ``n_max``
    seeds if the estimate and the spread stayed as they are now (``spread``: the sample
    standard deviation for ``kind='mean'``, the ratio's ``s_b`` for ``kind='std_ratio'``, whose
    ``estimate`` is then the std ratio) is projected; the claim is futile when that interval
    would still neither exclude ``null`` nor fit in the band. Stopping for futility decides
    nothing, so it costs no validity."""
    if n_max < n:
        raise InvalidArgument(f"n_max must be >= n (got n={n}, n_max={n_max})")
    return seeds_to_decide(n=n_max, n_max=n_max, estimate=estimate, spread=spread, null=null,
                           kind=kind, band=band, alpha=alpha) is None


@checked(n=Int(1), n_max=Int(1), estimate=Float(), spread=Float(0),
         null=Float(), alpha=Float(0, 1, lo_open=True, hi_open=True),
         kind=Choice("mean", "std_ratio"))
def seeds_to_decide(*, n: int, n_max: int, estimate: float, spread: float, null: float,
                    kind: str, band=None, alpha: float = ALPHA) -> int | None:
    """The fewest seeds, from ``n`` up to ``n_max``, at which the projected interval (see
    :func:`futile`) decides; ``None`` when none does. What a budget allocates by."""
    if n_max < n:
        raise InvalidArgument(f"n_max must be >= n (got n={n}, n_max={n_max})")
    band = as_band(band, null=null, scale="linear" if kind == "mean" else "ratio")

    def decides(k: int) -> bool:
        low, high, scale = _projected(k, estimate=estimate, spread=spread, kind=kind,
                                      alpha=alpha)
        return bool(np.isfinite(low) and np.isfinite(high) and decide(
            low, high, null=null, expected="increase", band=band, scale=scale) is not None)

    if not decides(n_max):
        return None
    lo, hi = n, n_max  # the projected width shrinks with k: bisect for the first that decides
    while lo < hi:
        mid = (lo + hi) // 2
        if decides(mid):
            hi = mid
        else:
            lo = mid + 1
    return lo


@checked(effect=Float(), sd=Float(0, lo_open=True), alpha=Float(0, 1, lo_open=True, hi_open=True),
         power=Float(0, 1, lo_open=True, hi_open=True))
def fixed_n(effect: float, sd: float, *, alpha: float = ALPHA, power: float = 0.8) -> int:
    """Seeds a fixed-size paired t-test needs to detect a mean ``effect`` with standard
    deviation ``sd`` at two-sided level ``alpha`` and the given power (noncentral t, exact),
    the comparison for the sequential rule's seed count."""
    from scipy import stats

    if effect == 0:
        raise InvalidArgument("effect must be nonzero (a zero effect is never detected)")

    def enough(n: int) -> bool:
        df = n - 1
        crit = stats.t.ppf(1 - alpha / 2, df)
        nc = abs(effect) / sd * np.sqrt(n)
        return bool(stats.nct.sf(crit, df, nc) + stats.nct.cdf(-crit, df, nc) >= power)

    # the power grows with n: the smallest n that reaches it by doubling, then bisection (a
    # scan one seed at a time took seconds for small effects)
    top = 99_999
    if enough(2):
        return 2
    lo, hi = 2, 4  # enough(lo) is False
    while not enough(min(hi, top)):
        if hi >= top:
            raise InvalidArgument(f"effect/sd = {effect / sd:.3g} needs over 100,000 seeds")
        lo, hi = hi, hi * 2
    hi = min(hi, top)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if enough(mid) else (mid, hi)
    return hi


def duration_seconds(budget: str) -> float:
    """Seconds in a duration such as ``90m``, ``1h30m``, ``45s``, ``2h`` or ``600`` (seconds);
    a ValueError naming what is wrong otherwise."""
    import re

    text = budget
    if not isinstance(text, str):
        raise InvalidArgument(f"budget must be a duration text such as '90m' (got {text!r})")
    s = text.strip().lower()
    if re.fullmatch(r"\d+(\.\d+)?", s):
        total = float(s)
    else:
        parts = re.fullmatch(r"(?:(\d+(?:\.\d+)?)h)?\s*(?:(\d+(?:\.\d+)?)m(?:in)?)?\s*"
                             r"(?:(\d+(?:\.\d+)?)s)?", s)
        if not s or parts is None or not any(parts.groups()):
            raise InvalidArgument(f"budget must be a duration such as 90m, 1h30m, 45s or 600 (got "
                                  f"{text!r})")
        h, m, sec = (float(g) if g else 0.0 for g in parts.groups())
        total = 3600 * h + 60 * m + sec
    if total <= 0:
        raise InvalidArgument(f"{POSITIVE_DURATION} (got {text!r})")
    return total


#: the one wording for a budget that is not a positive duration (the command line's too)
POSITIVE_DURATION = "budget must be a positive duration such as 90m, 1h30m, 45s or 600"

PROJECTION_CAP = 1000  # seeds: how far a verdict's projection looks (past it, "more than")

# The measured ratio of a seed's fine-tuning time on this project's 2-core CPU machine to that
# on one GPU, by grid (its key without the seed count, StabilityGrid.key(seeds=False)): the
# standard grids' seconds a seed in the 90-minute CPU audit (docs/results-log.md, issue 39)
# against the budgeted standard audit on one NVIDIA H200 (results log, 2026-11-26). A grid
# without an entry projects CPU time only and says so.
GPU_SPEEDUP: dict[str, tuple[float, str]] = {
    "6fc5c17e827f": (43.03 / 3.272, "one NVIDIA H200"),  # MHLoss/MMR/SURT/head-vs-full grid
    "c72db0e5a993": (104.1 / 23.72, "one NVIDIA H200"),  # JACHESS/UEGR grid
}


def probe(kind: str, *, path: CSPath, null: float, expected: str, band,
          spread: float, what: str) -> dict:
    """One probe of a claim as a budgeted audit tracks it: the sequence's last interval, the
    first decision along it (and at how many seeds), what a projection needs (kind, estimate,
    spread, null, band: a :class:`~boundbench.framework.stats.bands.Band`, a half-width or None) and,
    with a band, the seeds the sequence would need at the paper's effect and at no effect
    (at this spread, up to :data:`PROJECTION_CAP`; ``None``: more). JSON-ready."""
    scale = "linear" if kind == "mean" else "ratio"
    b = as_band(band, null=null, scale=scale)
    decision, at = first_decision(path.low, path.high, null=null, expected=expected, band=b,
                                  scale=scale)
    est = float(path.estimate[-1])

    def num(v: float) -> float | None:
        return float(v) if np.isfinite(v) else None

    out = {"what": what, "kind": kind, "n": int(path.n[-1]), "estimate": num(est),
           "spread": num(spread), "null": null, "expected": expected,
           "band": b.to_dict() if b is not None else None,
           "cs_low": num(path.low[-1]), "cs_high": num(path.high[-1]),
           "decision": decision, "decided_at": at if decision else None}
    if b is not None and decision is not None:
        # how near the last interval is to the band's edge (the first decided one, where the
        # last straddles an edge again): a decision that close is flagged fragile
        m = band_margin(float(path.low[-1]), float(path.high[-1]), b)
        out["band_margin"] = m if m is not None else band_margin(
            float(path.low[at - 1]), float(path.high[at - 1]), b)
    if b is not None and np.isfinite(spread) and spread > 0:
        def need(effect: float) -> int | None:
            return seeds_to_decide(n=2, n_max=PROJECTION_CAP, estimate=effect, spread=spread,
                                   null=null, kind=kind, band=b)

        out["seeds_at_paper_effect"] = (need(b.paper_effect) if b.paper_effect is not None
                                        else None)
        out["seeds_at_no_effect"] = need(null)
    return out


def projected_seeds(p: dict, *, cap: int = PROJECTION_CAP) -> int | None:
    """The seeds at which an undecided probe's sequence would decide if its estimate and
    spread held (:func:`seeds_to_decide` up to ``cap``); ``None`` when no count up to ``cap``
    does, or the probe is decided or has too few seeds to project."""
    if p.get("decision") or p.get("estimate") is None or p.get("spread") is None \
            or p["n"] < 2:
        return None
    if "projected_seeds" in p:  # a bounded-data probe projects by its own continuations
        k = p["projected_seeds"]
        return k if k is None or k <= cap else None
    return seeds_to_decide(n=p["n"], n_max=max(cap, p["n"]), estimate=float(p["estimate"]),
                           spread=float(p["spread"]), null=float(p["null"]), kind=p["kind"],
                           band=p.get("band"))


def cost_text(seeds: int, seconds_per_seed: float | None, *, device: str | None = None,
              grid_key: str | None = None) -> str:
    """What ``seeds`` seeds per method cost at the measured seconds a seed, named by the device
    that measured them (``device``: ``"cuda"`` makes them GPU-hours, anything else CPU-hours);
    CPU-hours are also scaled to a GPU by the ratio :data:`GPU_SPEEDUP` records for the grid
    ``grid_key``, where one is recorded."""
    if seconds_per_seed is None or not np.isfinite(seconds_per_seed) or seconds_per_seed <= 0:
        return ""
    hours = seeds * seconds_per_seed / 3600
    at = f"at {seconds_per_seed:.0f} s a seed"
    if device is not None and str(device).startswith("cuda"):
        return f" (about {hours:.2g} GPU-hours here {at})"
    ratio = GPU_SPEEDUP.get(grid_key) if grid_key else None
    gpu = (f", about {hours / ratio[0]:.2g} GPU-hours on {ratio[1]} by this grid's measured "
           f"step-time ratio {ratio[0]:.3g}" if ratio else
           "; no GPU time is recorded for this grid to scale it")
    return f" (about {hours:.2g} CPU-hours here {at}{gpu})"


def probe_text(p: dict, *, seconds_per_seed: float | None = None, device: str | None = None,
               grid_key: str | None = None) -> str:
    """A probe in words: its interval, its band and where that comes from, what it decided
    (a ``no-effect`` with its sign, and "smaller than half the paper's effect" where the band
    is half the paper's effect), and, undecided, the seeds its sequence would need at the
    current estimate, at the paper's effect and at no effect, with their cost (the sequential
    count, not a fixed design's, which is smaller: a sequence pays for being valid at every
    look)."""
    from boundbench.framework.stats.bands import PAPER, sign_inside

    lo, hi = p["cs_low"], p["cs_high"]
    iv = (f"[{lo:.4g}, {hi:.4g}]" if lo is not None and hi is not None else
          "not yet bounded (at least 5 seeds)")
    what = "mean paired change" if p["kind"] == "mean" else "std ratio"
    head = (f"{p['what']}: {what} {p['estimate']:.4g}" if p["estimate"] is not None
            else f"{p['what']}:")
    band = as_band(p.get("band"), null=float(p["null"]))
    where = {"device": device, "grid_key": grid_key}
    told = (f"decided ({p['decision']}) at {p['decided_at']} seeds" if p["decision"]
            else "not decided")
    if p["decision"] == "no-effect" and band is not None and lo is not None:
        told += f", {sign_inside(lo, hi, band)}"
        if band.rule == PAPER:
            told += ": smaller than half the paper's effect"
    if not p["decision"] and p.get("estimate") is not None and p.get("spread") is not None \
            and p["n"] >= 2:  # projected_seeds' own conditions: None then means "none decides"
        need = projected_seeds(p)
        told += (f"; at this estimate the sequence would decide at about {need} seeds"
                 + cost_text(need, seconds_per_seed, **where) if need is not None else
                 f"; at this estimate no count of seeds up to {PROJECTION_CAP} decides")
    if not p["decision"] and band is not None:
        unit = "difference" if p["kind"] == "mean" else "std ratio"
        if band.paper_effect is not None and "seeds_at_paper_effect" in p:
            k = p["seeds_at_paper_effect"]
            told += (f"; detecting the paper's {unit} {band.paper_effect:.3g} needs about {k} "
                     f"seeds per method{cost_text(k, seconds_per_seed, **where)}" if k is not None else
                     f"; detecting the paper's {unit} {band.paper_effect:.3g} needs more than "
                     f"{PROJECTION_CAP} seeds per method at this spread")
        if "seeds_at_no_effect" in p:
            k = p["seeds_at_no_effect"]
            told += (f"; showing no effect (inside the band) needs about {k} seeds"
                     f"{cost_text(k, seconds_per_seed, **where)}" if k is not None else
                     f"; showing no effect needs more than {PROJECTION_CAP} seeds at this "
                     "spread")
    if not p["decision"] and p.get("reach_text"):  # its power, per noise shape (issue 82)
        told += f"; {p['reach_text']}"
    bt = f", {band.text()}" if band is not None else ""
    if p.get("procedure"):  # a procedure valid by construction (issue 82) names itself
        how = ("betting confidence sequence" if p["kind"] == "mean" else
               "exact permutation test at 4, 8, 16, ... seeds; bounded-data ratio sequence")
        return f"{head}, {how} {iv} over {p['n']} seeds{bt}, {told}"
    return (f"{head}, anytime-valid 95% confidence sequence {iv} over {p['n']} seeds{bt}, "
            f"{told}")


def sequential_verdict(probes: list[dict], *, what: str, evidence: dict,
                       seconds_per_seed: float, grid_seeds: int, grid_key: str | None = None,
                       device: str | None = None):
    """The verdict of a claim judged by confidence sequences (a budgeted audit): supported when
    every probe is, contradicted when any is, no-effect when every probe lies in its band,
    else inconclusive; the evidence keeps the probes, the seeds and a seed's cost in seconds
    (what the budget allocates by), and ``grid_key``, the runs' grid without its seed count
    (claims with the same key read the same runs: seeds one of them adds are the others' too)
    and ``device``, where the runs trained (what the seconds a seed were measured on)."""
    from boundbench.framework.verdicts.rules import Verdict, with_margin

    decisions = [p["decision"] for p in probes]
    status = ("contradicted" if "contradicted" in decisions else
              "supported" if all(d == "supported" for d in decisions) else
              "no-effect" if all(d == "no-effect" for d in decisions) else "inconclusive")
    ev = {**evidence, "sequential": {"probes": probes, "seconds_per_seed": seconds_per_seed,
                                     "grid_seeds": grid_seeds,
                                     **({"grid_key": grid_key} if grid_key else {}),
                                     **({"device": device} if device else {})}}
    # the probes that carry the decision: a contradicted one alone, or all of them
    deciding = [p for p in probes if p["decision"] == "contradicted"] \
        if status == "contradicted" else probes
    margins = [p["band_margin"] for p in deciding if p.get("band_margin") is not None]
    if status != "inconclusive" and margins:
        ev = with_margin(ev, min(margins), "band half-width")
    # each probe's text starts with its own label; the claim's is added only where it says more
    said = "; ".join(probe_text(p, seconds_per_seed=seconds_per_seed, device=device,
                                grid_key=grid_key) for p in probes)
    reason = said if all(p["what"].startswith(what) for p in probes) else f"{what}: {said}"
    return Verdict(status, reason, ev)
