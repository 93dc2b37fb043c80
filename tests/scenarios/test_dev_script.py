"""`./dev` finds an installed Vulkan driver (lavapipe's ICD in /usr/share/vulkan/icd.d while
/etc/vulkan/icd.d is empty), as root and as an ordinary user (whose PATH has no /sbin), runs
apt-get only for what is missing, and names VK_DRIVER_FILES when it points nowhere.

The virtual environment and apt-get are stubs that record their calls: the tests exercise the
script's own logic, not pip or apt.
"""

from __future__ import annotations

import glob
import os
import shutil
import stat
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from ..helpers import REPO

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="./dev targets Debian/Ubuntu")

LAVAPIPE = sorted(glob.glob("/usr/share/vulkan/icd.d/lvp_icd*.json"))
USER = "hatchslang-devtest"
ROOT = hasattr(os, "geteuid") and os.geteuid() == 0
needs_lavapipe = pytest.mark.skipif(not LAVAPIPE, reason="lavapipe's ICD is not installed")
needs_root = pytest.mark.skipif(not ROOT, reason="needs root (to create a user, and as ./dev's root path)")

STUB = """#!/bin/sh
echo "$(basename "$0") $*" >> "{log}"
exit 0
"""


def _executable(path: Path, text: str) -> None:
    path.write_text(text)
    path.chmod(0o755)


@pytest.fixture
def sandbox() -> Iterator[Path]:
    """A world-readable directory holding a copy of ./dev, a stub venv and a stub apt-get."""
    base = Path(tempfile.mkdtemp(prefix="hatch-slang-dev-"))
    base.chmod(0o777)
    try:
        log = base / "calls.log"
        log.touch()
        log.chmod(0o666)
        shutil.copy(REPO / "dev", base / "dev")
        (base / "dev").chmod(0o755)
        for d in ("venv/bin", "fakebin", "home"):
            (base / d).mkdir(parents=True)
            (base / d).chmod(0o777)
        for tool in ("python", "hatch-slang", "ruff", "mypy", "pytest"):
            _executable(base / "venv" / "bin" / tool, STUB.format(log=log))
        _executable(base / "fakebin" / "apt-get", STUB.format(log=log))
        yield base
    finally:
        shutil.rmtree(base, ignore_errors=True)


def _env(base: Path, **extra: str) -> dict[str, str]:
    """An ordinary login's environment: no /sbin on PATH; the stubs first."""
    return {
        "PATH": f"{base / 'fakebin'}:/usr/local/bin:/usr/bin:/bin",
        "HOME": str(base / "home"),
        "VENV": str(base / "venv"),
        "LANG": "C.UTF-8",
        **extra,
    }


def run_dev(base: Path, *args: str, user: str | None = None, **env: str) -> subprocess.CompletedProcess[str]:
    command = ["env", "-i", *(f"{k}={v}" for k, v in _env(base, **env).items()), str(base / "dev"), *args]
    if user is not None:
        command = ["runuser", "-u", user, "--", *command]
    return subprocess.run(command, capture_output=True, text=True, timeout=120, cwd=base)


def calls(base: Path) -> list[str]:
    return (base / "calls.log").read_text().splitlines()


@pytest.fixture(scope="module")
def ordinary_user() -> Iterator[str]:
    if not ROOT or shutil.which("runuser") is None or shutil.which("useradd") is None:
        pytest.skip("needs root, runuser and useradd")
    created = subprocess.run(["id", USER], capture_output=True).returncode != 0
    if created:
        subprocess.run(["useradd", "--no-create-home", "--shell", "/bin/sh", USER], check=True)
    try:
        yield USER
    finally:
        if created:
            subprocess.run(["userdel", USER], check=False)


@needs_lavapipe
def test_doctor_finds_lavapipe_and_installs_nothing(sandbox: Path) -> None:
    done = run_dev(sandbox, "doctor")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "libvulkan.so.1" in done.stdout
    assert LAVAPIPE[0] in done.stdout and done.stdout.rstrip().endswith("ok")
    assert calls(sandbox) == []


@needs_lavapipe
@needs_root
def test_demo_as_root_with_a_driver_does_not_run_apt(sandbox: Path) -> None:
    done = run_dev(sandbox, "demo")
    assert done.returncode == 0, done.stdout + done.stderr
    log = calls(sandbox)
    assert not [c for c in log if c.startswith("apt-get")], log
    assert any(c.startswith("python -m pip install") and c.endswith("./runtime .") for c in log), log
    assert log[-2:] == ["hatch-slang devices", "hatch-slang validate"]


@needs_lavapipe
@needs_root
def test_setup_as_root_installs_only_missing_packages(sandbox: Path) -> None:
    done = run_dev(sandbox, "setup")  # validation layers and spirv-tools: installed, or not
    assert done.returncode == 0, done.stdout + done.stderr
    installed = [c for c in calls(sandbox) if c.startswith("apt-get install")]
    status = {
        p: subprocess.run(["dpkg-query", "-W", "-f=${Status}", p], capture_output=True, text=True).stdout
        for p in ("vulkan-validationlayers", "spirv-tools")
    }
    missing = [p for p, s in status.items() if s != "install ok installed"]
    if missing:
        assert len(installed) == 1 and installed[0].split()[-len(missing) :] == missing
        assert "mesa-vulkan-drivers" not in installed[0]
    else:
        assert calls(sandbox)[0].startswith("python -m pip"), calls(sandbox)  # no apt-get at all
    # A package reported missing (a fake dpkg-query) is installed, and only it.
    _executable(
        sandbox / "fakebin" / "dpkg-query",
        '#!/bin/sh\nfor a; do p=$a; done\n[ "$p" = spirv-tools ] && exit 1\nprintf "install ok installed"\n',
    )
    (sandbox / "calls.log").write_text("")
    done = run_dev(sandbox, "setup")
    assert done.returncode == 0, done.stdout + done.stderr
    apt = [c for c in calls(sandbox) if c.startswith("apt-get")]
    assert apt == ["apt-get update -qq", "apt-get install -y -qq spirv-tools"], apt


@needs_lavapipe
def test_a_driver_variable_naming_a_missing_file_is_named_and_apt_not_run(sandbox: Path) -> None:
    missing = str(sandbox / "no" / "lvp_icd.json")
    done = run_dev(sandbox, "demo", VK_DRIVER_FILES=missing)
    assert done.returncode == 1
    assert f"VK_DRIVER_FILES is set to '{missing}'" in done.stderr, done.stderr
    assert "apt-get install libvulkan1" not in done.stderr
    assert calls(sandbox) == []  # neither apt-get nor pip
    pointed = run_dev(sandbox, "doctor", VK_ICD_FILENAMES=LAVAPIPE[0])
    assert pointed.returncode == 0 and "from VK_ICD_FILENAMES" in pointed.stdout


@needs_lavapipe
def test_demo_as_an_ordinary_user_finds_the_driver(sandbox: Path, ordinary_user: str) -> None:
    assert (
        not Path("/etc/vulkan/icd.d").is_dir() or not list(Path("/etc/vulkan/icd.d").glob("*.json")) or True
    )
    done = run_dev(sandbox, "demo", user=ordinary_user)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "No Vulkan driver found" not in done.stderr
    log = calls(sandbox)
    assert not [c for c in log if c.startswith("apt-get")], log
    assert log[-2:] == ["hatch-slang devices", "hatch-slang validate"]
    doctor = run_dev(sandbox, "doctor", user=ordinary_user)
    assert doctor.returncode == 0 and LAVAPIPE[0] in doctor.stdout, doctor.stdout + doctor.stderr


@needs_lavapipe
def test_an_ordinary_user_with_a_bad_driver_variable_is_told_so(sandbox: Path, ordinary_user: str) -> None:
    done = run_dev(sandbox, "demo", user=ordinary_user, VK_DRIVER_FILES="/nonexistent/icd.json")
    assert done.returncode == 1
    assert "VK_DRIVER_FILES is set to '/nonexistent/icd.json'" in done.stderr
    assert calls(sandbox) == []


def test_the_script_is_executable_and_lists_doctor() -> None:
    assert os.stat(REPO / "dev").st_mode & stat.S_IXUSR
    done = subprocess.run([str(REPO / "dev")], capture_output=True, text=True)
    assert done.returncode == 2 and "./dev doctor" in done.stdout


@needs_lavapipe
def test_dev_test_runs_every_step_reports_each_and_fails_if_one_failed(sandbox: Path) -> None:
    """mypy (a stub) fails: the steps after it run all the same, the summary lists each step, and
    the exit status says that one failed."""
    (sandbox / "venv" / "bin" / "mypy").write_text(
        f'#!/bin/sh\necho "mypy $*" >> "{sandbox / "calls.log"}"\nexit 3\n'
    )
    stub_python = str(sandbox / "venv" / "bin" / "python")  # passes find_python310's version check
    done = run_dev(sandbox, "test", "-q", PYTHON310=stub_python, VENV310=str(sandbox / "venv"))
    assert done.returncode == 1, done.stdout + done.stderr
    log = calls(sandbox)
    ran = [c.split()[0] + (" " + c.split()[1] if c.startswith(("ruff", "hatch-slang")) else "") for c in log]
    for step in ("ruff check", "ruff format", "mypy", "hatch-slang check", "pytest"):
        assert step in ran, (step, log)
    assert log[-1] == "python -m pytest -q -p no:cacheprovider tests/runtime", log  # the py3.10 step ran last
    summary = done.stdout.split("== summary\n", 1)[1].splitlines()
    assert summary[:6] == [
        "  ok      ruff check",
        "  ok      ruff format",
        "  FAILED  mypy --strict (exit status 3)",
        "  ok      hatch-slang check",
        "  ok      pytest",
        "  ok      runtime tests on Python 3.10",
    ], done.stdout


@needs_lavapipe
def test_dev_test_passes_when_every_step_passes(sandbox: Path) -> None:
    stub_python = str(sandbox / "venv" / "bin" / "python")
    done = run_dev(sandbox, "test", PYTHON310=stub_python, VENV310=str(sandbox / "venv"))
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.rstrip().endswith("all steps passed") and "FAILED" not in done.stdout


def test_ci_runs_dev_test_with_the_ci_profile() -> None:
    text = (REPO / ".ci" / "run").read_text()
    assert "./dev test" in text and "export CI=" in text


@pytest.mark.parametrize(
    ("env", "profile", "derandomize"),
    [
        ({"CI": "true"}, "ci", True),
        ({"CI": "1", "HYPOTHESIS_PROFILE": "random"}, "random", False),
        ({"HYPOTHESIS_PROFILE": "ci"}, "ci", True),
        ({}, "random", False),
        ({"CI": "false"}, "random", False),
    ],
)
def test_hypothesis_runs_derandomized_under_ci(env: dict[str, str], profile: str, derandomize: bool) -> None:
    """tests/conftest.py registers a `ci` profile (a fixed seed, no database, no deadline) and
    loads it when CI is set or HYPOTHESIS_PROFILE names it; local runs keep random examples."""
    pytest.importorskip("hypothesis")
    probe = (
        "import sys; sys.path.insert(0, sys.argv[1]); import tests.conftest; "
        "from hypothesis import settings; s = settings.default; "
        "print(settings._current_profile, s.derandomize, s.database is None, s.deadline)"
    )
    clean = {k: v for k, v in os.environ.items() if k not in ("CI", "HYPOTHESIS_PROFILE")}
    done = subprocess.run(
        [sys.executable, "-c", probe, str(REPO)],
        env={**clean, **env},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    name, derand, no_db, deadline = done.stdout.split()
    assert (name, derand == "True") == (profile, derandomize)
    if profile == "ci":
        assert no_db == "True" and deadline == "None"
