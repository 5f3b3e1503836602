"""Every public tensor function keeps to its inputs' device (issue 25; apart from
``test_gpu_standins.py`` since issue 67, which found that file over the house's 450 lines).
On ``meta`` (a stand-in for any accelerator) a function either computes there (its tensors
come back on ``meta``) or stops where data must leave the device (a float out, a host copy);
a CPU tensor made inside and mixed with the inputs is a device mismatch, which a GPU user
would meet as a crash. The validators are bypassed (``unchecked``): checking the values is a
host read by design, and the point is the body."""

from __future__ import annotations

import re

import pytest
import torch

from boundbench.theory import activation_decay as ad
from boundbench.theory import eigenvalues as eig
from boundbench.theory import norms
from boundbench.theory import operators as ops
from boundbench.theory import trace as tr


def _m(*shape):
    return torch.ones(*shape, dtype=torch.float64, device="meta")


def _meta_op():
    A = torch.diag(torch.tensor([3.0, 2.0, 1.0], dtype=torch.float64)).to("meta")
    return ops.HessianOperator(lambda p: 0.5 * p["w"] @ A @ p["w"], {"w": _m(3)})


def _selective_step():
    from boundbench.methods.optimizers import SelectiveUpdate

    w = torch.nn.Parameter(_m(4, 3))
    opt = SelectiveUpdate(torch.optim.SGD([w], lr=0.1), alpha=0.8, beta=5.0, flipped=True)
    w.grad = _m(4, 3)
    opt.step()
    return w


def _meta_calls():
    from boundbench.framework.inputs.validate import unchecked as bare
    from boundbench.plm.evaluation import evaluate as ev
    from boundbench.synthetic import train
    from boundbench.theory import uegr

    return {
        "norms.jacobian_frobenius": lambda: bare(norms.jacobian_frobenius)(
            torch.tanh, _m(2, 3), n_proj=2, seed=0),
        "norms.hessian_frobenius[count]": lambda: bare(norms.hessian_frobenius)(
            lambda x: x.pow(3), _m(2, 3), dims=2, n_proj=2, seed=0),
        "norms.hessian_frobenius[list]": lambda: bare(norms.hessian_frobenius)(
            lambda x: x.pow(3), _m(2, 3), dims=[0, 2], n_proj=2, seed=0),
        "activation_decay.last_layer_hessian": lambda: bare(ad.last_layer_hessian)(_m(4, 3), _m(2, 3)),
        "activation_decay.smoothed_last_layer_top_eig": lambda: bare(ad.smoothed_last_layer_top_eig)(
            _m(4, 3), _m(2, 3), sigma=0.1, n_mc=4, n_batches=2),
        "operators.HessianOperator.matvec": lambda: _meta_op().matvec(_m(3)),
        "operators.HessianOperator.matmat": lambda: _meta_op().matmat(_m(2, 3)),
        "operators.HessianOperator.dense": lambda: _meta_op().dense(),
        "eigenvalues.top_eigenvalue_power": lambda: eig.top_eigenvalue_power(_meta_op()),
        "eigenvalues.top_eigenvalue_lanczos": lambda: bare(eig.top_eigenvalue_lanczos)(
            _meta_op(), ncv=3),
        "activation_decay.thm1_terms": lambda: ad.thm1_terms([_m(3, 2), _m(2, 3)], _m(2),
                                                      activation="relu"),
        "activation_decay.thm1_sides": lambda: ad.thm1_sides([_m(3, 2), _m(2, 3)], _m(2),
                                                      activation="gelu"),
        "trace.trace_hutchinson": lambda: bare(tr.trace_hutchinson)(_meta_op(), n_probes=4),
        "trace.trace_hutchpp": lambda: bare(tr.trace_hutchpp)(_meta_op(), n_matvecs=9),
        "uegr.normalized_saliency": lambda: bare(uegr.normalized_saliency)(
            [_m(2), _m(1, 1)]),
        "uegr.keep_probability": lambda: bare(uegr.keep_probability)(
            _m(5), alpha=0.8, beta=5.0, flipped=True),
        "optimizers.SelectiveUpdate.step": _selective_step,
        "train.stable_lr[logistic]": lambda: train.stable_lr(_m(2, 5, 3), _m(2, 5), _m(2, 4, 3),
                                                             "logistic"),
        "train.stable_lr[exponential]": lambda: train.stable_lr(_m(2, 5, 3), _m(2, 5),
                                                                _m(2, 4, 3), "exponential"),
        # the fine-tuning diagnostics: each ends in a float or a numpy array (a host read)
        "evaluate.calibration": lambda: bare(ev.calibration)(_m(6, 2), _labels()),
        "evaluate.reliability": lambda: bare(ev.reliability)(_m(6, 2), _labels()),
        "evaluate.linear_cka": lambda: bare(ev.linear_cka)(_m(5, 3), _m(5, 2)),
        # stops at nonzero (data-dependent shape), before its CPU-drawn permutation is moved
        "evaluate.corrupt_tokens": lambda: bare(ev.corrupt_tokens)(
            _ids(), _ids(), rate=0.5, unk_id=3, special_ids=[0],
            generator=torch.Generator().manual_seed(0)),
    }


def _labels():
    return torch.tensor([0, 1, 0, 1, 1, 0], device="meta")


def _ids():
    return torch.ones(2, 5, dtype=torch.long, device="meta")


_MISMATCH = re.compile(r"same device|two devices|expected device|device (cpu|cuda)", re.I)


def _tensors(out):
    if isinstance(out, torch.Tensor):
        return [out]
    if isinstance(out, list | tuple):
        return [t for o in out for t in _tensors(o)]
    if isinstance(out, dict):
        return [t for o in out.values() for t in _tensors(o)]
    return []


@pytest.mark.parametrize("name", sorted(_meta_calls()))
def test_a_public_tensor_function_keeps_to_its_inputs_device(name):
    try:
        out = _meta_calls()[name]()
    except (RuntimeError, NotImplementedError) as exc:
        msg = str(exc)
        # torch words a device mismatch several ways ("same device", "two devices", "Tensor on
        # device cpu is not on the expected device meta"); none of them may appear
        assert "meta" in msg and not _MISMATCH.search(msg), msg
        return
    assert all(t.device.type == "meta" for t in _tensors(out)), name


def test_every_tensor_function_of_the_fuzzed_api_has_a_device_check():
    """A public function whose valid call (test_fuzz_api's CASES) takes a tensor is checked
    above, so a new one cannot skip the device check."""
    from test_fuzz_api import CASES

    def has_tensor(v):
        return isinstance(v, torch.Tensor) or (isinstance(v, list | tuple) and any(
            isinstance(t, torch.Tensor) for t in v))

    takes = {k for k, (_, kw) in CASES.items() if any(has_tensor(v) for v in kw.values())}
    takes |= {k for k, (fn, _) in CASES.items() if getattr(fn, "__name__", "") in (
        "top_eigenvalue_power", "top_eigenvalue_lanczos", "trace_hutchinson", "trace_hutchpp")}
    missing = takes - {n.split("[")[0] for n in _meta_calls()}
    assert not missing, missing
