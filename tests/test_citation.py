"""LICENSE and CITATION.cff (issue 40): a researcher can cite the tool and the four papers it
tests, and the license matches the package's metadata."""

import tomllib
from pathlib import Path

import yaml

ROOT = Path(__file__).parents[1]


def test_citation_cff_parses_and_matches_the_package():
    cff = yaml.safe_load((ROOT / "CITATION.cff").read_text(encoding="utf-8"))
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert cff["cff-version"] == "1.2.0" and cff["type"] == "software"
    assert cff["version"] == project["version"]
    assert cff["license"] == project["license"]["text"] == "MIT"
    assert cff["title"].startswith("boundbench") and cff["authors"] and cff["message"]
    titles = {r["title"] for r in cff["references"]}
    papers = (ROOT.parent / "shared" / "papers" / "README.md")
    assert len(titles) == 4
    for r in cff["references"]:  # every reference is complete as CFF 1.2 asks
        assert r["type"] and r["title"] and r["authors"]
    if papers.exists():  # the four papers the project tests, by their titles' key words
        text = papers.read_text(encoding="utf-8")
        for key in ("Stability Analysis of Fine-Tuning", "Activation Decay",
                    "Robustness to Improved Generalization", "Unified Enhancement"):
            assert key in text and any(key in t for t in titles), key


def test_license_is_the_mit_text_pyproject_names():
    text = (ROOT / "LICENSE").read_text()
    assert text.startswith("MIT License") and "WITHOUT WARRANTY OF ANY KIND" in text
