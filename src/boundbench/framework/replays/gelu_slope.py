# --- GELU's slope against 1 (boundbench.framework.replays.gelu_slope) --------------------------
# GELU(x) = x Phi(x) with Phi the standard normal CDF, so GELU'(x) = Phi(x) + x phi(x).
import mpmath  # also the frame's; here so that the module imports alone


def sides(I):
    x = num(I["x"])
    slope = mpmath.ncdf(x) + x * mpmath.npdf(x)
    return {"lhs": [abs(slope)], "rhs": [mpmath.mpf(1)]}
