"""Generated wrappers as torch custom ops (``torch.library.custom_op``): the hook option
``torch-ops`` gives a module a ``torch_ops`` namespace, whose ops are opaque to
``torch.compile`` (it calls them, never traces into slangrt).

Registered on first use (torch imported then, never at the module's import): every op of the
module at once, under ``{namespace}::{name}``, each with the schema the generator wrote (arrays
as ``Tensor``, the written ones marked mutated, scalars as optional keywords) and a fake
implementation that does nothing (the ops return nothing; they write their arguments in place).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import Any

__all__ = ["TorchOps"]

Spec = tuple[str, Callable[..., Any], str, tuple[str, ...]]  # name, wrapper, schema, mutated


def _fake(*args: object, **kwargs: object) -> None:
    return None


class TorchOps:
    """A module's wrappers as torch custom ops: ``module.torch_ops.add_inplace_f32(a, b)``, or
    ``torch.ops.<namespace>.add_inplace_f32`` once registered (:meth:`register`)."""

    def __init__(self, namespace: str, specs: Sequence[Spec]) -> None:
        self._namespace = namespace
        self._specs = tuple(specs)
        self._ops: dict[str, Any] | None = None
        self._lock = threading.Lock()

    @property
    def namespace(self) -> str:
        """The ops' namespace (``torch.ops.<namespace>``)."""
        return self._namespace

    def register(self) -> dict[str, Any]:
        """Register every op (once; imports torch); returns them by name."""
        ops = self._ops
        if ops is not None:
            return ops
        with self._lock:
            if self._ops is None:
                import torch

                made: dict[str, Any] = {}
                for name, wrapper, schema, mutated in self._specs:
                    op = torch.library.custom_op(
                        f"{self._namespace}::{name}", wrapper, mutates_args=mutated, schema=schema
                    )
                    op.register_fake(_fake)
                    made[name] = op
                self._ops = made
            return self._ops

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        ops = self.register()
        try:
            return ops[name]
        except KeyError:
            raise AttributeError(
                f"{self._namespace} has no torch op {name!r}; it has: {', '.join(ops) or 'none'}"
            ) from None

    def __dir__(self) -> list[str]:
        return [s[0] for s in self._specs]

    def __repr__(self) -> str:
        return f"<torch ops {self._namespace}: {', '.join(s[0] for s in self._specs)}>"
