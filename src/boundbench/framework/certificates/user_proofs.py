"""A user's bound, ``fn(params) -> (lhs, rhs)`` written with numpy's ufuncs, proven over its
declared space: the certifier on its sides, then sympy's automatic forms where the sides alone
leave boxes (issue 79, item 6). Shared by ``boundbench prove`` (:mod:`boundbench.prove`) and
the pytest plugin's ``--prove`` (:mod:`boundbench.testing`), which sit in different layers."""

from __future__ import annotations

import dataclasses
from typing import Any

from boundbench.errors import InvalidArgument
from boundbench.framework.certificates import ufuncs  # noqa: F401 - numpy's ufuncs on Duals and symbols

DEFAULT_BOXES = 20_000


def prove_function(fn: Any, space: dict[str, tuple], *, boxes: int = DEFAULT_BOXES
                   ) -> dict[str, Any]:
    """:func:`~boundbench.framework.certificates.levels.certify` on ``fn(params) -> (lhs, rhs)``
    over ``space`` (the bound's stated domain), then, where the sides alone leave boxes,
    sympy's automatic forms; ``level`` is always one of the vocabulary's."""
    from boundbench.framework.certificates.levels import Level, certify
    from boundbench.framework.certificates.proofs import Proof

    proof = Proof(_user_sides(fn), budget=boxes)
    try:
        res = certify(proof, space)
    except Exception as exc:  # noqa: BLE001 - the user's function met the vocabulary's limits
        why = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        return {"level": Level.NOT_PROVABLE.value,
                "status": f"not provable by this method: evaluating the bound in intervals "
                f"raised {type(exc).__name__}: {why}"}
    if res.get("level") is None:  # tight on a set? sympy's forms of rhs - lhs, each proven
        res = _with_automatic_form(proof, space, res)
    if res.get("level") is None:
        res.update(level=Level.NOT_REFUTED.value, status=f"not refuted: {res['status']} "
                   f"(boxes left: {_undecided(res)})")
    return res


def _user_sides(fn: Any) -> Any:
    """The user's function as a proof's sides: numpy's ufuncs on its Dual (or, for the
    identity's proof, Symbolic) parameters reach the vocabulary (:mod:`boundbench.framework.
    ufuncs`)."""
    return lambda q: _pair(fn(dict(q)))


def _with_automatic_form(proof: Any, space: dict[str, tuple], res: dict[str, Any]
                         ) -> dict[str, Any]:
    from boundbench.framework.certificates.forms import automatic_forms
    from boundbench.framework.certificates.levels import certify

    for name, form in automatic_forms(proof.sides, space):
        try:
            got = certify(dataclasses.replace(proof, difference=form, identity=name), space)
        except Exception:  # noqa: BLE001 - a form the vocabulary cannot evaluate: the next
            continue
        if got.get("level") is not None and got.get("level") != "proven given a stated lemma":
            return {**got, "automatic_form": name}
    return res


def _pair(sides: Any) -> tuple[Any, Any]:
    if not (isinstance(sides, tuple | list) and len(sides) == 2):
        raise InvalidArgument(f"the bound must return (lhs, rhs), got {type(sides).__name__}")
    return sides[0], sides[1]


def runs_of(res: dict[str, Any]) -> list[dict[str, Any]]:
    p = res.get("proof")
    return p if isinstance(p, list) else [p] if p else []


def _undecided(res: dict[str, Any]) -> list:
    return [b for r in runs_of(res) for b in r.get("undecided", [])][:3]
