"""Evaluation beyond accuracy: calibration (Brier, 8-bin ECE, reliability diagrams), robustness
to Gaussian embedding noise and to token corruption, layer-wise linear CKA between two encoders,
and the head's Hessian against the activation-decay erf bound on real features.

JACHESS §2.4/§2.6 and UEGR Fig. 2 define what is measured; the exact
forms the papers leave open are stated per function.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from boundbench.errors import InvalidArgument
from boundbench.framework.inputs.validate import Array, Float, Int, IntSeq, Tensor, checked


def _labels_for(logits: torch.Tensor, y: Any) -> torch.Tensor:
    """``y`` as class indices, one per row of ``logits`` and each in ``[0, classes)``."""
    y = y if isinstance(y, torch.Tensor) else torch.as_tensor(np.asarray(y))
    if y.shape != logits.shape[:1] or y.dtype.is_floating_point and bool(
            torch.any(y != y.round())):
        raise InvalidArgument(f"y must hold one integer label per row of logits (got shape "
                              f"{tuple(y.shape)} for logits {tuple(logits.shape)})")
    y = y.long()
    if bool(torch.any((y < 0) | (y >= logits.shape[-1]))):
        raise InvalidArgument(f"y must lie in [0, {logits.shape[-1]}) for {logits.shape[-1]} classes")
    # checked where it was given, returned where the logits are (a CPU y against CUDA logits
    # fails in every comparison that follows)
    return y.to(logits.device)


@checked(logits=Tensor(ndim=2), y=Array(ndim=1), n_bins=Int(1))
def calibration(logits: torch.Tensor, y: torch.Tensor, *, n_bins: int = 8) -> dict[str, float]:
    """Brier score and ``n_bins``-bin expected calibration error (torchmetrics, equal-width bins,
    L1) of softmax confidences. Brier: ``mean (y - p_1)^2`` for two classes (JACHESS's code),
    ``mean sum_c (p_c - 1[y = c])^2`` otherwise."""
    from torchmetrics.functional.classification import binary_calibration_error, multiclass_calibration_error

    if logits.shape[-1] < 2:
        raise InvalidArgument(f"logits must have a column per class, at least 2 (got shape "
                              f"{tuple(logits.shape)})")
    y = _labels_for(logits, y)
    p = torch.softmax(logits.float(), -1)
    c = p.shape[-1]
    if c == 2:
        brier = float((y.float() - p[:, 1]).pow(2).mean())
        # a contiguous copy: torchmetrics warns on every call for the column view p[:, 1]
        ece = float(binary_calibration_error(p[:, 1].contiguous(), y, n_bins=n_bins, norm="l1"))
    else:
        onehot = torch.nn.functional.one_hot(y, c).float()
        brier = float((p - onehot).pow(2).sum(-1).mean())
        ece = float(multiclass_calibration_error(p, y, num_classes=c, n_bins=n_bins, norm="l1"))
    return {"brier": brier, "ece": ece}


@checked(logits=Tensor(ndim=2), y=Array(ndim=1), n_bins=Int(1))
@checked(logits=Tensor(ndim=2), y=Array(ndim=1), n_bins=Int(1),
         needs=lambda a: 8.0 * 4 * a["n_bins"])  # four arrays of a float64 per bin
def reliability(logits: torch.Tensor, y: torch.Tensor, *, n_bins: int = 8) -> dict[str, np.ndarray]:
    """Reliability-diagram data for the positive class (binary; JACHESS Fig. 2): per equal-width
    bin of ``p_1``, the mean predicted probability, the fraction of positives and the count."""
    if logits.shape[-1] != 2:
        raise InvalidArgument(f"logits: reliability diagrams here are binary (got "
                              f"{logits.shape[-1]} classes)")
    yy = _labels_for(logits, y).numpy()
    p = torch.softmax(logits.float(), -1)
    p1 = p[:, 1].detach().numpy()
    b = np.minimum((p1 * n_bins).astype(int), n_bins - 1)
    count = np.bincount(b, minlength=n_bins)
    with np.errstate(invalid="ignore"):
        conf = np.bincount(b, p1, minlength=n_bins) / count
        frac = np.bincount(b, yy.astype(float), minlength=n_bins) / count
    return {"bin": np.arange(n_bins), "mean_predicted": conf, "fraction_positive": frac,
            "count": count}


@torch.no_grad()
def _accuracy(model, tok, texts, y, *, max_length, device, batch_size, perturb) -> float:
    from boundbench.plm.encode import sorted_batches

    model.eval()
    y = torch.as_tensor(np.asarray(y))
    correct = 0
    for rows, b in sorted_batches(tok, texts, max_length=max_length, batch_size=batch_size,
                                  device=device):
        logits = perturb(model, b).logits
        correct += int((logits.argmax(-1).cpu() == y[torch.as_tensor(rows)]).sum())
    return correct / len(texts)


def _clean_accuracy(logits: torch.Tensor, y: np.ndarray) -> float:
    """The accuracy of ``logits`` (in the texts' order) on labels ``y``, counted as
    :func:`noise_robustness` counts it (correct / n): its ``clean``."""
    y = torch.as_tensor(np.asarray(y))
    if logits.shape[0] != len(y):
        raise InvalidArgument(f"logits must have one row per label (got {logits.shape[0]} rows for "
                              f"{len(y)} labels)")
    return int((logits.argmax(-1).cpu() == y).sum()) / len(y)


def noise_robustness(model, tok, texts: list[str], y: np.ndarray, *, deltas=(0.0, 0.01, 0.05, 0.1),
                     max_length: int = 128, seed: int = 0, batch_size: int = 64,
                     device: str | torch.device = "cpu", clean: float | None = None
                     ) -> dict[float, float]:
    """Accuracy with the word embeddings perturbed, ``e' = e + delta v``, ``v ~ N(0, I)`` per
    entry (JACHESS §5.1), for each ``delta``; the same ``v`` for every delta (seeded).
    ``clean``: the unperturbed accuracy where the caller has it (correct / n of a
    :func:`~boundbench.plm.encode.forward_all` pass's logits), taken for ``delta = 0``, whose
    pass gives the same logits bit for bit (``e + 0 v`` is ``e``)."""
    if any(d < 0 for d in deltas):
        raise InvalidArgument(f"deltas must be >= 0 (got {deltas})")
    out = {}
    for d in deltas:
        if d == 0 and clean is not None:
            out[0.0] = clean
            continue
        gen = torch.Generator().manual_seed(seed)

        def perturb(m, b, d=d, gen=gen):
            e = m.embed(b["input_ids"])
            v = torch.randn(e.shape, generator=gen, dtype=e.dtype).to(e.device)
            return m(attention_mask=b["attention_mask"], inputs_embeds=e + d * v)

        out[float(d)] = _accuracy(model, tok, texts, y, max_length=max_length, device=device,
                                  batch_size=batch_size, perturb=perturb)
    return out


@checked(
    input_ids=Array(ndim=2), attention_mask=Array(ndim=2), rate=Float(0, 1), unk_id=Int(0),
    special_ids=IntSeq(0))
def corrupt_tokens(input_ids: torch.Tensor, attention_mask: torch.Tensor, *, rate: float,
                   unk_id: int, special_ids: list[int], generator: torch.Generator) -> torch.Tensor:
    """Replace a fraction ``rate`` of the real (non-special, non-padding) tokens of each
    sequence by ``unk_id`` (JACHESS §5.2), chosen uniformly without replacement."""
    if tuple(input_ids.shape) != tuple(attention_mask.shape):
        raise InvalidArgument(f"input_ids and attention_mask must have one shape (got "
                              f"{tuple(input_ids.shape)} and {tuple(attention_mask.shape)})")
    if not isinstance(generator, torch.Generator):
        raise InvalidArgument(f"generator must be a torch.Generator (got {type(generator).__name__})")
    ids = input_ids.clone()
    real = attention_mask.bool() & ~torch.isin(ids, torch.as_tensor(special_ids, device=ids.device))
    for i in range(ids.shape[0]):
        pos = real[i].nonzero()[:, 0]
        k = int(round(rate * len(pos)))
        if k:
            pick = pos[torch.randperm(len(pos), generator=generator)[:k].to(pos.device)]
            ids[i, pick] = unk_id
    return ids


def corruption_robustness(model, tok, texts: list[str], y: np.ndarray, *,
                          rates=(0.0, 0.05, 0.1, 0.15, 0.2), max_length: int = 128, seed: int = 0,
                          batch_size: int = 64, device: str | torch.device = "cpu",
                          clean: float | None = None) -> dict[float, float]:
    """Accuracy after replacing ``rate`` of the tokens by the tokenizer's unknown token;
    ``clean`` as in :func:`noise_robustness` (rate 0 corrupts nothing)."""
    if tok.unk_token_id is None:
        raise InvalidArgument("the tokenizer has no unknown token to corrupt with")
    out = {}
    for r in rates:
        if r == 0 and clean is not None:
            out[0.0] = clean
            continue
        gen = torch.Generator().manual_seed(seed)

        def perturb(m, b, r=r, gen=gen):
            ids = corrupt_tokens(b["input_ids"], b["attention_mask"], rate=r,
                                 unk_id=tok.unk_token_id, special_ids=tok.all_special_ids,
                                 generator=gen)
            return m(ids, b["attention_mask"])

        out[float(r)] = _accuracy(model, tok, texts, y, max_length=max_length, device=device,
                                  batch_size=batch_size, perturb=perturb)
    return out


@checked(X=Tensor(ndim=2), Y=Tensor(ndim=2))
def linear_cka(X: torch.Tensor, Y: torch.Tensor) -> float:
    """Linear CKA (Kornblith et al. 2019) of ``(n, p)`` and ``(n, q)`` representations:
    ``||Yc^T Xc||_F^2 / (||Xc^T Xc||_F ||Yc^T Yc||_F)`` with column-centred ``Xc, Yc``."""
    if X.shape[0] != Y.shape[0]:
        raise InvalidArgument(f"X and Y need the same number of rows (got {X.shape[0]}, {Y.shape[0]})")
    X = (X - X.mean(0)).double()
    Y = (Y - Y.mean(0)).double()
    return float((Y.T @ X).pow(2).sum() / ((X.T @ X).norm() * (Y.T @ Y).norm()))


def layer_representations(model, tok, texts: list[str], *, max_length: int = 128,
                          batch_size: int = 64, device: str | torch.device = "cpu"
                          ) -> list[torch.Tensor]:
    """The pooled output of the embedding layer and of every block, ``(n, hidden)`` each."""
    from boundbench.plm.encode import forward_all

    return forward_all(model, tok, texts, max_length=max_length, device=device,
                       batch_size=batch_size, hidden=True)["hidden"]


_PRE_REPS: dict = {}


def _pretrained_representations(name: str, num_labels: int, pooling: str, tok, texts, **kw):
    """:func:`layer_representations` of the pre-trained encoder: the same for every run of a
    grid, so computed once per texts and length (the last one kept)."""
    import hashlib

    key = (name, num_labels, pooling, kw.get("max_length"),
           hashlib.sha256("\x00".join(texts).encode()).hexdigest())
    if key not in _PRE_REPS:
        _PRE_REPS.clear()
        pre = _pretrained(name, num_labels, pooling).to(kw.get("device", "cpu"))
        _PRE_REPS[key] = layer_representations(pre, tok, texts, **kw)
    return _PRE_REPS[key]


def layer_cka(reps_a: list[torch.Tensor], reps_b: list[torch.Tensor]) -> list[float]:
    """Linear CKA between two models' pooled representations of the same texts, layer by layer
    (UEGR Fig. 2a: pre-trained vs fine-tuned; :func:`layer_representations` gives them)."""
    if len(reps_a) != len(reps_b):
        raise InvalidArgument(f"reps_a and reps_b must hold the same number of layers (got "
                              f"{len(reps_a)} and {len(reps_b)})")
    return [linear_cka(a, b) for a, b in zip(reps_a, reps_b, strict=True)]


def head_hessian(features: torch.Tensor, model, *, sigma: float = 0.0, n_mc: int = 400,
                 seed: int = 0) -> dict[str, float]:
    """Top eigenvalue of the mean CE Hessian w.r.t. the (mean) head ``W`` at the given features
    (activation decay's Fig. 1a quantity on real features), and with ``sigma > 0`` its
    Gaussian-smoothed value by Monte Carlo with confidence limits."""
    from boundbench.theory.activation_decay import last_layer_hessian, smoothed_last_layer_top_eig

    h = features.double()
    W = model.head_weight.detach().double().mean(0).cpu()
    hb = torch.cat([h, torch.ones(len(h), 1, dtype=h.dtype)], 1)  # the bias as a feature
    Wb = torch.cat([W, model.head_bias.detach().double().mean(0).cpu()[:, None]], 1)
    top = float(torch.linalg.eigvalsh(last_layer_hessian(hb, Wb))[-1])
    out = {"top_eig": top, "feature_norm_max": float(h.norm(dim=1).max())}
    if sigma > 0:
        est, lo, hi = smoothed_last_layer_top_eig(hb, Wb, sigma=sigma, n_mc=n_mc, seed=seed)
        out.update(smoothed_top_eig=est, smoothed_low=lo, smoothed_high=hi)
    return out


_PRETRAINED: dict = {}


def _pretrained(name: str, num_labels: int, pooling: str):
    key = (name, num_labels, pooling)
    if key not in _PRETRAINED:
        from boundbench.plm.models import load_classifier

        _PRETRAINED.clear()  # one pre-trained model in memory at a time
        _PRETRAINED[key] = load_classifier(name, num_labels=num_labels, pooling=pooling)[0]
    return _PRETRAINED[key]


def evaluate_run(grid, model, data, *, seed: int, out=None,
                 test_pass: dict | None = None) -> dict:
    """Every evaluation of one fine-tuned ``model`` on ``data``'s test split, as flat
    columns: reliability bins (JSON), accuracy under embedding noise and token corruption (and
    the drops ``acc(0) - mean acc(>0)``, where a level above 0 ran), layer-wise CKA to the
    pre-trained encoder, and the head's Hessian top eigenvalue and gradient norm at the test
    features. ``test_pass``: ``model``'s pass over the test split with its block outputs, as
    :func:`plm.encode.forward_all` gives it with ``hidden=True`` (``FinetuneResult.test_pass``);
    made here when not given."""
    import json

    from boundbench.plm.encode import forward_all
    from boundbench.plm.models import load_tokenizer

    ft = grid.finetune
    device = next(model.parameters()).device
    tok = load_tokenizer(ft.model)
    tx, ty = data.part("test")
    kw = {"max_length": ft.max_length, "device": device}
    row: dict = {}
    # one pass of the fine-tuned model gives the logits, the head's features and the CKA's
    # block outputs
    if test_pass is None:
        fwd = forward_all(model, tok, tx, hidden=True, **kw)
    elif len(test_pass["logits"]) != len(tx) or not test_pass.get("hidden"):
        raise InvalidArgument(f"test_pass must be forward_all(..., hidden=True) of the {len(tx)} test "
                              f"texts (got {len(test_pass['logits'])} rows"
                              f"{'' if test_pass.get('hidden') else ', no block outputs'})")
    else:
        fwd = test_pass
    logits = fwd["logits"]
    if logits.shape[-1] == 2:
        rel = reliability(logits, torch.as_tensor(ty))
        row["test_reliability"] = json.dumps({k: np.nan_to_num(v).tolist() for k, v in rel.items()})
    # the level-0 passes of the noise and the corruption give this pass's logits bit for bit
    # (test_plm_smoothness.py::test_robustness_probes_and_cka_on_the_real_model): two
    # forwards of the test texts fewer per run
    clean = _clean_accuracy(logits, ty)
    noise = noise_robustness(model, tok, tx, ty, deltas=grid.deltas, seed=seed, clean=clean, **kw)
    row.update({f"noise_acc_{d:g}": a for d, a in noise.items()})
    if 0.0 in noise and len(noise) > 1:  # a drop needs level 0 and a level above it
        row["noise_drop"] = noise[0.0] - float(np.mean([a for d, a in noise.items() if d > 0]))
    corr = corruption_robustness(model, tok, tx, ty, rates=grid.corruption_rates, seed=seed,
                                 clean=clean, **kw)
    row.update({f"corrupt_acc_{r:g}": a for r, a in corr.items()})
    if 0.0 in corr and len(corr) > 1:
        row["corrupt_drop"] = corr[0.0] - float(np.mean([a for r, a in corr.items() if r > 0]))
    pre = _pretrained_representations(ft.model, len(data.label_names), ft.pooling, tok, tx, **kw)
    cka = layer_cka(pre, fwd["hidden"])
    row.update({f"cka_layer_{k}": c for k, c in enumerate(cka)})
    row["cka_mean"] = float(np.mean(cka[1:]))  # the blocks (layer 0 is the embedding output)
    h = fwd["features"].double()
    hh = head_hessian(h, model)
    row.update(head_top_eig=hh["top_eig"], head_feature_norm_max=hh["feature_norm_max"])
    W = model.head_weight.detach().double().mean(0).cpu().requires_grad_(True)
    b = model.head_bias.detach().double().mean(0).cpu()
    ce = torch.nn.functional.cross_entropy(h @ W.T + b, torch.as_tensor(ty).long())
    (g,) = torch.autograd.grad(ce, W)
    row["head_grad_norm"] = float(g.norm())
    return row
