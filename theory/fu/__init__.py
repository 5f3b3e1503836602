"""Fu, So & Collier, *A Stability Analysis of Fine-Tuning a Pre-Trained Model*.

Right sides of the theorems and both sides of the lemmas, as numpy-broadcasting functions.
Notation follows the paper: head ``w = [v, b]`` on augmented features ``[x, -1]``, so the
classifier is ``sign(v^T x - b)``; ``B`` bounds ``||x_i||``; ``gamma`` is the hard-margin SVM
margin ``1 / ||v_hat||``; ``n`` the sample count; ``lam`` the soft-margin weight.

The theorems with "some constants C, lambda, nu" (2.4, 2.5, 3.1) cannot be falsified as a
whole; their explicit pieces can, and those are what this module gives.

Names, in every theory module: the paper's label, then what the function returns.
``<label>_sides`` returns both sides, a :class:`~boundbench.framework.verdicts.rules.BoundSides`,
computed from your own arrays (pass it to :func:`~boundbench.framework.verdicts.rules.bound_verdict`);
``<label>_rhs`` returns the right side, to compare with a left side you measured;
``<label>_term`` / ``_factor`` / ``_rate`` the explicit piece of a theorem whose constants the
paper leaves unspecified. ``boundbench claims --functions`` maps claim ids to these functions.
"""

from boundbench.theory.fu._lemmas import (
    lemma_a12_sides,
    lemma_a13_sides,
    lemma_a21_sides,
    lemma_a23_sides,
    lemma_a51_sides,
)
from boundbench.theory.fu._theorems import (
    cor25_second_term,
    cor31_head_factor,
    lemma_a25_rhs,
    thm22_appendix_rhs,
    thm22_main_rhs,
    thm24_direction_rate,
    thm24_second_term,
)

__all__ = [
    # Theorem 2.2: full fine-tuning by GD, both forms
    "thm22_main_rhs", "thm22_appendix_rhs",
    # Theorem 2.4, Corollary 2.5, Corollary 3.1: head tuning, soft margins, heads
    "thm24_second_term", "thm24_direction_rate", "lemma_a25_rhs", "cor25_second_term",
    "cor31_head_factor",
    # the appendix lemmas, both sides
    "lemma_a12_sides", "lemma_a13_sides", "lemma_a21_sides", "lemma_a23_sides",
    "lemma_a51_sides",
]

# one public home: claims, reports and pickles name boundbench.theory.fu.<function>
for _name in __all__:
    globals()[_name].__module__ = __name__
del _name
