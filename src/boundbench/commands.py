"""What each ``boundbench`` command does once its arguments are parsed (:mod:`boundbench.cli`
builds the parser and dispatches): each calls one library function and prints its result."""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from pathlib import Path

from boundbench import catalogue
from boundbench.errors import ExitCode, InvalidArgument
from boundbench.framework.claims import registry
from boundbench.framework.execution.executors import cores
from boundbench.framework.files.atomic import write_atomic
from boundbench.report.vocabulary import is_finding, verdict_of


def claims(args: argparse.Namespace) -> ExitCode:
    reg = catalogue.registry()
    if args.functions:
        from boundbench.generated import functions_table

        print(functions_table(markdown=args.markdown), end="")
        return ExitCode.OK
    if args.markdown:
        raise InvalidArgument("--markdown goes with --functions")
    if args.json:
        print(json.dumps([c.describe() for c in reg.values()], indent=2))
        return ExitCode.OK
    width = max(len(i) for i in reg)
    at = max(len(c.origin) for c in reg.values())
    for c in reg.values():  # where it is registered (file:line); a plugin's names its package
        pkg = f"  [{c.package}]" if c.package != "boundbench" else ""
        print(f"{c.id:<{width}}  {c.kind:<8}  {c.paper:<7} {c.origin:<{at}}  {c.where}{pkg}")
    return ExitCode.OK


def check(args: argparse.Namespace) -> ExitCode:
    from boundbench.framework.search.characterize import summary as characterization_summary
    from boundbench.framework.verdicts.sizes import largest_known
    from boundbench.report.entries import verdict_size
    from boundbench.running import _jsonable, checked_claims

    ids = catalogue.expand(args.ids)  # a paper's key: all its claims
    out = Path(args.out) if args.out else None
    ctx = registry.CheckContext(seed=args.seed, scale=args.scale, out_dir=out,
                               formats=tuple(args.format), datasets=args.datasets,
                               seed_records=getattr(args, "seed_records", None))
    results = checked_claims(ids, ctx)  # a plugin's claims in a child process (issue 84)
    if args.json:
        print(json.dumps(_jsonable(results), indent=2))
    else:
        for r in results:
            print(f"{r['id']}: {verdict_of(r).upper()} - {r['reason']}")
            size = verdict_size(r)
            if size:  # the headline size the README's findings block quotes
                print(f"    size: {size}")
            for k, v in r["evidence"].items():
                if k == "characterization" and isinstance(v, dict):
                    # its every direction is in --json; here the clause the reason quotes
                    v = characterization_summary(v, largest_known(r["evidence"]))
                elif k == "growth":
                    continue
                print(f"    {k} = {v:.6g}" if isinstance(v, float) else f"    {k} = {v}")
            if r.get("figure"):
                print(f"    figure: {out / r['figure']}")
            if r.get("error"):
                _print_claim_error(r)
    if any(r.get("error") for r in results):
        return ExitCode.CHECK_RAISED
    if any("stopped_by_time_limit" in r["evidence"] for r in results):
        return ExitCode.TIME_LIMIT  # before a finding: a claim that never finished is unsaid
    return ExitCode.FINDING if any(is_finding(r) for r in results) else ExitCode.OK


def _print_claim_error(r: dict) -> None:
    """A claim whose check raised: one line on the terminal (its exception), the traceback in
    full only with BOUNDBENCH_TRACEBACK=1 (it is in the claim's JSON record either way)."""
    import os

    if os.environ.get("BOUNDBENCH_TRACEBACK"):
        print(r["error"], file=sys.stderr)
        return
    said = " ".join(ln.strip() for ln in str(r.get("reason") or "").splitlines() if ln.strip())
    print(f"boundbench: {r['id']}: {said or 'its check raised'} (the traceback is in its JSON "
          "record; BOUNDBENCH_TRACEBACK=1 prints it)", file=sys.stderr)


def falsify(args: argparse.Namespace) -> ExitCode:
    from hypothesis.configuration import set_hypothesis_home_dir

    from boundbench.falsify import falsify

    # hypothesis keeps what it caches (its unicode tables, ...) under the run's folder, not
    # in the directory the command was started from
    set_hypothesis_home_dir(str(Path(args.out) / ".hypothesis"))
    from boundbench.testing.bound import BoundRaised

    try:
        res = falsify(args.target, budget=args.budget, seed=args.seed,
                      evaluations=args.evaluations, eval_timeout=args.eval_timeout)
    except BoundRaised as exc:  # the user's bound raised and nothing was found: exit 3
        print(f"boundbench: {exc}", file=sys.stderr)
        return ExitCode.CHECK_RAISED
    name = args.target.replace("/", "_").replace(":", "_")
    out = Path(args.out) / f"falsify-{name}.json"
    write_atomic(out, lambda t: t.write_text(json.dumps(res, indent=2, default=str) + "\n"))
    status = ExitCode.FINDING if res["violated"] else ExitCode.OK
    if args.json:  # the whole counterexample, as written to the file
        print(json.dumps(res, default=str))
        return status
    verdict = ("VIOLATED" if res["violated"] else "holds on every instance tried"
               if res.get("verdict", "holds") == "holds" else "NOT TESTED")
    print(f"{res['target']}: largest lhs/rhs found = {res['worst_ratio']:.6g} ({verdict}; "
          f"{res['evaluations']} evaluations in {res['seconds']} s, {res['method']})")
    print(f"  instance with the largest ratio: {res['instance']}")
    if res.get("worst_precision"):
        print(f"  that ratio: {res['worst_precision']}")
    for row in res.get("float64_only", []):
        print(f"  float64 only, not confirmed at 50 digits: lhs/rhs = {row['float64_ratio']:.6g} "
              f"in float64, {row['high_precision_ratio']:.6g} at 50 digits: {row['instance']}")
    if res.get("unconfirmed_violations"):
        u = res["unconfirmed_violations"]
        print(f"  {u['count']} float64 violation(s) not confirmed (float64 out of its depth in "
              f"code that leaves numpy's ufuncs; not findings), e.g. {u['first']}")
    if res.get("not_rechecked"):
        u = res["not_rechecked"]
        print(f"  {u['count']} instance(s) of the largest float64 ratios not rechecked at 50 "
              f"digits ({u['why']}; the largest of them {u['largest_float64_ratio']:.6g}): not "
              "reported")
    if res.get("warning"):
        print(f"  the bound's own arithmetic warned: {res['warning']}")
    if res.get("reproducer"):
        rp = res["reproducer"]
        # which instance it is: hypothesis's shrunk failure, or the 50-digit polish's
        print(f"  reproducer ({rp.get('is', 'the smallest reproducer')}): lhs/rhs = "
              f"{rp['ratio']:.6g}, lhs = {rp['lhs']!r}, rhs = {rp['rhs']!r}: {rp['instance']}")
    if res.get("raised"):
        print(f"  the bound also raised: {res['raised']}")
    if res.get("floating_point_artifacts"):
        fp = res["floating_point_artifacts"]
        print(f"  {fp['count']} float64 violation(s) vanished in extended precision (floating-"
              f"point artifacts of the bound's code, not findings), e.g. {fp['first']}")
    print(f"  reproduce: {res['reproduce']}")
    print(f"  written: {out}")
    return status


def prove(args: argparse.Namespace) -> ExitCode:
    from boundbench.prove import file_stem, prove_bound

    res = prove_bound(args.target, boxes=args.boxes, out_dir=Path(args.out))
    out = Path(args.out) / f"prove-{file_stem(args.target.rpartition(':')[2])}.json"
    write_atomic(out, lambda t: t.write_text(json.dumps(res, indent=2, default=str) + "\n"))
    status = ExitCode.FINDING if res["level"] == "refuted" else ExitCode.OK
    if args.json:
        print(json.dumps(res, default=str))
        return status
    print(f"{res['target']}: {res['level']} ({res['seconds']} s"
          + (f", {res['boxes']:,} boxes" if res.get("boxes") else "") + ")")
    print(f"  {res['status']}")
    print("  box: " + ", ".join(f"{k} in [{v[0]}, {v[1]}]" for k, v in res["box"].items()))
    if res.get("replay", {}).get("written"):
        print(f"  replay (numpy + mpmath only): python {res['replay']['path']}")
    print(f"  written: {out}")
    return status


def audit(args: argparse.Namespace) -> ExitCode:
    from boundbench.audit import run_audit

    report = run_audit(seed=args.seed, scale=args.scale, out_dir=Path(args.out),
                       only=args.only or None, force=args.force, workers=args.workers,
                       scheduler=args.scheduler, formats=tuple(args.format),
                       budget=args.budget, datasets=args.datasets,
                       processes=args.processes or cores(),
                       seed_records=getattr(args, "seed_records", None))
    meta = report["meta"]
    print(f"audit: {len(report['claims'])} claims in {meta['seconds']} s: {meta['counts']}")
    if args.budget is not None:
        from boundbench.report.entries import budgeted_and_fixed

        seq, fixed = budgeted_and_fixed(report)
        # the count is of the claims the budget can extend; the others are named after it, so
        # that "0 of 1 decided" is not read as every fine-tuning claim of the audit
        print(f"budget: {meta['budget_spent_seconds'] / 60:.1f} of {args.budget / 60:.0f} min; "
              f"{sum(verdict_of(r) in ('supported', 'contradicted', 'no-effect') for r in seq)} "
              f"of {len(seq)} fine-tuning claims with a confidence sequence decided"
              f"{':' if seq else ''}")
        for r in seq:
            s = r["evidence"]["sequential"]
            print(f"  {r['id']}: {verdict_of(r)} at {s['grid_seeds']} seeds "
                  f"({s.get('stopped', '')})")
        if fixed:
            print(f"{len(fixed)} kept at their fixed seeds (trends over levels, which the budget "
                  "does not extend): " + ", ".join(f"{r['id']} {verdict_of(r)}" for r in fixed))
    print(f"report: {Path(args.out) / 'audit.md'}, audit.json and errata.md")
    if meta["errors"]:
        print(f"checks that raised: {', '.join(meta['errors'])}", file=sys.stderr)
        return ExitCode.CHECK_RAISED
    return ExitCode.OK


def findings(args: argparse.Namespace) -> ExitCode:
    from boundbench import generated
    from boundbench.report.readme import headline, record

    report = generated.read_audit(Path(args.out) / "audit.json")
    if args.keep:
        generated.keep_larger(report, Path(args.keep))
        print(f"kept: {args.keep}")
    rec = record(report)
    text = headline(rec)
    print(text, end="")
    if args.record:
        generated.write_record(report, Path(args.record))
        print(f"recorded: {args.record}")
    if args.readme:
        readme = Path(args.readme)
        text = generated.readme_block(rec, readme.parent)
        generated.replace_readme_block(readme, text)
        print(f"updated: {args.readme}")
    return ExitCode.OK


def new_paper(args: argparse.Namespace) -> ExitCode:
    from boundbench.scaffold import new_paper as scaffold

    catalogue.load()
    if args.key in registry.papers():
        raise InvalidArgument(f"key {args.key!r} is taken by an installed paper "
                              f"({registry.papers()[args.key].package}): choose another")
    files = scaffold(args.key, Path(args.out), title=args.title, citation=args.citation)
    for f in files:
        print(f"written: {f}")
    print(f"next: pip install --no-deps -e {args.out} && boundbench audit --only {args.key} "
          f"--out figures-{args.key}")
    return ExitCode.OK


def regenerate(args: argparse.Namespace) -> ExitCode:
    from boundbench.generated import regenerate as regenerate_files
    from boundbench.generated import regenerate_only

    paths = (regenerate_only(Path(args.root), list(args.only), out=Path(args.out)) if args.only
             else regenerate_files(Path(args.root), Path(args.out) / "audit.json"))
    for path in paths:
        print(f"written: {path}")
    return ExitCode.OK


def errata(args: argparse.Namespace) -> ExitCode:
    from boundbench.report import errata as errata_sheet

    path = errata_sheet.write(Path(args.out), paper=args.paper,
                        audit=Path(args.audit) if args.audit else None)
    print(f"errata: {path}")
    return ExitCode.OK


def figures(args: argparse.Namespace) -> ExitCode:
    from tqdm.auto import tqdm

    catalogue.load()
    ids = catalogue.expand(args.only) if args.only else list(catalogue.registry())
    out = Path(args.out)
    from boundbench.audit import check_no_downscale
    from boundbench.running import run_claims

    check_no_downscale(out, ids, args.scale, force=args.force)
    # one progress bar per command: over the claims, or, for a single claim, inside it
    ctx = registry.CheckContext(seed=args.seed, scale=args.scale, out_dir=out, force=args.force,
                               progress=len(ids) == 1, formats=tuple(args.format),
                               datasets=args.datasets)

    failed = []
    for r in run_claims(ids, ctx, workers=args.workers, scheduler=args.scheduler,
                        desc="figures", progress=len(ids) > 1,
                        processes=args.processes or cores()):
        files = ", ".join(r.get("figure_files") or [])
        tqdm.write(f"{r['id']}: {verdict_of(r)} ({r['seconds']:.1f} s) -> "
                   f"{out}/{{{files}}}" if files else f"{r['id']}: {verdict_of(r)} "
                   f"({r['seconds']:.1f} s), no figure")
        for p in r.get("layout_problems") or []:
            tqdm.write(f"  layout: {p}")
        if r.get("error"):
            failed.append(r["id"])
            _print_claim_error(r)
    return ExitCode.CHECK_RAISED if failed else ExitCode.OK


def plm(args: argparse.Namespace) -> ExitCode:
    import os

    from boundbench.plm.grid import runs

    if args.plm_command == "sweep":
        grid = runs.sweep_grid(args.config, scale=args.scale)
    else:
        grid = runs.single_grid(task=args.task, methods=args.method, seeds=args.seeds,
                                train_size=args.train_size, model=args.model, steps=args.steps,
                                device=args.device, head_only=args.head_only,
                                diagnostics=args.diagnostics, evaluation=args.evaluation,
                                scale=args.scale)
    if args.seed is not None:  # the runs start at the seed asked for (issue 83)
        grid = dataclasses.replace(grid, first_seed=args.seed)
    if note := runs.cost_note(grid, scale=args.scale, command=args.plm_command):
        print(note, file=sys.stderr)
    until = getattr(args, "until_decided", False)
    res = runs.run(grid, Path(args.out), until_decided=until,
                   metric=getattr(args, "metric", "test_accuracy"),
                   **({"band": args.band, "max_seeds": args.max_seeds, "budget": args.budget}
                      if until else {}), workers=args.workers, scheduler=args.scheduler,
                   seeds_at_once=args.seeds_at_once)
    if int(os.environ.get("RANK", "0")) == 0:  # one report per multi-process launch
        print(runs.report(res))
    return ExitCode.OK
