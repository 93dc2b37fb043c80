"""Manifest formats 3 (images, samplers, texel buffers) and 4 (an entry's subgroup size) as
slangrt reads them: each new key checked (good values read, bad ones refused naming the key),
and the load-time check that a package's manifest agrees with its SPIR-V about every image
descriptor: a tampered manifest (an image called a buffer or the reverse, the wrong dim,
arrayed, format or texel, a written image called read-only) is refused at load, naming the
binding. Packages are made in ``tmp_path`` from the committed fixtures (rt_package)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from rt_package import SHADER, bindings, spirv, write_package
from slangrt import SlangRTError, manifest
from slangrt._calls._library import KernelLibrary


def _read(tmp_path: Path, entries: dict[str, list[dict[str, Any]]], fmt: int = 3) -> manifest.Manifest:
    return manifest.read(write_package(tmp_path, entries, fmt=fmt) / manifest.FILENAME)


def test_format_4_is_the_newest_and_all_are_read() -> None:
    assert manifest.FORMAT == 4 and manifest.FORMATS == (1, 2, 3, 4)


def test_every_fixture_binding_is_read(tmp_path: Path) -> None:
    m = _read(tmp_path, {})  # (every fixture entry)
    got = m["shaders"][SHADER]["entries"]["img_sample"]["bindings"][1]
    assert got["kind"] == "sampler"
    assert got["sampler"] == {"filter": "nearest", "address": "repeat", "compare": None}


def test_image_kinds_need_format_3(tmp_path: Path) -> None:
    want = r'bindings\[0\]\.kind must be "storage" or "uniform", got .storage_image'
    with pytest.raises(SlangRTError, match=want):
        _read(tmp_path, {"img_copy": bindings("img_copy")}, fmt=2)


_SAMP = {"filter": "linear", "address": "clamp", "compare": None}


@pytest.mark.parametrize(
    ("index", "key", "value", "want"),
    [
        (0, "kind", "texture", '"storage" or "uniform" or "storage_image"'),
        (0, "dim", "4d", '"1d" or "2d" or "3d" or "cube" or "buffer"'),
        (0, "dim", None, '"1d" or'),
        (0, "arrayed", 1, "true or false"),
        (0, "format", "rgba32f; import os", "null or a format name"),
        (0, "format", 7, "null or a format name"),
        (0, "texel", "f32", '"float" or "int" or "uint"'),
        (0, "channels", 5, "an int from 1 to 4"),
        (0, "channels", True, "an int from 1 to 4"),
        (0, "sampler", _SAMP, "absent on a sampled_image"),
        (1, "sampler", "nearest", "an object"),
        (1, "sampler", {**_SAMP, "filter": "cubic"}, 'filter must be "linear" or'),
        (1, "sampler", {**_SAMP, "address": "wrap"}, 'address must be "clamp" or'),
        (1, "sampler", {**_SAMP, "compare": "lt"}, 'compare must be null or "never"'),
        (1, "dim", "2d", "absent on a sampler binding"),
        (2, "texel", "float", "absent on a storage binding"),
    ],
)
def test_bad_format_3_values_are_refused_naming_the_key(
    tmp_path: Path, index: int, key: str, value: object, want: str
) -> None:
    listed = bindings("img_sample")
    listed[index][key] = value
    with pytest.raises(SlangRTError, match=rf"img_sample\.bindings\[{index}\]\.{key}") as info:
        _read(tmp_path, {"img_sample": listed})
    assert want in str(info.value).replace("\\", "")
    assert "the package is damaged" in str(info.value)


def test_a_sampler_without_compare_reads_as_none(tmp_path: Path) -> None:
    listed = bindings("img_sample")
    listed[1]["sampler"] = {"filter": "linear", "address": "border"}
    assert _read(tmp_path, {"img_sample": listed})["shaders"][SHADER]["entries"]["img_sample"]


# -- the load-time check ----------------------------------------------------------------------------


def _load(tmp_path: Path, entry: str, listed: list[dict[str, Any]]) -> Any:
    return KernelLibrary(write_package(tmp_path, {entry: listed})).kernel(SHADER, entry)


def test_agreeing_manifests_load_with_their_image_facts(tmp_path: Path) -> None:
    lib = KernelLibrary(write_package(tmp_path))
    specs = lib.kernel(SHADER, "img_copy").bindings
    assert [(s.kind, s.dim, s.arrayed, s.format, s.texel, s.writable) for s in specs] == [
        ("storage_image", "2d", False, "rgba32f", "float", False),
        ("storage_image", "2d", False, "rgba32f", "float", True),
    ]
    hist = lib.kernel(SHADER, "img_hist").bindings
    assert (hist[1].dim, hist[1].format, hist[1].texel, hist[1].image_kind) == ("1d", "r32ui", "uint", "1d")
    assert lib.kernel(SHADER, "texel_buf").bindings[1].dim == "buffer"
    for entry in ("img_sample", "img_combined", "img_volume"):
        lib.kernel(SHADER, entry)


def test_facts_a_manifest_leaves_out_are_the_spirvs(tmp_path: Path) -> None:
    keep = ("binding", "name", "kind", "writable")
    listed = [{k: v for k, v in b.items() if k in keep} for b in bindings("img_hist")]
    specs = _load(tmp_path, "img_hist", listed).bindings
    got = [(s.dim, s.arrayed, s.format, s.texel) for s in specs]
    assert got == [("2d", False, None, "uint"), ("1d", False, "r32ui", "uint")]


def _tampered(entry: str, index: int, **changes: Any) -> list[dict[str, Any]]:
    listed = bindings(entry)
    listed[index].update(changes)
    for key in [k for k, v in changes.items() if v is _DROP]:
        del listed[index][key]
    return listed


_DROP = object()
_IMAGE_KEYS = {k: _DROP for k in ("dim", "arrayed", "format", "texel", "channels")}


@pytest.mark.parametrize(
    ("entry", "index", "changes", "want"),
    [
        # an image called a buffer, a buffer called an image
        (
            "img_copy",
            1,
            {"kind": "storage", **_IMAGE_KEYS},
            "(`dst`) is a storage image; the manifest says storage (a storage buffer)",
        ),
        (
            "img_sample",
            2,
            {"kind": "storage_image", "dim": "2d"},
            "(`out`) is a storage buffer; the manifest says storage_image (a storage image)",
        ),
        (
            "img_sample",
            0,
            {"kind": "storage_image"},
            "(`tex`) is a sampled image; the manifest says storage_image (a storage image)",
        ),
        (
            "img_sample",
            1,
            {"kind": "sampled_image", "sampler": _DROP},
            "(`samp`) is a sampler; the manifest says sampled_image (a sampled image)",
        ),
        (
            "img_combined",
            0,
            {"kind": "sampled_image", "sampler": _DROP},
            "is a combined image sampler; the manifest says sampled_image",
        ),
        (
            "texel_buf",
            0,
            {"kind": "storage_texel_buffer"},
            "is a uniform texel buffer; the manifest says storage_texel_buffer",
        ),
        # the image's facts
        ("img_copy", 0, {"dim": "3d"}, "binding 0 (`src`) is a 2d image; the manifest says 3d"),
        ("img_hist", 1, {"dim": "2d"}, "binding 1 (`hist`) is a 1d image; the manifest says 2d"),
        ("img_hist", 0, {"arrayed": True}, "(`values`) is not arrayed image; the manifest says arrayed"),
        ("img_copy", 1, {"format": "rgba8"}, "declares the format rgba32f; the manifest says rgba8"),
        ("img_copy", 1, {"format": None}, "declares the format rgba32f; the manifest says none"),
        ("img_sample", 0, {"format": "rgba32f"}, "declares the format Unknown; the manifest says rgba32f"),
        ("img_hist", 1, {"texel": "float"}, "reads uint texels (u32); the manifest says float"),
        ("img_sample", 0, {"texel": "int"}, "reads float texels (f32); the manifest says int"),
        # a written image called read-only
        ("img_copy", 1, {"writable": False}, "writes binding 1 (`dst`); the manifest says it is read-only"),
        ("img_hist", 1, {"writable": False}, "the SPIR-V writes binding 1 (`hist`)"),
        ("texel_buf", 1, {"writable": False}, "the SPIR-V writes binding 1 (`dst`)"),
    ],
)
def test_tampered_manifests_are_refused_at_load(
    tmp_path: Path, entry: str, index: int, changes: dict[str, Any], want: str
) -> None:
    with pytest.raises(SlangRTError) as info:
        _load(tmp_path, entry, _tampered(entry, index, **changes))
    msg = str(info.value)
    assert want in msg, msg
    assert f"kernel {SHADER}.{entry}" in msg and "disagrees with the kernel's SPIR-V" in msg
    assert "damaged or was tampered with" in msg


def test_a_manifest_that_hides_an_image_is_refused(tmp_path: Path) -> None:
    listed = bindings("img_sample")[1:]
    with pytest.raises(SlangRTError, match=r"uses binding 0 \(`tex`\), which the manifest does not list"):
        _load(tmp_path, "img_sample", listed)


def test_arrays_of_descriptors_and_multisampled_images_stay_refused(tmp_path: Path) -> None:
    # data/images.slang: `maps` is an array of four sampled images, `ms` a multisampled one.
    from rt_helpers import spirv
    from slangrt.spirv import _entry

    facts = _entry.read(spirv("images"), "images")
    listed = []
    for (s, n), r in sorted(facts.descriptors.items()):
        kind = {"storage_buffer": "storage", "uniform_buffer": "uniform"}.get(r.descriptor, r.descriptor)
        listed.append({"binding": n, "set": s, "name": r.variable, "kind": kind, "writable": r.writable})
    from slangrt._calls._library import _disagreement

    info: Any = {"bindings": listed, "threads": list(facts.local_size), "push_size": 0}
    assert _disagreement(facts, info) == (
        "the SPIR-V's binding 12 (`maps`) is an array of descriptors, which slangrt does not bind"
    )
    info["bindings"] = [b for b in listed if b["binding"] != 12]
    del facts.descriptors[(0, 12)]
    problem = str(_disagreement(facts, info))
    assert "binding 14 (`ms`) is a multisampled image, which slangrt does not bind" in problem


def test_the_manifest_file_is_data(tmp_path: Path) -> None:
    """A format value that looks like code is refused, never run (the refusal names the key)."""
    listed = bindings("img_copy")
    listed[0]["format"] = "__import__('os').system('true')"
    path = write_package(tmp_path, {"img_copy": listed})
    with pytest.raises(SlangRTError, match=r"bindings\[0\]\.format must be null or a format name"):
        KernelLibrary(path).kernel(SHADER, "img_copy")
    assert json.loads((path / "manifest.json").read_text())["format"] == 3


def test_only_a_manifest_with_images_is_written_as_format_3(tmp_path: Path) -> None:
    m = _read(tmp_path, {})
    assert manifest.format_of(m["shaders"]) == 3
    for entry in m["shaders"][SHADER]["entries"].values():
        entry["bindings"] = [b for b in entry["bindings"] if b["kind"] in ("storage", "uniform")]
    assert manifest.format_of(m["shaders"]) == 2
    assert manifest.format_of({}) == 2


def _with_subgroup(tmp_path: Path, size: object, fmt: int) -> manifest.Manifest:
    directory = write_package(tmp_path, {"img_copy": bindings("img_copy")}, fmt=fmt)
    path = directory / manifest.FILENAME
    doc = json.loads(path.read_text())
    doc["shaders"][SHADER]["entries"]["img_copy"]["subgroup_size"] = size
    path.write_text(json.dumps(doc))
    return manifest.read(path)


def test_format_4_adds_an_entrys_subgroup_size(tmp_path: Path) -> None:
    """A runtime that ignored the size would run the kernel with the device's own: a manifest
    below format 4 may not carry one, and a size is a power of two from 1 to 128."""
    got = _with_subgroup(tmp_path / "ok", 32, 4)
    assert got["shaders"][SHADER]["entries"]["img_copy"]["subgroup_size"] == 32
    for size, fmt, want in [
        (32, 3, "no subgroup_size below format 4"),
        (24, 4, "a power of two"),
        (256, 4, "an int from 1 to 128"),
        ("32", 4, "an int from 1 to 128"),
        (True, 4, "an int from 1 to 128"),
    ]:
        with pytest.raises(SlangRTError, match=r"img_copy\.subgroup_size must be") as info:
            _with_subgroup(tmp_path / f"{size}{fmt}", size, fmt)
        assert want in str(info.value)


@pytest.mark.parametrize("size", [0, 3, 256, 32.0, True])
def test_a_kernel_refuses_a_subgroup_size_that_is_none(size: object) -> None:
    from slangrt import Kernel

    with pytest.raises(ValueError, match="subgroup_size must be a power of two from 1 to 128"):
        Kernel(spirv("img_copy"), "img_copy", [], (8, 8, 1), subgroup_size=size)  # type: ignore[arg-type]
