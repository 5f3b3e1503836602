"""``audit --budget``: fine-tuning claims judged by confidence sequences add seeds until they
decide, the time goes to the claims expected to decide soonest, futile claims stop, and a
killed budgeted audit resumes counting the time it had spent. The claims here are stand-ins
whose "runs" are drawn from planted effects, at a stated cost a seed (the real ones are in
test_plm_claims)."""

from __future__ import annotations

import json
import time

import numpy as np
import pytest
import torch
from scipy import stats

from boundbench import catalogue
from boundbench.audit import run_audit
from boundbench.framework.claims import registry as claims
from boundbench.framework.stats.sequential import t_confidence_sequence
from boundbench.framework.stats.stopping import (
    PROJECTION_CAP,
    fixed_n,
    probe,
    seeds_to_decide,
    sequential_verdict,
)
from boundbench.framework.verdicts.rules import Verdict

# the real claims are registered before any test copies the registry: a first load inside a
# monkeypatched copy would leave the registry empty for the tests after this module
catalogue.load()

CALLS: list[tuple[str, int]] = []


def _corput(i: int) -> float:
    """The i-th point of the base-2 van der Corput sequence: 1/2, 1/4, 3/4, 1/8, ..."""
    x, f = 0.0, 0.5
    while i:
        x, i, f = x + f * (i & 1), i >> 1, f / 2
    return x


def _register(cid: str, *, effect: float, cost: float, sleep: float = 0.0,
              kill_at: int | None = None, grid_key: str | None = None) -> None:
    @claims.claim(cid, paper="fu", where="test", kind="trend", statement="a stand-in",
                  equation="-")
    def check(ctx: claims.CheckContext) -> claims.Outcome:
        k = ctx.seeds or 5
        CALLS.append((cid, k))
        if kill_at is not None and len(CALLS) >= kill_at:
            raise KeyboardInterrupt
        time.sleep(sleep)
        # the same seeds always give the same runs (a sequence, as the real grids' cells
        # are), and typical ones: normal quantiles at the van der Corput points, so every
        # prefix's mean and SD sit near the planted effect and 1
        diff = effect + stats.norm.ppf([_corput(s + 1) for s in range(k)])
        if not ctx.sequential:
            return claims.Outcome(Verdict("inconclusive", "fixed seeds", {}))
        p = probe("mean", path=t_confidence_sequence(diff), null=0.0, expected="increase",
                  band=None, spread=float(np.std(diff, ddof=1)), what="change")
        return claims.Outcome(sequential_verdict([p], what="change", evidence={},
                                                 seconds_per_seed=cost, grid_seeds=k,
                                                 grid_key=grid_key))


@pytest.fixture
def stand_ins(monkeypatch):
    monkeypatch.setattr(claims, "_REGISTRY", dict(claims._REGISTRY))
    CALLS.clear()
    _register("fu.test.large", effect=2.0, cost=10.0)
    _register("fu.test.small", effect=0.3, cost=10.0)
    _register("fu.test.nil", effect=0.0, cost=10.0)
    return ["fu.test.large", "fu.test.small", "fu.test.nil"]


def test_the_budget_decides_what_it_can_and_stops_the_futile(stand_ins, tmp_path):
    rep = run_audit(out_dir=tmp_path, only=stand_ins, budget=1e6, progress=False)
    byid = {r["id"]: r for r in rep["claims"]}
    assert byid["fu.test.large"]["verdict"] == "supported"
    assert byid["fu.test.small"]["verdict"] == "supported"
    assert byid["fu.test.nil"]["verdict"] == "inconclusive"
    seq = {cid: r["evidence"]["sequential"] for cid, r in byid.items()}
    assert seq["fu.test.large"]["stopped"] == "decided"
    assert seq["fu.test.nil"]["stopped"].startswith("futile")
    # the large effect decides with fewer seeds than the small one
    assert seq["fu.test.large"]["grid_seeds"] < seq["fu.test.small"]["grid_seeds"]
    md = (tmp_path / "audit.md").read_text()
    assert "## Fine-tuning claims under the budget" in md
    assert "| `fu.test.small` | **supported** |" in md


def test_seeds_added_to_one_claim_are_read_by_the_claims_on_its_grid(monkeypatch, tmp_path):
    """Claims on one grid (the same grid_key) read the same runs: when the budget adds seeds to
    one, every undecided claim on that grid is re-read at the new count (in the 90-min audit of
    2026-11-24, 11 seeds added for MHLoss's std were left unread by SURT, which needed 37 and
    was stopped at 6); a claim on another grid is not."""
    monkeypatch.setattr(claims, "_REGISTRY", dict(claims._REGISTRY))
    CALLS.clear()
    _register("fu.test.first", effect=2.0, cost=10.0, grid_key="trio")
    _register("fu.test.second", effect=0.6, cost=10.0, grid_key="trio")
    _register("fu.test.elsewhere", effect=0.6, cost=10.0, grid_key="other")
    rep = run_audit(out_dir=tmp_path, only=["fu.test.first", "fu.test.second",
                                            "fu.test.elsewhere"], budget=1e6, progress=False)
    first = [i for i, (cid, k) in enumerate(CALLS) if cid == "fu.test.first" and k > 5]
    assert first, "the large effect gets seeds first"
    for i in first:  # each step on the first is followed by a re-read of the second
        assert CALLS[i + 1] == ("fu.test.second", CALLS[i][1])
    assert not any(CALLS[i + 1][0] == "fu.test.elsewhere" for i in first)
    byid = {r["id"]: r["evidence"]["sequential"] for r in rep["claims"]}
    assert byid["fu.test.first"]["stopped"] == "decided"
    assert byid["fu.test.second"]["grid_seeds"] >= byid["fu.test.first"]["grid_seeds"]
    assert byid["fu.test.second"]["grid_key"] == "trio"


def test_a_trend_the_budget_cannot_extend_is_named_in_the_report(stand_ins, tmp_path, capsys):
    """A fine-tuning trend over levels has no sequence: it keeps its fixed seeds, is never
    re-run by the allocation, and the budget's section names it with its verdict, as does the
    command's summary (which once counted "0 of 0 fine-tuning claims decided" beside a trend
    that had decided, leaving it out)."""
    from boundbench import cli

    @claims.claim("fu.plm.test-trend", paper="fu", where="test", kind="trend",
                  statement="a stand-in trend", equation="-", setting="fine-tuning")
    def trend(ctx: claims.CheckContext) -> claims.Outcome:
        CALLS.append(("fu.plm.test-trend", ctx.seeds or 5))
        return claims.Outcome(Verdict("supported", "a clear trend", {}))

    # in this process (--processes 1): the stand-ins are registered here only
    assert cli.main(["audit", "--only", *stand_ins, "fu.plm.test-trend", "--budget", "1000h",
                     "--processes", "1", "--out", str(tmp_path)]) == 0
    assert [k for cid, k in CALLS if cid == "fu.plm.test-trend"] == [5]
    md = (tmp_path / "audit.md").read_text()
    assert "Kept at their fixed seeds" in md and "`fu.plm.test-trend` (**supported**)" in md
    out = capsys.readouterr().out
    assert "of 3 fine-tuning claims with a confidence sequence decided:" in out
    assert ("1 kept at their fixed seeds (trends over levels, which the budget does not "
            "extend): fu.plm.test-trend supported") in out


def test_a_small_budget_goes_to_the_claim_that_decides_soonest(stand_ins, tmp_path):
    """200 s of 10-s seeds: not enough for the small effect (about 100 seeds) at all, so it
    is futile at once; the large one gets the first seeds (the nil one, whose first five
    runs happen to look like an effect, may get some after it)."""
    rep = run_audit(out_dir=tmp_path, only=stand_ins, budget=200.0, progress=False)
    byid = {r["id"]: r for r in rep["claims"]}
    grown = [cid for cid, k in CALLS if k > 5]
    assert grown[0] == "fu.test.large" and "fu.test.small" not in grown
    assert byid["fu.test.large"]["verdict"] == "supported"
    assert byid["fu.test.small"]["evidence"]["sequential"]["stopped"].startswith("futile")


def test_a_killed_budgeted_audit_resumes_and_counts_the_time_spent(monkeypatch, tmp_path):
    monkeypatch.setattr(claims, "_REGISTRY", dict(claims._REGISTRY))
    CALLS.clear()
    _register("fu.test.slow", effect=0.5, cost=1.0, sleep=0.3, kill_at=3)
    with pytest.raises(KeyboardInterrupt):
        run_audit(out_dir=tmp_path, only=["fu.test.slow"], budget=1e6, progress=False)
    saved = json.loads((tmp_path / ".cache" / "budget.json").read_text())
    assert saved["spent"] >= 0.6 and not saved["finished"]  # at least two 0.3-s runs
    monkeypatch.setattr(claims, "_REGISTRY", dict(claims._REGISTRY))
    del claims._REGISTRY["fu.test.slow"]
    CALLS.clear()
    _register("fu.test.slow", effect=0.5, cost=1.0, sleep=0.3)
    rep = run_audit(out_dir=tmp_path, only=["fu.test.slow"], budget=1e6, progress=False)
    assert rep["meta"]["budget_spent_seconds"] >= saved["spent"] + 0.3
    assert json.loads((tmp_path / ".cache" / "budget.json").read_text())["finished"]


def test_a_bad_budget_is_refused(tmp_path):
    with pytest.raises(ValueError, match="budget must be a positive number"):
        run_audit(out_dir=tmp_path, only=["fu.lemma-a.1.3"], budget=0.0, progress=False)


def test_a_budget_is_not_split_over_dask_workers(tmp_path):
    with pytest.raises(ValueError, match="budget runs the fine-tuning claims here"):
        run_audit(out_dir=tmp_path, only=["fu.lemma-a.1.3"], budget=60.0, workers=2,
                  progress=False)


def test_a_budgeted_verdict_names_each_probe_once_and_projects_its_own_seed_count():
    """An undecided probe's verdict says at how many seeds its *sequence* would decide if the
    estimate held (more than a fixed design's count, which would contradict the futility
    rule beside it), names its label once, and says so when no count up to the cap decides."""
    diff = 0.3 + stats.norm.ppf([_corput(s + 1) for s in range(6)])
    sd = float(np.std(diff, ddof=1))
    p = probe("mean", path=t_confidence_sequence(diff), null=0.0, expected="increase",
              band=None, spread=sd, what="change")
    v = sequential_verdict([p], what="change", evidence={}, seconds_per_seed=1.0, grid_seeds=6)
    need = seeds_to_decide(n=6, n_max=PROJECTION_CAP, estimate=float(diff.mean()), spread=sd,
                           null=0.0, kind="mean")
    assert v.status == "inconclusive" and need is not None
    assert v.reason.startswith("change: mean paired change") and v.reason.count("change:") == 1
    assert f"the sequence would decide at about {need} seeds" in v.reason
    assert need > fixed_n(float(diff.mean()), sd)  # the price of looking at every seed
    nil = np.array([-0.5, 0.5] * 3)  # mean exactly 0: no count decides
    q = probe("mean", path=t_confidence_sequence(nil), null=0.0, expected="increase",
              band=None, spread=float(np.std(nil, ddof=1)), what="drop")
    w = sequential_verdict([q], what="claim", evidence={}, seconds_per_seed=1.0, grid_seeds=6)
    assert w.reason.startswith("claim: drop: mean paired change")  # another label: both kept
    assert f"no count of seeds up to {PROJECTION_CAP} decides" in w.reason


def test_the_machine_line_names_the_gpu_where_fine_tuning_ran():
    """The H200 audit's report said "Machine: CPU Intel(R) Xeon(R) Processor; ..." and nothing of
    the GPU its fine-tuning ran on: a machine record with GPUs names them and the CUDA version."""
    from boundbench.framework.files import meta
    from boundbench.framework.files.meta import machine_line

    m = {"cpu_model": "Xeon", "gpus": ["NVIDIA H200"], "cuda": "13.0", "blas": ["openblas"]}
    line = machine_line({"machine": m})[0]
    assert "GPU NVIDIA H200 (CUDA 13.0)" in line and line.startswith("Machine: CPU Xeon; GPU")
    assert "GPU" not in machine_line({"machine": {"cpu_model": "Xeon"}})[0]
    rec = meta.machine()
    assert ("gpus" in rec) == (torch.cuda.is_available())


@pytest.mark.parametrize("device, says", [
    ("cuda", "GPU-hours here at 5 s a seed"),
    ("cpu", "GPU-hours on one NVIDIA H200 by this grid's measured step-time ratio"),
])
def test_a_futile_claim_names_the_device_that_measured_its_seed_cost(device, says):
    """The budgeted audit on one H100 (2026-11-26) stopped ``fu.plm.mhloss-std`` as futile with
    "about 0.27 CPU-hours here at 5 s a seed; no GPU time is recorded for this grid", though its
    seconds were the GPU's and the grid's CPU/GPU ratio is recorded: the budget's line now names
    the device and grid as the verdict's own projection does."""
    from boundbench.budget import _plan

    diff = 0.01 + 0.5 * stats.norm.ppf([_corput(s + 1) for s in range(6)])
    p = probe("mean", path=t_confidence_sequence(diff), null=0.0, expected="increase",
              band=None, spread=float(np.std(diff, ddof=1)), what="change")
    seq = {"probes": [p], "grid_seeds": 6, "seconds_per_seed": 4.86,
           "grid_key": "6fc5c17e827f", "device": device}
    plan = _plan({"evidence": {"sequential": seq}}, left=10.0)
    assert plan is not None and "futile" in plan, plan
    assert says in plan["futile"] and "no GPU time is recorded" not in plan["futile"]


def test_a_claim_the_budget_cannot_pay_one_seed_for_stops_for_the_budget_not_as_futile():
    """With less time left than one seed costs, the stop names the budget (the H100 audit of
    2026-11-27 said "futile" of ``uegr.plm.cka``, which its report put about 1 seed from
    deciding); with time for two seeds and no decision within them, it is futile (the
    control)."""
    from boundbench.budget import _plan, spend_budget

    diff = 0.01 + 0.5 * stats.norm.ppf([_corput(s + 1) for s in range(6)])
    p = probe("mean", path=t_confidence_sequence(diff), null=0.0, expected="increase",
              band=None, spread=float(np.std(diff, ddof=1)), what="change")
    seq = {"probes": [p], "grid_seeds": 6, "seconds_per_seed": 4.86,
           "grid_key": "6fc5c17e827f", "device": "cuda"}
    r = {"id": "fu.plm.test-trend", "reason": "r", "evidence": {"sequential": seq}}
    plan = _plan(r, left=1.0)
    assert plan == {"seeds": 6, "need": 7, "seconds": 4.86}
    assert "futile" in _plan(r, left=10.0)
    out, _ = spend_budget([r], claims.CheckContext(), budget=1.0, spent=0.0, progress=False)
    stopped = out[0]["evidence"]["sequential"]["stopped"]
    assert stopped.startswith("the budget:") and "next 1 seeds need 0.1 min" in stopped, stopped
