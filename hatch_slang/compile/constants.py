"""Link-time constants: a shader's ``extern static const`` declarations and the values they link with.

A shader declares ``extern static const int BLOCK;``; its value comes from the hook option
``constants`` (project-wide, and per glob in ``overrides``: :meth:`BuildConfig.options_for`).
:func:`link_constants` pairs each declaration with its value, checked against the declared type,
and :func:`constants_module` writes the Slang module that defines them
(``export static const int BLOCK = 64;``), which :mod:`hatch_slang.compile.compiler` compiles and
links with the shader. Nothing of the user's reaches Slang as text: a name is one the shader's own
declaration spells (an identifier token), a type one of :data:`SCALAR_TYPES`, a value a literal
written here from a checked integer, float or boolean.
"""

from __future__ import annotations

import ast
import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace

from hatch_slang.comments.contract import DispatchDoc, source_lines
from hatch_slang.comments.expr import Expr, parse_expr
from hatch_slang.compile.discover import Shader, _tokens  # the one tokenizer of shader code
from hatch_slang.config.settings import HOOK, Constant, HookSettings, OverrideSettings, option_name
from hatch_slang.errors import BuildErrors, HatchSlangError, ShaderError

__all__ = [
    "MODULE_PATH",
    "SCALAR_TYPES",
    "Extern",
    "LinkConstant",
    "constants_module",
    "externs",
    "grid_with_constants",
    "link_constants",
    "unresolved_hint",
]

# The path the compiler is told the generated module has (its diagnostics quote it); never a file.
MODULE_PATH = "<hatch-slang constants>"

# Integer types: (signed, bits); their literals' suffix, when Slang's plain literal is not of it.
_INTS: dict[str, tuple[bool, int]] = {
    **{t: (True, 32) for t in ("int", "int32_t")},
    **{t: (False, 32) for t in ("uint", "uint32_t")},
    **{f"int{b}_t": (True, b) for b in (8, 16, 64)},
    **{f"uint{b}_t": (False, b) for b in (8, 16, 64)},
}
_FLOAT32_MAX = 3.4028234663852886e38
# Float types: (literal suffix, largest finite value).
_FLOATS: dict[str, tuple[str, float]] = {
    **{t: ("f", _FLOAT32_MAX) for t in ("float", "float32_t")},
    **{t: ("h", 65504.0) for t in ("half", "float16_t")},
    **{t: ("l", 1.7976931348623157e308) for t in ("double", "float64_t")},
}
SCALAR_TYPES = ("bool", *_INTS, *_FLOATS)
_MODIFIERS = {"extern", "static", "const"}


@dataclass(frozen=True)
class Extern:
    """One ``extern static const T NAME;`` of a shader file."""

    name: str
    type: str  # as the declaration spells it
    line: int


@dataclass(frozen=True)
class LinkConstant:
    """A link-time constant with its value: what the generated module defines, what ``show`` lists."""

    name: str  # an identifier: the shader's declaration spells it
    type: str  # one of SCALAR_TYPES
    value: Constant  # as the option gives it
    literal: str  # the Slang literal written for it (of `type`)
    line: int  # the declaration's line in the shader


def externs(source: str) -> tuple[Extern, ...]:
    """The link-time constants ``source`` declares: ``extern``, ``static`` and ``const`` (in any
    order, ``extern`` among them), a type and a name, then ``;``. Comments, strings and
    preprocessor lines are not read."""
    if "extern" not in source:
        return ()  # most shaders: no need to read the code
    source = "\n".join(source_lines(source))
    tokens = _tokens(source)
    found: dict[str, Extern] = {}
    i = 0
    while i < len(tokens):
        k = i
        while k < len(tokens) and tokens[k][0] == "ident" and tokens[k][1] in _MODIFIERS:
            k += 1
        words = {t for _, t, _ in tokens[i:k]}
        if "extern" in words and "const" in words and k + 2 < len(tokens):
            (tkind, type_, _), (nkind, name, at), (_, end, _) = tokens[k : k + 3]
            if tkind == nkind == "ident" and end == ";" and name not in found:
                found[name] = Extern(name, type_, source.count("\n", 0, at) + 1)
        i = max(k, i + 1)
    return tuple(found.values())


def _option(overridden: bool = True) -> str:
    own = f"`{option_name(HookSettings, 'constants')}`"
    if not overridden:
        return own
    override = f"{option_name(HookSettings, 'overrides')}[...].{option_name(OverrideSettings, 'constants')}"
    return f"{own} (or `{override}`) of build hook `{HOOK}`"


def _example(type_: str) -> str:
    return "false" if type_ == "bool" else "0.0" if type_ in _FLOATS else "0"


def _missing(rel: str, e: Extern) -> ShaderError:
    table = f"[tool.hatch.build.hooks.{HOOK}.{option_name(HookSettings, 'constants')}]"
    return ShaderError(
        rel,
        e.line,
        f"link-time constant `{e.name}` (`extern static const {e.type} {e.name};`) has no value: "
        f"option {_option()} sets it; add `{e.name} = {_example(e.type)}` (your value) under "
        f"`{table}` in pyproject.toml, or `{option_name(OverrideSettings, 'constants')} = "
        f"{{ {e.name} = {_example(e.type)} }}` to an `{option_name(HookSettings, 'overrides')}` entry "
        f"whose `{option_name(OverrideSettings, 'shaders')}` match this file",
    )


def _int_literal(type_: str, value: int) -> str:
    signed, bits = _INTS[type_]
    suffix = ("" if signed else "u") + ("ll" if bits == 64 else "")
    text = f"{value}{suffix}" if value != -(1 << (bits - 1)) else f"({value + 1}{suffix} - 1{suffix})"
    return text if bits >= 32 else f"{type_}({text})"


def _a(type_: str) -> str:
    return f"{'an' if type_.startswith('i') else 'a'} {type_}"


def literal(type_: str, value: Constant) -> str:
    """The Slang literal of ``value`` as a ``type_``; a ValueError says why it cannot be one."""
    if type_ == "bool":
        if not isinstance(value, bool):
            raise ValueError("a bool takes true or false")
        return "true" if value else "false"
    if type_ in _INTS:
        if isinstance(value, bool) or not isinstance(value, int):
            raise ValueError(f"{_a(type_)} takes an integer")
        signed, bits = _INTS[type_]
        low, high = (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if signed else (0, (1 << bits) - 1)
        if not low <= value <= high:
            raise ValueError(f"{_a(type_)} holds {low} to {high}")
        return _int_literal(type_, value)
    if type_ in _FLOATS:
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise ValueError(f"{_a(type_)} takes a number")
        suffix, largest = _FLOATS[type_]
        number = float(value)
        if number != value or not math.isfinite(number) or abs(number) > largest:
            raise ValueError(f"{_a(type_)} holds finite numbers of magnitude up to {largest:g}")
        return f"{number!r}{suffix}"
    raise ValueError(f"hatch-slang gives values to constants of the types {', '.join(SCALAR_TYPES)}")


def _kind(value: Constant) -> str:
    return "a boolean" if isinstance(value, bool) else "an integer" if isinstance(value, int) else "a float"


def _shown(value: Constant) -> str:
    return str(value).lower() if isinstance(value, bool) else repr(value)


def link_constants(
    rel: str,
    source: str,
    entries: tuple[str, ...],
    values: Mapping[str, Constant] | Callable[[str], Mapping[str, Constant]],
) -> dict[str, tuple[LinkConstant, ...]]:
    """Each entry's link-time constants: every ``extern static const`` of the shader with its value
    from ``values`` (the option, merged for this shader), or ``values(entry)`` (with the entry's
    own table: an instance of a generic entry may have values of its own). A declaration with no value, or a
    value its type cannot hold, is a ShaderError naming the declaration's line and the option
    (several are a BuildErrors), said once for the entries it is true of. Values no declaration
    asks for are left out: a project-wide table serves shaders that declare some of its names."""
    out: dict[str, tuple[LinkConstant, ...]] = {}
    problems: dict[tuple[int, str], tuple[Extern, Constant | None, str, list[str]]] = {}
    declared = externs(source)
    for entry in entries:
        given = values(entry) if callable(values) else values
        mine: list[LinkConstant] = []
        for e in declared:
            if e.name not in given:
                problems.setdefault((e.line, "missing"), (e, None, "", []))[3].append(entry)
                continue
            value = given[e.name]
            try:
                mine.append(LinkConstant(e.name, e.type, value, literal(e.type, value), e.line))
            except ValueError as why:
                problems.setdefault((e.line, f"{_shown(value)} {_kind(value)}"), (e, value, str(why), []))[
                    3
                ].append(entry)
        out[entry] = tuple(mine)
    errors: list[HatchSlangError] = [
        _problem(rel, e, value, why, which, len(entries)) for e, value, why, which in problems.values()
    ]
    if errors:
        raise errors[0] if len(errors) == 1 else BuildErrors(errors)
    return out


def _problem(
    rel: str, e: Extern, value: Constant | None, why: str, entries: list[str], of: int
) -> ShaderError:
    """A declaration with no value, or one its type cannot hold, for ``entries`` (all ``of`` the
    shader's, or some: then named)."""
    error = (
        _missing(rel, e)
        if value is None
        else ShaderError(
            rel,
            e.line,
            f"link-time constant `{e.name}` is {_a(e.type)}, but option {_option()} gives it "
            f"`{_shown(value)}` ({_kind(value)}): {why}",
        )
    )
    if len(entries) == of:
        return error
    named = ", ".join(f"`{n}`" for n in entries)
    return ShaderError(error.path, error.line, f"{error.message} (for entry {named})")


def constants_module(constants: tuple[LinkConstant, ...]) -> str:
    """The Slang module that defines ``constants`` (linked with the shader that declares them)."""
    lines = [f"// Link-time constants, written by hatch-slang from {_option(overridden=False)}."]
    lines += [f"export static const {c.type} {c.name} = {c.literal};" for c in constants]
    return "\n".join(lines) + "\n"


_UNRESOLVED = re.compile(r"unresolved external symbol '([A-Za-z_]\w*)'")


def unresolved_hint(diagnostics: str) -> str:
    """What to add to Slang's "unresolved external symbol" diagnostics: which option sets a
    link-time constant, and which declarations hatch-slang reads; "" when there is none."""
    names = list(dict.fromkeys(_UNRESOLVED.findall(diagnostics)))
    if not names:
        return ""
    listed = ", ".join(f"`{n}`" for n in names)
    return (
        f"\n{listed}: a link-time constant (`extern static const`) gets its value from option "
        f"{_option()}; hatch-slang gives values to the ones the shader file itself declares, as "
        "`extern static const int NAME;` (a scalar type), not to those of the modules it imports "
        "or of a declaration it does not read that way"
    )


class _Values(ast.NodeTransformer):
    """Names of integer link-time constants replaced by their values."""

    def __init__(self, values: Mapping[str, int]) -> None:
        self.values = values

    def visit_Name(self, node: ast.Name) -> ast.expr:
        return ast.Constant(self.values[node.id]) if node.id in self.values else node


def _grid(d: DispatchDoc, values: Mapping[str, int]) -> DispatchDoc:
    if not any(n in values for e in d.grid for n in e.names):
        return d
    grid: list[Expr] = []
    for e in d.grid:
        tree = _Values(values).visit(ast.parse(e.text, mode="eval"))
        grid.append(parse_expr(ast.unparse(tree)) if any(n in values for n in e.names) else e)
    return replace(d, grid=tuple(grid))


def grid_with_constants(shader: Shader, constants: Mapping[str, tuple[LinkConstant, ...]]) -> Shader:
    """``shader`` with the integer link-time constants its Dispatch lines name replaced by their
    values (``ceil(n / BLOCK)`` computes with the BLOCK the kernel was built with, not a size the
    caller passes); the lines' text, which the docstrings show, stays as written. ``constants``
    are each entry's: where entries link with different values (an instance's own table), each
    such entry gets a copy of its line of its own, computed with its values."""
    per = {entry: _int_values(found) for entry, found in constants.items()}
    contract = shader.contract
    if not any(per.values()) or (contract.dispatch is None and not contract.entry_dispatch):
        return shader
    if len({tuple(sorted(v.items())) for v in per.values()}) == 1:
        values = next(iter(per.values()))
        contract = replace(
            contract,
            dispatch=_grid(contract.dispatch, values) if contract.dispatch is not None else None,
            entry_dispatch=tuple(_grid(d, values) for d in contract.entry_dispatch),
        )
        return replace(shader, contract=contract)
    own = []
    for entry, values in per.items():
        inst = shader.instance(entry)
        mine = any(entry in d.entries for d in contract.entry_dispatch)
        d = contract.dispatch_for(inst.generic if inst is not None and not mine else entry)
        if d is not None:
            own.append(replace(_grid(d, values), entries=(entry,)))
    return replace(shader, contract=replace(contract, entry_dispatch=(*own, *contract.entry_dispatch)))


def _int_values(constants: tuple[LinkConstant, ...]) -> dict[str, int]:
    """The integer constants' values, which a Dispatch line may compute with."""
    return {c.name: c.value for c in constants if c.type in _INTS and not isinstance(c.value, bool | float)}
