"""Issue 67: a claim knows where it is registered (``origin``, printed by ``boundbench claims``)
and where it is measured (``setting``, an attribute: no code reads it from the id)."""

from __future__ import annotations

import importlib
import re
from pathlib import Path

import pytest

from boundbench import catalogue, cli
from boundbench.errors import ClaimError
from boundbench.framework.claims import registry

ROOT = Path(__file__).parents[1]


def _source(origin: str) -> tuple[list[str], int]:
    path, line = origin.rsplit(":", 1)
    module = path.removesuffix(".py").removesuffix("/__init__").replace("/", ".")
    return Path(importlib.import_module(module).__file__).read_text().splitlines(), int(line)


def test_every_claims_origin_is_the_statement_that_registers_it():
    """The origin's line opens the registration and its id is written there or just below."""
    catalogue.load()
    for c in catalogue.registry().values():
        lines, n = _source(c.origin)
        window = "\n".join(lines[n - 1:n + 3])
        assert re.search(r"@?\w*claim\(", lines[n - 1]), (c.id, c.origin, lines[n - 1])
        assert f'"{c.id}"' in window, (c.id, c.origin, window)


def test_a_helpers_claims_originate_at_its_caller_and_an_unmarked_helper_at_itself():
    """Control: ``registers_claims`` moves the origin out of a helper; without it the origin
    is the helper's own line (what a wrong implementation would report for every claim)."""
    def check(ctx):
        raise AssertionError("never run")

    @registry.registers_claims
    def marked(cid):
        registry.claim(cid, paper="ad", where="w", kind="bound", statement="s",
                       equation="e")(check)

    def unmarked(cid):
        registry.claim(cid, paper="ad", where="w", kind="bound", statement="s",
                       equation="e")(check)

    try:
        here = _line() + 1  # the next line's number
        marked("test.origin-marked")
        unmarked("test.origin-unmarked")
        reg = registry.registry()
        assert reg["test.origin-marked"].origin.endswith(f"test_claim_origin.py:{here}")
        inner = reg["test.origin-unmarked"].origin
        assert inner.endswith(".py:" + str(unmarked.__code__.co_firstlineno + 1)), inner
    finally:
        for cid in ("test.origin-marked", "test.origin-unmarked"):
            registry._REGISTRY.pop(cid, None)


def _line() -> int:
    import sys

    return sys._getframe(1).f_lineno


def test_claims_prints_each_claims_file_and_line(capsys):
    assert cli.main(["claims"]) == 0
    out = capsys.readouterr().out.splitlines()
    c = catalogue.registry()["fu.plm.mhloss-std"]
    row = next(ln for ln in out if ln.startswith("fu.plm.mhloss-std "))
    assert c.origin in row and c.origin.startswith("boundbench/papers/fu/plm_stability.py:")


def test_the_setting_is_declared_and_checked_never_read_from_an_id():
    catalogue.load()
    settings = {c.id: c.setting for c in catalogue.registry().values()}
    assert set(settings.values()) == set(registry.SETTINGS)
    assert {i for i, s in settings.items() if s == "fine-tuning"} == {
        i for i in settings if ".plm." in i}  # the ids say it too, but nothing reads them
    with pytest.raises(ClaimError, match="setting must be one of"):
        registry.claim("test.bad-setting", paper="ad", where="w", kind="bound",
                       statement="s", equation="e", setting="gpu")
    # a report written before claims had a setting: the registered claim's
    assert registry.setting_of({"id": "fu.plm.mhloss-std"}) == "fine-tuning"
    assert registry.setting_of({"id": "gone.claim"}) == "synthetic"
    hits = [f"{p}:{n}" for d in ("src", "theory", "synthetic", "plm") for p in (ROOT / d).rglob("*.py")
            for n, ln in enumerate(p.read_text().splitlines(), 1)
            if re.search(r"""["']\.plm\.["']\s+in\b""", ln)]
    assert not hits, hits


def _papers_by_module(claims) -> dict[str, set[str]]:
    by: dict[str, set[str]] = {}
    for c in claims:
        by.setdefault(c.origin.rsplit(":", 1)[0], set()).add(c.paper)
    return by


def test_each_paper_is_one_folder_and_no_module_registers_two_papers_claims():
    """Issue 67: a built-in paper's claims all live in ``boundbench/papers/<key>/``, and each
    claim module registers the claims of one paper only (found from the claims' origins, not a
    list kept by hand)."""
    from boundbench.papers import BUILTIN

    catalogue.load()
    own = [c for c in catalogue.registry().values() if c.package == "boundbench"]
    assert {c.paper for c in own} == set(BUILTIN)
    for c in own:
        assert c.origin.startswith(f"boundbench/papers/{c.paper}/"), (c.id, c.origin)
    mixed = {m: p for m, p in _papers_by_module(own).items() if len(p) > 1}
    assert not mixed, mixed


def test_control_a_module_registering_two_papers_claims_is_named():
    """Control: claims of two papers registered from one module are what the check above names."""
    a = registry.Claim("x.one", "x", "", "", "", "bound", check=lambda ctx: None,
                       origin="boundbench/papers/x/mixed.py:10")
    b = registry.Claim("y.two", "y", "", "", "", "bound", check=lambda ctx: None,
                       origin="boundbench/papers/x/mixed.py:20")
    assert _papers_by_module([a, b]) == {"boundbench/papers/x/mixed.py": {"x", "y"}}
