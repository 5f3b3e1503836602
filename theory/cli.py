"""The ``boundbench`` command: list claims, check some, audit all."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from theory import claims as _claims


def _cmd_claims(args: argparse.Namespace) -> int:
    reg = _claims.registry()
    if args.json:
        print(json.dumps([c.describe() for c in reg.values()], indent=2))
        return 0
    width = max(len(i) for i in reg)
    for c in reg.values():
        print(f"{c.id:<{width}}  {c.kind:<8}  {c.paper:<7} {c.where}")
    return 0


def _cmd_check(args: argparse.Namespace) -> int:
    from theory.audit import _jsonable

    for cid in args.ids:
        _claims.get(cid)
    out = Path(args.out) if args.out else None
    ctx = _claims.CheckContext(seed=args.seed, scale=args.scale, out_dir=out)
    results = [_claims.run(cid, ctx, catch=True).to_dict() for cid in args.ids]
    if args.json:
        print(json.dumps(_jsonable(results), indent=2))
    else:
        for r in results:
            print(f"{r['id']}: {r['verdict'].upper()} - {r['reason']}")
            for k, v in r["evidence"].items():
                print(f"    {k} = {v:.6g}" if isinstance(v, float) else f"    {k} = {v}")
            if r.get("figure"):
                print(f"    figure: {out / r['figure']}")
            if r.get("error"):
                print(r["error"], file=sys.stderr)
    return 1 if any(r.get("error") for r in results) else 0


def _cmd_audit(args: argparse.Namespace) -> int:
    from theory.audit import run_audit

    report = run_audit(seed=args.seed, scale=args.scale, out_dir=Path(args.out),
                       only=args.only or None, force=args.force)
    meta = report["meta"]
    print(f"audit: {len(report['claims'])} claims in {meta['seconds']} s: {meta['counts']}")
    print(f"report: {Path(args.out) / 'audit.md'} and audit.json")
    if meta["errors"]:
        print(f"checks that raised: {', '.join(meta['errors'])}", file=sys.stderr)
        return 1
    return 0


def _cmd_figures(args: argparse.Namespace) -> int:
    from tqdm.auto import tqdm

    ids = args.only or list(_claims.registry())
    for cid in ids:
        _claims.get(cid)
    out = Path(args.out)
    ctx = _claims.CheckContext(seed=args.seed, scale=args.scale, out_dir=out, force=args.force,
                               progress=True)
    failed = []
    for cid in tqdm(ids, desc="figures", unit="claim"):
        r = _claims.run(cid, ctx, catch=True)
        tqdm.write(f"{cid}: {r.verdict.status} ({r.seconds:.1f} s) -> "
                   f"{out / r.verdict.figure if r.verdict.figure else 'no figure'}")
        if r.error:
            failed.append(cid)
            print(r.error, file=sys.stderr)
    return 1 if failed else 0


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="boundbench", description=__doc__)
    sub = p.add_subparsers(dest="command", required=True)

    c = sub.add_parser("claims", help="list the registered claims")
    c.add_argument("--json", action="store_true", help="machine-readable output")
    c.set_defaults(func=_cmd_claims)

    def common(q: argparse.ArgumentParser) -> None:
        q.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
        q.add_argument("--scale", choices=_claims.SCALES, default="quick",
                       help="quick (CI, seconds) or paper (the papers' sizes)")

    k = sub.add_parser("check", help="run the checks of some claims")
    k.add_argument("ids", nargs="+", metavar="ID")
    common(k)
    k.add_argument("--json", action="store_true", help="machine-readable output")
    k.add_argument("--out", help="folder for figures and tables (default: none written)")
    k.set_defaults(func=_cmd_check)

    a = sub.add_parser("audit", help="run every claim and write audit.md / audit.json")
    common(a)
    a.add_argument("--out", default="figures", help="output folder (default: figures)")
    a.add_argument("--only", nargs="+", metavar="ID", help="restrict to these claims")
    a.add_argument("--force", action="store_true", help="recompute cached experiment tables")
    a.set_defaults(func=_cmd_audit)

    f = sub.add_parser("figures", help="regenerate the figures (PNG + CSV + config JSON)")
    common(f)
    f.add_argument("--out", default="figures", help="output folder (default: figures)")
    f.add_argument("--only", nargs="+", metavar="ID", help="restrict to these claims")
    f.add_argument("--force", action="store_true", help="recompute cached experiment tables")
    f.set_defaults(func=_cmd_figures)
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except ValueError as exc:
        print(f"boundbench: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
