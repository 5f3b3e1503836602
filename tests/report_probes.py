"""Wrongly typed ``audit.json`` files (issue 65): every field of a valid report replaced by a
value of another type, the containers emptied or swapped, a deep nesting; each read by the
commands that read a report (``findings``, ``errata``, ``regenerate``), in this process.
An answer is right when it is exit 0 (the value was one the reader takes) or exit 2 with one
line saying the report is not one this version reads; "internal error" (exit 1), a traceback
or a second line is a finding. Shared by ``tests/test_report_edges.py`` (every probe) and
``benchmarks/fuzz_report.py`` (the counts)."""

from __future__ import annotations

import contextlib
import copy
import io
import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

OTHERS: list[Any] = [None, 7, -1.5, "x", True, [], {}, [1, "a"], {"k": None}]


def _kind(x: Any) -> type:
    return bool if isinstance(x, bool) else float if isinstance(x, int | float) else type(x)


def _replaced(value: Any) -> list[Any]:
    return [o for o in OTHERS if _kind(o) is not _kind(value)]


def probes(report: dict[str, Any], *, entries: int = 2) -> Iterator[tuple[str, str]]:
    """``(label, text)`` of each wrongly typed report: the whole, ``meta`` and its fields,
    ``claims``, the first ``entries`` claim entries and each of their fields (one level into
    ``evidence`` too), and a nesting 100,000 deep."""
    for bad in OTHERS:
        if not isinstance(bad, dict):
            yield f"report={bad!r}", json.dumps(bad)
    for key in ("meta", "claims"):
        for bad in _replaced(report[key]):
            yield f"{key}={bad!r}", json.dumps({**report, key: bad})
    for key, value in report["meta"].items():
        for bad in _replaced(value):
            r = copy.deepcopy(report)
            r["meta"][key] = bad
            yield f"meta.{key}={bad!r}", json.dumps(r)
    for i, entry in enumerate(report["claims"][:entries]):
        for bad in _replaced(entry):
            r = copy.deepcopy(report)
            r["claims"][i] = bad
            yield f"claims[{i}]={bad!r}", json.dumps(r)
        for key, value in entry.items():
            for bad in _replaced(value):
                r = copy.deepcopy(report)
                r["claims"][i][key] = bad
                yield f"claims[{i}].{key}={bad!r}", json.dumps(r)
        for key, value in (entry.get("evidence") or {}).items():
            for bad in _replaced(value)[:3]:
                r = copy.deepcopy(report)
                r["claims"][i]["evidence"][key] = bad
                yield f"claims[{i}].evidence.{key}={bad!r}", json.dumps(r)
    yield "nested 100,000 deep", "[" * 100_000 + "]" * 100_000


def judge(text: str, folder: Path, root: Path) -> list[str]:
    """The problems of the three readers on the report ``text`` (written to
    ``folder/audit.json``; ``regenerate`` writes into a copy of ``root``): empty if each
    answered exit 0, or exit 2 in one line naming the report."""
    from boundbench import cli

    folder.mkdir(parents=True, exist_ok=True)
    (folder / "audit.json").write_text(text)
    problems = []
    for cmd in (["findings", "--out", str(folder)], ["errata", "--out", str(folder)],
                ["regenerate", "--out", str(folder), "--root", str(root)]):
        err = io.StringIO()
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
            try:
                rc = cli.main(cmd)
            except BaseException as exc:  # noqa: BLE001 - escaping main() is the finding
                rc, _ = -1, err.write(f"{type(exc).__name__}: {exc}")
        said = [ln for ln in err.getvalue().splitlines() if ln.strip()]
        if rc == 0:
            continue
        if rc != 2 or len(said) != 1 or "report it" in said[0] or "Traceback" in said[0]:
            problems.append(f"{cmd[0]}: exit {rc}: {' | '.join(said)[:300]}")
    return problems


def scratch_root(repo: Path, at: Path) -> Path:
    """A copy of what ``regenerate`` rewrites (README.md, docs/) for it to write into."""
    at.mkdir(parents=True, exist_ok=True)
    shutil.copy(repo / "README.md", at / "README.md")
    shutil.copytree(repo / "docs", at / "docs", dirs_exist_ok=True)
    return at
