"""The spec of one shader: what the compiled code says of each binding, and what merging that
with the comment produces for code generation (:mod:`hatch_slang.spec.merge` builds it,
:mod:`hatch_slang.codegen.wrappers` reads it).

Frozen dataclasses only. A :class:`Binding` is one binding as the compiled code has it: Slang's
reflection and the entry's SPIR-V merged, once, by :meth:`Binding.merged`; the checks against the
comment and everything after them read it, never the two sources. A :class:`ShaderSpec` holds one
:class:`EntrySpec` per entry point, each with the :class:`BufferSpec` (the wrapper's argument) of
every binding it uses; a params buffer lists its fields as :class:`ParamSlot` values.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, get_args

from slangrt.dtypes import DTYPES
from slangrt.spirv import Image, Member, Resource, SpecConstant

from hatch_slang.comments.expr import Expr
from hatch_slang.compile.discover import Shader
from hatch_slang.spec.reflection import ReflectedBinding, Scalar
from hatch_slang.spec.structs import Field, Struct, settle

# The keyword argument a wrapper adds for the grid of an entry that has no Dispatch line; no
# argument of such an entry may have its name (hatch_slang.spec.merge says so, naming the line).
GRID_ARGUMENT = "grid"


def register(kind: str, writable: bool) -> str:
    """The HLSL register letter of a binding: `b` a uniform buffer, `s` a sampler, `u` read-write,
    `t` read-only."""
    return "b" if kind == "uniform" else "s" if kind == "sampler" else "u" if writable else "t"


# The descriptor kinds of images, samplers and texel buffers, as a BufferSpec's kind: the
# manifest's format-3 kinds (slangrt.manifest.Kind), slangrt's `BindingSpec` kinds.
ImageKind = Literal[
    "storage_image",
    "sampled_image",
    "sampler",
    "combined_image_sampler",
    "uniform_texel_buffer",
    "storage_texel_buffer",
]
IMAGE_KINDS: tuple[ImageKind, ...] = get_args(ImageKind)
Texel = Literal["float", "int", "uint"]


@dataclass(frozen=True)
class SamplerDefault:
    """The sampler a wrapper passes when the caller gives none: the comment's words, else
    linear filtering, clamped to the edge, no comparison (``slangrt.Sampler()``)."""

    filter: Literal["linear", "nearest"] = "linear"
    address: Literal["clamp", "repeat", "mirror", "border"] = "clamp"
    compare: str | None = None  # a comparison sampler's operation (`less`, `less_equal` ...)


@dataclass(frozen=True)
class ImageSpec:
    """What an image, texel-buffer, combined or sampler argument is (the compiled code's facts,
    the comment's where the code does not say: a sampler's default).

    ``dim``: ``1d``, ``2d``, ``3d``, ``cube``, or ``buffer`` for a texel buffer; ``arrayed``: an
    array texture; ``format``: a storage image's declared format in Slang's names (``rgba8``),
    None when undeclared; ``texel``: how the kernel reads a texel's components; ``channels``: the
    texel type's vector width (a declared format's channel count wins). A sampler has only
    ``sampler``; a combined image sampler has both.
    """

    dim: Literal["1d", "2d", "3d", "cube", "buffer"] | None
    arrayed: bool = False
    format: str | None = None
    texel: Texel | None = None
    channels: int | None = None
    sampler: SamplerDefault | None = None

    @property
    def size_axes(self) -> int:
        """How many size axes a documented shape has (the channel axis never counts): a cube
        is (6, H, W), a cube array (6 * n, H, W); another array adds a leading layers axis."""
        if self.dim is None:
            return 0
        axes = {"1d": 1, "2d": 2, "3d": 3, "cube": 3, "buffer": 1}[self.dim]
        return axes + (1 if self.arrayed and self.dim not in ("cube", "buffer") else 0)


def is_float(scalar: str) -> bool:
    """Whether a packed scalar type (``f32``, ``u32`` ...) holds a float."""
    return scalar in DTYPES and DTYPES[scalar].is_float


@dataclass(frozen=True)
class Binding:
    """One descriptor binding, or the push-constant range, as the compiled code has it.

    Two sources, each the authority on its own facts: Slang's reflection on what the source
    declares (the variable's type: buffer kind, access, element layout, aliases), for every global
    of the file; the SPIR-V on what one entry really uses (the descriptor type it declares, its
    block layout, whether its declaration allows writes). ``descriptor`` is None for a binding no
    entry's SPIR-V uses (reflection alone); a buffer reflection did not list has the SPIR-V's facts
    alone.

    Room for what the next kinds of binding add: an image's dimensionality, arrayed,
    multisampled, depth, sampled or storage, format and texel type are ``image`` (the SPIR-V's
    :class:`~slangrt.spirv.Image`, read from its OpTypeImage; None for buffers, blocks, samplers
    and bindings no entry's SPIR-V uses), its texel type's width ``channels`` (reflection's), a
    struct's layout is ``members`` (the SPIR-V's leaves, with offsets), a device address is a
    member whose scalar is ``ptr`` (with its ``pointee``).
    """

    set: int
    index: int
    variable: str  # the Slang variable (reflection's name, else the SPIR-V's OpName)
    # From reflection (for a binding only the SPIR-V has: what its block layout implies).
    kind: Literal["storage", "uniform"]  # a uniform block, or anything else bound as storage
    writable: bool  # the type allows writes (RW, Append ...), or any alias's does
    scalars: tuple[Scalar, ...]  # one element flattened; empty when unknown
    element_size: int  # bytes per element (the stride); 0 when unknown
    scalar_types: frozenset[str]  # the element type of this variable and of each alias (one type each)
    byte_address: bool  # this variable or an alias is a byte-address buffer
    opaque: str  # reflection's word for what is no buffer (`texture2D`, `samplerState` ...), else ""
    # From the SPIR-V (None/empty/defaults when no entry's SPIR-V uses it).
    descriptor: Literal["storage", "uniform", "push_constant", "other"] | None
    type_text: str  # the SPIR-V's description, for messages ("" without SPIR-V)
    declared_writable: bool  # the SPIR-V declaration allows writes
    members: tuple[Member, ...]  # the SPIR-V block flattened (for {T data[]} buffers, T's leaves)
    block_size: int  # a uniform or push-constant block's size in bytes
    array_size: int = 1  # descriptor count: N for arrays of resources, 0 for unsized arrays
    image: Image | None = None  # an image, texel buffer or combined image sampler (see above)
    # From reflection: an image's or texel buffer's texel type's vector width (`Texture2D<float4>`:
    # 4); a sampler's comparison (`SamplerComparisonState`). None/False where it does not say.
    channels: int | None = None
    comparison: bool = False
    # A buffer of structs whose element reflection describes and the SPIR-V's leaves confirm
    # (hatch_slang.spec.structs.settle); None for anything else.
    struct: Struct | None = None
    # A uniform block: its top-level fields as reflection lays them out (empty without
    # reflection); hatch_slang.spec.uniforms checks the SPIR-V's leaves against them.
    fields: tuple[Field, ...] = ()
    offsets: tuple[tuple[str, str, int, int], ...] = ()  # (ReflectedBinding.offsets)

    @property
    def key(self) -> tuple[int, int]:
        return (self.set, self.index)

    @property
    def scalar_type(self) -> str | None:
        """The element's scalar type when all its components share one."""
        kinds = {s.scalar for s in self.scalars}
        return kinds.pop() if len(kinds) == 1 else None

    @property
    def register(self) -> str:
        """The register letter a binding line must write for it (:func:`register`)."""
        return register(self.kind, self.writable)

    @classmethod
    def merged(cls, reflected: ReflectedBinding | None, resource: Resource | None) -> Binding:
        """The one merge of the two sources; at least one must be given."""
        if reflected is None:
            if resource is None:
                raise ValueError("a binding needs reflection or SPIR-V")
            return cls._from_spirv(resource)
        views = (reflected, *reflected.aliases)
        layout = reflected.struct
        if layout is not None and not reflected.aliases:
            layout = (
                settle(layout, resource.members, resource.element_stride) if resource is not None else None
            )
        else:
            layout = None
        return cls(
            reflected.set,
            reflected.index,
            reflected.variable,
            reflected.kind,
            reflected.writable,
            reflected.scalars,
            reflected.element_size,
            reflected.scalar_types,
            any(v.shape == "byteAddressBuffer" for v in views),
            reflected.opaque,
            *_spirv_facts(resource),
            channels=reflected.channels,
            comparison=reflected.comparison,
            struct=layout,
            fields=reflected.fields,
            offsets=reflected.offsets,
        )

    @classmethod
    def _from_spirv(cls, resource: Resource) -> Binding:
        # A block reflection does not describe (a push-constant range, a GLSL-style buffer): its
        # SPIR-V layout, read as reflection would describe a uniform buffer.
        scalars = tuple(
            Scalar(m.name or "x", "u32" if m.scalar == "bool" else m.scalar, m.offset)
            for m in resource.members
        )
        block = resource.storage in ("uniform", "push_constant")
        kinds = {s.scalar for s in scalars}
        return cls(
            resource.set or 0,
            resource.binding or 0,
            resource.variable,
            "uniform" if block else "storage",
            resource.declared_writable,
            scalars,
            resource.size if block else resource.element_stride,
            frozenset(kinds) if len(kinds) == 1 else frozenset(),
            False,
            "",
            *_spirv_facts(resource),
        )


def _spirv_facts(
    r: Resource | None,
) -> tuple[
    Literal["storage", "uniform", "push_constant", "other"] | None,
    str,
    bool,
    tuple[Member, ...],
    int,
    int,
    Image | None,
]:
    if r is None:
        return (None, "", False, (), 0, 1, None)
    descriptor: Literal["storage", "uniform", "push_constant", "other"] = (
        r.storage if r.storage in ("storage", "uniform", "push_constant") else "other"  # type: ignore[assignment]
    )
    return (descriptor, r.type_text, r.declared_writable, r.members, r.size, r.array_size, r.image)


@dataclass(frozen=True)
class ParamSlot:
    name: str  # "" for a literal slot
    scalar: str  # the packed type: u32, i32, f32, ...
    offset: int  # bytes into the params buffer
    as_float: bool  # Python sees a float (f32 fields and `x_bits` fields)
    literal: int | None = None  # a constant the wrapper writes
    derived: Expr | None = None  # computed by the wrapper from other sizes
    # A whole value (a vector, matrix or array of them, one keyword argument): its shape as Slang
    # indexes it (`float4x3 m`: (4, 3), `m[i][j]` at index (i, j)) and the bytes between
    # neighbours along each axis; `offset` is element 0's. Empty for a scalar.
    shape: tuple[int, ...] = ()
    strides: tuple[int, ...] = ()

    def element_offsets(self) -> list[int]:
        """The byte offset of each element, in index order (one for a scalar)."""
        offsets = [self.offset]
        for n, stride in zip(self.shape, self.strides):
            offsets = [o + k * stride for o in offsets for k in range(n)]
        return offsets

    # A pointer to structs (scalar "ptr"): the pointee's layout (a Tensor of its dtype). A struct
    # value (scalar "struct", one keyword argument): the struct as laid out in its block, `shape`
    # (n,) and `strides` (its stride,) for an array of them, () for one.
    struct: Struct | None = None

    @property
    def whole(self) -> bool:
        """A value that is no Python scalar: a vector, matrix, array or struct (default None)."""
        return bool(self.shape) or self.scalar == "struct"


@dataclass(frozen=True)
class BufferSpec:
    index: int
    name: str
    role: Literal["data", "params"]
    # push: the push-constant block (no descriptor); an image kind: an image, sampler or texel
    # buffer, whose facts are `image`.
    kind: Literal["storage", "uniform", "push"] | ImageKind
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
    binding: Binding | None = None  # what the compiled code says of it
    image: ImageSpec | None = None  # an image, sampler or texel buffer (kind one of IMAGE_KINDS)
    # An array of structs: the wrapper's NumPy structured dtype (dtype is then None).
    struct: Struct | None = None

    @property
    def key(self) -> tuple[int, int]:
        return (self.set, self.index)

    @property
    def is_image(self) -> bool:
        """An image, sampler, combined image sampler or texel buffer (no buffer of arrays)."""
        return self.kind in IMAGE_KINDS

    @property
    def register(self) -> str:
        """The register of the argument as bound (:func:`register`), index included: `u1`;
        ``push`` for the push-constant block, which has none."""
        return "push" if self.kind == "push" else register(self.kind, self.writable) + str(self.index)


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
    # Its named specialization constants (by SpecId): optional keyword arguments, at their
    # defaults when omitted; per axis of `threads` (their defaults) the constant that sets it.
    constants: tuple[SpecConstant, ...] = ()
    threads_by: tuple[str | None, str | None, str | None] = (None, None, None)
    subgroup_size: int | None = None  # the subgroup size it requires (`Subgroup size:`); None: any


@dataclass(frozen=True)
class Variant:
    """A ``slang-variants`` function: it runs the first of ``entries`` (EntrySpec names, in
    order) that the device supports."""

    name: str
    line: int
    entries: tuple[str, ...]


@dataclass(frozen=True)
class ShaderSpec:
    shader: Shader
    entries: tuple[EntrySpec, ...]
    dependencies: tuple[str, ...]
    warnings: tuple[str, ...]
    variants: tuple[Variant, ...] = ()  # `slang-variants` functions (hatch_slang.spec.variants)
    # A `slang-variants` line of generic entries: its function, which picks by the arrays' dtypes
    # among the variant functions it made, one per instance (Variant.entries: their names).
    variant_pickers: tuple[Variant, ...] = ()
