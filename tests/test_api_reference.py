"""The API reference and the guides build with Sphinx (autodoc and napoleon over the numpydoc
docstrings, MyST for the Markdown guides) with warnings as errors, as
``python -m sphinx -W -b html docs docs/_build`` does; and a broken page fails that build."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("sphinx", reason="sphinx is a dev dependency (README)")
pytest.importorskip("myst_parser", reason="myst-parser is a dev dependency (README)")

ROOT = Path(__file__).resolve().parents[1]


def _build(src: Path, out: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "sphinx", "-W", "--keep-going", "-q", "-b",
                           "html", str(src), str(out)], capture_output=True, text=True,
                          timeout=600)


def test_the_api_reference_builds_with_warnings_as_errors(tmp_path):
    r = _build(ROOT / "docs", tmp_path / "html")
    assert r.returncode == 0, r.stderr[-3000:]
    api = (tmp_path / "html" / "api.html").read_text()
    # the public face is documented: a bound of each paper, the verdicts, claims, testing
    for name in ("thm22_main_rhs", "lemma_a13_sides", "thm2_rhs", "thm1_frobenius_rhs",
                 "hessian_frobenius", "bound_verdict", "run_audit", "separable_datasets"):
        assert f'.{name}"' in api, name  # an anchor id="boundbench.<module>.<name>"
    assert "Parameters" in api and "Examples" in api  # the numpydoc sections rendered
    guides = {p.stem for p in (ROOT / "docs").glob("*.md")}
    assert guides <= {p.stem for p in (tmp_path / "html").glob("*.html")}  # every guide is in


def test_control_a_broken_page_fails_the_build(tmp_path):
    src = tmp_path / "docs"
    src.mkdir()
    shutil.copy(ROOT / "docs" / "conf.py", src)
    (src / "index.rst").write_text("Home\n====\n\n.. toctree::\n\n   page\n")
    (src / "page.md").write_text("# A page\n\nSee [the missing one](no-such-page.md).\n")
    r = _build(src, tmp_path / "html")
    assert r.returncode != 0 and "no-such-page" in r.stderr, r.stderr[-2000:]
