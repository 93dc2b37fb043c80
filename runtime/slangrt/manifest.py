"""``manifest.json``: what a package built by hatch-slang ships beside its wrapper modules.

hatch-slang writes it (``hatch_slang.codegen.wrappers``) and slangrt reads it (:class:`KernelLibrary`,
through :func:`read`); this module is the one definition of its format for both. Tools read it
too: ``hatch-slang validate`` sizes the arrays it makes from each binding's dtype and shape.

Format 2 adds the optional per-binding ``set`` (default 0) and per-entry ``push_size`` (default
0) to format 1. Format 3 (the newest, :data:`FORMAT`) adds the image, sampler and texel-buffer
kinds and their optional keys (``dim``, ``arrayed``, ``format``, ``texel``, ``channels``,
``sampler``); a manifest without such a binding is still written as format 2. Format 4 adds the
per-entry ``subgroup_size`` (the size a kernel requires of its subgroups: a runtime that would
ignore it must refuse the manifest), written only where an entry has one. slangrt reads every
format in :data:`FORMATS`. An entry's optional ``constants`` (its specialization constants:
:class:`Constant`) is written only for entries that have some, in either format.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Literal, TypedDict, get_args

from ._errors import SlangRTError
from .files import read_regular

FILENAME = "manifest.json"
FORMAT = 4
FORMATS = (1, 2, 3, 4)

Kind = Literal[
    "storage",
    "uniform",
    "storage_image",
    "sampled_image",
    "sampler",
    "combined_image_sampler",
    "uniform_texel_buffer",
    "storage_texel_buffer",
]


class SamplerDefault(TypedDict):
    """A sampler or combined binding's default sampler, as its comment gives it (format 3)."""

    filter: Literal["linear", "nearest"]
    address: Literal["clamp", "repeat", "mirror", "border"]
    compare: str | None  # None, or a compare op: "less", "less_equal", ...


class StructLayout(TypedDict):
    """A data binding's struct element as Slang laid it out (for tools: ``hatch-slang validate``
    makes arrays of it; the runtime does not read it): per field ``[name, byte offset, scalar code
    (slangrt.dtypes) or a nested StructLayout, subarray shape]``."""

    name: str  # the Slang struct
    itemsize: int  # bytes per element
    fields: list[list[Any]]


class _Binding(TypedDict):
    binding: int
    name: str
    kind: Kind
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
    # Image, texel-buffer and combined bindings (format 3; absent: what the SPIR-V says):
    dim: Literal["1d", "2d", "3d", "cube", "buffer"]
    arrayed: bool  # an array texture (Texture2DArray: layers), not an array of descriptors
    format: str | None  # a storage image's declared format, Slang's name ("rgba8"); None: undeclared
    texel: Literal["float", "int", "uint"]  # how the kernel reads texels
    channels: int  # 1 to 4: the texel type's vector width (a declared format's wins)
    # Sampler and combined bindings (format 3): the default sampler (else linear, clamp, None).
    sampler: SamplerDefault
    # Data holding structs (for tools, any format): the element's layout; `dtype` is then null.
    struct: StructLayout


class Constant(TypedDict):
    """A specialization constant of an entry (the optional ``constants``, within formats 2 and
    3): its SpecId, its name (the wrapper's keyword argument), its scalar type (``bool``,
    ``i32``, ``u32``, ``f32``, ``f16`` ...) and the default its SPIR-V declares."""

    id: int
    name: str
    scalar: str
    default: bool | int | float


class _Entry(TypedDict):
    spirv: str  # the SPIR-V file, beside the manifest
    spirv_sha256: str  # its hash: slangrt refuses a file that does not match
    threads: list[int]  # the thread-group size, x y z
    grid: list[str] | None  # the Dispatch line's expressions; None: the caller passes grid=
    bindings: list[Binding]  # descriptor bindings, in binding order (not the push constants)


class Entry(_Entry, total=False):
    """One entry point (kernel) of a shader."""

    push_size: int  # bytes of push constants (format 2); absent: 0
    subgroup_size: int  # the subgroup size the kernel requires (format 4); absent: any
    # Specialization constants, by SpecId (absent: none); slangrt checks them against the SPIR-V.
    constants: list[Constant]
    # For tools (not read by the runtime): the wrapper function, where it is not the entry's
    # name, the key (a Python keyword gets a trailing `_`, other letters are NFKC-normalised).
    python: str
    # For tools, on an instance of a generic entry (whose key, `gscale_float`, is also its SPIR-V
    # entry point's name): the generic entry as Slang spells it and the instance's type
    # arguments as written (`gscale`, ["float"]).
    generic: str
    type_args: list[str]


class Shader(TypedDict):
    """One shader file: a wrapper module of the package."""

    source: str  # the shader file, relative to the project root
    entries: dict[str, Entry]


class Manifest(TypedDict):
    format: int
    compiler: str  # `slang <version>`
    shaders: dict[str, Shader]  # by module name


def format_of(shaders: dict[str, Shader]) -> int:
    """The format a manifest of ``shaders`` is written as: 4 where an entry requires a subgroup
    size, else 3 where a binding has an image, sampler or texel-buffer kind, else 2 (which every
    slangrt of the 0.1 series reads)."""
    entries = [entry for shader in shaders.values() for entry in shader["entries"].values()]
    if any("subgroup_size" in entry for entry in entries):
        return 4
    if any(b["kind"] not in _BUFFER_KINDS for entry in entries for b in entry["bindings"]):
        return 3
    return 2


def dumps(manifest: Manifest) -> str:
    """The file's text: keys sorted, two-space indents, a final newline (stable bytes)."""
    return json.dumps(manifest, indent=2, sort_keys=True) + "\n"


# The largest manifest read (a package of thousands of kernels has a few MiB).
MAX_MANIFEST_BYTES = 64 << 20


def read(path: Path) -> Manifest:
    """The manifest at ``path``; :class:`SlangRTError` when it cannot be read or its format is
    not one this slangrt reads."""
    try:
        data = json.loads(read_regular(path, MAX_MANIFEST_BYTES).decode("utf-8"))
    except (OSError, ValueError, RecursionError) as e:  # (RecursionError: nesting past the parser)
        raise SlangRTError(f"cannot read kernel manifest {path}: {e}") from None
    fmt = data.get("format") if isinstance(data, dict) else None
    if fmt not in FORMATS or isinstance(fmt, bool):
        raise SlangRTError(
            f"{path} has manifest format {fmt!r}; this slangrt reads formats "
            f"{', '.join(map(str, FORMATS))} (rebuild the package or upgrade hatch-slang-runtime)"
        )
    _check(data, f"{path}")
    manifest: Manifest = data
    return manifest


# Bounds on the numbers of a manifest (beyond them no kernel is real: a clean error, not a hang
# or an overflow deep inside Vulkan).
_MAX_BINDING = (1 << 31) - 1
_MAX_SET = 63
_MAX_THREADS = 1 << 16
_MAX_PUSH = 1 << 16


class _Where:
    """Where in the manifest a value is, for messages."""

    def __init__(self, path: str) -> None:
        self.path = path

    def bad(self, key: str, want: str, value: object) -> SlangRTError:
        shown = repr(value)
        shown = shown if len(shown) <= 60 else shown[:57] + "..."
        return SlangRTError(
            f"{self.path} is malformed: {key} must be {want}, got {shown} (the package is damaged: "
            "rebuild or reinstall it)"
        )

    def int(self, value: object, at: str, lo: int, hi: int) -> None:
        if not isinstance(value, int) or isinstance(value, bool) or not lo <= value <= hi:
            raise self.bad(at, f"an int from {lo} to {hi}", value)

    def typed(self, obj: dict[str, object], key: str, at: str, kind: type, want: str) -> None:
        if key not in obj or not isinstance(obj[key], kind):
            raise self.bad(f"{at}.{key}", want, obj.get(key))


def _check(data: dict[str, object], path: str) -> None:
    """Refuse a manifest whose structure is not the format's, naming the value and the file."""
    w = _Where(path)
    fmt = data.get("format")
    kinds = _KINDS if fmt in (3, 4) else _BUFFER_KINDS
    w.typed(data, "shaders", "manifest", dict, "an object")
    shaders: dict[str, object] = data["shaders"]  # type: ignore[assignment]
    for module, shader in shaders.items():
        if not isinstance(shader, dict):
            raise w.bad(f"shaders.{module}", "an object", shader)
        w.typed(shader, "entries", f"shaders.{module}", dict, "an object")
        for name, entry in shader["entries"].items():
            at = f"shaders.{module}.entries.{name}"
            if not isinstance(entry, dict):
                raise w.bad(at, "an object", entry)
            _check_entry(w, entry, at, kinds)
            _check_subgroup(w, entry, at, fmt)


_BUFFER_KINDS = ("storage", "uniform")
_KINDS: tuple[str, ...] = get_args(Kind)
# The kinds that may carry each format-3 key.
_TEXEL_KINDS = frozenset(
    {
        "storage_image",
        "sampled_image",
        "combined_image_sampler",
        "uniform_texel_buffer",
        "storage_texel_buffer",
    }
)
_SAMPLER_KINDS = frozenset({"sampler", "combined_image_sampler"})
_DIMS = ("1d", "2d", "3d", "cube", "buffer")
_TEXELS = ("float", "int", "uint")
_FILTERS = ("linear", "nearest")
_ADDRESSES = ("clamp", "repeat", "mirror", "border")
_COMPARES = ("never", "less", "equal", "less_equal", "greater", "not_equal", "greater_equal", "always")
_MAX_FORMAT = 32  # the longest format name read (Slang's longest: 14 letters)


def _one_of(choices: tuple[str, ...]) -> str:
    return " or ".join(f'"{c}"' for c in choices)


def _check_subgroup(w: _Where, entry: dict[str, object], at: str, fmt: object) -> None:
    if "subgroup_size" not in entry:
        return
    size = entry["subgroup_size"]
    if fmt != 4:
        raise w.bad(f"{at}.subgroup_size", "no subgroup_size below format 4", size)
    w.int(size, f"{at}.subgroup_size", 1, 128)
    assert isinstance(size, int)
    if size & (size - 1):
        raise w.bad(f"{at}.subgroup_size", "a power of two", size)


def _check_entry(w: _Where, entry: dict[str, object], at: str, kinds: tuple[str, ...]) -> None:
    w.typed(entry, "spirv", at, str, "a file name")
    w.typed(entry, "spirv_sha256", at, str, "a sha256 in hex")
    threads = entry.get("threads")
    if not isinstance(threads, list) or len(threads) != 3:
        raise w.bad(f"{at}.threads", "a list of three ints", threads)
    for k, t in enumerate(threads):
        w.int(t, f"{at}.threads[{k}]", 1, _MAX_THREADS)
    w.int(entry.get("push_size", 0), f"{at}.push_size", 0, _MAX_PUSH)
    _check_constants(w, entry.get("constants", []), f"{at}.constants")
    w.typed(entry, "bindings", at, list, "a list")
    bindings: list[object] = entry["bindings"]  # type: ignore[assignment]
    seen: set[tuple[object, object]] = set()
    for k, b in enumerate(bindings):
        where = f"{at}.bindings[{k}]"
        if not isinstance(b, dict):
            raise w.bad(where, "an object", b)
        w.int(b.get("binding"), f"{where}.binding", 0, _MAX_BINDING)
        w.int(b.get("set", 0), f"{where}.set", 0, _MAX_SET)
        w.typed(b, "name", where, str, "a string")
        w.typed(b, "writable", where, bool, "true or false")
        if b.get("kind") not in kinds:
            raise w.bad(f"{where}.kind", _one_of(kinds), b.get("kind"))
        _check_image_keys(w, b, where)
        key = (b.get("set", 0), b["binding"])
        if key in seen:
            raise w.bad(f"{where}.binding", "a binding no other binding of the entry has", b["binding"])
        seen.add(key)


_SCALARS = ("bool", "i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64", "f16", "f32", "f64")
_MAX_SPEC_ID = (1 << 31) - 1
_MAX_NAME = 256


def _check_constants(w: _Where, constants: object, at: str) -> None:
    """An entry's ``constants``: a list of {id, name, scalar, default}, each of its type."""
    if not isinstance(constants, list):
        raise w.bad(at, "a list", constants)
    for k, c in enumerate(constants):
        where = f"{at}[{k}]"
        if not isinstance(c, dict):
            raise w.bad(where, "an object", c)
        w.int(c.get("id"), f"{where}.id", 0, _MAX_SPEC_ID)
        name = c.get("name")
        if not isinstance(name, str) or not name.isidentifier() or len(name) > _MAX_NAME:
            raise w.bad(f"{where}.name", "an identifier", name)
        scalar = c.get("scalar")
        if scalar not in _SCALARS:
            raise w.bad(f"{where}.scalar", _one_of(_SCALARS), scalar)
        default = c.get("default")
        want: tuple[type, ...] = (
            (bool,) if scalar == "bool" else (int,) if scalar[0] in "iu" else (int, float)
        )
        if not isinstance(default, want) or (scalar != "bool" and isinstance(default, bool)):
            raise w.bad(f"{where}.default", f"a value of type {scalar}", default)


def _check_image_keys(w: _Where, b: dict[str, object], where: str) -> None:
    """The format-3 keys of one binding: each only on the kinds that have it, each of its type."""
    kind = b["kind"]
    for key in ("dim", "arrayed", "format", "texel", "channels"):
        if key in b and kind not in _TEXEL_KINDS:
            raise w.bad(
                f"{where}.{key}", f"absent on a {kind} binding (images and texel buffers only)", b[key]
            )
    if "sampler" in b and kind not in _SAMPLER_KINDS:
        raise w.bad(f"{where}.sampler", f"absent on a {kind} binding (samplers only)", b["sampler"])
    if "dim" in b and b["dim"] not in _DIMS:
        raise w.bad(f"{where}.dim", _one_of(_DIMS), b["dim"])
    if "arrayed" in b and not isinstance(b["arrayed"], bool):
        raise w.bad(f"{where}.arrayed", "true or false", b["arrayed"])
    fmt = b.get("format")
    if fmt is not None and not (
        isinstance(fmt, str)
        and 0 < len(fmt) <= _MAX_FORMAT
        and fmt.isascii()
        and fmt.replace("_", "a").isalnum()
    ):
        raise w.bad(f"{where}.format", "null or a format name (letters, digits, _)", fmt)
    if "texel" in b and b["texel"] not in _TEXELS:
        raise w.bad(f"{where}.texel", _one_of(_TEXELS), b["texel"])
    if "channels" in b:
        w.int(b["channels"], f"{where}.channels", 1, 4)
    if "sampler" in b:
        _check_sampler(w, b["sampler"], f"{where}.sampler")


def _check_sampler(w: _Where, s: object, at: str) -> None:
    if not isinstance(s, dict):
        raise w.bad(at, "an object", s)
    if s.get("filter") not in _FILTERS:
        raise w.bad(f"{at}.filter", _one_of(_FILTERS), s.get("filter"))
    if s.get("address") not in _ADDRESSES:
        raise w.bad(f"{at}.address", _one_of(_ADDRESSES), s.get("address"))
    if s.get("compare") is not None and s.get("compare") not in _COMPARES:
        raise w.bad(f"{at}.compare", f"null or {_one_of(_COMPARES)}", s.get("compare"))
