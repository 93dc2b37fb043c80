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

import os
import re
import subprocess
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import slangrt
from slangrt import BindingSpec, Image, Kernel, Sampler
from slangrt._recording._pipeline import Kind

from hatch_slang.compile.compiler import CompileJob, CompileOptions, CompilerPool
from hatch_slang.images import filter_tolerance
from hatch_slang.spec.reflection import normalize_spirv
from hatch_slang.validate import Case, load_reference

from ..helpers import PACKAGES, REPO, requires_device

pytestmark = [pytest.mark.compile, pytest.mark.gpu, requires_device]

SHADERS = PACKAGES / "images" / "shaders"
Args = dict[str, Any]


def _groups(x: int, y: int, z: int = 1, *, tx: int = 8, ty: int = 8) -> tuple[int, int, int]:
    return (-(-x // tx), -(-y // ty), z)


def _size(args: Args, name: str) -> tuple[int, int]:
    """An image argument's (w, h): its array's first two axes are (h, w) (of a combined
    binding's ``(image, sampler)``, the image's)."""
    value = args[name]
    h, w = np.asarray(value[0] if isinstance(value, tuple) else value).shape[:2]
    return int(w), int(h)


def _given_grid(args: Args) -> tuple[int, int, int]:
    grid = args["grid"]
    return (int(grid[0]), int(grid[1]), int(grid[2]))


@dataclass(frozen=True)
class Raw:
    """One entry as the build would bind it."""

    shader: str  # the file's stem
    bindings: tuple[BindingSpec, ...]  # each named as its argument
    threads: tuple[int, int, int]
    grid: Callable[[Args], tuple[int, int, int]]
    samplers: dict[str, Sampler] = field(default_factory=dict)  # the comments' defaults
    params: Callable[[Args], np.ndarray] | None = None  # the uniform block's bytes


def _b(name: str, binding: int, kind: Kind, writable: bool, **kw: Any) -> BindingSpec:
    """Binding ``binding`` of set 0, the argument ``name``."""
    return BindingSpec(binding, name, kind, writable, **kw)


RGBA32F = {"dim": "2d", "format": "rgba32f", "texel": "float"}
TEX2D = {"dim": "2d", "texel": "float"}

RAW: dict[str, Raw] = {
    "resize_bilinear": Raw(
        "resize_bilinear",
        (
            _b("src", 0, "sampled_image", False, **TEX2D),
            _b("samp", 1, "sampler", False),
            _b("dst", 2, "storage_image", True, **RGBA32F),
        ),
        (8, 8, 1),
        lambda a: _groups(*_size(a, "dst")),
        {"samp": Sampler("linear", "clamp")},
    ),
    "blur_h": Raw(
        "blur_separable",
        (
            _b("src", 0, "storage_image", False, dim="2d", format="rgba16f", texel="float"),
            _b("tmp", 1, "storage_image", True, dim="2d", format="rgba16f", texel="float"),
        ),
        (8, 8, 1),
        lambda a: _groups(*_size(a, "src")),
    ),
    "blur_v": Raw(
        "blur_separable",
        (
            _b("tmp", 1, "storage_image", False, dim="2d", format="rgba16f", texel="float"),
            _b("dst", 2, "storage_image", True, dim="2d", format="rgba16f", texel="float"),
        ),
        (8, 8, 1),
        lambda a: _groups(*_size(a, "tmp")),
    ),
    "lut3d": Raw(
        "lut3d",
        (
            _b("src", 0, "sampled_image", False, **TEX2D),
            _b("lut", 1, "sampled_image", False, dim="3d", texel="float"),
            _b("samp", 2, "sampler", False),
            _b("dst", 3, "storage_image", True, dim="2d", format="r32f", texel="float"),
        ),
        (8, 8, 1),
        lambda a: _groups(*_size(a, "dst")),
        {"samp": Sampler("linear", "clamp")},
    ),
    "texel_luma": Raw(
        "texel_luma",
        (
            _b("colors", 1, "uniform_texel_buffer", False, dim="buffer", texel="float"),
            # Declared r32f in the shader; BindingSpec takes a format for storage images only
            # (a texel buffer's view format follows from the array: float32, one channel).
            _b("luma", 2, "storage_texel_buffer", True, dim="buffer", texel="float"),
            _b("globalParams", 0, "uniform", False),
        ),
        (64, 1, 1),
        _given_grid,
        params=lambda a: np.asarray(a["weights"], np.float32),
    ),
    "histogram2d": Raw(
        "histogram2d",
        (
            _b("src", 0, "sampled_image", False, **TEX2D),
            _b("hist", 1, "storage_image", True, dim="2d", format="r32ui", texel="uint"),
        ),
        (8, 8, 1),
        lambda a: _groups(*_size(a, "src")),
    ),
    "layer_gradient": Raw(
        "layer_gradient",
        (
            _b("layers", 0, "sampled_image", False, dim="2d", arrayed=True, texel="float"),
            _b("samp", 1, "sampler", False),
            _b("grad", 2, "storage_image", True, dim="2d", arrayed=True, format="rgba32f", texel="float"),
        ),
        (8, 8, 1),
        _given_grid,
        {"samp": Sampler()},  # no comment: the wrapper's default, Sampler()
    ),
    "shift_combined": Raw(
        "shift_combined",
        (
            _b("tex", 0, "combined_image_sampler", False, **TEX2D),
            _b("out", 1, "storage", True),
            _b("params", 2, "uniform", False),
        ),
        (8, 8, 1),
        lambda a: _groups(*_size(a, "tex")),
        {"tex": Sampler("linear", "repeat")},
        params=lambda a: np.array([a["dx"], a["dy"], 0.0, 0.0], np.float32),
    ),
    "reduce2x": Raw(
        "pyramid",
        (
            _b("src", 0, "sampled_image", False, **TEX2D),
            _b("coarse", 1, "storage_image", True, **RGBA32F),
        ),
        (8, 8, 1),
        lambda a: _groups(*_size(a, "coarse")),
    ),
    "expand2x": Raw(
        "pyramid",
        (
            _b("coarse_in", 2, "sampled_image", False, **TEX2D),
            _b("samp", 3, "sampler", False),
            _b("dst", 4, "storage_image", True, **RGBA32F),
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
    for spec in raw.bindings:
        name = spec.name
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
    kernel.dispatch(_buffers(raw, args), raw.grid(args))
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
            kernels[case.entry] = Kernel(spirv[case.entry], case.entry, raw.bindings, raw.threads)
        for name, got, want in _run(kernels[case.entry], raw, case):
            count += 1
            with np.errstate(under="ignore", over="ignore"):  # as validate compares (f16 results)
                ok = got.shape == want.shape and np.allclose(got, want, atol=case.atol, rtol=case.rtol)
            if not ok:
                err = float(np.max(np.abs(got.astype(np.float64) - want))) if got.shape == want.shape else -1
                failures.append(
                    f"{case.entry} [{case.label}] {name}: max |err| {err:.3g} > atol {case.atol:.3g}"
                )
    assert count > 0
    assert not failures, "\n".join(failures)


def test_pyramid_chained_through_one_image(spirv: dict[str, bytes]) -> None:
    """reduce2x writes ``coarse`` as a storage image and expand2x samples the same Image, in one
    batch: the second dispatch sees what the first wrote (the runtime's barrier between them)."""
    reference = load_reference(SHADERS / "pyramid.py")
    reduce, expand = RAW["reduce2x"], RAW["expand2x"]
    first = Kernel(spirv["reduce2x"], "reduce2x", reduce.bindings, reduce.threads)
    second = Kernel(spirv["expand2x"], "expand2x", expand.bindings, expand.threads)
    src = np.random.default_rng(1).random((16, 12, 4), dtype=np.float32)
    coarse = Image.empty((8, 6, 4), np.float32, format="rgba32f")
    dst = Image.empty((16, 12, 4), np.float32, format="rgba32f")
    with slangrt.batch():
        first.dispatch({0: src, 1: coarse}, _groups(6, 8))
        second.dispatch({2: coarse, 3: Sampler(), 4: dst}, _groups(12, 16))
    half = reference.reduce2x({"src": src})["coarse"]
    want = reference.expand2x({"coarse_in": half, "dst": np.zeros((16, 12, 4), np.float32)})["dst"]
    np.testing.assert_allclose(coarse.numpy(), half, rtol=0, atol=reference.EXACT)
    # 6x8 -> 12x16 is twice the size, but 6 is no power of two: 8-bit weights along x.
    np.testing.assert_allclose(dst.numpy(), want, rtol=0, atol=filter_tolerance(half) + reference.EXACT)


def _has_validation_layer() -> bool:
    return any(
        Path(d, "VkLayer_khronos_validation.json").is_file()
        for d in ("/usr/share/vulkan/explicit_layer.d", "/usr/local/share/vulkan/explicit_layer.d")
    )


@pytest.mark.slow
@pytest.mark.skipif(os.environ.get("SLANGRT_VALIDATION") == "1", reason="already under validation")
@pytest.mark.skipif(not _has_validation_layer(), reason="the Khronos validation layer is not installed")
def test_every_case_runs_clean_under_validation() -> None:
    """This module's tests again with the validation layer on: any message raises, failing them."""
    env = {**os.environ, "SLANGRT_VALIDATION": "1"}
    args = [
        sys.executable,
        "-m",
        "pytest",
        __file__,
        "-q",
        "-x",
        "-p",
        "no:cacheprovider",
        "-p",
        "no:logging",  # warnings reach stderr, where they are looked for below
        "-k",
        "not validation",
    ]
    result = subprocess.run(args, env=env, capture_output=True, text=True, timeout=600, cwd=REPO, check=False)
    assert result.returncode == 0, (result.stdout + result.stderr)[-4000:]
    assert " passed" in result.stdout
    assert "Vulkan validation" not in result.stdout + result.stderr, (result.stdout + result.stderr)[-4000:]


@pytest.mark.parametrize("address", ["clamp", "repeat", "mirror", "border"])
def test_tolerances_tell_address_modes_apart(address: str, spirv: dict[str, bytes]) -> None:
    """The references' tolerances are tight enough to matter: the kernel run with one address
    mode matches shift_combined's reference for that mode only (shifted by 2.5 and -1.5 texels,
    the edges read up to three texels past the image, where every mode differs)."""
    reference = load_reference(SHADERS / "shift_combined.py")
    raw = RAW["shift_combined"]
    kernel = Kernel(spirv["shift_combined"], "shift_combined", raw.bindings, raw.threads)
    tex = np.random.default_rng(2).random((8, 8, 4), dtype=np.float32)
    out = np.zeros((8, 8, 4), np.float32)
    shift = np.array([2.5, -1.5, 0, 0], np.float32)
    kernel.dispatch({0: (tex, Sampler(address=address)), 1: out, 2: shift}, _groups(8, 8))
    for mode in ("clamp", "repeat", "mirror", "border"):
        args = {"tex": (tex, Sampler(address=mode)), "out": out, "dx": 2.5, "dy": -1.5}
        want = reference.shifted(args)["out"]
        matches = np.allclose(out, want, rtol=0, atol=filter_tolerance(tex))
        assert matches == (mode == address), f"ran {address}, compared with {mode}"
