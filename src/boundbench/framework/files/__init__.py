"""What reaches the disk: crash-safe, hash-checked files (:mod:`.atomic`), the one gate from
report data to written text (:mod:`.escape`), the provenance every result records
(:mod:`.meta`) and the figure conventions (:mod:`.plotting`)."""

# the public submodules (tests/test_public_api.py checks it)
__all__ = ["atomic", "escape", "meta", "plotting"]
