"""Helpers shared by the slangrt runtime tests (a plain module: conftest names can clash)."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import slangrt
from slangrt import BindingSpec, _settings

DATA = Path(__file__).resolve().parent / "data"


def device_in_mode(mode: str) -> Iterator[slangrt.Device]:
    """A device of its own (the default one's GPU), its transfers ``"native"`` (mapped memory
    where the device has it) or ``"staging"`` (a discrete GPU's path), closed after use: the
    body of the tests' ``dev`` fixtures parametrized over both modes."""
    with _settings.overridden(staging=mode == "staging"):
        d = slangrt.Device(slangrt.device().info.index)
    if mode == "staging":
        assert not d.direct_memory
    yield d
    d.close()


# The binding layouts of the fixture kernels in data/ (what a manifest would say for each).
ADD_BINDINGS = [
    BindingSpec(0, "a", "storage", True),
    BindingSpec(1, "b", "storage", False),
    BindingSpec(2, "params", "storage", False),
]
SCALE_BINDINGS = [
    BindingSpec(0, "x", "storage", False),
    BindingSpec(1, "y", "storage", True),
    BindingSpec(2, "params", "uniform", False),
]
MOE_BINDINGS = [
    BindingSpec(0, "z", "storage", False),
    BindingSpec(1, "sel_weight", "storage", False),
    BindingSpec(2, "out", "storage", True),
    BindingSpec(3, "params", "storage", False),
]


def spirv(name: str) -> bytes:
    """The committed SPIR-V of fixture kernel ``name`` (see data/regen.py)."""
    return (DATA / f"{name}.spv").read_bytes()


def run_python(
    code: str, env: dict[str, str] | None = None, timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    """Run ``code`` in a fresh interpreter (for per-process state: env vars, the instance)."""
    full_env = dict(os.environ)
    full_env.update(env or {})
    return subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=full_env,
        check=False,
    )


_device_ok: bool | None = None


def has_validation_layer() -> bool:
    """Whether the Khronos validation layer is installed where the loader looks for it."""
    return any(
        Path(d, "VkLayer_khronos_validation.json").is_file()
        for d in ("/usr/share/vulkan/explicit_layer.d", "/usr/local/share/vulkan/explicit_layer.d")
    )


def has_vulkan_device() -> bool:
    """Whether slangrt can open a device; asked once, in a subprocess, so that a broken
    driver cannot take the test session down with it."""
    global _device_ok
    if _device_ok is None:
        try:
            proc = run_python("import slangrt; slangrt.device()")
            _device_ok = proc.returncode == 0
        except subprocess.TimeoutExpired:
            _device_ok = False
    return _device_ok


def run_threads(*targets: Callable[[], None], timeout: float = 120.0) -> None:
    """Run each target in a thread of its own; fail if one is still running after ``timeout``
    seconds (stuck) or raised (its first error is raised here)."""
    errors: list[BaseException] = []

    def run(fn: Callable[[], None]) -> None:
        try:
            fn()
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(fn,), daemon=True) for fn in targets]  # (a stuck one
    # must not keep the test process from ending)
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout)
        assert not t.is_alive(), "a thread is stuck"
    assert not errors, errors[0]
