# --- a performance-estimation worst case (boundbench.framework.replays.pep_witness) ------------
# PEPit's primal solution: the values f_i and gradients g_i of a function at points x_i. Such
# data come from a function of the class iff the class's interpolation inequalities hold for
# every ordered pair (Taylor, Hendrickx and Glineur 2017): smooth convex (Thm 4),
#   f_i >= f_j + <g_j, x_i - x_j> + ||g_i - g_j||^2 / (2 L);
# smooth, not necessarily convex (Thm 3.10),
#   f_i >= f_j - L/4 ||x_i - x_j||^2 + <g_i + g_j, x_i - x_j>/2 + ||g_i - g_j||^2 / (4 L).
# The SDP's solution meets them to ~1e-9, not exactly, so this program finds the smallest L' >= L
# for which every one holds exactly (bisection at the working precision; both sides shrink with
# L') and judges the lemma's variant on the class of L'-smooth functions: an exact witness.
import mpmath  # also the frame's; here so that the module imports alone


def _ip(a, b):
    return mpmath.fsum(a[k] * b[k] for k in range(len(a)))


def _sub(a, b):
    return [a[k] - b[k] for k in range(len(a))]


def _slack(cls, L, p, q):
    """f_i - (the interpolation inequality's right side) for the pair (i = p, j = q)."""
    dx, dg = _sub(p["x"], q["x"]), _sub(p["g"], q["g"])
    if cls == "smooth-convex":
        return p["f"] - q["f"] - _ip(q["g"], dx) - _ip(dg, dg) / (2 * L)
    return (p["f"] - q["f"] + L / 4 * _ip(dx, dx) - _ip([p["g"][k] + q["g"][k] for k in
                                                         range(len(dx))], dx) / 2
            - _ip(dg, dg) / (4 * L))


def sides(I):
    pts = [{"x": [num(t) for t in p["x"]], "g": [num(t) for t in p["g"]], "f": num(p["f"])}
           for p in I["points"]]
    L0, cls, r = num(I["L"]), I["class"], I["roles"]
    NOTES.clear()
    # the roles the lemma fixes are imposed exactly (the SDP's evaluation rounds them): the
    # next point is the gradient step, x* has gradient 0
    if I["lemma"] == "a51":
        w = pts[r["w"]]
        off = [pts[r["next"]]["x"][k] - (w["x"][k] - num(I["eta"]) * w["g"][k])
               for k in range(len(w["x"]))]
        NOTES.append(f"the recorded next point was {mpmath.nstr(mpmath.sqrt(_ip(off, off)), 3)}"
                     " from the exact gradient step, which replaces it")
        pts[r["next"]]["x"] = [w["x"][k] - num(I["eta"]) * w["g"][k] for k in range(len(w["x"]))]
    if I["lemma"] == "a13":
        pts[r["x_star"]]["g"] = [mpmath.mpf(0)] * len(pts[r["x_star"]]["g"])

    def ok(L):
        return all(_slack(cls, L, p, q) >= 0 for p in pts for q in pts if p is not q)

    L = L0
    if not ok(L):
        hi = L0 * 2
        while not ok(hi) and hi < L0 * 2**20:
            hi *= 2
        if ok(hi):
            lo = L0
            for _ in range(200):
                mid = (lo + hi) / 2
                lo, hi = (lo, mid) if ok(mid) else (mid, hi)
            L = hi
        else:
            L = hi
    certificate(f"the data interpolable by an L'-smooth {cls} function: worst slack at L' "
                "(must be >= 0; shown negated)",
                max(0, -min(_slack(cls, L, p, q) for p in pts for q in pts if p is not q)), 0)
    NOTES.append(f"interpolable in the class with L' = {mpmath.nstr(L, 12)} (L = "
                 f"{mpmath.nstr(L0, 6)}, relative excess {mpmath.nstr((L - L0) / L0, 3)})")
    if I["lemma"] == "a12":
        eta, u, w = num(I["eta"]), pts[r["u"]], pts[r["w"]]
        certificate("the step is inside the variant's range: eta L' - step_limit L'",
                    max(0, eta * L - num(I["step_limit"]) * L), 0)
        moved = [(u["x"][k] - eta * u["g"][k]) - (w["x"][k] - eta * w["g"][k])
                 for k in range(len(u["x"]))]
        lhs, rhs = mpmath.sqrt(_ip(moved, moved)), mpmath.sqrt(_ip(_sub(u["x"], w["x"]),
                                                                   _sub(u["x"], w["x"])))
    elif I["lemma"] == "a13":
        w, xs = pts[r["w"]], pts[r["x_star"]]
        lhs, rhs = _ip(w["g"], w["g"]), num(I["factor"]) * L * (w["f"] - xs["f"])
    else:  # a51: f(w - eta g) <= f(w) - eta/2 ||g||^2
        eta, w, nxt = num(I["eta"]), pts[r["w"]], pts[r["next"]]
        certificate("the step is inside the variant's range: eta L' - step_limit L'",
                    max(0, eta * L - num(I["step_limit"]) * L), 0)
        lhs, rhs = nxt["f"], w["f"] - eta / 2 * _ip(w["g"], w["g"])
    return {"lhs": [lhs], "rhs": [rhs], "note": "\n  ".join(NOTES)}


NOTES = []
