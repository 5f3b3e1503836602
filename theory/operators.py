"""The Hessian as an operator: :class:`HessianOperator` wraps a scalar loss of a chosen subset of
a model's parameters (e.g. only the last layer ``W^(L)``) and gives its Hessian-vector products
through ``torch.func``; the estimators in :mod:`.eigenvalues` and :mod:`.trace` work on its
``matvec`` alone (the operator-apart-from-algorithm split of curvlinops, Dangel et al.).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import torch
from torch.func import functional_call, grad, jvp, vmap

from boundbench.errors import InvalidArgument
from boundbench.framework.inputs.validate import Array
from boundbench.theory._inputs import call_naming


def _split_params(model: torch.nn.Module, names: list[str] | None):
    """``(chosen, fixed)`` parameter dicts: the named ones (default all) and the rest, detached."""
    full = dict(model.named_parameters())
    if names is not None and not (isinstance(names, list | tuple)
                                  and all(isinstance(n, str) for n in names)):
        raise InvalidArgument(f"names must be a list of parameter names, or None for all (got "
                        f"{names!r})")
    if names is not None and not names:  # [] used to mean "all", silently
        raise InvalidArgument("names must name at least one parameter (None: all of them)")
    names = list(full) if names is None else list(names)
    unknown = set(names) - set(full)
    if unknown:
        raise InvalidArgument(f"names must be parameters of the model; unknown: {sorted(unknown)}")
    fixed = {k: v.detach() for k, v in full.items() if k not in names}
    return {k: full[k] for k in names}, fixed


def _try_loss(loss: Callable[[Mapping[str, torch.Tensor]], torch.Tensor],
               params: Mapping[str, torch.Tensor], name: str, inputs: torch.Tensor) -> None:
    """Evaluate the loss once, at construction: an input of the wrong width or dtype for the
    model is named here (torch's "mat1 and mat2 shapes cannot be multiplied" at the first
    Hessian product used to be the message, issue 65), and the loss must be a scalar."""
    with torch.no_grad():
        value = call_naming(loss, params, failed=f"the model fails on {name} of shape "
                            f"{tuple(inputs.shape)} and dtype {inputs.dtype} (is it the input "
                            "the model expects?)")
    if not (isinstance(value, torch.Tensor) and value.numel() == 1):
        raise InvalidArgument(f"the loss must be a scalar tensor (got "
                              f"{getattr(value, 'shape', type(value).__name__)})")


class HessianOperator:
    """The Hessian of ``loss(model(batch), batch)`` w.r.t. the parameters named in ``params``.

    ``loss_fn(params: dict[str, Tensor]) -> scalar`` is built from ``model`` with
    :func:`torch.func.functional_call`; parameters not named stay fixed at their values. Vectors
    are flat, in the order of ``names``. A list of ``(weight, loss)`` pairs gives full-dataset
    HVPs batch by batch (:meth:`for_batches`).

    Parameters
    ----------
    loss : callable or list of (float, callable)
        ``loss(params) -> scalar`` of a dict of named tensors, or weighted per-batch losses.
    params : mapping of str to torch.Tensor
        The parameters the Hessian is taken in, at the point of evaluation.

    References
    ----------
    B. A. Pearlmutter, Fast exact multiplication by the Hessian, Neural Computation 6 (1994);
    the operator/algorithm split of curvlinops (F. Dangel et al.).

    Examples
    --------
    >>> import torch
    >>> d = torch.arange(1.0, 31.0, dtype=torch.float64)
    >>> op = HessianOperator(lambda p: 0.5 * (d * p["w"] ** 2).sum(),
    ...                      {"w": torch.zeros(30, dtype=torch.float64)})
    >>> op.dim
    30
    >>> op.n_matvecs  # none spent yet
    0
    """

    def __init__(
        self,
        loss: Callable[[Mapping[str, torch.Tensor]], torch.Tensor]
        | list[tuple[float, Callable[[Mapping[str, torch.Tensor]], torch.Tensor]]],
        params: Mapping[str, torch.Tensor],
    ) -> None:
        # a list of (weight, loss) pairs is a loss over batches: H v = sum_b weight_b H_b v,
        # one batch in memory at a time
        parts = loss if isinstance(loss, list) else [(1.0, loss)]
        self._parts = [(float(w), grad(f)) for w, f in parts]
        self.loss = (lambda p: sum(w * f(p) for w, f in parts)) if isinstance(loss, list) else loss
        self.names = list(params)
        self.params = {k: p.detach() for k, p in params.items()}
        self.shapes = [p.shape for p in self.params.values()]
        self.sizes = [p.numel() for p in self.params.values()]
        self.dim = int(sum(self.sizes))
        ref = next(iter(self.params.values()))
        self.dtype, self.device = ref.dtype, ref.device
        self.n_matvecs = 0

    @classmethod
    def for_model(
        cls,
        model: torch.nn.Module,
        loss_of_output: Callable[[torch.Tensor], torch.Tensor],
        inputs: torch.Tensor,
        *,
        names: list[str] | None = None,
    ) -> HessianOperator:
        """Hessian of ``loss_of_output(model(inputs))`` w.r.t. the parameters ``names``
        (default: all); the rest of the model is held fixed."""
        if not isinstance(inputs, torch.Tensor):  # a numpy array failed at the first product
            raise InvalidArgument(f"inputs must be a torch.Tensor (got {type(inputs).__name__})")
        Array()("inputs", inputs)  # NaN inputs would give a NaN Hessian, silently
        chosen, fixed = _split_params(model, names)

        def loss(p: Mapping[str, torch.Tensor]) -> torch.Tensor:
            return loss_of_output(functional_call(model, {**fixed, **p}, (inputs,)))

        _try_loss(loss, chosen, "inputs", inputs)
        return cls(loss, chosen)

    @classmethod
    def for_batches(
        cls,
        model: torch.nn.Module,
        loss_fn: Callable[[torch.Tensor, torch.Tensor], torch.Tensor],
        batches: list[tuple[torch.Tensor, torch.Tensor]],
        *,
        names: list[str] | None = None,
    ) -> HessianOperator:
        """Full-dataset Hessian of the mean ``loss_fn(model(x), y)`` over ``batches`` of
        ``(x, y)``, weighted by batch size; HVPs visit one batch at a time."""
        chosen, fixed = _split_params(model, names)
        total = sum(len(x) for x, _ in batches)
        if batches:
            x0, y0 = batches[0]
            _try_loss(lambda p: loss_fn(functional_call(model, {**fixed, **p}, (x0,)), y0),
                      chosen, "batches[0]'s x", x0)

        def part(x: torch.Tensor, y: torch.Tensor):
            return lambda p: loss_fn(functional_call(model, {**fixed, **p}, (x,)), y)

        return cls([(len(x) / total, part(x, y)) for x, y in batches], chosen)

    def _unflatten(self, v: torch.Tensor) -> dict[str, torch.Tensor]:
        parts = torch.split(v, self.sizes)
        return {k: p.view(s) for k, p, s in zip(self.names, parts, self.shapes, strict=True)}

    def matvec(self, v: torch.Tensor) -> torch.Tensor:
        """``H v`` by forward-over-reverse differentiation (one jvp of the gradient)."""
        self.n_matvecs += 1
        tangent = self._unflatten(v.to(self.dtype))
        out: Any = 0.0  # a sum of tensors
        for w, g in self._parts:
            hv = jvp(g, (self.params,), (tangent,))[1]
            out = out + w * torch.cat([hv[k].reshape(-1) for k in self.names])
        return out

    def matmat(self, V: torch.Tensor) -> torch.Tensor:
        """``H V^T`` for a batch of vectors ``V (m, dim)``, as one vmapped HVP: ``(m, dim)``."""
        self.n_matvecs += V.shape[0]

        out: Any = 0.0  # a sum of tensors
        for w, g in self._parts:
            def one(v: torch.Tensor, g=g) -> torch.Tensor:
                hv = jvp(g, (self.params,), (self._unflatten(v),))[1]
                return torch.cat([hv[k].reshape(-1) for k in self.names])

            out = out + w * vmap(one)(V.to(self.dtype))
        return out

    def dense(self) -> torch.Tensor:
        """The full Hessian matrix (``dim`` matvecs): for tests and small problems."""
        return self.matmat(torch.eye(self.dim, dtype=self.dtype, device=self.device)).T
