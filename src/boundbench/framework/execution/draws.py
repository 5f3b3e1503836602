"""Orthonormal bases that depend on the seed alone, never on the machine.

A basis taken from ``np.linalg.svd``, ``qr`` or ``eigh`` is fixed only up to the signs (or, for
repeated singular values, the rotation) that the LAPACK/BLAS kernel happens to choose, and the
kernel follows the CPU: the same seed gave other data under another OpenBLAS core type (180 of
9,000 points of Fu et al.'s slab generator differed, and a Fig. 7 verdict with them). The
functions here build their bases with elementwise arithmetic and numpy's own (non-BLAS)
``einsum`` loops in a fixed order, so they give the same bits on every x86-64 kernel; the test
``tests/test_data.py::test_generators_give_the_same_bits_under_every_blas_kernel`` pins a digest
of every generator's output and runs it under three OpenBLAS core types.
"""

from __future__ import annotations

import math

import numpy as np

from boundbench.errors import InvalidArgument


def _dot(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    # elementwise product and numpy's fixed-order reduction: no BLAS call (matmul, dot and
    # einsum with optimize=True may call it)
    return (a * b).sum(-1)


def orthonormalize(a: np.ndarray) -> np.ndarray:
    """The orthonormal columns ``Q`` of ``a (..., m, r)`` (``r <= m``, full column rank) by
    modified Gram-Schmidt: ``Q`` is the unique factor of ``a = QR`` with a positive diagonal of
    ``R``, so a Gaussian ``a`` gives a Haar-distributed ``Q`` (Mezzadri, *How to generate random
    matrices from the classical compact groups*, Notices AMS 54, 2007) with no sign left to a
    LAPACK kernel.

    >>> q = orthonormalize(np.random.default_rng(0).standard_normal((4, 2)))
    >>> bool(np.allclose(q.T @ q, np.eye(2)))
    True
    """
    a = np.asarray(a, dtype=np.float64)
    if a.ndim < 2 or a.shape[-1] > a.shape[-2]:
        raise InvalidArgument(f"a must be (..., m, r) with r <= m (got shape {a.shape})")
    cols = [a[..., :, j].copy() for j in range(a.shape[-1])]
    for j, v in enumerate(cols):
        for q in cols[:j]:
            v -= _dot(v, q)[..., None] * q
        v /= np.sqrt(_dot(v, v))[..., None]
    return np.stack(cols, axis=-1)


def complement_basis(u: np.ndarray) -> np.ndarray:
    """An orthonormal basis ``(..., d, d - 1)`` of the orthogonal complement of unit vectors
    ``u (..., d)``: the last ``d - 1`` columns of the Householder reflection that maps ``e_1`` to
    ``-sign(u_1) u`` (Golub & Van Loan, *Matrix Computations*, 4th ed., §5.1.2). A closed form
    of ``u`` alone, unlike the left singular vectors of ``I - u u^T``, whose choice within the
    complement belongs to the SVD kernel.

    >>> b = complement_basis(np.array([0.6, 0.8, 0.0]))
    >>> bool(np.allclose(b.T @ b, np.eye(2))), bool(np.allclose(np.array([0.6, 0.8, 0.0]) @ b, 0))
    (True, True)
    """
    u = np.asarray(u, dtype=np.float64)
    d = u.shape[-1]
    s = np.where(u[..., :1] >= 0, 1.0, -1.0)
    v = u.copy()
    v[..., :1] += s  # |v_1| >= 1: no cancellation
    H = np.eye(d) - 2.0 * v[..., :, None] * v[..., None, :] / _dot(v, v)[..., None, None]
    return H[..., :, 1:]


_POW = np.frompyfunc(math.pow, 2, 1)


def power(x: np.ndarray | float, p: np.ndarray | float) -> np.ndarray:
    """``x ** p`` elementwise through the C library's ``pow`` (Python's ``math.pow``), not
    numpy's: numpy picks its ``power``, ``exp`` and ``log`` kernels by CPU (AVX-512 vs AVX2),
    and their last bits differ, so ``U ** (1/d)`` radii and ``10 ** U`` scales drawn with them
    changed with the CPU. About 0.1 us an element.

    >>> power(np.array([8.0, 27.0]), 1 / 3).round(12).tolist()
    [2.0, 3.0]
    """
    return np.asarray(_POW(x, p), dtype=np.float64)
