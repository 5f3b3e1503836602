"""boundbench claims for Hardt, Recht & Singer (2016); importing :mod:`boundbench_hrs.claims`
(the ``boundbench.claims`` entry point) registers them."""
