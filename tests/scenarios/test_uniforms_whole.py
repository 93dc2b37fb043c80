"""Uniform values whole (tests/packages/types, ``uniforms_*``): a cbuffer's ``float4x4``,
``float3`` and arrays, and a push-constant block's vector and matrix, each one keyword argument
shaped as Slang indexes it, packed as std140 or std430 placed them, and checked against NumPy
through the kernels' outputs; bad shapes and kinds are errors naming the kernel and argument."""

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

pytestmark = [pytest.mark.compile, pytest.mark.gpu, requires_device]

# Non-symmetric values throughout, so a transposed or misaligned packing cannot pass.
M = (np.arange(16, dtype=np.float32).reshape(4, 4) ** 1.5 / 10 - 1).astype(np.float32)
ROWS34 = np.arange(12, dtype=np.float32).reshape(3, 4) / 7 - 0.5
COLS23 = [[1.0, 2.0, 3.0], [-4.0, 5.0, 0.5]]
TAPS = [[0.25, -0.5, 1.0], [2.0, -3.0, 0.125]]


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Any:
    with built_package(copy_package("types", tmp_path_factory.mktemp("types"))) as package:
        yield package


def _cbuffer(built: BuiltPackage, points: np.ndarray, **values: Any) -> tuple[np.ndarray, np.ndarray]:
    n = len(points)
    moved, mixed = np.zeros((n, 4), np.float32), np.zeros((n, 4), np.float32)
    args = dict(transform=M, offset=(0.5, -1.25, 2.0), weights=[1.0, -2.0, 0.25], taps=TAPS)
    args.update(rows34=ROWS34, cols23=COLS23, **values)
    built.kernels("uniforms_cbuffer").uniforms_cbuffer(
        points, moved, mixed, n=n, grid=(-(-n // 32), 1, 1), **args
    )
    return moved, mixed


def _expected(points: np.ndarray, transform: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    p = points.astype(np.float64)
    i = np.arange(len(p))
    moved = p @ np.asarray(transform, np.float64).T
    moved[:, :3] += (
        np.array([0.5, -1.25, 2.0]) + np.array([1.0, -2.0, 0.25])[i % 3, None] * np.array(TAPS)[i % 2]
    )
    c = p[:, :3] @ np.array(COLS23).T
    mixed = np.concatenate([p @ ROWS34.T.astype(np.float64), (c[:, 0] - 2 * c[:, 1])[:, None]], axis=1)
    return moved, mixed


def test_each_value_is_one_argument_without_per_component_names(built: BuiltPackage) -> None:
    params = inspect.signature(built.kernels("uniforms_cbuffer").uniforms_cbuffer).parameters
    assert list(params)[3:] == ["transform", "offset", "n", "weights", "taps", "rows34", "cols23", "grid"]
    push = inspect.signature(built.kernels("uniforms_push").uniforms_push).parameters
    assert list(push) == ["xs", "ys", "shift", "n", "mix", "grid"]


def test_a_cbuffer_matrix_float3_and_arrays_passed_whole(built: BuiltPackage) -> None:
    points = np.random.default_rng(23).standard_normal((37, 4)).astype(np.float32)
    moved, mixed = _cbuffer(built, points)
    want_moved, want_mixed = _expected(points, M)
    np.testing.assert_allclose(moved, want_moved, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(mixed, want_mixed, rtol=1e-5, atol=1e-5)
    # `transform=M` means transform[i][j] == M[i, j]: the transpose computes something else.
    transposed, _ = _cbuffer(built, points, transform=M.T.copy())
    assert not np.allclose(transposed, want_moved, rtol=1e-3, atol=1e-3)
    np.testing.assert_allclose(transposed, _expected(points, M.T)[0], rtol=1e-5, atol=1e-5)


def test_a_push_constant_vector_and_matrix_passed_whole(built: BuiltPackage) -> None:
    xs = np.random.default_rng(5).standard_normal((40, 4)).astype(np.float32)
    ys = np.zeros((40, 2), np.float32)
    mix = np.array([[1.0, 2.0, -3.0], [0.5, -1.5, 4.0]], np.float32)
    shift = np.array([1.0, -0.5, 0.25], np.float32)
    built.kernels("uniforms_push").uniforms_push(xs, ys, shift=shift, n=40, mix=mix, grid=(2, 1, 1))
    np.testing.assert_allclose(ys, (xs[:, :3] + shift) @ mix.T, rtol=1e-5, atol=1e-5)


def test_shapes_and_kinds_are_checked_naming_kernel_and_argument(built: BuiltPackage) -> None:
    points = np.zeros((3, 4), np.float32)
    with pytest.raises(
        ValueError,
        match=r"uniforms_cbuffer\.uniforms_cbuffer\(\): argument `transform` must have shape \(4, 4\) "
        r"\(as Slang indexes it\), got shape \(3, 4\)",
    ):
        _cbuffer(built, points, transform=np.zeros((3, 4)))
    with pytest.raises(ValueError, match=r"argument `offset` must have shape \(3,\) .*got shape \(4,\)"):
        _cbuffer(built, points, offset=[1.0, 2.0, 3.0, 4.0])
    with pytest.raises(TypeError, match=r"argument `taps` must hold numbers \(f32\), got dtype <U1"):
        _cbuffer(built, points, taps=[["a"] * 3] * 2)


@pytest.mark.slow
def test_the_uniforms_kernels_validate(built: BuiltPackage) -> None:
    root: Path = built.root
    args = ["validate", "--root", str(root), "--json", "uniforms_cbuffer", "uniforms_push"]
    result = CliRunner().invoke(main, args)
    rows = [json.loads(line) for line in result.output.splitlines() if line.startswith("{")]
    assert rows and all(r["ok"] for r in rows), result.output[-2000:]
    assert {r["entry"] for r in rows} == {"uniforms_cbuffer", "uniforms_push"}
    assert result.exit_code == 0, result.output[-2000:]
