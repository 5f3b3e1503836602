"""boundbench: the theory of fine-tuning stability and loss smoothing, put to the test.

Layers, each importing only those below it (an import-linter contract in ``pyproject.toml``):

* ``boundbench.cli``, ``boundbench.audit``, ``boundbench.catalogue`` — the application: the
  command line, the audit report and the list of modules that register claims;
* :mod:`boundbench.plm` — pretrained transformers (folder ``plm/``);
* :mod:`boundbench.synthetic` — separable data, exact SVMs, GD heads, MLPs (folder
  ``synthetic/``);
* :mod:`boundbench.theory` — the bounds, the estimators and the claims registry (folder
  ``theory/``).
"""

from pathlib import Path as _Path

# In a source checkout the layer folders sit beside this one (setuptools maps them onto
# boundbench.* when it installs); a plain `pip install .` run from the checkout's root would
# otherwise import this folder without its subpackages.
_root = _Path(__file__).resolve().parent.parent
if (_root / "pyproject.toml").is_file() and (_root / "theory" / "registry.py").is_file():
    __path__.append(str(_root))  # noqa: F821 - the package's own __path__

from boundbench.theory._meta import version as _version  # noqa: E402 - after the path

__version__ = _version()
