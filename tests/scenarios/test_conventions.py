"""Kernels written the ways real projects write them build without edits and run on lavapipe.

The shaders live in tests/packages/conventions/shaders; each covers one convention: several
entries with their own Dispatch lines, an entry named `main`, `__target_switch`, groupshared
memory with barriers, no Bindings block, `binding N:` / `buffer N:` lines, params packed as
`uint`, `uint2`, `uint4`, a struct, a ConstantBuffer and a `cbuffer`, and aliased float4 views.
"""

from __future__ import annotations

import inspect
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

from ..helpers import BuiltPackage, built_package, copy_package, requires_device

pytestmark = [pytest.mark.compile]


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BuiltPackage]:
    with built_package(copy_package("conventions", tmp_path_factory.mktemp("conv"))) as package:
        yield package


def _rng(seed: int) -> np.random.Generator:
    return np.random.default_rng(seed)


SIZES = [1, 63, 64, 1000, 100_003]


# -- several entries, per-entry Dispatch lines, a binding used by one entry only ------------------


def test_per_entry_dispatch_lines_and_bindings(built: BuiltPackage) -> None:
    fill, scale = built.entry("multi", "fill"), built.entry("multi", "scale")
    assert (fill["threads"], fill["grid"]) == ([64, 1, 1], ["ceil(n / 64)"])
    assert (scale["threads"], scale["grid"]) == ([128, 1, 1], ["ceil(n / 128)"])
    assert [b["name"] for b in fill["bindings"]] == ["data", "params"]
    assert [b["name"] for b in scale["bindings"]] == ["data", "params", "factor"]
    module = built.kernels("multi")
    assert "factor" not in inspect.signature(module.fill).parameters
    assert "factor" in inspect.signature(module.scale).parameters


@requires_device
@pytest.mark.gpu
@pytest.mark.parametrize("n", SIZES)
def test_multi_entry_kernels_run(built: BuiltPackage, n: int) -> None:
    module = built.kernels("multi")
    data = np.zeros(n, np.float32)
    module.fill(data, value=2.5)
    assert np.all(data == 2.5)
    module.scale(data, np.array([-3.0], np.float32), value=0.0)
    assert np.all(data == -7.5)


# -- an entry named main; __target_switch; groupshared + barriers ----------------------------------


@requires_device
@pytest.mark.gpu
@pytest.mark.parametrize("n", [1, 2, 31, 33, 5000])
def test_entry_named_main(built: BuiltPackage, n: int) -> None:
    module = built.kernels("blur")
    assert module.__all__ == ["main"]
    src = _rng(n).standard_normal(n, dtype=np.float32)
    dst = np.zeros_like(src)
    module.main(src, dst)
    padded = np.concatenate([src[:1], src, src[-1:]]).astype(np.float64)
    want = (padded[:-2] + padded[1:-1] + padded[2:]) / 3
    np.testing.assert_allclose(dst, want, rtol=1e-5, atol=1e-6)


@requires_device
@pytest.mark.gpu
def test_target_switch_takes_the_spirv_branch(built: BuiltPackage) -> None:
    out = np.zeros(100, np.float32)
    built.kernels("target_switch").tagged(out)
    np.testing.assert_array_equal(out, 1.0 + np.arange(100, dtype=np.float32))


@requires_device
@pytest.mark.gpu
@pytest.mark.parametrize("n", [1, 255, 256, 257, 70_000])
def test_groupshared_reduction_with_barriers(built: BuiltPackage, n: int) -> None:
    values = _rng(n).standard_normal(n, dtype=np.float32)
    n_blocks = -(-n // 256)
    sums = np.zeros(n_blocks, np.float32)
    built.kernels("block_sum").block_sum(values, sums)
    padded = np.zeros(n_blocks * 256, np.float64)
    padded[:n] = values
    np.testing.assert_allclose(sums, padded.reshape(n_blocks, 256).sum(axis=1), rtol=1e-4, atol=1e-4)


# -- no Bindings block: a reflection-only wrapper, a warning, an explicit grid ---------------------


def test_no_bindings_block_warns_and_wrapper_takes_grid(built: BuiltPackage) -> None:
    assert any("shaders/raw.slang: no Bindings block" in w for w in built.output.warnings)
    params = inspect.signature(built.kernels("raw").raw).parameters
    assert list(params) == ["counts", "limit", "grid"]
    assert params["grid"].kind is inspect.Parameter.KEYWORD_ONLY
    assert built.entry("raw", "raw")["grid"] is None


@requires_device
@pytest.mark.gpu
def test_reflection_only_wrapper_runs_with_explicit_grid(built: BuiltPackage) -> None:
    module = built.kernels("raw")
    counts = np.full(40, 10, np.int32)
    module.raw(counts, np.array([37], np.uint32), grid=(3, 1, 1))
    want = np.full(40, 10, np.int32)
    want[:37] += np.arange(37, dtype=np.int32) - 3
    np.testing.assert_array_equal(counts, want)
    with pytest.raises(TypeError, match="argument `grid` must be a tuple"):
        module.raw(counts, np.array([37], np.uint32), grid=3)
    with pytest.raises(TypeError, match="argument `counts` must have dtype int32"):
        module.raw(counts.astype(np.float32), np.array([37], np.uint32), grid=(3, 1, 1))


# -- `binding N:` / `buffer N:` lines ------------------------------------------------------------


def test_glsl_style_binding_lines_take_access_from_the_compiler(built: BuiltPackage) -> None:
    bindings = built.entry("binding_lines", "axpy")["bindings"]
    assert [(b["name"], b["writable"]) for b in bindings] == [
        ("x", False),
        ("y", True),
        ("params", False),
    ]


@requires_device
@pytest.mark.gpu
@pytest.mark.parametrize("n", [1, 65, 4096])
def test_glsl_style_binding_lines_run(built: BuiltPackage, n: int) -> None:
    x = _rng(n).standard_normal(n, dtype=np.float32)
    y = _rng(n + 1).standard_normal(n, dtype=np.float32)
    want = 0.5 * x.astype(np.float64) + y
    built.kernels("binding_lines").axpy(x, y, a=0.5)
    np.testing.assert_allclose(y, want, rtol=1e-6, atol=1e-6)


# -- params packed as uint, uint2, uint4, a struct, a ConstantBuffer, a cbuffer --------------------


def _params_layout(built: BuiltPackage, module: str, entry: str, name: str = "params") -> Any:
    bindings = built.entry(module, entry)["bindings"]
    (found,) = [b for b in bindings if b["name"] == name]
    return found["params"]


def test_params_layouts_follow_the_element_type(built: BuiltPackage) -> None:
    assert _params_layout(built, "params_uint", "params_uint") == [
        ["n", 0, "u32"],
        ["stride", 4, "u32"],
        ["scale", 8, "f32"],
        ["shift", 12, "u32"],
    ]
    assert _params_layout(built, "params_uint2", "params_uint2") == [
        ["n", 0, "u32"],
        ["stride", 4, "u32"],
        ["scale", 8, "f32"],
        ["shift", 12, "u32"],
    ]
    assert _params_layout(built, "params_uint4", "flat_tuple") == [
        ["n", 0, "u32"],
        ["stride", 4, "u32"],
        ["scale", 12, "f32"],
        ["shift", 16, "u32"],
    ]
    assert _params_layout(built, "params_uint4", "per_element", "params2") == [
        ["n", 0, "u32"],
        ["stride", 4, "u32"],
        ["scale", 8, "f32"],
        ["shift", 16, "u32"],
        ["bias", 20, "f32"],
    ]
    assert _params_layout(built, "params_struct", "params_struct") == [
        ["n", 0, "u32"],
        ["stride", 4, "u32"],
        ["scale", 8, "f32"],
        ["shift", 12, "i32"],
    ]
    # std140: the float4 member starts at byte 16.
    assert _params_layout(built, "params_cbuffer", "constant_buffer") == [
        ["n", 0, "u32"],
        ["scale", 4, "f32"],
        ["shift", 8, "i32"],
        ["w0", 16, "f32"],
        ["w1", 20, "f32"],
        ["w2", 24, "f32"],
        ["w3", 28, "f32"],
    ]
    cbuffer = [b for b in built.entry("params_cbuffer", "cbuffer_block")["bindings"] if b["name"] == "block"]
    assert cbuffer[0]["kind"] == "uniform"
    assert cbuffer[0]["params"] == [["count", 0, "u32"], ["gain", 4, "f32"]]


@requires_device
@pytest.mark.gpu
@pytest.mark.parametrize(
    ("module", "entry"),
    [
        ("params_uint", "params_uint"),
        ("params_uint2", "params_uint2"),
        ("params_uint4", "flat_tuple"),
        ("params_struct", "params_struct"),
    ],
)
@pytest.mark.parametrize("n", [1, 100, 3000])
def test_packed_params_reach_the_kernel(built: BuiltPackage, module: str, entry: str, n: int) -> None:
    x = _rng(n).standard_normal(3 * n, dtype=np.float32)
    out = np.zeros(n, np.float32)
    getattr(built.kernels(module), entry)(x, out, stride=3, scale=-1.5, shift=7)
    np.testing.assert_allclose(out, x[::3].astype(np.float64) * -1.5 + 7, rtol=1e-6, atol=1e-5)


@requires_device
@pytest.mark.gpu
def test_params_by_element_and_signed_struct_fields(built: BuiltPackage) -> None:
    x = _rng(1).standard_normal(200, dtype=np.float32)
    out = np.zeros(100, np.float32)
    built.kernels("params_uint4").per_element(x, out, stride=2, scale=2.0, shift=1, bias=0.25)
    np.testing.assert_allclose(out, x[::2].astype(np.float64) * 2 + 1.25, rtol=1e-6, atol=1e-6)
    built.kernels("params_struct").params_struct(x, out, stride=2, scale=1.0, shift=-5)
    np.testing.assert_allclose(out, x[::2].astype(np.float64) - 5, rtol=1e-6, atol=1e-6)
    with pytest.raises(ValueError, match=r"argument `shift` = -1 is outside the u32 range"):
        built.kernels("params_uint").params_uint(x, out, stride=2, scale=1.0, shift=-1)


@requires_device
@pytest.mark.gpu
@pytest.mark.parametrize("n", [1, 64, 1000])
def test_uniform_buffer_params(built: BuiltPackage, n: int) -> None:
    module = built.kernels("params_cbuffer")
    x = _rng(n).standard_normal((n, 4), dtype=np.float32)
    out = np.zeros(n, np.float32)
    w = np.array([1.0, -2.0, 0.5, 3.0])
    module.constant_buffer(x, out, scale=2.0, shift=-3, w0=1.0, w1=-2.0, w2=0.5, w3=3.0)
    np.testing.assert_allclose(out, (x @ w) * 2 - 3, rtol=1e-5, atol=1e-5)
    module.cbuffer_block(x, out, count=n, gain=4.0)
    np.testing.assert_allclose(out, x[:, 0] * 4.0, rtol=1e-6)


# -- aliased float4 view of a binding; a `flat[n]` shape -----------------------------------------


def test_aliased_views_are_one_binding(built: BuiltPackage) -> None:
    bindings = built.entry("vec4_views", "vec4_views")["bindings"]
    assert [(b["binding"], b["name"], b.get("flat", False)) for b in bindings] == [
        (0, "data", True),
        (1, "params", False),
    ]


@requires_device
@pytest.mark.gpu
@pytest.mark.parametrize("shape", [(1,), (3,), (4,), (5, 7), (2, 3, 1001)])
def test_float4_views_and_flat_shapes(built: BuiltPackage, shape: tuple[int, ...]) -> None:
    import slangrt

    module = built.kernels("vec4_views")
    data = _rng(len(shape)).standard_normal(shape, dtype=np.float32)
    want = data * 2
    module.vec4_views(data)
    np.testing.assert_array_equal(data, want)
    t = slangrt.Tensor.from_numpy(data)
    module.vec4_views(t)
    np.testing.assert_array_equal(t.numpy(), want * 2)
    with pytest.raises(ValueError, match=r"argument `data` has 6 elements \(`n`\), expected 5"):
        module.vec4_views(np.zeros((2, 3), np.float32), n=5)
