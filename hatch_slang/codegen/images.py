"""The generated code of image, sampler, combined image sampler and texel-buffer arguments: their
annotations, their checks (``Dims.image``, ``Dims.combined``, ``Dims.sampler``, ``Dims.texels``
of :mod:`slangrt.wrapper_api`), their docstring lines, the module's default samplers, and their
manifest entries.

What reaches the code is literals only: names are validated identifiers, kinds, dims, texel types,
formats and sampler words come from fixed vocabularies and are written as escaped string literals.
"""

from __future__ import annotations

import json

from slangrt import manifest

from hatch_slang.codegen import layout
from hatch_slang.spec.images import describe
from hatch_slang.spec.model import BufferSpec, ImageSpec, SamplerDefault


def _lit(text: str | None) -> str:
    return "None" if text is None else json.dumps(text, ensure_ascii=True)


def annotation(b: BufferSpec, own: dict[str, str]) -> str:
    """The parameter's type: an image, a combined one (or with its sampler), a texel buffer's
    array or tensor, a sampler (keyword-only, None: the default)."""
    array = "{npt}.NDArray[{Any}]".format(**own)
    rt = own["slangrt"]
    if b.kind == "sampler":
        return f"{rt}.Sampler | None"
    if b.kind in ("uniform_texel_buffer", "storage_texel_buffer"):
        return f"{array} | {rt}.Tensor"
    image = f"{array} | {rt}.Image"
    if b.kind == "combined_image_sampler":
        return f"{image} | {own['tuple']}[{image}, {rt}.Sampler]"
    return image


def default_sampler(s: SamplerDefault, slangrt: str) -> str:
    """The module-level value of a default sampler: ``slangrt.Sampler(filter=..., address=...)``."""
    args = [f"filter={_lit(s.filter)}", f"address={_lit(s.address)}"]
    if s.compare is not None:
        args.append(f"compare={_lit(s.compare)}")
    return f"{slangrt}.Sampler({', '.join(args)})"


def _shape(b: BufferSpec) -> layout.Code:
    if not b.shape_checked or b.shape is None:
        return "None"
    return layout.tuple_of(
        [
            _lit(x.names[0]) if x.is_name else str(x.constant) if x.constant is not None else "None"
            for x in b.shape
        ]
    )


def check(b: BufferSpec, dims: str, default: str | None) -> layout.Code:
    """The body's check of the argument (what goes into ``run``'s bindings); ``default``: the
    module-level name of its default sampler (samplers and combined image samplers)."""
    spec = b.image
    assert spec is not None
    name = _lit(b.name)
    if b.kind == "sampler":
        assert default is not None
        return layout.call(f"{dims}.sampler", [name, b.name, default])
    common = [f"channels={spec.channels}", f"texel={_lit(spec.texel)}"]
    if b.kind in ("uniform_texel_buffer", "storage_texel_buffer"):
        items = [name, b.name, _shape(b), *common, f"writable={b.writable}"]
        if b.kind == "storage_texel_buffer":  # its declared format wins, as a storage image's
            items.append(f"format={_lit(spec.format)}")
        return layout.call(f"{dims}.texels", items)
    lead = [name, b.name, _shape(b), f"dim={_lit(spec.dim)}", f"arrayed={spec.arrayed}", *common]
    if b.kind == "combined_image_sampler":
        assert default is not None
        return layout.call(f"{dims}.combined", [*lead, f"sampler={default}"])
    return layout.call(f"{dims}.image", [*lead, f"format={_lit(spec.format)}", f"writable={b.writable}"])


def doc_line(b: BufferSpec) -> str:
    """``src: 2-D sampled image, float4 texels ``[h][w]``, read-only. <the comment's words>``."""
    spec = b.image
    assert spec is not None
    what = describe(b.kind, spec)
    if b.kind == "sampler":
        return f"    {b.name}: {what}; None: that default. {b.doc}".rstrip()
    shape = "".join(f"[{d.text}]" for d in b.shape) if b.shape and b.shape_checked else ""
    shape = f" ``{shape}``" if shape else " (any size)"
    access = "written" if b.writable else "read-only"
    extra = "; an image, or (image, slangrt.Sampler)" if b.kind == "combined_image_sampler" else ""
    return f"    {b.name}: {what}{shape}, {access}{extra}. {b.doc}".rstrip()


def manifest_fields(b: BufferSpec, binding: manifest.Binding) -> None:
    """The format-3 keys of an image kind's manifest binding (:mod:`slangrt.manifest`)."""
    spec: ImageSpec | None = b.image
    assert spec is not None
    if spec.sampler is not None:
        s = spec.sampler
        binding["sampler"] = {"filter": s.filter, "address": s.address, "compare": s.compare}
    if b.kind == "sampler":
        return
    assert spec.dim is not None and spec.texel is not None and spec.channels is not None
    binding["dim"] = spec.dim
    binding["arrayed"] = spec.arrayed
    binding["format"] = spec.format
    binding["texel"] = spec.texel
    binding["channels"] = spec.channels
