"""The ``torch_ops`` namespace of a generated module (option ``torch-ops``): each wrapper that
torch can call as a custom op, with its schema (``slangrt._cuda._ops.TorchOps`` registers them
on first use, so importing the module never imports torch).

An entry's op takes its arrays as ``Tensor`` (a written one marked mutated: ``Tensor(a!)``) and
its scalar keywords as the wrapper does. Entries torch has no types for are left out, each
named in a comment with the reason: images, samplers and texel buffers, buffers of structs,
pointers, struct, vector and matrix values.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from hatch_slang.config.settings import HookSettings, option_name
from hatch_slang.spec.model import EntrySpec, ParamSlot

from . import layout
from .generics import Picker

__all__ = ["namespace", "render", "schema"]


def namespace(package: str, module: str) -> str:
    """The ops' torch namespace: the module's import path with ``_`` for ``.`` (``mypkg_kernels_ew``)."""
    return re.sub(r"\W", "_", f"{package.replace('/', '_')}_{module}")


def _scalar_type(slot: ParamSlot) -> str | None:
    if slot.shape or slot.struct is not None or slot.scalar in ("ptr", "struct"):
        return None
    if slot.scalar == "bool":
        return "bool"
    return "float" if slot.as_float else "int"


def schema(e: EntrySpec) -> tuple[str, tuple[str, ...]] | str:
    """``(schema, mutated arguments)`` of entry ``e``'s op, or why it has none."""
    slots = {p.name: p for b in e.buffers for p in b.params}
    args: list[str] = []
    mutated: list[str] = []
    for b in e.buffers:
        if b.role != "data":
            continue
        if b.is_image:
            return f"`{b.name}` is an image, sampler or texel buffer"
        if b.struct is not None:
            return f"`{b.name}` is a buffer of structs"
        if b.writable:
            mutated.append(b.name)
            args.append(f"Tensor({_alias(len(mutated) - 1)}!) {b.name}")
        else:
            args.append(f"Tensor {b.name}")
    keywords: list[str] = []
    defaults = {"int": "0", "float": "0.0", "bool": "False"}
    for names, how in ((e.params_required, ""), (e.params_optional, "none"), (e.params_unread, "zero")):
        for name in names:
            kind = _scalar_type(slots[name])
            if kind is None:
                return f"`{name}` is a vector, matrix, struct or pointer value"
            # as the wrapper takes it: required, inferred when None, or 0 (a field never read)
            text = {
                "": f"{kind} {name}",
                "none": f"{kind}? {name}=None",
                "zero": f"{kind} {name}={defaults[kind]}",
            }
            keywords.append(text[how])
    keywords += [f"int {name}" for name in e.grid_only]
    if e.grid is None:
        keywords.append("int[] grid")
    for c in e.constants:
        return f"`{c.name}` is a specialization constant"
    if keywords:
        args += ["*", *keywords]
    return f"({', '.join(args)}) -> ()", tuple(mutated)


def _alias(i: int) -> str:
    letters = "abcdefghijklmnopqrstuvwxyz"
    return letters[i % 26] + (str(i // 26) if i >= 26 else "")


def _picked(p: Picker) -> tuple[str, tuple[str, ...]] | str:
    """The op of a function that picks a generic entry's instance by dtype: its instances' one
    schema (the function takes the same arguments)."""
    if p.keywords:
        return "it picks an instance by a type's name"
    got = {schema(e) for e in p.instances}
    if len(got) != 1:
        return "its instances take different arguments"
    return got.pop()


def render(
    entries: tuple[EntrySpec, ...],
    pickers: tuple[Picker, ...],
    helpers: str,
    name: str,
    ns: str,
    lit: Callable[[str], str],
) -> str:
    """The module-level ``torch_ops`` assignment (``name``: what the module calls it; ``lit``:
    a string's literal): each entry's op, then each generic's (picking by dtype)."""
    specs: list[layout.Code] = []
    skipped: list[str] = []
    functions = [(e.python, schema(e)) for e in entries] + [(p.python, _picked(p)) for p in pickers]
    for python, got in functions:
        if isinstance(got, str):
            skipped.append(f"# `{python}` is no torch op: {got}.\n")
            continue
        text, mutated = got
        specs.append(
            layout.tuple_of([lit(python), python, lit(text), layout.tuple_of([lit(m) for m in mutated])])
        )
    option = option_name(HookSettings, "torch_ops")
    head = f"\n\n# The wrappers as torch custom ops (option `{option}`; registered on first use).\n"
    body = layout.call(f"{helpers}.TorchOps", [lit(ns), layout.tuple_of(specs)], split=True)
    return head + "".join(skipped) + "\n".join(layout.lines(body, f"{name} = ")) + "\n"
