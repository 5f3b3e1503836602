"""boundbench: the theory of fine-tuning stability and loss smoothing, put to the test.

Layers, each importing only those below it (an import-linter contract in ``pyproject.toml``):

* ``boundbench.cli``, ``boundbench.audit``, ``boundbench.errata``, ``boundbench.catalogue`` —
  the application: the command line, the audit report and the list of claim modules;
* :mod:`boundbench.plm` — pretrained transformers (folder ``plm/``);
* :mod:`boundbench.synthetic` — separable data, exact SVMs, GD heads, MLPs (folder
  ``synthetic/``);
* :mod:`boundbench.theory` — the bounds and the estimators (folder ``theory/``);
* :mod:`boundbench.framework` — the claims registry, verdicts, search, files and execution.

``src/boundbench/{theory,synthetic,plm}`` are symbolic links to the project's
top-level folders, so the package is a plain directory tree to Python, setuptools and type
checkers alike.
"""

from boundbench.framework.meta import version as _version

__version__ = _version()
