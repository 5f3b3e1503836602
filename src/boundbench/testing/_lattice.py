"""The box's structure as one of ``falsify``'s members (issue 81 items 1 and 2): bounds bind at
vertices (an l1/l2 ratio at every corner of a 24-dimensional cube, a variance with half its
values at each end), at a face's centre (Gershgorin's ratio with the diagonal at 0) and on the
diagonal, where neither uniform draws nor a population search in 24 dimensions go.

:func:`lattice_round` climbs on the lattice ``{low, middle, high}^d`` of the box (the middle in
the axis's own scale: geometric on a log axis, rounded on an integer one): from the lower
corner, the upper corner and the centre, then from lattice points drawn from the seed, it moves
one coordinate at a time to another of its three values while the ratio grows (first
improvement, coordinates in a seeded order), and restarts when a whole pass finds none. A
cube with 2^24 vertices is searched by these moves, not enumerated; a box of up to
``log3(chunk)`` axes is enumerated whole by them. Every call counts: at most ``chunk`` calls
(fewer once the lattice is scored whole or every climb ends on points already scored).

Reference: the vertex and face structure of box-constrained maxima, e.g. H. P. Benson,
Concave minimization: theory, applications and algorithms, in Handbook of Global Optimization
(1995), section 2 (a convex function's maximum over a polytope is at a vertex).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

__all__ = ["LEVELS", "integer_round", "lattice_round"]

LEVELS = (0.0, 0.5, 1.0)  # unit coordinates of each axis's low end, middle and high end


class _Memo:
    """The bound scored once per key (a lattice point, an integer point), each new key one
    call of ``chunk``, the best instance kept (the record ``_hit`` reads)."""

    def __init__(self, test: Any, chunk: int) -> None:
        self.test, self.chunk, self.left = test, max(int(chunk), 1), max(int(chunk), 1)
        self.best: dict[str, Any] = {"ratio": -math.inf, "lhs": math.nan, "rhs": math.nan,
                                     "instance": None}
        self.seen: dict[tuple, float] = {}

    def __call__(self, key: tuple, params: Callable[[], dict]) -> float:
        from boundbench.testing._portfolio import _worst_of

        if key in self.seen:  # a point once scored is not called again
            return self.seen[key]
        self.left -= 1
        p = params()
        try:
            ratio, lhs, rhs = _worst_of(self.test, p)
        except (ValueError, ArithmeticError, np.linalg.LinAlgError):
            ratio, lhs, rhs = -math.inf, math.nan, math.nan
        r = ratio if not math.isnan(ratio) else -math.inf
        self.seen[key] = r
        if r > self.best["ratio"]:
            self.best.update(ratio=r, lhs=lhs, rhs=rhs, instance=dict(p))
        return r


def lattice_round(test: Any, space: dict, *, chunk: int, seed: int,
                  starts_only: bool = False) -> dict[str, Any]:
    """At most ``chunk`` calls of ``test``'s bound on the box's lattice (the module's
    climb); the record of :func:`~boundbench.testing._portfolio.search_round` (its best
    instance rechecked in high precision where it violates, ``candidates`` the best of
    distinct restarts). ``starts_only``: the lower corner, the upper corner and the centre,
    no climb (``falsify``'s first three calls)."""
    from boundbench.framework.search.targeted import Search
    from boundbench.testing._portfolio import _hit

    probe = Search(space, lambda p: (0.0, 1.0))
    d = len(space)
    rng = np.random.default_rng([int(seed) % 2**32, 81])
    memo = _Memo(test, chunk)
    ends: list[tuple[float, tuple[int, ...]]] = []  # each climb's end: the best of distinct basins

    def at(idx: tuple[int, ...]) -> dict:
        return {k: (v.item() if hasattr(v, "item") else v)
                for k, v in probe.decode(np.array([LEVELS[i] for i in idx])).items()}

    def score(idx: tuple[int, ...]) -> float:
        return memo(idx, lambda: at(idx))

    starts = iter([(0,) * d, (2,) * d, (1,) * d])
    stalled = 0  # climbs in a row that called nothing new (all their points already scored)
    while memo.left > 0 and len(memo.seen) < 3 ** d and stalled < 100:
        x = next(starts, None) or tuple(int(v) for v in rng.integers(0, 3, size=d))
        before = memo.left
        r = score(x)
        if starts_only:
            ends.append((r, x))
            if len(ends) == 3:
                break
            continue
        improved = True
        while improved and memo.left > 0:
            improved = False
            for j in rng.permutation(d):
                for level in (v for v in range(3) if v != x[j]):
                    y = x[:j] + (level,) + x[j + 1:]
                    if y not in memo.seen and memo.left <= 0:
                        break
                    ry = score(y)
                    if ry > r:
                        x, r, improved = y, ry, True
                        break
                if improved or memo.left <= 0:
                    break
        ends.append((r, x))
        stalled = stalled + 1 if memo.left == before else 0
    hit = _hit(test, memo.best, memo.chunk - memo.left,
               fallback=memo.best["instance"] or {})
    tops = sorted({x: r for r, x in ends}.items(), key=lambda t: -t[1])[:4]
    hit["candidates"] = [at(x) for x, _ in tops]
    return hit


def integer_round(test: Any, space: dict, *, start: dict, chunk: int) -> dict[str, Any] | None:
    """A climb over the box's integer axes from ``start`` (the float axes kept): each move
    changes one integer axis by +-1, +-2, +-4, ... (within its range), the first that raises
    the ratio taken, until none does or ``chunk`` calls are made; ``None`` for a box without
    integer axes. Nelder-Mead's simplex rounds to the same integers at every small step, so
    an integer box's worst case (Chebyshev's bound on a binomial at n = 2, t = 1) is sized by
    these moves instead. The record of :func:`~boundbench.testing._portfolio.search_round`."""
    from boundbench.testing._portfolio import _hit

    ints = [k for k, spec in space.items() if len(spec) == 3 and spec[2] == "int"]
    if not ints or chunk < 1:
        return None
    memo = _Memo(test, chunk)

    def score(p: dict) -> float:
        return memo(tuple(p[k] for k in ints), lambda: p)

    x = {k: (int(round(v)) if k in ints else v) for k, v in start.items()}
    r = score(x)
    improved = True
    while improved and memo.left > 0:
        improved = False
        for k in ints:
            lo, hi = int(space[k][0]), int(space[k][1])
            step = 1
            while step <= hi - lo and not improved and memo.left > 0:
                for y in ({**x, k: x[k] - step}, {**x, k: x[k] + step}):
                    if lo <= y[k] <= hi and memo.left > 0 and (ry := score(y)) > r:
                        x, r, improved = y, ry, True
                        break
                step *= 2
            if improved:
                break
    return _hit(test, memo.best, memo.chunk - memo.left, fallback=x)
