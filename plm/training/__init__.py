"""Fine-tuning a pretrained transformer: the loop every method shares (``train``: one run, and
seeds one after another), seeds at once in one batched program (``batched``, with ``seeded``'s
dropout drawn from (seed, step) alone), and what both share (``steps``: the config, the result,
the batches and the metrics). CUDA when present, CPU otherwise, float32."""

# the public submodules (tests/test_public_api.py checks it)
__all__ = ["batched", "seeded", "steps", "train"]
