"""The framework every layer builds on, and knows nothing of the papers: the claims registry and
its check context, verdict rules, the targeted search, argument specs, crash-safe files, Dask
execution, plotting and report helpers. The bottom layer of the import contract."""

# the public submodules (what `from ... import *` imports; tests/test_public_api.py checks it)
__all__ = [
    "bands", "draws", "execution", "files", "meta", "plotting", "registry", "reports", "search",
    "sequential", "validate", "verdicts",
]
