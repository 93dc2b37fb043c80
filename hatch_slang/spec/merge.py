"""Check a shader's comment contract against what the compiler reflected, and merge the two.

The result, one :class:`EntrySpec` per entry point, is everything code generation needs. A
disagreement between comment and code (a ``t`` register on a read-write buffer, a dtype that is
not the element type, a group size that is not the entry's ``[numthreads]``) names the comment's
line; with ``strict = false`` it becomes a warning and reflection wins where it can.

:func:`build_spec` runs in stages, each returning what it found and the problems it saw: each
entry's SPIR-V is parsed once (:func:`_read_entry`); reflection and SPIR-V are merged into one
:class:`~hatch_slang.spec.model.Binding` per binding (:meth:`Binding.merged`), which every check
reads; the chosen binding list is checked line by line (:func:`_documented`); then each entry's
arguments, sizes and grid (:func:`_entry_spec`). Problems are ``(line, message)`` pairs until
the end, where ``strict`` decides whether they are errors or warnings; what cannot be bound is an
error either way.

The spec's dataclasses are :mod:`hatch_slang.spec.model`'s; what the SPIR-V needs bound beyond the
documented bindings (uncommented uniform and push-constant blocks, buffers reflection missed) and
the check that everything is bound are :mod:`hatch_slang.spec.resources`'.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass, replace

from slangrt.dtypes import DTYPES
from slangrt.spirv import EntryInfo, Module, Resource, read_module, undefined_float64

from hatch_slang.comments import dialect
from hatch_slang.comments.contract import BindingDoc, BindingSet, DispatchDoc, parse_contract
from hatch_slang.comments.expr import argument_name, entry_name
from hatch_slang.compile.compiler import CompileResult
from hatch_slang.compile.discover import Shader, entry_functions
from hatch_slang.errors import BuildErrors, HatchSlangError, ShaderError
from hatch_slang.spec import images
from hatch_slang.spec.constants import entry_constants, group_size_constants
from hatch_slang.spec.model import (
    GRID_ARGUMENT,
    Binding,
    BufferSpec,
    EntrySpec,
    ParamSlot,
    ShaderSpec,
    is_float,
)
from hatch_slang.spec.reflection import (
    BlockLayout,
    ReflectedEntry,
    in_use,
    normalize_spirv,
    read_all_bindings,
    read_entry,
    scalar_size,
    spirv_names,
)
from hatch_slang.spec.resources import (
    article,
    as_declared,
    block,
    check_blocks,
    check_bound,
    check_overlaps,
    declared_descriptors,
    from_spirv,
    has_push,
    push_block,
    push_range,
    python_name,
    unclash,
    unique_names,
    unread_fields,
    with_layout,
)

# The spec's dataclasses live in hatch_slang.spec.model; importing them from here keeps working.
__all__ = ["BufferSpec", "EntrySpec", "ParamSlot", "ShaderSpec", "build_spec"]

# What a stage finds wrong with the comment: (its line, the message). build_spec makes them
# errors, or warnings with `strict = false`.
_Problems = list[tuple[int | None, str]]


_KIND_WORDS = {"t": "read-only storage buffer", "u": "read-write storage buffer", "b": "uniform buffer"}


@dataclass(frozen=True)
class _Compiled:
    """One compiled entry, its SPIR-V parsed once for every stage that reads it."""

    spirv: bytes  # as shipped (normalized)
    reflected: ReflectedEntry
    module: Module
    info: EntryInfo


@dataclass(frozen=True)
class _Documented:
    """The binding lines of the chosen list checked against the compiled code."""

    buffers: dict[tuple[int, int], BufferSpec]  # by (set, binding)
    push: tuple[BindingDoc, ...]  # params lines for the push-constant range (no descriptor)
    problems: _Problems
    # Where a line about an image, sampler or texel buffer (or a buffer documented as one)
    # disagrees with the compiled code, which wins: warnings whatever `strict` says.
    notes: _Problems


@dataclass(frozen=True)
class _Built:
    """One entry's spec, or what stops it."""

    spec: EntrySpec
    warnings: list[str]
    problems: _Problems
    hard: list[HatchSlangError]  # what cannot be bound: an error whatever `strict` says


def build_spec(shader: Shader, result: CompileResult, *, strict: bool = True) -> ShaderSpec:
    """The shader's spec. Each instance of a generic entry is merged on its own (its bindings
    hold its own types: `StructuredBuffer<T>` is f32 in one, f16 in another), the other entries
    together; the specs keep the shader's entry order."""
    if result.error is not None:
        raise result.error
    generated = shader.generated
    if not shader.instances and not generated:
        return _with_map_warnings(_build_group(shader, result, strict=strict))
    compiled = {e.name: e for e in result.entries}
    plain = tuple(n for n in shader.entries if shader.instance(n) is None and n not in generated)
    groups = [plain] if plain else []
    groups += [(i.key,) for i in shader.instances]
    groups += [(n,) for n in shader.entries if n in generated]
    # Generated entries (mapped functions) are read from the compiled code alone: the file's
    # comment documents its own entries, not them.
    bare = replace(shader, contract=parse_contract(shader.rel, ""), notes=(), map_warnings=())
    specs = []
    errors: list[HatchSlangError] = []
    for g in groups:
        of = bare if g[0] in generated else shader
        try:
            specs.append(
                _build_group(of, replace(result, entries=tuple(compiled[n] for n in g)), strict=strict)
            )
        except (ShaderError, BuildErrors) as e:  # every instance's problems, each saying which
            errors += [_of_instance(shader, g, x) for x in (e.errors if isinstance(e, BuildErrors) else [e])]
    if errors:
        raise errors[0] if len(errors) == 1 else BuildErrors(errors)
    by_name = {e.name: e for spec in specs for e in spec.entries}
    bare_notes = _chosen_notes(bare, None)  # (the generated entries have no comment to read)
    warnings = dict.fromkeys(
        w for spec in specs for w in spec.warnings if spec.shader is shader or w not in bare_notes
    )
    spec = ShaderSpec(shader, tuple(by_name[n] for n in shader.entries), result.dependencies, tuple(warnings))
    return _with_map_warnings(spec)


def _with_map_warnings(spec: ShaderSpec) -> ShaderSpec:
    """``spec`` with a warning for each function a `slang-map` line names that is not mapped."""
    shader = spec.shader
    said = [f"{shader.rel}:{n.line}: warning: {n.message}" for n in shader.map_warnings]
    return replace(spec, warnings=(*spec.warnings, *said)) if said else spec


def _of_instance(shader: Shader, group: tuple[str, ...], e: HatchSlangError) -> HatchSlangError:
    """A problem of one instance's group, saying which instance it is of."""
    inst = shader.instance(group[0]) if len(group) == 1 else None
    if inst is None or not isinstance(e, ShaderError) or inst.key in e.message:
        return e
    return ShaderError(e.path, e.line, f"{e.message} (in instance `{inst.spelled}`)")


def _build_group(shader: Shader, result: CompileResult, *, strict: bool) -> ShaderSpec:
    warnings = _compiler_notes(shader, result)
    modules = [read_module(e.spirv) for e in result.entries]
    overlapping = check_overlaps(
        shader, (m.entry(e.name) for m, e in zip(modules, result.entries, strict=True))
    )
    if overlapping:  # before reflection, which would merge them as one binding's views
        raise overlapping[0] if len(overlapping) == 1 else BuildErrors(list(overlapping))
    _no_undefined_float64(shader, result)
    compiled = [
        _read_entry(e.name, e.spirv, e.reflection, m) for m, e in zip(modules, result.entries, strict=True)
    ]
    names = _names_in_use(modules)
    reflected_all = {b.key: in_use(b, names) for b in read_all_bindings(result.entries[0].reflection)}
    declared = declared_descriptors(e.info for e in compiled)
    bindings = {k: Binding.merged(r, declared.get(k)) for k, r in reflected_all.items()}
    chosen = _chosen_set(shader, compiled, bindings)
    warnings += _unknown_parameters(shader, chosen)
    chosen = _typed_for(shader, [e.info.name for e in compiled], chosen)
    warnings += _chosen_notes(shader, chosen)
    documented = _documented(chosen, bindings, has_push(e.info for e in compiled), declared, shader.source)
    warnings += [f"{shader.rel}:{line}: warning: {msg}" for line, msg in documented.notes]
    problems = [*documented.problems, *_dispatch_problems(shader, compiled)]
    pending = {d.name: d for d in documented.push}
    built: list[_Built] = []
    for e in compiled:
        push_doc = pending.pop(next(iter(pending)), None) if pending and _push_blocks(e.info) == 1 else None
        built.append(_entry_spec(shader, e, documented.buffers, chosen, push_doc))
    problems += [p for b in built for p in b.problems]
    problems += [
        (pd.line, f"binding {pd.index} (`{pd.name}`) is not a binding or push-constant block of the shader")
        for pd in pending.values()
    ]
    hard = [h for b in built for h in b.hard]
    if hard:
        raise hard[0] if len(hard) == 1 else BuildErrors(list(hard))
    warnings += [w for b in built for w in b.warnings]
    errors = [ShaderError(shader.rel, line, msg) for line, msg in problems]
    if errors:
        if strict:
            raise errors[0] if len(errors) == 1 else BuildErrors(list(errors))
        warnings += [str(p) for p in errors]
    return ShaderSpec(shader, tuple(b.spec for b in built), result.dependencies, tuple(warnings))


def _no_undefined_float64(shader: Shader, result: CompileResult) -> None:
    """Fail where an entry applies a function Vulkan defines on 32-bit floats only to doubles."""
    for e in result.entries:
        names = undefined_float64(e.spirv)
        if names:
            said = ", ".join(f"`{n}`" for n in names)
            lines = {f.entry: f.line for f in entry_functions(shader)}
            lines.update((n, f.line) for f in shader.mapped for n in f.entries())
            raise ShaderError(
                shader.rel,
                lines.get(e.name),
                f"entry `{e.name}` applies {said} to double-precision values, which Vulkan defines "
                "for 16- and 32-bit floats only (drivers return what they like); compute it in "
                "float, or with a double-precision formula of your own",
            )


def _typed_for(shader: Shader, entries: list[str], chosen: BindingSet | None) -> BindingSet | None:
    """The binding lines as one instance of a generic entry reads them: a line whose dtype is
    the generic's type parameter (`a  T, flat[n]`) takes the dtype the instance's argument for
    it names (`f<bf16>`: bf16; `f<float>`: f32), or reflection's where it names none (`f<Square>`);
    the parameter's name is no part of the line's description."""
    inst = shader.instance(entries[0]) if len(entries) == 1 else None
    if chosen is None or inst is None:
        return chosen
    docs = []
    for doc in chosen.bindings:
        arg = inst.argument(doc.type_word) if doc.type_word else None
        if arg is None:
            docs.append(replace(doc, type_word=None))
            continue
        named = dialect.dtype_word(arg)
        prose = re.sub(rf"^`?{re.escape(doc.type_word or '')}`?[\s,;:]*", "", doc.doc)
        dtype = named[0] if named and not named[1] else None
        docs.append(replace(doc, dtype=dtype, doc=prose, type_word=doc.type_word if dtype else None))
    return replace(chosen, bindings=tuple(docs))


# A word in a binding line's dtype place that reads as a type parameter's name (`T`, `S`, `T1`).
_PARAMETER_LIKE = re.compile(r"[A-Z][A-Za-z0-9]?")


def _unknown_parameters(shader: Shader, chosen: BindingSet | None) -> list[str]:
    """A warning for each binding line whose dtype place holds what reads as a type parameter
    (`x  T, [n]`) that no generic entry of the file has: it stays prose, and the dtype is
    reflection's (a misspelt parameter would otherwise pass unseen)."""
    if chosen is None or not shader.instances:
        return []
    params = {p for i in shader.instances for p in i.params}
    return [
        f"{shader.rel}:{doc.line}: warning: binding `{doc.name}` gives `{doc.type_word}` where its "
        f"dtype goes, which is no type parameter of the file's generic entries "
        f"({', '.join(sorted(params)) or 'they have none'}); its dtype comes from the compiled code"
        for doc in chosen.bindings
        if doc.type_word and _PARAMETER_LIKE.fullmatch(doc.type_word) and doc.type_word not in params
    ]


def _names_in_use(modules: list[Module]) -> dict[tuple[int, int], frozenset[str]]:
    """The variables the group's entries use at each binding, by name: where a file declares
    several views of one binding (``float`` and ``float4``; ``float`` for one instance of a
    generic and ``half`` for another), only those views say what the group's binding holds."""
    names: dict[tuple[int, int], frozenset[str]] = {}
    for m in modules:
        for key, found in spirv_names(m).items():
            names[key] = names.get(key, frozenset()) | found
    return names


_DIAGNOSTIC = re.compile(r"^(?=(?:warning|error|note)\[)", re.M)


def _once(said: str) -> str:
    """Slang's diagnostics with each one said once: every entry (each instance) is its own
    compile, and each repeats the file's warnings."""
    return "\n".join(dict.fromkeys(block.rstrip("\n") for block in _DIAGNOSTIC.split(said) if block.strip()))


def _compiler_notes(shader: Shader, result: CompileResult) -> list[str]:
    """What Slang and the comment's parser said, and the entries a wrapper spells otherwise."""
    warnings: list[str] = []
    if result.warnings.strip():
        # Slang's diagnostics name a location only sometimes: say which file they are about.
        said = _once(result.warnings.strip())
        warnings.append(said if said.startswith(shader.rel) else f"{shader.rel}: Slang says:\n{said}")
    warnings += [f"{shader.rel}:{n.line}: warning: {n.message}" for n in shader.contract.notes]
    warnings += [f"{shader.rel}:{n.line}: note: {n.message}" for n in shader.notes]
    return warnings + _entry_notes(shader)


def _read_entry(name: str, spirv: bytes, reflection: str, module: Module) -> _Compiled:
    return _Compiled(normalize_spirv(spirv), read_entry(reflection, name, module), module, module.entry(name))


def _chosen_set(
    shader: Shader, compiled: list[_Compiled], bindings: dict[tuple[int, int], Binding]
) -> BindingSet | None:
    """Several backends' lists: matched against what the entries use, not every global the file
    declares (a file may keep another backend's buffers it never reads)."""
    used = {k for e in compiled for k in e.reflected.used}
    return _choose_set(
        shader.contract.binding_sets, {k: b for k, b in bindings.items() if k in used} or bindings
    )


def _chosen_notes(shader: Shader, chosen: BindingSet | None) -> list[str]:
    """Which binding list is used, or that there is none; the argument names it spells otherwise."""
    sets = shader.contract.binding_sets
    if chosen is None:
        return [
            f"{shader.rel}: no Bindings block; wrappers are built from reflection alone "
            "(argument shapes are not checked and the grid must be passed)"
        ]
    notes: list[str] = []
    if len(sets) > 1:
        others = ", ".join(f"line {s.line}" for s in sets if s is not chosen)
        label = f"the {chosen.label} binding list" if chosen.label else "the binding list"
        notes.append(
            f"{shader.rel}:{chosen.line}: note: {label} matches the compiled code "
            f"and is used ({others} ignored)"
        )
    return notes + _argument_names(shader, chosen)


def _documented(
    chosen: BindingSet | None,
    bindings: dict[tuple[int, int], Binding],
    push: bool,
    declared: dict[tuple[int, int], Resource],
    source: str,
) -> _Documented:
    """Each binding line of the chosen list as the argument it documents, checked against the
    binding it is; a params line no descriptor has documents the push-constant range."""
    buffers: dict[tuple[int, int], BufferSpec] = {}
    push_docs: list[BindingDoc] = []
    problems: _Problems = []
    notes: _Problems = []
    for doc in chosen.bindings if chosen else ():
        b = _lookup(doc, bindings)
        if b is None and doc.role == "params" and push:
            push_docs.append(doc)
        elif b is None:
            where = f"set {doc.set}, binding {doc.index}" if doc.set else f"binding {doc.index}"
            have = sorted(f"{k[1]}" if not k[0] else f"set {k[0]} binding {k[1]}" for k in bindings)
            problems.append(
                (
                    doc.line,
                    f"{where} (`{doc.name}`) is not a binding of the shader "
                    f"(it has {', '.join(have) or 'none'})",
                )
            )
        elif b.key in declared and images.bindable(declared[b.key]) and images.kind_of(b) is not None:
            buffers[b.key], found = images.from_doc(doc, b, source)
            notes += found
        elif b.opaque or b.descriptor == "other":
            problems += _opaque_doc(doc, b)  # no wrapper binds it: check_bound says so
        else:
            buffers[b.key], found = _from_doc(doc, b)
            problems += found
            notes += images.buffer_notes(doc, b)
    return _Documented(buffers, tuple(push_docs), problems, notes)


def _dispatch_problems(shader: Shader, compiled: list[_Compiled]) -> _Problems:
    """Dispatch lines that name an entry the shader does not have (a generic entry's name is
    one: its line applies to its instances)."""
    names = {e.info.name for e in compiled} | set(shader.entries) | {i.generic for i in shader.instances}
    return [
        (
            d.line,
            f"Dispatch names entry `{name}`, which is not an entry point of this shader "
            f"(it has {', '.join(sorted(names))})",
        )
        for d in shader.contract.entry_dispatch
        for name in d.entries
        if name not in names
    ]


def _entry_spec(
    shader: Shader,
    e: _Compiled,
    documented: dict[tuple[int, int], BufferSpec],
    chosen: BindingSet | None,
    push_doc: BindingDoc | None,
) -> _Built:
    """One entry: its arguments (documented, else from reflection, else from the SPIR-V), checked
    to bind everything it uses, then its sizes and grid."""
    found, warnings, hard = _undocumented(shader, e, documented, chosen)
    push, problems, more = _push_block(shader, e.info, push_doc, e.reflected.blocks)
    buffers = unique_names(as_declared(e.info, [*found, *([push] if push else [])]))
    hard += more + check_bound(shader, e.info, buffers) + check_blocks(shader, e.module, e.info, buffers)
    refl = e.reflected
    spec, entry_problems, entry_warnings = _entry(
        shader, refl, tuple(buffers), e.spirv, _dispatch_for(shader, refl.name), e.module
    )
    return _Built(spec, warnings + entry_warnings, problems + entry_problems, hard)


def _dispatch_for(shader: Shader, entry: str) -> DispatchDoc | None:
    """The Dispatch line of an entry; an instance's own (`Dispatch (gscale_float):`), else its
    generic's (`Dispatch (gscale):`), else the default."""
    inst = shader.instance(entry)
    c = shader.contract
    if inst is not None and not any(entry in d.entries for d in c.entry_dispatch):
        return c.dispatch_for(inst.generic)
    return c.dispatch_for(entry)


def _undocumented(
    shader: Shader,
    e: _Compiled,
    documented: dict[tuple[int, int], BufferSpec],
    chosen: BindingSet | None,
) -> tuple[list[BufferSpec], list[str], list[HatchSlangError]]:
    """The entry's descriptor bindings, by reflection's order then the SPIR-V's: documented ones
    as their lines say, the others from the compiled code (a warning where a list left one out)."""
    by_key = {(r.set or 0, r.binding or 0): r for r in e.info.resources if r.storage != "push_constant"}
    unread = set(chosen.unread) if chosen else set()
    buffers: list[BufferSpec] = []
    warnings: list[str] = []
    hard: list[HatchSlangError] = []
    for r in e.reflected.bindings:
        res = by_key.get(r.key)
        if r.key in documented:
            buffers.append(documented[r.key])
            continue
        if res is not None and res.storage not in ("storage", "uniform") and not images.bindable(res):
            continue  # check_bound says it cannot be bound
        if chosen is not None and r.index not in unread:
            # Left out of the comment: not a contradiction, so reflection fills it in.
            warnings.append(
                f"{shader.rel}:{chosen.line}: warning: binding {r.index} (`{r.variable}`) is used by "
                f"entry `{e.info.name}` but missing from the binding lines; its argument comes from "
                "reflection"
            )
        b = Binding.merged(r, res)
        if images.kind_of(b) is not None:
            buffers.append(images.from_code(b, python_name(b.variable, f"binding{b.index}"), shader.source))
        elif r.kind == "uniform" and b.descriptor == "uniform":
            spec, errors = block(shader, b, r.variable, "uniform")
            buffers.append(spec)
            hard += errors
        else:
            buffers.append(_from_reflection(b))
    covered = {b.key for b in buffers}
    for key, res in sorted(by_key.items()):
        if key in covered:
            continue
        b = Binding.merged(None, res)  # no reflection of it: the SPIR-V alone
        if res.storage == "uniform":  # the default uniform buffer of global `uniform` values
            spec, errors = block(shader, with_layout(b, e.reflected.blocks), res.variable, "uniform")
            buffers.append(spec)
            hard += errors
        elif res.storage == "storage":
            buffers.append(from_spirv(b))
        elif images.bindable(res) and images.kind_of(b) is not None:
            buffers.append(images.from_code(b, python_name(b.variable, f"binding{b.index}"), shader.source))
        # Anything else (an acceleration structure ...) cannot be bound: check_bound says so.
    return buffers, warnings, hard


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


def _choose_set(sets: tuple[BindingSet, ...], bindings: dict[tuple[int, int], Binding]) -> BindingSet | None:
    """The documented set that matches the compiled code best (several backends, one SPIR-V)."""
    if not sets:
        return None

    def score(s: BindingSet) -> tuple[int, int, int]:
        hits = [(d, _lookup(d, bindings)) for d in s.bindings]
        found = [(d, b) for d, b in hits if b is not None]
        agree = sum(_kind_matches(d, b) + _dtype_matches(d, b) for d, b in found)
        names = sum(d.name == b.variable for d, b in found)
        return (len(found) - (len(hits) - len(found)), agree, names)

    return max(sets, key=score)  # the first of equals


def _kind_matches(doc: BindingDoc, b: Binding) -> bool:
    if doc.register is not None:
        return doc.register == b.register
    return doc.role == "params" or b.kind == "storage"


def _dtype_matches(doc: BindingDoc, b: Binding) -> bool:
    if doc.role == "params":
        return b.kind == "uniform" or bool(b.scalars)
    held = b.scalar_types
    return (
        doc.dtype is None or not held or doc.dtype in held or bool(held & _REINTERPRET.get(doc.dtype, set()))
    )


def _lookup(doc: BindingDoc, bindings: dict[tuple[int, int], Binding]) -> Binding | None:
    """The binding a documented one is: by set and index; by index alone if unique."""
    if doc.set is not None:
        return bindings.get((doc.set, doc.index))
    if (0, doc.index) in bindings:
        return bindings[(0, doc.index)]
    found = [b for k, b in bindings.items() if k[1] == doc.index]
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


# What a type standing for one element of a dtype holds it as, in Slang.
_HELD_AS = {"bf16": "uint16_t", "f16": "half", "f32": "float", "f64": "double"}


def _from_doc(doc: BindingDoc, b: Binding) -> tuple[BufferSpec, _Problems]:
    """The argument a binding line documents, and where the line contradicts the binding."""
    problems = _access_problems(doc, b)
    spec, found = _data_from_doc(doc, b) if doc.role == "data" else _params_from_doc(doc, b)
    return spec, problems + found


def _access_problems(doc: BindingDoc, b: Binding) -> _Problems:
    """A register or access word that is not the binding's kind."""
    if doc.register is not None:
        actual = b.register
        if actual != doc.register:
            return [
                (
                    doc.line,
                    f"binding `{doc.name}` is declared `{doc.register}{doc.index}` "
                    f"({_KIND_WORDS[doc.register]}) but the shader's `{b.variable}` is a "
                    f"{_KIND_WORDS[actual]}; write `{actual}{doc.index}`",
                )
            ]
    elif doc.access is not None and doc.role == "data" and (doc.access == "read") == b.writable:
        return [
            (
                doc.line,
                f"binding `{doc.name}` is documented as {_WORDS[doc.access]} but the shader's "
                f"`{b.variable}` is a {'read-write' if b.writable else 'read-only'} buffer",
            )
        ]
    return []


def _data_from_doc(doc: BindingDoc, b: Binding) -> tuple[BufferSpec, _Problems]:
    """An array argument: the line's dtype (else the element type's) and shape."""
    problems: _Problems = []
    held = b.scalar_types
    dtype = doc.dtype
    struct = b.struct if dtype is None and b.kind == "storage" else None
    if dtype is None and struct is None:
        dtype = b.scalar_type if b.scalar_type in DTYPES and b.kind == "storage" else None
    elif dtype is not None and held and dtype not in held and not (held & _REINTERPRET.get(dtype, set())):
        views = " / ".join(sorted(held))
        problems.append(
            (
                doc.line,
                f"binding `{doc.name}` is declared {dtype} but the shader's `{b.variable}` holds {views}",
            )
        )
    elif (
        dtype is not None
        and held
        and doc.type_word
        and not any(DTYPES[h].size == DTYPES[dtype].size for h in held)
    ):
        # The generic's parameter stands for one element: some view must read elements of its size
        # (a bf16 type held in 32-bit words would read two elements as one).
        views = " / ".join(sorted(held))
        problems.append(
            (
                doc.line,
                f"binding `{doc.name}` is of the type parameter `{doc.type_word}`, {dtype} in this "
                f"instance ({DTYPES[dtype].size} bytes an element), but the shader's `{b.variable}` "
                f"holds {views}: no view reads {DTYPES[dtype].size}-byte elements (hold {dtype} as "
                f"{_HELD_AS.get(dtype, dtype)}, or give the line a dtype of its own)",
            )
        )
    spec = BufferSpec(
        b.index,
        argument_name(doc.name),
        "data",
        b.kind,
        b.writable,
        dtype,
        doc.shape,
        doc.shape is not None,
        doc.doc,
        doc.line,
        flat=doc.flat,
        set=b.set,
        raw=_holds_bytes(b, dtype),
        binding=b,
        struct=struct,
    )
    return spec, problems


def _params_from_doc(doc: BindingDoc, b: Binding) -> tuple[BufferSpec, _Problems]:
    """A params buffer: the line's fields packed into the binding's element layout."""
    problems = _params_layout_problems(doc, b)
    slots, size, found = _params_slots(doc, b)
    spec = BufferSpec(
        b.index,
        argument_name(doc.name),
        "params",
        b.kind,
        b.writable,
        None,
        None,
        True,
        doc.doc,
        doc.line,
        slots,
        size,
        set=b.set,
        binding=b,
    )
    return spec, problems + found


def _params_layout_problems(doc: BindingDoc, b: Binding) -> _Problems:
    """Fields a params line lists that the binding's elements cannot hold."""
    problems: _Problems = []
    if not b.scalars:
        problems.append(
            (
                doc.line,
                f"params binding `{doc.name}`: the shader's `{b.variable}` has no "
                "element layout hatch-slang can pack (use uint, uintN or a struct of scalars)",
            )
        )
    per_element = len(b.scalars) or 1  # as if one word, to say what else is wrong
    n_fields = len(doc.fields)
    if any(f.element is not None for f in doc.fields):
        longest = max(f.slot + 1 for f in doc.fields)
        if longest > per_element:
            problems.append(
                (
                    doc.line,
                    f"params binding `{doc.name}` lists {longest} fields for one element but an "
                    f"element of `{b.variable}` holds {per_element}",
                )
            )
        if b.kind == "uniform" and any(f.element for f in doc.fields):
            problems.append(
                (doc.line, f"params binding `{doc.name}`: a uniform buffer holds one element, [0]")
            )
    elif b.kind == "uniform" and n_fields > per_element:
        problems.append(
            (
                doc.line,
                f"params binding `{doc.name}` lists {n_fields} fields but the shader's "
                f"`{b.variable}` holds only {per_element}",
            )
        )
    elif len({s.scalar for s in b.scalars}) > 1 and n_fields > per_element:
        # A struct of mixed types cannot be continued into a second element by position.
        problems.append(
            (
                doc.line,
                f"params binding `{doc.name}` lists {n_fields} fields but one element of "
                f"`{b.variable}` (a struct) holds only {per_element}",
            )
        )
    return problems


def _params_slots(doc: BindingDoc, b: Binding) -> tuple[tuple[ParamSlot, ...], int, _Problems]:
    """The fields of a params line at their offsets, and the buffer's size (whole 16 bytes)."""
    per_element = len(b.scalars) or 1
    stride = b.element_size or 4
    slots: list[ParamSlot] = []
    problems: _Problems = []
    size = 0
    elements = 1
    for f in doc.fields:
        element, k = (f.element, f.slot) if f.element is not None else divmod(f.slot, per_element)
        if k >= per_element:
            continue  # reported by _params_layout_problems
        elements = max(elements, element + 1)
        sc = b.scalars[k] if b.scalars else None
        scalar = sc.scalar if sc else "u32"
        offset = element * stride + (sc.offset if sc else 4 * k)
        size = max(size, offset + scalar_size(scalar))
        if f.literal is not None:
            bounds = DTYPES[scalar].range if scalar in DTYPES else None
            if bounds is not None and not bounds[0] <= f.literal <= bounds[1]:
                # Else every call would fail packing it.
                problems.append(
                    (doc.line, f"params literal {f.literal} does not fit its {scalar} slot {bounds}")
                )
                continue
            slots.append(ParamSlot("", scalar, offset, is_float(scalar), literal=f.literal))
            continue
        if f.name is None:
            continue
        is_bits = f.is_bits or (f.declared in ("f32", "f16") and scalar in ("u32", "i32"))
        if is_bits and scalar not in ("u32", "i32", "f32"):
            problems.append(
                (doc.line, f"params field `{f.name}` holds f32 bits, which need a 32-bit slot, not {scalar}")
            )
        as_float = is_bits or is_float(scalar)
        slots.append(
            ParamSlot(
                argument_name(f.name), "f32" if is_bits else scalar, offset, as_float, derived=f.derived
            )
        )
    size = max(size, stride * elements)
    return tuple(slots), -(-size // 16) * 16, problems


# What reflection calls a descriptor that is no buffer, for messages about one no entry uses.
_OPAQUE_WORDS = {
    "samplerState": "sampler",
    "textureBuffer": "texel buffer",
    "accelerationStructure": "acceleration structure",
}


def _opaque_doc(doc: BindingDoc, b: Binding) -> _Problems:
    """A binding line for an image, sampler, texel buffer or acceleration structure: the comment
    names it; what it cannot say of one (fields, a dtype and shape for a sampler, `u` for a
    read-only one) is a contradiction. The descriptor type is the SPIR-V's (reflection's for a
    binding no entry uses)."""
    spirv = b.descriptor is not None
    what = b.type_text if spirv else _OPAQUE_WORDS.get(b.opaque, "image")
    writable = b.declared_writable if spirv else b.writable
    data_like = "image" in what or "texel buffer" in what  # read and written as arrays
    shown = f"the shader's `{b.variable}` is {article(what)}"
    problems: _Problems = []
    if doc.role == "params":
        problems.append((doc.line, f"binding `{doc.name}` is documented as a params buffer but {shown}"))
    elif not data_like and (doc.dtype is not None or doc.shape is not None):
        problems.append((doc.line, f"binding `{doc.name}` is documented with a dtype or shape but {shown}"))
    if doc.register is not None:
        actual = "u" if writable else "t"
        if doc.register != actual or what == "sampler":
            fix = "a sampler's register is `s`" if what == "sampler" else f"write `{actual}{doc.index}`"
            problems.append(
                (
                    doc.line,
                    f"binding `{doc.name}` is declared `{doc.register}{doc.index}` "
                    f"({_KIND_WORDS[doc.register]}) but {shown}; {fix}",
                )
            )
    elif doc.access is not None and doc.role == "data" and (doc.access == "read") == writable:
        problems.append(
            (
                doc.line,
                f"binding `{doc.name}` is documented as {_WORDS[doc.access]} but {shown}, "
                f"{'read-write' if writable else 'read-only'}",
            )
        )
    return problems


def _from_reflection(b: Binding) -> BufferSpec:
    """An argument for a binding the entry uses and no line documents: its element type and access
    (a buffer of structs: its structured dtype)."""
    struct = b.struct if b.kind == "storage" else None
    dtype = b.scalar_type if b.scalar_type in DTYPES and b.kind == "storage" and struct is None else None
    return BufferSpec(
        b.index,
        python_name(b.variable, f"binding{b.index}"),
        "data",
        b.kind,
        b.writable,
        dtype,
        None,
        False,
        f"`{b.variable}` (from reflection)",
        None,
        set=b.set,
        raw=_holds_bytes(b, dtype),
        binding=b,
        struct=struct,
    )


def _holds_bytes(b: Binding, dtype: str | None) -> bool:
    """Whether the shader reads the binding as bytes packed in wider words: a byte-address
    buffer, or a buffer of 32-bit (or wider) words the comment declares as a narrower type (bytes,
    quantised blocks, f16 or bf16 pairs): an argument of an odd number of halves is padded."""
    if b.byte_address:
        return True
    held = b.scalar_types
    narrow = dtype is not None and dtype in DTYPES and DTYPES[dtype].size < 4  # u8, f16, bf16 ...
    wider = all(h in DTYPES and DTYPES[h].size >= 4 for h in held)  # held in 32-bit words or wider
    return narrow and bool(held) and dtype not in held and wider


def _entry(
    shader: Shader,
    refl: ReflectedEntry,
    buffers: tuple[BufferSpec, ...],
    spirv: bytes,
    d: DispatchDoc | None,
    module: Module,
) -> tuple[EntrySpec, _Problems, list[str]]:
    """An entry's arguments: the sizes its wrapper reads off arrays, takes, computes or leaves
    optional; a name used twice or a grid it cannot compute is an error whatever `strict` says."""
    data_names = {b.name for b in buffers if b.role == "data"}
    buffers = unclash(buffers, data_names)
    fields = _fields(shader, refl.name, buffers, data_names)
    _check_grid_argument(shader, refl.name, buffers, data_names | set(fields), d)
    inferable = _inferable(shader, buffers, data_names)
    known = set(inferable) | set(fields)
    info = module.entry(refl.name)
    taken = data_names | known | ({GRID_ARGUMENT} if d is None else set())
    constants = entry_constants(shader, info, taken, dict(refl.constants))
    known |= {c.name for c in constants}  # (sizes the Dispatch line and shapes may use)
    grid_only = _grid_only(shader, d, known, data_names)
    sizes = known | set(grid_only)
    buffers, warnings = _readable_formulas(shader, buffers, sizes)
    checked, unchecked = _checked_shapes(shader, buffers, sizes)
    fields = {p.name: p for b in checked for p in b.params if p.name}  # the formulas made plain
    derived = {p.name for p in fields.values() if p.derived is not None}
    grid = d.grid if d is not None else None
    used_by_sizes = set(grid_only) | {n for e in grid or () for n in e.names}
    for b in checked:
        used_by_sizes.update(n for dim in b.shape or () for n in dim.names)
        used_by_sizes.update(n for p in b.params if p.derived for n in p.derived.names)
    unread = unread_fields(module, refl.name, checked) - used_by_sizes - set(inferable) - derived
    threads_by = group_size_constants(info)
    spec = EntrySpec(
        refl.name,
        entry_name(refl.name),
        info.local_size if any(threads_by) else refl.threads,  # (their defaults: reflection says 0)
        tuple(checked),
        spirv,
        grid,
        d.text if d else None,
        tuple(inferable),
        tuple(n for n in fields if n not in inferable and n not in derived and n not in unread),
        tuple(n for n in fields if n in inferable and n not in derived),
        grid_only=tuple(grid_only),
        params_unread=tuple(n for n in fields if n in unread),
        grid_line=d.line if d else None,
        constants=constants,
        threads_by=threads_by,
    )
    return spec, _group_size_problems(d, refl, spec.threads_by), warnings + unchecked


def _fields(
    shader: Shader, entry: str, buffers: tuple[BufferSpec, ...], data_names: set[str]
) -> dict[str, ParamSlot]:
    """The entry's params fields by name (each an argument, or written by the wrapper)."""
    fields: dict[str, ParamSlot] = {}
    for b in buffers:
        for p in b.params:
            if not p.name:
                continue
            if p.name in data_names or p.name in fields:
                raise ShaderError(shader.rel, b.line, f"name `{p.name}` is used twice in entry `{entry}`")
            fields[p.name] = p
    return fields


def _check_grid_argument(
    shader: Shader, entry: str, buffers: tuple[BufferSpec, ...], names: set[str], d: DispatchDoc | None
) -> None:
    """Without a Dispatch line the wrapper takes `grid=`: no argument may be called so."""
    if d is None and GRID_ARGUMENT in names:
        line = next(b.line for b in buffers if GRID_ARGUMENT in (b.name, *(p.name for p in b.params)))
        raise ShaderError(
            shader.rel,
            line,
            f"`{GRID_ARGUMENT}` names an argument of entry `{entry}`, which has no Dispatch line: "
            f"its wrapper takes the grid as `{GRID_ARGUMENT}=`; add a Dispatch line or rename it",
        )


def _inferable(shader: Shader, buffers: tuple[BufferSpec, ...], data_names: set[str]) -> list[str]:
    """The dimensions read off array shapes (a bare name in a shape), in order."""
    inferable: list[str] = []
    for b in buffers:
        for dim in b.shape or ():
            if dim.is_name and dim.names[0] not in inferable:
                if dim.names[0] in data_names:
                    raise ShaderError(
                        shader.rel, b.line, f"dimension `{dim.names[0]}` is also a binding name"
                    )
                inferable.append(dim.names[0])
    return inferable


def _grid_only(shader: Shader, d: DispatchDoc | None, known: set[str], data_names: set[str]) -> list[str]:
    """Names only the Dispatch line uses: the wrapper takes them as int arguments."""
    grid_only: list[str] = []
    if d is None:
        return grid_only
    for e in d.grid:
        for name in e.names:
            if name not in known and name not in grid_only:
                if name in data_names:
                    raise ShaderError(
                        shader.rel, d.line, f"Dispatch uses `{name}`, which is an array argument"
                    )
                grid_only.append(name)
    return grid_only


def _group_size_problems(
    d: DispatchDoc | None, refl: ReflectedEntry, by: tuple[str | None, ...] = ()
) -> _Problems:
    """A Dispatch line's group size that is not the entry's [numthreads] (or a number where a
    specialization constant sets it)."""
    if d is None or d.group_size is None:
        return []
    if any(by):
        names = ", ".join(n for n in by if n)
        return [
            (
                d.line,
                f"Dispatch says groups of {d.group_size} but entry `{refl.name}`'s group size is set "
                f"by specialization constant {names}: leave the number off the Dispatch line (the "
                "grid is computed with the value passed)",
            )
        ]
    total = refl.threads[0] * refl.threads[1] * refl.threads[2]
    if d.group_size == total:
        return []
    return [
        (
            d.line,
            f"Dispatch says groups of {d.group_size} but entry `{refl.name}` has "
            f"[numthreads({', '.join(map(str, refl.threads))})] = {total} threads",
        )
    ]


def _readable_formulas(
    shader: Shader, buffers: tuple[BufferSpec, ...], sizes: set[str]
) -> tuple[tuple[BufferSpec, ...], list[str]]:
    """Params fields computed from sizes the entry defines; the others become plain arguments
    (a formula over a computed field is unreadable until that field is itself made plain)."""
    warnings: list[str] = []
    derived = {p.name for b in buffers for p in b.params if p.name and p.derived is not None}
    for p in [p for b in buffers for p in b.params if p.name]:
        bad = [n for n in (p.derived.names if p.derived else ()) if n not in sizes or n in derived]
        if not bad:
            continue
        # Unreadable as a formula: the caller passes the field like any other.
        line = next(b.line for b in buffers if p in b.params)
        warnings.append(
            f"{shader.rel}:{line}: warning: params field `{p.name}` is computed from `{bad[0]}`, "
            "which no array, params field or Dispatch size of this entry defines; the wrapper "
            f"takes `{p.name}` as an argument instead"
        )
        plain = replace(p, derived=None)
        buffers = tuple(replace(b, params=tuple(plain if q is p else q for q in b.params)) for b in buffers)
        derived.discard(p.name)
    return buffers, warnings


def _checked_shapes(
    shader: Shader, buffers: tuple[BufferSpec, ...], sizes: set[str]
) -> tuple[list[BufferSpec], list[str]]:
    """Shapes over names the entry defines are checked; the others are not (with a warning)."""
    checked: list[BufferSpec] = []
    warnings: list[str] = []
    for b in buffers:
        unknown = [n for dim in b.shape or () for n in dim.names if n not in sizes]
        if unknown:
            warnings.append(
                f"{shader.rel}:{b.line}: warning: the shape of `{b.name}` uses `{unknown[0]}`, which no "
                "params field or bare dimension defines; its shape is not checked"
            )
            b = replace(b, shape=None, shape_checked=False)
        checked.append(b)
    return checked, warnings


def _push_blocks(info: EntryInfo) -> int:
    """How many blocks declare the entry's push-constant range (they share it)."""
    return sum(r.storage == "push_constant" for r in info.resources)


def _push_block(
    shader: Shader, info: EntryInfo, doc: BindingDoc | None, layouts: tuple[BlockLayout, ...]
) -> tuple[BufferSpec | None, _Problems, list[HatchSlangError]]:
    """The entry's push-constant range: documented (a params line) or from its members
    (``layouts``: reflection's of the blocks with no descriptor)."""
    found = push_range(info)
    if found is None:
        return None, [], []
    merged, _ = found
    if doc is None:
        spec, hard = push_block(shader, merged, layouts)
        return spec, [], hard
    spec, problems = _from_doc(doc, Binding.merged(None, merged))
    return replace(spec, kind="push", params_size=-(-max(merged.size, 4) // 4) * 4), problems, []
