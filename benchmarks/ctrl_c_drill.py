"""Interrupt drill (issue 65): the issue's double Ctrl-C, a terminal's double Ctrl-C (to the
process group), a single Ctrl-C and a ``kill -9``, each ``--tries`` times on a run whose two
pool workers are computing, with counts of the tries that exited in time, in one line, with no
worker left alive.

    python benchmarks/ctrl_c_drill.py [--tries 10] [--kinds double group single kill early]

``early`` instead sends one Ctrl-C at 17 delays over a command's first 3 s and counts the
answers longer than one line (issue 65, item 8).

Pass: every count equals the tries. Run it under load (e.g. beside the test suite) as well: the
CI machine is where two of the tests once timed out.
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from test_interrupts import CLAIMS, _alive, _children  # noqa: E402 - the test's /proc helpers


def _start(out: Path, command: str) -> tuple[subprocess.Popen, list[int]]:
    # faulthandler: a run that hangs is sent SIGABRT and prints every thread's stack
    env = {**os.environ, "BOUNDBENCH_PLUGINS": "none", "PYTHONFAULTHANDLER": "1"}
    p = subprocess.Popen([sys.executable, "-c", "import sys; from boundbench._entry import run;"
                          " sys.exit(run())", command, "--scale", "quick", "--only", *CLAIMS,
                          "--out", str(out), "--processes", "2"], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, env=env, start_new_session=True)
    workers: list[int] = []
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and len(workers) < 2 and p.poll() is None:
        time.sleep(0.5)
        workers = [c for c in _children(p.pid)
                   if b"spawn_main" in Path(f"/proc/{c}/cmdline").read_bytes()]
    time.sleep(5)  # the workers import and start their claims
    return p, workers


def one(kind: str, out: Path) -> dict[str, object]:
    p, workers = _start(out, "figures" if kind == "kill" else "audit")
    if p.poll() is not None or len(workers) < 2:
        p.kill()
        return {"started": False}
    t0 = time.monotonic()
    if kind == "kill":
        p.kill()
        p.wait()
        time.sleep(10)
        return {"started": True, "in_time": True, "one_line": True,
                "no_worker": not [w for w in workers if _alive(w)]}
    send = (lambda: os.killpg(p.pid, signal.SIGINT)) if kind == "group" else \
        (lambda: p.send_signal(signal.SIGINT))
    send()
    if kind != "single":
        time.sleep(0.3)
        send()
    try:
        _, err = p.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        for pid in [p.pid, *_children(p.pid)]:
            os.kill(pid, signal.SIGABRT)
        _, err = p.communicate(timeout=30)
        os.killpg(p.pid, signal.SIGKILL)
        return {"started": True, "in_time": False, "one_line": False, "no_worker": False,
                "stacks": err[-6000:]}
    took = time.monotonic() - t0
    time.sleep(1)
    lines = [ln for ln in err.splitlines() if ln.strip() and "audit:" not in ln]
    return {"started": True, "in_time": took < 10, "seconds": round(took, 1),
            "one_line": len(lines) == 1 and "interrupted" in lines[0] and p.returncode == 130,
            "no_worker": not [w for w in workers if _alive(w)], "stderr": err[-300:]}


def early() -> None:
    """A single Ctrl-C at 17 delays over a command's first 3 s (``claims`` and ``check``): how
    many answers were a traceback, and how many of those came from the interpreter's own start
    (``<frozen site>``, before the console script runs)."""
    env = {**os.environ, "BOUNDBENCH_PLUGINS": "none"}
    delays = [0.01, 0.03, 0.05, 0.08, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.7, 0.9, 1.2, 1.6, 2.0,
              2.5, 3.0]
    runs = tracebacks = in_site = 0
    for delay in delays:
        for cmd in (["claims"], ["check", "ad.thm2", "--scale", "quick"]):
            p = subprocess.Popen([sys.executable, "-c", "import sys; from boundbench._entry "
                                  "import run; sys.exit(run())", *cmd], stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE, text=True, env=env)
            time.sleep(delay)
            p.send_signal(signal.SIGINT)
            _, err = p.communicate(timeout=120)
            runs += 1
            lines = [ln for ln in err.splitlines() if ln.strip()]
            if "Traceback" in err or len(lines) > 1 or p.returncode not in (0, 130):
                tracebacks += 1
                in_site += "<frozen site>" in err
    print(f"early: {runs} signals, {tracebacks} answered with more than one line, "
          f"{in_site} of them in the interpreter's own start", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tries", type=int, default=10)
    ap.add_argument("--kinds", nargs="+", default=["double", "group", "single", "kill"],
                    choices=["double", "group", "single", "kill", "early"])
    args = ap.parse_args()
    if "early" in args.kinds:
        early()
    for kind in [k for k in args.kinds if k != "early"]:
        rows = []
        for i in range(args.tries):
            with tempfile.TemporaryDirectory() as d:
                r = one(kind, Path(d) / "D")
            rows.append(r)
            if not all(r.get(k, True) for k in ("in_time", "one_line", "no_worker")):
                stacks = r.pop("stacks", "")
                print(f"  {kind} try {i}: {r}", flush=True)
                if stacks:
                    print(f"  its threads when it hung:\n{stacks}", flush=True)
        started = [r for r in rows if r["started"]]
        counts = {k: sum(bool(r[k]) for r in started) for k in ("in_time", "one_line",
                                                                 "no_worker")}
        secs = [r["seconds"] for r in started if "seconds" in r]
        print(f"{kind}: {len(started)} of {len(rows)} tries reached the workers; exited within"
              f" 10 s {counts['in_time']}, one line {counts['one_line']}, no worker left "
              f"{counts['no_worker']}" + (f"; seconds to exit max {max(secs)}" if secs else ""),
              flush=True)


if __name__ == "__main__":
    main()
