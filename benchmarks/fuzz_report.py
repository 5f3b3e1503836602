"""Every (argument x bad value) of tests/test_fuzz_api.py's cases, exhaustively, with counts by
kind: messages not naming the argument, other exception types, non-finite outputs, hangs; then
every wrongly typed ``audit.json`` of tests/report_probes.py read by ``findings``, ``errata`` and
``regenerate``, with the count of answers that are not exit 0 or one line with exit 2
(internal errors, tracebacks).

    python benchmarks/fuzz_report.py [-v] [--report figures/audit.json]

The report probes start from ``--report`` (a quick audit's; without one they are skipped and
the line says so).
"""

from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
import warnings  # noqa: E402

import test_fuzz_api as fz  # noqa: E402


def main() -> None:
    warnings.simplefilter("ignore")
    counts, calls, lines = Counter(), 0, []
    for case, (_, valid) in sorted(fz.CASES.items()):
        p = fz._judge(case, dict(valid), None, True)
        calls += 1
        if p:
            counts["valid call fails"] += 1
            lines.append(p)
        for name in sorted(valid):
            for bad in fz._bad_values(valid[name]):
                kw = dict(valid)
                kw[name] = bad
                calls += 1
                p = fz._judge(case, kw, name, False)
                if p:
                    kind = ("hang" if "hangs" in p else "not naming" if "does not name" in p
                            else "non-finite" if "non-finite" in p else "other type")
                    counts[kind] += 1
                    lines.append(p)
    if "-v" in sys.argv:
        print("\n".join(lines))
    print(f"{len(fz.CASES)} cases, {calls} calls: {dict(counts) or 'no failures'}")
    reports()


def reports() -> None:
    import json
    import os
    import tempfile

    import report_probes as rp

    os.environ.setdefault("BOUNDBENCH_PLUGINS", "none")
    at = sys.argv.index("--report") + 1 if "--report" in sys.argv else None
    path = Path(sys.argv[at]) if at else Path("figures/audit.json")
    if not path.is_file():
        print(f"report probes skipped: no {path} (run `boundbench audit --scale quick` first)")
        return
    report = json.loads(path.read_text())
    problems, n = [], 0
    with tempfile.TemporaryDirectory() as d:
        root = rp.scratch_root(Path(__file__).resolve().parents[1], Path(d) / "root")
        for i, (label, text) in enumerate(rp.probes(report)):
            n += 1
            problems += [f"{label}: {p}" for p in rp.judge(text, Path(d) / f"p{i}", root)]
    if "-v" in sys.argv:
        print("\n".join(problems))
    print(f"{n} wrongly typed reports x 3 commands: {len(problems)} answers not exit 0 or one "
          f"line with exit 2" + (" (internal errors, tracebacks)" if problems else ""))


if __name__ == "__main__":
    main()
