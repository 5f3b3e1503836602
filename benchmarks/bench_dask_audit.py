"""The audit's wall time, serial vs a local Dask cluster (``--workers N``), on the theory and
synthetic claims (no fine-tuning), each from an empty cache; with the parallel efficiency
``serial / (N * parallel)``.

    python benchmarks/bench_dask_audit.py [--workers 2] [--scale quick]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from boundbench import catalogue
from boundbench.audit import run_audit


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--scale", default="quick")
    args = ap.parse_args()
    catalogue.load()
    ids = [c for c in catalogue.registry() if ".plm." not in c and ".features." not in c]
    root = Path(tempfile.mkdtemp(prefix="bench-dask-"))
    t0 = time.perf_counter()
    serial = run_audit(out_dir=root / "serial", only=ids, scale=args.scale, progress=False)
    t_serial = time.perf_counter() - t0
    t0 = time.perf_counter()
    par = run_audit(out_dir=root / "dask", only=ids, scale=args.scale, progress=False,
                    workers=args.workers)
    t_par = time.perf_counter() - t0
    pairs = list(zip(serial["claims"], par["claims"], strict=True))
    same = [(a["verdict"], a["evidence"]) == (b["verdict"], b["evidence"]) for a, b in pairs]
    verdicts = sum(a["verdict"] == b["verdict"] for a, b in pairs)
    rel = 0.0  # numbers that differ: torch's reductions on 1 thread (a worker) vs 2 (serial)
    for a, b in pairs:
        for k, x in a["evidence"].items():
            y = b["evidence"].get(k)
            if isinstance(x, float) and isinstance(y, float) and x != y:
                rel = max(rel, abs(x - y) / max(abs(x), abs(y)))
    print(f"{len(ids)} theory/synthetic claims at {args.scale} scale")
    print(f"serial: {t_serial:6.1f} s   --workers {args.workers}: {t_par:6.1f} s (cluster start "
          f"included)   speed-up {t_serial / t_par:.2f}x   parallel efficiency "
          f"{t_serial / (args.workers * t_par):.0%}")
    errors = [b["id"] for _, b in pairs if b.get("error")]
    print(f"checks that raised on the cluster: {errors or 'none'}")
    print(f"verdicts identical: {verdicts}/{len(pairs)}; evidence identical: {sum(same)}/"
          f"{len(same)}, largest relative difference elsewhere {rel:.1e}")


if __name__ == "__main__":
    main()
