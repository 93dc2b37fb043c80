"""A whole MoE decode step out of one preallocated scratch tensor, on weights uploaded once.

route -> two Q4_0 expert GEMVs around a GELU -> weighted combine into the residual stream, as an
engine runs it: the quantised weights of the layer are one file (laid out like GGUF: each
tensor's bytes at an aligned offset), memory-mapped and uploaded once into one uint8
``slangrt.Tensor``; each weight is a view of it at its offset (``Tensor.at``). Every
intermediate (logits, routing, activations, expert outputs) is a view of one scratch tensor
sized for the largest batch, cut to the step's size (``scratch_region[:n]``). The step runs
unbatched and inside ``slangrt.batch()``, and matches a NumPy reference either way.
"""

from __future__ import annotations

import math
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import pytest

from . import test_moe
from .test_kernels import library
from .test_moe import Layer, kernels, make_layer, quantized, route

pytestmark = test_moe.pytestmark
__all__ = ["library"]  # the fixture, imported for use here

SQRT_2_OVER_PI = math.sqrt(2 / math.pi)


def gelu(x: np.ndarray) -> np.ndarray:
    return 0.5 * x * (1 + np.tanh(SQRT_2_OVER_PI * (x + 0.044715 * x**3)))


def reference_step(x: np.ndarray, layer: Layer, n_used: int) -> tuple[np.ndarray, np.ndarray]:
    """The residual after route -> up GEMV -> GELU -> down GEMV -> combine; in float64."""
    x = x.astype(np.float64)
    chosen, weight = route(x, layer, n_used)
    out = x.copy()
    for t in range(len(x)):
        for s, e in enumerate(chosen[t]):
            act = gelu(layer.up[e].astype(np.float64) @ x[t])
            out[t] += weight[t, s] * (layer.down[e].astype(np.float64) @ act)
    return out, chosen


def clear_routing(x: np.ndarray, layer: Layer, n_used: int) -> bool:
    logits = x.astype(np.float64) @ layer.router.T.astype(np.float64)
    p = np.exp(logits - logits.max(axis=-1, keepdims=True))
    keys = np.sort(p / p.sum(axis=-1, keepdims=True) + layer.bias, axis=-1)[:, ::-1][:, : n_used + 1]
    return bool(np.all(-np.diff(keys, axis=-1) > 1e-3))


def write_weights_file(path: Path, tensors: dict[str, np.ndarray], align: int) -> dict[str, tuple[int, Any]]:
    """Lay ``tensors`` out in one file, each at a multiple of ``align`` bytes; return the index
    (name -> (offset, array for its shape and dtype))."""
    index: dict[str, tuple[int, Any]] = {}
    offset = 8
    with path.open("wb") as f:
        f.write(b"HSWEIGHT")  # a header, as model files have
        for name, arr in tensors.items():
            offset = -(-offset // align) * align
            f.seek(offset)
            f.write(np.ascontiguousarray(arr).tobytes())
            index[name] = (offset, arr)
            offset += arr.nbytes
    return index


class Scratch:
    """One uint8 tensor holding every intermediate of the step, for up to ``max_tokens``."""

    def __init__(self, max_tokens: int, hidden: int, ffn: int, n_experts: int, n_used: int) -> None:
        import slangrt

        entries = max_tokens * n_used
        layout = {
            "logits": ((max_tokens, n_experts), np.float32),
            "sel_expert": ((entries,), np.uint32),
            "sel_weight": ((entries,), np.float32),
            "act": ((entries, ffn), np.float32),
            "z": ((entries, hidden), np.float32),
        }
        offset = 0
        places: dict[str, tuple[int, tuple[int, ...], Any]] = {}
        for name, (shape, dtype) in layout.items():
            offset = -(-offset // 256) * 256
            places[name] = (offset, shape, dtype)
            offset += math.prod(shape) * np.dtype(dtype).itemsize
        self.tensor = slangrt.Tensor.empty(offset + 1000, np.uint8)  # spare room on purpose
        self.regions = {n: self.tensor.at(o, s, d) for n, (o, s, d) in places.items()}

    def __getitem__(self, name: str) -> Any:
        return self.regions[name]


def run_step(
    mods: dict[str, ModuleType],
    residual: Any,
    weights: dict[str, Any],
    scratch: Scratch,
    n_tokens: int,
    n_used: int,
) -> None:
    """One decode step on device tensors: ``residual`` is updated in place."""
    n_entries = n_tokens * n_used
    logits = scratch["logits"][:n_tokens]
    sel_expert = scratch["sel_expert"][:n_entries]
    sel_weight = scratch["sel_weight"][:n_entries]
    act = scratch["act"][:n_entries]
    z = scratch["z"][:n_entries]
    mods["gemv_f32"].gemv_f32(weights["router"], residual, logits, accumulate=0)
    mods["moe_route"].moe_route(logits, weights["bias"], sel_expert, sel_weight, n_used=n_used)
    moe = mods["moe_gemv"]
    moe.moe_gemv_q4_0(weights["up_q"], weights["up_d"], residual, sel_expert, act, x_div=n_used)
    mods["gelu"].gelu(act)
    moe.moe_gemv_q4_0(weights["down_q"], weights["down_d"], act, sel_expert, z, x_div=1)
    mods["moe_combine"].moe_combine(z, sel_weight, residual, n_used=n_used, accumulate=1)


@pytest.mark.parametrize("file_align", [32, 4], ids=["gguf-aligned weights", "weights at 4-byte offsets"])
@pytest.mark.parametrize(
    ("n_tokens", "hidden", "ffn", "n_experts", "n_used"), [(1, 256, 128, 8, 2), (3, 512, 256, 16, 4)]
)
def test_moe_decode_step_from_one_scratch_and_one_weights_tensor(
    library: Path,
    tmp_path: Path,
    file_align: int,
    n_tokens: int,
    hidden: int,
    ffn: int,
    n_experts: int,
    n_used: int,
) -> None:
    import slangrt

    rng = np.random.default_rng(hidden + n_tokens)
    for _ in range(100):
        layer = make_layer(rng, hidden, ffn, n_experts)
        xs = [rng.standard_normal((n_tokens, hidden)).astype(np.float32) for _ in range(3)]
        if all(clear_routing(x, layer, n_used) for x in xs):
            break
    else:
        pytest.fail("no input with clear routing found")
    planes: dict[str, np.ndarray] = {"router": layer.router, "bias": layer.bias}
    for name in ("up", "down"):
        wq, wd, w = quantized(getattr(layer, name))
        planes[f"{name}_q"], planes[f"{name}_d"] = wq, wd
        setattr(layer, name, w)  # the reference sees exactly the weights the quants stand for

    # The model file: written once, memory-mapped, uploaded once as bytes.
    index = write_weights_file(tmp_path / "layer.bin", planes, file_align)
    mapped = np.memmap(tmp_path / "layer.bin", np.uint8, mode="r")
    blob = slangrt.Tensor.from_numpy(mapped)
    del mapped
    weights = {name: blob.at(off, arr.shape, arr.dtype) for name, (off, arr) in index.items()}
    if file_align == 4:
        align = blob.device.parts.core.storage_align
        assert any(w.offset % align for w in weights.values()), "some weights should be misaligned"

    mods = {n: kernels(n) for n in ("gemv_f32", "moe_route", "moe_gemv", "gelu", "moe_combine")}
    scratch = Scratch(n_tokens + 2, hidden, ffn, n_experts, n_used)
    residual = slangrt.Tensor.empty((n_tokens, hidden), np.float32)
    blob_alloc, scratch_alloc = blob._storage.alloc, scratch.tensor._storage.alloc

    for step, x in enumerate(xs):
        want, _ = reference_step(x, layer, n_used)
        residual.copy_from(x)
        if step == 0:
            run_step(mods, residual, weights, scratch, n_tokens, n_used)
            names = None
        else:  # batched (twice: the second replays the first's recorded batch)
            with slangrt.profile() as prof, slangrt.batch():
                run_step(mods, residual, weights, scratch, n_tokens, n_used)
            names = [r.kernel for r in prof.records]
        np.testing.assert_allclose(residual.numpy(), want, rtol=1e-4, atol=1e-4)
        chosen = scratch["sel_expert"][: n_tokens * n_used].numpy().reshape(n_tokens, n_used)
        np.testing.assert_array_equal(chosen, reference_step(x, layer, n_used)[1])
        if names is not None:
            assert names == [
                "gemv_f32.gemv_f32",
                "moe_route.moe_route",
                "moe_gemv.moe_gemv_q4_0",
                "gelu.gelu",
                "moe_gemv.moe_gemv_q4_0",
                "moe_combine.moe_combine",
            ]
    # Nothing freed the weights or the scratch while their views were used.
    assert not blob_alloc.released and not scratch_alloc.released
