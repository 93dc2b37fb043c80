"""Put a build into a destination, or compare it with one: the writer and ``hatch-slang check``.

A build (:mod:`hatch_slang.builder.pipeline`) is held in memory; :func:`write_output` writes it all or
nothing, in an order that a build killed at any moment leaves a package the next one puts right,
and :func:`drift` says how a destination differs from it without writing. What a destination
holds from an earlier build is read off the manifest there (:func:`generated_files`).
"""

from __future__ import annotations

import difflib
import hashlib
import json
import os
import shutil
import tempfile
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, Protocol

from slangrt import manifest

from hatch_slang.codegen import wrappers as codegen

# Test seam: seconds to sleep before each file operation of write_output, so that tests can
# kill a build in the middle of writing (tests/scenarios/test_faults.py).
PAUSE_ENV = "HATCH_SLANG_TEST_WRITE_PAUSE"


class Output(Protocol):
    """A build's files (:class:`hatch_slang.builder.pipeline.BuildOutput`): path relative to the
    destination -> content."""

    @property
    def files(self) -> Mapping[str, bytes]: ...


def manifest_modules(dest: Path) -> list[tuple[str, manifest.Shader, list[str]]]:
    """(module, manifest entry, its files) for each shader in the manifest ``dest`` holds."""
    try:
        data = json.loads((dest / manifest.FILENAME).read_text(encoding="utf-8"))
        out: list[tuple[str, manifest.Shader, list[str]]] = []
        for module, entry in data["shaders"].items():
            names = [f"{module}.py"] + [e["spirv"] for e in entry["entries"].values()]
            if all(isinstance(n, str) and "/" not in n and n not in (".", "..") for n in names):
                out.append((module, entry, names))
        return out
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return []


def generated_files(dest: Path) -> set[str]:
    """The files in ``dest`` an earlier build wrote (according to its manifest), by name."""
    names = {n for _, _, files in manifest_modules(dest) for n in files}
    if names:
        names |= {manifest.FILENAME, "py.typed"}
    if codegen.is_generated_init(dest / "__init__.py"):
        names.add("__init__.py")
    return {n for n in names if (dest / n).is_file()}


def write_output(output: Output, dest: Path) -> list[str]:
    """Write the build into ``dest``; return the names of the files that changed, sorted.

    Unchanged files are not touched (a no-op build rewrites nothing). Changed files are first
    written into a staging directory beside their targets and then renamed into place, so a
    failed or interrupted build never leaves a half-written file; staging directories that
    killed builds left behind are removed by the next one. Files an earlier build wrote (per
    the manifest ``dest`` holds) that this build no longer produces are removed.

    The order makes a build killed at any point leave a package that the next build puts right:
    first a manifest that names the old files and the new ones (so none is forgotten), then the
    modules and SPIR-V, then the ``__init__`` that imports them (it never imports a module that
    is not there yet), then the removal of stale files, and last the new manifest.
    """
    previous = generated_files(dest) if dest.is_dir() else set()
    dest.mkdir(parents=True, exist_ok=True)
    _remove_dead_staging(dest)
    changed = []
    pause = float(os.environ.get(PAUSE_ENV) or 0)
    staging = Path(tempfile.mkdtemp(prefix=f"{_STAGING}{os.getpid()}-", dir=dest))
    try:
        for name, data in sorted(output.files.items()):
            target = dest / name
            if target.is_file() and target.read_bytes() == data:
                continue
            tmp = staging / name
            _pause(pause)
            tmp.write_bytes(data)
            os.chmod(tmp, 0o644)
            changed.append(name)
        stale = sorted(previous - set(output.files))
        new_manifest = manifest.FILENAME in changed
        transition = new_manifest and _manifest_with_old(dest, output.files[manifest.FILENAME])
        if transition:
            (staging / ".transition").write_bytes(transition)
            os.chmod(staging / ".transition", 0o644)
            _pause(pause)
            os.replace(staging / ".transition", dest / manifest.FILENAME)
        elif new_manifest:
            _pause(pause)
            os.replace(staging / manifest.FILENAME, dest / manifest.FILENAME)
        modules = [n for n in changed if n not in ("__init__.py", manifest.FILENAME)]
        for name in modules + [n for n in changed if n == "__init__.py"]:
            _pause(pause)
            os.replace(staging / name, dest / name)
        for name in stale:
            _pause(pause)
            (dest / name).unlink(missing_ok=True)
            changed.append(name)
        if transition:
            _pause(pause)
            os.replace(staging / manifest.FILENAME, dest / manifest.FILENAME)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return sorted(changed)


def _manifest_with_old(dest: Path, new: bytes) -> bytes:
    """The new manifest plus the old one's entries for the shaders it drops (empty: none dropped).

    Written while a build replaces files, so that the manifest on disk always names every
    generated file there, old or new, and a build that was killed leaves nothing unaccounted.
    """
    try:
        old = json.loads((dest / manifest.FILENAME).read_text(encoding="utf-8"))["shaders"]
        doc = json.loads(new)
        dropped = {m: e for m, e in old.items() if m not in doc["shaders"]}
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return b""
    if not dropped:
        return b""
    doc["shaders"] = {**doc["shaders"], **dropped}
    return manifest.dumps(doc).encode()


_STAGING = ".hatch-slang-"  # + the writing process's id: tells a live build's from a dead one's


def _pause(seconds: float) -> None:
    if seconds:
        time.sleep(seconds)


def _remove_dead_staging(dest: Path) -> None:
    """Remove the staging directories of builds that were killed while writing into ``dest``."""
    for path in dest.glob(f"{_STAGING}*"):
        if path.is_dir() and not _writer_alive(path):
            shutil.rmtree(path, ignore_errors=True)


def _writer_alive(staging: Path) -> bool:
    try:
        age = time.time() - staging.stat().st_mtime
    except OSError:
        return False
    pid = staging.name[len(_STAGING) :].split("-", 1)[0]
    if os.name != "posix" or not pid.isdigit():
        return age < 3600  # no cheap liveness test (os.kill(pid, 0) is not one on Windows)
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return False
    except OSError:
        pass  # another user's process: alive
    return age < 86400  # a live process of that id a day later is another process


@dataclass(frozen=True)
class Drift:
    """One way the files in a destination differ from what a build generates."""

    name: str  # relative to the destination
    kind: Literal["missing", "changed", "stale"]
    detail: str  # a unified diff for text, a summary for binary files


def drift(output: Output, dest: Path, *, label: str = "") -> list[Drift]:
    """Compare ``output`` with ``dest`` without writing anything; empty when ``dest`` is current.

    ``label`` prefixes the file names shown in diffs (say, the destination relative to the root).
    """
    out: list[Drift] = []
    prefix = f"{label.rstrip('/')}/" if label else ""
    for name, want in sorted(output.files.items()):
        target = dest / name
        if not target.is_file():
            out.append(Drift(name, "missing", f"{prefix}{name}: missing"))
            continue
        have = target.read_bytes()
        if have != want:
            out.append(Drift(name, "changed", _diff(prefix + name, have, want)))
    if dest.is_dir():
        for name in sorted(generated_files(dest) - set(output.files)):
            out.append(Drift(name, "stale", f"{prefix}{name}: generated by an earlier build, no longer"))
    return out


def _diff(name: str, have: bytes, want: bytes) -> str:
    try:
        a, b = have.decode("utf-8"), want.decode("utf-8")
    except UnicodeDecodeError:
        old, new = hashlib.sha256(have).hexdigest()[:12], hashlib.sha256(want).hexdigest()[:12]
        return (
            f"{name}: binary file differs ({len(have)} bytes, sha256 {old}... -> {len(want)} bytes, {new}...)"
        )
    lines = difflib.unified_diff(
        a.splitlines(keepends=True), b.splitlines(keepends=True), f"{name} (on disk)", f"{name} (generated)"
    )
    return "".join(
        line if line.endswith("\n") else line + "\n\\ No newline at end of file\n" for line in lines
    )
