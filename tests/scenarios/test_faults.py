"""Build-side faults: a compiler that crashes, and builds killed part-way.

- A native crash of the Slang compiler (``HATCH_SLANG_TEST_CRASH=<file name>`` makes the worker
  compiling that file abort) fails the build with an error naming the shader, through the CLI
  and through ``pip wheel``, and writes nothing.
- ``hatch-slang build`` killed with SIGKILL at random moments, many times, while the sources
  switch between two versions: every generated file is always one version or the other,
  complete; the package's ``__init__`` never imports a module that is not there; and the next
  build that runs to the end leaves exactly the new version: no staging directory, no file left
  over from the old one. ``HATCH_SLANG_TEST_WRITE_PAUSE`` slows the writing down (a sleep before
  each file operation) so that kills land inside it, not only before or after it.
"""

from __future__ import annotations

import os
import random
import re
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from hatch_slang.builder import pipeline
from hatch_slang.builder.output import PAUSE_ENV
from hatch_slang.config.project import load_project_config

pytestmark = pytest.mark.compile

HATCH_SLANG = Path(sys.executable).parent / "hatch-slang"
KILLS = int(os.environ.get("HATCH_SLANG_KILLS", "16"))


@pytest.fixture(autouse=True)
def _project_cache(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test project keeps its own cache (in the test's user cache directory, see conftest)."""
    monkeypatch.delenv("HATCH_SLANG_CACHE_DIR", raising=False)


def cli(root: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(HATCH_SLANG), *args, "--root", str(root)],
        capture_output=True,
        text=True,
        env={**os.environ, **(env or {})},
        timeout=300,
        check=False,
    )


# -- compiler crashes --------------------------------------------------------------------------


def test_compiler_crash_fails_the_cli_build_naming_the_shader(package: Callable[[str], Path]) -> None:
    root = package("multipkg")
    run = cli(root, "build", env={"HATCH_SLANG_TEST_CRASH": "scale.slang"})
    assert run.returncode == 1, run.stdout + run.stderr
    assert re.search(r"(?s)shaders/scale\.slang.*crashed", run.stderr), run.stderr
    assert "Traceback" not in run.stderr
    assert not (root / "mypkg" / "kernels").exists()  # the other shaders compiled; nothing written
    run = cli(root, "build", "-q")  # the crash was not cached
    assert run.returncode == 0, run.stderr
    assert (root / "mypkg" / "kernels" / "scale.py").is_file()


def test_a_real_compiler_crash_is_reported_too(tmp_path: Path) -> None:
    """Slang (2025) crashes, natively, on an entry point called `new`; no seam needed."""
    (tmp_path / "shaders").mkdir()
    (tmp_path / "pyproject.toml").write_text(PYPROJECT)
    (tmp_path / "shaders" / "new.slang").write_text(SHADER.format(doc="Crashes Slang.", name="new", k=2))
    run = cli(tmp_path, "build")
    if run.returncode == 0:
        pytest.skip("this Slang compiles an entry point called `new`")
    assert run.returncode == 1 and "Traceback" not in run.stderr, run.stderr
    assert re.search(r"(?s)shaders/new\.slang.*(crashed|error)", run.stderr), run.stderr


@pytest.mark.integration
@pytest.mark.slow
def test_compiler_crash_fails_pip_wheel_naming_the_shader(
    package: Callable[[str], Path], tmp_path: Path
) -> None:
    root = package("multipkg")
    out = tmp_path / "dist"
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    run = subprocess.run(
        [sys.executable, "-m", "pip", "--disable-pip-version-check", "wheel", "--no-deps"]
        + ["--no-build-isolation", "-w", str(out), str(root)],
        capture_output=True,
        text=True,
        env={**os.environ, "HATCH_SLANG_TEST_CRASH": "square.slang", "TMPDIR": str(tmp)},
        timeout=600,
        check=False,
    )
    log = run.stdout + run.stderr
    assert run.returncode != 0, log
    assert re.search(r"(?s)shaders/square\.slang.*the Slang compiler crashed", log), log
    assert not out.exists() or not any(out.iterdir())
    assert not (root / "mypkg" / "kernels").exists()
    assert not list(tmp.glob("hatch-slang-*")), "the hook left a temporary directory behind"


# -- builds killed part-way --------------------------------------------------------------------

SHADER = """\
// {doc}
//
// Bindings:
//   u0: data    f32, `[n]`
//   t1: params  (n)
//
// Dispatch: ceil(n / 64) threadgroups of 64.
[[vk::binding(0)]] RWStructuredBuffer<float> data;
[[vk::binding(1)]] StructuredBuffer<uint> params;
[shader("compute")]
[numthreads(64, 1, 1)]
void {name}(uint3 id : SV_DispatchThreadID) {{ if (id.x < params[0]) data[id.x] = data[id.x] * {k}.0f; }}
"""

# Two versions of a project's shaders: `kept` is the same in both, `edited` changes, `removed`
# goes away and `added` comes in (so a build deletes one module's files and adds another's).
VERSIONS = {
    "A": {"kept": ("Kept.", 2), "edited": ("Edited, first version.", 3), "removed": ("Removed.", 4)},
    "B": {"kept": ("Kept.", 2), "edited": ("Edited, second version.", 5), "added": ("Added.", 6)},
}
PYPROJECT = """\
[project]
name = "killpkg"
version = "0"

[tool.hatch.build.hooks.slang]
shaders = ["shaders/*.slang"]
package = "killpkg/kernels"
"""


def use_version(root: Path, version: str) -> None:
    shaders = root / "shaders"
    shaders.mkdir(exist_ok=True)
    for path in shaders.glob("*.slang"):
        if path.stem not in VERSIONS[version]:
            path.unlink()
    for name, (doc, k) in VERSIONS[version].items():
        text = SHADER.format(doc=doc, name=name, k=k)
        path = shaders / f"{name}.slang"
        if not path.is_file() or path.read_text() != text:
            path.write_text(text)


def expected(root: Path) -> dict[str, bytes]:
    config = load_project_config(root)
    return pipeline.build(config, cache=pipeline.open_cache(config)).files


def staging_dirs(dest: Path) -> list[str]:
    return sorted(p.name for p in dest.glob(".hatch-slang-*"))


def check_files(dest: Path, versions: dict[str, dict[str, bytes]]) -> None:
    """What a killed build leaves: every generated file whole, one version's or the other's;
    ``__init__`` importing only modules that are there; and a manifest that names every
    generated file there (while a build replaces files, it names the old ones and the new)."""
    import json

    present = {p.name for p in dest.iterdir() if not p.name.startswith(".hatch-slang-")}
    for name in present - {"manifest.json"}:
        data = (dest / name).read_bytes()
        assert any(files.get(name) == data for files in versions.values()), f"{name} is partial or foreign"
    init = dest / "__init__.py"
    if init.is_file():
        for module in re.findall(r"^from \. import (\w+) as", init.read_text(), re.M):
            assert (dest / f"{module}.py").is_file(), f"__init__.py imports {module}, which is missing"
    if "manifest.json" not in present:
        assert not present, "generated files but no manifest"
        return
    shaders = json.loads((dest / "manifest.json").read_text())["shaders"]  # whole JSON
    listed = {"manifest.json", "py.typed", "__init__.py"}
    for module, entry in shaders.items():
        assert any(
            json.loads(files["manifest.json"])["shaders"].get(module) == entry for files in versions.values()
        ), module
        listed |= {f"{module}.py"} | {e["spirv"] for e in entry["entries"].values()}
    assert present <= listed, f"not named by the manifest, so no build would remove: {present - listed}"


def children(pid: int) -> list[int]:
    """The processes whose parent is ``pid`` (Linux; elsewhere an empty list)."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            found.append(int(stat.parent.name))
    return found


def wait_gone(pids: list[int], timeout: float) -> list[int]:
    """Those of ``pids`` still running after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        alive = [p for p in pids if Path(f"/proc/{p}").exists()]
        if not alive or time.monotonic() > deadline:
            return alive
        time.sleep(0.05)


def state(dest: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in dest.iterdir() if p.is_file()}


@pytest.mark.slow  # 16 killed builds and their rebuilds: 18-25 s on 2 CPUs
def test_killed_builds_leave_whole_files_and_the_next_build_cleans_up(tmp_path: Path) -> None:
    root = tmp_path / "killpkg"
    root.mkdir()
    (root / "pyproject.toml").write_text(PYPROJECT)
    versions = {}
    for v in VERSIONS:  # the outputs of each version (and a warm cache: kills hit the writing)
        use_version(root, v)
        versions[v] = expected(root)
    dest = root / "killpkg" / "kernels"
    env = {PAUSE_ENV: "0.03"}
    # How long a build that changes version takes, to the end: from the cache, and compiling
    # (every third kill is of a --no-cache build, to kill compiler workers too).
    durations: dict[str, list[float]] = {"-q": [], "--no-cache": []}
    for flag in durations:
        for v in ("A", "B", "A"):
            use_version(root, v)
            t0 = time.perf_counter()
            assert cli(root, "build", flag, env=env).returncode == 0
            durations[flag].append(time.perf_counter() - t0)
            assert state(dest) == versions[v]

    rng = random.Random(int(os.environ.get("HATCH_SLANG_KILL_SEED", "0")))
    landed = {"before writing": 0, "while writing": 0, "after writing": 0, "with compiler workers": 0}
    version = "B"
    kill = 0
    # KILLS kills at least; more (up to three times as many) until a quarter of KILLS have landed
    # while writing: on a loaded machine the random moments can miss that window by chance.
    while kill < KILLS or (landed["while writing"] < KILLS // 4 and kill < 3 * KILLS):
        before = state(dest)
        use_version(root, version)
        flag = "--no-cache" if kill % 3 == 2 else "-q"
        proc = subprocess.Popen(
            [str(HATCH_SLANG), "build", flag, "--root", str(root)],
            env={**os.environ, **env},
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        if flag == "--no-cache" and sys.platform.startswith("linux"):
            # Kill it while it compiles: once its workers exist, a little later.
            deadline = time.monotonic() + 5
            while not children(proc.pid) and proc.poll() is None and time.monotonic() < deadline:
                time.sleep(0.005)
            time.sleep(rng.uniform(0, 0.1))
        elif kill % 3 == 1:
            # Kill it while it writes, whatever the load: once its staging directory exists, within
            # the pause before its first file operation (random moments alone can miss the window).
            deadline = time.monotonic() + 10
            while (
                not list(dest.glob(f".hatch-slang-{proc.pid}*"))
                and proc.poll() is None
                and time.monotonic() < deadline
            ):
                time.sleep(0.001)
            time.sleep(rng.uniform(0, 0.02))
        else:
            time.sleep(rng.uniform(0.2, 1.1) * max(durations[flag][1:]))
        workers = children(proc.pid)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        landed["with compiler workers"] += bool(workers)
        left = wait_gone(workers, 5.0)
        assert not left, f"compiler workers {left} outlived the killed build"
        check_files(dest, versions)
        after = state(dest)
        clean = not list(dest.glob(".hatch-slang-*"))
        if after == before and clean:
            landed["before writing"] += 1
        elif after == versions[version] and clean:
            landed["after writing"] += 1
        else:
            landed["while writing"] += 1
        if kill % 4 == 3:
            # A build that runs to the end leaves exactly this version: no staging directory,
            # no file of the other version.
            assert cli(root, "build", "-q").returncode == 0
            assert not list(dest.glob(".hatch-slang-*"))
            assert {p.name: p.read_bytes() for p in dest.iterdir()} == versions[version]
        version = "A" if version == "B" else "B"
        kill += 1
    version = "A" if version == "B" else "B"  # the version of the last kill
    assert cli(root, "build", "-q").returncode == 0
    assert not list(dest.glob(".hatch-slang-*"))
    assert {p.name: p.read_bytes() for p in dest.iterdir()} == versions[version]
    print(f"{kill} kills: {landed}")
    assert landed["while writing"] >= KILLS // 4, landed  # the kills did land in the writing


def test_staging_directories_of_dead_builds_only_are_removed(tmp_path: Path) -> None:
    dead = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True
    )
    dest = tmp_path / "kernels"
    for owner in (int(dead.stdout), os.getpid()):
        (dest / f".hatch-slang-{owner}-x1y2").mkdir(parents=True)
        (dest / f".hatch-slang-{owner}-x1y2" / "half.py").write_text("# half")
    output = pipeline.BuildOutput(files={"py.typed": b""}, modules=(), kernels=0, warnings=(), compiler="")
    assert pipeline.write_output(output, dest) == ["py.typed"]
    assert sorted(p.name for p in dest.iterdir()) == [f".hatch-slang-{os.getpid()}-x1y2", "py.typed"]
