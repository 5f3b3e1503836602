"""An exact permutation test of a spread claim, valid at every look of a fixed schedule.

Problem: seeds ``t_1, t_2, ...`` of a treatment and ``c_1, c_2, ...`` of a control; the claim:
the treatment's spread across seeds is lower (or higher). Null: the two methods' seeds are
independent draws of one distribution up to a shift (equal spread of every kind; the means
may differ). The within-method differences of consecutive seeds, ``d = x_1 - x_2``, do not
depend on the shift, so under the null the ``|d|`` of both methods are exchangeable, and the
test that permutes their labels is exact at any size (Lehmann & Romano, *Testing Statistical
Hypotheses*, 4th ed., 2022, Theorem 17.2.1), whatever the data's shape, bounded or not.

Statistic: the mean ``|d|`` of the treatment minus that of the control (half the Gini mean
difference of each, a spread); p-value: exact over every relabelling where there are at most
:data:`EXACT` of them, else ``(1 + #{as extreme}) / (1 + B)`` over :data:`DRAWS` relabellings
drawn from the seed and the look's size, the same for every dataset (valid, slightly
conservative: Phipson & Smyth 2010, *Stat. Appl. Genet. Mol. Biol.* 9: 39).

Looks: after 4, 8, 16, 32, ... seeds of each method (:data:`SCHEDULE`), the ``j``-th at level
``alpha * 6 / (pi^2 (j + 1)^2)`` (their sum is ``alpha``), each side at half of it: a word read
at any of these looks, however the looking and stopping are chosen, errs with probability at
most ``alpha`` (a union bound over the looks). A run with seeds between two looks is read at
the last look it reached; the seeds past it wait for the next.
"""

from __future__ import annotations

import functools
import math
from itertools import combinations

import numpy as np

from boundbench.errors import InvalidArgument

__all__ = ["DRAWS", "EXACT", "SCHEDULE", "look_alpha", "lower_at_some_look", "spread_looks",
           "spread_test"]

EXACT = 20_000  # relabellings enumerated where there are at most this many
DRAWS = 9_999  # relabellings drawn otherwise
SCHEDULE = tuple(4 * 2 ** j for j in range(12))  # seeds of each method at each look


def look_alpha(j: int, alpha: float) -> float:
    """The level of the ``j``-th look (0-based): ``alpha 6 / (pi^2 (j + 1)^2)``."""
    return alpha * 6 / (math.pi ** 2 * (j + 1) ** 2)


@functools.lru_cache(maxsize=64)
def _relabellings(n: int, k: int, seed: int) -> tuple[np.ndarray, int]:
    """The treatment's positions in each relabelling of ``n`` values, ``k`` of them the
    treatment's: all of them where there are at most :data:`EXACT`, else :data:`DRAWS` drawn
    from ``(seed, n)`` (independent of the data, so one set serves every dataset); and 1 where
    drawn (the observed labelling is counted among them), else 0."""
    if math.comb(n, k) <= EXACT:
        idx = np.array(list(combinations(range(n), k)))
        extra = 0
    else:
        rng = np.random.default_rng([seed, n])
        idx = np.argsort(rng.random((DRAWS, n)), axis=1)[:, :k]
        extra = 1
    idx.setflags(write=False)
    return idx, extra


def _tails(s: np.ndarray, pooled: np.ndarray, k: int, extra: int) -> tuple[np.ndarray, np.ndarray]:
    """The one-sided p-values of ``mean|dt| - mean|dc|`` being low and high, from the treatment's
    sum ``s`` under each relabelling (shape ``(..., relabellings)``) and the pooled ``|d|``
    (shape ``(..., n)``, the treatment's first): one formula for one dataset and for a batch."""
    n = pooled.shape[-1]
    observed = pooled[..., :k].mean(axis=-1, keepdims=True) - pooled[..., k:].mean(axis=-1,
                                                                                  keepdims=True)
    total = pooled.sum(axis=-1, keepdims=True)
    stats = s / k - (total - s) / (n - k)
    # ties of float sums count as ties
    tol = 1e-12 * np.maximum(1.0, np.abs(pooled).max(axis=-1, keepdims=True))
    low = (extra + np.sum(stats <= observed + tol, axis=-1)) / (extra + s.shape[-1])
    high = (extra + np.sum(stats >= observed - tol, axis=-1)) / (extra + s.shape[-1])
    return low, high


def _p_values(dt: np.ndarray, dc: np.ndarray, seed: int) -> tuple[float, float]:
    """One-sided p-values of ``mean|dt| - mean|dc|`` being low and high."""
    pooled = np.r_[np.abs(dt), np.abs(dc)]
    idx, extra = _relabellings(pooled.size, dt.size, seed)
    low, high = _tails(pooled[idx].sum(axis=1), pooled, dt.size, extra)
    return float(low), float(high)


@functools.lru_cache(maxsize=64)
def _membership(n: int, k: int, seed: int) -> np.ndarray:
    """:func:`_relabellings` as a 0/1 matrix (relabellings x n): a batch's sums under every
    relabelling are one matrix product with it."""
    idx, _ = _relabellings(n, k, seed)
    member = np.zeros((len(idx), n))
    np.put_along_axis(member, idx, 1.0, axis=1)
    member.setflags(write=False)
    return member


def spread_looks(t: np.ndarray, c: np.ndarray, *, alpha: float = 0.05, seed: int = 0
                 ) -> list[dict]:
    """The test at each look of :data:`SCHEDULE` the seeds reach: ``{"seeds", "alpha", "p_lower",
    "p_higher", "word"}``, ``word`` ``"lower"`` / ``"higher"`` (the treatment's spread) where its
    p-value is at most half the look's level, else None. ``t``, ``c``: each method's values in
    seed order (the first ``n`` of each enter the look at ``n``); ``seed``: the relabellings'
    draws where they are not enumerated.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> looks = spread_looks(rng.normal(0, 0.2, 32), rng.normal(5, 1.0, 32))
    >>> [lk["word"] for lk in looks]
    [None, None, 'lower', 'lower']
    """
    t, c = np.asarray(t, dtype=float), np.asarray(c, dtype=float)
    if not (np.isfinite(t).all() and np.isfinite(c).all()):
        raise InvalidArgument("every seed's value must be a finite number")
    if not 0 < alpha < 1:
        raise InvalidArgument(f"alpha must be in (0, 1) (got {alpha})")
    out = []
    for j, n in enumerate(SCHEDULE):
        if min(t.size, c.size) < n:
            break
        dt = t[0:n:2] - t[1:n:2]
        dc = c[0:n:2] - c[1:n:2]
        low, high = _p_values(dt, dc, seed)
        level = look_alpha(j, alpha)
        word = "lower" if low <= level / 2 else "higher" if high <= level / 2 else None
        out.append({"seeds": n, "alpha": level, "p_lower": low, "p_higher": high, "word": word})
    return out


def lower_at_some_look(t: np.ndarray, c: np.ndarray, *, alpha: float = 0.05, seed: int = 0
                       ) -> np.ndarray:
    """Whether :func:`spread_looks` says ``"lower"`` at some look, for a batch of datasets at
    once (``t``, ``c`` of shape (B, n)): the same relabellings and levels, the statistics of
    every dataset in one matrix product (what a power estimate draws hundreds of).

    >>> rng = np.random.default_rng(0)
    >>> t, c = rng.normal(0, 0.2, (3, 32)), rng.normal(5, 1.0, (3, 32))
    >>> lower_at_some_look(t, c).tolist() == [any(lk["word"] == "lower" for lk in
    ...     spread_looks(t[i], c[i])) for i in range(3)]
    True
    """
    t, c = np.atleast_2d(np.asarray(t, dtype=float)), np.atleast_2d(np.asarray(c, dtype=float))
    hit = np.zeros(t.shape[0], dtype=bool)
    for j, n in enumerate(SCHEDULE):
        if min(t.shape[1], c.shape[1]) < n:
            break
        pooled = np.abs(np.concatenate([t[:, 0:n:2] - t[:, 1:n:2], c[:, 0:n:2] - c[:, 1:n:2]],
                                       axis=1))
        _, extra = _relabellings(n, n // 2, seed)
        # (B, relabellings): the treatment's sum under each, for every dataset at once
        low, _ = _tails(pooled @ _membership(n, n // 2, seed).T, pooled, n // 2, extra)
        hit |= low <= look_alpha(j, alpha) / 2
    return hit


def spread_test(a: np.ndarray, b: np.ndarray, *, seed: int, alpha: float = 0.05
                ) -> tuple[str, dict]:
    """The exact permutation test that ``a``'s spread is lower (``supported``) or higher
    (``contradicted``) than ``b``'s, each side at ``alpha / 2``, on the within-method
    differences of consecutive runs (the shift cancels), at the runs given: one look at the
    whole level, for a design whose runs were fixed before any was read.

    >>> rng = np.random.default_rng(0)
    >>> spread_test(rng.normal(0, 0.2, 20), rng.normal(5, 1.0, 20), seed=0)[0]
    'supported'
    """
    a, b = np.asarray(a, dtype=float).ravel(), np.asarray(b, dtype=float).ravel()
    if not (np.isfinite(a).all() and np.isfinite(b).all()):
        raise InvalidArgument("every run's value must be a finite number")
    if min(a.size, b.size) < 4:
        raise InvalidArgument(f"a spread test needs at least 4 runs of each method (got "
                              f"{a.size} and {b.size})")
    if not 0 < alpha < 1:
        raise InvalidArgument(f"alpha must be in (0, 1) (got {alpha})")
    na, nb = a.size - a.size % 2, b.size - b.size % 2
    low, high = _p_values(a[0:na:2] - a[1:na:2], b[0:nb:2] - b[1:nb:2], seed)
    word = ("supported" if low <= alpha / 2 else "contradicted" if high <= alpha / 2
            else "inconclusive")
    return word, {"p": min(1.0, 2 * min(low, high)), "p_lower": low, "p_higher": high}
