"""Claims and what a check of one returns: the registry every bound and effect is entered in
(:mod:`.registry`), the papers they come from (:mod:`.sources`), what a claim's definition holds
and its check returns (:mod:`.outcome`), the endings bound checks share (:mod:`.endings`) and
what running a claim writes beside its verdict (:mod:`.outputs`). The top room of the framework:
the registry runs a claim's check, its search and its characterization (the rooms below)."""

# the public submodules (tests/test_public_api.py checks it)
__all__ = ["endings", "outcome", "outputs", "registry", "sources"]
