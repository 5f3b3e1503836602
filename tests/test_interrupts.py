"""Interrupting a run on the process pool (issue 65): a double Ctrl-C exits within seconds in
one line and leaves no worker behind; a ``kill -9`` of the run leaves no worker alive 10 s
later. Real processes, real signals: the command line as a user starts it."""

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

# long enough (20-60 s each at quick scale, more on a busy machine) that the signals land while
# the workers compute, whatever the machine's load (the reproducer's claims finished
# before its signal on the CI machine)
CLAIMS = ["fu.fig5.heads", "fu.fig7.margin", "fu.fig9.bound"]

pytestmark = pytest.mark.skipif(not Path("/proc").is_dir(), reason="reads /proc (Linux)")


def _children(pid: int) -> list[int]:
    """The live processes whose parent is ``pid``."""
    out = []
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                fields = (d / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == pid and fields[0] != "Z":
                out.append(int(d.name))
    return out


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def _start(tmp_path: Path, command: str) -> tuple[subprocess.Popen, list[int]]:
    """``boundbench <command>`` of the three claims with two pool workers, once its workers
    are running claims: the process and its workers."""
    env = {**os.environ, "BOUNDBENCH_PLUGINS": "none"}
    p = subprocess.Popen([sys.executable, "-m", "boundbench.cli", command, "--scale", "quick",
                          "--only", *CLAIMS, "--out", str(tmp_path / "D"), "--processes", "2"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
                         cwd=tmp_path)
    deadline = time.monotonic() + 120
    workers: list[int] = []
    while time.monotonic() < deadline and len(workers) < 2 and p.poll() is None:
        time.sleep(0.5)
        workers = [c for c in _children(p.pid)
                   if b"spawn_main" in Path(f"/proc/{c}/cmdline").read_bytes()]
    if len(workers) < 2:
        p.kill()
        pytest.fail(f"no pool workers started: {p.communicate()[1][-2000:]}")
    time.sleep(5)  # the workers import and start their claims
    if p.poll() is not None:
        pytest.fail(f"the run ended before the test's signal: {p.communicate()[1][-1000:]}")
    return p, workers


@pytest.mark.slow  # timed out on the CI machine twice (issue 65 stays open on it)
def test_a_double_ctrl_c_exits_at_once_in_one_line_and_leaves_no_worker(tmp_path):
    p, workers = _start(tmp_path, "audit")
    t0 = time.monotonic()
    p.send_signal(signal.SIGINT)
    time.sleep(0.3)
    p.send_signal(signal.SIGINT)
    try:
        _, err = p.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        p.kill()
        pytest.fail("the run did not exit within 30 s of a double Ctrl-C")
    took = time.monotonic() - t0
    lines = [ln for ln in err.splitlines() if ln.strip() and "audit:" not in ln]
    assert p.returncode == 130, err[-2000:]
    assert len(lines) == 1 and "interrupted" in lines[0] and "Traceback" not in err, err
    assert took < 10, took
    time.sleep(1)
    assert not [w for w in workers if _alive(w)]


@pytest.mark.slow  # timed out on the CI machine twice (issue 65 stays open on it)
def test_a_single_ctrl_c_stops_the_running_claims_within_seconds(tmp_path):
    p, workers = _start(tmp_path, "audit")
    t0 = time.monotonic()
    p.send_signal(signal.SIGINT)
    _, err = p.communicate(timeout=60)
    assert p.returncode == 130 and time.monotonic() - t0 < 10, err[-2000:]
    assert "rerunning the same command resumes" in err
    time.sleep(1)
    assert not [w for w in workers if _alive(w)]


def test_workers_exit_when_their_run_is_killed(tmp_path):
    p, workers = _start(tmp_path, "figures")
    p.kill()
    p.wait()
    time.sleep(10)
    assert not [w for w in workers if _alive(w)]


def _before_our_handler(err: str) -> bool:
    """A traceback from a signal that landed before ``boundbench._entry`` set its handler: the
    interpreter's start (``<frozen site>``), or the import of the package's ``__init__`` and of
    ``_entry``'s own first lines; no frame of boundbench's after that."""
    from boundbench import _entry

    src = Path(_entry.__file__).read_text().splitlines()
    handler = next(i for i, ln in enumerate(src, 1) if ln.startswith("signal.signal("))
    frames = re.findall(r'File "([^"]+)", line (\d+)', err)
    pkg = str(Path(_entry.__file__).resolve().parent)  # not the editable install's finder
    ours = [(f, int(n)) for f, n in frames if str(Path(f).resolve()).startswith(pkg)]
    return all(f.endswith("boundbench/__init__.py") or (f.endswith("_entry.py") and n <= handler)
               for f, n in ours)


def test_the_early_handler_exits_with_the_interrupted_status():
    from boundbench import _entry
    from boundbench.errors import ExitCode

    assert _entry._INTERRUPTED == ExitCode.INTERRUPTED


def test_a_ctrl_c_in_the_first_second_is_one_line():
    """Issue 65, item 8: a Ctrl-C while the command imports printed a 10-36 line traceback (or
    a ``SyntaxError``: Python's answer when one lands while ``unicodedata`` loads). Signals at
    delays over the first seconds: every answer is one line, except one that lands before
    ``boundbench._entry`` sets its handler (the interpreter's start, the package's
    ``__init__``: 50 ms reached it on a loaded CI machine through the editable finder), which
    Python answers."""
    env = {**os.environ, "BOUNDBENCH_PLUGINS": "none"}
    ours = 0
    for delay in (0.05, 0.08, 0.12, 0.18, 0.25, 0.35, 0.5, 0.7, 1.0, 1.5):
        p = subprocess.Popen([sys.executable, "-c", "import sys; from boundbench._entry "
                              "import run; sys.exit(run())", "claims"], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True, env=env)
        time.sleep(delay)
        p.send_signal(signal.SIGINT)
        _, err = p.communicate(timeout=60)
        if "Traceback" in err and _before_our_handler(err):
            continue
        lines = [ln for ln in err.splitlines() if ln.strip()]
        assert p.returncode in (0, 130), (delay, err[-2000:])
        assert len(lines) <= 1 and "Traceback" not in err, (delay, err[-2000:])
        ours += p.returncode == 130
    assert ours >= 3  # the signals did land in the command's first second


def test_a_ctrl_c_inside_a_compiled_modules_start_is_answered_as_one(capsys):
    """CI's failure at 1 s above: the interrupt landed while matplotlib's ``_image`` (a pybind11
    module) initialised, which raises ``ImportError("initialization failed")`` from it; the
    command answered "internal error ... please report it". The chain is read: a Ctrl-C is a
    Ctrl-C whatever wraps it; an ImportError of its own is still a bug's line."""
    import argparse

    from boundbench.cli import _dispatch
    from boundbench.errors import ExitCode

    def wrapped(args):
        try:
            raise KeyboardInterrupt
        except KeyboardInterrupt as exc:
            raise ImportError("initialization failed") from exc

    def plain(args):
        raise ImportError("initialization failed")

    assert _dispatch(argparse.Namespace(func=wrapped)) == ExitCode.INTERRUPTED
    err = capsys.readouterr().err
    assert "interrupted" in err and "internal error" not in err
    assert len([ln for ln in err.splitlines() if ln.strip()]) == 1
    assert _dispatch(argparse.Namespace(func=plain)) == ExitCode.CHECK_RAISED
    assert "internal error: ImportError" in capsys.readouterr().err


def _no_warning(err: str) -> bool:
    return "leaked semaphore" not in err and "Traceback" not in err


def test_a_sigterm_is_answered_as_a_ctrl_c_in_one_line(tmp_path):
    """Issue 84: SIGTERM (``kill``, ``timeout``, a scheduler) ended a run with -15, no line and
    Python's leaked-semaphore warning; now "interrupted: terminated (SIGTERM)" and 130, as a
    Ctrl-C. A serial ``check`` of a claim that computes for tens of seconds."""
    env = {**os.environ, "BOUNDBENCH_PLUGINS": "none"}
    p = subprocess.Popen([sys.executable, "-m", "boundbench.cli", "check", "fu.fig5.heads",
                          "--out", str(tmp_path / "D")], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, env=env, cwd=tmp_path)
    time.sleep(12)  # its imports done, the claim computing
    if p.poll() is not None:
        pytest.fail(f"the check ended before the test's signal: {p.communicate()[1][-1000:]}")
    t0 = time.monotonic()
    p.send_signal(signal.SIGTERM)
    _, err = p.communicate(timeout=60)
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert p.returncode == 130, err[-2000:]
    assert len(lines) == 1 and "interrupted: terminated (SIGTERM)" in lines[0], err[-2000:]
    assert _no_warning(err) and time.monotonic() - t0 < 20


def test_a_sigterm_before_the_command_starts_is_one_line():
    """The console script's early handler answers SIGTERM as it answers SIGINT."""
    env = {**os.environ, "BOUNDBENCH_PLUGINS": "none"}
    p = subprocess.Popen([sys.executable, "-c", "import sys, time; from boundbench import "
                          "_entry; print('ready', flush=True); time.sleep(30)"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    assert p.stdout.readline().strip() == "ready"
    p.send_signal(signal.SIGTERM)
    _, err = p.communicate(timeout=30)
    assert p.returncode == 130 and "interrupted before it started" in err, err


@pytest.mark.slow  # the pool's signal tests timed out on the CI machine (issue 65)
def test_a_sigterm_stops_the_pools_workers(tmp_path):
    p, workers = _start(tmp_path, "audit")
    p.send_signal(signal.SIGTERM)
    _, err = p.communicate(timeout=60)
    assert p.returncode == 130 and "terminated (SIGTERM)" in err and _no_warning(err), err[-2000:]
    time.sleep(1)
    assert not [w for w in workers if _alive(w)]
