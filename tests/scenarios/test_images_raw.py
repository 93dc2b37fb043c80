"""The image kernels of ``tests/packages/images`` without the build: each shader compiled by
hatch-slang's compiler driver (slangpy's Slang), each entry dispatched on the device through
``slangrt.Kernel`` with its bindings written out here, every case of the shader's NumPy reference
(``shaders/<name>.py``) compared as ``hatch-slang validate`` compares it.

The tables below are what the build path must derive from the comments and the SPIR-V: per
entry, each argument's ``BindingSpec`` (set, binding, kind, dim, arrayed, format, texel), the
sampler a comment gives as the default, the grid its Dispatch line computes (or the ``grid``
argument of an uncommented kernel), and the params packed into its uniform block. The build-path
test beside this one runs the same references through the generated wrappers.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from slangrt import BindingSpec, Kernel, Sampler

from hatch_slang.compile.compiler import CompileJob, CompileOptions, CompilerPool
from hatch_slang.spec.reflection import normalize_spirv
from hatch_slang.validate import Case, load_reference

from ..helpers import PACKAGES, requires_device

pytestmark = [pytest.mark.compile, pytest.mark.gpu, requires_device]

SHADERS = PACKAGES / "images" / "shaders"
Args = dict[str, Any]


def _groups(x: int, y: int, z: int = 1, *, tx: int = 8, ty: int = 8) -> tuple[int, int, int]:
    return (-(-x // tx), -(-y // ty), z)


def _size(args: Args, name: str) -> tuple[int, int]:
    """An image argument's (w, h): its array's first two axes are (h, w)."""
    h, w = np.asarray(args[name]).shape[:2]
    return int(w), int(h)


def _given_grid(args: Args) -> tuple[int, int, int]:
    grid = args["grid"]
    return (int(grid[0]), int(grid[1]), int(grid[2]))


@dataclass(frozen=True)
class Raw:
    """One entry as the build would bind it."""

    shader: str  # the file's stem
    bindings: tuple[tuple[str, BindingSpec], ...]  # (argument name, binding)
    threads: tuple[int, int, int]
    grid: Callable[[Args], tuple[int, int, int]]
    samplers: dict[str, Sampler] = field(default_factory=dict)  # the comments' defaults
    params: Callable[[Args], np.ndarray] | None = None  # the uniform block's bytes
    params_name: str = "params"


def _img(binding: int, kind: str, writable: bool, **kw: Any) -> BindingSpec:
    return BindingSpec(binding, "", kind, writable, **kw)  # type: ignore[arg-type]


RGBA32F = {"dim": "2d", "format": "rgba32f", "texel": "float"}
TEX2D = {"dim": "2d", "texel": "float"}

RAW: dict[str, Raw] = {
    "resize_bilinear": Raw(
        "resize_bilinear",
        (
            ("src", _img(0, "sampled_image", False, **TEX2D)),
            ("samp", _img(1, "sampler", False)),
            ("dst", _img(2, "storage_image", True, **RGBA32F)),
        ),
        (8, 8, 1),
        lambda a: _groups(*_size(a, "dst")),
        {"samp": Sampler("linear", "clamp")},
    ),
    "blur_h": Raw(
        "blur_separable",
        (
            ("src", _img(0, "storage_image", False, dim="2d", format="rgba16f", texel="float")),
            ("tmp", _img(1, "storage_image", True, dim="2d", format="rgba16f", texel="float")),
        ),
        (8, 8, 1),
        lambda a: _groups(*_size(a, "src")),
    ),
    "blur_v": Raw(
        "blur_separable",
        (
            ("tmp", _img(1, "storage_image", False, dim="2d", format="rgba16f", texel="float")),
            ("dst", _img(2, "storage_image", True, dim="2d", format="rgba16f", texel="float")),
        ),
        (8, 8, 1),
        lambda a: _groups(*_size(a, "tmp")),
    ),
    "lut3d": Raw(
        "lut3d",
        (
            ("src", _img(0, "sampled_image", False, **TEX2D)),
            ("lut", _img(1, "sampled_image", False, dim="3d", texel="float")),
            ("samp", _img(2, "sampler", False)),
            ("dst", _img(3, "storage_image", True, dim="2d", format="r32f", texel="float")),
        ),
        (8, 8, 1),
        lambda a: _groups(*_size(a, "dst")),
        {"samp": Sampler("linear", "clamp")},
    ),
    "texel_luma": Raw(
        "texel_luma",
        (
            ("colors", _img(1, "uniform_texel_buffer", False, dim="buffer", texel="float")),
            # Declared r32f in the shader; BindingSpec takes a format for storage images only
            # (a texel buffer's view format follows from the array: float32, one channel).
            ("luma", _img(2, "storage_texel_buffer", True, dim="buffer", texel="float")),
            ("globalParams", _img(0, "uniform", False)),
        ),
        (64, 1, 1),
        _given_grid,
        params=lambda a: np.array([a[f"weights_{c}"] for c in "xyzw"], np.float32),
        params_name="globalParams",
    ),
    "histogram2d": Raw(
        "histogram2d",
        (
            ("src", _img(0, "sampled_image", False, **TEX2D)),
            ("hist", _img(1, "storage_image", True, dim="2d", format="r32ui", texel="uint")),
        ),
        (8, 8, 1),
        lambda a: _groups(*_size(a, "src")),
    ),
    "layer_gradient": Raw(
        "layer_gradient",
        (
            ("layers", _img(0, "sampled_image", False, dim="2d", arrayed=True, texel="float")),
            ("samp", _img(1, "sampler", False)),
            ("grad", _img(2, "storage_image", True, dim="2d", arrayed=True, format="rgba32f", texel="float")),
        ),
        (8, 8, 1),
        _given_grid,
        {"samp": Sampler()},  # no comment: the wrapper's default, Sampler()
    ),
    "shift_combined": Raw(
        "shift_combined",
        (
            ("tex", _img(0, "combined_image_sampler", False, **TEX2D)),
            ("out", _img(1, "storage", True)),
            ("params", _img(2, "uniform", False)),
        ),
        (8, 8, 1),
        lambda a: _groups(*_size(a, "tex" if not isinstance(a["tex"], tuple) else "_tex")),
        {"tex": Sampler("linear", "repeat")},
        params=lambda a: np.array([a["dx"], a["dy"], 0.0, 0.0], np.float32),
    ),
    "reduce2x": Raw(
        "pyramid",
        (
            ("src", _img(0, "sampled_image", False, **TEX2D)),
            ("coarse", _img(1, "storage_image", True, **RGBA32F)),
        ),
        (8, 8, 1),
        lambda a: _groups(*_size(a, "coarse")),
    ),
    "expand2x": Raw(
        "pyramid",
        (
            ("coarse_in", _img(2, "sampled_image", False, **TEX2D)),
            ("samp", _img(3, "sampler", False)),
            ("dst", _img(4, "storage_image", True, **RGBA32F)),
        ),
        (8, 8, 1),
        lambda a: _groups(*_size(a, "dst")),
        {"samp": Sampler("linear", "clamp")},
    ),
}


def _entries(path: Path) -> tuple[str, ...]:
    m = re.search(r"^// slang-entries:(.*)$", path.read_text(), re.MULTILINE)
    return tuple(m.group(1).split()) if m else (path.stem,)


@pytest.fixture(scope="module")
def spirv() -> dict[str, bytes]:
    """Every entry's SPIR-V, by entry name, compiled as the build compiles it."""
    sources = sorted(SHADERS.glob("*.slang"))
    jobs = [CompileJob(s.name, _entries(s), CompileOptions(), str(s.parent)) for s in sources]
    with CompilerPool() as pool:
        results = pool.compile(jobs)
    out: dict[str, bytes] = {}
    for result in results:
        assert result.error is None, result.error
        out.update({e.name: normalize_spirv(e.spirv) for e in result.entries})
    return out


def _buffers(raw: Raw, args: Args) -> dict[Any, Any]:
    """What ``Kernel.dispatch`` takes for a case's arguments (samplers defaulted, params packed)."""
    buffers: dict[Any, Any] = {}
    for name, spec in raw.bindings:
        if spec.kind == "uniform":
            assert raw.params is not None
            buffers[spec.key] = raw.params(args)
        elif spec.kind == "combined_image_sampler" and not isinstance(args[name], tuple):
            buffers[spec.key] = (args[name], raw.samplers[name])  # the wrapper's default sampler
        elif name in args and args[name] is not None:
            buffers[spec.key] = args[name]
        else:
            buffers[spec.key] = raw.samplers[name]
    return buffers


def _run(kernel: Kernel, raw: Raw, case: Case) -> Iterator[tuple[str, np.ndarray, np.ndarray]]:
    """Run one case; yield (name, got, want) for every array the reference expects."""
    args = {k: (v.copy() if isinstance(v, np.ndarray) else v) for k, v in case.args.items()}
    copies = {k: (v.copy() if isinstance(v, np.ndarray) else v) for k, v in args.items()}
    expect = case.expect(copies) if callable(case.expect) else case.expect
    grid_args = dict(args)
    if isinstance(args.get("tex"), tuple):
        grid_args["_tex"] = args["tex"][0]
    kernel.dispatch(_buffers(raw, args), raw.grid(grid_args))
    for name, want in expect.items():
        yield name, np.asarray(args[name]), np.asarray(want)


@requires_device
@pytest.mark.parametrize("shader", sorted(p.stem for p in SHADERS.glob("*.slang")))
def test_reference_cases_on_the_device(shader: str, spirv: dict[str, bytes]) -> None:
    reference = load_reference(SHADERS / f"{shader}.py")
    kernels: dict[str, Kernel] = {}
    failures: list[str] = []
    count = 0
    for case in reference.cases(np.random.default_rng(0)):
        raw = RAW[case.entry]
        assert raw.shader == shader, f"{case.entry} is not an entry of {shader}"
        if case.entry not in kernels:
            specs = [
                BindingSpec(s.binding, n, s.kind, s.writable, s.set, s.dim, s.arrayed, s.format, s.texel)
                for n, s in raw.bindings
            ]
            kernels[case.entry] = Kernel(spirv[case.entry], case.entry, specs, raw.threads)
        for name, got, want in _run(kernels[case.entry], raw, case):
            count += 1
            with np.errstate(under="ignore", over="ignore"):  # as validate compares (f16 results)
                ok = got.shape == want.shape and np.allclose(got, want, atol=case.atol, rtol=case.rtol)
            if not ok:
                err = float(np.max(np.abs(got.astype(np.float64) - want))) if got.shape == want.shape else -1
                failures.append(f"{case.entry} [{case.label}] {name}: max |err| {err:.3g} > atol {case.atol:.3g}")
    assert count > 0
    assert not failures, "\n".join(failures)
