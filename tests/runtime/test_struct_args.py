"""Structured dtypes in the runtime: a Tensor of a struct's dtype round-trips its fields, and a
wrapper's checks (``Dims.array`` given an ``np.dtype``, ``Dims.pointer``) take equal dtypes and
refuse others naming the kernel, the argument, the expected and the given dtype."""

from __future__ import annotations

import numpy as np
import pytest
import slangrt
from rt_helpers import has_vulkan_device
from slangrt.wrapper_api import Dims

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not has_vulkan_device(), reason="no Vulkan device on this machine"),
]

# float3 pos; float mass; float3x3 spin (rows padded to 4): as a wrapper module defines it.
PARTICLE = np.dtype(
    {
        "names": ["pos", "mass", "spin"],
        "formats": [("<f4", (3,)), "<f4", ("<f4", (3, 4))],
        "offsets": [0, 12, 16],
        "itemsize": 64,
    }
)


def _particles(n: int) -> np.ndarray:
    p = np.zeros(n, PARTICLE)
    p["pos"] = np.arange(3 * n, dtype=np.float32).reshape(n, 3)
    p["mass"] = 2.0
    p["spin"][:, 1, 2] = 7.0
    return p


def test_a_tensor_of_a_struct_dtype_round_trips() -> None:
    p = _particles(5)
    t = slangrt.Tensor.from_numpy(p)
    assert t.dtype == PARTICLE and t.shape == (5,) and t.nbytes == 5 * 64
    back = t.numpy()
    assert back.dtype == PARTICLE and (back == p).all()
    assert (t[1:3].numpy() == p[1:3]).all()


def test_array_checks_a_structured_dtype() -> None:
    p = _particles(4)
    d = Dims("mod.k")
    assert d.array("ps", p, PARTICLE, ("n",), writable=True, checked=True) is p
    assert d.get("n") == 4
    same = np.dtype(PARTICLE.descr)  # built another way: equal
    Dims("mod.k").array("ps", np.zeros(4, same), PARTICLE, None, writable=False, checked=False)
    Dims("mod.k").array("ps", slangrt.Tensor.from_numpy(p), PARTICLE, None, writable=True, checked=False)
    formats = [PARTICLE.fields[n][0] for n in PARTICLE.names]
    other = np.dtype(
        {"names": ["where", "mass", "spin"], "formats": formats, "offsets": [0, 12, 16], "itemsize": 64}
    )
    for bad, shown in [(np.zeros((4, 16), np.float32), "float32"), (np.zeros(4, other), "where")]:
        with pytest.raises(
            TypeError, match=rf"mod\.k\(\): argument `ps` must have the structured dtype .*got .*{shown}"
        ):
            Dims("mod.k").array("ps", bad, PARTICLE, None, writable=True, checked=False)


def test_pointer_takes_a_tensor_of_the_dtype() -> None:
    t = slangrt.Tensor.from_numpy(_particles(3))
    Dims("mod.k").pointer("items", t, PARTICLE)
    with pytest.raises(
        TypeError, match=r"mod\.k\(\): argument `items` is a pointer to structs: .* got a Tensor of float32"
    ):
        Dims("mod.k").pointer("items", slangrt.Tensor.zeros((3, 16), np.float32), PARTICLE)
    with pytest.raises(TypeError, match=r"mod\.k\(\): argument `items` is a pointer: .*not a numpy\.ndarray"):
        Dims("mod.k").pointer("items", _particles(3), PARTICLE)
