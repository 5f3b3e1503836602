"""The framework every layer builds on, and knows nothing of the papers: the claims registry and
its check context, verdict rules (bounds in ``verdicts``, trends in ``trends``, verdicts
over readings in ``readings``), the targeted search and the characterization beyond its
box, argument specs, crash-safe files, Dask
execution, plotting and report helpers. The bottom layer of the import contract."""

# the public submodules (what `from ... import *` imports; tests/test_public_api.py checks it)
__all__ = [
    "bands", "calibrated", "calibration", "certification", "characterize", "context", "decisions", "draws",
    "escape", "exact_trends", "execution", "files", "forms", "identity", "interrupts", "intervals",
    "limits", "meta",
    "outcome", "outputs", "papers", "plotting", "procedures", "profiles", "proofs", "readings", "region",
    "registry", "replay",
    "replays", "reports", "search", "search_verdict", "sequential", "sizes", "stopping", "structure",
    "symbolic", "time_limit", "trends", "ufuncs", "user_proofs", "validate", "values",
    "verdicts",
]
