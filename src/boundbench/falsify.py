"""``boundbench falsify TARGET``: the worst case of one bound within a time budget.

TARGET is a registered claim id (its declared :class:`~boundbench.framework.search.Search`, the
engine the audit uses, run with doubling evaluation budgets while time remains) or
``path/to/file.py:function`` for a ``@bound`` test (hypothesis with ``target``, as many
examples as the budget allows).
"""

from __future__ import annotations

import importlib.util
import math
import time
from pathlib import Path
from typing import Any

from boundbench import catalogue
from boundbench.framework import registry as _claims
from boundbench.framework.search import SearchResult, worst_case


def falsify(target: str, *, budget: float = 30.0, seed: int = 0) -> dict[str, Any]:
    """``{"target", "worst_ratio", "violated", "instance", "evaluations", "seconds",
    "reproduce", "method"}`` for a claim id or ``FILE.py:FUNCTION``."""
    if not (isinstance(budget, int | float) and not isinstance(budget, bool)
            and math.isfinite(budget) and budget > 0):
        raise ValueError(f"budget must be a number of seconds > 0 (got {budget!r})")
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise ValueError(f"seed must be an integer >= 0 (got {seed!r})")
    if ".py:" in target:
        return _falsify_file(target, budget=float(budget), seed=seed)
    return _falsify_claim(target, budget=float(budget), seed=seed)


def _falsify_claim(cid: str, *, budget: float, seed: int) -> dict[str, Any]:
    catalogue.load()
    claim = _claims.get(cid)
    if claim.search is None:
        raise ValueError(f"claim {cid!r} declares no targeted search (only bound claims do; "
                         "`boundbench claims` lists them)")
    ctx = _claims.CheckContext(seed=seed, scale="quick", claim_id=cid)
    t0 = time.perf_counter()
    evals, best, total = claim.search.budget[0], None, 0
    while True:
        start = time.perf_counter()
        res: SearchResult = worst_case(claim.search, max_evals=evals, seed=seed, context=ctx)
        total += res.n_evals
        if best is None or res.worst_ratio > best.worst_ratio:
            best = res
        took = time.perf_counter() - start
        # the next round doubles the evaluations (the same seed: it extends this search)
        if res.n_evals < evals or time.perf_counter() - t0 + 2.2 * took > budget:
            break
        evals *= 2
    return {"target": cid, "worst_ratio": best.worst_ratio,
            "worst_is": "the largest lhs/rhs the targeted search found in this budget",
            "violated": best.worst_ratio > 1, "reproducer": None,
            "instance": best.instance, "evaluations": total,
            "seconds": round(time.perf_counter() - t0, 2), "method": best.method,
            "reproduce": f"boundbench falsify {cid} --budget {budget:g} --seed {seed}"}


def _falsify_file(target: str, *, budget: float, seed: int) -> dict[str, Any]:
    path_text, _, name = target.rpartition(":")
    path = Path(path_text)
    if not path.is_file():
        raise ValueError(f"no such file {str(path)!r} (TARGET is a claim id or FILE.py:FUNCTION)")
    spec = importlib.util.spec_from_file_location(f"falsify_{path.stem}", path)
    if spec is None or spec.loader is None:
        raise ValueError(f"cannot import {str(path)!r} as a Python module")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    test = getattr(module, name, None)
    if test is None or not hasattr(test, "run"):
        raise ValueError(f"{target!r} is not a function decorated with boundbench.testing.bound")
    from boundbench.testing.bound import BoundViolation

    t0 = time.perf_counter()
    try:  # a short run times one example, then the budget sets how many
        rec = test.run(max_examples=10, seed_value=seed)
        per = (time.perf_counter() - t0) / max(rec.examples, 1)
        n = max(10, min(100_000, int((budget - (time.perf_counter() - t0)) / max(per, 1e-4))))
        rec = test.run(max_examples=n, seed_value=seed,
                       deadline_s=budget - (time.perf_counter() - t0))
    except BoundViolation:
        from boundbench.testing.bound import RESULTS

        rec = RESULTS[test.bound_name]
    return {"target": target, "worst_ratio": rec.worst_ratio,
            "worst_is": "the largest lhs/rhs found over every example of this run",
            "violated": rec.violated, "instance": rec.instance, "lhs": rec.lhs, "rhs": rec.rhs,
            # the failure pytest reports: hypothesis's shrunk example, another instance
            "reproducer": ({"ratio": rec.shrunk_ratio, "lhs": rec.shrunk_lhs,
                            "rhs": rec.shrunk_rhs, "instance": rec.shrunk_instance,
                            "is": "the smallest reproducer (hypothesis's shrunk failure)"}
                           if rec.violated else None),
            "evaluations": rec.examples, "seconds": round(time.perf_counter() - t0, 2),
            "method": "hypothesis with target(lhs/rhs), shrunk on failure",
            "reproduce": test.reproduce(seed)}

