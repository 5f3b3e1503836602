"""Issue 79: proofs that are proofs. No tolerance in a proof (the near-misses are refuted), a
form used only when sympy proves it equal to rhs - lhs (the form wrong between any fixed points
is not trusted), the claim's whole domain where proven lemmas carry the box there, one
vocabulary of certificate levels, and ``boundbench prove`` on a user's own bound."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
import textwrap

import pytest

pytest.importorskip("flint")
pytest.importorskip("sympy")


def _pr():
    from boundbench.framework.certificates import proofs as pr

    return pr


def test_no_tolerance_refutes_the_issues_near_misses():
    pr = _pr()
    # x^2 <= (1 - 1e-6) x^2 on [0.5, 1]: false everywhere, "proven" under rtol 1e-5 before
    out = pr.prove(pr.Proof(lambda q: (q["x"] * q["x"], (1 - 1e-6) * q["x"] * q["x"])),
                   {"x": (0.5, 1.0)})
    assert out["status"] == "refuted" and 0.5 <= out["counterexample"]["x"] <= 1
    assert out["rtol"] == 0.0 and out["atol"] == 0.0
    # x <= 1 on [0, 1 + 5e-6]: false only near the edge
    out = pr.prove(pr.Proof(lambda q: (q["x"], 1)), {"x": (0.0, 1 + 5e-6)})
    assert out["status"] == "refuted" and out["counterexample"]["x"] > 1
    with pytest.raises(TypeError):  # no path takes a tolerance
        pr.prove(pr.Proof(lambda q: (q["x"], 1)), {"x": (0.0, 1.0)}, rtol=1e-5)


def test_a_form_wrong_between_its_check_points_is_not_trusted():
    """lhs = 1 + 0.01 sin^2(64 pi x), rhs = 1, form 0: the form meets the sides at every one of
    the 65 fixed points (the Halton points are dyadic), sympy does not prove it, and the sides
    alone refute the bound (false by 0.01)."""
    from boundbench.framework.certificates.identity import check_form
    from boundbench.framework.certificates.levels import Level, certify

    pr = _pr()
    p = pr.Proof(lambda q: (1 + 0.01 * pr.sin(64 * pr.pi() * q["x"]) ** 2, 1 + 0 * q["x"]),
                 difference=lambda q: 0 * q["x"], identity="a wrong lemma")
    assert check_form(p, {"x": (0.0, 1.0)})["disagree"] == 0  # the old guard passes it
    res = certify(p, {"x": (0.0, 1.0)})
    assert res["level"] == Level.REFUTED.value, res["status"]
    assert res["proof"]["sides_alone"]["status"] == "refuted"


def test_a_true_form_is_proven_by_sympy_and_a_hull_is_a_lemma():
    from boundbench.framework.certificates.identity import prove_identity
    from boundbench.framework.certificates.levels import Level, certify

    pr = _pr()
    exact = pr.Proof(lambda q: (q["x"] * (1 - q["x"]), 0.25 + 0 * q["x"]),
                     difference=lambda q: (q["x"] - 0.5) ** 2)
    assert prove_identity(exact, {"x": (0.0, 1.0)})["proven"]
    assert certify(exact, {"x": (0.0, 1.0)})["level"] == Level.DOMAIN.value
    # a hull is a lemma, where the sides alone leave boxes (2xy <= x^2 + y^2 is tight on the
    # whole diagonal: no box across it is monotone; x(1 - x) <= 1/4, tight at one point, the
    # sides alone prove)
    box = {"x": (0.0, 1.0), "y": (0.0, 1.0)}
    enclosed = pr.Proof(lambda q: (2 * q["x"] * q["y"], q["x"] ** 2 + q["y"] ** 2),
                        difference=lambda q: pr.hull(0 * q["x"], 2), identity="by hand")
    why = prove_identity(enclosed, box)
    assert not why["proven"] and "hull" in why["why"]
    res = certify(enclosed, box)
    assert res["level"] == Level.LEMMA.value and "checked at 65 points" in res["status"]
    # a form off by a factor: sympy refuses it (and the point guard at once)
    wrong = dataclasses.replace(exact, difference=lambda q: 2 * (q["x"] - 0.5) ** 2)
    assert not prove_identity(wrong, {"x": (0.0, 1.0)})["proven"]


def test_sign_cases_of_max_and_abs_are_consistent():
    """max(-d, 0) and |d| share one case split on the sign of d: the triangle form's identity
    is proven in both cases, and a form wrong in one case only is not."""
    import sympy

    from boundbench.framework.certificates.identity import is_zero

    d = sympy.Symbol("d", real=True)
    assert is_zero(sympy.Abs(d) - d - 2 * sympy.Max(-d, 0))[0]
    assert not is_zero(sympy.Abs(d) - d - 3 * sympy.Max(-d, 0))[0]


def test_homogeneity_reduction_is_checked_and_can_fail():
    from boundbench.framework.certificates.identity import Homogeneous

    pr = _pr()
    box = {"a": (-1.0, 1.0), "b": (-1.0, 1.0)}
    dom = {"a": (-float("inf"), float("inf")), "b": (-float("inf"), float("inf"))}
    ok = pr.Proof(lambda q: (pr.sqrt(q["a"] ** 2 + q["b"] ** 2), abs(q["a"]) + abs(q["b"])))
    assert Homogeneous(("a", "b")).check(ok, box, dom)["proven"]
    # a constant on the right: not homogeneous, so the cube proves nothing beyond itself
    bad = pr.Proof(lambda q: (pr.sqrt(q["a"] ** 2 + q["b"] ** 2), 2 + 0 * q["a"]))
    assert not Homogeneous(("a", "b")).check(bad, box, dom)["proven"]
    # a box that is not symmetric about 0 covers no cone
    assert not Homogeneous(("a", "b")).check(ok, {"a": (0.0, 1.0), "b": (-1.0, 1.0)},
                                             dom)["proven"]


@pytest.mark.parametrize("cid, level", [
    ("uegr.eq13.upper-bound", "proven on the claim's whole stated domain"),
    ("ad.thm3.not-a-bound", "proven on the claim's whole stated domain"),
    ("fu.lemma-a.2.1", "proven on the claim's whole stated domain"),
    ("ad.thm2", "proven given a stated lemma"),
    ("ad.cor1.global", "proven given a stated lemma")])
def test_built_in_proofs_reach_their_levels(cid, level):
    import boundbench as bb
    from boundbench.framework.certificates.levels import certify

    s = bb.claims()[cid].search
    res = certify(s.proof, s.space, quantities=s.quantities)
    assert res["level"] == level, res["status"]
    if cid == "ad.thm2":  # says why the class counts beyond 2 are not covered
        assert "two classes only" in res["status"] and "classes in [2, inf]" in res["status"]


def test_a_false_bound_behind_a_true_bounds_form_is_not_proven():
    import boundbench as bb
    from boundbench.framework.certificates.levels import certify
    from boundbench.papers.uegr.regularizer import _triangle_arb

    s = bb.claims()["uegr.eq13.upper-bound"].search
    false = dataclasses.replace(s.proof, sides=lambda q: (_triangle_arb(q)[0],
                                                          _triangle_arb(q)[1] / 2))
    res = certify(false, s.space)
    assert res.get("level") not in ("proven on the claim's whole stated domain",
                                    "proven on a stated sub-box of its domain")


def test_not_provable_claims_say_why():
    import boundbench as bb
    from boundbench.framework.certificates.proofs import NotProvable

    for cid in ("fu.lemma-a.2.3", "fu.thm2.2.appendix", "ad.thm1.block"):
        proof = bb.claims()[cid].search.proof
        assert isinstance(proof, NotProvable) and proof.why


_USER = textwrap.dedent('''
    import numpy as np
    from boundbench.testing import bound


    @bound(space={"x": (0.0, 3.0), "y": (0.0, 3.0)})
    def amgm(p):
        return np.sqrt(p["x"] * p["y"]), (p["x"] + p["y"]) / 2


    @bound(space={"x": (0.5, 1.0)})
    def near_miss(p):
        return p["x"] ** 2, (1 - 1e-9) * p["x"] ** 2


    @bound(space={"c": (0.1, 10.0)})
    def via_solver(p):
        return float(np.linalg.norm([p["c"], 1.0])), 10.0
    ''')


def test_prove_command_proves_refutes_and_refuses(tmp_path):
    (tmp_path / "mine.py").write_text(_USER)
    exe = [sys.executable, "-c", "import sys; from boundbench.cli import main; "
           "sys.exit(main(sys.argv[1:]))"]

    def run(name):
        return subprocess.run([*exe, "prove", f"mine.py:{name}", "--out", "out"],
                              cwd=tmp_path, capture_output=True, text=True, timeout=300)

    tight = run("amgm")  # tight on the line x = y: an automatic form, proven by sympy
    assert tight.returncode == 0, tight.stderr
    assert "proven on the claim's whole stated domain" in tight.stdout
    miss = run("near_miss")
    assert miss.returncode == 1 and "refuted" in miss.stdout
    rec = json.loads((tmp_path / "out" / "prove-near_miss.json").read_text())
    replay = tmp_path / rec["replay"]["path"].split(str(tmp_path) + "/")[-1]
    # the replay runs in an interpreter where boundbench cannot be imported
    bare = subprocess.run([sys.executable, "-c", "import sys; sys.modules['boundbench'] = None; "
                           f"sys.argv = ['r']; exec(open({str(replay)!r}).read())"],
                          capture_output=True, text=True, timeout=120)
    assert bare.returncode == 0 and "FALSE" in bare.stdout, bare.stdout + bare.stderr
    refused = run("via_solver")
    assert refused.returncode == 0 and "not provable by this method" in refused.stdout
    assert "falsify" in refused.stdout and len(refused.stdout.splitlines()[1]) < 400


def test_a_float_product_is_the_exact_number_arb_encloses():
    """0.1 (0.2 x) and (0.1 0.2) x differ in their last bits: arb computes the left one exactly,
    sympy's Floats would round it to the right one. Floats enter the symbolic path as exact
    rationals, so a form 0 for their difference is not an identity."""
    from boundbench.framework.certificates.identity import prove_identity

    pr = _pr()
    assert 0.1 * 0.2 != 0.02  # the two constants are different doubles
    p = pr.Proof(lambda q: (0.1 * (0.2 * q["x"]), (0.1 * 0.2) * q["x"]),
                 difference=lambda q: 0 * q["x"])
    assert not prove_identity(p, {"x": (0.5, 1.0)})["proven"]


def test_every_count_is_linked_to_the_proofs_own_form():
    """The symbolic-count lemma of Theorem 3 holds, and a wrong substitution of its symbols (the
    general statement read at another softmax) breaks the link to the proof's own form."""
    import boundbench as bb
    from boundbench.framework.certificates.identity import EveryCount
    from boundbench.papers.ad import proofs as adp

    s = bb.claims()["ad.thm3.not-a-bound"].search
    box = {**s.space, "classes": (2, 3, "int")}
    good = EveryCount("classes", "", general=adp._thm3_every_count, at=adp._thm3_at)
    assert good.check(s.proof, box, {})["proven"]

    def wrong_at(c, q):
        import sympy

        return {**adp._thm3_at(c, q), adp._THM3_E[1]: sympy.exp(q["z0"])}

    bad = EveryCount("classes", "", general=adp._thm3_every_count, at=wrong_at)
    assert not bad.check(s.proof, box, {})["proven"]


def test_a_reparametrization_lemma_that_fails_lowers_the_level():
    """Lemma A.2.1's Gram reading with the plane's second vector at the wrong norm: the lemma is
    not proven, and the level drops to a sub-box (nothing unproven reaches 'whole domain')."""
    import sympy

    import boundbench as bb
    from boundbench.framework.certificates.identity import Lemma
    from boundbench.framework.certificates.levels import Level, certify

    s = bb.claims()["fu.lemma-a.2.1"].search

    def wrong(q, lhs, rhs):
        return [2 * sympy.sqrt((1 + q["dx"]) ** 2 + (2 + q["dy"]) ** 2) - rhs]

    p = dataclasses.replace(s.proof, reductions=(Lemma("a wrong plane", wrong),))
    assert certify(p, s.space)["level"] == Level.SUBBOX.value


def test_bounds_tight_at_a_point_or_an_edge_with_transcendentals_are_proven():
    """A derivative enclosure that starts at exactly 0 (``exp`` at 0, ``cos`` at 0 ending at
    exactly 1) proves ``D`` monotone on a box touching the tight point, so 1 + x <= exp(x) on
    [-1, 1] and sin x <= x on [0, 1] are proven; the same bounds false by 1e-12 are refuted."""
    import numpy as np

    from boundbench.framework.certificates import ufuncs  # noqa: F401 - numpy's ufuncs on Duals

    pr = _pr()
    for sides, box in ((lambda q: (1 + q["x"], np.exp(q["x"])), {"x": (-1.0, 1.0)}),
                       (lambda q: (np.sin(q["x"]), q["x"]), {"x": (0.0, 1.0)})):
        assert pr.prove(pr.Proof(sides), box)["status"] == "proven on the box"
    for sides, box in ((lambda q: ((1 + 1e-12) * (1 + q["x"]), np.exp(q["x"])),
                        {"x": (-1.0, 1.0)}),
                       (lambda q: (np.sin(q["x"]), (1 - 1e-12) * q["x"]), {"x": (0.0, 1.0)})):
        assert pr.prove(pr.Proof(sides), box)["status"] == "refuted"


def test_the_sine_and_cosine_enclosures_contain_every_value():
    """``Iv.periodic``: 1 (or -1) exactly where a maximum (minimum) may lie inside, the ends'
    values elsewhere; checked on 1001 points of intervals across the period."""
    import math

    from flint import arb

    from boundbench.framework.certificates.intervals import Iv

    for lo, hi in ((0, 0.1), (-0.1, 0.2), (3, 3.3), (1.5, 1.6), (-10, -9), (5, 20), (2, 2)):
        box = Iv(arb(lo), arb(hi))
        for name, f in (("cos", math.cos), ("sin", math.sin)):
            got = box.periodic(name)
            vals = [f(lo + (hi - lo) * i / 1000) for i in range(1001)]
            assert float(got.lo) <= min(vals) and float(got.hi) >= max(vals), (lo, hi, name)
    assert Iv(arb(0), arb(0.1)).periodic("cos").hi == 1  # exactly: sin x <= x's derivative
