"""``boundbench decide``: a claim about two methods decided on a researcher's own per-seed
results (:func:`boundbench.framework.stats.decisions.decide`), its decision printed and written."""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from pathlib import Path

from boundbench.errors import ExitCode

__all__ = ["add_parser", "run"]


def add_parser(sub: argparse._SubParsersAction, *, epilog: str,
               out_dir: Callable[[str], str]) -> None:
    """The ``decide`` subcommand on ``sub``."""
    from boundbench.framework.stats.decisions import CLAIMS, RANGES

    d = sub.add_parser("decide", epilog=epilog,
                       help="decide a claim about two methods on your own per-seed results "
                       "(anytime-valid: add seeds and decide again)")
    d.add_argument("results", help="a CSV with columns method, seed and the metric (one row "
                   "per method and seed)")
    d.add_argument("--claim", required=True, choices=sorted(CLAIMS))
    d.add_argument("--treatment", required=True, help="the method the claim is about")
    d.add_argument("--control", required=True, help="the method it is compared with")
    d.add_argument("--metric", required=True, help=f"the column decided on (ranges known: "
                   f"{', '.join(sorted(RANGES))}; others need --range)")
    d.add_argument("--alpha", type=float, default=0.05, help="the chance of a wrong word over "
                   "every look (default 0.05)")
    d.add_argument("--margin", type=float, default=None, help="the no-effect band's "
                   "half-width (required for --claim no-effect)")
    d.add_argument("--range", nargs=2, type=float, metavar=("LOW", "HIGH"), default=None,
                   help="the metric's range, where it is not a known one")
    d.add_argument("--pair", default=None, help="a column pairing the two methods' rows "
                   "(default: the seed order)")
    d.add_argument("--continue", dest="previous", default=None, metavar="DECISION.json",
                   help="an earlier decision on the first seeds of these: checked to be their "
                   "prefix, so the same sequence goes on")
    d.add_argument("--json", action="store_true", help="print the decision as JSON")
    d.add_argument("--out", type=out_dir, default=".",
                   help="folder for decide-<treatment>-<control>-<metric>.json (default: here)")
    d.set_defaults(func=run)


def run(args: argparse.Namespace) -> ExitCode:
    import re

    from boundbench.framework.files.atomic import write_atomic
    from boundbench.framework.files.escape import safe_name
    from boundbench.framework.stats.decisions import comparison

    res = comparison.decide(args.results, claim=args.claim, treatment=args.treatment,
                            control=args.control, metric=args.metric, alpha=args.alpha,
                            margin=args.margin, bounds=args.range, pair=args.pair,
                            previous=args.previous)
    # method names may hold ':' or '=' (sam:rho=0.1): one plain file name, inside --out
    plain = re.sub(r"[^A-Za-z0-9._+-]+", "_", f"{args.treatment}-{args.control}-{args.metric}")
    name = safe_name(f"decide-{plain}"[:180].replace("..", "_"), what="the decision's file")
    path = Path(args.out) / f"{name}.json"
    text = json.dumps(res.to_dict(), indent=2) + "\n"
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(path, lambda t: t.write_text(text))
    print(text if args.json else f"{res.text()}\n  written: {path}")
    return ExitCode.OK
