"""Progress while shaders compile: a bar on a terminal (CLI), a line per shader in the hook's
output (`pip wheel -v`); and a wheel build writes nothing into the source tree (the build cache
lives in the user's cache directory)."""

from __future__ import annotations

import io
import os
import pty
import select
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace

import pytest

from hatch_slang.cli.commands import BAR_MIN, _Bar
from hatch_slang.compile.cache import default_cache_dir

HATCH_SLANG = Path(sys.executable).parent / "hatch-slang"


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def _shaders(n: int) -> list[SimpleNamespace]:
    return [SimpleNamespace(rel=f"shaders/k{i}.slang") for i in range(n)]


def _drive(bar: _Bar, total: int, cached: int = 0) -> None:
    bar.start(total, cached)
    for shader in _shaders(total):
        bar.advance(shader)  # type: ignore[arg-type]
    bar.close()


def test_the_bar_shows_on_a_terminal_and_names_the_shader() -> None:
    out = _Terminal()
    _drive(_Bar(quiet=False, verbose=False, stream=out), 5)
    text = out.getvalue()
    assert "compiling 5 shaders" in text and "100%" in text
    assert "shaders/k4.slang" in text  # the shader that just finished
    assert text.count("\r") >= 5  # redrawn in place as shaders finish


@pytest.mark.parametrize(
    ("stream", "total", "quiet"),
    [(io.StringIO(), 10, False), (_Terminal(), BAR_MIN - 1, False), (_Terminal(), 10, True)],
    ids=["not-a-terminal", "too-few", "quiet"],
)
def test_no_bar_off_a_terminal_for_few_shaders_or_when_quiet(
    stream: io.StringIO, total: int, quiet: bool
) -> None:
    _drive(_Bar(quiet=quiet, verbose=False, stream=stream), total)
    assert stream.getvalue() == ""


def test_verbose_lists_every_shader_instead_of_a_bar() -> None:
    out = _Terminal()
    _drive(_Bar(quiet=False, verbose=True, stream=out), 4, cached=2)
    lines = out.getvalue().splitlines()
    assert lines[0] == "2 shader(s) unchanged since they were last compiled (from the build cache)"
    assert lines[1] == "compiling 4 shader(s)"
    assert lines[2:] == [f"  compiled shaders/k{i}.slang" for i in range(4)]
    assert "%" not in out.getvalue()


def _run_on_a_terminal(args: list[str], timeout: float = 300) -> tuple[int, str]:
    """Run a command with stderr on a pseudo-terminal; its exit code and what the terminal got."""
    master, slave = pty.openpty()
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=slave, stdin=subprocess.DEVNULL)
    os.close(slave)
    chunks: list[bytes] = []
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([master], [], [], 0.2)
            if ready:
                try:
                    data = os.read(master, 65536)
                except OSError:  # EIO: the last writer closed its end
                    break
                if not data:
                    break
                chunks.append(data)
            elif proc.poll() is not None:
                break
        proc.wait(timeout=max(1.0, deadline - time.monotonic()))
        assert proc.stdout is not None
        proc.stdout.read()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        os.close(master)
    return proc.returncode, b"".join(chunks).decode("utf-8", "replace")


@pytest.mark.compile
def test_the_cli_draws_the_bar_on_a_real_terminal(package: Callable[[str], Path]) -> None:
    root = package("multipkg")  # 3 shaders: just enough for a bar
    code, terminal = _run_on_a_terminal([str(HATCH_SLANG), "build", "--root", str(root), "--no-cache"])
    assert code == 0, terminal
    assert "compiling 3 shaders" in terminal and "100%" in terminal, terminal
    done = subprocess.run(
        [HATCH_SLANG, "build", "--root", root, "--no-cache"], capture_output=True, text=True, check=True
    )
    assert "compiling" not in done.stderr and "%" not in done.stderr  # not a terminal: no bar


@pytest.mark.compile
@pytest.mark.integration
def test_a_verbose_wheel_build_lists_each_shader_and_leaves_the_tree_clean(
    package: Callable[[str], Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("HATCH_SLANG_CACHE_DIR", raising=False)  # the default place: the user's cache
    root = package("multipkg")
    before = sorted(p.relative_to(root) for p in root.rglob("*"))
    done = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "-v", "--no-deps", "--no-build-isolation",
         "--disable-pip-version-check", "-w", tmp_path / "dist", root],
        capture_output=True, text=True, timeout=900,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    output = done.stdout + done.stderr
    assert "hatch-slang: compiling 3 shader(s), 0 unchanged" in output, output
    lines = [line for line in output.splitlines() if "hatch-slang: [" in line]
    assert len(lines) == 3, output
    assert [line.split("]")[0].split("[")[1] for line in lines] == ["1/3", "2/3", "3/3"]
    assert {line.split("] ")[1].split(" (")[0] for line in lines} == {
        "shaders/offset.slang",
        "shaders/scale.slang",
        "shaders/square.slang",
    }
    # Nothing written into the source tree: no build/, no generated package.
    assert sorted(p.relative_to(root) for p in root.rglob("*")) == before
    assert not (root / "build").exists()
    cache = default_cache_dir(root)
    assert cache.name == "multipkg" and len(list(cache.rglob("*.json"))) == 3
    assert not cache.is_relative_to(root)
