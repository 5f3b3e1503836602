"""Every command's exit statuses (issue 67): each returns an :class:`~boundbench.errors.ExitCode`,
each status :data:`boundbench.cli.COMMAND_EXITS` lists for it is reached here by a run that
should end so (a real run where one is cheap; a library call made to raise or be interrupted
where the status is the dispatcher's), and ``--help`` states the same list."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from boundbench import cli
from boundbench.errors import ExitCode

OK, FINDING, USAGE, RAISED, STOPPED = (ExitCode.OK, ExitCode.FINDING, ExitCode.USAGE,
                                       ExitCode.CHECK_RAISED, ExitCode.INTERRUPTED)
LIMIT, FULL = ExitCode.TIME_LIMIT, ExitCode.DISK_FULL

BOUNDS = '''
from hypothesis import strategies as st
from boundbench.testing import bound

@bound(st.floats(0, 1))
def holds(x):
    return x * x, x

@bound(st.floats(0, 1))
def violated(x):
    return x, 0.5

@bound(st.floats(0, 1))
def always_raises(x):
    raise RuntimeError("never computed")


@bound(space={"x": (0.0, 1.0)})
def proven(p):
    return p["x"] * p["x"], p["x"]


@bound(space={"x": (0.0, 2.0)})
def refuted(p):
    return p["x"] * p["x"], p["x"]
'''


def _raise(what: BaseException) -> Callable:
    def fn(*args, **kwargs):
        raise what
    return fn


@pytest.fixture()
def raising_claim():
    """A registered claim whose check raises (a check's bug: CHECK_RAISED), removed after."""
    from boundbench import catalogue
    from boundbench.framework.claims import registry

    catalogue.load()

    @registry.claim("test.exit-raises", paper="ad", where="nowhere", kind="bound",
                    statement="s", equation="e")
    def _raises(ctx):
        raise RuntimeError("a check's bug")

    yield "test.exit-raises"
    registry._REGISTRY.pop("test.exit-raises", None)


@pytest.fixture()
def slow_claim():
    """A registered claim that runs past its time limit of 0.5 s, removed after."""
    import time

    from boundbench import catalogue
    from boundbench.framework.claims import registry

    catalogue.load()

    @registry.claim("test.exit-slow", paper="ad", where="nowhere", kind="bound",
                    statement="s", equation="e", time_limit=0.5)
    def _slow(ctx):
        time.sleep(30)

    yield "test.exit-slow"
    registry._REGISTRY.pop("test.exit-slow", None)


@pytest.fixture(scope="module")
def one_claim_audit(tmp_path_factory) -> Path:
    """A quick audit of one claim: the folder ``errata`` and ``findings`` read."""
    out = tmp_path_factory.mktemp("exit-audit")
    assert cli.main(["audit", "--only", "ad.gelu-lipschitz", "--out", str(out)]) == OK
    return out


def _patch(monkeypatch, target: str, what: BaseException) -> None:
    module, attr = target.rsplit(".", 1)
    import importlib

    monkeypatch.setattr(importlib.import_module(module), attr, _raise(what))


# command -> the library call it makes, made to raise for the dispatcher's statuses
CALLS = {
    "claims": "boundbench.catalogue.registry",
    "check": "boundbench.framework.claims.registry.run",
    "audit": "boundbench.audit.run_audit",
    "errata": "boundbench.report.errata.write",
    "findings": "boundbench.generated.read_audit",
    "new-paper": "boundbench.scaffold.new_paper",
    "regenerate": "boundbench.generated.regenerate",
    "falsify": "boundbench.falsify.falsify",
    "prove": "boundbench.prove.prove_bound",
    "figures": "boundbench.running.run_claims",
    "decide": "boundbench.framework.stats.decisions.comparison.decide",
    "plm run": "boundbench.plm.grid.runs.single_grid",
    "plm sweep": "boundbench.plm.grid.runs.sweep_grid",
}


def _argv(command: str, code: ExitCode, t: Path, bounds: Path, audit: Path | None,
          raising: str | None, slow: str | None = None) -> list[str]:
    """The command line that should end in ``code``."""
    out = ["--out", str(t / "out")]
    usage = {
        "claims": ["claims", "--markdown"],
        "check": ["check", "no.such-claim"],
        "audit": ["audit", "--budget", "-5m", *out],
        "errata": ["errata", "nosuchpaper", "--audit", str(t / "none.json"), *out],
        "findings": ["findings", *out],  # no audit.json there
        "new-paper": ["new-paper", "Not A Key", *out],
        "regenerate": ["regenerate", "--root", str(t / "not-a-checkout"), *out],
        "falsify": ["falsify", f"{bounds}:nosuch", "--budget", "1", *out],
        "prove": ["prove", f"{bounds}:holds", *out],  # a strategy, not a space
        "figures": ["figures", "--only", "no.such-claim", *out],
        "decide": ["decide", str(_runs(t, bad=True)), "--claim", "higher-mean", "--treatment",
                   "a", "--control", "b", "--metric", "accuracy", *out],
        "plm run": ["plm", "run", "--task", "nosuch", *out],
        "plm sweep": ["plm", "sweep", str(t / "none.json"), *out],
    }
    cheap = {  # real runs that end in OK, FINDING or CHECK_RAISED
        ("claims", OK): ["claims"],
        ("check", OK): ["check", "ad.gelu-lipschitz"],
        ("check", FINDING): ["check", "ad.gelu-contractant"],
        ("check", RAISED): ["check", str(raising)],
        ("check", LIMIT): ["check", str(slow)],
        ("audit", OK): ["audit", "--only", "ad.gelu-lipschitz", *out],
        ("audit", RAISED): ["audit", "--only", str(raising), *out],
        ("errata", OK): ["errata", "--out", str(audit)],
        ("findings", OK): ["findings", "--out", str(audit)],
        ("new-paper", OK): ["new-paper", "mynotes", *out],
        ("falsify", OK): ["falsify", f"{bounds}:holds", "--budget", "1", *out],
        ("falsify", FINDING): ["falsify", f"{bounds}:violated", "--budget", "1", *out],
        ("falsify", RAISED): ["falsify", f"{bounds}:always_raises", "--budget", "1", *out],
        ("prove", OK): ["prove", f"{bounds}:proven", *out],
        ("prove", FINDING): ["prove", f"{bounds}:refuted", *out],
        ("figures", OK): ["figures", "--only", "ad.gelu-lipschitz", *out],
        ("figures", RAISED): ["figures", "--only", str(raising), *out],
    }
    if code == USAGE:
        return usage[command]
    if (command, code) in cheap:
        return cheap[(command, code)]
    # the dispatcher's statuses (and OK where a real run is costly): any valid command line
    return cheap_ok_lines(t, bounds)[command]


def cheap_ok_lines(t: Path, bounds: Path) -> dict[str, list[str]]:
    """A valid command line per command, whose library call the test replaces."""
    out = ["--out", str(t / "out")]
    return {
        "claims": ["claims"], "check": ["check", "ad.gelu-lipschitz"],
        "audit": ["audit", "--only", "ad.gelu-lipschitz", *out], "errata": ["errata", *out],
        "findings": ["findings", *out], "new-paper": ["new-paper", "mynotes", *out],
        "regenerate": ["regenerate", *out],
        "falsify": ["falsify", f"{bounds}:holds", "--budget", "1", *out],
        "prove": ["prove", f"{bounds}:proven", *out],
        "figures": ["figures", "--only", "ad.gelu-lipschitz", *out],
        "decide": ["decide", str(_runs(t)), "--claim", "higher-mean", "--treatment", "a",
                   "--control", "b", "--metric", "accuracy", *out],
        "plm run": ["plm", "run", "--seeds", "1", "--steps", "1", "--train-size", "8", *out],
        "plm sweep": ["plm", "sweep", "tiny", *out],
    }


def _runs(t: Path, *, bad: bool = False) -> Path:
    """Two methods' per-seed accuracies (one of 1.2, out of its range, where ``bad``)."""
    rows = ["method,seed,accuracy"] + [f"{m},{s},{0.5 + 0.01 * s}" for m in "ab"
                                       for s in range(6)]
    if bad:
        rows[1] = "a,0,1.2"
    path = t / ("bad.csv" if bad else "runs.csv")
    path.write_text("\n".join(rows) + "\n")
    return path


def _main(argv: list[str]) -> int:
    try:
        return cli.main(argv)
    except SystemExit as exc:  # argparse's own usage errors end the process
        return int(exc.code or 0)


CASES = [(c, code) for c, codes in cli.COMMAND_EXITS.items() for code in codes]


@pytest.mark.parametrize("command, code", CASES, ids=[f"{c}-{code.name}" for c, code in CASES])
def test_each_command_reaches_each_status_it_documents(command, code, tmp_path, monkeypatch,
                                                       capsys, request):
    bounds = tmp_path / "bounds.py"
    bounds.write_text(BOUNDS)
    raising = request.getfixturevalue("raising_claim") if code == RAISED and command in (
        "check", "audit", "figures") else None
    audit = request.getfixturevalue("one_claim_audit") if (command, code) in (
        ("errata", OK), ("findings", OK)) else None
    if command in ("regenerate", "plm run", "plm sweep") and code == OK:
        # a real run of these costs minutes (the whole quick audit; a model's training): the
        # command's own code runs, its library call returns what a real one would
        _fake_ok(command, monkeypatch)
    elif code in (STOPPED, FULL) or (code == RAISED and raising is None and command != "falsify"):
        import errno

        _patch(monkeypatch, CALLS[command],
               KeyboardInterrupt() if code == STOPPED else OSError(
                   errno.ENOSPC, "No space left on device", str(tmp_path / "out" / "audit.json"))
               if code == FULL else ZeroDivisionError("our bug"))
    slow = request.getfixturevalue("slow_claim") if code == LIMIT else None
    argv = _argv(command, code, tmp_path, bounds, audit, raising, slow)
    got = _main(argv)
    err = capsys.readouterr().err
    assert got == code, (argv, err)
    assert isinstance(got, ExitCode) or code == USAGE, type(got)  # argparse's is a plain 2
    if code in (USAGE, STOPPED, FULL) or (code == RAISED and raising is None):
        assert len([ln for ln in err.splitlines() if ln.strip()]) == 1, err
    if code == FULL:
        assert "No space left on device" in err and "audit.json" in err, err


def _fake_ok(command: str, monkeypatch) -> None:
    from boundbench import generated

    if command == "regenerate":
        monkeypatch.setattr(generated, "regenerate", lambda root, audit: [root / "docs/bounds.md"])
        return
    from boundbench.plm.grid import runs

    monkeypatch.setattr(runs, "single_grid", lambda **kw: {"grid": "single"})
    monkeypatch.setattr(runs, "sweep_grid", lambda config, scale: {"grid": "sweep"})
    monkeypatch.setattr(runs, "cost_note", lambda grid, scale, command: None)
    monkeypatch.setattr(runs, "run", lambda grid, out, **kw: [])
    monkeypatch.setattr(runs, "report", lambda res: "mean +- std: (none)")


def test_every_command_declares_its_statuses_and_its_help_lists_them(capsys):
    """A new command cannot ship without its statuses: the parser's commands are those of
    COMMAND_EXITS, and each ``--help`` ends with the list, made from it."""
    parser = cli.build_parser()
    sub = next(a for a in parser._actions if a.dest == "command")
    names = set()
    for name, p in sub.choices.items():
        inner = [a for a in p._actions if a.dest == "plm_command"]
        names |= {f"{name} {n}" for n in inner[0].choices} if inner else {name}
    assert names == set(cli.COMMAND_EXITS)
    for command in cli.COMMAND_EXITS:
        with pytest.raises(SystemExit):
            cli.main([*command.split(), "--help"])
        text = " ".join(capsys.readouterr().out.split())
        for code in cli.COMMAND_EXITS[command]:
            assert f"{int(code)} " in text.split("exit status:")[1], (command, text)


def test_the_statuses_are_documented_once_and_the_guide_agrees():
    """docs/testing.md's table lists ExitCode's members, their numbers as the enum's."""
    doc = (Path(__file__).parents[1] / "docs" / "testing.md").read_text()
    table = doc.split("## Exit statuses", 1)[1].split("\n## ", 1)[0]
    for code in ExitCode:
        assert f"| {int(code)} | `{code.name}`" in table, code
    assert json.dumps(sorted(int(c) for c in ExitCode)) == "[0, 1, 2, 3, 4, 5, 130]"


def test_what_boundbench_raises_on_purpose_is_usage_and_anything_else_our_bug(monkeypatch,
                                                                               capsys):
    """The dispatcher's rule: a BoundbenchError (and a ValueError or TypeError from parsing a
    user's file) is USAGE, one line; any other exception is CHECK_RAISED, one line that asks
    for a report."""
    from boundbench.errors import BoundbenchError

    for what, code, words in ((BoundbenchError("a named mistake"), USAGE, "error: a named"),
                              (KeyError("deep"), RAISED, "internal error: KeyError")):
        _patch(monkeypatch, "boundbench.catalogue.registry", what)
        assert cli.main(["claims"]) == code
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and words in err[0], err


def test_a_claim_stopped_by_its_time_limit_is_checks_own_status_and_the_others_are_printed(
        slow_claim, capsys):
    """Issue 84: a claim that never finished made ``check`` exit 0 (inconclusive); now
    TIME_LIMIT, with the other claim's verdict printed beside it."""
    assert cli.main(["check", slow_claim, "--json"]) == LIMIT
    (r,) = json.loads(capsys.readouterr().out)
    assert r["seconds"] < 20  # stopped at its 0.5 s limit, not after its 30 s sleep
    assert cli.main(["check", slow_claim, "ad.gelu-lipschitz"]) == LIMIT
    out = capsys.readouterr().out
    assert f"{slow_claim}: INCONCLUSIVE - the check ran past its time limit" in out
    assert "stopped_by_time_limit = 0.5" in out and "ad.gelu-lipschitz: HOLDS" in out
