"""The public face (issue 42): ``boundbench`` re-exports the names a user needs with a grouped
``__all__``, and every package of the library declares ``__all__``, equal to its public names:
the public attributes it binds (re-exports) and its public submodules. What a user may import is
then written down in one place per package, and a name added or dropped without it fails here."""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import subprocess
import sys

import pytest

import boundbench

PACKAGES = ["boundbench", "boundbench.framework", "boundbench.framework.stats.decisions", "boundbench.methods", "boundbench.testing",
            "boundbench.theory", "boundbench.synthetic", "boundbench.plm", "boundbench.plm.training",
            "boundbench.plm.methods", "boundbench.plm.grid", "boundbench.plm.evaluation",
            "boundbench.papers",
            "boundbench.papers.fu", "boundbench.papers.ad", "boundbench.papers.jachess",
            "boundbench.papers.uegr", "boundbench.papers.soudry", "boundbench.papers.shared",
            "boundbench.report"]


def _public(pkg) -> set[str]:
    """The names a package makes public: its public non-module attributes (after resolving the
    lazy ones of ``__all__``) and its public submodules."""
    for name in getattr(pkg, "__all__", []):
        if not hasattr(pkg, name):  # a submodule not imported yet
            importlib.import_module(f"{pkg.__name__}.{name}")
    # its own submodules count below (a module re-exported from elsewhere counts here); names
    # that are no identifiers are pytest's assertion-rewriting helpers
    attrs = {n for n, v in vars(pkg).items()
             if n.isidentifier() and not n.startswith("_") and n != "annotations"
             and not (inspect.ismodule(v) and v.__name__.rpartition(".")[0] == pkg.__name__)}
    subs = {m.name for m in pkgutil.iter_modules(pkg.__path__) if not m.name.startswith("_")}
    if pkg.__name__ == "boundbench":  # the application's modules and the layers are not re-exports
        subs = set()
    return attrs | subs


@pytest.mark.parametrize("name", PACKAGES)
def test_every_package_declares_all_equal_to_its_public_names(name):
    if name.startswith("boundbench.plm"):
        pytest.importorskip("transformers", reason="install the plm extra (README)")
    pkg = importlib.import_module(name)
    assert hasattr(pkg, "__all__"), f"{name} declares no __all__"
    assert len(pkg.__all__) == len(set(pkg.__all__)), f"{name}.__all__ lists a name twice"
    assert set(pkg.__all__) == _public(pkg), name


def test_the_top_level_face_is_about_twenty_names_that_resolve():
    pytest.importorskip("transformers", reason="METHODS is every method, the plm extra's too")
    assert 15 <= len(boundbench.__all__) <= 30
    for name in boundbench.__all__:
        assert getattr(boundbench, name) is not None, name
    assert set(boundbench.__all__) <= set(dir(boundbench))
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        boundbench.nope  # noqa: B018


def test_the_face_decides_a_claim_and_a_bound_on_its_own():
    bb = boundbench
    bb.load_claims()
    # a holding claim that runs in a second (ad.thm2's took 8 s)
    assert bb.run_claim("ad.gelu-lipschitz", bb.CheckContext(seed=0)).verdict.status == "holds"
    v = bb.bound_verdict(bb.BoundSides([0.5, 1.0], [1.0, 1.0]))
    assert v.status == "holds" and v.status in bb.STATUSES
    assert bb.SYNTHETIC_METHODS.parse("sam:rho=0.1").rho == 0.1


def test_a_context_takes_its_folder_as_a_string_and_refuses_what_is_no_path(tmp_path):
    """``CheckContext(out_dir="figures")`` writes there as with a ``Path`` (a string reached
    the writers as a ``str`` and failed with an AttributeError), and a value that is no path is
    refused by name."""
    bb = boundbench
    bb.load_claims()
    ctx = bb.CheckContext(out_dir=str(tmp_path / "figs"))
    assert ctx.out_dir == tmp_path / "figs"
    bb.run_claim("ad.gelu-lipschitz", ctx)  # any claim: a cheap one (ad.thm2's took 16 s)
    assert (tmp_path / "figs" / "ad.gelu-lipschitz.png").stat().st_size > 0
    for bad in ("", 3, ["figs"]):
        with pytest.raises(ValueError, match="out_dir must be None or a non-empty path"):
            bb.CheckContext(out_dir=bad)


def test_a_public_name_survives_the_import_of_the_application_modules():
    """A lazy name that is also a submodule's would be rebound to the module when the command
    line imports it: none is."""
    import boundbench.audit  # noqa: F401
    import boundbench.cli  # noqa: F401
    import boundbench.falsify  # noqa: F401

    for name in boundbench.__all__:
        module, _ = boundbench._PUBLIC[name]
        assert f"boundbench.{name}" != module and not inspect.ismodule(
            getattr(boundbench, name)) or name == "strategies", name


def test_importing_boundbench_imports_no_layer():
    """The re-exports are lazy: ``import boundbench`` loads neither torch nor any layer (the
    command line sets Hugging Face's offline mode before anything imports the hub)."""
    code = ("import sys, boundbench; "
            "print(sorted(m for m in sys.modules if m.startswith(('torch', 'transformers', "
            "'boundbench.plm', 'boundbench.synthetic', 'boundbench.theory'))))")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "[]", r.stdout
