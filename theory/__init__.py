"""Bounds and lemmas of the four papers as functions, and the claims registry that checks them.

Modules: :mod:`theory.stability_bounds` (Fu et al.), :mod:`theory.smoothing` (activation decay),
:mod:`theory.masked_gradient` (UEGR), :mod:`theory.registry` (registry), :mod:`theory.verdicts`.
"""

from boundbench.theory._meta import version

__version__ = version()
