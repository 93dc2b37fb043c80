"""Find the shaders a project builds and decide each one's module name and entry points.

Two steps: :func:`sources` reads and hashes the files (all a build needs to find its cached
results), :func:`parse` reads a source's comment contract and entry points (needed only for
what is compiled or generated afresh). :func:`discover` does both.
"""

from __future__ import annotations

import hashlib
import keyword
import re
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from hatch_slang.contract import Contract, parse_contract
from hatch_slang.errors import ConfigError, ShaderError


@dataclass(frozen=True)
class Source:
    """A shader file as read, before its comments are parsed."""

    path: Path  # absolute
    rel: str  # relative to the project root, posix separators
    module: str
    source: str
    sha256: str


@dataclass(frozen=True)
class Shader:
    path: Path  # absolute
    rel: str  # relative to the project root, posix separators: what messages and the manifest show
    module: str  # the Python module the wrappers go in
    source: str
    sha256: str
    contract: Contract
    entries: tuple[str, ...]


def module_name(stem: str) -> str:
    """A Python module name for a shader file stem (``my-kernel`` -> ``my_kernel``)."""
    name = re.sub(r"\W", "_", stem, flags=re.ASCII)
    if not name or name[0].isdigit():
        name = f"k_{name}"
    if keyword.iskeyword(name) or name in {"manifest", "slangrt", "numpy"}:
        name = f"{name}_"
    return name


def default_entries(stem: str, source: str) -> tuple[str, ...]:
    """The entry when no `slang-entries` line is given: the basename, or `main` if only that exists."""
    named = re.search(rf"\b{re.escape(stem)}\s*\(", source) is not None
    if not named and re.search(r"\bmain\s*\(", source):
        return ("main",)
    return (stem,)


def find_shaders(root: Path, patterns: list[str]) -> list[Path]:
    """Expand the configured globs, relative to ``root``, into a sorted list of files."""
    found: set[Path] = set()
    for pattern in patterns:
        where = "Option `shaders` for build hook `slang`:"
        if Path(pattern).is_absolute():
            raise ConfigError(f"{where} glob `{pattern}` must be relative to the project root")
        try:
            matches = [p for p in root.glob(pattern) if p.is_file()]
        except ValueError as e:  # pathlib rejects some patterns ("**x", "")
            raise ConfigError(f"{where} glob `{pattern}`: {e}") from None
        if not matches:
            raise ConfigError(f"{where} glob `{pattern}` matches no file under {root}")
        found.update(p.resolve() for p in matches)
    return sorted(found)


def read_source(root: Path, path: Path) -> Source:
    """Read one shader; ``root`` and ``path`` are resolved (absolute, no symlinks)."""
    data = path.read_bytes()
    rel = path.relative_to(root).as_posix() if path.is_relative_to(root) else str(path)
    try:
        source = data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise ShaderError(rel, None, f"not UTF-8 text ({e.reason} at byte {e.start})") from None
    return Source(path, rel, module_name(path.stem), source, hashlib.sha256(data).hexdigest())


def parse(src: Source) -> Shader:
    """Read the comment contract and decide the entry points."""
    contract = parse_contract(src.rel, src.source)
    if contract.entries:
        entries = contract.entries
    else:
        entries = default_entries(src.path.stem, src.source)
        if entries[0].isidentifier() is False or keyword.iskeyword(entries[0]):
            raise ShaderError(
                src.rel, 1, f"file name `{src.path.name}` is no entry-point name; add `// slang-entries: ...`"
            )
    return Shader(src.path, src.rel, src.module, src.source, src.sha256, contract, entries)


def load_shader(root: Path, path: Path) -> Shader:
    return parse(read_source(root.resolve(), path.resolve()))


def sources(root: Path, patterns: list[str]) -> list[Source]:
    """Read every configured shader; module names must be unique."""
    real = root.resolve()
    found = [read_source(real, p) for p in find_shaders(root, patterns)]
    by_module: dict[str, Source] = {}
    for s in found:
        if s.module in by_module:
            raise ShaderError(
                s.rel, None, f"module name `{s.module}` also used by {by_module[s.module].rel}; rename one"
            )
        by_module[s.module] = s
    return found


def discover(root: Path, patterns: list[str]) -> list[Shader]:
    return [parse(s) for s in sources(root, patterns)]


_S = TypeVar("_S", Source, Shader)


def select(shaders: list[_S], names: list[str], cwd: Path | None = None) -> list[_S]:
    """The configured shaders that ``names`` pick, in discovery order.

    A name is a module name or file stem (``moe_combine``), a file name (``moe_combine.slang``),
    or a path relative to the project root or to ``cwd``.
    """
    picked: dict[str, _S] = {}
    for name in names:
        as_path = Path(cwd or Path.cwd(), name).resolve()
        found = [
            s for s in shaders if name in (s.module, s.path.stem, s.path.name, s.rel) or s.path == as_path
        ]
        if not found:
            known = ", ".join(s.module for s in shaders)
            raise ConfigError(f"no configured shader is called `{name}`; the shaders are: {known}")
        picked.update((s.rel, s) for s in found)
    return [s for s in shaders if s.rel in picked]
