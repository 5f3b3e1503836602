"""Proofs in ball arithmetic for the activation-decay claims that need no training.

Corollary 1's erf bound over its 1-D assumption space from a cancellation-free form; Theorem
2's two sides (two classes) from the Taylor bracket of the softplus, a cancellation-free
form checked against an mpmath quadrature; Theorem 3's Taylor form below Theorem 2's bound for
2 to 8 classes; GELU's Lipschitz constant by interval branch-and-bound
(:mod:`boundbench.framework.proofs`).

References
----------
Anonymous, *Activation Decay by Loss Smoothing to Enhance Generalization*, Theorem 2 (eq. 4) and
the proof of Theorem 1 (Appendix B.2, step 5).
"""

from __future__ import annotations

import functools

from boundbench.framework import proofs

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
THM2_PROOF = (
    proofs.Proof(lambda q: (_thm2_bregman(q), q["s"] ** 2 / 2), budget=10,
                 difference=lambda q: proofs.hull(q["s"] ** 2 / 4, q["s"] ** 2 / 2),
                 reference=lambda p: (_thm2_reference(p)[0], _half_s2(p)),
                 identity="upper side: " + _THM2_FORM),
    proofs.Proof(lambda q: (_thm2_ce(q), _thm2_ce(q) + _thm2_bregman(q)), budget=10,
                 difference=_thm2_bregman, reference=lambda p: _thm2_reference(p)[1:],
                 identity="Jensen side: the same bracket", attained="as s -> 0 (Jensen side)"),
)


def gelu_lipschitz_proof() -> dict:
    """The upper half of the equality proven in ball arithmetic: GELU'(x) <= Phi(sqrt 2) +
    sqrt 2 phi(sqrt 2) (1 + 1e-12) for every x in [-50, 50] (beyond, GELU' is within 1e-500 of
    0 or 1); the lower half is the closed form's own value at sqrt 2."""
    from flint import arb

    r2 = arb(2).sqrt()
    top = (1 + arb(1).erf()) / 2 + r2 * (-arb(1)).exp() / (2 * arb.pi()).sqrt()
    slope = proofs.Proof(lambda q: (proofs.ncdf(q["x"]) + q["x"] * proofs.npdf(q["x"]), top))
    res = proofs.prove(slope, {"x": (-50.0, 50.0)}, rtol=1e-12)
    status = ("proven on the box" if res["status"] == "proven on the box" else
              f"not proven: {res['status']}")
    return {"status": f"{status} (max GELU' <= 1.128904... (1 + 1e-12) on x in [-50, 50])",
            "closed_form_ball": str(top), "proof": res}


def _thm3_parts(q: dict) -> tuple:
    """``(CE, ||softmax(z)||^2)`` for the true class 0 among the box's ``classes`` logits (fixed
    per case by :func:`boundbench.framework.proofs.integer_cases`); CE as
    ``log(1 + sum_{j>0} exp(z_j - z_0))``, >= 0 on every box."""
    c = int(float(q["classes"].v.lo))
    z = [q[f"z{j}"] for j in range(c)]
    rel = [proofs.exp(zj - z[0]) for zj in z[1:]]
    total = sum(rel, start=1 + 0 * z[0])
    return (proofs.log(total),
            sum(((r / total) ** 2 for r in rel), start=(1 / total) ** 2))


def _thm3_sides(q: dict) -> tuple:
    ce, p2 = _thm3_parts(q)
    half = q["s"] ** 2 / 2
    return ce + half * (1 - p2), ce + half


def _thm3_form(q: dict):
    """``s^2/2 ||p||^2``, enclosed by ``[s^2/(2c), s^2/2]``: ``sum p_i = 1`` and Cauchy-Schwarz
    give ``1/c <= ||p||^2 <= 1``."""
    c = int(float(q["classes"].v.lo))
    return proofs.hull(q["s"] ** 2 / (2 * c), q["s"] ** 2 / 2)


THM3_PROOF = proofs.Proof(
    _thm3_sides, budget=10, difference=_thm3_form,
    identity="Thm 2's bound - Thm 3's Taylor form = s^2/2 ||softmax(z)||^2 (sum_i p_i (1 - p_i) "
    "= 1 - ||p||^2), in [s^2/(2c), s^2/2] (Cauchy-Schwarz with sum_i p_i = 1)",
    note="each class count 2..8 in turn; the logits a class count leaves unused do not enter")


def _cor1_arb(q: dict):
    """Corollary 1's sides over its 1-D assumption space (``ad.cor1.global``'s search) in ball
    arithmetic: the smoothed Hessian of curvature 1 on an interval of width ``w`` at offset
    ``t``, against ``erf(1 / (sqrt 2 sigma))``."""
    from flint import arb

    w, t, s = q["width"], q["offset"], q["sigma"]
    return (proofs.ncdf((w / 2 - t) / s) - proofs.ncdf((-1 * w / 2 - t) / s),
            proofs.erf(1 / (arb(2).sqrt() * s)))


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
    _cor1_arb, budget=300, difference=_cor1_form,
    identity="rhs - lhs = (2 - w)/sigma phi(xi) + int_0^(|t|/sigma) phi(h - s)(1 - exp(-2 h s)) "
    "ds, h = w/(2 sigma)", attained="on width = 2, offset = 0, for every sigma")
