# --- Theorem 1's sides on a bias-free MLP (boundbench.framework.replays.mlp_hessian) ------------
# h0 = x, h_j = s(W_j h_{j-1}) for the hidden layers, output f = W_L h_{L-1}, squared loss
# 1/2 ||f(theta) - f(theta0)||^2 at theta0: the loss is 0 there, so its Hessian is exactly J^T J
# (J the Jacobian of f in theta; the residual multiplying f's second derivatives is 0), and
# ||Hess|| = sigma_max(J)^2 = lambda_max(J J^T). J is computed in forward mode (exact
# derivatives, no differencing). The right side: ||dh_j/dW_j|| = max_i |s'(z_i)| ||h_{j-1}|| (the
# Jacobian of s(W h) in W is diag(s'(z)) kron h^T), ||W_l|| spectral norms, and
# ||Hess_{h_{L-1}} L|| = ||W_L^T W_L|| = sigma_max(W_L)^2.
import mpmath  # also the frame's; here so that the module imports alone


def _act(name, z):
    if name == "relu":
        return (z if z > 0 else mpmath.mpf(0)), (mpmath.mpf(1) if z > 0 else mpmath.mpf(0))
    return z * mpmath.ncdf(z), mpmath.ncdf(z) + z * mpmath.npdf(z)  # gelu (erf form)


def _mat(rows):
    return mpmath.matrix([[num(v) for v in r] for r in rows])


def _top_eig(M):
    """The largest eigenvalue of a symmetric matrix."""
    return max(mpmath.eigsy(M, eigvals_only=True))


def _spectral(W):
    return mpmath.sqrt(_top_eig(W * W.T))


def sides(I):
    Ws = [_mat(w) for w in I["weights"]]
    x = mpmath.matrix([num(v) for v in I["x"]])
    act, L = I["activation"], len(Ws)
    # forward pass with the tangent of every weight (forward mode): value h, tangents dh[p]
    params = [(k, i, j) for k, W in enumerate(Ws) for i in range(W.rows) for j in range(W.cols)]
    h, dh = x, {p: mpmath.zeros(x.rows, 1) for p in params}
    factors, prev_norms = [], []
    for k, W in enumerate(Ws[:-1]):
        z = W * h
        dz = {}
        for p in params:
            t = W * dh[p]
            if p[0] == k:
                t[p[1]] += h[p[2]]
            dz[p] = t
        vals = [_act(act, z[i]) for i in range(z.rows)]
        slopes = [s for _, s in vals]
        factors.append(max(abs(s) for s in slopes) * mpmath.norm(h))
        prev_norms.append(_spectral(W))
        h = mpmath.matrix([v for v, _ in vals])
        dh = {p: mpmath.matrix([slopes[i] * dz[p][i] for i in range(z.rows)]) for p in params}
    WL = Ws[-1]
    cols = []
    for p in params:
        t = WL * dh[p]
        if p[0] == L - 1:
            t[p[1]] += h[p[2]]
        cols.append(t)
    J = mpmath.matrix(WL.rows, len(params))
    for c, t in enumerate(cols):
        for r in range(WL.rows):
            J[r, c] = t[r]
    nb = sum(W.rows * W.cols for W in Ws[:-1])
    Jb = J[:, :nb] if nb < J.cols else J
    full = _top_eig(J * J.T)
    block = _top_eig(Jb * Jb.T)
    hz = _top_eig(WL.T * WL) if WL.rows >= WL.cols else _top_eig(WL * WL.T)

    def rhs_with(c):
        total = mpmath.mpf(0)
        for j, n_j in enumerate(factors):
            term = n_j
            for w_l in prev_norms[j + 1:]:
                term = term * w_l * c
            total += term
        return total**2 * hz

    r2 = mpmath.sqrt(2)  # GELU' peaks at sqrt 2
    lip = mpmath.mpf(1) if act == "relu" else mpmath.ncdf(r2) + r2 * mpmath.npdf(r2)
    terms = {"hess_full": full, "hess_block": block, "rhs_contractant": rhs_with(mpmath.mpf(1)),
             "rhs_lipschitz": rhs_with(lip)}
    return {"lhs": [terms[I["lhs"]]], "rhs": [terms[I["rhs"]]]}
