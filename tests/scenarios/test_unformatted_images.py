"""Storage images without a declared format (issue 22, found by the trial on public kernels).

Slang declares ``StorageImageReadWithoutFormat`` for every ``RWTexture*`` or ``RWBuffer<T>``
without ``[format(...)]``, even one the kernel only writes; SPIR-V needs it only for a read, and
Vulkan then needs ``shaderStorageImageReadWithoutFormat``, which lavapipe lacks. The build drops
it from a module that reads no image (:func:`hatch_slang.spec.reflection.normalize_spirv`): a
write-only kernel builds and runs, one that reads an unformatted image keeps it and is refused by
the runtime, naming the feature, and shown as skipped by ``hatch-slang validate``. And the other
side: a storage texel buffer's declared format (``[format("r32f")] RWBuffer<float>``) reaches
the generated wrapper, which takes float32 arrays only. Real Slang, real lavapipe.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from hatch_slang.cli.commands import main

from ..helpers import BuiltPackage, built_package, requires_device

pytestmark = [pytest.mark.compile]

FILL = """\
// Fill an image with its coordinates: written only, no declared format.
//
// Bindings:
//   u0: dst image float4 [h][w]
//
// Dispatch: (ceil(w / 8), ceil(h / 8))
[[vk::binding(0)]] RWTexture2D<float4> dst;

[shader("compute")]
[numthreads(8, 8, 1)]
void fill(uint3 id: SV_DispatchThreadID)
{
    uint w, h;
    dst.GetDimensions(w, h);
    if (id.x >= w || id.y >= h)
        return;
    dst[id.xy] = float4(float(id.x), float(id.y), float(id.x + id.y), 1.0);
}
"""

FILL_REF = """\
import numpy as np
from hatch_slang.validate import Case


def _want(args):
    h, w = args["dst"].shape[:2]
    y, x = np.mgrid[0:h, 0:w].astype(np.float32)
    return {"dst": np.stack([x, y, x + y, np.ones_like(x)], axis=-1)}


def cases(rng):
    for h, w in ((1, 1), (9, 17)):
        yield Case("fill", label=f"{h}x{w}", args={"dst": np.zeros((h, w, 4), np.float32)}, expect=_want)
"""

DOUBLE = """\
// Double an image in place: read and written, no declared format.
//
// Bindings:
//   u0: img image float4 [h][w]
//
// Dispatch: (ceil(w / 8), ceil(h / 8))
[[vk::binding(0)]] RWTexture2D<float4> img;

[shader("compute")]
[numthreads(8, 8, 1)]
void double_it(uint3 id: SV_DispatchThreadID)
{
    uint w, h;
    img.GetDimensions(w, h);
    if (id.x >= w || id.y >= h)
        return;
    img[id.xy] = img[id.xy] * 2.0;
}
"""

DOUBLE_REF = """\
import numpy as np
from hatch_slang.validate import Case


def cases(rng):
    img = rng.random((5, 6, 4), dtype=np.float32)
    yield Case("double_it", label="5x6", args={"img": img}, expect=lambda a: {"img": a["img"] * 2})
"""

SCALE = """\
// Scale a texel buffer into another, declared r32f.
//
// Bindings:
//   t0: src texel buffer float [n]
//   u1: dst texel buffer float [n]
//
// Dispatch: ceil(n / 64)
[[vk::binding(0)]] Buffer<float> src;
[[vk::binding(1)]] [format("r32f")] RWBuffer<float> dst;

[shader("compute")]
[numthreads(64, 1, 1)]
void scale(uint3 id: SV_DispatchThreadID)
{
    uint n;
    dst.GetDimensions(n);
    if (id.x >= n)
        return;
    dst[id.x] = src.Load(id.x) * 3.0;
}
"""

CAP_READ, CAP_WRITE = "StorageImageReadWithoutFormat", "StorageImageWriteWithoutFormat"


def _capabilities(spirv: bytes, entry: str) -> set[str]:
    from slangrt.spirv import read_module

    return set(read_module(spirv).entry(entry).capabilities)


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BuiltPackage]:
    root = tmp_path_factory.mktemp("unformatted") / "unfmt"
    (root / "shaders").mkdir(parents=True)
    (root / "unfmt").mkdir()
    (root / "unfmt" / "__init__.py").write_text("")
    sources = {
        "fill.slang": FILL,
        "fill.py": FILL_REF,
        "double.slang": DOUBLE,
        "double.py": DOUBLE_REF,
        "scale.slang": SCALE,
    }
    for name, text in sources.items():
        (root / "shaders" / name).write_text(text)
    (root / "pyproject.toml").write_text(
        '[project]\nname = "unfmt"\nversion = "0.1"\n\n[tool.hatch.build.hooks.slang]\n'
        'shaders = ["shaders/*.slang"]\npackage = "unfmt/kernels"\n'
    )
    with built_package(root) as package:
        yield package


def _spirv(built: BuiltPackage, module: str, entry: str) -> bytes:
    name = built.entry(module, entry)["spirv"]
    return (built.root / "unfmt" / "kernels" / name).read_bytes()


def test_a_write_only_module_loses_the_read_capability_and_keeps_the_write_one(built: BuiltPackage) -> None:
    fill = _capabilities(_spirv(built, "fill", "fill"), "fill")
    assert CAP_READ not in fill and CAP_WRITE in fill
    double = _capabilities(_spirv(built, "double", "double_it"), "double_it")
    assert {CAP_READ, CAP_WRITE} <= double


@pytest.mark.skipif(shutil.which("spirv-val") is None, reason="spirv-val is not installed")
def test_the_shipped_modules_validate(built: BuiltPackage, tmp_path: Path) -> None:
    for module, entry in (("fill", "fill"), ("double", "double_it")):
        path = tmp_path / f"{entry}.spv"
        path.write_bytes(_spirv(built, module, entry))
        r = subprocess.run(
            ["spirv-val", "--target-env", "vulkan1.2", str(path)], capture_output=True, text=True, check=False
        )
        assert r.returncode == 0, r.stdout + r.stderr


@pytest.mark.gpu
@requires_device
def test_a_write_only_unformatted_image_runs(built: BuiltPackage) -> None:
    dst = np.zeros((9, 17, 4), np.float32)
    built.kernels("fill").fill(dst)
    y, x = np.mgrid[0:9, 0:17].astype(np.float32)
    np.testing.assert_array_equal(dst, np.stack([x, y, x + y, np.ones_like(x)], axis=-1))


def _reads_without_format() -> bool:
    import slangrt

    return "shaderStorageImageReadWithoutFormat" in slangrt.device().features


@pytest.mark.gpu
@requires_device
def test_an_unformatted_image_read_is_refused_naming_the_feature(built: BuiltPackage) -> None:
    import slangrt

    img = np.arange(5 * 6 * 4, dtype=np.float32).reshape(5, 6, 4)
    if _reads_without_format():
        out = img.copy()
        built.kernels("double").double_it(out)
        np.testing.assert_array_equal(out, img * 2)
        return
    with pytest.raises(slangrt.UnsupportedKernelError, match="shaderStorageImageReadWithoutFormat") as e:
        built.kernels("double").double_it(img.copy())
    assert "`img`" in str(e.value)


@pytest.mark.gpu
@pytest.mark.slow
@requires_device
def test_validate_runs_the_write_only_kernel_and_skips_the_read(built: BuiltPackage) -> None:
    result = CliRunner().invoke(main, ["validate", "--root", str(built.root), "--json"])
    rows = {(r["entry"], r["shape"]): r for r in map(json.loads, _json_lines(result.output))}
    rows = {k: r for k, r in rows.items() if k[0] != "scale"}  # no reference
    fills = [r for (entry, _), r in rows.items() if entry == "fill"]
    assert len(fills) == 2 and all(r["ok"] for r in fills), fills
    (double,) = [r for (entry, _), r in rows.items() if entry == "double_it"]
    if _reads_without_format():
        assert double["ok"], double
    else:
        assert "shaderStorageImageReadWithoutFormat" in double["skipped"], double
    assert result.exit_code == 0, result.output[-2000:]


def _json_lines(output: str) -> list[str]:
    return [line for line in output.splitlines() if line.startswith("{")]


def test_a_texel_buffers_declared_format_reaches_the_wrapper(built: BuiltPackage) -> None:
    dst = {b["name"]: b for b in built.entry("scale", "scale")["bindings"]}["dst"]
    assert (dst["kind"], dst["format"], dst["dtype"], dst["channels"]) == (
        "storage_texel_buffer",
        "r32f",
        "f32",
        1,
    )
    source = (built.root / "unfmt" / "kernels" / "scale.py").read_text()
    assert 'format="r32f"' in source
    # the docstring says what the binding is once: the comment's type words are not repeated
    assert "        src: uniform texel buffer, float texels ``[n]``, read-only.\n" in source
    assert "        dst: storage texel buffer, format r32f, float texels ``[n]``, written.\n" in source
    fill = (built.root / "unfmt" / "kernels" / "fill.py").read_text()
    assert "        dst: 2-D storage image, float4 texels ``[h][w]``, written.\n" in fill


@pytest.mark.gpu
@requires_device
def test_a_texel_buffers_declared_format_takes_its_dtype_only(built: BuiltPackage) -> None:
    scale = built.kernels("scale").scale
    src = np.arange(100, dtype=np.float32)
    for dtype in (np.float16, np.uint8):
        bad = np.zeros(100, dtype)
        with pytest.raises(
            TypeError,
            match=r"argument `dst` must have dtype float32 \(the kernel declares the format 'r32f'\)",
        ):
            scale(src, bad)
        assert not bad.any()
    out = np.zeros(100, np.float32)
    scale(src, out)
    np.testing.assert_array_equal(out, src * 3)
