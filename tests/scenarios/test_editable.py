"""Editable installs: `pip install -e .` imports the wrappers; `hatch-slang build` updates them."""

from __future__ import annotations

import os
import subprocess
import sys
import sysconfig
import textwrap
import venv
from collections.abc import Callable
from pathlib import Path

import pytest

from ..helpers import vulkan_device_name

pytestmark = [pytest.mark.integration, pytest.mark.slow]

HATCH_SLANG = Path(sys.executable).parent / "hatch-slang"


@pytest.fixture(autouse=True)
def _project_cache(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test project keeps its own cache (in the test's user cache directory, see conftest)."""
    monkeypatch.delenv("HATCH_SLANG_CACHE_DIR", raising=False)


USE = textwrap.dedent(
    """
    import sys
    import numpy as np
    import mypkg
    from mypkg.kernels import square

    print("from", mypkg.__file__)
    print("doc", square.square.__doc__.splitlines()[0])
    if sys.argv[1] == "run":
        a = np.arange(6, dtype=np.float32).reshape(2, 3)
        out = np.zeros_like(a)
        square.square(a, out)
        print("out", out.ravel().tolist())
    """
)


def fresh_env(tmp_path: Path) -> Path:
    """A new venv that sees this one's packages (hatchling, hatch-slang, slangrt, pip) but not mypkg."""
    env = tmp_path / "venv"
    venv.create(env, with_pip=False)
    [site] = (env / "lib").glob("python*/site-packages")
    parent = sysconfig.get_paths()["purelib"]
    # addsitedir (unlike a plain path line) also reads the parent's .pth files: editable installs.
    (site / "_parent.pth").write_text(f"import site; site.addsitedir({parent!r})\n")
    return env / "bin" / "python"


def call(*args: str | Path, cwd: Path | None = None) -> str:
    done = subprocess.run([str(a) for a in args], cwd=cwd, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def test_editable_install_imports_and_follows_hatch_slang_build(
    package: Callable[[str], Path], tmp_path: Path
) -> None:
    root = package("multipkg")
    py = fresh_env(tmp_path)
    call(py, "-m", "pip", "install", "--disable-pip-version-check", "--no-deps", "--no-build-isolation",
         "-e", root)  # fmt: skip
    assert (root / "mypkg" / "kernels" / "square.py").is_file()  # written into the source tree
    # What the editable build wrote is exactly what `check` expects.
    call(HATCH_SLANG, "check", cwd=root)

    mode = "run" if vulkan_device_name() else "import"
    before = call(py, "-c", USE, mode, cwd=tmp_path)
    assert f"from {root / 'mypkg' / '__init__.py'}" in before
    assert "doc Square a matrix's elements" in before
    if mode == "run":
        assert "out [0.0, 1.0, 4.0, 9.0, 16.0, 25.0]" in before

    shader = root / "shaders" / "square.slang"
    text = shader.read_text().replace("Square a matrix's elements", "Square plus one")
    shader.write_text(text.replace("= v * v;", "= v * v + 1.0f;"))
    assert "1 compiled" in call(HATCH_SLANG, "build", cwd=root)
    after = call(py, "-c", USE, mode, cwd=tmp_path)
    assert "doc Square plus one" in after
    if mode == "run":
        assert "out [1.0, 2.0, 5.0, 10.0, 17.0, 26.0]" in after
    call(HATCH_SLANG, "check", cwd=root)
    assert "mypkg" not in os.listdir(sysconfig.get_paths()["purelib"])
