"""The incremental build cache: one shader's compile result, valid while nothing it read changed.

Compiling is the slow step of a build (tens of milliseconds per entry point, plus the compiler's
session start in each worker). The cache keeps compile results only: the SPIR-V and reflection of
each entry point, the files the compiler read, its warnings and build tag. Everything made from
them (the comment's parse, the checks against reflection and SPIR-V, the generated wrappers and
manifest) is made afresh by every build: cheap, and what reaches the built package is then never
more than what a fresh compile could have given.

An entry sits in a slot named by its key: what the result cannot be checked against afterwards,
the shader's path (relative to the project root), the compiler (:func:`compiler_fingerprint`),
the compile options (of link-time constants, the values of those the shader declares),
hatch-slang's version, the driver's source and this module's format. It is used only when the
shader's content, its entry points and the content of every file the compiler read for it
(``CompileResult.dependencies``: includes and imported modules) are what they were, and while no
file has appeared where the compiler would have found it before one of those (the same relative
path in the shader's directory, an including file's or an include directory). A slot holds one
entry; a new compile of the same shader replaces it, so the cache stays the size
of the project.

An entry is plain data: a JSON object (:func:`encode_entry`) holding its own key, the format
version, the SPIR-V in base64 with its sha256, the reflection JSON text and the dependency list
with content hashes. Nothing in it is executed; reading it (:func:`decode_entry`) checks every
field's type and size, and a file that is no such entry, or one made for another slot, is a miss.
What a valid entry gives is then checked by the pipeline exactly as a fresh compile's result is;
a result those checks reject is a miss too (:meth:`BuildCache.discard`), compiled afresh. Whoever
can write the cache directory can therefore make a build slower, never run code in it, and never
get into a package anything but SPIR-V and reflection that pass a fresh compile's checks; that
includes SPIR-V which passes them and computes something else, so a cache is shared only among
those trusted to change the kernels (never to run code: that a cache cannot do).

Where: outside the source tree, in the user's cache directory (:func:`user_cache_dir`:
``$XDG_CACHE_HOME/hatch-slang`` or ``~/.cache/hatch-slang`` on Linux, ``~/Library/Caches/hatch-slang``
on macOS, ``%LOCALAPPDATA%\\hatch-slang\\Cache`` on Windows), or under ``$HATCH_SLANG_CACHE_DIR``; in
either, one subdirectory per project, named after the project (:func:`project_key`), so that
projects do not evict each other's entries. Entries carry no absolute paths, so checkouts of one
project (and the temporary unpacked sdist of ``python -m build``) share theirs. Deleting it is
always safe. Writes are atomic (a temporary file, then a rename), so concurrent builds are safe
and a build killed mid-write leaves a miss.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import hashlib
import json
import os
import re
import sys
import tempfile
import time
import tomllib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from slangrt import files

from hatch_slang import __version__
from hatch_slang.comments.contract import instance_key, split_arguments
from hatch_slang.compile.compiler import CompiledEntry, CompileOptions, CompileResult
from hatch_slang.compile.constants import externs
from hatch_slang.compile.discover import Shader

FORMAT = 2  # 1: pickles (never read: a pickle can run code)
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


def code_digest(package: Path | None = None) -> str:
    """The sha256 of hatch_slang's source: every ``.py`` file of the package, in every subpackage
    (``rglob``: a module moved into a folder still counts), by path and content. The package's
    ``kernels/`` folder (this repository's own built kernels) is not code of the build."""
    package = package or Path(__file__).resolve().parents[1]
    digest = hashlib.sha256()
    for path in sorted(package.rglob("*.py")):
        rel = path.relative_to(package)
        if rel.parts[0] != "kernels":
            digest.update(rel.as_posix().encode() + b"\0" + _sha256(path.read_bytes()).encode())
    return digest.hexdigest()


# What a file may be to be read at all: an entry, or a file an entry says the compiler read.
MAX_ENTRY_BYTES = 256 << 20
MAX_SOURCE_BYTES = 64 << 20


def read_regular(path: Path, limit: int, *, follow: bool = True) -> bytes | None:
    """A regular file's content, or None: missing, unreadable, over ``limit`` bytes, or no
    regular file (a FIFO or a device: opened without blocking, and never read)."""
    try:
        return files.read_regular(path, limit, follow=follow)
    except (OSError, ValueError):  # ValueError: a NUL in the path
        return None


@dataclass(frozen=True)
class Entry:
    """One slot's content: a compile result and what it was made from."""

    key: str  # the slot's key (:meth:`BuildCache.key`): an entry copied to another slot is a miss
    path: str  # the shader, relative to the root
    sha256: str  # the shader's content
    entries: tuple[str, ...]  # its entry points, in order, an instance as asked for (`gscale<float>`)
    dependencies: tuple[tuple[str, str], ...]  # (portable path, sha256) of every file read
    absent: tuple[str, ...]  # portable paths that would shadow a file read, had they existed
    compiled: tuple[CompiledEntry, ...]  # one per entry point, in order
    warnings: str
    compiler: str


# Bounds on what an entry's fields may hold (characters or items), far above any real compile's.
_MAX_TEXT = 64 << 20
_MAX_NAME = 4096
_MAX_ITEMS = 65536
_HEX = re.compile(r"[0-9a-f]{64}")
_FIELDS = (
    *("format", "key", "path", "sha256", "entries", "dependencies", "absent", "compiled"),
    *("warnings", "compiler"),
)
_COMPILED_FIELDS = ("name", "spirv", "spirv_sha256", "reflection")


def encode_entry(entry: Entry) -> bytes:
    """An entry as the JSON object it is stored as."""
    compiled = [
        {
            "name": c.name,
            "spirv": base64.b64encode(c.spirv).decode("ascii"),
            "spirv_sha256": _sha256(c.spirv),
            "reflection": c.reflection,
        }
        for c in entry.compiled
    ]
    data = {
        "format": FORMAT,
        "key": entry.key,
        "path": entry.path,
        "sha256": entry.sha256,
        "entries": list(entry.entries),
        "dependencies": [list(d) for d in entry.dependencies],
        "absent": list(entry.absent),
        "compiled": compiled,
        "warnings": entry.warnings,
        "compiler": entry.compiler,
    }
    return json.dumps(data, ensure_ascii=True, separators=(",", ":")).encode("ascii")


class _Invalid(ValueError):
    """What is read is no entry of this format."""


def _text(value: object, limit: int, *, empty: bool = True) -> str:
    """A string a fresh compile could give: bounded, valid Unicode (no lone surrogates), no NUL."""
    if not isinstance(value, str) or len(value) > limit or (not empty and not value) or "\0" in value:
        raise _Invalid
    value.encode("utf-8")  # UnicodeEncodeError (a ValueError) on a lone surrogate
    return value


def _digest(value: object) -> str:
    if not isinstance(value, str) or not _HEX.fullmatch(value):
        raise _Invalid
    return value


def _items(value: object) -> list[Any]:
    if not isinstance(value, list) or len(value) > _MAX_ITEMS:
        raise _Invalid
    return value


def _fields(value: object, names: tuple[str, ...]) -> dict[str, Any]:
    if not isinstance(value, dict) or tuple(sorted(value)) != tuple(sorted(names)):
        raise _Invalid
    return value


def _compiled(value: object) -> CompiledEntry:
    data = _fields(value, _COMPILED_FIELDS)
    spirv = base64.b64decode(_text(data["spirv"], _MAX_TEXT, empty=False), validate=True)
    if len(spirv) % 4 or _sha256(spirv) != _digest(data["spirv_sha256"]):
        raise _Invalid
    name = _text(data["name"], _MAX_NAME, empty=False)
    return CompiledEntry(name, spirv, _text(data["reflection"], _MAX_TEXT))


def _dependency(value: object) -> tuple[str, str]:
    pair = _items(value)
    if len(pair) != 2:
        raise _Invalid
    return _text(pair[0], _MAX_NAME, empty=False), _digest(pair[1])


def _no_constants(name: str) -> object:
    raise _Invalid  # NaN, Infinity: no JSON, and nothing an entry holds


def decode_entry(data: bytes) -> Entry | None:
    """The entry ``data`` holds, every field checked for type and size; None when it is anything
    else (another format, damaged, truncated, foreign). Data only: nothing in it is executed."""
    try:
        raw = _fields(json.loads(data.decode("utf-8"), parse_constant=_no_constants), _FIELDS)
        if type(raw["format"]) is not int or raw["format"] != FORMAT:
            return None
        entry = Entry(
            key=_digest(raw["key"]),
            path=_text(raw["path"], _MAX_NAME, empty=False),
            sha256=_digest(raw["sha256"]),
            entries=tuple(_text(e, _MAX_NAME, empty=False) for e in _items(raw["entries"])),
            dependencies=tuple(_dependency(d) for d in _items(raw["dependencies"])),
            absent=tuple(_text(a, _MAX_NAME, empty=False) for a in _items(raw["absent"])),
            compiled=tuple(_compiled(c) for c in _items(raw["compiled"])),
            warnings=_text(raw["warnings"], _MAX_TEXT),
            compiler=_text(raw["compiler"], _MAX_NAME),
        )
    except (ValueError, RecursionError, binascii.Error):  # JSONDecodeError, UnicodeError: ValueErrors
        return None
    if tuple(c.name for c in entry.compiled) != tuple(map(_entry_of, entry.entries)) or not entry.entries:
        return None
    return entry


def _entry_of(asked: str) -> str | None:
    """The entry a compile asked for ``asked`` yields: itself, or an instance's key."""
    generic, bracket, inner = asked.partition("<")
    if not bracket:
        return asked
    args = split_arguments(inner[:-1]) if inner.endswith(">") else None
    return None if args is None else instance_key(generic, args)


def asked(shader: Shader) -> tuple[str, ...]:
    """What the compiler is asked for each entry of ``shader`` (an instance: ``gscale<float>``):
    a cached result is reused only for the same."""
    return tuple(shader.spelled(n) for n in shader.entries)


class _Stamped(Protocol):
    """A shader as the cache knows it (a discovered :class:`Source` or a parsed :class:`Shader`)."""

    @property
    def path(self) -> Path: ...
    @property
    def rel(self) -> str: ...
    @property
    def sha256(self) -> str: ...
    @property
    def source(self) -> str: ...


def _declared(shader: _Stamped, options: CompileOptions) -> frozenset[str]:
    """The link-time constants ``shader`` declares, where the options give any values."""
    given = options.constants or options.entry_constants
    return frozenset(e.name for e in externs(shader.source)) if given else frozenset()


class BuildCache:
    """Compile results of one project's shaders, for one compiler and one set of options."""

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
        # What every slot of this build shares. hatch_slang's own source is in it, every module of
        # every subpackage, so a change to how hatch-slang calls Slang (flags, entry handling) or
        # reads its output never reuses results made before.
        self._base = (FORMAT, __version__, code_digest(), compiler)
        self._options = options
        self._options_for = options_for
        self._keys: dict[Path, str] = {}
        self._hashes: dict[Path, str | None] = {}
        self._entries: dict[str, Entry | None] = {}

    def _options_of(self, shader: _Stamped) -> CompileOptions:
        return self._options_for(shader.path) if self._options_for else self._options

    def key(self, shader: _Stamped) -> str:
        """The key of a shader's slot: its path, the compiler, the driver, its options, the format."""
        if shader.path not in self._keys:
            options = self._options_of(shader)
            common = repr((*self._base, self._portable_options(options, _declared(shader, options))))
            self._keys[shader.path] = _sha256(repr((common, shader.rel)).encode())
        return self._keys[shader.path]

    def _portable_options(self, options: CompileOptions, declared: frozenset[str]) -> tuple[object, ...]:
        dirs = tuple(self._portable(Path(d)) for d in options.include_dirs)
        # The values of the link-time constants the shader declares (the others are not linked
        # with it), by type and value: `1`, `1.0` and `true` are three keys, `-0.0` is not `0.0`.
        constants = tuple(
            (name, type(v).__name__, repr(v)) for name, v in options.constants if name in declared
        )
        # Entries' own values, of the names the shader declares (an entry of another shader's
        # table costs a recompile at most, never a stale result).
        own = tuple(
            (entry, tuple((n, type(v).__name__, repr(v)) for n, v in table if n in declared))
            for entry, table in options.entry_constants
        )
        own = tuple((entry, table) for entry, table in own if table)
        return (dirs, options.defines, options.optimization, options.compiler_args, constants, *own)

    def _portable(self, path: Path) -> str:
        """A path as the cache records it: relative to the root when inside it."""
        return path.relative_to(self.root).as_posix() if path.is_relative_to(self.root) else str(path)

    def _slot(self, shader: _Stamped) -> Path:
        key = self.key(shader)
        return self.directory / key[:2] / f"{key[2:]}.json"

    def _hash(self, path: Path) -> str | None:
        """The content hash of a file, once per build; None when it cannot be read (or is no
        regular file, or too large to be a source)."""
        if path not in self._hashes:
            data = read_regular(path, MAX_SOURCE_BYTES)
            self._hashes[path] = None if data is None else _sha256(data)
        return self._hashes[path]

    def _entry(self, shader: _Stamped) -> Entry | None:
        """The shader's entry if it is still valid: same content, same content of all it read."""
        if shader.rel not in self._entries:
            self._hashes.setdefault(shader.path, shader.sha256)
            self._entries[shader.rel] = self._read(shader)
        return self._entries[shader.rel]

    def _read(self, shader: _Stamped) -> Entry | None:
        data = read_regular(self._slot(shader), MAX_ENTRY_BYTES, follow=False)
        entry = None if data is None else decode_entry(data)
        made_for = (self.key(shader), shader.rel, shader.sha256)
        if entry is None or (entry.key, entry.path, entry.sha256) != made_for:
            return None  # missing, damaged, foreign or made for another slot: a miss, never a failed build
        if any(self._hash(self.root / rel) != digest for rel, digest in entry.dependencies):
            return None
        if any(os.path.lexists(self.root / rel) for rel in entry.absent):
            return None  # a file the compiler would now find first: an include or module shadowed
        return entry

    def _absent(self, shader: _Stamped, read: list[Path]) -> tuple[str, ...]:
        """Where a new file would change what the compiler reads: for each file it read, the same
        relative path under every directory it searches (the including files' directories, the
        include directories), where nothing is now."""
        dirs = [shader.path.parent.resolve(), *(p.parent for p in read)]
        dirs += [Path(d).resolve() for d in self._options_of(shader).include_dirs]
        dirs = list(dict.fromkeys(dirs))
        seen, out = set(read), set[Path]()
        for path in seen - {shader.path.resolve()}:  # the shader itself is named, not searched for
            for rel in {path.relative_to(d) for d in dirs if path.is_relative_to(d)}:
                out.update(c for c in (d / rel for d in dirs) if c not in seen and not os.path.lexists(c))
        return tuple(sorted(self._portable(c) for c in out))

    def lookup(self, shader: Shader) -> CompileResult | None:
        """The cached compile result, or None when there is none or anything it read changed.

        The result is to be checked as a fresh compile's is; one that fails is :meth:`discard` ed."""
        entry = self._entry(shader)
        if entry is None or entry.entries != asked(shader):
            return None
        return CompileResult(
            path=shader.rel,
            entries=entry.compiled,
            dependencies=tuple(str(self.root / rel) for rel, _ in entry.dependencies),
            warnings=entry.warnings,
            compiler=entry.compiler,
        )

    def discard(self, shader: _Stamped) -> None:
        """Drop a shader's entry (its result failed the checks a fresh compile's must pass)."""
        self._entries[shader.rel] = None
        with contextlib.suppress(OSError):
            self._slot(shader).unlink()

    def store(self, shader: Shader, result: CompileResult) -> None:
        """Remember a successful compile. Failures are not cached: the next build reports them afresh."""
        self._entries.pop(shader.rel, None)
        if result.error is not None or not result.entries:
            return
        if self._rehash(shader.path) != shader.sha256:
            return  # edited while it compiled (or gone): the result may be of either version
        deps: list[tuple[str, str]] = []
        for dep in result.dependencies:
            path = (self.root / dep).resolve()
            digest = self._hash(path)
            if digest is None:
                return  # something it read is gone already: do not vouch for this result
            deps.append((self._portable(path), digest))
        read = [self.root / rel for rel, _ in deps]
        if shader.path not in read:
            deps.append((shader.rel, shader.sha256))
        entry = Entry(
            self.key(shader),
            shader.rel,
            shader.sha256,
            asked(shader),
            tuple(deps),
            self._absent(shader, read),
            result.entries,
            result.warnings,
            result.compiler,
        )
        if decode_entry(data := encode_entry(entry)) is None:
            return  # a result no later build could read back (over a bound): not worth writing
        self._entries[shader.rel] = entry
        self._write(self._slot(shader), data)

    def _rehash(self, path: Path) -> str | None:
        data = read_regular(path, MAX_SOURCE_BYTES)
        return None if data is None else _sha256(data)

    def _write(self, path: Path, data: bytes) -> None:
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
