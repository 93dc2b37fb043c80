"""Check a shader's comment contract against what the compiler reflected, and merge the two.

The result, one :class:`EntrySpec` per entry point, is everything code generation needs. A
disagreement between comment and code (a ``t`` register on a read-write buffer, a dtype that is
not the element type, a group size that is not the entry's ``[numthreads]``) names the comment's
line; with ``strict = false`` it becomes a warning and reflection wins where it can.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from hatch_slang.compiler import CompileResult
from hatch_slang.contract import DTYPES, BindingDoc
from hatch_slang.discover import Shader
from hatch_slang.errors import BuildErrors, ShaderError
from hatch_slang.expr import Expr, check_identifier
from hatch_slang.reflection import (
    ReflectedBinding,
    ReflectedEntry,
    normalize_spirv,
    read_all_bindings,
    read_entry,
    scalar_size,
)

_Problem = Callable[[int | None, str], None]
_KIND_WORDS = {"t": "read-only storage buffer", "u": "read-write storage buffer", "b": "uniform buffer"}


@dataclass(frozen=True)
class ParamSlot:
    name: str
    scalar: str  # the packed type: u32, i32, f32, ...
    offset: int  # bytes into the params buffer
    as_float: bool  # Python sees a float (f32 fields and `x_bits` fields)


@dataclass(frozen=True)
class BufferSpec:
    index: int
    name: str
    role: Literal["data", "params"]
    kind: Literal["storage", "uniform"]
    writable: bool
    dtype: str | None  # contract dtype code (f32, ...) for data; None: any dtype
    shape: tuple[Expr, ...] | None  # None: 1-D any length (or anything, when `shape_checked` is False)
    shape_checked: bool
    doc: str
    line: int | None
    params: tuple[ParamSlot, ...] = ()
    params_size: int = 0
    flat: bool = False  # `flat[n]`: any shape, n elements in all


@dataclass(frozen=True)
class EntrySpec:
    name: str
    threads: tuple[int, int, int]
    buffers: tuple[BufferSpec, ...]  # the bindings this entry uses, by index
    spirv: bytes
    grid: tuple[Expr, ...] | None  # None: the caller passes grid=
    grid_text: str | None
    inferable: tuple[str, ...]  # dims read off array shapes
    params_required: tuple[str, ...]
    params_optional: tuple[str, ...]  # params that are dims: inferred when omitted


@dataclass(frozen=True)
class ShaderSpec:
    shader: Shader
    entries: tuple[EntrySpec, ...]
    dependencies: tuple[str, ...]
    warnings: tuple[str, ...]


def build_spec(shader: Shader, result: CompileResult, *, strict: bool = True) -> ShaderSpec:
    if result.error is not None:
        raise result.error
    c = shader.contract
    problems: list[ShaderError] = []

    def problem(line: int | None, msg: str) -> None:
        problems.append(ShaderError(shader.rel, line, msg))

    warnings: list[str] = []
    if result.warnings.strip():
        warnings.append(result.warnings.strip())
    reflected_all = {b.index: b for b in read_all_bindings(result.entries[0].reflection)}

    documented: dict[int, BufferSpec] = {}
    if c.bindings is None:
        warnings.append(
            f"{shader.rel}: no Bindings block; wrappers are built from reflection alone "
            "(argument shapes are not checked and the grid must be passed)"
        )
    else:
        for doc in c.bindings:
            r = reflected_all.get(doc.index)
            if r is None:
                problem(
                    doc.line,
                    f"binding {doc.index} (`{doc.name}`) is not a binding of the shader "
                    f"(it has {sorted(reflected_all) or 'none'})",
                )
                continue
            documented[doc.index] = _from_doc(doc, r, problem)

    compiled_names = {e.name for e in result.entries}
    for d in c.entry_dispatch:
        for name in d.entries:
            if name not in compiled_names:
                problem(
                    d.line,
                    f"Dispatch names entry `{name}`, which is not an entry point of this shader "
                    f"(it has {', '.join(sorted(compiled_names))})",
                )
    entries = []
    for compiled in result.entries:
        spirv = normalize_spirv(compiled.spirv)
        refl = read_entry(compiled.reflection, compiled.name, compiled.spirv)
        buffers = []
        for r in refl.bindings:
            if r.index in documented:
                buffers.append(documented[r.index])
                continue
            if c.bindings is not None:
                problem(
                    c.bindings_line,
                    f"binding {r.index} (`{r.variable}`) is used by entry "
                    f"`{refl.name}` but missing from the Bindings block",
                )
            buffers.append(_from_reflection(r))
        entries.append(_entry(shader, refl, tuple(buffers), spirv, problem))

    if problems:
        if strict:
            raise problems[0] if len(problems) == 1 else BuildErrors(list(problems))
        warnings += [str(p) for p in problems]
    return ShaderSpec(shader, tuple(entries), result.dependencies, tuple(warnings))


def _from_doc(doc: BindingDoc, r: ReflectedBinding, problem: _Problem) -> BufferSpec:
    kind, writable = r.kind, r.writable
    if doc.register is not None:
        actual = "b" if r.kind == "uniform" else "u" if r.writable else "t"
        if actual != doc.register:
            problem(
                doc.line,
                f"binding `{doc.name}` is declared `{doc.register}{doc.index}` "
                f"({_KIND_WORDS[doc.register]}) but the shader's `{r.variable}` is a "
                f"{_KIND_WORDS[actual]}; write `{actual}{doc.index}`",
            )
    if doc.role == "data":
        assert doc.dtype is not None
        held = r.scalar_types
        if held and doc.dtype not in held:
            views = " / ".join(sorted(held))
            problem(
                doc.line,
                f"binding `{doc.name}` is declared {doc.dtype} but the shader's `{r.variable}` holds {views}",
            )
        return BufferSpec(
            doc.index,
            doc.name,
            "data",
            kind,
            writable,
            doc.dtype,
            doc.shape,
            True,
            doc.doc,
            doc.line,
            flat=doc.flat,
        )

    slots: list[ParamSlot] = []
    per_element = len(r.scalars)
    if per_element == 0:
        problem(
            doc.line,
            f"params binding `{doc.name}`: the shader's `{r.variable}` has no "
            "element layout hatch-slang can pack (use uint, uintN or a struct of scalars)",
        )
        per_element = 1
    n_fields = len(doc.fields)
    by_element = any(f.element is not None for f in doc.fields)
    if by_element:
        longest = max(f.slot + 1 for f in doc.fields)
        if longest > per_element:
            problem(
                doc.line,
                f"params binding `{doc.name}` lists {longest} fields for one element but an "
                f"element of `{r.variable}` holds {per_element}",
            )
        if r.kind == "uniform" and any(f.element for f in doc.fields):
            problem(doc.line, f"params binding `{doc.name}`: a uniform buffer holds one element, [0]")
    elif r.kind == "uniform" and n_fields > per_element:
        problem(
            doc.line,
            f"params binding `{doc.name}` lists {n_fields} fields but the shader's "
            f"`{r.variable}` holds {per_element}",
        )
    elif len(r.scalars) > 1 and len({s.scalar for s in r.scalars}) > 1 and n_fields > per_element:
        # A struct of mixed types cannot be continued into a second element by position.
        problem(
            doc.line,
            f"params binding `{doc.name}` lists {n_fields} fields but one element of "
            f"`{r.variable}` holds {per_element}; write `{doc.name}[1] = (...)` for the next element",
        )
    stride = r.element_size or 4
    size = 0
    elements = 1
    for f in doc.fields:
        element, k = (f.element, f.slot) if f.element is not None else divmod(f.slot, per_element)
        if k >= per_element:
            continue  # reported above
        elements = max(elements, element + 1)
        sc = r.scalars[k] if r.scalars else None
        scalar = sc.scalar if sc else "u32"
        offset = element * stride + (sc.offset if sc else 4 * k)
        size = max(size, offset + scalar_size(scalar))
        if f.name is None:
            continue
        if f.is_bits and scalar not in ("u32", "i32", "f32"):
            problem(doc.line, f"params field `{f.name}_bits` needs a 32-bit slot, not {scalar}")
        as_float = f.is_bits or scalar in ("f32", "f16", "f64")
        slots.append(ParamSlot(f.name, "f32" if f.is_bits else scalar, offset, as_float))
    size = max(size, stride * elements)
    size = -(-size // 16) * 16
    return BufferSpec(
        doc.index, doc.name, "params", kind, writable, None, None, True, doc.doc, doc.line, tuple(slots), size
    )


def _from_reflection(r: ReflectedBinding) -> BufferSpec:
    name = r.variable if check_identifier(r.variable) is None else f"binding{r.index}"
    dtype = r.scalar_type if r.scalar_type in DTYPES and r.kind == "storage" else None
    return BufferSpec(
        r.index,
        name,
        "data",
        r.kind,
        r.writable,
        dtype,
        None,
        False,
        f"`{r.variable}` (from reflection)",
        None,
    )


def _entry(
    shader: Shader,
    refl: ReflectedEntry,
    buffers: tuple[BufferSpec, ...],
    spirv: bytes,
    problem: _Problem,
) -> EntrySpec:
    c = shader.contract
    data_names = {b.name for b in buffers if b.role == "data"}
    fields: dict[str, ParamSlot] = {}
    for b in buffers:
        for p in b.params:
            if p.name in data_names or p.name in fields:
                raise ShaderError(shader.rel, b.line, f"name `{p.name}` is used twice in entry `{refl.name}`")
            fields[p.name] = p
    if refl.name in data_names | set(fields):
        raise ShaderError(shader.rel, c.entries_line, f"entry `{refl.name}` has an argument of the same name")

    inferable: list[str] = []
    for b in buffers:
        for dim in b.shape or ():
            if dim.is_name and dim.names[0] not in inferable:
                if dim.names[0] in data_names:
                    raise ShaderError(
                        shader.rel, b.line, f"dimension `{dim.names[0]}` is also a binding name"
                    )
                inferable.append(dim.names[0])
    known = set(inferable) | set(fields)
    for b in buffers:
        for dim in b.shape or ():
            for name in dim.names:
                if name not in known:
                    raise ShaderError(
                        shader.rel,
                        b.line,
                        f"shape of `{b.name}` uses `{name}`, which no "
                        "params field or bare dimension of another binding defines",
                    )
    grid = None
    d = c.dispatch_for(refl.name)
    if d is not None:
        for e in d.grid:
            for name in e.names:
                if name not in known:
                    raise ShaderError(
                        shader.rel,
                        d.line,
                        f"Dispatch uses `{name}`, which is neither a "
                        f"params field nor a dimension of a binding used by `{refl.name}`",
                    )
        total = refl.threads[0] * refl.threads[1] * refl.threads[2]
        if d.group_size != total:
            problem(
                d.line,
                f"Dispatch says groups of {d.group_size} but entry `{refl.name}` has "
                f"[numthreads({', '.join(map(str, refl.threads))})] = {total} threads",
            )
        grid = d.grid
    required = tuple(n for n in fields if n not in inferable)
    optional = tuple(n for n in fields if n in inferable)
    return EntrySpec(
        refl.name,
        refl.threads,
        buffers,
        spirv,
        grid,
        d.text if d else None,
        tuple(inferable),
        required,
        optional,
    )
