"""Idiomatic Slang with no hatch-slang comments builds into keyword-argument wrappers that run.

The shaders live in tests/packages/nocomments/shaders, one form each: global `uniform` values,
entry-point `uniform` parameters, a `cbuffer`, a `ConstantBuffer<S>` struct, a
`[[vk::push_constant]]` block, two `[shader("compute")]` entries in one file, a buffer in
descriptor set 1 and a `uniform float*` pointer parameter. Wrappers take arrays by their Slang
variable names, every uniform field as a keyword argument and `grid=(x, y, z)`.
"""

from __future__ import annotations

import inspect
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from hatch_slang.builder import pipeline
from hatch_slang.config.project import load_project_config
from hatch_slang.errors import BuildErrors, ConfigError, HatchSlangError

from ..helpers import BuiltPackage, built_package, copy_package, requires_device

pytestmark = [pytest.mark.compile]


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BuiltPackage]:
    with built_package(copy_package("nocomments", tmp_path_factory.mktemp("noc"))) as package:
        yield package


def _groups(n: int, size: int) -> tuple[int, int, int]:
    return (-(-n // size), 1, 1)


def _x(n: int, seed: int = 0) -> np.ndarray[Any, np.dtype[np.float32]]:
    return np.random.default_rng(seed).standard_normal(n, dtype=np.float32)


SIZES = [1, 63, 64, 1000]


# -- the manifest: keyword arguments named after the Slang fields ---------------------------------


def test_argument_names_come_from_the_slang(built: BuiltPackage) -> None:
    def names(module: str, entry: str = "computeMain") -> list[str]:
        fn = getattr(built.kernels(module), entry)
        return [p.name for p in inspect.signature(fn).parameters.values() if p.default is p.empty]

    assert names("global_scale") == ["x", "y", "scale", "n", "grid"]
    assert names("entry_alpha") == ["a", "b", "alpha", "n", "grid"]
    assert names("cbuffer_bias") == ["src", "dst", "n", "bias", "grid"]
    assert names("struct_affine") == ["inp", "outp", "count", "mul", "shift", "grid"]
    assert names("push_saxpy") == ["xs", "ys", "n", "a", "grid"]
    assert names("two_entries", "fill") == ["buf", "n", "value", "grid"]
    assert names("two_entries", "square") == ["buf", "n", "grid"]  # `value` is never read: defaults to 0
    assert names("set_one") == ["lhs", "rhs", "sum", "n", "grid"]
    assert names("pointer_double") == ["out", "data", "n", "grid"]


def test_push_constant_ranges_and_sets(built: BuiltPackage) -> None:
    assert built.entry("push_saxpy", "computeMain")["push_size"] == 8
    assert built.entry("entry_alpha", "computeMain")["push_size"] == 8  # entry-point uniforms
    assert built.entry("pointer_double", "computeMain")["push_size"] >= 12  # 8-byte address + n
    assert not built.entry("global_scale", "computeMain").get("push_size")
    where = {
        b["name"]: (b.get("set", 0), b["binding"]) for b in built.entry("set_one", "computeMain")["bindings"]
    }
    assert where["rhs"] == (1, 0) and where["sum"] == (1, 1) and where["lhs"][0] == 0


# -- calls on lavapipe, against NumPy --------------------------------------------------------------


@requires_device
@pytest.mark.gpu
@pytest.mark.parametrize("n", SIZES)
def test_global_uniforms(built: BuiltPackage, n: int) -> None:
    x, y = _x(n + 5), np.full(n + 5, -1.0, np.float32)
    built.kernels("global_scale").computeMain(x=x, y=y, scale=2.5, n=n, grid=_groups(n, 64))
    np.testing.assert_allclose(y[:n], 2.5 * x[:n], rtol=1e-6)
    assert (y[n:] == -1.0).all()


@requires_device
@pytest.mark.gpu
@pytest.mark.parametrize("n", SIZES)
def test_entry_point_uniforms(built: BuiltPackage, n: int) -> None:
    a, b = _x(n, 1), _x(n, 2)
    want = b + np.float32(-0.5) * a
    built.kernels("entry_alpha").computeMain(a=a, b=b, alpha=-0.5, n=n, grid=_groups(n, 64))
    np.testing.assert_allclose(b, want, rtol=1e-5, atol=1e-6)


@requires_device
@pytest.mark.gpu
@pytest.mark.parametrize("n", SIZES)
def test_cbuffer(built: BuiltPackage, n: int) -> None:
    src, dst = _x(n, 3), np.zeros(n, np.float32)
    built.kernels("cbuffer_bias").computeMain(src=src, dst=dst, n=n, bias=0.25, grid=_groups(n, 64))
    np.testing.assert_allclose(dst, src + np.float32(0.25), rtol=1e-6)


@requires_device
@pytest.mark.gpu
@pytest.mark.parametrize("n", SIZES)
def test_constant_buffer_struct(built: BuiltPackage, n: int) -> None:
    inp, outp = _x(n, 4), np.zeros(n, np.float32)
    built.kernels("struct_affine").computeMain(
        inp=inp, outp=outp, count=n, mul=3.0, shift=(1.5, 0.5), grid=_groups(n, 64)
    )
    np.testing.assert_allclose(outp, inp * 3.0 + 1.0, rtol=1e-5, atol=1e-6)


@requires_device
@pytest.mark.gpu
@pytest.mark.parametrize("n", SIZES)
def test_push_constants(built: BuiltPackage, n: int) -> None:
    xs, ys = _x(n, 5), _x(n, 6)
    want = np.float32(2.0) * xs + ys
    built.kernels("push_saxpy").computeMain(xs=xs, ys=ys, n=n, a=2.0, grid=_groups(n, 32))
    np.testing.assert_allclose(ys, want, rtol=1e-5, atol=1e-6)


@requires_device
@pytest.mark.gpu
@pytest.mark.parametrize("n", SIZES)
def test_two_entries(built: BuiltPackage, n: int) -> None:
    module = built.kernels("two_entries")
    buf = np.zeros(n, np.float32)
    module.fill(buf=buf, n=n, value=-3.0, grid=_groups(n, 64))
    np.testing.assert_array_equal(buf, np.full(n, -3.0, np.float32))
    module.square(buf=buf, n=n, grid=_groups(n, 32))
    np.testing.assert_array_equal(buf, np.full(n, 9.0, np.float32))


@requires_device
@pytest.mark.gpu
@pytest.mark.parametrize("n", SIZES)
def test_descriptor_set_1(built: BuiltPackage, n: int) -> None:
    lhs, rhs, out = _x(n, 7), _x(n, 8), np.zeros(n, np.float32)
    built.kernels("set_one").computeMain(lhs=lhs, rhs=rhs, sum=out, n=n, grid=_groups(n, 64))
    np.testing.assert_allclose(out, lhs + rhs, rtol=1e-6)


@requires_device
@pytest.mark.gpu
@pytest.mark.parametrize("n", SIZES)
def test_pointer_parameter(built: BuiltPackage, n: int) -> None:
    import slangrt

    if not slangrt.device().device_address:
        pytest.skip("the device lacks bufferDeviceAddress")
    x, out = _x(n, 9), np.zeros(n, np.float32)
    data = slangrt.Tensor.from_numpy(x)
    built.kernels("pointer_double").computeMain(out=out, data=data, n=n, grid=_groups(n, 64))
    np.testing.assert_allclose(out, 2.0 * x, rtol=1e-6)


# -- call errors ----------------------------------------------------------------------------------


@requires_device
@pytest.mark.gpu
def test_missing_uniform_keyword(built: BuiltPackage) -> None:
    x, y = _x(8), np.zeros(8, np.float32)
    with pytest.raises(TypeError, match=r"\bscale\b"):
        built.kernels("global_scale").computeMain(x=x, y=y, n=8, grid=(1, 1, 1))  # type: ignore[call-arg]


@requires_device
@pytest.mark.gpu
@pytest.mark.parametrize(
    ("kwargs", "pattern"),
    [
        ({"scale": "2", "n": 8}, r"argument `scale` must be a float, got str"),
        ({"scale": 2.0, "n": 8.5}, r"argument `n` must be an int, got float"),
    ],
)
def test_wrong_typed_uniform(built: BuiltPackage, kwargs: dict[str, object], pattern: str) -> None:
    x, y = _x(8), np.zeros(8, np.float32)
    with pytest.raises(TypeError, match=pattern):
        built.kernels("global_scale").computeMain(x=x, y=y, grid=(1, 1, 1), **kwargs)


@requires_device
@pytest.mark.gpu
def test_wrong_typed_push_constant(built: BuiltPackage) -> None:
    xs, ys = _x(8), np.zeros(8, np.float32)
    with pytest.raises(TypeError, match=r"argument `a` must be a float"):
        built.kernels("push_saxpy").computeMain(xs=xs, ys=ys, n=8, a=None, grid=(1, 1, 1))  # type: ignore[arg-type]


@requires_device
@pytest.mark.gpu
def test_numpy_array_to_pointer(built: BuiltPackage) -> None:
    out = np.zeros(8, np.float32)
    with pytest.raises(TypeError, match=r"argument `data` is a pointer: .*slangrt\.Tensor"):
        built.kernels("pointer_double").computeMain(
            out=out,
            data=np.ones(8, np.float32),  # type: ignore[arg-type]
            n=8,
            grid=(1, 1, 1),
        )


# -- build errors ---------------------------------------------------------------------------------

PYPROJECT = """\
[project]
name = "errp"
version = "0.1.0"

[tool.hatch.build.hooks.slang]
shaders = ["shaders/*.slang"]
package = "errpkg/kernels"
{extra}
"""

SAMPLED = """\
Texture2D<float> t;
SamplerState s;
RWStructuredBuffer<float> out;

[shader("compute")]
[numthreads(8, 8, 1)]
void computeMain(uint3 id : SV_DispatchThreadID)
{
    out[id.x] = t.SampleLevel(s, float2(0.5, 0.5), 0);
}
"""

TEXTURE_ONLY = """\
Texture2D<float> t;
RWStructuredBuffer<float> out;

[shader("compute")]
[numthreads(8, 8, 1)]
void computeMain(uint3 id : SV_DispatchThreadID)
{
    out[id.x] = t.Load(int3(0, 0, 0));
}
"""

MULTISAMPLED = """\
Texture2DMS<float4> t;
RWStructuredBuffer<float> out;

[shader("compute")]
[numthreads(8, 8, 1)]
void computeMain(uint3 id : SV_DispatchThreadID)
{
    out[id.x] = t.Load(int2(0, 0), 0).x;
}
"""

TWO_NUMTHREADS = """\
RWStructuredBuffer<float> out;

[numthreads(64, 1, 1)]
void doubleIt(uint3 id : SV_DispatchThreadID)
{
    out[id.x] = out[id.x] * 2.0;
}

[numthreads(64, 1, 1)]
void halve(uint3 id : SV_DispatchThreadID)
{
    out[id.x] = out[id.x] * 0.5;
}
"""


def _project(tmp_path: Path, shaders: dict[str, str], extra: str = "") -> Path:
    root = tmp_path / "errp"
    (root / "shaders").mkdir(parents=True)
    (root / "pyproject.toml").write_text(PYPROJECT.format(extra=extra))
    for name, text in shaders.items():
        (root / "shaders" / name).write_text(text)
    return root


def _build_error(root: Path) -> str:
    with pytest.raises(HatchSlangError) as info:
        pipeline.build(load_project_config(root))
    return str(info.value)


def test_a_sampler_and_texture_are_arguments_named_by_their_variables(tmp_path: Path) -> None:
    out = pipeline.build(load_project_config(_project(tmp_path, {"sampled.slang": SAMPLED})))
    manifest = json.loads(out.files["manifest.json"])
    bindings = manifest["shaders"]["sampled"]["entries"]["computeMain"]["bindings"]
    assert [(b["name"], b["kind"]) for b in bindings] == [
        ("t", "sampled_image"),
        ("s", "sampler"),
        ("out", "storage"),
    ]
    source = out.files["sampled.py"].decode()
    assert "    t: npt.NDArray[Any] | slangrt.Image,\n" in source
    assert "    s: slangrt.Sampler | None = None,\n" in source


def test_a_texture_alone_is_an_argument(tmp_path: Path) -> None:
    out = pipeline.build(load_project_config(_project(tmp_path, {"tex.slang": TEXTURE_ONLY})))
    manifest = json.loads(out.files["manifest.json"])
    bindings = manifest["shaders"]["tex"]["entries"]["computeMain"]["bindings"]
    assert bindings[0]["name"] == "t" and bindings[0]["channels"] == 1 and bindings[0]["dim"] == "2d"


def test_a_multisampled_texture_fails_naming_file_line_and_variable(tmp_path: Path) -> None:
    message = _build_error(_project(tmp_path, {"ms.slang": MULTISAMPLED}))
    assert "shaders/ms.slang:1:" in message and "`t`" in message and "multisampled" in message


NO_ENTRY = """\
RWStructuredBuffer<float> out;
float twice(float x) { return 2.0 * x; }
"""


def test_several_numthreads_functions_are_each_an_entry_with_a_note(tmp_path: Path) -> None:
    out = pipeline.build(load_project_config(_project(tmp_path, {"two.slang": TWO_NUMTHREADS})))
    manifest = json.loads(out.files["manifest.json"])
    assert sorted(manifest["shaders"]["two"]["entries"]) == ["doubleIt", "halve"]
    notes = [w for w in out.warnings if ": note: " in w]
    assert [n.split(": note: ")[0] for n in notes] == ["shaders/two.slang:4", "shaders/two.slang:10"]
    assert "`doubleIt`, `halve`" in notes[0]


def test_no_entry_says_what_it_looked_for(tmp_path: Path) -> None:
    message = _build_error(_project(tmp_path, {"noentry.slang": NO_ENTRY}))
    assert message.startswith("shaders/noentry.slang: cannot tell the entry points"), message
    assert "`noentry`, `main` or `computeMain`" in message


def test_errors_of_several_files_together(tmp_path: Path) -> None:
    root = _project(tmp_path, {"noentry.slang": NO_ENTRY, "ms.slang": MULTISAMPLED})
    with pytest.raises(BuildErrors) as info:
        pipeline.build(load_project_config(root))
    text = str(info.value)
    assert "noentry.slang" in text and "ms.slang:1" in text


def test_refused_compiler_option(tmp_path: Path) -> None:
    root = _project(tmp_path, {"sampled.slang": SAMPLED}, 'compiler-args = ["-o", "x"]')
    with pytest.raises(ConfigError, match=r"`-o` is not allowed"):
        load_project_config(root)
