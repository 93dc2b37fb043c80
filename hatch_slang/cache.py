"""The incremental build cache: one shader's compile result, valid while nothing it read changed.

Compiling is the slow step of a build (tens of milliseconds per entry point, plus the compiler's
session start in each worker). An entry also keeps what the pipeline generated from the result,
under a key of the pipeline's choosing, so that a build of unchanged shaders does not even parse
their comments; changing the templates or hatch-slang regenerates without recompiling.

An entry sits in a slot named by what the result cannot be checked against afterwards: the
shader's path (relative to the project root), the compiler (:func:`compiler_fingerprint`), the
compile options and this module's format. It is used only when the shader's content, its entry
points and the content of every file the compiler read for it (``CompileResult.dependencies``:
includes and imported modules) are what they were. A slot holds one entry; a new compile of the
same shader replaces it, so the cache stays the size of the project.

Where: outside the source tree, in the user's cache directory (:func:`user_cache_dir`:
``$XDG_CACHE_HOME/hatch-slang`` or ``~/.cache/hatch-slang`` on Linux, ``~/Library/Caches/hatch-slang``
on macOS, ``%LOCALAPPDATA%\\hatch-slang\\Cache`` on Windows), or under ``$HATCH_SLANG_CACHE_DIR``; in
either, one subdirectory per project, named after the project (:func:`project_key`), so that
projects do not evict each other's entries. Entries carry no absolute paths, so checkouts of one
project (and the temporary unpacked sdist of ``python -m build``) share theirs. Deleting it is
always safe. A damaged or foreign entry reads as a miss; writes are atomic, so concurrent builds
are safe. Entries are pickles: the cache directory is trusted as the user's home is.
"""

from __future__ import annotations

import hashlib
import os
import pickle
import re
import sys
import tempfile
import time
import tomllib
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol

from hatch_slang import __version__
from hatch_slang.compiler import CompiledEntry, CompileOptions, CompileResult
from hatch_slang.discover import Shader

FORMAT = 1
ENV = "HATCH_SLANG_CACHE_DIR"
_IGNORE = "# Created by hatch-slang: a build cache, safe to delete.\n*\n"
_TAG = "Signature: 8a477f597d28d172789f06886806bc55\n# The build cache of hatch-slang.\n"


APP = "hatch-slang"


def user_cache_dir() -> Path:
    """hatch-slang's directory in the user's cache, by each platform's convention."""
    try:
        home = Path.home()
    except RuntimeError:  # no HOME and no password entry: a bare container, say
        return Path(tempfile.gettempdir()) / f"{APP}-cache-{os.getuid() if hasattr(os, 'getuid') else 0}"
    if sys.platform == "win32":
        local = os.environ.get("LOCALAPPDATA", "").strip()
        return (Path(local) if local else home / "AppData" / "Local") / APP / "Cache"
    if sys.platform == "darwin":
        return home / "Library" / "Caches" / APP
    xdg = os.environ.get("XDG_CACHE_HOME", "").strip()
    # The XDG spec: a relative path is invalid and must be ignored.
    return (Path(xdg) if xdg and Path(xdg).is_absolute() else home / ".cache") / APP


def project_key(root: Path) -> str:
    """The name of a project's directory in the cache: its normalized ``[project] name``.

    Checkouts of one project (and its unpacked sdists) share a directory, whatever their path;
    a project whose name cannot be read gets its directory's name and a hash of its path.
    """
    try:
        data = tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8"))
        name = data["project"]["name"]
    except (OSError, ValueError, KeyError, TypeError, UnicodeDecodeError):
        name = None
    if isinstance(name, str):
        key = re.sub(r"[^a-z0-9-]", "", re.sub(r"[-_.]+", "-", name).lower()).strip("-")
        if key:
            return key
    real = root.resolve()
    stem = re.sub(r"[^A-Za-z0-9_-]", "_", real.name)[:40] or "project"
    return f"{stem}-{_sha256(str(real).encode())[:12]}"


def default_cache_dir(root: Path) -> Path:
    """Where a project's build cache lives: ``$HATCH_SLANG_CACHE_DIR`` (else the user's cache
    directory, :func:`user_cache_dir`), then the project's own subdirectory (:func:`project_key`).
    Never inside the source tree unless ``$HATCH_SLANG_CACHE_DIR`` points there."""
    env = os.environ.get(ENV, "").strip()
    base = Path(env).expanduser().resolve() if env else user_cache_dir()
    return base / project_key(root)


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


class _Stamped(Protocol):
    """A shader as the cache knows it (a discovered :class:`Source` or a parsed :class:`Shader`)."""

    @property
    def path(self) -> Path: ...
    @property
    def rel(self) -> str: ...
    @property
    def sha256(self) -> str: ...


class BuildCache:
    """Compile results of one project's shaders, for one compiler and one set of options.

    Beside a compile result an entry may hold what the rest of the pipeline made of it (the
    generated files), under a key the pipeline chooses (its own code, the templates, strictness):
    a build in which nothing changed then neither compiles nor parses nor generates anything.
    """

    def __init__(
        self,
        directory: Path,
        root: Path,
        compiler: str,
        options: CompileOptions,
        options_for: Callable[[Path], CompileOptions] | None = None,
    ) -> None:
        """``options`` are the compile options of every shader, unless ``options_for`` (given a
        shader's path) says otherwise for some (per-shader overrides)."""
        self.directory = directory
        self.root = root.resolve()
        # What every slot of this build shares. The driver's own source is in it, so a change to
        # how hatch-slang calls Slang (flags, entry handling) never reuses results made before.
        driver = Path(__file__).with_name("compiler.py").read_bytes()
        self._base = (FORMAT, __version__, _sha256(driver), compiler)
        self._options = options
        self._options_for = options_for
        self._commons: dict[Path, str] = {}
        self._hashes: dict[Path, str | None] = {}
        self._entries: dict[str, dict[str, Any] | None] = {}

    def _common(self, shader: _Stamped) -> str:
        """What a shader's entry must have been made with: the compiler, the driver, its options."""
        if shader.path not in self._commons:
            options = self._options_for(shader.path) if self._options_for else self._options
            self._commons[shader.path] = repr((*self._base, self._portable_options(options)))
        return self._commons[shader.path]

    def _portable_options(self, options: CompileOptions) -> tuple[object, ...]:
        dirs = tuple(self._portable(Path(d)) for d in options.include_dirs)
        return (dirs, options.defines, options.optimization, options.compiler_args)

    def _portable(self, path: Path) -> str:
        """A path as the cache records it: relative to the root when inside it."""
        return path.relative_to(self.root).as_posix() if path.is_relative_to(self.root) else str(path)

    def _slot(self, shader: _Stamped) -> Path:
        key = _sha256(repr((self._common(shader), shader.rel)).encode())
        return self.directory / key[:2] / f"{key[2:]}.pickle"

    def _hash(self, path: Path) -> str | None:
        """The content hash of a file, once per build; None when it cannot be read."""
        if path not in self._hashes:
            try:
                self._hashes[path] = _sha256(path.read_bytes())
            except OSError:
                self._hashes[path] = None
        return self._hashes[path]

    def _entry(self, shader: _Stamped) -> dict[str, Any] | None:
        """The shader's entry if it is still valid: same content, same content of all it read."""
        if shader.rel not in self._entries:
            self._hashes.setdefault(shader.path, shader.sha256)
            self._entries[shader.rel] = self._read(shader)
        return self._entries[shader.rel]

    def _read(self, shader: _Stamped) -> dict[str, Any] | None:
        try:
            entry: dict[str, Any] = pickle.loads(self._slot(shader).read_bytes())
            if entry["common"] != self._common(shader) or entry["sha256"] != shader.sha256:
                return None
            if any(self._hash(self.root / rel) != digest for rel, digest in entry["dependencies"]):
                return None
            return entry
        except Exception:  # missing, damaged, truncated or foreign: a miss, never a failed build
            return None

    def lookup(self, shader: Shader) -> CompileResult | None:
        """The cached compile result, or None when there is none or anything it read changed."""
        entry = self._entry(shader)
        if entry is None or tuple(entry["entries"]) != shader.entries:
            return None
        return CompileResult(
            path=shader.rel,
            entries=tuple(CompiledEntry(n, spirv, refl) for n, spirv, refl in entry["compiled"]),
            dependencies=tuple(str(self.root / rel) for rel, _ in entry["dependencies"]),
            warnings=entry["warnings"],
            compiler=entry["compiler"],
        )

    def output(self, shader: _Stamped, key: str) -> Any:
        """What :meth:`store_output` stored under ``key`` for a still valid entry, else None."""
        entry = self._entry(shader)
        if entry is None or entry.get("output") is None or entry["output"][0] != key:
            return None
        return entry["output"][1]

    def store(self, shader: Shader, result: CompileResult) -> None:
        """Remember a successful compile. Failures are not cached: the next build reports them afresh."""
        self._entries.pop(shader.rel, None)
        if result.error is not None or not result.entries:
            return
        try:
            if _sha256(shader.path.read_bytes()) != shader.sha256:
                return  # edited while it compiled: the result may be of either version
        except OSError:
            return
        deps: list[tuple[str, str]] = []
        for dep in result.dependencies:
            path = (self.root / dep).resolve()
            digest = self._hash(path)
            if digest is None:
                return  # something it read is gone already: do not vouch for this result
            deps.append((self._portable(path), digest))
        if shader.path not in {self.root / rel for rel, _ in deps}:
            deps.append((shader.rel, shader.sha256))
        entry = {
            "common": self._common(shader),
            "sha256": shader.sha256,
            "entries": list(shader.entries),
            "dependencies": deps,
            "compiled": [(e.name, e.spirv, e.reflection) for e in result.entries],
            "warnings": result.warnings,
            "compiler": result.compiler,
            "output": None,
        }
        self._entries[shader.rel] = entry
        self._write(self._slot(shader), entry)

    def store_output(self, shader: _Stamped, key: str, value: Any) -> None:
        """Keep ``value`` (plain data: dicts, lists, str, bytes...) with the shader's entry."""
        entry = self._entry(shader)
        if entry is not None:
            entry["output"] = (key, value)
            self._write(self._slot(shader), entry)

    def _write(self, path: Path, entry: dict[str, Any]) -> None:
        data = pickle.dumps(entry, protocol=pickle.HIGHEST_PROTOCOL)
        try:
            if not self.directory.is_dir():
                self.directory.mkdir(parents=True, exist_ok=True)
                (self.directory / ".gitignore").write_text(_IGNORE)
                (self.directory / "CACHEDIR.TAG").write_text(_TAG)
            path.parent.mkdir(exist_ok=True)
            _sweep(path.parent)
            fd, tmp = tempfile.mkstemp(prefix=".tmp-", dir=path.parent)
            try:
                with os.fdopen(fd, "wb") as f:
                    f.write(data)
                os.replace(tmp, path)
            except BaseException:
                Path(tmp).unlink(missing_ok=True)
                raise
        except OSError:
            pass  # a cache that cannot be written (read-only tree, full disk) only costs speed


STALE_TMP_SECONDS = 3600.0


def _sweep(directory: Path) -> None:
    """Remove temporary files of writes that never finished (a build killed mid-write).

    Only files older than an hour: a younger one may belong to a build running right now.
    """
    cutoff = time.time() - STALE_TMP_SECONDS
    for tmp in directory.glob(".tmp-*"):
        try:
            if tmp.stat().st_mtime < cutoff:
                tmp.unlink()
        except OSError:
            pass  # gone already, or not ours to remove
