"""SLANGRT_VALIDATION=1: the Khronos layer sees every fixture kernel run clean, and its errors
become exceptions. Each case runs in a subprocess: validation is chosen per process."""

from __future__ import annotations

import glob
import textwrap

import pytest
from rt_helpers import DATA, has_vulkan_device, run_python

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not has_vulkan_device(), reason="no Vulkan device on this machine"),
    pytest.mark.skipif(
        not glob.glob("/usr/share/vulkan/explicit_layer.d/VkLayer_khronos_validation.json")
        and not glob.glob("/usr/local/share/vulkan/explicit_layer.d/VkLayer_khronos_validation.json"),
        reason="the Khronos validation layer is not installed",
    ),
]

PRELUDE = textwrap.dedent(
    f"""
    import logging, numpy as np, slangrt
    from slangrt import BindingSpec as B
    logging.basicConfig(level=logging.WARNING)
    def spv(name):
        return open({str(DATA)!r} + "/" + name + ".spv", "rb").read()
    """
)


@pytest.mark.parametrize("memory", ["native", "staging", "import"])
def test_fixture_kernels_run_clean_under_validation(memory: str) -> None:
    code = PRELUDE + textwrap.dedent(
        """
        dev = slangrt.device()
        moe = slangrt.Kernel(spv("moe_combine"), "moe_combine", [B(0, "z", "storage", False),
              B(1, "w", "storage", False), B(2, "out", "storage", True), B(3, "p", "storage", False)],
              (256, 1, 1))
        out = np.zeros((2, 300), np.float32)
        moe.dispatch({0: np.ones((4, 300), np.float32), 1: np.ones(4, np.float32), 2: out,
                      3: np.array([300, 2, 2, 1], np.uint32)}, (2, 2, 1))
        assert (out == 2).all()
        add = slangrt.Kernel(spv("add"), "add", [B(0, "a", "storage", True), B(1, "b", "storage", False),
              B(2, "p", "storage", False)], (64, 1, 1))
        t = slangrt.Tensor.zeros(100, np.float32)
        for _ in range(3):
            add.dispatch({0: t, 1: np.ones(100, np.float32), 2: np.array([100], np.uint32)}, (2, 1, 1))
        empty = np.zeros(0, np.float32)
        add.dispatch({0: empty, 1: empty.copy(), 2: np.array([0], np.uint32)}, (1, 1, 1))
        assert (t.numpy() == 3).all()
        ones = slangrt.Tensor.from_numpy(np.ones(100, np.float32))
        n100 = slangrt.Tensor.from_numpy(np.array([100], np.uint32))
        with slangrt.profile() as p:
            with slangrt.batch():
                for _ in range(5):
                    add.dispatch({0: t, 1: ones, 2: n100}, (2, 1, 1))
            add.dispatch({0: t, 1: ones, 2: n100}, (2, 1, 1))
        assert len(p.records) == 6 and (t.numpy() == 9).all()
        big = np.arange(5 << 20, dtype=np.float32)  # 20 MiB: staged in chunks on discrete GPUs
        assert (slangrt.Tensor.from_numpy(big).numpy() == big).all()
        assert not slangrt.Tensor.zeros(1000, np.float32).numpy().any()
        scale = slangrt.Kernel(spv("scale"), "scale", [B(0, "x", "storage", False),
                B(1, "y", "storage", True), B(2, "p", "uniform", False)], (128, 1, 1))
        y = np.zeros(10, np.float32)
        scale.dispatch({0: np.ones(10, np.float32), 1: y,
                        2: np.array([10, np.float32(3).view(np.uint32), 0], np.uint32)}, (1, 1, 1))
        assert (y == 3).all()
        if "storageBuffer16BitAccess" in dev.features:
            f16 = slangrt.Kernel(spv("widen_f16"), "widen_f16", [B(0, "x", "storage", False),
                  B(1, "y", "storage", True)], (64, 1, 1))
            f16.dispatch({0: np.ones(5, np.float16), 1: np.zeros(5, np.float32)}, (1, 1, 1))
        for k in (moe, add, scale):
            k.close()
        t.close()
        dev.close()
        print("DONE")
        """
    )
    env = {
        "SLANGRT_VALIDATION": "1",
        "SLANGRT_STAGING": "0" if memory == "native" else "1",
        "SLANGRT_HOST_IMPORT": "1" if memory == "import" else "0",
    }
    proc = run_python(code, env=env)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "DONE", proc.stdout
    assert proc.stderr == "", proc.stderr  # no warnings logged either


def test_validation_errors_become_exceptions() -> None:
    # Declaring the ConstantBuffer binding as a storage buffer is invalid Vulkan usage that
    # drivers would silently accept; the layer must catch it and slangrt must raise it.
    code = PRELUDE + textwrap.dedent(
        """
        k = slangrt.Kernel(spv("scale"), "scale", [B(0, "x", "storage", False), B(1, "y", "storage", True),
            B(2, "p", "storage", False)], (128, 1, 1))
        y = np.zeros(4, np.float32)
        try:
            k.dispatch({0: np.ones(4, np.float32), 1: y, 2: np.zeros(3, np.uint32)}, (1, 1, 1))
        except slangrt.ValidationError as exc:
            print("VALIDATION", len(exc.messages), "type mismatch" in str(exc), (y == 0).all())
        """
    )
    proc = run_python(code, env={"SLANGRT_VALIDATION": "1"})
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["VALIDATION", "1", "True", "True"], proc.stdout + proc.stderr
