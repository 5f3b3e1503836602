"""Which claims the test suite audits afresh, and how a test over many claims is split.

The README's main command audits all 61 claims (about 8 minutes of 2 cores, ``readme_audit``):
two thirds of what the whole suite may take (12 minutes, issue 83). The suite's default run
audits instead :data:`SMALL_AUDIT`, the cheap claims that between them give every verdict, every
paper, every replay family and every certificate level (``small_audit``; 191 s of one worker in
the suite at ``d7f2c84``, 120 s alone at ``e2fbfb5``, docs/results-log.md); a test over every
claim runs the others behind ``slow`` (:func:`cheap_first`), and a test over an audit's folder
runs on the small audit by default and on the whole one behind ``slow`` (the ``audit_run``
fixture). ``pytest -m slow`` runs what the default leaves.
"""

from __future__ import annotations

import pytest

SMALL_AUDIT = (
    # Activation Decay: an equality proven on its box, a bound violated (GELU's slope replay),
    # one violated at the search's worst (the MLP Hessian replay), a trend supported, holding
    # bounds proven on the whole domain, given a stated lemma and not provable by the method
    "ad.gelu-lipschitz", "ad.gelu-contractant", "ad.fig1a", "ad.last-layer-hessian", "ad.thm1.block",
    "ad.thm3.not-a-bound", "ad.thm2", "ad.thm1.block.as-written",
    # Fu et al.: the three PEP lemmas, interval-proven and SVM bounds, a violated SVM bound (the
    # leave-one-out replay) and equality, Thm 2.2's two forms (a reading decided by a replay),
    # a trend supported, the fine-tuning grid's smoke run and a claim that shares it
    "fu.lemma-a.1.2", "fu.lemma-a.1.3", "fu.lemma-a.5.1", "fu.lemma-a.2.1", "fu.lemma-a.2.4.v",
    "fu.lemma-a.2.5.proof-step", "fu.thm2.4.svm-limit", "fu.thm2.2.main", "fu.thm2.2.appendix",
    "fu.fig6.n", "fu.plm.mhloss-std", "fu.plm.surt-distance",
    # JacHess, Soudry et al., UEGR: a smoke run on the smoothing grid (the other papers' smoke
    # runs on it share its runs: behind slow), a supported rate, a contradicted trend, an
    # equality that depends on its reading, a bound proven
    "jachess.plm.calibration", "soudry.direction-rate", "uegr.mask-sign", "uegr.eq13.masks",
    "uegr.eq13.upper-bound", "uegr.gradient-penalty",
)


def cheap_first(rows):
    """``rows`` (claim ids, or tuples whose first item is one) as pytest parameters: a claim of
    :data:`SMALL_AUDIT` as it is, the others marked ``slow`` (they need the whole audit)."""
    out = []
    for row in rows:
        cid = row if isinstance(row, str) else row[0]
        args = (row,) if isinstance(row, str) else tuple(row)
        out.append(row if cid in SMALL_AUDIT else pytest.param(*args, marks=pytest.mark.slow))
    return out
