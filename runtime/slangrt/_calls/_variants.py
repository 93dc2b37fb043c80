"""One function, several entries: a call runs the first entry, in a declared order, that the
device it runs on supports (hatch-slang's ``// slang-variants: gemm = gemm_coopmat gemm_tiled``).

What a device supports is what a kernel's first dispatch would check (:meth:`Kernel.unsupported`):
the SPIR-V capabilities and extensions its module declares against the device's features
(``CooperativeMatrixKHR`` needs ``VK_KHR_cooperative_matrix``), and the limits it needs. The
choice is made once per device and kept; a device that supports none of them is an
:class:`UnsupportedKernelError` naming what each entry lacks.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from typing import Any

from .._devices._device import Device
from .._devices._device import device as default_device
from .._devices._tensor import Tensor
from .._errors import UnsupportedKernelError
from ._library import KernelLibrary

__all__ = ["Variants"]

# One entry: its wrapper's name, the shader module and entry the library loads, the wrapper.
Entry = tuple[str, str, str, Callable[..., None]]


class Variants:
    """The entries of one variant function, in the order they are tried.

    ``name`` is ``module.function`` (for messages), ``library`` the generated package's kernels.
    Generated modules make one per ``slang-variants`` line; calling the function calls
    :meth:`pick`'s wrapper with the same arguments.
    """

    def __init__(self, name: str, library: KernelLibrary, entries: Sequence[Entry]) -> None:
        if not entries:
            raise ValueError(f"{name}: a variant function needs at least one entry")
        self.name = name
        self._library = library
        self._entries = tuple(entries)
        self._chosen: dict[int, tuple[Device, Callable[..., None]]] = {}

    @property
    def entries(self) -> tuple[str, ...]:
        """The entries' wrapper names, in the order they are tried."""
        return tuple(e[0] for e in self._entries)

    def paths(self, device: Device | None = None) -> list[tuple[str, list[str]]]:
        """Each entry's wrapper name and what it needs that ``device`` (default: the default
        device) lacks; an empty list: the device runs it."""
        dev = device or default_device()
        return [
            (python, self._library.kernel(shader, entry).unsupported(dev))
            for python, shader, entry, _ in self._entries
        ]

    def chosen(self, device: Device | None = None) -> str:
        """The wrapper name of the entry a call on ``device`` (default: the default device) runs."""
        return self._choose(device or default_device())[0]

    def pick(self, arrays: Sequence[object]) -> Callable[..., None]:
        """The wrapper to call for a call with array arguments ``arrays``: on the device of
        their torch CUDA tensors where they are some, else the default device."""
        dev = _device_of(arrays)
        kept = self._chosen.get(id(dev))
        if kept is not None and kept[0] is dev:
            return kept[1]
        fn = self._choose(dev)[1]
        self._chosen[id(dev)] = (dev, fn)
        return fn

    def _choose(self, dev: Device) -> tuple[str, Callable[..., None]]:
        lacks: list[str] = []
        for python, shader, entry, fn in self._entries:
            missing = self._library.kernel(shader, entry).unsupported(dev)
            if not missing:
                return python, fn
            lacks.append(f"`{python}` needs {' and '.join(missing)}")
        raise UnsupportedKernelError(
            f"{self.name}(): {dev.info.name} runs none of its entries: " + "; ".join(lacks)
        )


def _device_of(arrays: Sequence[object]) -> Device:
    torch = sys.modules.get("torch")
    for a in arrays:
        if isinstance(a, Tensor):
            return a.device
        if torch is not None and isinstance(a, torch.Tensor) and a.is_cuda:
            return _cuda_device(a)
    return default_device()


def _cuda_device(a: Any) -> Device:
    from .._cuda._call import device_for

    dev: Device = device_for(a.device.index or 0)
    return dev
