"""The kernels that tests/scenarios/test_calls.py, tests/scenarios/test_load.py and soak.py call,
and one checked call.

``axpy`` (``y += alpha * scale[r] * x + offset`` over ``[rows][cols]``: read-only and written f32
arrays, an f32 and a u32 param, a 2-D grid), ``fill`` (two written u32 arrays and a grid whose
z size is a param) and ``spin`` (busy work for a given number of rounds: it keeps the device busy
while a test interrupts the call queued behind it), built with hatch-slang's pipeline into a
package ``callspkg`` under a directory of the caller's. The tests import this module; nothing here
imports the tests.
"""

from __future__ import annotations

import importlib
from pathlib import Path
from types import ModuleType

import numpy as np

AXPY = """\
// y += alpha * scale[r] * x + offset, row by row.
//
// Bindings:
//   t0: x       f32, `[rows][cols]` input
//   u1: y       f32, `[rows][cols]` accumulated in place
//   t2: scale   f32, `[rows]` per-row factor
//   t3: params  (rows, cols, alpha_bits, offset)
//
// Dispatch: (ceil(cols / 64), rows) threadgroups of 64.

[[vk::binding(0)]] StructuredBuffer<float> x;
[[vk::binding(1)]] RWStructuredBuffer<float> y;
[[vk::binding(2)]] StructuredBuffer<float> scale;
[[vk::binding(3)]] StructuredBuffer<uint4> params;

[shader("compute")]
[numthreads(64, 1, 1)]
void axpy(uint3 id : SV_DispatchThreadID) {
    uint4 p = params[0];
    if (id.y < p.x && id.x < p.y) {
        uint i = id.y * p.y + id.x;
        y[i] = asfloat(p.z) * scale[id.y] * x[i] + y[i] + float(p.w);
    }
}
"""

FILL = """\
// out[i] = value and twice[i] = 2 * value, repeated over `depth` layers of the grid.
//
// Bindings:
//   u0: out     u32, `[n]` written
//   u1: twice   u32, `[n]` written
//   t2: params  (n, value, depth)
//
// Dispatch: (ceil(n / 64), 1, depth) threadgroups of 64.

[[vk::binding(0)]] RWStructuredBuffer<uint> out;
[[vk::binding(1)]] RWStructuredBuffer<uint> twice;
[[vk::binding(2)]] StructuredBuffer<uint> params;

[shader("compute")]
[numthreads(64, 1, 1)]
void fill(uint3 id : SV_DispatchThreadID) {
    if (id.x < params[0]) {
        out[id.x] = params[1];
        twice[id.x] = 2u * params[1];
    }
}
"""

SPIN = """\
// Busy work: `rounds` rounds of an LCG on each element of `acc` (keeps the device busy a while).
//
// Bindings:
//   u0: acc     u32, `[n]` updated in place
//   t1: params  (n, rounds)
//
// Dispatch: (ceil(n / 64), 1, 1) threadgroups of 64.

[[vk::binding(0)]] RWStructuredBuffer<uint> acc;
[[vk::binding(1)]] StructuredBuffer<uint> params;

[shader("compute")]
[numthreads(64, 1, 1)]
void spin(uint3 id : SV_DispatchThreadID) {
    if (id.x < params[0]) {
        uint v = acc[id.x];
        for (uint r = 0; r < params[1]; r++) {
            v = v * 1664525u + 1013904223u;
        }
        acc[id.x] = v;
    }
}
"""

PYPROJECT = """\
[project]
name = "callspkg"
version = "0"

[tool.hatch.build.hooks.slang]
shaders = ["shaders/*.slang"]
package = "callspkg/kernels"
"""


def build_kernels(root: Path) -> ModuleType:
    """Build the test kernels into ``root`` and import their package."""
    from hatch_slang.builder import pipeline
    from hatch_slang.config.project import load_project_config

    (root / "shaders").mkdir(parents=True)
    (root / "shaders" / "axpy.slang").write_text(AXPY)
    (root / "shaders" / "fill.slang").write_text(FILL)
    (root / "shaders" / "spin.slang").write_text(SPIN)
    (root / "pyproject.toml").write_text(PYPROJECT)
    config = load_project_config(root)
    pipeline.write_output(pipeline.build(config), config.package_dir)
    importlib.invalidate_caches()
    return importlib.import_module("callspkg.kernels")


def one_call(kernels: ModuleType, rng: np.random.Generator, as_tensors: bool = False) -> None:
    """An axpy call on fresh random data, checked against NumPy."""
    import slangrt

    rows, cols = int(rng.integers(1, 6)), int(rng.integers(1, 300))
    x = rng.standard_normal((rows, cols), dtype=np.float32)
    y = rng.standard_normal((rows, cols), dtype=np.float32)
    scale = rng.standard_normal(rows, dtype=np.float32)
    alpha, offset = float(rng.integers(-4, 4)) / 2, int(rng.integers(0, 4))
    want = np.float32(alpha) * scale[:, None] * x + y + np.float32(offset)
    if as_tensors:
        ty = slangrt.Tensor.from_numpy(y)
        kernels.axpy.axpy(
            slangrt.Tensor.from_numpy(x), ty, slangrt.Tensor.from_numpy(scale), alpha=alpha, offset=offset
        )
        y = ty.numpy()
    else:
        kernels.axpy.axpy(x, y, scale, alpha=alpha, offset=offset)
    np.testing.assert_allclose(y, want, rtol=1e-5, atol=1e-5)
