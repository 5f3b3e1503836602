"""The bound functions document themselves as numpydoc asks (Parameters, Returns, References,
Examples) and their examples run: ``doctest`` over the theory modules, whose facades
(``boundbench.theory.fu``, ``boundbench.theory.activation_decay``) own their functions."""

from __future__ import annotations

import doctest
import importlib
import inspect

import pytest

from boundbench import catalogue
from boundbench.framework.claims import registry

DOCTESTED = ["boundbench.theory.fu", "boundbench.theory.activation_decay",
             "boundbench.theory.uegr", "boundbench.theory.norms",
             "boundbench.framework.verdicts.rules", "boundbench.framework.stats.trends",
             "boundbench.framework.verdicts.readings", "boundbench.theory.operators",
             "boundbench.theory.eigenvalues", "boundbench.theory.trace",
             "boundbench.testing._stability", "boundbench.testing._loo",
             "boundbench.testing._curvature"]
SECTIONS = ("Parameters\n", "Returns\n", "References\n", "Examples\n")


@pytest.mark.parametrize("name", DOCTESTED)
def test_the_examples_in_the_docstrings_run(name):
    res = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS)
    assert res.failed == 0 and res.attempted >= 5, (name, res)


def _bound_functions() -> dict[str, object]:
    catalogue.load()
    out = {}
    for cid in catalogue.registry():
        for f in registry.get(cid).functions or ():
            out[f"{f.__module__}.{f.__name__}"] = f
    return out


def test_every_function_a_claim_names_has_numpydoc_sections_and_a_doctest():
    fns = _bound_functions()
    assert len(fns) >= 20  # the claims name their functions
    missing = {name: [s.strip() for s in SECTIONS if s not in inspect.cleandoc(f.__doc__ or "")]
               for name, f in fns.items()}
    assert {k: v for k, v in missing.items() if v} == {}
    assert all(f.__module__ in DOCTESTED for f in fns.values()), sorted(
        {f.__module__ for f in fns.values()} - set(DOCTESTED))
    no_example = [name for name, f in fns.items() if ">>> " not in (f.__doc__ or "")]
    assert no_example == []


def test_the_verdict_helpers_a_user_calls_have_numpydoc_sections():
    """The public face's verdict helpers (``boundbench.bound_verdict`` and the others) document
    their parameters and show an example, as the bounds do."""
    import boundbench

    names = ["BoundSides", "Verdict", "bound_verdict", "equality_verdict", "trend_verdict",
             "paired_trend_verdict", "readings_verdict"]
    missing = {n: [s.strip() for s in ("Parameters\n", "Examples\n")
                   if s not in inspect.cleandoc(getattr(boundbench, n).__doc__ or "")]
               for n in names}
    assert {k: v for k, v in missing.items() if v} == {}
    # and the entry points that run claims, audits and searches document their parameters
    runners = ["run_claim", "run_audit", "search_worst_case", "bound", "tightness_table"]
    assert [n for n in runners if "Parameters\n" not in inspect.cleandoc(
        getattr(boundbench, n).__doc__ or "")] == []


PUBLIC_DATA = {"STATUSES", "SYNTHETIC_METHODS", "METHODS", "strategies"}


def test_every_public_name_documents_its_parameters_and_its_examples_run():
    """Issue 42: each callable of ``boundbench.__all__`` has numpydoc Parameters (or, for a
    method class, Attributes) and Examples, and the examples run, in a fresh interpreter (some
    register a paper of their own, which must not leak into this process's registry)."""
    import os
    import subprocess
    import sys

    import boundbench

    missing = {}
    for name in boundbench.__all__:
        if name in PUBLIC_DATA:
            continue
        obj = getattr(boundbench, name)
        doc = inspect.cleandoc(obj.__doc__ or "")
        # what it takes (Parameters) or, taking nothing, what it gives (Returns)
        takes = bool(inspect.signature(obj).parameters)
        lacks = [s for s in ("Parameters\n" if takes else "Returns\n", "Examples\n")
                 if s not in doc and not (s == "Returns\n" and "Parameters\n" in doc)]
        missing.update({name: lacks} if lacks else {})
    assert missing == {}
    code = ("import doctest, sys, boundbench as bb; from pathlib import Path\n"
            "finder, runner = doctest.DocTestFinder(recurse=False), doctest.DocTestRunner("
            "optionflags=doctest.ELLIPSIS)\n"
            f"skip = {sorted(PUBLIC_DATA)!r}\n"
            "n = 0\n"
            "for name in bb.__all__:\n"
            "    if name in skip: continue\n"
            "    for t in finder.find(getattr(bb, name), name, globs={'Path': Path}):\n"
            "        n += len(t.examples); runner.run(t)\n"
            "print(runner.failures, n); sys.exit(1 if runner.failures or n < 30 else 0)\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       timeout=600, env={**os.environ, "MPLBACKEND": "Agg"})
    assert r.returncode == 0, r.stdout[-4000:] + r.stderr[-2000:]


def test_the_estimators_and_the_strategies_have_numpydoc_sections():
    """Issue 42: the curvature estimators (operator, eigenvalues, trace) and every public
    strategy and instance class document their parameters and show an example (the doctests
    above run them)."""
    from boundbench.testing import strategies
    from boundbench.theory import eigenvalues, operators, trace

    objs = {n: getattr(strategies, n) for n in strategies.__all__
            if inspect.isfunction(getattr(strategies, n)) or inspect.isclass(getattr(strategies, n))}
    objs.update(HessianOperator=operators.HessianOperator, EigResult=eigenvalues.EigResult,
                top_eigenvalue_power=eigenvalues.top_eigenvalue_power,
                top_eigenvalue_lanczos=eigenvalues.top_eigenvalue_lanczos,
                trace_hutchinson=trace.trace_hutchinson, trace_hutchpp=trace.trace_hutchpp)
    assert len(objs) == 24
    missing = {n: [s.strip() for s in ("Parameters\n", "Examples\n")
                   if s not in inspect.cleandoc(o.__doc__ or "")] for n, o in objs.items()}
    assert {k: v for k, v in missing.items() if v} == {}
