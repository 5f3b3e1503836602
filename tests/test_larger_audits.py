"""The records of standard- and paper-scale audits the README quotes beside the quick verdicts
(issue 43, item 5): ``boundbench findings --keep`` adds one, the latest record of a claim wins,
each verdict is dated and labelled with its scale, device and budget."""

import json

import pytest

from boundbench import generated
from boundbench.report.larger import beside_larger


def _claim(cid, verdict, against=False, size=""):
    return {"id": cid, "paper": cid.split(".")[0], "where": "§1", "verdict": verdict,
            "size": size, "against_paper": against, "fragile": False}


def _record(created, scale, claims, device="CPU", budget=None):
    return {"created": created, "scale": scale, "seed": 0, "commit": "abc", "device": device,
            "budget_seconds": budget, "counts": {}, "claims": claims}


QUICK = _record("2026-11-26T10:00", "quick", [_claim("fu.plm.a", "inconclusive"),
                                              _claim("fu.plm.b", "inconclusive"),
                                              _claim("fu.plm.c", "inconclusive"),
                                              _claim("fu.thm", "holds")])


def test_the_latest_record_of_each_claim_is_shown_in_its_group():
    old = _record("2026-11-25T10:00", "standard", [_claim("fu.plm.a", "supported"),
                                                   _claim("fu.plm.b", "inconclusive"),
                                                   _claim("fu.thm", "violated", True)],
                  budget=5400.0)
    new = _record("2026-11-26T12:00", "standard", [_claim("fu.plm.a", "inconclusive"),
                                                   _claim("fu.plm.b", "no-effect", True, "x 1.0")],
                  device="NVIDIA H100", budget=300.0)
    lines = beside_larger(QUICK, [new, old])  # any order: the newest wins
    text = "\n".join(lines)
    assert "2 claims the quick scale leaves undecided" in text
    assert ("- against the paper: `fu.plm.b` no-effect (standard, 2026-11-26, NVIDIA H100, "
            "5-min budget, x 1.0)") in lines
    assert ("- still undecided: `fu.plm.a` inconclusive (standard, 2026-11-26, NVIDIA H100, "
            "5-min budget)") in lines
    # a claim no record ran is not invented; a decided quick verdict that a larger scale
    # decided otherwise is shown with both verdicts (issue 60), one it confirms is not repeated
    assert "fu.plm.c" not in text
    assert ("`fu.thm` quick **holds**, standard (2026-11-25, CPU, 90-min budget) "
            "**violated**") in lines[-1] and lines[-1].startswith("Decided otherwise")
    same = beside_larger(QUICK, [_record("2026-11-25T10:00", "paper", [_claim("fu.thm", "holds")])])
    assert same == []
    assert beside_larger(QUICK, []) == []


def test_keep_adds_a_standard_audit_replaces_the_same_one_and_refuses_quick(tmp_path):
    path = tmp_path / "larger.json"
    report = json.loads((generated.Path(__file__).parents[1] / "docs" / "last-audit.json")
                        .read_text())
    claims = [{"id": "fu.plm.a", "paper": "fu", "where": "§1", "verdict": "supported",
               "reason": "r", "evidence": {}, "run": {"budget_seconds": 600.0}}]
    meta = {"created": "2026-11-26T12:00:00+00:00", "scale": "standard", "seed": 0,
            "counts": {"supported": 1}, "machine": {"gpus": ["NVIDIA H100"]}}
    rep = {"meta": meta, "claims": claims}
    generated.keep_larger(rep, path)
    generated.keep_larger(rep, path)  # the same audit again: replaced, not doubled
    recs = generated.read_larger(path)
    assert len(recs) == 1 and recs[0]["device"] == "NVIDIA H100"
    assert recs[0]["budget_seconds"] == 600.0
    with pytest.raises(ValueError, match="scale 'quick'"):
        generated.keep_larger({**rep, "meta": {**meta, "scale": "quick"}}, path)
    assert report["scale"] == "quick"  # the README's own record is a quick one
    path.write_text("{}")
    with pytest.raises(ValueError, match="not readable"):
        generated.read_larger(path)
