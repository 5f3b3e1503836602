"""Every (argument x bad value) of tests/test_fuzz_api.py's cases, exhaustively, with counts by
kind: messages not naming the argument, other exception types, non-finite outputs, hangs.

    python benchmarks/fuzz_report.py [-v]
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


if __name__ == "__main__":
    main()
