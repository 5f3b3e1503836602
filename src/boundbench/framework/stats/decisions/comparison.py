"""``decide``: a claim about two fine-tuning methods, decided on a researcher's own seeds.

Problem: per-seed results of a treatment and a control method, one bounded metric (accuracy,
ECE, Brier, ...), and a claim: ``higher-mean`` / ``lower-mean`` (the treatment's mean metric
is higher / lower), ``lower-spread`` (its standard deviation across seeds is lower), or
``no-effect`` (the means differ by less than ``margin``).

Guarantee: a mean claim's word (all but ``inconclusive``) is read off a betting confidence
sequence (:func:`~boundbench.framework.stats.decisions.betting.betting_cs`) at the first look where it
holds; it is wrong only where the sequence misses the true difference at some look, which
happens with probability at most ``alpha`` whatever the data's shape within its range, and
however many looks, seeds added later included. The looks pair the k-th seed of the treatment
with the k-th of the control, in the order of the seed column (or of a pairing column). The
spread claim is decided as the audit's spread claims are: the exact permutation test of the
within-method differences of consecutive seeds, ``|x1 - x2|`` (the shift cancels), at 4, 8,
16, ... seeds of each method, the j-th look at ``alpha 6 / (pi^2 (j + 1)^2)`` (a union bound:
a word at any of them errs at most ``alpha``); its interval is the bounded-data std-ratio
sequence's (:func:`~boundbench.framework.stats.decisions.paths.bounded_ratio_path`). Until issue 82
item 3 it was a betting sequence of ``((t1 - t2)^2 - (c1 - c2)^2) / 2``, valid too, whose
stated power on a 40-seed file was "no std ratio down to 0.05" (at ``b8abdbf``, results log of
2026-12-07); the permutation test decides that file at 32 seeds
(``tests/test_reach.py::test_the_recorded_spread_decision_on_the_40_seed_file``).

Validity, checked before anything runs: every value finite and inside the metric's declared
range (known for the metrics named in :data:`RANGES`, else given); the seeds of a method
independent draws with a common mean (the spread's test: under no effect, the two methods'
seeds one distribution up to a shift). References: Lehmann & Romano, Testing Statistical
Hypotheses, 4th ed. (2022), Thm 17.2.1; I. Waudby-Smith and A. Ramdas, Estimating
means of bounded random variables by betting, JRSS B 86 (2024) 1-27.
"""

from __future__ import annotations

import hashlib
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from boundbench.errors import InvalidArgument
from boundbench.framework.stats.decisions.betting import betting_cs
from boundbench.framework.stats.decisions.probes import SPREAD_PROCEDURE

__all__ = ["CLAIMS", "RANGES", "Decision", "decide"]

#: claim -> (the quantity decided, the sign that supports it; 0: the no-effect band)
CLAIMS = {"higher-mean": ("mean", 1), "lower-mean": ("mean", -1),
          "lower-spread": ("std ratio", -1), "no-effect": ("mean", 0)}
#: metrics whose range is known (a per-seed score in [0, 1]; multiclass Brier in [0, 2])
RANGES = {"accuracy": (0.0, 1.0), "acc": (0.0, 1.0), "error": (0.0, 1.0), "ece": (0.0, 1.0),
          "f1": (0.0, 1.0), "auc": (0.0, 1.0), "brier": (0.0, 2.0)}
DRAWS = 40  # resampled continuations behind "seeds it would need"
HORIZON = 300  # the most looks a continuation is followed to


@dataclass(frozen=True)
class Decision:
    """What :func:`decide` found (made by it, not by hand).

    Parameters
    ----------
    word : str
        supported / contradicted / no-effect / inconclusive.
    claim, quantity : str
        The claim decided and the quantity its sequence bounds, in words.
    estimate : float
        The quantity's point estimate at the last look.
    interval : (float, float)
        The confidence sequence's interval at the last look.
    alpha, margin : float
        The error allowed over every look; the no-effect band's half-width (or None).
    looks, decided_at : int
        Looks taken; the first look where the word held (None while inconclusive).
    seeds_needed : int or None
        A method's seeds by which half of the resampled continuations of these values decide;
        None where decided or past the horizon.
    procedure, validity : str
        The procedure, and the condition under which its guarantee holds.
    path, digests : list
        The interval after each look; a hash of the looks up to each one (what
        ``previous`` is checked against).
    reach : dict or None
        Inconclusive on a directional claim: the smallest effect the procedure detects at these
        seeds in 80% of draws under each noise shape of the battery, and the worst shape's
        (:mod:`~boundbench.framework.stats.decisions.reach`); None otherwise.

    Examples
    --------
    >>> import pandas as pd
    >>> from boundbench import decide
    >>> runs = pd.DataFrame({"method": ["a"] * 3 + ["b"] * 3, "seed": [0, 1, 2] * 2,
    ...                      "accuracy": [0.8, 0.82, 0.81, 0.7, 0.71, 0.69]})
    >>> d = decide(runs, claim="higher-mean", treatment="a", control="b", metric="accuracy")
    >>> d.word, d.looks
    ('inconclusive', 3)
    """

    word: str
    claim: str
    quantity: str
    estimate: float
    interval: tuple[float, float]
    alpha: float
    margin: float | None
    looks: int
    decided_at: int | None
    seeds_needed: int | None
    procedure: str
    validity: str
    path: list[tuple[int, float, float]] = field(repr=False)
    digests: list[str] = field(repr=False)
    reach: dict | None = field(default=None, repr=False)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def text(self) -> str:
        lo, hi = self.interval
        lines = [f"{self.claim}: {self.word.upper()}"
                 + (f" (at look {self.decided_at} of {self.looks}, "
                    f"{self.path[self.decided_at - 1][0]} seeds)" if self.decided_at else
                    f" after {self.looks} looks"),
                 f"  {self.quantity}: estimate {self.estimate:.4g}, {100 * (1 - self.alpha):g}% "
                 f"confidence sequence [{lo:.4g}, {hi:.4g}]"
                 + (f", margin +-{self.margin:g}" if self.margin is not None else ""),
                 f"  procedure: {self.procedure}", f"  valid when: {self.validity}"]
        if self.word == "inconclusive":
            lines.append("  " + (f"seeds it would need at the current effect: about "
                                 f"{self.seeds_needed} a method (half of the resampled "
                                 f"continuations of these values decide by then)"
                                 if self.seeds_needed else
                                 f"seeds it would need: more than {HORIZON} a method at the "
                                 f"current effect (none of the continuations decided by half)"))
            if self.reach:
                from boundbench.framework.stats.decisions.reach import reach_text

                lines.append(f"  power: {reach_text(self.reach)}")
        return "\n".join(lines)


def decide(results: Any, *, claim: str, treatment: str, control: str, metric: str,
           alpha: float = 0.05, margin: float | None = None,
           bounds: tuple[float, float] | None = None, pair: str | None = None,
           previous: Any = None, seed: int = 0) -> Decision:
    """Decide ``claim`` about ``treatment`` against ``control`` on ``metric``.

    Parameters
    ----------
    results : DataFrame or path of a CSV
        One row per (method, seed): columns ``method``, ``seed``, ``metric`` (and ``pair``).
    claim : {"higher-mean", "lower-mean", "lower-spread", "no-effect"}
    treatment, control : str
        Two values of the ``method`` column.
    metric : str
        The column decided on.
    alpha : float, default 0.05
        The chance of a wrong word, over every look.
    margin : float, optional
        The no-effect band's half-width on the quantity (required for ``no-effect``).
    bounds : (float, float), optional
        The metric's range; required where :data:`RANGES` does not know the metric.
    pair : str, optional
        A column pairing the two methods' rows (the same data split); default: the seed order.
    previous : Decision, dict or path of its JSON, optional
        An earlier decision on the first seeds of these: checked to be a prefix (the same
        values in the same order), so the sequence is continued, not restarted.
    seed : int, default 0
        The seed of the resampled continuations (``seeds_needed``), nothing else.

    Examples
    --------
    >>> import numpy as np
    >>> import pandas as pd
    >>> from boundbench import decide
    >>> rng = np.random.default_rng(0)
    >>> runs = pd.DataFrame({"method": ["a"] * 60 + ["b"] * 60, "seed": list(range(60)) * 2,
    ...                      "accuracy": np.r_[rng.uniform(0.8, 0.9, 60),
    ...                                        rng.uniform(0.5, 0.6, 60)]})
    >>> decide(runs, claim="higher-mean", treatment="a", control="b", metric="accuracy").word
    'supported'
    """
    if claim not in CLAIMS:
        raise InvalidArgument(f"claim must be one of {sorted(CLAIMS)} (got {claim!r})")
    if not 0 < alpha < 1:
        raise InvalidArgument(f"alpha must be in (0, 1) (got {alpha})")
    if margin is not None and not (np.isfinite(margin) and margin > 0):
        raise InvalidArgument(f"margin must be a positive number (got {margin})")
    if claim == "no-effect" and margin is None:
        raise InvalidArgument("claim 'no-effect' needs a margin: the band the difference must "
                              "lie in")
    lo, hi = _range(metric, bounds)
    t, c, how = _pairs(_frame(results), treatment=treatment, control=control, metric=metric,
                       pair=pair, lo=lo, hi=hi)
    quantity, sign = CLAIMS[claim]
    if quantity == "std ratio":
        return _spread_decision(t, c, claim=claim, names=(treatment, control), metric=metric,
                                alpha=alpha, lo=lo, hi=hi, how=how, previous=previous,
                                seed=seed)
    obs, olo, ohi = t - c, lo - hi, hi - lo
    if obs.size < 1:
        raise InvalidArgument("no pair of seeds to decide on")
    digests = _digests(obs)
    _check_prefix(previous, digests)
    path = betting_cs(obs, lower=olo, upper=ohi, alpha=alpha)
    words = [_word(a, b, sign, margin) for a, b in zip(path.low, path.high, strict=True)]
    first = next((i for i, w in enumerate(words) if w != "inconclusive"), None)
    word = words[first] if first is not None else "inconclusive"
    needed = None if first is not None else _needed(obs, olo, ohi, alpha, sign, margin, seed)
    reach = None
    if first is None and sign and obs.size > 1:
        from boundbench.framework.stats.decisions.reach import mean_reach

        reach = mean_reach(obs.size, spread=float(np.std(obs, ddof=1)), lower=olo, upper=ohi,
                           alpha=alpha, seed=seed, expected="increase" if sign > 0 else "decrease")
    return Decision(
        word=word, claim=claim, quantity=f"mean({treatment}) - mean({control}) of {metric}",
        estimate=float(np.mean(obs)),
        interval=(float(path.low[-1]), float(path.high[-1])), alpha=alpha, margin=margin,
        looks=int(obs.size), decided_at=None if first is None else first + 1,
        seeds_needed=needed,
        procedure=("betting confidence sequence (Waudby-Smith & Ramdas 2024, hedged capital, "
                   "predictable plug-in bets), a look after each pair of seeds (one of each "
                   "method); the word at the first look where it holds"),
        validity=(f"every {metric} value in [{lo:g}, {hi:g}] (checked); each method's seeds "
                  f"independent draws with a common mean; pairs by {how}; any stopping rule"),
        path=[(int(n), float(a), float(b)) for n, a, b in zip(path.n, path.low, path.high,
                                                              strict=True)],
        digests=digests, reach=reach)


def _spread_decision(t: np.ndarray, c: np.ndarray, *, claim: str, names: tuple[str, str],
                     metric: str, alpha: float, lo: float, hi: float, how: str, previous: Any,
                     seed: int) -> Decision:
    """``lower-spread`` by the audit's spread test: the exact permutation test of the
    within-method pair differences at the scheduled looks (:func:`~boundbench.framework.
    decisions.probes.spread_probe`); the interval: the bounded std-ratio sequence's."""
    from boundbench.framework.stats.decisions.paths import bounded_ratio_path
    from boundbench.framework.stats.decisions.probes import spread_probe

    if min(t.size, c.size) < 2:
        raise InvalidArgument("the spread claim needs at least 2 seeds of each method")
    digests = _digests(np.column_stack([t, c]).ravel())[1::2]  # one a seed of each method
    _check_prefix(previous, digests)
    p = spread_probe(t, c, lower=lo, upper=hi, band=None, what=metric, seed=seed, alpha=alpha)
    ratio = bounded_ratio_path(t, c, lower=lo, upper=hi, alpha=alpha)
    at_seeds = {int(n): (float(a), float(b)) for n, a, b in zip(ratio.n, ratio.low, ratio.high,
                                                                strict=True)}
    looks = p["looks"]
    word = p["decision"] or "inconclusive"
    hit = next((i for i, lk in enumerate(looks) if lk["word"]), None)
    last = at_seeds[max(at_seeds)]
    return Decision(
        word=word, claim=claim, quantity=f"std({names[0]}) / std({names[1]}) of {metric}",
        estimate=float(p["estimate"]) if p["estimate"] is not None else float("nan"),
        interval=last, alpha=alpha, margin=None, looks=len(looks),
        decided_at=None if hit is None else hit + 1,
        seeds_needed=p.get("projected_seeds") if word == "inconclusive" else None,
        procedure=(f"{SPREAD_PROCEDURE} (a look reached by seeds "
                   f"{', '.join(str(lk['seeds']) for lk in looks) or 'none yet: the first is 4'}"
                   "); the interval: the bounded std-ratio confidence sequence"),
        validity=(f"{p['validity'].replace('the no-effect band', 'the ratio')}; pairs by {how}; "
                  "any stopping rule among the scheduled looks"),
        path=[(lk["seeds"], *at_seeds.get(lk["seeds"], last)) for lk in looks],
        digests=digests, reach=p.get("reach") if word == "inconclusive" else None)


def _range(metric: str, bounds: Any) -> tuple[float, float]:
    if bounds is None:
        if metric.lower() not in RANGES:
            raise InvalidArgument(f"the range of metric {metric!r} is unknown: give bounds "
                                  f"(--range LO HI); known: {sorted(RANGES)}")
        return RANGES[metric.lower()]
    lo, hi = (float(b) for b in bounds)
    if not (np.isfinite(lo) and np.isfinite(hi) and lo < hi):
        raise InvalidArgument(f"bounds must be finite with low < high (got {bounds!r})")
    return lo, hi


def _frame(results: Any) -> Any:
    import pandas as pd

    if isinstance(results, pd.DataFrame):
        return results
    if isinstance(results, (str, Path)):
        path = Path(results)
        if not path.is_file():
            raise InvalidArgument(f"results: no such file {str(path)!r}")
        try:
            return pd.read_csv(path)
        except (ValueError, pd.errors.ParserError) as exc:
            raise InvalidArgument(f"results: {str(path)!r} is not a CSV ({exc})") from None
    raise InvalidArgument(f"results must be a DataFrame or a CSV path (got "
                          f"{type(results).__name__})")


def _pairs(df: Any, *, treatment: str, control: str, metric: str, pair: str | None,
           lo: float, hi: float) -> tuple[np.ndarray, np.ndarray, str]:
    import pandas as pd

    key = pair or "seed"
    for col in ("method", key, metric):
        if col not in df.columns:
            raise InvalidArgument(f"results has no column {col!r} (columns: {list(df.columns)})")
    arms = []
    for m in (treatment, control):
        rows = df[df["method"].astype(str) == m]
        if rows.empty:
            raise InvalidArgument(f"method {m!r} has no rows (methods: "
                                  f"{sorted(df['method'].astype(str).unique())})")
        if rows[key].duplicated().any():
            raise InvalidArgument(f"method {m!r} has two rows of one {key} "
                                  f"({rows[key][rows[key].duplicated()].iloc[0]!r})")
        values = pd.to_numeric(rows[metric], errors="coerce").to_numpy(dtype=float)
        bad = ~np.isfinite(values) | (values < lo) | (values > hi)
        if bad.any():
            raise InvalidArgument(
                f"column {metric!r}: method {m!r}, {key} {rows[key].iloc[int(np.argmax(bad))]!r}"
                f" has {rows[metric].iloc[int(np.argmax(bad))]!r}, not a number in [{lo:g}, "
                f"{hi:g}] (a bounded-data procedure needs every value inside the range)")
        arms.append(rows.assign(_v=values).sort_values(key, kind="stable"))
    t, c = arms
    if pair is not None:
        both = t.merge(c, on=pair, suffixes=("_t", "_c")).sort_values(pair, kind="stable")
        return both["_v_t"].to_numpy(), both["_v_c"].to_numpy(), f"column {pair!r}"
    n = min(len(t), len(c))
    return t["_v"].to_numpy()[:n], c["_v"].to_numpy()[:n], "rank in seed order"


def _word(low: float, high: float, sign: int, margin: float | None) -> str:
    if not (np.isfinite(low) and np.isfinite(high)):
        return "inconclusive"
    if sign and sign * low > 0 and sign * high > 0:
        return "supported"
    if sign and sign * low < 0 and sign * high < 0:
        return "contradicted"
    if margin is not None and -margin < low and high < margin:
        return "no-effect"
    if sign == 0 and margin is not None and (low > margin or high < -margin):
        return "contradicted"
    return "inconclusive"


def _digests(obs: np.ndarray) -> list[str]:
    """A hash of the looks up to each one: an earlier decision's are a prefix of these."""
    h, out = hashlib.sha256(), []
    for v in obs:
        h.update(float(v).hex().encode())
        out.append(h.hexdigest()[:16])
    return out


def _check_prefix(previous: Any, digests: list[str]) -> None:
    if previous is None:
        return
    if isinstance(previous, (str, Path)):
        import json

        try:
            previous = json.loads(Path(previous).read_text())
        except (OSError, ValueError) as exc:
            raise InvalidArgument(f"previous: cannot read the earlier decision ({exc})") from None
    old = previous.digests if isinstance(previous, Decision) else (
        previous.get("digests") if isinstance(previous, dict) else None)
    if not isinstance(old, list) or not old:
        raise InvalidArgument("previous: not a decision written by decide (no digests)")
    if len(old) > len(digests) or digests[len(old) - 1] != old[-1]:
        raise InvalidArgument(f"previous: its {len(old)} looks are not the first looks of these "
                              "results (a value or the order changed): the sequence cannot be "
                              "continued; decide on the new results alone")


def _needed(obs: np.ndarray, lo: float, hi: float, alpha: float, sign: int,
            margin: float | None, seed: int) -> int | None:
    """A method's seeds by which half of :data:`DRAWS` continuations of ``obs`` (resampled
    from them, appended to them) decide, up to :data:`HORIZON` looks; None past it."""
    rng = np.random.default_rng(seed)
    firsts = []
    for _ in range(DRAWS):
        more = np.concatenate([obs, rng.choice(obs, HORIZON - obs.size)]) \
            if obs.size < HORIZON else obs
        path = betting_cs(more, lower=lo, upper=hi, alpha=alpha)
        words = [_word(a, b, sign, margin) for a, b in zip(path.low, path.high, strict=True)]
        firsts.append(next((i + 1 for i, w in enumerate(words) if w != "inconclusive"),
                           np.inf))
    looks = float(np.median(firsts))
    if not np.isfinite(looks):
        return None
    return int(looks)
