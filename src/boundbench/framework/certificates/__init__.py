"""Certificates of ``holds``: interval branch-and-bound proofs in ball arithmetic
(:mod:`.proofs`) on the interval vocabulary (:mod:`.intervals`, :mod:`.symbolic`,
:mod:`.ufuncs`), the identities they rest on (:mod:`.identity`), sympy's cancellation-free forms
and a user's own bound (:mod:`.forms`, :mod:`.user_proofs`), and the typed levels every holding
bound carries (:mod:`.levels`)."""

# the public submodules (tests/test_public_api.py checks it)
__all__ = ["forms", "identity", "intervals", "levels", "proofs", "symbolic", "ufuncs", "user_proofs"]
