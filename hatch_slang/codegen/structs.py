"""The NumPy structured dtypes a wrapper module defines for its structs, as literals.

Each struct a data binding holds, a pointer points at or a uniform block holds as a value
(:class:`hatch_slang.spec.structs.Struct`, nested ones first) is one module-level
``np.dtype({...})`` named after the Slang struct (``Particle``), with a comment block giving
each field's offset and how Slang indexes it (a matrix's ``m[i][j]``). The same struct name
under two layouts (a std430 buffer and a std140 cbuffer, say) gets two
names: the first layout met keeps the name, the next ``Particle_2``, ``Particle_3`` ... in the
order of the entries and their bindings. A name that an entry, an argument or a name the module
reads already has takes a trailing ``_``. Names are validated identifiers; field names and
scalar codes reach the code only as string literals.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from slangrt.dtypes import DTYPES

from hatch_slang.codegen import layout
from hatch_slang.comments.expr import ExprError, entry_name
from hatch_slang.spec.model import ShaderSpec
from hatch_slang.spec.structs import Field, Struct, subarray_doc


def structs_of(spec: ShaderSpec) -> list[Struct]:
    """Every struct the module's data bindings hold, its pointers point at or its blocks hold
    as values (each as laid out there), each once, nested
    structs before those that hold them, in the order of the entries and their bindings."""
    out: list[Struct] = []
    for e in spec.entries:
        for b in e.buffers:
            if b.struct is not None:
                _add(b.struct, out)
            for p in b.params:
                if p.struct is not None:
                    _add(p.struct, out)
    return out


def _add(s: Struct, out: list[Struct]) -> None:
    for f in s.fields:
        if f.struct is not None:
            _add(f.struct, out)
    if s not in out:
        out.append(s)


def names(structs: list[Struct], fresh: set[str]) -> dict[Struct, str]:
    """Each struct's module-level name (see the module docstring); ``fresh`` holds the names
    already taken and gains these."""
    out: dict[Struct, str] = {}
    seen: dict[str, int] = {}
    for s in structs:
        base = _identifier(s.name)
        seen[base] = seen.get(base, 0) + 1
        name = base if seen[base] == 1 else f"{base}_{seen[base]}"
        while name in fresh:
            name += "_"
        fresh.add(name)
        out[s] = name
    return out


def _identifier(name: str) -> str:
    """A Slang struct's name as a Python identifier (``Pair<float>``: ``Pair_float``)."""
    text = re.sub(r"\W+", "_", name).strip("_") or "Struct"
    try:
        python = entry_name(text)
    except ExprError:
        return "Struct"
    return python if not python.startswith("_") else "Struct" + python


def definitions(structs: list[Struct], named: dict[Struct, str], np: str, module: str) -> str:
    """The module-level definitions of every struct's dtype, with their comments. Each dtype's
    metadata names it as ``module.Name`` (``"slang_struct"``), so that the runtime's message
    for an array of another dtype can say which to make."""
    if not structs:
        return ""
    out = ["", "# The structured dtypes of the structs the kernels take, laid out as Slang compiled them."]
    for s in structs:
        out += ["", *(f"# {line}" for line in describe(s, named[s]))]
        out += layout.lines(_dtype(s, named, np, f"{module}.{named[s]}"), f"{named[s]} = ")
    return "\n".join(out) + "\n"


def describe(s: Struct, name: str) -> Iterator[str]:
    """The layout in words: ``name``, the size, then each field's offset and form."""
    yield f"{name}: Slang struct `{s.name}`, {s.itemsize} bytes per element."
    for f in s.fields:
        yield f"  +{f.offset:<4} {f.name}: {subarray_doc(f)}"


def _dtype(s: Struct, named: dict[Struct, str], np: str, qualified: str) -> layout.Code:
    fields: list[layout.Code] = [
        layout.Group('"names": [', tuple(_str(f.name) for f in s.fields), "]"),
        layout.Group('"formats": [', tuple(_format(f, named) for f in s.fields), "]"),
        layout.Group('"offsets": [', tuple(str(f.offset) for f in s.fields), "]"),
        f'"itemsize": {s.itemsize}',
    ]
    meta = layout.Group("metadata={", (f'"slang_struct": {_qualified(qualified)}',), "}")
    return layout.call(f"{np}.dtype", [layout.Group("{", tuple(fields), "}"), meta])


def _qualified(text: str) -> str:
    """A double-quoted literal of ``module.Name`` (two validated identifiers)."""
    assert text.isascii() and re.fullmatch(r"\w+\.\w+", text), text
    return f'"{text}"'


def _format(f: Field, named: dict[Struct, str]) -> layout.Code:
    base = named[f.struct] if f.struct is not None else _str(DTYPES[f.scalar or "u32"].little_endian)
    if not f.shape:
        return base
    return layout.tuple_of([base, layout.tuple_of([str(n) for n in f.shape])])


def _str(text: str) -> str:
    """A double-quoted literal of a validated name or a dtype code (no escapes needed)."""
    assert text.isascii() and re.fullmatch(r"[\w<>]+", text), text
    return f'"{text}"'
