"""The claim catalogue: the papers and claims of every installed package, in report order.

A package adds papers and claims by declaring an entry point in the ``boundbench.claims``
group (``docs/your-own-paper.md``): a module whose import registers them
(:func:`boundbench.register_paper`, ``@claim``), or a function that does. boundbench's own papers
come the same way, one entry point each (``fu = "boundbench.papers.fu"``, :mod:`boundbench.papers`).
Loading imports boundbench's entry points first, in report order, then the others by package
name; a plugin that fails to load is one line on stderr naming it (and kept in :data:`FAILED`),
and what it had registered is taken back, so the other papers still run.

The application layer is the only code that knows every package; the registry
(:mod:`boundbench.framework.claims.registry`) knows none of them.
"""

from __future__ import annotations

import sys
from importlib import metadata

from boundbench.errors import InvalidArgument

GROUP = "boundbench.claims"
FAILED: list[str] = []  # one line per plugin that did not load
_LOADED: list[bool] = []


def _entry_points() -> list[metadata.EntryPoint]:
    """The ``boundbench.claims`` entry points: boundbench's own first, in report order
    (:data:`boundbench.papers.BUILTIN`), then the others by package and name. Run from a source
    tree with no installed metadata, boundbench's own are made here, the same ones."""
    from boundbench.papers import BUILTIN

    eps = list(metadata.entry_points(group=GROUP))

    def dist(ep: metadata.EntryPoint) -> str:
        return ep.dist.name if ep.dist is not None else ""

    own = [ep for ep in eps if dist(ep) == "boundbench"]
    if not own:
        own = [metadata.EntryPoint(k, f"boundbench.papers.{k}", GROUP) for k in BUILTIN]
    own.sort(key=lambda ep: BUILTIN.index(ep.name) if ep.name in BUILTIN else len(BUILTIN))
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


TRIAL_SECONDS = 120  # a plugin's import in a child may take this long before it is skipped
_TRIAL = """
import sys
from importlib import metadata
from boundbench.framework.claims import registry
name, value, group, package = sys.argv[1:5]
ep = metadata.EntryPoint(name, value, group)
try:
    with registry.loading(package):
        ep.load()() if ep.attr else registry.load([ep.module])
except BaseException:  # what Python raises is the parent's to say, in its one line
    pass
"""


def _ends_its_process(ep: metadata.EntryPoint, package: str) -> str | None:
    """Why loading ``ep`` would end the process, or ``None``: it is first loaded in a child
    (issue 84: a plugin calling ``os._exit`` at import ended every command, ``claims`` listing
    nothing, unsaid). An exit status other than 0 is the child ended by the plugin itself
    (``os._exit``, a crash, a signal); past :data:`TRIAL_SECONDS` it hangs."""
    import os
    import subprocess

    env = {**os.environ, "BOUNDBENCH_PLUGINS": "none"}
    try:
        r = subprocess.run([sys.executable, "-c", _TRIAL, ep.name, ep.value, GROUP, package],
                           env=env, capture_output=True, timeout=TRIAL_SECONDS)
    except subprocess.TimeoutExpired:
        return f"its import did not finish in {TRIAL_SECONDS} s"
    if r.returncode == 0:
        return None
    how = (f"signal {-r.returncode}" if r.returncode < 0 else f"exit status {r.returncode}")
    return f"its import ends the process ({how}), so it was loaded in a child first"


def _load_one(ep: metadata.EntryPoint) -> None:
    from boundbench.framework.claims import registry

    package = ep.dist.name if ep.dist is not None else "boundbench"
    ended = None if package == "boundbench" else _ends_its_process(ep, package)
    if ended is not None:
        line = (f"boundbench: plugin {ep.name!r} of package {package!r} skipped "
                f"({ep.value}): {ended}")
        FAILED.append(line)
        print(line, file=sys.stderr)
        return
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
        The registry then holds every claim: boundbench's papers through its own entry points
        (one per paper), then each installed plugin's (``docs/your-own-paper.md``).

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
        Claim id -> :class:`~boundbench.framework.claims.registry.Claim` (paper, where, statement,
        equation, kind, the check, its search, its package).

    Examples
    --------
    >>> import boundbench as bb
    >>> c = bb.claims()["ad.thm2"]
    >>> (c.paper, c.kind, c.package)
    ('ad', 'bound', 'boundbench')
    """
    from boundbench.framework.claims import registry as _registry

    load()
    return _registry.registry()


def expand(ids: list[str]) -> list[str]:
    """Claim ids from ``ids``, where a paper's key stands for all its claims (``--only fu``),
    in report order; an id or key that is neither is refused by name."""
    from boundbench.framework.claims import registry as _registry

    reg = registry()
    out: list[str] = []
    for i in ids:
        if i in _registry.papers():
            out += [c for c, cl in reg.items() if cl.paper == i and c not in out]
        elif i in reg:
            out += [] if i in out else [i]
        else:
            import difflib

            near = difflib.get_close_matches(i, [*reg, *_registry.papers()], n=3, cutoff=0.75)
            hint = f" (did you mean {' or '.join(map(repr, near))}?)" if near else ""
            raise InvalidArgument(f"unknown claim id {i!r}, and no paper has that key{hint}; "
                                  "`boundbench claims` lists them")
    return out
