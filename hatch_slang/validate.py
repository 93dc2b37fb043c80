"""Run kernels against their NumPy references.

References live beside the shaders: ``shaders/<name>.py`` next to ``shaders/<name>.slang``,
defining ``cases(rng)`` that yields :class:`Case` objects. The kernels themselves are imported
from the configured package: from the project tree when it holds the generated files
(``hatch-slang build``, an editable install; the project need not be installed), else as
installed (``pip install .``). :func:`reference_cases` is the loop ``validate`` and ``bench``
share.

A case names the entry (an instance of a generic entry by its own name, ``gscale_half``: the
manifest's key, not the generic's), the sizes (``dims``) and whatever arguments it wants to choose itself
(indices that must be in range, well-separated scores, params). Every buffer argument it leaves
out is built from the entry's contract in the package manifest: the dtype of the binding and its
shape evaluated over ``dims`` and the params given, filled with standard-normal floats or small
random integers. ``expect`` is either the arrays the kernel must leave in its written arguments or
a function of the complete arguments that computes them (the NumPy reference).

A reference may also define ``flops(entry, sizes)``: the floating-point operations one call of
``entry`` does, ``sizes`` being the case's sizes by name (its ``dims``, its integer params, and
the sizes its given arrays fix; for ``bench --size``, the sizes given and the params passed), or
None where it has no count. ``bench`` reports GFLOP/s from it.
"""

from __future__ import annotations

import importlib
import importlib.util
import math
import numbers
import sys
import time
from collections.abc import Callable, Collection, Iterator, Mapping
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path
from types import ModuleType
from typing import Any, ClassVar, cast

import numpy as np
from numpy.lib.recfunctions import structured_to_unstructured
from slangrt import SlangRTError, Tensor, manifest
from slangrt.dtypes import DTYPES

from hatch_slang.comments.expr import ExprError, argument_name, check_argument, evaluate, parse_expr
from hatch_slang.compile.discover import Source, module_name, read_sources, select
from hatch_slang.config.project import BuildConfig
from hatch_slang.errors import HatchSlangError

Expected = Mapping[str, np.ndarray]
Reference = Callable[[dict[str, Any]], Expected]


@dataclass
class Case:
    entry: str
    label: str = ""  # what the table's shape column shows; default: the dims
    args: dict[str, Any] = field(default_factory=dict)
    expect: Expected | Reference = field(default_factory=dict)
    atol: float = 1e-5
    rtol: float = 1e-5
    dims: dict[str, int] = field(default_factory=dict)  # sizes for arguments built from the contract


@dataclass(frozen=True)
class Row:
    shader: str
    entry: str
    device: str
    shape: str
    max_abs_err: float
    max_rel_err: float
    ok: bool
    seconds: float = field(default=0.0, compare=False)  # the kernel call, transfers included
    error: str = field(default="", compare=False)  # why the kernel call itself failed
    # Why the kernel did not run: the device lacks what it needs (not a failure; ok is False).
    skipped: str = field(default="", compare=False)

    # The columns of the `hatch-slang validate` table, which :meth:`cells` fills.
    COLUMNS: ClassVar[tuple[str, ...]] = (
        "shader",
        "entry",
        "shape",
        "max abs err",
        "max rel err",
        "ms",
        "ok",
    )

    @property
    def status(self) -> str:
        """``"ok"``, ``"FAIL"`` or ``"skipped"``."""
        return "skipped" if self.skipped else "ok" if self.ok else "FAIL"

    @property
    def failed(self) -> bool:
        return not self.ok and not self.skipped

    def cells(self) -> list[str]:
        """The row as the table shows it, one text per :attr:`COLUMNS` entry."""
        return [
            self.shader,
            self.entry,
            self.shape,
            "-" if self.skipped else f"{self.max_abs_err:.2e}",
            "-" if self.skipped else f"{self.max_rel_err:.2e}",
            "-" if self.skipped else f"{self.seconds * 1e3:.2f}",
            self.status,
        ]

    def as_json(self) -> dict[str, object]:
        row: dict[str, object] = {
            "shader": self.shader,
            "entry": self.entry,
            "device": self.device,
            "shape": self.shape,
            "max_abs_err": self.max_abs_err,
            "max_rel_err": self.max_rel_err,
            "ok": self.ok,
            "status": self.status,
        }
        if self.error:
            row["error"] = self.error
        if self.skipped:
            row["skipped"] = self.skipped
        return row


class Skipped(Exception):
    """The device cannot run the kernel (it lacks a capability the kernel needs)."""

    def __init__(self, label: str, reason: str) -> None:
        super().__init__(reason)
        self.label = label
        self.reason = reason


def load_reference(path: Path) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"_hatch_slang_ref_{module_name(path.stem)}", path)
    if spec is None or spec.loader is None:
        raise HatchSlangError(f"cannot load reference {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def reference_flops(reference: ModuleType, entry: str, sizes: Mapping[str, int]) -> float | None:
    """The floating-point operations one call of ``entry`` does at ``sizes``, as the reference's
    optional ``flops(entry, sizes)`` counts them; None where it defines no ``flops`` or returns None.

    Anything else than None or a finite, non-negative number, and an exception it raises, is a
    :class:`HatchSlangError` naming the reference and the entry.
    """
    count = getattr(reference, "flops", None)
    if count is None:
        return None
    where = f"{Path(reference.__file__ or '?').name}: flops({entry!r}, ...)"
    if not callable(count):
        raise HatchSlangError(f"{where}: `flops` is not a function")
    try:
        value = count(entry, dict(sizes))
    except Exception as e:
        raise HatchSlangError(f"{where} raised {type(e).__name__}: {e}") from None
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not 0 <= float(value) < math.inf:
        raise HatchSlangError(
            f"{where} returned {value!r:.60}; expected None or a finite, non-negative number of operations"
        )
    return float(value)


def import_kernels(config: BuildConfig, module: str) -> ModuleType:
    """The generated wrapper module ``module`` of the configured package.

    When the project tree holds the generated package (``hatch-slang build``, an editable
    install), it is imported from the tree, even where the project is not installed: the
    project root goes first on ``sys.path``. Otherwise the package must be installed.
    """
    name = f"{config.package.replace('/', '.')}.{module}"
    root = config.root.resolve()
    in_tree = (root / config.package / f"{module}.py").is_file()
    if in_tree and str(root) not in sys.path:
        sys.path.insert(0, str(root))
        importlib.invalidate_caches()
    try:
        return importlib.import_module(name)
    except ImportError as e:
        if in_tree:
            raise HatchSlangError(f"cannot import {name} from {root}: {e}") from None
        missing = getattr(e, "name", None)
        if isinstance(e, ModuleNotFoundError) and missing and name.startswith(missing):
            raise HatchSlangError(
                f"cannot import {name}: the kernels are not built ({config.package}/{module}.py is not "
                f"in {root}, and `{missing}` is not installed); build them first with "
                "`hatch-slang build` (or `pip install -e .`)"
            ) from None
        raise HatchSlangError(f"cannot import {name} ({e})") from None


def load_manifest(kernels: ModuleType) -> manifest.Manifest:
    """The manifest of the package a generated wrapper module belongs to."""
    try:
        return manifest.read(Path(kernels.__file__ or "").parent / manifest.FILENAME)
    except SlangRTError as e:
        raise HatchSlangError(str(e)) from None


def known_sizes(entry: manifest.Entry, dims: Mapping[str, int], given: Mapping[str, Any]) -> dict[str, int]:
    """The sizes a case fixes for ``entry``: ``dims``, the integer params in ``given`` (and the
    defaults of integer specialization constants it does not give), and the sizes of the given
    arrays along axes whose shape is a bare name (as the wrapper reads them off)."""
    values = {_python(k): v for k, v in dims.items()}
    values.update({k: v for k, v in given.items() if isinstance(v, int) and not isinstance(v, bool)})
    for c in entry.get("constants", []):  # an integer specialization constant not given: its default
        if c["scalar"][0] in "iu":
            values.setdefault(c["name"], int(c["default"]))
    for b in entry["bindings"]:
        arr = given.get(b["name"])
        if b["role"] != "data" or b["shape"] is None or not isinstance(arr, np.ndarray):
            continue
        sizes = (arr.size,) if b.get("flat") else arr.shape
        if b["kind"] in _TEXEL_KINDS:  # documented sizes are an image's trailing size axes
            sizes = sizes[: _size_axes(b)][-len(b["shape"]) :] if b["shape"] else ()
        for dim, size in zip(b["shape"], sizes):
            if check_argument(dim) is None:  # a bare name (an argument, as the wrapper spells it)
                values.setdefault(argument_name(dim), size)
    return values


class UnsizedBinding(HatchSlangError):
    """A data binding whose shape names sizes nobody gave (``missing``, in the shape's order)."""

    def __init__(self, message: str, binding: str, shape: str, missing: tuple[str, ...]) -> None:
        super().__init__(message)
        self.binding = binding
        self.shape = shape  # as ``[a][b]``
        self.missing = missing


def contract_shapes(
    entry: manifest.Entry, values: Mapping[str, int], skip: Collection[str] = (), *, where: str = ""
) -> dict[str, tuple[tuple[int, ...], np.dtype[Any]]]:
    """The shape and dtype of every data binding of ``entry`` not in ``skip``, its documented
    shape evaluated over ``values``.

    A binding with no documented shape or dtype, or a shape that is not whole and non-negative,
    raises :class:`HatchSlangError`; one whose shape names a size ``values`` lacks raises
    :class:`UnsizedBinding` naming the binding and the sizes.
    """
    shapes: dict[str, tuple[tuple[int, ...], np.dtype[Any]]] = {}
    for b in entry["bindings"]:
        name = b["name"]
        if b["role"] != "data" or name in skip or b["kind"] == "sampler":  # samplers: the wrapper's default
            continue
        if b["kind"] in _TEXEL_KINDS and b["shape"] is not None and len(b["shape"]) != _size_axes(b):
            raise HatchSlangError(
                f"{where}: binding `{name}` documents {len(b['shape'])} of its {_size_axes(b)} size "
                "axes, so it cannot be made from sizes: give it in a reference case's args"
            )
        layout = b.get("struct")
        if b["shape"] is None or (b["dtype"] is None and layout is None):
            what = "shape" if b["shape"] is None else "dtype (it takes any)"
            raise HatchSlangError(
                f"{where}: binding `{name}` has no documented {what}, so it cannot be made from sizes: "
                "give it in a reference case's args"
            )
        shown = "".join(f"[{d}]" for d in b["shape"])
        try:
            needed = [n for d in b["shape"] for n in parse_expr(d).names]
            missing = tuple(dict.fromkeys(n for n in needed if n not in values))
            if missing:
                raise UnsizedBinding(
                    f"{where}: cannot size binding `{name}`: no value for `{missing[0]}` (shape {shown})",
                    name,
                    shown,
                    missing,
                )
            shape = tuple(_size(evaluate(d, values)) for d in b["shape"])
        except (ExprError, ValueError) as e:
            raise HatchSlangError(f"{where}: cannot size binding `{name}`: {e} (shape {shown})") from None
        if b["dtype"] is None and layout is not None:
            shapes[name] = (shape, struct_dtype(layout, where=f"{where}: binding `{name}`"))
            continue
        assert b["dtype"] is not None
        t = DTYPES[b["dtype"]]  # bf16, which NumPy lacks, as its bits (uint16)
        shapes[name] = (shape + _channel_axis(b), np.dtype(t.little_endian if t.code == "bf16" else t.numpy))
    return shapes


def struct_dtype(layout: manifest.StructLayout, *, where: str = "") -> np.dtype[Any]:
    """The NumPy structured dtype of a struct as the manifest records it (``struct`` of a data
    binding: :class:`slangrt.manifest.StructLayout`): equal to the wrapper module's own dtype of
    that struct. A record that is not such a layout raises :class:`HatchSlangError`."""
    try:
        names, formats, offsets = [], [], []
        for name, offset, kind, shape in layout["fields"]:
            if not (isinstance(name, str) and isinstance(offset, int) and isinstance(shape, list)):
                raise TypeError(name)
            base: Any = (
                struct_dtype(cast("manifest.StructLayout", kind), where=where)
                if isinstance(kind, dict)
                else DTYPES[kind].little_endian
            )
            names.append(name)
            formats.append((base, tuple(int(n) for n in shape)) if shape else base)
            offsets.append(offset)
        spec = {"names": names, "formats": formats, "offsets": offsets, "itemsize": int(layout["itemsize"])}
        return np.dtype(spec)  # type: ignore[call-overload,no-any-return]
    except (KeyError, TypeError, ValueError, OverflowError, RecursionError) as e:
        raise HatchSlangError(f"{where}: the manifest's struct layout is not one ({e})") from None


def random_struct(shape: tuple[int, ...], dtype: np.dtype[Any], rng: np.random.Generator) -> np.ndarray:
    """An array of a structured dtype with every field filled as :func:`contract_inputs` fills
    arrays (floats standard-normal, integers 0 to 15); padding zero."""
    out = np.zeros(shape, dtype)
    for name in dtype.names or ():
        field = out[name]
        base = dtype.fields[name][0] if dtype.fields else dtype
        inner = base.base if base.subdtype is not None else base
        if inner.names is not None:
            field[...] = random_struct(field.shape, inner, rng)
        elif inner.kind == "f":
            field[...] = rng.standard_normal(field.shape).astype(inner)
        else:
            field[...] = rng.integers(0, 16, size=field.shape).astype(inner)
    return out


# The binding kinds that hold texels: their documented shape is the size axes, channels apart.
_TEXEL_KINDS = frozenset(
    {
        "storage_image",
        "sampled_image",
        "combined_image_sampler",
        "uniform_texel_buffer",
        "storage_texel_buffer",
    }
)
# Storage formats that pack a texel's channels into one 32-bit word (no channel axis).
_PACKED = frozenset({"r11f_g11f_b10f", "rgb10_a2", "rgb10_a2ui"})


def _size_axes(b: manifest.Binding) -> int:
    """How many size axes an image's array has: (W), (H, W), (D, H, W), a cube's (6, H, W), an
    array's layers axis first (a cube array's faces and layers are one axis, 6 * n)."""
    dim = b.get("dim", "2d")
    axes = {"1d": 1, "2d": 2, "3d": 3, "cube": 3, "buffer": 1}.get(dim, 2)
    return axes + (1 if b.get("arrayed") and dim in ("1d", "2d") else 0)


def _channel_axis(b: manifest.Binding) -> tuple[int, ...]:
    """The channel axis of an image or texel-buffer binding's array: none for one channel or a
    packed format; none for buffers."""
    channels = int(b.get("channels", 1))
    if b["kind"] not in _TEXEL_KINDS or channels <= 1 or b.get("format") in _PACKED:
        return ()
    return (channels,)


def find_entry(package: manifest.Manifest, module: str, name: str) -> tuple[str, str, manifest.Entry]:
    """Entry ``name`` of ``module``'s record, named as Slang spells it or as its wrapper function
    (``lambda`` or ``lambda_``): its name, its function and its record; KeyError if it has none."""
    for key, entry in package["shaders"][module]["entries"].items():
        python = entry.get("python", key)
        if name in (key, python):
            return key, python, entry
    raise KeyError(name)


def _no_entry(package: manifest.Manifest, module: str, name: str) -> str:
    """Why a case's entry is none: a generic entry's name says which instances to name instead."""
    instances = [k for k, e in package["shaders"][module]["entries"].items() if e.get("generic") == name]
    if instances:
        return (
            f"`{name}` is a generic entry: a case names one of its instances "
            f"({', '.join(f'`{k}`' for k in instances)})"
        )
    return f"the kernels have no entry `{name}` in `{module}`"


def _python(name: str) -> str:
    """``name`` as the wrappers and :func:`evaluate` spell it (NFKC, a keyword gets `_`)."""
    return name if check_argument(name) else argument_name(name)


def contract_inputs(
    entry: manifest.Entry,
    dims: Mapping[str, int],
    given: Mapping[str, Any],
    rng: np.random.Generator,
    *,
    where: str = "",
) -> dict[str, Any]:
    """``given`` plus a random array for every buffer binding of ``entry`` it does not hold.

    ``entry`` is the entry's manifest record. Shapes are evaluated over :func:`known_sizes`; a
    dimension that none provides raises :class:`HatchSlangError` naming the binding and the
    dimension. Floats are standard-normal, integers small (0 to 15).
    """
    args = dict(given)
    shapes = contract_shapes(entry, known_sizes(entry, dims, given), given, where=where)
    dtypes = {b["name"]: b["dtype"] for b in entry["bindings"]}
    for name, (shape, dtype) in shapes.items():
        if dtypes[name] == "bf16":  # no NumPy dtype without ml_dtypes: normal values as their bits
            bits = rng.standard_normal(shape).astype(np.float32).view(np.uint32) >> 16
            args[name] = bits.astype(np.uint16)
            continue
        if dtype.names is not None:
            args[name] = random_struct(shape, dtype, rng)
        elif dtype.kind == "f":
            with np.errstate(under="ignore"):  # tiny normals round to f16 subnormals, or 0
                args[name] = rng.standard_normal(shape).astype(dtype)
        else:
            args[name] = rng.integers(0, 16, size=shape).astype(dtype)
    return args


def bf16_values(a: np.ndarray) -> np.ndarray:
    """The float32 values of bf16 data held as its bits (``uint16``) or as ml_dtypes'
    ``bfloat16``; any other array as it is. For references of bf16 kernels: their inputs arrive
    as bits (NumPy has no bf16 dtype)."""
    if a.dtype == np.uint16:
        return (a.astype(np.uint32) << 16).view(np.float32)
    if a.dtype.kind == "V" or str(a.dtype) == "bfloat16":
        return a.astype(np.float32)
    return a


def bf16_bits(values: np.ndarray) -> np.ndarray:
    """The bf16 bits (``uint16``) nearest to ``values`` (rounded to nearest, ties to even; a NaN
    stays a quiet NaN), as a bf16 kernel narrows its f32 results."""
    u = np.asarray(values, dtype=np.float32).view(np.uint32).astype(np.uint64)
    rounded = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)
    nan = (u & 0x7FFFFFFF) > 0x7F800000
    return np.where(nan, ((u >> 16) | 0x40).astype(np.uint16), rounded)


def held(values: np.ndarray, fmt: str) -> np.ndarray:
    """``values`` as an array of the format ``fmt`` (``"f32"``, ``"f16"`` or ``"bf16"``) holds
    them, each rounded once to nearest even (bf16 as its bits, ``uint16``): what a kernel that
    computes in f32 and narrows its results stores. For references of kernels generic over
    those formats; values too small for f16 round to its subnormals or zero, silently."""
    if fmt == "bf16":
        return bf16_bits(np.asarray(values, dtype=np.float32))
    with np.errstate(under="ignore", over="ignore"):
        return np.asarray(values).astype(np.float16 if fmt == "f16" else np.float32)


def _size(value: int | Fraction) -> int:
    if isinstance(value, Fraction) or value < 0:
        raise ValueError(f"size {value} is not a whole, non-negative number")
    return value


def _errors(got: np.ndarray, want: np.ndarray) -> tuple[float, float]:
    if got.size == 0 or got.shape != want.shape:
        return (0.0, 0.0) if got.shape == want.shape else (float("inf"), float("inf"))
    g, w = got.astype(np.float64), want.astype(np.float64)
    with np.errstate(invalid="ignore"):
        diff = np.abs(g - w)
        diff[(g == w) | (np.isnan(g) & np.isnan(w))] = 0.0  # equal infinities and NaN where NaN is due
    rel = diff / np.maximum(np.abs(w), 1e-30)
    return float(np.nanmax(diff)), float(np.nanmax(rel))


def _plain(got: np.ndarray, want: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Arrays of structs as the float64 values of their fields (padding left out), each
    struct's fields along a last axis; other arrays as given. Two structured dtypes that differ
    compare as nothing alike (an empty array against a NaN)."""
    if got.dtype.names is None and want.dtype.names is None:
        return got, want
    if got.dtype != want.dtype:
        return np.zeros((0,)), np.full((1,), np.nan)
    return (
        structured_to_unstructured(got, dtype=np.float64),
        structured_to_unstructured(want, dtype=np.float64),
    )


def case_label(case: Case, args: Mapping[str, Any]) -> str:
    """How reports name a case: its label, else its dims (``n=4096``), else its arrays' shapes."""
    if case.label:
        return case.label
    if case.dims:
        return " ".join(f"{k}={v}" for k, v in case.dims.items())
    shapes = [f"{k}{list(v.shape)}" for k, v in args.items() if isinstance(v, np.ndarray)]
    return " ".join(shapes)


def run_case(
    kernels: ModuleType, package: manifest.Manifest, case: Case, rng: np.random.Generator, where: str
) -> tuple[str, float, float, bool, float, str]:
    """Build a case's inputs, run the kernel, compare.

    Returns the label, the largest absolute and relative errors, whether all written arrays are
    within tolerance, the seconds the kernel call took, and the error the call raised (a failed
    row, not an exception: one broken kernel does not hide the others). A reference or input
    problem raises :class:`HatchSlangError`; a kernel the device cannot run (``slangrt``'s
    ``UnsupportedKernelError``) raises :class:`Skipped` with the reason.
    """
    module = Path(kernels.__file__ or "").stem
    if _mapped_outputs(kernels, case.entry) is not None:
        return _run_mapped(kernels, case, where)
    try:
        _, function, entry = find_entry(package, module, case.entry)
    except KeyError:
        raise HatchSlangError(f"{where}: {_no_entry(package, module, case.entry)}") from None
    args = contract_inputs(entry, case.dims, case.args, rng, where=where)
    expect = case.expect(_copies(args)) if callable(case.expect) else case.expect
    run_args = _copies(args)
    start = time.perf_counter()
    try:
        getattr(kernels, function)(**run_args)
    except Exception as e:
        if _unsupported(e):
            raise Skipped(case_label(case, args), str(e)) from None
        inf = float("inf")
        return (
            case_label(case, args),
            inf,
            inf,
            False,
            time.perf_counter() - start,
            f"{type(e).__name__}: {e}",
        )
    elapsed = time.perf_counter() - start
    bf16 = {b["name"] for b in entry["bindings"] if b.get("dtype") == "bf16"}
    worst_abs, worst_rel, ok = _compare(case, expect, run_args, bf16)
    return case_label(case, args), worst_abs, worst_rel, ok, elapsed, ""


def _compare(
    case: Case, expect: Expected, got: Mapping[str, Any], bf16: Collection[str] = ()
) -> tuple[float, float, bool]:
    """The largest absolute and relative errors of ``got``'s arrays against ``expect``'s, and
    whether all are within the case's tolerances (``bf16``: arrays compared as the values their
    bits hold, not as 16-bit integers)."""
    worst_abs = worst_rel = 0.0
    ok = True
    for name, want in expect.items():
        value = got[name]  # a slangrt.Tensor (a pointer's argument, a mapped output) read back
        value = value.numpy() if isinstance(value, Tensor) else value
        if name in bf16:
            value, want = bf16_values(np.asarray(value)), bf16_values(np.asarray(want))
        plain, wanted = _plain(np.asarray(value), np.asarray(want))
        a, r = _errors(plain, wanted)
        worst_abs, worst_rel = max(worst_abs, a), max(worst_rel, r)
        with np.errstate(under="ignore", over="ignore"):  # f16 results compare with tiny tolerances
            close = plain.shape == wanted.shape and bool(
                np.allclose(plain, wanted, atol=case.atol, rtol=case.rtol, equal_nan=True)
            )
        ok = ok and close
    return worst_abs, worst_rel, ok


def _mapped_outputs(kernels: ModuleType, name: str) -> tuple[str, ...] | None:
    """The output names of mapped function ``name`` (``slang-map``: the return value is
    ``result``, then each out parameter), or None where ``name`` is no mapped function."""
    specs = [
        v for k, v in vars(kernels).items() if k == f"_hs_spec_{name}" or k.startswith(f"_hs_spec_{name}_")
    ]
    obj = getattr(kernels, name, None)
    if not specs or not type(obj).__name__.startswith("_hs_Mapped_"):
        return None
    return tuple(p.name for p in specs[0].outputs)


def _run_mapped(kernels: ModuleType, case: Case, where: str) -> tuple[str, float, float, bool, float, str]:
    """:func:`run_case` for a mapped function: called with the case's arguments (all given: a
    mapped function has no contract to build them from); ``expect`` names its outputs."""
    outputs = _mapped_outputs(kernels, case.entry) or ()
    args = dict(case.args)
    expect = case.expect(_copies(args)) if callable(case.expect) else case.expect
    unknown = sorted(set(expect) - set(outputs))
    if unknown:
        raise HatchSlangError(
            f"{where}: `{case.entry}` has no output {unknown[0]!r}; its outputs: {list(outputs)}"
        )
    start = time.perf_counter()
    try:
        got = getattr(kernels, case.entry)(**_copies(args))
    except Exception as e:
        return (
            case_label(case, args),
            float("inf"),
            float("inf"),
            False,
            time.perf_counter() - start,
            f"{type(e).__name__}: {e}",
        )
    elapsed = time.perf_counter() - start
    values = dict(zip(outputs, got if len(outputs) > 1 else (got,), strict=True))
    worst_abs, worst_rel, ok = _compare(case, expect, values)
    return case_label(case, args), worst_abs, worst_rel, ok, elapsed, ""


def _unsupported(e: Exception) -> bool:
    """Whether ``e`` says the device cannot run the kernel (not that the kernel is wrong)."""
    try:  # a kernel the device cannot run, or an image format it cannot use that way
        from slangrt import UnsupportedFeatureError
    except ImportError:  # an older runtime: it has no such error
        return False
    return isinstance(e, UnsupportedFeatureError)


def _copies(args: Mapping[str, Any]) -> dict[str, Any]:
    return {k: (v.copy() if isinstance(v, np.ndarray) else v) for k, v in args.items()}


@dataclass(frozen=True)
class CaseRun:
    """One reference case, ready to run: what :func:`reference_cases` yields."""

    shader: str  # the shader's file name, as rows show it
    kernels: ModuleType  # its generated wrapper module
    manifest: manifest.Manifest  # the package manifest
    case: Case
    where: str  # ``<name>.py case N (entry)``, for messages
    rng: np.random.Generator  # the shader's generator: inputs are drawn from it in case order
    reference: ModuleType  # the loaded reference module (``bench`` asks it for ``flops``)


class NoReference(HatchSlangError):
    """None of the selected shaders has a reference ``<name>.py``."""


def selected_shaders(config: BuildConfig, names: list[str] | None = None) -> list[Source]:
    """The configured shaders that ``names`` pick (as ``hatch-slang build`` does: module name,
    file name or path); all of them when ``names`` is empty."""
    srcs, _ = read_sources(config.root, list(config.shaders))  # unreadable files: not ours to report
    return select(srcs, names) if names else srcs


def reference_path(src: Source) -> Path | None:
    """The reference ``<name>.py`` beside a shader, or None when it has none."""
    path = src.path.with_suffix(".py")
    return path if path.is_file() else None


def referenced_shaders(config: BuildConfig, names: list[str] | None = None) -> list[tuple[Source, Path]]:
    """The selected shaders (:func:`selected_shaders`) that have a reference ``<name>.py`` beside them.

    :class:`NoReference` when none has, saying how to write one.
    """
    chosen = selected_shaders(config, names)
    found = [(s, ref) for s in chosen if (ref := reference_path(s)) is not None]
    if not found:
        which = (
            f"{', '.join(s.rel for s in chosen)} has no" if names else "none of the configured shaders has a"
        )
        raise NoReference(
            f"no reference to run against: {which} `<name>.py` beside it. Write one defining "
            "`cases(rng)`, which yields `hatch_slang.validate.Case(entry, dims=..., expect=...)` "
            "(see `hatch-slang validate --help`)"
        )
    return found


def unreferenced_shaders(config: BuildConfig, names: list[str] | None = None) -> list[str]:
    """The selected shaders (:func:`selected_shaders`) that have no reference ``<name>.py``
    beside them: what ``validate`` and ``bench`` say they leave out."""
    return [s.rel for s in selected_shaders(config, names) if reference_path(s) is None]


def reference_cases(config: BuildConfig, names: list[str] | None = None, seed: int = 0) -> Iterator[CaseRun]:
    """Every case of every selected shader's reference, in shader order, then case order.

    Each shader's kernels are imported, and its random generator seeded with ``seed``, just
    before its first case; its inputs are built as the cases are consumed.
    """
    for src, ref_path in referenced_shaders(config, names):
        ref = load_reference(ref_path)
        cases = getattr(ref, "cases", None)
        if not callable(cases):
            raise HatchSlangError(f"{ref_path.name} defines no `cases(rng)` function")
        kernels = import_kernels(config, src.module)
        package = load_manifest(kernels)
        rng = np.random.default_rng(seed)
        for number, case in enumerate(cases(rng), start=1):
            where = f"{ref_path.name} case {number} ({case.entry})"
            yield CaseRun(src.path.name, kernels, package, case, where, rng, ref)


def validate(
    config: BuildConfig,
    names: list[str] | None = None,
    seed: int = 0,
    on_row: Callable[[Row], None] | None = None,
) -> Iterator[Row]:
    import slangrt

    try:
        device = slangrt.device().info.name
    except slangrt.SlangRTError as e:
        raise HatchSlangError(str(e)) from None
    for run in reference_cases(config, names, seed):
        try:
            result = run_case(run.kernels, run.manifest, run.case, run.rng, run.where)
        except Skipped as s:
            row = Row(run.shader, run.case.entry, device, s.label, 0.0, 0.0, False, skipped=s.reason)
        else:
            label, worst_abs, worst_rel, ok, elapsed, error = result
            row = Row(run.shader, run.case.entry, device, label, worst_abs, worst_rel, ok, elapsed, error)
        if on_row is not None:
            on_row(row)
        yield row
