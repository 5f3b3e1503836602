#!/usr/bin/env bash
# The checks of a lent GPU, as one prepared run (the device tool's `run`, timeout_s 600):
#   bash benchmarks/gpu_checks.sh [AUDIT_BUDGET]      (default 3m; everything under $OUT)
# 1. install: offline from what benchmarks/gpu_pack.sh packed (.gpu/b, and call 1's /tmp/gpu-a),
#    else from the registry (CUDA torch, the package, the offline model and data);
# 2. pytest -m gpu (the CUDA loop, seeds at once within a tolerance);
# 3. seeds at once against a Trainer (issue 66: examples/s at S = 1, 4, 16, 64, the ratio);
# 4. the budgeted standard audit of the five fine-tuning claims undecided at the last record,
#    continuing their per-seed records (docs/seeds, issue 85) and adding the seeds it trains.
# Seven files come back: install, pytest-gpu, seeds-at-once, audit (.txt), audit.md, audit.json
# and seeds.tgz (docs/seeds after the audit: unpack it over the checkout and commit it).
# Each step has its own time limit, so that a slow one leaves the next its time (PYTEST_LIMIT,
# SEEDS_LIMIT, AUDIT_LIMIT in seconds; GPU_CLAIMS narrows the audit to the claims that fit).
set -u -o pipefail
out=${OUT:-/tmp/gpu-checks}
mkdir -p "$out"
budget=${1:-3m}
source benchmarks/gpu_install.sh
timeout ${PYTEST_LIMIT:-150} python3 -m pytest -q -m gpu tests/test_plm_gpu.py -p no:cacheprovider 2>&1 \
  | tail -15 | tee "$out/pytest-gpu.txt"
timeout ${SEEDS_LIMIT:-180} python3 benchmarks/bench_plm_train.py --only-seeds --device cuda --steps 20 \
  --seeds 1 4 16 64 --trainer-seeds 2 2>&1 | grep -v -i warn | tee "$out/seeds-at-once.txt"
# the audit's many files stay on the machine (at most 8 files come back): its report and record do
timeout ${AUDIT_LIMIT:-330} boundbench audit --scale standard --budget "$budget" --out /tmp/gpu-audit \
  --seed-records docs/seeds \
  --only ${GPU_CLAIMS:-fu.plm.sample-ratio-std jachess.plm.calibration uegr.plm.robustness \
  fu.plm.mhloss-std jachess.plm.robustness} 2>&1 | tail -25 | tee "$out/audit.txt"
cp /tmp/gpu-audit/audit.md /tmp/gpu-audit/audit.json "$out/" 2>/dev/null || true
tar czf "$out/seeds.tgz" docs/seeds 2>/dev/null || true
