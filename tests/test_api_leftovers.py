"""The API leftovers of issue 65, item 11: each refused in a message naming the argument (each
failed before: a MemoryError, torch's "mat1 and mat2", an IndexError, an AttributeError, a
silent NaN or infinity, numpy's broadcast message, a message that did not name ``y``)."""

import numpy as np
import pytest
import torch

from boundbench.framework.inputs.validate import MAX_SEED, Rng, SizeError, checked
from boundbench.synthetic.data import make_separable
from boundbench.synthetic.svm import HardMarginSVM, hard_margin_loo
from boundbench.theory.activation_decay import antithetic_mean, smoothed_ce_binary
from boundbench.theory.fu import lemma_a21_sides
from boundbench.theory.norms import hessian_frobenius, jacobian_frobenius
from boundbench.theory.operators import HessianOperator


def test_sizes_beyond_memory_are_refused_naming_the_sizes():
    with pytest.raises(SizeError, match=r"make_separable\(n_datasets=1000000, n=1000000"):
        make_separable(n_datasets=10**6, n=10**6, d=2, margin=0.1, bound=1.0)
    with pytest.raises(SizeError, match="n_nodes=1000000000000000"):
        smoothed_ce_binary(np.ones(3), s=1.0, n_nodes=10**15)
    with pytest.raises(ValueError, match="steps must be <= 1,000,000,000"):
        from boundbench.synthetic.pools import PoolHeads

        PoolHeads(heads=(1,), steps=10**15)


def test_errors_inside_a_users_function_name_x_and_f():
    W = torch.randn(3, 2, dtype=torch.float64)

    def f(z):
        return torch.tanh(z @ W)

    x = torch.randn(4, 3, dtype=torch.float64)
    for fn in (jacobian_frobenius, hessian_frobenius):
        with pytest.raises(ValueError, match=r"f\(x\) failed for x of shape \(4, 5\)"):
            fn(f, torch.randn(4, 5, dtype=torch.float64))
        with pytest.raises(ValueError, match="dtype torch.float32"):
            fn(f, x.float())
    with pytest.raises(ValueError, match="dims must be output indices < m = 2"):
        hessian_frobenius(f, x, dims=[100])
    with pytest.raises(ValueError, match="event_dims must be <= x.ndim = 2"):
        jacobian_frobenius(f, x, event_dims=10**15)
    with pytest.raises(TypeError, match="f must return a tensor"):
        hessian_frobenius(lambda z: 1.0, x)


def test_hessian_operator_for_model_checks_names_and_inputs_at_construction():
    model = torch.nn.Linear(3, 2)
    X = torch.randn(5, 3)

    def loss(out):
        return out.pow(2).mean()

    assert HessianOperator.for_model(model, loss, X).dense().shape == (8, 8)
    with pytest.raises(TypeError, match="names must be a list of parameter names"):
        HessianOperator.for_model(model, loss, X, names=3)
    with pytest.raises(ValueError, match="names must name at least one parameter"):
        HessianOperator.for_model(model, loss, X, names=[])
    with pytest.raises(TypeError, match="inputs must be a torch.Tensor"):
        HessianOperator.for_model(model, loss, X.numpy())
    with pytest.raises(ValueError, match=r"the model fails on inputs of shape \(5, 4\)"):
        HessianOperator.for_model(model, loss, torch.randn(5, 4))
    with pytest.raises(ValueError, match="the loss must be a scalar"):
        HessianOperator.for_model(model, lambda o: o, X)


def test_antithetic_mean_names_a_bad_f():
    with pytest.raises(ValueError, match="f must return one row per draw"):
        antithetic_mean(lambda z: 1.0, (3,), n_samples=100, rng=0)
    with pytest.raises(ValueError, match="f returned 50 non-finite values"):
        antithetic_mean(lambda z: np.full(len(z), np.nan), (3,), n_samples=100, rng=0)


def test_shapes_that_do_not_broadcast_are_named():
    with pytest.raises(ValueError, match=r"shapes do not broadcast: x \(3, 4\), y \(5,\)"):
        lemma_a21_sides(np.ones((3, 4)), np.ones(5), r=1.0)
    with pytest.raises(ValueError, match=r"r \(3, 4\)"):
        lemma_a21_sides(np.ones((3, 4)), np.ones((3, 4)), r=np.ones((3, 4)))
    with pytest.raises(ValueError, match="x must have at least 1 dimension"):
        lemma_a21_sides(1.0, 1.0, r=1.0)


def test_the_svm_leftovers():
    X = np.array([[1.0, 0], [-1, 0], [2, 1], [-2, 1]])
    y = np.array([1.0, -1, 1, -1])
    svm = HardMarginSVM().fit(X, y)
    with pytest.raises(ValueError, match=r"X must have shape \(n, d\) or \(d,\)"):
        svm.predict(np.ones((1, 1, 1, 2)))
    with pytest.raises(ValueError, match="y must hold >= 2 points of each class.*1 positive"):
        hard_margin_loo(np.array([[1.0, 0], [-1, 0], [-2, 1], [-2, 2]]),
                        np.array([1.0, -1, -1, -1]))
    tiny = HardMarginSVM().fit(X * 1e-200, y)  # the fit stands (coef_ scales as 1/scale) ...
    assert np.all(np.isfinite(tiny.coef_)) and tiny.scale_ < 1e-190
    with pytest.raises(ValueError, match="dual_coef_ of X with magnitude near"):
        _ = tiny.dual_coef_  # ... its duals (about 1e400) are refused, never an infinity
    with pytest.raises(ValueError, match=r"X must have at least 1 feature \(got 0: shape "
                       r"\(20, 0\)\)"):
        HardMarginSVM().fit(np.ones((20, 0)), np.ones(20))


def test_rng_takes_a_generator_or_a_seed_and_says_so_everywhere():
    """One meaning everywhere: a parameter named ``rng`` takes a Generator or a seed in
    [0, MAX_SEED], annotated so; a checked function that annotates it otherwise fails at
    import (the maintainer's slip)."""
    a, _ = antithetic_mean(lambda z: z.sum(-1) ** 2, (3,), n_samples=100, rng=5)
    b, _ = antithetic_mean(lambda z: z.sum(-1) ** 2, (3,), n_samples=100,
                           rng=np.random.default_rng(5))
    assert a == b
    with pytest.raises(TypeError, match=f"seed in \\[0, {MAX_SEED}\\]"):
        antithetic_mean(lambda z: z.sum(-1), (3,), n_samples=100, rng=MAX_SEED + 1)
    with pytest.raises(TypeError, match="annotate it np.random.Generator | int"):
        @checked(rng=Rng())
        def draw(rng: np.random.Generator) -> float:
            return 0.0
