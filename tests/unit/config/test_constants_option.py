"""Option `constants`: link-time constants' values, read as data (integers, finite floats,
booleans), project-wide and per glob in `overrides` (a later table wins, name by name)."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest

from hatch_slang.config.project import parse_config
from hatch_slang.errors import ConfigError


def _config(tmp_path: Path, **extra: Any) -> Any:
    (tmp_path / "a.slang").write_text("")
    (tmp_path / "b.slang").write_text("")
    return parse_config(tmp_path, {"shaders": ["*.slang"], "package": "p/k", **extra})


def test_values_keep_their_toml_type_sorted_by_name(tmp_path: Path) -> None:
    config = _config(tmp_path, constants={"SCALE": 0.5, "BLOCK": 64, "FAST": True, "NEG": -3})
    assert config.compile.constants == (("BLOCK", 64), ("FAST", True), ("NEG", -3), ("SCALE", 0.5))
    [(_, fast)] = [c for c in config.compile.constants if c[0] == "FAST"]
    assert fast is True  # a boolean stays one (not 1)


def test_no_option_means_no_constants(tmp_path: Path) -> None:
    assert _config(tmp_path).compile.constants == ()


def test_overrides_add_to_and_replace_the_project_values_in_order(tmp_path: Path) -> None:
    config = _config(
        tmp_path,
        constants={"BLOCK": 64, "SCALE": 0.5},
        overrides=[
            {"shaders": ["a.slang"], "constants": {"BLOCK": 32, "EXTRA": False}},
            {"shaders": ["*.slang"], "constants": {"BLOCK": 16}},
            {"shaders": ["b.slang"], "defines": {"X": "1"}},
        ],
    )
    assert config.options_for(tmp_path / "a.slang").constants == (
        ("BLOCK", 16),
        ("EXTRA", False),
        ("SCALE", 0.5),
    )
    assert config.options_for(tmp_path / "b.slang").constants == (("BLOCK", 16), ("SCALE", 0.5))


@pytest.mark.parametrize(
    ("value", "said"),
    [
        ("64", "`BLOCK` = a string"),
        ([64], "`BLOCK` = an array"),
        (math.nan, "`BLOCK` = nan: a link-time constant must be finite"),
        (math.inf, "`BLOCK` = inf: a link-time constant must be finite"),
    ],
)
def test_a_value_that_is_no_number_is_an_error_naming_the_option_and_key(
    tmp_path: Path, value: object, said: str
) -> None:
    with pytest.raises(ConfigError) as info:
        _config(tmp_path, constants={"BLOCK": value})
    assert str(info.value).startswith(f"Option `constants` for build hook `slang`: {said}")


@pytest.mark.parametrize(
    ("table", "said"),
    [
        ({"BLOCK": {"x": 1}}, "`k_half.BLOCK` = a table"),
        ({"BLOCK": "64"}, "`k_half.BLOCK` = a string"),
    ],
)
def test_an_entrys_table_holds_values_only(tmp_path: Path, table: object, said: str) -> None:
    with pytest.raises(ConfigError) as info:
        _config(tmp_path, constants={"k_half": table})
    assert str(info.value).startswith(f"Option `constants` for build hook `slang`: {said}")


def test_entries_tables_merge_name_by_name_and_win_over_the_shared(tmp_path: Path) -> None:
    config = _config(
        tmp_path,
        constants={"BLOCK": 64, "SCALE": 1.0, "k_half": {"BLOCK": 16}},
        overrides=[
            {"shaders": ["a.slang"], "constants": {"k_half": {"SCALE": 2.0}, "k_float": {"BLOCK": 8}}}
        ],
    )
    a = config.options_for(tmp_path / "a.slang")
    assert a.constants_for("k_half") == {"BLOCK": 16, "SCALE": 2.0}
    assert a.constants_for("k_float") == {"BLOCK": 8, "SCALE": 1.0}
    assert a.constants_for("k") == {"BLOCK": 64, "SCALE": 1.0}
    assert config.options_for(tmp_path / "b.slang").constants_for("k_float") == {"BLOCK": 64, "SCALE": 1.0}


def test_an_override_value_is_named_with_its_override(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"^Option `overrides\[0\]\.constants` .*`SCALE` = a string"):
        _config(tmp_path, overrides=[{"shaders": ["a.slang"], "constants": {"SCALE": "0.5"}}])


@pytest.mark.parametrize("name", ["1X", "a-b", "é", ""])
def test_a_name_must_be_an_identifier(tmp_path: Path, name: str) -> None:
    with pytest.raises(ConfigError, match="is no constant name"):
        _config(tmp_path, constants={name: 1})


@pytest.mark.parametrize("raw", [["BLOCK=64"], "BLOCK=64", 64])
def test_the_option_is_a_table(tmp_path: Path, raw: object) -> None:
    with pytest.raises(ConfigError, match=r"Option `constants` for build hook `slang` must be a table"):
        _config(tmp_path, constants=raw)
