"""The settings models: the one reader, and the documentation generated from them.

docs/schema.json and the option tables of docs/options.md are generated from
hatch_slang.config.settings; this test fails when they disagree. After changing an option,
regenerate them with ``HATCH_SLANG_UPDATE_DOCS=1 .venv/bin/pytest tests/unit/config/test_settings.py``.
"""

from __future__ import annotations

import ast
import json
import os
import re
from dataclasses import fields
from pathlib import Path
from typing import Any

import pytest

from hatch_slang.config import settings
from hatch_slang.config.project import parse_config
from hatch_slang.config.settings import HookSettings, OverrideSettings, read
from hatch_slang.errors import ConfigError

from ...helpers import REPO

SCHEMA = REPO / "docs" / "schema.json"
OPTIONS = REPO / "docs" / "options.md"
TABLES = {"hook-options": HookSettings, "override-options": OverrideSettings}
UPDATE = os.environ.get("HATCH_SLANG_UPDATE_DOCS") == "1"


def _schema_text() -> str:
    return json.dumps(settings.json_schema(), indent=2) + "\n"


def _options_with_tables(text: str) -> str:
    for marker, model in TABLES.items():
        start, end = f"<!-- {marker}: generated from hatch_slang.config.settings -->\n", f"<!-- /{marker} -->"
        assert start in text and end in text, f"docs/options.md lacks the markers of the {marker} table"
        head, rest = text.split(start, 1)
        _, tail = rest.split(end, 1)
        text = head + start + settings.markdown_table(model) + end + tail
    return text


def test_the_committed_schema_is_the_models() -> None:
    if UPDATE:
        SCHEMA.parent.mkdir(exist_ok=True)
        SCHEMA.write_text(_schema_text())
    assert SCHEMA.read_text() == _schema_text(), (
        "docs/schema.json disagrees with hatch_slang.config.settings; regenerate it: "
        + __doc__.split("; ")[-1]
    )


def test_the_option_tables_are_the_models() -> None:
    text = OPTIONS.read_text()
    if UPDATE:
        OPTIONS.write_text(_options_with_tables(text))
        text = OPTIONS.read_text()
    assert text == _options_with_tables(text), (
        "docs/options.md's option tables disagree with hatch_slang.config.settings; regenerate them: "
        + __doc__.split("; ")[-1]
    )


def test_the_schema_describes_every_option() -> None:
    schema = json.loads(SCHEMA.read_text())
    assert list(schema["properties"]) == [*settings.names(HookSettings), *settings.HATCH_OPTIONS]
    assert schema["required"] == ["shaders", "package"]
    assert schema["additionalProperties"] is False
    override = schema["properties"]["overrides"]["items"]
    assert list(override["properties"]) == list(settings.names(OverrideSettings))
    assert schema["properties"]["optimization"] == {
        "description": "Slang `-O` level, 0-3",
        "type": "integer",
        "minimum": 0,
        "maximum": 3,
        "default": 2,
    }


def _validate(schema: dict[str, Any], value: Any) -> bool:
    """Enough of JSON schema for what json_schema() writes (no third-party validator needed)."""
    if "oneOf" in schema:
        return sum(_validate(s, value) for s in schema["oneOf"]) == 1
    kind = schema.get("type")
    kinds = kind if isinstance(kind, list) else [kind]
    checks = {
        "string": isinstance(value, str),
        "integer": type(value) is int,
        "number": isinstance(value, int | float) and not isinstance(value, bool),
        "boolean": isinstance(value, bool),
        "array": isinstance(value, list),
        "object": isinstance(value, dict),
        None: True,
    }
    if not any(checks[k] for k in kinds):
        return False
    if isinstance(value, str):
        ok = len(value) >= schema.get("minLength", 0)
        return ok and ("pattern" not in schema or re.search(schema["pattern"], value) is not None)
    if type(value) is int:
        return schema.get("minimum", value) <= value <= schema.get("maximum", value)
    if isinstance(value, list):
        items = schema.get("items", {})
        return len(value) >= schema.get("minItems", 0) and all(_validate(items, v) for v in value)
    if isinstance(value, dict):
        props = schema.get("properties", {})
        if not set(schema.get("required", ())) <= set(value):
            return False
        names = schema.get("propertyNames", {})
        extra = schema.get("additionalProperties", True)
        for key, v in value.items():
            if not _validate(names, key):
                return False
            if key in props:
                if not _validate(props[key], v):
                    return False
            elif extra is False or (isinstance(extra, dict) and not _validate(extra, v)):
                return False
    return True


GOOD: list[dict[str, Any]] = [
    {"shaders": ["*.slang"], "package": "p/k"},
    {
        "shaders": ["*.slang"],
        "package": "p/k",
        "include-dirs": ["."],
        "defines": {"A": "1", "B": 2},
        "optimization": 0,
        "compiler-args": ["-g"],
        "constants": {"BLOCK": 64, "SCALE": 0.5, "FAST": True},
        "overrides": [{"shaders": ["*.slang"], "defines": ["C=3", "D"], "constants": {"BLOCK": -1}}],
        "strict": False,
        "dependencies": ["x"],
        "enable-by-default": True,
    },
]
BAD: list[dict[str, Any]] = [
    {"shaders": ["*.slang"]},
    {"shaders": [], "package": "p/k"},
    {"shaders": "*.slang", "package": "p/k"},
    {"shaders": ["*.slang"], "package": "p/k", "optimization": 4},
    {"shaders": ["*.slang"], "package": "p/k", "optimization": True},
    {"shaders": ["*.slang"], "package": "p/k", "strict": "yes"},
    {"shaders": ["*.slang"], "package": "p/k", "defines": {"1X": "2"}},
    {"shaders": ["*.slang"], "package": "p/k", "defines": ["1X=2"]},
    {"shaders": ["*.slang"], "package": "p/k", "templates": ""},
    {"shaders": ["*.slang"], "package": "p/k", "shader": []},
    {"shaders": ["*.slang"], "package": "p/k", "overrides": {"shaders": ["x"]}},
    {"shaders": ["*.slang"], "package": "p/k", "overrides": [{"compiler-args": []}]},
    {"shaders": ["*.slang"], "package": "p/k", "overrides": [{"shaders": ["*.slang"], "entries": []}]},
    {"shaders": ["*.slang"], "package": "p/k", "constants": {"BLOCK": "64"}},
    {"shaders": ["*.slang"], "package": "p/k", "constants": {"BLOCK": [64]}},
    {"shaders": ["*.slang"], "package": "p/k", "constants": {"1X": 1}},
    {"shaders": ["*.slang"], "package": "p/k", "constants": ["BLOCK=64"]},
    {
        "shaders": ["*.slang"],
        "package": "p/k",
        "overrides": [{"shaders": ["x"], "constants": {"A": {"B": {}}}}],
    },
]


@pytest.mark.parametrize("raw", GOOD)
def test_what_the_reader_takes_the_schema_takes(raw: dict[str, Any]) -> None:
    read(HookSettings, raw, accept=tuple(settings.HATCH_OPTIONS))
    assert _validate(settings.json_schema(), raw)


@pytest.mark.parametrize("raw", BAD)
def test_what_the_reader_refuses_the_schema_refuses(raw: dict[str, Any]) -> None:
    with pytest.raises(ConfigError):
        read(HookSettings, raw, accept=tuple(settings.HATCH_OPTIONS))
    assert not _validate(settings.json_schema(), raw)


def test_the_reader_gives_the_model_with_its_defaults() -> None:
    got = read(HookSettings, {"shaders": ["a.slang"], "package": "p/k", "defines": ["X=1", "Y"]})
    assert got == HookSettings(shaders=("a.slang",), package="p/k", defines={"X": "1", "Y": ""})
    assert (got.include_dirs, got.optimization, got.compiler_args, got.overrides) == ((), 2, (), ())
    assert (got.templates, got.strict) == (None, True)


def test_hatchling_options_are_accepted_ours_are_named(tmp_path: Path) -> None:
    (tmp_path / "k.slang").write_text("")
    raw = {"shaders": ["*.slang"], "package": "p/k", "enable-by-default": False, "dependencies": []}
    parse_config(tmp_path, raw)
    with pytest.raises(ConfigError) as info:
        parse_config(tmp_path, {**raw, "optimisation": 3, "path": "x.py"})
    assert str(info.value) == (
        "Unknown option(s) `optimisation`, `path` for build hook `slang`; known options: shaders, "
        "package, include-dirs, defines, optimization, compiler-args, constants, instances, overrides, "
        "templates, strict, torch-ops"
    )


def test_instances_are_texts_of_type_arguments_per_entry(tmp_path: Path) -> None:
    (tmp_path / "k.slang").write_text("")
    raw = {
        "shaders": ["*.slang"],
        "package": "p/k",
        "instances": {"gscale": ["float", ["half"], ["float", 4], "vector<float, 4>", "float"]},
        "overrides": [{"shaders": ["k.slang"], "instances": {"gscale": ["int"], "apply": ["Square"]}}],
    }
    config = parse_config(tmp_path, raw)
    assert config.instances == {"gscale": ("float", "half", "float, 4", "vector<float, 4>")}
    assert config.instances_for(tmp_path / "k.slang") == {
        "gscale": ("float", "half", "float, 4", "vector<float, 4>", "int"),
        "apply": ("Square",),
    }


@pytest.mark.parametrize(
    "bad",
    [["float"], {"gscale": "float"}, {"gscale": [[]]}, {"gscale": [1.5]}, {"1x": ["float"]}, {"g": [" "]}],
)
def test_bad_instances_name_the_option(tmp_path: Path, bad: object) -> None:
    (tmp_path / "k.slang").write_text("")
    with pytest.raises(
        ConfigError, match=r"^Option `instances` for build hook `slang` must be a table of entry"
    ):
        parse_config(tmp_path, {"shaders": ["*.slang"], "package": "p/k", "instances": bad})


def _strings(path: Path) -> list[str]:
    """The string constants of a module that are no docstrings (prose may name options)."""
    tree = ast.parse(path.read_text())
    docstrings = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
        and node.body
        and isinstance(node.body[0], ast.Expr)
    }
    return [
        node.value
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings
    ]


def test_every_option_name_is_spelled_once() -> None:
    """An option's name is its field's in hatch_slang.config.settings; no other module writes one out (as
    a key, or quoted in a message) but through settings.option_name."""
    options = {n for model in (HookSettings, OverrideSettings) for n in settings.names(model)}
    for path in [*(REPO / "hatch_slang").rglob("*.py"), REPO / "hatch_build.py"]:
        if path.name == "settings.py":
            continue
        for text in _strings(path):
            spelled = [n for n in options if f"`{n}`" in text or ("-" in n and n in text)]
            assert not spelled, f"{path.name} spells option(s) {spelled} by hand: {text!r}"


def test_every_field_is_documented() -> None:
    for model in (HookSettings, OverrideSettings):
        for f in fields(model):
            assert f.metadata["doc"], f.name
