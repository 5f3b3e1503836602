"""How many evaluations a level search of the region stage needs (issue 80): the worst ratio
over every other parameter of a claim's box at one fixed value of its scale, by the stage's own
search (:meth:`boundbench.framework.search.region._Stage.level`: differential evolution plus a bounded
Nelder-Mead polish of an equal share), at several budgets and seeds, beside the region the
stage reports at its quick and paper budgets.

The level problem is multimodal: at Lemma A.2.5's ``B = 4`` separate seeds of the same budget
end in different basins, which is why the stage searches its first level four times as widely
and restarts every level from all the violations found so far. A row whose worst is below 1
at a value where another row violates is a seed the level search missed.

About a minute and a half on 2 cores with ``--budgets 120,480``; ``--region`` adds the whole
stage at its quick and paper budgets (11 minutes more for Lemma A.2.5)::

    python benchmarks/region_levels.py --budgets 120,480
    python benchmarks/region_levels.py --budgets 120,480 --region
    python benchmarks/region_levels.py --claim fu.cor2.5 --value 1.25 --budgets 120,480

Measured (2026-12-02, 2 cores, ``--budgets 120,480 --region``): at ``B = 4`` the budget of 120
(250 calls with its polish) found no violation in 3 seeds (0.631 to 0.890), 480 found one in 2
of 3 (0.994, 1.019, 1.071); the stage from the seed-0 search's worst instance closed its
bracket at ``B = 4.287`` (quick, 3,714 evaluations) and ``B = 3.498`` (paper, 44,890).
"""

from __future__ import annotations

import argparse
import math


def level_rows(cid: str, value: float, budgets: list[int], seeds: int) -> list[dict]:
    """The worst ratio at ``scale = value`` for each (budget, seed): one level search each,
    started from the claim's audit-seed worst instance moved to that value."""
    from boundbench import catalogue
    from boundbench.framework.claims import registry
    from boundbench.framework.search.region import _Stage
    from boundbench.framework.search.targeted import worst_case

    catalogue.load()
    claim = registry.get(cid)
    search = claim.search
    (scale,) = search.scales[:1]
    ctx = registry.CheckContext(seed=0, scale="quick", claim_id=cid)
    start = worst_case(search, max_evals=int(search.budget[0]), seed=0,
                       context=ctx if search.with_context else None).instance
    rows = []
    for budget in budgets:
        for seed in range(seeds):
            st = _Stage(search, scale, ctx if search.with_context else None, evals=budget,
                        rtol=0.0)
            ratio, _ = st.level(value, [scale.at(dict(start), value)], "level", budget, seed)
            rows.append({"budget": budget, "seed": seed, "worst": ratio, "calls": st.n})
    return rows


def region_rows(cid: str) -> list[dict]:
    """The region the stage reports at its quick and paper level budgets (audit seed 0)."""
    from boundbench import catalogue
    from boundbench.framework.claims import registry
    from boundbench.framework.search.region import region
    from boundbench.framework.search.targeted import worst_case

    catalogue.load()
    claim = registry.get(cid)
    search = claim.search
    ctx = registry.CheckContext(seed=0, scale="quick", claim_id=cid)
    found = worst_case(search, max_evals=int(search.budget[0]), seed=0,
                       context=ctx if search.with_context else None)
    out = []
    for sc in search.scales:
        for which, evals in (("quick", sc.budget[0]), ("paper", sc.budget[1])):
            g = region(search, sc, start=found.instance, evals=int(evals), seed=0,
                       context=ctx if search.with_context else None)
            out.append({"scale": sc.name, "budget": which, "evals": int(evals),
                        "boundary": g["boundary"], "closed": g["found"],
                        "evaluations": g["n_evaluations"]})
    return out


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--claim", default="fu.lemma-a.2.5")
    ap.add_argument("--value", type=float, default=4.0, help="the scale's fixed value")
    ap.add_argument("--budgets", default="120,480", help="evaluations a level search")
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--region", action="store_true",
                    help="also run the whole stage at its quick and paper budgets (slow)")
    a = ap.parse_args(argv)
    budgets = [int(b) for b in a.budgets.split(",")]
    print(f"{a.claim}: the worst lhs/rhs over every other parameter at its scale = {a.value:g}")
    print(f"{'budget':>7} {'seed':>5} {'worst lhs/rhs':>14} {'calls':>7}")
    rows = level_rows(a.claim, a.value, budgets, a.seeds)
    for r in rows:
        print(f"{r['budget']:>7} {r['seed']:>5} {r['worst']:>14.6g} {r['calls']:>7}")
    for b in budgets:
        ws = [r["worst"] for r in rows if r["budget"] == b]
        found = sum(w > 1 for w in ws)
        print(f"budget {b}: violation found in {found} of {len(ws)} seeds; spread "
              f"{min(ws):.6g} .. {max(ws):.6g}"
              + ("" if all(math.isfinite(w) for w in ws) else " (a non-finite ratio)"))
    if a.region:
        print(f"\nthe region stage on {a.claim} (audit seed 0):")
        for r in region_rows(a.claim):
            print(f"  {r['scale']} at the {r['budget']} budget ({r['evals']} a level): boundary "
                  f"{r['boundary']:.4g}, bracket {'closed' if r['closed'] else 'not closed'}, "
                  f"{r['evaluations']} evaluations")


if __name__ == "__main__":
    main()
