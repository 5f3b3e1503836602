"""Trend and spread verdicts decided by exact permutation tests (issue 82): each decides where
its validity condition holds whatever the data's shape, its realised rate on two non-Gaussian
null families is at its level, and a control a wrong implementation would be (the same test at
twice its level, the interval it replaced) errs visibly above it."""

import numpy as np
import pytest
from scipy.stats import binomtest

from boundbench.framework.stats import exact_trends as et
from boundbench.framework.stats.decisions.permutation import spread_test
from boundbench.framework.stats.trends import paired_trend_verdict, std_ratio_verdict, trend_verdict
from boundbench.framework.verdicts.rules import Verdict

KEYS = ("realised_false_decision_rate", "realised_false_decision_ci", "min_detectable_effect",
        "validity", "permutation_p")


def _family(name, g, shape):
    if name == "lognormal":
        return g.lognormal(0.0, 1.0, shape)
    # the failed-run mixture of issue 82: 85% N(0, 1), 15% N(-6, 0.5)
    return np.where(g.random(shape) < 0.15, g.normal(-6, 0.5, shape), g.normal(0, 1, shape))


def _upper_ok(k, n, alpha=0.05):
    """The measured rate is not shown above alpha: the lower end of its interval is at most
    alpha (a test at its level passes; one at twice its level fails at these counts)."""
    return binomtest(k, n).proportion_ci(method="exact").low <= alpha


def _rho_word(x, y, g, *, alpha=0.05, n_perm=199):
    rx, dx = et._centred_ranks(x)
    return et._rho_test(rx, float(dx), y, g, sign=-1, n_perm=n_perm, alpha=alpha)[0]


@pytest.mark.parametrize("family", ["lognormal", "mixture"])
def test_the_trend_permutation_test_holds_its_level_on_skewed_nulls(family):
    g = np.random.default_rng(0)
    x = np.repeat(np.arange(4.0), 3)  # 12 points, ties in x, as a small sweep has
    n = 2000
    k = sum(_rho_word(x, _family(family, g, x.size), g) in ("supported", "contradicted")
            for _ in range(n))
    loose = sum(_rho_word(x, _family(family, g, x.size), g, alpha=0.10) in
                ("supported", "contradicted") for _ in range(n))
    assert _upper_ok(k, n), k
    assert not _upper_ok(loose, n), loose  # the control: twice the level is seen above it


@pytest.mark.parametrize("family", ["lognormal", "mixture"])
def test_the_within_set_permutation_test_holds_its_level_on_skewed_nulls(family):
    g = np.random.default_rng(1)
    x = np.array([1.0, 2, 4, 8])
    n = 2000
    k = loose = 0
    for _ in range(n):
        y = _family(family, g, (6, 4))
        k += _rho_word(x, y, g) in ("supported", "contradicted")
        loose += _rho_word(x, y, g, alpha=0.10) in ("supported", "contradicted")
    assert _upper_ok(k, n), k
    assert not _upper_ok(loose, n), loose


@pytest.mark.parametrize("family", ["lognormal", "mixture"])
def test_the_spread_test_holds_its_level_on_skewed_nulls_with_a_shift(family):
    g = np.random.default_rng(2)
    n = 2000
    k = loose = 0
    for _ in range(n):
        a, b = _family(family, g, 12), _family(family, g, 12) + 3.0  # a shift, not a spread
        k += spread_test(a, b, seed=5)[0] != "inconclusive"
        loose += spread_test(a, b, seed=5, alpha=0.10)[0] != "inconclusive"
    assert _upper_ok(k, n), k
    assert not _upper_ok(loose, n), loose


def test_a_trend_is_decided_by_the_permutation_test_with_the_interval_beside_it():
    rng = np.random.default_rng(6)
    x = np.repeat(np.arange(5.0), 30)
    y = np.exp(-0.3 * x + rng.normal(0, 1.0, x.size))  # decreasing, lognormal noise
    v = trend_verdict(x, y, expected="decreasing", rng=rng, what="y vs x")
    out = et.calibrated_trend(v, x, y, rng=np.random.default_rng(7), expected="decreasing")
    assert out.status == "supported" and all(k in out.evidence for k in KEYS)
    assert out.evidence["calibration"]["by_construction"]
    assert out.evidence["decided_by"] == "a permutation test of Spearman's rho"
    assert out.evidence["permutation_p"] < 0.01 and out.evidence["interval_status"] == v.status
    assert -0.5 < out.evidence["min_detectable_effect"] < 0  # rho, in the expected direction
    assert "the bootstrap interval beside it" in out.reason
    up = et.calibrated_trend(v, x, -y, rng=np.random.default_rng(7), expected="decreasing")
    assert up.status == "contradicted"
    null = rng.permutation(y)
    v0 = trend_verdict(x, null, expected="decreasing", rng=rng, what="y")
    none = et.calibrated_trend(v0, x, null, rng=np.random.default_rng(9), expected="decreasing",
                               n_sim=100)
    assert none.status == "inconclusive" and none.evidence["permutation_p"] > 0.05


def test_an_exact_test_that_errs_above_its_level_is_a_defect_not_a_verdict(monkeypatch):
    """The check can fail: a permutation test broken to reject always is caught by its own
    nulls and says so, instead of deciding."""
    x = np.arange(8.0)
    y = -x + np.random.default_rng(3).normal(size=8)
    monkeypatch.setattr(et, "_rho_test", lambda *a, **k: ("supported", {"p": 0.001, "rho": -1.0}))
    out = et.calibrated_trend(Verdict("supported", "t", {}), x, y,
                              rng=np.random.default_rng(4), expected="decreasing", n_sim=50)
    assert out.status == "inconclusive" and "report it" in out.reason


def test_a_within_set_trend_is_decided_by_the_permutation_test():
    rng = np.random.default_rng(5)
    x = np.array([1.0, 2, 4, 8])
    y = -0.4 * np.arange(4) + rng.standard_exponential((30, 4))  # decreasing, skewed noise
    v = paired_trend_verdict(x, y, expected="decreasing", rng=rng, what="y vs x")
    out = et.calibrated_paired_trend(v, x, y, rng=np.random.default_rng(6),
                                     expected="decreasing", n_sim=100)
    assert out.status == "supported" and out.evidence["calibration"]["by_construction"]
    assert -1 < out.evidence["min_detectable_effect"] < 0
    null = rng.permuted(y, axis=1)
    v0 = paired_trend_verdict(x, null, expected="decreasing", rng=rng, what="y vs x")
    out0 = et.calibrated_paired_trend(v0, x, null, rng=np.random.default_rng(7),
                                      expected="decreasing", n_sim=100)
    assert out0.status == "inconclusive" and all(k in out0.evidence for k in KEYS)


def test_a_spread_claim_is_decided_exactly_and_a_no_effect_needs_the_bounded_sequence():
    rng = np.random.default_rng(8)
    a, b = rng.normal(0.80, 0.01, 100), rng.normal(0.85, 0.03, 100)
    v = std_ratio_verdict(a, b, rng=rng, what="accuracy", names=("t", "c"), equivalence=0.1)
    out = et.calibrated_spread(v, a, b, rng=np.random.default_rng(9), bounds=(0.0, 1.0),
                               equivalence=0.1, n_sim=100)
    assert out.status == "supported" and out.evidence["calibration"]["by_construction"]
    assert 0.25 <= out.evidence["min_detectable_effect"] < 1
    # the bootstrap reads no-effect off 2,000 equal runs a side; the bounded sequence, valid
    # for any data in [0, 1], cannot be that narrow at this spread: not no-effect
    a, b = rng.normal(0.8, 0.01, 2000), rng.normal(0.8, 0.01, 2000)
    v = std_ratio_verdict(a, b, rng=rng, what="accuracy", names=("t", "c"), equivalence=0.1)
    assert v.status == "no-effect"
    out = et.calibrated_spread(v, a, b, rng=np.random.default_rng(10), bounds=(0.0, 1.0),
                               equivalence=0.1, n_sim=20)
    assert out.status == "inconclusive" and out.evidence["interval_status"] == "no-effect"
    assert "bounded std-ratio sequence" in out.reason
    few = et.calibrated_spread(Verdict("inconclusive", "s", {}), a[:3], b[:3],
                               rng=np.random.default_rng(0))
    assert "calibration_not_applicable" in few.evidence


def test_the_spread_test_names_its_bad_input():
    from boundbench.errors import InvalidArgument

    with pytest.raises(InvalidArgument, match="at least 4 runs"):
        spread_test(np.ones(3), np.ones(8), seed=0)
    with pytest.raises(InvalidArgument, match="finite"):
        spread_test(np.r_[np.ones(7), np.nan], np.ones(8), seed=0)
