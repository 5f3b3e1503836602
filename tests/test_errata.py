"""The errata sheet is generated from an audit: one page per paper, an entry per finding with
what was measured, the smallest reproducing instance and the known correction."""

import json

import pytest

from boundbench.cli import main
from boundbench.framework.verdicts.rules import FINDINGS


def test_the_small_audit_writes_the_errata_sheet(small_audit):
    """The errata sheet's shape on the suite's small audit (tests/audit_sets.py): every finding
    with its anchor, figure and, where the search decided it, its worst instance; claims that
    hold left out; a table of contents whose links land; ``audit.md`` and ``index.md`` led by
    the findings; one paper's page alone. The next test reads the whole audit's words."""
    import re

    root, res = small_audit
    assert res["returncode"] == 0, res["stderr"][-3000:]
    figs = root / "figures"
    text = (figs / "errata.md").read_text()
    report = json.loads((figs / "audit.json").read_text())
    found = [r["id"] for r in report["claims"] if r["verdict"] in FINDINGS]
    assert {"ad.gelu-contractant", "ad.thm1.block.as-written", "fu.lemma-a.2.5.proof-step"} <= set(found)
    for r in report["claims"]:
        assert (f"`{r['id']}`" in text) == (r["id"] in found), r["id"]
    entry = text[text.index('<a id="errata-ad-thm1-block-as-written">'):]
    entry = entry[:entry.index("<a id=", 5)]
    line = next(x for x in entry.splitlines() if x.startswith("**Worst instance of the targeted"))
    assert float(re.search(r"lhs/rhs ([\d.e+]+)", line).group(1)) >= 1.01 and "w_last = " in line
    assert "**Size.**" in entry
    toc = text[text.index("## Contents"):text.index('<a id="errata-fu">')]
    links = re.findall(r"\]\(#([\w-]+)\)", toc)
    assert len(links) >= len(found) + 2 and all(f'<a id="{a}"></a>' in text for a in links)
    for r in report["claims"]:
        if r["verdict"] in FINDINGS:
            assert f"]({r['figure']})" in text and (figs / r["figure"]).exists()
    md = (figs / "audit.md").read_text()
    head = md[:md.index("## How to read this report")]
    assert all(f"[`{cid}`](#{cid.replace('.', '')})" in head for cid in found)
    index = (figs / "index.md").read_text()
    for r in report["claims"]:
        row = next(ln for ln in index.splitlines() if f"`{r['id']}`" in ln)
        assert f'<img src="{r["figure"]}"' in row and f"**{r['verdict']}**" in row
    assert main(["errata", "ad", "--out", str(figs)]) == 0
    only = (figs / "errata-ad.md").read_text()
    assert "`ad.gelu-contractant`" in only and "Fu, So & Collier" not in only


@pytest.mark.slow  # the whole audit's findings and their words (the test above: its shape)
def test_audit_writes_the_errata_sheet(readme_audit):
    """The errata sheet of the README's main command (the session's one quick audit), read
    for six claims: four findings and two claims that hold."""
    ids = ["fu.lemma-a.2.5", "fu.lemma-a.2.4", "fu.lemma-a.2.4.v", "ad.thm1.literal",
           "ad.thm1.block", "fu.cor2.5"]
    tmp_path = readme_audit[0] / "figures"
    text = (tmp_path / "errata.md").read_text()
    report = json.loads((tmp_path / "audit.json").read_text())
    found = [r["id"] for r in report["claims"] if r["verdict"] in FINDINGS and r["id"] in ids]
    assert set(found) >= {"fu.lemma-a.2.5", "ad.thm1.literal"}
    for cid in found:
        assert f"`{cid}`" in text
    for cid in set(ids) - set(found):  # claims that hold are not errata
        assert f"`{cid}`" not in text
    # one page per paper, the smallest failing instance, the known corrections
    assert "## Fu, So & Collier" in text and "## Activation Decay" in text
    a25 = text[text.index('<a id="errata-fu-lemma-a-2-5">'):]
    a25 = a25[:a25.index("<a id=", 5)]
    # decided by the search: its instance reproduces it, with a ratio clearly above 1
    line = next(x for x in a25.splitlines() if x.startswith("**Worst instance of the targeted"))
    assert "lam = " in line and "scale = " in line
    import re as _re

    assert float(_re.search(r"lhs/rhs ([\d.e+]+)", line).group(1)) >= 1.01
    assert "W^(1..L-1)" in text and "||v_hat(S^i)|| <= ||v_hat(S)||" in text
    # issue 38: each erratum names what fails (statement, proof step or use), how badly, its
    # reading of the existential constants and an instance that reproduces it
    cor = text[text.index('<a id="errata-fu-cor2-5">'):]
    cor = cor[:cor.index("<a id=", 5)]
    assert "(a step of its proof): violated" in cor and "(A.3)" in cor
    assert "**Size.** unbounded along X -> kX, lam -> k^2 lam" in cor
    assert "**Its constants.** lam is the soft-margin weight" in cor
    a24 = text[text.index('<a id="errata-fu-lemma-a-2-4">'):]
    a24 = a24[:a24.index("<a id=", 5)]
    assert "(the statement as displayed): violated" in a24 and "**What follows.** None" in a24
    hand = next(x for x in a24.splitlines() if x.startswith("**Reproducing instance (by hand)"))
    assert "[1.0, 10.0]" in hand and "lhs_over_rhs = 4.46" in hand  # 4.459 at 3 digits
    # a table of contents whose links all land, and each entry shows its figure
    import re

    toc = text[text.index("## Contents"):text.index('<a id="errata-fu">')]
    links = re.findall(r"\]\(#([\w-]+)\)", toc)
    assert len(links) >= len(found) + 2
    for a in links:
        assert f'<a id="{a}"></a>' in text
    for r in report["claims"]:
        if r["verdict"] in FINDINGS:
            assert f"]({r['figure']})" in text and (tmp_path / r["figure"]).exists()
    # the report leads with the findings, then a summary grouped by paper
    md = (tmp_path / "audit.md").read_text()
    head = md[:md.index("## How to read this report")]
    assert "## What we found" in head
    for cid in found:
        assert f"[`{cid}`](#{cid.replace('.', '')})" in head
        assert f"## {cid}" in md  # the anchor's target
    summary = md[md.index("## Summary by paper"):]
    assert summary.index("### Fu, So & Collier") < summary.index("### Activation Decay")
    # index.md: every figure as a thumbnail with its verdict and links that exist
    index = (tmp_path / "index.md").read_text()
    for r in report["claims"]:
        row = next(ln for ln in index.splitlines() if f"`{r['id']}`" in ln)
        assert f'<img src="{r["figure"]}"' in row and f"**{r['verdict']}**" in row
        for target in re.findall(r"\]\(([^)#]+)\)", row):
            assert (tmp_path / target).exists(), target
    # one paper's page alone, from the same audit
    assert main(["errata", "ad", "--out", str(tmp_path)]) == 0
    only = (tmp_path / "errata-ad.md").read_text()
    assert "`ad.thm1.literal`" in only and "Fu, So & Collier" not in only


def test_errata_without_an_audit_is_a_one_line_error(tmp_path, capsys):
    assert main(["errata", "--out", str(tmp_path / "none")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "boundbench audit" in err[0]
