# --- SVM leave-one-out sides, every optimum certified (boundbench.framework.replays.svm_loo) ----
# Soft margin: min lam ||v||^2 + sum_i a_i max(0, 1 - y_i (v.x_i + c)), a_i = 1/n on S and
# 1/(n-1) on S^i (0 at the left-out point), the intercept c free. Hard margin: min 1/2 ||v||^2
# s.t. y_i (v.x_i + c) >= 1. Both are convex QPs whose KKT conditions with multipliers alpha
# (0 <= alpha_i <= a_i; soft) are: q v = sum alpha_i y_i x_i (q = 2 lam, or 1 for the hard
# margin), sum alpha_i y_i = 0, and complementary slackness (alpha_i > 0 => margin <= 1,
# alpha_i < a_i => margin >= 1). Any primal point satisfying them with one dual-feasible alpha is
# optimal, and with that alpha they describe *every* optimum: v is unique and the optimal c form
# the interval the slackness conditions leave. The carried solver solution names the active
# set; this program re-solves the KKT system on it at the working precision, checks every
# condition (residuals printed against their tolerances) and the duality gap, and prints how far
# the solver's own v, c and alpha were from the certified optimum.
import mpmath  # also the frame's; here so that the module imports alone

KKT_TOL = mpmath.mpf("1e-30")  # residuals of the re-solved KKT system (exact up to rounding)
ACTIVE_TOL = mpmath.mpf("1e-6")  # |margin - 1| under this names a point on the margin


def _vec(v):
    return mpmath.matrix([num(t) for t in v])


def _dot(a, b):
    return mpmath.fsum(a[i] * b[i] for i in range(len(a)))


def certify(name, X, y, caps, q, hint):
    """The certified optimum of one SVM: (v, c_low, c_high). ``caps``: a_i (None for the hard
    margin); points with a_i = 0 are left out; ``hint``: the solver's v, c and alpha. The active
    set is read off the solver's multipliers, then off its margins; the first whose KKT system
    passes every check is the certificate (printed), else the last attempt's failures are."""
    keep = [i for i in range(len(y)) if caps is None or caps[i] > 0]
    v_hat, c_hat = _vec(hint["v"]), num(hint["c"])
    a_hat = [num(t) for t in hint.get("alpha", [])]
    attempts, seen = [], set()

    def attempt(source, on, inside):
        key = (tuple(on), tuple(inside))
        if key not in seen:
            seen.add(key)
            attempts.append((source, on, inside))

    cap = (lambda i: caps[i]) if caps is not None else (lambda i: mpmath.inf)
    margins = {i: y[i] * (_dot(v_hat, X[i]) + c_hat) for i in keep}
    scale = max(1, max(mpmath.norm(mpmath.matrix(X[i])) for i in keep) * mpmath.norm(v_hat))
    for tol in [ACTIVE_TOL * 10**k for k in (0, -2, 2, 3, 4)]:
        if len(a_hat) == len(y):
            top = max(a_hat[i] for i in keep)
            attempt("the solver's multipliers",
                    [i for i in keep if tol * top < a_hat[i] < (1 - tol) * cap(i)],
                    [i for i in keep if caps is not None and a_hat[i] >= (1 - tol) * caps[i]])
        attempt("the solver's margins", [i for i in keep if abs(margins[i] - 1) < tol * scale],
                [] if caps is None else [i for i in keep if margins[i] < 1 - tol * scale])
    for k, tried in enumerate(attempts):
        checks = []
        got = _kkt(X, y, caps, q, keep, tried[1], tried[2], checks)
        if all(v <= t for _, v, t in checks) or k == len(attempts) - 1:
            break
    source, on, inside = tried
    v, lo, hi, alpha = got
    worst = max(checks, key=lambda c: c[1] / c[2])
    for what, value, tol in checks:
        CERTS.append((f"{name}: {what}", value, tol))
    SUMMARY.append(f"{name}: active set from {source} ({len(on)} on the margin, {len(inside)} "
                   f"inside); worst KKT residual {mpmath.nstr(worst[1], 3)} ({worst[0]}), "
                   f"tolerance {mpmath.nstr(KKT_TOL, 3)}; optimal intercepts "
                   f"[{mpmath.nstr(lo, 8)}, {mpmath.nstr(hi, 8)}]")
    dist_v = mpmath.norm(v_hat - v)
    off = max(0, lo - c_hat, c_hat - hi)
    said_a = (f", its multipliers {mpmath.nstr(max(abs(a_hat[i] - alpha[i]) for i in keep), 3)}"
              " from the certified ones" if len(a_hat) == len(y) else "")
    NOTES.append(f"{name}: the solver's v is {mpmath.nstr(dist_v, 3)} from the certified "
                 f"optimum, its c {mpmath.nstr(off, 3)} outside the optimal interval{said_a}")
    return v, min(lo, hi), max(lo, hi)


def _kkt(X, y, caps, q, keep, on, inside, checks):
    """The KKT system on one active set, solved at the working precision, and its residuals
    appended to ``checks`` as (what, value, tolerance)."""
    alpha = {i: mpmath.mpf(0) for i in keep}
    for i in inside:
        alpha[i] = caps[i]
    d = len(X[0])
    fixed = [mpmath.fsum(alpha[i] * y[i] * X[i][k] for i in inside) for k in range(d)]
    c = None
    if on:  # unknowns alpha_on and c: margins of `on` are 1, sum alpha y = 0
        m = len(on)
        A, b = mpmath.zeros(m + 1, m + 1), mpmath.zeros(m + 1, 1)
        for r, i in enumerate(on):
            for s, j in enumerate(on):
                A[r, s] = y[i] * y[j] * _dot(X[i], X[j]) / q
            A[r, m] = y[i]
            b[r] = 1 - y[i] * mpmath.fsum(fixed[k] * X[i][k] for k in range(d)) / q
            A[m, r] = y[i]
        b[m] = -mpmath.fsum(alpha[i] * y[i] for i in inside)
        try:
            sol = mpmath.lu_solve(A, b)
        except ZeroDivisionError:
            checks.append(("the active set's KKT system is singular", mpmath.mpf(1), KKT_TOL))
            sol = mpmath.zeros(m + 1, 1)
        for r, i in enumerate(on):
            alpha[i] = sol[r]
        c = sol[m]
    v = mpmath.matrix([mpmath.fsum(alpha[i] * y[i] * X[i][k] for i in keep) / q
                       for k in range(d)])
    box = max([-alpha[i] for i in keep] + ([alpha[i] - caps[i] for i in keep]
                                           if caps is not None else []))
    checks.append(("dual feasibility (alpha in its box)", max(box, 0), KKT_TOL))
    checks.append(("sum alpha_i y_i", abs(mpmath.fsum(alpha[i] * y[i] for i in keep)), KKT_TOL))
    # complementary slackness leaves c in an interval: lo <= c <= hi
    lo, hi = -mpmath.inf, mpmath.inf
    for i in keep:
        t = y[i] - _dot(v, X[i])  # margin 1 at c = t (y = +-1)
        at_top = caps is not None and alpha[i] >= caps[i] - KKT_TOL
        if alpha[i] > KKT_TOL:  # margin <= 1
            lo, hi = (lo, min(hi, t)) if y[i] > 0 else (max(lo, t), hi)
        if not at_top:  # margin >= 1
            lo, hi = (max(lo, t), hi) if y[i] > 0 else (lo, min(hi, t))
    checks.append(("complementary slackness: the intercept interval's low - high",
                   max(lo - hi, 0), KKT_TOL))
    cc = c if c is not None else (lo + hi) / 2
    hinge = (mpmath.fsum(caps[i] * max(0, 1 - y[i] * (_dot(v, X[i]) + cc)) for i in keep)
             if caps is not None else 0)
    primal = _dot(v, v) * q / 2 + hinge
    dual = mpmath.fsum(alpha[i] for i in keep) - q * _dot(v, v) / 2
    if caps is None:
        short = max(1 - y[i] * (_dot(v, X[i]) + cc) for i in keep)
        checks.append(("primal feasibility (worst margin shortfall)", max(short, 0), KKT_TOL))
    checks.append(("duality gap", abs(primal - dual), KKT_TOL))
    return v, min(lo, hi), max(lo, hi), alpha


NOTES = []
SUMMARY = []  # one line per certified problem


def _nearest0(lo, hi):
    return mpmath.mpf(0) if lo <= 0 <= hi else min(abs(lo), abs(hi))


def _closest_direction(v1, lo1, hi1, v2, lo2, hi2, grid=64):
    """A certified lower bound on min ||u(v1, b1) - u(v2, b2)|| over b1 in [lo1, hi1], b2 in
    [lo2, hi2], u(v, b) = [v, b]/||[v, b]||: the grid's minimum less the most the function can
    fall within half a cell (|du/db| <= 1/||[v, b]||)."""
    def u_dist(b1, b2):
        n1 = mpmath.sqrt(_dot(v1, v1) + b1**2)
        n2 = mpmath.sqrt(_dot(v2, v2) + b2**2)
        cos = (_dot(v1, v2) + b1 * b2) / (n1 * n2)
        return mpmath.sqrt(max(0, 2 - 2 * cos))
    g1 = [lo1 + (hi1 - lo1) * k / grid for k in range(grid + 1)] if hi1 > lo1 else [lo1]
    g2 = [lo2 + (hi2 - lo2) * k / grid for k in range(grid + 1)] if hi2 > lo2 else [lo2]
    best = min(u_dist(a, b) for a in g1 for b in g2)
    r1 = mpmath.sqrt(_dot(v1, v1) + _nearest0(lo1, hi1) ** 2)
    r2 = mpmath.sqrt(_dot(v2, v2) + _nearest0(lo2, hi2) ** 2)
    slack = ((hi1 - lo1) / grid / 2) / r1 + ((hi2 - lo2) / grid / 2) / r2
    return best, slack


def _a25_rhs(lam, n, B, gamma):
    t = 1 + B / gamma
    return max(mpmath.sqrt(2 / (lam * n) * t), (B + mpmath.sqrt(B**2 + 8 * n * lam * t))
               / (2 * n * lam))


def sides(I):
    NOTES.clear()
    SUMMARY.clear()
    X = [[num(t) for t in row] for row in I["X"]]
    y = [num(t) for t in I["y"]]
    n, which = len(y), I["which"]
    B = max(mpmath.sqrt(_dot(x, x)) for x in X)
    if which in ("a24-w", "a24-v"):  # hard margin, S and every S^i
        v, lo, hi = certify("S (hard margin)", X, y, None, 1, I["hard"])
        lhs, rhs = [], []
        for i in range(n):
            vi, loi, hii = _hard_loo(X, y, i, I["hard_loo"][i])
            if which == "a24-v":
                lhs.append(mpmath.norm(vi))
                rhs.append(mpmath.norm(v))
            else:
                lhs.append(mpmath.sqrt(_dot(vi, vi) + loi**2))
                rhs.append(mpmath.sqrt(_dot(v, v) + lo**2))
        return {"lhs": lhs, "rhs": rhs, "note": "\n  ".join(SUMMARY + NOTES)}
    lam = num(I["lam"])
    q = 2 * lam
    caps = [mpmath.mpf(1) / n] * n
    v, lo, hi = certify("S", X, y, caps, q, I["soft"])
    loo = []
    for i in range(n):
        ci = [mpmath.mpf(0) if j == i else mpmath.mpf(1) / (n - 1) for j in range(n)]
        loo.append(certify(f"S^{i}", X, y, ci, q, I["soft_loo"][i]))
    vh, _, _ = certify("S (hard margin, for gamma_S)", X, y, None, 1, I["hard"])
    gamma = 1 / mpmath.norm(vh)
    n_fav = num(I["n_fav"])
    if which == "v-norm":
        return {"lhs": [max(mpmath.norm(vi) for vi, _, _ in loo)], "rhs": [mpmath.norm(v)],
                "note": "\n  ".join(SUMMARY + NOTES)}
    if which in ("lemma", "cor"):
        close = max(mpmath.sqrt(mpmath.norm(vi - v) ** 2 + max(0, loi - hi, lo - hii) ** 2)
                    for vi, loi, hii in loo)
        rhs = (_a25_rhs(lam, n_fav, B, gamma) if which == "lemma"
               else mpmath.sqrt(B**2 + 1) / (lam * n_fav))
        return {"lhs": [close], "rhs": [rhs], "note": "\n  ".join(SUMMARY + NOTES)}
    # thm24: the closest direction change against (2 / r_min) Lemma A.2.5
    best, slack = mpmath.mpf(0), mpmath.mpf(0)
    for vi, loi, hii in loo:
        d_i, s_i = _closest_direction(v, lo, hi, vi, loi, hii)
        if d_i - s_i > best - slack:
            best, slack = d_i, s_i
    r_min = mpmath.sqrt(min([_dot(v, v) + _nearest0(lo, hi) ** 2]
                            + [_dot(vi, vi) + _nearest0(loi, hii) ** 2 for vi, loi, hii in loo]))
    # r_min = 0 (an optimal head at the origin): Lemma A.2.1's nu = 2/r is infinite, the bound
    # vacuous
    nu = 2 / r_min if r_min > 0 else mpmath.inf
    return {"lhs": [best], "rhs": [nu * _a25_rhs(lam, n_fav, B, gamma)],
            "err_lhs": slack, "note": "\n  ".join(SUMMARY + NOTES)}


def _hard_loo(X, y, i, hint):
    keep = [j for j in range(len(y)) if j != i]
    return certify(f"S^{i} (hard margin)", [X[j] for j in keep], [y[j] for j in keep], None, 1,
                   hint)
