"""The power of the procedures valid by construction, per noise shape (issue 82 item 3): the
batched permutation looks equal the one-at-a-time ones, the reach reported is an effect the
procedure detects in 80% of fresh draws (and the grid's step before it is not), and an
inconclusive decision or probe says under which shape."""

import numpy as np
import pandas as pd
import pytest

from boundbench import decide
from boundbench.framework.stats.decisions.battery import FAMILIES
from boundbench.framework.stats.decisions.betting import ever_rejects
from boundbench.framework.stats.decisions.permutation import lower_at_some_look, spread_looks
from boundbench.framework.stats.decisions.probes import mean_probe, spread_probe
from boundbench.framework.stats.decisions.reach import (
    RATIOS,
    bounded_noise,
    mean_reach,
    reach_text,
    spread_reach,
)


@pytest.mark.parametrize("family", ["ties", "lognormal"])
def test_the_batched_looks_are_the_looks_one_at_a_time(family):
    rng = np.random.default_rng(3)
    for n, ratio in ((8, 0.3), (16, 0.5), (40, 0.6)):
        t = 0.5 + ratio * 0.1 * bounded_noise(family, rng, (40, n))
        c = 0.5 + 0.1 * bounded_noise(family, rng, (40, n))
        one = [any(lk["word"] == "lower" for lk in spread_looks(t[i], c[i], seed=5))
               for i in range(40)]
        assert lower_at_some_look(t, c, seed=5).tolist() == one


def _mean_power(effect, n, spread, family, seed):
    z = spread * bounded_noise(family, np.random.default_rng(seed), (400, n))
    x = np.clip(effect + z, -1.0, 1.0)
    return np.mean(ever_rejects(x, value=0.0, lower=-1.0, upper=1.0) & (x.mean(axis=1) > 0))


def test_the_mean_reach_is_detected_in_80_percent_of_fresh_draws_and_less_below_it():
    n, spread = 60, 0.2
    r = mean_reach(n, spread=spread, lower=-1.0, upper=1.0, expected="increase", alpha=0.05,
                   seed=1)
    assert r["effect"] == max(r["by_family"].values()) and r["under"] in FAMILIES
    for fam, effect in r["by_family"].items():
        assert _mean_power(effect, n, spread, fam, seed=99) >= 0.74, fam  # 400 fresh draws
        assert _mean_power(0.6 * effect, n, spread, fam, seed=99) < 0.8, fam


def test_the_spread_reach_is_the_worst_shapes_and_its_power_holds_on_fresh_draws():
    rng = np.random.default_rng(2)
    t, c = rng.uniform(0.80, 0.84, 32), rng.uniform(0.70, 0.90, 32)
    r = spread_reach(t, c, lower=0.0, upper=1.0, alpha=0.05, seed=4)
    assert r["units"] == "std ratio" and r["seeds"] == 32
    known = [v for v in r["by_family"].values() if v is not None]
    assert known and (r["effect"] is None or r["effect"] == min(known))
    fam = next(f for f, v in r["by_family"].items() if v is not None)
    ratio, sd = r["by_family"][fam], np.std(c, ddof=1)
    g = np.random.default_rng(77)
    ts = np.clip(t.mean() + ratio * sd * bounded_noise(fam, g, (300, 32)), 0, 1)
    cs = np.clip(c.mean() + sd * bounded_noise(fam, g, (300, 32)), 0, 1)
    assert lower_at_some_look(ts, cs, seed=4).mean() >= 0.74
    if ratio != RATIOS[0]:  # the next weaker effect on the grid is not detected 80% of the time
        weaker = RATIOS[RATIOS.index(ratio) - 1]
        ts = np.clip(t.mean() + weaker * sd * bounded_noise(fam, g, (300, 32)), 0, 1)
        assert lower_at_some_look(ts, cs, seed=4).mean() < 0.86


def test_an_inconclusive_decision_states_its_power_per_shape_and_a_decided_one_none():
    rng = np.random.default_rng(0)
    n = 40
    runs = pd.DataFrame({"method": ["a"] * n + ["b"] * n, "seed": list(range(n)) * 2,
                         "accuracy": np.r_[rng.uniform(0.80, 0.84, n), rng.uniform(0.79, 0.85, n)]})
    d = decide(runs, claim="higher-mean", treatment="a", control="b", metric="accuracy")
    assert d.word == "inconclusive" and set(d.reach["by_family"]) == set(FAMILIES)
    assert "power: at 40 seeds it detects" in d.text() and "noise shapes" in d.text()
    assert d.to_dict()["reach"]["units"] == "mean paired change"
    s = decide(runs, claim="lower-spread", treatment="a", control="b", metric="accuracy")
    assert s.reach is not None and s.reach["units"] == "std ratio"
    runs.loc[runs.method == "a", "accuracy"] = 0.99
    runs.loc[runs.method == "b", "accuracy"] -= 0.5
    assert decide(runs, claim="higher-mean", treatment="a", control="b",
                  metric="accuracy").reach is None


def test_an_undecided_probe_carries_its_reach_into_the_verdict_text():
    from boundbench.framework.stats.stopping import probe_text

    rng = np.random.default_rng(5)
    p = mean_probe(rng.normal(0, 0.02, 12), lower=-1.0, upper=1.0, expected="increase",
                   band=None, what="acc", seed=0)
    assert p["decision"] is None and p["reach"]["by_family"].keys() == set(FAMILIES)
    assert p["reach_text"] in probe_text(p)
    q = spread_probe(rng.uniform(0.8, 0.85, 16), rng.uniform(0.7, 0.9, 16), lower=0.0, upper=1.0,
                     band=None, what="sd", seed=0)
    assert q["reach"] is None or q["reach_text"] in probe_text(q)


def test_the_text_says_when_nothing_on_the_grid_is_detected():
    r = {"effect": None, "under": "ties", "units": "std ratio", "seeds": 4, "power": 0.8,
         "largest_tried": 0.05, "by_family": {f: None for f in FAMILIES}}
    assert "no std ratio down to 0.05" in reach_text(r) and "any of the 6" in reach_text(r)
    r["by_family"]["normal"] = 0.3
    assert "under the ties noise shape (normal: 0.3)" in reach_text(r)


def test_the_recorded_spread_decision_on_the_40_seed_file():
    """The file docs/fine-tuning.md and the results log (2026-12-07) quote: 40 seeds a side,
    ``mhloss`` U(0.80, 0.84), ``finetune`` U(0.78, 0.86), 4 decimals, from seed 0. The spread
    claim, by the permutation test, reads "SUPPORTED (at look 4 of 4, 32 seeds)", ratio 0.5249."""
    rng = np.random.default_rng(0)
    n = 40
    runs = pd.DataFrame({"method": ["mhloss"] * n + ["finetune"] * n, "seed": list(range(n)) * 2,
                         "accuracy": np.r_[rng.uniform(0.80, 0.84, n),
                                           rng.uniform(0.78, 0.86, n)].round(4)})
    d = decide(runs, claim="lower-spread", treatment="mhloss", control="finetune",
               metric="accuracy")
    assert d.text().startswith("lower-spread: SUPPORTED (at look 4 of 4, 32 seeds)")
    assert round(d.estimate, 4) == 0.5249
