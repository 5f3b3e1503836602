"""Package version and the environment a result was computed in."""

from __future__ import annotations

import functools
import importlib.metadata
import platform
from collections.abc import Mapping
from typing import Any

# part of every cache key beside the package version: bump it with any change that alters a
# cached table (a generator, a solver, a trainer), so no cache from before serves stale numbers
# (the package version alone did not change across such edits). 2: make_separable's exact margin;
# 3: generators draw from the seed alone (no SVD/QR basis, libm's pow), issue 37
RESULTS_VERSION = 3


def version() -> str:
    try:
        return importlib.metadata.version("boundbench")
    except importlib.metadata.PackageNotFoundError:  # running from a source tree
        return "0+unknown"


def environment() -> dict[str, str]:
    """Versions of Python and of the numerical packages results depend on."""
    env = {"boundbench": version(), "python": platform.python_version()}
    for pkg in ("numpy", "scipy", "torch", "cvxpy", "clarabel", "pandas", "transformers"):
        try:
            env[pkg] = importlib.metadata.version(pkg)
        except importlib.metadata.PackageNotFoundError:
            continue
    return env


def lock() -> dict[str, object]:
    """The dependency lock the install used (``constraints.txt`` at the repository root, pip
    constraints): its SHA-256, and the pins the installed packages do not match (none on an
    install made with it). ``{"lock": None}`` outside a checkout (an installed wheel)."""
    import hashlib
    import re
    from pathlib import Path

    path = Path(__file__).resolve().parents[4] / "constraints.txt"
    if not path.is_file():
        return {"lock": None}
    text = path.read_text()
    differ = []
    for line in text.splitlines():
        m = re.match(r"^([A-Za-z0-9_.\-]+)==([^\s;#]+)", line.strip())
        if not m:
            continue
        try:
            have = importlib.metadata.version(m.group(1))
        except importlib.metadata.PackageNotFoundError:
            differ.append(f"{m.group(1)} (not installed)")
            continue
        if have.split("+")[0] != m.group(2):
            differ.append(f"{m.group(1)} {have} (lock {m.group(2)})")
    return {"lock": path.name, "lock_sha256": hashlib.sha256(text.encode()).hexdigest(),
            "lock_pins_not_matched": differ}


def machine() -> dict[str, object]:
    """The CPU the numbers were computed on, as far as it changes their last bits: its model,
    the instruction sets kernels dispatch on, numpy's SIMD targets in use and the BLAS kernel
    (OpenBLAS picks its core type by CPU, numpy its power/exp/log by AVX-512 vs AVX2)."""
    import os

    info: dict[str, object] = {"machine": platform.machine(), "processor": platform.processor()}
    try:
        with open("/proc/cpuinfo") as f:
            text = f.read()
        for line in text.splitlines():
            if line.startswith("model name") and "cpu_model" not in info:
                info["cpu_model"] = line.split(":", 1)[1].strip()
            if line.startswith("flags") and "instruction_sets" not in info:
                flags = set(line.split(":", 1)[1].split())
                info["instruction_sets"] = sorted(f for f in flags if f.startswith(
                    ("sse", "ssse", "avx", "fma", "amx")) or f in ("f16c", "bmi2", "popcnt"))
    except OSError:
        pass
    try:  # numpy's private module, imported by name (it ships no type stubs)
        import importlib

        umath = importlib.import_module("numpy._core._multiarray_umath")
        info["numpy_simd"] = [f for f in umath.__cpu_dispatch__ if umath.__cpu_features__.get(f)]
    except (ImportError, AttributeError):
        pass
    try:
        from threadpoolctl import threadpool_info

        # sorted: threadpoolctl lists libraries in load order, which differs between runs
        info["blas"] = sorted(f"{p.get('internal_api')} {p.get('version')} "
                              f"{p.get('architecture')}"
                              for p in threadpool_info() if p.get("user_api") == "blas")
    except ImportError:
        pass
    for var in ("OPENBLAS_CORETYPE", "NPY_DISABLE_CPU_FEATURES", "ATEN_CPU_CAPABILITY"):
        if os.environ.get(var):
            info[var] = os.environ[var]
    info.update(gpus())
    return info


def gpus() -> dict[str, object]:
    """The CUDA devices torch sees (their names, the CUDA version torch was built with), for a
    record of the machine: fine-tuning runs on the first of them when there is one. Empty
    without torch imported (nothing here imports it) or without a CUDA device."""
    import sys

    torch = sys.modules.get("torch")
    try:
        if torch is None or not torch.cuda.is_available():
            return {}
        return {"gpus": [torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())],
                "cuda": torch.version.cuda}
    except (RuntimeError, AttributeError):  # a broken driver: the record says none
        return {}


@functools.cache
def commit() -> str | None:
    """The git commit of the source tree the package runs from, or ``None`` outside a checkout
    (an installed wheel): part of every claim's run record and figure caption. Asked of git
    once per process (each claim asked twice, a subprocess each time)."""
    import subprocess
    from pathlib import Path

    here = Path(__file__).resolve().parent
    try:
        r = subprocess.run(["git", "-C", str(here), "rev-parse", "--short=12", "HEAD"],
                           capture_output=True, text=True, timeout=5)
    except (OSError, subprocess.SubprocessError):
        return None
    return r.stdout.strip() or None if r.returncode == 0 else None


def compute_context() -> dict[str, str]:
    """Where numbers are computed, as far as it changes them: the accelerator a computation
    would use by default (a table computed on a GPU is not served to a CPU run, nor the other
    way round), whether TF32 matmuls are allowed and whether autocast is on. Part of every
    cache key and every result's record."""
    import torch

    cuda = torch.cuda.is_available()
    ctx = {"device": f"cuda ({torch.cuda.get_device_name(0)})" if cuda else "cpu",
           "tf32": str(bool(torch.backends.cuda.matmul.allow_tf32)),
           "autocast": str(torch.is_autocast_enabled())}
    return ctx


def figure_provenance(*, claim_id: str, seed: int, scale: str, out_dir: object,
                      config: object, datasets: int | None = None,
                      formats: tuple[str, ...] = ("png",)) -> dict[str, str]:
    """How to remake a claim's figure, for its caption and its file's metadata: the command
    (``boundbench figures`` for that claim, seed, scale and folder), the commit, a hash of what
    the figure was computed from (claim, seed, scale and the check's config) and the package
    versions. Nothing in it changes between two runs of the command, so a remade figure is the
    same file, byte for byte."""
    import hashlib
    import json

    cmd = f"boundbench figures --scale {scale} --seed {seed} --only {claim_id} --out {out_dir}"
    if datasets is not None:
        cmd += f" --datasets {datasets}"
    if tuple(formats) != ("png",):
        cmd += " --format " + " ".join(formats)
    what = json.dumps({"claim": claim_id, "seed": seed, "scale": scale, "config": config},
                      sort_keys=True, default=str)
    return {"command": cmd, "commit": commit() or "unknown",
            "config_hash": hashlib.sha256(what.encode()).hexdigest()[:12],
            "versions": ", ".join(f"{k} {v}" for k, v in environment().items())}


def provenance_text(p: dict[str, str]) -> str:
    """A provenance record in one line (a caption, a file's description field)."""
    return (f"Remake: {p['command']} (commit {p['commit']}, config {p['config_hash']}; "
            f"{p['versions']})")


def machine_line(meta: Mapping[str, Any]) -> list[str]:
    """Where the audit ran and with which lock, as the report's second line: the CPU, any GPU
    (fine-tuning trains on it), the BLAS kernel, numpy's SIMD targets, and the lock's hash with
    any pin the install did not match."""
    m = meta.get("machine") or {}
    if not m and not meta.get("lock_sha256"):
        return []
    parts = [f"CPU {m.get('cpu_model', 'unknown')}"]
    if m.get("gpus"):
        parts.append(f"GPU {', '.join(m['gpus'])} (CUDA {m.get('cuda')})")
    if m.get("blas"):
        parts.append(f"BLAS {', '.join(sorted(m['blas']))}")  # older records: load order
    if m.get("numpy_simd") is not None:
        parts.append(f"numpy SIMD {' '.join(m['numpy_simd']) or 'baseline only'}")
    if meta.get("lock_sha256"):
        off = meta.get("lock_pins_not_matched") or []
        parts.append(f"lock constraints.txt sha256 {meta['lock_sha256'][:12]}"
                     + (f", {len(off)} pin(s) not matched: {', '.join(off[:5])}" if off
                        else ", every pin matched"))
    return ["Machine: " + "; ".join(parts) + "."]
