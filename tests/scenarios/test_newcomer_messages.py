"""Messages a newcomer met in the first hour: each says what is actually wrong."""

from __future__ import annotations

from pathlib import Path

import pytest

from hatch_slang.builder import pipeline
from hatch_slang.config.project import parse_config
from hatch_slang.errors import ConfigError, HatchSlangError


def test_a_missing_package_option_is_called_missing(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as info:
        parse_config(tmp_path, {"shaders": ["shaders/*.slang"]})
    message = str(info.value)
    assert "Option `package` for build hook `slang` is required" in message
    assert '"mypkg/kernels"' in message
    assert "must be" not in message


def test_a_package_option_of_the_wrong_type_still_says_what_it_must_be(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="Option `package` for build hook `slang` must be a package path"):
        parse_config(tmp_path, {"shaders": ["shaders/*.slang"], "package": 3})


CBUFFER = """\
// Bindings:
//   u0: data    f32, `[n]`
//   b1: params  (n, scale, extra)
//
// Dispatch: (ceil(n / 64), 1, 1) threadgroups of 64.
[[vk::binding(0)]] RWStructuredBuffer<float> data;
struct P { uint n; float scale; };
[[vk::binding(1)]] ConstantBuffer<P> params;
[shader("compute")] [numthreads(64, 1, 1)]
void cbuf(uint3 id : SV_DispatchThreadID) { if (id.x < params.n) data[id.x] *= params.scale; }
"""

MIXED_STRUCT = """\
// Bindings:
//   u0: data    f32, `[n]`
//   t1: params  (n, scale, extra)
//
// Dispatch: (ceil(n / 64), 1, 1) threadgroups of 64.
[[vk::binding(0)]] RWStructuredBuffer<float> data;
struct P { uint n; float scale; };
[[vk::binding(1)]] StructuredBuffer<P> params;
[shader("compute")] [numthreads(64, 1, 1)]
void mixed(uint3 id : SV_DispatchThreadID) { if (id.x < params[0].n) data[id.x] *= params[0].scale; }
"""


@pytest.mark.compile
@pytest.mark.parametrize(("name", "source"), [("cbuf", CBUFFER), ("mixed", MIXED_STRUCT)])
def test_a_params_tuple_with_a_field_too_many_says_the_struct_holds_fewer(
    tmp_path: Path, name: str, source: str
) -> None:
    (tmp_path / "shaders").mkdir()
    (tmp_path / "shaders" / f"{name}.slang").write_text(source)
    config = parse_config(tmp_path, {"shaders": ["shaders/*.slang"], "package": "p/k"})
    with pytest.raises(HatchSlangError) as info:
        pipeline.build(config)
    message = str(info.value)
    assert f"shaders/{name}.slang:3" in message
    assert "lists 3 fields" in message and "holds only 2" in message, message
    assert "params[1]" not in message  # no advice to continue into a second element
