"""What the report's renderers say alike about a claim entry of an ``audit.json``: its size
(how large the finding is), whether it is fragile, what certifies it, its anchor and caption,
its main numbers, the findings in severity order, the self-tests, why it was hard to check and
the command that remakes a report. The renderers (``markdown``, ``html``, ``errata``,
``summaries``, ``readme``) import these and none of each other."""

from __future__ import annotations

import shlex
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from boundbench.framework.claims import registry
from boundbench.framework.files.meta import provenance_text
from boundbench.framework.search.characterize import size as characterization_size
from boundbench.framework.verdicts.rules import fmt_ratio
from boundbench.framework.verdicts.sizes import largest_known
from boundbench.report.schema import AuditReport, ClaimEntry, Entry
from boundbench.report.vocabulary import is_finding, severity

# evidence a claim section shows first (the rest, and every nested record, is in audit.json)
_EVIDENCE_FIRST = ("worst_lhs_over_rhs", "worst_found_by_search", "max_lhs_minus_rhs", "rho",
                   "ci_low", "ci_high", "std_ratio", "mean_difference", "effect", "n_instances",
                   "n_seeds", "n_points", "deciding_reading", "margin_to_flip")


EVIDENCE_COLUMNS = 6


def table_cell(v: Any) -> str:
    """A table cell: numbers to 3 significant digits, pipes escaped (norms are written |x|)."""
    text = f"{v:.3g}" if isinstance(v, float) else str(v)
    return text.replace("|", "\\|")


# evidence keys as a table names them: which family of instances a number comes from (the
# random family's worst beside a violation the search found read as a contradiction)
_EVIDENCE_NAMES = {"worst_lhs_over_rhs": "random family: worst lhs/rhs",
                   "max_lhs_minus_rhs": "random family: max lhs - rhs",
                   "n_instances": "random family: instances",
                   "n_violations": "random family: violations",
                   "worst_found_by_search": "targeted search: worst lhs/rhs"}


def verdict_size(r: Entry) -> str:
    """How large the finding behind a verdict is, from its evidence: for a bound, the worst
    lhs/rhs and lhs - rhs (targeted search included); for a trend, its rank correlation or the
    end-to-end ratio; for readings, how many agree. Empty where the evidence says nothing."""
    ev = r.get("evidence") or {}
    parts = []
    worst = ev.get("worst_found_by_search", ev.get("worst_lhs_over_rhs"))
    if r.get("verdict") == "ill-posed":
        far = ev.get("farthest_pair_worst_lhs_over_rhs")
        parts.append(f"closest pair {_num(ev.get('worst_lhs_over_rhs'))}x, farthest "
                     f"{_num(far)}x the bound")
    elif (r.get("verdict") == "violated" and isinstance(ev.get("characterization"), dict)
          and ev["characterization"].get("probed")):
        # found by the tool beyond the search's box (framework.search.characterize), not a box corner
        parts.append(characterization_size(ev["characterization"], largest_known(ev)))
        st = ev.get("structure")
        if isinstance(st, dict) and (st.get("growth") or {}).get("law") == "geometric":
            parts.append(f"unbounded in {st['name']}, growing like "
                         f"{st['growth']['rate']:.4g}^({st['name']} - {st['rows'][0]['value']})")
        if (isinstance(ev.get("max_lhs_minus_rhs"), int | float) and ev["max_lhs_minus_rhs"] > 0):
            parts.append(f"the random family's lhs - rhs up to {_num(ev['max_lhs_minus_rhs'])}")
    elif isinstance(worst, int | float):
        known = largest_known(ev)
        # the largest known, named by the family that found it (not the random family's worst
        # beside a search's violation)
        size = known_size(known[0]).replace("lhs/rhs", "worst lhs/rhs") if known else ""
        parts.append(f"{size} ({known[1].removeprefix('the ')})" if known
                     else f"worst lhs/rhs {fmt_ratio(worst, 3)}")
        # the random family's largest excess; a violation only the search found has none
        if (isinstance(ev.get("max_lhs_minus_rhs"), int | float) and ev["max_lhs_minus_rhs"] > 0
                and r.get("verdict") == "violated"):
            parts.append(f"lhs - rhs up to {_num(ev['max_lhs_minus_rhs'])}")
    for key, name in (("spearman_rho", "rho"), ("mean_within_set_spearman", "within-set rho"),
                      ("end_ratio", "end-to-end ratio"), ("std_ratio", "std ratio"),
                      ("fitted_exponent", "exponent"), ("max_abs_error", "max |error|")):
        if isinstance(ev.get(key), int | float):
            parts.append(f"{name} {_num(ev[key])}")
            if key == "fitted_exponent" and isinstance(ev.get("predicted"), int | float):
                # a rate claim is "exponent at most the predicted one": an exponent of about 0
                # contradicts it without being the opposite effect, so the number says which
                parts[-1] += f" where the paper predicts at most {_num(ev['predicted'])}"
    if isinstance(ev.get("by_reading"), dict):
        counts = Counter(v.get("status") for v in ev["by_reading"].values())
        parts.append(", ".join(f"{n} {k}" for k, n in counts.items()) + " readings")
    return "; ".join(parts)


def _num(v: Any) -> str:
    return f"{v:.3g}" if isinstance(v, int | float) else str(v)


def is_fragile(r: Entry) -> bool:
    """Is a claim's verdict within a small margin of flipping (``evidence.fragile``, set by the
    verdict rules from ``margin_to_flip``)? A record entry carries it as ``fragile``."""
    if "fragile" in r:
        return bool(r["fragile"])
    return bool((r.get("evidence") or {}).get("fragile"))


def fragile_mark(r: Entry) -> str:
    return " (fragile)" if is_fragile(r) else ""


def anchor(claim_id: str) -> str:
    """The markdown anchor of a claim's section (GitHub's rule: lower case, dots dropped)."""
    return claim_id.lower().replace(".", "")


def findings(results: Sequence[Entry]) -> list[Entry]:
    """The claims that go against their paper (:func:`~boundbench.report.vocabulary.is_finding`),
    most severe first (:data:`~boundbench.report.vocabulary.SEVERITY`); within each, in the
    registry's order."""
    return sorted((r for r in results if is_finding(r)), key=severity)


def self_tests(results: Sequence[Entry]) -> str:
    """The self-tests among ``results`` (claims a package declared with ``self_test``, the
    verdict they expect) in one sentence: how many passed, and each that failed; "" if none."""
    tests = [r for r in results if r.get("self_test")]
    if not tests:
        return ""
    failed = [r for r in tests if r["verdict"] != r["self_test"]]
    text = (f"Self-tests of the packages' own checks (not findings): {len(tests) - len(failed)} "
            f"passed, {len(failed)} failed")
    if failed:
        text += " (" + "; ".join(f"`{r['id']}` expected {r['self_test']}, got {r['verdict']}"
                                 for r in failed) + ")"
    return text + "."


def replay_command(r: Entry) -> str | None:
    """The command that replays a violation without boundbench, run in the report's folder
    (where ``replay/`` lies beside it), or None where no replay was written."""
    from boundbench.framework.files.escape import safe_url

    rep = (r.get("evidence") or {}).get("replay")
    if not (isinstance(rep, dict) and rep.get("written") and rep.get("path")):
        return None
    path = safe_url(str(rep["path"]))
    return f"python {shlex.quote(path)}" if path else None


def certified(r: Entry) -> str:
    """What a verdict rests on beyond boundbench: a violation's standalone replay (its command
    and result), a holding bound's proof or the number of evaluations that did not refute it."""
    ev = r.get("evidence") or {}
    rep = ev.get("replay")
    if isinstance(rep, dict) and rep.get("path"):
        cmd = replay_command(r)
        return (f"{cmd} in the report's folder (numpy and mpmath only): {rep.get('result')}"
                if cmd else f"no replay written ({rep.get('result')})")
    cert = ev.get("certification")
    if isinstance(cert, dict) and cert.get("status"):
        return str(cert["status"])
    return ""


def caption(p: dict[str, str]) -> str:
    """A figure's caption: the command that remakes it, the commit, the config hash and the
    package versions (the same record is in the figure file's metadata)."""
    return provenance_text({**p, "command": f"`{p['command']}`"}) + "."


def evidence_items(ev: dict[str, Any]) -> list[tuple[str, str]]:
    """A claim's main numbers as (name, value) pairs, names and numbers only: the keys of
    ``_EVIDENCE_FIRST`` it has, then its other numbers, at most :data:`EVIDENCE_COLUMNS`
    (nested records, lists and long texts stay in ``audit.json``)."""
    def shown(v: Any) -> bool:
        return (isinstance(v, int | float) and not isinstance(v, bool)) or (
            isinstance(v, str) and 0 < len(v) <= 40)

    keys = [k for k in _EVIDENCE_FIRST if shown(ev.get(k))]
    keys += [k for k, v in ev.items() if k not in keys and shown(v)
             and not k.startswith("control_")]
    def ratio(k: str) -> bool:  # a number, where a crafted report may hold text (issue 84)
        return ("over_rhs" in k or k == "worst_found_by_search") and isinstance(
            ev[k], int | float) and not isinstance(ev[k], bool)

    return [(_EVIDENCE_NAMES.get(k, k.replace("_", " ")),
             fmt_ratio(float(ev[k])) if ratio(k) else table_cell(ev[k]))
            for k in keys[:EVIDENCE_COLUMNS]]


def rerun_scale(meta: Mapping[str, Any]) -> str:
    """The scale to name in a rerun command: a merged report of several scales names each
    claim's own (given in its run line)."""
    return "SCALE" if str(meta["scale"]).startswith("mixed") else str(meta["scale"])


def rerun_command(report: AuditReport) -> str:
    """The command that remakes ``report`` as it is: its scale and seed, ``--only`` the papers
    (whole) and claims it holds where that is not every installed claim (a plugin's own audit,
    a partial one), and ``--out`` its folder."""
    from boundbench import catalogue

    meta = report["meta"]
    catalogue.load()
    installed = catalogue.registry()
    ids = [r["id"] for r in report["claims"]]
    cmd = f"boundbench audit --scale {rerun_scale(meta)} --seed {meta['seed']}"
    if set(installed) - set(ids):
        tokens: list[str] = []
        for paper in dict.fromkeys(r["paper"] for r in report["claims"]):
            have = [r["id"] for r in report["claims"] if r["paper"] == paper]
            whole = {c for c, v in installed.items() if v.paper == paper}
            tokens += [paper] if set(have) == whole else have
        cmd += " --only " + " ".join(tokens)
    return f"{cmd} --out {shlex.quote(str(meta['out'])) if meta.get('out') else 'DIR'}"


def known_size(value: float) -> str:
    """A largest known ratio in words: "unbounded" or "lhs/rhs 4.46"."""
    return "unbounded" if value == float("inf") else f"lhs/rhs {fmt_ratio(value)}"


def size_line(ev: dict[str, Any]) -> str:
    """:func:`largest_known` in words: "largest known: lhs/rhs 4.46, by the hand instance; the
    targeted search 2.26, the random family 1" (or "largest known: unbounded, by ...")."""
    known = largest_known(ev)
    if known is None:
        return ""
    value, family, every = known
    others = [f"{f} {fmt_ratio(v)}" for v, f in every[1:]]
    return (f"largest known: {known_size(value)}, by {family}"
            + (f"; {', '.join(others)}" if others else ""))


def readings_of(r: Entry) -> list[str]:
    return sorted((r.get("evidence") or {}).get("by_reading") or {})


def difficult(rs: Sequence[Entry]) -> list[Entry]:
    """The claims that were hard to check: not decided under one reading with a margin (an
    undecided verdict, readings that the paper leaves open, a fragile margin)."""
    decided = ("holds", "supported", "violated", "contradicted", "no-effect")
    return [r for r in rs if r["verdict"] not in decided or len(readings_of(r)) > 1
            or is_fragile(r)]


def difficulty(r: Entry) -> str:
    """Why a claim was hard to check: readings the paper leaves open, a fragile margin, an
    undecided verdict and what would decide it, and the claim's own notes."""
    why = []
    if len(readings_of(r)) > 1:
        why.append(f"the paper leaves a choice open ({', '.join(readings_of(r))}); verdict "
                   f"{r['verdict']}")
    if is_fragile(r):
        why.append("decided within a small margin of its threshold (fragile)")
    if r["verdict"] in ("inconclusive", "not-testable", "ill-posed"):
        why.append(f"{r['verdict']}: {r['reason']}")
    if r.get("notes"):
        why.append(r["notes"])
    return "; ".join(why) or r["reason"]


def budgeted_and_fixed(report: AuditReport) -> tuple[list[ClaimEntry], list[ClaimEntry]]:
    """A budgeted audit's fine-tuning claims, split: those judged by a confidence sequence
    (the budget adds seeds to them) and those kept at their fixed seeds (trends over levels: a
    rank trend has no confidence sequence here, so seeds added at will would not be judged
    validly). The report and the command's summary both read this split."""
    seq = [r for r in report["claims"]
           if isinstance((r.get("evidence") or {}).get("sequential"), dict)]
    judged = {r["id"] for r in seq}
    fixed = [r for r in report["claims"]
             if registry.setting_of(r) == "fine-tuning" and r["id"] not in judged]
    return seq, fixed
