"""The certifier refuses false bounds and proves true tight ones (issue 79, item 7).

20 bounds false by a little (relative 1e-6 and 1e-9, false only near an edge or a corner, only
between any fixed grid's points, a wrong form that agrees at its check points) and 10 true
bounds tight on a point, a line or an edge, each written as a user writes one (numpy ufuncs over
a box) and decided as ``boundbench prove`` decides it (:func:`boundbench.framework.
certification.certify`, then sympy's automatic forms). Prints each outcome and its seconds, and
the count that matters: false bounds proven (must be 0) and true bounds proven.

    .venv/bin/python benchmarks/bench_prove.py
"""

from __future__ import annotations

import sys
import time

import numpy as np


def _false() -> list[tuple[str, dict, object]]:
    out = []
    for rel in (1e-6, 1e-9):
        out += [
            (f"x^2 <= (1 - {rel:g}) x^2", {"x": (0.5, 1.0)},
             lambda p, r=rel: (p["x"] ** 2, (1 - r) * p["x"] ** 2)),
            (f"sqrt(xy) <= (1 - {rel:g}) (x + y)/2", {"x": (0.5, 2.0), "y": (0.5, 2.0)},
             lambda p, r=rel: (np.sqrt(p["x"] * p["y"]), (1 - r) * (p["x"] + p["y"]) / 2)),
            (f"x(1 - x) <= (1 - {rel:g})/4", {"x": (0.0, 1.0)},
             lambda p, r=rel: (p["x"] * (1 - p["x"]), (1 - r) / 4 + 0 * p["x"])),
            (f"exp(x) >= (1 + {rel:g})(1 + x)", {"x": (-1.0, 1.0)},
             lambda p, r=rel: ((1 + r) * (1 + p["x"]), np.exp(p["x"]))),
            (f"sin(x) <= (1 - {rel:g}) x", {"x": (0.0, 1.0)},
             lambda p, r=rel: (np.sin(p["x"]), (1 - r) * p["x"])),
            (f"|a + b| <= (1 - {rel:g})(|a| + |b|)", {"a": (-1.0, 1.0), "b": (-1.0, 1.0)},
             lambda p, r=rel: (abs(p["a"] + p["b"]), (1 - r) * (abs(p["a"]) + abs(p["b"])))),
        ]
    out += [
        ("x <= 1 on [0, 1 + 5e-6] (edge)", {"x": (0.0, 1 + 5e-6)}, lambda p: (p["x"], 1 + 0 * p["x"])),
        ("x + y <= 2 - 1e-9 on [0, 1]^2 (corner)", {"x": (0.0, 1.0), "y": (0.0, 1.0)},
         lambda p: (p["x"] + p["y"], 2 - 1e-9 + 0 * p["x"])),
        ("x y z <= 1 - 1e-9 on [0, 1]^3 (corner)", {"x": (0.0, 1.0), "y": (0.0, 1.0),
                                                   "z": (0.0, 1.0)},
         lambda p: (p["x"] * p["y"] * p["z"], 1 - 1e-9 + 0 * p["x"])),
        ("1 + 0.01 sin^2(64 pi x) <= 1 (between dyadic points)", {"x": (0.0, 1.0)},
         lambda p: (1 + 0.01 * np.sin(64 * np.pi * p["x"]) ** 2, 1 + 0 * p["x"])),
        ("1 + 1e-6 sin^2(1000 x) <= 1 (between any grid's points)", {"x": (0.0, 1.0)},
         lambda p: (1 + 1e-6 * np.sin(1000 * p["x"]) ** 2, 1 + 0 * p["x"])),
        ("exp(-x^2) <= 1 - 1e-9 (at 0 only)", {"x": (-1.0, 1.0)},
         lambda p: (np.exp(-p["x"] ** 2), 1 - 1e-9 + 0 * p["x"])),
        ("log(1 + x) <= x - 1e-12 (near 0)", {"x": (0.0, 1.0)},
         lambda p: (np.log(1 + p["x"]), p["x"] - 1e-12)),
        ("x^3 <= x on [0, 1 + 1e-7] (edge)", {"x": (0.0, 1 + 1e-7)},
         lambda p: (p["x"] ** 3, p["x"])),
    ]
    return out


def _true() -> list[tuple[str, dict, object]]:
    return [
        ("x(1 - x) <= 1/4 (a point)", {"x": (0.0, 1.0)},
         lambda p: (p["x"] * (1 - p["x"]), 0.25 + 0 * p["x"])),
        ("sqrt(xy) <= (x + y)/2 (a line)", {"x": (0.0, 3.0), "y": (0.0, 3.0)},
         lambda p: (np.sqrt(p["x"] * p["y"]), (p["x"] + p["y"]) / 2)),
        ("2xy <= x^2 + y^2 (a line)", {"x": (-2.0, 2.0), "y": (-2.0, 2.0)},
         lambda p: (2 * p["x"] * p["y"], p["x"] ** 2 + p["y"] ** 2)),
        ("x^2 <= x on [0, 1] (two edges)", {"x": (0.0, 1.0)}, lambda p: (p["x"] ** 2, p["x"])),
        ("x y <= 1 on [0, 1]^2 (a corner)", {"x": (0.0, 1.0), "y": (0.0, 1.0)},
         lambda p: (p["x"] * p["y"], 1 + 0 * p["x"])),
        ("1 + x <= exp(x) (a point)", {"x": (-1.0, 1.0)},
         lambda p: (1 + p["x"], np.exp(p["x"]))),
        ("sin(x) <= x on [0, 1] (an edge)", {"x": (0.0, 1.0)},
         lambda p: (np.sin(p["x"]), p["x"])),
        ("|a + b| <= |a| + |b| (a quadrant)", {"a": (-1.0, 1.0), "b": (-1.0, 1.0)},
         lambda p: (abs(p["a"] + p["b"]), abs(p["a"]) + abs(p["b"]))),
        ("(x + y)^2 <= 2 (x^2 + y^2) (a line)", {"x": (-1.0, 1.0), "y": (-1.0, 1.0)},
         lambda p: ((p["x"] + p["y"]) ** 2, 2 * (p["x"] ** 2 + p["y"] ** 2))),
        ("4 x y <= (x + y)^2 (a line)", {"x": (0.0, 2.0), "y": (0.0, 2.0)},
         lambda p: (4 * p["x"] * p["y"], (p["x"] + p["y"]) ** 2)),
    ]


def decide(fn, space) -> tuple[str, float]:
    from boundbench.prove import prove_function

    t0 = time.perf_counter()
    return prove_function(fn, space, boxes=5000)["level"], time.perf_counter() - t0


def main() -> int:
    proven = ("proven on the claim's whole stated domain",
              "proven on a stated sub-box of its domain")
    false_proven = true_proven = 0
    print(f"{'bound':58s} {'outcome':44s} seconds")
    for kind, cases in (("false", _false()), ("true", _true())):
        for name, space, fn in cases:
            level, secs = decide(fn, space)
            print(f"{kind:5s} {name:52s} {level:44s} {secs:7.2f}")
            false_proven += kind == "false" and level in proven
            true_proven += kind == "true" and level in proven
    n_false, n_true = len(_false()), len(_true())
    print(f"\nfalse bounds proven: {false_proven} of {n_false}; true tight bounds proven: "
          f"{true_proven} of {n_true}")
    return 0 if false_proven == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
