"""Forms met in other people's uncommented Slang (found by a trial on the Slang compiler's own test
shaders): ParameterBlock members, entry-point `uniform` buffers, a whole matrix in a ConstantBuffer
and arrays of buffers. Each either gets arguments named after the code that fill every value the
entry reads, or fails the build naming the file, line and variable."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest

from hatch_slang.builder import pipeline
from hatch_slang.config.project import load_project_config
from hatch_slang.errors import HatchSlangError

from ..helpers import BuildProject, requires_device

PYPROJECT = """\
[project]
name = "formspkg"
version = "0.1.0"

[tool.hatch.build.hooks.slang]
shaders = ["shaders/*.slang"]
package = "formspkg/kernels"
"""

PARAMETER_BLOCKS = """\
struct P { RWStructuredBuffer<int> buffer; };
ParameterBlock<P> dst;
ParameterBlock<P> src;
[shader("compute")] [numthreads(4, 1, 1)]
void computeMain(uint3 t : SV_DispatchThreadID) { dst.buffer[t.x] = src.buffer[t.x] * 2; }
"""

ENTRY_POINT_BUFFER = """\
[shader("compute")] [numthreads(4, 1, 1)]
void computeMain(uniform RWStructuredBuffer<int> result, uniform int k, uint3 t : SV_DispatchThreadID)
{
    result[t.x] = k + int(t.x);
}
"""

MATRIX = """\
ConstantBuffer<float4x4> m;
cbuffer Params { float2x2 r; float s; };
RWStructuredBuffer<float> outp;
[shader("compute")] [numthreads(1, 1, 1)]
void computeMain() { outp[0] = m[3][0]; outp[1] = r[0][1] + s; }
"""

BUFFER_ARRAY = """\
RWStructuredBuffer<int> bufs[3];
[shader("compute")] [numthreads(4, 1, 1)]
void computeMain(uint3 t : SV_DispatchThreadID) { bufs[0][t.x] = bufs[1][t.x] + bufs[2][t.x]; }
"""


def _project(root: Path, shaders: dict[str, str]) -> Path:
    (root / "shaders").mkdir(parents=True)
    (root / "pyproject.toml").write_text(PYPROJECT)
    (root / "formspkg").mkdir()
    (root / "formspkg" / "__init__.py").write_text("")
    for name, text in shaders.items():
        (root / "shaders" / name).write_text(text)
    return root


@pytest.fixture
def built(tmp_path: Path, build_project: BuildProject) -> Callable[[str], ModuleType]:
    root = _project(
        tmp_path / "forms",
        {"pblock.slang": PARAMETER_BLOCKS, "epbuf.slang": ENTRY_POINT_BUFFER, "matrix.slang": MATRIX},
    )
    return build_project(root).kernels


@pytest.mark.compile
def test_arguments_are_named_after_the_code(built: Callable[[str], ModuleType]) -> None:
    assert list(inspect.signature(built("pblock").computeMain).parameters) == [
        "dst_buffer",
        "src_buffer",
        "grid",
    ]
    assert list(inspect.signature(built("epbuf").computeMain).parameters) == ["result", "k", "grid"]
    params = inspect.signature(built("matrix").computeMain).parameters
    # Each matrix is one argument, shaped as Slang indexes it (`m[i][j]` is `m[i, j]`).
    assert [n for n, p in params.items() if p.default is inspect.Parameter.empty] == [
        "outp",
        "m",
        "r",
        "s",
        "grid",
    ]


@pytest.mark.compile
@pytest.mark.gpu
@requires_device
def test_each_form_computes_what_numpy_says(built: Callable[[str], ModuleType]) -> None:
    src = np.arange(4, dtype=np.int32) + 10
    dst = np.zeros(4, np.int32)
    built("pblock").computeMain(dst, src, grid=(1, 1, 1))
    np.testing.assert_array_equal(dst, src * 2)

    result = np.zeros(4, np.int32)
    built("epbuf").computeMain(result, k=7, grid=(1, 1, 1))
    np.testing.assert_array_equal(result, 7 + np.arange(4))

    out = np.zeros(2, np.float32)
    m = np.arange(16, dtype=np.float32).reshape(4, 4)  # m[3][0] is 12, m[0][3] would be 3
    built("matrix").computeMain(out, m=m, r=[[0.0, 1.0], [7.0, 0.0]], s=2.0, grid=(1, 1, 1))
    np.testing.assert_array_equal(out, [12.0, 3.0])


@pytest.mark.compile
def test_an_array_of_buffers_fails_naming_file_line_and_variable(tmp_path: Path) -> None:
    root = _project(tmp_path / "arr", {"bufarray.slang": BUFFER_ARRAY})
    with pytest.raises(
        HatchSlangError, match=r"shaders/bufarray.slang:1: `bufs` is an array of 3 storage buffers"
    ):
        pipeline.build(load_project_config(root))


HIDDEN_FIELD = """\
cbuffer Params { float _scale; uint n; };
RWStructuredBuffer<float> x;
[shader("compute")] [numthreads(64, 1, 1)]
void computeMain(uint3 t : SV_DispatchThreadID) { if (t.x < n) x[t.x] *= _scale; }
"""


@pytest.mark.compile
def test_a_value_the_entry_reads_is_never_left_as_padding(tmp_path: Path) -> None:
    """`_scale` reads as padding by its name, but the entry reads it: the build says so."""
    root = _project(tmp_path / "hidden", {"hidden.slang": HIDDEN_FIELD})
    with pytest.raises(
        HatchSlangError, match=r"hidden.slang:1: entry `computeMain` reads `_scale` of `Params`"
    ):
        pipeline.build(load_project_config(root))


WARNS = """\
RWStructuredBuffer<int> x;
[shader("compute")] [numthreads(1, 1, 1)]
void computeMain() { float f = 2.5; int i = f; x[0] = i; }
"""


@pytest.mark.compile
def test_the_compilers_warnings_name_the_file(tmp_path: Path) -> None:
    root = _project(tmp_path / "warns", {"warns.slang": WARNS})
    out = pipeline.build(load_project_config(root))
    said = [w for w in out.warnings if "Slang says" in w or "warning[" in w]
    assert said and all(w.startswith("shaders/warns.slang") for w in said), out.warnings


GLSL_DOUBLE = """\
#version 450
layout(local_size_x = 64) in;
layout(std430, binding = 0) buffer Data { float values[]; };
layout(push_constant) uniform Push { uint n; float factor; };

void main()
{
    uint i = gl_GlobalInvocationID.x;
    if (i < n) values[i] = values[i] * factor;
}
"""


@pytest.mark.compile
@pytest.mark.gpu
@requires_device
def test_a_glsl_compute_shader_builds_binds_and_runs(tmp_path: Path, build_project: BuildProject) -> None:
    """GLSL's storage block and push constants are read off the SPIR-V: bound, and named."""
    kernels = build_project(_project(tmp_path / "glslp", {"glsl_double.slang": GLSL_DOUBLE})).kernels
    fn = kernels("glsl_double").main
    assert list(inspect.signature(fn).parameters) == ["Data", "n", "factor", "grid"]
    x = np.arange(100, dtype=np.float32)
    fn(x, n=100, factor=3.0, grid=(2, 1, 1))
    np.testing.assert_array_equal(x, np.arange(100, dtype=np.float32) * 3)


TWO_BACKENDS = """\
// Bindings, for both backends this file is shared with:
//   wgsl: in place, 3 bindings
//     binding 0: x       f32, read-write, normalized in place
//     binding 1: weight  f32, read
//     binding 2: params  (n, eps_bits)
//   metal: out of place, 4 buffers
//     buffer 0: src      f32, read
//     buffer 1: dst      f32, write
//     buffer 2: w        f32, read
//     buffer 3: params   (n, eps_bits)
[[vk::binding(0)]] RWStructuredBuffer<float> x_buf;
[[vk::binding(1)]] StructuredBuffer<float> w_buf;
[[vk::binding(2)]] StructuredBuffer<uint> p_buf;
[[vk::binding(3)]] StructuredBuffer<float> unused_metal_only;
[shader("compute")] [numthreads(64, 1, 1)]
void rms(uint3 t : SV_DispatchThreadID) { if (t.x < p_buf[0]) x_buf[t.x] *= w_buf[t.x] * asfloat(p_buf[1]); }
"""

DERIVED_FROM_NOTHING = """\
// Bindings:
//   binding 0: x       f32, read-write (rows*dim)
//   binding 1: params  (total = rows*dim, dim)
// Dispatch: ceil(total / 64) workgroups of 64
[[vk::binding(0)]] RWStructuredBuffer<float> x;
[[vk::binding(1)]] StructuredBuffer<uint> params;
[shader("compute")] [numthreads(64, 1, 1)]
void scale(uint3 t : SV_DispatchThreadID) { if (t.x < params[0]) x[t.x] *= float(params[1]); }
"""


@pytest.mark.compile
def test_the_backend_list_is_matched_against_what_the_entry_uses(tmp_path: Path) -> None:
    """A binding the file declares but the entry never uses does not make the other list win."""
    root = _project(tmp_path / "backends", {"rms.slang": TWO_BACKENDS})
    out = pipeline.build(load_project_config(root))
    assert any(
        "rms.slang:2: note: the wgsl binding list" in w and "(line 6 ignored)" in w for w in out.warnings
    )
    source = out.files["rms.py"].decode()
    assert "x: npt.NDArray[np.float32]" in source and "eps: float" in source


@pytest.mark.compile
def test_a_field_computed_from_unknown_sizes_becomes_an_argument(tmp_path: Path) -> None:
    root = _project(tmp_path / "derived", {"scale.slang": DERIVED_FROM_NOTHING})
    out = pipeline.build(load_project_config(root))
    assert any(
        "scale.slang:3: warning: params field `total` is computed from `rows`" in w for w in out.warnings
    )
    assert "    total: int," in out.files["scale.py"].decode()
