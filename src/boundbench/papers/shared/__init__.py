"""Helpers that claims of more than one paper share: the smoothness papers' fine-tuning grid and
GD's implicit bias. They register no claim."""

# the public submodules (tests/test_public_api.py checks it)
__all__ = ["implicit_bias", "smoothing_grid"]
