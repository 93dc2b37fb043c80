"""Device discovery and selection."""

from __future__ import annotations

import glob
import textwrap

import pytest
import slangrt
from rt_helpers import has_vulkan_device, run_python

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not has_vulkan_device(), reason="no Vulkan device on this machine"),
]

HAS_LAVAPIPE = bool(glob.glob("/usr/share/vulkan/icd.d/lvp_icd*.json"))


def test_devices_describes_each_device() -> None:
    infos = slangrt.devices()
    assert infos
    for i, info in enumerate(infos):
        assert isinstance(info, slangrt.DeviceInfo)
        assert info.index == i
        assert info.name and info.driver
        assert info.type in ("discrete", "integrated", "virtual", "cpu", "other")
        assert info.api_version.count(".") == 2
        assert len(info.max_workgroup_count) == 3 and min(info.max_workgroup_count) >= 65535
        assert len(info.max_workgroup_size) == 3 and info.max_invocations >= 128
        assert info.max_storage_buffer_range >= 2**27
        assert info.memory_bytes > 0
    with pytest.raises(AttributeError):
        infos[0].name = "x"  # type: ignore[misc]


@pytest.mark.skipif(not HAS_LAVAPIPE, reason="lavapipe is not installed")
def test_lavapipe_is_listed() -> None:
    cpu = [d for d in slangrt.devices() if "llvmpipe" in d.name]
    assert cpu and cpu[0].type == "cpu"


def test_default_device_is_shared_and_best() -> None:
    dev = slangrt.device()
    assert slangrt.device() is dev
    rank = {"discrete": 0, "integrated": 1, "virtual": 2, "cpu": 3, "other": 4}
    assert rank[dev.info.type] == min(rank[d.type] for d in slangrt.devices())
    assert dev.info in slangrt.devices()


def test_default_device_is_created_once_across_threads() -> None:
    code = textwrap.dedent(
        """
        import threading, slangrt
        seen = []
        ts = [threading.Thread(target=lambda: seen.append(slangrt.device())) for _ in range(8)]
        for t in ts: t.start()
        for t in ts: t.join()
        print(len({id(d) for d in seen}))
        """
    )
    proc = run_python(code)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "1"


def test_env_selects_by_index_and_name() -> None:
    first = slangrt.devices()[0]
    code = "import slangrt; print(slangrt.device().info.index)"
    by_index = run_python(code, env={"SLANGRT_DEVICE": "0"})
    assert by_index.returncode == 0, by_index.stderr
    assert by_index.stdout.strip() == "0"
    by_name = run_python(code, env={"SLANGRT_DEVICE": first.name[:6].upper()})
    assert by_name.returncode == 0, by_name.stderr
    assert by_name.stdout.strip() == str(
        [d.name[:6].upper() in d.name.upper() for d in slangrt.devices()].index(True)
    )


@pytest.mark.parametrize("selector", ["no-such-device-xyz", "99"])
def test_env_naming_no_device_is_an_error(selector: str) -> None:
    code = textwrap.dedent(
        """
        import slangrt
        try:
            slangrt.device()
        except slangrt.SlangRTError as exc:
            print("ERROR", exc)
        """
    )
    proc = run_python(code, env={"SLANGRT_DEVICE": selector})
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("ERROR") and "SLANGRT_DEVICE" in proc.stdout
    assert slangrt.devices()[0].name in proc.stdout  # lists what there is


def test_explicit_device_close_and_context_manager() -> None:
    with slangrt.Device(0) as dev:
        assert dev.info == slangrt.devices()[0]
        t = slangrt.Tensor.zeros(3, "float32", device=dev)
        assert t.device is dev
    assert dev.closed and t.closed
    with pytest.raises(slangrt.SlangRTError):
        slangrt.Tensor.zeros(3, "float32", device=dev)
    dev.close()  # idempotent
