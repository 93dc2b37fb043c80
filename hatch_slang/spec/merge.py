"""Check a shader's comment contract against what the compiler reflected, and merge the two.

The result, one :class:`EntrySpec` per entry point, is everything code generation needs. A
disagreement between comment and code (a ``t`` register on a read-write buffer, a dtype that is
not the element type, a group size that is not the entry's ``[numthreads]``) names the comment's
line; with ``strict = false`` it becomes a warning and reflection wins where it can.

The spec's dataclasses are :mod:`hatch_slang.spec.model`'s; what the SPIR-V needs bound beyond the
documented bindings (uncommented uniform and push-constant blocks, buffers reflection missed) and
the check that everything is bound are :mod:`hatch_slang.spec.resources`'.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Callable
from dataclasses import replace

from slangrt.dtypes import DTYPES
from slangrt.spirv import EntryInfo, Module, Resource, read_module

from hatch_slang.comments.contract import BindingDoc, BindingSet, DispatchDoc
from hatch_slang.comments.expr import argument_name, entry_name
from hatch_slang.compile.compiler import CompileResult
from hatch_slang.compile.discover import Shader, entry_functions
from hatch_slang.errors import BuildErrors, HatchSlangError, ShaderError
from hatch_slang.spec.model import GRID_ARGUMENT, BufferSpec, EntrySpec, ParamSlot, ShaderSpec, is_float
from hatch_slang.spec.reflection import (
    ReflectedBinding,
    ReflectedEntry,
    normalize_spirv,
    read_all_bindings,
    read_entry,
    scalar_size,
    used_bindings,
)
from hatch_slang.spec.resources import (
    article,
    as_declared,
    block,
    check_blocks,
    check_bound,
    declared_descriptors,
    from_spirv,
    has_push,
    push_block,
    push_range,
    push_view,
    python_name,
    unclash,
    unique_names,
    unread_fields,
)

# The spec's dataclasses live in hatch_slang.spec.model; importing them from here keeps working.
__all__ = ["BufferSpec", "EntrySpec", "ParamSlot", "ShaderSpec", "build_spec"]

_Problem = Callable[[int | None, str], None]


_KIND_WORDS = {"t": "read-only storage buffer", "u": "read-write storage buffer", "b": "uniform buffer"}


def build_spec(shader: Shader, result: CompileResult, *, strict: bool = True) -> ShaderSpec:
    if result.error is not None:
        raise result.error
    c = shader.contract
    problems: list[ShaderError] = []

    def problem(line: int | None, msg: str) -> None:
        problems.append(ShaderError(shader.rel, line, msg))

    warnings: list[str] = []
    if result.warnings.strip():
        # Slang's diagnostics name a location only sometimes: say which file they are about.
        said = result.warnings.strip()
        warnings.append(said if said.startswith(shader.rel) else f"{shader.rel}: Slang says:\n{said}")
    warnings += [f"{shader.rel}:{n.line}: warning: {n.message}" for n in c.notes]
    warnings += _entry_notes(shader)
    reflected_all = {b.key: b for b in read_all_bindings(result.entries[0].reflection)}

    # Several backends' lists: match them against what the entries use, not every global the
    # file declares (a file may keep another backend's buffers it never reads).
    used: set[tuple[int, int]] = set()
    for compiled in result.entries:
        used |= {(s, b) for s, b in used_bindings(compiled.spirv)}
    chosen = _choose_set(
        c.binding_sets, {k: r for k, r in reflected_all.items() if k in used} or reflected_all
    )
    if len(c.binding_sets) > 1 and chosen is not None:
        others = ", ".join(f"line {s.line}" for s in c.binding_sets if s is not chosen)
        label = f"the {chosen.label} binding list" if chosen.label else "the binding list"
        warnings.append(
            f"{shader.rel}:{chosen.line}: note: {label} matches the compiled code "
            f"and is used ({others} ignored)"
        )
    documented: dict[tuple[int, int], BufferSpec] = {}
    modules = {e.name: read_module(e.spirv) for e in result.entries}
    declared = declared_descriptors(m.entry(name) for name, m in modules.items())
    push_docs: list[BindingDoc] = []
    hard: list[HatchSlangError] = []  # what cannot be bound: an error whatever `strict` says
    unread: set[int] = set(chosen.unread) if chosen else set()
    if chosen is None:
        warnings.append(
            f"{shader.rel}: no Bindings block; wrappers are built from reflection alone "
            "(argument shapes are not checked and the grid must be passed)"
        )
    else:
        warnings += _argument_names(shader, chosen)
        for doc in chosen.bindings:
            r = _lookup(doc, reflected_all)
            if r is None and doc.role == "params" and has_push(result):
                push_docs.append(doc)  # a documented push-constant block (no descriptor binding)
                continue
            if r is None:
                where = f"set {doc.set}, binding {doc.index}" if doc.set else f"binding {doc.index}"
                have = sorted(f"{k[1]}" if not k[0] else f"set {k[0]} binding {k[1]}" for k in reflected_all)
                problem(
                    doc.line,
                    f"{where} (`{doc.name}`) is not a binding of the shader "
                    f"(it has {', '.join(have) or 'none'})",
                )
                continue
            res = declared.get(r.key)
            if r.opaque or (res is not None and res.storage == "other"):
                _opaque_doc(doc, r, res, problem)  # no wrapper binds it yet: check_bound says so
                continue
            documented[r.key] = _from_doc(doc, r, problem)

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
    pending = {d.name: d for d in push_docs}
    for compiled in result.entries:
        spirv = normalize_spirv(compiled.spirv)
        refl = read_entry(compiled.reflection, compiled.name, compiled.spirv)
        module = modules[compiled.name]
        info = module.entry(compiled.name)
        by_key = {(r.set or 0, r.binding or 0): r for r in info.resources if r.storage != "push_constant"}
        buffers = []
        for r in refl.bindings:
            if r.key in documented:
                buffers.append(documented[r.key])
                continue
            res = by_key.get(r.key)
            if res is not None and res.storage not in ("storage", "uniform"):
                continue  # an image or sampler: check_bound says it cannot be bound
            if chosen is not None and r.index not in unread:
                # Left out of the comment: not a contradiction, so reflection fills it in.
                warnings.append(
                    f"{shader.rel}:{chosen.line}: warning: binding {r.index} (`{r.variable}`) is used by "
                    f"entry `{refl.name}` but missing from the binding lines; its argument comes from "
                    "reflection"
                )
            if r.kind == "uniform" and res is not None and res.storage == "uniform":
                buffers.append(block(shader, res, r.variable, "uniform", hard))
            else:
                buffers.append(_from_reflection(r))
        covered = {b.key for b in buffers if b.kind != "push"}
        for key, res in sorted(by_key.items()):
            if key in covered:
                continue
            if res.storage == "uniform":  # the default uniform buffer of global `uniform` values
                buffers.append(block(shader, res, res.variable, "uniform", hard))
            elif res.storage == "storage":
                buffers.append(from_spirv(res))
            # Anything else (an image, a sampler ...) cannot be bound: check_bound says so.
        push = _push_block(shader, info, pending, problem, hard)
        if push is not None:
            buffers.append(push)
        buffers = unique_names(as_declared(info, buffers))
        check_bound(shader, info, buffers, hard)
        check_blocks(shader, module, info, buffers, hard)
        entries.append(
            _entry(shader, refl, tuple(buffers), spirv, c.dispatch_for(refl.name), problem, warnings, module)
        )
    for pd in pending.values():
        problem(
            pd.line, f"binding {pd.index} (`{pd.name}`) is not a binding or push-constant block of the shader"
        )
    if hard:
        raise hard[0] if len(hard) == 1 else BuildErrors(list(hard))

    if problems:
        if strict:
            raise problems[0] if len(problems) == 1 else BuildErrors(list(problems))
        warnings += [str(p) for p in problems]
    return ShaderSpec(shader, tuple(entries), result.dependencies, tuple(warnings))


def _argument_names(shader: Shader, chosen: BindingSet) -> list[str]:
    """Notes for the names of a binding list that the wrappers spell otherwise (a keyword gets a
    trailing `_`); two spellings that are one Python name (NFKC, the keyword rule) are an error."""
    notes: list[str] = []
    seen: dict[str, tuple[str, int]] = {}
    for doc in chosen.bindings:
        spelled = [doc.name, *(f.name for f in doc.fields if f.name is not None)]
        for name in dict.fromkeys(spelled):
            python = argument_name(name)
            new = python not in seen
            first = seen.setdefault(python, (name, doc.line))
            if first[0] != name:
                raise ShaderError(
                    shader.rel,
                    doc.line,
                    f"`{name}` and `{first[0]}` (line {first[1]}) are the same Python name `{python}`",
                )
            if new and python != unicodedata.normalize("NFKC", name):
                notes.append(
                    f"{shader.rel}:{doc.line}: note: `{name}` is a Python keyword; "
                    f"the wrappers call the argument `{python}`"
                )
    return notes


def _entry_notes(shader: Shader) -> list[str]:
    """Notes for the entries whose wrapper function is spelled otherwise (a keyword gets a
    trailing `_`); an entry no function can be named after is an error (:func:`entry_functions`)."""
    return [
        f"{shader.rel}:{f.line}: note: entry point `{f.entry}` is a Python keyword; "
        f"its wrapper function is `{f.python}`"
        for f in entry_functions(shader)
        if f.python != unicodedata.normalize("NFKC", f.entry)
    ]


def _choose_set(
    sets: tuple[BindingSet, ...], reflected: dict[tuple[int, int], ReflectedBinding]
) -> BindingSet | None:
    """The documented set that matches the compiled code best (several backends, one SPIR-V)."""
    if not sets:
        return None

    def score(s: BindingSet) -> tuple[int, int, int]:
        hits = [(d, _lookup(d, reflected)) for d in s.bindings]
        found = [(d, r) for d, r in hits if r is not None]
        agree = sum(_kind_matches(d, r) + _dtype_matches(d, r) for d, r in found)
        names = sum(d.name == r.variable for d, r in found)
        return (len(found) - (len(hits) - len(found)), agree, names)

    return max(sets, key=score)  # the first of equals


def _kind_matches(doc: BindingDoc, r: ReflectedBinding) -> bool:
    if doc.register is not None:
        return doc.register == ("b" if r.kind == "uniform" else "u" if r.writable else "t")
    return doc.role == "params" or r.kind == "storage"


def _dtype_matches(doc: BindingDoc, r: ReflectedBinding) -> bool:
    if doc.role == "params":
        return r.kind == "uniform" or bool(r.scalars)
    held = r.scalar_types
    return (
        doc.dtype is None or not held or doc.dtype in held or bool(held & _REINTERPRET.get(doc.dtype, set()))
    )


def _lookup(doc: BindingDoc, reflected: dict[tuple[int, int], ReflectedBinding]) -> ReflectedBinding | None:
    """The reflected binding a documented one is: by set and index; by index alone if unique."""
    if doc.set is not None:
        return reflected.get((doc.set, doc.index))
    if (0, doc.index) in reflected:
        return reflected[(0, doc.index)]
    found = [r for k, r in reflected.items() if k[1] == doc.index]
    return found[0] if len(found) == 1 else None


_WORDS = {"read": "read-only", "write": "written", "readwrite": "read and written"}
# A comment dtype that differs from the element type but is the same memory read another way:
# bytes of any integer buffer (quantised blocks), f32 or packed f16 bits in 32-bit integers.
_REINTERPRET = {
    "u8": {"u32", "i32", "u16", "i16", "u64", "i64"},
    "i8": {"u32", "i32"},
    "f32": {"u32", "i32"},
    "f16": {"u32"},
    "bf16": {"u16", "u32"},  # its bits, one per uint16_t or two per uint (not `half`: another format)
}


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
    elif doc.access is not None and doc.role == "data" and (doc.access == "read") == r.writable:
        problem(
            doc.line,
            f"binding `{doc.name}` is documented as {_WORDS[doc.access]} but the shader's "
            f"`{r.variable}` is a {'read-write' if r.writable else 'read-only'} buffer",
        )
    if doc.role == "data":
        held = r.scalar_types
        dtype = doc.dtype
        if dtype is None:
            dtype = r.scalar_type if r.scalar_type in DTYPES and r.kind == "storage" else None
        elif held and dtype not in held and not (held & _REINTERPRET.get(dtype, set())):
            views = " / ".join(sorted(held))
            problem(
                doc.line,
                f"binding `{doc.name}` is declared {dtype} but the shader's `{r.variable}` holds {views}",
            )
        return BufferSpec(
            r.index,
            argument_name(doc.name),
            "data",
            kind,
            writable,
            dtype,
            doc.shape,
            doc.shape is not None,
            doc.doc,
            doc.line,
            flat=doc.flat,
            set=r.set,
            raw=_holds_bytes(r, dtype),
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
            f"`{r.variable}` holds only {per_element}",
        )
    elif len(r.scalars) > 1 and len({s.scalar for s in r.scalars}) > 1 and n_fields > per_element:
        # A struct of mixed types cannot be continued into a second element by position.
        problem(
            doc.line,
            f"params binding `{doc.name}` lists {n_fields} fields but one element of "
            f"`{r.variable}` (a struct) holds only {per_element}",
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
        if f.literal is not None:
            bounds = DTYPES[scalar].range if scalar in DTYPES else None
            if bounds is not None and not bounds[0] <= f.literal <= bounds[1]:
                # Else every call would fail packing it.
                problem(doc.line, f"params literal {f.literal} does not fit its {scalar} slot {bounds}")
                continue
            slots.append(ParamSlot("", scalar, offset, is_float(scalar), literal=f.literal))
            continue
        if f.name is None:
            continue
        is_bits = f.is_bits or (f.declared in ("f32", "f16") and scalar in ("u32", "i32"))
        if is_bits and scalar not in ("u32", "i32", "f32"):
            problem(
                doc.line, f"params field `{f.name}` holds f32 bits, which need a 32-bit slot, not {scalar}"
            )
        as_float = is_bits or is_float(scalar)
        python = argument_name(f.name)
        slots.append(ParamSlot(python, "f32" if is_bits else scalar, offset, as_float, derived=f.derived))
    size = max(size, stride * elements)
    size = -(-size // 16) * 16
    return BufferSpec(
        r.index,
        argument_name(doc.name),
        "params",
        kind,
        writable,
        None,
        None,
        True,
        doc.doc,
        doc.line,
        tuple(slots),
        size,
        set=r.set,
    )


# What reflection calls a descriptor that is no buffer, for messages about one no entry uses.
_OPAQUE_WORDS = {
    "samplerState": "sampler",
    "textureBuffer": "texel buffer",
    "accelerationStructure": "acceleration structure",
}


def _opaque_doc(doc: BindingDoc, r: ReflectedBinding, res: Resource | None, problem: _Problem) -> None:
    """A binding line for an image, sampler, texel buffer or acceleration structure: the comment
    names it; what it cannot say of one (fields, a dtype and shape for a sampler, `u` for a
    read-only one) is a contradiction. The descriptor type is the SPIR-V's (reflection's for a
    binding no entry uses)."""
    what = res.type_text if res is not None else _OPAQUE_WORDS.get(r.opaque, "image")
    writable = res.declared_writable if res is not None else r.writable
    data_like = "image" in what or "texel buffer" in what  # read and written as arrays
    shown = f"the shader's `{r.variable}` is {article(what)}"
    if doc.role == "params":
        problem(doc.line, f"binding `{doc.name}` is documented as a params buffer but {shown}")
    elif not data_like and (doc.dtype is not None or doc.shape is not None):
        problem(doc.line, f"binding `{doc.name}` is documented with a dtype or shape but {shown}")
    if doc.register is not None:
        actual = "u" if writable else "t"
        if doc.register != actual or what == "sampler":
            fix = "a sampler's register is `s`" if what == "sampler" else f"write `{actual}{doc.index}`"
            problem(
                doc.line,
                f"binding `{doc.name}` is declared `{doc.register}{doc.index}` "
                f"({_KIND_WORDS[doc.register]}) but {shown}; {fix}",
            )
    elif doc.access is not None and doc.role == "data" and (doc.access == "read") == writable:
        problem(
            doc.line,
            f"binding `{doc.name}` is documented as {_WORDS[doc.access]} but {shown}, "
            f"{'read-write' if writable else 'read-only'}",
        )


def _from_reflection(r: ReflectedBinding) -> BufferSpec:
    name = python_name(r.variable, f"binding{r.index}")
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
        set=r.set,
        raw=_holds_bytes(r, dtype),
    )


def _holds_bytes(r: ReflectedBinding, dtype: str | None) -> bool:
    """Whether the shader reads the binding as bytes packed in wider words: a byte-address
    buffer, or a buffer of 32-bit (or wider) words the comment declares as a narrower type (bytes,
    quantised blocks, f16 or bf16 pairs): an argument of an odd number of halves is padded."""
    if any(v.shape == "byteAddressBuffer" for v in (r, *r.aliases)):
        return True
    held = r.scalar_types
    narrow = dtype is not None and dtype in DTYPES and DTYPES[dtype].size < 4  # u8, f16, bf16 ...
    wider = all(h in DTYPES and DTYPES[h].size >= 4 for h in held)  # held in 32-bit words or wider
    return narrow and bool(held) and dtype not in held and wider


def _entry(
    shader: Shader,
    refl: ReflectedEntry,
    buffers: tuple[BufferSpec, ...],
    spirv: bytes,
    d: DispatchDoc | None,
    problem: _Problem,
    warnings: list[str],
    module: Module,
) -> EntrySpec:
    data_names = {b.name for b in buffers if b.role == "data"}
    buffers = unclash(buffers, data_names)
    fields: dict[str, ParamSlot] = {}
    for b in buffers:
        for p in b.params:
            if not p.name:
                continue
            if p.name in data_names or p.name in fields:
                raise ShaderError(shader.rel, b.line, f"name `{p.name}` is used twice in entry `{refl.name}`")
            fields[p.name] = p
    if d is None and GRID_ARGUMENT in data_names | set(fields):
        line = next(b.line for b in buffers if GRID_ARGUMENT in (b.name, *(p.name for p in b.params)))
        raise ShaderError(
            shader.rel,
            line,
            f"`{GRID_ARGUMENT}` names an argument of entry `{refl.name}`, which has no Dispatch line: "
            f"its wrapper takes the grid as `{GRID_ARGUMENT}=`; add a Dispatch line or rename it",
        )

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
    derived = {p.name for p in fields.values() if p.derived is not None}
    grid_only: list[str] = []
    grid = None
    if d is not None:
        for e in d.grid:
            for name in e.names:
                if name not in known and name not in grid_only:
                    if name in data_names:
                        raise ShaderError(
                            shader.rel, d.line, f"Dispatch uses `{name}`, which is an array argument"
                        )
                    grid_only.append(name)
        if d.group_size is not None:
            total = refl.threads[0] * refl.threads[1] * refl.threads[2]
            if d.group_size != total:
                problem(
                    d.line,
                    f"Dispatch says groups of {d.group_size} but entry `{refl.name}` has "
                    f"[numthreads({', '.join(map(str, refl.threads))})] = {total} threads",
                )
        grid = d.grid
    sizes = known | set(grid_only)
    for p in list(fields.values()):
        bad = [n for n in (p.derived.names if p.derived else ()) if n not in sizes or n in derived]
        if bad:
            # Unreadable as a formula: the caller passes the field like any other.
            line = next(b.line for b in buffers if p in b.params)
            warnings.append(
                f"{shader.rel}:{line}: warning: params field `{p.name}` is computed from `{bad[0]}`, "
                "which no array, params field or Dispatch size of this entry defines; the wrapper "
                f"takes `{p.name}` as an argument instead"
            )
            plain = replace(p, derived=None)
            buffers = tuple(
                replace(b, params=tuple(plain if q is p else q for q in b.params)) for b in buffers
            )
            fields[p.name] = plain
            derived.discard(p.name)
    checked: list[BufferSpec] = []
    for b in buffers:
        unknown = [n for dim in b.shape or () for n in dim.names if n not in sizes]
        if unknown:
            warnings.append(
                f"{shader.rel}:{b.line}: warning: the shape of `{b.name}` uses `{unknown[0]}`, which no "
                "params field or bare dimension defines; its shape is not checked"
            )
            b = replace(b, shape=None, shape_checked=False)
        checked.append(b)
    used_by_sizes = set(grid_only) | {n for e in grid or () for n in e.names}
    for b in checked:
        used_by_sizes.update(n for dim in b.shape or () for n in dim.names)
        used_by_sizes.update(n for p in b.params if p.derived for n in p.derived.names)
    unread = unread_fields(module, refl.name, checked) - used_by_sizes - set(inferable) - derived
    required = tuple(n for n in fields if n not in inferable and n not in derived and n not in unread)
    optional = tuple(n for n in fields if n in inferable and n not in derived)
    return EntrySpec(
        refl.name,
        entry_name(refl.name),
        refl.threads,
        tuple(checked),
        spirv,
        grid,
        d.text if d else None,
        tuple(inferable),
        required,
        optional,
        grid_only=tuple(grid_only),
        params_unread=tuple(n for n in fields if n in unread),
        grid_line=d.line if d else None,
    )


def _push_block(
    shader: Shader,
    info: EntryInfo,
    pending: dict[str, BindingDoc],
    problem: _Problem,
    hard: list[HatchSlangError],
) -> BufferSpec | None:
    """The entry's push-constant range: documented (a params line) or from its members."""
    found = push_range(info)
    if found is None:
        return None
    merged, blocks = found
    doc = pending.pop(next(iter(pending)), None) if len(pending) >= 1 and blocks == 1 else None
    if doc is not None:
        spec = _from_doc(doc, push_view(merged), problem)
        return replace(spec, kind="push", params_size=-(-max(merged.size, 4) // 4) * 4)
    return push_block(shader, merged, hard)
