"""Structural parameters characterized like scales (issue 80): the worst ratio at each value,
the growth law, and the bracket at the claim's own value."""

from __future__ import annotations

import pytest

from boundbench.errors import InvalidArgument
from boundbench.framework.search.structure import Structure, characterize_structure
from boundbench.framework.search.targeted import Search


def _toy(rate: float) -> Structure:
    """At value K the ratio is rate^(K-1) x (1 - 1/k) for the family, at most 0.9 rate^(K-1)
    for the box's x <= 0.9: the family alone reaches the supremum rate^(K-1)."""
    def search(K: int) -> Search:
        return Search({"x": (0.0, 0.9)}, lambda p: (rate ** (K - 1) * p["x"], 1.0),
                      budget=(40, 40))

    return Structure("K", values=(1, 2, 3, 4, 5, 6), own=3, what="toy layers", search=search,
                     family=lambda K, k: {"x": 1.0 - 1.0 / k}, family_note="x -> 1",
                     upper=lambda K: rate ** (K - 1), upper_note="by construction",
                     budget=(40, 40))


def test_a_geometric_growth_is_found_with_its_rate_and_bracket():
    g = characterize_structure(_toy(1.3), evals=40, seed=0)
    assert g["growth"]["law"] == "geometric" and g["growth"]["unbounded"]
    assert g["growth"]["rate"] == pytest.approx(1.3, rel=1e-4)
    assert g["own_by"] == "family" and g["own_worst"] == pytest.approx(1.69, rel=1e-5)
    assert g["own_upper"] == pytest.approx(1.69)
    assert "grows like 1.3^(K - 1)" in g["note"] and "unbounded in K" in g["note"]
    assert "by a hand derivation, not proven here" in g["note"]


def test_a_flat_structure_is_bounded():
    g = characterize_structure(_toy(1.0), evals=40, seed=0)
    assert g["growth"]["law"] == "bounded" and g["growth"]["unbounded"] is False
    assert "bounded in K as far as followed" in g["note"]


@pytest.mark.parametrize("values, own", [((1, 2), 1), ((3, 2, 1), 2), ((1, 2, 3), 5)])
def test_a_structure_refuses_bad_values(values, own):
    with pytest.raises(InvalidArgument, match="values must be"):
        Structure("K", values=values, own=own, search=lambda k: None)
