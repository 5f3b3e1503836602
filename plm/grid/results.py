"""Reading a grid's results table: which runs trained (a run that still predicts the majority
class is no evidence about a method) and a method's change against another, paired by seed.
``plm run``'s comparison, the sequential tests and the fine-tuning claims read runs the same
way."""

from __future__ import annotations

import numpy as np
import pandas as pd

TRAINED_MIN = 0.05  # test F1 and MCC below this: the run still predicts (nearly) one class


def did_not_train(df: pd.DataFrame) -> pd.Series:
    """Runs that never left the majority-class predictor (test F1 or MCC below
    :data:`TRAINED_MIN`): they are no evidence about a method."""
    return (df.test_f1 < TRAINED_MIN) | (df.test_mcc < TRAINED_MIN)


def paired(df: pd.DataFrame, col: str, a: str, b: str) -> np.ndarray:
    """``col`` of method ``a`` minus method ``b``, paired by seed, over the seeds where both
    runs trained (:func:`did_not_train`)."""
    ok = df[~did_not_train(df)]
    pa = ok[ok.method == a].set_index("seed")[col]
    pb = ok[ok.method == b].set_index("seed")[col]
    common = pa.index.intersection(pb.index).sort_values()  # seed order: a sequence's order
    diff = (pa.loc[common] - pb.loc[common]).to_numpy(dtype=float)
    return diff[np.isfinite(diff)]  # a metric a run could not measure (NaN) is no evidence
