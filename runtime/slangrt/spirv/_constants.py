"""A module's specialization constants: what each is (its SpecId, name, scalar type, default),
and which of them set an entry point's thread-group size.

``[vk::constant_id(N)] const T NAME = default;`` and Slang's ``[SpecializationConstant]``
compile to an ``OpSpecConstant`` (``OpSpecConstantTrue``/``False`` for a bool) decorated
``SpecId N`` and named by ``OpName``; ``[numthreads(BLOCK, 1, 1)]`` over such a constant to an
``OpExecutionModeId LocalSizeId`` (or a ``WorkgroupSize`` built-in composite) naming it.
:func:`spec_constants` lists them by SpecId; :func:`local_size_ids` says, per axis, the SpecId
that sets it (None: a plain number). The binary format itself is :mod:`._format`'s.
"""

from __future__ import annotations

from dataclasses import dataclass

from .._errors import SpirvError
from ._format import BUILTIN_WORKGROUP_SIZE, DEC_BUILTIN, DEC_SPEC_ID, Parsed, literal_value

__all__ = ["SPEC_SCALARS", "SpecConstant", "local_size_ids", "spec_constants"]

#: The scalar types a specialization constant may have here (slangrt.dtypes' codes, and bool).
SPEC_SCALARS = ("bool", "i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64", "f16", "f32", "f64")


@dataclass(frozen=True)
class SpecConstant:
    """One specialization constant: ``id`` its SpecId, ``name`` its OpName (``""``: none),
    ``scalar`` its type (``bool``, ``i32``, ``u32``, ``f32``, ``f16`` ...), ``default`` the
    value the module declares."""

    id: int
    name: str
    scalar: str
    default: bool | int | float


def spec_constants(p: Parsed) -> tuple[SpecConstant, ...]:
    """The module's scalar specialization constants that have a SpecId, by SpecId; raises
    :class:`SpirvError` for two with one SpecId or of a type slangrt cannot pass."""
    found: dict[int, SpecConstant] = {}
    for result, (code, words) in p.spec_scalars.items():
        spec_id = p.decoration(result, DEC_SPEC_ID)
        if spec_id is None:
            continue  # an OpSpecConstant without SpecId cannot be set: it is its default
        if code not in SPEC_SCALARS:
            raise SpirvError(f"unsupported SPIR-V module: specialization constant {spec_id[0]} is a {code}")
        c = SpecConstant(spec_id[0], p.names.get(result, ""), code, literal_value(code, words))
        if c.id in found and found[c.id] != c:
            raise SpirvError(f"malformed SPIR-V module: two specialization constants have SpecId {c.id}")
        found[c.id] = c
    return tuple(found[k] for k in sorted(found))


def _spec_id(p: Parsed, const: int) -> int | None:
    """The SpecId of the integer spec constant ``const`` (None: a plain constant)."""
    if const not in p.spec_constants:
        return None
    spec_id = p.decoration(const, DEC_SPEC_ID)
    return spec_id[0] if spec_id is not None else None


def local_size_ids(p: Parsed, fn: int) -> tuple[int | None, int | None, int | None]:
    """Per axis of the entry function ``fn``'s thread-group size, the SpecId of the constant that
    sets it (None: a number, or a spec constant without SpecId, fixed at its default). The
    WorkgroupSize built-in wins over the execution mode, as in Vulkan."""
    ids: tuple[int, ...] | None = None
    for t, decs in p.decorations.items():
        if decs.get(DEC_BUILTIN) == (BUILTIN_WORKGROUP_SIZE,) and t in p.composites:
            ids = p.composites[t]
            break
    if ids is None:
        ids = p.local_size_ids.get(fn)
    if ids is None or len(ids) != 3:
        return (None, None, None)
    x, y, z = (_spec_id(p, c) for c in ids)
    return (x, y, z)
