"""The papers' results as functions, one module per paper (:mod:`.fu`, :mod:`.activation_decay`,
:mod:`.uegr`; JACHESS's are the norm estimators), the curvature estimators grouped by task
(:mod:`.operators`, :mod:`.eigenvalues`, :mod:`.trace`, :mod:`.norms`), test problems with known
constants (:mod:`.problems`). The checks that hold them against measurement are the
papers' claims (:mod:`boundbench.papers`)."""

# the public submodules (what `from ... import *` imports; tests/test_public_api.py checks it)
__all__ = [
    "activation_decay", "eigenvalues", "fu", "norms", "operators", "pep", "pep_certificates",
    "problems",
    "trace", "uegr",
]
