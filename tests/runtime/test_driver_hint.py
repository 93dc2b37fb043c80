"""The no-driver error says what to do: install a driver, or fix VK_DRIVER_FILES / VK_ICD_FILENAMES
when they name files that do not exist (the loader then looks nowhere else)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from slangrt._errors import INSTALL_HINT, install_hint


@pytest.fixture(autouse=True)
def _no_driver_vars(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("VK_DRIVER_FILES", raising=False)
    monkeypatch.delenv("VK_ICD_FILENAMES", raising=False)


def test_without_the_variables_the_hint_says_to_install_a_driver() -> None:
    assert install_hint() == INSTALL_HINT
    assert "lavapipe" in INSTALL_HINT


@pytest.mark.parametrize("var", ["VK_DRIVER_FILES", "VK_ICD_FILENAMES"])
def test_a_variable_naming_a_missing_file_is_named(
    var: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    missing = str(tmp_path / "nowhere" / "lvp_icd.json")
    monkeypatch.setenv(var, missing)
    hint = install_hint()
    assert var in hint and missing in hint and "does not exist" in hint
    assert "install Mesa" not in hint  # installing a driver would not help


def test_several_paths_one_of_which_exists_is_not_blamed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    icd = tmp_path / "icd.json"
    icd.write_text("{}")
    monkeypatch.setenv("VK_DRIVER_FILES", os.pathsep.join([str(tmp_path / "gone.json"), str(icd)]))
    assert install_hint() == INSTALL_HINT


def test_several_missing_paths(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(
        "VK_DRIVER_FILES", os.pathsep.join([str(tmp_path / "a.json"), str(tmp_path / "b.json")])
    )
    assert "none of those files exists" in install_hint()


@pytest.mark.skipif(sys.platform != "linux", reason="the Vulkan loader's variables, as on Linux")
def test_opening_a_device_with_a_missing_driver_file_names_the_variable(tmp_path: Path) -> None:
    missing = str(tmp_path / "lvp_icd.x86_64.json")
    code = (
        "import slangrt\n"
        "try:\n"
        "    slangrt.device()\n"
        "except slangrt.VulkanUnavailableError as e:\n"
        "    print('ERROR', e)\n"
        "else:\n"
        "    print('OPENED')\n"
    )
    env = {k: v for k, v in os.environ.items() if k not in ("VK_ICD_FILENAMES", "SLANGRT_DEVICE")}
    env["VK_DRIVER_FILES"] = missing
    done = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120, check=False
    )
    out = done.stdout
    if "OPENED" in out:
        pytest.skip("this Vulkan loader ignores VK_DRIVER_FILES (older than 1.3.207?)")
    assert out.startswith("ERROR"), done.stdout + done.stderr
    assert f"VK_DRIVER_FILES is set to '{missing}'" in out and "does not exist" in out
    assert "install Mesa" not in out
