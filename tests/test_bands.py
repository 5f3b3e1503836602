"""No-effect bands (issue 39): the four outcomes of an interval against a declared band, the
bands each fine-tuning claim declares from its paper, and what a budgeted claim says when
its projection is more than the budget buys."""

import math

import numpy as np
import pytest

from boundbench.framework.stats import sequential as sq
from boundbench.framework.stats import stopping as stp
from boundbench.framework.stats.bands import DEFAULT, PAPER, Band, band_outcome, sign_inside
from boundbench.framework.verdicts.rules import Verdict
from boundbench.papers.shared.fine_tuning import banded, trend_banded
from boundbench.plm import bands

B = Band(-0.01, 0.01, "difference", DEFAULT, "test")


@pytest.mark.parametrize("low, high, expected, outcome", [
    (-0.005, 0.004, "increase", "no-effect"),       # inside, containing 0
    (0.002, 0.008, "increase", "no-effect"),        # excludes 0 but inside: not supported
    (-0.008, -0.001, "decrease", "no-effect"),      # excludes 0 on the paper's side: no-effect
    (0.02, 0.05, "increase", "supported"),          # wholly beyond, the paper's side
    (-0.05, -0.02, "increase", "contradicted"),     # wholly beyond, the other side
    (-0.05, -0.02, "decrease", "supported"),
    (0.005, 0.05, "increase", None),                # excludes 0, straddles the edge
    (-0.05, 0.05, "increase", None),                # wider than the band
])
def test_an_interval_has_four_outcomes_against_its_band(low, high, expected, outcome):
    assert band_outcome(low, high, B, expected=expected) == outcome
    # the confidence sequences' rule is the same one
    assert stp.decide(low, high, null=0.0, expected=expected, band=B) == outcome


def test_excluding_zero_inside_the_band_is_no_effect_with_its_sign():
    """The case the issue names: an interval that excludes 0 but lies inside the band."""
    v = Verdict("supported", "change +0.005 (95% bootstrap CI [+0.002, +0.008])", {})
    half = Band.half_paper_difference(0.0, 0.03, "Table X: 0 vs 0.03")
    out = banded(v, 0.002, 0.008, half, expected="increase")
    assert out.status == "no-effect"
    assert "above the null, but inside the band" in out.reason
    assert "smaller than half the paper's effect" in out.reason
    assert out.evidence["band"]["source"] == "Table X: 0 vs 0.03"
    assert sign_inside(-0.008, -0.002, half).startswith("below")
    # beyond the band it stays supported; across an edge it is undecided, and says why
    assert banded(v, 0.02, 0.04, half, expected="increase").status == "supported"
    across = banded(v, 0.005, 0.04, half, expected="increase")
    assert across.status == "inconclusive" and "edge of the band" in across.reason


def test_ratio_bands_are_symmetric_in_the_log_and_legacy_half_widths_still_work():
    b = Band.half_paper_ratio(0.8, "t")
    assert math.isclose(b.low * b.high, 1.0) and math.isclose(b.low, math.sqrt(0.8))
    assert stp.decide(0.93, 1.05, null=1.0, expected="decrease", band=b, scale="ratio") \
        == "no-effect"
    assert stp.decide(0.5, 0.85, null=1.0, expected="decrease", band=b, scale="ratio") \
        == "supported"
    legacy = stp.as_band(0.25, null=1.0, scale="ratio")
    assert (legacy.low, legacy.high) == (0.75, 1.25)
    assert stp.as_band(b.to_dict(), null=1.0) == b  # a probe's JSON reads back
    for bad in (0, -1.0, float("nan"), True):
        with pytest.raises(ValueError, match="band must be a positive number"):
            stp.as_band(bad, null=0.0)
    with pytest.raises(ValueError, match="null"):
        Band(0.1, 0.2, "difference", DEFAULT, "t")


def test_first_decision_stops_at_the_first_interval_the_band_decides():
    low = np.array([-1.0, -0.02, 0.003, 0.004])
    high = np.array([1.0, 0.03, 0.009, 0.008])
    assert stp.first_decision(low, high, null=0.0, expected="increase", band=B) == ("no-effect", 3)
    # without a band the same path decides "supported" where it first excludes 0
    assert stp.first_decision(low, high, null=0.0, expected="increase") == ("supported", 3)


def test_each_band_comes_from_its_papers_numbers():
    m = bands.mhloss_std()
    assert m.rule == PAPER and math.isclose(m.paper_effect, 2.10 / 2.61)
    assert "Table 2" in m.source and "2.10" in m.source and "2.61" in m.source
    h = bands.head_vs_full()  # the paper's own head tuning is no more stable: 2.75 vs 2.716
    assert math.isclose(h.paper_effect, 2.75 / np.mean([2.32, 0.97, 2.04, 2.77, 5.48]))
    assert 1.0 < h.paper_effect < 1.02 and "Table 3" in h.source
    c = bands.jachess_corruption((0.0, 0.1, 0.2))
    assert math.isclose(c.paper_effect, -0.013, abs_tol=1e-9) and c.high == pytest.approx(0.0065)
    ece, brier = bands.jachess_calibration("ece"), bands.jachess_calibration("brier")
    assert ece.high == pytest.approx(0.0035) and brier.high == pytest.approx(0.0145)
    assert bands.layer_weights().high == pytest.approx(0.025)
    # the defaults where a paper reports no number
    assert bands.mmr_margin().high == pytest.approx(0.00624) and bands.mmr_margin().rule \
        == DEFAULT
    assert bands.surt_distance().high == pytest.approx(0.1414)
    assert bands.noise_drop("UEGR Fig. 2b").high == 0.01
    assert bands.sample_ratio_std().edges == (0.8, 1.25)
    assert bands.uegr_cka(0.7).high == pytest.approx(0.07) and bands.uegr_cka(float("nan")) \
        is None
    assert bands.jachess_corruption((0.0, 0.3)).rule == DEFAULT  # a rate Table 1 lacks


def test_a_trend_whose_size_lies_inside_the_band_is_no_effect():
    v = Verdict("inconclusive", "Spearman rho -0.2", {})
    out = trend_banded(v, (0.97, 0.93, 1.04), bands.ad_hessian(), what="ratio")
    assert out.status == "no-effect" and out.evidence["band_effect_low"] == 0.93
    keep = trend_banded(Verdict("supported", "rho -0.9", {}), (0.5, 0.4, 0.6),
                        bands.ad_hessian(), what="ratio")
    assert keep.status == "supported" and "band" in keep.evidence


def test_a_probe_states_the_seeds_and_cpu_hours_to_detect_the_papers_effect():
    rng = np.random.default_rng(0)
    a, b = rng.normal(0, 1.0, 8), rng.normal(0, 1.0, 8)
    p = stp.probe("std_ratio", path=sq.std_ratio_confidence_sequence(a, b), null=1.0,
                 expected="decrease", band=bands.mhloss_std(), spread=float(np.std(b, ddof=1)),
                 what="std ratio")
    assert p["band"]["rule"] == PAPER
    # the std ratio 0.80 needs hundreds of seeds: more than the cap, or a large count
    k = p["seeds_at_paper_effect"]
    assert k is None or k > 100
    text = stp.probe_text(p, seconds_per_seed=600.0)
    assert "detecting the paper's std ratio 0.805" in text
    assert "no-effect band" in text and "Table 2" in text
    d = stp.probe("mean", path=sq.t_confidence_sequence(rng.normal(0, 0.01, 10)), null=0.0,
                 expected="decrease", band=bands.jachess_calibration("brier"), spread=0.01,
                 what="Brier")
    assert d["seeds_at_paper_effect"] is not None and d["seeds_at_no_effect"] is not None
    t = stp.probe_text({**d, "decision": None}, seconds_per_seed=360.0)
    assert "CPU-hours" in t and "no GPU time is recorded for this grid" in t
    assert stp.cost_text(10, None) == "" and "1 CPU-hours" in stp.cost_text(10, 360.0)


def test_a_projections_hours_are_named_by_the_device_that_measured_them():
    """The budgeted standard audit on one H200 (2026-11-26) wrote "0.036 CPU-hours here at 3 s
    a seed": seconds measured on a GPU called CPU time. A GPU-measured cost says GPU-hours; a
    CPU-measured one is scaled by the ratio recorded for its grid, where there is one."""
    assert stp.cost_text(10, 360.0, device="cuda") == " (about 1 GPU-hours here at 360 s a seed)"
    assert "CPU" not in stp.cost_text(10, 360.0, device="cuda:0")
    key, (ratio, gpu) = next(iter(stp.GPU_SPEEDUP.items()))
    t = stp.cost_text(10, 360.0, device="cpu", grid_key=key)
    assert "1 CPU-hours here" in t and f"{1 / ratio:.2g} GPU-hours on {gpu}" in t
    assert "no GPU time is recorded" in stp.cost_text(10, 360.0, grid_key="not-a-grid")
    p = {"what": "Brier", "kind": "mean", "n": 6, "estimate": 0.01, "spread": 0.05, "null": 0.0,
         "expected": "decrease", "band": None, "cs_low": -0.1, "cs_high": 0.1, "decision": None}
    assert "GPU-hours here" in stp.probe_text(p, seconds_per_seed=24.0, device="cuda")


def test_the_recorded_gpu_ratios_belong_to_the_standard_grids():
    """GPU_SPEEDUP is keyed by the standard grids' keys: a grid that changes drops out of it
    (its projections then say no GPU time is recorded) rather than borrowing a stale ratio."""
    pytest.importorskip("transformers", reason="install the plm extra (README)")
    from boundbench.framework.execution.context import CheckContext
    from boundbench.papers.fu import plm_stability as stability
    from boundbench.papers.shared import smoothing_grid

    ctx = CheckContext(out_dir=None, progress=False, scale="standard")
    keys = {stability._grid(ctx, stability._TRIO).key(seeds=False),
            smoothing_grid.shared_grid(ctx).key(seeds=False)}
    assert set(stp.GPU_SPEEDUP) <= keys, "re-measure the GPU ratio of a changed grid (results log)"


def test_a_decision_near_the_bands_edge_is_flagged_fragile():
    """The budgeted audit's MMR margin claim was supported with its sequence's low end at
    0.00635 against the band's edge 0.00624 (1.8% of the half-width): such a decision carries
    its margin and is flagged, in the fixed-seed and the sequential path alike."""
    from boundbench.framework.stats.bands import band_margin
    from boundbench.framework.verdicts.rules import FRAGILE

    m = bands.mmr_margin()
    assert math.isclose(band_margin(0.00635, 0.02, m), (0.00635 - m.high) / m.high)
    v = banded(Verdict("supported", "margin up", {}), 0.00635, 0.02, m, expected="increase")
    assert v.status == "supported" and v.evidence["margin_units"] == "band half-width"
    assert v.evidence["fragile"] and v.evidence["margin_to_flip"] < FRAGILE["band half-width"]
    far = banded(Verdict("supported", "margin up", {}), 0.02, 0.04, m, expected="increase")
    assert not far.evidence["fragile"] and far.evidence["margin_to_flip"] > 1
    # undecided: nothing to flip, no margin
    assert "margin_to_flip" not in banded(Verdict("supported", "", {}), 0.001, 0.02, m,
                                          expected="increase").evidence
    # a ratio band's margin is taken on the log scale, symmetric about 1
    r = Band.half_paper_ratio(0.8, "t")
    assert math.isclose(band_margin(1.0, 1.0, r), 1.0)
    assert math.isclose(band_margin(r.low ** 2, r.low ** 1.5, r), 0.5)
    # the sequential path: the last interval's distance, the smallest over deciding probes
    rng = np.random.default_rng(3)
    diff = rng.normal(0.05, 0.01, 30)
    p = stp.probe("mean", path=sq.t_confidence_sequence(diff), null=0.0, expected="increase",
                 band=m, spread=0.01, what="margin")
    assert p["decision"] == "supported"
    assert math.isclose(p["band_margin"], band_margin(p["cs_low"], p["cs_high"], m))
    sv = stp.sequential_verdict([p], what="margin", evidence={}, seconds_per_seed=1.0,
                               grid_seeds=30)
    assert sv.status == "supported" and sv.evidence["margin_to_flip"] == p["band_margin"]
    near = {**p, "band_margin": 0.01}
    assert stp.sequential_verdict([p, near], what="margin", evidence={}, seconds_per_seed=1.0,
                                 grid_seeds=30).evidence["fragile"]
    # a reversed interval is refused by name
    with pytest.raises(ValueError, match="low must be <= high"):
        band_margin(0.2, 0.1, m)
