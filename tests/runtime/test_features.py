"""Descriptor sets other than 0, push constants, pointer parameters (buffer device addresses),
and kernels refused for what the device lacks or what their description leaves unbound.

Fixture kernels (data/*.slang, compiled by data/regen.py):

- ``sets``: bindings in sets 0, 1 and 3 (set 2 unused, a uniform buffer in set 3);
- ``push``: entry-point uniforms (Slang's push-constant block), bindings only in set 1;
- ``pointer``: two ``float*`` in the push-constant block and no bindings at all;
- ``pointer_params``: a global ``float*`` in the uniform buffer Slang makes at binding 0.
"""

from __future__ import annotations

import gc
import struct
import textwrap

import numpy as np
import pytest
import slangrt
from rt_helpers import ADD_BINDINGS, DATA, has_vulkan_device, run_python, spirv
from slangrt import BindingSpec, Kernel, Tensor
from slangrt._vulkan import _features, _instance, _vk

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not has_vulkan_device(), reason="no Vulkan device on this machine"),
]

SETS_BINDINGS = [
    BindingSpec(0, "out", "storage", True),
    BindingSpec(1, "a", "storage", False),
    BindingSpec(2, "b", "storage", False, set=1),
    BindingSpec(0, "params", "uniform", False, set=3),
]
PUSH_BINDINGS = [
    BindingSpec(0, "y", "storage", True, set=1),
    BindingSpec(1, "x", "storage", False, set=1),
]
POINTER_PARAMS_BINDINGS = [
    BindingSpec(0, "params", "uniform", False),
    BindingSpec(1, "out", "storage", True),
]


@pytest.fixture(scope="module")
def sets_kernel() -> Kernel:
    return Kernel(spirv("sets"), "sets", SETS_BINDINGS, (64, 1, 1))


@pytest.fixture(scope="module")
def push_kernel() -> Kernel:
    return Kernel(spirv("push"), "push", PUSH_BINDINGS, (64, 1, 1), push_size=12)


@pytest.fixture(scope="module")
def pointer_kernel() -> Kernel:
    return Kernel(spirv("pointer"), "pointer", [], (64, 1, 1), push_size=24)


def sets_params(n: int, scale: float) -> np.ndarray:
    return np.frombuffer(struct.pack("<If", n, scale), np.uint8).copy()


def push_bytes(n: int, scale: float, bias: float) -> bytes:
    return struct.pack("<Iff", n, scale, bias)


def groups(n: int) -> tuple[int, int, int]:
    return (max(1, -(-n // 64)), 1, 1)


# -- descriptor sets ---------------------------------------------------------------------------


def test_binding_spec_key_and_description() -> None:
    assert BindingSpec(2, "b", "storage", False).key == 2
    assert BindingSpec(2, "b", "storage", False, set=1).key == (1, 2)
    assert BindingSpec(2, "b", "storage", False, set=1).describe() == "set 1, binding 2"
    assert BindingSpec(2, "b", "storage", False).describe() == "binding 2"


def test_bindings_in_several_sets_numpy(sets_kernel: Kernel, rng: np.random.Generator) -> None:
    n = 300
    a = rng.standard_normal(n).astype(np.float32)
    b = rng.standard_normal(n).astype(np.float32)
    out = np.zeros(n, np.float32)
    sets_kernel.dispatch({0: out, 1: a, (1, 2): b, (3, 0): sets_params(n, 2.5)}, groups(n))
    np.testing.assert_allclose(out, a + np.float32(2.5) * b, rtol=1e-6, atol=1e-5)


def test_set_zero_may_be_keyed_by_a_pair(sets_kernel: Kernel) -> None:
    n = 70
    a, b = np.ones(n, np.float32), np.full(n, 2.0, np.float32)
    out = np.zeros(n, np.float32)
    sets_kernel.dispatch({(0, 0): out, (0, 1): a, (1, 2): b, (3, 0): sets_params(n, 1.0)}, groups(n))
    np.testing.assert_array_equal(out, np.full(n, 3.0))


def test_bindings_in_several_sets_tensors_reuse_and_change(sets_kernel: Kernel) -> None:
    n = 200
    a = Tensor.from_numpy(np.arange(n, dtype=np.float32))
    out = Tensor.zeros(n, np.float32)
    params = Tensor.from_numpy(sets_params(n, 1.0))
    bs = [Tensor.from_numpy(np.full(n, float(i), np.float32)) for i in range(3)]
    for _ in range(2):  # the second round reuses the recorded command buffers
        for i, b in enumerate(bs):
            sets_kernel.dispatch({0: out, 1: a, (1, 2): b, (3, 0): params}, groups(n))
            np.testing.assert_array_equal(out.numpy(), np.arange(n) + i)


def test_many_variants_give_their_descriptor_sets_back(sets_kernel: Kernel) -> None:
    """More distinct buffer sets than recorded variants: evicted ones free their descriptor sets."""
    n = 64
    dev = slangrt.device()
    a = Tensor.from_numpy(np.zeros(n, np.float32))
    out = Tensor.zeros(n, np.float32)
    params = Tensor.from_numpy(sets_params(n, 1.0))
    for i in range(600):  # over two pools' worth of sets, were none given back
        b = Tensor.from_numpy(np.full(n, float(i), np.float32))
        sets_kernel.dispatch({0: out, 1: a, (1, 2): b, (3, 0): params}, groups(n))
    np.testing.assert_array_equal(out.numpy(), np.full(n, 599.0))
    descriptors = dev.parts.descriptors
    assert descriptors is not None
    assert len(descriptors._pools) <= 2


def test_several_sets_in_a_batch_and_its_replay(sets_kernel: Kernel) -> None:
    n = 130
    a = Tensor.from_numpy(np.arange(n, dtype=np.float32))
    outs = [Tensor.zeros(n, np.float32) for _ in range(3)]
    bs = [Tensor.from_numpy(np.full(n, float(i + 1), np.float32)) for i in range(3)]
    params = Tensor.from_numpy(sets_params(n, 10.0))
    for _ in range(3):  # recorded once, then replayed
        with slangrt.batch():
            for out, b in zip(outs, bs, strict=True):
                sets_kernel.dispatch({0: out, 1: a, (1, 2): b, (3, 0): params}, groups(n))
        for i, out in enumerate(outs):
            np.testing.assert_array_equal(out.numpy(), np.arange(n) + 10.0 * (i + 1))


def test_several_sets_under_profile(sets_kernel: Kernel) -> None:
    n = 64
    out = Tensor.zeros(n, np.float32)
    a = Tensor.from_numpy(np.ones(n, np.float32))
    b = Tensor.from_numpy(np.ones(n, np.float32))
    with slangrt.profile() as p:
        sets_kernel.dispatch({0: out, 1: a, (1, 2): b, (3, 0): sets_params(n, 4.0)}, groups(n))
    assert len(p.records) == 1
    np.testing.assert_array_equal(out.numpy(), np.full(n, 5.0))


def test_set_errors_name_the_set(sets_kernel: Kernel) -> None:
    n = 8
    out, a, b = np.zeros(n, np.float32), np.zeros(n, np.float32), np.zeros(n, np.float32)
    p = sets_params(n, 1.0)
    with pytest.raises(ValueError, match=r"no buffer given for set 1, binding 2 \(b\)"):
        sets_kernel.dispatch({0: out, 1: a, (3, 0): p}, (1, 1, 1))
    with pytest.raises(ValueError, match=r"has no binding \(2, 2\)"):
        sets_kernel.dispatch({0: out, 1: a, (2, 2): b, (3, 0): p}, (1, 1, 1))
    with pytest.raises(ValueError, match=r"binding 1 is given twice"):
        sets_kernel.dispatch({0: out, 1: a, (0, 1): a, (1, 2): b, (3, 0): p}, (1, 1, 1))
    with pytest.raises(TypeError, match=r"set 1, binding 2 \(b\): expected a numpy.ndarray"):
        sets_kernel.dispatch({0: out, 1: a, (1, 2): [1.0], (3, 0): p}, (1, 1, 1))
    with pytest.raises(ValueError, match=r"set 1, binding index 2 is negative or repeated"):
        Kernel(
            spirv("sets"), "sets", [*SETS_BINDINGS, BindingSpec(2, "c", "storage", False, set=1)], (64, 1, 1)
        )
    with pytest.raises(ValueError, match=r"negative set"):
        Kernel(spirv("sets"), "sets", [BindingSpec(0, "c", "storage", False, set=-1)], (64, 1, 1))


def test_a_resource_left_out_of_the_bindings_is_refused(rng: np.random.Generator) -> None:
    k = Kernel(spirv("sets"), "sets", SETS_BINDINGS[:3], (64, 1, 1), name="partial")
    out = np.zeros(8, np.float32)
    with pytest.raises(ValueError, match=r"'partial': its SPIR-V uses the resource at set 3, binding 0"):
        k.dispatch({0: out, 1: out.copy(), (1, 2): out.copy()}, (1, 1, 1))
    np.testing.assert_array_equal(out, 0)
    wrong_set = [*SETS_BINDINGS[:2], BindingSpec(2, "b", "storage", False), SETS_BINDINGS[3]]
    k2 = Kernel(spirv("sets"), "sets", wrong_set, (64, 1, 1), name="wrong_set")
    with pytest.raises(ValueError, match=r"uses the resource at set 1, binding 2"):
        k2.dispatch({0: out, 1: out, 2: out, (3, 0): sets_params(8, 1.0)}, (1, 1, 1))


def test_a_wrong_entry_name_is_refused() -> None:
    k = Kernel(spirv("add"), "nope", ADD_BINDINGS, (64, 1, 1))
    with pytest.raises(ValueError, match=r"no compute entry point 'nope' \(it has 'add'\)"):
        k.dispatch(
            {0: np.zeros(1, np.float32), 1: np.zeros(1, np.float32), 2: np.ones(1, np.uint32)}, (1, 1, 1)
        )


# -- push constants ----------------------------------------------------------------------------


def test_push_constants_numpy_and_tensors(push_kernel: Kernel, rng: np.random.Generator) -> None:
    n = 150
    x = rng.standard_normal(n).astype(np.float32)
    y = rng.standard_normal(n).astype(np.float32)
    expected = y * np.float32(2.0) + x + np.float32(0.25)
    push_kernel.dispatch({(1, 0): y, (1, 1): x}, groups(n), push_bytes(n, 2.0, 0.25))
    np.testing.assert_allclose(y, expected, rtol=1e-6, atol=1e-5)

    yt, xt = Tensor.from_numpy(np.ones(n, np.float32)), Tensor.from_numpy(np.zeros(n, np.float32))
    expect = np.ones(n, np.float32)
    for i in range(40):  # more distinct push values than recorded variants
        scale, bias = float(i % 3), float(i)
        data = np.frombuffer(push_bytes(n, scale, bias), np.uint8)  # a uint8 array works too
        push_kernel.dispatch({(1, 0): yt, (1, 1): xt}, groups(n), data)
        expect = expect * np.float32(scale) + np.float32(bias)
    np.testing.assert_array_equal(yt.numpy(), expect)


def test_push_constants_replayed_batches_see_their_own_values(push_kernel: Kernel) -> None:
    n = 100
    x = Tensor.from_numpy(np.arange(n, dtype=np.float32))
    y = Tensor.zeros(n, np.float32)
    xs = np.arange(n, dtype=np.float32)

    def step(values: list[tuple[float, float]]) -> None:
        with slangrt.batch():
            for scale, bias in values:
                push_kernel.dispatch({(1, 0): y, (1, 1): x}, groups(n), push_bytes(n, scale, bias))

    def reference(start: np.ndarray, values: list[tuple[float, float]]) -> np.ndarray:
        out = start.copy()
        for scale, bias in values:
            out = out * np.float32(scale) + xs + np.float32(bias)
        return out

    plans = [[(2.0, 0.0), (1.0, 1.0), (0.5, 3.0)], [(2.0, 0.0), (1.0, 1.0), (0.5, 3.0)], [(0.0, 1.0)] * 3]
    expect = np.zeros(n, np.float32)
    for plan in plans + plans:  # the repeats replay recorded batches
        step(plan)
        expect = reference(expect, plan)
        np.testing.assert_allclose(y.numpy(), expect, rtol=1e-6, atol=1e-5)


def test_push_constants_under_profile(push_kernel: Kernel) -> None:
    n = 64
    y, x = Tensor.zeros(n, np.float32), Tensor.from_numpy(np.ones(n, np.float32))
    with slangrt.profile():
        push_kernel.dispatch({(1, 0): y, (1, 1): x}, groups(n), push_bytes(n, 1.0, 1.0))
        push_kernel.dispatch({(1, 0): y, (1, 1): x}, groups(n), push_bytes(n, 3.0, 0.0))
    np.testing.assert_array_equal(y.numpy(), np.full(n, 7.0))  # (0 * 1 + 1 + 1) * 3 + 1


def test_push_constants_are_checked(push_kernel: Kernel) -> None:
    y, x = np.zeros(4, np.float32), np.zeros(4, np.float32)
    buffers = {(1, 0): y, (1, 1): x}
    with pytest.raises(ValueError, match=r"kernel 'push' takes 12 bytes of push constants; none were given"):
        push_kernel.dispatch(buffers, (1, 1, 1))
    with pytest.raises(ValueError, match=r"kernel 'push' takes 12 bytes of push constants; 8 were given"):
        push_kernel.dispatch(buffers, (1, 1, 1), b"\0" * 8)
    with pytest.raises(
        TypeError, match=r"push constants must be bytes or a uint8 array, got a float32 array"
    ):
        push_kernel.dispatch(buffers, (1, 1, 1), np.zeros(3, np.float32))
    with pytest.raises(TypeError, match=r"push constants must be bytes or a uint8 array, got list"):
        push_kernel.dispatch(buffers, (1, 1, 1), [0] * 12)  # type: ignore[arg-type]
    # Checked before a zero grid returns, like every other argument.
    with pytest.raises(ValueError, match=r"takes 12 bytes"):
        push_kernel.dispatch(buffers, (0, 1, 1))
    add = Kernel(spirv("add"), "add", ADD_BINDINGS, (64, 1, 1))
    with pytest.raises(ValueError, match=r"kernel 'add' has no push constants \(push_size 0\); 4 bytes"):
        add.dispatch({0: y, 1: x, 2: np.ones(1, np.uint32)}, (1, 1, 1), b"\0" * 4)
    with pytest.raises(ValueError, match=r"push_size must be >= 0"):
        Kernel(spirv("push"), "push", PUSH_BINDINGS, (64, 1, 1), push_size=-4)


def test_a_kernel_reading_push_constants_needs_a_push_size() -> None:
    k = Kernel(spirv("push"), "push", PUSH_BINDINGS, (64, 1, 1), name="nopush")
    y = np.zeros(4, np.float32)
    with pytest.raises(ValueError, match=r"'nopush': its SPIR-V reads push constants but push_size is 0"):
        k.dispatch({(1, 0): y, (1, 1): y.copy()}, (1, 1, 1))


def test_push_size_over_the_device_limit_is_unsupported() -> None:
    limit = slangrt.device().info.max_push_constants_size
    assert limit >= 128  # Vulkan's minimum
    k = Kernel(spirv("push"), "push", PUSH_BINDINGS, (64, 1, 1), push_size=limit + 4, name="m.big")
    y = np.zeros(4, np.float32)
    with pytest.raises(
        slangrt.UnsupportedKernelError, match=rf"kernel `m.big` needs {limit + 4} bytes of push"
    ):
        k.dispatch({(1, 0): y, (1, 1): y.copy()}, (1, 1, 1), bytes(limit + 4))


def test_odd_push_sizes_are_padded_to_words(push_kernel: Kernel) -> None:
    # A 10-byte block (the kernel reads 12): the last two bytes of `bias` are zero padding.
    k = Kernel(spirv("push"), "push", PUSH_BINDINGS, (64, 1, 1), push_size=10)
    n = 4
    y, x = np.ones(n, np.float32), np.zeros(n, np.float32)
    data = push_bytes(n, 1.0, 0.0)[:10]
    k.dispatch({(1, 0): y, (1, 1): x}, (1, 1, 1), data)
    np.testing.assert_array_equal(y, np.ones(n))


# -- pointers (buffer device addresses) --------------------------------------------------------


def test_device_address_is_the_buffer_address_plus_offset() -> None:
    dev = slangrt.device()
    if not dev.device_address:
        pytest.skip("the device lacks bufferDeviceAddress")
    assert "bufferDeviceAddress" in dev.features
    a, b = Tensor.zeros(16, np.float32), Tensor.zeros(16, np.float32)
    assert a.device_address != 0 and a.device_address != b.device_address
    alloc = a._alloc
    assert alloc is not None
    assert a.device_address == alloc.block.device_address(dev._core) + alloc.offset
    a.close()
    with pytest.raises(slangrt.SlangRTError, match="closed"):
        _ = a.device_address


def test_pointer_parameters_in_push_constants(pointer_kernel: Kernel, rng: np.random.Generator) -> None:
    if not slangrt.device().device_address:
        pytest.skip("the device lacks bufferDeviceAddress")
    n = 1000
    x = rng.standard_normal(n).astype(np.float32)
    src, dst = Tensor.from_numpy(x), Tensor.zeros(n, np.float32)
    data = struct.pack("<QQIf", src.device_address, dst.device_address, n, 3.0)
    pointer_kernel.dispatch({}, groups(n), data, refs=[src, dst])
    np.testing.assert_allclose(dst.numpy(), x * np.float32(3.0), rtol=1e-6, atol=1e-5)


def test_refs_keep_tensors_alive_until_the_work_is_done(pointer_kernel: Kernel) -> None:
    if not slangrt.device().device_address:
        pytest.skip("the device lacks bufferDeviceAddress")
    n = 4096
    dst = Tensor.zeros(n, np.float32)
    for _ in range(5):
        src = Tensor.from_numpy(np.full(n, 2.0, np.float32))
        data = struct.pack("<QQIf", src.device_address, dst.device_address, n, 1.5)
        pointer_kernel.dispatch({}, groups(n), data, refs=[src, dst])
        alloc = src._alloc
        assert alloc is not None and alloc.last_use > 0  # held until that submission is done
        del src
        gc.collect()
    np.testing.assert_array_equal(dst.numpy(), np.full(n, 3.0))


def test_refs_order_batched_work_like_written_bindings(pointer_kernel: Kernel) -> None:
    """A kernel that writes through a pointer, then one that reads that tensor as a binding."""
    if not slangrt.device().device_address:
        pytest.skip("the device lacks bufferDeviceAddress")
    dev = slangrt.device()
    n = 2048
    add = Kernel(spirv("add"), "add", ADD_BINDINGS, (64, 1, 1))
    src = Tensor.from_numpy(np.full(n, 2.0, np.float32))
    mid = Tensor.zeros(n, np.float32)
    acc = Tensor.zeros(n, np.float32)
    count = Tensor.from_numpy(np.array([n], np.uint32))
    barriers = []
    core = dev._core
    real = core.barrier_between_dispatches

    def counting(cb: object) -> None:
        barriers.append(cb)
        real(cb)

    core.barrier_between_dispatches = counting  # type: ignore[method-assign]
    try:
        with slangrt.batch():
            for scale in (1.0, 2.0, 3.0):
                data = struct.pack("<QQIf", src.device_address, mid.device_address, n, scale)
                pointer_kernel.dispatch({}, groups(n), data, refs=[src, mid])  # mid = 2 * scale
                add.dispatch({0: acc, 1: mid, 2: count}, groups(n))  # acc += mid
    finally:
        del core.barrier_between_dispatches
    assert len(barriers) == 5  # between every pair: each reads or writes what the last wrote
    np.testing.assert_array_equal(acc.numpy(), np.full(n, 2.0 + 4.0 + 6.0))


def test_a_pointer_in_the_uniform_params(rng: np.random.Generator) -> None:
    if not slangrt.device().device_address:
        pytest.skip("the device lacks bufferDeviceAddress")
    k = Kernel(spirv("pointer_params"), "pointer_params", POINTER_PARAMS_BINDINGS, (64, 1, 1))
    n = 77
    x = rng.standard_normal(n).astype(np.float32)
    src = Tensor.from_numpy(x)
    out = np.zeros(n, np.float32)
    params = np.frombuffer(struct.pack("<QI4x", src.device_address, n), np.uint8).copy()
    k.dispatch({0: params, 1: out}, groups(n), refs=[src])
    np.testing.assert_allclose(out, x + np.float32(1.0), rtol=1e-6, atol=1e-5)


def test_refs_are_checked(pointer_kernel: Kernel) -> None:
    data = bytes(24)
    with pytest.raises(TypeError, match=r"refs\[0\] must be a slangrt.Tensor .* got ndarray"):
        pointer_kernel.dispatch({}, (1, 1, 1), data, refs=[np.zeros(4, np.float32)])  # type: ignore[list-item]
    t = Tensor.zeros(4, np.float32)
    t.close()
    with pytest.raises(ValueError, match=r"refs\[0\]: the tensor has been closed"):
        pointer_kernel.dispatch({}, (1, 1, 1), data, refs=[t])


def test_a_device_without_buffer_device_address() -> None:
    """Simulated: the feature left out of what slangrt queries, so the device opens without it."""
    code = textwrap.dedent(
        f"""
        import struct, numpy as np, slangrt
        from slangrt._vulkan import _features, _vk
        from dataclasses import replace
        structs = []
        for fs in _features.FEATURE_STRUCTS:
            members = {{k: v for k, v in fs.members.items() if k != "bufferDeviceAddress"}}
            structs.append(replace(fs, members=members))
        _features.FEATURE_STRUCTS = tuple(structs)
        dev = slangrt.device()
        assert not dev.device_address and "bufferDeviceAddress" not in dev.features
        t = slangrt.Tensor.zeros(4, np.float32)
        try:
            t.device_address
        except slangrt.UnsupportedFeatureError as e:
            print("ADDRESS:", e)
        k = slangrt.Kernel(open({str(DATA / "pointer.spv")!r}, "rb").read(),
                           "pointer", [], (64, 1, 1), push_size=24, name="m.pointer")
        try:
            k.dispatch({{}}, (1, 1, 1), bytes(24))
        except slangrt.UnsupportedKernelError as e:
            print("KERNEL:", e)
        """
    )
    proc = run_python(code)
    assert proc.returncode == 0, proc.stderr
    name = slangrt.device().info.name
    assert f"ADDRESS: {name} lacks bufferDeviceAddress" in proc.stdout
    assert (
        "KERNEL: kernel `m.pointer` needs the SPIR-V capability PhysicalStorageBufferAddresses "
        f"(bufferDeviceAddress); {name} does not support it"
    ) in proc.stdout


def test_device_address_error_path(monkeypatch: pytest.MonkeyPatch) -> None:
    t = Tensor.zeros(4, np.float32)
    monkeypatch.setattr(t.device._core, "device_address", False)
    with pytest.raises(slangrt.UnsupportedFeatureError, match=r"lacks bufferDeviceAddress"):
        _ = t.device_address
    assert issubclass(slangrt.UnsupportedFeatureError, slangrt.SlangRTError)


# -- capabilities ------------------------------------------------------------------------------


def with_instruction(code: bytes, opcode: int, operands: bytes) -> bytes:
    """``code`` with one instruction inserted after the header (where OpCapability goes)."""
    words = len(operands) // 4 + 1
    return code[:20] + struct.pack("<I", (words << 16) | opcode) + operands + code[20:]


def with_capability(code: bytes, capability: int) -> bytes:
    return with_instruction(code, 17, struct.pack("<I", capability))


def with_extension(code: bytes, name: str) -> bytes:
    raw = name.encode() + b"\0"
    raw += b"\0" * (-len(raw) % 4)
    return with_instruction(code, 10, raw)


def test_scan_reads_capabilities_extensions_and_resources() -> None:
    mod = _features.scan(spirv("pointer_params"), "pointer_params")
    assert "PhysicalStorageBufferAddresses" in mod.capabilities and "Shader" in mod.capabilities
    assert "SPV_KHR_physical_storage_buffer" in mod.extensions
    assert mod.entry_points == ["pointer_params"]
    assert mod.resources == {(0, 0), (0, 1)}
    assert mod.push_constants is False
    assert _features.scan(spirv("push"), "push").push_constants is True
    assert _features.scan(spirv("sets"), "sets").resources == {(0, 0), (0, 1), (1, 2), (3, 0)}
    with pytest.raises(ValueError, match="not a"):
        _features.scan(b"\0" * 20)
    with pytest.raises(ValueError, match="truncated"):
        _features.scan(spirv("add")[:20] + struct.pack("<II", (5 << 16) | 17, 1))


def test_missing_names_capabilities_and_extensions() -> None:
    code = with_extension(with_capability(spirv("add"), 6022), "SPV_KHR_cooperative_matrix")
    mod = _features.scan(code)
    assert _features.missing(mod, {"cooperativeMatrix", "VK_KHR_cooperative_matrix"}) == []
    assert _features.missing(mod, set()) == [
        "the SPIR-V capability CooperativeMatrixKHR (VK_KHR_cooperative_matrix)",
        "the SPIR-V extension SPV_KHR_cooperative_matrix (VK_KHR_cooperative_matrix)",
    ]
    # Capabilities slangrt does not know are left to the driver.
    assert _features.missing(_features.scan(with_capability(spirv("add"), 999_999)), set()) == []


def test_workgroup_matrices_need_cooperative_matrix2() -> None:
    mod = _features.scan(spirv("wg_matrix"), "wg_matrix")
    assert mod.workgroup_matrices
    assert not _features.scan(spirv("add"), "add").workgroup_matrices
    assert {"TensorAddressingNV", "CooperativeMatrixTensorAddressingNV"} <= set(mod.capabilities)
    cm2 = {
        "cooperativeMatrix",
        "VK_KHR_cooperative_matrix",
        "VK_NV_cooperative_matrix2",
        "cooperativeMatrixTensorAddressing",
        "cooperativeMatrixWorkgroupScope",
        "cooperativeMatrixFlexibleDimensions",
        "Vulkan 1.3",
        "shaderFloat16",
        "storageBuffer16BitAccess",
        "uniformAndStorageBuffer16BitAccess",
        "vulkanMemoryModel",
    }
    assert _features.missing(mod, cm2) == []
    assert _features.missing(mod, cm2 - {"cooperativeMatrixFlexibleDimensions"}) == [
        "cooperative matrices of workgroup scope (VK_NV_cooperative_matrix2's "
        "cooperativeMatrixWorkgroupScope and cooperativeMatrixFlexibleDimensions)"
    ]
    lacking = _features.missing(mod, cm2 - {"cooperativeMatrixTensorAddressing", "VK_NV_cooperative_matrix2"})
    addressing = "VK_NV_cooperative_matrix2 cooperativeMatrixTensorAddressing"
    assert f"the SPIR-V capability TensorAddressingNV ({addressing})" in lacking
    assert "the SPIR-V extension SPV_NV_cooperative_matrix2 (VK_NV_cooperative_matrix2)" in lacking
    # The fixture's 128 threads among the sizes the device allows workgroup matrices in, and its
    # matrices (A 64 x 16, B 16 x 64, accumulator 64 x 64) multiples of the granularity there.
    assert mod.invocations == 128  # its one entry, named or not
    assert mod.workgroup_shapes == [(16, 64, 1), (64, 16, 0), (64, 64, 2)]
    h100 = {"cooperativeMatrixWorkgroup 128: 32x16x16", "cooperativeMatrixWorkgroup 256: 32x32x16"}
    assert _features.missing(mod, cm2 | h100) == []
    assert _features.missing(mod, cm2 | {"cooperativeMatrixWorkgroup 256: 32x32x16"}) == [
        "cooperative matrices of workgroup scope in thread groups of 128 (the device allows them in 256)"
    ]
    coarse = {"cooperativeMatrixWorkgroup 128: 32x16x32"}  # K of 32: A's 16 columns, B's 16 rows
    assert _features.missing(mod, cm2 | coarse) == [
        "a workgroup-scope cooperative matrix B of 16 x 64 in thread groups of 128 (the device's "
        "granularity there, M x N x K: 32x16x32)",
        "a workgroup-scope cooperative matrix A of 64 x 16 in thread groups of 128 (the device's "
        "granularity there, M x N x K: 32x16x32)",
    ]
    # Any one granularity of the size that fits will do (the rows differ by component types).
    assert _features.missing(mod, cm2 | coarse | {"cooperativeMatrixWorkgroup 128: 32x16x16"}) == []
    # A SPIR-V 1.6 module needs a Vulkan 1.3 device.
    v16 = spirv("add")[:4] + struct.pack("<I", 0x00010600) + spirv("add")[8:]
    assert _features.missing(_features.scan(v16), {"Vulkan 1.2"}) == ["SPIR-V 1.6 (Vulkan 1.3)"]
    assert _features.missing(_features.scan(v16), {"Vulkan 1.2", "Vulkan 1.3"}) == []


def test_a_feature_struct_newer_than_the_vulkan_package_is_laid_out_by_hand() -> None:
    # VkPhysicalDeviceCooperativeMatrix2FeaturesNV: sType, pNext, then its VkBool32 members.
    fs = next(f for f in _features.FEATURE_STRUCTS if f.raw)
    vk = _vk.vk()
    head = vk.ffi.new("VkPhysicalDeviceVulkan12Features*")
    raw, pointer = _features.new_struct(vk, fs, head)
    base = vk.ffi.cast("VkBaseOutStructure*", pointer)
    assert base.sType == 1000593000 and base.pNext == vk.ffi.cast("VkBaseOutStructure*", head)
    members = list(fs.raw)  # its C layout
    assert len(members) == 7 and set(fs.members) <= set(members)
    assert all(getattr(raw, m) == 0 for m in members)
    raw.cooperativeMatrixBlockLoads = 1
    words = vk.ffi.cast("uint32_t*", pointer)
    assert [words[4 + i] for i in range(len(members))] == [
        int(m == "cooperativeMatrixBlockLoads") for m in members
    ]
    # sizeof: 8 (sType and padding) + 8 (pNext) + 7 * 4, rounded up to its 8-byte alignment.
    assert vk.ffi.sizeof(raw._words) == 48
    with pytest.raises(AttributeError):
        _ = raw.notAMember
    with pytest.raises(AttributeError):
        raw.notAMember = 1


def test_device_features_and_supports() -> None:
    dev = slangrt.device()
    info = dev.info
    assert info.features == tuple(sorted(info.features))
    assert "Vulkan 1.2" in info.features and "timelineSemaphore" in info.features
    assert set(info.features) == set(dev.features)
    assert slangrt.devices()[info.index].features == info.features
    for name in ("add", "sets", "push", "moe_combine"):
        assert dev.supports(spirv(name)) == []
    widen = dev.supports(spirv("widen_f16"))
    assert widen == [] or "the SPIR-V capability" in widen[0]


def test_an_unsupported_capability_is_refused_before_anything_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    dev = slangrt.Device()
    try:
        # Take cooperative matrices away from the device (lavapipe never had them; a GPU may).
        monkeypatch.setattr(
            dev, "features", dev.features - {"cooperativeMatrix", "VK_KHR_cooperative_matrix"}
        )
        code = with_capability(spirv("add"), 6022)
        assert dev.supports(code) == [
            "the SPIR-V capability CooperativeMatrixKHR (VK_KHR_cooperative_matrix)"
        ]
        k = Kernel(code, "add", ADD_BINDINGS, (64, 1, 1), device=dev, name="m.k")
        a = np.zeros(4, np.float32)
        with pytest.raises(slangrt.UnsupportedKernelError) as info:
            k.dispatch({0: a, 1: np.ones(4, np.float32), 2: np.array([4], np.uint32)}, (1, 1, 1))
        assert str(info.value) == (
            "kernel `m.k` needs the SPIR-V capability CooperativeMatrixKHR (VK_KHR_cooperative_matrix); "
            f"{dev.info.name} does not support it"
        )
        np.testing.assert_array_equal(a, 0)
        assert isinstance(info.value, slangrt.UnsupportedFeatureError)
        two = with_capability(with_capability(spirv("add"), 6022), 5357)
        monkeypatch.setattr(dev, "features", dev.features - {"cooperativeMatrixNV"})
        k2 = Kernel(two, "add", ADD_BINDINGS, (64, 1, 1), device=dev, name="m.k2")
        with pytest.raises(
            slangrt.UnsupportedKernelError, match=r"CooperativeMatrixNV .* does not support them"
        ):
            k2.dispatch({0: a, 1: a.copy(), 2: np.array([4], np.uint32)}, (1, 1, 1))
    finally:
        dev.close()


def test_what_lavapipe_lacks_is_named() -> None:
    dev = slangrt.device()
    if "llvmpipe" not in dev.info.name:
        pytest.skip("lavapipe's feature set")
    code = with_capability(spirv("add"), 67)  # GroupNonUniformClustered: not on lavapipe
    assert dev.supports(code) == [
        "the SPIR-V capability GroupNonUniformClustered "
        "(subgroup operations: VK_SUBGROUP_FEATURE_CLUSTERED_BIT)"
    ]
    k = Kernel(code, "add", ADD_BINDINGS, (64, 1, 1), name="m.clustered")
    with pytest.raises(
        slangrt.UnsupportedKernelError, match=r"^kernel `m.clustered` needs the SPIR-V capability"
    ):
        k.dispatch(
            {0: np.zeros(1, np.float32), 1: np.zeros(1, np.float32), 2: np.ones(1, np.uint32)}, (1, 1, 1)
        )


# What an H100's driver (580.159.04) lists for vkGetPhysicalDeviceCooperativeMatrixFlexible-
# DimensionsPropertiesNV: (M, N, K granularity, A, B, C, result types, saturating, scope,
# workgroupInvocations); scope 3 is a subgroup, 2 a workgroup.
H100_FLEXIBLE = [(16, 16, 16, 0, 0, 0, 0, 0, 3, 0), (16, 16, 32, 7, 7, 9, 9, 0, 3, 0)] + [
    (m, n, k, a, a, c, c, 0, 2, inv)
    for inv, (m, n) in ((32, (16, 16)), (64, (16, 16)), (128, (32, 16)), (256, (32, 32)))
    for k, a, c in ((16, 0, 0), (16, 0, 1), (32, 7, 9), (32, 3, 5))
]


def test_workgroup_matrix_sizes_are_read_from_the_flexible_dimensions_query() -> None:
    vk = _vk.vk()
    ffi = vk.ffi
    calls: list[bool] = []

    @ffi.callback("VkResult(VkPhysicalDevice, uint32_t*, void*)")
    def query(pd: object, count: object, out: object) -> int:
        calls.append(out == ffi.NULL)
        if out == ffi.NULL:
            count[0] = len(H100_FLEXIBLE)  # type: ignore[index]
            return 0
        words = ffi.cast("uint32_t*", out)
        for i, row in enumerate(H100_FLEXIBLE[: count[0]]):  # type: ignore[index]
            assert words[14 * i] == 1000593001  # the caller set each row's sType
            for j, v in enumerate(row):
                words[14 * i + 4 + j] = v
        return 0

    assert _instance.workgroup_granularity(query, ffi.NULL) == {
        (32, 16, 16, 16),
        (32, 16, 16, 32),
        (64, 16, 16, 16),
        (64, 16, 16, 32),
        (128, 32, 16, 16),
        (128, 32, 16, 32),
        (256, 32, 32, 16),
        (256, 32, 32, 32),
    }
    assert calls == [True, False]

    @ffi.callback("VkResult(VkPhysicalDevice, uint32_t*, void*)")
    def none(pd: object, count: object, out: object) -> int:
        count[0] = 0  # type: ignore[index]
        return 0

    assert _instance.workgroup_granularity(none, ffi.NULL) == set()


def test_a_device_with_cooperative_matrix2_runs_workgroup_matrices() -> None:
    dev = slangrt.device()
    if "VK_NV_cooperative_matrix2" not in dev.features:
        pytest.skip(f"{dev.info.name} has no VK_NV_cooperative_matrix2 (an NVIDIA GPU has: run there)")
    sizes = {f for f in dev.features if f.startswith(_features.WORKGROUP_GRANULARITY)}
    assert sizes, "the flexible-dimensions query listed no workgroup sizes"
    # The fixture's one entry runs in 128 threads, on 64 x 16 x 64 matrices.
    fits = any(
        f.startswith(f"{_features.WORKGROUP_GRANULARITY}128: ")
        and all(64 % int(d) == 0 for d in f.split(": ")[1].split("x")[:2])
        and 16 % int(f.split("x")[-1]) == 0
        for f in sizes
    )
    assert (dev.supports(spirv("wg_matrix")) == []) == fits, (sizes, dev.supports(spirv("wg_matrix")))


def test_the_flexible_dimensions_query_runs_while_the_instance_is_being_made() -> None:
    # A device offering flexible dimensions is asked for its workgroup-matrix sizes while the
    # instance lists its devices: that must not wait for the instance itself (an H100 once hung
    # there). lavapipe has no such query: made to look as if it offered the feature, it lists no
    # sizes, and the instance is made.
    code = textwrap.dedent(
        """
        from slangrt._vulkan import _instance
        real = _instance._subgroup_tokens
        _instance._subgroup_tokens = lambda pd, exts: real(pd, exts) | {"cooperativeMatrixFlexibleDimensions"}
        import slangrt
        features = slangrt.devices()[0].features
        assert "cooperativeMatrixFlexibleDimensions" in features, features
        assert not any(f.startswith("cooperativeMatrixWorkgroup ") for f in features), features
        print("made")
        """
    )
    proc = run_python(code, timeout=60)
    assert proc.returncode == 0 and proc.stdout.strip() == "made", proc.stdout + proc.stderr
