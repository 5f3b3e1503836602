"""The package as installed: one ``boundbench`` namespace, layers that import only downwards, no
import cycles, and every module importable on its own in a fresh interpreter."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
LINT = shutil.which("lint-imports", path=str(Path(sys.executable).parent))


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> Path:
    """A non-editable install of the project (``pip install --target``): the tree a user gets."""
    target = tmp_path_factory.mktemp("site")
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps",
                    "--no-build-isolation", "--target", str(target), str(ROOT)],
                   check=True, capture_output=True, text=True, timeout=300)
    return target


def _python(code: str, site: Path, cwd: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(site)}
    return subprocess.run([sys.executable, "-c", code], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=300)


def test_one_namespace_and_no_bare_layer_packages(installed, tmp_path):
    assert sorted(p.name for p in installed.iterdir() if not p.name.endswith(
        (".dist-info", "bin"))) == ["boundbench"]
    ok = _python("import boundbench.theory, boundbench.synthetic, boundbench.plm, "
                 "boundbench.cli; print(boundbench.theory.__file__)", installed, tmp_path)
    assert ok.returncode == 0, ok.stderr
    assert ok.stdout.startswith(str(installed))
    for bare in ("theory", "synthetic", "plm"):
        r = _python(f"import {bare}", installed, tmp_path)
        assert r.returncode != 0 and "ModuleNotFoundError" in r.stderr, bare


def _lint(site: Path, cwd: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(site)}
    return subprocess.run([LINT, "--config", str(ROOT / "pyproject.toml"), "--no-cache"],
                          cwd=cwd, env=env, capture_output=True, text=True, timeout=300)


@pytest.mark.skipif(LINT is None, reason="import-linter is a dev dependency")
def test_import_contract_layers_and_no_cycles(installed, tmp_path):
    r = _lint(installed, tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "2 kept, 0 broken" in r.stdout


@pytest.mark.skipif(LINT is None, reason="import-linter is a dev dependency")
def test_control_an_upward_import_breaks_the_contract(installed, tmp_path):
    """The contract can fail: theory importing synthetic (upwards) is reported."""
    site = tmp_path / "site"
    shutil.copytree(installed / "boundbench", site / "boundbench")
    bad = site / "boundbench" / "theory" / "problems.py"
    bad.write_text(bad.read_text() + "\nfrom boundbench.synthetic import data  # noqa\n")
    r = _lint(site, tmp_path)
    assert r.returncode != 0 and "boundbench.theory.problems" in r.stdout


def _modules(site: Path) -> list[str]:
    root = site / "boundbench"
    mods = []
    for p in sorted(root.rglob("*.py")):
        parts = p.relative_to(site).with_suffix("").parts
        mods.append(".".join(parts[:-1] if parts[-1] == "__init__" else parts))
    return mods


def test_every_module_imports_alone_in_a_fresh_interpreter(installed, tmp_path):
    mods = _modules(installed)
    assert len(mods) > 40 and "boundbench.plm.claims.smoothing" in mods
    with ThreadPoolExecutor(max_workers=2) as pool:
        results = list(pool.map(lambda m: (m, _python(f"import {m}", installed, tmp_path)), mods))
    failed = {m: r.stderr.strip().splitlines()[-1] for m, r in results if r.returncode != 0}
    assert not failed, failed
