"""Pinsker's inequality for two Bernoulli laws with KL computed naively: what `falsify`
reports only after a 50-digit recheck (issue 80; docs/testing.md). Run

    .venv/bin/boundbench falsify benchmarks/falsify_pinsker.py:wrong --evaluations 2000 --json
    .venv/bin/boundbench falsify benchmarks/falsify_pinsker.py:right --evaluations 2000 --json

float64's cancellation near p = q makes the naive KL's ratio large (158.6 and 4.21 as float64
values on 2026-12-01); the reported worst ratios are sqrt 2 (the wrong constant's supremum, as
p, q -> 1/2) and 1 (Pinsker is tight there). tests/test_falsify_recheck.py runs this file.
"""

import numpy as np

from boundbench.testing import bound


def _kl(p, q):  # naive: cancels near p = q in float64
    return p * np.log(p / q) + (1 - p) * np.log((1 - p) / (1 - q))


@bound(space={"p": (1e-6, 1 - 1e-6), "q": (1e-6, 1 - 1e-6)})
def wrong(x):  # KL/4 for KL/2: the supremum of the ratio is sqrt 2, as p, q -> 1/2
    return abs(x["p"] - x["q"]), np.sqrt(_kl(x["p"], x["q"]) / 4)


@bound(space={"p": (1e-6, 1 - 1e-6), "q": (1e-6, 1 - 1e-6)})
def right(x):  # Pinsker's inequality for two Bernoulli laws
    return abs(x["p"] - x["q"]), np.sqrt(_kl(x["p"], x["q"]) / 2)
