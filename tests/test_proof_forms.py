"""Issue 61, item 2: the closed-form bounds that are attained on a whole set (Cor. 1's erf bound,
Theorem 2's smoothed cross entropy, UEGR eq. 13 as an upper bound) are proven on their boxes from
a cancellation-free form of rhs - lhs, a form that is checked against the sides and refused when
it is wrong; the extended interval arithmetic those forms need."""

from __future__ import annotations

import dataclasses

import pytest

pytest.importorskip("flint")

FORMS = ("ad.cor1.global", "ad.thm2", "uegr.eq13.upper-bound", "ad.thm3.not-a-bound")


def _proofs(cid: str) -> tuple:
    import boundbench as bb

    search = bb.claims()[cid].search
    proof = search.proof
    return search, (proof if isinstance(proof, tuple) else (proof,))


@pytest.mark.parametrize("cid", FORMS)
def test_tight_closed_form_bounds_are_proven_on_their_boxes(cid):
    from boundbench.framework import proofs as pr
    from boundbench.framework.verdicts import NUMERIC_RTOL

    search, parts = _proofs(cid)
    for p in parts:
        for box in pr.integer_cases(search.space):
            out = pr.prove(p, box, rtol=NUMERIC_RTOL, atol=float(search.atol))
            assert out["status"] == "proven on the box", (cid, out)
            assert out["form_check"]["disagree"] == 0 and out["form_check"]["points"] == 65
            assert out["identity"]
    if cid != "ad.thm3.not-a-bound":  # Thm 3's form is s^2/2 ||p||^2 >= s^2/16: never tight
        assert any(p.attained for p in parts)  # tight: the report says where


def test_integer_axes_are_enumerated_and_capped():
    from boundbench.framework import proofs as pr

    cases = pr.integer_cases({"c": (2, 4, "int"), "x": (0.0, 1.0)})
    assert [c["c"] for c in cases] == [(2.0, 2.0), (3.0, 3.0), (4.0, 4.0)]
    assert all(c["x"] == (0.0, 1.0) for c in cases)
    with pytest.raises(ValueError, match="integer combinations"):
        pr.integer_cases({"a": (0, 9, "int"), "b": (0, 9, "int")})


@pytest.mark.parametrize("cid, scale", [("ad.cor1.global", 0.5), ("uegr.eq13.upper-bound", 1.5),
                                        ("ad.thm2", None)])
def test_a_wrong_form_is_refused_not_trusted(cid, scale):
    """A form off by a factor (or Theorem 2's Taylor bracket with a wrong curvature bound) fails
    its check against the sides at the fixed points, and the proof is refused."""
    from boundbench.framework import proofs as pr

    search, parts = _proofs(cid)
    p = parts[0]
    if scale is None:  # sup f'' = 1/16 instead of 1/4: the upper side's bracket too narrow
        wrong = dataclasses.replace(
            p, difference=lambda q: pr.hull(q["s"] ** 2 * 15 / 32, q["s"] ** 2 / 2))
    else:
        wrong = dataclasses.replace(p, difference=lambda q: p.difference(q) * scale)
    out = pr.prove(wrong, search.space, rtol=1e-5, atol=float(search.atol))
    assert out["status"].startswith("not a proof") and out["form_check"]["disagree"] > 0


def test_a_false_bound_with_the_true_bounds_form_is_not_proven():
    """The triangle inequality with its right side halved (false) keeps the true bound's form:
    the check against the sides catches the mismatch, so no false bound is ever proven."""
    from boundbench.framework import proofs as pr
    from boundbench.papers.uegr.regularizer import _triangle_arb

    search, (p,) = _proofs("uegr.eq13.upper-bound")
    false = dataclasses.replace(p, sides=lambda q: (_triangle_arb(q)[0], _triangle_arb(q)[1] / 2))
    out = pr.prove(false, search.space, rtol=1e-5, atol=1e-12)
    assert out["status"] != "proven on the box"


def test_certification_of_a_two_sided_bound_needs_both_sides():
    from boundbench.framework import proofs as pr
    from boundbench.framework.verdicts import Verdict

    search, parts = _proofs("ad.thm2")
    verdict = Verdict("holds", "", {"n_instances": 3, "search_evals": 5, "rtol": 1e-5})
    cert = pr.certification(verdict, search, proof=parts)
    assert cert["status"].startswith("proven on the box") and "attained as s -> 0" in \
        cert["status"]
    one_wrong = (parts[0], dataclasses.replace(parts[1], difference=lambda q: pr.hull(
        q["s"] ** 2 / 8, q["s"] ** 2 / 4)))
    cert = pr.certification(verdict, search, proof=one_wrong)
    assert cert["status"].startswith("not refuted in 8 evaluations")
    assert "refused its cancellation-free form" in cert["status"]


def test_extended_division_and_products_keep_the_sign():
    """Moore-Kearfott-Cloud's extended division: a non-negative numerator over a divisor that
    touches 0 from above is [0, +inf]; a product with that keeps its sign; 0 times the infinite
    end is 0; a divisor around 0 (both signs) still gives the whole line."""
    from flint import arb

    from boundbench.framework.intervals import Dual, Iv, hull, positive

    q = Iv(arb(1), arb(2)) / Iv(arb(0), arb(3))
    assert q.lo == 0 and not q.hi.is_finite()
    assert (Iv(arb(-2), arb(-1)) / Iv(arb(0), arb(3))).hi == 0
    assert not (Iv(arb(-1), arb(1)) / Iv(arb(0), arb(3))).lo.is_finite()
    assert not (Iv(arb(1), arb(2)) / Iv(arb(-1), arb(3))).lo.is_finite()
    assert (q * 2).lo == 0 and (q * Iv(arb(0), arb(0))).hi == 0
    assert (q * -3).hi == 0 and not (q * -3).lo.is_finite()
    assert (q + Iv(arb(1), arb(1))).lo == 1
    p = positive(Dual(Iv(arb(-3), arb(2)), ()))
    assert p.v.lo == 0 and p.v.hi == 2
    assert abs(Iv(arb(-3), arb(2))).lo == 0 and abs(Iv(arb(-3), arb(2))).hi == 3
    h = hull(Dual(Iv(arb(1), arb(2)), (Iv.of(1),)), 5)
    assert h.v.lo == 1 and h.v.hi == 5 and not h.g[0].is_finite()
    with pytest.raises(ValueError, match="at least one Dual"):
        hull(1, 2)
