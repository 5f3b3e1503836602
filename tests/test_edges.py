"""Inputs the public API once misread silently (issue 24): complex values, booleans, empty
arrays, lengths that must match, data far from unit scale, {0, 1} labels, NaN inputs and
requests that would run for years. Each is refused with a ValueError naming the argument, or,
where the mathematics allows (an SVM's scale), computed right."""

import numpy as np
import pytest
import torch

from boundbench.synthetic.data import make_separable
from boundbench.synthetic.svm import HardMarginSVM
from boundbench.theory import activation_decay as ad
from boundbench.theory import fu, uegr
from boundbench.theory import operators as ops
from boundbench.theory import trace as tr


@pytest.mark.parametrize("call, match", [
    # complex: the imaginary part was dropped (lhs 5 instead of |1+5j|^2 + 4 = 30)
    (lambda: fu.lemma_a13_sides(grad=[1 + 5j, 2], f_value=1.0, beta=1.0), "grad must be real"),
    (lambda: ad.cor1_rhs(H=2.0 + 1j, eps=0.3, sigma=0.1), "H must be real"),
    (lambda: HardMarginSVM().fit(np.array([[1.0 + 1j], [-1.0]]), np.array([1.0, -1.0])),
     "X must be real"),
    # booleans read as 0/1
    (lambda: ad.thm2_rhs(np.zeros((2, 3)), np.array([True, False]), s=1.0), "y must hold integer"),
    (lambda: fu.lemma_a13_sides(grad=[True, False], f_value=1.0, beta=1.0), "grad must be numbers"),
    # empty arrays ignored
    (lambda: fu.lemma_a12_sides([1.0, 2], [1.0, 2], [0, 0], [0, 0], eta=1.0, beta=[]),
     "beta must not be empty"),
    (lambda: uegr.thm1_frobenius_rhs(grad_mean=[], sigma_g=1, batch_size=1, p=[0.5]),
     "grad_mean must not be empty"),
    # lengths that must match
    (lambda: uegr.thm1_frobenius_rhs(grad_mean=[1.0, 2, 3], sigma_g=1, batch_size=1, p=[0.5, 0.5]),
     "shapes do not broadcast: grad_mean"),
    (lambda: uegr.rescaled_mask_mean(grad_mean=[1.0, 2, 3], p=[0.5, 0.5]), "grad_mean"),
    # requests that cannot finish
    (lambda: ad.smoothed_ce_monte_carlo(np.zeros(2), 0, s=1.0, n_samples=10**15,
                                        rng=np.random.default_rng(0)), "n_samples must be <="),
    (lambda: tr.trace_hutchinson(None, n_probes=10**15), "n_probes must be <="),
    (lambda: uegr.sample_masked_gradients(grad_mean=np.zeros(1000), sigma_g=1.0, batch_size=1,
                                        p=0.5, n_draws=10**7, rng=0), "n_draws must be <="),
])
def test_misread_inputs_are_refused_by_name(call, match):
    with pytest.raises((ValueError, TypeError), match=match):
        call()


def test_train_heads_refuses_0_1_labels():
    from boundbench.synthetic.train import train_heads

    d = make_separable(n_datasets=1, n=20, d=2, margin=0.2, bound=1.0, seed=0)
    with pytest.raises(ValueError, match=r"y must hold labels in \{-1, \+1\}"):
        train_heads(d.X, (d.y > 0).astype(float), steps=5)


def test_hessian_of_nan_inputs_is_refused():
    model = torch.nn.Linear(3, 1, dtype=torch.float64)
    with pytest.raises(ValueError, match="inputs must be finite"):
        ops.HessianOperator.for_model(model, lambda o: o.pow(2).mean(),
                                     torch.full((4, 3), float("nan"), dtype=torch.float64))


@pytest.mark.parametrize("scale", [1e200, 1e-200, 1e30])
def test_hard_margin_svm_is_scale_equivariant(scale):
    """X * 1e200 was called non-separable: the SVM of s X is the SVM of X with v / s, the same
    intercept and support, and margin s times larger."""
    d = make_separable(n_datasets=1, n=30, d=3, margin=0.2, bound=1.0, seed=0)
    a = HardMarginSVM().fit(d.X[0], d.y[0])
    b = HardMarginSVM().fit(d.X[0] * scale, d.y[0])
    assert b.margin_ == pytest.approx(a.margin_ * scale, rel=1e-9)
    assert b.intercept_ == pytest.approx(a.intercept_, abs=1e-9)
    np.testing.assert_array_equal(a.support_, b.support_)
    np.testing.assert_allclose(b.coef_ * scale, a.coef_, rtol=1e-9, atol=1e-12)


def test_a_unit_that_ends_its_process_is_its_own_failure_and_the_rest_are_kept():
    """Issue 84: a plugin claim's ``os._exit`` broke the pool, and every claim of the run was
    recorded as 'A process in the process pool was terminated abruptly'; a ``sys.exit`` left
    the run as SystemExit. Now the pool is rebuilt, the unit that ends its process is the only
    failure (found by running the twice-unfinished alone), and ``sys.exit`` is a failure too."""
    from pool_units import unit

    from boundbench.framework.execution.executors import LocalPool

    with LocalPool(2) as ex:
        got = dict(ex.map(unit, [1, "exit", 2, 3, "sysexit", 4], progress=False))
    assert {k: d.value for k, d in got.items() if isinstance(k, int)} == {1: 2, 2: 4, 3: 6, 4: 8}
    assert all(got[k].error is None for k in (1, 2, 3, 4))
    assert "process ended abruptly" in got["exit"].error
    assert "SystemExit" in got["sysexit"].error and "goodbye" in got["sysexit"].error


def test_a_check_that_calls_sys_exit_is_that_claims_error(monkeypatch):
    """Issue 84: ``check`` stopped at a claim calling ``sys.exit`` (its guard caught
    Exception), exiting with the finding status and never running the claims after it."""
    import sys

    from boundbench import catalogue
    from boundbench.framework.claims import registry
    from boundbench.framework.execution.context import CheckContext

    catalogue.load()
    monkeypatch.setattr(registry, "_REGISTRY", dict(registry._REGISTRY))

    @registry.claim("fu.zz-sysexit", paper="fu", where="nowhere", kind="bound",
                    statement="s", equation="e")
    def _check(ctx):
        sys.exit("a plugin said goodbye")

    res = registry.run("fu.zz-sysexit", CheckContext(), catch=True)
    assert res.verdict.status == "inconclusive" and "SystemExit" in res.verdict.reason
    assert "goodbye" in res.verdict.reason and res.error


def test_a_claim_id_too_long_for_its_files_is_refused_at_registration():
    """Issue 84: a 200-character id was registered, its figure name (204 characters) was then
    refused by the report's schema, and the audit wrote no report."""
    from boundbench.errors import ClaimError
    from boundbench.framework.claims import registry

    with pytest.raises(ClaimError, match=f"at most {registry.MAX_ID} characters"):
        registry.claim("fu." + "x" * 197, paper="fu", where="w", kind="bound", statement="s",
                       equation="e")
