"""Issue 82: decisions valid by construction on bounded per-seed metrics (betting confidence
sequences, ``boundbench decide``)."""

from __future__ import annotations

import json
import warnings

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from boundbench import cli
from boundbench.errors import ExitCode, InvalidArgument
from boundbench.framework.stats.decisions import betting_cs, decide
from boundbench.framework.stats.decisions.betting import ever_rejects

ALPHA = 0.05


def _upper(k: int, n: int) -> float:
    return float(stats.beta.ppf(0.975, k + 1, n - k)) if k < n else 1.0


@pytest.mark.parametrize("family", ["beta(0.5, 5)", "two points"])
def test_the_sequence_misses_the_mean_at_most_alpha_with_a_look_after_every_draw(family):
    """Two non-Gaussian bounded families (skewed; two atoms), 40 looks each: the rate at which
    the sequence ever excludes the true mean, measured on 1,000 sequences, has its 95% upper
    end at most alpha; a fixed-n t test re-applied at every look on the same draws errs more
    than alpha (the control: this measurement can fail)."""
    rng = np.random.default_rng(82)
    if family == "two points":
        x, mean = (rng.random((1000, 40)) < 0.1).astype(float), 0.1
    else:
        x, mean = rng.beta(0.5, 5, (1000, 40)), 0.5 / 5.5
    miss = ever_rejects(x, value=mean, lower=0.0, upper=1.0, alpha=ALPHA)
    assert _upper(int(miss.sum()), miss.size) <= ALPHA, miss.mean()
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # an all-equal prefix: no variance
        peeks = np.zeros(len(x), dtype=bool)
        for k in range(3, 41):
            p = stats.ttest_1samp(x[:, :k], mean, axis=1).pvalue
            peeks |= np.nan_to_num(p, nan=1.0) < ALPHA
    assert peeks.mean() > 2 * ALPHA, peeks.mean()
    # the interval's path agrees with the one-candidate computation
    for i in range(20):
        path = betting_cs(x[i], lower=0.0, upper=1.0, alpha=ALPHA)
        inside = (path.low <= mean) & (mean <= path.high)
        assert inside.all() or miss[i], i


def _runs(t: np.ndarray, c: np.ndarray) -> pd.DataFrame:
    return pd.DataFrame({"method": ["t"] * len(t) + ["c"] * len(c),
                         "seed": [*range(len(t)), *range(len(c))], "accuracy": [*t, *c]})


def test_a_mean_claim_on_skewed_data_is_decided_on_the_mean_not_the_median():
    """The treatment: 70% of seeds at 0.40, 30% at 1.0 (mean 0.58, median 0.40); the control at
    0.45 (+-0.01). A median test would call the treatment worse; the mean is higher by 0.13:
    the decision says supported, never contradicted."""
    rng = np.random.default_rng(3)
    words = set()
    for _ in range(5):
        t = np.where(rng.random(300) < 0.3, 1.0, 0.40)
        c = rng.uniform(0.44, 0.46, 300)
        assert np.median(t) < np.median(c) and t.mean() > c.mean()
        words.add(decide(_runs(t, c), claim="higher-mean", treatment="t", control="c",
                         metric="accuracy").word)
    assert words == {"supported"}, words


def test_the_spread_claim_is_decided_by_the_audits_permutation_test():
    """As the audit's spread claims: the scheduled exact permutation test (6 looks reached by
    200 seeds: 4, 8, ..., 128), its interval the bounded std-ratio sequence's."""
    rng = np.random.default_rng(4)
    t = rng.uniform(0.6, 0.62, 200)  # std 0.006
    c = np.where(rng.random(200) < 0.5, 0.2, 0.9)  # std 0.35
    d = decide(_runs(t, c), claim="lower-spread", treatment="t", control="c",
               metric="accuracy")
    assert d.word == "supported" and d.interval[1] < 1 and d.looks == 6
    assert d.path[d.decided_at - 1][0] == 4 * 2 ** (d.decided_at - 1)  # a look's seeds
    assert "std(t) / std(c)" in d.quantity and d.procedure.startswith("exact permutation")
    back = decide(_runs(c, t), claim="lower-spread", treatment="t", control="c",
                  metric="accuracy")
    assert back.word == "contradicted"


def test_no_effect_needs_its_margin_and_is_read_inside_it():
    rng = np.random.default_rng(5)
    t, c = rng.uniform(0.5, 0.52, 400), rng.uniform(0.5, 0.52, 400)
    with pytest.raises(InvalidArgument, match="margin"):
        decide(_runs(t, c), claim="no-effect", treatment="t", control="c", metric="accuracy")
    d = decide(_runs(t, c), claim="no-effect", treatment="t", control="c", metric="accuracy",
               margin=0.2)
    assert d.word == "no-effect" and -0.2 < d.interval[0] <= d.interval[1] < 0.2


def test_more_seeds_continue_the_same_sequence():
    rng = np.random.default_rng(6)
    t, c = rng.uniform(0.8, 0.9, 60), rng.uniform(0.5, 0.6, 60)
    first = decide(_runs(t[:15], c[:15]), claim="higher-mean", treatment="t", control="c",
                   metric="accuracy")
    later = decide(_runs(t, c), claim="higher-mean", treatment="t", control="c",
                   metric="accuracy", previous=first.to_dict())
    assert later.path[:15] == first.path and later.digests[:15] == first.digests
    assert later.word == "supported" and later.decided_at is not None
    changed = t.copy()
    changed[3] = 0.81
    with pytest.raises(InvalidArgument, match="not the first looks"):
        decide(_runs(changed, c), claim="higher-mean", treatment="t", control="c",
               metric="accuracy", previous=first)


@pytest.mark.parametrize("edit, match", [
    (lambda df: df.assign(accuracy=df["accuracy"].where(df.index != 2, 1.3)),
     r"column 'accuracy'.*not a number in \[0, 1\]"),
    (lambda df: df.assign(accuracy=df["accuracy"].where(df.index != 2, np.nan)),
     r"column 'accuracy'"),
    (lambda df: df.assign(seed=0), "two rows of one seed"),
    (lambda df: df.drop(columns="seed"), "no column 'seed'"),
    (lambda df: df[df["method"] == "t"], "method 'c' has no rows"),
])
def test_bad_results_are_refused_by_name(edit, match):
    df = _runs(np.full(6, 0.5), np.full(6, 0.4))
    with pytest.raises(InvalidArgument, match=match):
        decide(edit(df), claim="higher-mean", treatment="t", control="c", metric="accuracy")


def test_a_metric_without_a_known_range_needs_one():
    df = _runs(np.full(6, 2.5), np.full(6, 2.0)).rename(columns={"accuracy": "loss"})
    with pytest.raises(InvalidArgument, match="range of metric 'loss' is unknown"):
        decide(df, claim="lower-mean", treatment="t", control="c", metric="loss")
    d = decide(df, claim="lower-mean", treatment="t", control="c", metric="loss",
               bounds=(0.0, 10.0))
    assert "in [0, 10]" in d.validity


def test_the_command_prints_the_decision_and_continues_it(tmp_path, capsys):
    rng = np.random.default_rng(7)
    t, c = rng.uniform(0.85, 0.95, 60), rng.uniform(0.55, 0.65, 60)
    _runs(t[:12], c[:12]).to_csv(tmp_path / "first.csv", index=False)
    _runs(t, c).to_csv(tmp_path / "all.csv", index=False)
    base = ["--claim", "higher-mean", "--treatment", "t", "--control", "c", "--metric",
            "accuracy", "--out", str(tmp_path / "out")]
    assert cli.main(["decide", str(tmp_path / "first.csv"), *base]) == ExitCode.OK
    said = capsys.readouterr().out
    assert "higher-mean: INCONCLUSIVE" in said and "confidence sequence [" in said
    assert "betting confidence sequence" in said and "seeds it would need" in said
    record = tmp_path / "out" / "decide-t-c-accuracy.json"
    assert json.loads(record.read_text())["looks"] == 12
    assert cli.main(["decide", str(tmp_path / "all.csv"), *base, "--continue",
                     str(record)]) == ExitCode.OK
    said = capsys.readouterr().out
    assert "higher-mean: SUPPORTED (at look" in said
    rows = (tmp_path / "all.csv").read_text().splitlines()
    rows[5] = rows[5].rsplit(",", 1)[0] + ",7.5"
    (tmp_path / "bad.csv").write_text("\n".join(rows) + "\n")
    assert cli.main(["decide", str(tmp_path / "bad.csv"), *base]) == ExitCode.USAGE
    err = [ln for ln in capsys.readouterr().err.splitlines() if ln.strip()]
    assert len(err) == 1 and "column 'accuracy'" in err[0] and "[0, 1]" in err[0], err


def test_the_spread_claim_continues_its_looks_and_refuses_a_changed_prefix():
    rng = np.random.default_rng(8)
    t, c = rng.uniform(0.80, 0.82, 64), rng.uniform(0.70, 0.90, 64)
    first = decide(_runs(t[:10], c[:10]), claim="lower-spread", treatment="t", control="c",
                   metric="accuracy")
    later = decide(_runs(t, c), claim="lower-spread", treatment="t", control="c",
                   metric="accuracy", previous=first.to_dict())
    assert later.path[:first.looks] == first.path and later.digests[:10] == first.digests
    changed = t.copy()
    changed[7] = 0.9
    with pytest.raises(InvalidArgument, match="not the first looks"):
        decide(_runs(changed, c), claim="lower-spread", treatment="t", control="c",
               metric="accuracy", previous=first)
