# --- the frame every replay shares (boundbench.framework.replays._main) -------------------------
# Exit codes: 0 the violation reproduces beyond the stated error; 1 it does not; 3 an optimum the
# sides use fails its own certificate (then nothing is a finding); 2 bad use.
import json  # noqa: F401 - the instances at the end of the script are JSON
import sys

import mpmath
import numpy as np

DPS = 50  # significant digits of every computation; a second pass at DPS + 20 bounds the rounding


def num(s):
    """An exact decimal string (or int) as an mpf at the working precision."""
    return mpmath.mpf(s)


def _run(instance):
    """Both sides at DPS digits, their certified errors, their rounding error from a second pass
    at DPS + 20 digits, and the program's notes (its certificates go to CERTS)."""
    out = {}
    for dps in (DPS + 20, DPS):
        with mpmath.workdps(dps):
            CERTS.clear()
            got = sides(instance)  # noqa: F821 - the program's, defined above this frame
            out[dps] = got
    hi, lo = out[DPS + 20], out[DPS]
    lhs = [mpmath.mpf(v) for v in lo["lhs"]]
    rhs = [mpmath.mpf(v) for v in lo["rhs"]]
    rounding = max([abs(a - b) for a, b in zip(lo["lhs"], hi["lhs"], strict=True)]
                   + [abs(a - b) for a, b in zip(lo["rhs"], hi["rhs"], strict=True)])
    return lhs, rhs, mpmath.mpf(lo.get("err_lhs", 0)), mpmath.mpf(lo.get("err_rhs", 0)), \
        rounding, lo.get("note", "")


CERTS = []  # (name, value, tolerance) of every certificate residual, printed below


def certificate(name, value, tol):
    """Record a residual of an optimality certificate; it passes when value <= tol."""
    CERTS.append((name, mpmath.mpf(value), mpmath.mpf(tol)))
    return mpmath.mpf(value) <= mpmath.mpf(tol)


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if argv not in ([], ["--control"]):
        print("usage: python replay.py [--control]", file=sys.stderr)
        return 2
    control = argv == ["--control"]
    instance = CONTROL if control else INSTANCE  # noqa: F821 - the data, defined below
    if instance is None:
        print("no control instance was recorded for this finding")
        return 2
    mpmath.mp.dps = DPS
    try:
        lhs, rhs, err_l, err_r, rounding, note = _run(instance)
    except (ArithmeticError, ValueError, KeyError) as exc:
        print(f"{CLAIM}: the replay could not compute its sides: {type(exc).__name__}: {exc}")  # noqa: F821,E501
        return 2
    print(f"{CLAIM} ({WHERE}){' -- CONTROL: the instance nudged back inside the bound' if control else ''}")  # noqa: F821,E501
    print(f"  bound: {EQUATION}")  # noqa: F821
    print(f"  {DPS} significant digits (mpmath {mpmath.__version__}, numpy {np.__version__})")
    failed = [(name, value, tol) for name, value, tol in CERTS if not value <= tol]
    if CERTS:
        print(f"  certificates: {len(CERTS) - len(failed)} of {len(CERTS)} residuals "
              "within their tolerances")
    for name, value, tol in failed:
        print(f"  certificate FAILS: {name}: {mpmath.nstr(value, 3)} > {mpmath.nstr(tol, 3)}")
    certified = not failed
    if note:
        print(f"  {note}")
    err = err_l + err_r + 2 * rounding
    worst = max(range(len(lhs)), key=lambda i: lhs[i] - rhs[i] * (1 + RTOL) - ATOL)  # noqa: F821
    excess = lhs[worst] - rhs[worst] * (1 + RTOL) - ATOL  # noqa: F821
    print(f"  lhs = {mpmath.nstr(lhs[worst], 20)}")
    print(f"  rhs = {mpmath.nstr(rhs[worst], 20)}" + (f"  (element {worst} of {len(lhs)})"
                                                      if len(lhs) > 1 else ""))
    if rhs[worst] > 0:
        print(f"  lhs/rhs = {mpmath.nstr(lhs[worst] / rhs[worst], 15)}")
    print(f"  tolerance: lhs <= rhs (1 + {RTOL:g}) + {ATOL:g} counts as holding; certified error "  # noqa: F821,E501
          f"of the sides {mpmath.nstr(err_l + err_r, 3)}, rounding {mpmath.nstr(rounding, 3)}")
    if FLOAT64 is not None and not control:  # noqa: F821
        print(f"  boundbench's float64 sides: lhs {FLOAT64['lhs']:.17g}, rhs {FLOAT64['rhs']:.17g}")  # noqa: F821,E501
    if not certified:
        print("  NOT A FINDING: an optimum the sides use fails its own certificate")
        return 3
    if excess > err:
        print(f"  REPRODUCED: lhs exceeds rhs (1 + rtol) + atol by {mpmath.nstr(excess, 6)}, "
              f"beyond the error {mpmath.nstr(err, 3)}")
        return 0
    print(f"  NOT REPRODUCED: the excess {mpmath.nstr(excess, 6)} is not beyond the error "
          f"{mpmath.nstr(err, 3)}")
    return 1


if __name__ == "__main__":
    sys.exit(main())
