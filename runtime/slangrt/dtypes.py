"""The scalar types kernels exchange with Python: the one table, by code (``f32``, ``u8``, ...).

The codes are those of ``manifest.json`` (a binding's ``dtype``, a params field's type) and of
``Dims.pack``. slangrt packs values with this table; hatch-slang takes from it the codes a
comment may name, each type's size and its NumPy dtype.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class DType:
    code: str  # `f32`, `i8`, ...
    numpy: str  # the NumPy dtype's name (`float32`); Slang's reflection names scalars the same way
    size: int  # bytes
    is_float: bool
    range: tuple[int, int] | None  # integers: the smallest and largest value; floats: None

    @property
    def little_endian(self) -> str:
        """The NumPy dtype string of its little-endian form (``<f4``, ``u1``): how it is packed
        (bf16, which NumPy lacks, as its 16 bits: ``<u2``)."""
        kind = (
            "u"
            if self.code == "bf16"
            else "f"
            if self.is_float
            else "u"
            if self.code.startswith("u")
            else "i"
        )
        return f"{'<' if self.size > 1 else ''}{kind}{self.size}"

    def accepts(self, dtype: object) -> bool:
        """Whether an array of NumPy ``dtype`` holds this type's values: its own dtype; for bf16
        (``bfloat16`` of ml_dtypes, which NumPy lacks, or its bits as ``uint16``) either."""
        if self.code == "bf16":
            return getattr(dtype, "itemsize", 0) == 2 and str(dtype) in ("bfloat16", "uint16")
        return str(dtype) == self.numpy


def _float(bits: int) -> DType:
    return DType(f"f{bits}", f"float{bits}", bits // 8, True, None)


def _int(bits: int, signed: bool) -> DType:
    lo, hi = (-(2 ** (bits - 1)), 2 ** (bits - 1) - 1) if signed else (0, 2**bits - 1)
    code = f"{'i' if signed else 'u'}{bits}"
    return DType(code, f"{'int' if signed else 'uint'}{bits}", bits // 8, False, (lo, hi))


DTYPES: dict[str, DType] = {
    t.code: t
    for t in (
        _float(32),
        _float(16),
        _float(64),
        # The upper half of an f32 (ml_dtypes' `bfloat16`, Slang's `BFloat16`, which reflection
        # names `bfloat16`); NumPy has no such dtype: arrays pass as ml_dtypes.bfloat16 or uint16.
        DType("bf16", "bfloat16", 2, True, None),
        _int(8, True),
        _int(16, True),
        _int(32, True),
        _int(64, True),
        _int(8, False),
        _int(16, False),
        _int(32, False),
        _int(64, False),
    )
}
