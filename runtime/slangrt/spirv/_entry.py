"""What the load-time check compares a manifest entry with: one compute entry point's descriptors,
push-constant span and thread-group size, as :func:`slangrt.spirv.read_module` reads them.

slangrt checks a package's ``manifest.json`` against these facts when it loads a kernel
(``_library``): the manifest says how to bind the kernel, the SPIR-V is what runs. :func:`read`
gives, for one entry point, each descriptor it uses by (set, binding), with the variables that
alias one binding merged (written if any of them is), the bytes its push-constant blocks span and
its thread-group size. Whether a descriptor is written is :class:`~slangrt.spirv.Resource`'s
``writable``: as conservative as the analysis behind it.
"""

from __future__ import annotations

from dataclasses import dataclass

from .._errors import SpirvError
from ._constants import SpecConstant
from ._format import little_endian
from ._module import EntryInfo, Resource, read_module

__all__ = ["Entry", "read"]


@dataclass(frozen=True)
class Entry:
    """One GLCompute entry point: what :func:`read` found."""

    name: str
    descriptors: dict[tuple[int, int], Resource]  # by (set, binding); aliases merged
    push_size: int | None  # bytes the push-constant blocks span; None: it reads none
    local_size: tuple[int, int, int]  # with each specialization constant at its default
    constants: tuple[SpecConstant, ...] = ()  # by SpecId
    local_size_ids: tuple[int | None, int | None, int | None] = (None, None, None)  # see EntryInfo


def read(spirv: bytes, entry: str) -> Entry:
    """What the GLCompute entry point ``entry`` of ``spirv`` uses; :class:`SpirvError` if it has
    none or the module cannot be read (or is not in the byte order Vulkan takes)."""
    if not little_endian(spirv):
        raise SpirvError("not a little-endian SPIR-V module")
    module = read_module(spirv)
    if entry not in module.compute_entries:
        has = ", ".join(repr(e) for e in module.compute_entries) or "none"
        raise SpirvError(f"the SPIR-V has no compute entry point {entry!r} (it has: {has})")
    info = module.entry(entry)
    return Entry(
        entry, _descriptors(info), _push_size(info), info.local_size, info.constants, info.local_size_ids
    )


def _descriptors(info: EntryInfo) -> dict[tuple[int, int], Resource]:
    """The entry's descriptors by (set, binding): of the variables that alias one binding, a
    written one stands for them all."""
    found: dict[tuple[int, int], Resource] = {}
    for r in info.resources:
        if r.set is None or r.binding is None:
            continue  # a push-constant block
        key = (r.set, r.binding)
        old = found.get(key)
        if old is not None and (old.storage, old.array_size) != (r.storage, r.array_size):
            raise SpirvError(f"set {r.set}, binding {r.binding} is declared as two kinds of descriptor")
        if old is None or (r.writable and not old.writable):
            found[key] = r
    return found


def _push_size(info: EntryInfo) -> int | None:
    """Bytes the entry's push-constant blocks span (they share one range); None: it has none."""
    sizes = [r.size for r in info.resources if r.storage == "push_constant"]
    return max(sizes) if sizes else None
