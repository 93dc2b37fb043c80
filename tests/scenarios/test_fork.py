"""A process forked from one that used a device: its calls work on a device of its own, and what
it was handed from the parent (tensors, an explicit device) raises an error that says why.

A Vulkan device cannot cross fork(): its driver threads stay in the parent, so a wait for work
submitted from the child would never end. Each test forks this process after the parent has
called a generated wrapper (so the wrapper's kernel and the default device exist), runs the
child's part and reads what it reports through a pipe; a child that hangs is killed and fails
the test instead of hanging it.
"""

from __future__ import annotations

import json
import os
import select
import signal
from collections.abc import Callable
from types import ModuleType
from typing import Any

import numpy as np
import pytest
import slangrt

from ..helpers import requires_device

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.compile,
    requires_device,
    pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork() here"),
]

HANG_S = 30  # a child still running after this has hung


def in_child(part: Callable[[], dict[str, Any]]) -> dict[str, Any]:
    """Run ``part`` in a forked child; what it returns (JSON), or what it raised."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: report, then leave at once (no pytest teardown here)
        code = 0
        try:
            os.close(read)
            try:
                out = part()
            except BaseException as exc:
                out = {"raised": f"{type(exc).__name__}: {exc}"}
            os.write(write, json.dumps(out).encode())
        except BaseException:
            code = 1
        finally:
            os._exit(code)
    os.close(write)
    try:
        chunks = []
        while True:
            ready, _, _ = select.select([read], [], [], HANG_S)
            if not ready:
                os.kill(pid, signal.SIGKILL)
                pytest.fail(f"the forked child hung (still running after {HANG_S} s)")
            chunk = os.read(read, 1 << 16)
            if not chunk:
                break
            chunks.append(chunk)
    finally:
        os.close(read)
        os.waitpid(pid, 0)
    return json.loads(b"".join(chunks) or b'{"raised": "nothing reported"}')  # type: ignore[no-any-return]


def _args() -> tuple[np.ndarray[Any, Any], np.ndarray[Any, Any], np.ndarray[Any, Any]]:
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    return x, np.ones((3, 4), np.float32), np.full(3, 2, np.float32)


def test_a_forked_child_calls_a_wrapper_on_a_device_of_its_own(kernels: ModuleType) -> None:
    x, y, scale = _args()
    parent_device = slangrt.device()
    kernels.axpy.axpy(x, y.copy(), scale, alpha=1.0, offset=0)  # the kernel made, on this device

    def part() -> dict[str, Any]:
        out = np.ones((3, 4), np.float32)
        kernels.axpy.axpy(x, out, scale, alpha=0.5, offset=1)
        t = slangrt.Tensor.from_numpy(np.ones((3, 4), np.float32))
        kernels.axpy.axpy(
            slangrt.Tensor.from_numpy(x), t, slangrt.Tensor.from_numpy(scale), alpha=0.5, offset=1
        )
        return {
            "numpy": out.tolist(),
            "tensor": t.numpy().tolist(),
            "new device": slangrt.device() is not parent_device,
            "pid": os.getpid(),
        }

    got = in_child(part)
    want = (0.5 * scale[:, None] * x + y + 1).tolist()
    assert got.get("numpy") == want and got.get("tensor") == want, got
    assert got["new device"] and got["pid"] != os.getpid()
    out = y.copy()
    kernels.axpy.axpy(x, out, scale, alpha=0.5, offset=1)  # the parent's device still works
    assert out.tolist() == want


def test_what_the_parent_made_raises_in_a_forked_child_saying_so(kernels: ModuleType) -> None:
    x, y, scale = _args()
    t = slangrt.Tensor.from_numpy(y)
    dev = slangrt.device()
    kernels.axpy.axpy(slangrt.Tensor.from_numpy(x), t, slangrt.Tensor.from_numpy(scale), alpha=1.0, offset=0)
    before = t.numpy()

    def attempt(fn: Callable[[], object]) -> str:
        try:
            fn()
        except Exception as exc:
            return f"{type(exc).__name__}: {exc}"
        return "no error"

    def part() -> dict[str, Any]:
        tx, ts = slangrt.Tensor.from_numpy(x), slangrt.Tensor.from_numpy(scale)
        return {
            "read": attempt(t.numpy),
            "write": attempt(lambda: t.copy_from(y)),
            "call": attempt(lambda: kernels.axpy.axpy(tx, t, ts, alpha=1.0, offset=0)),
            "synchronize": attempt(dev.synchronize),
            "new tensor": attempt(lambda: slangrt.Tensor.from_numpy(y, device=dev)),
        }

    got = in_child(part)
    assert "raised" not in got, got
    for what, message in got.items():
        assert message.startswith("SlangRTError: ") and "fork" in message, (what, message)
        assert f"opened by process {os.getpid()}" in message, (what, message)
    np.testing.assert_array_equal(t.numpy(), before)  # the parent's tensor is untouched
