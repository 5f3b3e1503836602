"""Fu et al.'s first-order lemmas over their whole function class, by performance estimation.

The lemmas quantify over *every* beta-smooth (convex) function; random quadratics and a search
over them only sample that class. A performance-estimation problem (PEP) computes the exact
worst case over the class: the supremum of the lemma's left side, normalized by its right side,
over all functions of the class and all points, as a small semidefinite program whose primal
solution is a worst-case function (its values and gradients at the points involved) and whose
dual solution is a proof (a combination of the class's interpolation inequalities). PEPit builds
and solves it (through cvxpy); each function below returns the primal and dual values, their gap,
the lemma's theoretical value beside them, and the primal worst case as data a replay can check
(:mod:`boundbench.framework.replays.pep_witness`).

References
----------
A. B. Taylor, J. M. Hendrickx and F. Glineur, Smooth strongly convex interpolation and exact
worst-case performance of first-order methods, Math. Program. 161 (2017), Theorems 4 and 3.10
(the interpolation conditions). B. Goujaud et al., PEPit: computer-assisted worst-case analyses
of first-order optimization methods in Python, Math. Program. Comput. 16 (2024).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np


@dataclass(frozen=True)
class PEPResult:
    """One performance-estimation problem: the worst case ``tau`` of the lemma's normalized left
    side over the class, from the SDP's primal (a worst-case function) and dual (a proof).

    ``bound``: the value the lemma allows (``tau <= bound`` is the lemma); ``theory``: the
    exact worst case known in closed form; ``witness``: the primal worst case (points, gradients
    and values of the function at them) for a replay.
    """

    lemma: str
    setting: str
    tau_primal: float
    tau_dual: float
    bound: float
    theory: float
    function_class: str
    beta: float
    witness: dict[str, Any] = field(repr=False)

    @property
    def gap(self) -> float:
        """``|dual - primal| / max(1, |dual|)``: how far the two certificates are apart."""
        return abs(self.tau_dual - self.tau_primal) / max(1.0, abs(self.tau_dual))

    def holds(self, tol: float) -> bool:
        """The dual certificate proves ``tau <= bound`` up to ``tol`` (relative)."""
        return self.tau_dual <= self.bound + tol * max(1.0, abs(self.bound))

    def to_dict(self) -> dict[str, Any]:
        return {"lemma": self.lemma, "setting": self.setting, "tau_primal": self.tau_primal,
                "tau_dual": self.tau_dual, "gap": self.gap, "bound": self.bound,
                "theory": self.theory, "class": self.function_class, "beta": self.beta}


def _solve(problem: Any) -> tuple[float, float]:
    """Primal then dual value of a PEPit problem, quietly (cvxpy's default SDP solver)."""
    primal = float(problem.solve(verbose=0, return_primal_or_dual="primal"))
    dual = float(problem.solve(verbose=0, return_primal_or_dual="dual"))
    return primal, dual


def _witness(func: Any, names: dict[str, Any], cls: str, beta: float, **extra: Any
             ) -> dict[str, Any]:
    """The primal worst case: every point PEPit evaluated the function at (x, g, f), the roles
    of the named ones (their index), as float lists."""
    pts = []
    for x, g, f in func.list_of_points:
        pts.append({"x": np.atleast_1d(np.asarray(x.eval(), dtype=float)).tolist(),
                    "g": np.atleast_1d(np.asarray(g.eval(), dtype=float)).tolist(),
                    "f": float(f.eval())})
    roles = {}
    for role, point in names.items():
        roles[role] = next(i for i, (x, _, _) in enumerate(func.list_of_points) if x is point)
    return {"class": cls, "L": beta, "points": pts, "roles": roles, **extra}


def lemma_a12_pep(*, eta_times_beta: float, beta: float = 1.0, bound_steps: float = 2.0
                  ) -> PEPResult:
    """Fu et al., Lemma A.1.2 (non-expansiveness of a gradient step) over every convex
    beta-smooth function: ``tau = sup ||(u - eta g_u) - (w - eta g_w)||^2 / ||u - w||^2``.

    The lemma claims ``tau <= 1`` for ``0 < eta <= bound_steps / beta`` (2 as stated); the exact
    worst case is ``max(1, (1 - eta beta)^2)`` (a one-dimensional quadratic), so ``tau = 1`` on
    the lemma's range and ``(eta beta - 1)^2 > 1`` beyond ``2/beta``.

    Examples
    --------
    >>> r = lemma_a12_pep(eta_times_beta=1.0)  # doctest: +SKIP
    >>> round(r.tau_dual, 6), r.bound  # doctest: +SKIP
    (1.0, 1.0)
    """
    from PEPit import PEP
    from PEPit.functions import SmoothConvexFunction

    eta = eta_times_beta / beta
    p = PEP()
    f = p.declare_function(SmoothConvexFunction, L=beta)
    u, w = p.set_initial_point(), p.set_initial_point()
    gu, gw = f.gradient(u), f.gradient(w)
    p.set_initial_condition((u - w) ** 2 <= 1)
    p.set_performance_metric(((u - eta * gu) - (w - eta * gw)) ** 2)
    primal, dual = _solve(p)
    return PEPResult("A.1.2", f"eta = {eta_times_beta:g}/beta", primal, dual, 1.0,
                     max(1.0, (1.0 - eta_times_beta) ** 2), "smooth convex", beta,
                     _witness(f, {"u": u, "w": w}, "smooth-convex", beta, lemma="a12", eta=eta,
                              step_limit=bound_steps / beta))


def lemma_a13_pep(*, beta: float = 1.0, factor: float = 2.0) -> PEPResult:
    """Fu et al., Lemma A.1.3 (self-bounding) over every convex beta-smooth function with a
    minimizer, read as ``f - f* >= 0``: ``tau = sup ||grad f(w)||^2 / (factor beta (f(w) - f*))``.

    The lemma claims ``tau <= 1`` with ``factor = 2``; the exact worst case of
    ``||g||^2 / (f - f*)`` is ``2 beta`` (attained by quadratics), so ``tau = 2/factor``.
    The class is the convex one, the claim's families' (quadratics, logistic); the inequality
    also holds for non-convex smooth functions bounded below (a descent step), not run here.
    """
    from PEPit import PEP
    from PEPit.functions import SmoothConvexFunction

    p = PEP()
    f = p.declare_function(SmoothConvexFunction, L=beta)
    xs = f.stationary_point()
    fs = f(xs)
    w = p.set_initial_point()
    g, fw = f.oracle(w)
    p.set_initial_condition(fw - fs <= 1)
    p.set_performance_metric(g**2 / (factor * beta))
    primal, dual = _solve(p)
    return PEPResult("A.1.3", f"||g||^2 <= {factor:g} beta (f - f*)", primal, dual, 1.0,
                     2.0 / factor, "smooth convex", beta,
                     _witness(f, {"w": w, "x_star": xs}, "smooth-convex", beta, lemma="a13",
                              factor=factor))


def lemma_a51_pep(*, eta_times_beta: float, beta: float = 1.0, bound_steps: float = 1.0
                  ) -> PEPResult:
    """Fu et al., Lemma A.5.1 (descent) over every beta-smooth function, convex or not:
    ``tau = sup f(w - eta g) - f(w) + (eta/2) ||g||^2`` over ``||g||^2 <= 1``.

    The lemma claims ``tau <= 0`` for ``eta <= bound_steps / beta`` (1 as stated); the exact worst
    case is ``max(0, (eta/2)(eta beta - 1))``, so 0 on the lemma's range and positive beyond.
    """
    from PEPit import PEP
    from PEPit.functions import SmoothFunction

    eta = eta_times_beta / beta
    p = PEP()
    f = p.declare_function(SmoothFunction, L=beta)
    w = p.set_initial_point()
    g, fw = f.oracle(w)
    nxt = w - eta * g
    fn = f(nxt)
    p.set_initial_condition(g**2 <= 1)
    p.set_performance_metric(fn - fw + eta / 2 * g**2)
    primal, dual = _solve(p)
    return PEPResult("A.5.1", f"eta = {eta_times_beta:g}/beta", primal, dual, 0.0,
                     max(0.0, eta / 2 * (eta_times_beta - 1.0)), "smooth (not necessarily "
                     "convex)", beta,
                     _witness(f, {"w": w, "next": nxt}, "smooth", beta, lemma="a51", eta=eta,
                              step_limit=bound_steps / beta))
