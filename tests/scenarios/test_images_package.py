"""The image kernels of ``tests/packages/images`` through the build: the package built by the
hook, every reference case run by ``hatch-slang validate`` through the generated wrappers, a
two-pass kernel chained through one ``slangrt.Image`` inside ``batch()``, and the wrappers'
argument checks as a caller meets them.

``test_images_raw.py`` runs the same references with the bindings written out by hand; this file
is the same kernels as a user gets them from ``pip install``.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from click.testing import CliRunner

from hatch_slang.cli.commands import main
from hatch_slang.validate import load_reference

from ..helpers import BuildProject, BuiltPackage, requires_device

pytestmark = [pytest.mark.compile, pytest.mark.gpu, requires_device]


@pytest.fixture
def built(package: Callable[[str], Path], build_project: BuildProject) -> BuiltPackage:
    return build_project(package("images"))


def _module(built: BuiltPackage, name: str) -> Any:
    import importlib

    return importlib.import_module(f"{built.package}.{name}")


@pytest.mark.slow
def test_images_validate_through_the_wrappers(built: BuiltPackage) -> None:
    result = CliRunner().invoke(main, ["validate", "--root", str(built.root), "--json"])
    rows = [json.loads(line) for line in result.output.splitlines() if line.startswith("{")]
    failed = [(r["shader"], r["entry"], r["shape"], r.get("error", "")) for r in rows if not r["ok"]]
    assert not failed, failed
    assert result.exit_code == 0, result.output[-2000:]
    manifest = built.manifest
    entries = {(s["source"].split("/")[-1], e) for s in manifest["shaders"].values() for e in s["entries"]}
    assert {(r["shader"], r["entry"]) for r in rows} == entries
    assert len(entries) == 10  # 8 shaders, two of them with two entries
    assert manifest["format"] == 3
    kinds = {
        b["kind"] for s in manifest["shaders"].values() for e in s["entries"].values() for b in e["bindings"]
    }
    assert kinds >= {
        "sampled_image",
        "storage_image",
        "sampler",
        "combined_image_sampler",
        "uniform_texel_buffer",
        "storage_texel_buffer",
    }


def test_pyramid_chained_through_an_image_in_a_batch(built: BuiltPackage) -> None:
    """reduce2x writes a device-resident Image that expand2x samples, both in one batch: the
    second pass sees the first's writes (the runtime's barrier), and nothing goes to the host."""
    import slangrt

    pyramid = _module(built, "pyramid")
    ref = load_reference(built.root / "shaders" / "pyramid.py")
    rng = np.random.default_rng(7)
    src = rng.random((14, 22, 4), dtype=np.float32)
    coarse = slangrt.Image.empty((7, 11, 4), np.float32)
    dst = np.zeros_like(src)
    with slangrt.batch():
        pyramid.reduce2x(src, coarse)
        pyramid.expand2x(coarse, dst, samp=slangrt.Sampler(address="mirror"))
    want_coarse = ref.reduce2x({"src": src})["coarse"]
    np.testing.assert_allclose(coarse.numpy(), want_coarse, atol=2e-6)
    want = ref.expand2x({"coarse_in": want_coarse, "dst": dst, "samp": slangrt.Sampler(address="mirror")})[
        "dst"
    ]
    from hatch_slang.images import filter_tolerance

    np.testing.assert_allclose(dst, want, atol=filter_tolerance(want_coarse) + 2e-6)
    coarse.close()


def test_image_arguments_are_checked_by_the_wrapper(built: BuiltPackage) -> None:
    """What a caller gets wrong about an image argument: each an error naming the kernel, the
    argument, what was expected and what was given, before anything runs."""
    import slangrt

    resize = _module(built, "resize_bilinear")
    src = np.zeros((8, 8, 4), np.float32)
    dst = np.zeros((16, 16, 4), np.float32)
    with pytest.raises(
        ValueError, match=r"resize_bilinear\(\).*`src`.*3 dimension|`src`.*channel|`src`.*axis"
    ):
        resize.resize_bilinear(np.zeros((8, 8), np.float32), dst)
    with pytest.raises(TypeError, match=r"`src`.*(dtype|float)"):
        resize.resize_bilinear(src.astype(np.float64).view(np.complex128), dst)
    with pytest.raises(TypeError, match=r"`samp`.*Sampler"):
        resize.resize_bilinear(src, dst, samp=src)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"`src`.*Sampler|`src`.*(Image|ndarray)"):
        resize.resize_bilinear(slangrt.Sampler(), dst)  # type: ignore[arg-type]
    with pytest.raises((TypeError, ValueError), match=r"`dst`.*(rgba32f|float32|dtype)"):
        resize.resize_bilinear(src, np.zeros((16, 16, 4), np.float16))  # declared rgba32f
    ro = dst.copy()
    ro.flags.writeable = False
    with pytest.raises(ValueError, match=r"`dst`.*read-only"):
        resize.resize_bilinear(src, ro)
    assert not dst.any()  # nothing ran
    resize.resize_bilinear(src + 1.0, dst)
    np.testing.assert_allclose(dst, 1.0)
