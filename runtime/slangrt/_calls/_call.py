"""Argument checking and packing for generated kernel wrappers.

Generated modules call only these helpers, through :mod:`slangrt.wrapper_api` (as ``_c``), its
public and versioned face; everything a wrapper checks is checked here, so every message has the
same shape: the kernel, the argument, the axis, what was expected (and where that expectation
came from) and what was given. Nothing is written to a caller's array unless the kernel ran to
completion.
"""

from __future__ import annotations

import array
import math
import operator
import struct
import threading
from collections.abc import Mapping
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from .._devices._sampler import Sampler
from .._devices._tensor import Tensor
from .._errors import UnsupportedFeatureError
from .._recording._callkey import value_key
from ..dtypes import DTYPES
from . import _image_args, _values
from ._arguments import Packed
from ._indirect import IndirectGrid, is_indirect
from ._kernel import Kernel
from ._lastcall import LastCall
from ._library import KernelLibrary

Number = int | Fraction
Bound = npt.NDArray[Any] | Tensor | Packed

_LIBRARIES: dict[str, KernelLibrary] = {}
_NP_DTYPES: dict[str, np.dtype[Any]] = {}  # dtype names -> dtypes, made once
_LIBRARIES_LOCK = threading.Lock()


def library(module_file: str) -> KernelLibrary:
    """The kernel library (manifest + SPIR-V) in the directory of a generated module."""
    directory = str(Path(module_file).resolve().parent)
    with _LIBRARIES_LOCK:
        lib = _LIBRARIES.get(directory)
        if lib is None:
            lib = _LIBRARIES[directory] = KernelLibrary(Path(directory))
        return lib


def div(a: Number, b: Number) -> Number:
    """Exact division: an int where ``b`` divides ``a``, else a Fraction."""
    if b == 0:
        raise ZeroDivisionError("division by zero in a Dispatch or shape expression")
    if a.__class__ is int and b.__class__ is int:
        q, r = divmod(a, b)
        return q if not r else Fraction(a, b)
    return Fraction(a) / Fraction(b)


def ceil(x: Number) -> int:
    return x if x.__class__ is int else math.ceil(x)


def min(a: Number, b: Number) -> Number:
    return a if a <= b else b


def max(a: Number, b: Number) -> Number:
    return a if a >= b else b


def grid_dim(axis: str, value: Number) -> int:
    if value.__class__ is int and value >= 0:
        return value
    if isinstance(value, Fraction):
        if value.denominator != 1:
            raise ValueError(f"grid {axis} = {value} is not a whole number of thread groups")
        value = int(value)
    if value < 0:
        raise ValueError(f"grid {axis} = {value} is negative")
    return int(value)


def grid_arg(grid: object) -> tuple[int, int, int] | IndirectGrid:
    """Validate an explicit ``grid=`` argument (kernels without a Dispatch line): a tuple of
    ints, or an indirect grid (:func:`grid_or`)."""
    if is_indirect(grid) or isinstance(grid, np.ndarray):
        return _indirect_arg(grid)
    if not isinstance(grid, tuple | list) or not 1 <= len(grid) <= 3:
        raise TypeError(
            f"argument `grid` must be a tuple of 1 to 3 ints, or a grid read on the device "
            f"(slangrt.IndirectGrid(tensor, offset), a slangrt.Tensor), got {grid!r}"
        )
    dims = []
    for axis, v in zip("xyz", grid):
        try:
            n = operator.index(v)
        except TypeError:
            raise TypeError(f"argument `grid` axis {axis} must be an int, got {type(v).__name__}") from None
        if n < 0:
            raise ValueError(f"argument `grid` axis {axis} is negative ({n})")
        dims.append(n)
    return (dims + [1, 1])[:3]  # type: ignore[return-value]


def grid_or(grid: object, computed: tuple[int, int, int]) -> tuple[int, int, int] | IndirectGrid:
    """The grid of a kernel with a Dispatch line: ``computed`` from it, unless the caller gave
    ``grid=``, a grid read on the device: a ``slangrt.IndirectGrid`` or a ``slangrt.Tensor``
    (its first three elements); a tuple is refused (the Dispatch line gives that grid)."""
    if grid is None:
        return computed
    if is_indirect(grid) or isinstance(grid, np.ndarray):
        return _indirect_arg(grid)
    raise TypeError(
        "argument `grid` of a kernel with a Dispatch line takes only a grid read on the device "
        "(slangrt.IndirectGrid(tensor, offset), a slangrt.Tensor), got "
        f"{type(grid).__name__}; its grid from the host comes from the Dispatch line"
    )


def _indirect_arg(grid: object) -> IndirectGrid:
    """An indirect ``grid=``, checked as far as the host can without the kernel's device."""
    if isinstance(grid, np.ndarray):
        raise TypeError(
            "argument `grid` is a NumPy array: a grid read on the device is a slangrt.Tensor "
            "(slangrt.IndirectGrid(tensor, offset)); a grid known on the host is a tuple of ints"
        )
    g = grid if isinstance(grid, IndirectGrid) else IndirectGrid(grid)  # type: ignore[arg-type]
    t = g.tensor
    if t.dtype != np.uint32:
        raise TypeError(f"argument `grid` must be a uint32 tensor of (x, y, z) group counts, got {t.dtype}")
    if t.closed:
        raise ValueError("argument `grid` is a closed tensor")
    if g.offset + 3 > t.size:
        raise ValueError(
            f"argument `grid`: offset {g.offset} needs {g.offset + 3} elements (x, y, z), the "
            f"tensor has {t.size}"
        )
    return g


def _overlap(a: npt.NDArray[Any], b: npt.NDArray[Any]) -> bool:
    """Whether two arrays have an element in common (a bounds check first, exact only if needed)."""
    if not np.may_share_memory(a, b):
        return False
    try:
        return bool(np.shares_memory(a, b, max_work=100_000))  # type: ignore[arg-type]  # stubs: -1 or 0
    except Exception:  # numpy's TooHardError: too costly to decide, so take it that they do
        return True


def _pointer(field: str, value: object) -> int:
    """The device address a pointer argument packs (its tensor goes to the dispatch's refs)."""
    if isinstance(value, Tensor):
        return value.device_address
    if isinstance(value, np.ndarray):
        raise TypeError(
            f"argument `{field}` is a pointer: pointer arguments take a slangrt.Tensor, not a "
            "numpy.ndarray (e.g. `slangrt.Tensor.from_numpy(a)`)"
        )
    raise TypeError(
        f"argument `{field}` is a pointer: pointer arguments take a slangrt.Tensor, "
        f"got {type(value).__name__}"
    )


def _struct(code: str) -> struct.Struct:
    """How a scalar of ``code`` is packed: little-endian, as NumPy's ``<f4``, ``<u4``, ..."""
    t = DTYPES[code]
    if code == "bf16":
        return struct.Struct("<H")  # its bits (see _bf16_bits)
    if t.is_float:
        return struct.Struct("<" + {2: "e", 4: "f", 8: "d"}[t.size])
    c = {1: "b", 2: "h", 4: "i", 8: "q"}[t.size]
    return struct.Struct("<" + (c.upper() if code.startswith("u") else c))


# Each scalar code's struct, whether it is a float, and its integer range.
_SCALARS: dict[str, tuple[struct.Struct, bool, int, int]] = {
    code: (_struct(code), t.is_float, *(t.range or (0, 0))) for code, t in DTYPES.items()
}
_ADDRESS = struct.Struct("<Q")
# What pack made for recent fields (plain ints and floats), by _memo_key: calls with the same
# params reuse the (read-only) bytes instead of checking and packing them again. Shared by all
# threads without a lock: a get, a store and clear() are each one dict operation, atomic under
# CPython's GIL and under free-threaded CPython's per-dict lock; a race only packs twice or
# drops an entry, and every entry holds bytes equal to what packing its key makes.
_PACKED: dict[tuple[Any, ...], Packed] = {}
_PACKED_MAX = 4096


def _memo_key(size: int, fields: tuple[tuple[str, int, str, object], ...]) -> tuple[Any, ...] | None:
    """The memo's key for these fields: their values by ``_callkey``'s rule (floats by their
    bits, as they pack); None where a value is not a plain int, or a float for a float field,
    or is a pointer (its tensor is collected at every call)."""
    floats = False
    for _, _, scalar, value in fields:
        cls = value.__class__
        if cls is int:
            if scalar == "ptr":
                return None
        elif cls is float and _SCALARS[scalar][1]:
            floats = True
        else:
            return None
    if not floats:  # ints are their own keys: the fields themselves are the key
        return (size, fields)
    return (size, *[(f, o, s, value_key(v)) for f, o, s, v in fields])


def _bf16_bits(value: float) -> int:
    """The bf16 nearest ``value`` (ties to even, as ml_dtypes casts), as its 16 bits."""
    bits: int = struct.unpack("<I", struct.pack("<f", value))[0]  # OverflowError past f32's range
    if math.isnan(value):
        return (bits >> 16) | 0x40  # a quiet NaN
    rounded = (bits + 0x7FFF + ((bits >> 16) & 1)) >> 16
    if rounded & 0x7F80 == 0x7F80 and not math.isinf(value):
        raise OverflowError
    return rounded


def pack(
    name: str,
    size: int,
    fields: tuple[tuple[str, int, str, object], ...],
    whole: tuple[_values.Whole, ...] = (),
    structs: tuple[_values.StructValue, ...] = (),
) -> Packed:
    """Pack params fields into the bytes of the ``name`` binding (unused slots stay zero).

    Scalar codes are those of :data:`slangrt.dtypes.DTYPES` plus ``"ptr"``: a :class:`Tensor`,
    packed as its 8-byte device address. ``whole``: vector, matrix and array fields, one value
    each, and ``structs``: struct and array-of-struct fields, one structured value each
    (:mod:`slangrt._calls._values`); params with either are not memoized.
    """
    memo = _memo_key(size, fields) if not whole and not structs else None
    if memo is not None:
        found = _PACKED.get(memo)
        if found is not None:
            return found
    out = bytearray(size)
    for field, offset, scalar, value in fields:
        if scalar == "ptr":
            _ADDRESS.pack_into(out, offset, _pointer(field, value))
            continue
        fmt, is_float, lo, hi = _SCALARS[scalar]
        if is_float:
            if isinstance(value, bool) or not isinstance(value, int | float | np.integer | np.floating):
                raise TypeError(f"argument `{field}` must be a float, got {type(value).__name__}")
            try:
                if scalar == "bf16":
                    fmt.pack_into(out, offset, _bf16_bits(float(value)))
                    continue
                fmt.pack_into(out, offset, float(value))  # rounds to nearest, as NumPy casts
            except OverflowError:  # past the type's largest finite value (inf itself packs)
                raise ValueError(f"argument `{field}` = {value!r} is outside the {scalar} range") from None
        else:
            try:
                n = operator.index(value)  # type: ignore[arg-type]
            except TypeError:
                raise TypeError(f"argument `{field}` must be an int, got {type(value).__name__}") from None
            if not lo <= n <= hi:
                raise ValueError(f"argument `{field}` = {n} is outside the {scalar} range [{lo}, {hi}]")
            fmt.pack_into(out, offset, n)
    for value in whole:
        _values.write(out, value)
    for item in structs:
        _values.write_struct(out, item)
    packed = Packed(np.frombuffer(out, np.uint8), shared=memo is not None)
    if memo is not None:
        if len(_PACKED) >= _PACKED_MAX:
            _PACKED.clear()
        _PACKED[memo] = packed
    return packed


class Dims:
    """Dimension names bound while checking one call's arguments."""

    __slots__ = ("cuda", "descriptors", "kernel", "pointers", "shapes", "values", "writebacks", "written")

    def __init__(self, kernel: str) -> None:
        self.kernel = kernel
        # name -> (value, where it came from: `(arg, axis)`, axis None for all of `arg`'s elements,
        # -1 for the argument `arg` itself).
        self.values: dict[str, tuple[int, tuple[str, int | None]]] = {}
        self.shapes: dict[str, tuple[int, ...]] = {}  # checked arrays' shapes (flat: (size,))
        self.writebacks: list[tuple[npt.NDArray[Any], npt.NDArray[Any]]] = []
        self.written: list[tuple[str, Bound]] = []  # the arguments for written bindings
        self.pointers: list[tuple[str, Tensor]] = []  # tensors passed to pointer parameters
        self.descriptors = False  # an image, sampler or texel buffer was checked (never kept)
        self.cuda: Any = None  # the call's torch CUDA arguments (slangrt._cuda._call.CudaCall)

    def _err(self, msg: str) -> str:
        return f"{self.kernel}(): {msg}"

    @staticmethod
    def _where(where: tuple[str, int | None]) -> str:
        arg, axis = where
        if axis is None:
            return f"`{arg}` (all elements)"
        return f"argument `{arg}`" if axis < 0 else f"`{arg}` axis {axis}"

    def pack(
        self,
        name: str,
        size: int,
        fields: tuple[tuple[str, int, str, object], ...],
        whole: tuple[_values.Whole, ...] = (),
        structs: tuple[_values.StructValue, ...] = (),
    ) -> Packed:
        """:func:`pack`, with the kernel named in its errors like every other argument error.

        The tensors of ``"ptr"`` fields are collected: :meth:`run` passes them as the
        dispatch's ``refs``.
        """
        try:
            out = pack(name, size, fields, whole, structs)
        except TypeError as e:
            raise TypeError(self._err(str(e))) from None
        except ValueError as e:
            raise ValueError(self._err(str(e))) from None
        if not out.shared:  # (a shared one has no pointers)
            for field, _, scalar, value in fields:
                if (
                    scalar == "ptr"
                    and isinstance(value, Tensor)
                    and not any(t is value for _, t in self.pointers)
                ):
                    self.pointers.append((field, value))
        return out

    def pointer(self, name: str, value: object, dtype: np.dtype[Any]) -> None:
        """A pointer to structs: ``value`` must be a :class:`Tensor` of the pointee's structured
        ``dtype`` (equal, field names included); :meth:`pack` then packs its address and
        :meth:`run` checks its device as it checks every pointer's."""
        try:
            _pointer(name, value)
        except TypeError as e:
            raise TypeError(self._err(str(e))) from None
        assert isinstance(value, Tensor)
        if value._dtype != dtype or value._dtype.names != dtype.names:
            raise TypeError(
                self._err(
                    f"argument `{name}` is a pointer to structs: it takes a slangrt.Tensor whose "
                    f"dtype is {_struct_name(dtype)} (slangrt.Tensor.from_numpy(np.zeros(n, "
                    f"{_struct_name(dtype, 'that dtype')}))), got a Tensor of {value._dtype}"
                )
            )

    def given(self, name: str, value: object) -> None:
        if value is None:
            return
        if value.__class__ is int:
            n: int = value
        else:
            if isinstance(value, bool):
                raise TypeError(self._err(f"argument `{name}` must be an int, got bool"))
            try:
                n = operator.index(value)  # type: ignore[arg-type]
            except TypeError:
                raise TypeError(
                    self._err(f"argument `{name}` must be an int, got {type(value).__name__}")
                ) from None
        if n < 0:
            raise ValueError(self._err(f"argument `{name}` must be >= 0, got {n}"))
        self.values[name] = (n, (name, -1))

    def get(self, name: str) -> int:
        return self.values[name][0]

    def derived(self, name: str, value: Number) -> int:
        """A params field the comment defines by an expression (``total = rows * dim``)."""
        if isinstance(value, Fraction):
            if value.denominator != 1:
                raise ValueError(self._err(f"params field `{name}` = {value} is not a whole number"))
            value = int(value)
        return int(value)

    def _bind(self, arg: str, axis: int, name: str, size: int, *, whole: bool = False) -> None:
        known = self.values.get(name)
        if known is None:
            self.values[name] = (size, (arg, None if whole else axis))
        elif known[0] != size:
            what = (
                f"argument `{arg}` has {size} elements (`{name}`)"
                if whole
                else f"argument `{arg}` axis {axis} (`{name}`) has size {size}"
            )
            raise ValueError(self._err(f"{what}, expected {known[0]} (from {self._where(known[1])})"))

    def expect(self, arg: str, axis: int, text: str, value: Number) -> None:
        actual = self.shapes[arg][axis]
        if value != actual:
            raise ValueError(
                self._err(f"argument `{arg}` axis {axis} has size {actual}, expected `{text}` = {value}")
            )

    def array(
        self,
        name: str,
        value: object,
        dtype: str | np.dtype[Any] | None,
        shape: tuple[str | int | None, ...] | None,
        *,
        writable: bool,
        checked: bool,
        flat: bool = False,
        raw: bool = False,
    ) -> Bound:
        """Check the argument for one binding; return what to bind.

        ``dtype``: a scalar type's NumPy name, or a structured dtype (a buffer of structs: the
        argument's dtype must equal it, field names included); None: any.
        ``value``: a :class:`Tensor` (a view included), a NumPy array, or any host array NumPy
        can wrap without a copy (``__dlpack__``, ``__array_interface__``, the buffer protocol;
        ``__array__`` for read-only bindings). ``raw``: the kernel reads the binding as bytes in
        4-byte words (a byte-address buffer, or 32-bit words documented as holding bytes or
        quantised blocks): a read-only argument whose size is not a multiple of 4 is bound from a
        zero-padded copy, a written one is refused.
        """
        tensor = value.__class__ is Tensor
        if tensor:
            assert isinstance(value, Tensor)  # for the type checker (python -O skips it)
            got_dtype, got_shape = value._dtype, value._shape  # native byte order, always
        else:
            if not isinstance(value, Tensor | np.ndarray):
                value = self._other_array(name, value, writable)
            got_dtype, got_shape = value.dtype, value.shape
        if dtype is not None:
            self._check_dtype(name, dtype, got_dtype)
        if not tensor and got_dtype.byteorder == ">":
            raise TypeError(self._err(f"argument `{name}` is big-endian ({got_dtype.str}); use native order"))
        if checked and flat:
            self._check_flat(name, shape, got_shape)
        elif checked:
            self._check_shape(name, shape, got_shape)
        if writable:
            self._not_aliased(name, value)
        if raw and value.nbytes % 4:
            return self._padded(name, value, writable)
        if isinstance(value, Tensor):
            return value
        assert isinstance(value, np.ndarray)
        return self._contiguous(name, value, writable)

    def image(
        self,
        name: str,
        value: object,
        shape: tuple[str | int | None, ...] | None,
        *,
        dim: str,
        arrayed: bool,
        channels: int,
        texel: str | None,
        format: str | None,
        writable: bool,
    ) -> object:
        """A storage or sampled image binding's argument, a :class:`slangrt.Image` or a NumPy
        array (see ``_image_args``): checked, its documented size axes bound; what to bind."""
        return _image_args.image(
            self,
            name,
            value,
            shape,
            dim=dim,
            arrayed=arrayed,
            channels=channels,
            texel=texel,
            format=format,
            writable=writable,
        )

    def combined(
        self,
        name: str,
        value: object,
        shape: tuple[str | int | None, ...] | None,
        *,
        dim: str,
        arrayed: bool,
        channels: int,
        texel: str | None,
        sampler: Sampler,
    ) -> object:
        """A combined image sampler's argument, an image or ``(image, Sampler)``; returns the
        ``(image, sampler)`` to bind (``sampler``: the wrapper's default)."""
        return _image_args.combined(
            self,
            name,
            value,
            shape,
            dim=dim,
            arrayed=arrayed,
            channels=channels,
            texel=texel,
            sampler=sampler,
        )

    def sampler(self, name: str, value: object, default: Sampler) -> Sampler:
        """A sampler argument: ``default`` for None, else a :class:`slangrt.Sampler`."""
        return _image_args.sampler(self, name, value, default)

    def texels(
        self,
        name: str,
        value: object,
        shape: tuple[str | int | None, ...] | None,
        *,
        channels: int,
        texel: str | None,
        writable: bool,
        format: str | None = None,
    ) -> object:
        """A texel buffer's argument, a :class:`Tensor` or NumPy array ``(N,)`` or ``(N, C)``;
        ``format``: a storage texel buffer's declared format, which the dtype must be."""
        return _image_args.texels(
            self, name, value, shape, channels=channels, texel=texel, writable=writable, format=format
        )

    def _check_dtype(self, name: str, dtype: str | np.dtype[Any], got: np.dtype[Any]) -> None:
        if isinstance(dtype, np.dtype):  # a struct's structured dtype: equal, field names included
            if got != dtype or got.names != dtype.names:
                raise TypeError(self._err(f"argument `{name}` {_struct_wanted(dtype)}, got {got}"))
            return
        want = _NP_DTYPES.get(dtype)
        if want is None and dtype == "bfloat16":
            self._bf16(name, got)
        elif want is None:
            want = _NP_DTYPES[dtype] = np.dtype(dtype)
        if want is not None and got is not want and got != want:
            raise TypeError(self._err(f"argument `{name}` must have dtype {dtype}, got {got}"))

    def _check_flat(
        self, name: str, shape: tuple[str | int | None, ...] | None, got: tuple[int, ...]
    ) -> None:
        """`flat[n]`: any shape; the one dim is the total number of elements."""
        size = math.prod(got)
        self.shapes[name] = (size,)
        dim = (shape or (None,))[0]
        if isinstance(dim, str):
            self._bind(name, 0, dim, size, whole=True)
        elif isinstance(dim, int) and dim != size:
            raise ValueError(self._err(f"argument `{name}` has {size} elements, expected {dim}"))

    def _check_shape(
        self, name: str, shape: tuple[str | int | None, ...] | None, got: tuple[int, ...]
    ) -> None:
        """The argument's dimensions against the comment's: sizes, and names bound on first use."""
        want_ndim = len(shape) if shape is not None else 1
        if len(got) != want_ndim:
            raise ValueError(
                self._err(
                    f"argument `{name}` must have {want_ndim} dimension(s), got {len(got)} (shape {got})"
                )
            )
        self.shapes[name] = got
        values = self.values
        for axis, dim in enumerate(shape or (None,)):
            if dim is None:
                continue
            size = got[axis]
            if dim.__class__ is str:
                known = values.get(dim)
                if known is None:
                    values[dim] = (size, (name, axis))
                elif known[0] != size:
                    self._bind(name, axis, dim, size)  # raises, saying where `dim` came from
            elif isinstance(dim, int) and dim != size:
                raise ValueError(self._err(f"argument `{name}` axis {axis} has size {size}, expected {dim}"))

    def _contiguous(self, name: str, value: npt.NDArray[Any], writable: bool) -> npt.NDArray[Any]:
        """A NumPy argument as bound: itself, or (strided or misaligned) a contiguous copy,
        copied back after the kernel where it is written."""
        if writable and not value.flags.writeable:
            raise ValueError(
                self._err(f"argument `{name}` is written by the kernel but the array is read-only")
            )
        if value.flags.c_contiguous and value.ctypes.data % value.dtype.alignment == 0:
            return value
        copy = np.ascontiguousarray(value)
        if copy is value:
            copy = value.copy()
        if writable:
            self.writebacks.append((value, copy))
        return copy

    def _bf16(self, name: str, got: np.dtype[Any]) -> None:
        """A bf16 binding takes ml_dtypes' ``bfloat16`` arrays or their bits as ``uint16``."""
        if not DTYPES["bf16"].accepts(got):
            raise TypeError(
                self._err(
                    f"argument `{name}` must have dtype bfloat16 (ml_dtypes.bfloat16, or its bits "
                    f"as uint16), got {got}"
                )
            )

    def _other_array(self, name: str, value: object, writable: bool) -> npt.NDArray[Any] | Tensor:
        """A torch CUDA tensor as the slangrt tensor it binds as (``slangrt._cuda``), else a
        host array."""
        from .._cuda._call import CudaCall, is_cuda_tensor

        if is_cuda_tensor(value):
            if self.cuda is None:
                try:
                    self.cuda = CudaCall(self.kernel, value)
                except UnsupportedFeatureError as e:
                    raise UnsupportedFeatureError(
                        self._err(f"argument `{name}` is a torch CUDA tensor, but {e}")
                    ) from None
            return self.cuda.bind(name, value, writable)  # type: ignore[no-any-return]
        return self._host_array(name, value, writable)

    def _host_array(self, name: str, value: object, writable: bool) -> npt.NDArray[Any]:
        """A NumPy array over another host array's memory (no copy), else a TypeError."""
        tp = type(value)
        if tp is bytes or tp is bytearray:
            out: npt.NDArray[Any] = np.frombuffer(value, np.uint8)  # type: ignore[call-overload]
            return out
        if tp is memoryview or tp is array.array:
            arr: npt.NDArray[Any] = np.asarray(value)
            if arr.dtype.kind in "biufc":
                return arr
        what = f"argument `{name}` must be a numpy.ndarray or slangrt.Tensor, got {type(value).__name__}"
        if isinstance(value, list | tuple):
            raise TypeError(self._err(f"{what}: pass np.asarray({name}, dtype=...) for a sequence"))
        if value is None or isinstance(value, np.generic | int | float | complex | str):
            raise TypeError(self._err(what))
        try:
            if hasattr(value, "__dlpack__"):
                try:
                    arr = np.from_dlpack(value)
                except TypeError as e:
                    raise BufferError(str(e)) from None
            elif hasattr(value, "__array_interface__"):
                arr = np.asarray(value)
            else:
                try:
                    mem = memoryview(value)  # type: ignore[arg-type]
                except TypeError:
                    mem = None
                if mem is not None:
                    arr = np.asarray(mem)
                elif hasattr(value, "__array__"):
                    arr = np.asarray(value, copy=False) if writable else np.asarray(value)
                else:
                    raise TypeError(
                        self._err(
                            f"{what} (or an array exposing __dlpack__, __array_interface__ or the "
                            "buffer protocol)"
                        )
                    )
        except (BufferError, ValueError, RuntimeError) as e:
            raise TypeError(
                self._err(f"argument `{name}`: cannot read {type(value).__name__} as a host array ({e})")
            ) from None
        if arr.dtype.hasobject or arr.dtype.kind not in "biufc":
            raise TypeError(self._err(f"argument `{name}` must be a numeric array, got dtype {arr.dtype}"))
        return arr

    def _padded(self, name: str, value: Bound, writable: bool) -> Bound:
        """A byte buffer whose size is not a multiple of 4: zero-padded to one (read-only)."""
        n = value.nbytes
        if writable:
            raise ValueError(
                self._err(
                    f"argument `{name}` holds {n} bytes, but the kernel reads and writes it in 4-byte "
                    f"words; pass {-(-n // 4) * 4} bytes (a multiple of 4)"
                )
            )
        size = -(-n // 4) * 4
        if isinstance(value, Tensor):
            return value._padded(size)
        out = np.zeros(size, np.uint8)
        out[:n] = np.ascontiguousarray(value).reshape(-1).view(np.uint8)
        return out

    def _not_aliased(self, name: str, value: Bound) -> None:
        """Two written bindings may not share memory: which write would win is undefined.

        (A written binding may share memory with a read-only one: NumPy arguments are copied
        at the call, so the kernel reads the values they had when it was called.)
        """
        for other_name, other in self.written:
            if (
                other is value
                or (
                    isinstance(value, np.ndarray) and isinstance(other, np.ndarray) and _overlap(value, other)
                )
                or (isinstance(value, Tensor) and isinstance(other, Tensor) and value._overlaps(other))
            ):
                raise ValueError(
                    self._err(
                        f"arguments `{other_name}` and `{name}` share memory and the kernel writes "
                        "both; pass separate arrays"
                    )
                )
        self.written.append((name, value))

    def _same_device(self, name: str, t: Tensor, kernel: Kernel) -> None:
        dev = kernel.device
        if t.device is not dev:
            raise ValueError(
                self._err(f"argument `{name}` is a tensor on {t.device!r}; the kernel runs on {dev!r}")
            )

    def run(
        self,
        kernel: Kernel,
        buffers: Mapping[Any, Any],
        grid: tuple[int, int, int] | IndirectGrid,
        push: Packed | None = None,
        *,
        last: LastCall | None = None,
        args: tuple[object, ...] = (),
        scalars: tuple[object, ...] = (),
    ) -> None:
        """Dispatch: ``buffers`` keyed as ``Kernel.dispatch`` takes them, ``push`` the bytes
        :meth:`pack` made for the push-constant block (None: the kernel has none). Tensors
        packed for pointer parameters go to the dispatch's ``refs``. ``last``: the wrapper's
        :class:`LastCall`, which keeps this call (its array ``args`` and other arguments
        ``scalars``, as the wrapper was called) where it can be repeated unchecked (never one
        with images, samplers or texel buffers: those take every check each call)."""
        # Packed params are read-only NumPy arguments: the kernel binds them from its device's
        # params cache (same bytes, same memory), so the call does not wait for them.
        refs: list[Tensor] = []
        for name, t in self.pointers:
            self._same_device(name, t, kernel)
            refs.append(t)
        if isinstance(grid, IndirectGrid) and self.cuda is None:
            self._same_device("grid", grid.tensor, kernel)
        if self.cuda is not None:
            self.cuda.run(kernel, lambda k: k.dispatch(buffers, grid, push, refs))
        else:
            kernel.dispatch(buffers, grid, push, refs)
        for original, copy in self.writebacks:
            original[...] = copy
        if self.cuda is not None:
            return
        if last is not None and push is None and not refs and not self.writebacks and not self.descriptors:
            if isinstance(grid, IndirectGrid):
                return  # (checked each call: its tensor's counts are read on the device)
            last.keep(args, scalars, kernel, buffers, grid)


def _struct_name(dtype: np.dtype[Any], otherwise: str = "") -> str:
    """How a message names a struct's dtype: ``module.Name`` as the generated module's metadata
    gives it, else ``otherwise`` (or the dtype itself)."""
    meta = dtype.metadata
    named = meta.get("slang_struct") if meta is not None else None
    return named if isinstance(named, str) else otherwise or str(dtype)


def _struct_wanted(dtype: np.dtype[Any]) -> str:
    """What an argument of structs must be, and how to make one."""
    named = _struct_name(dtype, "")
    if named == str(dtype):
        return f"must have the structured dtype {dtype}"
    return f"must be an array of {named} (np.zeros(n, {named}): {dtype.itemsize} bytes each)"
