"""Property tests of Theorem 3.8 (Hardt, Recht & Singer 2016) with boundbench.testing: the
bound searched for its worst case by Hypothesis over n, T, the step and the data scale, on the
linear loss where it is attained; a bound half as large fails there (the control)."""

import numpy as np
from boundbench_hrs.claims import SE_ALLOWANCE, thm38_sides
from hypothesis import strategies as st

from boundbench.testing import bound

INSTANCES = st.fixed_dictionaries({"n": st.integers(2, 30), "T": st.integers(1, 40),
                                   "step": st.floats(0.05, 1.0), "scale": st.floats(0.1, 10.0),
                                   "seed": st.integers(0, 2**31 - 1)})


def _linear(p):
    return thm38_sides(loss="linear", n=p["n"], d=2, T=p["T"], step=p["step"],
                       scale=p["scale"], runs=2000, rng=np.random.default_rng(p["seed"]))


@bound(INSTANCES, max_examples=40)
def test_thm38_on_the_linear_loss(p):
    lhs, se, rhs = _linear(p)
    return lhs - SE_ALLOWANCE * se, rhs


def test_half_the_bound_fails_where_it_is_attained():
    lhs, se, rhs = _linear({"n": 4, "T": 40, "step": 0.5, "scale": 1.0, "seed": 0})
    assert lhs - SE_ALLOWANCE * se > 0.5 * rhs
