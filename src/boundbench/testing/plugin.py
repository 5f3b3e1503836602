"""The pytest plugin (entry point ``pytest11``): at the end of a session that ran ``@bound``
tests it prints the tightness table, the worst ``lhs / rhs`` each bound reached, so a user sees
how close every bound came to failing."""

from __future__ import annotations

from typing import Any


def pytest_terminal_summary(terminalreporter: Any) -> None:
    import sys

    mod = sys.modules.get("boundbench.testing.bound")  # only if some test used @bound
    if mod is None or not mod.RESULTS:
        return
    terminalreporter.write_sep("=", "boundbench: tightness of the @bound tests")
    terminalreporter.write_line(mod.tightness_table())
