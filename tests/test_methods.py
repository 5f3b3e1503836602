"""The shared method interface: every penalty reaches the gradients; names, arguments and types
are read at the edge against each method's frozen dataclass."""

import dataclasses

import pytest
import torch

from boundbench.methods import Forward, Method
from boundbench.methods.penalties import ActivationDecay, JacobianPenalty
from boundbench.plm.methods import METHODS


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
    pen = ActivationDecay(torch.tensor([0.0, 0.3])).penalty(fwd, {})
    expected = 0.5 * 0.09 * fwd.features[1].pow(2).sum(-1).mean()
    torch.testing.assert_close(pen, torch.stack([torch.zeros((), dtype=pen.dtype), expected]))
    (g,) = torch.autograd.grad(pen.sum(), W1)
    assert g[0].abs().sum() == 0 and g[1].abs().sum() > 0


def test_jacobian_penalty_reaches_the_parameters():
    fwd, W1, W2 = _forward(requires_inputs=True)
    method = JacobianPenalty(torch.tensor([0.1, 0.1]), n_proj=2)
    pen = method.penalty(fwd, method.init_state(fwd, seed=0))
    assert pen.shape == (2,)
    g1, g2 = torch.autograd.grad(pen.sum(), [W1, W2])
    assert g1.abs().sum() > 0 and g2.abs().sum() > 0


def test_plain_method_and_bad_input():
    fwd, _, _ = _forward()
    assert Method().penalty(fwd, {}) == 0.0
    with pytest.raises(ValueError, match="sigma must be >= 0"):
        ActivationDecay(-1.0)
    with pytest.raises(ValueError, match="needs Forward.inputs"):
        JacobianPenalty(0.1).penalty(fwd, {})


def test_methods_are_frozen_configs():
    m = METHODS.parse("mhloss:heads=5")
    with pytest.raises(dataclasses.FrozenInstanceError):
        m.heads = 7
    assert m.heads == 5 and m.name == "mhloss"


@pytest.mark.parametrize("name", METHODS.names())
def test_every_method_records_what_was_asked(name):
    """A spec's arguments reach the method unchanged (no default overrides them), and the
    recorded description carries them."""
    default = METHODS.from_config(name)
    cls = type(default)
    changed = {}
    for f in dataclasses.fields(cls):
        if not f.init or f.name == "mode":
            continue
        v = getattr(default, f.name)
        if isinstance(v, bool):
            changed[f.name] = not v
        elif isinstance(v, int):
            changed[f.name] = v + 1
        elif isinstance(v, float):
            changed[f.name] = round(v * 0.5, 12)
        elif isinstance(v, tuple):
            changed[f.name] = tuple(round(x * 0.5, 12) for x in v)
    asked = METHODS.from_config(name, changed)
    recorded = asked.describe()
    assert recorded["method"] == name
    for k, v in changed.items():
        assert getattr(asked, k) == v
        assert recorded[k] == (list(v) if isinstance(v, tuple) else v)
    assert METHODS.parse(METHODS.spec(asked)) == asked  # the spec is a faithful round trip


def test_inline_arguments_are_typed_and_checked():
    assert METHODS.parse("uegr:rates=[0.3,0.5],reading=as-written").rates == (0.3, 0.5)
    assert METHODS.parse("jachess-unlab:layer_weights=uniform,dims=5").dims == 5
    assert METHODS.parse("jachess-unlab:dims=5").mode == "unlab"
    assert METHODS.parse("jachess:reg_batch=none").reg_batch is None
    with pytest.raises(ValueError, match="'heads' must be an integer"):
        METHODS.parse("mhloss:heads=abc")
    with pytest.raises(ValueError, match="'heads' must be an integer"):
        METHODS.parse("mhloss:heads=2.5")
    with pytest.raises(ValueError, match="has no parameter 'head'"):
        METHODS.parse("mhloss:head=5")
    with pytest.raises(ValueError, match="has no parameter 'mode'"):
        METHODS.parse("jachess-unlab:mode=train")
    with pytest.raises(ValueError, match="layer_weights.*must be one of"):
        METHODS.parse("jachess:layer_weights=nope")
    with pytest.raises(ValueError, match="unknown method"):
        METHODS.parse("jachesss")
    with pytest.raises(ValueError, match="expected name:key=value"):
        METHODS.parse("sam:0.1")
    with pytest.raises(ValueError, match="unbalanced"):
        METHODS.parse("uegr:rates=[0.3,0.5")
