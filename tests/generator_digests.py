"""Prints a SHA-256 digest of every data generator's output for fixed seeds, as JSON.

Run in a fresh process by ``tests/test_data.py`` under several OpenBLAS core types: a generator
whose instances depend on the BLAS kernel (a basis from an SVD, QR or eigendecomposition) gives
another digest there."""

import hashlib
import json

import numpy as np

from boundbench.synthetic.data import make_centres, make_separable
from boundbench.synthetic.mlp import make_clusters
from boundbench.synthetic.pool_heads import draw_sets
from boundbench.synthetic.train import make_quadratic_setting
from boundbench.theory.problems import random_logistic, random_quadratics


def _digest(*arrays: np.ndarray) -> str:
    h = hashlib.sha256()
    for a in arrays:
        a = np.ascontiguousarray(a)
        h.update(str((a.dtype.str, a.shape)).encode())
        h.update(a.tobytes())
    return h.hexdigest()


def digests() -> dict[str, str]:
    out = {}
    for d in (1, 2, 5, 20):
        s = make_separable(n_datasets=30, n=300, d=d, margin=0.1, bound=1.0, seed=7)
        out[f"make_separable(d={d})"] = _digest(s.X, s.y, s.normal, s.offset)
    s = make_separable(n_datasets=5, n=50, d=10, margin=0.2, bound=2.0, seed=3, exact_margin=False)
    out["make_separable(exact_margin=False)"] = _digest(s.X, s.y)
    c = make_centres(n_datasets=30, n=100, d=10, distance=2.0, seed=7)
    out["make_centres"] = _digest(c.X, c.y, c.normal, c.offset)
    q = random_quadratics(np.random.default_rng(7), 50, 8, convex=False)
    out["random_quadratics"] = _digest(q.A, q.c)
    lg = random_logistic(np.random.default_rng(7), 20, 40, 6)
    out["random_logistic"] = _digest(lg.X, lg.y)
    out["make_clusters"] = _digest(*make_clusters(n=500, d=20, classes=5, label_noise=0.1, seed=7))
    qs = make_quadratic_setting(n_datasets=10, n=30, d=5, mu=0.1, beta=1.0, dist0=2.0, seed=7)
    out["make_quadratic_setting"] = _digest(qs.U, qs.w_star, qs.w0)
    y = np.where(np.arange(200) % 3 == 0, 1.0, -1.0)
    out["draw_sets"] = _digest(draw_sets(y, n=20, k=30, rng=np.random.default_rng(7)))
    return out


if __name__ == "__main__":
    print(json.dumps(digests(), indent=1, sort_keys=True))
