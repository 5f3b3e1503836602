"""The stability grid on a real encoder: the grid as a frozen config and its tasks
(``experiments``, with the bundled sweeps in ``sweeps/``), running its cells, resumable,
serially or on Dask (``cells``), reading its results table (``results``), every method against
a baseline (``comparison``), adding seeds until a paired test decides (``sequential``), ``plm
run`` and ``plm sweep`` as library calls (``runs``), the grid's figure (``figures``) and the
committed per-seed records a grid continues from (``records``)."""

# the public submodules (tests/test_public_api.py checks it)
__all__ = ["cells", "comparison", "experiments", "figures", "records", "results", "runs",
           "sequential"]
