"""What generated modules call for mapped functions (``slangrt.wrapper_api``'s ``map_call``,
``map_vjp``, ``map_jvp`` and ``map_pick``): arrays, Tensors and numbers go to ``_mapped``, torch
tensors to their torch op (``_mapped_torch``, imported only once torch tensors arrive)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from . import _mapped
from ._mapped import Spec, has_torch, no_gradients, pick

__all__ = ["call", "jvp", "pick", "vjp"]


def call(spec: Spec, args: Sequence[Any], out: Any) -> Any:
    """``spec``'s function over ``args`` (see ``_mapped.call``); torch tensors: its torch op."""
    if has_torch(args):
        from . import _mapped_torch

        return _mapped_torch.call(spec, args, out)
    return _mapped.call(spec, args, out)


def vjp(spec: Spec, args: Sequence[Any], grad_output: Any) -> tuple[Any, ...]:
    """The gradients (see ``_mapped.vjp``); on torch tensors through the op's vjp op."""
    no_gradients(spec, "vjp")
    if has_torch([*args, grad_output]):
        from . import _mapped_torch

        got: tuple[Any, ...] = _mapped_torch.vjp(spec, args, grad_output)
        return got
    return _mapped.vjp(spec, args, grad_output)


def jvp(spec: Spec, args: Sequence[Any], tangents: Sequence[Any]) -> Any:
    """The forward-mode derivative (see ``_mapped.jvp``)."""
    no_gradients(spec, "jvp")
    if len(tangents) != len(spec.params):
        raise TypeError(
            f"{spec.name}.jvp(): `tangents` must have {len(spec.params)} items, one per parameter"
        )
    if has_torch([*args, *tangents]):
        from . import _mapped_torch

        return _mapped_torch.jvp(spec, args, tangents)
    return _mapped.jvp(spec, args, tangents)
