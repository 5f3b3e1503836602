"""The bound functions document themselves as numpydoc asks (Parameters, Returns, References,
Examples) and their examples run: ``doctest`` over the theory modules, whose facades
(``boundbench.theory.fu``, ``boundbench.theory.activation_decay``) own their functions."""

from __future__ import annotations

import doctest
import importlib
import inspect

import pytest

from boundbench import catalogue
from boundbench.framework import registry

DOCTESTED = ["boundbench.theory.fu", "boundbench.theory.activation_decay",
             "boundbench.theory.uegr", "boundbench.theory.norms",
             "boundbench.framework.verdicts", "boundbench.framework.trends",
             "boundbench.framework.readings"]
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
