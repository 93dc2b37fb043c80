"""``manifest.json``: what a package built by hatch-slang ships beside its wrapper modules.

hatch-slang writes it (``hatch_slang.codegen``) and slangrt reads it (:class:`KernelLibrary`,
through :func:`read`); this module is the one definition of its format for both. Tools read it
too: ``hatch-slang validate`` sizes the arrays it makes from each binding's dtype and shape.

Format 2 (the newest, :data:`FORMAT`) adds the optional per-binding ``set`` (default 0) and
per-entry ``push_size`` (default 0) to format 1; slangrt reads every format in :data:`FORMATS`.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Literal, TypedDict

from ._errors import SlangRTError

FILENAME = "manifest.json"
FORMAT = 2
FORMATS = (1, 2)


class _Binding(TypedDict):
    binding: int
    name: str
    kind: Literal["storage", "uniform"]
    writable: bool  # the kernel may write it (batches place barriers by it)
    # The contract, for tools (not read by the runtime):
    role: Literal["data", "params"]
    dtype: str | None  # data: its scalar code (`slangrt.dtypes`); None: any dtype
    shape: list[str] | None  # data: one expression per axis; None: not documented
    params: list[list[str | int]]  # params: [field, byte offset, scalar code] per field


class Binding(_Binding, total=False):
    """One descriptor binding of an entry."""

    set: int  # the descriptor set (format 2); absent: 0
    flat: bool  # `flat[n]`: any shape, n elements in all; absent: False


class _Entry(TypedDict):
    spirv: str  # the SPIR-V file, beside the manifest
    spirv_sha256: str  # its hash: slangrt refuses a file that does not match
    threads: list[int]  # the thread-group size, x y z
    grid: list[str] | None  # the Dispatch line's expressions; None: the caller passes grid=
    bindings: list[Binding]  # descriptor bindings, in binding order (not the push constants)


class Entry(_Entry, total=False):
    """One entry point (kernel) of a shader."""

    push_size: int  # bytes of push constants (format 2); absent: 0
    # For tools (not read by the runtime): the wrapper function, where it is not the entry's
    # name, the key (a Python keyword gets a trailing `_`, other letters are NFKC-normalised).
    python: str


class Shader(TypedDict):
    """One shader file: a wrapper module of the package."""

    source: str  # the shader file, relative to the project root
    entries: dict[str, Entry]


class Manifest(TypedDict):
    format: int
    compiler: str  # `slang <version>`
    shaders: dict[str, Shader]  # by module name


def dumps(manifest: Manifest) -> str:
    """The file's text: keys sorted, two-space indents, a final newline (stable bytes)."""
    return json.dumps(manifest, indent=2, sort_keys=True) + "\n"


def read(path: Path) -> Manifest:
    """The manifest at ``path``; :class:`SlangRTError` when it cannot be read or its format is
    not one this slangrt reads."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:
        raise SlangRTError(f"cannot read kernel manifest {path}: {e}") from None
    fmt = data.get("format") if isinstance(data, dict) else None
    if fmt not in FORMATS or isinstance(fmt, bool):
        raise SlangRTError(
            f"{path} has manifest format {fmt!r}; this slangrt reads formats "
            f"{', '.join(map(str, FORMATS))} (rebuild the package or upgrade hatch-slang-runtime)"
        )
    manifest: Manifest = data
    return manifest
