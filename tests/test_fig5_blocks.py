"""Fig. 5 at a declared size that Dask can spread (issue 39): the heads' datasets run in
blocks drawn from (seed, block) alone, each block cached on its own; a cluster's blocks are
the serial run's bit for bit; no effect is tested before the trend; float32 slopes only where
their measured error is 100x inside the band."""

import json

import numpy as np
import pandas as pd
import pytest
import torch

from boundbench.framework.execution.context import CheckContext
from boundbench.framework.stats.trends import EQUIVALENCE, decide_no_effect
from boundbench.framework.verdicts.rules import Verdict
from boundbench.papers.fu import fig5_heads as fig5
from boundbench.synthetic.fig5 import HeadsRun

SMALL = dict(heads=(1, 3, 6), n=80, steps=40, k_loo=2, block=2)


def test_blocks_draw_from_the_seed_alone_and_a_larger_run_extends_a_smaller_one():
    cfg = HeadsRun(n_datasets=5, **SMALL)
    assert cfg.n_blocks == 3 and [cfg.block_size(b) for b in range(3)] == [2, 2, 1]
    whole = cfg.run()
    parts = pd.concat([cfg.run_block(b) for b in range(cfg.n_blocks)], ignore_index=True)
    assert whole.equals(parts)
    assert sorted(whole.dataset.unique()) == [0, 1, 2, 3, 4]
    # the first two blocks of 5 datasets are the run of 4, bit for bit; the block's cache key
    # leaves the dataset count out, so the run of 4 reuses them
    four = HeadsRun(n_datasets=4, **SMALL)
    assert whole[whole.dataset < 4].reset_index(drop=True).equals(four.run())
    assert cfg.block_config(1) == four.block_config(1) and "n_datasets" not in cfg.block_config(0)
    with pytest.raises(ValueError, match="block must be an integer >= 1"):
        HeadsRun(block=0)
    with pytest.raises(ValueError, match="b must be a block index"):
        cfg.block_size(3)


def test_a_block_is_the_same_with_any_thread_count():
    """A Dask worker runs with fewer torch threads than the client. MKL's SVD gave the step
    size other last bits with another thread count (now the Gram matrix's eigenvalue); then the
    update's and the sigmoid's kernels computed the last elements of each thread's share on
    their scalar path: 25 datasets at H = 10 gave two LOO distances other last bits at one
    thread than at two (the two-worker audit's tables differed). A block now runs on one
    thread whatever the caller's count, and gives the caller its count back."""
    cfg = HeadsRun(n_datasets=25, n=150, steps=600, k_loo=3, heads=(10,), step="eq10-fixed",
                   replica_starts="shared")
    before = torch.get_num_threads()
    try:
        torch.set_num_threads(1)
        one = cfg.run_block(0)
        assert torch.get_num_threads() == 1
        torch.set_num_threads(2)
        two = cfg.run_block(0)
        assert torch.get_num_threads() == 2
    finally:
        torch.set_num_threads(before)
    assert one.equals(two)


def test_a_local_pool_computes_the_serial_runs_blocks(tmp_path):
    """What the command line does on two cores: the blocks on spawned processes, cached by
    the client, read back as the one-process run; a block that raises comes back named."""
    from boundbench.framework.claims.registry import Block
    from boundbench.framework.execution.executors import LocalPool
    from boundbench.running import _remote_block

    cfg = HeadsRun(n_datasets=5, **SMALL)
    serial = cfg.run()
    ctx = CheckContext(out_dir=tmp_path)
    blocks = [Block("heads-block", cfg.block_config(b), _Run(cfg, b)) for b in range(cfg.n_blocks)]
    with LocalPool(2) as ex:
        got = list(ex.map(_remote_block, blocks, progress=False))
        bad = list(ex.map(_remote_block, [Block("x", {}, _Run(cfg, 7))], progress=False))
    for block, done in got:
        assert done.error is None, done.traceback
        ctx.cached(block.name, block.config, lambda v=done.value: v)
    read = cfg.run(blocks=lambda b: ctx.cached("heads-block", cfg.block_config(b),
                                               lambda: pytest.fail("recomputed a block")))
    assert read.equals(serial)
    assert "b must be a block index" in bad[0][1].error
    with pytest.raises(ValueError, match="workers must be an integer >= 1"):
        LocalPool(0)


def test_claims_on_a_local_pool_equal_the_serial_audit(tmp_path):
    """What the command line does with several claims: each on a spawned process with one
    torch thread, writing into the one folder; the report equals the one-process audit's
    (timings aside), files and cache included."""
    import json

    from boundbench.audit import run_audit

    ids = ["fu.lemma-a.1.2", "ad.gelu-lipschitz", "uegr.gradient-penalty", "fu.lemma-a.2.3"]
    run_audit(out_dir=tmp_path / "serial", only=ids, progress=False)
    run_audit(out_dir=tmp_path / "pool", only=ids, progress=False, processes=2)
    # --processes 1: the claims in this process on one torch thread, as the pool's run them
    run_audit(out_dir=tmp_path / "here", only=ids, progress=False, processes=1)

    def claims(d):
        rep = json.loads((d / "audit.json").read_text())
        return [{k: c[k] for k in ("id", "verdict", "reason", "evidence", "figure", "table")}
                for c in rep["claims"]]

    assert claims(tmp_path / "pool") == claims(tmp_path / "serial")
    assert claims(tmp_path / "here") == claims(tmp_path / "serial")
    for cid in ids:
        for ext in ("png", "csv", "json"):
            assert (tmp_path / "pool" / f"{cid}.{ext}").stat().st_size > 0


def test_blocks_on_a_local_cluster_equal_the_serial_run(tmp_path):
    """The Dask block test: every block computed on a two-worker LocalCluster and cached by
    the client reads back as the one-process run, bit for bit."""
    pytest.importorskip("distributed")
    from boundbench.framework.claims.registry import Block
    from boundbench.framework.execution.executors import executor
    from boundbench.running import _remote_block

    cfg = HeadsRun(n_datasets=5, **SMALL)
    serial = cfg.run()
    ctx = CheckContext(out_dir=tmp_path)
    blocks = [Block("heads-block", cfg.block_config(b), lambda b=b: cfg.run_block(b))
              for b in range(cfg.n_blocks)]
    with executor(workers=2) as ex:
        for block, done in ex.map(_remote_block, [Block(b.name, b.config, _Run(cfg, i))
                                                  for i, b in enumerate(blocks)],
                                  progress=False):
            assert done.error is None, done.traceback
            ctx.cached(block.name, block.config, lambda v=done.value: v)
    fresh = CheckContext(out_dir=tmp_path)  # reads the files the cluster's blocks left
    assert all(fresh.is_cached(b.name, b.config) for b in blocks)
    read = cfg.run(blocks=lambda b: fresh.cached("heads-block", cfg.block_config(b),
                                                 lambda: pytest.fail("recomputed a block")))
    assert read.equals(serial)


class _Run:
    """A picklable block runner (a lambda does not travel to a worker process)."""

    def __init__(self, cfg: HeadsRun, b: int) -> None:
        self.cfg, self.b = cfg, b

    def __call__(self) -> pd.DataFrame:
        return self.cfg.run_block(self.b)


@pytest.mark.slow
def test_a_two_worker_audit_of_fig5_equals_the_serial_one(tmp_path):
    """``audit --only fu.fig5.heads --datasets 30 --workers 2`` (two blocks a reading) gives the
    serial audit's verdict, evidence and table."""
    pytest.importorskip("distributed")
    from boundbench.audit import run_audit

    reports = {}
    for name, workers in (("serial", None), ("cluster", 2)):
        reports[name] = run_audit(out_dir=tmp_path / name, only=["fu.fig5.heads"], datasets=30,
                                  workers=workers, progress=False)
    (s,), (c,) = reports["serial"]["claims"], reports["cluster"]["claims"]
    assert s["verdict"] == c["verdict"] and s["reason"] == c["reason"]
    assert json.dumps(s["evidence"], sort_keys=True) == json.dumps(c["evidence"],
                                                                    sort_keys=True)
    assert s["evidence"]["n_datasets"] == 30
    assert "30 of the paper's 500 datasets" in s["evidence"]["datasets_note"]
    a = pd.read_csv(tmp_path / "serial" / s["table"])
    b = pd.read_csv(tmp_path / "cluster" / c["table"])
    assert a.equals(b)
    assert s["figure_title"].startswith(f"fu.fig5.heads: {s['verdict']} (30 of the paper's")


def test_no_effect_is_tested_before_the_trend():
    """A significant rank trend whose end-to-end change lies inside 1 +- 10% is no effect."""
    trend = Verdict("supported", "rho -0.2, CI [-0.25, -0.15]", {"spearman_rho": -0.2})
    inside = (0.999, 0.998, 1.0)
    assert decide_no_effect(trend, inside, "H").status == "supported"  # the old order
    first = decide_no_effect(trend, inside, "H", before_trend=True)
    assert first.status == "no-effect" and first.evidence["trend_inside_band"] == "supported"
    beyond = decide_no_effect(trend, (0.6, 0.5, 0.7), "H", before_trend=True)
    assert beyond.status == "supported"


def test_float32_slopes_only_where_their_error_is_100x_inside_the_band(tmp_path, monkeypatch):
    assert fig5.FLOAT32_TOLERANCE == pytest.approx(EQUIVALENCE / 100)
    ctx = CheckContext(scale="paper", out_dir=tmp_path, datasets=3)
    for err, used in ((5e-4, "float32"), (2e-3, "float64")):
        monkeypatch.setattr(HeadsRun, "float32_error", lambda self, datasets=2, e=err: {
            "max_relative_error": e, "datasets": datasets, "n": self.n, "steps": self.steps})
        cfg, check = fig5._heads_run(
            CheckContext(scale="paper", out_dir=tmp_path / used, datasets=3), "shared-start")
        assert cfg.slope == used and check["slopes"] == used
        assert check["max_relative_error"] == err and check["tolerance"] == 1e-3
    # below the paper scale the runs stay in float64 and nothing is measured
    cfg, check = fig5._heads_run(CheckContext(scale="quick"), "shared-start")
    assert cfg.slope == "float64" and check is None
    assert ctx.datasets == 3


def test_float32_error_is_measured_against_float64():
    out = HeadsRun(n_datasets=4, **SMALL).float32_error(datasets=2)
    assert out["datasets"] == 2 and 0 <= out["max_relative_error"] < 1e-3


def test_the_paper_scale_runs_a_declared_count_and_says_so():
    paper = fig5._heads_config(CheckContext(scale="paper"), "shared-start")
    assert (paper.n_datasets, paper.n, paper.steps) == (100, 2000, 3000)
    assert fig5._datasets_note(paper) == ("100 of the paper's 500 datasets per reading "
                                          "(--datasets 500 runs them all)")
    full = fig5._heads_config(CheckContext(scale="paper", datasets=500), "shared-start")
    assert fig5._datasets_note(full).startswith("500 datasets per reading (the paper's 500)")
    assert len(fig5._fig5_blocks(CheckContext(scale="quick"))) == 8  # one block per reading
    with pytest.raises(ValueError, match="datasets must be None or an integer >= 1"):
        CheckContext(datasets=0)
    np.testing.assert_equal(fig5.FIG5_DECLARED_DATASETS, 100)
