"""Mapped differentiable functions as torch ops (issue 25): ``torch.autograd.gradcheck`` of each
``double`` function of ``tests/packages/autodiff``, and a small model trained for a few steps
through a mapped activation, with and without ``torch.compile``, against the same model written
in torch.

On CPU tensors (lavapipe, wherever torch is installed) and on CUDA tensors (an NVIDIA GPU with
the runtime's ``[cuda]`` extra). CI has no torch: these skip there, saying so.

The GPU machine has no Slang compiler: there the package is the one built here beforehand,
found through ``HATCH_SLANG_PREBUILT`` (a directory holding ``adpkg/kernels``)."""

from __future__ import annotations

import importlib.util
import os
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from ..helpers import BuiltPackage, built_package, copy_package, importable, requires_device

pytestmark = [
    pytest.mark.compile,
    requires_device,
    pytest.mark.skipif(importlib.util.find_spec("torch") is None, reason="torch is not installed"),
]


@pytest.fixture(scope="module")
def funcs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    root = copy_package("autodiff", tmp_path_factory.mktemp("autodiff"))
    prebuilt = os.environ.get("HATCH_SLANG_PREBUILT")
    if prebuilt:
        shutil.copytree(Path(prebuilt) / "adpkg" / "kernels", root / "adpkg" / "kernels")
        with importable(root, "adpkg"):
            yield importlib.import_module("adpkg.kernels.funcs")
        return
    with built_package(root) as package:
        yield _module(package)


def _module(package: BuiltPackage) -> Any:
    return package.kernels("funcs")


def _devices() -> list[str]:
    return ["cpu", "cuda"]


def _device(name: str) -> Any:
    import torch

    if name == "cuda":
        if not torch.cuda.is_available():
            pytest.skip("torch sees no CUDA device")
        import slangrt.cuda

        why = slangrt.cuda.unavailable_reason()
        if why is not None:
            pytest.skip(f"slangrt cannot share memory with CUDA here: {why}")
    return torch.device(name)


@pytest.mark.parametrize("device", _devices())
def test_gradcheck_of_each_function(funcs: Any, device: str) -> None:
    import torch

    dev = _device(device)
    gen = torch.Generator().manual_seed(0)

    def rand(*shape: int, low: float = -1.0, high: float = 1.0) -> Any:
        t = torch.rand(*shape, generator=gen, dtype=torch.float64) * (high - low) + low
        return t.to(dev).requires_grad_(True)

    a = torch.tensor(0.75, dtype=torch.float64, device=dev)  # no_diff: no gradient asked
    assert torch.autograd.gradcheck(lambda x: funcs.poly64(x, a), (rand(4, 5),))
    assert torch.autograd.gradcheck(funcs.ndot64, (rand(6, 3), rand(1, 3)))
    x, lo, hi = rand(3, 4, low=0.0, high=3.0), rand(1, low=0.2, high=0.4), rand(3, 1, low=2.0, high=2.5)
    assert torch.autograd.gradcheck(funcs.smoothstep_between, (x, lo, hi))
    assert torch.autograd.gradcheck(funcs.softsign, (rand(7, low=0.1, high=2.0),))


def _train(activation: Callable[[Any], Any], device: Any, compiled: bool, steps: int = 5) -> list[Any]:
    """A small model (two linear layers, the activation between, a mean squared error) trained
    for ``steps`` SGD steps from a fixed start; its parameters after them."""
    import torch

    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.Linear(16, 1)).to(device)
    x = torch.randn(32, 8, device=device)
    y = torch.randn(32, 1, device=device)

    def loss() -> Any:
        h = activation(model[0](x))
        return torch.nn.functional.mse_loss(model[1](h), y)

    step = (
        torch.compile(loss, backend="aot_eager" if device.type == "cpu" else "inductor") if compiled else loss
    )
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for _ in range(steps):
        opt.zero_grad()
        step().backward()
        opt.step()
    return [p.detach().cpu() for p in model.parameters()]


@pytest.mark.parametrize("compiled", [False, True], ids=["eager", "compiled"])
@pytest.mark.parametrize("device", _devices())
def test_a_model_trains_through_a_mapped_activation_as_in_torch(
    funcs: Any, device: str, compiled: bool
) -> None:
    import torch

    dev = _device(device)
    ours = _train(funcs.softsign, dev, compiled)
    theirs = _train(lambda h: h / (1 + h.abs()), dev, compiled=False)
    for a, b in zip(ours, theirs, strict=True):
        torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-5)
    assert not torch.equal(
        ours[0], _train(lambda h: h, dev, compiled=False, steps=5)[0]
    )  # it trained through it


@pytest.mark.parametrize("device", _devices())
def test_vjp_and_jvp_take_tensors_and_return_tensors(funcs: Any, device: str) -> None:
    import torch

    dev = _device(device)
    u = torch.randn(5, 3, dtype=torch.float64, device=dev)
    v = torch.randn(5, 3, dtype=torch.float64, device=dev)
    gu, gv = funcs.ndot64.vjp(u, v, grad_output=torch.ones(5, dtype=torch.float64, device=dev))
    uu, vv = u.clone().requires_grad_(True), v.clone().requires_grad_(True)
    ref = ((uu * vv).sum(-1) / (uu.norm(dim=-1) * vv.norm(dim=-1))).sum()
    ref.backward()
    torch.testing.assert_close(gu, uu.grad)
    torch.testing.assert_close(gv, vv.grad)
    du = torch.randn_like(u)
    t = funcs.ndot64.jvp(u, v, tangents=(du, None))
    assert t.device == u.device and t.shape == (5,)
    with pytest.raises(TypeError, match="`out=` is for arrays"):
        funcs.poly(torch.ones(3, device=dev), 1.0, out=torch.ones(3, device=dev))


def test_a_struct_parameter_takes_no_torch_tensors(funcs: Any) -> None:
    import numpy as np
    import torch

    p = np.zeros(2, funcs.Particle)
    with pytest.raises(TypeError, match="parameter `p` is a struct, which torch tensors cannot hold"):
        funcs.energy(p, torch.ones(2, dtype=torch.float64))


def test_torch_tensors_are_checked_as_arrays_are(funcs: Any) -> None:
    import torch

    with pytest.raises(
        ValueError, match=r"argument `u` has shape \(4, 2\); its last axes must be the element's \(3,\)"
    ):
        funcs.ndot(torch.ones(4, 2), torch.ones(4, 3))
    assert funcs.poly(torch.tensor(3.0), torch.tensor(1.0)).shape == ()  # (0-d stays 0-d)
    p = torch.ones(3, 2, requires_grad=True)
    radius, _ = funcs.polar(p)  # no derivatives: an op all the same, and a backward says why
    with pytest.raises(RuntimeError, match="polar has no derivatives"):
        radius.sum().backward()
