"""Profile one claim end to end by phase (data loading, model load, tokenization, training
steps, SURT's MLM stage, inference, diagnostics and SVM LOO, evaluation probes, saving):
cProfile's cumulative seconds per phase, largest first.

    python benchmarks/profile_claim.py fu.plm.mmr-margin [--scale quick]
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import tempfile
import time
from pathlib import Path

from boundbench import catalogue
from boundbench.framework.claims import registry
from boundbench.framework.execution import context

# function name -> phase (a name may appear under several phases' callers; cumulative times
# overlap where phases nest, e.g. SVM LOO inside diagnostics)
PHASES = {
    "load_task": "data loading", "load_classifier": "model load",
    "from_pretrained": "  (HF from_pretrained)", "__call__ (tokenization_utils_base)":
    "tokenization", "_train": "training steps", "continue_pretraining": "SURT MLM",
    "forward_all": "inference (eval, probes)", "feature_diagnostics": "diagnostics (SVM, LOO)",
    "hard_margin_loo": "  SVM LOO", "soft_margin_loo": "  soft SVM LOO",
    "_pretrained_diagnostics": "pre-trained diagnostics", "evaluate_run": "evaluation probes",
    "noise_robustness": "  noise probe", "corruption_robustness": "  corruption probe",
    "_pretrained_representations": "  CKA (pre-trained, once)",
    "head_hessian": "  head Hessian", "_save": "figure/table save",
}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("claim")
    ap.add_argument("--scale", choices=context.SCALES, default="quick")
    args = ap.parse_args()
    catalogue.load()
    out = Path(tempfile.mkdtemp())
    prof = cProfile.Profile()
    t0 = time.perf_counter()
    prof.enable()
    r = registry.run(args.claim, registry.CheckContext(scale=args.scale, out_dir=out))
    prof.disable()
    print(f"{args.claim}: {r.verdict.status}, {time.perf_counter() - t0:.1f} s in all")
    rows: dict[str, float] = {}
    for (fn, _, name), (_, _, _, cum, _) in pstats.Stats(prof).stats.items():
        key = f"{name} (tokenization_utils_base)" if name == "__call__" and \
            "tokenization_utils_base" in fn else name
        if key in PHASES:
            rows[PHASES[key]] = rows.get(PHASES[key], 0.0) + cum
    for phase, sec in sorted(rows.items(), key=lambda kv: -kv[1]):
        print(f"  {phase:32s} {sec:8.1f} s")


if __name__ == "__main__":
    main()
