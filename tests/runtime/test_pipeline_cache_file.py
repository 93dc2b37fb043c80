"""The on-disk pipeline cache is an optimisation read from a directory others may write: a FIFO,
a link to a device or a huge file in its place is skipped with a warning, never read for ever."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from rt_helpers import has_vulkan_device

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not has_vulkan_device(), reason="no Vulkan device on this machine"),
]

PATH = "import slangrt; print(slangrt.device().pipeline_cache_path)"


def _python(code: str, cache: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "SLANGRT_CACHE_DIR": str(cache)}
    return subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60)


@pytest.mark.parametrize("planted", ["fifo", "dev-zero", "huge"])
def test_a_planted_cache_file_is_skipped(tmp_path: Path, planted: str) -> None:
    cache = tmp_path / "cache"
    cache.mkdir()
    first = _python(PATH, cache)  # its name follows the device and driver
    assert first.returncode == 0, first.stderr
    path = Path(first.stdout.split()[-1])
    path.unlink(missing_ok=True)
    if planted == "fifo":
        os.mkfifo(path)
    elif planted == "dev-zero":
        path.symlink_to("/dev/zero")
    else:
        with path.open("wb") as f:
            f.truncate(3 << 30)  # sparse: no disk used
    run = _python(PATH, cache)  # (on a runtime that read it whole: a hang, or memory exhausted)
    assert run.returncode == 0, run.stderr
    assert "cannot read the pipeline cache" in run.stderr, run.stderr
