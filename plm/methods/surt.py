"""SURT's first stage: continued masked-LM training of an encoder on the task's own texts.

The result is saved under ``$BOUNDBENCH_CACHE`` (default ``~/.cache/boundbench/surt``) keyed by a
hash of the model, the texts and the settings, so a sweep over seeds of the fine-tuning stage
pre-trains once per SURT seed.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from pathlib import Path

import numpy as np
import torch

from boundbench.framework.files.atomic import cache_dir, key_lock, set_aside, sha256_file
from boundbench.plm.models import pick_device, resolve_model


def _cache_dir() -> Path:
    return cache_dir("surt")


def continue_pretraining(model_name: str, texts: list[str], *, steps: int = 200,
                         lr: float = 5e-5, mask_prob: float = 0.15, batch_size: int = 16,
                         max_length: int = 128, seed: int = 0,
                         device: str | torch.device | None = None) -> str:
    """Masked-LM training of ``model_name`` on ``texts`` for ``steps`` steps on ``device``
    (None: CUDA when present); returns the path of the saved encoder (loadable by
    :func:`plm.models.load_classifier`). The stage is cached by its settings, and by the
    device type where that is not the CPU (a GPU's sums differ in their last bits)."""
    dev = pick_device(device)
    path = resolve_model(model_name)
    settings: list = [path, steps, lr, mask_prob, batch_size, max_length, seed,
                      hashlib.sha256("\n".join(texts).encode()).hexdigest()]
    if dev.type != "cpu":  # the CPU keys stay those of the stages already cached
        settings.append(dev.type)
    key = hashlib.sha256(json.dumps(settings).encode()).hexdigest()[:16]
    out = _cache_dir() / key
    with key_lock(out):  # one process trains a key; a second waits and reuses it
        if _verified(out):
            return str(out)
        return _train(path, out, texts, steps=steps, lr=lr, mask_prob=mask_prob,
                      batch_size=batch_size, max_length=max_length, seed=seed, device=dev)


def _verified(out: Path) -> bool:
    """Whether ``out`` holds a complete saved stage: ``surt.json`` (written last) whose weights
    hash matches; a folder that fails is set aside (and recomputed by the caller)."""
    if not out.exists():
        return False
    meta = out / "surt.json"
    try:
        want = json.loads(meta.read_text())["weights_sha256"]
        ok = sha256_file(out / "model.safetensors") == want
    except (OSError, ValueError, KeyError, TypeError):
        ok = False
    if not ok:
        set_aside(out, "incomplete or altered SURT stage (no surt.json, or weights that do not "
                  "match its sha256)")
    return ok


def _train(path: str, out: Path, texts: list[str], *, steps: int, lr: float, mask_prob: float,
           batch_size: int, max_length: int, seed: int, device: torch.device) -> str:
    from boundbench.plm.models import _require_transformers

    _require_transformers()  # the load reports off: the first stage of a process is one too
    from transformers import AutoTokenizer, BertForMaskedLM, DataCollatorForLanguageModeling

    tok = AutoTokenizer.from_pretrained(path, local_files_only=True)
    torch.manual_seed(seed)
    # the MLM head (cls.predictions) is missing from the checkpoint: freshly initialized, its
    # decoder tied to the input embeddings by BERT's tie_word_embeddings
    mlm = BertForMaskedLM.from_pretrained(path, local_files_only=True)
    torch.nn.Module.to(mlm, device)  # in place (transformers types .to for dtypes only)
    collate = DataCollatorForLanguageModeling(tok, mlm_probability=mask_prob)
    opt = torch.optim.AdamW(mlm.parameters(), lr=lr)
    rng = np.random.default_rng(seed)
    mlm.train()
    for _ in range(steps):
        idx = rng.integers(0, len(texts), batch_size)
        enc = tok([texts[i] for i in idx], truncation=True, max_length=max_length)
        # the masks are drawn on the CPU (torch's global generator, seeded above), so a GPU
        # stage masks the same tokens as a CPU one
        batch = collate([{k: enc[k][j] for k in enc} for j in range(len(idx))])
        batch = {k: v.to(device) for k, v in batch.items()}
        loss = mlm(**batch).loss
        opt.zero_grad()
        loss.backward()
        opt.step()
    # back to the CPU before the folder exists (a failed copy leaves none); then saved into a
    # temporary folder, hashed and renamed: a killed save leaves no stage behind
    torch.nn.Module.to(mlm, "cpu")
    tmp = out.with_name(f".{out.name}.{os.getpid()}.tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    mlm.bert.save_pretrained(tmp)
    tok.save_pretrained(tmp)
    (tmp / "surt.json").write_text(json.dumps({
        "base": path, "steps": steps, "lr": lr, "mask_prob": mask_prob, "seed": seed,
        "n_texts": len(texts), "weights_sha256": sha256_file(tmp / "model.safetensors")}))
    os.replace(tmp, out)
    return str(out)
