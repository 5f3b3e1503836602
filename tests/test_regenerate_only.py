"""Issue 83 item 3: a bound claim in three files. In a temporary copy of the repository's
generated files, a new claim of paper ``fu`` is registered in one module, run through a cheap
one-claim context, and ``regenerate --only`` merges its entry into the record and remakes the
README's block from a run of that claim alone; nothing else changes."""

from __future__ import annotations

import importlib.util
import json
import shutil
import sys
from pathlib import Path

from boundbench import catalogue
from boundbench.framework.claims import registry
from boundbench.framework.execution.context import CheckContext
from boundbench.generated import regenerate_only

ROOT = Path(__file__).resolve().parents[1]

CLAIM = '''
import numpy as np

from boundbench.framework.claims.registry import Outcome, claim
from boundbench.framework.verdicts.rules import BoundSides, bound_verdict


@claim("fu.test-three-files", paper="fu", where="Lemma A.9 (a test's)", kind="bound",
       statement="x^2 <= x on (0, 1]", equation="x^2 <= x")
def _check(ctx):
    x = ctx.rng().uniform(0.1, 1.0, ctx.pick(200, 20_000))
    return Outcome(bound_verdict(BoundSides(x ** 2, x)))
'''


def test_a_new_claim_reaches_the_record_by_one_command(tmp_path):
    root = tmp_path / "repo"
    (root / "docs").mkdir(parents=True)
    for name in ("README.md", "docs/bounds.md", "docs/last-audit.json", "docs/larger-audits.json"):
        shutil.copy(ROOT / name, root / name)
    before = {p: p.read_text() for p in root.rglob("*") if p.is_file()}
    module = tmp_path / "fu_test_three_files.py"  # file 1: the claim, registered
    module.write_text(CLAIM)
    catalogue.load()
    spec = importlib.util.spec_from_file_location("fu_test_three_files", module)
    mod = importlib.util.module_from_spec(spec)
    try:
        with registry.loading("boundbench"):
            spec.loader.exec_module(mod)
        # file 2: its test, through a one-claim context
        assert registry.run("fu.test-three-files", CheckContext(seed=0)).verdict.status == "holds"
        # file 3: the generated record, from a run of that claim alone
        written = regenerate_only(root, ["fu.test-three-files"], out=tmp_path / "out",
                                  progress=False)
    finally:
        registry._REGISTRY.pop("fu.test-three-files", None)
        sys.modules.pop("fu_test_three_files", None)
    old = json.loads(before[root / "docs/last-audit.json"])
    rec = json.loads((root / "docs/last-audit.json").read_text())
    new = [e for e in rec["claims"] if e["id"] == "fu.test-three-files"]
    assert len(new) == 1 and new[0]["verdict"] == "holds" and new[0]["run"]["created"]
    assert rec["counts"]["holds"] == old["counts"]["holds"] + 1
    assert [e for e in rec["claims"] if e["id"] != "fu.test-three-files"] == old["claims"]
    assert rec["merged"][-1]["ids"] == ["fu.test-three-files"]
    assert (rec["created"], rec["commit"]) == (old["created"], old["commit"])  # the whole audit's
    changed = {p.relative_to(root).as_posix() for p, t in before.items() if p.read_text() != t}
    assert changed <= {"docs/last-audit.json", "README.md", "docs/bounds.md"}
    assert "docs/last-audit.json" in changed and set(map(Path, written)) >= {
        root / "docs/last-audit.json", root / "README.md"}
