"""The sizing stage of ``falsify``'s portfolio: once a violation is found (or half the budget
is spent), the rest of the budget sizes the worst case with the members of
:mod:`boundbench.testing._portfolio` (a global search, Nelder-Mead polishing) and of
:mod:`boundbench.testing._lattice` (integer moves). Apart from both so that neither imports
the other.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from boundbench.testing._portfolio import polish_round, search_round

__all__ = ["SIZING_BOXES", "sizing"]


# the polishing rounds' first simplex half-widths, a share of each axis: smaller each time, so
# a worst case at a kink or at an edge of the region where the bound fails is pinned
SIZING_BOXES = (0.05, 5e-3, 5e-5, 5e-7)


def sizing(test: Any, space: dict, t: Any, *, calls: int, seed: int, run_seed: int | None = None,
           steps: int | None = None) -> int:
    """The budget's last part, spent on the size of the worst case: half on one differential
    evolution over the whole box seeded with the best instances found so far (a round-by-round
    search restarts its population each round, which is why it sized worse than one long run),
    the rest on Nelder-Mead: one short round from the best of each of two other basins the
    global search saw (a bound may fail on two edges), then rounds from the best instance so
    far, each with a smaller first simplex (how a worst case is pinned to many digits, at a
    corner, an edge or inside). Returns the calls made.

    On a box of integer axes only, the global search is the audit's own
    (:func:`~boundbench.framework.search.targeted.worst_case` at the run's seed ``run_seed`` for
    ``steps`` evaluations, nothing of this run's put in its population), its repeated
    instances answered from memory, for up to three quarters of the calls: a finite box's
    population search repeats itself (Chebyshev's binomial box: 1,100 distinct instances in
    2,500 steps), so the calls left cover its whole path, and then ``falsify``'s worst is at
    least that search's at the same seed and size (the benchmark's DE, ``boundbench check``'s
    search); the integer climbs get the rest."""
    t.sized = True
    used = 0
    starts = [i for i in [getattr(t.best, "value", None), *t.found[-4:]]
              if isinstance(i, dict) and set(i) == set(space)]
    candidates: list[dict] = []
    integers = all(len(spec) == 3 and spec[2] == "int" for spec in space.values())
    if calls >= 10 and integers and run_seed is not None:
        hit = search_round(test, space, chunk=calls * 3 // 4, seed=run_seed, start=[],
                           steps=steps)
        t.search(test, hit)
        used += hit["evaluations"]
        candidates = hit.get("candidates", [])
    elif calls >= 10:
        hit = search_round(test, space, chunk=calls // 2, seed=seed, start=starts)
        t.search(test, hit)
        used += hit["evaluations"]
        candidates = hit.get("candidates", [])
    best = getattr(t.best, "value", None)
    centres = [c for c in [best, *candidates] if isinstance(c, dict) and set(c) == set(space)]
    centres = [c for i, c in enumerate(centres) if c not in centres[:i]][:3]
    pool = calls - used
    used += _integer_climbs(test, space, t, centres, pool, seed)
    pool = calls - used
    # one short round in each basin (a quarter of the polishing), then the rest from the best
    for centre in centres[1:] if len(centres) > 1 else []:
        n = pool // (4 * (len(centres) - 1))
        if n >= 10:
            hit = polish_round(test, space, centre=centre, width=SIZING_BOXES[0], chunk=n)
            t.search(test, hit)
            used += hit["evaluations"]
    point = getattr(t.best, "value", None)
    for k, width in enumerate(SIZING_BOXES):
        n = (calls - used) // (len(SIZING_BOXES) - k)
        if n < 10 or not (isinstance(point, dict) and set(point) == set(space)):
            break
        hit = polish_round(test, space, centre=point, width=width, chunk=n)
        t.search(test, hit)
        used += hit["evaluations"]
        point = getattr(t.best, "value", None)
    return used


def _integer_climbs(test: Any, space: dict, t: Any, centres: list[dict], pool: int,
                    seed: int) -> int:
    """Where the box has integer axes, climbs over them
    (:func:`~boundbench.testing._lattice.integer_round`) from each basin's best, then from
    integer points drawn from the seed (the float axes at the best's values) until the share
    is spent: an integer landscape has many local maxima one move apart from none of the
    others (Chebyshev's bound on a binomial: 1.31 at n = 20, q = 1/20, its supremum 2 at n = 2,
    q = 1/2). All of ``pool`` when every axis is an integer (a simplex has nothing to
    polish), a quarter of it beside float axes. Returns the calls made."""
    from boundbench.testing._lattice import integer_round

    ints = [k for k, spec in space.items() if len(spec) == 3 and spec[2] == "int"]
    if not ints or not centres:
        return 0
    share = pool if len(ints) == len(space) else pool // 4
    rng = np.random.default_rng([int(seed) % 2**32, 812])
    used, k = 0, 0
    while share - used >= 2:
        start = centres[k] if k < len(centres) else {
            **centres[0], **{a: int(rng.integers(int(space[a][0]), int(space[a][1]) + 1))
                             for a in ints}}
        k += 1
        hit = integer_round(test, space, start=start, chunk=min(share - used, max(
            share // 8, 2)))
        if hit is None or not hit["evaluations"]:
            if k > len(centres) + 50:
                break  # every draw already scored: the small box is done
            continue
        t.search(test, hit)
        used += hit["evaluations"]
    return used
