"""The settings models: what ``[tool.hatch.build.hooks.slang]`` (and each of its ``overrides``)
may hold, each option's name, type, default and meaning written once, as a dataclass field.

:func:`read` validates a table against a model from its annotations and returns the model; the
JSON schema (``docs/schema.json``) and the option tables of ``docs/options.md`` are generated
from the same models (:func:`json_schema`, :func:`markdown_table`; tests/unit/config/test_settings.py
keeps them in step).
An option is the field's name with ``-`` for ``_``. This module imports nothing of the pipeline:
:mod:`hatch_slang.config.project` resolves the settings (paths, compiler arguments) for it.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import MISSING, Field, dataclass, field, fields, is_dataclass
from types import UnionType
from typing import Any, ClassVar, TypeVar, Union, get_args, get_origin, get_type_hints

from hatch_slang.errors import ConfigError

HOOK = "slang"
# The files a `templates` directory must hold.
TEMPLATE_FILES = ("module.py.tmpl", "function.py.tmpl")
# Options hatchling itself understands for every build hook; they are not ours to reject.
HATCH_OPTIONS: dict[str, dict[str, Any]] = {
    "dependencies": {"type": "array", "items": {"type": "string"}},
    "require-runtime-dependencies": {"type": "boolean"},
    "require-runtime-features": {"type": "array", "items": {"type": "string"}},
    "enable-by-default": {"type": "boolean"},
}
# And what hatchling's `custom` hook takes besides (this repository builds with one).
CUSTOM_HOOK_OPTIONS = ("path",)
# A link-time constant's value (option `constants`): data only, a TOML integer, float or boolean.
Constant = bool | int | float
# What a name of a table must be when the option gives none: an ASCII identifier.
_IDENTIFIER = r"[A-Za-z_][A-Za-z0-9_]*"
_CONSTANTS_MUST = (
    "a table of NAME = value, each value an integer, a finite float or a boolean, or a table of an "
    "entry's own values under the entry's name"
)


def option(
    default: Any = MISSING,
    *,
    doc: str,
    must: str | None = None,
    shown: str | None = None,
    required: str = "",
    nonempty: str | None = None,
    minimum: int | None = None,
    maximum: int | None = None,
    names: str | None = None,
) -> Any:
    """A settings field. ``doc``: its meaning (docs/options.md's table, the schema); ``must``: what a
    wrong value is told it must be (default: said from the annotation); ``shown``: the default as
    the table shows it (default: the TOML of ``default``, or "required"); ``required``: what a
    missing required option's message adds; ``nonempty``: a list must not be empty, else it
    "must be" this; ``minimum``/``maximum``: an integer's bounds; ``names``: the regular
    expression each name of a table (a define's name) must match in full."""
    meta = {
        "doc": doc,
        "must": must,
        "shown": shown,
        "required": required,
        "nonempty": nonempty,
        "minimum": minimum,
        "maximum": maximum,
        "names": names,
    }
    if isinstance(default, dict):
        return field(default_factory=dict, metadata=meta)
    return field(default=default, metadata=meta)


_INSTANCES_DOC = (
    "instances of generic entry points, by entry name: a list whose items are an instance's type "
    'arguments (or the conforming types of an entry\'s interface-typed parameters), a string (`"float"`, '
    '`"float, 4"`) or a list of strings (`["float", "4"]`); added to those the file\'s `slang-entries` '
    "line names (see below)"
)
_INSTANCES_MUST = 'a table of entry = ["float", ["half", "4"], ...] (each item a string or a list of strings)'


@dataclass(frozen=True)
class OverrideSettings:
    """One ``[[tool.hatch.build.hooks.slang.overrides]]`` table: compiler arguments, defines and
    link-time constants for the shaders its globs match."""

    KNOWN_AS: ClassVar[str] = "an override knows"

    shaders: tuple[str, ...] = option(
        doc="globs of the shaders it applies to, relative to the project root; each must match a file",
        nonempty="a non-empty list of globs",
    )
    compiler_args: tuple[str, ...] = option(
        (),
        doc="Slang arguments appended to the project-wide `compiler-args` for those shaders",
        must="a list of non-empty strings (Slang command-line arguments)",
    )
    defines: Mapping[str, str] = option(
        {},
        doc="macros added to the project-wide `defines` for those shaders (a name given again wins)",
        must='a table of NAME = "value" (or a list of "NAME=value")',
        names=r"[A-Za-z_]\w*",
    )
    constants: Mapping[str, Constant | Mapping[str, Constant]] = option(
        {},
        doc="link-time constants added to the project-wide `constants` for those shaders "
        "(a name given again wins; an entry's table, name by name)",
        must=_CONSTANTS_MUST,
        names=_IDENTIFIER,
    )
    instances: Mapping[str, tuple[str, ...]] = option(
        {}, doc=f"{_INSTANCES_DOC}, for those shaders", must=_INSTANCES_MUST, names=r"[^\W\d]\w*"
    )
    map: tuple[str, ...] = option(
        (),
        doc="functions to apply elementwise in those shaders, as a `// slang-map:` line names them "
        '(`"poly"`, `"softsign<float>"`): for functions of modules the shaders import, without '
        "editing them",
        must='a list of function names ("poly", "softsign<float>")',
    )
    subgroup_size: int | None = option(
        None,
        doc="the subgroup size the entries of those shaders require (a power of two, as a "
        "`// Subgroup size: 32` line says it; an entry's own line wins), where the files cannot be edited",
        must="a power of two from 1 to 128",
        minimum=1,
        maximum=128,
    )


@dataclass(frozen=True)
class HookSettings:
    """The ``[tool.hatch.build.hooks.slang]`` table."""

    KNOWN_AS: ClassVar[str] = "known options"

    shaders: tuple[str, ...] = option(
        doc="globs of `.slang` files, relative to the project root",
        nonempty="a non-empty list of globs",
    )
    package: str = option(
        doc="slash-separated package path the outputs go to",
        must='a package path such as "mypkg/kernels"',
        required='the package path the generated wrappers go to, such as "mypkg/kernels"',
    )
    include_dirs: tuple[str, ...] = option(
        (), doc="extra `#include` / `import` search directories, relative to the project root"
    )
    defines: Mapping[str, str] = option(
        {},
        doc='preprocessor macros, `NAME = "value"`',
        must='a table of NAME = "value" (or a list of "NAME=value")',
        names=r"[A-Za-z_]\w*",
    )
    optimization: int = option(2, doc="Slang `-O` level, 0-3", minimum=0, maximum=3)
    compiler_args: tuple[str, ...] = option(
        (),
        doc="more Slang command-line arguments, for every shader (see below)",
        must="a list of non-empty strings (Slang command-line arguments)",
    )
    constants: Mapping[str, Constant | Mapping[str, Constant]] = option(
        {},
        doc="values of the shaders' link-time constants (`extern static const int BLOCK;`), "
        "`NAME = value`: an integer, float or boolean, written into the shader's type; under an "
        "entry's name (an instance's: `gsum_half`), a table of that entry's own values",
        must=_CONSTANTS_MUST,
        names=_IDENTIFIER,
    )
    instances: Mapping[str, tuple[str, ...]] = option(
        {}, doc=_INSTANCES_DOC, must=_INSTANCES_MUST, names=r"[^\W\d]\w*"
    )
    overrides: tuple[OverrideSettings, ...] = option(
        (), doc="per-glob `compiler-args`, `defines`, `constants`, `instances` and `map` (see below)"
    )
    templates: str | None = option(
        None,
        doc=f"a directory holding your own {' and '.join(f'`{n}`' for n in TEMPLATE_FILES)}",
        must="a directory path",
        shown="built in",
    )
    strict: bool = option(
        True, doc="comment/reflection disagreements fail the build (else: warnings, reflection wins)"
    )
    torch_ops: bool = option(
        False,
        doc="each generated module gets `torch_ops`: its wrappers as torch custom ops "
        "(`torch.library.custom_op`, registered on first use), opaque to `torch.compile`",
    )


Model = TypeVar("Model")


def option_name(model: type[Any], attribute: str) -> str:
    """The option an attribute of a settings model is written as (checked to exist)."""
    if attribute not in {f.name for f in fields(model)}:
        raise AttributeError(f"{model.__name__} has no option {attribute}")
    return attribute.replace("_", "-")


def default(model: type[Any], attribute: str) -> Any:
    """The default of an option (what it is when the table leaves it out)."""
    return _default(_field(model, attribute))


def names(model: type[Any]) -> tuple[str, ...]:
    """The model's options, in the order it declares them."""
    return tuple(f.name.replace("_", "-") for f in fields(model))


def where(option: str) -> str:
    """How every message about an option starts."""
    return f"Option `{option}` for build hook `{HOOK}`"


def invalid(model: type[Any], attribute: str, prefix: str = "") -> ConfigError:
    """The error for a value of the option that is not what it must be."""
    f = _field(model, attribute)
    return ConfigError(f"{where(prefix + option_name(model, attribute))} must be {_must(model, f, prefix)}")


def read(
    model: type[Model], raw: Mapping[str, Any], *, prefix: str = "", accept: tuple[str, ...] = ()
) -> Model:
    """``raw`` (a TOML table) as ``model``, every value checked against the field's annotation.

    Raises a :class:`ConfigError` naming the option and the hook for an unknown option (``accept``
    lists other options to let through: hatchling's own), a missing required one, or a value of
    the wrong type; ``prefix`` is how a nested table's options are named (``overrides[0].``)."""
    assert is_dataclass(model)
    known = names(model)
    unknown = sorted(set(raw) - set(known) - set(accept))
    if unknown:
        raise ConfigError(
            f"Unknown option(s) {', '.join(f'`{prefix}{u}`' for u in unknown)} for build hook `{HOOK}`; "
            f"{model.KNOWN_AS}: {', '.join(known)}"  # type: ignore[attr-defined]
        )
    hints = get_type_hints(model)
    values: dict[str, Any] = {}
    for f in fields(model):
        key = f.name.replace("_", "-")
        if key not in raw:
            if _required(f):
                hint = f.metadata["required"]
                raise ConfigError(f"{where(prefix + key)} is required" + (f": {hint}" if hint else ""))
            continue
        value = _convert(hints[f.name], raw[key], f, f"{prefix}{key}")
        if value is _WRONG:
            raise invalid(model, f.name, prefix)
        if f.metadata["nonempty"] and not value:
            raise ConfigError(f"{where(prefix + key)} must be {f.metadata['nonempty']}")
        values[f.name] = value
    return model(**values)


_WRONG = object()


def _optional(tp: Any) -> Any:
    """``X`` for ``X | None``; else ``tp``."""
    if get_origin(tp) in (Union, UnionType):
        args = [a for a in get_args(tp) if a is not type(None)]
        if len(args) == 1:
            return args[0]
    return tp


def _convert(tp: Any, value: Any, f: Field[Any], option: str) -> Any:
    """``value`` as the annotation ``tp`` says, or _WRONG."""
    tp = _optional(tp)
    origin, args = get_origin(tp), get_args(tp)
    if tp is bool:
        return value if isinstance(value, bool) else _WRONG
    if tp is int:
        low, high = f.metadata["minimum"], f.metadata["maximum"]
        if type(value) is not int or (low is not None and value < low) or (high is not None and value > high):
            return _WRONG
        return value
    if tp is str:
        return value if isinstance(value, str) and value else _WRONG
    if origin is tuple and args[0] is str:
        ok = isinstance(value, list) and all(isinstance(v, str) and v for v in value)
        return tuple(value) if ok else _WRONG
    if origin is tuple and isinstance(args[0], type) and is_dataclass(args[0]):
        nested: type[Any] = args[0]
        if not isinstance(value, list) or not all(isinstance(t, dict) for t in value):
            return _WRONG
        return tuple(read(nested, t, prefix=f"{option}[{k}].") for k, t in enumerate(value))
    if origin in (dict, Mapping) and get_origin(args[1]) is tuple:
        return _instances(value, f.metadata["names"])
    if origin in (dict, Mapping) and args[1] is not str:
        return _constants(value, f, option)
    if origin in (dict, Mapping):
        # A table of strings (integers are taken as their text), or a list of "NAME=value".
        if isinstance(value, list) and all(isinstance(d, str) for d in value):
            value = dict((d.split("=", 1) + [""])[:2] for d in value)
        if not isinstance(value, dict) or not all(
            isinstance(k, str) and isinstance(v, str | int) for k, v in value.items()
        ):
            return _WRONG
        pattern = f.metadata["names"]
        if pattern is not None and not all(re.fullmatch(pattern, k) for k in value):
            return _WRONG
        return {k: str(v) for k, v in sorted(value.items())}
    raise TypeError(f"settings field {f.name}: no reader for {tp!r}")  # a model this module can't read


def _constants(value: Any, f: Field[Any], option: str, *, entry: str = "") -> Any:
    """A table of link-time constants: every name an identifier, every value an integer, a
    finite float or a boolean, or (not within an entry's table) a table of an entry's own
    values under the entry's name. A wrong value is a ConfigError naming the option and its key."""
    if not isinstance(value, dict):
        return _WRONG
    out: dict[str, Any] = {}
    for name, v in value.items():
        said = f"{where(option)}: `{entry}{name}`"
        if not isinstance(name, str) or not re.fullmatch(f.metadata["names"], name):
            what = (
                "an entry's name as its wrapper is called: `gsum_half` for the instance `gsum<half>`"
                if isinstance(v, dict)
                else "a Slang identifier such as `BLOCK`"
            )
            raise ConfigError(f"{said} is no {'entry' if isinstance(v, dict) else 'constant'} name ({what})")
        if isinstance(v, dict) and not entry:
            out[name] = _constants(v, f, option, entry=f"{name}.")
            continue
        if not isinstance(v, bool | int | float):
            raise ConfigError(
                f"{said} = {_toml_kind(v)}: a link-time constant is an integer, a float or a boolean"
                + ("" if entry or not isinstance(v, list) else "; an entry's own values are a table")
            )
        if isinstance(v, float) and not math.isfinite(v):
            raise ConfigError(f"{said} = {v}: a link-time constant must be finite")
        out[name] = v
    return dict(sorted(out.items()))


def _toml_kind(value: Any) -> str:
    """How a message names a TOML value that no constant can be."""
    if isinstance(value, str):
        return "a string"
    if isinstance(value, dict):
        return "a table"
    if isinstance(value, list):
        return "an array"
    return f"a {type(value).__name__}"  # a date or a time


def _instances(value: Any, pattern: str) -> Any:
    """A table of entry -> instances, each instance's type arguments as one text (``"half, 4"``),
    or _WRONG."""
    if not isinstance(value, dict):
        return _WRONG
    out: dict[str, tuple[str, ...]] = {}
    for name, items in sorted(value.items()):
        if not isinstance(name, str) or not re.fullmatch(pattern, name) or not isinstance(items, list):
            return _WRONG
        texts: list[str] = []
        for item in items:
            parts = [item] if isinstance(item, str) else item
            if not isinstance(parts, list) or not parts or not all(isinstance(p, str | int) for p in parts):
                return _WRONG
            text = ", ".join(str(p).strip() for p in parts)
            if not all(str(p).strip() for p in parts) or len(text) > 200:
                return _WRONG
            texts.append(text)
        out[name] = tuple(dict.fromkeys(texts))
    return out


def _required(f: Field[Any]) -> bool:
    return f.default is MISSING and f.default_factory is MISSING


def _default(f: Field[Any]) -> Any:
    return f.default_factory() if f.default_factory is not MISSING else f.default


def _field(model: type[Any], attribute: str) -> Field[Any]:
    [f] = [f for f in fields(model) if f.name == attribute]
    return f


def _must(model: type[Any], f: Field[Any], prefix: str) -> str:
    """What a value of the field must be, as messages say it."""
    if f.metadata["must"]:
        return str(f.metadata["must"])
    tp = _optional(get_type_hints(model)[f.name])
    if tp is bool:
        return "true or false"
    if tp is int:
        low, high = f.metadata["minimum"], f.metadata["maximum"]
        return f"an integer from {low} to {high}" if low is not None and high is not None else "an integer"
    if tp is str:
        return "a non-empty string"
    if get_args(tp) and is_dataclass(get_args(tp)[0]):
        return f"an array of tables (`[[tool.hatch.build.hooks.{HOOK}.{prefix}{f.name.replace('_', '-')}]]`)"
    return "a list of non-empty strings"


# -- documentation: the JSON schema and docs/options.md's tables ---------------------------------


def _value_schema(model: type[Any], f: Field[Any]) -> dict[str, Any]:
    tp = _optional(get_type_hints(model)[f.name])
    args = get_args(tp)
    meta = f.metadata
    if tp is bool:
        return {"type": "boolean"}
    if tp is int:
        bounds = {k: meta[k] for k in ("minimum", "maximum") if meta[k] is not None}
        return {"type": "integer", **bounds}
    if tp is str:
        return {"type": "string", "minLength": 1}
    if get_origin(tp) is tuple and args[0] is str:
        return {"type": "array", "items": {"type": "string", "minLength": 1}} | (
            {"minItems": 1} if meta["nonempty"] else {}
        )
    if get_origin(tp) is tuple:
        return {"type": "array", "items": _object_schema(args[0])}
    if args[1] is not str:  # link-time constants, and entries' tables of them
        values = {
            "type": "object",
            "propertyNames": {"pattern": f"^{meta['names']}$"},
            "additionalProperties": {"type": ["integer", "number", "boolean"]},
        }
        return values | {"additionalProperties": {"oneOf": [values["additionalProperties"], values]}}
    name = {"pattern": f"^{meta['names']}$"} if meta["names"] else {}
    if get_origin(args[1]) is tuple:  # instances: entry -> [text or [texts]]
        words = {
            "oneOf": [
                {"type": "string", "minLength": 1},
                {"type": "array", "items": {"type": ["string", "integer"]}, "minItems": 1},
            ]
        }
        return {
            "type": "object",
            "propertyNames": name,
            "additionalProperties": {"type": "array", "items": words},
        }
    name = {"pattern": f"^{meta['names']}$"} if meta["names"] else {}
    return {
        "oneOf": [
            {
                "type": "object",
                "propertyNames": name,
                "additionalProperties": {"type": ["string", "integer"]},
            },
            {
                "type": "array",
                "items": {"type": "string", "pattern": f"^{meta['names'] or '[^=]+'}(=.*)?$"},
            },
        ]
    }


def _object_schema(model: type[Any], extra: Mapping[str, dict[str, Any]] | None = None) -> dict[str, Any]:
    properties: dict[str, Any] = {}
    required = []
    for f in fields(model):
        key = f.name.replace("_", "-")
        schema: dict[str, Any] = {"description": f.metadata["doc"], **_value_schema(model, f)}
        if _required(f):
            required.append(key)
        else:
            default = _default(f)
            if default is not None:
                schema["default"] = list(default) if isinstance(default, tuple) else default
        properties[key] = schema
    for key, schema in (extra or {}).items():
        properties[key] = {"description": "hatchling's own option for every build hook", **schema}
    return {
        "description": " ".join((model.__doc__ or "").split()),
        "type": "object",
        "properties": properties,
        "required": required,
        "additionalProperties": False,
    }


def json_schema() -> dict[str, Any]:
    """The JSON schema of ``[tool.hatch.build.hooks.slang]`` (committed as docs/schema.json)."""
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": f"[tool.hatch.build.hooks.{HOOK}]",
        **_object_schema(HookSettings, HATCH_OPTIONS),
    }


def _shown(f: Field[Any]) -> str:
    if f.metadata["shown"]:
        return str(f.metadata["shown"])
    if _required(f):
        return "required"
    default = _default(f)
    if isinstance(default, bool):
        return f"`{str(default).lower()}`"
    if isinstance(default, tuple):
        return "`[]`" if not default else f"`{list(default)}`"
    return f"`{default}`"


def markdown_table(model: type[Any]) -> str:
    """docs/options.md's table of a model's options: option, default, meaning."""
    rows = ["| option | default | meaning |", "| --- | --- | --- |"]
    for f in fields(model):
        rows.append(f"| `{f.name.replace('_', '-')}` | {_shown(f)} | {f.metadata['doc']} |")
    return "\n".join(rows) + "\n"
