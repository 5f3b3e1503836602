"""Trend and spread verdicts decided by exact permutation tests, valid by construction (issue 82).

A trend claim ("stability falls with n") is decided where the outcomes carry no trend: then
they are exchangeable across the levels, and the test that permutes them is exact at any size
and for any shape of the outcomes (Lehmann & Romano, *Testing Statistical Hypotheses*, 4th ed.,
2022, Theorem 17.2.1); with permutations drawn at random, the p-value ``(1 + #{as extreme}) /
(1 + B)`` keeps the level (Phipson & Smyth 2010, *Stat. Appl. Genet. Mol. Biol.* 9: 39). The
Spearman bootstrap interval that decided before stays in the verdict as the effect's interval;
it no longer decides (on the claims' own nulls it erred up to 8%, upper ends to 12.7%).

- :func:`calibrated_trend`: Spearman's rho of ``y`` with ``x``, the outcomes permuted;
- :func:`calibrated_paired_trend`: the mean within-set rho, each set permuted on its own;
- :func:`calibrated_spread`: "the treatment's spread across seeds is lower", the exact
  permutation test of the within-method pair differences ``|x1 - x2|`` at the seeds run (a
  fixed design, one look at the whole level; :mod:`~boundbench.framework.stats.decisions.permutation`).

Each is run through :func:`~boundbench.framework.stats.calibrated.calibrate`: its realised rate on
its own nulls is recorded as a check that can fail (an exact test erring above its level is a
defect), with the smallest effect it finds in 80% of draws.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from boundbench.framework.stats.calibrated import Procedure, calibrate
from boundbench.framework.stats.calibration import ALPHA
from boundbench.framework.stats.decisions.permutation import spread_test
from boundbench.framework.verdicts.rules import Verdict, with_margin

__all__ = ["calibrated_paired_trend", "calibrated_spread", "calibrated_trend"]

N_PERM = 1999  # permutations of the decision (p resolved to 1/2000)
N_PERM_SIM = 499  # of each null's and each power draw's decision (a check, and a reach)
TREND_VALIDITY = ("under no trend the outcomes are exchangeable across the levels (independent "
                  "runs, one distribution at every level)")
PAIRED_VALIDITY = ("under no trend each set's outcomes are exchangeable across the levels "
                   "(sets independent)")
SPREAD_VALIDITY = ("under no effect the two methods' runs are independent draws of one "
                   "distribution up to a shift")


def _centred_ranks(v: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Ranks along the last axis, centred, and their norms (inf for a constant row: rho 0)."""
    from boundbench.framework.stats.trends import tied_ranks

    r = tied_ranks(v)
    r = r - r.mean(-1, keepdims=True)
    den = np.sqrt((r**2).sum(-1))
    return r, np.where(den > 0, den, np.inf)


def _word(p: float, obs: float, sign: int, alpha: float) -> str:
    return "inconclusive" if p > alpha else "supported" if obs * sign > 0 else "contradicted"


def _rho_test(rx: np.ndarray, dx: float, y: np.ndarray, g: np.random.Generator, *, sign: int,
              n_perm: int, alpha: float) -> tuple[str, dict[str, Any]]:
    """Two-sided permutation test of the mean over rows of Spearman's rho of ``y`` (rows:
    sets, each permuted on its own; one row: all points) with the centred ranks ``rx``:
    a row's ranks permuted are the permuted row's ranks, so the ranks are taken once."""
    ry, dy = _centred_ranks(np.atleast_2d(y))
    obs = float(np.mean((ry @ rx) / (dx * dy)))
    perm = g.permuted(np.broadcast_to(ry, (n_perm, *ry.shape)), axis=-1)
    stats = ((perm @ rx) / (dx * dy)).mean(-1)
    p = float((1 + np.sum(np.abs(stats) >= abs(obs) - 1e-12)) / (n_perm + 1))
    return _word(p, obs, sign, alpha), {"p": p, "rho": obs}


def _decided(verdict: Verdict, word: str, extra: dict[str, Any], *, what: str,
             n_perm: int, alpha: float) -> Verdict:
    """``verdict`` (the interval's) re-decided by the permutation test's ``word``."""
    p = extra["p"]
    said = {"supported": "the claimed direction", "contradicted": "the opposite direction",
            "inconclusive": "no trend told from none"}[word]
    ev = {**verdict.evidence, "interval_status": verdict.status, "permutation_p": p,
          "permutation_statistic": extra["rho"], "n_permutations": n_perm}
    ev = with_margin(ev, abs(float(np.log(p / alpha))), "log p")
    return Verdict(word, f"{what}: {said}, permutation p = {p:.3g} ({n_perm} permutations, "
                   f"level {alpha:g}); the bootstrap interval beside it: {verdict.reason}",
                   ev, verdict.figure, verdict.table)


def _permutation_trend(verdict: Verdict, x: np.ndarray, y: np.ndarray, *,
                       rng: np.random.Generator, expected: str, n_sim: int, alpha: float,
                       what: str, null: Any, sd: Any, name: str, nulls: str, validity: str,
                       grid: tuple[float, ...], measure: Any, units: str,
                       centre: Any) -> Verdict:
    """The trend verdicts' one core: the permutation test of the mean over rows of rho
    (:func:`_rho_test`) decides ``verdict`` again, then :func:`~boundbench.framework.
    calibrated.calibrate` runs it on ``null`` s and on alternatives ``null`` plus ``c`` times
    ``sd`` times ``x``'s standardized ranks in the ``expected`` direction; on the battery,
    ``centre`` plus ``sd`` times a family's noise, the same trend added."""
    from scipy.stats import rankdata

    sign = 1 if expected == "increasing" else -1
    rx, dx = _centred_ranks(x)

    def test(n_perm: int):
        return lambda d, g: _rho_test(rx, float(dx), d, g, sign=sign, n_perm=n_perm,
                                      alpha=alpha)

    word, extra = test(N_PERM)(y, rng)
    v = _decided(verdict, word, extra, what=what, n_perm=N_PERM, alpha=alpha)
    zx = rankdata(x)
    zx = sign * (zx - zx.mean()) / (zx.std() or 1.0)
    def family(fam: str, c: float | None, g: np.random.Generator) -> np.ndarray:
        from boundbench.framework.stats.decisions.battery import noise

        return centre + sd * (noise(fam, g, np.shape(y)) + (c or 0.0) * zx)

    proc = Procedure(name, test(N_PERM_SIM), null, nulls, validity=validity, family=family)
    return calibrate(v, y, proc, rng=rng, n_sim=n_sim,
                     alternative=lambda c, g: null(g) + c * sd * zx, grid=grid,
                     measure=measure, units=units)


def calibrated_trend(verdict: Verdict, x: np.ndarray, y: np.ndarray, *,
                     rng: np.random.Generator, expected: str, n_sim: int = 200,
                     alpha: float = ALPHA) -> Verdict:
    """A trend of ``y`` in ``x`` (``expected``: ``"increasing"`` or ``"decreasing"``) decided by
    the two-sided permutation test of Spearman's rho, exact where the outcomes are exchangeable
    across the levels under no trend (whatever their shape); ``verdict``, the rank interval's
    (:func:`~boundbench.framework.stats.trends.trend_verdict`), stays as the effect's interval.
    Calibrated on ``n_sim`` permutations of ``y`` (a check); the minimum detectable effect is
    the smallest rho in the ``expected`` direction found in 80% of draws of ``y`` permuted
    plus a multiple of ``x``'s standardized ranks times ``y``'s spread."""
    from boundbench.framework.stats.trends import spearman_rows

    x, y = np.asarray(x, dtype=float).ravel(), np.asarray(y, dtype=float).ravel()
    return _permutation_trend(
        verdict, x, y, rng=rng, expected=expected, n_sim=n_sim, alpha=alpha, what="trend",
        null=lambda g: g.permutation(y), sd=float(np.std(y)) or 1.0, centre=float(np.mean(y)),
        name="a permutation test of Spearman's rho",
        nulls="permutations of these outcomes (no trend)", validity=TREND_VALIDITY,
        grid=(0.1, 0.2, 0.35, 0.5, 0.75, 1.0, 1.5, 3.0),
        measure=lambda d: float(spearman_rows(x[None], d[None])[0]), units="Spearman rho")


def calibrated_paired_trend(verdict: Verdict, x: np.ndarray, y: np.ndarray, *,
                            rng: np.random.Generator, expected: str, n_sim: int = 400,
                            alpha: float = ALPHA) -> Verdict:
    """A within-set trend of ``y (sets, levels)`` in ``x (levels,)`` decided by the two-sided
    permutation test of the mean within-set Spearman rho, each set's outcomes permuted across
    the levels (exact where they are exchangeable under no trend, whatever their shape);
    ``verdict``, the bootstrap interval's
    (:func:`~boundbench.framework.stats.trends.paired_trend_verdict`), stays as the effect's
    interval. The minimum detectable effect is the mean within-set rho found in 80% of draws
    plus a trend of ``c`` times each set's spread across the standardized ranks of ``x``."""
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    rx, dx = _centred_ranks(x)
    sd = y.std(axis=1, keepdims=True)

    def mean_rho(d: np.ndarray) -> float:
        ry, dy = _centred_ranks(d)
        return float(np.mean((ry @ rx) / (dx * dy)))

    return _permutation_trend(
        verdict, x, y, rng=rng, expected=expected, n_sim=n_sim, alpha=alpha,
        what="within-set trend", null=lambda g: g.permuted(y, axis=1),
        sd=np.where(sd > 0, sd, 1.0), centre=y.mean(axis=1, keepdims=True),
        name="a permutation test of the mean within-set rho",
        nulls="permutations of each set's outcomes across the levels (no trend)",
        validity=PAIRED_VALIDITY, grid=(0.05, 0.1, 0.2, 0.35, 0.5, 0.75, 1.0, 1.5, 3.0),
        measure=mean_rho, units="mean within-set Spearman rho")


def calibrated_spread(verdict: Verdict, a: np.ndarray, b: np.ndarray, *,
                      rng: np.random.Generator, bounds: tuple[float, float] | None = None,
                      equivalence: float | None = None, n_sim: int = 200,
                      alpha: float = ALPHA) -> Verdict:
    """"``a``'s spread across runs is lower than ``b``'s" decided by :func:`spread_test` (exact
    where, under no effect, the runs of both are independent draws of one distribution up to
    a shift); ``verdict``, the std ratio's (:func:`~boundbench.framework.stats.trends.
    std_ratio_verdict`), stays as the effect's interval. ``no-effect`` only where the test
    decides nothing and, with the values' ``bounds``, the bounded std-ratio sequence
    (:func:`~boundbench.framework.stats.decisions.paths.bounded_ratio_path`, valid for any data in
    that range) lies inside ``1 +- equivalence``. Calibrated on nulls that draw both samples
    from their pooled residuals about each one's median at a common spread (a check); the
    minimum detectable effect is the spread ratio found in 80% of such draws."""
    from boundbench.framework.stats.calibration import _draw, _pool

    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if min(a.size, b.size) < 4:
        return verdict.with_evidence(calibration_not_applicable=(
            f"{min(a.size, b.size)} runs of one method: the permutation test needs two pairs"))
    seed = int(rng.integers(2**32))
    word, extra = spread_test(a, b, seed=seed, alpha=alpha)
    ev = {**verdict.evidence, "interval_status": verdict.status, "permutation_p": extra["p"],
          "permutation_p_lower": extra["p_lower"], "permutation_p_higher": extra["p_higher"]}
    ev = with_margin(ev, abs(float(np.log(extra["p"] / alpha))), "log p")
    said = {"supported": "lower", "contradicted": "higher", "inconclusive": "not told apart"}
    band = ""
    if word == "inconclusive" and bounds is not None and equivalence is not None:
        from boundbench.framework.stats.decisions.paths import bounded_ratio_path

        edges = (1 - equivalence, 1 + equivalence)
        path = bounded_ratio_path(a, b, lower=bounds[0], upper=bounds[1], alpha=alpha, at=edges)
        lo, hi = float(path.low[-1]), float(path.high[-1])
        ev.update(bounded_ratio_low=lo, bounded_ratio_high=hi, bounds=list(bounds))
        if edges[0] <= lo and hi <= edges[1]:
            word = "no-effect"
        band = (f"; the bounded std-ratio sequence (values in [{bounds[0]:g}, {bounds[1]:g}]) "
                f"[{lo:.3g}, {hi:.3g}] against the band 1 +- {equivalence:g}")
    v = Verdict(word, (
        f"spread {said.get(word, 'within the band')}: the exact permutation test of the pair "
        f"differences |x1 - x2|, p = {extra['p']:.3g} (level {alpha:g}, two-sided){band}; "
        f"the std ratio beside it: {verdict.reason}"), ev, verdict.figure, verdict.table)
    pool = _pool(a, b)

    def decide(d: tuple[np.ndarray, np.ndarray], g: np.random.Generator
               ) -> tuple[str, dict[str, Any]]:
        return spread_test(*d, seed=seed, alpha=alpha)

    loc_a, loc_b = float(np.median(a)), float(np.median(b))
    s = float(np.sqrt((np.var(a, ddof=1) + np.var(b, ddof=1)) / 2)) or 1.0

    def family(fam: str, c: float | None, g: np.random.Generator
               ) -> tuple[np.ndarray, np.ndarray]:
        # the two methods at one spread (``c``: the first's ratio to the second's)
        from boundbench.framework.stats.decisions.battery import noise

        return (loc_a + (1.0 if c is None else c) * s * noise(fam, g, a.size),
                loc_b + s * noise(fam, g, b.size))

    proc = Procedure("the exact permutation test of the pair differences", decide,
                     lambda g: _draw(pool, a.size, b.size, g),
                     "draws from these runs' pooled residuals at a common spread",
                     validity=SPREAD_VALIDITY, family=family)
    # a grid of ratios, the effect growing as the ratio falls; measured: the ratio drawn
    return calibrate(v, (a, b), proc, rng=rng, n_sim=n_sim,
                     alternative=lambda c, g: _draw(pool, a.size, b.size, g, ratio=c),
                     grid=(0.9, 0.8, 0.7, 0.6, 0.5, 0.4, 0.3, 0.25), measure=None,
                     units="spread ratio")
