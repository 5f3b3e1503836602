"""The audit's wall time, serial vs a local Dask cluster (``--workers N``), on the theory and
synthetic claims (no fine-tuning; ``--only`` names others), each from an empty cache; with the
parallel efficiency ``serial / (N * parallel)``, and whether both gave the same verdicts,
evidence and tables (a worker runs on ``cores / N`` torch threads, the serial run on the
machine's: a claim's numbers must not follow them).

    python benchmarks/bench_dask_audit.py [--workers 2] [--scale quick] [--only ID ...]
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
    ap.add_argument("--only", nargs="+", metavar="ID", help="claims (default: theory/synthetic)")
    args = ap.parse_args()
    catalogue.load()
    ids = args.only or [c for c in catalogue.registry()
                        if ".plm." not in c and ".features." not in c]
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
    rel = 0.0  # the largest relative difference of a number that differs (0: none does)
    for a, b in pairs:
        for k, x in a["evidence"].items():
            y = b["evidence"].get(k)
            if isinstance(x, float) and isinstance(y, float) and x != y:
                rel = max(rel, abs(x - y) / max(abs(x), abs(y)))
    tables = _compare_tables(root / "serial", root / "dask", ids)
    print(f"{len(ids)} claims at {args.scale} scale")
    print(f"serial: {t_serial:6.1f} s   --workers {args.workers}: {t_par:6.1f} s (cluster start "
          f"included)   speed-up {t_serial / t_par:.2f}x   parallel efficiency "
          f"{t_serial / (args.workers * t_par):.0%}")
    errors = [b["id"] for _, b in pairs if b.get("error")]
    print(f"checks that raised on the cluster: {errors or 'none'}")
    print(f"verdicts identical: {verdicts}/{len(pairs)}; evidence identical: {sum(same)}/"
          f"{len(same)}, largest relative difference elsewhere {rel:.1e}")
    print(f"tables identical (timing columns aside): {tables['same']}/{tables['n']}, largest "
          f"relative difference elsewhere {tables['rel']:.1e}"
          + (f" ({', '.join(tables['differ'])})" if tables["differ"] else ""))


def _compare_tables(a: Path, b: Path, ids: list[str]) -> dict:
    """How many of the claims' tables are equal in both folders, and the largest relative
    difference of a number in those that are not (columns named for seconds left out)."""
    import numpy as np
    import pandas as pd

    same, rel, differ, n = 0, 0.0, [], 0
    for cid in ids:
        if not (a / f"{cid}.csv").exists():
            continue  # a claim without a table (not-testable)
        n += 1
        x, y = pd.read_csv(a / f"{cid}.csv"), pd.read_csv(b / f"{cid}.csv")
        x, y = (t.drop(columns=[c for c in t.columns if "second" in c]) for t in (x, y))
        if x.equals(y):
            same += 1
            continue
        differ.append(cid)
        for c in x.columns:
            if x[c].dtype.kind == "f" and c in y and not x[c].equals(y[c]):
                d = np.abs(x[c] - y[c]) / np.maximum(np.abs(x[c]), np.abs(y[c]))
                rel = max(rel, float(np.nanmax(d.to_numpy())) if d.notna().any() else 0.0)
    return {"same": same, "n": n, "rel": rel, "differ": differ}


if __name__ == "__main__":
    main()
