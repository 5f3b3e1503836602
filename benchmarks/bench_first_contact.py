"""What a new user waits for, measured on a fresh clone (issue 40): the README's install, its
main command cold (empty ``$BOUNDBENCH_CACHE``, Hugging Face, matplotlib and XDG caches and
a fresh ``--out``) and warm (the model
caches filled by the cold run, a fresh ``--out`` again), and its test command. The commands are
read from the README itself, so the times are of what the README says to run; the script
prints the lines the README quotes, with the machine they were measured on.

This is a timing script, not a speed-up benchmark: it has no baseline to divide by. Run it on
an otherwise idle machine (two runs side by side measure neither)::

    python benchmarks/bench_first_contact.py                 # all four, about 25 min on 2 cores
    python benchmarks/bench_first_contact.py --skip-tests    # install and the main command
    python benchmarks/bench_first_contact.py --skip-main     # install and the test command
    python benchmarks/bench_first_contact.py --json times.json
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def readme_commands(readme: str) -> tuple[str, str, str]:
    """The README's install, main and test commands (its first two bash blocks)."""
    blocks = re.findall(r"```bash\n(.*?)```", readme, flags=re.S)
    if len(blocks) < 2:
        raise ValueError("README.md must open with the install block and the two commands")
    install = blocks[0].strip()
    main, test = (line.strip() for line in blocks[1].strip().splitlines()[:2])
    if "audit" not in main or "pytest" not in test:
        raise ValueError(f"README's second block must be the audit and the pytest command "
                         f"(got {main!r}, {test!r})")
    return install, main, test


def timed(cmd: str, *, cwd: Path, env: dict[str, str], log: Path) -> float:
    """Run ``cmd`` in a shell, its output to ``log``; the wall seconds (exit status checked)."""
    t0 = time.perf_counter()
    with log.open("w") as f:
        r = subprocess.run(cmd, shell=True, cwd=cwd, env=env, stdout=f, stderr=subprocess.STDOUT)
    dt = time.perf_counter() - t0
    if r.returncode != 0:
        raise SystemExit(f"{cmd!r} exited {r.returncode} after {dt:.0f} s; see {log}")
    return dt


def machine() -> str:
    cpu = platform.processor() or platform.machine()
    try:
        names = [ln.split(":", 1)[1].strip() for ln in
                 Path("/proc/cpuinfo").read_text().splitlines() if ln.startswith("model name")]
        cpu = names[0] if names else cpu
    except OSError:
        pass
    return f"{os.cpu_count()} cores ({cpu}), Python {platform.python_version()}, {platform.system()}"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repo", default=str(ROOT), help="the repository to clone (default: this one)")
    ap.add_argument("--work", default=None, help="where to clone (default: a new temporary folder)")
    ap.add_argument("--skip-tests", action="store_true", help="leave out the test command")
    ap.add_argument("--skip-main", action="store_true", help="leave out the main command")
    ap.add_argument("--json", default=None, help="also write the times to this file")
    args = ap.parse_args(argv)

    work = Path(args.work or tempfile.mkdtemp(prefix="bb-first-contact-"))
    clone = work / "clone"
    if clone.exists():
        shutil.rmtree(clone)
    subprocess.run(["git", "clone", "-q", args.repo, str(clone)], check=True)
    install, main_cmd, test_cmd = readme_commands((clone / "README.md").read_text())
    # every cache a first run fills starts empty: ours, Hugging Face's, matplotlib's fonts
    caches = {v: work / "caches" / v.lower() for v in
              ("BOUNDBENCH_CACHE", "HF_HOME", "MPLCONFIGDIR", "XDG_CACHE_HOME")}
    shutil.rmtree(work / "caches", ignore_errors=True)
    env = {**os.environ, **{k: str(v) for k, v in caches.items()}, "MPLBACKEND": "Agg"}
    env.pop("VIRTUAL_ENV", None)
    times: dict[str, float] = {}
    times["install"] = timed(install, cwd=clone, env=env, log=work / "install.log")
    print(f"install: {times['install']:.0f} s", flush=True)
    for which in () if args.skip_main else ("cold", "warm"):
        shutil.rmtree(clone / "figures", ignore_errors=True)  # a fresh --out either way
        times[which] = timed(main_cmd, cwd=clone, env=env, log=work / f"main-{which}.log")
        print(f"main command, {which}: {times[which]:.0f} s", flush=True)
    if not args.skip_tests:
        times["tests"] = timed(test_cmd, cwd=clone, env=env, log=work / "tests.log")
        tail = (work / "tests.log").read_text().strip().splitlines()[-1:]
        print(f"test command: {times['tests']:.0f} s ({tail[0] if tail else ''})", flush=True)
    where = machine()
    print("\nREADME lines:")
    print(f"- install: about {times['install'] / 60:.0f} minutes")
    if "cold" in times:
        print(f"- main command: about {times['cold'] / 60:.0f} minutes cold, "
              f"{times['warm'] / 60:.0f} warm")
    if "tests" in times:
        print(f"- tests: about {times['tests'] / 60:.0f} minutes")
    print(f"- measured on {where}")
    if args.json:
        Path(args.json).write_text(json.dumps({"seconds": times, "machine": where,
                                               "python": sys.version}, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
