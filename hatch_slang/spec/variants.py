"""What a shader's ``slang-variants`` lines name (:mod:`hatch_slang.comments.variants`), checked
against its built entries.

A variant function takes what each of its entries takes, so they must take the same arguments:
the same arrays (names, order, dtypes, structs, images, which are written), samplers, and keyword
arguments (required and optional alike). A line that names no entry of the file, entries that
take different arguments, or a function name the module already has, is a warning naming the
line, and the function is left out (the entries stay wrappers of their own).
"""

from __future__ import annotations

from dataclasses import replace

from hatch_slang.comments.expr import ExprError, entry_name
from hatch_slang.comments.variants import VariantsLine, read_variants
from hatch_slang.spec.model import BufferSpec, EntrySpec, ShaderSpec, Variant

__all__ = ["signature", "with_variants"]

# Module-level names of a generated module a variant function may not take.
_RESERVED = frozenset({"torch_ops", "manifest", "slangrt", "np", "npt", "annotations", "Any"})


def _array(b: BufferSpec) -> str:
    """An array argument as messages show it: ``y f32 read-write``."""
    what = b.struct.name if b.struct is not None else b.dtype or "any dtype"
    kind = f" {b.kind}" if b.is_image else ""
    return f"{b.name} {what}{kind} {'read-write' if b.writable else 'read-only'}"


def signature(e: EntrySpec) -> dict[str, str]:
    """What a call of ``e``'s wrapper takes, by kind of argument (compared between variants)."""
    arrays = [_array(b) for b in e.buffers if b.role == "data" and b.kind != "sampler"]
    optional = {*e.params_optional, *e.params_unread, *(c.name for c in e.constants)}
    optional |= {"grid"} if e.grid is None else set()
    return {
        "arrays": ", ".join(arrays) or "none",
        "samplers": ", ".join(sorted(b.name for b in e.buffers if b.kind == "sampler")) or "none",
        "required keywords": ", ".join(sorted({*e.params_required, *e.grid_only})) or "none",
        "optional keywords": ", ".join(sorted(optional)) or "none",
    }


def _entry(spec: ShaderSpec, written: str) -> EntrySpec | None:
    for e in spec.entries:
        if written in (e.python, e.name, spec.shader.spelled(e.name).replace(" ", "")):
            return e
    return None


def _usable(name: str, taken: set[str]) -> bool:
    """Whether ``name`` may be a module-level function of the generated module."""
    try:
        usable = entry_name(name) == name and not name.startswith("_")
    except ExprError:
        usable = False
    return usable and name not in taken and name not in _RESERVED


def _check(spec: ShaderSpec, v: VariantsLine, taken: set[str]) -> Variant | str:
    """The function of line ``v``, or why it is left out."""
    if not _usable(v.name, taken):
        return (
            f"`{v.name}` cannot be the variant function's name (the module has it, or it is no Python name)"
        )
    found: list[EntrySpec] = []
    for w in v.entries:
        e = _entry(spec, w)
        if e is None or e.name in spec.shader.generated:
            names = ", ".join(x.python for x in spec.entries if x.name not in spec.shader.generated)
            return f"`slang-variants` names `{w}`, which is no entry of the file (entries: {names}); left out"
        found.append(e)
    first = signature(found[0])
    for e in found[1:]:
        theirs = signature(e)
        differ = [k for k in first if first[k] != theirs[k]]
        if differ:
            return (
                f"`{found[0].python}` and `{e.python}` take different {differ[0]} ({first[differ[0]]}; "
                f"{theirs[differ[0]]}): the entries of `{v.name}` must take the same arguments; "
                "left out"
            )
    return Variant(v.name, v.line, tuple(e.name for e in found))


def _of_generics(spec: ShaderSpec, v: VariantsLine) -> list[VariantsLine] | None:
    """Where every entry ``v`` names is a generic entry (`gemm_coopmat`, no entry of that name):
    one line per instance they all have, named after ``v`` and the instance (`gemm_f32 =
    gemm_coopmat_f32 gemm_tiled_f32`); else None."""
    by_generic: dict[str, dict[tuple[str, ...], str]] = {}
    for i in spec.shader.instances:
        by_generic.setdefault(i.generic, {})[i.args] = i.key
    if not all(w in by_generic and _entry(spec, w) is None for w in v.entries):
        return None
    first = by_generic[v.entries[0]]
    lines = []
    for args, key in first.items():
        if all(args in by_generic[w] for w in v.entries[1:]):
            suffix = key[len(v.entries[0]) :] if key.startswith(v.entries[0]) else "_" + "_".join(args)
            lines.append(VariantsLine(v.line, v.name + suffix, tuple(by_generic[w][args] for w in v.entries)))
    return lines


def _made(
    spec: ShaderSpec, v: VariantsLine, taken: set[str]
) -> tuple[list[Variant], Variant | None, list[str]]:
    """The variant functions of line ``v`` (with a picker by dtype where it names generic
    entries), and why any is left out."""
    lines = _of_generics(spec, v)
    made: list[Variant] = []
    problems: list[str] = []
    for line in lines if lines is not None else [v]:
        got = _check(spec, line, taken)
        if isinstance(got, str):
            problems.append(got)
        else:
            made.append(got)
            taken.add(got.name)
    if lines is None or not made:
        return made, None, problems
    if len(made) > 1 and len({_dtypes(spec, m) for m in made}) == 1:
        names = ", ".join(f"`{m.name}`" for m in made)
        why = (
            f"`{v.name}` is not made: its instances' functions ({names}) take the same dtypes, so "
            "nothing tells them apart by dtype; call them by name"
        )
        return made, None, [*problems, why]
    if not _usable(v.name, taken):
        return made, None, [*problems, f"`{v.name}` cannot be the name of the function that picks by dtype"]
    taken.add(v.name)
    return made, Variant(v.name, v.line, tuple(m.name for m in made)), problems


def _dtypes(spec: ShaderSpec, v: Variant) -> tuple[str | None, ...]:
    """The dtypes the arrays of ``v``'s first entry take (what a function picking among the
    instances' variant functions tells them apart by)."""
    first = next(e for e in spec.entries if e.name == v.entries[0])
    return tuple(b.dtype for b in first.buffers if b.role == "data" and b.kind != "sampler")


def with_variants(spec: ShaderSpec) -> ShaderSpec:
    """``spec`` with the functions its ``slang-variants`` lines make, and a warning for each
    line that makes none."""
    lines, notes = read_variants(spec.shader.source)
    if not lines and not notes:
        return spec
    rel = spec.shader.rel
    warnings = [f"{rel}:{n.line}: warning: {n.message}" for n in notes]
    taken = {e.python for e in spec.entries} | {f.name for f in spec.shader.mapped}
    taken |= {i.generic for i in spec.shader.instances}  # (the functions that pick an instance)
    taken |= {b.struct.name for e in spec.entries for b in e.buffers if b.struct is not None}
    made: list[Variant] = []
    pickers: list[Variant] = []
    for v in lines:
        got, picker, problems = _made(spec, v, taken)
        made += got
        pickers += [picker] if picker is not None else []
        warnings += [f"{rel}:{v.line}: warning: {p}" for p in problems]
    return replace(
        spec, variants=tuple(made), variant_pickers=tuple(pickers), warnings=(*spec.warnings, *warnings)
    )
