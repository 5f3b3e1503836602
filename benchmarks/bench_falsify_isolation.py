"""The cost of running a user's bound in a child process (issue 81 item 4): ``falsify
FILE.py:FUNCTION --evaluations N`` with the bound forked off (a hang stopped after
``--eval-timeout``, an ``os._exit`` reported) against the same run in this process, on a cheap
numpy bound where the overhead shows most, after one warm-up run of each. Both must give the
same result (timings aside). About 20 seconds::

    python benchmarks/bench_falsify_isolation.py [--evaluations 2000]
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

BOUND = '''import numpy as np
from boundbench.testing import bound

@bound(space={"x": (0.0, 1.0), "y": (0.0, 1.0)})
def cheap(p):
    return np.sin(p["x"]) * p["y"], 0.9 * p["x"]
'''


def main(argv: list[str] | None = None) -> None:
    from boundbench.falsify import falsify

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--evaluations", type=int, default=2000)
    ap.add_argument("--repeats", type=int, default=3)
    a = ap.parse_args(argv)
    with tempfile.TemporaryDirectory() as d:
        f = Path(d) / "cheap.py"
        f.write_text(BOUND)
        target = f"{f}:cheap"
        best: dict[bool, float] = {}
        out: dict[bool, dict] = {}
        for iso in (False, True):
            falsify(target, evaluations=a.evaluations, isolate=iso)  # warm-up: imports, caches
            for _ in range(a.repeats):
                t0 = time.perf_counter()
                out[iso] = falsify(target, evaluations=a.evaluations, isolate=iso)
                best[iso] = min(best.get(iso, float("inf")), time.perf_counter() - t0)
    same = ({k: v for k, v in out[False].items() if k not in ("seconds", "isolation")}
            == {k: v for k, v in out[True].items() if k not in ("seconds", "isolation")})
    print(f"falsify --evaluations {a.evaluations} on a cheap numpy bound, best of {a.repeats}:")
    print(f"  in this process  {best[False]:7.3f} s")
    print(f"  forked child     {best[True]:7.3f} s   ratio {best[True] / best[False]:.3f}   "
          f"same result (timings aside): {same}")
    print(json.dumps({"in_process_s": best[False], "isolated_s": best[True], "same": same}))


if __name__ == "__main__":
    main()
