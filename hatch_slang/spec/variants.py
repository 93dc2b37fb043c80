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


def _check(spec: ShaderSpec, v: VariantsLine, taken: set[str]) -> Variant | str:
    """The function of line ``v``, or why it is left out."""
    try:
        usable = entry_name(v.name) == v.name and not v.name.startswith("_")
    except ExprError:
        usable = False
    if not usable or v.name in taken or v.name in _RESERVED:
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
    for v in lines:
        got = _check(spec, v, taken)
        if isinstance(got, str):
            warnings.append(f"{rel}:{v.line}: warning: {got}")
            continue
        made.append(got)
        taken.add(got.name)
    return replace(spec, variants=tuple(made), warnings=(*spec.warnings, *warnings))
