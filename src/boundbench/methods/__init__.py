"""The method interface, its own layer between ``theory`` and ``synthetic``: what a method is
(:class:`Method`, :class:`Combined`), what a trainer gives it (:class:`Trainer`,
:data:`CAPABILITIES`, the batch's :class:`Forward`), optimizer wrappers
(:class:`MethodOptimizer`), and the string edge (:class:`MethodNames`, :func:`split_spec`).
The model-agnostic methods live here too, in submodules imported on use: the penalties
(:mod:`boundbench.methods.penalties`: MHLoss, MMR, activation decay, the Jacobian penalty,
L2-to-init), the optimizer wrappers (:mod:`boundbench.methods.optimizers`: weight decay, SAM,
AD+SAM, the masked update) and their names (:mod:`boundbench.methods.names`); the methods
that need a transformer encoder are ``boundbench.plm``'s (JACHESS, UEGR, SURT, ...)."""

from boundbench.methods._interface import (
    CAPABILITIES,
    Combined,
    Forward,
    Method,
    MethodOptimizer,
    Trainer,
    make_optimizer,
    optimizer_report,
    per_model,
)
from boundbench.methods._names import MethodNames, split_spec

__all__ = [
    # what a method is
    "Method", "Combined",
    # what a trainer gives it
    "Trainer", "CAPABILITIES", "Forward",
    # optimizer wrappers
    "MethodOptimizer", "make_optimizer", "optimizer_report", "per_model",
    # names and specs
    "MethodNames", "split_spec",
    # the model-agnostic methods and their names (submodules, imported on use)
    "penalties", "optimizers", "names",
]
