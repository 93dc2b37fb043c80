"""Option `subgroup-size` of `overrides`: the subgroup size the matched shaders' entries require
(the last matching table that gives one wins), a power of two from 1 to 128 or an error naming
the option."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from hatch_slang.config.project import parse_config
from hatch_slang.errors import ConfigError


def _config(tmp_path: Path, *overrides: dict[str, Any]) -> Any:
    (tmp_path / "a.slang").write_text("")
    (tmp_path / "b.slang").write_text("")
    return parse_config(tmp_path, {"shaders": ["*.slang"], "package": "p/k", "overrides": list(overrides)})


def test_the_last_matching_table_gives_the_size(tmp_path: Path) -> None:
    config = _config(
        tmp_path,
        {"shaders": ["*.slang"], "subgroup-size": 64},
        {"shaders": ["a.slang"], "subgroup-size": 32},
        {"shaders": ["*.slang"], "defines": {"X": "1"}},
    )
    assert config.subgroup_size_for(tmp_path / "a.slang") == 32
    assert config.subgroup_size_for(tmp_path / "b.slang") == 64
    assert _config(tmp_path).subgroup_size_for(tmp_path / "a.slang") is None


@pytest.mark.parametrize("size", [0, 256, "32", 24])
def test_a_size_that_is_no_power_of_two_from_1_to_128_names_the_option(tmp_path: Path, size: object) -> None:
    with pytest.raises(ConfigError, match=r"subgroup-size.*power of two from 1 to 128"):
        _config(tmp_path, {"shaders": ["a.slang"], "subgroup-size": size}).subgroup_size_for(
            tmp_path / "a.slang"
        )
