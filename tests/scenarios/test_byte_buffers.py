"""Byte buffers through generated wrappers: a `ByteAddressBuffer` and 32-bit words documented as
quantised blocks take uint8 arrays, tensors, views and `bytes` as they are; a read-only one whose
size is not a multiple of 4 is padded, a written one is refused."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest

from ..helpers import built_package
from .test_kernels import pytestmark as _kernel_marks

pytestmark = _kernel_marks

UNPACK = """\
// out[i] = byte i of `data`, for i < n.
//
// Bindings:
//   t0: data    u8, [n] bytes
//   u1: out     u32, [n] written
//   t2: params  (n)
//
// Dispatch: ceil(n / 64) threadgroups of 64.

[[vk::binding(0)]] ByteAddressBuffer data;
[[vk::binding(1)]] RWStructuredBuffer<uint> out;
[[vk::binding(2)]] StructuredBuffer<uint> params;

[shader("compute")]
[numthreads(64, 1, 1)]
void unpack(uint3 id : SV_DispatchThreadID) {
    uint i = id.x;
    if (i < params[0]) {
        uint w = data.Load(i / 4 * 4);
        out[i] = (w >> (8 * (i % 4))) & 0xffu;
    }
}
"""

COPY = """\
// The words of q4_0 blocks copied into a byte-address buffer.
//
// Bindings:
//   t0: q       q4_0 blocks
//   u1: out     u8, [nbytes] written copy
//   t2: params  (nbytes)
//
// Dispatch: ceil(nbytes / 256) threadgroups of 64.

[[vk::binding(0)]] StructuredBuffer<uint> q;
[[vk::binding(1)]] RWByteAddressBuffer out;
[[vk::binding(2)]] StructuredBuffer<uint> params;

[shader("compute")]
[numthreads(64, 1, 1)]
void copy_words(uint3 id : SV_DispatchThreadID) {
    if (id.x < params[0] / 4) {
        out.Store(id.x * 4, q[id.x]);
    }
}
"""

PYPROJECT = """\
[project]
name = "bytespkg"
version = "0"

[tool.hatch.build.hooks.slang]
shaders = ["shaders/*.slang"]
package = "bytespkg/kernels"
"""


@pytest.fixture(scope="module")
def kernels(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ModuleType]:
    root = tmp_path_factory.mktemp("bytes")
    (root / "shaders").mkdir()
    (root / "shaders" / "unpack.slang").write_text(UNPACK)
    (root / "shaders" / "copy_words.slang").write_text(COPY)
    (root / "pyproject.toml").write_text(PYPROJECT)
    with built_package(root) as built:
        yield built.kernels()


def test_byte_bindings_are_marked_raw(kernels: ModuleType) -> None:
    unpack = Path(kernels.__file__).with_name("unpack.py").read_text()
    copy = Path(kernels.__file__).with_name("copy_words.py").read_text()
    assert unpack.count("raw=True") == 1  # data, not out
    assert copy.count("raw=True") == 2  # q (blocks over u32 words) and out (byte-address)


@pytest.mark.parametrize("n", [1, 4, 10, 255, 256])
def test_read_only_bytes_of_any_length(kernels: ModuleType, n: int) -> None:
    import slangrt

    data = np.random.default_rng(n).integers(0, 256, n, dtype=np.uint8)
    for arg in (data, data.tobytes(), memoryview(data), bytearray(data.tobytes())):
        out = np.zeros(n, np.uint32)
        kernels.unpack.unpack(arg, out)
        np.testing.assert_array_equal(out, data)
    # Tensors, and views at any offset of one big upload (misaligned: copied; odd size: padded).
    blob = slangrt.Tensor.from_numpy(np.concatenate([np.zeros(7, np.uint8), data, np.zeros(5, np.uint8)]))
    for view in (slangrt.Tensor.from_numpy(data), blob[7 : 7 + n], blob.at(7, (n,), np.uint8)):
        out_t = slangrt.Tensor.zeros(n, np.uint32)
        kernels.unpack.unpack(view, out_t)
        np.testing.assert_array_equal(out_t.numpy(), data)


def test_quantised_blocks_take_bytes_and_written_bytes_need_whole_words(kernels: ModuleType) -> None:
    import slangrt

    q = np.arange(36, dtype=np.uint8)  # two q4_0 blocks' worth of bytes (18 each)
    out = np.zeros(36, np.uint8)
    kernels.copy_words.copy_words(q, out)
    np.testing.assert_array_equal(out, q)
    # A tensor view of the blocks, a tensor to write into.
    blob = slangrt.Tensor.from_numpy(np.concatenate([np.zeros(64, np.uint8), q]))
    out_t = slangrt.Tensor.zeros(36, np.uint8)
    with slangrt.batch():
        kernels.copy_words.copy_words(blob[64:], out_t)
    np.testing.assert_array_equal(out_t.numpy(), q)
    # Read-only blocks of an odd length are padded (the kernel copies whole words: 34 -> 36).
    out = np.zeros(36, np.uint8)
    kernels.copy_words.copy_words(q[:34], out)
    np.testing.assert_array_equal(out, np.concatenate([q[:34], [0, 0]]))
    with pytest.raises(
        ValueError, match=r"copy_words\(\): argument `out` holds 34 bytes, but the kernel reads"
    ):
        kernels.copy_words.copy_words(q, np.zeros(34, np.uint8))
    with pytest.raises(ValueError, match="is written by the kernel but the array is read-only"):
        kernels.copy_words.copy_words(q, q.tobytes())
