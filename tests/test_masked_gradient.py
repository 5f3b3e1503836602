"""Tests of UEGR's Theorem 1 (theory.uegr)."""

import numpy as np
import pytest
from hypothesis import given

from boundbench.testing import bound
from boundbench.testing import strategies as bst
from boundbench.theory import uegr


@bound(bst.masked_gradients())
def test_rescaled_variance_is_never_below_the_plain_one(g):
    """Eq. (18): the rescaled mask only adds variance (the prose's "reduces" is wrong)."""
    var = uegr.rescaled_mask_variance(grad_mean=g.grad_mean, grad_var=g.grad_var, p=g.p)
    return np.full(var.shape, g.grad_var), var


@given(bst.masked_gradients())
def test_rescaled_variance_falls_as_p_rises(g):
    var = uegr.rescaled_mask_variance(grad_mean=g.grad_mean[:1], grad_var=g.grad_var,
                                    p=np.sort(g.p))
    assert np.all(np.diff(var) <= 1e-9 * (1 + var.max()))


@bound(bst.masked_gradients(), rtol=1e-12, atol=1e-300)
def test_thm1_frobenius_bound_19(g):
    var = uegr.rescaled_mask_variance(grad_mean=g.grad_mean, grad_var=g.grad_var, p=g.p)
    return (np.linalg.norm(var), uegr.thm1_frobenius_rhs(grad_mean=g.grad_mean, sigma_g=g.sigma_g,
                                                       batch_size=g.batch_size, p=g.p))


def test_no_mask_changes_nothing():
    mu = np.array([1.0, -2.0])
    assert np.allclose(uegr.rescaled_mask_variance(grad_mean=mu, grad_var=0.5, p=1.0), 0.5)
    assert np.allclose(uegr.unscaled_mask_variance(grad_mean=mu, grad_var=0.5, p=1.0), 0.5)
    assert np.allclose(uegr.rescaled_mask_mean(grad_mean=mu, p=[0.3, 0.9]), mu)


def test_monte_carlo_moments_match_eq_17_and_18():
    rng = np.random.default_rng(1)
    mu, p = np.array([0.0, 1.0, -3.0]), np.array([0.1, 0.5, 0.9])
    g, masked = uegr.sample_masked_gradients(grad_mean=mu, sigma_g=2.0, batch_size=4, p=p,
                                           n_draws=400_000, rng=rng)
    var = uegr.rescaled_mask_variance(grad_mean=mu, grad_var=1.0, p=p)
    assert np.all(np.abs(masked.mean(0) - mu) < 5 * np.sqrt(var / 400_000))
    np.testing.assert_allclose(masked.var(0), var, rtol=0.03)
    np.testing.assert_allclose(g.var(0), 1.0, rtol=0.01)
    _, raw = uegr.sample_masked_gradients(grad_mean=mu, sigma_g=2.0, batch_size=4, p=p,
                                        n_draws=400_000, rng=rng, rescale=False)
    np.testing.assert_allclose(raw.var(0), uegr.unscaled_mask_variance(grad_mean=mu, grad_var=1.0, p=p),
                               rtol=0.03)


@pytest.mark.parametrize(
    "call, match",
    [
        (lambda: uegr.rescaled_mask_variance(grad_mean=1.0, grad_var=1.0, p=0.0), r"p must lie in \(0, 1\]"),
        (lambda: uegr.rescaled_mask_variance(grad_mean=1.0, grad_var=1.0, p=1.5), r"p must lie in \(0, 1\]"),
        (lambda: uegr.rescaled_mask_variance(grad_mean=1.0, grad_var=-1.0, p=0.5), "grad_var must be >= 0"),
        (lambda: uegr.thm1_frobenius_rhs(grad_mean=[1.0], sigma_g=1, batch_size=0, p=[0.5]),
         "batch_size must be >= 1"),
        (lambda: uegr.sample_masked_gradients(grad_mean=[1.0], sigma_g=1, batch_size=1, p=[0.5],
                                            n_draws=1, rng=np.random.default_rng()), "n_draws must be >= 2"),
    ],
)
def test_bad_input_names_the_parameter(call, match):
    with pytest.raises(ValueError, match=match):
        call()
