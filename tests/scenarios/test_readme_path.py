"""The README's "Your first kernel" path, run as written.

The README marks its shell blocks with HTML comments: ``<!-- readme-path: wheelhouse ... -->``
before the block that builds the wheelhouse (run in this repository's root) and
``<!-- readme-path: first kernel -->`` before each block of the walk-through (run, in order, in a
new directory). They run in one bash script with ``set -e``, in a temporary ``$HOME`` whose
wheelhouse already holds wheels of everything but hatch-slang (repacked from this environment:
see tests/wheelhouse.py) and with ``PIP_NO_INDEX`` set: no network, and hatch-slang itself comes
from the wheels the README's own commands build, in a copy of this checkout.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from ..helpers import REPO, requires_device
from ..wheelhouse import deps_wheelhouse, offline_env

README = REPO / "README.md"
# Not copied with the checkout: environments, caches, build outputs, generated kernels.
SKIP = [".git", ".venv", "build", "dist", "kernels", "__pycache__", ".*_cache", ".hypothesis", "*.egg-info"]
MARK = re.compile(
    r"^<!-- readme-path: (?P<kind>[\w ]+?)(?: \(.*\))? -->\n+```sh\n(?P<body>.*?)^```$", re.M | re.S
)


def blocks(kind: str) -> list[str]:
    return [m["body"] for m in MARK.finditer(README.read_text(encoding="utf-8")) if m["kind"] == kind]


def section(heading: str) -> str:
    text = README.read_text(encoding="utf-8")
    start = text.index(f"\n## {heading}\n")
    end = text.find("\n## ", start + 1)
    return text[start : end if end >= 0 else None]


def test_the_path_is_marked_under_your_first_kernel() -> None:
    first = section("Your first kernel")
    assert len(blocks("wheelhouse")) == 1
    assert len(blocks("first kernel")) >= 2
    for body in blocks("wheelhouse") + blocks("first kernel"):
        assert body in first  # every marked block is in the walk-through, not elsewhere
    script = "".join(blocks("first kernel"))
    for step in ["hatch-slang init", "pip install -e '.[dev]'", "hatch-slang validate", "pytest"]:
        assert step in script
    # The wheelhouse is where installers are told to look, for every front end.
    [wheelhouse] = blocks("wheelhouse")
    assert 'PIP_FIND_LINKS="$HOME/wheelhouse"' in wheelhouse
    assert 'UV_FIND_LINKS="$HOME/wheelhouse"' in wheelhouse


@pytest.mark.integration
@pytest.mark.slow
@requires_device
def test_readme_first_kernel_path_runs_as_written(tmp_path: Path) -> None:
    home = tmp_path / "home"
    wheelhouse = deps_wheelhouse(home / "wheelhouse")
    assert not list(wheelhouse.glob("hatch_slang*"))  # those come from the README's commands
    work = tmp_path / "work"
    work.mkdir()
    # The wheelhouse block runs in a copy of this checkout's sources (it makes a .venv there).
    checkout = tmp_path / "hatch-slang"
    shutil.copytree(REPO, checkout, ignore=shutil.ignore_patterns(*SKIP))
    # `python3` is this interpreter's base Python (not a venv; whatever pyenv would pick).
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "python3").symlink_to(getattr(sys, "_base_executable", sys.executable))
    env = offline_env(wheelhouse, HOME=str(home), PATH=f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    script = "\n".join(
        [
            "set -euxo pipefail",
            *blocks("wheelhouse"),
            f"cd {work}",
            *blocks("first kernel"),
        ]
    )
    done = subprocess.run(
        ["bash", "-c", script], cwd=checkout, env=env, capture_output=True, text=True, timeout=1200
    )
    log = done.stdout + done.stderr
    assert done.returncode == 0, log
    assert {p.name.split("-")[0] for p in wheelhouse.glob("hatch_slang*.whl")} == {
        "hatch_slang",
        "hatch_slang_runtime",
    }
    project = work / "mykernels"
    assert (project / "shaders" / "saxpy.slang").is_file()
    assert (project / "mykernels" / "kernels" / "saxpy.py").is_file()
    assert "5/5 ok" in done.stdout, log
    assert re.search(r"\b6 passed", done.stdout), log
