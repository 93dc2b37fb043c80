"""An offline wheelhouse for tests that install projects the way a user does, with no index.

It holds the hatch-slang and hatch-slang-runtime wheels built from this checkout and, for
everything they, the build backend and pytest need (hatchling, slangpy, click, numpy, vulkan,
cffi... and their dependencies), wheels repacked from the distributions installed in the test
environment: exactly the files each one installed, with its own metadata and wheel tags. With
``PIP_NO_INDEX=1`` and ``PIP_FIND_LINKS`` (or ``UV_FIND_LINKS``) pointing at it, pip, build and
uv install from it in isolated build environments and fresh venvs without reaching a network.
"""

from __future__ import annotations

import base64
import hashlib
import os
import re
import subprocess
import sys
import zipfile
from importlib import metadata
from pathlib import Path

from packaging.markers import default_environment
from packaging.requirements import Requirement

from .helpers import REPO

# What a user's project, its isolated builds and the README's commands install, besides
# hatch-slang and its runtime (whose own requirements are followed too).
ROOTS = ["hatchling", "slangpy", "click", "numpy", "vulkan", "pytest", "editables"]

_BUILT: dict[Path, Path] = {}


def _normalize(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _closure(roots: list[str]) -> list[metadata.Distribution]:
    env = {**default_environment(), "extra": ""}
    seen: dict[str, metadata.Distribution] = {}
    todo = list(roots)
    while todo:
        name = _normalize(todo.pop())
        if name in seen or name in {"hatch-slang", "hatch-slang-runtime"}:
            continue
        try:
            dist = metadata.distribution(name)
        except metadata.PackageNotFoundError:
            continue  # an optional dependency this environment lacks: the wheelhouse will too
        seen[name] = dist
        for text in dist.requires or []:
            req = Requirement(text)
            if req.marker is None or req.marker.evaluate(env):
                todo.append(req.name)
    return list(seen.values())


def _record_line(arcname: str, data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{arcname},sha256={digest},{len(data)}"


def repack(dist: metadata.Distribution, out: Path) -> Path:
    """A wheel of an installed distribution: its files (scripts left to pip to regenerate)."""
    site = Path(str(dist.locate_file("")))
    info = site / next(f for f in dist.files or [] if f.name == "METADATA").parent
    wheel_meta = (info / "WHEEL").read_text()
    tags = re.findall(r"^Tag: (\S+)$", wheel_meta, re.M)
    pys, abis, plats = (sorted({t.split("-")[i] for t in tags}) for i in range(3))
    tag = "-".join(".".join(x) for x in (pys, abis, plats))
    name = re.sub(r"[-_.]+", "_", dist.metadata["Name"])
    wheel = out / f"{name}-{dist.version}-{tag}.whl"
    skip = {"RECORD", "INSTALLER", "REQUESTED", "direct_url.json"}
    record = []
    with zipfile.ZipFile(wheel, "w", zipfile.ZIP_STORED) as zf:
        for file in dist.files or []:
            arcname = file.as_posix()
            if arcname.startswith("..") or "__pycache__" in arcname or arcname.endswith(".pyc"):
                continue  # console scripts (pip writes them from entry_points.txt), bytecode
            if arcname.startswith(info.name + "/") and arcname.split("/", 1)[1] in skip:
                continue
            path = site / file
            if not path.is_file():
                continue
            data = path.read_bytes()
            zf.writestr(zipfile.ZipInfo(arcname, (2000, 1, 1, 0, 0, 0)), data)
            record.append(_record_line(arcname, data))
        record.append(f"{info.name}/RECORD,,")
        zf.writestr(f"{info.name}/RECORD", "\n".join(record) + "\n")
    return wheel


def build_wheelhouse(out: Path) -> Path:
    """Fill ``out`` with this checkout's two wheels and repacked wheels of all they need."""
    deps_wheelhouse(out)
    pip = [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-w", str(out)]
    ours = subprocess.run(
        [*pip, str(REPO), str(REPO / "runtime")],
        capture_output=True,
        text=True,
        timeout=900,
        env=offline_env(out),
    )
    assert ours.returncode == 0, ours.stdout + ours.stderr
    return out


def _requirements(name: str) -> list[str]:
    """What installing ``name`` (no extras) brings along."""
    env = {**default_environment(), "extra": ""}
    reqs = [Requirement(r) for r in metadata.distribution(name).requires or []]
    return [r.name for r in reqs if r.marker is None or r.marker.evaluate(env)]


def deps_wheelhouse(out: Path) -> Path:
    """Only the repacked dependencies (for a test that builds hatch-slang's wheels itself)."""
    out.mkdir(parents=True, exist_ok=True)
    for dist in _closure([*ROOTS, *_requirements("hatch-slang"), *_requirements("hatch-slang-runtime")]):
        repack(dist, out)
    return out


def shared_wheelhouse(base: Path) -> Path:
    """:func:`build_wheelhouse` once per test session (``base``: the session's temp root)."""
    if base not in _BUILT:
        _BUILT[base] = build_wheelhouse(base / "wheelhouse-offline")
    return _BUILT[base]


def offline_env(wheelhouse: Path, **extra: str) -> dict[str, str]:
    """The environment for installers that may use ``wheelhouse`` and nothing else."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("PIP_", "UV_", "VIRTUAL_ENV", "PYTHONPATH", "HATCH_SLANG_CACHE_DIR"))
    }
    env.update(
        PIP_NO_INDEX="1",
        PIP_FIND_LINKS=str(wheelhouse),
        PIP_CONFIG_FILE=os.devnull,  # no machine-wide find-links or extra index
        PIP_DISABLE_PIP_VERSION_CHECK="1",
        PIP_NO_CACHE_DIR="1",
        UV_OFFLINE="1",
        UV_NO_INDEX="1",
        UV_FIND_LINKS=str(wheelhouse),
        UV_NO_CONFIG="1",
    )
    env.update(extra)
    return env
