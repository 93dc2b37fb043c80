"""``import slangrt`` must work without Vulkan, and a missing loader or driver must be a clean error."""

from __future__ import annotations

import textwrap
from pathlib import Path

from rt_helpers import run_python


def test_import_does_not_load_vulkan() -> None:
    proc = run_python("import sys, slangrt; print('vulkan' in sys.modules, slangrt.__version__)")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["False", "0.2.0"]


def test_public_names() -> None:
    import slangrt

    for name in (
        "devices",
        "device",
        "Device",
        "DeviceInfo",
        "Tensor",
        "Kernel",
        "BindingSpec",
        "SlangRTError",
        "VulkanUnavailableError",
        "DeviceLostError",
        "VulkanError",
    ):
        assert name in slangrt.__all__
        assert hasattr(slangrt, name)
    assert issubclass(slangrt.VulkanUnavailableError, slangrt.SlangRTError)
    assert issubclass(slangrt.DeviceLostError, slangrt.SlangRTError)
    assert issubclass(slangrt.VulkanError, slangrt.SlangRTError)


def test_no_driver_is_a_clean_error() -> None:
    code = textwrap.dedent(
        """
        import numpy as np, slangrt
        for call in (slangrt.devices, slangrt.device, lambda: slangrt.Tensor.zeros(4, np.float32)):
            try:
                call()
            except slangrt.VulkanUnavailableError as exc:
                print("UNAVAILABLE", exc)
            else:
                print("NO ERROR")
        """
    )
    proc = run_python(
        code, env={"VK_DRIVER_FILES": "/nonexistent.json", "VK_ICD_FILENAMES": "/nonexistent.json"}
    )
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert len(lines) == 3 and all(line.startswith("UNAVAILABLE") for line in lines), proc.stdout
    # The variables point at a file that does not exist: the message names them, not apt-get
    # (tests/runtime/test_driver_hint.py covers the install hint when no driver is installed).
    assert "VK_DRIVER_FILES" in lines[0] and "/nonexistent.json" in lines[0]
    assert "Traceback" not in proc.stderr


def test_no_loader_is_a_clean_error(tmp_path: Path) -> None:
    # Hiding the system's libvulkan.so.1 from dlopen is not possible portably; a stand-in
    # `vulkan` package that fails the way the real one does without a loader is.
    fake = tmp_path / "vulkan"
    fake.mkdir()
    (fake / "__init__.py").write_text(
        "raise OSError('Cannot find Vulkan SDK version. Please ensure that it is installed and that "
        "the <sdk_root>/<version>/lib/ folder is in the library path')\n"
    )
    code = textwrap.dedent(
        """
        import slangrt
        try:
            slangrt.devices()
        except slangrt.VulkanUnavailableError as exc:
            print("UNAVAILABLE", exc)
        """
    )
    proc = run_python(f"import sys; sys.path.insert(0, {str(tmp_path)!r})\n{code}")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("UNAVAILABLE"), proc.stdout
    assert "libvulkan.so.1" in proc.stdout and "apt-get install libvulkan1 mesa-vulkan-drivers" in proc.stdout
