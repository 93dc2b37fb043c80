"""What an entry's SPIR-V needs bound beyond its documented bindings, and the invariant that
everything it uses is bound.

Uniform and push-constant blocks no comment describes become params buffers whose fields are
keyword arguments (:func:`block`, :func:`push_block`); storage buffers reflection did not list
come from the SPIR-V (:func:`from_spirv`); names taken from the code become Python arguments
(:func:`python_name`, :func:`unique_names`, :func:`unclash`). Then the checks: every descriptor
and push-constant range the entry uses is bound (:func:`check_bound`; images, samplers and texel
buffers as their own kinds, :mod:`hatch_slang.spec.images`), and every byte it loads
from an uncommented block belongs to an argument (:func:`check_blocks`); each returns the errors
it finds, which no `strict = false` turns into warnings. :func:`unread_fields` says which params
fields the entry never reads. Everything reads one entry's :class:`~slangrt.spirv.Module`, parsed
once by the caller.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import replace
from typing import Literal

from slangrt.dtypes import DTYPES
from slangrt.spirv import EntryInfo, Member, Module, Resource

from hatch_slang.comments.contract import source_lines
from hatch_slang.comments.expr import ExprError, argument_name
from hatch_slang.compile.discover import Shader
from hatch_slang.config.settings import HookSettings, option_name
from hatch_slang.errors import HatchSlangError, ShaderError
from hatch_slang.spec import images, uniforms
from hatch_slang.spec.model import Binding, BufferSpec, ParamSlot, is_float
from hatch_slang.spec.reflection import BlockLayout, scalar_size, unescape
from hatch_slang.spec.structs import from_leaves


def _resource_of(info: EntryInfo, b: BufferSpec) -> Resource | None:
    """The SPIR-V resource a params buffer fills: its descriptor, or the push-constant range."""
    if b.kind == "push":
        return next((r for r in info.resources if r.storage == "push_constant"), None)
    return next((r for r in info.resources if (r.set or 0, r.binding or 0) == b.key), None)


def _spans(p: ParamSlot) -> list[tuple[int, int]]:
    """The bytes of each of the slot's elements (one for a scalar)."""
    if p.scalar == "struct" and p.struct is not None:
        size = p.struct.itemsize
    else:
        size = 8 if p.scalar == "ptr" else scalar_size(p.scalar)
    return [(o, o + size) for o in p.element_offsets()]


def unread_fields(module: Module, entry: str, buffers: list[BufferSpec]) -> set[str]:
    """Params fields whose bytes the entry's SPIR-V never loads (read off the SPIR-V itself)."""
    info = module.entry(entry)
    unread: set[str] = set()
    for b in buffers:
        if b.role != "params":
            continue
        res = _resource_of(info, b)
        if res is None:
            continue
        loaded = module.loaded_offsets(entry, res)
        if loaded is None:
            continue
        for p in b.params:
            read = any(lo <= o < hi for lo, hi in _spans(p) for o in loaded)
            if p.name and p.literal is None and p.scalar != "ptr" and not read:
                unread.add(p.name)
    return unread


def has_push(infos: Iterable[EntryInfo]) -> bool:
    """Whether some entry has a push-constant range."""
    return any(r.storage == "push_constant" for info in infos for r in info.resources)


def declared_at(source: str, variable: str) -> int | None:
    """The line declaring ``variable`` (for messages); None when it cannot be found."""
    if not variable:
        return None
    pattern = re.compile(rf"\b{re.escape(variable)}\b")
    for number, line in enumerate(source_lines(source), start=1):
        code = line.split("//", 1)[0]
        if pattern.search(code):
            return number
    return None


def _slot_name(path: tuple[str, ...], variable: str) -> str | None:
    """The keyword argument of one value of a uniform or push-constant block
    (:func:`hatch_slang.spec.uniforms.values`: a vector, matrix or array is one value).

    Fields keep their own names, nested struct fields are joined with `_` (`light.dir` ->
    `light_dir`) and made an argument name as a comment's are
    (:func:`hatch_slang.comments.expr.argument_name`: a Python keyword gets a trailing `_`); a name
    starting with `_` (`_pad0`) is padding: written as zero, no argument.
    """
    parts = [p.replace("[]", "").strip("[]") for p in path]
    name = "_".join(p for p in parts if p)
    if not name or not (name[0].isalpha() or name.startswith("_")):
        name = "_".join(p for p in (variable, name) if p)  # `ConstantBuffer<float4x4> m`: m
    if name.startswith("_"):
        return None
    return _argument(name)


def _argument(name: str) -> str | None:
    try:
        return argument_name(name)
    except ExprError:
        return None


def _value_slot(
    shader: Shader, v: uniforms.Value, name: str, variable: str
) -> tuple[ParamSlot, list[HatchSlangError]]:
    """A scalar, pointer or whole vector, matrix or array value's slot; a pointer to what no
    dtype describes is an error."""
    hard: list[HatchSlangError] = []
    scalar = "u32" if v.scalar == "bool" else v.scalar
    m = v.leaf  # a pointer is always a value of its own
    pointee = m.pointee_leaves if m is not None else ()
    layout = from_leaves(m.pointee_name, pointee, m.pointee_stride) if m is not None and pointee else None
    if scalar == "ptr" and v.pointee is None and layout is None:
        hard.append(
            ShaderError(
                shader.rel,
                declared_at(shader.source, v.path[0] if v.path else variable),
                f"`{'.'.join(v.path)}` in `{variable}` is a pointer to another pointer, or to a struct "
                "no NumPy dtype describes the same way (nested structs, bools, pointers, "
                "square matrices); hatch-slang passes pointers to scalars, and to structs of "
                "scalars, vectors, arrays of them and non-square matrices",
            )
        )
    slot = ParamSlot(
        name, scalar, v.offset, is_float(scalar), shape=v.shape, strides=v.strides, struct=layout
    )
    return slot, hard


def block(
    shader: Shader, b: Binding, variable: str, kind: Literal["uniform", "push"]
) -> tuple[BufferSpec, list[HatchSlangError]]:
    """A uniform or push-constant block with no comment: its fields become keyword arguments
    (a vector, matrix, array, struct or array of structs one each: :mod:`uniforms`); a pointer
    it holds to anything but scalars and structs of them, and a disagreement of reflection and
    the SPIR-V on its layout, are errors whatever `strict` says."""
    hard: list[HatchSlangError] = [
        ShaderError(
            shader.rel,
            declared_at(shader.source, name),
            f"`{variable or kind}`: reflection and the SPIR-V disagree on its layout: {what} "
            "(a compiler fault: please report it, with this shader)",
        )
        for name, what in uniforms.disagreements(b.members, b.fields, b.offsets)
    ]
    slots: list[ParamSlot] = []
    for v in uniforms.values(b.members, b.fields):
        name = _slot_name(v.path, variable)
        if name is None:
            continue
        if v.struct is not None:
            slots.append(
                ParamSlot(name, "struct", v.offset, False, shape=v.shape, strides=v.strides, struct=v.struct)
            )
            continue
        slot, error = _value_slot(shader, v, name, variable)
        slots.append(slot)
        hard += error
    align = 16 if kind == "uniform" else 4
    size = -(-max(b.block_size, 4) // align) * align
    shown = variable or ("push constants" if kind == "push" else "uniforms")
    name = _argument(shown) or ("push" if kind == "push" else f"uniforms{b.index}")
    spec = BufferSpec(
        b.index,
        name,
        "params",
        kind,
        False,
        None,
        None,
        True,
        f"`{shown}` (from reflection)",
        None,
        tuple(slots),
        size,
        set=b.set,
        binding=b,
    )
    return spec, hard


def python_name(variable: str, fallback: str) -> str:
    """An argument name for a Slang variable as the compiler spells it: `dst.buffer` -> `dst_buffer`,
    an entry-point parameter `entryPointParams.result` -> `result`; Slang's reflection writes the
    UTF-8 bytes of other letters as octal escapes (`gr\\303\\266\\303\\237e`: `größe`)."""
    parts = [
        p for p in re.split(r"\W+", unescape(variable)) if p and p not in ("entryPointParams", "globalParams")
    ]
    return _argument("_".join(parts)) or fallback


def from_spirv(b: Binding) -> BufferSpec:
    """A storage buffer the SPIR-V uses that reflection did not list (GLSL-style blocks, the
    buffers of a ParameterBlock, entry-point `uniform` buffers)."""
    kinds = {m.scalar for m in b.members}
    scalar = kinds.pop() if len(kinds) == 1 else None
    return BufferSpec(
        b.index,
        python_name(b.variable, f"binding{b.index}"),
        "data",
        "storage",
        b.declared_writable,
        scalar if scalar in DTYPES else None,
        None,
        False,
        f"`{b.variable}` (from the SPIR-V)",
        None,
        set=b.set,
        binding=b,
    )


def unclash(buffers: tuple[BufferSpec, ...], data_names: set[str]) -> tuple[BufferSpec, ...]:
    """Fields of uncommented blocks that clash with another argument take their block's name."""
    taken = set(data_names)
    counts: dict[str, int] = {}
    for b in buffers:
        for p in b.params:
            counts[p.name] = counts.get(p.name, 0) + 1
    out = []
    for b in buffers:
        if b.line is None and b.role == "params":
            slots = tuple(
                replace(p, name=f"{b.name}_{p.name}")
                if p.name and (p.name in taken or counts[p.name] > 1)
                else p
                for p in b.params
            )
            b = replace(b, params=slots)
        out.append(b)
    return tuple(out)


def unique_names(buffers: list[BufferSpec]) -> list[BufferSpec]:
    """Arguments named from the code that would share a name get their set and binding added."""
    counts: dict[str, int] = {}
    for b in buffers:
        counts[b.name] = counts.get(b.name, 0) + 1
    return [
        replace(b, name=f"{b.name}_set{b.set}_binding{b.index}")
        if counts[b.name] > 1 and b.line is None
        else b
        for b in buffers
    ]


def check_blocks(
    shader: Shader, module: Module, info: EntryInfo, buffers: list[BufferSpec]
) -> list[HatchSlangError]:
    """Never zeros for a value the entry reads: every loaded byte of an uncommented uniform or
    push-constant block belongs to an argument."""
    hard: list[HatchSlangError] = []
    for b in buffers:
        if b.role != "params" or b.line is not None:
            continue
        res = _resource_of(info, b)
        if res is None:
            continue
        loaded = module.loaded_offsets(info.name, res)
        spans = [span for p in b.params for span in _spans(p)]
        wanted = {m.offset for m in res.members} if loaded is None else set(loaded)
        missing = sorted(o for o in wanted if not any(lo <= o < hi for lo, hi in spans))
        if missing:
            names = [m.name for m in res.members if m.offset in missing] or [f"byte {missing[0]}"]
            hard.append(
                ShaderError(
                    shader.rel,
                    declared_at(shader.source, res.variable),
                    f"entry `{info.name}` reads `{names[0]}` of `{res.variable}` ({res.type_text}), which "
                    "no argument of its wrapper fills; name it without a leading underscore or document "
                    "the block's fields",
                )
            )
    return hard


def check_bound(shader: Shader, info: EntryInfo, buffers: list[BufferSpec]) -> list[HatchSlangError]:
    """The invariant: every descriptor and push-constant range the entry's SPIR-V uses is bound."""
    hard: list[HatchSlangError] = []
    for r in info.resources:
        if r.array_size != 1 and r.storage != "push_constant":
            hard.append(_array_error(shader, r))
            continue
        if r.storage == "other" and not images.bindable(r):
            hard.append(not_bindable(shader, r))
            continue
        if r.storage == "push_constant":
            ok = any(b.kind == "push" for b in buffers)
        else:
            want = r.storage if r.storage != "other" else r.descriptor
            kinds = {b.kind for b in buffers if b.kind != "push" and b.key == (r.set or 0, r.binding or 0)}
            ok = kinds == {want}  # bound, and as the descriptor type the SPIR-V declares
        if not ok:
            hard.append(
                ShaderError(
                    shader.rel,
                    declared_at(shader.source, r.variable),
                    f"entry `{info.name}` uses `{r.variable or '?'}` ({r.type_text}"
                    + (f", set {r.set}, binding {r.binding}" if r.set is not None else "")
                    + "), which its wrapper would leave unbound",
                )
            )
    return hard


# The descriptor array Slang declares for bindless resource handles (`Texture2D.Handle`, ...).
_BINDLESS_HEAP = "__slang_resource_heap"


def _array_error(shader: Shader, r: Resource) -> ShaderError:
    what = "buffer" if r.storage in ("storage", "uniform") else "descriptor"
    if r.variable.startswith(_BINDLESS_HEAP):
        return ShaderError(
            shader.rel,
            declared_at(shader.source, "Handle"),
            "the shader uses bindless resource handles (`T.Handle`, which Slang compiles to a "
            f"descriptor array, `{r.variable}`); hatch-slang binds one resource per binding: "
            "declare the resources as separate bindings",
        )
    return ShaderError(
        shader.rel,
        declared_at(shader.source, python_name(r.variable, r.variable).split("_")[0]),
        f"`{r.variable or '?'}` is an array of "
        f"{r.array_size or 'unsized'} {r.type_text.split('[')[0]}s; a wrapper binds one "
        f"{what} per binding: declare separate {'buffers' if what == 'buffer' else 'bindings'}",
    )


def declared_descriptors(infos: Iterable[EntryInfo]) -> dict[tuple[int, int], Resource]:
    """Each (set, binding) some entry uses, and the resource its SPIR-V declares there (an image
    or sampler over a buffer aliasing it: what cannot be bound wins)."""
    found: dict[tuple[int, int], Resource] = {}
    for info in infos:
        for r in info.resources:
            key = (r.set or 0, r.binding or 0)
            if r.storage != "push_constant" and (key not in found or r.storage == "other"):
                found[key] = r
    return found


def as_declared(info: EntryInfo, buffers: list[BufferSpec]) -> list[BufferSpec]:
    """Each descriptor binding bound as the descriptor type the entry's SPIR-V declares (a
    storage or a uniform buffer, or one of the image kinds, written where the entry writes it),
    whatever the comment or reflection said; what the SPIR-V declares as anything else, or an
    image kind bound as a buffer, is left out (:func:`check_bound` says why)."""
    declared = declared_descriptors([info])
    out: list[BufferSpec] = []
    for b in buffers:
        res = declared.get(b.key)
        if b.kind == "push" or res is None:
            out.append(b)
        elif res.storage in ("storage", "uniform") and not b.is_image:
            kind: Literal["storage", "uniform"] = "storage" if res.storage == "storage" else "uniform"
            out.append(b if b.kind == kind else replace(b, kind=kind))
        elif res.storage == "other" and b.kind == res.descriptor:
            # A storage image or texel buffer is written where this entry's SPIR-V may write
            # through it; one the entry only reads is read-only here (read-only memory is
            # accepted, nothing is copied back, batches do not wait on it).
            written = b.kind in ("storage_image", "storage_texel_buffer") and res.writable
            out.append(b if b.writable == written else replace(b, writable=written))
    return out


def article(text: str) -> str:
    """`a sampler`, `an acceleration structure`."""
    return f"{'an' if text[:1] in tuple('aeio') else 'a'} {text}"


def not_bindable(shader: Shader, r: Resource) -> ShaderError:
    """The error for a descriptor a wrapper cannot bind: a multisampled image, an acceleration
    structure or anything else that is no buffer, image, sampler or texel buffer (whatever a
    comment says it is)."""
    where = f"set {r.set}, binding {r.binding}" if r.set is not None else "no binding"
    what = r.type_text
    if r.image is not None and r.image.multisampled:
        what = f"multisampled {r.type_text}"
    return ShaderError(
        shader.rel,
        declared_at(shader.source, r.variable),
        f"`{r.variable or '?'}` ({where}) is {article(what)}; hatch-slang binds storage and uniform "
        "buffers, push constants, images, samplers, combined image samplers and texel buffers "
        "(multisampled images and acceleration structures are not supported)",
    )


def push_range(info: EntryInfo) -> tuple[Resource, int] | None:
    """The entry's push-constant range as one block, and how many blocks declare it (several
    blocks share one range: their fields are merged by offset); None when it has none."""
    blocks = [r for r in info.resources if r.storage == "push_constant"]
    if not blocks:
        return None
    members: dict[int, Member] = {}
    for b in blocks:  # several blocks share one range: fields by offset
        for m in b.members:
            members.setdefault(m.offset, m)
    merged = Resource(
        blocks[0].id,
        blocks[0].variable if len(blocks) == 1 else "",
        "push_constant",
        None,
        None,
        tuple(members[o] for o in sorted(members)),
        0,
        max(b.size for b in blocks),
        False,
        False,
        "push constant block",
    )
    return merged, len(blocks)


def push_block(
    shader: Shader, merged: Resource, layouts: tuple[BlockLayout, ...] = ()
) -> tuple[BufferSpec, list[HatchSlangError]]:
    """An uncommented push-constant range: its fields become keyword arguments (``layouts``:
    reflection's, of the blocks with no descriptor: :func:`with_layout`)."""
    variable = merged.variable if merged.variable not in ("entryPointParams", "") else ""
    return block(shader, with_layout(Binding.merged(None, merged), layouts), variable, "push")


def with_layout(b: Binding, layouts: tuple[BlockLayout, ...]) -> Binding:
    """A block the SPIR-V alone described, given reflection's layout of the block of that name
    (its fields and offsets, which make struct fields values and are checked); as it was where
    reflection describes none."""
    found = next((lay for lay in layouts if lay.variable and lay.variable == b.variable), None)
    return replace(b, fields=found.fields, offsets=found.offsets) if found is not None else b


# The compiler-args that give each HLSL register class its own bindings (t0, s0, u0 and b0 all
# land on Vulkan binding 0 where no `[[vk::binding]]` says otherwise).
SHIFTS = ("-fvk-t-shift", "16", "0", "-fvk-s-shift", "32", "0", "-fvk-u-shift", "48", "0")


def _described(r: Resource) -> str:
    return r.descriptor.replace("_", " ") if r.descriptor != "other" else r.type_text


def check_overlaps(shader: Shader, infos: Iterable[EntryInfo]) -> list[HatchSlangError]:
    """One error for each (set, binding) where an entry uses different resources as different
    descriptor types (or counts): a binding holds one. (Views of one buffer at one binding, as
    ``RWStructuredBuffer<float>`` and ``<float4>`` aliases, or those Slang makes, are one
    descriptor type and stay allowed.)"""
    hard: list[HatchSlangError] = []
    seen: set[tuple[int, int]] = set()
    for info in infos:
        by_key: dict[tuple[int, int], list[Resource]] = {}
        for r in info.resources:
            if r.storage != "push_constant":
                by_key.setdefault((r.set or 0, r.binding or 0), []).append(r)
        for key, found in by_key.items():
            kinds = {(r.descriptor, r.array_size) for r in found}
            if len(kinds) > 1 and key not in seen:
                seen.add(key)
                hard.append(_overlap_error(shader, info.name, key, found))
    return hard


def _overlap_error(shader: Shader, entry: str, key: tuple[int, int], found: list[Resource]) -> ShaderError:
    """The error for resources of different descriptor types at one binding, each named with its
    declaration's line (in source order), and the ways to separate them."""
    lines = [declared_at(shader.source, python_name(r.variable, r.variable).split("_")[0]) for r in found]
    order = sorted(range(len(found)), key=lambda k: (lines[k] is None, lines[k] or 0))
    named = [
        f"`{found[k].variable or '?'}` ({_described(found[k])}, "
        f"{shader.rel}{f':{lines[k]}' if lines[k] is not None else ''})"
        for k in order
    ]
    where = f"set {key[0]}, binding {key[1]}" if key[0] else f"binding {key[1]}"
    shifts = ", ".join(f'"{s}"' for s in SHIFTS)
    return ShaderError(
        shader.rel,
        lines[order[0]],
        f"entry `{entry}` uses {', '.join(named[:-1])} and {named[-1]} at one {where}; a binding holds "
        "one descriptor type. Give each its own binding with [[vk::binding(n)]], or, for HLSL "
        "registers (register(t0), register(s0), register(u0) and register(b0) all become binding 0), "
        f"shift the register classes apart with hatch-slang's "
        f"{option_name(HookSettings, 'compiler_args')} = [{shifts}]",
    )
