"""Image forms met in public Slang kernels (the issue-22 trial on Slang's and slangpy's own
examples and tests), written here anew: textures inside a ParameterBlock, textures inside a
cbuffer beside its values (Slang moves them to bindings of their own), C++-style
``[[shader("compute")]]`` attributes, and integer texel types for which Slang itself writes a
format into the SPIR-V (``Texture2D<uint>`` r32ui, ``RWBuffer<uint4>`` rgba32ui). Each builds to
arguments named after the code and computes what NumPy says."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest

from ..helpers import BuildProject, requires_device

PYPROJECT = """\
[project]
name = "imgforms"
version = "0.1.0"

[tool.hatch.build.hooks.slang]
shaders = ["shaders/*.slang"]
package = "imgforms/kernels"
"""

# Storage images with declared formats, so a device without unformatted reads runs them.
BLOCK = """\
struct Pass
{
    Texture2D<float4> src;
    [format("rgba32f")] RWTexture2D<float4> dst;
    void apply(uint2 p) { dst[p] = src[p] * 3.0; }
}
ParameterBlock<Pass> pass;

[[shader("compute")]]
[[numthreads(8, 8, 1)]]
void run(uint3 t : SV_DispatchThreadID) { pass.apply(t.xy); }
"""

CBUFFER = """\
cbuffer Args
{
    uint width;
    float bias;
    [format("r32f")] RWTexture2D<float> plane;
}

[shader("compute")]
[numthreads(16, 1, 1)]
void shift(uint3 t : SV_DispatchThreadID)
{
    if (t.x < width)
        plane[uint2(t.x, 0)] = plane[uint2(t.x, 0)] + bias;
}
"""

# Neither texture has a format in the source; Slang writes r32ui / rgba32ui for these.
INTEGER = """\
Texture2D<uint> counts;
RWBuffer<uint4> spread;

[shader("compute")]
[numthreads(4, 1, 1)]
void fan(uint3 t : SV_DispatchThreadID)
{
    uint c = counts.Load(int3(t.x, 0, 0));
    spread[t.x] = uint4(c, c + 1, c * 2, 7);
}
"""


@pytest.fixture
def built(tmp_path: Path, build_project: BuildProject) -> Callable[[str], ModuleType]:
    root = tmp_path / "imgforms"
    (root / "shaders").mkdir(parents=True)
    (root / "pyproject.toml").write_text(PYPROJECT)
    (root / "imgforms").mkdir()
    (root / "imgforms" / "__init__.py").write_text("")
    for name, text in {"block.slang": BLOCK, "cbuf.slang": CBUFFER, "integer.slang": INTEGER}.items():
        (root / "shaders" / name).write_text(text)
    return build_project(root).kernels


@pytest.mark.compile
def test_arguments_are_named_after_the_code(built: Callable[[str], ModuleType]) -> None:
    assert list(inspect.signature(built("block").run).parameters) == ["pass_src", "pass_dst", "grid"]
    assert list(inspect.signature(built("cbuf").shift).parameters) == ["Args_plane", "width", "bias", "grid"]
    assert list(inspect.signature(built("integer").fan).parameters) == ["counts", "spread", "grid"]


@pytest.mark.compile
@pytest.mark.gpu
@requires_device
def test_each_form_computes_what_numpy_says(built: Callable[[str], ModuleType]) -> None:
    rng = np.random.default_rng(22)
    src = rng.random((5, 9, 4), dtype=np.float32)
    dst = np.zeros_like(src)
    built("block").run(src, dst, grid=(2, 1, 1))
    np.testing.assert_allclose(dst, src * np.float32(3.0), rtol=1e-6)

    plane = rng.random((2, 20), dtype=np.float32)
    want = plane.copy()
    want[0, :13] += np.float32(0.5)
    built("cbuf").shift(plane, width=13, bias=0.5, grid=(1, 1, 1))
    np.testing.assert_array_equal(plane, want)

    counts = rng.integers(0, 1000, (1, 4)).astype(np.uint32)
    spread = np.zeros((4, 4), np.uint32)
    built("integer").fan(counts, spread, grid=(1, 1, 1))
    c = counts[0]
    np.testing.assert_array_equal(spread, np.stack([c, c + 1, c * 2, np.full(4, 7, np.uint32)], axis=1))
