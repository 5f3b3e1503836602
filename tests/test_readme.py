"""The README is short and every command in it runs: the install and the test command are
`.ci/run`'s (CI executes them), the main command and the errata command run in
``tests/test_cli.py``'s audit test, and the rest run here, verbatim, in a scratch folder."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text()
BIN = Path(sys.executable).parent


def blocks(lang: str) -> list[str]:
    return re.findall(rf"```{lang}\n(.*?)```", README, flags=re.S)


def commands() -> list[str]:
    return [line.strip() for b in blocks("bash") for line in b.splitlines() if line.strip()]


INSTALL, MAIN, TESTS = commands()[:3]
USE = commands()[3:]
RUN_BY_TEST_CLI = (MAIN, ".venv/bin/boundbench errata fu --out figures")


def as_here(cmd: str) -> list[str]:
    """A README command with ``.venv/bin/`` meaning this interpreter's environment."""
    return [str(BIN / a[len(".venv/bin/"):]) if a.startswith(".venv/bin/") else a
            for a in shlex.split(cmd)]


def test_the_readme_is_short_and_has_its_sections():
    assert len(README.splitlines()) <= 150
    for title in ("## Install and the two commands", "## What the last audit found",
                  "## What comes out",
                  "## Use from the command line", "## Use from Python", "## Contributing"):
        assert title in README
    assert README.count("constraints.txt torch==2.13.0") == 1  # the install, once
    for link in re.findall(r"\]\((docs/[^)]+)\)", README):
        assert (ROOT / link).is_file(), link


def test_the_readme_quotes_the_recorded_audit_as_generated():
    """The findings block is what ``boundbench findings`` makes of docs/last-audit.json (dated),
    and every claim it records is registered."""
    import json

    from boundbench import catalogue
    from boundbench.generated import README_END, README_START, readme_block

    rec = json.loads((ROOT / "docs" / "last-audit.json").read_text())
    block = README.split(README_START, 1)[1].split(README_END, 1)[0]
    assert block == "\n" + readme_block(rec, ROOT), "regenerate with: boundbench regenerate"
    assert re.match(r"\d{4}-\d\d-\d\d", rec["created"])
    catalogue.load()
    assert [c["id"] for c in rec["claims"]] == list(catalogue.registry())


def test_the_readme_shows_each_undecided_claims_latest_larger_scale_verdict():
    """Issue 43: every claim the quick audit leaves inconclusive that a kept standard- or
    paper-scale audit ran is shown with that verdict, its scale and date."""
    import json

    from boundbench.generated import LARGER, read_larger

    rec = json.loads((ROOT / "docs" / "last-audit.json").read_text())
    records = read_larger(ROOT / LARGER)
    assert {r["scale"] for r in records} <= {"standard", "paper"} and records
    for c in rec["claims"]:
        held = [(r, x) for r in records for x in r["claims"] if x["id"] == c["id"]]
        if c["verdict"] != "inconclusive" or not held:
            continue
        r, x = max(held, key=lambda h: h[0]["created"])
        assert f"`{c['id']}` {x['verdict']} ({r['scale']}, {r['created'][:10]}" in README


def test_ci_runs_the_readmes_install_and_test_command():
    ci = (ROOT / ".ci" / "run").read_text().strip().splitlines()[-1]
    assert ci == f"{INSTALL} && {TESTS}"
    assert MAIN == ".venv/bin/boundbench audit --scale quick --out figures"


def _usage(cmd: str):
    """A usage command as a parameter: verbatim, and where it trains for more than a few steps
    (the ``plm run`` example's 70, 54 s of the suite) a fast run of it with 2 steps, the same
    command otherwise, and the verbatim one behind ``slow`` (issue 83: the suite's 12 minutes)."""
    steps = re.search(r"--steps (\d+)", cmd)
    if not steps or int(steps.group(1)) <= 2:
        return [cmd]
    return [cmd.replace(steps.group(0), "--steps 2"), pytest.param(cmd, marks=pytest.mark.slow)]


@pytest.mark.parametrize("cmd", [p for c in USE if c not in RUN_BY_TEST_CLI
                                 and "jupytext" not in c  # the Learn line: its own test
                                 for p in _usage(c)])
def test_every_usage_command_runs(cmd, tmp_path):
    if " plm " in cmd:
        pytest.importorskip("transformers", reason="install the plm extra (README)")
    env = {**os.environ, "MPLBACKEND": "Agg"}
    r = subprocess.run(as_here(cmd), cwd=tmp_path, capture_output=True, text=True, env=env,
                       timeout=900)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]


def test_the_python_example_runs_and_prints_what_it_says(tmp_path):
    code = blocks("python")[0]
    r = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True,
                       text=True, timeout=900, env={**os.environ, "MPLBACKEND": "Agg"})
    assert r.returncode == 0, r.stderr[-3000:]
    lines = r.stdout.splitlines()
    assert "sigma must be > 0 (got min 0)" in lines
    assert "holds" in lines
    assert lines[-1] == "torch.Size([4, 5, 64])"


def test_the_check_your_own_numbers_example_is_six_lines_and_decides(tmp_path):
    own = blocks("python")[1]
    assert len(own.strip().splitlines()) == 6
    r = subprocess.run([sys.executable, "-c", own], cwd=tmp_path, capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    assert r.stdout.startswith("lhs <= rhs on all 100 instances; worst lhs/rhs = ")
    # a wrong beta (1 instead of 3) is caught on the same numbers
    r = subprocess.run([sys.executable, "-c", own.replace("beta=3.0", "beta=1.0")], cwd=tmp_path,
                       capture_output=True, text=True, timeout=300)
    assert "fails on" in r.stdout


def test_the_learn_line_runs_a_notebook(tmp_path):
    """The README's notebook command, verbatim (through bash, its ``$(mktemp -d)`` included), on
    a copy of the notebooks: jupytext executes the notebook (its kernel: this environment's
    python3) and writes it, outputs and all, into a fresh temporary folder, never into the
    clone (issue 84: it left an .ipynb there)."""
    import json
    import shutil

    pytest.importorskip("jupytext", reason="install the dev extra (README)")
    cmd = next(c for c in USE if "jupytext" in c)
    assert '--output "$(mktemp -d)/' in cmd, cmd
    shutil.copytree(ROOT / "notebooks", tmp_path / "notebooks")
    temp = tmp_path / "tmp"
    temp.mkdir()
    env = {**os.environ, "PYTHONPATH": str(ROOT), "TMPDIR": str(temp)}
    env.pop("MPLBACKEND", None)  # the kernel draws inline, as in Jupyter
    line = shlex.join(as_here(cmd.split(" --output ")[0])) + " --output " + \
        cmd.split(" --output ")[1]
    r = subprocess.run(["bash", "-c", line], cwd=tmp_path, capture_output=True, text=True,
                       env=env, timeout=900)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    assert not list((tmp_path / "notebooks").glob("*.ipynb"))  # nothing beside the script
    (target,) = temp.glob("*/03_smoothing.ipynb")
    nb = json.loads(target.read_text())
    outputs = [o for c in nb["cells"] if c["cell_type"] == "code" for o in c.get("outputs", [])]
    assert outputs and not [o for o in outputs if o.get("output_type") == "error"]
    assert any("image/png" in o.get("data", {}) for o in outputs)
