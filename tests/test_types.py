"""The package type-checks (mypy, 0 errors) as installed by the README's command, and a user's
script resolves every ``boundbench.*`` layer: the tree is a plain directory to static tools (no
import hook, no ``__path__`` edit)."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

pytestmark = pytest.mark.skipif(importlib.util.find_spec("mypy") is None,
                                reason="mypy is a dev dependency (README)")


@pytest.fixture(scope="module")
def cache(tmp_path_factory) -> Path:
    """One mypy cache for the module: the second check reuses the package's analysis."""
    return tmp_path_factory.mktemp("mypy-cache")


def _mypy(*args: str, cwd: Path, cache: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "mypy", "--config-file",
                           str(ROOT / "pyproject.toml"), "--cache-dir", str(cache), *args],
                          cwd=cwd, capture_output=True, text=True, timeout=900)


def test_the_package_type_checks_with_no_errors(tmp_path, cache):
    r = _mypy("-p", "boundbench", cwd=tmp_path, cache=cache)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "Success: no issues found" in r.stdout


def test_a_users_script_resolves_every_layer_and_a_type_error_is_caught(tmp_path, cache):
    script = tmp_path / "use.py"
    script.write_text(
        "from boundbench.framework.claims.registry import CheckContext\n"
        "from boundbench.theory.activation_decay import cor1_rhs\n"
        "from boundbench.synthetic.svm import HardMarginSVM\n"
        "from boundbench.plm.methods import METHODS\n"
        "from boundbench.cli import main\n"
        "svm: HardMarginSVM = HardMarginSVM()\n"
        "n: int = METHODS.names()\n")  # a list, not an int: the control a checker must flag
    r = _mypy(str(script), cwd=tmp_path, cache=cache)
    out = r.stdout + r.stderr
    assert "Cannot find implementation" not in out and "import-not-found" not in out, out
    assert "import-untyped" not in out, out
    assert r.returncode == 1 and 'use.py:7: error: Incompatible types in assignment' in out, out


def test_nothing_edits_the_package_path():
    init = (ROOT / "src" / "boundbench" / "__init__.py").read_text()
    assert "__path__" not in init
    import boundbench

    assert list(boundbench.__path__) == [str(ROOT / "src" / "boundbench")]
