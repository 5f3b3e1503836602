"""Falsifying planted-wrong bounds: the targeted search (the audit's engine, `boundbench
falsify`) against plain random generation, on the same number of evaluations.

Five wrong variants of the papers' bounds, each a different kind of mistake:

1. a constant halved: Corollary 1 (activation decay) with H erf(...) / 2, against the Huber loss
   whose smoothed Hessian attains the true bound at theta = 0;
2. an exponent off: Lemma A.2.1 with the Lipschitz constant (2/r)^(3/2) / 2 in place of 2/r;
3. a factor dropped: the descent lemma with ``- eta ||grad||^2`` in place of
   ``- (eta/2) ||grad||^2``;
4. a condition ignored: the self-bounding lemma on quadratics that are not non-negative;
5. a violation only in a small corner: Lemma A.2.1's right side with a factor that drops below
   the left side only when both points sit within a few percent of the radius and nearly
   opposite.

Run: ``python benchmarks/bench_falsify.py [--evals N] [--seeds K]``. It prints, per variant,
whether each method found a violation (ratio > 1), its best ratio and the seconds it took; then
the measure users compare between engines: the median number of evaluations to the *first*
violation over seeds, for the targeted search, random generation and hypothesis's own
``target()`` (the same unit-cube parameters, ``st.floats(0, 1)`` each, the ratio as its target),
each stopped at the first ratio above 1 or at the budget.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from boundbench.framework.search.targeted import Search, worst_case, worst_ratio
from boundbench.theory import activation_decay as ad
from boundbench.theory import fu


def _unit(a: float) -> np.ndarray:
    return np.array([np.cos(a), np.sin(a)])


def constant_halved(p):
    H, eps, sigma, theta = p["H"], p["eps"], p["sigma"], p["theta"]
    lhs = ad.huber_smoothed_hessian(theta, H=H, eps=eps, sigma=sigma)
    return lhs, ad.cor1_rhs(H=H, eps=eps, sigma=sigma) / 2


def exponent_off(p):
    r = p["r"]
    x, y = _unit(p["a"]) * r * p["sx"], _unit(p["b"]) * r * p["sy"]
    s = fu.lemma_a21_sides(x, y, r=r)
    return s.lhs, s.rhs / 2 * (2 / r) ** 0.5  # (2/r)^(3/2) / 2 in place of 2/r


def term_dropped(p):
    beta, eta, w, c = p["beta"], p["eta_frac"] / p["beta"], p["w"], p["c"]
    f, g = 0.5 * beta * (w - c) ** 2, beta * (w - c)
    w2 = w - eta * g
    f2 = 0.5 * beta * (w2 - c) ** 2
    return f2, f - eta * g**2  # the lemma has eta/2


def condition_ignored(p):
    lam, w, c = p["lam"], p["w"], p["c"]  # f(w) = lam/2 (w - c)^2 - shift: negative near c
    f = 0.5 * abs(lam) * (w - c) ** 2 - p["shift"]
    g = abs(lam) * (w - c)
    return g**2, 2 * abs(lam) * f


def small_corner(p):
    r = 1.0
    x, y = _unit(p["a"]) * r * p["sx"], _unit(p["a"] + np.pi - p["d"]) * r * p["sy"]
    s = fu.lemma_a21_sides(x, y, r=r)
    near = max(p["sx"] - 1, p["sy"] - 1, p["d"])  # 0 at the corner
    return s.lhs, s.rhs * (0.45 + 20 * near)


VARIANTS = {
    "constant halved (Cor. 1)": Search(
        {"H": (0.1, 10, "log"), "eps": (0.01, 10, "log"), "sigma": (0.01, 10, "log"),
         "theta": (-3, 3)}, constant_halved),
    "exponent off (Lemma A.2.1)": Search(
        {"r": (0.1, 10, "log"), "a": (0, 2 * np.pi), "b": (0, 2 * np.pi), "sx": (1, 5),
         "sy": (1, 5)}, exponent_off),
    "term changed (descent lemma)": Search(
        {"beta": (0.1, 10, "log"), "eta_frac": (0.01, 1.0), "w": (-5, 5), "c": (-5, 5)},
        term_dropped),
    "condition ignored (self-bounding)": Search(
        {"lam": (0.1, 10, "log"), "w": (-5, 5), "c": (-5, 5), "shift": (0, 0.5)},
        condition_ignored),
    "violation in a small corner": Search(
        {"a": (0, 2 * np.pi), "sx": (1, 3), "sy": (1, 3), "d": (0, 1)}, small_corner),
}


def random_search(search: Search, *, evals: int, seed: int) -> float:
    rng = np.random.default_rng(seed)
    U = rng.random((evals, len(search.space)))
    best = 0.0
    for u in U:
        params = {k: (v.item() if hasattr(v, "item") else v) for k, v in search.decode(u).items()}
        try:
            best = max(best, worst_ratio(*search.sides(params)))
        except ValueError:
            continue
    return best


class _Found(Exception):
    """Raised at the first violation: it stops every engine at once (none catches it)."""


def _counting(search: Search) -> tuple[Search, dict]:
    """``search`` whose sides count their calls and raise :class:`_Found` at the first ratio
    above 1."""
    from dataclasses import replace

    calls = {"n": 0}

    def sides(p):
        calls["n"] += 1
        lhs, rhs = search.sides(p)
        if worst_ratio(lhs, rhs) > 1:
            calls.setdefault("first", calls["n"])  # hypothesis replays a failure: keep the first
            raise _Found
        return lhs, rhs

    return replace(search, sides=sides), calls


def evals_to_first(method: str, search: Search, *, budget: int, seed: int) -> int | None:
    """Evaluations ``method`` needs to its first violation (``None``: none within ``budget``)."""
    counted, calls = _counting(search)
    try:
        if method == "targeted":
            worst_case(counted, max_evals=budget, seed=seed)
        elif method == "random":
            random_search(counted, evals=budget, seed=seed)
        else:
            _hypothesis_target(counted, budget=budget, seed=seed)
    except _Found:
        return calls["first"]
    return calls.get("first")


def _hypothesis_target(search: Search, *, budget: int, seed: int) -> None:
    from hypothesis import HealthCheck, Phase, given, settings, target
    from hypothesis import seed as hseed
    from hypothesis import strategies as st

    dim = len(search.space)

    # no shrinking: the count stops at the first violation, as the other engines' does
    @hseed(seed)
    @settings(max_examples=budget, deadline=None, database=None,
              phases=[Phase.explicit, Phase.generate, Phase.target],
              suppress_health_check=list(HealthCheck))
    @given(st.lists(st.floats(0.0, 1.0), min_size=dim, max_size=dim))
    def prop(u):
        params = {k: (v.item() if hasattr(v, "item") else v)
                  for k, v in search.decode(np.array(u)).items()}
        try:
            r = worst_ratio(*search.sides(params))
        except ValueError:
            return
        target(min(r, 1e12), label="lhs/rhs")

    prop()


def first_violation_table(*, budget: int, seeds: int) -> None:
    methods = ("targeted", "random", "hypothesis target()")
    print(f"\nevaluations to the first violation, median over {seeds} seeds (found/seeds), "
          f"budget {budget}:")
    print(f"{'variant':<36} " + " ".join(f"{m:>22}" for m in methods))
    meds = {m: [] for m in methods}
    for name, search in VARIANTS.items():
        cells = []
        for m in methods:
            runs = [evals_to_first(m, search, budget=budget, seed=s) for s in range(seeds)]
            hit = [r for r in runs if r is not None]
            # a seed that never found one counts as more than the budget
            med = float(np.median([r if r is not None else budget + 1 for r in runs]))
            meds[m].append(med)
            cells.append(f"{(f'{med:.0f}' if med <= budget else f'>{budget}')} "
                         f"({len(hit)}/{seeds})")
        print(f"{name:<36} " + " ".join(f"{c:>22}" for c in cells))
    print("median over the five variants: " + ", ".join(
        f"{m} {np.median(v):.0f}" for m, v in meds.items()))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--evals", type=int, default=2000)
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--first-seeds", type=int, default=10,
                    help="seeds for the evaluations-to-first-violation table (0: skip it)")
    args = ap.parse_args()
    print(f"{'variant':<36} {'targeted: found, best, s':>28}   {'random: found, best, s':>26}")
    found_t = found_r = 0
    for name, search in VARIANTS.items():
        rows = []
        for method in ("targeted", "random"):
            hits, best, t0 = 0, 0.0, time.perf_counter()
            for s in range(args.seeds):
                if method == "targeted":
                    r = worst_case(search, max_evals=args.evals, seed=s).worst_ratio
                else:
                    r = random_search(search, evals=args.evals, seed=s)
                hits += r > 1
                best = max(best, r)
            rows.append((hits, best, (time.perf_counter() - t0) / args.seeds))
        (ht, bt, st), (hr, br, sr) = rows
        found_t += ht == args.seeds
        found_r += hr == args.seeds
        print(f"{name:<36} {f'{ht}/{args.seeds}, {bt:.4g}, {st:.1f}':>28}   "
              f"{f'{hr}/{args.seeds}, {br:.4g}, {sr:.1f}':>26}")
    print(f"found on every seed, {args.evals} evaluations each: targeted {found_t} of "
          f"{len(VARIANTS)}, random {found_r} of {len(VARIANTS)}")
    if args.first_seeds:
        first_violation_table(budget=args.evals, seeds=args.first_seeds)


if __name__ == "__main__":
    main()
