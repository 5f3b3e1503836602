"""The GD step programs of :func:`~boundbench.synthetic.train.train_heads`, one chunk of datasets
at a time, every LOO replica and head at once: on the heads' coordinates (:func:`_gd_chunk`),
or in the span of the samples where they are fewer than the dimensions
(:func:`_gd_chunk_samples`, chosen by :func:`_sample_space`). The same heads in exact arithmetic;
``tests/test_train.py`` holds them together."""

from __future__ import annotations

import torch


def _neg_slope(neg_m: torch.Tensor, loss: str) -> torch.Tensor:
    """``-l'(m)`` of the per-sample loss of the margin ``m = y w^T x``, given ``-m`` (the caller
    negates the small heads, not the large margins: one pass over them fewer, and the same bits,
    since rounding is symmetric in sign), in place."""
    return neg_m.exp_() if loss == "exponential" else neg_m.sigmoid_()


# the augmented dimension is padded to a multiple of 4 (AVX2 holds 4 doubles), which timed
# faster in MKL's batched matmuls at Fig. 5's shapes (500 columns); the zero columns added stay
# zero (their gradient is sum_i s_i * 0), so the heads are those of the unpadded problem
_PAD = 4


def _column_rates(eta: torch.Tensor, n: int, R1: int) -> torch.Tensor:
    """Each column's step over its replica's sample count, ``eta / n_r`` ``(kc, 1, R1 * H)``:
    column ``r * H + h`` is head ``h`` of replica ``r`` (``n`` samples in replica 0, ``n - 1``
    in a LOO replica)."""
    kc, heads = eta.shape
    n_r = torch.full((R1,), float(n), dtype=eta.dtype, device=eta.device)
    n_r[1:] = n - 1
    return (eta[:, None, :] / n_r[None, :, None]).reshape(kc, 1, R1 * heads)


def _prefix_directions(W: torch.Tensor, cut: torch.Tensor) -> torch.Tensor:
    """Unit directions of the means of the first ``h`` heads, ``h - 1`` in ``cut``, of heads
    ``W (kc, D, R1, H)``, from one cumulative sum over heads: ``(kc, R1, len(cut), D)``."""
    csum = W.cumsum(-1).index_select(-1, cut)
    mean = (csum / (cut + 1).to(W.dtype)).permute(0, 2, 3, 1)
    return mean / torch.linalg.vector_norm(mean, dim=-1, keepdim=True)


def _gd_chunk(Xa, yy, W0, eta, *, loo, W_indep, loss, steps, rec, pre, slope_dtype):
    """GD of one chunk of datasets, every replica and head at once: the recorded directions of
    the mean of the first ``h`` heads for ``h`` in ``pre`` ``(kc, R1, len(pre), len(rec), D)``
    and the final heads ``(kc, R1, heads, D)``. ``W_indep``: the LOO replicas' own starts
    ``(kc, R1 - 1, heads, D)``, float64 on the CPU, or ``None`` (they start from ``W0``)."""
    dtype, dev = Xa.dtype, Xa.device
    kc, n, D = Xa.shape
    heads = W0.shape[1]
    R1 = loo.shape[1] + 1
    Dp = -(-D // _PAD) * _PAD
    mixed = slope_dtype != dtype
    # columns of Wt are (replica, head) pairs. A step is two batched matmuls over all n
    # samples, S = W Z^T and G^T = Z^T S^T (this layout, with D on the short side of the
    # output, times 1.3-1.5x faster than S = W Z^T, G = S Z: `bench_gd_heads.py` prints
    # both as bare matmuls), the left-out sample's term taken back out of a
    # LOO replica's columns (a rank-one correction on (D, rows)), and one scaling by
    # eta / n_r per column: no pass over the (rows, n) slopes beyond the logistic slope itself
    Z = torch.zeros(kc, n, Dp, dtype=dtype, device=dev)
    Z[..., :D] = yy[..., None] * Xa
    Zt = Z.transpose(1, 2).contiguous().to(slope_dtype)  # (kc, Dp, n)
    rows = R1 * heads
    scale = _column_rates(eta, n, R1)  # (kc, 1, rows)
    if R1 > 1:
        idx = torch.as_tensor(loo, device=dev).repeat_interleave(heads, 1)
        lo = idx[:, :, None]  # (kc, (R1-1)*H, 1): each LOO column's left-out sample
        zt_lo = Zt.gather(2, idx[:, None, :].expand(-1, Dp, -1))  # (kc, Dp, (R1-1)*H)
    Wt = torch.zeros(kc, Dp, R1, heads, dtype=dtype, device=dev)
    Wt[:, :D] = W0.transpose(1, 2)[:, :, None, :]
    if W_indep is not None:
        Wt[:, :D, 1:] = W_indep.permute(0, 3, 1, 2).to(dev, dtype)
    Wt = Wt.reshape(kc, Dp, rows)
    S = torch.empty(kc, rows, n, dtype=slope_dtype, device=dev)
    Gt = torch.empty(kc, Dp, rows, dtype=slope_dtype, device=dev)
    out = torch.empty(kc, R1, len(pre), len(rec), D, dtype=dtype, device=dev)
    cut = torch.as_tensor([h - 1 for h in pre], device=dev)
    j = 0
    for t in range(1, steps + 1):
        # slopes s_i = -l'(m_i), (kc, rows, n)
        Ws = Wt.to(slope_dtype).neg_() if mixed else Wt.neg()  # (Dp, rows): a small copy
        _neg_slope(torch.bmm(Ws.transpose(1, 2), Zt, out=S), loss)  # S = -margins first
        torch.bmm(Zt, S.transpose(1, 2), out=Gt)  # sum_i s_i z_i over every sample
        if R1 > 1:
            Gt[:, :, heads:].sub_(S[:, heads:].gather(-1, lo).transpose(1, 2) * zt_lo)
        # W -= eta * grad, grad = -(1/n_r) sum_{i kept} s_i z_i, accumulated in dtype; a
        # product then a sum, since addcmul_'s scalar tail (the last elements of each
        # thread's share) rounded otherwise than its vector body: bits followed threads
        Wt.add_((Gt.to(dtype) if mixed else Gt) * scale)
        if j < len(rec) and t == rec[j]:
            out[:, :, :, j] = _prefix_directions(Wt[:, :D].view(kc, D, R1, heads), cut)
            j += 1
    return out, Wt[:, :D].view(kc, D, R1, heads).permute(0, 2, 3, 1)


def _sample_space(n: int, D: int, dtype: torch.dtype, slope_dtype: torch.dtype) -> bool:
    """Whether :func:`train_heads` runs GD in the span of the samples (:func:`_gd_chunk_samples`)
    rather than on the heads' coordinates (:func:`_gd_chunk`): where fewer samples ``n`` than
    1.5 times the augmented dimension ``D`` make a step's ``n^2`` multiply-adds per column
    cheaper than the coordinate form's ``2 n D`` (frozen encoder features: ``D = 385``, padded
    to 388, ``n = 100``: 7.8x fewer; Fig. 5's ``D = 6`` never), and in one precision (mixed
    slopes keep the coordinate form, whose tolerance :func:`train_heads` states)."""
    return dtype == slope_dtype and 2 * n < 3 * D


def _gd_chunk_samples(Xa, yy, W0, eta, *, loo, W_indep, loss, steps, rec, pre):
    """:func:`_gd_chunk` in the span of the samples, the same heads in exact arithmetic.

    Every GD step adds a combination of the rows ``z_i = y_i [x_i, -1]`` of ``Z`` to a head, so
    ``W_t = W_0 + Z^T A_t`` with coefficients ``A (kc, n, rows)``: a step is one batched matmul
    of the Gram matrix ``K = Z Z^T`` for the margins, ``m = Z W_0 + K A``, then ``A += (eta /
    n_r) s`` with the left-out sample's coefficient held at 0 in its replica's columns (the
    coordinate form subtracts its term instead). Heads are formed only at the recorded steps.
    The rounding differs from the coordinate form's (agreement to ~1e-12 relative,
    ``tests/test_train.py``); the bits do not depend on the thread count (product, then sum)."""
    dtype, dev = Xa.dtype, Xa.device
    kc, n, D = Xa.shape
    heads = W0.shape[1]
    R1 = loo.shape[1] + 1
    rows = R1 * heads
    Z = yy[..., None] * Xa  # (kc, n, D)
    Zt = Z.transpose(1, 2).contiguous()  # (kc, D, n)
    K = torch.bmm(Z, Zt)  # (kc, n, n)
    W0c = W0.transpose(1, 2)[:, :, None, :].expand(kc, D, R1, heads).clone()
    if W_indep is not None:
        W0c[:, :, 1:] = W_indep.permute(0, 3, 1, 2).to(dev, dtype)
    W0c = W0c.reshape(kc, D, rows)  # column r * heads + h: replica r's head h
    M0 = torch.bmm(Z, W0c)  # the starting margins (kc, n, rows)
    # eta / n_r per column, 0 on each LOO column's left-out sample
    rate = _column_rates(eta, n, R1).expand(kc, n, rows).clone()
    if R1 > 1:
        idx = torch.as_tensor(loo, device=dev).repeat_interleave(heads, 1)  # (kc, (R1-1)*H)
        rate[:, :, heads:].scatter_(1, idx[:, None, :], 0.0)
    A = torch.zeros(kc, n, rows, dtype=dtype, device=dev)
    M = torch.empty(kc, n, rows, dtype=dtype, device=dev)
    out = torch.empty(kc, R1, len(pre), len(rec), D, dtype=dtype, device=dev)
    cut = torch.as_tensor([h - 1 for h in pre], device=dev)

    def heads_now() -> torch.Tensor:
        return (W0c + torch.bmm(Zt, A)).view(kc, D, R1, heads)

    j = 0
    for t in range(1, steps + 1):
        torch.bmm(K, A, out=M)
        _neg_slope(M.add_(M0).neg_(), loss)  # s_i = -l'(m_i)
        A.add_(M * rate)  # a product, then a sum (see _gd_chunk)
        if j < len(rec) and t == rec[j]:
            out[:, :, :, j] = _prefix_directions(heads_now(), cut)
            j += 1
    return out, heads_now().permute(0, 2, 3, 1)
