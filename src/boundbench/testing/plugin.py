"""The pytest plugin (entry point ``pytest11``): at the end of a session that ran ``@bound``
tests it prints the tightness table, the worst ``lhs / rhs`` each bound reached, so a user sees
how close every bound came to failing. ``pytest --prove`` also proves every
``@bound(space=...)`` test on its space (``boundbench prove``'s prover, issue 79): the table
gives each one's certificate level, and a bound the prover refutes fails.

Under pytest-xdist (``-n N``) the ``@bound`` tests run in worker processes: each worker sends
its records back with its results (``workeroutput``), and the controller prints one table."""

from __future__ import annotations

import json
from dataclasses import asdict
from typing import Any

import pytest

_KEY = "boundbench_tightness"
_FROM_WORKERS: dict[str, dict[str, Any]] = {}


def pytest_addoption(parser: Any) -> None:
    parser.getgroup("boundbench").addoption(
        "--prove", action="store_true", default=False,
        help="also prove every @bound(space=...) test on its space (interval arithmetic, no "
        "tolerance); a refuted bound fails, the table gives each certificate level")


def pytest_configure(config: Any) -> None:
    if config.getoption("--prove", default=False):  # xdist passes options to its workers
        import importlib

        # the module, not boundbench.testing's ``bound``, which is the decorator
        setattr(importlib.import_module("boundbench.testing.bound"), "PROVE", True)  # noqa: B010


def pytest_sessionfinish(session: Any) -> None:
    import sys

    workeroutput = getattr(session.config, "workeroutput", None)
    mod = sys.modules.get("boundbench.testing.bound")
    if workeroutput is not None and mod is not None and mod.RESULTS:  # an xdist worker
        # the table's fields, as JSON: the instance object itself stays in the worker
        workeroutput[_KEY] = json.dumps({k: {**asdict(v), "value": None}
                                         for k, v in mod.RESULTS.items()}, default=str)


@pytest.hookimpl(optionalhook=True)  # an xdist hook: absent without pytest-xdist
def pytest_testnodedown(node: Any, error: Any) -> None:
    """xdist's controller: a worker finished; keep the records it sent."""
    raw = getattr(node, "workeroutput", {}).get(_KEY)
    if raw:
        _FROM_WORKERS.update(json.loads(raw))


def pytest_terminal_summary(terminalreporter: Any) -> None:
    import sys

    results: dict[str, Any] = {}
    if _FROM_WORKERS:
        from boundbench.testing.bound import Tightness

        results.update({k: Tightness(**v) for k, v in _FROM_WORKERS.items()})
    mod = sys.modules.get("boundbench.testing.bound")  # only if some test used @bound
    if mod is not None:
        results.update(mod.RESULTS)
    if not results:
        return
    from boundbench.testing.bound import tightness_table

    terminalreporter.write_sep("=", "boundbench: tightness of the @bound tests")
    terminalreporter.write_line(tightness_table(results))
