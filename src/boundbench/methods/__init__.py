"""The method interface, its own layer between ``theory`` and ``synthetic``: what a method is
(:class:`Method`, :class:`Combined`), what a trainer gives it (:class:`Trainer`,
:data:`CAPABILITIES`, the batch's :class:`Forward`), optimizer wrappers
(:class:`MethodOptimizer`), and the string edge (:class:`MethodCatalogue`, :func:`split_spec`).
The concrete methods live with the trainers that run them: ``boundbench.synthetic`` (MHLoss, SAM,
activation decay, ...) and ``boundbench.plm`` (JACHESS, UEGR, SURT, ...)."""

from boundbench.methods._catalogue import MethodCatalogue, split_spec
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

__all__ = [
    # what a method is
    "Method", "Combined",
    # what a trainer gives it
    "Trainer", "CAPABILITIES", "Forward",
    # optimizer wrappers
    "MethodOptimizer", "make_optimizer", "optimizer_report", "per_model",
    # names and specs
    "MethodCatalogue", "split_spec",
]
