"""The claim catalogue: the papers and claims of every installed package, in report order.

A package adds papers and claims by declaring an entry point in the ``boundbench.claims``
group (``docs/your-own-paper.md``): a module whose import registers them
(:func:`boundbench.register_paper`, ``@claim``), or a function that does. boundbench's own four
papers come the same way, from its entry point ``builtin`` (:func:`builtin`). Loading imports
boundbench's entry point first, then the others by package name; a plugin that fails to load is
one line on stderr naming it (and kept in :data:`FAILED`), and what it had registered is taken
back, so the other papers still run.

The application layer is the only code that knows every package; the registry
(:mod:`boundbench.framework.registry`) knows none of them.
"""

from __future__ import annotations

import sys
from importlib import metadata

from boundbench.errors import InvalidArgument

GROUP = "boundbench.claims"
FAILED: list[str] = []  # one line per plugin that did not load
_LOADED: list[bool] = []

# boundbench's papers: key, title, citation
BUILTIN_PAPERS = (  # citations as CITATION.cff gives them (none where it gives no venue)
    ("fu", "Fu, So & Collier: A Stability Analysis of Fine-Tuning a Pre-Trained Model",
     ""),
    ("ad", "Activation Decay by Loss Smoothing to Enhance Generalization", ""),
    ("jachess", "Jukic & Snajder: From Robustness to Improved Generalization and Calibration in "
     "PLMs", ""),
    ("uegr", "Sun et al.: Unified Enhancement of Generalization and Robustness of LMs via "
     "Bi-Stage Optimization", ""),
    ("soudry", "Soudry et al. (2018): The Implicit Bias of Gradient Descent on Separable Data",
     "JMLR 19(70), 2018"),
)
CLAIM_MODULES: tuple[str, ...] = (
    "boundbench.theory.claims.fu_lemmas",
    "boundbench.theory.claims.ad_smoothing",
    "boundbench.theory.claims.uegr_thm1",
    "boundbench.theory.claims.ad_layers",
    "boundbench.theory.claims.jachess",
    "boundbench.theory.claims.uegr_regularizer",
    "boundbench.synthetic.claims.fu_sweeps",
    "boundbench.synthetic.claims.fu_heads",
    "boundbench.synthetic.claims.fu_quadratics",
    "boundbench.synthetic.claims.fu_hard_margin",
    "boundbench.synthetic.claims.fu_soft_margin",
    "boundbench.synthetic.claims.implicit_bias",
    "boundbench.synthetic.claims.smoothing",
    "boundbench.synthetic.claims.jachess_mlp",
    "boundbench.plm.claims.features",
    "boundbench.plm.claims.stability",
    "boundbench.plm.claims.smoothing",
)


def builtin() -> None:
    """boundbench's own entry point (``builtin``): register its papers and import its claim
    modules, in report order."""
    from boundbench.framework import registry

    for key, title, citation in BUILTIN_PAPERS:
        registry.register_paper(key, title, citation=citation)
    registry.load(CLAIM_MODULES)


def _entry_points() -> list[metadata.EntryPoint]:
    """The ``boundbench.claims`` entry points: boundbench's own first, then by package and
    name. Run from a source tree with no installed metadata, boundbench's own is made here,
    the same ``builtin``."""
    eps = list(metadata.entry_points(group=GROUP))

    def dist(ep: metadata.EntryPoint) -> str:
        return ep.dist.name if ep.dist is not None else ""

    own = [ep for ep in eps if dist(ep) == "boundbench"]
    if not own:
        own = [metadata.EntryPoint("builtin", "boundbench.catalogue:builtin", GROUP)]
    others = sorted((ep for ep in eps if dist(ep) != "boundbench"),
                    key=lambda ep: (dist(ep), ep.name))
    return [*own, *others] if plugins_wanted() else own


def plugins_wanted() -> bool:
    """Whether installed plugins load: ``BOUNDBENCH_PLUGINS=none`` keeps to boundbench's own
    papers (its test suite sets it, so a plugin installed in the same environment changes
    none of boundbench's checks); unset or ``all``, every installed one loads."""
    import os

    value = os.environ.get("BOUNDBENCH_PLUGINS", "all")
    if value not in ("all", "none"):
        raise InvalidArgument(f"BOUNDBENCH_PLUGINS must be 'all' or 'none' (got {value!r})")
    return value == "all"


def _load_one(ep: metadata.EntryPoint) -> None:
    from boundbench.framework import registry

    package = ep.dist.name if ep.dist is not None else "boundbench"
    try:
        with registry.loading(package):
            if ep.attr:
                ep.load()()
            else:
                registry.load([ep.module])
    except (Exception, SystemExit) as exc:  # a plugin's bug, clash or sys.exit at import:
        # one line, the others still load (a SystemExit must not end every command, issue 65)
        if package == "boundbench":
            raise
        why = " ".join(f"{type(exc).__name__}: {exc}".split())
        line = (f"boundbench: plugin {ep.name!r} of package {package!r} did not load "
                f"({ep.value}): {why}")
        FAILED.append(line)
        print(line, file=sys.stderr)


def load() -> None:
    """Load every installed paper and claim (once): boundbench's, then each plugin's.

    Returns
    -------
    None
        The registry then holds every claim: boundbench's papers through its own entry point
        ``builtin``, then each installed plugin's (``docs/your-own-paper.md``).

    References
    ----------
    ``boundbench.claims`` entry points (PyPA entry-points specification).

    Examples
    --------
    >>> import boundbench as bb
    >>> bb.load_claims()
    >>> "fu.lemma-a.1.2" in bb.claims()
    True
    """
    if _LOADED:
        return
    _LOADED.append(True)
    for ep in _entry_points():
        _load_one(ep)


def registry():
    """Every registered claim by id, in report order (loads the catalogue first).

    Returns
    -------
    dict of str to Claim
        Claim id -> :class:`~boundbench.framework.registry.Claim` (paper, where, statement,
        equation, kind, the check, its search, its package).

    Examples
    --------
    >>> import boundbench as bb
    >>> c = bb.claims()["ad.thm2"]
    >>> (c.paper, c.kind, c.package)
    ('ad', 'bound', 'boundbench')
    """
    from boundbench.framework import registry as _registry

    load()
    return _registry.registry()


def expand(ids: list[str]) -> list[str]:
    """Claim ids from ``ids``, where a paper's key stands for all its claims (``--only fu``),
    in report order; an id or key that is neither is refused by name."""
    from boundbench.framework import registry as _registry

    reg = registry()
    out: list[str] = []
    for i in ids:
        if i in _registry.papers():
            out += [c for c, cl in reg.items() if cl.paper == i and c not in out]
        elif i in reg:
            out += [] if i in out else [i]
        else:
            raise InvalidArgument(f"unknown claim id {i!r}, and no paper has that key; "
                                  "`boundbench claims` lists them")
    return out
