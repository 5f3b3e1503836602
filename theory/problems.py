"""Batches of random smooth test problems with known smoothness constants.

Used by the lemma checks and the property tests: convex (or indefinite) quadratics and
logistic-regression losses, each with its exact ``beta`` (largest Hessian eigenvalue bound).
All functions are batched over a leading axis of problems.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.special import expit

from boundbench.framework.execution.draws import orthonormalize, power
from boundbench.framework.inputs.validate import Bool, Int, Rng, as_generator, checked


@dataclass(frozen=True)
class Quadratics:
    """``f_k(w) = 1/2 (w - c_k)^T A_k (w - c_k) + f0_k``, ``beta_k = max |eig(A_k)|``."""

    A: np.ndarray  # (K, d, d), symmetric
    c: np.ndarray  # (K, d)
    f0: np.ndarray  # (K,)

    @property
    def dim(self) -> int:
        return self.c.shape[1]

    @property
    def beta(self) -> np.ndarray:
        return np.abs(np.linalg.eigvalsh(self.A)).max(axis=-1)

    def value(self, w: np.ndarray) -> np.ndarray:
        r = w - self.c
        return 0.5 * np.einsum("ki,kij,kj->k", r, self.A, r) + self.f0

    def grad(self, w: np.ndarray) -> np.ndarray:
        return np.einsum("kij,kj->ki", self.A, w - self.c)


@checked(rng=Rng(), k=Int(1), d=Int(1), convex=Bool(), singular=Bool(),
          needs=lambda a: 8.0 * a["k"] * a["d"] ** 2)  # the k Hessians, d x d
def random_quadratics(
    rng: np.random.Generator | int, k: int, d: int, *, convex: bool = True, singular: bool = False
) -> Quadratics:
    """Random quadratics with minimum value 0 at ``c`` (for convex ones).

    Eigenvalues are spread over several decades; ``singular`` zeroes some (convex, not strongly
    convex); ``convex=False`` flips the sign of some (beta-smooth, indefinite).
    """
    # Haar eigenvectors with no sign left to a LAPACK kernel (np.linalg.qr's follow the CPU)
    rng = as_generator(rng)
    q = orthonormalize(rng.standard_normal((k, d, d)))
    eig = power(10.0, rng.uniform(-2, 1, size=(k, d)))  # libm's pow: numpy's follows the CPU
    if singular:
        eig[:, : min(d - 1, max(1, d // 3))] = 0.0  # keep beta > 0
    if not convex:
        eig *= np.where(rng.random((k, d)) < 0.4, -1.0, 1.0)
    A = np.einsum("kij,kj,klj->kil", q, eig, q)  # numpy's loops, not BLAS
    A = 0.5 * (A + np.swapaxes(A, -1, -2))
    return Quadratics(A, rng.standard_normal((k, d)) * 2.0, np.zeros(k))


@dataclass(frozen=True)
class LogisticLosses:
    """``f_k(w) = mean_i log(1 + exp(-y_i x_i^T w))``; ``beta_k = lambda_max(X^T X / n) / 4``."""

    X: np.ndarray  # (K, n, d)
    y: np.ndarray  # (K, n) in {-1, +1}

    @property
    def dim(self) -> int:
        return self.X.shape[2]

    @property
    def beta(self) -> np.ndarray:
        n = self.X.shape[1]
        return np.linalg.eigvalsh(np.einsum("kni,knj->kij", self.X, self.X) / n)[:, -1] / 4.0

    def value(self, w: np.ndarray) -> np.ndarray:
        m = self.y * np.einsum("kni,ki->kn", self.X, w)
        return np.logaddexp(0.0, -m).mean(axis=-1)

    def grad(self, w: np.ndarray) -> np.ndarray:
        m = self.y * np.einsum("kni,ki->kn", self.X, w)
        coef = -self.y * expit(-m) / self.X.shape[1]
        return np.einsum("kn,kni->ki", coef, self.X)


@checked(rng=Rng(), k=Int(1), n=Int(1), d=Int(1),
          needs=lambda a: 8.0 * a["k"] * a["n"] * a["d"])  # the k feature matrices
def random_logistic(rng: np.random.Generator | int, k: int, n: int, d: int) -> LogisticLosses:
    """Logistic losses on Gaussian features with per-problem scale and labels from a noisy
    random hyperplane (separable and non-separable cases both occur)."""
    rng = as_generator(rng)
    scale = power(10.0, rng.uniform(-1, 1, size=(k, 1, 1)))
    X = rng.standard_normal((k, n, d)) * scale
    w_true = rng.standard_normal((k, d))
    y = np.sign(np.einsum("kni,ki->kn", X, w_true) + rng.standard_normal((k, n)) * scale[..., 0])
    y[y == 0] = 1.0
    return LogisticLosses(X, y)
