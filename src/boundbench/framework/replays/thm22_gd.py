# --- Theorem 2.2 on 2-D per-sample quadratics (boundbench.framework.replays.thm22_gd) ----------
# f_j(w) = 1/2 (w - w*)^T A_j (w - w*), A_j = mu I + (beta - mu) u_j u_j^T, beta = 1, u_j =
# (cos th_j, sin th_j). GD on the mean with eta = 1/beta from w0 (w0 - w* = e0): the error after
# t steps is (I - A)^t e0 with A the mean of the A_j over S (or over S^i, n - 1 of them). Left
# side: the mean over i of sup_{1 <= t <= T} ||e_t(S^i) - e_t(S)||, T = ceil(40 / mu) (iterated
# here step by step, no eigen-decomposition). Right side, the main text's eq. (3) read with the
# local Lipschitz constant L = beta ||w0 - w*||: sqrt(2 L) ||w0 - w*|| / beta /
# (n ((1 - mu/beta)^(-1/4) - 1)).
import mpmath  # also the frame's; here so that the module imports alone


def sides(I):
    n, mu, d0 = int(I["n"]), num(I["mu_over_beta"]), num(I["dist0"])
    th = [num(t) for t in I["angles"][:n]]
    U = [(mpmath.cos(t), mpmath.sin(t)) for t in th]
    outer = [mpmath.matrix([[u[0] * u[0], u[0] * u[1]], [u[1] * u[0], u[1] * u[1]]]) for u in U]
    eye = mpmath.eye(2)
    total = mpmath.zeros(2, 2)
    for o in outer:
        total += o

    def step_matrix(S, count):
        return eye - (mu * eye + (1 - mu) * S / count)

    M = step_matrix(total, n)
    Ms = [step_matrix(total - o, n - 1) for o in outer]
    ph = num(I["start_angle"])
    e0 = mpmath.matrix([d0 * mpmath.cos(ph), d0 * mpmath.sin(ph)])
    T = int(mpmath.ceil(40 / mu))
    e, es = e0, [e0] * n
    sup = [mpmath.mpf(0)] * n
    for _ in range(T):
        e = M * e
        es = [Ms[i] * es[i] for i in range(n)]
        for i in range(n):
            sup[i] = max(sup[i], mpmath.norm(es[i] - e))
    lhs = mpmath.fsum(sup) / n
    L = d0  # beta = 1: the local reading, L = beta ||w0 - w*||
    rhs = mpmath.sqrt(2 * L) * d0 / (n * mpmath.expm1(-mpmath.log1p(-mu) / 4))
    return {"lhs": [lhs], "rhs": [rhs]}
