"""Issue 79, item 5: exact first-order certificates of the PEP lemmas over their whole step-size
range (:mod:`boundbench.theory.pep_certificates`): verified by sympy as functions of the step
size and beta; the same certificate fails, exactly and with where, past the range; the
inequalities it combines hold on functions of their class (a wrong one would make a wrong
proof); a wrong multiplier is refused."""

from __future__ import annotations

import json

import numpy as np
import pytest
import sympy as sp

from boundbench.theory import pep_certificates as pc


@pytest.mark.parametrize("name, planted", [("A.1.2", {"t_max": 3}), ("A.1.3", {"factor": 1}),
                                           ("A.5.1", {"t_max": 2})])
def test_each_lemma_is_proven_exactly_and_its_planted_variant_is_not(name, planted):
    r = pc.certify_lemma(name, planted)
    json.dumps(r, allow_nan=False)  # plain values: it goes into the audit's record
    assert r["proven"] and all(c["ok"] for c in r["checks"]), r["why"]
    assert r["planted"]["refuted"] and not r["planted"]["own_certificate_found"]


def test_past_the_step_range_the_certificate_fails_where_the_lemma_does():
    """A.1.2's multipliers 2 eta: the residual eta (2/beta - eta) ||g_u - g_w||^2 is negative
    exactly for eta beta > 2; the checker names the interval and a point of it."""
    lams = [2 * pc.ETA, 2 * pc.ETA]
    assert pc.verify(pc.a12(), lams)["proven"]
    bad = pc.verify(pc.a12(sp.Rational(201, 100)), lams)
    assert not bad["proven"]
    assert any("(2, 201/100]" in c["detail"] for c in bad["checks"] if not c["ok"])


def test_a_wrong_multiplier_is_refused():
    """eta instead of 2 eta on each condition (a slip easy to make by hand) leaves a
    <u - w, g_u - g_w> term no PSD matrix has: a minor is negative."""
    assert not pc.verify(pc.a12(), [pc.ETA, pc.ETA])["proven"]
    assert not pc.verify(pc.a51(), [sp.Integer(1), -sp.Rational(1, 10)])["proven"]  # lam < 0


def _realize(setup: pc.Setup, A: np.ndarray, rng: np.random.Generator, beta: float,
             eta: float, shift: float = 0.0) -> dict:
    """Gram entries and values of ``f(x) = x^T A x / 2 + shift`` at the setup's points, each
    point's gradient basis vector realized as A x: the setup's expressions as numbers."""
    vecs: dict[str, np.ndarray] = {}
    base = [n for n in setup.basis if not n.startswith("g_")]
    for n in base:
        vecs[n] = rng.standard_normal(A.shape[0])
    subs = {pc.BETA: beta, pc.ETA: eta}
    values = {}
    for p in setup.points:
        x = sum(float(sp.sympify(c).subs(subs)) * vecs[k] for k, c in p.x.terms.items()
                if not k.startswith("g_")) + sum(
            float(sp.sympify(c).subs(subs)) * (A @ vecs[k[2:]]) for k, c in p.x.terms.items()
            if k.startswith("g_"))
        vecs[f"g_{p.name}"] = A @ x
        values[p.f] = 0.5 * x @ A @ x + shift
    for i in setup.basis:
        for j in setup.basis:
            subs[pc.gram(i, j)] = float(vecs[i] @ vecs[j])
    return {**subs, **values}


@pytest.mark.parametrize("name", ["A.1.2", "A.1.3", "A.5.1"])
def test_the_inequalities_combined_hold_on_functions_of_the_class(name):
    """Each condition is >= 0 on quadratics of the lemma's class (eigenvalues in [0, beta] for
    the convex and non-negative ones, [-beta, beta] for smooth ones): a certificate built on an
    invalid one would prove nothing."""
    rng = np.random.default_rng(0)
    setup = pc.SETUPS[name]()
    lo = -1.0 if name == "A.5.1" else 0.0
    for _ in range(50):
        beta = float(rng.uniform(0.5, 3.0))
        Q = np.linalg.qr(rng.standard_normal((4, 4)))[0]
        A = Q @ np.diag(rng.uniform(lo, 1.0, 4) * beta) @ Q.T
        eta = float(rng.uniform(0.01, 1.0)) * float(setup.t_max or 1) / beta
        subs = _realize(setup, A, rng, beta, eta)
        for cname, e in setup.inequalities:
            assert float(e.subs(subs)) >= -1e-9, (name, cname)
        assert float(setup.target.subs(subs)) >= -1e-9  # and the lemma itself


def test_the_sparsest_dual_is_read_where_pepit_returns_an_interior_one():
    """PEPit's own dual for A.5.1 at eta beta = 1/4 is (1.43, 0.43), the face's interior; the
    least-sum member is (1, 0), which is the certificate."""
    lam = pc.sparsest_dual(pc.a51(), t=0.25, beta=1.0)
    assert lam is not None and np.allclose(lam, [1.0, 0.0], atol=1e-6)
