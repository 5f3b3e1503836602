"""The violation region as a property of the claim (issue 80): the infimum (or supremum) of a
scale over every violating instance, not one ray's crossing."""

from __future__ import annotations

import numpy as np
import pytest

from boundbench.errors import InvalidArgument
from boundbench.framework.search.region import Scale, region
from boundbench.framework.search.targeted import Search, worst_case

RTOL = 1e-5


def _planted(grows: str = "up") -> tuple[Search, Scale]:
    """lhs = B (1 - (t - 0.3)^2) against rhs = 1 (``grows="up"``): violated exactly where
    B > 1 / (1 - (t - 0.3)^2), so over all instances from B = 1 on (at t = 0.3), while the ray
    from any other t crosses 1 later. With ``"down"`` the same in 1/B."""
    def sides(p: dict):
        g = 1.0 - (p["t"] - 0.3) ** 2
        return (p["B"] * g if grows == "up" else g / p["B"]), 1.0

    s = Search({"B": (0.5, 8.0, "log"), "t": (-1.0, 1.0)}, sides, budget=(200, 200))
    sc = Scale("B", of=lambda p: p["B"], at=lambda p, b: {**p, "B": b}, range=(1e-2, 1e2),
               fixes=("B",), grows=grows)
    return s, sc


@pytest.mark.parametrize("grows", ["up", "down"])
def test_the_region_is_the_claims_not_the_rays(grows):
    s, sc = _planted(grows)
    start = {"B": 8.0 if grows == "up" else 0.5, "t": 0.9}  # a violation far from t = 0.3
    ray_crossing = 1.0 / (1.0 - 0.6**2)  # where this instance's own ray crosses 1: 1.5625
    g = region(s, sc, start=start, evals=120, seed=0, rtol=RTOL)
    assert g["found"] and g["side"] == ("infimum" if grows == "up" else "supremum")
    # the claim's boundary is B = 1, within the stage's 2% bracket and the replay margin
    assert g["boundary"] == pytest.approx(1.0, rel=0.03)
    assert abs(np.log(g["boundary"])) < abs(np.log(ray_crossing)) / 5
    assert g["boundary_ratio"] > 1 + RTOL  # the boundary instance violates
    assert g["holding_ratio"] <= 1 + RTOL  # and its control holds
    assert ("violated from B = " if grows == "up" else "violated up to B = ") in g["note"]
    assert "no violation found" in g["note"] and f"{g['n_evaluations']} evaluations" in g["note"]
    # every search is in the evidence, and their evaluations add up with the rays'
    assert sum(x["evaluations"] for x in g["searches"]) <= g["n_evaluations"]


def test_the_same_seed_gives_the_same_region():
    s, sc = _planted()
    a = region(s, sc, start={"B": 8.0, "t": 0.9}, evals=60, seed=4, rtol=RTOL)
    b = region(s, sc, start={"B": 8.0, "t": 0.9}, evals=60, seed=4, rtol=RTOL)
    assert a == b


def test_a_bound_violated_at_every_scale_says_so():
    s = Search({"B": (0.5, 8.0, "log"), "t": (0.0, 1.0)}, lambda p: (1.0 + p["t"] ** 2, 1.0),
               budget=(100, 100))
    sc = Scale("B", of=lambda p: p["B"], at=lambda p, b: {**p, "B": b}, range=(1e-2, 1e2),
               fixes=("B",))
    found = worst_case(s, max_evals=100, seed=0)
    g = region(s, sc, start=found.instance, evals=40, seed=0, rtol=RTOL)
    assert not g["found"] and g["everywhere"]
    assert g["boundary"] == pytest.approx(1e-2)
    assert "violated at every value of B tried, to the end of the scale's range" in g["note"]


@pytest.mark.parametrize("bad, says", [
    ({"range": (0.0, 1.0)}, "range must be"), ({"range": (2.0, 1.0)}, "range must be"),
    ({"grows": "sideways"}, "grows must be"), ({"budget": (5, 10)}, "budget must be")])
def test_a_scale_refuses_bad_values(bad, says):
    kw = {"range": (1e-2, 1e2), **bad}
    with pytest.raises(InvalidArgument, match=says):
        Scale("B", of=lambda p: 1.0, at=lambda p, b: p, **kw)


def test_a_search_refuses_scales_that_are_not_scales():
    with pytest.raises(InvalidArgument, match="scales must hold Scale values"):
        Search({"x": (0.0, 1.0)}, lambda p: (p["x"], 1.0), scales=("B",))
