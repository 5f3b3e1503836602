"""Fu et al.'s soft-margin LOO results: Lemma A.2.5, Theorem 2.4's second term and Corollary
2.5 (intercept not penalized, as written, and penalized), and the proof step of Lemma A.2.5
borrowed from the hard margin. The intercept is not unique at large lam: solution sets are
compared, not one solver's pick.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from boundbench.framework.certificates.proofs import NotProvable
from boundbench.framework.claims.registry import Erratum, Outcome, claim
from boundbench.framework.execution.context import CheckContext
from boundbench.framework.files import plotting
from boundbench.framework.search.replay import Replay
from boundbench.framework.search.targeted import Search
from boundbench.framework.verdicts.rules import NUMERIC_RTOL, BoundSides, Verdict, bound_verdict
from boundbench.papers.fu.hard_margin import (
    feature_bound_scale,
    lemma_a24_table,
    plane_quantities,
    separating_translations,
)
from boundbench.synthetic.experiments import SoftLOOGrid
from boundbench.synthetic.svm import HardMarginSVM
from boundbench.theory import fu

_LAM_READING = ("lam is the soft-margin weight the proofs fix (the objective lam ||v||^2 + (1/n) "
                "sum hinge); read existentially (for some lam) the statement could not fail, so "
                "the finding reads it as its proof needs it")


def _soft_loo(ctx: CheckContext, *, penalized: bool = False) -> tuple[pd.DataFrame, SoftLOOGrid]:
    """The soft-margin LOO table Lemma A.2.5, Theorem 2.4's second term and Corollary 2.5 share:
    lam over 1e-3 .. 10, n from 10 up; ``penalized``: the intercept penalized with v (the
    corrected statements' objective)."""
    cfg = SoftLOOGrid(n=ctx.pick((10, 20, 50), (10, 20, 50, 100, 200)),
                      n_datasets=ctx.pick(3, 10), penalize_intercept=penalized, seed=ctx.seed)
    return ctx.cached("soft-loo", cfg.config(), lambda: cfg.run(ctx.progress)), cfg


NONUNIQUE_WIDTH = 1e-6  # an intercept interval wider than this (solver accuracy ~1e-8) is a set

_NOT_UNIQUE = (
    "The soft-margin objective is strictly convex in v but piecewise linear in the unpenalized "
    "intercept b, so at large lam (balanced classes, most points inside the margin) the optimal b "
    "is an interval: the statement, which compares *the* optima of S and S^i, presupposes a "
    "unique minimizer that does not exist there.")


def _by_lam(df: pd.DataFrame) -> dict:
    """Worst lhs/rhs per lam (closest and farthest optimal pair) and how wide the intercept sets
    are there: where the bound fails and why."""
    g = df.assign(ratio=df.lhs / df.rhs, far=df.lhs_farthest / df.rhs).groupby("lam")
    return {"worst_ratio_closest_pair_by_lam": {f"{k:g}": float(x)
                                                for k, x in g.ratio.max().items()},
            "worst_ratio_farthest_pair_by_lam": {f"{k:g}": float(x)
                                                 for k, x in g.far.max().items()},
            "widest_intercept_set_by_lam": {f"{k:g}": float(x) for k, x in
                                            g.b_width_any.max().items()}}


def _soft_loo_outcome(ctx: CheckContext, df: pd.DataFrame, cfg: SoftLOOGrid, *, lhs: str,
                      what: str, ylabel: str) -> Outcome:
    """Lemma A.2.5, Thm 2.4's second term and Cor 2.5 compare optima, which are sets where the
    intercept is not unique: each is judged on the closest and on the farthest pair of optimal
    solutions (``rhs_sets``: the right side valid for every pair), never on the solver's pick
    (``rhs``, reported as evidence). Holds if both pairs do, violated if even the closest pair
    fails, ill-posed if only the farthest does."""
    df = df.assign(b_width_any=np.maximum(df.b_width, df.b_width_loo_max))
    df = df.assign(lhs=df[f"{lhs}_closest"], lhs_farthest=df[f"{lhs}_farthest"],
                   rhs_solver_pick=df.rhs, rhs=df.rhs_sets)  # the errata sheet reads lhs/rhs
    nonunique = df.b_width_any > NONUNIQUE_WIDTH
    common = {"seed": ctx.seed, "n_datasets_per_cell": cfg.n_datasets,
              "n_problems": len(df), "n_problems_nonunique_optimum": int(nonunique.sum()),
              "fraction_nonunique_optimum": float(nonunique.mean()),
              "widest_intercept_interval": float(df.b_width_any.max()),
              "nonunique_width_tolerance": NONUNIQUE_WIDTH,
              "solver_b_outside_optimal_set_max": float(df.solver_b_outside_set.max()),
              **_by_lam(df)}
    closest = bound_verdict(BoundSides(df.lhs.to_numpy(), df.rhs.to_numpy()), rtol=NUMERIC_RTOL,
                            what=f"{what} (closest optimal pair)", evidence=common)
    farthest = bound_verdict(BoundSides(df.lhs_farthest.to_numpy(), df.rhs.to_numpy()),
                             rtol=NUMERIC_RTOL, what=f"{what} (farthest optimal pair)")
    pick = bound_verdict(BoundSides(df[lhs].to_numpy(), df.rhs_solver_pick.to_numpy()),
                         rtol=NUMERIC_RTOL, what="the solver's pick")
    ev = {**closest.evidence,
          "closest_pair": closest.status, "farthest_pair": farthest.status,
          "farthest_pair_worst_lhs_over_rhs": farthest.evidence.get("worst_lhs_over_rhs"),
          "farthest_pair_n_violations": farthest.evidence["n_violations"],
          "solver_pick": pick.status,
          "solver_pick_worst_lhs_over_rhs": pick.evidence.get("worst_lhs_over_rhs")}
    sets = (f"{int(nonunique.sum())} of {len(df)} problems have a non-unique optimal intercept "
            f"(widest interval {df.b_width_any.max():.3g})")
    if closest.status == "violated":
        verdict = Verdict("violated", f"{closest.reason}; even the closest pair of optimal "
                          f"solutions fails ({sets})", ev)
    elif farthest.status == "violated":
        verdict = Verdict("ill-posed", f"{sets}: the bound holds for the closest pair of optimal "
                          f"solutions (worst lhs/rhs {ev['worst_lhs_over_rhs']:.3g}) and fails "
                          f"for the farthest (worst {ev['farthest_pair_worst_lhs_over_rhs']:.3g}, "
                          f"{ev['farthest_pair_n_violations']} of {len(df)} problems). "
                          + _NOT_UNIQUE, ev)
    else:
        verdict = Verdict("holds", f"{closest.reason} and for the farthest pair too ({sets})", ev)
    fig, (ax,) = plotting.figure()
    for n, g in df.groupby("n"):
        line = plotting.median_band(ax, g.lam, g.lhs / g.rhs, label=f"n={n}, closest pair")
        far = (g.lhs_farthest / g.rhs).groupby(g.lam).max()
        ax.plot(far.index, far.values, ":", color=line.get_color(), lw=1,
                label=f"n={n}, farthest pair (max)")
    ax.axhline(1.0, color="k", lw=0.8, ls="--", label="bound")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("lam (soft-margin weight)")
    ax.set_ylabel(ylabel)
    ax.legend(fontsize=7)
    ax.set_title(f"{ctx.claim_id}: {verdict.status}", fontsize=9)
    return Outcome(verdict, df, fig, cfg.config())


_SOFT_N = 6  # the search's datasets: 6 points in the plane, 3 per class


def _soft_search(which: str, penalized: bool = False, *, quick_evals: int = 400) -> Search:
    """A search over tiny soft-margin problems (6 points in [-1, 1]^2, lam in [1e-3, 10]) for the
    claims on :class:`SoftLOOGrid`'s table; the left side is the closest optimal pair's (the
    verdict's), non-separable draws (no hard margin gamma_S) are outside the assumptions.
    ``quick_evals``: its evaluations at quick scale (6,000 at paper scale)."""
    from boundbench.synthetic.stability import optimal_set_moves
    from boundbench.synthetic.svm import soft_margin_intercepts, soft_margin_loo

    def sides(p: dict, displayed_n: bool = False):
        # the feature scale is free (B is any bound): the hinge is not scale-invariant, and a
        # search confined to [-1, 1]^2 missed Corollary 2.5's closest-pair violations at B ~ 2
        X = np.array([[p[f"x{j}"], p[f"y{j}"]] for j in range(_SOFT_N)]) * p["scale"]
        y = np.where(np.arange(_SOFT_N) < _SOFT_N // 2, 1.0, -1.0)
        n, lam = _SOFT_N, float(p["lam"])
        gamma = float(HardMarginSVM().fit(X, y).margin_)  # ValueError: not separable
        B = float(np.linalg.norm(X, axis=-1).max())
        v_loo, c_loo, v, c = soft_margin_loo(X, y, lam=lam, penalize_intercept=penalized)
        if penalized:
            lo = hi = np.concatenate([[c], c_loo])
        else:
            W = np.full((n + 1, n), 1.0 / (n - 1))
            W[0] = 1.0 / n
            W[np.arange(1, n + 1), np.arange(n)] = 0.0
            lo, hi = soft_margin_intercepts(X, y, np.vstack([v, v_loo]), W)
        m = optimal_set_moves(v, (lo[0], hi[0]), v_loo, (lo[1:], hi[1:]))
        # the proofs use n ~ n - 1; at n = 6 that is a factor 1.2, so the search judges the right
        # side at n - 1 (the larger, the paper's most favourable reading): what it finds is not
        # an artefact of that approximation
        n_fav = n if displayed_n else n - 1
        if which == "v-norm":  # Lemma A.2.5's proof step: no optimal set (v is unique)
            return np.linalg.norm(v_loo, axis=-1).max(), np.linalg.norm(v)
        if which == "lemma":
            return m["closest"].max(), fu.lemma_a25_rhs(lam=lam, n=n_fav, B=B, gamma=gamma)
        if which == "cor":
            return m["closest"].max(), fu.cor25_second_term(nu=1.0, lipschitz=np.sqrt(B**2 + 1),
                                                            lam=lam, n=n_fav)
        return m["direction_closest"].max(), fu.thm24_second_term(r=m["r_min"], lam=lam,
                                                                   n=n_fav, B=B, gamma=gamma)

    def symmetry(p: dict, k: float) -> dict:
        # X -> kX with lam -> k^2 lam maps the soft-margin optimum exactly (v -> v/k, b kept,
        # every hinge term unchanged): the intercept's move is invariant while the right sides
        # shrink like 1/k (Cor. 2.5) or ~1/k (Lemma A.2.5), so a violation, once found, grows
        # along it. The penalized objective has no such symmetry (b is penalized with v).
        return {**p, "scale": p["scale"] * k, "lam": p["lam"] * k * k}

    def replay(p: dict) -> dict:
        from boundbench.synthetic.certificates import svm_loo_instance

        X = np.array([[p[f"x{j}"], p[f"y{j}"]] for j in range(_SOFT_N)]) * p["scale"]
        y = np.where(np.arange(_SOFT_N) < _SOFT_N // 2, 1.0, -1.0)
        return svm_loo_instance(X, y, which=which, lam=float(p["lam"]), n_fav=_SOFT_N - 1)

    space = {"lam": (1e-4, 1e4, "log"), "scale": (1e-2, 1e2, "log"),
             **{f"{a}{j}": (-1.0, 1.0) for j in range(_SOFT_N) for a in "xy"}}
    return Search(space, sides, budget=(quick_evals, 6000),
                  note="6 points in [-1, 1]^2 times a scale in [1e-2, 1e2] (3 per class), lam in "
                  "[1e-4, 1e4] (both over many decades), the closest "
                  "optimal pair, the right side at n - 1 (the proofs' n ~ n - 1 read in the "
                  "paper's favour)" + (", intercept penalized" if penalized else ""
                                       if which in ("thm24", "v-norm")
                                       else "; then X -> kX, lam -> k^2 lam from the worst "
                                       "instance"),
                  # an exact symmetry of the objective with b free (the optima map to each
                  # other); the characterization stage follows it with every axis and map
                  symmetry=None if penalized else symmetry,
                  symmetry_note="X -> kX, lam -> k^2 lam",
                  maps=separating_translations(), quantities=plane_quantities,
                  # the region in B for the two bounds issue 80 names (a level search costs
                  # about 1 s here; the proof step's and Thm 2.4's are left to a later round)
                  scales=(feature_bound_scale(),)
                  if which in ("lemma", "cor") and not penalized else (),
                  # a bound that holds is sized under the displayed n too (issue 80: Cor. 2.5
                  # penalized reaches 0.99993 there, 0.70 at n - 1); v-norm has no n
                  reading="the right side at n - 1 (the proofs' n ~ n - 1)",
                  readings={} if which == "v-norm" else {
                      "the right side at n (as displayed)": lambda p: sides(p, True)},
                  # the replay certifies the free-intercept optima (the penalized claims hold)
                  replay=None if penalized else Replay("svm_loo", replay),
                  proof=NotProvable("a side defined by soft-margin SVMs (a quadratic "
                                    "program per leave-one-out set)"))


@claim("fu.lemma-a.2.5", functions=(fu.lemma_a25_rhs,),
       paper="fu", where="Lemma A.2.5", kind="bound",
       erratum=Erratum(
           "statement",
           "The bound as displayed, even for the closest pair of optimal solutions (the "
           "intercept free), once the feature scale is free: X -> kX with lam -> k^2 lam maps the "
           "optima exactly (v -> v/k, b unchanged), so their distance is invariant while the "
           "bound shrinks like 1/k.",
           constants=_LAM_READING + "; gamma_S is the hard-margin margin, as the lemma writes "
           "it; B any bound on the feature norms.",
           downstream="Theorem 2.4's second term and Corollary 2.5 are built on it (see "
           "fu.thm2.4.second-term, fu.cor2.5)."),
       statement="The soft-margin SVM moves by at most the lemma's amount when one training "
       "point is removed.",
       equation="||w_hat(S^i) - w_hat(S)|| <= max{ sqrt(2/(lam n) (1 + B/gamma_S)), (B + sqrt(B^2 "
       "+ 8 n lam (1 + B/gamma_S))) / (2 n lam) }",
       notes="Soft-margin objective lam ||v||^2 + (1/n) sum hinge (1/(n-1) without i); gamma_S "
       "is the hard-margin margin, as the lemma writes it; LHS is the max over all i; lam from "
       "1e-3 to 10 and n from 10 (the lemma states no range).",
       correction="With the intercept penalized, lam ||[v, b]||^2 + (1/n) sum hinge (2 lam-strongly "
       "convex in w = [v, b], so the minimizer is unique, as the proof's step assumes), the "
       "bound as stated: fu.lemma-a.2.5.penalized. With b free it fails even for the closest "
       "pair of optima once the feature scale is free (unbounded along X -> kX, lam -> k^2 "
       "lam); on the unit-scale grid it holds for the closest pair and fails for the farthest.",
       search=_soft_search("lemma"))
def _a25(ctx: CheckContext) -> Outcome:
    return _move_claim(ctx, "lemma", penalized=False)


def _move_claim(ctx: CheckContext, which: str, *, penalized: bool) -> Outcome:
    """Lemma A.2.5 (``which="lemma"``) or Cor. 2.5's L/(lam n) (``"cor"``) on the soft-margin
    LOO table, the intercept free or ``penalized``."""
    df, cfg = _soft_loo(ctx, penalized=penalized)
    if which == "lemma":
        rhs = fu.lemma_a25_rhs(lam=df.lam, n=df.n, B=df.B, gamma=df.gamma_hard)
        name = "Lemma A.2.5"
    else:
        df = df.assign(lipschitz=np.sqrt(df.B**2 + 1))
        rhs = fu.cor25_second_term(nu=1.0, lipschitz=df.lipschitz, lam=df.lam, n=df.n)
        name = "L/(lam n)"
    df = df.assign(rhs=rhs, rhs_sets=rhs)
    tail = ", b penalized" if penalized else ""
    return _soft_loo_outcome(ctx, df, cfg, lhs="loo_distance_max",
                             what=f"max_i ||w(S^i) - w(S)|| <= {name}{tail}",
                             ylabel=f"max_i ||w(S^i) - w(S)|| / {name}")


@claim("fu.thm2.4.second-term", functions=(fu.thm24_second_term,),
       paper="fu", where="Theorem 2.4, eq. (6), second term",
       kind="bound",
       erratum=Erratum(
           "statement",
           "The explicit second term of eq. (6), nu times Lemma A.2.5's amount with nu = 2/r "
           "(Lemma A.2.1), for the soft-margin solution w = (v, b) with the intercept free: "
           "where ||v|| is small next to |b|, removing one point can move the intercept across "
           "0 and flip the direction (a change near 2), since Lemma A.2.5's bound on the move "
           "fails; Lemma A.2.1's 2/r does not rescue it.",
           constants=_LAM_READING + "; nu = 2/r with r the smallest norm of the solutions "
           "compared (Lemma A.2.1's radius), w = (v, b) as Lemmas A.2.4 and A.2.5 write it.",
           downstream="Theorem 2.4's head-tuning stability bound: its explicit half inherits "
           "Lemma A.2.5's failure (see fu.lemma-a.2.5)."),
       statement="The soft-margin SVM's direction moves by at most nu times Lemma A.2.5's amount "
       "when one point is removed (nu = 2/r, r the smallest norm of the solutions compared): "
       "the explicit half of the head-tuning stability bound.",
       equation="max_i ||w(S^i)/||w(S^i)|| - w(S)/||w(S)|| || <= (2/r) max{ sqrt(2/(lam n) (1 + "
       "B/gamma_S)), (B + sqrt(B^2 + 8 n lam (1 + B/gamma_S))) / (2 n lam) }",
       notes="r = min(||w(S)||, min_i ||w(S^i)||), Lemma A.2.1's radius; the first term (C log "
       "log t / log t) has an unspecified constant and is checked as a rate "
       "(soudry.direction-rate).",
       # 400 evaluations missed the direction flips that 1,500 find on every seed tried (0.75
       # and 0.38 against 1.62 and 2.49; the paper-scale audit of 2026-11-26)
       search=_soft_search("thm24", quick_evals=1500))
def _thm24_second(ctx: CheckContext) -> Outcome:
    df, cfg = _soft_loo(ctx)
    # the solver's pick uses its own radius; the optimal sets the smallest norm among them all
    df = df.assign(rhs=fu.thm24_second_term(r=df.r, lam=df.lam, n=df.n, B=df.B,
                                            gamma=df.gamma_hard),
                   rhs_sets=fu.thm24_second_term(r=df.r_min, lam=df.lam, n=df.n, B=df.B,
                                                 gamma=df.gamma_hard))
    return _soft_loo_outcome(ctx, df, cfg, lhs="direction_distance_max",
                             what="max_i ||direction change|| <= (2/r) Lemma A.2.5",
                             ylabel="direction change / Theorem 2.4's second term")


@claim("fu.cor2.5", functions=(fu.cor25_second_term,),
       paper="fu", where="Corollary 2.5, the L/(lam n) step of its proof (A.3)", kind="bound",
       erratum=Erratum(
           "proof step",
           "The step ||w_hat(S^i) - w_hat(S)|| <= L/(lam n) of the proof of Corollary 2.5 "
           "(Appendix A.3), with the intercept b free: lam ||v||^2 gives no strong convexity in "
           "b, and the optimal intercept moves by O(1) when one point is left out. The displayed "
           "bound (7) has existential constants (for some C, lam, nu) and is not what this claim "
           "measures.",
           constants=_LAM_READING + "; L = sqrt(B^2 + 1), the hinge's Lipschitz constant in "
           "w = [v, b].",
           downstream="Corollary 2.5's bound does not follow as proved with b free; with the "
           "intercept penalized the step holds (fu.cor2.5.penalized)."),
       statement="Removing one point moves the soft-margin SVM by at most L/(lam n), L the "
       "Lipschitz constant of the per-sample hinge loss in w (the piece Corollary 2.5 puts in "
       "place of Theorem 2.4's second term, times nu).",
       equation="max_i ||w(S^i) - w(S)|| <= L / (lam n),   L = sqrt(B^2 + 1)",
       notes="L = max_i ||[x_i, -1]|| <= sqrt(B^2 + 1), the hinge's Lipschitz constant in w = [v, "
       "b] on the augmented features; the proof's n ~ n - 1 is kept.",
       correction="With the intercept penalized (lam ||[v, b]||^2, a unique minimizer, as the "
       "L/(lam n) step assumes), as stated: fu.cor2.5.penalized. With b free it fails even for "
       "the closest pair of optima: the optimal intercept moves by up to ~0.5 when one point "
       "is left out, and lam ||v||^2 gives no strong convexity in b to bound that.",
       search=_soft_search("cor"))
def _cor25(ctx: CheckContext) -> Outcome:
    return _move_claim(ctx, "cor", penalized=False)


@claim("fu.lemma-a.2.5.proof-step", paper="fu",
       where="Lemma A.2.5's proof, the step borrowed from Lemma A.2.4", kind="bound",
       statement="Removing one training point cannot increase the norm of the soft-margin SVM's "
       "weight vector (the proof of Lemma A.2.5 borrows this from Lemma A.2.4, which is about "
       "the hard-margin SVM).",
       equation="||v_hat_soft(S^i)|| <= ||v_hat_soft(S)||,  v_hat_soft = argmin lam ||v||^2 + "
       "(1/n) sum hinge (b free)",
       notes="Same soft-margin LOO table as fu.lemma-a.2.5 (every i of every dataset, lam from "
       "1e-3 to 10); v is unique (the objective is strictly convex in v), so no optimal set "
       "enters. Control: the hard-margin v, for which Lemma A.2.4's proof does show it "
       "(fu.lemma-a.2.4.v holds).",
       erratum=Erratum(
           "proof step",
           "The step of Lemma A.2.5's proof that bounds ||v_hat(S^i)|| by ||v_hat(S)|| by citing "
           "Lemma A.2.4: that lemma (and its proof) is about the hard-margin SVM, and for the "
           "soft-margin v_hat removing a point can increase the norm (a point inside the margin "
           "that pulled v short is gone).",
           constants=_LAM_READING + ".",
           downstream="Lemma A.2.5's bound is not proved as written; it is also violated as "
           "displayed (fu.lemma-a.2.5)."),
       search=_soft_search("v-norm"))
def _a25_proof_step(ctx: CheckContext) -> Outcome:
    df, cfg = _soft_loo(ctx)
    ratio = df.v_norm_loo_max / df.v_norm
    grows = int(df.n_loo_v_norm_grows.sum())
    pairs = int(df.n.sum())  # every i of every dataset is a LOO pair
    hard = lemma_a24_table(ctx)[0]
    verdict = bound_verdict(
        BoundSides(df.v_norm_loo_max.to_numpy(), df.v_norm.to_numpy()), rtol=NUMERIC_RTOL,
        what="||v_hat_soft(S^i)|| <= ||v_hat_soft(S)||",
        evidence={"seed": ctx.seed, "n_loo_pairs": pairs, "n_loo_pairs_norm_grows": grows,
                  "fraction_loo_pairs_norm_grows": grows / max(pairs, 1),
                  "worst_ratio_by_lam": {f"{k:g}": float(v) for k, v in
                                         ratio.groupby(df.lam).max().items()},
                  # the reference: the hard-margin v, which the proof of A.2.4 covers, never
                  # grows (it would if the solver or the LOO were off)
                  "hard_margin_v_worst_ratio": float((hard.v_norm_loo / hard.v_norm).max())})
    fig, (ax,) = plotting.figure()
    plotting.ratio_histogram(ax, ratio.to_numpy(), df.lam.map(lambda x: f"lam={x:g}").to_numpy(),
                             xlabel="max_i ||v_soft(S^i)|| / ||v_soft(S)||")
    ax.set_title(f"{ctx.claim_id}: {verdict.status}", fontsize=9)
    return Outcome(verdict, df.assign(lhs=df.v_norm_loo_max, rhs=df.v_norm), fig, cfg.config())


@claim("fu.lemma-a.2.5.penalized", functions=(fu.lemma_a25_rhs,),
       paper="fu", where="Lemma A.2.5, intercept penalized",
       kind="bound",
       statement="With the intercept penalized too (lam ||[v, b]||^2 + (1/n) sum hinge, the "
       "objective the proof's strong-convexity step needs; its minimizer is unique), the "
       "soft-margin SVM moves by at most the lemma's amount when one point is removed.",
       equation="||w_hat(S^i) - w_hat(S)|| <= max{ sqrt(2/(lam n) (1 + B/gamma_S)), (B + sqrt(B^2 "
       "+ 8 n lam (1 + B/gamma_S))) / (2 n lam) },  w_hat = argmin lam ||w||^2 + L_S(w)",
       notes="The corrected statement of fu.lemma-a.2.5; same grid and data.",
       search=_soft_search("lemma", penalized=True))
def _a25_penalized(ctx: CheckContext) -> Outcome:
    return _move_claim(ctx, "lemma", penalized=True)


@claim("fu.cor2.5.penalized", functions=(fu.cor25_second_term,),
       paper="fu", where="Corollary 2.5, intercept penalized",
       kind="bound",
       statement="With the intercept penalized too (a unique, 2 lam-strongly convex minimizer), "
       "removing one point moves the soft-margin SVM by at most L/(lam n).",
       equation="max_i ||w(S^i) - w(S)|| <= L / (lam n),   L = sqrt(B^2 + 1),  w_hat = argmin "
       "lam ||w||^2 + L_S(w)",
       notes="The corrected statement of fu.cor2.5; same grid and data.",
       search=_soft_search("cor", penalized=True))
def _cor25_penalized(ctx: CheckContext) -> Outcome:
    return _move_claim(ctx, "cor", penalized=True)
