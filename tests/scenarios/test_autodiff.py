"""Mapped differentiable functions (issue 25): ``// slang-map: poly`` makes a Slang function an
elementwise Python function with NumPy broadcasting, and a ``[Differentiable]`` one gets ``vjp``
(``bwd_diff``, gradients summed over broadcast axes on the device) and ``jvp`` (``fwd_diff``).

Built from ``tests/packages/autodiff`` and run on lavapipe: values against NumPy, gradients and
tangents against central finite differences of float64 NumPy references (the ``double``
instances), the shapes of every broadcast, out parameters, ``out=``, errors naming the argument,
and the build's warnings for what a ``slang-map`` line names but cannot be mapped."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import slangrt

from ..helpers import BuiltPackage, built_package, copy_package, requires_device

pytestmark = [pytest.mark.compile, requires_device]

Array = np.ndarray[Any, Any]


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BuiltPackage]:
    root = copy_package("autodiff", tmp_path_factory.mktemp("autodiff"))
    with built_package(root) as package:
        yield package


def _funcs(built: BuiltPackage) -> Any:
    return built.kernels("funcs")


# -- float64 references ---------------------------------------------------------------------------


def _poly(x: Array, a: Array) -> Array:
    return a * x * x + 2.0 * x + 1.0


def _ndot(u: Array, v: Array) -> Array:
    return np.asarray((u * v).sum(-1) / (np.linalg.norm(u, axis=-1) * np.linalg.norm(v, axis=-1)))


def _smooth(x: Array, lo: Array, hi: Array) -> Array:
    t = np.clip((x - lo) / (hi - lo), 0.0, 1.0)
    return np.asarray(t * t * (3.0 - 2.0 * t))


def _numeric_grad(f: Callable[..., Array], args: list[Array], k: int, g: Array, eps: float = 1e-6) -> Array:
    """d/d args[k] of sum(g * f(*args)), by central differences (args[k] keeps its own shape)."""
    base = np.array(args[k], dtype=np.float64)
    out = np.zeros_like(base)
    for idx in np.ndindex(base.shape):
        hi, lo = base.copy(), base.copy()
        hi[idx] += eps
        lo[idx] -= eps
        plus = [*args[:k], hi, *args[k + 1 :]]
        minus = [*args[:k], lo, *args[k + 1 :]]
        out[idx] = (np.sum(g * f(*plus)) - np.sum(g * f(*minus))) / (2 * eps)
    return out


# -- values --------------------------------------------------------------------------------------


def test_values_broadcast_like_numpy(built: BuiltPackage) -> None:
    funcs = _funcs(built)
    rng = np.random.default_rng(0)
    x = rng.standard_normal((4, 5)).astype(np.float32)
    for a in (0.5, np.float32(0.5) * np.ones((4, 1), np.float32), rng.standard_normal(5).astype(np.float32)):
        got = funcs.poly(x, a)
        assert got.shape == (4, 5) and got.dtype == np.float32
        np.testing.assert_allclose(
            got, _poly(x.astype(np.float64), np.asarray(a, np.float64)), rtol=1e-5, atol=1e-5
        )
    # A length-1 axis and a scalar broadcast the other way too: the result takes the larger shape.
    assert funcs.poly(np.ones((1, 1), np.float32), np.ones((3, 2), np.float32)).shape == (3, 2)
    assert funcs.poly(2.0, 3.0).shape == ()
    np.testing.assert_allclose(funcs.poly(2.0, 3.0), 17.0)


def test_vector_parameters_take_a_last_axis(built: BuiltPackage) -> None:
    funcs = _funcs(built)
    rng = np.random.default_rng(1)
    u = rng.standard_normal((2, 6, 3)).astype(np.float32)
    v = rng.standard_normal((6, 3)).astype(np.float32)
    got = funcs.ndot(u, v)
    assert got.shape == (2, 6)
    np.testing.assert_allclose(got, _ndot(u.astype(np.float64), v.astype(np.float64)), rtol=1e-5, atol=1e-6)


def test_out_parameters_and_out_arrays(built: BuiltPackage) -> None:
    funcs = _funcs(built)
    p = np.array([[1.0, 1.0], [0.0, 2.0], [-3.0, 0.0]], np.float32)
    radius, angle = funcs.polar(p)
    np.testing.assert_allclose(radius, np.hypot(p[:, 0], p[:, 1]), rtol=1e-6)
    np.testing.assert_allclose(angle, np.arctan2(p[:, 1], p[:, 0]), rtol=1e-5)
    r2, a2 = np.zeros(3, np.float32), np.zeros(3, np.float32)
    written = funcs.polar(p, out=(r2, a2))
    assert written[0] is r2 and written[1] is a2
    np.testing.assert_allclose(r2, radius)
    np.testing.assert_allclose(a2, angle)
    into = np.zeros((4, 5), np.float32)
    funcs.poly(np.ones((4, 5), np.float32), 1.0, out=into)
    np.testing.assert_allclose(into, 4.0)


def test_tensors_in_tensors_out(built: BuiltPackage) -> None:
    funcs = _funcs(built)
    x = np.linspace(-1, 1, 1000, dtype=np.float32)
    t = slangrt.Tensor.from_numpy(x)
    got = funcs.poly(t, 0.5)
    assert isinstance(got, slangrt.Tensor)
    np.testing.assert_allclose(got.numpy(), _poly(x, np.full((), 0.5, np.float32)), rtol=1e-6, atol=1e-6)
    gx, ga = funcs.poly.vjp(t, 0.5, grad_output=np.ones(1000, np.float32))
    assert isinstance(gx, slangrt.Tensor) and ga is None


def test_many_elements_use_a_grid_of_two_axes(built: BuiltPackage) -> None:
    """More threads than one axis of groups holds (65535 groups of 256, 4 elements a thread):
    the rows of the grid (half elements, to move less)."""
    funcs = _funcs(built)
    n = 65535 * 256 * 4 + 1000
    x = np.full(n, 2.0, np.float16)
    x[-1] = 3.0
    got = funcs.hscale(x, np.float16(1.5))
    assert got[0] == 3.0 and got[-1] == 4.5 and np.all(got[:-1] == 3.0)


@pytest.mark.parametrize("n", [1, 2, 3, 4, 5, 7, 1023, 1025, 4 * 256 + 3, 3 * 4 * 256 + 1])
def test_each_thread_computes_elements_a_stride_apart(built: BuiltPackage, n: int) -> None:
    """Every element once, whatever is left over past the last whole set of four: the value,
    the gradient and the tangent, read directly and through broadcast strides."""
    funcs = _funcs(built)
    rng = np.random.default_rng(n)
    x = rng.standard_normal((2, n)).astype(np.float32)
    a = rng.standard_normal((2, 1)).astype(np.float32)
    np.testing.assert_allclose(funcs.poly(x, a), _poly(x, a), rtol=1e-5, atol=1e-5)
    out = np.full((2, n), np.nan, np.float32)
    funcs.poly(x, a, out=out)
    np.testing.assert_allclose(out, _poly(x, a), rtol=1e-5, atol=1e-5)
    g = rng.standard_normal((2, n)).astype(np.float32)
    gx, ga = funcs.poly.vjp(x, a, grad_output=g)
    np.testing.assert_allclose(gx, g * (2 * a * x + 2), rtol=1e-5, atol=1e-5)
    assert ga is None
    t = funcs.poly.jvp(x, a, tangents=(g, None))
    np.testing.assert_allclose(t, g * (2 * a * x + 2), rtol=1e-5, atol=1e-5)


# -- gradients -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("xshape", "ashape"), [((5,), ()), ((3, 4), (3, 1)), ((1, 4), (3, 1)), ((2, 3, 4), (4,))]
)
def test_vjp_matches_finite_differences_summed_over_broadcasts(
    built: BuiltPackage, xshape: tuple[int, ...], ashape: tuple[int, ...]
) -> None:
    funcs = _funcs(built)
    rng = np.random.default_rng(2)
    x, a = rng.standard_normal(xshape), rng.standard_normal(ashape)
    out_shape = np.broadcast_shapes(xshape, ashape)
    g = rng.standard_normal(out_shape)
    gx, ga = funcs.poly64.vjp(x, a, grad_output=g)
    assert ga is None  # no_diff
    assert gx.shape == xshape
    np.testing.assert_allclose(gx, _numeric_grad(_poly, [x, a], 0, g), rtol=1e-6, atol=1e-6)


def test_vjp_of_vectors_and_of_every_parameter(built: BuiltPackage) -> None:
    funcs = _funcs(built)
    rng = np.random.default_rng(3)
    u, v = rng.standard_normal((5, 3)), rng.standard_normal((1, 3))
    g = rng.standard_normal(5)
    gu, gv = funcs.ndot64.vjp(u, v, grad_output=g)
    assert gu.shape == (5, 3) and gv.shape == (1, 3)
    np.testing.assert_allclose(gu, _numeric_grad(_ndot, [u, v], 0, g), rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(gv, _numeric_grad(_ndot, [u, v], 1, g), rtol=1e-6, atol=1e-7)
    x = rng.uniform(0.0, 3.0, (4, 6))
    lo, hi = np.array(0.5), rng.uniform(2.0, 2.5, (4, 1))
    g2 = rng.standard_normal((4, 6))
    grads = funcs.smoothstep_between.vjp(x, lo, hi, grad_output=g2)
    for k, (got, arg) in enumerate(zip(grads, (x, lo, hi), strict=True)):
        assert np.shape(got) == arg.shape
        np.testing.assert_allclose(got, _numeric_grad(_smooth, [x, lo, hi], k, g2), rtol=1e-5, atol=1e-6)


def test_jvp_matches_finite_differences(built: BuiltPackage) -> None:
    funcs = _funcs(built)
    rng = np.random.default_rng(4)
    u, v = rng.standard_normal((6, 3)), rng.standard_normal((6, 3))
    du, dv = rng.standard_normal((6, 3)), rng.standard_normal((1, 3))
    eps = 1e-6
    numeric = (_ndot(u + eps * du, v + eps * dv) - _ndot(u - eps * du, v - eps * dv)) / (2 * eps)
    np.testing.assert_allclose(funcs.ndot64.jvp(u, v, tangents=(du, dv)), numeric, rtol=1e-6, atol=1e-7)
    # None is a zero tangent; a no_diff parameter takes None only.
    x = rng.standard_normal(8)
    np.testing.assert_allclose(funcs.poly64.jvp(x, 0.5, tangents=(np.ones(8), None)), x + 2.0, rtol=1e-12)
    np.testing.assert_allclose(funcs.ndot64.jvp(u, v, tangents=(None, None)), 0.0)
    with pytest.raises(ValueError, match="`a` has no derivative"):
        funcs.poly64.jvp(x, 0.5, tangents=(np.ones(8), 1.0))


# -- errors and warnings -------------------------------------------------------------------------


def test_errors_name_the_argument(built: BuiltPackage) -> None:
    funcs = _funcs(built)
    with pytest.raises(TypeError, match=r"poly\(\): argument `x` has dtype float64, expected float32"):
        funcs.poly(np.ones(3), 1.0)
    with pytest.raises(ValueError, match=r"do not broadcast together: `x` \(3,\), `a` \(4,\)"):
        funcs.poly(np.ones(3, np.float32), np.ones(4, np.float32))
    with pytest.raises(
        ValueError, match=r"argument `u` has shape \(4, 2\); its last axes must be the element's \(3,\)"
    ):
        funcs.ndot(np.ones((4, 2), np.float32), np.ones(3, np.float32))
    with pytest.raises(ValueError, match=r"`out` has shape \(2,\)"):
        funcs.poly(np.ones(3, np.float32), 1.0, out=np.zeros(2, np.float32))
    with pytest.raises(ValueError, match=r"`grad_output` has shape \(4,\); expected \(3,\)"):
        funcs.poly.vjp(np.ones(3, np.float32), 1.0, grad_output=np.ones(4, np.float32))


def test_what_cannot_be_mapped_is_a_warning_naming_the_line(built: BuiltPackage) -> None:
    said = "\n".join(built.output.warnings)
    assert (
        "shaders/unmappable.slang:2: warning: `with_matrix` (line 6): parameter `m` has type `float3x3`"
        in said
    )
    assert "`slang-map` names `missing`, but no definition" in said and "or what it imports" in said
    assert said.count("`fine`") == 0 and said.count("names `missing`") == 1  # (named twice: said once)
    assert "`twice` has 2 definitions (overloads): the first, line 17, is mapped" in said
    assert "`writes_out` is [Differentiable], but no vjp or jvp is made for it: it has out or inout" in said
    assert "`_hs_sneaky`: names starting `_hs` or `hs_` are the generated code's" in said
    unmappable = built.kernels("unmappable")
    assert not hasattr(unmappable, "with_matrix")
    np.testing.assert_allclose(unmappable.fine(np.arange(3, dtype=np.float32)), [1.0, 2.0, 3.0])
    assert "no Bindings block" not in said  # (the generated entries document themselves)


def test_generated_module_lists_the_functions_not_their_entries(built: BuiltPackage) -> None:
    funcs = _funcs(built)
    listed = {"poly", "poly64", "ndot", "ndot64", "smoothstep_between", "polar", "softsign", "clash"}
    assert set(funcs.__all__) == listed | {"count_above", "hscale", "energy", "Particle"}
    assert not hasattr(funcs.polar, "vjp")  # not [Differentiable]
    assert "bwd_diff" not in Path(funcs.__file__).read_text(encoding="utf-8")


def test_a_generic_function_picks_its_instance_by_dtype(built: BuiltPackage) -> None:
    funcs = _funcs(built)
    x = np.linspace(-3.0, 3.0, 13)
    for dtype in (np.float32, np.float64):
        got = funcs.softsign(x.astype(dtype))
        assert got.dtype == dtype
        np.testing.assert_allclose(got, x / (1 + np.abs(x)), rtol=1e-6)
    (g,) = funcs.softsign.vjp(x, grad_output=np.ones(13))
    np.testing.assert_allclose(g, 1 / (1 + np.abs(x)) ** 2, rtol=1e-12)
    with pytest.raises(TypeError, match=r"no instance takes these dtypes \(`x` int64\)"):
        funcs.softsign(np.arange(3))


def _build_one(root: Path, name: str, source: str) -> None:
    """Build a project of one shader, ``shaders/<name>.slang`` holding ``source``."""
    from hatch_slang.builder import pipeline
    from hatch_slang.config.project import load_project_config

    (root / "shaders").mkdir()
    (root / "pyproject.toml").write_text(
        '[project]\nname = "bad"\nversion = "0"\n[tool.hatch.build.hooks.slang]\n'
        'shaders = ["shaders/*.slang"]\npackage = "bad/kernels"\n'
    )
    (root / "shaders" / f"{name}.slang").write_text(source)
    pipeline.build(load_project_config(root))


def test_transcendentals_of_doubles_fail_the_build(tmp_path: Path) -> None:
    """Vulkan defines exp, log, sin... on 16- and 32-bit floats only; Slang writes them for
    doubles anyway and lavapipe returns garbage: the build refuses, naming the function's line."""
    from hatch_slang.errors import HatchSlangError

    with pytest.raises(HatchSlangError) as e:
        _build_one(
            tmp_path,
            "sp",
            "// slang-map: sp\n\n[Differentiable]\ndouble sp(double x) { return log(1.0 + exp(x)); }\n",
        )
    assert "shaders/sp.slang:4: entry `_hs_map_sp` applies `exp`, `log` to double-precision values" in str(
        e.value
    )


def test_importing_the_module_never_imports_torch(built: BuiltPackage) -> None:
    """Mapped functions register their torch ops the first time torch tensors reach them."""
    code = (
        "import sys\n"
        "import numpy as np\n"
        f"from {built.package} import funcs\n"
        "funcs.poly(np.ones(3, np.float32), 1.0)\n"
        "funcs.poly.vjp(np.ones(3, np.float32), 1.0, grad_output=np.ones(3, np.float32))\n"
        "assert 'torch' not in sys.modules, 'torch was imported'\n"
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(built.root), *sys.path])}
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr


def test_show_lists_mapped_functions(built: BuiltPackage) -> None:
    from click.testing import CliRunner

    from hatch_slang.cli.commands import main

    root = str(built.root)
    data = json.loads(CliRunner().invoke(main, ["show", "funcs", "--root", root, "--json"]).output)
    assert data["entries"] == []  # (the generated entries are shown as their functions)
    mapped = {m["name"]: m for m in data["mapped"]}
    poly = mapped["poly"]["instances"][0]
    assert [(p["name"], p["gradient"]) for p in poly["parameters"]] == [("x", True), ("a", False)]
    assert poly["vjp"] and "NumPy" in mapped["poly"]["broadcast"]
    assert [i["instance"] for i in mapped["softsign"]["instances"]] == ["softsign<float>", "softsign<double>"]
    assert mapped["ndot"]["instances"][0]["parameters"][0]["element_shape"] == [3]
    assert not mapped["polar"]["instances"][0]["vjp"]
    text = CliRunner().invoke(main, ["show", "funcs", "--root", root]).output
    assert "mapped function softsign (line" in text and "2 instances picked by dtype" in text


def test_parameters_named_like_the_methods_own_and_integers(built: BuiltPackage) -> None:
    funcs = _funcs(built)
    x = np.arange(4, dtype=np.float32)
    np.testing.assert_allclose(funcs.clash(x, 2.0, 1.0), 2 * x + 1)
    g_self, g_tangents, g_grad_output = funcs.clash.vjp(x, 2.0, 1.0, grad_output=np.ones(4, np.float32))
    np.testing.assert_allclose(g_self, 2.0)
    assert g_grad_output is None and np.shape(g_tangents) == ()
    np.testing.assert_allclose(g_tangents, x.sum())
    np.testing.assert_array_equal(funcs.count_above(x, 1), [0, 0, 1, 1])
    with pytest.raises(TypeError, match=r"argument `n` is 1.5, which uint32 cannot hold exactly"):
        funcs.count_above(x, 1.5)
    with pytest.raises(TypeError, match=r"argument `n` is -1, which uint32 cannot hold exactly"):
        funcs.count_above(x, -1)


def test_half_precision_and_numpy_scalars(built: BuiltPackage) -> None:
    funcs = _funcs(built)
    x = np.arange(5, dtype=np.float16)
    got = funcs.hscale(x, np.float16(1.5))
    assert got.dtype == np.float16
    np.testing.assert_array_equal(got, x * np.float16(1.5))
    gx, gs = funcs.hscale.vjp(x, 1.5, grad_output=np.ones(5, np.float16))
    np.testing.assert_array_equal(gx, np.full(5, 1.5, np.float16))
    assert gs is None


def _energy(pos: Array, mass: Array, g: Array) -> Array:
    return np.asarray(mass * g * pos[..., 1] + 0.5 * mass * (pos * pos).sum(-1))


def test_a_function_of_a_struct_against_numpy_and_finite_differences(built: BuiltPackage) -> None:
    """A struct parameter takes a NumPy structured array of the module's dtype for it; its
    gradient is an array of the same struct, field by field (an int field's is 0), summed over
    broadcast axes field by field too."""
    funcs = _funcs(built)
    rng = np.random.default_rng(5)
    p = np.zeros((2, 3), funcs.Particle)
    p["pos"], p["mass"], p["id"] = rng.standard_normal((2, 3, 3)), rng.uniform(1, 2, (2, 3)), 7
    g = rng.uniform(5, 10, (2, 3))
    np.testing.assert_allclose(funcs.energy(p, g), _energy(p["pos"], p["mass"], g), rtol=1e-12)
    w = rng.standard_normal((2, 3))
    one = p[:1, :1]  # broadcast over both axes: its gradient is summed over them
    for arg in (p, one):
        gp, gg = funcs.energy.vjp(arg, g, grad_output=w)
        assert gg is None and gp.dtype == funcs.Particle and gp.shape == arg.shape
        pos, mass = np.array(arg["pos"]), np.array(arg["mass"])

        def f(q: Array, m: Array) -> Array:
            return _energy(q, m, g)

        num_pos = _numeric_grad(f, [pos, mass], 0, w)
        num_mass = _numeric_grad(f, [pos, mass], 1, w)
        np.testing.assert_allclose(gp["pos"], num_pos, rtol=1e-6, atol=1e-6)
        np.testing.assert_allclose(gp["mass"], num_mass, rtol=1e-6, atol=1e-6)
        np.testing.assert_array_equal(gp["id"], 0)
    with pytest.raises(TypeError, match=r"argument `p` has dtype"):
        funcs.energy(np.zeros(3), 1.0)


def test_validate_runs_a_reference_of_mapped_functions(built: BuiltPackage) -> None:
    """`hatch-slang validate` calls a mapped function with a case's arguments and compares the
    outputs the case names: its return value (`result`) and its out parameters."""
    from click.testing import CliRunner

    from hatch_slang.cli.commands import main

    result = CliRunner().invoke(main, ["validate", "funcs", "--root", str(built.root)])
    assert result.exit_code == 0, result.output
    assert "2/2 ok" in result.output and "polar" in result.output


def test_a_function_of_an_imported_module(built: BuiltPackage) -> None:
    """`slang-map` names a function the file imports (`import lib.shapes;`): it is mapped there."""
    imported = built.kernels("imported")
    x = np.linspace(-2, 2, 9, dtype=np.float32)
    np.testing.assert_allclose(imported.ramp(x), np.where(x > 0, x * x, 0.0))
    (g,) = imported.ramp.vjp(x, grad_output=np.ones(9, np.float32))
    np.testing.assert_allclose(g, np.where(x > 0, 2 * x, 0.0))
    assert "`ramp` of lib/shapes.slang (line 4)" in (imported.ramp.__doc__ or "")


@pytest.mark.parametrize(
    ("xshape", "tshape"), [((100_000,), ()), ((300, 1), (1, 400)), ((70_000, 2), (1, 2))]
)
def test_gradients_summed_over_long_broadcasts(
    built: BuiltPackage, xshape: tuple[int, ...], tshape: tuple[int, ...]
) -> None:
    """A gradient summed over many elements (lavapipe cuts a shader's loop at 65535 iterations:
    each thread sums a chunk, and the chunks' sums are summed again)."""
    funcs = _funcs(built)
    x = np.full(xshape, 2.0, np.float32)
    t = np.ones(tshape, np.float32)
    out_shape = np.broadcast_shapes(xshape, tshape)
    _, g_t, _ = funcs.clash.vjp(x, t, 0.0, grad_output=np.ones(out_shape, np.float32))
    summed = 2.0 * np.ones(out_shape).sum(axis=tuple(k for k, n in enumerate(np.shape(t)) if n == 1) or None)
    np.testing.assert_array_equal(np.reshape(g_t, -1), np.reshape(summed, -1))
    assert np.shape(g_t) == tshape


def test_numbers_pick_numpys_instance_and_read_only_out_is_refused(built: BuiltPackage) -> None:
    funcs = _funcs(built)
    assert funcs.softsign(2.0).dtype == np.float64  # (NumPy's dtype for a float; not the first listed)
    frozen = np.zeros(3, np.float32)
    frozen.flags.writeable = False
    with pytest.raises(ValueError, match=r"poly\(\): `out` is a read-only array"):
        funcs.poly(np.ones(3, np.float32), 1.0, out=frozen)
    with pytest.raises(ValueError, match=r"`tangent of u` \(3,\)"):
        funcs.ndot64.jvp(np.ones((4, 3)), np.ones((4, 3)), tangents=(np.ones((3, 3)), None))
    with pytest.raises(ValueError, match=r"at most 8"):
        funcs.poly(np.ones((1,) * 9, np.float32), 1.0)


def test_the_map_option_maps_a_function_of_an_imported_module(built: BuiltPackage) -> None:
    """An override's `map` names functions for its shaders as a `slang-map` line would."""
    viaoption = built.kernels("viaoption")
    x = np.linspace(-2, 2, 5, dtype=np.float32)
    np.testing.assert_allclose(viaoption.cube(x), x**3)
    (g,) = viaoption.cube.vjp(x, grad_output=np.ones(5, np.float32))
    np.testing.assert_allclose(g, 3 * x**2)
    assert viaoption.__all__ == ["cube"]


def test_compiler_messages_name_the_file_not_its_generated_copy(tmp_path: Path) -> None:
    """A file with mapped functions is compiled from a copy (its text, then the generated
    entries'): Slang's messages still name the file and its line."""
    from hatch_slang.errors import HatchSlangError

    with pytest.raises(HatchSlangError) as e:
        _build_one(
            tmp_path, "oops", "// slang-map: f\n\nfloat f(float x)\n{\n    return x + no_such_thing;\n}\n"
        )
    said = str(e.value)
    assert "shaders/oops.slang:5" in said and "no_such_thing" in said, said
    assert "hatch-slang-" not in said  # (the scratch copy's path)
