"""Issue 81 items 1 and 2: the climb on the box's lattice (corners, face centres, centre) is one
of falsify's members, early and counted like every other call."""

from __future__ import annotations

import math
import textwrap

import numpy as np

from boundbench.falsify import falsify
from boundbench.testing import bound
from boundbench.testing._lattice import lattice_round

CUBE = {f"x{i}": (-1.0, 1.0) for i in range(24)}


def _l1(c: float):
    def sides(p):
        x = np.array([p[f"x{i}"] for i in range(24)])
        return float(np.abs(x).sum()), c * math.sqrt(24) * float(np.linalg.norm(x))
    return bound(space=CUBE)(sides)


def test_a_corner_of_a_24_dimensional_cube_is_reached_at_once():
    """l1 <= 0.999 sqrt(d) l2 fails only where the |x_i| are nearly equal (no uniform draw of
    20,000 comes within 3%): the lattice's first point is a corner, its supremum 1/0.999."""
    hit = lattice_round(_l1(0.999), CUBE, chunk=100, seed=0)
    assert hit["evaluations"] == 100 and hit["confirmed"]
    assert hit["ratio"] == 1 / 0.999 or abs(hit["ratio"] * 0.999 - 1) < 1e-12
    # the correct bound is tight on the same corners: they hold
    ok = lattice_round(_l1(1.0), CUBE, chunk=100, seed=0)
    assert not ok["confirmed"] and abs(ok["ratio"] - 1) < 1e-12


def test_a_small_box_is_enumerated_whole_and_no_point_twice():
    calls = []

    def sides(p):
        calls.append((p["a"], p["n"]))
        return p["a"] * p["n"], 20.0

    hit = lattice_round(bound(space={"a": (0.0, 2.0), "n": (1, 9, "int")})(sides),
                        {"a": (0.0, 2.0), "n": (1, 9, "int")}, chunk=500, seed=3)
    assert hit["evaluations"] == len(calls) == len(set(calls)) == 9
    assert hit["ratio"] == 0.9 and hit["instance"] == {"a": 2.0, "n": 9}
    assert {n for _, n in calls} == {1, 5, 9}  # the integer axis's middle, rounded


def test_the_climb_follows_a_face_centre():
    """Gershgorin's ratio with 0.9 on the off-diagonal sums peaks with the diagonal at 0 (the
    middle of its axes) and the off-diagonal at +-1: a face centre of the 6-dimensional box."""
    space = {f"s{i}": (-1.0, 1.0) for i in range(6)}

    def sides(p):
        s = [p[f"s{i}"] for i in range(6)]
        a = np.array([[s[0], s[3], s[4]], [s[3], s[1], s[5]], [s[4], s[5], s[2]]])
        off = np.abs(a).sum(1) - np.abs(np.diag(a))
        return float(np.abs(np.linalg.eigvalsh(a)).max()), float(
            (np.abs(np.diag(a)) + 0.9 * off).max())

    hit = lattice_round(bound(space=space)(sides), space, chunk=400, seed=0)
    assert abs(hit["ratio"] - 1 / 0.9) < 1e-12, hit


def test_falsify_reaches_the_corner_early(tmp_path):
    (tmp_path / "cube.py").write_text(textwrap.dedent('''
        import math
        import numpy as np
        from boundbench.testing import bound

        @bound(space={f"x{i}": (-1.0, 1.0) for i in range(24)})
        def l1(p):
            x = np.array([p[f"x{i}"] for i in range(24)])
            return float(np.abs(x).sum()), 0.999 * math.sqrt(24) * float(np.linalg.norm(x))
    '''))
    out = falsify(f"{tmp_path / 'cube.py'}:l1", evaluations=400)
    assert out["violated"] and out["evaluations"] == 400
    assert abs(out["worst_ratio"] * 0.999 - 1) < 1e-12
    assert "lattice" in out["method"]


CHEBYSHEV = textwrap.dedent('''
    import math
    from boundbench.testing import bound

    @bound(space={"n": (1, 30, "int"), "t": (1, 30, "int"), "j": (1, 19, "int")})
    def half(p):  # Chebyshev's inequality for a binomial with t^2 doubled: wrong by 2 at most
        n, t, q = p["n"], p["t"], p["j"] / 20
        prob = sum(math.comb(n, i) * q ** i * (1 - q) ** (n - i) for i in range(n + 1)
                   if abs(i - n * q) >= t)
        return prob, n * q * (1 - q) / (2 * t * t)
''')


def test_an_integer_box_is_sized_at_least_as_well_as_de(tmp_path):
    """The literature benchmark's Chebyshev bound (an integer box of 17,100 points, its
    supremum 2 at n = 2, t = 1, q = 1/2 by enumeration, local maxima 1.54, 1.48, 1.36, 1.31
    one integer move apart from nothing better): with the same 2,000 calls and seed, the
    portfolio's worst is at least differential evolution's in each seed: on a box of integer
    axes its sizing runs the audit's search at the run's seed and size, repeats answered from
    memory (before, seeds 3, 4, 5, 7 and 8 stopped at 1.31 or 1.54 where DE reached 2)."""
    import sys

    from boundbench.framework.search.targeted import Search, worst_case

    (tmp_path / "cheb.py").write_text(CHEBYSHEV)
    sys.path.insert(0, str(tmp_path))
    try:
        from cheb import half
    finally:
        sys.path.remove(str(tmp_path))
    for seed in (0, 3, 4):
        out = falsify(f"{tmp_path / 'cheb.py'}:half", evaluations=2000, seed=seed)
        de = worst_case(Search(half.space, half.fn), max_evals=2000, seed=seed).worst_ratio
        assert out["violated"] and out["worst_ratio"] >= de * (1 - 1e-9), (seed, out, de)
