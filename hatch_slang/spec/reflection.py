"""Read what the compiler says a kernel exposes: Slang's reflection JSON and the SPIR-V itself.

From the JSON: each global parameter's binding index, kind (storage or uniform buffer), access
and element layout (scalars, vectors and structs flattened to ``(name, scalar type, byte
offset)``), and a buffer of structs' element as a layout (:mod:`hatch_slang.spec.structs`,
whose matrices the SPIR-V settles); a uniform block's top-level fields and offsets, the
push-constant buffer's and the default uniform buffer's too (:class:`BlockLayout`), which the
SPIR-V's leaves are checked against; the entry's thread-group size. From the SPIR-V (read by
:mod:`slangrt.spirv`, the one reader of the format): which bindings the entry really uses,
since Slang's JSON lists every global of the file.

Several variables may alias one binding (``RWStructuredBuffer<float> a`` and
``RWStructuredBuffer<float4> a4``, both ``[[vk::binding(0)]]``, to load four floats at a time):
they are merged into one binding, writable if any view is, whose layout is the first view's and
whose ``scalar_types`` lists every view's element type. Only the views an entry's SPIR-V uses
count for that entry (:func:`in_use`): a file may declare one binding as ``float`` for one
instance of a generic entry and as ``half`` for another, and each instance holds its own.
"""

from __future__ import annotations

import json
import re
import struct
from dataclasses import dataclass, replace
from typing import Any, Literal

from slangrt.dtypes import DTYPES
from slangrt.spirv import (
    CAPABILITY_NAMES,
    OP_CAPABILITY,
    OP_IMAGE_READ,
    OP_IMAGE_SPARSE_READ,
    OP_SOURCE,
    Module,
    instructions,
    read_module,
    words,
)

from hatch_slang.errors import HatchSlangError
from hatch_slang.spec.structs import Field, Struct, block_fields, read_struct

# Slang's reflection names scalar types as NumPy does (`float32`, `uint8`); a bool is a 32-bit word.
SCALARS: dict[str, str] = {**{t.numpy: code for code, t in DTYPES.items()}, "bool": "u32"}


def scalar_size(scalar: str) -> int:
    t = DTYPES.get(scalar)
    return t.size if t is not None else 4


@dataclass(frozen=True)
class Scalar:
    name: str  # dotted path inside the element (`x`, `scale`, `v.y`)
    scalar: str  # one of SCALARS' values
    offset: int  # bytes from the element's start


@dataclass(frozen=True)
class ReflectedBinding:
    index: int
    variable: str  # the Slang variable name
    kind: Literal["storage", "uniform"]
    shape: str  # structuredBuffer, byteAddressBuffer, constantBuffer, ...
    writable: bool
    scalars: tuple[Scalar, ...]  # the element flattened; empty when unknown (byte-address buffers)
    element_size: int  # bytes per element (the stride); 0 when unknown
    aliases: tuple[ReflectedBinding, ...] = ()  # other variables bound to the same index
    set: int = 0  # the descriptor set (Slang's `space`)
    # Not a buffer: what reflection says it is (`texture2D`, `samplerState`, `textureBuffer`,
    # `accelerationStructure`); "" for storage and uniform buffers.
    opaque: str = ""
    # An image's or texel buffer's texel type's vector width (`resultType`: `Texture2D<float4>`
    # 4, `RWTexture2D<float>` 1); None for buffers and where reflection does not say.
    channels: int | None = None
    comparison: bool = False  # a `SamplerComparisonState`
    # A buffer of structs: the element's layout by reflection (hatch_slang.spec.structs), its
    # matrices settled against the SPIR-V by Binding.merged. None for anything else.
    struct: Struct | None = None
    # A uniform block: its top-level fields as reflection lays them out (offsets, array strides,
    # structs; :func:`hatch_slang.spec.structs.block_fields`), which the SPIR-V's leaves are
    # checked against. Empty for anything else.
    fields: tuple[Field, ...] = ()
    # A uniform block: (name, type kind, byte offset, array stride or 0) of each top-level
    # field as reflection gives them, described by a dtype or not (:func:`block_offsets`).
    offsets: tuple[tuple[str, str, int, int], ...] = ()

    @property
    def key(self) -> tuple[int, int]:
        return (self.set, self.index)

    @property
    def scalar_type(self) -> str | None:
        """The element's scalar type when all its components share one."""
        kinds = {s.scalar for s in self.scalars}
        return kinds.pop() if len(kinds) == 1 else None

    @property
    def scalar_types(self) -> frozenset[str]:
        """The scalar types of this view and of every alias with a single scalar type."""
        views = (self, *self.aliases)
        return frozenset(t for t in (v.scalar_type for v in views) if t is not None)


def _merge(found: list[ReflectedBinding]) -> tuple[ReflectedBinding, ...]:
    """One binding per index; aliases of an index fold into the first variable declared there."""
    by_index: dict[tuple[int, int], ReflectedBinding] = {}
    for b in found:
        first = by_index.get(b.key)
        if first is None:
            by_index[b.key] = b
            continue
        if first.kind != b.kind:
            raise HatchSlangError(
                f"`{first.variable}` and `{b.variable}` share binding {b.index} but one is a "
                f"{first.kind} buffer and the other a {b.kind} buffer"
            )
        by_index[b.key] = replace(first, writable=first.writable or b.writable, aliases=(*first.aliases, b))
    return tuple(by_index[i] for i in sorted(by_index))


@dataclass(frozen=True)
class BlockLayout:
    """A uniform block reflection describes as a value of no descriptor of its own (a
    push-constant buffer, the default uniform buffer of global ``uniform`` values): its
    top-level fields (:func:`hatch_slang.spec.structs.block_fields`) and their offsets
    (:func:`block_offsets`), under the variable the SPIR-V names it by."""

    variable: str
    fields: tuple[Field, ...] = ()
    offsets: tuple[tuple[str, str, int, int], ...] = ()


@dataclass(frozen=True)
class ReflectedEntry:
    name: str
    threads: tuple[int, int, int]
    bindings: tuple[ReflectedBinding, ...]  # only those the entry uses, by index
    used: tuple[tuple[int, int], ...]  # (set, binding) of every descriptor the SPIR-V uses
    # The specialization constants reflection lists: (SpecId, name) each, by SpecId.
    constants: tuple[tuple[int, str], ...] = ()
    # The blocks with no descriptor binding of their own (push constants, global uniforms).
    blocks: tuple[BlockLayout, ...] = ()


def _flatten(t: dict[str, Any], prefix: str, offset: int) -> tuple[list[Scalar], int]:
    kind = t.get("kind")
    if kind == "scalar":
        sc = SCALARS.get(t.get("scalarType", ""))
        if sc is None:
            return [], 0
        return [Scalar(prefix or "x", sc, offset)], scalar_size(sc)
    if kind == "vector":
        inner, size = _flatten(t["elementType"], "", 0)
        if len(inner) != 1:
            return [], 0
        n = int(t.get("elementCount", 1))
        names = "xyzw"
        out = [
            Scalar(
                f"{prefix}.{names[k]}" if prefix else names[k] if n > 1 else "x",
                inner[0].scalar,
                offset + k * size,
            )
            for k in range(n)
        ]
        return out, n * size
    if kind == "struct":
        out = []
        end = 0
        for f in t.get("fields", []):
            b = f.get("binding", {})
            off = int(b.get("offset", end))
            sub, size = _flatten(f["type"], f"{prefix}.{f['name']}" if prefix else f["name"], offset + off)
            if not sub:
                return [], 0
            out += sub
            end = max(end, off + int(b.get("size", size)))
        return out, end
    return [], 0


def block_offsets(t: dict[str, Any]) -> tuple[tuple[str, str, int, int], ...]:
    """(name, type kind, byte offset, array stride or 0) of each top-level field of a uniform
    block's element, as reflection gives them; a field it gives no offset is left out."""
    out: list[tuple[str, str, int, int]] = []
    for f in t.get("fields", []) if t.get("kind") == "struct" else []:
        if not isinstance(f, dict) or not isinstance(f.get("type"), dict):
            continue
        name, offset = f.get("name"), f.get("binding", {}).get("offset")
        kind, stride = f["type"].get("kind"), f["type"].get("uniformStride", 0)
        if isinstance(name, str) and isinstance(offset, int) and isinstance(stride, int):
            out.append((name, str(kind), offset, stride if kind == "array" else 0))
    return tuple(out)


def _binding(param: dict[str, Any]) -> ReflectedBinding | None:
    b = param.get("binding", {})
    if b.get("kind") != "descriptorTableSlot":
        return None
    space = int(b.get("space", 0))
    t = param["type"]
    if t.get("kind") == "constantBuffer":
        scalars, size = _flatten(t["elementType"], "", 0)
        return ReflectedBinding(
            int(b["index"]),
            param["name"],
            "uniform",
            "constantBuffer",
            False,
            tuple(scalars),
            size,
            set=space,
            fields=block_fields(t["elementType"]),
            offsets=block_offsets(t["elementType"]),
        )
    if t.get("kind") == "samplerState":
        return ReflectedBinding(
            int(b["index"]),
            param["name"],
            "storage",
            "samplerState",
            False,
            (),
            0,
            set=space,
            opaque="samplerState",
            comparison=bool(t.get("comparison")) or "comparison" in str(t.get("name", "")).lower(),
        )
    if t.get("kind") != "resource":
        return None
    shape = t.get("baseShape", "")
    writable = t.get("access", "read") in ("readWrite", "write", "append", "consume")
    if shape not in _BUFFER_SHAPES:  # an image, a texel buffer, an acceleration structure
        return ReflectedBinding(
            int(b["index"]),
            param["name"],
            "storage",
            shape,
            writable,
            (),
            0,
            set=space,
            opaque=shape or "?",
            channels=_channels(t.get("resultType")),
        )
    return _buffer(param, t, shape, writable, space)


def _buffer(
    param: dict[str, Any], t: dict[str, Any], shape: str, writable: bool, space: int
) -> ReflectedBinding:
    """A storage buffer: its element flattened, and a struct element's layout."""
    b = param["binding"]
    elem = t.get("resultType")
    scalars, size = _flatten(elem, "", 0) if elem else ([], 0)
    layout = read_struct(elem, size) if elem and shape == "structuredBuffer" else None
    return ReflectedBinding(
        int(b["index"]),
        param["name"],
        "storage",
        shape,
        writable,
        tuple(scalars),
        size,
        set=space,
        struct=layout,
    )


def _channels(result: object) -> int | None:
    """The vector width of an image's texel type (reflection's `resultType`): a scalar 1, a
    vector its element count; None where reflection gives none."""
    if not isinstance(result, dict):
        return None
    if result.get("kind") == "scalar":
        return 1
    if result.get("kind") == "vector":
        n = result.get("elementCount")
        return n if isinstance(n, int) and not isinstance(n, bool) and 1 <= n <= 4 else None
    return None


# The resource shapes that are storage buffers (Structured, RW, Append, Consume; ByteAddress).
_BUFFER_SHAPES = frozenset({"structuredBuffer", "byteAddressBuffer"})


def unescape(text: str) -> str:
    """A name as reflection writes it read back as the text it spells: reflection writes the
    UTF-8 bytes of letters beyond ASCII as octal escapes (`gr\\303\\266\\303\\237e`: `größe`)."""
    if "\\" not in text:
        return text
    raw = re.sub(rb"\\([0-7]{3})", lambda m: bytes([int(m.group(1), 8) & 0xFF]), text.encode("utf-8"))
    return raw.decode("utf-8", errors="replace")


def read_entry(reflection_json: str, entry: str, spirv: bytes | Module) -> ReflectedEntry:
    data = json.loads(reflection_json)
    eps = [e for e in data.get("entryPoints", []) if unescape(str(e.get("name"))) == entry]
    if not eps:
        raise HatchSlangError(f"reflection has no entry point `{entry}`")
    threads = tuple(int(v) for v in eps[0].get("threadGroupSize", (1, 1, 1)))
    all_bindings = [b for b in (_binding(p) for p in _parameters(data)) if b is not None]
    module = read_module(spirv) if isinstance(spirv, bytes) else spirv
    used = used_bindings(module)
    names = spirv_names(module)
    return ReflectedEntry(
        name=entry,
        threads=(threads + (1, 1, 1))[:3],  # type: ignore[arg-type]
        bindings=tuple(in_use(b, names) for b in _merge([b for b in all_bindings if b.key in used])),
        used=tuple(sorted(used)),
        constants=_constants(data.get("parameters", [])),
        blocks=_blocks(data.get("parameters", []))
        + _loose("entryPointParams", [p for p in eps[0].get("parameters", []) if isinstance(p, dict)]),
    )


def _blocks(params: list[Any]) -> tuple[BlockLayout, ...]:
    """Each global push-constant buffer's layout, and the default uniform buffer's
    (``globalParams``: the global ``uniform`` values, each a field at its offset)."""
    out: list[BlockLayout] = []
    for p in params:
        b = p.get("binding") if isinstance(p, dict) else None
        if not isinstance(b, dict) or not isinstance(p.get("type"), dict):
            continue
        if b.get("kind") == "pushConstantBuffer" and p["type"].get("kind") == "constantBuffer":
            elem = p["type"].get("elementType", {})
            out.append(BlockLayout(str(p.get("name", "")), block_fields(elem), block_offsets(elem)))
    return (*out, *_loose("globalParams", [p for p in params if isinstance(p, dict)]))


def _loose(variable: str, params: list[dict[str, Any]]) -> tuple[BlockLayout, ...]:
    """The block Slang gathers ``uniform`` values into (``globalParams`` for globals,
    ``entryPointParams`` for an entry point's), each value a field at its offset; () for none."""
    loose = [
        {"name": p.get("name"), "type": p["type"], "binding": p["binding"]}
        for p in params
        if isinstance(p.get("binding"), dict)
        and p["binding"].get("kind") == "uniform"
        and isinstance(p.get("type"), dict)
    ]
    if not loose:
        return ()
    elem = {"kind": "struct", "fields": loose}
    return (BlockLayout(variable, block_fields(elem), block_offsets(elem)),)


def _constants(params: list[Any]) -> tuple[tuple[int, str], ...]:
    """(SpecId, name) of each parameter reflection binds as a specialization constant."""
    found: dict[int, str] = {}
    for p in params:
        b = p.get("binding") if isinstance(p, dict) else None
        if (
            isinstance(b, dict)
            and b.get("kind") == "specializationConstant"
            and isinstance(b.get("index"), int)
        ):
            found.setdefault(b["index"], unescape(str(p.get("name", ""))))
    return tuple(sorted(found.items()))


def spirv_names(module: Module) -> dict[tuple[int, int], frozenset[str]]:
    """The variable names (OpName) the module's entry points use at each (set, binding)."""
    names: dict[tuple[int, int], set[str]] = {}
    for name in module.entries:
        for r in module.entry(name).resources:
            if r.storage != "push_constant" and r.variable:
                names.setdefault((r.set or 0, r.binding or 0), set()).add(r.variable)
    return {k: frozenset(v) for k, v in names.items()}


def in_use(binding: ReflectedBinding, names: dict[tuple[int, int], frozenset[str]]) -> ReflectedBinding:
    """``binding`` with only the views (itself and its aliases) that the SPIR-V names among
    ``names``, the first of them in front; as it is where it has no aliases or the SPIR-V names
    none of them (a name Slang changed)."""
    if not binding.aliases:
        return binding
    named = [v for v in (binding, *binding.aliases) if v.variable in names.get(binding.key, ())]
    if not named or len(named) == 1 + len(binding.aliases):
        return binding
    first = replace(named[0], aliases=())
    return replace(
        first,
        writable=any(v.writable for v in named),
        aliases=tuple(replace(v, aliases=()) for v in named[1:]),
    )


def read_all_bindings(reflection_json: str) -> tuple[ReflectedBinding, ...]:
    data = json.loads(reflection_json)
    found = (_binding(p) for p in _parameters(data))
    return _merge([b for b in found if b is not None])


def _parameters(data: dict[str, Any]) -> list[dict[str, Any]]:
    """The global parameters, then each entry point's own (``uniform StructuredBuffer<T> x``, the
    buffers of a generic entry): both are bound in the entry's descriptor set."""
    params = list(data.get("parameters", []))
    for ep in data.get("entryPoints", []):
        params += [p for p in ep.get("parameters", []) if isinstance(p, dict)]
    return params


# --- SPIR-V ---------------------------------------------------------------------------------


def used_bindings(spirv: bytes | Module) -> set[tuple[int, int]]:
    """(set, binding) of every descriptor the module's entry points use, as
    :func:`slangrt.spirv.read_module` reads them (pass the :class:`~slangrt.spirv.Module` where
    it is already read, so that the module is parsed once)."""
    module = read_module(spirv) if isinstance(spirv, bytes) else spirv
    return {
        (r.set, r.binding)
        for name in module.entries
        for r in module.entry(name).resources
        if r.set is not None and r.binding is not None
    }


_CAP_READ_WITHOUT_FORMAT = next(
    n for n, c in CAPABILITY_NAMES.items() if c == "StorageImageReadWithoutFormat"
)


def normalize_spirv(spirv: bytes, *, keep_capabilities: bool = False) -> bytes:
    """The module as the build ships it: its source language marked Unknown (0), and Slang's
    unneeded ``StorageImageReadWithoutFormat`` capability dropped.

    Slang declares language 11 (Slang), which older spirv-val and validation layers (1.3.239, as
    in Debian 12) reject as an invalid operand although drivers run the module. Slang also
    declares ``StorageImageReadWithoutFormat`` for every storage image or texel buffer without a
    declared format, even one the kernel only writes; SPIR-V requires it only for an
    ``OpImageRead`` (or ``OpImageSparseRead``) of such an image, and Vulkan then requires
    ``shaderStorageImageReadWithoutFormat``, which many drivers (lavapipe) lack. So a module
    with no image read loses it; ``StorageImageWriteWithoutFormat`` stays (writes need it).
    ``keep_capabilities`` keeps Slang's capabilities as they are (test inputs of the runtime's
    own refusal of such a module).
    """
    module = list(words(spirv))
    found = list(instructions(tuple(module)))
    reads = keep_capabilities or any(op in (OP_IMAGE_READ, OP_IMAGE_SPARSE_READ) for _, op, _ in found)
    out = module[:5]
    for i, opcode, count in found:
        if opcode == OP_SOURCE and count >= 3:
            module[i + 1] = 0
        unneeded = opcode == OP_CAPABILITY and count == 2 and module[i + 1] == _CAP_READ_WITHOUT_FORMAT
        if unneeded and not reads:
            continue
        out.extend(module[i : i + count])
    return struct.pack(f"<{len(out)}I", *out)
