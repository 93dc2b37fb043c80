"""An entry's specialization constants as wrapper arguments: each named constant of its SPIR-V
(``[vk::constant_id(N)] const T NAME = default;``, ``[SpecializationConstant]``) is an optional
keyword argument ``NAME``, defaulting to the declared value. Names come from the SPIR-V's
``OpName`` and must be reflection's for the same SpecId.

:func:`entry_constants` takes them from the entry's SPIR-V (:class:`slangrt.spirv.SpecConstant`:
SpecId, name, scalar, default) and refuses, naming ``file:line`` (the declaration's line), a name
that cannot be a Python argument (a keyword, a leading ``_``) or that another argument of the
entry already has. A constant without a name (no ``OpName``) is no argument: its default runs.
"""

from __future__ import annotations

import keyword
import re
from collections.abc import Iterable, Mapping

from slangrt.spirv import EntryInfo, SpecConstant

from hatch_slang.comments.expr import check_argument
from hatch_slang.compile.discover import Shader
from hatch_slang.errors import ShaderError

__all__ = ["declared_line", "entry_constants", "group_size_constants"]


def declared_line(source: str, name: str) -> int | None:
    """The line (1-based) of the declaration of constant ``name`` in ``source``, if found."""
    pattern = re.compile(rf"\bconst\b[^;=]*\b{re.escape(name)}\s*(?:=|;)")
    for k, line in enumerate(source.splitlines(), 1):
        if pattern.search(line.split("//", 1)[0]):
            return k
    return None


def entry_constants(
    shader: Shader, info: EntryInfo, taken: Iterable[str], reflected: Mapping[int, str]
) -> tuple[SpecConstant, ...]:
    """The entry's named specialization constants (by SpecId), each checked against Slang's
    reflection (``reflected``: SpecId -> name) and to be able to name a keyword argument that no
    other argument of the entry (``taken``) has."""
    others = set(taken)
    out: list[SpecConstant] = []
    for c in info.constants:
        if not c.name:
            continue
        said = reflected.get(c.id)
        if said is not None and said != c.name:
            raise ShaderError(
                shader.rel,
                declared_line(shader.source, c.name),
                f"entry `{info.name}`'s SPIR-V names specialization constant {c.id} `{c.name}`, but "
                f"Slang's reflection calls it `{said}`",
            )
        why = check_argument(c.name)
        if why is None and (c.name.startswith("_") or c.name != c.name.strip() or not c.name.isascii()):
            why = f"`{c.name}` starts with `_` or is not ASCII"
        if why is None and keyword.iskeyword(c.name):
            why = f"`{c.name}` is a Python keyword"
        line = declared_line(shader.source, c.name)
        if why is not None:
            raise ShaderError(
                shader.rel,
                line,
                f"specialization constant `{c.name}` of entry `{info.name}` cannot name a keyword "
                f"argument of its wrapper ({why}): rename it",
            )
        if c.name in others:
            raise ShaderError(
                shader.rel,
                line,
                f"specialization constant `{c.name}` of entry `{info.name}` has the name of another "
                "of its arguments (an array, a params field or a size): rename one",
            )
        out.append(c)
    return tuple(out)


def group_size_constants(info: EntryInfo) -> tuple[str | None, str | None, str | None]:
    """Per axis of the entry's thread-group size, the name of the constant that sets it."""
    names = {c.id: c.name for c in info.constants}
    x, y, z = (names.get(i) or None if i is not None else None for i in info.local_size_ids)
    return (x, y, z)
