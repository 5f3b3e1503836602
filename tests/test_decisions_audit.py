"""The procedures the audit's fine-tuning claims decide by (issue 82 item 5): each one's realised
false-decision rate on two non-Gaussian null families at a fast size, with a look after every
seed (or at every look of its schedule); the claims' verdicts name the procedure and its
validity condition; a mean claim on skewed data is decided by the mean's sequence."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from boundbench.framework.execution.context import CheckContext
from boundbench.framework.stats.decisions.paths import bounded_mean_path, bounded_ratio_path
from boundbench.framework.stats.decisions.permutation import look_alpha, spread_looks
from boundbench.papers.shared.fine_tuning import paired_verdict, std_claim_verdict

ALPHA = 0.05


def _upper(k: int, n: int) -> float:
    return float(stats.beta.ppf(0.975, k + 1, n - k)) if k < n else 1.0


def _family(name: str, rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
    """A bounded metric of a skewed or two-mode shape: lognormal or failed runs, squashed."""
    if name == "lognormal":
        z = (rng.lognormal(0.0, 1.0, shape) - np.exp(0.5)) / np.sqrt((np.e - 1) * np.e)
    else:
        z = np.where(rng.random(shape) < 0.15, rng.normal(-6.0, 0.5, shape),
                     rng.standard_normal(shape))
    return 1.0 / (1.0 + np.exp(-z / 2.0))


@pytest.mark.parametrize("family", ["lognormal", "failed runs"])
def test_the_spread_test_errs_at_most_alpha_over_its_looks(family):
    """Both methods one shape, the control shifted by 0.1 (a mean difference is no spread
    difference): over 32 seeds a side (looks at 4, 8, 16, 32), a word at any look on at most
    alpha of 400 nulls (the 95% upper end); a fixed-n test at alpha on the last look alone,
    read at every look instead, is the control it must beat: its levels sum above alpha."""
    rng = np.random.default_rng([82, len(family)])
    wrong = 0
    for i in range(400):
        t = _family(family, rng, (32,))
        c = _family(family, rng, (32,)) + 0.1
        wrong += any(lk["word"] for lk in spread_looks(t, c, alpha=ALPHA, seed=i))
    assert _upper(wrong, 400) <= ALPHA + 0.01, wrong
    assert sum(look_alpha(j, ALPHA) for j in range(4)) <= ALPHA < 4 * ALPHA


@pytest.mark.parametrize("family", ["lognormal", "failed runs"])
def test_the_bounded_sequences_miss_at_most_alpha(family):
    """The mean's betting sequence (paired differences in [-1, 1]) and the std ratio's (values
    in [0, 1]) on 300 nulls of 20 seeds a side: each ever excludes the truth (0; 1) on at most
    alpha of them."""
    rng = np.random.default_rng([83, len(family)])
    t, c = _family(family, rng, (300, 20)), _family(family, rng, (300, 20))
    mean = sum(bool(((p.low > 0) | (p.high < 0)).any()) for p in (
        bounded_mean_path(t[i] - c[i], lower=-1.0, upper=1.0) for i in range(300)))
    ratio = sum(bool(((p.low > 1) | (p.high < 1)).any()) for p in (
        bounded_ratio_path(t[i], c[i], lower=0.0, upper=1.0) for i in range(300)))
    assert _upper(mean, 300) <= ALPHA + 0.01 and _upper(ratio, 300) <= ALPHA + 0.01, (mean, ratio)


def test_a_value_outside_the_range_is_refused_not_clipped():
    with pytest.raises(ValueError, match=r"outside its declared range \[-1, 1\]"):
        bounded_mean_path(np.array([0.1, 1.5]), lower=-1.0, upper=1.0)
    with pytest.raises(ValueError, match="outside its declared range"):
        bounded_ratio_path(np.array([0.1, 0.2, np.nan, 0.3]), np.full(4, 0.5), lower=0.0,
                           upper=1.0)


def _grid(t: np.ndarray, c: np.ndarray, col: str = "test_accuracy") -> pd.DataFrame:
    n = len(t)
    return pd.DataFrame({"method": ["mhloss"] * n + ["finetune"] * n,
                         "seed": [*range(n), *range(n)], col: [*t, *c],
                         "test_f1": 0.8, "test_mcc": 0.6, "seconds": 1.0})


def test_a_mean_claim_on_skewed_accuracies_is_decided_by_the_mean_sequence():
    """70% of the treatment's seeds at 0.60, 30% at 1.00 (mean 0.72, median 0.60), the
    control at 0.65 +- 0.01: a median test would call the treatment worse. The claim's verdict
    is the betting sequence of the mean (supported), its procedure and validity named; no
    bootstrap, no sign test of the median."""
    rng = np.random.default_rng(5)
    n = 300  # a bounded sequence pays for its validity: about 160 seeds at this effect
    t = np.where(rng.random(n) < 0.3, 1.0, 0.60)
    c = 0.65 + 0.01 * rng.uniform(-1, 1, n)
    ctx = CheckContext(progress=False, claim_id="x.plm.mean", scale="standard")
    v = paired_verdict(ctx, _grid(t, c), "test_accuracy", "mhloss", "finetune",
                       expected="increase", what="accuracy")
    assert v.status == "supported", v.reason
    assert v.evidence["procedure"].startswith("betting confidence sequence")
    assert "[-1, 1]" in v.evidence["validity"]
    assert "sign test" not in v.reason and "bootstrap" not in v.reason


def test_a_spread_claim_is_decided_by_the_permutation_test_and_projects_its_seeds():
    """A treatment with a third of the control's spread, 64 seeds a side: supported by the
    exact permutation test; 6 seeds: undecided, with the seeds its projection names."""
    rng = np.random.default_rng(6)
    t, c = 0.8 + 0.01 * rng.standard_normal(64), 0.8 + 0.03 * rng.standard_normal(64)
    ctx = CheckContext(progress=False, claim_id="x.plm.std", scale="standard")
    kw = dict(what="accuracy", names=("mhloss", "finetune"), evidence={}, bounds=(0.0, 1.0))
    v = std_claim_verdict(ctx, t, c, table=_grid(t, c), **kw)
    assert v.status == "supported", v.reason
    assert v.evidence["procedure"].startswith("exact permutation test")
    few = std_claim_verdict(ctx, t[:6], c[:6], table=_grid(t[:6], c[:6]), **kw)
    assert few.status == "inconclusive"
    assert few.evidence["seeds_needed"] is None or few.evidence["seeds_needed"] > 6
    # issue 82 item 3: at 16 seeds it states its power per noise shape, and under the worst
    mid = std_claim_verdict(ctx, t[:16], 0.8 + 0.012 * rng.standard_normal(16),
                            table=_grid(t[:16], c[:16]), **kw)
    assert mid.status == "inconclusive", mid.reason
    by = mid.evidence["min_detectable_by_family"]
    assert len(by) == 6 and mid.evidence["min_detectable_units"] == "std ratio"
    assert mid.evidence["min_detectable_under"] in by and "noise shape" in mid.reason
