"""Mapped functions on torch tensors: each a torch custom op, ``<namespace>::<name>``
(``torch.library.custom_op``), registered the first time torch tensors reach it, with a fake
(shape) implementation for ``torch.compile`` and, for a differentiable one, autograd through a
second op, ``<name>_vjp``, that runs the generated backward entry. Importing a generated
module never imports torch; this module is only imported once torch tensors were passed.

CPU tensors go through NumPy views of their memory (lavapipe or any device: the call copies
in and out as for arrays); CUDA tensors go to the wrappers as they are (``slangrt._cuda``:
shared memory or pooled copies, ordered with torch's stream), their outputs made by torch.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

import numpy as np

from ._mapped import Param, Spec, _alloc, _array, _broadcast, check_element, forward, gradients, tangent

__all__ = ["call", "jvp", "vjp"]

_lock = threading.Lock()
_ops: dict[tuple[str, str], Any] = {}  # (namespace, name) -> (op, its vjp op or None)


def _torch() -> Any:
    import torch

    return torch


def _dtype(torch: Any, p: Param) -> Any:
    return getattr(torch, np.dtype(p.dtype).name)


def _device(values: Sequence[Any]) -> Any:
    torch = _torch()
    return next(v.device for v in values if isinstance(v, torch.Tensor))


def _tensor(spec: Spec, p: Param, value: Any, device: Any) -> Any:
    """``value`` as a torch tensor of ``p``'s dtype on ``device`` (a number or array converted;
    a tensor of another dtype or device is an error naming the argument)."""
    torch = _torch()
    if np.dtype(p.dtype).names is not None:
        raise TypeError(
            f"{spec.name}(): parameter `{p.name}` is a struct, which torch tensors cannot hold; pass "
            "NumPy structured arrays or slangrt.Tensors"
        )
    want = _dtype(torch, p)
    if isinstance(value, torch.Tensor):
        if value.dtype != want or value.device != device:
            raise TypeError(
                f"{spec.name}(): argument `{p.name}` is a {value.dtype} tensor on {value.device}; "
                f"expected {want} on {device}"
            )
        check_element(spec.name, p, tuple(value.shape))
        return value
    return torch.as_tensor(_array(spec.name, p, value), device=device)


def _run_args(values: Sequence[Any]) -> tuple[list[Any], Any]:
    """What the wrappers are given for tensors ``values`` (NumPy views of CPU ones), and how the
    outputs are made (as arrays or tensors of the same device)."""
    torch = _torch()
    device = values[0].device
    if device.type == "cpu":
        return [v.detach().contiguous().numpy() for v in values], _alloc(False)  # (0-d stays 0-d)

    def alloc(shape: tuple[int, ...], dtype: str) -> Any:
        return torch.empty(shape, dtype=getattr(torch, np.dtype(dtype).name), device=device)

    return [v.detach().contiguous() for v in values], alloc


def _as_torch(x: Any) -> Any:
    torch = _torch()
    return x if isinstance(x, torch.Tensor) else torch.from_numpy(np.asarray(x))


def _schema(spec: Spec) -> str:
    args = ", ".join(f"Tensor {p.name}" for p in spec.params)
    outs = "Tensor" if len(spec.outputs) == 1 else "(" + ", ".join(["Tensor"] * len(spec.outputs)) + ")"
    return f"({args}) -> {outs}"


def _shape(spec: Spec, tensors: Sequence[Any]) -> tuple[int, ...]:
    return _broadcast(spec.name, spec.params, tensors)


def _register(spec: Spec) -> Any:
    torch = _torch()
    name = spec.name

    def impl(*tensors: Any) -> Any:
        values, alloc = _run_args(tensors)
        made = [_as_torch(x) for x in forward(spec, values, alloc)]
        return made[0] if len(made) == 1 else tuple(made)

    op = torch.library.custom_op(f"{spec.namespace}::{name}", impl, mutates_args=(), schema=_schema(spec))

    def fake(*tensors: Any) -> Any:
        shape = _shape(spec, tensors)
        dev = tensors[0].device
        made = [torch.empty(shape + p.shape, dtype=_dtype(torch, p), device=dev) for p in spec.outputs]
        return made[0] if len(made) == 1 else tuple(made)

    op.register_fake(fake)
    if spec.backward is None:

        def none(ctx: Any, *grads: Any) -> Any:
            raise RuntimeError(
                f"{name} has no derivatives (hatch-slang makes them for a [Differentiable] function of "
                "in parameters with a differentiable return value): detach its inputs, or make it one"
            )

        op.register_autograd(none, setup_context=lambda ctx, inputs, output: None)
        return op, None

    def vjp_impl(*tensors: Any) -> Any:
        values, alloc = _run_args(tensors)
        grads = gradients(spec, values[:-1], values[-1], alloc)
        return [_as_torch(g) for g in grads if g is not None]  # (one per differentiable parameter)

    args = ", ".join([*(f"Tensor {p.name}" for p in spec.params), "Tensor grad_output"])
    vjp_op = torch.library.custom_op(
        f"{spec.namespace}::{name}_vjp", vjp_impl, mutates_args=(), schema=f"({args}) -> Tensor[]"
    )

    def vjp_fake(*tensors: Any) -> Any:
        return [torch.empty_like(t) for t, d in zip(tensors[:-1], spec.grads, strict=True) if d]

    vjp_op.register_fake(vjp_fake)

    def setup(ctx: Any, inputs: tuple[Any, ...], output: Any) -> None:
        ctx.save_for_backward(*inputs)

    def backward(ctx: Any, grad: Any) -> tuple[Any, ...]:
        got = iter(vjp_op(*ctx.saved_tensors, grad.contiguous()))
        return tuple(next(got) if d else None for d in spec.grads)

    op.register_autograd(backward, setup_context=setup)
    return op, vjp_op


def _op(spec: Spec) -> tuple[Any, Any]:
    key = (spec.namespace, spec.name)
    got: tuple[Any, Any] | None = _ops.get(key)
    if got is None:
        with _lock:
            got = _ops.get(key)
            if got is None:
                got = _ops[key] = _register(spec)
    return got


def call(spec: Spec, args: Sequence[Any], out: Any) -> Any:
    """``spec``'s op over ``args`` (numbers and arrays become tensors on the tensors' device)."""
    if out is not None:
        raise TypeError(f"{spec.name}(): `out=` is for arrays; with torch tensors, use the result")
    device = _device(args)
    tensors = [_tensor(spec, p, v, device) for p, v in zip(spec.params, args, strict=True)]
    op, _ = _op(spec)
    return op(*tensors)


def vjp(spec: Spec, args: Sequence[Any], grad_output: Any) -> tuple[Any, ...]:
    """The gradients (``_mapped.vjp``) as torch tensors, through the op's vjp op."""
    device = _device([*args, grad_output])
    tensors = [_tensor(spec, p, v, device) for p, v in zip(spec.params, args, strict=True)]
    result = spec.outputs[0]
    g = _tensor(spec, Param("grad_output", result.dtype, result.shape), grad_output, device)
    _, vjp_op = _op(spec)
    got = iter(vjp_op(*tensors, g))
    return tuple(next(got) if d else None for d in spec.grads)


def jvp(spec: Spec, args: Sequence[Any], tangents: Sequence[Any]) -> Any:
    """The tangent (``_mapped.jvp``) as a torch tensor (not an op: run where it is called)."""
    device = _device([*args, *tangents])
    tensors = [_tensor(spec, p, v, device) for p, v in zip(spec.params, args, strict=True)]
    ts = []
    for p, d, t in zip(spec.params, spec.grads, tangents, strict=True):
        if not d:
            if t is not None:
                why = f"parameter `{p.name}` has no derivative; its tangent must be None"
                raise ValueError(f"{spec.name}.jvp(): {why}")
            continue
        zero = np.zeros(p.shape, dtype=p.dtype)
        own = Param(f"tangent of {p.name}", p.dtype, p.shape)
        ts.append(_tensor(spec, own, zero if t is None else t, device))
    values, alloc = _run_args([*tensors, *ts])
    return _as_torch(tangent(spec, values[: len(tensors)], values[len(tensors) :], alloc))
