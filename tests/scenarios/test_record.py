"""Recorded steps through generated wrappers: ``slangrt.record()`` and ``slangrt.recorded``.

The wrappers pack their scalar params into arrays; a recorded step keeps those by value (its own
copy), reads its tensors as they are at each replay, and records again (``recorded``) when a
scalar or a tensor argument changes. The runtime-level cases are in tests/runtime/test_record.py.
"""

from __future__ import annotations

from types import ModuleType

import numpy as np
import pytest

from ..helpers import requires_device

pytestmark = [pytest.mark.gpu, pytest.mark.compile, requires_device]


def _want(x: np.ndarray, y: np.ndarray, scale: np.ndarray, alpha: float, offset: int) -> np.ndarray:
    return (np.float32(alpha) * scale[:, None] * x + y + np.float32(offset)).astype(np.float32)


def test_a_recorded_wrapper_step_replays_with_new_inputs(kernels: ModuleType) -> None:
    import slangrt

    rng = np.random.default_rng(3)
    rows, cols = 4, 130
    x, scale = rng.standard_normal((rows, cols), np.float32), rng.standard_normal(rows, np.float32)
    tx, ty, ts = (slangrt.Tensor.from_numpy(a) for a in (x, np.zeros((rows, cols), np.float32), scale))
    with slangrt.record() as step:
        kernels.axpy.axpy(tx, ty, ts, alpha=0.5, offset=1)
        kernels.axpy.axpy(tx, ty, ts, alpha=-2.0, offset=3)
    y = _want(x, _want(x, np.zeros((rows, cols), np.float32), scale, 0.5, 1), scale, -2.0, 3)
    np.testing.assert_allclose(ty.numpy(), y, rtol=1e-5, atol=1e-5)
    for _ in range(3):
        x = rng.standard_normal((rows, cols), np.float32)
        tx.copy_from(x)
        kernels.axpy.axpy(tx, ty, ts, alpha=7.0, offset=0)  # other params meanwhile, unrecorded
        step.replay()
        y = _want(x, _want(x, _want(x, y, scale, 7.0, 0), scale, 0.5, 1), scale, -2.0, 3)
        np.testing.assert_allclose(ty.numpy(), y, rtol=1e-4, atol=1e-4)
    written = np.zeros((rows, cols), np.float32)
    with pytest.raises(ValueError, match="for a written binding cannot be recorded"), slangrt.record():
        kernels.axpy.axpy(tx, written, ts, alpha=1.0, offset=0)


def test_recorded_wrapper_steps_record_again_for_new_params(kernels: ModuleType) -> None:
    import slangrt

    rows, cols = 2, 70
    tx = slangrt.Tensor.from_numpy(np.ones((rows, cols), np.float32))
    ty = slangrt.Tensor.zeros((rows, cols), np.float32)
    ts = slangrt.Tensor.from_numpy(np.ones(rows, np.float32))

    @slangrt.recorded
    def step(y: slangrt.Tensor, alpha: float, offset: int) -> None:
        kernels.axpy.axpy(tx, y, ts, alpha=alpha, offset=offset)

    total = 0.0
    for alpha, offset in [(1.0, 0), (1.0, 0), (2.0, 0), (1.0, 0), (1.0, 1), (-0.0, 0), (0.0, 0)]:
        step(ty, alpha, offset)
        total += alpha + offset
    assert step.recordings == 5  # (1.0, 0), (2.0, 0), (1.0, 1), (-0.0, 0), (0.0, 0)
    np.testing.assert_array_equal(ty.numpy(), np.full((rows, cols), total, np.float32))
    with pytest.raises(TypeError, match="argument `alpha` must be a float, got str"):
        step(ty, "1", 0)
    assert step.recordings == 5
