"""Struct uniform values whole (tests/packages/types, ``uniforms_scene``): a cbuffer's
``float4x4``, ``float3``, one ``Light`` and an array of them, each one keyword argument, the
structs NumPy structured values of the module's ``Light`` dtype (std140: 16 bytes, the ``float``
in the ``float3``'s slot), checked against NumPy through the kernel's output on the device; a
wrong dtype is a ``TypeError`` and a wrong shape a ``ValueError``, each naming the kernel and
the argument; the package's validate passes."""

from __future__ import annotations

import inspect
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from click.testing import CliRunner

from hatch_slang.cli.commands import main

from ..helpers import BuiltPackage, built_package, copy_package, requires_device

# One struct in a std430 buffer and in a std140 cbuffer: `Inner` rounds to 16 bytes and sits
# at 16 in the cbuffer, at 4 in the buffer, so the two layouts are two dtypes.
TWO_LAYOUTS = """\
struct Inner { float x; };
struct S { float a; Inner i; };
cbuffer P { S s; uint n; };
RWStructuredBuffer<S> out;

[shader("compute")]
[numthreads(1, 1, 1)]
void copy_s(uint3 id: SV_DispatchThreadID)
{
    if (id.x >= n)
        return;
    out[id.x].a = s.a;
    out[id.x].i.x = s.i.x;
}
"""
# Struct values of a push-constant block (std430) and of a global `uniform` (the default uniform
# buffer), whose layouts reflection gives outside any descriptor binding.
PUSH_AND_GLOBAL = """\
struct Light { float3 dir; float intensity; };
struct Push { Light l; uint n; Light ls[2]; };
[[vk::push_constant]] ConstantBuffer<Push> pc;
uniform Light g;
RWStructuredBuffer<float4> out;

[shader("compute")]
[numthreads(1, 1, 1)]
void pushs(uint3 id: SV_DispatchThreadID)
{
    if (id.x >= pc.n)
        return;
    out[id.x] = float4(pc.l.dir * pc.l.intensity + pc.ls[1].dir + g.dir, pc.ls[0].intensity + g.intensity);
}
"""
# An entry point's `uniform` parameters (Slang's `entryPointParams` block, push constants).
ENTRY_PARAMS = """\
struct Light { float3 dir; float intensity; };
RWStructuredBuffer<float4> out;

[shader("compute")]
[numthreads(1, 1, 1)]
void shine(uint3 id: SV_DispatchThreadID, uniform Light l, uniform uint n)
{
    if (id.x < n)
        out[id.x] = float4(l.dir * l.intensity, l.intensity);
}
"""
PYPROJECT = """\
[project]
name = "twolayouts"
version = "0.1.0"

[tool.hatch.build.hooks.slang]
shaders = ["shaders/*.slang"]
package = "twolayouts/kernels"
"""

pytestmark = [pytest.mark.compile, pytest.mark.gpu, requires_device]

VIEW = (np.arange(16, dtype=np.float32).reshape(4, 4) ** 1.5 / 10 - 1).astype(np.float32)
STD140_LIGHT = np.dtype(
    {"names": ["dir", "intensity"], "formats": [("<f4", (3,)), "<f4"], "offsets": [0, 12], "itemsize": 16}
)


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Any:
    with built_package(copy_package("types", tmp_path_factory.mktemp("types"))) as package:
        yield package


def _values(dtype: np.dtype[Any]) -> tuple[Any, Any]:
    lights = np.zeros(3, dtype)
    lights["dir"] = [[1.0, -2.0, 0.5], [0.25, 3.0, -1.0], [-0.75, 0.125, 2.0]]
    lights["intensity"] = [0.5, -1.5, 2.25]
    sun = np.zeros((), dtype)[()]
    sun["dir"], sun["intensity"] = (0.25, -0.75, 1.5), 3.0
    return sun, lights


def _scene(built: BuiltPackage, points: np.ndarray, **values: Any) -> np.ndarray:
    mod = built.kernels("uniforms_scene")
    sun, lights = _values(mod.Light)
    shaded = np.zeros((len(points), 4), np.float32)
    args: dict[str, Any] = dict(view=VIEW, ambient=(0.5, -1.25, 2.0), sun=sun, lights=lights)
    args.update(values)
    mod.uniforms_scene(points, shaded, n=len(points), grid=(-(-len(points) // 32), 1, 1), **args)
    return shaded


def _expected(points: np.ndarray, sun: Any, lights: Any) -> np.ndarray:
    q = points.astype(np.float64) @ VIEW.astype(np.float64).T
    dirs = lights["dir"].astype(np.float64)
    c = np.array([0.5, -1.25, 2.0]) + float(sun["intensity"]) * sun["dir"].astype(np.float64) * q[:, 3:4]
    c += (q[:, :3] * lights["intensity"]) @ dirs
    w = np.sum(q[:, :3] * dirs[np.arange(len(q)) % 3], axis=1)
    return np.concatenate([c, w[:, None]], axis=1)


def test_each_struct_value_is_one_argument_of_the_modules_std140_dtype(built: BuiltPackage) -> None:
    mod = built.kernels("uniforms_scene")
    params = inspect.signature(mod.uniforms_scene).parameters
    assert list(params) == ["points", "shaded", "view", "ambient", "n", "sun", "lights", "grid"]
    assert mod.Light == STD140_LIGHT and mod.Light.names == ("dir", "intensity")
    assert "Light" in mod.__all__
    assert "lights: `Scene` field (struct `Light` array: a NumPy array of dtype Light, (3,))" in (
        mod.uniforms_scene.__doc__ or ""
    )


def test_a_matrix_float3_struct_and_array_of_structs_passed_whole(built: BuiltPackage) -> None:
    points = np.random.default_rng(23).standard_normal((37, 4)).astype(np.float32)
    shaded = _scene(built, points)
    sun, lights = _values(STD140_LIGHT)
    np.testing.assert_allclose(shaded, _expected(points, sun, lights), rtol=1e-5, atol=1e-4)
    # Each light's fields land in its own slot: other lights compute something else.
    moved = lights[[2, 0, 1]]
    other = _scene(built, points, lights=moved)
    assert not np.allclose(other, shaded, rtol=1e-3, atol=1e-3)
    np.testing.assert_allclose(other, _expected(points, sun, moved), rtol=1e-5, atol=1e-4)
    # A 0-d array of the dtype is a struct value too.
    np.testing.assert_allclose(_scene(built, points, sun=np.asarray(sun)), shaded, rtol=0, atol=0)


def test_dtypes_and_shapes_are_checked_naming_kernel_and_argument(built: BuiltPackage) -> None:
    points = np.zeros((3, 4), np.float32)
    natural = np.dtype([("intensity", "<f4"), ("dir", "<f4", (3,))])
    with pytest.raises(
        TypeError,
        match=r"uniforms_scene\.uniforms_scene\(\): argument `lights` must be a NumPy structured array of "
        r"dtype .* got dtype",
    ):
        _scene(built, points, lights=np.zeros(3, natural))
    with pytest.raises(TypeError, match=r"argument `sun` must be a NumPy structured scalar .* got tuple"):
        _scene(built, points, sun=((1.0, 2.0, 3.0), 4.0))
    with pytest.raises(
        ValueError,
        match=r"uniforms_scene\.uniforms_scene\(\): argument `lights` must have shape \(3,\), "
        r"got shape \(4,\)",
    ):
        _scene(built, points, lights=np.zeros(4, STD140_LIGHT))


def test_show_lists_each_struct_value_and_its_layout(built: BuiltPackage) -> None:
    result = CliRunner().invoke(main, ["show", "--root", str(built.root), "uniforms_scene"])
    assert result.exit_code == 0, result.output
    assert "struct Light[3]" in result.output
    assert "struct Light in b0 Scene.lights: 16 bytes per element" in result.output
    shown = CliRunner().invoke(main, ["show", "--root", str(built.root), "--json", "uniforms_scene"])
    data = json.loads(shown.output[shown.output.index("{") :])
    (scene,) = [b for b in data["bindings"] if b["name"] == "Scene"]
    lights = next(p for p in scene["params"] if p["name"] == "lights")
    assert (lights["type"], lights["shape"], lights["struct"]["itemsize"]) == ("struct", [3], 16)


def test_a_struct_laid_out_otherwise_in_a_buffer_and_a_cbuffer_is_two_dtypes(tmp_path: Path) -> None:
    root = tmp_path / "twolayouts"
    (root / "shaders").mkdir(parents=True)
    (root / "pyproject.toml").write_text(PYPROJECT)
    (root / "shaders" / "two.slang").write_text(TWO_LAYOUTS)
    with built_package(root) as package:
        mod = package.kernels("two")
        # The first layout met (binding 0, the cbuffer's) keeps the name.
        assert (mod.S.itemsize, mod.S.fields["i"][1]) == (32, 16)  # the cbuffer's, std140
        assert (mod.S_2.itemsize, mod.S_2.fields["i"][1]) == (8, 4)  # the buffer's, std430
        s = np.zeros((), mod.S)[()]
        s["a"], s["i"]["x"] = 1.5, -2.25
        out = np.zeros(2, mod.S_2)
        mod.copy_s(out, s=s, n=2, grid=(2, 1, 1))
        assert out["a"].tolist() == [1.5, 1.5] and out["i"]["x"].tolist() == [-2.25, -2.25]
        with pytest.raises(TypeError, match=r"argument `s` must be a NumPy structured scalar of dtype"):
            mod.copy_s(out, s=np.zeros((), mod.S_2)[()], n=2, grid=(2, 1, 1))


def test_push_constant_global_and_entry_point_uniform_structs_are_values_too(tmp_path: Path) -> None:
    root = tmp_path / "twolayouts"
    (root / "shaders").mkdir(parents=True)
    (root / "pyproject.toml").write_text(PYPROJECT)
    (root / "shaders" / "pushs.slang").write_text(PUSH_AND_GLOBAL)
    (root / "shaders" / "shine.slang").write_text(ENTRY_PARAMS)
    with built_package(root) as package:
        mod = package.kernels("pushs")
        assert list(inspect.signature(mod.pushs).parameters) == ["out", "g", "l", "n", "ls", "grid"]
        assert mod.Light == STD140_LIGHT  # std430 lays this one out the same way
        sun, lights = _values(mod.Light)
        g = np.zeros((), mod.Light)[()]
        g["dir"], g["intensity"] = (10.0, 20.0, 30.0), 100.0
        out = np.zeros((2, 4), np.float32)
        mod.pushs(out, g=g, l=sun, n=2, ls=lights[:2].copy(), grid=(2, 1, 1))
        xyz = sun["dir"] * sun["intensity"] + lights["dir"][1] + g["dir"]
        want = np.append(xyz, lights["intensity"][0] + g["intensity"]).astype(np.float32)
        np.testing.assert_allclose(out, [want, want], rtol=1e-6)
        shine = package.kernels("shine")
        assert list(inspect.signature(shine.shine).parameters) == ["out", "l", "n", "grid"]
        shine.shine(out, l=sun, n=2, grid=(2, 1, 1))
        one = np.append(sun["dir"] * sun["intensity"], sun["intensity"]).astype(np.float32)
        np.testing.assert_allclose(out, [one, one], rtol=1e-6)


@pytest.mark.slow
def test_the_scene_kernel_validates(built: BuiltPackage) -> None:
    root: Path = built.root
    result = CliRunner().invoke(main, ["validate", "--root", str(root), "--json", "uniforms_scene"])
    rows = [json.loads(line) for line in result.output.splitlines() if line.startswith("{")]
    assert rows and all(r["ok"] for r in rows), result.output[-2000:]
    assert {r["entry"] for r in rows} == {"uniforms_scene"}
    assert result.exit_code == 0, result.output[-2000:]
