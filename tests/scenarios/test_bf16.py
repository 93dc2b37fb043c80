"""bf16: `bf16`/`bfloat16` are dtype words; a bf16 binding takes ml_dtypes.bfloat16 or uint16 arrays.

Slang spells the type ``BFloat16`` and its reflection names it ``bfloat16``; its SPIR-V needs the
``BFloat16TypeKHR`` capability (SPV_KHR_bfloat16), which lavapipe lacks, so kernels here hold bf16
as its bits: one per ``uint16_t`` or two per ``uint`` (both are the documented bf16, no note); a
``half`` buffer documented bf16 is a contradiction (another format), an error naming file:line.
A dtype word the reader does not know (``tf32``) is a warning naming file:line. Real builds, real
kernels on lavapipe; the generated wrapper passes ``mypy --strict`` and never imports ml_dtypes
(the runtime does not need it).
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

import ml_dtypes
import numpy as np
import pytest

from hatch_slang.errors import HatchSlangError

from ..helpers import BuildProject
from .test_unreadable_lines import build

pytestmark = pytest.mark.compile

PYPROJECT = """\
[project]
name = "bfpkg"
version = "0.1.0"

[tool.hatch.build.hooks.slang]
shaders = ["shaders/*.slang"]
package = "bfpkg/kernels"
"""

# Two bf16 values per 32-bit word (little-endian: element 2k in the low half).
WIDEN = """\
// Widen bf16 to f32.
//
// Bindings:
//   t0: x  bf16, [n]
//   u1: y  f32, [n] written
//   t2: params  (n)
//
// Dispatch: ceil(n / 64) threadgroups of 64
[[vk::binding(0)]] StructuredBuffer<uint> x;
[[vk::binding(1)]] RWStructuredBuffer<float> y;
[[vk::binding(2)]] StructuredBuffer<uint> params;
[shader("compute")] [numthreads(64, 1, 1)]
void widen(uint3 id : SV_DispatchThreadID) {
    uint i = id.x;
    if (i < params[0]) y[i] = asfloat(((x[i / 2] >> (16 * (i % 2))) & 0xFFFFu) << 16);
}
"""

# One bf16 per uint16_t: the upper half of each f32 (truncation).
NARROW = """\
// Narrow f32 to bf16 by truncation.
//
// Bindings:
//   t0: x  f32, [n]
//   u1: y  bfloat16, [n] written
//
// Dispatch: ceil(n / 64) threadgroups of 64
[[vk::binding(0)]] StructuredBuffer<float> x;
[[vk::binding(1)]] RWStructuredBuffer<uint16_t> y;
[shader("compute")] [numthreads(64, 1, 1)]
void narrow(uint3 id : SV_DispatchThreadID) {
    uint n, stride;
    x.GetDimensions(n, stride);
    if (id.x < n) y[id.x] = uint16_t(asuint(x[id.x]) >> 16);
}
"""

USE = """\
import numpy as np
from bfpkg.kernels import narrow, widen

widen.widen(np.zeros(4, np.uint16), np.zeros(4, np.float32))
narrow.narrow(np.zeros(4, np.float32), np.zeros(4, np.uint16))
"""


@pytest.fixture
def root(tmp_path: Path) -> Path:
    root = tmp_path / "bf"
    (root / "shaders").mkdir(parents=True)
    (root / "pyproject.toml").write_text(PYPROJECT)
    (root / "bfpkg").mkdir()
    (root / "bfpkg" / "__init__.py").write_text("")
    (root / "shaders" / "widen.slang").write_text(WIDEN)
    (root / "shaders" / "narrow.slang").write_text(NARROW)
    return root


@pytest.fixture
def kernels(root: Path, build_project: BuildProject) -> Callable[[str], ModuleType]:
    return build_project(root).kernels


VALUES = np.array([1.0, -2.5, 3.140625, 0.0, 65280.0, -0.001953125, 7.0], np.float32)


def test_a_bf16_binding_takes_ml_dtypes_bfloat16_and_uint16_arrays(
    kernels: Callable[[str], ModuleType],
) -> None:
    widen = kernels("widen")
    x = VALUES.astype(ml_dtypes.bfloat16)
    y = np.full(len(x), np.nan, np.float32)
    widen.widen(x, y)
    np.testing.assert_array_equal(y, x.astype(np.float32))
    y2 = np.zeros(len(x), np.float32)
    widen.widen(x.view(np.uint16), y2)  # its bits
    np.testing.assert_array_equal(y2, y)


def test_a_written_bf16_binding_fills_a_bfloat16_array(kernels: Callable[[str], ModuleType]) -> None:
    narrow = kernels("narrow")
    x = (VALUES * np.float32(1.001)).astype(np.float32)
    y = np.zeros(len(x), ml_dtypes.bfloat16)
    narrow.narrow(x, y)
    np.testing.assert_array_equal(y.view(np.uint16), (x.view(np.uint32) >> 16).astype(np.uint16))


@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.int16, ml_dtypes.float8_e4m3fn])
def test_another_dtype_for_a_bf16_binding_is_refused_naming_it(
    kernels: Callable[[str], ModuleType], dtype: type
) -> None:
    widen = kernels("widen")
    with pytest.raises(
        TypeError, match=r"argument `x` must have dtype bfloat16 \(ml_dtypes.bfloat16, or its bits"
    ):
        widen.widen(np.zeros(4, dtype), np.zeros(4, np.float32))


def test_the_wrapper_passes_mypy_strict_without_naming_ml_dtypes(
    root: Path, kernels: Callable[[str], ModuleType]
) -> None:
    source = (root / "bfpkg" / "kernels" / "widen.py").read_text()
    assert "ml_dtypes" in source  # in the docstring only: never imported
    assert "import ml_dtypes" not in source and "ml_dtypes." not in source.split('"""')[-1]
    (root / "use.py").write_text(USE)
    mypy = Path(sys.executable).with_name("mypy")
    done = subprocess.run(
        [mypy, "--strict", "--no-incremental", "use.py", "bfpkg"], cwd=root, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stdout + done.stderr


BFLOAT16_TYPE = """\
// Bindings:
//   t0: x  bf16, [n]
//   u1: y  f32, [n] written
[[vk::binding(0)]] StructuredBuffer<BFloat16> x;
[[vk::binding(1)]] RWStructuredBuffer<float> y;
[shader("compute")] [numthreads(64, 1, 1)]
void k(uint3 id : SV_DispatchThreadID) { y[id.x] = float(x[id.x]); }
"""


def test_slangs_bfloat16_type_is_bf16_in_the_manifest(tmp_path: Path) -> None:
    out = build(tmp_path, {"k.slang": BFLOAT16_TYPE.replace("bf16, [n]", "[n]")})  # dtype from reflection
    manifest = json.loads(out.files["manifest.json"])
    x = next(b for b in manifest["shaders"]["k"]["entries"]["k"]["bindings"] if b["name"] == "x")
    assert x["dtype"] == "bf16"
    assert '_d.array("x", x, "bfloat16", ("n",)' in out.files["k.py"].decode()


def test_a_half_buffer_documented_bf16_is_an_error_naming_the_line(tmp_path: Path) -> None:
    text = BFLOAT16_TYPE.replace("StructuredBuffer<BFloat16>", "StructuredBuffer<half>")
    with pytest.raises(
        HatchSlangError, match=r"shaders/k.slang:2: .*declared bf16 but the shader's `x` holds f16"
    ):
        build(tmp_path, {"k.slang": text})


def test_an_unknown_dtype_word_is_a_warning_naming_the_line(tmp_path: Path) -> None:
    text = BFLOAT16_TYPE.replace("x  bf16, [n]", "x  tf32, [n]").replace("<BFloat16>", "<float>")
    out = build(tmp_path, {"k.slang": text})
    (note,) = [w for w in out.warnings if w.startswith("shaders/k.slang:")]
    assert note.startswith("shaders/k.slang:2: warning: binding 0 (`x`): `tf32` is no dtype"), note
    assert '_d.array("x", x, "float32", ("n",)' in out.files["k.py"].decode()  # its shape kept


@pytest.mark.parametrize("value", [1.0, -2.5, 3.14159, 1e-40, -0.0, float("inf"), 3.3895e38, 1.00390625])
def test_a_bf16_params_field_packs_as_ml_dtypes_rounds(value: float) -> None:
    from slangrt import wrapper_api

    packed = wrapper_api.Dims("t.k").pack("params", 4, (("eps", 2, "bf16", value),))
    want = np.array([value], np.float32).astype(ml_dtypes.bfloat16).view(np.uint16)
    assert packed.data[2:].view(np.uint16)[0] == want[0] and not packed.data[:2].any()


def test_a_bf16_params_field_past_its_range_is_refused_naming_it() -> None:
    from slangrt import wrapper_api

    with pytest.raises(ValueError, match=r"argument `eps` = 3.4e\+38 is outside the bf16 range"):
        wrapper_api.Dims("t.k").pack("params", 4, (("eps", 0, "bf16", 3.4e38),))
