"""Resources of different descriptor types at one binding are a build error (issue 22, found by
the trial on public kernels).

HLSL-style sources with ``register(t0)``, ``register(u0)``, ``register(s0)``, ``register(b0)`` and
no ``[[vk::binding]]`` get all four at Vulkan binding 0 (Slang only warns). The build names each
variable with its declaration's line and says how to separate them; with the suggested
``compiler-args`` the same source builds and runs on the device. Views of one buffer at one
binding (aliases) stay one binding: ``test_conventions.py`` and ``test_calls.py``. Real Slang.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from hatch_slang.builder import pipeline
from hatch_slang.config.project import load_project_config
from hatch_slang.errors import ShaderError
from hatch_slang.spec.resources import SHIFTS

from ..helpers import built_package, requires_device

pytestmark = pytest.mark.compile

REGISTERS = """\
Texture2D<float4> src : register(t0);
RWTexture2D<float4> dst : register(u0);
SamplerState samp : register(s0);
cbuffer Params : register(b0) { uint w; uint h; };

[numthreads(8, 8, 1)]
void copy(uint3 id : SV_DispatchThreadID)
{
    if (id.x >= w || id.y >= h)
        return;
    dst[id.xy] = src.SampleLevel(samp, (float2(id.xy) + 0.5) / float2(w, h), 0);
}
"""


def _project(tmp_path: Path, args: tuple[str, ...] = ()) -> Path:
    root = tmp_path / "regs"
    (root / "shaders").mkdir(parents=True)
    (root / "shaders" / "copy.slang").write_text(REGISTERS)
    listed = ", ".join(f'"{a}"' for a in args)
    (root / "pyproject.toml").write_text(
        '[project]\nname = "regs"\nversion = "0.1"\n\n[tool.hatch.build.hooks.slang]\n'
        f'shaders = ["shaders/*.slang"]\npackage = "regs/kernels"\ncompiler-args = [{listed}]\n'
    )
    return root


def test_four_registers_at_one_binding_fail_the_build_naming_each(tmp_path: Path) -> None:
    with pytest.raises(ShaderError) as e:
        pipeline.build(load_project_config(_project(tmp_path)))
    message = str(e.value)
    assert message.startswith("shaders/copy.slang:1: entry `copy` uses ")
    for variable, kind, line in (
        ("src", "sampled image", 1),
        ("dst", "storage image", 2),
        ("samp", "sampler", 3),
        ("Params", "uniform buffer", 4),
    ):
        assert f"`{variable}` ({kind}, shaders/copy.slang:{line})" in message
    assert "at one binding 0" in message
    assert '"-fvk-t-shift", "16", "0", "-fvk-s-shift", "32", "0", "-fvk-u-shift", "48", "0"' in message


@pytest.mark.gpu
@requires_device
def test_the_suggested_shifts_separate_them_and_it_runs(tmp_path: Path) -> None:
    with built_package(_project(tmp_path, SHIFTS)) as built:
        bindings = {b["name"]: b["binding"] for b in built.entry("copy", "copy")["bindings"]}
        assert bindings == {"Params": 0, "src": 16, "samp": 32, "dst": 48}
        src = np.random.default_rng(3).random((5, 9, 4), dtype=np.float32)
        dst = np.zeros_like(src)
        built.kernels("copy").copy(src, dst, w=9, h=5, grid=(2, 1, 1))
    np.testing.assert_allclose(dst, src, atol=2e-6)  # texel centres: the linear filter's weights 1, 0
