"""Strategies for Fu et al.'s instance families: separable datasets, soft-margin problems and
smooth losses (Thm 2.2's quadratic LOO problems and Lemma A.2.4's exterior pairs are in
``_loo``)."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from hypothesis import strategies as st

from boundbench.errors import InvalidArgument
from boundbench.framework.execution.draws import power
from boundbench.synthetic.data import make_separable
from boundbench.testing._ranges import SEEDS, floats_in, ints_in
from boundbench.theory.problems import random_logistic, random_quadratics


@dataclass(frozen=True)
class SeparableDataset:
    """Linearly separable binary data: ``X (n, d)``, labels ``y`` in {-1, +1}, every
    ``||x_i|| <= bound``, and a hard-margin SVM margin of exactly ``margin`` (or at least, with
    ``exact_margin=False``).

    Parameters
    ----------
    X : numpy.ndarray
        Points, ``(n, d)``.
    y : numpy.ndarray
        Labels in {-1, +1}, ``(n,)``.
    margin, bound : float
        The separating margin and the data's radius.
    exact_margin : bool
        Whether the margin is attained.
    seed : int
        The draw's seed (the dataset is a function of it).

    Examples
    --------
    >>> from hypothesis import find
    >>> sorted(find(separable_datasets(n=(6, 8), d=(2, 2)), lambda s: True).y.tolist())
    [-1.0, -1.0, -1.0, 1.0, 1.0, 1.0]
    """

    X: np.ndarray = field(repr=False)
    y: np.ndarray = field(repr=False)
    margin: float
    bound: float
    exact_margin: bool
    seed: int

    @property
    def n(self) -> int:
        return self.X.shape[0]

    @property
    def d(self) -> int:
        return self.X.shape[1]

    def __repr__(self) -> str:
        return (f"SeparableDataset(n={self.n}, d={self.d}, margin={self.margin!r}, "
                f"bound={self.bound!r}, exact_margin={self.exact_margin}, seed={self.seed})")


def separable_datasets(*, n: tuple[int, int] = (10, 200), d: tuple[int, int] = (2, 10),
                       margin: tuple[float, float] = (0.05, 1.0),
                       bound: tuple[float, float] = (1.0, 5.0),
                       balance: tuple[float, float] = (0.5, 0.5),
                       exact_margin: bool = True) -> st.SearchStrategy[SeparableDataset]:
    """Separable datasets of Fu et al.'s construction (:func:`~boundbench.synthetic.data.
    make_separable`): ``n`` points in ``R^d`` within the ball of radius ``bound``, separated by
    ``margin`` (draws with ``margin >= bound`` are rejected, as no such data exist), a fraction
    ``balance`` of positives. ``exact_margin`` needs ``n >= 2 d + 2``.

    Parameters
    ----------
    n, d : tuple of int
        Ranges of the number of points and of the dimension.
    margin, bound : tuple of float
        Ranges of the separating margin and of the data's radius.
    balance : tuple of float, default (0.5, 0.5)
        Range of the fraction of positive labels.
    exact_margin : bool, default True
        The margin is attained (needs ``n >= 2 d + 2``).

    Returns
    -------
    hypothesis.strategies.SearchStrategy of SeparableDataset
        Each draw a dataset with its constants and seed.

    References
    ----------
    Z. Fu, A. M.-C. So and N. Collier, A Stability Analysis of Fine-Tuning a Pre-Trained Model,
    Section 4.3 (the synthetic construction).

    Examples
    --------
    >>> from hypothesis import find
    >>> data = find(separable_datasets(n=(6, 8), d=(2, 2)), lambda s: True)
    >>> data.X.shape
    (6, 2)
    """
    n_s, d_s = ints_in(n, "n", 4), ints_in(d, "d", 1)
    m_s, b_s, bal_s = floats_in(margin, "margin"), floats_in(bound, "bound"), floats_in(balance, "balance")
    if margin[0] <= 0:
        raise InvalidArgument(f"margin must be > 0 (got range {margin})")

    @st.composite
    def draw(draw_) -> SeparableDataset:
        dd = draw_(d_s)
        nn = draw_(n_s.filter(lambda v: not exact_margin or v >= 2 * dd + 2))
        b = draw_(b_s)
        m = draw_(m_s.filter(lambda v: v < b))
        frac = draw_(bal_s)
        pos = int(round(frac * nn))
        valid = dd <= pos <= nn - dd if exact_margin else 0 < pos < nn
        if not valid:  # a class too small for this n: the balanced draw instead
            frac = 0.5
        seed = draw_(SEEDS)
        data = make_separable(n_datasets=1, n=nn, d=dd, margin=m, bound=b, balance=frac,
                              seed=seed, exact_margin=exact_margin)
        return SeparableDataset(data.X[0], data.y[0], float(m), float(b), exact_margin, seed)

    return draw()


@dataclass(frozen=True)
class SoftMarginProblem:
    """A soft-margin SVM problem ``lam ||v||^2 + (1/n) sum hinge``: a separable dataset (its
    margin and bound known) and the regularization ``lam``.

    Parameters
    ----------
    data : SeparableDataset
        The points and labels.
    lam : float
        The regularization.

    Examples
    --------
    >>> from hypothesis import find
    >>> find(soft_margin_problems(n=(6, 8), d=(2, 2)), lambda s: True).data.X.shape
    (6, 2)
    """

    data: SeparableDataset
    lam: float


def soft_margin_problems(*, lam: tuple[float, float] = (1e-3, 10.0), **data_ranges
                         ) -> st.SearchStrategy[SoftMarginProblem]:
    """A dataset of :func:`separable_datasets` (same keyword ranges) and ``lam``, drawn on a
    log scale.

    Parameters
    ----------
    lam : tuple of float, default (1e-3, 10.0)
        Range of the regularization, drawn on a log scale.
    **data_ranges
        :func:`separable_datasets`'s keyword ranges.

    Returns
    -------
    hypothesis.strategies.SearchStrategy of SoftMarginProblem

    Examples
    --------
    >>> from hypothesis import find
    >>> p = find(soft_margin_problems(n=(6, 8), d=(2, 2)), lambda s: True)
    >>> p.lam > 0
    True
    """
    lo, hi = lam
    if not 0 < lo <= hi:
        raise InvalidArgument(f"lam must be a range with 0 < low <= high (got {lam})")
    lam_s = st.floats(np.log10(lo), np.log10(hi)).map(lambda e: float(10.0**e))
    return st.builds(SoftMarginProblem, separable_datasets(**data_ranges), lam_s)


SMOOTH_KINDS = ("quadratic", "singular", "indefinite", "logistic")


@dataclass(frozen=True)
class SmoothLoss:
    """``n`` per-sample losses ``f_i`` on ``R^d`` with known constants, and ``points`` to
    evaluate them at (``(k, d)``, in the ball ``||w|| <= radius``).

    ``beta``: every ``f_i`` is ``beta``-smooth (``betas``: each one's own constant, ``(n,)``);
    ``mu``: every ``f_i`` is ``mu``-strongly convex (0 when only convex, negative for an
    indefinite quadratic: its lowest Hessian eigenvalue). ``kind``: one of :data:`SMOOTH_KINDS`.
    ``value`` and ``grad`` take ``w`` as ``(d,)`` (every sample at one point) or ``(n, d)``.

    Parameters
    ----------
    kind : str
        The family (see :func:`smooth_losses`).
    n, d : int
        Number of losses and dimension.
    beta, mu : float
        The smoothness and strong-convexity constants, exact.
    radius : float
        The ball the points lie in.
    seed : int
        The draw's seed.
    problems : object
        The losses (values, gradients).
    points : numpy.ndarray
        Evaluation points, ``(points, d)``.

    Examples
    --------
    >>> from hypothesis import find
    >>> s = find(smooth_losses(n=(2, 3), d=(2, 2)), lambda s: True)
    >>> s.beta >= s.mu >= 0
    True
    """

    kind: str
    n: int
    d: int
    beta: float
    mu: float
    radius: float
    seed: int
    problems: object = field(repr=False)
    points: np.ndarray = field(repr=False)

    @property
    def betas(self) -> np.ndarray:
        return np.asarray(self.problems.beta)  # type: ignore[attr-defined]

    @property
    def convex(self) -> bool:
        return self.kind != "indefinite"

    def value(self, w: np.ndarray) -> np.ndarray:
        """Every sample's loss at ``w`` (``(d,)`` or ``(n, d)``): ``(n,)``."""
        return self.problems.value(np.broadcast_to(w, (self.n, self.d)))  # type: ignore[attr-defined]

    def grad(self, w: np.ndarray) -> np.ndarray:
        """Every sample's gradient at ``w`` (``(d,)`` or ``(n, d)``): ``(n, d)``."""
        return self.problems.grad(np.broadcast_to(w, (self.n, self.d)))  # type: ignore[attr-defined]


def smooth_losses(*, kind: str | tuple[str, ...] = "quadratic", n: tuple[int, int] = (2, 50),
                  d: tuple[int, int] = (1, 8), radius: tuple[float, float] = (0.5, 10.0),
                  points: int = 2) -> st.SearchStrategy[SmoothLoss]:
    """``n`` per-sample losses of one ``kind`` (a tuple: one of several, drawn), each with its
    exact constants:

    - ``"quadratic"``: ``1/2 (w - c_i)^T A_i (w - c_i)``, eigenvalues over three decades, convex
      (Theorem 2.2's setting, the lemmas' convex case); ``beta``, ``mu`` exact;
    - ``"singular"``: the same with some eigenvalues 0 (convex, ``mu = 0``);
    - ``"indefinite"``: the same with some eigenvalues negated (beta-smooth, not convex);
    - ``"logistic"``: logistic regression on one Gaussian sample each,
      ``beta = ||x||^2 / 4``, ``mu = 0``.

    ``points``: how many evaluation points, uniform in the ball of radius ``radius``.

    Parameters
    ----------
    kind : str or tuple of str, default "quadratic"
        ``"quadratic"``, ``"singular"``, ``"indefinite"`` or ``"logistic"`` (a tuple: one drawn).
    n, d : tuple of int
        Ranges of the number of losses and of the dimension.
    radius : tuple of float
        Range of the ball's radius the points are drawn in.
    points : int, default 2
        Evaluation points per draw.

    Returns
    -------
    hypothesis.strategies.SearchStrategy of SmoothLoss

    Examples
    --------
    >>> from hypothesis import find
    >>> s = find(smooth_losses(n=(2, 3), d=(2, 2)), lambda s: True)
    >>> (s.kind, s.points.shape)
    ('quadratic', (2, 2))
    """
    kinds = (kind,) if isinstance(kind, str) else tuple(kind)
    if not kinds or any(k not in SMOOTH_KINDS for k in kinds):
        raise InvalidArgument(f"kind must be one of {SMOOTH_KINDS} or a tuple of them (got {kind!r})")
    if isinstance(points, bool) or not isinstance(points, int) or points < 1:
        raise InvalidArgument(f"points must be an integer >= 1 (got {points!r})")
    n_s, d_s, r_s = ints_in(n, "n", 1), ints_in(d, "d", 1), floats_in(radius, "radius")

    @st.composite
    def draw(draw_) -> SmoothLoss:
        kk = draw_(st.sampled_from(kinds))
        nn, dd, rad, seed = draw_(n_s), draw_(d_s), draw_(r_s), draw_(SEEDS)
        rng = np.random.default_rng(seed)
        if kk == "logistic":
            prob: object = random_logistic(rng, nn, 1, dd)  # one sample per loss
            beta, mu = float(prob.beta.max()), 0.0  # type: ignore[attr-defined]
        else:
            prob = random_quadratics(rng, nn, dd, convex=kk != "indefinite",
                                     singular=kk == "singular")
            eig = np.linalg.eigvalsh(prob.A)
            beta = float(np.abs(eig).max())
            mu = 0.0 if kk == "singular" else float(eig.min())
        u = rng.standard_normal((points, dd))
        u /= np.linalg.norm(u, axis=1, keepdims=True)
        pts = u * rad * power(rng.random((points, 1)), 1.0 / dd)
        return SmoothLoss(kk, nn, dd, beta, mu, rad, seed, prob, pts)

    return draw()
