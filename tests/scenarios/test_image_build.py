"""The build side of images, samplers and texel buffers (issue 22): real Slang compiled by slangpy,
documented and idiomatic, through the spec, the manifest (format 3) and the generated wrappers.

What the compiled code says of a binding (its descriptor type, dimensionality, arrayed, declared
format, texel type, channel count) wins; a comment that says otherwise is a warning naming its
line, never a failed build. A comment gives what the code does not: a sampler's default and the
names of an image's size axes, which Dispatch lines and params use like array dims. The runtime's
``Dims.image`` and its kin check the arguments; here the generated source, the manifest,
``mypy --strict``, and two of the wrappers end to end on the device.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import slangrt
from slangrt import wrapper_api

from hatch_slang.builder import pipeline
from hatch_slang.config.project import load_project_config

from ..helpers import BuiltPackage, built_package, requires_device

pytestmark = pytest.mark.compile

RESIZE = """\
// Resize an image, sampled bilinearly.
//
// Bindings:
//   t0: src texture float4 [h][w]
//   s1: samp sampler nearest repeat
//   u2: dst rgba8 image [oh][ow]
//   b3: params (h, w, gain)
//
// Dispatch: (ceil(ow / 8), ceil(oh / 8))
struct Params { uint h; uint w; float gain; };
[[vk::binding(0)]] Texture2D<float4> src;
[[vk::binding(1)]] SamplerState samp;
[[vk::binding(2)]] [[vk::image_format("rgba8")]] RWTexture2D<float4> dst;
[[vk::binding(3)]] ConstantBuffer<Params> params;

[shader("compute")]
[numthreads(8, 8, 1)]
void resize(uint3 id : SV_DispatchThreadID)
{
    uint w, h;
    dst.GetDimensions(w, h);
    if (id.x >= w || id.y >= h) return;
    float2 uv = (float2(id.xy) + 0.5) / float2(w, h);
    dst[id.xy] = src.SampleLevel(samp, uv, 0) * params.gain + float(params.h + params.w) * 0.0;
}
"""

# Every kind, in idiomatic Slang with no comment: (declaration, a statement that uses it).
IDIOMATIC = """\
[[vk::binding(0)]] Texture2D<float4> tex;
[[vk::binding(1)]] SamplerState samp;
[[vk::binding(2)]] [[vk::image_format("rgba8")]] RWTexture2D<float4> rgba;
[[vk::binding(3)]] [[vk::image_format("r32ui")]] RWTexture2D<uint> hist;
[[vk::binding(4)]] Sampler2D<float4> comb;
[[vk::binding(5)]] Texture2DArray<float> layers;
[[vk::binding(6)]] Texture3D<float2> vol;
[[vk::binding(7)]] Buffer<float> lut;
[[vk::binding(8)]] RWBuffer<float4> texels;
[[vk::binding(9)]] SamplerComparisonState shadow;
[[vk::binding(10)]] Texture2D<float> depth;
[[vk::binding(11)]] RWStructuredBuffer<float> o;

[shader("compute")]
[numthreads(64, 1, 1)]
void every(uint3 id : SV_DispatchThreadID)
{
    float4 a = tex.SampleLevel(samp, float2(0.5, 0.5), 0) + comb.SampleLevel(float2(0.5, 0.5), 0);
    a += layers.Load(int4(0, 0, 0, 0)) + vol.Load(int4(0, 0, 0, 0)).x + lut[id.x];
    a += depth.SampleCmpLevelZero(shadow, float2(0, 0), 0.5);
    rgba[id.xy] = a;
    texels[id.x] = a;
    InterlockedAdd(hist[uint2(id.x, 0)], 1u);
    o[id.x] = a.x;
}
"""
# What each binding of IDIOMATIC is in the manifest (the keys a format-3 binding adds).
EXPECTED: dict[str, dict[str, Any]] = {
    "tex": {"kind": "sampled_image", "dim": "2d", "arrayed": False, "format": None, "texel": "float",
            "channels": 4, "dtype": "f32", "writable": False},
    "samp": {"kind": "sampler", "sampler": {"filter": "linear", "address": "clamp", "compare": None},
             "dtype": None},
    "rgba": {"kind": "storage_image", "dim": "2d", "format": "rgba8", "texel": "float", "channels": 4,
             "dtype": "u8", "writable": True},
    "hist": {"kind": "storage_image", "dim": "2d", "format": "r32ui", "texel": "uint", "channels": 1,
             "dtype": "u32", "writable": True},
    "comb": {"kind": "combined_image_sampler", "dim": "2d", "texel": "float", "channels": 4,
             "sampler": {"filter": "linear", "address": "clamp", "compare": None}},
    "layers": {"kind": "sampled_image", "dim": "2d", "arrayed": True, "channels": 1},
    "vol": {"kind": "sampled_image", "dim": "3d", "arrayed": False, "channels": 2},
    "lut": {"kind": "uniform_texel_buffer", "dim": "buffer", "channels": 1, "texel": "float",
            "writable": False},
    "texels": {"kind": "storage_texel_buffer", "dim": "buffer", "channels": 4, "writable": True},
    "shadow": {"kind": "sampler", "sampler": {"filter": "linear", "address": "clamp", "compare": "less"}},
    "depth": {"kind": "sampled_image", "dim": "2d", "channels": 1},
    "o": {"kind": "storage", "dtype": "f32"},
}  # fmt: skip


def _project(tmp_path: Path, sources: dict[str, str], strict: bool = True) -> Path:
    root = tmp_path / "imgpkg"
    (root / "shaders").mkdir(parents=True)
    for name, text in sources.items():
        (root / "shaders" / name).write_text(text)
    (root / "pyproject.toml").write_text(
        '[project]\nname = "imgpkg"\nversion = "0.1"\n\n'
        "[tool.hatch.build.hooks.slang]\n"
        f'shaders = ["shaders/*.slang"]\npackage = "imgpkg/kernels"\nstrict = {str(strict).lower()}\n'
    )
    return root


def _build(root: Path) -> pipeline.BuildOutput:
    return pipeline.build(load_project_config(root))


def _flat(source: str) -> str:
    """Generated code with each call on one line (as written where it fits in 88 columns)."""
    one = re.sub(r"\n\s*", " ", source)
    return re.sub(r",\s*\)", ")", re.sub(r"\(\s+", "(", one))


def _bindings(out: pipeline.BuildOutput, shader: str, entry: str) -> dict[str, dict[str, Any]]:
    manifest = json.loads(out.files["manifest.json"])
    assert manifest["format"] == 3
    return {b["name"]: b for b in manifest["shaders"][shader]["entries"][entry]["bindings"]}


def test_an_idiomatic_kernel_binds_every_kind_from_the_compiled_code(tmp_path: Path) -> None:
    out = _build(_project(tmp_path, {"every.slang": IDIOMATIC}))
    bindings = _bindings(out, "every", "every")
    assert set(bindings) == set(EXPECTED)
    for name, want in EXPECTED.items():
        got = {k: bindings[name].get(k) for k in want}
        assert got == want, name
    assert "shape" in bindings["tex"] and bindings["tex"]["shape"] is None
    assert "sampler" not in bindings["tex"] and "dim" not in bindings["samp"]
    source = out.files["every.py"].decode()
    assert "    tex: npt.NDArray[Any] | slangrt.Image,\n" in source
    assert "    lut: npt.NDArray[Any] | slangrt.Tensor,\n" in source
    assert (
        "    comb: npt.NDArray[Any] | slangrt.Image | tuple[npt.NDArray[Any] | slangrt.Image, "
        "slangrt.Sampler],\n" in source
    )
    assert (
        "    *,\n    samp: slangrt.Sampler | None = None,\n    shadow: slangrt.Sampler | None = None,\n"
        in source
    )
    assert '_shadow_default = slangrt.Sampler(filter="linear", address="clamp", compare="less")\n' in source
    assert (
        '_d.texels("texels", texels, None, channels=4, texel="float", writable=True, format=None)'
        in _flat(source)
    )
    assert '_samp = _d.sampler("samp", samp, _samp_default)' in source
    assert "_every_last.repeat" not in source and "last=" not in source  # never repeated unchecked
    assert "        hist: 2-D storage image, format r32ui, uint texels (any size), written." in source
    assert not [w for w in out.warnings if "warning:" in w], out.warnings


def test_a_documented_kernel_names_sizes_gives_sampler_defaults_and_infers_params(tmp_path: Path) -> None:
    out = _build(_project(tmp_path, {"resize.slang": RESIZE}))
    assert not [w for w in out.warnings if "warning" in w], out.warnings
    bindings = _bindings(out, "resize", "resize")
    assert bindings["src"]["shape"] == ["h", "w"] and bindings["src"]["kind"] == "sampled_image"
    assert bindings["dst"]["shape"] == ["oh", "ow"] and bindings["dst"]["dtype"] == "u8"
    assert bindings["samp"]["sampler"] == {"filter": "nearest", "address": "repeat", "compare": None}
    source = out.files["resize.py"].decode()
    assert '_samp_default = slangrt.Sampler(filter="nearest", address="repeat")\n' in source
    assert (
        '    _src = _d.image(\n        "src",\n        src,\n        ("h", "w"),\n        dim="2d",' in source
    )
    assert 'format="rgba8",\n        writable=True,\n' in source
    assert "    h: int | None = None,\n    w: int | None = None,\n" in source  # inferred from src
    assert '    oh = _d.get("oh")\n' in source and '_c.grid_dim("x", _c.ceil(_c.div(ow, 8)))' in source
    assert "        src: 2-D sampled image, float4 texels ``[h][w]``, read-only." in source
    assert "        samp: sampler, default nearest repeat; None: that default." in source


# A line of RESIZE replaced, and the warning it gives (the compiled code wins, the build succeeds).
MISMATCHES = {
    "texture as a buffer": (
        "t0: src texture float4 [h][w]",
        "t0: src f32 [h][w]",
        "binding `src` is documented as a buffer (the line names no image, texture, sampler or texel "
        "buffer) but the shader's `src` is a sampled image",
    ),
    "another format": (
        "u2: dst rgba8 image [oh][ow]",
        "u2: dst r32f image [oh][ow]",
        "binding `dst` is documented with format `r32f` but the shader's `dst` is `rgba8`",
    ),
    "another channel count": (
        "t0: src texture float4 [h][w]",
        "t0: src Texture2D<float2> [h][w]",
        "binding `src` is documented with 2 channels but the shader's `src` is 4",
    ),
    "another dimensionality": (
        "t0: src texture float4 [h][w]",
        "t0: src 3d texture float4 [h][w]",
        "binding `src` is documented as 3d but the shader's `src` is 2d",
    ),
    "a sampler as an image": (
        "s1: samp sampler nearest repeat",
        "t1: samp texture",
        "binding `samp` is documented as a sampled image but the shader's `samp` is a sampler",
    ),
    "a storage image on t": (
        "u2: dst rgba8 image [oh][ow]",
        "t2: dst rgba8 storage image [oh][ow]",
        "binding `dst` is declared `t2` but the shader's `dst` is a storage image, whose register is `u2`",
    ),
}


@pytest.mark.parametrize("case", sorted(MISMATCHES))
def test_a_comment_that_disagrees_is_a_warning_naming_the_line(tmp_path: Path, case: str) -> None:
    old, new, said = MISMATCHES[case]
    assert old in RESIZE
    source = RESIZE.replace(old, new)
    line = next(n for n, text in enumerate(source.splitlines(), 1) if new in text)
    out = _build(_project(tmp_path, {"resize.slang": source}))  # strict: still builds
    warned = [w for w in out.warnings if w.startswith(f"shaders/resize.slang:{line}: warning: ")]
    assert any(said in w and "the compiled code wins" in w for w in warned), out.warnings
    bindings = _bindings(out, "resize", "resize")
    assert bindings["src"]["kind"] == "sampled_image" and bindings["src"]["channels"] == 4
    assert bindings["dst"]["format"] == "rgba8" and bindings["samp"]["kind"] == "sampler"


def test_a_shape_with_the_wrong_axes_is_a_warning_and_left_unchecked(tmp_path: Path) -> None:
    source = RESIZE.replace("t0: src texture float4 [h][w]", "t0: src texture float4 [h][w][4]")
    source = source.replace("(h, w, gain)", "(rows, cols, gain)")
    out = _build(_project(tmp_path, {"resize.slang": source}))
    said = "binding `src` is documented with shape [h][w][4] but the shader's `src` (2-D sampled image"
    assert any(w.startswith("shaders/resize.slang:4: warning: ") and said in w for w in out.warnings)
    assert _bindings(out, "resize", "resize")["src"]["shape"] is None


def test_a_buffer_documented_as_an_image_is_a_warning_and_stays_a_buffer(tmp_path: Path) -> None:
    source = IDIOMATIC.replace(
        "[[vk::binding(0)]]", "// Bindings:\n//   u11: o image f32 [n]\n[[vk::binding(0)]]", 1
    )
    out = _build(_project(tmp_path, {"every.slang": source}))
    said = "binding `o` is documented as an image but the shader's `o` is a storage buffer"
    assert any(w.startswith("shaders/every.slang:2: warning: ") and said in w for w in out.warnings)
    assert _bindings(out, "every", "every")["o"]["kind"] == "storage"


@pytest.mark.parametrize(
    ("words", "default"),
    [
        ("samp sampler linear mirror", {"filter": "linear", "address": "mirror", "compare": None}),
        ("samp nearest clamp to border", {"filter": "nearest", "address": "border", "compare": None}),
        ("samp sampler", {"filter": "linear", "address": "clamp", "compare": None}),
    ],
)
def test_a_samplers_comment_words_give_its_default(
    tmp_path: Path, words: str, default: dict[str, Any]
) -> None:
    source = RESIZE.replace("s1: samp sampler nearest repeat", f"s1: {words}")
    out = _build(_project(tmp_path, {"resize.slang": source}))
    assert _bindings(out, "resize", "resize")["samp"]["sampler"] == default
    expected = (
        f'_samp_default = slangrt.Sampler(filter="{default["filter"]}", address="{default["address"]}")'
    )
    assert expected in out.files["resize.py"].decode()


def test_a_build_without_images_keeps_manifest_format_2(tmp_path: Path) -> None:
    out = _build(_project(tmp_path, {"o.slang": IDIOMATIC.split("[[vk::binding(0)]]")[0] + _PLAIN}))
    assert json.loads(out.files["manifest.json"])["format"] == 2


_PLAIN = """\
[[vk::binding(0)]] RWStructuredBuffer<float> o;
[shader("compute")]
[numthreads(64, 1, 1)]
void plain(uint3 id : SV_DispatchThreadID) { o[id.x] = 1.0; }
"""

# The names of wrapper_api.Dims that image wrappers call; until the runtime provides them (another
# branch), mypy's complaint about exactly these is the only one allowed.
_DIMS_METHODS = ("image", "combined", "sampler", "texels")
USE = """\
import numpy as np
import slangrt
from imgpkg.kernels import every, resize

img = np.zeros((4, 4, 4), np.float32)
resize.resize(img, np.zeros((8, 8, 4), np.uint8), samp=slangrt.Sampler(filter="nearest"), gain=1.0)
lut = np.zeros(4, np.float32)
every.every(img, img, img, (img, slangrt.Sampler()), img, img, lut, lut, img, lut, grid=(1, 1, 1))
"""
# Calls mypy must refuse: a sampler given a string, an image given a list, a sampler positionally.
BAD_USES = (
    'resize.resize(img, img, samp="nearest", gain=1.0)',
    "resize.resize([[0.0]], img, gain=1.0)",
    "resize.resize(img, img, slangrt.Sampler(), gain=1.0)",
)


@pytest.mark.slow  # mypy --strict in a subprocess
def test_generated_image_wrappers_pass_mypy_strict(tmp_path: Path) -> None:
    root = _project(tmp_path, {"resize.slang": RESIZE, "every.slang": IDIOMATIC})
    pipeline.write_output(_build(root), root / "imgpkg" / "kernels")
    (root / "imgpkg" / "__init__.py").write_text("")
    (root / "use.py").write_text(USE)
    assert _mypy_errors(root) == []
    head = USE.split("resize.resize(", 1)[0]
    for bad in BAD_USES:
        (root / "use.py").write_text(head + bad + "\n")
        errors = _mypy_errors(root)
        assert errors and all(e.startswith("use.py:6: error: ") for e in errors), (bad, errors)


def _mypy_errors(root: Path) -> list[str]:
    """mypy --strict's errors on use.py and the package, but for the Dims methods the runtime of
    this checkout does not have yet."""
    mypy = Path(sys.executable).parent / "mypy"
    run = subprocess.run(
        [mypy, "--strict", "--no-incremental", "use.py", "imgpkg"], cwd=root, capture_output=True, text=True
    )
    errors = [line for line in run.stdout.splitlines() if ": error: " in line]
    missing = [m for m in _DIMS_METHODS if not hasattr(wrapper_api.Dims, m)]
    allowed = tuple(f'"Dims" has no attribute "{m}"  [attr-defined]' for m in missing)
    return [e for e in errors if not e.endswith(allowed)]


# End to end on the device, through the runtime's Dims.image and its kin.
COMBO = """\
[[vk::binding(0)]] Sampler2D<float4> comb;
[[vk::binding(1)]] Buffer<float> lut;
[[vk::binding(2)]] [[vk::image_format("rgba32f")]] RWBuffer<float4> outb;
[[vk::binding(3)]] [[vk::image_format("r32ui")]] RWTexture2D<uint> hist;

[shader("compute")]
[numthreads(4, 1, 1)]
void combo(uint3 id : SV_DispatchThreadID)
{
    uint i = id.x;
    float4 c = comb.SampleLevel(float2((i + 0.5) / 4.0, 0.5), 0);  // texel centres: exact weights
    outb[i] = c * lut[i];
    InterlockedAdd(hist[uint2(i % 2, 0)], 1u);
}
"""


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BuiltPackage]:
    root = _project(tmp_path_factory.mktemp("e2e"), {"resize.slang": RESIZE, "combo.slang": COMBO})
    with built_package(root) as package:
        yield package


@requires_device
@pytest.mark.gpu
def test_an_idiomatic_combined_sampler_texel_buffers_and_image_atomics_compute(built: BuiltPackage) -> None:
    combo = built.kernels("combo")
    img = np.random.default_rng(0).random((1, 4, 4), dtype=np.float32)  # (H, W, C)
    lut = np.arange(1, 5, dtype=np.float32)
    outb = np.zeros((4, 4), np.float32)
    hist = np.zeros((1, 2), np.uint32)
    combo.combo(img, lut, outb, hist, grid=(1, 1, 1))
    np.testing.assert_allclose(outb, img[0] * lut[:, None], rtol=1e-6)
    assert hist.tolist() == [[2, 2]]


@requires_device
@pytest.mark.gpu
def test_a_documented_resize_computes_with_its_sampler_default_and_inferred_sizes(
    built: BuiltPackage,
) -> None:
    resize = built.kernels("resize")
    src = np.random.default_rng(1).random((4, 4, 4), dtype=np.float32)
    # Nearest sampling, 2x: each texel twice along each axis; rgba8 (UNORM) rounds to 1/255.
    want = np.round(src.repeat(2, 0).repeat(2, 1) * 0.5 * 255)
    for samp in (None, slangrt.Sampler(filter="nearest", address="clamp")):
        dst = np.zeros((8, 8, 4), np.uint8)
        resize.resize(src, dst, samp=samp, gain=0.5)  # h and w are inferred from src
        assert np.abs(dst.astype(np.float64) - want).max() <= 1
    with pytest.raises(TypeError, match="samp"):
        resize.resize(src, np.zeros((8, 8, 4), np.uint8), samp="nearest", gain=0.5)


COMBO_DOC = """\
// Bindings:
//   t0: comb Sampler2D<float4> nearest repeat [h][w]
//   t1: lut Buffer<float> [n]
//   u2: outb RWBuffer<float4> rgba32f [n]
//   u3: hist r32ui image [rows][cols]
//
// Dispatch: ceil(n / 4)
"""


@requires_device
@pytest.mark.gpu
def test_documented_texel_buffers_and_combined_sampler_give_sizes_and_defaults(tmp_path: Path) -> None:
    root = _project(tmp_path, {"combo.slang": COMBO_DOC + COMBO})
    with built_package(root) as package:
        assert not [w for w in package.output.warnings if "warning" in w], package.output.warnings
        bindings = {b["name"]: b for b in package.entry("combo", "combo")["bindings"]}
        assert bindings["comb"]["sampler"] == {"filter": "nearest", "address": "repeat", "compare": None}
        assert bindings["lut"]["shape"] == ["n"] and bindings["outb"]["channels"] == 4
        assert bindings["hist"]["shape"] == ["rows", "cols"] and bindings["hist"]["dtype"] == "u32"
        img = np.random.default_rng(2).random((1, 4, 4), dtype=np.float32)
        lut = np.arange(1, 5, dtype=np.float32)
        outb = np.zeros((4, 4), np.float32)
        hist = np.zeros((1, 2), np.uint32)
        package.kernels("combo").combo(img, lut, outb, hist)  # the grid from `n`, read off lut
        np.testing.assert_allclose(outb, img[0] * lut[:, None], rtol=1e-6)
        assert hist.tolist() == [[2, 2]]
        with pytest.raises(ValueError, match="outb"):  # `n` bound by lut: 4, not 3
            package.kernels("combo").combo(img, lut, np.zeros((3, 4), np.float32), hist)


BINDLESS = """\
// Sums texels read through bindless handles.
struct Tables
{
    Texture2D<float>.Handle table;
    SamplerState.Handle samp;
};
[[vk::binding(0)]] ConstantBuffer<Tables> tables;
[[vk::binding(1)]] RWStructuredBuffer<float> out;

[shader("compute")]
[numthreads(8, 1, 1)]
void bindless(uint3 tid: SV_DispatchThreadID)
{
    out[tid.x] = tables.table.SampleLevel(tables.samp, float2(tid.x / 8.0, 0.5), 0);
}
"""


def test_bindless_handles_are_a_build_error_that_says_so(tmp_path: Path) -> None:
    """A shader that reads resources through bindless handles (`T.Handle`: Slang declares one
    descriptor array for them) fails naming the handles and the line, not Slang's array."""
    root = _project(tmp_path, {"bindless.slang": BINDLESS})
    with pytest.raises(Exception) as info:
        _build(root)
    text = str(info.value)
    assert "bindless resource handles" in text, text
    assert "shaders/bindless.slang:4" in text, text
