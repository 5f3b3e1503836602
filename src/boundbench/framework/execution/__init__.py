"""Where and how a check runs: its context (:mod:`.context`: seed, scale, output folder) and
the named scales it reads (:mod:`.profiles`), seed-only draws (:mod:`.draws`), the serial and
Dask executors (:mod:`.executors`), its time limit (:mod:`.time_limit`) and SIGTERM answered
as a Ctrl-C (:mod:`.interrupts`)."""

# the public submodules (tests/test_public_api.py checks it)
__all__ = ["context", "draws", "executors", "interrupts", "profiles", "time_limit"]
