"""The framework every layer builds on, and knows nothing of the papers, in rooms by job (each
imports only the rooms below it; the import contract in ``pyproject.toml`` keeps it so):

- :mod:`.claims`: the claims registry, the papers, what a check returns and writes;
- :mod:`.search` and :mod:`.stats`: a bound's search and characterization; the statistics of
  effect claims (trends, bands, calibration, confidence sequences, decisions);
- :mod:`.certificates`: interval proofs of ``holds`` and their certificate levels;
- :mod:`.execution` and :mod:`.verdicts`: the context a check runs in and where it runs; the
  verdict rules and their combinations;
- :mod:`.files` and :mod:`.inputs`: crash-safe files, escaping, provenance and figures; the
  declared input checks and the assumption-space boxes;
- :mod:`.replays`: the standalone replays' sources, copied into scripts, importing nothing.

The bottom layer of the package's import contract."""

# the public submodules (what `from ... import *` imports; tests/test_public_api.py checks it)
__all__ = [
    "certificates", "claims", "execution", "files", "inputs", "replays", "search", "stats", "verdicts",
]
