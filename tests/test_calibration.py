"""Stochastic verdicts calibrated on their own data (issues 64, 82): a std-ratio decision whose
realised error rate on nulls shaped like the runs passes 5% by more than a point at its upper
end is refused, and the exact permutation test of the pair differences decides; a procedure
whose upper end is within the point is admitted."""

import numpy as np
import pytest

from boundbench.framework.execution.context import CheckContext
from boundbench.framework.stats import calibration as cal
from boundbench.framework.stats.sequential import std_ratio_confidence_sequence
from boundbench.framework.stats.stopping import first_decision
from boundbench.framework.verdicts.rules import Verdict


def _runs(rng, n, fail=0.1):
    """Fine-tuning accuracies over seeds: most runs train (0.88 +- 0.01), a tenth fail at the
    majority class (0.52), as Dodge et al. 2020 and Mosbach et al. 2021 report."""
    return np.where(rng.random(n) < fail, rng.normal(0.52, 0.005, n), rng.normal(0.88, 0.01, n))


def _sequence(a, b, g):
    cs = std_ratio_confidence_sequence(a, b)
    return first_decision(cs.low, cs.high, null=1.0, expected="decrease")[0] or "inconclusive"


def _robust(a, b, g):
    return cal.dispersion_permutation_status(a, b, g)[0]


def test_a_failed_run_mixture_refuses_the_sequence_and_the_fallback_holds_its_level():
    rng = np.random.default_rng(0)
    a, b = _runs(rng, 20), _runs(rng, 20)
    v = cal.calibrated(Verdict("supported", "std ratio 0.4", {}), _sequence, a, b,
                       rng=np.random.default_rng(1), procedure="the std ratio's sequence",
                       what="accuracy across seeds")
    ev = v.evidence
    assert ev["refused"]["calibration"]["low"] > 0.05  # its own data show it errs
    assert ev["refused"]["status"] == "supported" and "pair differences" in ev["decided_by"]
    assert "not calibrated for these runs" in v.reason and ev["calibration"]["by_construction"]
    assert ev["calibration"]["low"] <= 0.05 and "one distribution up to a shift" in ev["validity"]
    assert ev["min_detectable_effect"] is None or 0 < ev["min_detectable_effect"] < 1
    # over 1,000 nulls from the generating mixture itself (not the resampled runs): the
    # sequence errs far above 5%, the exact test at its level
    from boundbench.framework.stats.decisions.permutation import spread_test

    g = np.random.default_rng(2)
    seq = ex = 0
    for _ in range(1000):
        x, y = _runs(g, 20), _runs(g, 20) + 0.05  # a shift is not a spread
        seq += _sequence(x, y, g) in cal.FALSE
        ex += spread_test(x, y, seed=3)[0] in cal.FALSE
    from scipy.stats import binomtest

    assert binomtest(seq, 1000).proportion_ci(method="exact").low > 0.05, seq
    assert binomtest(ex, 1000).proportion_ci(method="exact").low <= 0.05, ex
    assert ex / 1000 <= 0.065


def test_a_calibrated_decision_stands_with_its_rate_and_reach():
    """The control: a procedure whose rate's upper end is within a point of its level on these
    runs (the exact test, a level of 1%, on Gaussian runs) keeps its verdict, with its realised
    rate and the smallest ratio it detects."""
    from boundbench.framework.stats.decisions.permutation import spread_test

    rng = np.random.default_rng(3)
    a, b = rng.normal(0.88, 0.005, 60), rng.normal(0.88, 0.02, 60)

    def tight(x, y, g):
        return spread_test(x, y, seed=1, alpha=0.01)[0]

    status = tight(a, b, rng)
    out = cal.calibrated(Verdict(status, "pair differences", {}), tight, a, b,
                         rng=np.random.default_rng(4), procedure="the exact test at 1%",
                         what="accuracy")
    assert out.status == status == "supported" and "refused" not in out.evidence
    assert out.evidence["calibration"]["admitted"] and "calibrated:" in out.reason
    assert 0.25 <= out.evidence["min_detectable_effect"] < 1


def test_a_no_effect_needs_an_effect_the_runs_could_have_seen():
    from boundbench.framework.stats.bands import Band

    band = Band.std_ratio_default()
    blind = Verdict("no-effect", "inside the band", {"min_detectable_effect": 0.25})
    seen = Verdict("no-effect", "inside the band", {"min_detectable_effect": band.low + 0.01})
    assert cal.no_effect_within_reach(blind, band).status == "inconclusive"
    assert "0.25" in cal.no_effect_within_reach(blind, band).reason
    assert cal.no_effect_within_reach(seen, band).status == "no-effect"


def test_the_fine_tuning_std_claims_go_through_the_calibration():
    from boundbench.papers.shared.fine_tuning import std_claim_verdict

    rng = np.random.default_rng(5)
    a, b = _runs(rng, 12), _runs(rng, 12)
    import pandas as pd

    table = pd.DataFrame({"seed": range(12), "seconds": 1.0})
    v = std_claim_verdict(CheckContext(progress=False, claim_id="x.plm.y"), a, b, what="accuracy",
                          names=("mhloss", "finetune"), evidence={}, table=table)
    assert "realised_false_decision_rate" in v.evidence and "calibration" in v.evidence
    with pytest.raises(ValueError):
        cal.realised_rate(_robust, a, b, rng=rng, procedure="x", n_sim=0)
