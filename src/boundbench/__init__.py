"""boundbench: the theory of fine-tuning stability and loss smoothing, put to the test.

The names a user needs, from one place (each is imported on first use, so ``import boundbench``
stays cheap and sets nothing in the process)::

    import boundbench as bb

    bb.load_claims()
    print(bb.run_claim("ad.thm2", bb.CheckContext(seed=0)).verdict.status)  # holds
    sam = bb.METHODS.parse("sam:rho=0.1")  # every method, by name or spec

Layers, each importing only those below it (an import-linter contract in ``pyproject.toml``):

* ``boundbench.cli``, ``boundbench.audit``, :mod:`boundbench.report`, ``boundbench.catalogue``
  — the application: the command line, the audit, its report and the claim catalogue;
* :mod:`boundbench.papers` — the papers' claims, one package per paper (leaves: nothing below
  imports them);
* :mod:`boundbench.plm` — pretrained transformers (folder ``plm/``);
* :mod:`boundbench.synthetic` — separable data, exact SVMs, GD heads, MLPs (folder
  ``synthetic/``);
* :mod:`boundbench.methods` — the method interface both trainers share;
* :mod:`boundbench.theory` — the bounds and the estimators (folder ``theory/``);
* :mod:`boundbench.framework` — the claims registry, verdicts, search, files and execution;
* :mod:`boundbench.errors` — the exceptions and the commands' exit statuses (imports nothing).

``src/boundbench/{theory,synthetic,plm}`` are symbolic links to the project's
top-level folders, so the package is a plain directory tree to Python, setuptools and type
checkers alike.
"""

from __future__ import annotations

import importlib as _importlib

TYPE_CHECKING = False  # not ``typing``'s: importing typing is most of this package's import time
if TYPE_CHECKING:
    from typing import Any as _Any
del TYPE_CHECKING

# (``__version__`` too is read on first use: the console script's first statement imports this
# package, and a Ctrl-C in what it imports would be a traceback before boundbench could answer it)

# public name -> (module, attribute): the public face over the layers (as scikit-learn
# re-exports from private modules), imported lazily (PEP 562) so that the command line can set
# Hugging Face's offline mode before anything imports the hub
_PUBLIC: dict[str, tuple[str, str]] = {
    # claims: load them, run one, run an audit, add one
    "load_claims": ("boundbench.catalogue", "load"),
    "claims": ("boundbench.catalogue", "registry"),
    "run_claim": ("boundbench.framework.claims.registry", "run"),
    "CheckContext": ("boundbench.framework.execution.context", "CheckContext"),
    "Outcome": ("boundbench.framework.claims.registry", "Outcome"),
    "claim": ("boundbench.framework.claims.registry", "claim"),
    "register_paper": ("boundbench.framework.claims.sources", "register_paper"),
    "Search": ("boundbench.framework.search.targeted", "Search"),
    "run_audit": ("boundbench.audit", "run_audit"),
    # verdicts: decide a bound or an effect on your own numbers
    "BoundSides": ("boundbench.framework.verdicts.rules", "BoundSides"),
    "Verdict": ("boundbench.framework.verdicts.rules", "Verdict"),
    "STATUSES": ("boundbench.framework.verdicts.rules", "STATUSES"),
    "bound_verdict": ("boundbench.framework.verdicts.rules", "bound_verdict"),
    "equality_verdict": ("boundbench.framework.verdicts.rules", "equality_verdict"),
    "trend_verdict": ("boundbench.framework.stats.trends", "trend_verdict"),
    "paired_trend_verdict": ("boundbench.framework.stats.trends", "paired_trend_verdict"),
    "readings_verdict": ("boundbench.framework.verdicts.readings", "readings_verdict"),
    # decisions: two methods' per-seed results, a claim, a word valid at any look
    "decide": ("boundbench.framework.stats.decisions", "decide"),
    # methods: the interface and the catalogues (synthetic; every method, needs the plm extra)
    "Method": ("boundbench.methods", "Method"),
    "SYNTHETIC_METHODS": ("boundbench.methods.names", "METHODS"),
    "METHODS": ("boundbench.plm.methods", "METHODS"),
    # testing: property-test a bound, search one for its worst case
    "bound": ("boundbench.testing", "bound"),
    "strategies": ("boundbench.testing", "strategies"),
    "tightness_table": ("boundbench.testing", "tightness_table"),
    # (not ``falsify``: that is the module's name, which its import would rebind)
    "search_worst_case": ("boundbench.falsify", "falsify"),
    # errors: what boundbench raises, and what its commands return
    "BoundbenchError": ("boundbench.errors", "BoundbenchError"),
    "InvalidArgument": ("boundbench.errors", "InvalidArgument"),
    "ClaimError": ("boundbench.errors", "ClaimError"),
    "ComputationError": ("boundbench.errors", "ComputationError"),
    "ExitCode": ("boundbench.errors", "ExitCode"),
}

__all__ = [
    # claims
    "load_claims", "claims", "run_claim", "CheckContext", "Outcome", "claim", "register_paper",
    "Search", "run_audit",
    # verdicts
    "BoundSides", "Verdict", "STATUSES", "bound_verdict", "equality_verdict", "trend_verdict",
    "paired_trend_verdict", "readings_verdict",
    # decisions
    "decide",
    # methods
    "Method", "SYNTHETIC_METHODS", "METHODS",
    # testing
    "bound", "strategies", "tightness_table", "search_worst_case",
    # errors
    "BoundbenchError", "InvalidArgument", "ClaimError", "ComputationError", "ExitCode",
]

# checked at import, as Hypothesis checks its own: the grouped list and the table agree
if sorted(__all__) != sorted(_PUBLIC):  # pragma: no cover - a maintainer's slip
    raise ImportError(f"boundbench.__all__ and its table disagree: "
                      f"{sorted(set(__all__) ^ set(_PUBLIC))}")


def __getattr__(name: str) -> _Any:
    if name == "__version__":
        from boundbench.framework.files.meta import version

        globals()[name] = value = version()
        return value
    if name in _PUBLIC:
        module, attr = _PUBLIC[name]
        value = getattr(_importlib.import_module(module), attr)
        globals()[name] = value  # imported once
        return value
    raise AttributeError(f"module 'boundbench' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
