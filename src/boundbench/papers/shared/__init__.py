"""Helpers that claims of more than one paper share: the endings of every claim on a real encoder
(``fine_tuning``: a cached grid, paired verdicts, the smoke run, the paired-claim factory;
``bounded``: the verdicts and seed projections of bounded metrics), the smoothness papers'
fine-tuning grid and GD's implicit bias. They register no claim."""

# the public submodules (tests/test_public_api.py checks it)
__all__ = ["bounded", "fine_tuning", "implicit_bias", "recorded", "smoothing_grid"]
