import os

import pytest
from hypothesis import HealthCheck, settings

# CI runs a fixed example sequence so that a red build can be reproduced exactly.
settings.register_profile("default", deadline=None, max_examples=60,
                          suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("ci", parent=settings.get_profile("default"), derandomize=True)
settings.load_profile("ci" if os.environ.get("CI") else "default")


@pytest.fixture(scope="session")
def readme_audit(tmp_path_factory):
    """The README's main command, run once per test session in a scratch folder: the folder
    (its ``figures/``) and the command's stdout and stderr. Under pytest-xdist the first
    worker that asks runs it and the others wait for it and read the same folder (a file
    lock in the session's shared temporary directory), so the suite runs it once."""
    import json
    import subprocess

    from filelock import FileLock
    from test_readme import RUN_BY_TEST_CLI, as_here

    shared = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        shared = shared.parent  # the directory every worker's base sits in
    root = shared / "readme-audit"
    with FileLock(str(shared / "readme-audit.lock")):
        done = root / "result.json"
        if not done.exists():
            root.mkdir(exist_ok=True)
            res = subprocess.run(as_here(RUN_BY_TEST_CLI[0]), cwd=root, capture_output=True,
                                 text=True, timeout=1800)
            done.write_text(json.dumps({"returncode": res.returncode, "stdout": res.stdout,
                                        "stderr": res.stderr}))
    return root, json.loads(done.read_text())


if os.environ.get("PYTEST_XDIST_WORKER"):
    # pytest -n N: each worker gets its share of the cores for torch's own threads, so N
    # workers do not oversubscribe them (subprocesses a test starts choose their own)
    import torch

    from boundbench.framework.execution import cores

    torch.set_num_threads(max(1, cores() // int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))))
