"""The function named after a generic entry, which runs the instance a call's array dtypes pick.

``gscale<float>`` and ``gscale<half>`` are wrappers of their own (``gscale_float``,
``gscale_half``); where the instances' arrays differ in dtype, ``gscale`` is one more function,
typed with an ``@overload`` per instance, that hands its arguments to the instance whose dtypes
they have (``slangrt.wrapper_api.pick``). Names reach the code as validated identifiers (the
entries' wrapper names, their array arguments), dtypes as string literals.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from slangrt.dtypes import DTYPES

from hatch_slang.codegen import layout
from hatch_slang.comments.expr import entry_name
from hatch_slang.spec.model import EntrySpec, ShaderSpec


@dataclass(frozen=True)
class Picker:
    """The function of one generic entry."""

    python: str  # its name: the generic entry's wrapper name (`gscale`)
    generic: str  # the generic entry as Slang spells it
    arrays: tuple[str, ...]  # the array arguments, in positional order (every instance's)
    instances: tuple[EntrySpec, ...]
    # An entry with interface-typed parameters: their names, the keywords naming the conforming
    # types to run (`op="Square"`), and each instance's types, one per keyword; else () and ()
    # (picked by dtype).
    keywords: tuple[str, ...] = ()
    types: tuple[tuple[str, ...], ...] = ()


def _arrays(e: EntrySpec) -> tuple[str, ...]:
    return tuple(b.name for b in e.buffers if b.role == "data" and b.kind != "sampler")


def _dtype(e: EntrySpec, name: str) -> str | None:
    b = next(b for b in e.buffers if b.name == name and b.role == "data")
    return DTYPES[b.dtype].numpy if b.dtype else None


def pickers(spec: ShaderSpec) -> list[Picker]:
    """A picker for each generic entry whose instances take the same array arguments in
    different dtypes (instances that differ only in other ways are called by name)."""
    by_generic: dict[str, list[EntrySpec]] = {}
    for e in spec.entries:
        inst = spec.shader.instance(e.name)
        if inst is not None:
            by_generic.setdefault(inst.generic, []).append(e)
    out: list[Picker] = []
    for generic, entries in by_generic.items():
        arrays = _arrays(entries[0])
        kinds = [spec.shader.instance(e.name) for e in entries]
        keywords = {i.keywords for i in kinds if i is not None}
        if keywords and keywords != {()}:
            [keys] = keywords
            if not any(k in _names(e) for k in keys for e in entries):
                types = tuple(i.args for i in kinds if i is not None)
                out.append(Picker(entry_name(generic), generic, arrays, tuple(entries), keys, types))
            continue
        if not arrays or any(_arrays(e) != arrays for e in entries):
            continue
        if len({tuple(_dtype(e, a) for a in arrays) for e in entries}) > 1:
            out.append(Picker(entry_name(generic), generic, arrays, tuple(entries)))
    return out


def dtypes_of(e: EntrySpec, arrays: tuple[str, ...]) -> tuple[str | None, ...]:
    """The NumPy dtypes ``e`` takes for its array arguments ``arrays`` (None: any)."""
    return tuple(_dtype(e, a) for a in arrays)


def _names(e: EntrySpec) -> set[str]:
    return {b.name for b in e.buffers} | {p.name for b in e.buffers for p in b.params if p.name}


def render(
    p: Picker, module: str, parameters: Callable[[EntrySpec], str], own: dict[str, str], helpers: str
) -> str:
    """The picker's overloads (each instance's signature) and its function."""
    if p.keywords:
        return _render_keyword(p, module, parameters, own, helpers)
    text = ""
    for e in p.instances:
        text += f"\n\n@{own['overload']}\ndef {p.python}({parameters(e)}) -> None: ...\n"
    pairs = [
        layout.tuple_of([e.python, layout.tuple_of([_lit(_dtype(e, a)) for a in p.arrays])])
        for e in p.instances
    ]
    arguments: list[layout.Code] = [
        _lit(f"{module}.{p.python}"),
        layout.tuple_of([_lit(a) for a in p.arrays]),
        layout.tuple_of(pairs),
        "args",
        "kwargs",
    ]
    body = layout.lines(layout.call(f"{helpers}.pick", arguments), depth=1)
    listed = "\n".join(
        f"    - ``{e.python}``: " + ", ".join(f"{a} {_dtype(e, a) or 'any dtype'}" for a in p.arrays)
        for e in p.instances
    )
    doc = (
        f'    """Run the instance of generic entry ``{p.generic}`` whose array dtypes the arguments have.\n\n'
        f"    The instances (each also a function of its own):\n\n{listed}\n\n"
        "    A dtype no instance takes, or one that several take, is a ``TypeError`` listing them.\n"
        '    """\n'
    )
    signature = f"def {p.python}(*args: {own['Any']}, **kwargs: {own['Any']}) -> None:\n"
    return text + "\n\n" + signature + doc + "\n".join(body) + "\n"


def _with_keyword(parameters: str, keyword: str) -> str:
    """An instance's parameter list with the keyword-only ``keyword`` lines first among its keywords."""
    if "\n    *,\n" in parameters:
        return parameters.replace("\n    *,\n", f"\n    *,\n{keyword}\n", 1)
    return (parameters or "\n") + f"    *,\n{keyword}\n"


def _render_keyword(
    p: Picker, module: str, parameters: Callable[[EntrySpec], str], own: dict[str, str], helpers: str
) -> str:
    """A picker by the keywords that name interface-typed parameters' conforming types (one, as
    ``op="Square"``, passed to ``choose`` as itself; several as tuples)."""
    one = len(p.keywords) == 1
    text = ""
    for e, types in zip(p.instances, p.types):
        typed = "\n".join(f"    {k}: {own['Literal']}[{_lit(t)}]," for k, t in zip(p.keywords, types))
        text += (
            f"\n\n@{own['overload']}\ndef {p.python}({_with_keyword(parameters(e), typed)}) -> None: ...\n"
        )

    def named(types: tuple[str, ...]) -> layout.Code:
        return _lit(types[0]) if one else layout.tuple_of([_lit(t) for t in types])

    pairs = [layout.tuple_of([named(types), e.python]) for e, types in zip(p.instances, p.types)]
    arguments: list[layout.Code] = [
        _lit(f"{module}.{p.python}"),
        _lit(p.keywords[0]) if one else layout.tuple_of([_lit(k) for k in p.keywords]),
        p.keywords[0] if one else layout.tuple_of(list(p.keywords)),
        layout.tuple_of(pairs),
        "args",
        "kwargs",
    ]
    body = layout.lines(layout.call(f"{helpers}.choose", arguments), depth=1)
    listed = "\n".join(
        "    - " + ", ".join(f"``{k}={_lit(t)}``" for k, t in zip(p.keywords, types)) + f": ``{e.python}``"
        for e, types in zip(p.instances, p.types)
    )
    keys = ", ".join(f"``{k}``" for k in p.keywords)
    if one:
        head = (
            f'    """Run the instance of ``{p.generic}`` built for the type {keys} names.\n\n'
            f"    {keys} is a parameter of an interface type; the types it was built for (each\n"
            "    also a function of its own):"
        )
    else:
        head = (
            f'    """Run the instance of ``{p.generic}`` built for the types {keys} name.\n\n'
            f"    {keys} are parameters of an interface type; the types they were built for\n"
            "    (each instance also a function of its own):"
        )
    doc = head + f"\n\n{listed}\n\n    Another value is a ``TypeError`` listing them.\n" + '    """\n'
    star = ", ".join(
        [f"*args: {own['Any']}", *(f"{k}: {own['str']}" for k in p.keywords), f"**kwargs: {own['Any']}"]
    )
    return text + f"\n\ndef {p.python}({star}) -> None:\n" + doc + "\n".join(body) + "\n"


def _lit(text: str | None) -> str:
    return "None" if text is None else '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'
