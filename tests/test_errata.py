"""The errata sheet is generated from an audit: one page per paper, an entry per finding with
what was measured, the smallest reproducing instance and the known correction."""

import json

from boundbench.cli import main
from boundbench.framework.verdicts import FINDINGS


def test_audit_writes_the_errata_sheet(tmp_path, capsys):
    ids = ["fu.lemma-a.2.5", "fu.lemma-a.2.4", "fu.lemma-a.2.4.v", "ad.thm1.literal",
           "ad.thm1.block"]
    assert main(["audit", "--only", *ids, "--out", str(tmp_path)]) == 0
    text = (tmp_path / "errata.md").read_text()
    report = json.loads((tmp_path / "audit.json").read_text())
    found = [r["id"] for r in report["claims"] if r["verdict"] in FINDINGS]
    assert set(found) >= {"fu.lemma-a.2.5", "ad.thm1.literal"}
    for cid in found:
        assert f"`{cid}`" in text
    for cid in set(ids) - set(found):  # claims that hold are not errata
        assert f"`{cid}`" not in text
    # one page per paper, the smallest failing instance, the known corrections
    assert "## Fu, So & Collier" in text and "## Activation Decay" in text
    a25 = text[text.index('<a id="errata-fu-lemma-a-2-5">'):]
    line = next(x for x in a25.splitlines() if x.startswith("**Smallest reproducing"))
    assert "n = 10, lam = 1" in line  # the fewest points, lam >= 1: where it fails
    assert "W^(1..L-1)" in text and "||v_hat(S^i)|| <= ||v_hat(S)||" in text
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
