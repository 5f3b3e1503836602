"""Proofs in ball arithmetic for the activation-decay claims that need no training.

Corollary 1's erf bound over its 1-D assumption space from a cancellation-free form; Theorem
2's two sides (two classes) from the Taylor bracket of the softplus, a cancellation-free
form checked against an mpmath quadrature; Theorem 3's Taylor form below Theorem 2's bound for
2 to 8 classes; GELU's Lipschitz constant by interval branch-and-bound
(:mod:`boundbench.framework.certificates.proofs`).

References
----------
Anonymous, *Activation Decay by Loss Smoothing to Enhance Generalization*, Theorem 2 (eq. 4) and
the proof of Theorem 1 (Appendix B.2, step 5).
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

from boundbench.framework.certificates import identity, proofs

__all__ = ["COR1_PROOF", "THM2_PROOF", "THM3_PROOF", "gelu_lipschitz_proof"]


def _half_s2(p: dict):
    import mpmath

    return mpmath.mpf(p["s"]) ** 2 / 2


def _thm2_reference(p: dict) -> tuple:
    """Both sides of Theorem 2 (two classes) at a point by adaptive quadrature in mpmath (at
    the caller's precision), split where the softplus bends: ``(smoothed - CE, CE, smoothed)``.
    Independent of the Gauss-Hermite rule the search uses."""
    import mpmath

    return _thm2_quadrature(float(p["margin"]), float(p["s"]), mpmath.mp.dps)


@functools.lru_cache(maxsize=256)  # the two sides' proofs check the same points
def _thm2_quadrature(margin: float, scale: float, dps: int) -> tuple:
    import mpmath

    m, s = mpmath.mpf(margin), mpmath.mpf(scale)
    ce = mpmath.log1p(mpmath.exp(-m))
    z0 = m / (mpmath.sqrt(2) * s)
    # the Gaussian's mass lies in |z| < 40 (the rest is below 1e-340 of it); the softplus
    # bends within 1/(sqrt2 s) of z0
    cuts = sorted({-40, -10, -3, 0, 3, 10, 40} | {min(40, max(-40, z0 + k)) for k in (-1, 0, 1)})
    smoothed = mpmath.quad(lambda z: mpmath.log1p(mpmath.exp(-m + mpmath.sqrt(2) * s * z))
                           * mpmath.npdf(z), cuts)
    return smoothed - ce, ce, smoothed


def _thm2_bregman(q: dict):
    """``E[g(X)]`` enclosed, ``g(x) = f(x - m) - f(-m) - f'(-m) x`` with ``f`` the softplus and
    ``X ~ N(0, 2 s^2)``: Taylor's theorem with ``f'' = sigmoid (1 - sigmoid) = 1/4 - (sigmoid -
    1/2)^2`` in ``[0, 1/4]`` puts ``g(x)`` in ``[0, x^2 / 8]``, so ``E[g] = smoothed - CE`` is in
    ``[0, s^2 / 4]`` (``E X = 0``, ``E X^2 = 2 s^2``)."""
    return proofs.hull(0, q["s"] ** 2 / 4)


def _thm2_ce(q: dict):
    return proofs.log(1 + proofs.exp(-1 * q["margin"]))


_THM2_FORM = ("smoothed CE - CE = E[f(X - m) - f(-m) - f'(-m) X], X ~ N(0, 2 s^2), is in "
              "[0, s^2/4] by Taylor's theorem with f'' = 1/4 - (sigmoid - 1/2)^2 in [0, 1/4]")
# the paper states Theorem 2 for any number of classes; the proof's sides are the two-class
# smoothed CE (an expectation over one Gaussian), so the class count is an axis it lacks
_THM2_DOMAIN = {"margin": (-np.inf, np.inf), "s": (0.0, np.inf), "classes": (2, np.inf, "int")}
_THM2_BEYOND = ("two classes only: for c > 2 the smoothed CE is an expectation over a "
                "(c - 1)-dimensional Gaussian that the interval vocabulary has no enclosure for")
_THM2_COMMON: dict[str, Any] = dict(budget=10, enclose_domain=True, domain=_THM2_DOMAIN, lemma=_THM2_FORM,
                    domain_text="any logit margin and noise scale s > 0, two classes",
                    beyond=_THM2_BEYOND)
THM2_PROOF = (
    proofs.Proof(lambda q: (_thm2_bregman(q), q["s"] ** 2 / 2),
                 difference=lambda q: proofs.hull(q["s"] ** 2 / 4, q["s"] ** 2 / 2),
                 reference=lambda p: (_thm2_reference(p)[0], _half_s2(p)),
                 identity="upper side: " + _THM2_FORM, **_THM2_COMMON),
    proofs.Proof(lambda q: (_thm2_ce(q), _thm2_ce(q) + _thm2_bregman(q)),
                 difference=_thm2_bregman, reference=lambda p: _thm2_reference(p)[1:],
                 identity="Jensen side: the same bracket", attained="as s -> 0 (Jensen side)",
                 **_THM2_COMMON),
)


def gelu_lipschitz_proof() -> dict:
    """The upper half of the equality proven in ball arithmetic: GELU'(x) <= Phi(sqrt 2) +
    sqrt 2 phi(sqrt 2) (1 + 1e-12) for every x in [-50, 50] (beyond, GELU' is within 1e-500 of
    0 or 1); the lower half is the closed form's own value at sqrt 2."""
    from flint import arb

    r2 = arb(2).sqrt()
    top = (1 + arb(1).erf()) / 2 + r2 * (-arb(1)).exp() / (2 * arb.pi()).sqrt()
    # the 1e-12 is part of the inequality proven (it is attained at sqrt 2, where no
    # enclosure of a difference decides), not a tolerance of the prover
    slope = proofs.Proof(lambda q: (proofs.ncdf(q["x"]) + q["x"] * proofs.npdf(q["x"]),
                                    top * (1 + arb("1e-12"))))
    res = proofs.prove(slope, {"x": (-50.0, 50.0)})
    status = ("proven on the box" if res["status"] == "proven on the box" else
              f"not proven: {res['status']}")
    return {"status": f"{status} (max GELU' <= 1.128904... (1 + 1e-12) on x in [-50, 50])",
            "closed_form_ball": str(top), "proof": res}


def _thm3_parts(q: dict) -> tuple:
    """``(CE, p)`` for the true class 0 among the box's ``classes`` logits (fixed per case by
    :func:`boundbench.framework.certificates.proofs.integer_cases`): CE as ``log(1 + sum_{j>0} exp(z_j -
    z_0))``, >= 0 on every box, and the softmax ``p``."""
    c = proofs.integer(q["classes"])
    z = [q[f"z{j}"] for j in range(c)]
    rel = [proofs.exp(zj - z[0]) for zj in z[1:]]
    total = sum(rel, start=1 + 0 * z[0])
    return proofs.log(total), [1 / total] + [r / total for r in rel]


def _thm3_sides(q: dict) -> tuple:
    """Theorem 3's Taylor form ``CE + s^2/2 sum_i p_i (1 - p_i)`` (as the paper writes it)
    against Theorem 2's bound ``CE + s^2/2``."""
    ce, p = _thm3_parts(q)
    half = q["s"] ** 2 / 2
    return ce + half * sum((pi * (1 - pi) for pi in p[1:]), start=p[0] * (1 - p[0])), ce + half


def _thm3_form(q: dict):
    """``rhs - lhs = s^2/2 ||p||^2``, exactly (``sum_i p_i (1 - p_i) = 1 - ||p||^2`` as
    ``sum_i p_i = 1``): a sum of squares, >= 0 by construction."""
    _, p = _thm3_parts(q)
    return q["s"] ** 2 / 2 * sum((pi ** 2 for pi in p[1:]), start=p[0] ** 2)


def _thm3_every_count() -> tuple:
    """Theorem 3 against Theorem 2 for a symbolic class count ``c`` (sympy sums), with
    ``p_i = e_i / sum_j e_j``, ``e_i > 0``: ``((rhs - lhs) - form, form, c)``, ``rhs - lhs =
    s^2/2 - s^2/2 sum p_i (1 - p_i)`` and ``form = s^2/2 sum p_i^2``."""
    import sympy

    c = sympy.Symbol("c", integer=True, positive=True)
    i, j = sympy.symbols("i j", integer=True)
    e = _THM3_E
    s = sympy.Symbol("s", positive=True)
    total = sympy.Sum(e[j], (j, 1, c))
    taylor = sympy.Sum(e[i] / total * (1 - e[i] / total), (i, 1, c))
    form = s ** 2 / 2 * sympy.Sum((e[i] / total) ** 2, (i, 1, c))
    return s ** 2 / 2 - s ** 2 / 2 * taylor - form, form, c


def _thm3_at(c: int, q: dict) -> dict:
    """The symbolic count's symbols at ``c`` classes as the proof's: ``e_i = exp(z_{i-1} -
    z_0)`` (the sides' softmax relative to the true class 0) and ``s``."""
    import sympy

    return {**{_THM3_E[i + 1]: sympy.exp(q[f"z{i}"] - q["z0"]) for i in range(c)},
            sympy.Symbol("s", positive=True): q["s"]}


class _LazyIndexed:
    """sympy's ``IndexedBase("e", positive=True)``, made on first use (sympy imports slowly)."""

    def __getitem__(self, i: Any) -> Any:
        import sympy

        return sympy.IndexedBase("e", positive=True)[i]


_THM3_E = _LazyIndexed()


THM3_PROOF = proofs.Proof(
    _thm3_sides, budget=10, difference=_thm3_form, enclose_domain=True,
    domain={"classes": (2, np.inf, "int"), "s": (0.0, np.inf),
            **{f"z{j}": (-np.inf, np.inf) for j in range(8)}},
    domain_text="any class count c >= 2, any logits in R^c, any s > 0",
    reductions=(identity.EveryCount(
        "classes", "sum_i p_i (1 - p_i) = 1 - sum_i p_i^2 (as sum_i p_i = 1) and s^2/2 "
        "sum_i p_i^2 >= 0", general=_thm3_every_count, at=_thm3_at),),
    identity="Thm 2's bound - Thm 3's Taylor form = s^2/2 ||softmax(z)||^2 (sum_i p_i (1 - p_i) "
    "= 1 - ||p||^2, as sum_i p_i = 1)",
    note="each class count 2..8 in turn over the whole logit space; the logits a class count "
    "leaves unused do not enter; every count by the symbolic-count lemma")


def _cor1_arb(q: dict):
    """Corollary 1's sides over its 1-D assumption space (``ad.cor1.global``'s search) in ball
    arithmetic: the smoothed Hessian of curvature 1 on an interval of width ``w`` at offset
    ``t``, against ``erf(1 / (sqrt 2 sigma))``."""
    w, t, s = q["width"], q["offset"], q["sigma"]
    return (proofs.ncdf((w / 2 - t) / s) - proofs.ncdf((-1 * w / 2 - t) / s),
            proofs.erf(1 / (proofs.sqrt(2) * s)))


def _cor1_form(q: dict):
    """``rhs - lhs`` of :func:`_cor1_sides` as a sum of terms each >= 0 (the bound is attained
    on the whole line width = 2, offset = 0, where a difference of enclosures never decides).

    With ``h = w / (2 sigma)`` and ``c = |t| / sigma``, ``rhs = P(|Z| <= 1/sigma)`` and
    ``lhs = P(|Z + t/sigma| <= h)``, so ``rhs - lhs`` is
    ``[P(|Z| <= 1/sigma) - P(|Z| <= h)] + [P(|Z| <= h) - P(|Z + c| <= h)]``. The first bracket
    is ``2 int_h^{1/sigma} phi = (2 - w)/sigma phi(xi)``, ``xi`` in ``[h, 1/sigma]`` (mean value;
    ``w <= 2``); the second, by ``phi``'s symmetry and ``phi(h + s) = phi(h - s) exp(-2 h s)``,
    is ``int_0^c phi(h - s) (1 - exp(-2 h s)) ds``, enclosed by ``c`` times its integrand over
    ``s in [0, c]``. Both are >= 0 (Anderson's theorem for this interval, in closed form)."""
    w, t, s = q["width"], q["offset"], q["sigma"]
    h, c = w / (2 * s), abs(t) / s
    between = proofs.hull(0, c)
    return ((2 - w) / s * proofs.npdf(proofs.hull(h, 1 / s))
            + c * proofs.npdf(h - between) * (1 - proofs.exp(-2 * h * between)))


COR1_PROOF = proofs.Proof(
    _cor1_arb, budget=300, difference=_cor1_form, enclose_domain=True,
    domain={"width": (0.0, 2.0), "offset": (-np.inf, np.inf), "sigma": (0.0, np.inf)},
    domain_text="the corollary's 1-D assumption space: any width in (0, 2], offset, sigma > 0",
    identity="rhs - lhs = (2 - w)/sigma phi(xi) + int_0^(|t|/sigma) phi(h - s)(1 - exp(-2 h s)) "
    "ds, h = w/(2 sigma)", attained="on width = 2, offset = 0, for every sigma")
