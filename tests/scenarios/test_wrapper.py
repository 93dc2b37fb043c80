"""Generated wrappers on a real Vulkan device (lavapipe in CI): numerics and argument checks."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest

from ..helpers import BuildProject, requires_device

pytestmark = [pytest.mark.gpu, pytest.mark.compile, requires_device]


@pytest.fixture
def kernels(package: Callable[[str], Path], build_project: BuildProject) -> ModuleType:
    return build_project(package("seedpkg")).kernels("moe_combine")


def reference(z: np.ndarray, w: np.ndarray, out: np.ndarray, n_used: int, accumulate: bool) -> np.ndarray:
    n_tokens, hidden = out.shape
    summed = (w[:, None].astype(np.float64) * z).reshape(n_tokens, n_used, hidden).sum(axis=1)
    return summed + out if accumulate else summed


@pytest.mark.parametrize(
    ("hidden", "n_tokens", "n_used"), [(1, 1, 1), (256, 1, 2), (300, 3, 4), (1000, 5, 8), (2049, 2, 3)]
)
@pytest.mark.parametrize("accumulate", [False, True])
def test_moe_combine_matches_numpy(
    kernels: ModuleType, hidden: int, n_tokens: int, n_used: int, accumulate: bool
) -> None:
    rng = np.random.default_rng(hidden * 31 + n_tokens)
    z = rng.standard_normal((n_tokens * n_used, hidden), dtype=np.float32)
    w = rng.random(n_tokens * n_used, dtype=np.float32)
    out = rng.standard_normal((n_tokens, hidden), dtype=np.float32)
    want = reference(z, w, out, n_used, accumulate)
    z0, w0 = z.copy(), w.copy()
    kernels.moe_combine(z, w, out, n_used=n_used, accumulate=accumulate)
    np.testing.assert_allclose(out, want, atol=1e-4, rtol=1e-4)
    assert np.array_equal(z, z0) and np.array_equal(w, w0)  # read-only bindings are not written back


def _args(hidden: int = 300, n_tokens: int = 2, n_used: int = 4) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(7)
    return (
        rng.standard_normal((n_tokens * n_used, hidden), dtype=np.float32),
        rng.random(n_tokens * n_used, dtype=np.float32),
        rng.standard_normal((n_tokens, hidden), dtype=np.float32),
    )


@pytest.mark.parametrize(
    ("mutate", "error", "message"),
    [
        (
            lambda a: {**a, "z": a["z"].astype(np.float64)},
            TypeError,
            "argument `z` must have dtype float32, got float64",
        ),
        (
            lambda a: {**a, "sel_weight": a["sel_weight"].tolist()},
            TypeError,
            "argument `sel_weight` must be a numpy.ndarray or slangrt.Tensor, got list",
        ),
        (lambda a: {**a, "out": a["out"][0]}, ValueError, "argument `out` must have 2 dimension"),
        (
            lambda a: {**a, "out": a["out"][:, :100]},
            ValueError,
            r"argument `out` axis 1 \(`hidden`\) has size 100, expected 300 \(from `z` axis 1\)",
        ),
        (
            lambda a: {**a, "sel_weight": a["sel_weight"][:5]},
            ValueError,
            r"argument `sel_weight` axis 0 \(`n_entries`\) has size 5, expected 8",
        ),
        (
            lambda a: {**a, "hidden": 299},
            ValueError,
            r"argument `z` axis 1 \(`hidden`\) has size 300, expected 299 \(from argument `hidden`\)",
        ),
        (lambda a: {**a, "n_used": -1}, ValueError, r"argument `n_used` = -1 is outside the u32 range"),
        (lambda a: {**a, "n_used": 2**32}, ValueError, "outside the u32 range"),
        (lambda a: {**a, "n_used": 2.5}, TypeError, "argument `n_used` must be an int, got float"),
        (lambda a: {**a, "n_tokens": "2"}, TypeError, "argument `n_tokens` must be an int, got str"),
    ],
)
def test_bad_calls_name_argument_and_axis_and_change_nothing(
    kernels: ModuleType,
    mutate: Callable[[dict[str, object]], dict[str, object]],
    error: type[Exception],
    message: str,
) -> None:
    z, w, out = _args()
    args = mutate({"z": z, "sel_weight": w, "out": out, "n_used": 4, "accumulate": True})
    before = {k: v.copy() for k, v in args.items() if isinstance(v, np.ndarray)}
    with pytest.raises(error, match=message):
        kernels.moe_combine(**args)
    for k, v in before.items():
        assert np.array_equal(args[k], v), f"{k} changed by a failed call"  # type: ignore[arg-type]


def test_read_only_output_is_refused(kernels: ModuleType) -> None:
    z, w, out = _args()
    out.flags.writeable = False
    with pytest.raises(
        ValueError, match="argument `out` is written by the kernel but the array is read-only"
    ):
        kernels.moe_combine(z, w, out, n_used=4, accumulate=True)


def test_strided_arrays_are_copied_in_and_written_back(kernels: ModuleType) -> None:
    z, w, out = _args()
    z_strided = np.asfortranarray(z)
    big = np.zeros((2, 600), np.float32)
    out_view = big[:, ::2]
    out_view[...] = out
    want = reference(z, w, out, 4, True)
    kernels.moe_combine(z_strided, w, out_view, n_used=4, accumulate=True)
    np.testing.assert_allclose(out_view, want, atol=1e-4)
    assert np.all(big[:, 1::2] == 0)  # the gaps between the view's elements are untouched


def test_explicit_dims_that_agree_are_accepted(kernels: ModuleType) -> None:
    z, w, out = _args()
    want = reference(z, w, out, 4, False)
    kernels.moe_combine(z, w, out, n_used=4, accumulate=False, hidden=300, n_tokens=2)
    np.testing.assert_allclose(out, want, atol=1e-4)


def test_tensors_stay_on_device_and_chain(kernels: ModuleType) -> None:
    import slangrt

    z, w, out = _args()
    want = reference(z, w, reference(z, w, out, 4, True).astype(np.float32), 4, True)
    tz, tw, tout = slangrt.Tensor.from_numpy(z), slangrt.Tensor.from_numpy(w), slangrt.Tensor.from_numpy(out)
    kernels.moe_combine(tz, tw, tout, n_used=4, accumulate=True)
    kernels.moe_combine(tz, tw, tout, n_used=4, accumulate=True)
    np.testing.assert_allclose(tout.numpy(), want, atol=1e-4)


def test_docstring_lists_arguments_in_signature_order_with_the_comments_words(kernels: ModuleType) -> None:
    import inspect

    fn = kernels.moe_combine
    doc = inspect.getdoc(fn) or ""
    args = doc.split("Args:\n", 1)[1].split("\n\n", 1)[0]
    documented = [line.split(":", 1)[0].strip() for line in args.splitlines() if line[4:5] not in (" ", "")]
    assert documented == list(inspect.signature(fn).parameters)
    accumulate = next(line for line in args.splitlines() if line.strip().startswith("accumulate:"))
    assert "picks which of the two FFN output conventions the caller uses" in accumulate
