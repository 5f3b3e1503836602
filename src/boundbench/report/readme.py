"""The short record of an audit that the repository keeps (``docs/last-audit.json``) and the
README's findings block made from it: dated, one line per finding, errors first, then the
latest larger-scale verdicts beside it."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from boundbench.framework.files.escape import markdown_safe
from boundbench.framework.verdicts.rules import plural
from boundbench.report.entries import certified, findings, fragile_mark, is_fragile, self_tests, verdict_size
from boundbench.report.larger import beside_larger
from boundbench.report.schema import AuditReport, Entry
from boundbench.report.vocabulary import certificate, certificate_counts, is_finding


def record(report: AuditReport) -> dict[str, Any]:
    """The short record of an audit that the docs quote (``docs/last-audit.json``): when, at
    which scale, seed and commit, the counts, and each claim's verdict and size."""
    meta = report["meta"]
    mach = meta.get("machine") or {}
    return {"created": meta["created"], "scale": meta["scale"], "seed": meta["seed"],
            "commit": meta.get("commit"), "seconds": meta.get("seconds"),
            "lock_sha256": meta.get("lock_sha256"),
            "lock_pins_not_matched": meta.get("lock_pins_not_matched"),
            "cpu_model": mach.get("cpu_model"), "instruction_sets": mach.get("instruction_sets"),
            "numpy_simd": mach.get("numpy_simd"), "blas": mach.get("blas"),
            "device": ", ".join(mach.get("gpus") or []) or "CPU",
            "budget_seconds": max(((r.get("run") or {}).get("budget_seconds") or 0
                                   for r in report["claims"]), default=0) or None,
            "counts": meta["counts"],
            "claims": [{"id": r["id"], "paper": r["paper"], "where": r["where"],
                        "kind": r.get("kind"), "verdict": r["verdict"], "size": verdict_size(r),
                        "certified": certified(r),
                        **({"certificate": c} if (c := certificate(r)) else {}),
                        "against_paper": is_finding(r), "fragile": is_fragile(r),
                        **({"self_test": r["self_test"]} if r.get("self_test") else {}),
                        "margin_to_flip": (r.get("evidence") or {}).get("margin_to_flip"),
                        "margin_units": (r.get("evidence") or {}).get("margin_units"),
                        **({"calibration": cal} if (cal := calibration_record(r)) else {})}
                       for r in report["claims"]]}


def calibration_record(r: Entry) -> dict[str, Any] | None:
    """A stochastic verdict's calibration in short (issue 64): its realised false-decision rate
    on nulls drawn from its own data with that rate's 95% interval, the smallest effect it
    detects in its units, and the procedure that decided (a fallback where the first one was
    refused); ``None`` for a verdict without one."""
    ev = r.get("evidence") or {}
    rate, ci = ev.get("realised_false_decision_rate"), ev.get("realised_false_decision_ci")
    if not isinstance(rate, float) or not isinstance(ci, list):
        return None
    return {"rate": rate, "low": ci[0], "high": ci[1], "min_detectable_effect":
            ev.get("min_detectable_effect"), "units": ev.get("min_detectable_units"),
            "decided_by": ev.get("decided_by"), "fell_back": "refused" in ev,  # and its level:
            "alpha": (ev.get("calibration") or {}).get("alpha", 0.05),  # 5%, a family's 0.1%
            "by_construction": bool((ev.get("calibration") or {}).get("by_construction")),
            # issue 82: how many battery shapes admitted it, and whose reach is the one given
            "battery_families": int((ev.get("calibration") or {}).get("battery_families") or 0),
            "min_detectable_under": ev.get("min_detectable_under"),
            # a rate above the level stands beside a verdict it does not concern, or was
            # refused where it would have decided (that step inconclusive)
            "admitted": (ev.get("calibration") or {}).get("admitted"),
            "kept": ev.get("calibration_kept"), "refused_at_step": ev.get("refused_at_step")}


def _calibration_line(claims: Sequence[Entry]) -> str:
    """How the record's stochastic verdicts are decided (issue 82): by tests valid by
    construction (exact permutation and binomial tests, whose measured rates on their own nulls
    are a check), or by procedures admitted where the upper end of their measured rate's 95%
    interval is at most their level plus 1 point; those whose recorded rate is above that named
    with what it means for their verdict; or nothing for a record made before calibration
    existed."""
    cal = [c for c in claims if c.get("calibration")]
    if not cal:
        return ""
    exact = [c for c in cal if c["calibration"].get("by_construction")]
    other = [c for c in cal if not c["calibration"].get("by_construction")]
    shown = [c for c in other if c["calibration"]["high"] <= c["calibration"]["alpha"] + 0.01]
    above = [c for c in other if c not in shown]
    fell = [c["id"] for c in cal if c["calibration"].get("fell_back")]

    def span(cs: Sequence[Entry], key: str) -> str:
        v = [c["calibration"][key] for c in cs]
        return f"{min(v):.1%} to {max(v):.1%}"

    def why(c: Entry) -> str:
        k = c["calibration"]
        if k.get("kept"):
            return f"`{c['id']}` {k['high']:.1%}, kept: {k['kept']}"
        if k.get("refused_at_step") is not None:
            return (f"`{c['id']}` {k['high']:.1%}, refused at t = {k['refused_at_step']} "
                    "(inconclusive there; the verdict is the other steps' and readings')")
        return f"`{c['id']}` {k['high']:.1%}, refused ({c['verdict']})"

    parts = []
    if exact:
        parts.append(f"{len(exact)} decided by tests valid by construction (exact permutation "
                     f"and binomial tests; their rates on their own nulls, a check, "
                     f"{span(exact, 'rate')})")
    if shown:
        on = sum(1 for c in shown if c["calibration"].get("battery_families"))
        battery = (f", {on} of them also on data of their sizes with each of the battery's six "
                   "null shapes (normal, t3, exponential, lognormal, failed runs, ties)"
                   if on else "")
        parts.append(f"{len(shown)} of the other {len(other)} admitted by their rate on nulls "
                     f"resampled from their own data{battery}, the upper end of every 95% "
                     f"interval at most the level plus 1 point (5%, 0.1% for a family of Monte "
                     f"Carlo tests; upper ends {span(shown, 'high')})")
    if above:
        parts.append(f"{len(above)} with a worst upper end above it (" + "; ".join(map(why, above))
                     + ")")
    return (f"; its {len(cal)} calibrated stochastic verdicts: " + ", ".join(parts)
            + (f"; {len(fell)} decided by a fallback after the first procedure was refused "
               f"({', '.join(f'`{i}`' for i in fell)})" if fell else "")
            + "; the fine-tuning claims on bounded metrics decide by procedures valid by "
            "construction ([how](docs/fine-tuning.md))")


def _certified_line(claims: Sequence[Entry]) -> str:
    """How much of a record is checkable without boundbench (issue 61), or nothing for a record
    made before certification existed."""
    bounds = [c for c in claims if c.get("kind") == "bound"]
    if not any(c.get("certified") for c in bounds):
        return ""
    bad = [c for c in bounds if c["verdict"] == "violated"]
    replayed = [c for c in bad if str(c.get("certified", "")).endswith(": reproduces")]
    held = [c for c in bounds if c["verdict"] == "holds"]
    levels = certificate_counts(held)
    by_level = ("; its " + plural(len(held), "holding bound") + " by certificate: "
                + ", ".join(f"{n} {k}" for k, n in levels.items()) if levels else
                f"; {sum(str(c.get('certified', '')).startswith('proven') for c in held)} of its "
                f"{len(held)} holding bounds are proven, the others not refuted in their "
                "evaluations")
    return (f" ({len(replayed)} of its {len(bad)} violated bounds replay without boundbench at "
            f"50 digits, `figures/replay/`{by_level})")


def headline(rec: dict[str, Any], *, link: str = "",
             larger: list[dict[str, Any]] | None = None) -> str:
    """The findings of a recorded audit (:func:`record`) as the README quotes them: dated, one
    line per finding, errors first; with ``larger`` (records of standard- or paper-scale
    audits, ``docs/larger-audits.json``), then :func:`beside_larger`."""
    rec, larger = markdown_safe(rec), markdown_safe(larger)  # no marker nor tag from the data
    found = findings(rec["claims"])
    counts = ", ".join(f"{n} {k}" for k, n in sorted(rec["counts"].items()))
    lines = [f"The last recorded audit ({rec['created'][:10]}, scale {rec['scale']}, seed "
             f"{rec['seed']}, commit {str(rec.get('commit') or 'unknown')[:7]}; "
             f"{plural(len(rec['claims']), 'claim')}: {counts}) found "
             f"{plural(len(found), 'claim')} against their paper"
             f"{_certified_line(rec['claims'])}{_calibration_line(rec['claims'])}:", "",
             *([self_tests(rec["claims"]), ""] if self_tests(rec["claims"]) else [])]
    for r in found:
        if r["verdict"] == "depends-on-reading":
            continue
        size = f" ({r['size']})" if r.get("size") else ""
        lines.append(f"- **{r['paper']}, {r['where']}**: {r['verdict']}{fragile_mark(r)}{size} "
                     f"(`{r['id']}`)")
    reading = [r["id"] for r in found if r["verdict"] == "depends-on-reading"]
    if reading:
        lines.append(f"- depends on how the paper is read ({len(reading)}): "
                     + ", ".join(f"`{c}`" for c in reading))
    return "\n".join(lines + beside_larger(rec, larger or [])) + "\n"
