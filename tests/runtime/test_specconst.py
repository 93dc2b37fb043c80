"""Specialization constants: read from the SPIR-V, checked, one pipeline per set of values (and
its thread-group size), in plans, batches and recorded steps; the manifest's check of them."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import slangrt
from rt_helpers import has_vulkan_device, spirv
from slangrt import BindingSpec
from slangrt._calls._library import KernelLibrary
from slangrt._vulkan import _features
from slangrt.spirv import SpecConstant, read_module

BINDINGS = [
    BindingSpec(0, "x", "storage", False),
    BindingSpec(1, "y", "storage", True),
    BindingSpec(2, "g", "storage", True),
]
N = 1000
gpu = pytest.mark.skipif(not has_vulkan_device(), reason="no Vulkan device on this machine")


def kernel(device: slangrt.Device | None = None) -> slangrt.Kernel:
    return slangrt.Kernel(spirv("specconst"), "specconst", BINDINGS, (64, 1, 1), push_size=8, device=device)


def want(x: np.ndarray, unroll: int, block: int, scale: float = 1.0, negate: bool = False) -> tuple[Any, Any]:
    """The kernel's y and g for these constants (NumPy)."""
    m = -(-len(x) // unroll)
    sums = np.concatenate([x, np.zeros(m * unroll - len(x), np.float32)]).reshape(m, unroll).sum(1) * scale
    return (-sums if negate else sums), np.arange(m) // block


def run(k: slangrt.Kernel, x: Any, y: Any, g: Any, m: int) -> None:
    block = k.threads[0]
    k.dispatch({0: x, 1: y, 2: g}, (-(-m // block), 1, 1), push=np.array([N, m], np.uint32).tobytes())


def test_the_spirv_says_each_constant_and_which_sets_the_group_size() -> None:
    info = read_module(spirv("specconst")).entry("specconst")
    assert info.constants == (
        SpecConstant(0, "BLOCK", "u32", 64),
        SpecConstant(1, "UNROLL", "i32", 4),
        SpecConstant(2, "SCALE", "f32", 1.0),
        SpecConstant(3, "NEGATE", "bool", False),  # [SpecializationConstant]: Slang numbers it
    )
    assert info.local_size == (64, 1, 1)
    assert info.local_size_ids == (0, None, None)
    assert read_module(spirv("add")).entry("add").constants == ()


def test_local_size_id_needs_maintenance4() -> None:
    mod = _features.scan(spirv("specconst"), "specconst")
    assert mod.local_size_id
    missing = _features.missing(mod, frozenset({"Vulkan 1.2"}))
    assert any("LocalSizeId" in m and "maintenance4" in m for m in missing)
    assert not any("LocalSizeId" in m for m in _features.missing(mod, frozenset({"maintenance4"})))
    assert not _features.scan(spirv("add"), "add").local_size_id


@pytest.mark.parametrize(
    ("values", "error", "match"),
    [
        (
            {"BLOCK": -1},
            ValueError,
            r"'specconst': specialization constant BLOCK \(u32\) is -1, out of its range",
        ),
        ({"BLOCK": 2**32}, ValueError, "BLOCK .* out of its range"),
        ({"UNROLL": 2**31}, ValueError, r"UNROLL \(i32\) is 2147483648, out of its range"),
        ({"UNROLL": 1.5}, TypeError, r"UNROLL \(i32\) takes an int, got float 1.5"),
        ({"UNROLL": True}, TypeError, "UNROLL .* takes an int, got bool"),
        ({"NEGATE": 1}, TypeError, r"NEGATE \(bool\) takes a bool, got int 1"),
        ({"SCALE": "2"}, TypeError, r"SCALE \(f32\) takes a number, got str"),
        ({"SCALE": 1e40}, ValueError, r"SCALE \(f32\) is 1e\+40, out of the range of a f32"),
        ({"BLOCK": 0}, ValueError, "BLOCK sets the thread-group size's x, which must be at least 1"),
        ({"BLOKC": 32}, TypeError, r"has no specialization constant 'BLOKC' \(it has: BLOCK, UNROLL"),
    ],
)
def test_a_bad_value_is_an_error_naming_the_constant(
    values: dict[str, object], error: type[Exception], match: str
) -> None:
    with pytest.raises(error, match=match):
        kernel().specialized(values)


def test_one_kernel_per_distinct_set_of_values() -> None:
    k = kernel()
    assert k.specialized({}) is k
    a = k.specialized({"BLOCK": 32, "UNROLL": 2})
    assert k.specialized({"UNROLL": 2, "BLOCK": 32}) is a
    assert a.threads == (32, 1, 1) and dict(a.constants) == {
        "BLOCK": 32,
        "UNROLL": 2,
        "SCALE": 1.0,
        "NEGATE": False,
    }
    assert k.specialized({"SCALE": -0.0}) is not k.specialized({"SCALE": 0.0})  # floats by their bits
    assert k.specialized({"SCALE": 2}).constants["SCALE"] == 2.0  # an int for a float constant
    k.specialized({"NEGATE": True})
    numpy = k.specialized({"BLOCK": np.uint32(32), "SCALE": np.float32(2.0)})  # no value_key
    assert numpy is k.specialized({"SCALE": np.float32(2.0), "BLOCK": np.uint32(32)})
    assert numpy.threads == (32, 1, 1)
    with pytest.raises(TypeError, match="NEGATE"):  # 1 == True, but not a bool
        k.specialized({"NEGATE": 1})
    # Values at their defaults make the default pipeline: shared with the kernel itself.
    assert k.specialized({"BLOCK": 64})._sig.pipeline_key == k._sig.pipeline_key
    assert a._sig.pipeline_key != k._sig.pipeline_key
    # Specializing a specialized kernel keeps its other values.
    assert dict(a.specialized({"BLOCK": 16}).constants)["UNROLL"] == 2


@gpu
@pytest.mark.gpu
@pytest.mark.parametrize(("block", "unroll"), [(64, 4), (32, 4), (64, 3), (128, 1)])
def test_each_group_size_and_unroll_factor_computes_what_numpy_does(block: int, unroll: int) -> None:
    x = np.random.default_rng(0).standard_normal(N).astype(np.float32)
    m = -(-N // unroll)
    y, g = np.zeros(m, np.float32), np.zeros(m, np.uint32)
    run(kernel().specialized({"BLOCK": block, "UNROLL": unroll}), x, y, g, m)
    want_y, want_g = want(x, unroll, block)
    np.testing.assert_allclose(y, want_y, rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(g, want_g)


@gpu
@pytest.mark.gpu
def test_float_and_bool_constants() -> None:
    x = np.arange(N, dtype=np.float32)
    y, g = np.zeros(N, np.float32), np.zeros(N, np.uint32)
    run(kernel().specialized({"UNROLL": 1, "SCALE": 0.5, "NEGATE": True}), x, y, g, N)
    np.testing.assert_array_equal(y, -0.5 * x)


def _tensors(dev: slangrt.Device, m: int) -> tuple[slangrt.Tensor, slangrt.Tensor, slangrt.Tensor]:
    x = slangrt.Tensor.from_numpy(np.arange(N, dtype=np.float32), device=dev)
    return x, slangrt.Tensor.zeros(m, np.float32, device=dev), slangrt.Tensor.zeros(m, np.uint32, device=dev)


@gpu
@pytest.mark.gpu
def test_repeated_calls_with_another_value_do_not_reuse_the_old_pipeline() -> None:
    """The same tensors and grid, the plan and recorded command buffer of the first values
    made: the next values still run their own pipeline (inside batch() and record() too)."""
    dev = slangrt.device()
    k = kernel(dev)
    x, y, g = _tensors(dev, N)
    host = np.arange(N, dtype=np.float32)
    for scale in (1.0, 1.0, 3.0, 3.0, 1.0):  # the second of each: a plan's repeat
        run(k.specialized({"UNROLL": 1, "SCALE": scale}), x, y, g, N)
        np.testing.assert_array_equal(y.numpy(), host * scale)
    with slangrt.batch():
        run(k.specialized({"UNROLL": 1, "SCALE": 2.0}), x, y, g, N)
        run(k.specialized({"UNROLL": 1, "SCALE": 5.0}), x, y, g, N)
    np.testing.assert_array_equal(y.numpy(), host * 5)
    for block in (64, 32):  # the group size too: g says which group wrote each element
        with slangrt.record() as step:
            run(k.specialized({"UNROLL": 1, "BLOCK": block}), x, y, g, N)
        g.copy_from(np.zeros(N, np.uint32))
        step.replay()
        np.testing.assert_array_equal(g.numpy(), np.arange(N) // block)
        step.close()


def _package(directory: Path, constants: list[dict[str, Any]]) -> KernelLibrary:
    code = spirv("specconst")
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "k.specconst.spv").write_bytes(code)
    entry = {
        "spirv": "k.specconst.spv",
        "spirv_sha256": hashlib.sha256(code).hexdigest(),
        "threads": [64, 1, 1],
        "grid": None,
        "push_size": 8,
        "constants": constants,
        "bindings": [
            {"binding": b.binding, "name": b.name, "kind": b.kind, "writable": b.writable, "role": "data",
             "dtype": None, "shape": None, "params": []}
            for b in BINDINGS
        ],
    }  # fmt: skip
    manifest = {
        "format": 2,
        "compiler": "slang test",
        "shaders": {"k": {"source": "k.slang", "entries": {"specconst": entry}}},
    }
    (directory / "manifest.json").write_text(json.dumps(manifest))
    return KernelLibrary(directory)


CONSTANTS = [
    {"id": 0, "name": "BLOCK", "scalar": "u32", "default": 64},
    {"id": 1, "name": "UNROLL", "scalar": "i32", "default": 4},
    {"id": 2, "name": "SCALE", "scalar": "f32", "default": 1.0},
    {"id": 3, "name": "NEGATE", "scalar": "bool", "default": False},
]


def test_a_library_gives_the_kernel_specialized(tmp_path: Path) -> None:
    lib = _package(tmp_path, CONSTANTS)
    base = lib.kernel("k", "specconst")
    assert lib.kernel("k", "specconst", {"BLOCK": 32}) is base.specialized({"BLOCK": 32})
    assert lib.kernel("k", "specconst", {"BLOCK": 32}).threads == (32, 1, 1)


@pytest.mark.parametrize(
    ("change", "match"),
    [
        (lambda c: c[:3], "NEGATE \\(SpecId 3\\), which the manifest does not list"),
        (lambda c: [*c, {"id": 9, "name": "X", "scalar": "u32", "default": 1}], "lists .* X"),
        (lambda c: [{**c[0], "default": 32}, *c[1:]], "BLOCK defaults to 64; the manifest says 32"),
        (lambda c: [{**c[0], "scalar": "i32"}, *c[1:]], "BLOCK \\(u32\\); the manifest says BLOCK \\(i32\\)"),
        (lambda c: [{**c[0], "name": "B"}, *c[1:]], "is BLOCK \\(u32\\); the manifest says B"),
    ],
)  # fmt: skip
def test_the_load_check_compares_the_constants_with_the_spirv(
    tmp_path: Path, change: Any, match: str
) -> None:
    with pytest.raises(slangrt.SlangRTError, match=match):
        _package(tmp_path, change([dict(c) for c in CONSTANTS])).kernel("k", "specconst")


@pytest.mark.parametrize(
    ("constants", "match"),
    [
        ({"id": 0, "name": "1x", "scalar": "u32", "default": 1}, "name must be an identifier"),
        ({"id": 0, "name": "B", "scalar": "u31", "default": 1}, "constants\\[0\\].scalar must be"),
        ({"id": 0, "name": "B", "scalar": "u32", "default": 1.5}, "default must be .* u32"),
        ({"id": 0, "name": "B", "scalar": "bool", "default": 0}, "default must be .* bool"),
        ({"id": -1, "name": "B", "scalar": "u32", "default": 1}, "constants\\[0\\].id must be an int"),
    ],
)  # fmt: skip
def test_a_malformed_constant_in_the_manifest_is_refused(tmp_path: Path, constants: Any, match: str) -> None:
    with pytest.raises(slangrt.SlangRTError, match=match):
        _ = _package(tmp_path, [constants]).manifest


CACHED = """
import numpy as np, slangrt, sys
sys.path.insert(0, {data!r})
from test_specconst import kernel, run, want, N
x = np.arange(N, dtype=np.float32)
for block, unroll in {values!r}:
    m = -(-N // unroll)
    y, g = np.zeros(m, np.float32), np.zeros(m, np.uint32)
    run(kernel().specialized({{"BLOCK": block, "UNROLL": unroll}}), x, y, g, m)
    wy, wg = want(x, unroll, block)
    assert np.allclose(y, wy) and (g == wg).all(), (block, unroll)
slangrt.device().close()
print("ok")
"""


@gpu
@pytest.mark.gpu
def test_the_disk_cache_keeps_a_pipeline_per_set_of_values(tmp_path: Path) -> None:
    """A process that finds another's pipelines in the disk cache runs each set of values as
    its own (the driver keys its cache on the specialization info too)."""
    env = {**os.environ, "SLANGRT_CACHE_DIR": str(tmp_path)}
    data = str(Path(__file__).parent)
    for values in ([(64, 4), (32, 2)], [(32, 2), (64, 4), (128, 1)]):
        code = CACHED.format(data=data, values=values)
        proc = subprocess.run(
            [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120
        )
        assert proc.returncode == 0 and "ok" in proc.stdout, proc.stderr[-2000:]
    assert any(tmp_path.glob("pipelines-*.bin"))


@gpu
@pytest.mark.gpu
def test_the_device_limits_are_checked_on_the_specialized_group_size() -> None:
    limit = slangrt.device().info.max_workgroup_size[0]
    k = kernel().specialized({"BLOCK": limit * 2, "UNROLL": 1})
    assert k.threads == (limit * 2, 1, 1)
    x, y, g = np.zeros(N, np.float32), np.zeros(N, np.float32), np.zeros(N, np.uint32)
    with pytest.raises(ValueError, match=f"numthreads x = {limit * 2} exceeds the device limit"):
        run(k, x, y, g, N)
