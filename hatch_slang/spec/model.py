"""What code generation needs of one shader: the spec that merging its comment with what the
compiler says produces (:mod:`hatch_slang.spec.merge` builds it, :mod:`hatch_slang.codegen.wrappers` reads
it).

Frozen dataclasses only: a :class:`ShaderSpec` holds one :class:`EntrySpec` per entry point, each
with the :class:`BufferSpec` of every binding it uses; a params buffer lists its fields as
:class:`ParamSlot` values.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from slangrt.dtypes import DTYPES

from hatch_slang.comments.expr import Expr
from hatch_slang.compile.discover import Shader

# The keyword argument a wrapper adds for the grid of an entry that has no Dispatch line; no
# argument of such an entry may have its name (hatch_slang.spec.merge says so, naming the line).
GRID_ARGUMENT = "grid"


def is_float(scalar: str) -> bool:
    """Whether a packed scalar type (``f32``, ``u32`` ...) holds a float."""
    return scalar in DTYPES and DTYPES[scalar].is_float


@dataclass(frozen=True)
class ParamSlot:
    name: str  # "" for a literal slot
    scalar: str  # the packed type: u32, i32, f32, ...
    offset: int  # bytes into the params buffer
    as_float: bool  # Python sees a float (f32 fields and `x_bits` fields)
    literal: int | None = None  # a constant the wrapper writes
    derived: Expr | None = None  # computed by the wrapper from other sizes


@dataclass(frozen=True)
class BufferSpec:
    index: int
    name: str
    role: Literal["data", "params"]
    kind: Literal["storage", "uniform", "push"]  # push: the push-constant block (no descriptor)
    writable: bool
    dtype: str | None  # contract dtype code (f32, ...) for data; None: any dtype
    shape: tuple[Expr, ...] | None  # None: 1-D any length (or anything, when `shape_checked` is False)
    shape_checked: bool
    doc: str
    line: int | None
    params: tuple[ParamSlot, ...] = ()
    params_size: int = 0
    flat: bool = False  # `flat[n]`: any shape, n elements in all
    set: int = 0  # descriptor set
    # The kernel reads it as bytes in 4-byte words (a byte-address buffer, or 32-bit words the
    # comment calls bytes or quantised blocks): the wrapper passes `raw=True` to `Dims.array`.
    raw: bool = False

    @property
    def key(self) -> tuple[int, int]:
        return (self.set, self.index)


@dataclass(frozen=True)
class EntrySpec:
    name: str  # as Slang spells it: the SPIR-V entry point, the manifest's key
    python: str  # its wrapper function (hatch_slang.comments.expr.entry_name: NFKC, a keyword gets `_`)
    threads: tuple[int, int, int]
    buffers: tuple[BufferSpec, ...]  # the bindings this entry uses, by index
    spirv: bytes
    grid: tuple[Expr, ...] | None  # None: the caller passes grid=
    grid_text: str | None
    inferable: tuple[str, ...]  # dims read off array shapes
    params_required: tuple[str, ...]
    params_optional: tuple[str, ...]  # params that are dims: inferred when omitted
    grid_only: tuple[str, ...] = ()  # names only the Dispatch line uses: required int arguments
    params_unread: tuple[str, ...] = ()  # fields this entry's SPIR-V never reads: optional, 0
    grid_line: int | None = None  # the Dispatch line the grid comes from


@dataclass(frozen=True)
class ShaderSpec:
    shader: Shader
    entries: tuple[EntrySpec, ...]
    dependencies: tuple[str, ...]
    warnings: tuple[str, ...]
