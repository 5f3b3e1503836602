"""Property-based tests of bounds, for anyone: public hypothesis strategies for the papers'
instance families (:mod:`.strategies`), the :func:`bound` decorator that searches them for the
worst ``lhs / rhs`` with ``hypothesis.target``, and a pytest plugin that prints how close every
bound came to failing. Needs the ``testing`` extra (``pip install "boundbench[testing]"``).

::

    from boundbench.testing import bound, strategies as bst

    @bound(bst.separable_datasets(n=(10, 200), d=(2, 10), margin=(0.05, 1.0), bound=(1.0, 5.0)))
    def my_claim(data):
        ...
        return lhs, rhs  # the claim lhs <= rhs; arrays count their worst element
"""

from boundbench.testing import strategies
from boundbench.testing.bound import BoundViolation, Tightness, bound, tightness_table

__all__ = [
    # property-test a bound
    "bound", "BoundViolation", "strategies",
    # how close each came to failing
    "Tightness", "tightness_table",
    # the pytest plugin, its own module (as hypothesis.extra.pytestplugin)
    "plugin",
]
