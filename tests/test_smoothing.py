"""Property tests of the activation-decay results (theory.smoothing)."""

import numpy as np
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st
from scipy import integrate
from scipy.special import softmax

from boundbench.theory import smoothing as sm
from boundbench.theory.claims.smoothing import stein_smoothed_hessian

H_ = st.floats(1e-2, 1e2)
EPS = st.floats(1e-3, 1e2)
SIG = st.floats(1e-3, 1e2)


@given(H_, EPS, SIG)
def test_cor1_consequences(H, eps, sigma):
    rhs = sm.cor1_rhs(H=H, eps=eps, sigma=sigma)
    assert 0 <= rhs <= H * (1 + 1e-12)
    assert rhs <= np.sqrt(2 / np.pi) * eps / sigma * (1 + 1e-12)
    assert rhs <= sm.cor1_simple_bound(H=H, eps=eps, sigma=sigma) * (1 + 1e-12)


@given(H_, EPS, st.lists(SIG, min_size=2, max_size=10))
def test_cor1_is_nonincreasing_in_sigma(H, eps, sigmas):
    s = np.sort(np.array(sigmas))
    rhs = sm.cor1_rhs(H=H, eps=eps, sigma=s)
    assert np.all(np.diff(rhs) <= 1e-12 * H)


@given(H_, EPS, SIG)
def test_cor1_equals_the_smoothed_huber_hessian_at_zero(H, eps, sigma):
    rhs = sm.cor1_rhs(H=H, eps=eps, sigma=sigma)
    assert sm.huber_smoothed_hessian(0.0, H=H, eps=eps, sigma=sigma) == pytest.approx(rhs, rel=1e-12, abs=1e-300)
    assert stein_smoothed_hessian(0.0, H=H, eps=eps, sigma=sigma) == pytest.approx(rhs, rel=1e-9, abs=1e-12 * H)


@given(H_, EPS, SIG, st.floats(-50, 50))
def test_smoothed_huber_stays_below_the_bound(H, eps, sigma, theta):
    rhs = sm.cor1_rhs(H=H, eps=eps, sigma=sigma)
    assert sm.huber_smoothed_hessian(theta, H=H, eps=eps, sigma=sigma) <= rhs * (1 + 1e-12) + 1e-300


@pytest.mark.parametrize("theta,H,eps,sigma", [(0.0, 1, .1, .05), (0.3, 4, .3, .2), (1.5, 2, 1, .01),
                                               (0.0, 10, 0.01, 10.0)])
def test_stein_quadrature_matches_adaptive_quadrature(theta, H, eps, sigma):
    def f(t):
        return float(sm.huber_grad(theta + t, H=H, eps=eps)) * t * np.exp(-t**2 / (2 * sigma**2)) / np.sqrt(2 * np.pi) / sigma

    ref = integrate.quad(f, -40 * sigma, 40 * sigma, points=[-eps / H - theta, eps / H - theta, 0.0],
                         epsabs=1e-15, epsrel=1e-13, limit=500)[0] / sigma**2
    assert stein_smoothed_hessian(theta, H=H, eps=eps, sigma=sigma) == pytest.approx(ref, rel=1e-9, abs=1e-13)
    assert sm.huber_smoothed_hessian(theta, H=H, eps=eps, sigma=sigma) == pytest.approx(ref, rel=1e-9, abs=1e-13)


def test_cor1_extract_values():
    # the extract's C2 check: equality for these (H, eps, sigma)
    for H, eps, sigma in [(1, .1, .05), (1, .1, .5), (4, .3, .2), (2, 1, .01)]:
        assert stein_smoothed_hessian(0.0, H=H, eps=eps, sigma=sigma) == pytest.approx(
            float(sm.cor1_rhs(H=H, eps=eps, sigma=sigma)), rel=1e-9)


logits_st = st.integers(2, 12).flatmap(
    lambda c: st.tuples(st.just(c), st.integers(0, c - 1), st.integers(0, 2**32 - 1)))


@given(logits_st, st.floats(0.0, 3.0))
def test_thm2_sandwich_and_taylor(cys, s):
    c, y, seed = cys
    z = np.random.default_rng(seed).standard_normal(c) * 3
    ce = sm.cross_entropy(z, y)
    upper = sm.thm2_rhs(z, y, s=s)
    taylor = sm.thm3_taylor(z, y, s=s)
    assert ce <= taylor <= upper + 1e-12
    assert upper - ce == pytest.approx(s**2 / 2)


@given(st.floats(-12, 12), st.floats(0.0, 3.0))
def test_exact_binary_smoothed_ce_is_sandwiched(m, s):
    z = np.array([m, 0.0])
    exact = sm.smoothed_ce_binary(m, s=s)
    assert sm.cross_entropy(z, 0) <= exact * (1 + 1e-12) + 1e-15
    assert exact <= sm.thm2_rhs(z, 0, s=s) * (1 + 1e-12) + 1e-15


@pytest.mark.filterwarnings("ignore::scipy.integrate.IntegrationWarning")
@pytest.mark.parametrize("m,s", [(0.0, 0.5), (3.0, 1.0), (-4.0, 2.5), (0.0, 3.0), (4.0, 3.0), (8.0, 0.1)])
def test_gauss_hermite_matches_adaptive_quadrature(m, s):
    ref = integrate.quad(lambda u: np.logaddexp(0, -m + np.sqrt(2) * s * u) * np.exp(-u**2 / 2) / np.sqrt(2 * np.pi),
                         -40, 40, points=[m / (np.sqrt(2) * s)], epsabs=1e-15, epsrel=1e-14, limit=1000)[0]
    assert sm.smoothed_ce_binary(m, s=s) == pytest.approx(ref, rel=1e-11)


def test_theorem3_sign_examples_from_the_extract():
    def err(m, s):
        return float(sm.thm3_taylor(np.array([m, 0.0]), 0, s=s) - sm.smoothed_ce_binary(m, s=s))

    assert err(3.0, 0.5) == pytest.approx(-1.0e-3, rel=0.05)  # confident: under-estimates
    assert err(0.0, 0.5) == pytest.approx(3.4e-3, rel=0.05)  # at the boundary: over-estimates
    assert err(0.0, 1.0) == pytest.approx(4.05e-2, rel=0.02)
    assert err(-6.0, 1.0) == pytest.approx(-1.65e-3, rel=0.05)


def test_monte_carlo_agrees_with_quadrature_and_weight_space():
    rng = np.random.default_rng(0)
    m, s = 1.3, 0.8
    mean, se = sm.smoothed_ce_monte_carlo(np.array([m, 0.0]), 0, s=s, n_samples=200_000, rng=rng)
    assert abs(mean - sm.smoothed_ce_binary(m, s=s)) < 4 * se
    # weight space with ||h|| = s / sigma gives the same logit noise
    W = np.array([[m, 0.0, 0.0], [0.0, 0.0, 0.0]])
    sigma = 0.4
    h = np.array([1.0, 0.0, 0.0]) * (s / sigma)
    W[0, 0] = m / h[0]
    wmean, wse = sm.smoothed_ce_weight_space(W, h, 0, sigma=sigma, n_samples=200_000, rng=rng)
    assert abs(wmean - sm.smoothed_ce_binary(m, s=s)) < 4 * wse


@given(st.integers(0, 2**32 - 1), st.integers(2, 6))
def test_cross_entropy_matches_torch(seed, c):
    rng = np.random.default_rng(seed)
    z = rng.standard_normal((5, c)) * 10
    y = rng.integers(0, c, 5)
    ref = torch.nn.functional.cross_entropy(torch.tensor(z), torch.tensor(y), reduction="none")
    np.testing.assert_allclose(sm.cross_entropy(z, y), ref.numpy(), rtol=1e-12, atol=1e-12)


def test_taylor_uses_one_minus_squared_probabilities():
    z = np.array([1.0, -0.5, 2.0])
    p = softmax(z)
    assert sm.thm3_taylor(z, 2, s=0.3) == pytest.approx(
        float(sm.cross_entropy(z, 2)) + 0.045 * np.sum(p * (1 - p)))


def test_gelu_lipschitz_constant():
    assert sm.GELU_LIPSCHITZ == pytest.approx(1.128904, abs=1e-6)
    x = torch.linspace(-6, 6, 120_001, dtype=torch.float64, requires_grad=True)
    (g,) = torch.autograd.grad(torch.nn.functional.gelu(x).sum(), x)
    assert g.max().item() == pytest.approx(sm.GELU_LIPSCHITZ, abs=1e-9)
    assert g.max().item() > 1.0  # not 1-Lipschitz


@pytest.mark.parametrize(
    "call, match",
    [
        (lambda: sm.cor1_rhs(H=1, eps=1, sigma=0), "sigma must be > 0"),
        (lambda: sm.cor1_rhs(H=1, eps=1, sigma=-0.1), "sigma must be > 0"),
        (lambda: sm.cor1_rhs(H=0, eps=1, sigma=1), "H must be > 0"),
        (lambda: sm.cor1_simple_bound(H=1, eps=-1, sigma=1), "eps must be >= 0"),
        (lambda: sm.huber_smoothed_hessian(0, H=1, eps=1, sigma=np.inf), "sigma must be finite"),
        (lambda: sm.thm2_rhs(np.zeros(3), 3, s=1), r"y must lie in \[0, 2\]"),
        (lambda: sm.thm2_rhs(np.zeros(3), 0, s=-1), "s must be >= 0"),
        (lambda: sm.logit_noise_scale(np.ones(3), sigma=0), "sigma must be > 0"),
        (lambda: sm.smoothed_ce_binary(0.0, s=1, n_nodes=1), "n_nodes must be >= 2"),
        (lambda: sm.smoothed_ce_monte_carlo(np.zeros(2), 0, s=1, n_samples=5,
                                            rng=np.random.default_rng()), "n_samples must be an even"),
        (lambda: sm.smoothed_ce_weight_space(np.zeros((2, 3)), np.zeros(4), 0, sigma=1, n_samples=10,
                                             rng=np.random.default_rng()), "W must be"),
    ],
)
def test_bad_input_names_the_parameter(call, match):
    with pytest.raises(ValueError, match=match):
        call()
