"""A holding bound's size is the largest over every reading its search declares, with the
reading named; a reading that breaks it makes the verdict depend on the reading (issue 80)."""

from __future__ import annotations

import pytest

from boundbench.errors import InvalidArgument
from boundbench.framework.search.targeted import Search, worst_case
from boundbench.framework.search.verdict import apply_readings, apply_search
from boundbench.framework.verdicts.rules import Verdict
from boundbench.framework.verdicts.sizes import largest_known


def _search(alt_constant: float) -> Search:
    # lhs = x against rhs = 2 (its own reading) or alt_constant (the other): sup 0.5 vs 1/c
    return Search({"x": (0.0, 1.0)}, lambda p: (p["x"], 2.0), budget=(60, 60),
                  reading="rhs 2", readings={"rhs c": lambda p: (p["x"], alt_constant)})


def _run(s: Search) -> Verdict:
    found = worst_case(s, max_evals=60, seed=0)
    v = apply_search(Verdict("holds", "random family: holds", {"worst_lhs_over_rhs": 0.4}),
                     found)
    return apply_readings(v, s, found, max_evals=60, seed=0)


def test_the_size_is_the_largest_over_the_readings_and_names_it():
    v = _run(_search(1.25))
    assert v.status == "holds"
    rows = {r["reading"]: r["worst_ratio"] for r in v.evidence["search_by_reading"]}
    assert rows["rhs 2"] == pytest.approx(0.5) and rows["rhs c"] == pytest.approx(0.8)
    value, family, _ = largest_known(v.evidence)
    assert value == pytest.approx(0.8) and family == "the targeted search under rhs c"
    assert "the largest, 0.8, under rhs c" in v.reason
    assert v.evidence["margin_to_flip"] == pytest.approx(0.2, abs=1e-4)  # the nearer reading


def test_a_reading_that_breaks_the_bound_makes_it_depend_on_the_reading():
    v = _run(_search(0.5))
    assert v.status == "depends-on-reading"
    assert v.evidence["by_reading"]["rhs c"]["status"] == "violated"
    assert v.evidence["by_reading"]["rhs 2"]["status"] == "holds"
    assert "violated under rhs c" in v.reason


def test_other_readings_need_the_own_one_named():
    with pytest.raises(InvalidArgument, match="must name its own"):
        Search({"x": (0.0, 1.0)}, lambda p: (p["x"], 1.0), readings={"b": lambda p: (1, 1)})
