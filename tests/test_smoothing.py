"""Property tests of the activation-decay results (theory.activation_decay)."""

import numpy as np
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st
from scipy import integrate
from scipy.special import softmax

from boundbench.papers.ad.smoothing import stein_smoothed_hessian
from boundbench.testing import BoundViolation, bound
from boundbench.testing import strategies as bst
from boundbench.theory import activation_decay as ad

# Corollary 1 on its tight 1-D case, searched with the public strategies and @bound


@bound(bst.huber_losses())
def test_cor1_consequences(h):
    """The erf bound is at most H, at most sqrt(2/pi) eps/sigma, and at most the simple form."""
    rhs = float(ad.cor1_rhs(H=h.H, eps=h.eps, sigma=h.sigma))
    caps = [h.H, np.sqrt(2 / np.pi) * h.eps / h.sigma,
            float(ad.cor1_simple_rhs(H=h.H, eps=h.eps, sigma=h.sigma))]
    return np.full(3, rhs), np.array(caps)


@bound(st.tuples(bst.huber_losses(), st.floats(1.0, 1e3)), rtol=1e-12)
def test_cor1_is_nonincreasing_in_sigma(case):
    h, k = case
    return (ad.cor1_rhs(H=h.H, eps=h.eps, sigma=k * h.sigma),
            ad.cor1_rhs(H=h.H, eps=h.eps, sigma=h.sigma))


@given(bst.huber_losses())
def test_cor1_equals_the_smoothed_huber_hessian_at_zero(h):
    H, eps, sigma = h.H, h.eps, h.sigma
    rhs = ad.cor1_rhs(H=H, eps=eps, sigma=sigma)
    assert ad.huber_smoothed_hessian(0.0, H=H, eps=eps, sigma=sigma) == pytest.approx(rhs, rel=1e-12, abs=1e-300)
    assert stein_smoothed_hessian(0.0, H=H, eps=eps, sigma=sigma) == pytest.approx(rhs, rel=1e-9, abs=1e-12 * H)


@bound(bst.huber_losses(), rtol=1e-12, atol=1e-300)
def test_cor1_smoothed_huber_stays_below_the_bound(h):
    return (ad.huber_smoothed_hessian(h.theta, H=h.H, eps=h.eps, sigma=h.sigma),
            ad.cor1_rhs(H=h.H, eps=h.eps, sigma=h.sigma))


@bound(bst.huber_losses(sigma=(1e-3, 1.0)), max_examples=100)
def _cor1_without_erf(h):
    """A planted-wrong variant: H eps/(sqrt(2 pi) sigma) (the erf's slope at 0, no cap at H)."""
    return (ad.huber_smoothed_hessian(h.theta, H=h.H, eps=h.eps, sigma=h.sigma),
            h.eps / (np.sqrt(2 * np.pi) * h.sigma))


def test_cor1_without_its_erf_is_caught():
    with pytest.raises(BoundViolation):
        _cor1_without_erf()


@pytest.mark.parametrize("theta,H,eps,sigma", [(0.0, 1, .1, .05), (0.3, 4, .3, .2), (1.5, 2, 1, .01),
                                               (0.0, 10, 0.01, 10.0)])
def test_stein_quadrature_matches_adaptive_quadrature(theta, H, eps, sigma):
    def f(t):
        return float(ad.huber_grad(theta + t, H=H, eps=eps)) * t * np.exp(-t**2 / (2 * sigma**2)) / np.sqrt(2 * np.pi) / sigma

    ref = integrate.quad(f, -40 * sigma, 40 * sigma, points=[-eps / H - theta, eps / H - theta, 0.0],
                         epsabs=1e-15, epsrel=1e-13, limit=500)[0] / sigma**2
    assert stein_smoothed_hessian(theta, H=H, eps=eps, sigma=sigma) == pytest.approx(ref, rel=1e-9, abs=1e-13)
    assert ad.huber_smoothed_hessian(theta, H=H, eps=eps, sigma=sigma) == pytest.approx(ref, rel=1e-9, abs=1e-13)


def test_cor1_extract_values():
    # the extract's C2 check: equality for these (H, eps, sigma)
    for H, eps, sigma in [(1, .1, .05), (1, .1, .5), (4, .3, .2), (2, 1, .01)]:
        assert stein_smoothed_hessian(0.0, H=H, eps=eps, sigma=sigma) == pytest.approx(
            float(ad.cor1_rhs(H=H, eps=eps, sigma=sigma)), rel=1e-9)


# Theorems 2-3 on logit batches drawn by the public strategy


@bound(bst.logit_batches(sigma=(1e-3, 3.0)))
def test_thm2_sandwich_and_taylor(b):
    """CE <= Theorem 3's Taylor form <= Theorem 2's right side, per sample."""
    ce = ad.cross_entropy(b.logits, b.labels)
    taylor = ad.thm3_taylor(b.logits, b.labels, s=b.sigma)
    upper = ad.thm2_rhs(b.logits, b.labels, s=b.sigma)
    return np.concatenate([ce, taylor]), np.concatenate([taylor, upper])


@given(bst.logit_batches())
def test_thm2_gap_is_s_squared_over_2(b):
    gap = ad.thm2_rhs(b.logits, b.labels, s=b.sigma) - ad.cross_entropy(b.logits, b.labels)
    np.testing.assert_allclose(gap, b.sigma**2 / 2, rtol=1e-9, atol=1e-12)


@bound(bst.logit_batches(classes=(2, 2), sigma=(1e-3, 3.0)), rtol=1e-11, atol=1e-15)
def test_thm2_exact_binary_smoothed_ce_is_sandwiched(b):
    """CE <= the exact smoothed CE <= Theorem 2's right side (Gauss-Hermite, s <= 3)."""
    rows = np.arange(len(b.labels))
    margin = b.logits[rows, b.labels] - b.logits[rows, 1 - b.labels]
    exact = ad.smoothed_ce_binary(margin, s=b.sigma)
    return (np.concatenate([ad.cross_entropy(b.logits, b.labels), exact]),
            np.concatenate([exact, ad.thm2_rhs(b.logits, b.labels, s=b.sigma)]))


@pytest.mark.filterwarnings("ignore::scipy.integrate.IntegrationWarning")
@pytest.mark.parametrize("m,s", [(0.0, 0.5), (3.0, 1.0), (-4.0, 2.5), (0.0, 3.0), (4.0, 3.0), (8.0, 0.1)])
def test_gauss_hermite_matches_adaptive_quadrature(m, s):
    ref = integrate.quad(lambda u: np.logaddexp(0, -m + np.sqrt(2) * s * u) * np.exp(-u**2 / 2) / np.sqrt(2 * np.pi),
                         -40, 40, points=[m / (np.sqrt(2) * s)], epsabs=1e-15, epsrel=1e-14, limit=1000)[0]
    assert ad.smoothed_ce_binary(m, s=s) == pytest.approx(ref, rel=1e-11)


def test_theorem3_sign_examples_from_the_extract():
    def err(m, s):
        return float(ad.thm3_taylor(np.array([m, 0.0]), 0, s=s) - ad.smoothed_ce_binary(m, s=s))

    assert err(3.0, 0.5) == pytest.approx(-1.0e-3, rel=0.05)  # confident: under-estimates
    assert err(0.0, 0.5) == pytest.approx(3.4e-3, rel=0.05)  # at the boundary: over-estimates
    assert err(0.0, 1.0) == pytest.approx(4.05e-2, rel=0.02)
    assert err(-6.0, 1.0) == pytest.approx(-1.65e-3, rel=0.05)


def test_monte_carlo_agrees_with_quadrature_and_weight_space():
    rng = np.random.default_rng(0)
    m, s = 1.3, 0.8
    mean, se = ad.smoothed_ce_monte_carlo(np.array([m, 0.0]), 0, s=s, n_samples=200_000, rng=rng)
    assert abs(mean - ad.smoothed_ce_binary(m, s=s)) < 4 * se
    # weight space with ||h|| = s / sigma gives the same logit noise
    W = np.array([[m, 0.0, 0.0], [0.0, 0.0, 0.0]])
    sigma = 0.4
    h = np.array([1.0, 0.0, 0.0]) * (s / sigma)
    W[0, 0] = m / h[0]
    wmean, wse = ad.smoothed_ce_weight_space(W, h, 0, sigma=sigma, n_samples=200_000, rng=rng)
    assert abs(wmean - ad.smoothed_ce_binary(m, s=s)) < 4 * wse


@given(bst.logit_batches(scale=(1e-2, 10.0)))
def test_cross_entropy_matches_torch(b):
    ref = torch.nn.functional.cross_entropy(torch.tensor(b.logits), torch.tensor(b.labels),
                                            reduction="none")
    np.testing.assert_allclose(ad.cross_entropy(b.logits, b.labels), ref.numpy(), rtol=1e-12,
                               atol=1e-12)


def test_taylor_uses_one_minus_squared_probabilities():
    z = np.array([1.0, -0.5, 2.0])
    p = softmax(z)
    assert ad.thm3_taylor(z, 2, s=0.3) == pytest.approx(
        float(ad.cross_entropy(z, 2)) + 0.045 * np.sum(p * (1 - p)))


def test_gelu_lipschitz_constant():
    assert ad.GELU_LIPSCHITZ == pytest.approx(1.128904, abs=1e-6)
    x = torch.linspace(-6, 6, 120_001, dtype=torch.float64, requires_grad=True)
    (g,) = torch.autograd.grad(torch.nn.functional.gelu(x).sum(), x)
    assert g.max().item() == pytest.approx(ad.GELU_LIPSCHITZ, abs=1e-9)
    assert g.max().item() > 1.0  # not 1-Lipschitz


@pytest.mark.parametrize(
    "call, match",
    [
        (lambda: ad.cor1_rhs(H=1, eps=1, sigma=0), "sigma must be > 0"),
        (lambda: ad.cor1_rhs(H=1, eps=1, sigma=-0.1), "sigma must be > 0"),
        (lambda: ad.cor1_rhs(H=0, eps=1, sigma=1), "H must be > 0"),
        (lambda: ad.cor1_simple_rhs(H=1, eps=-1, sigma=1), "eps must be >= 0"),
        (lambda: ad.huber_smoothed_hessian(0, H=1, eps=1, sigma=np.inf), "sigma must be finite"),
        (lambda: ad.thm2_rhs(np.zeros(3), 3, s=1), r"y must lie in \[0, 2\]"),
        (lambda: ad.thm2_rhs(np.zeros(3), 0, s=-1), "s must be >= 0"),
        (lambda: ad.logit_noise_scale(np.ones(3), sigma=0), "sigma must be > 0"),
        (lambda: ad.smoothed_ce_binary(0.0, s=1, n_nodes=1), "n_nodes must be >= 2"),
        (lambda: ad.smoothed_ce_monte_carlo(np.zeros(2), 0, s=1, n_samples=5,
                                            rng=np.random.default_rng()), "n_samples must be an even"),
        (lambda: ad.smoothed_ce_weight_space(np.zeros((2, 3)), np.zeros(4), 0, sigma=1, n_samples=10,
                                             rng=np.random.default_rng()), "W must be"),
    ],
)
def test_bad_input_names_the_parameter(call, match):
    with pytest.raises(ValueError, match=match):
        call()
