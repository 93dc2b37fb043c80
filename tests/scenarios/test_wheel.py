"""End to end as a user does it: pip builds wheels, a fresh venv without slangpy runs them."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import venv
import zipfile
from collections.abc import Callable
from pathlib import Path

import pytest

from ..helpers import REPO, requires_device

pytestmark = [pytest.mark.integration, pytest.mark.slow]

PY = sys.executable


def pip(
    *args: str | Path, cwd: Path | None = None, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [PY, "-m", "pip", "--disable-pip-version-check", *map(str, args)],
        cwd=cwd,
        capture_output=True,
        text=True,
        env=env,
        timeout=900,
    )


@pytest.fixture(scope="session")
def wheelhouse(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """hatch-slang and hatch-slang-runtime wheels built from this checkout."""
    out = tmp_path_factory.mktemp("wheelhouse")
    run = pip("wheel", "--no-deps", "--no-build-isolation", "-w", out, REPO, REPO / "runtime")
    assert run.returncode == 0, run.stdout + run.stderr
    return out


def _wheel_names(path: Path) -> list[str]:
    with zipfile.ZipFile(path) as zf:
        return zf.namelist()


def _metadata(path: Path) -> str:
    with zipfile.ZipFile(path) as zf:
        name = next(n for n in zf.namelist() if n.endswith(".dist-info/METADATA"))
        return zf.read(name).decode()


def test_hatch_slang_wheel_ships_its_kernel_library_and_templates(wheelhouse: Path) -> None:
    wheel = next(wheelhouse.glob("hatch_slang-*.whl"))
    names = _wheel_names(wheel)
    for expected in [
        "hatch_slang/kernels/moe_combine.py",
        "hatch_slang/kernels/moe_combine.moe_combine.spv",
        "hatch_slang/kernels/manifest.json",
        "hatch_slang/kernels/py.typed",
        "hatch_slang/templates/module.py.tmpl",
        "hatch_slang/hatch/hooks.py",
    ]:
        assert expected in names


def test_user_project_wheel_without_build_isolation(package: Callable[[str], Path], tmp_path: Path) -> None:
    root = package("seedpkg")
    out = tmp_path / "dist"
    run = pip("wheel", "--no-deps", "--no-build-isolation", "-w", out, root)
    assert run.returncode == 0, run.stdout + run.stderr
    wheel = next(out.glob("mypkg-*.whl"))
    names = _wheel_names(wheel)
    for expected in [
        "mypkg/kernels/moe_combine.py",
        "mypkg/kernels/moe_combine.moe_combine.spv",
        "mypkg/kernels/manifest.json",
        "mypkg/kernels/py.typed",
        "mypkg/kernels/__init__.py",
        "mypkg/__init__.py",
    ]:
        assert expected in names
    assert "Requires-Dist: hatch-slang-runtime>=0.2,<0.3" in _metadata(wheel)
    assert wheel.name.endswith("-none-any.whl")  # SPIR-V is portable: a pure wheel
    assert not (root / "mypkg" / "kernels").exists()  # a wheel build writes nothing into the tree


def test_syntax_error_fails_pip_wheel_with_file_and_line(
    package: Callable[[str], Path], tmp_path: Path
) -> None:
    root = package("broken")
    out = tmp_path / "dist"
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    run = pip(
        "wheel", "--no-deps", "--no-build-isolation", "-w", out, root, env={**os.environ, "TMPDIR": str(tmp)}
    )
    assert run.returncode != 0
    log = run.stdout + run.stderr
    assert "shaders/broken.slang:10" in log, log
    assert not out.exists() or not any(out.iterdir())
    assert not (root / "mypkg" / "kernels").exists()
    assert not list(tmp.glob("hatch-slang-*")), "the hook left a temporary directory behind"


def test_build_isolation_with_find_links(
    package: Callable[[str], Path], wheelhouse: Path, tmp_path: Path
) -> None:
    root = package("seedpkg")
    out = tmp_path / "dist"
    run = pip("wheel", "--no-deps", "--find-links", wheelhouse, "-w", out, root)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "mypkg/kernels/moe_combine.moe_combine.spv" in _wheel_names(next(out.glob("mypkg-*.whl")))


CHECK = textwrap.dedent(
    """
    import importlib.util, sys
    import numpy as np
    from mypkg.kernels import moe_combine

    assert importlib.util.find_spec("slangpy") is None, "slangpy must not be needed at run time"
    assert importlib.util.find_spec("hatch_slang") is None
    rng = np.random.default_rng(0)
    worst = 0.0
    for hidden, n_tokens, n_used in [(1, 1, 1), (256, 2, 2), (300, 3, 4), (1000, 4, 8), (4096, 2, 6)]:
        for accumulate in (False, True):
            z = rng.standard_normal((n_tokens * n_used, hidden), dtype=np.float32)
            w = rng.random(n_tokens * n_used, dtype=np.float32)
            out = rng.standard_normal((n_tokens, hidden), dtype=np.float32)
            s = (w[:, None].astype(np.float64) * z).reshape(n_tokens, n_used, hidden).sum(1)
            want = s + out if accumulate else s
            moe_combine.moe_combine(z, w, out, n_used=n_used, accumulate=accumulate)
            worst = max(worst, float(np.abs(out - want).max()))
    assert worst <= 1e-4, worst
    print("max error", worst)
    """
)


@requires_device
def test_fresh_venv_with_only_runtime_runs_the_kernel(
    package: Callable[[str], Path], wheelhouse: Path, tmp_path: Path
) -> None:
    root = package("seedpkg")
    dist = tmp_path / "dist"
    run = pip("wheel", "--no-deps", "--no-build-isolation", "-w", dist, root)
    assert run.returncode == 0, run.stdout + run.stderr
    env_dir = tmp_path / "fresh"
    venv.create(env_dir, with_pip=True)
    py = env_dir / "bin" / "python"
    runtime_wheel = next(wheelhouse.glob("hatch_slang_runtime-*.whl"))
    install = subprocess.run(
        [
            py,
            "-m",
            "pip",
            "install",
            "--disable-pip-version-check",
            "--quiet",
            "--find-links",
            wheelhouse,
            next(dist.glob("mypkg-*.whl")),
            runtime_wheel,
        ],
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert install.returncode == 0, install.stdout + install.stderr
    check = subprocess.run([py, "-c", CHECK], capture_output=True, text=True, cwd=tmp_path, timeout=300)
    assert check.returncode == 0, check.stdout + check.stderr
    assert "max error" in check.stdout
