"""How much of an audit is certified, and what the certification costs (issue 61).

Reads an audit folder (``figures/`` by default, the README's quick audit) and prints:

- violated bounds whose standalone replay reproduces in a bare interpreter (``python -I -S``,
  only numpy and mpmath importable) / all violated bounds, each replay's seconds, and whether
  its control exits 1;
- holding bounds proven (on their box or over their function class) / all holding bounds;
- for Lemmas A.1.2, A.1.3 and A.5.1: PEPit's worst case tau (dual, primal, gap) beside the
  quadratic family's and the search's worst ratio;
- the seconds the certification adds, re-timed here piece by piece in this process (the SVM
  solutions each replay carries, the replays at 50 and 70 digits and their controls, the interval
  proofs, the PEPs), against the audit's own recorded seconds: the ratio is the overhead.

Usage::

    python benchmarks/bench_certify.py [--out figures]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from boundbench.framework.files.atomic import within


def _bare(box: Path) -> None:
    import mpmath
    import numpy

    for mod in (numpy, mpmath):
        src = Path(mod.__file__).parent
        (box / src.name).symlink_to(src)
        libs = src.parent / f"{src.name}.libs"
        if libs.exists():
            (box / libs.name).symlink_to(libs)


def _replay_bare(script: Path, box: Path, *args: str) -> tuple[int, float]:
    runner = (f"import sys, runpy; sys.path.insert(0, {str(box)!r}); "
              f"sys.argv = [{str(script)!r}, *{list(args)!r}]; "
              f"runpy.run_path({str(script)!r}, run_name='__main__')")
    t0 = time.perf_counter()
    done = subprocess.run([sys.executable, "-I", "-S", "-c", runner], capture_output=True,
                          text=True, env={"PATH": os.environ.get("PATH", "")}, timeout=60)
    return done.returncode, time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default="figures", help="an audit folder (audit.json, replay/)")
    args = ap.parse_args()
    folder = Path(args.out)
    report = json.loads((folder / "audit.json").read_text())
    bounds = [c for c in report["claims"] if c["kind"] == "bound"]
    violated = [c for c in bounds if c["verdict"] == "violated"]
    holding = [c for c in bounds if c["verdict"] == "holds"]

    print("violated bounds: standalone replays in a bare interpreter (numpy + mpmath only)")
    ok = 0
    with tempfile.TemporaryDirectory() as tmp:
        box = Path(tmp)
        _bare(box)
        for c in violated:
            rep = (c["evidence"].get("replay") or {})
            # a report's path is data: read it only where it stays inside the folder
            path = within(folder, rep.get("path", "missing"), what=f"{c['id']}'s replay")
            if not path.exists():
                print(f"  {c['id']:<28} no replay ({rep.get('why', 'not written')})")
                continue
            code, secs = _replay_bare(path, box)
            ccode, _ = _replay_bare(path, box, "--control")
            ok += code == 0 and ccode == 1
            print(f"  {c['id']:<28} exit {code} in {secs:5.2f} s, control exit {ccode}")
        print(f"  => {ok} / {len(violated)} violated bounds replay (and their controls fail)")
        for c in report["claims"]:
            rep = c["evidence"].get("replay") or {}
            if c["verdict"] == "depends-on-reading" and rep.get("written"):
                path = within(folder, rep["path"], what=f"{c['id']}'s replay")
                code, secs = _replay_bare(path, box)
                ccode, _ = _replay_bare(path, box, "--control")
                print(f"  violated reading {c['id']:<20} exit {code} in {secs:5.2f} s, control "
                      f"exit {ccode} ({rep.get('reading')})")

    proven = [c for c in holding if str((c["evidence"].get("certification") or {})
                                        .get("status", "")).startswith("proven")]
    print("\nholding bounds: proven / not refuted")
    for c in holding:
        print(f"  {c['id']:<28} {(c['evidence'].get('certification') or {}).get('status')}")
    print(f"  => {len(proven)} / {len(holding)} holding bounds proven")

    print("\nfirst-order lemmas over their whole class (PEPit) vs the quadratic family")
    for cid in ("fu.lemma-a.1.2", "fu.lemma-a.1.3", "fu.lemma-a.5.1"):
        c = next(x for x in report["claims"] if x["id"] == cid)
        ev = c["evidence"]
        pep = ev.get("pep") or {}
        worst_run = max(pep.get("runs", []), key=lambda r: r["tau_dual"], default=None)
        if worst_run is None:
            print(f"  {cid}: no PEP in this audit")
            continue
        planted = pep["planted"]
        print(f"  {cid}: tau dual {worst_run['tau_dual']:.10g} primal "
              f"{worst_run['tau_primal']:.10g} (gap {pep['largest_gap']:.2g}; bound "
              f"{worst_run['bound']:g}, theory {worst_run['theory']:g}) | quadratic family "
              f"worst {ev.get('random_family_worst_ratio', ev.get('worst_lhs_over_rhs'))} | "
              f"search worst {ev.get('worst_found_by_search')} | planted ({planted['variant']}): "
              f"tau {planted['tau_dual']:.6g}, replay exit {planted['replay']['exit']}")

    print("\nthe seconds certification adds (re-timed here)")
    print(f"  => {_certification_seconds(report):.1f} s against the audit's "
          f"{report['meta'].get('seconds')} s")


def _certification_seconds(report: dict) -> float:
    """Re-run every certification piece the audit ran, timed: each violated search claim's
    replay (build, run, control), each proof, each PEP."""
    from boundbench import catalogue
    from boundbench.framework.certificates import proofs
    from boundbench.framework.claims import registry
    from boundbench.framework.search import replay
    from boundbench.theory import pep

    catalogue.load()
    total = 0.0
    for c in report["claims"]:
        spec = registry.get(c["id"])
        ev = c["evidence"]
        s = spec.search
        t0 = time.perf_counter()
        if c["verdict"] in ("violated", "depends-on-reading") and s is not None and \
                s.replay is not None and isinstance(
                ev.get("worst_instance"), dict):
            inst = s.replay.build(ev["worst_instance"])
            ctrl = ((ev.get("characterization") or {}).get("failure_boundary") or {}).get(
                "control_instance")
            text = replay.script(claim=c["id"], where=c["where"], equation=c["equation"],
                                 program=s.replay.program, instance=inst,
                                 control=s.replay.build(ctrl) if ctrl else None, rtol=1e-5,
                                 atol=0.0, float64=None)
            replay.run(text)
            replay.run(text, control=True)
        elif c["verdict"] == "holds" and s is not None and s.proof is not None:
            for part in (s.proof if isinstance(s.proof, tuple) else (s.proof,)):
                for box in proofs.integer_cases(s.space):
                    proofs.prove(part, box, rtol=1e-5, atol=float(s.atol))
        dt = time.perf_counter() - t0
        if dt > 0.05:
            print(f"  {c['id']:<28} {dt:6.2f} s")
        total += dt
    t0 = time.perf_counter()
    for e in (0.25, 0.5, 1.0, 1.5, 2.0, 2.99):
        pep.lemma_a12_pep(eta_times_beta=e)
    pep.lemma_a13_pep()
    pep.lemma_a13_pep(factor=1.0)
    for e in (0.25, 0.5, 0.75, 1.0, 1.9):
        pep.lemma_a51_pep(eta_times_beta=e)
    dt = time.perf_counter() - t0
    print(f"  {'the three lemmas PEPs':<28} {dt:6.2f} s")
    return total + dt


if __name__ == "__main__":
    main()
