"""The shared method interface: every penalty reaches the gradients."""

import pytest
import torch

from boundbench.synthetic.methods import ActivationDecay, Forward, JacobianPenalty, Method


def _forward(S=2, requires_inputs=False):
    g = torch.Generator().manual_seed(0)
    W1 = torch.randn(S, 8, 4, generator=g, dtype=torch.float64, requires_grad=True)
    W2 = torch.randn(S, 3, 8, generator=g, dtype=torch.float64, requires_grad=True)
    x = torch.randn(S, 5, 4, generator=g, dtype=torch.float64, requires_grad=requires_inputs)

    def fn(inp):
        return torch.einsum("sch,snh->snc", W2, torch.tanh(torch.einsum("shd,snd->snh", W1, inp)))

    h = torch.tanh(torch.einsum("shd,snd->snh", W1, x))
    fwd = Forward(logits=torch.einsum("sch,snh->snc", W2, h), features=h,
                  inputs=x if requires_inputs else None, fn=fn if requires_inputs else None)
    return fwd, W1, W2


def test_activation_decay_is_the_theorem2_offset_per_model():
    fwd, W1, _ = _forward()
    pen = ActivationDecay(torch.tensor([0.0, 0.3])).penalty(fwd)
    expected = 0.5 * 0.09 * fwd.features[1].pow(2).sum(-1).mean()
    torch.testing.assert_close(pen, torch.stack([torch.zeros((), dtype=pen.dtype), expected]))
    (g,) = torch.autograd.grad(pen.sum(), W1)
    assert g[0].abs().sum() == 0 and g[1].abs().sum() > 0


def test_jacobian_penalty_reaches_the_parameters():
    fwd, W1, W2 = _forward(requires_inputs=True)
    pen = JacobianPenalty(torch.tensor([0.1, 0.1]), n_proj=2).penalty(fwd)
    assert pen.shape == (2,)
    g1, g2 = torch.autograd.grad(pen.sum(), [W1, W2])
    assert g1.abs().sum() > 0 and g2.abs().sum() > 0


def test_plain_method_and_bad_input():
    fwd, _, _ = _forward()
    assert Method().penalty(fwd) == 0.0
    with pytest.raises(ValueError, match="sigma must be >= 0"):
        ActivationDecay(-1.0)
    with pytest.raises(ValueError, match="needs Forward.inputs"):
        JacobianPenalty(0.1).penalty(fwd)
