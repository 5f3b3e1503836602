"""Search and characterization of a bound: the targeted search for its worst case
(:mod:`.targeted`) and the verdict it decides (:mod:`.verdict`), how badly and where it fails
(:mod:`.characterize`, :mod:`.region`, :mod:`.structure`) and the standalone replay of a
violation (:mod:`.replay`, from the sources in :mod:`boundbench.framework.replays`)."""

# the public submodules (tests/test_public_api.py checks it)
__all__ = ["characterize", "region", "replay", "structure", "targeted", "verdict"]
