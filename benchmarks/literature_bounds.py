"""Twenty published inequalities, each with a planted error of a kind a referee would make, for
``bench_falsify_literature.py`` (issue 81 item 5). Built from the statements, not from any
engine: each entry gives the correct bound and its wrong variant as float64 code over a box,
and the wrong variant's supremum of ``lhs / rhs`` over that box computed apart from both, in
mpmath at 50 digits: in closed form where the statement gives one (said in ``how``), by
enumeration of an integer box, or by a 1-D maximisation (a dense grid, then golden section).

Every wrong variant fails somewhere on its box (its supremum > 1); every correct one holds
(several are tight on a set: at a vertex, on a diagonal, in a limit, where float64 rounding
can invent a violation).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import mpmath as mp
import numpy as np
from scipy.special import erfc, gammaln

mp.mp.dps = 50


@dataclass(frozen=True)
class Entry:
    name: str
    source: str  # where the (correct) inequality is stated
    kind: str  # the planted error
    space: dict
    correct: Callable[[dict], tuple[float, float]]
    wrong: Callable[[dict], tuple[float, float]]
    sup: Callable[[], Any]  # the wrong variant's supremum of lhs/rhs, an mpf
    how: str


ENTRIES: list[Entry] = []


def _v(p: dict, k: str, d: int) -> np.ndarray:
    return np.array([p[f"{k}{i}"] for i in range(d)], dtype=float)


def golden(f: Callable[[Any], Any], lo: float, hi: float, grid: int = 200,
           log: bool = False, steps: int = 150) -> Any:
    """max of f on [lo, hi] in mpmath (in log x where ``log``): the grid's best cell, then
    golden section in it (each step 0.618 of the last: 150 steps pin the point to 1e-31 of
    the cell, the value to far below 50 digits at a smooth maximum)."""
    to = (lambda u: mp.exp(u)) if log else (lambda u: u)
    a0, b0 = (mp.log(lo), mp.log(hi)) if log else (mp.mpf(lo), mp.mpf(hi))
    us = [a0 + (b0 - a0) * i / grid for i in range(grid + 1)]
    vals = [f(to(u)) for u in us]
    i = max(range(len(us)), key=lambda j: vals[j])
    a, b = us[max(i - 1, 0)], us[min(i + 1, grid)]
    g = (mp.sqrt(5) - 1) / 2
    c, d = b - g * (b - a), a + g * (b - a)
    fc, fd = f(to(c)), f(to(d))
    for _ in range(steps):
        if fc > fd:
            b, d, fd = d, c, fc
            c = b - g * (b - a)
            fc = f(to(c))
        else:
            a, c, fc = c, d, fd
            d = a + g * (b - a)
            fd = f(to(d))
    return max(fc, fd, vals[i])


def golden2(f: Callable[[Any, Any], Any], x: tuple, y: tuple) -> Any:
    """max of f(x, y) on a rectangle: golden section in y of the golden-section max in x (each
    axis ``(lo, hi)`` or ``(lo, hi, "log")``); a coarse grid in both first locates the best cell,
    so a second peak elsewhere is not missed."""
    def axis(spec: tuple) -> dict:
        return {"lo": spec[0], "hi": spec[1], "log": len(spec) == 3 and spec[2] == "log"}
    ax, ay = axis(x), axis(y)
    return golden(lambda v: golden(lambda u: f(u, v), ax["lo"], ax["hi"], grid=60,
                                   log=ax["log"], steps=120),
                  ay["lo"], ay["hi"], grid=60, log=ay["log"], steps=120)


def add(**kw: Any) -> None:
    ENTRIES.append(Entry(**kw))


# --- convexity and means ------------------------------------------------------------------
_P = (0.1, 10.0)
add(name="AM-GM, three terms", source="Hardy, Littlewood, Polya, Inequalities (1934), Thm 9",
    kind="a constant off (3.003 for 3)", space={"x": _P, "y": _P, "z": _P},
    correct=lambda p: (np.cbrt(p["x"] * p["y"] * p["z"]), (p["x"] + p["y"] + p["z"]) / 3),
    wrong=lambda p: (np.cbrt(p["x"] * p["y"] * p["z"]), (p["x"] + p["y"] + p["z"]) / 3.003),
    sup=lambda: mp.mpf("3.003") / 3, how="closed form: equality at x = y = z")
add(name="Hermite-Hadamard for exp", source="Hadamard (1893); Dragomir & Pearce (2000), Thm 1.1",
    kind="a constant off (0.999)", space={"a": (-2.0, 2.0), "b": (-2.0, 2.0)},
    correct=lambda p: ((np.exp(p["b"]) - np.exp(p["a"])) / (p["b"] - p["a"]) if p["a"] != p["b"]
                       else np.exp(p["a"]), (np.exp(p["a"]) + np.exp(p["b"])) / 2),
    wrong=lambda p: ((np.exp(p["b"]) - np.exp(p["a"])) / (p["b"] - p["a"]) if p["a"] != p["b"]
                     else np.exp(p["a"]), 0.999 * (np.exp(p["a"]) + np.exp(p["b"])) / 2),
    sup=lambda: 1 / mp.mpf("0.999"), how="closed form: the limit a -> b (not attained)")
add(name="Young, exponents 3 and 3/2", source="Young (1912); Hardy-Littlewood-Polya Thm 61",
    kind="a wrong exponent (conjugate 2 for 3/2)", space={"a": (0.05, 3.0), "b": (0.05, 3.0)},
    correct=lambda p: (p["a"] * p["b"], p["a"] ** 3 / 3 + p["b"] ** 1.5 / 1.5),
    wrong=lambda p: (p["a"] * p["b"], p["a"] ** 3 / 3 + p["b"] ** 2 / 2),
    sup=lambda: _young_sup(), how="2-D: golden section in b of the golden-section max in a")


def _young_sup() -> Any:
    return golden2(lambda a, b: a * b / (a ** 3 / 3 + b ** 2 / 2), (0.05, 3.0), (0.05, 3.0))


add(name="Jordan's inequality", source="Mitrinovic, Analytic Inequalities (1970), 3.4.1",
    kind="a loosened condition (x up to pi/2 + 0.05)", space={"x": (0.01, math.pi / 2 + 0.05)},
    correct=lambda p: (2 * min(p["x"], math.pi / 2) / math.pi, math.sin(min(p["x"], math.pi / 2))),
    wrong=lambda p: (2 * p["x"] / math.pi, math.sin(p["x"])),
    sup=lambda: (lambda x: 2 * x / mp.pi / mp.sin(x))(mp.mpf(math.pi / 2 + 0.05)),
    how="closed form: increasing past pi/2: the box's end")
add(name="log(1+x) >= 2x/(2+x)", source="Topsoe (2004); Mitrinovic 3.6.18",
    kind="a dropped factor (0.4x for x/2)", space={"x": (1e-4, 10.0, "log")},
    correct=lambda p: (2 * p["x"] / (2 + p["x"]), math.log1p(p["x"])),
    wrong=lambda p: (p["x"] / (1 + 0.4 * p["x"]), math.log1p(p["x"])),
    sup=lambda: golden(lambda x: x / ((1 + mp.mpf("0.4") * x) * mp.log1p(x)), 1e-4, 10.0),
    how="1-D golden section")
add(name="Popoviciu's variance inequality", source="Popoviciu (1935); Bhatia & Davis (2000)",
    kind="the sample variance (n - 1) for the population's (n)",
    space={f"x{i}": (0.0, 1.0) for i in range(6)},
    correct=lambda p: (float(np.var(_v(p, "x", 6))), float(np.ptp(_v(p, "x", 6))) ** 2 / 4),
    wrong=lambda p: (float(np.var(_v(p, "x", 6), ddof=1)), float(np.ptp(_v(p, "x", 6))) ** 2 / 4),
    sup=lambda: mp.mpf(6) / 5, how="closed form: three values at each end (box vertices)")

# --- norms, matrices, high-dimensional boxes ----------------------------------------------
add(name="l1 <= sqrt(d) l2, d = 24", source="Horn & Johnson, Matrix Analysis, 5.4.21",
    kind="a constant off (0.999 sqrt(d))", space={f"x{i}": (-1.0, 1.0) for i in range(24)},
    correct=lambda p: (float(np.abs(_v(p, "x", 24)).sum()),
                       math.sqrt(24) * float(np.linalg.norm(_v(p, "x", 24)))),
    wrong=lambda p: (float(np.abs(_v(p, "x", 24)).sum()),
                     0.999 * math.sqrt(24) * float(np.linalg.norm(_v(p, "x", 24)))),
    sup=lambda: 1 / mp.mpf("0.999"), how="closed form: |x_i| all equal (the cube's vertices)")
add(name="Holder, p = 3, d = 4", source="Holder (1889); Hardy-Littlewood-Polya Thm 13",
    kind="a wrong exponent (q = 3 for 3/2)",
    space={**{f"a{i}": (0.0, 1.0) for i in range(4)}, **{f"b{i}": (0.0, 1.0) for i in range(4)}},
    correct=lambda p: (float(_v(p, "a", 4) @ _v(p, "b", 4)),
                       float(np.sum(_v(p, "a", 4) ** 3)) ** (1 / 3)
                       * float(np.sum(_v(p, "b", 4) ** 1.5)) ** (2 / 3)),
    wrong=lambda p: (float(_v(p, "a", 4) @ _v(p, "b", 4)),
                     float(np.sum(_v(p, "a", 4) ** 3)) ** (1 / 3)
                     * float(np.sum(_v(p, "b", 4) ** 3)) ** (1 / 3)),
    sup=lambda: mp.cbrt(4), how="closed form: a = b = all ones, ratio d^(1 - 2/3)")
add(name="Frobenius <= sqrt(rank) spectral, 3x3", source="Golub & Van Loan (2013), 2.3.7",
    kind="a wrong rank (sqrt 2 for sqrt 3)", space={f"m{i}": (-1.0, 1.0) for i in range(9)},
    correct=lambda p: (float(np.linalg.norm(_v(p, "m", 9).reshape(3, 3))),
                       math.sqrt(3) * float(np.linalg.norm(_v(p, "m", 9).reshape(3, 3), 2))),
    wrong=lambda p: (float(np.linalg.norm(_v(p, "m", 9).reshape(3, 3))),
                     math.sqrt(2) * float(np.linalg.norm(_v(p, "m", 9).reshape(3, 3), 2))),
    sup=lambda: mp.sqrt(mp.mpf(3) / 2), how="closed form: equal singular values (I)")
add(name="Gershgorin's spectral radius, symmetric 3x3",
    source="Gershgorin (1931); Horn & Johnson 6.1.1",
    kind="a dropped factor (0.9 on the off-diagonal sums)",
    space={f"s{i}": (-1.0, 1.0) for i in range(6)},
    correct=lambda p: _gersh(p, 1.0), wrong=lambda p: _gersh(p, 0.9),
    sup=lambda: 1 / mp.mpf("0.9"), how="closed form: zero diagonal, constant row sums")


def _sym(p: dict) -> np.ndarray:
    s = _v(p, "s", 6)
    return np.array([[s[0], s[3], s[4]], [s[3], s[1], s[5]], [s[4], s[5], s[2]]])


def _gersh(p: dict, c: float) -> tuple[float, float]:
    a = _sym(p)
    off = np.abs(a).sum(1) - np.abs(np.diag(a))
    return float(np.abs(np.linalg.eigvalsh(a)).max()), float((np.abs(np.diag(a)) + c * off).max())


add(name="Hadamard's determinant inequality, 3x3",
    source="Hadamard (1893); Horn & Johnson 7.8.1", kind="a constant off (0.98)",
    space={f"m{i}": (-1.0, 1.0) for i in range(9)},
    correct=lambda p: _hadamard(p, 1.0), wrong=lambda p: _hadamard(p, 0.98),
    sup=lambda: 1 / mp.mpf("0.98"), how="closed form: orthogonal rows")


def _hadamard(p: dict, c: float) -> tuple[float, float]:
    m = _v(p, "m", 9).reshape(3, 3)
    g = m @ m.T
    return float(np.linalg.det(g)), c * float(np.prod(np.diag(g)))


add(name="log-sum-exp <= max + log d, d = 16", source="Boyd & Vandenberghe (2004), 3.1.5",
    kind="a constant off (0.99 log d)", space={f"x{i}": (0.0, 1.0) for i in range(16)},
    correct=lambda p: (float(np.logaddexp.reduce(_v(p, "x", 16))),
                       float(_v(p, "x", 16).max()) + math.log(16)),
    wrong=lambda p: (float(np.logaddexp.reduce(_v(p, "x", 16))),
                     float(_v(p, "x", 16).max()) + 0.99 * math.log(16)),
    sup=lambda: 1 / mp.mpf("0.99"), how="closed form: all x_i = 0 (a vertex)")

# --- concentration and information ----------------------------------------------------------
add(name="Pinsker, Bernoulli laws", source="Pinsker (1964); Cover & Thomas (2006), Lemma 11.6.1",
    kind="a constant off (2.02 for 2)", space={"p": (0.01, 0.99), "q": (0.01, 0.99)},
    correct=lambda p: (2 * (p["p"] - p["q"]) ** 2, _kl(p["p"], p["q"])),
    wrong=lambda p: (2.02 * (p["p"] - p["q"]) ** 2, _kl(p["p"], p["q"])),
    sup=lambda: mp.mpf("1.01"), how="closed form: the limit p -> q = 1/2 (not attained)")


def _kl(a: float, b: float) -> float:
    return a * math.log(a / b) + (1 - a) * math.log((1 - a) / (1 - b))


add(name="Hoeffding's lemma, Bernoulli", source="Hoeffding (1963), (4.16)",
    kind="the variance for the range (lam^2 q(1-q)/2 for lam^2/8)",
    space={"q": (0.01, 0.99), "lam": (0.01, 10.0, "log")},
    correct=lambda p: (_lmgf(p["q"], p["lam"]), p["lam"] ** 2 / 8),
    wrong=lambda p: (_lmgf(p["q"], p["lam"]), p["lam"] ** 2 * p["q"] * (1 - p["q"]) / 2),
    sup=lambda: _hoeff_sup(), how="2-D: golden section in lam of the golden-section max in q")


def _lmgf(q: float, lam: float) -> float:
    return math.log(q * math.exp(lam * (1 - q)) + (1 - q) * math.exp(-lam * q))


def _hoeff_sup() -> Any:
    def r(q: Any, lam: Any) -> Any:
        return mp.log(q * mp.exp(lam * (1 - q)) + (1 - q) * mp.exp(-lam * q)) / (
            lam ** 2 * q * (1 - q) / 2)
    return golden2(r, (0.01, 0.99), (0.01, 10.0, "log"))


add(name="Chernoff-Hoeffding, binomial tail", source="Hoeffding (1963), Thm 1; integer box",
    kind="a loosened condition (k >= np - 1 for k >= np)",
    space={"n": (1, 30, "int"), "k": (0, 30, "int"), "j": (1, 19, "int")},
    correct=lambda p: _chernoff(p, 0.0), wrong=lambda p: _chernoff(p, 1.0),
    sup=lambda: _chernoff_sup(), how="enumeration of the integer box")


def _tail(n: int, k: int, q: float) -> float:
    return float(sum(math.comb(n, i) * q ** i * (1 - q) ** (n - i) for i in range(k, n + 1)))


def _chernoff(p: dict, slack: float) -> tuple[float, float]:
    n, k, q = int(p["n"]), int(p["k"]), p["j"] / 20
    if k > n:
        return 0.0, 1.0
    if k < n * q - slack:
        return _tail(n, k, q), 1.0
    a = k / n
    kl = (0.0 if a == 0 else a * math.log(a / q)) + (0.0 if a == 1 else (1 - a) * math.log(
        (1 - a) / (1 - q)))
    return _tail(n, k, q), math.exp(-n * kl)


def _chernoff_sup() -> Any:
    best = mp.mpf(0)
    for n in range(1, 31):
        for j in range(1, 20):
            q = mp.mpf(j) / 20
            for k in range(0, n + 1):
                if k < n * q - 1:
                    continue
                tail = mp.fsum(mp.binomial(n, i) * q ** i * (1 - q) ** (n - i)
                               for i in range(k, n + 1))
                a = mp.mpf(k) / n
                kl = (0 if a == 0 else a * mp.log(a / q)) + (0 if a == 1 else (1 - a) * mp.log(
                    (1 - a) / (1 - q)))
                best = max(best, tail / mp.exp(-n * kl))  # k >= nq - 1: the wrong condition
    return best


add(name="Chebyshev, binomial", source="Chebyshev (1867); any probability text",
    kind="a constant off (2 t^2 for t^2)",
    space={"n": (1, 30, "int"), "t": (1, 30, "int"), "j": (1, 19, "int")},
    correct=lambda p: _cheb(p, 1.0), wrong=lambda p: _cheb(p, 2.0),
    sup=lambda: _cheb_sup(), how="enumeration of the integer box")


def _cheb(p: dict, c: float) -> tuple[float, float]:
    n, t, q = int(p["n"]), int(p["t"]), p["j"] / 20
    prob = sum(math.comb(n, i) * q ** i * (1 - q) ** (n - i) for i in range(n + 1)
               if abs(i - n * q) >= t)
    return float(prob), n * q * (1 - q) / (c * t * t)


def _cheb_sup() -> Any:
    best = mp.mpf(0)
    for n in range(1, 31):
        for j in range(1, 20):
            q = mp.mpf(j) / 20
            for t in range(1, 31):
                prob = mp.fsum(mp.binomial(n, i) * q ** i * (1 - q) ** (n - i)
                               for i in range(n + 1) if abs(i - n * q) >= t)
                best = max(best, prob / (n * q * (1 - q) / (2 * t * t)))
    return best


# --- special functions ----------------------------------------------------------------------
add(name="Mills ratio upper bound", source="Gordon (1941); Abramowitz & Stegun 26.2.12",
    kind="a constant off (0.99)", space={"x": (0.1, 30.0)},
    correct=lambda p: (0.5 * erfc(p["x"] / math.sqrt(2)),
                       math.exp(-p["x"] ** 2 / 2) / (math.sqrt(2 * math.pi) * p["x"])),
    wrong=lambda p: (0.5 * erfc(p["x"] / math.sqrt(2)),
                     0.99 * math.exp(-p["x"] ** 2 / 2) / (math.sqrt(2 * math.pi) * p["x"])),
    sup=lambda: (lambda x: mp.erfc(x / mp.sqrt(2)) / 2 / (
        mp.mpf("0.99") * mp.exp(-x ** 2 / 2) / (mp.sqrt(2 * mp.pi) * x)))(mp.mpf(30)),
    how="closed form: increasing in x, the box's end")
add(name="Stirling's lower bound", source="Robbins (1955); Feller I, II.9",
    kind="a constant off (2.52 for sqrt(2 pi))", space={"n": (1, 170, "int")},
    correct=lambda p: (math.exp(0.5 * math.log(2 * math.pi) + (p["n"] + 0.5) * math.log(p["n"])
                                - p["n"]), math.exp(float(gammaln(p["n"] + 1)))),
    wrong=lambda p: (math.exp(math.log(2.52) + (p["n"] + 0.5) * math.log(p["n"]) - p["n"]),
                     math.exp(float(gammaln(p["n"] + 1)))),
    sup=lambda: max(mp.mpf("2.52") * mp.mpf(n) ** (n + mp.mpf(1) / 2) * mp.exp(-n)
                    / mp.factorial(n) for n in range(1, 171)),
    how="enumeration of n")
add(name="Gautschi's inequality", source="Gautschi (1959); DLMF 5.6.4",
    kind="a wrong shift ((x + 0.4)^(1-s) for (x + 1)^(1-s))",
    space={"x": (0.01, 10.0), "s": (0.01, 0.99)},
    correct=lambda p: (math.exp(float(gammaln(p["x"] + 1) - gammaln(p["x"] + p["s"]))),
                       (p["x"] + 1) ** (1 - p["s"])),
    wrong=lambda p: (math.exp(float(gammaln(p["x"] + 1) - gammaln(p["x"] + p["s"]))),
                     (p["x"] + 0.4) ** (1 - p["s"])),
    sup=lambda: _gautschi_sup(), how="2-D: golden section in s of the golden-section max in x")


def _gautschi_sup() -> Any:
    return golden2(lambda x, s: mp.gamma(x + 1) / mp.gamma(x + s) / (x + mp.mpf("0.4")) ** (1 - s),
                   (0.01, 10.0), (0.01, 0.99))


add(name="Binomial coefficient bound", source="Cormen et al., CLRS (C.5); Knuth 1.2.6",
    kind="a wrong constant (2 for e)", space={"n": (1, 60, "int"), "k": (1, 60, "int")},
    correct=lambda p: _binom(p, math.e), wrong=lambda p: _binom(p, 2.0),
    sup=lambda: max(mp.binomial(n, k) / (2 * mp.mpf(n) / k) ** k
                    for n in range(1, 61) for k in range(1, n + 1)),
    how="enumeration of the integer box")


def _binom(p: dict, c: float) -> tuple[float, float]:
    n, k = int(p["n"]), int(p["k"])
    if k > n:
        return 0.0, 1.0
    return float(math.comb(n, k)), (c * n / k) ** k
