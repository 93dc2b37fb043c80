"""Buffers of structs in ``tests/packages/types`` (``structs_*``) through the build: each struct a
NumPy structured dtype of its wrapper module, laid out as Slang compiled it (matrices by rows,
and by columns where the package says `-matrix-layout-column-major`), every reference case run
by ``hatch-slang validate``, the kernels called with arrays and Tensors and checked against
NumPy, and the dtype checked on every call."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import slangrt
from click.testing import CliRunner

from hatch_slang.builder import pipeline
from hatch_slang.cli.commands import main
from hatch_slang.config.project import load_project_config
from hatch_slang.errors import HatchSlangError
from hatch_slang.validate import load_reference, random_struct, struct_dtype

from ..helpers import BuiltPackage, built_package, copy_package, requires_device

pytestmark = [pytest.mark.compile, pytest.mark.gpu, requires_device]


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BuiltPackage]:
    with built_package(copy_package("types", tmp_path_factory.mktemp("structs"))) as package:
        yield package


def _reference(built: BuiltPackage, name: str) -> Any:
    return load_reference(built.root / "shaders" / f"{name}.py")


def test_validate_builds_the_struct_arrays_from_the_manifest(built: BuiltPackage) -> None:
    names = ["structs_particles", "structs_frames"]
    result = CliRunner().invoke(main, ["validate", "--root", str(built.root), "--json", *names])
    rows = [json.loads(line) for line in result.output.splitlines() if line.startswith("{")]
    assert result.exit_code == 0, result.output[-2000:]
    assert len(rows) == 6 and all(r["ok"] for r in rows), rows
    record = built.entry("structs_particles", "structs_particles")["bindings"][0]
    assert record["dtype"] is None and record["struct"]["name"] == "Particle"
    assert struct_dtype(record["struct"]) == built.kernels("structs_particles").Particle


def test_the_dtypes_are_slangs_layouts(built: BuiltPackage) -> None:
    particle = built.kernels("structs_particles").Particle
    assert particle.itemsize == 128
    assert particle.fields["pos"] == (np.dtype(("<f4", (3,))), 0)
    assert particle.fields["affine"] == (np.dtype(("<f4", (3, 4))), 32)  # rows of 4
    assert particle.fields["spin"] == (np.dtype(("<f4", (3, 4))), 80)  # rows of 3, padded to 4
    frame = built.kernels("structs_frames").Frame
    assert frame.fields["affine"] == (np.dtype(("<f4", (4, 4))), 0)  # 4 columns of 3, padded
    assert frame.fields["turn"] == (np.dtype(("<f4", (3, 4))), 64)
    assert "Particle" in built.kernels("structs_particles").__all__


def _particles(built: BuiltPackage, n: int) -> np.ndarray:
    return random_struct((n,), built.kernels("structs_particles").Particle, np.random.default_rng(7))


def test_particles_from_arrays_and_tensors_match_numpy(built: BuiltPackage) -> None:
    mod, ref = built.kernels("structs_particles"), _reference(built, "structs_particles")
    p = _particles(built, 150)
    assert not np.allclose(p["affine"][:, :, :3], np.swapaxes(p["affine"][:, :, :3], 1, 2))
    want = ref.step({"particles": p, "dt": 0.5})
    got, energy = p.copy(), np.zeros(150, np.float32)
    mod.structs_particles(got, energy, dt=0.5)
    for name in ("pos", "vel", "id"):
        np.testing.assert_allclose(got[name], want["particles"][name], rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(energy, want["energy"], rtol=1e-5, atol=1e-5)
    # A transposed matrix would not pass: the reference with m[i][j] read as [j, i] differs.
    transposed = p.copy()
    transposed["affine"][:, :, :3] = np.swapaxes(p["affine"][:, :, :3], 1, 2)
    wrong = ref.step({"particles": transposed, "dt": 0.5})["particles"]["pos"]
    assert not np.allclose(got["pos"], wrong, rtol=1e-3, atol=1e-3)
    t, e = slangrt.Tensor.from_numpy(p), slangrt.Tensor.zeros((150,), np.float32)
    mod.structs_particles(t, e, dt=0.5)
    assert t.dtype == mod.Particle
    np.testing.assert_allclose(t.numpy()["pos"], want["particles"]["pos"], rtol=1e-5, atol=1e-5)


def test_frames_stored_by_columns_match_numpy(built: BuiltPackage) -> None:
    mod, ref = built.kernels("structs_frames"), _reference(built, "structs_frames")
    f = random_struct((40,), mod.Frame, np.random.default_rng(3))
    want = ref.frames({"frames": f})
    got, out = f.copy(), np.zeros((40, 3), np.float32)
    mod.structs_frames(got, out)
    np.testing.assert_allclose(out, want["out"], rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(got["point"], want["out"], rtol=1e-5, atol=1e-5)


def test_another_dtype_is_refused_naming_the_argument(built: BuiltPackage) -> None:
    mod = built.kernels("structs_particles")
    energy = np.zeros(4, np.float32)
    floats = np.zeros((4, 32), np.float32)
    with pytest.raises(
        TypeError,
        match=r"structs_particles\(\): argument `particles` must be an array of structs_particles\.Particle "
        r"\(np\.zeros\(n, structs_particles\.Particle\): 128 bytes each\), got float32",
    ):
        mod.structs_particles(floats, energy, dt=0.1)
    descr = mod.Particle.descr
    renamed = np.dtype(
        {
            "names": ["where" if n == "pos" else n for n in mod.Particle.names],
            "formats": [mod.Particle.fields[n][0] for n in mod.Particle.names],
            "offsets": [mod.Particle.fields[n][1] for n in mod.Particle.names],
            "itemsize": 128,
        }
    )
    with pytest.raises(TypeError, match="argument `particles`"):
        mod.structs_particles(np.zeros(4, renamed), energy, dt=0.1)
    order = ["mass", "pos", *mod.Particle.names[2:]]  # the same fields, `mass` first
    moved = np.dtype([(n, mod.Particle.fields[n][0]) for n in order])
    assert moved.itemsize == 128
    with pytest.raises(TypeError, match="argument `particles`"):
        mod.structs_particles(np.zeros(4, moved), energy, dt=0.1)
    with pytest.raises(TypeError, match="argument `particles`"):
        mod.structs_particles(slangrt.Tensor.zeros((4, 32), np.float32), energy, dt=0.1)
    same = np.dtype(descr)  # an equal dtype built another way passes
    assert same == mod.Particle
    mod.structs_particles(np.zeros(4, same), energy, dt=0.1)


def test_show_prints_the_layout(built: BuiltPackage) -> None:
    result = CliRunner().invoke(main, ["show", "--root", str(built.root), "structs_frames"])
    assert result.exit_code == 0, result.output
    assert "struct Frame in u0 frames: 128 bytes per element" in result.output
    assert "f32 3x4 matrix stored by columns as (4, 4): m[i][j] is [j, i]" in result.output


def test_a_pointer_to_structs_takes_a_tensor_of_the_pointees_dtype(built: BuiltPackage) -> None:
    mod, ref = built.kernels("structs_pointer"), _reference(built, "structs_pointer")
    assert mod.Item == ref.ITEM  # natural layout behind a pointer: 40 bytes, float2x3 by rows
    items = slangrt.Tensor.from_numpy(random_struct((90,), mod.Item, np.random.default_rng(5)))
    want = ref.step({"items": items, "scale": 2.0})["items"]
    mod.structs_pointer(items=items, n=90, scale=2.0)
    got = items.numpy()
    np.testing.assert_allclose(got["pos"], want["pos"], rtol=1e-5, atol=1e-5)
    assert (got["hits"] == want["hits"]).all()
    with pytest.raises(
        TypeError,
        match=r"argument `items` .* whose dtype is structs_pointer\.Item .* got a Tensor of float32",
    ):
        mod.structs_pointer(items=slangrt.Tensor.zeros((90, 10), np.float32), n=90, scale=2.0)
    with pytest.raises(TypeError, match=r"argument `items` is a pointer: .* not a numpy\.ndarray"):
        mod.structs_pointer(items=got, n=90, scale=2.0)


_PYPROJECT = """\
[project]
name = "structp"
version = "0.1.0"

[tool.hatch.build.hooks.slang]
shaders = ["shaders/*.slang"]
package = "structp/kernels"
"""

# One struct under two layouts: std430 in a buffer (`v` at 16, 32 bytes) and natural behind a
# pointer (`v` at 4, 16 bytes).
_TWO_LAYOUTS = """\
struct P { float a; float3 v; };
struct Push { P* ps; uint n; };
[[vk::push_constant]] Push pc;
[[vk::binding(0)]] RWStructuredBuffer<P> buf;
[shader("compute")]
[numthreads(32, 1, 1)]
void two(uint3 id : SV_DispatchThreadID)
{
    if (id.x < pc.n) { buf[id.x].v = pc.ps[id.x].v; buf[id.x].a = pc.ps[id.x].a; }
}
"""

_SQUARE_BEHIND_A_POINTER = """\
struct Item { float3x3 m; };
struct Push { Item* items; uint n; };
[[vk::push_constant]] Push pc;
[shader("compute")]
[numthreads(32, 1, 1)]
void square(uint3 id : SV_DispatchThreadID)
{
    if (id.x < pc.n) pc.items[id.x].m[0][1] += 1.0;
}
"""


def _project(tmp_path: Path, name: str, text: str) -> Path:
    root = tmp_path / "structp"
    (root / "shaders").mkdir(parents=True)
    (root / "pyproject.toml").write_text(_PYPROJECT)
    (root / "shaders" / f"{name}.slang").write_text(text)
    return root


def test_one_struct_under_two_layouts_gets_two_names(tmp_path: Path) -> None:
    out = pipeline.build(load_project_config(_project(tmp_path, "two", _TWO_LAYOUTS)))
    module = out.files["two.py"].decode()
    assert "\nP = np.dtype(" in module and "\nP_2 = np.dtype(" in module
    assert '"offsets": [0, 16],' in module and '"itemsize": 32,' in module  # the buffer's, std430
    assert '"offsets": [0, 4],' in module and '"itemsize": 16,' in module  # the pointer's, natural
    assert '_d.pointer("ps", ps, P_2)' in module


def test_a_square_matrix_behind_a_pointer_is_a_build_error(tmp_path: Path) -> None:
    with pytest.raises(HatchSlangError) as info:
        pipeline.build(load_project_config(_project(tmp_path, "square", _SQUARE_BEHIND_A_POINTER)))
    message = str(info.value)
    assert "shaders/square.slang:2" in message and "`items`" in message and "square matrices" in message
