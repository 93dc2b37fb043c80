"""The runtime checks an installed package's manifest.json against the SPIR-V it ships.

A real package (two kernels of tests/packages/nocomments: a cbuffer, a read-only and a written
buffer; push constants) is built once; each test copies it, tampers the copy's manifest.json
in one way and calls the kernel through its generated wrapper: the call must raise a
SlangRTError naming the package and the kernel, never return with a wrong result or fail with a
traceback from deep inside. The untampered copy still computes the right thing.
"""

from __future__ import annotations

import importlib
import json
import shutil
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import pytest
import slangrt

from ..helpers import PACKAGES, build_tree, importable, requires_device

pytestmark = requires_device

PYPROJECT = """\
[project]
name = "trust"
version = "0.1.0"

[tool.hatch.build.hooks.slang]
shaders = ["shaders/*.slang"]
package = "trustpkg/kernels"
"""
KERNELS = ("cbuffer_bias", "push_saxpy")
# A buffer written only through an atomic.
ATOMIC = """\
RWStructuredBuffer<uint> counter;

[shader("compute")]
[numthreads(64, 1, 1)]
void computeMain(uint3 id : SV_DispatchThreadID)
{
    uint before;
    InterlockedAdd(counter[0], 1u, before);
}
"""
N = 50

Entry = dict[str, Any]


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A project with the two kernels, built once (its kernels in trustpkg/kernels)."""

    root = tmp_path_factory.mktemp("trust") / "project"
    (root / "shaders").mkdir(parents=True)
    (root / "trustpkg").mkdir()
    (root / "trustpkg" / "__init__.py").write_text("")
    (root / "pyproject.toml").write_text(PYPROJECT)
    for name in KERNELS:
        shutil.copyfile(
            PACKAGES / "nocomments" / "shaders" / f"{name}.slang", root / "shaders" / f"{name}.slang"
        )
    (root / "shaders" / "atomic_count.slang").write_text(ATOMIC)
    build_tree(root)
    return root


@pytest.fixture
def install(
    built: Path, tmp_path: Path
) -> Iterator[Callable[[Callable[[dict[str, Any]], None] | None], tuple[Path, Callable[[str], ModuleType]]]]:
    """A copy of the built package, its manifest changed by ``tamper``; (its kernels directory,
    an importer of its wrapper modules)."""

    def make(tamper: Callable[[dict[str, Any]], None] | None) -> tuple[Path, Callable[[str], ModuleType]]:
        root = tmp_path / "site"
        shutil.copytree(built, root)
        kernels = root / "trustpkg" / "kernels"
        if tamper is not None:
            path = kernels / "manifest.json"
            doc = json.loads(path.read_text())
            tamper(doc)
            path.write_text(json.dumps(doc))
        stack.enter_context(importable(root, "trustpkg"))
        return kernels, lambda module: importlib.import_module(f"trustpkg.kernels.{module}")

    with ExitStack() as stack:
        yield make


def _entry(doc: dict[str, Any], shader: str) -> Entry:
    entry: Entry = doc["shaders"][shader]["entries"]["computeMain"]
    return entry


def _binding(doc: dict[str, Any], shader: str, name: str) -> dict[str, Any]:
    return next(b for b in _entry(doc, shader)["bindings"] if b["name"] == name)


def _call(module: ModuleType, shader: str) -> tuple[np.ndarray[Any, Any], np.ndarray[Any, Any]]:
    """Run ``shader``'s kernel on fresh arrays; (what it wrote, what it should have written)."""
    src = np.arange(N, dtype=np.float32)
    out = np.full(N, 3.0, dtype=np.float32)
    if shader == "cbuffer_bias":
        want = src + np.float32(0.5)
        module.computeMain(src, out, n=N, bias=0.5, grid=(1, 1, 1))
    else:
        want = np.float32(2.0) * src + out
        module.computeMain(src, out, n=N, a=2.0, grid=(2, 1, 1))
    return out, want


def test_an_untampered_package_computes_the_right_thing(install: Any) -> None:
    _, load = install(None)
    for shader in KERNELS:
        out, want = _call(load(shader), shader)
        np.testing.assert_array_equal(out, want)
    counter = np.zeros(1, dtype=np.uint32)
    load("atomic_count").computeMain(counter, grid=(2, 1, 1))
    assert counter[0] == 128


def test_a_buffer_written_only_by_an_atomic_is_not_read_only(install: Any) -> None:
    kernels, load = install(_set("atomic_count", "counter", "writable", False))
    with pytest.raises(
        slangrt.SlangRTError, match=r"writes binding 0 \(`counter`\); the manifest says it is read-only"
    ) as info:
        load("atomic_count").computeMain(np.zeros(1, dtype=np.uint32), grid=(2, 1, 1))
    assert f"kernel atomic_count.computeMain of the package at {kernels}" in str(info.value)


def _swap_numbers(doc: dict[str, Any]) -> None:
    src, dst = _binding(doc, "cbuffer_bias", "src"), _binding(doc, "cbuffer_bias", "dst")
    src["binding"], dst["binding"] = dst["binding"], src["binding"]


def _set(shader: str, name: str, key: str, value: object) -> Callable[[dict[str, Any]], None]:
    return lambda doc: _binding(doc, shader, name).__setitem__(key, value)


def _entry_set(shader: str, key: str, value: object) -> Callable[[dict[str, Any]], None]:
    return lambda doc: _entry(doc, shader).__setitem__(key, value)


def _drop_binding(doc: dict[str, Any]) -> None:
    _entry(doc, "cbuffer_bias")["bindings"].remove(_binding(doc, "cbuffer_bias", "src"))


def _extra_binding(doc: dict[str, Any]) -> None:
    extra = dict(_binding(doc, "cbuffer_bias", "src"), binding=7, name="extra")
    _entry(doc, "cbuffer_bias")["bindings"].append(extra)


def _other_spirv(doc: dict[str, Any]) -> None:
    """The entry points at the other kernel's .spv, with that file's true hash."""
    other = _entry(doc, "push_saxpy")
    _entry(doc, "cbuffer_bias").update(spirv=other["spirv"], spirv_sha256=other["spirv_sha256"])


def _drop_push(doc: dict[str, Any]) -> None:
    del _entry(doc, "push_saxpy")["push_size"]


# (the tampering, the kernel called, what the message says is wrong)
TAMPERED: dict[str, tuple[Callable[[dict[str, Any]], None], str, str]] = {
    "written-marked-read-only": (
        _set("cbuffer_bias", "dst", "writable", False),
        "cbuffer_bias",
        r"writes binding 2 \(`dst`\); the manifest says it is read-only",
    ),
    "push-buffer-written-marked-read-only": (
        _set("push_saxpy", "ys", "writable", False),
        "push_saxpy",
        r"writes binding 1 \(`ys`\); the manifest says it is read-only",
    ),
    "binding-numbers-swapped": (_swap_numbers, "cbuffer_bias", "writes binding 2 .*read-only"),
    "uniform-marked-storage": (
        _set("cbuffer_bias", "Params", "kind", "storage"),
        "cbuffer_bias",
        "binding 0 .* is a uniform buffer; the manifest says storage",
    ),
    "storage-marked-uniform": (
        _set("cbuffer_bias", "src", "kind", "uniform"),
        "cbuffer_bias",
        "binding 1 .* is a storage buffer; the manifest says uniform",
    ),
    "binding-left-out": (_drop_binding, "cbuffer_bias", "uses binding 1 .*which the manifest does not list"),
    "binding-moved": (_set("cbuffer_bias", "src", "binding", 5), "cbuffer_bias", "does not list"),
    "binding-the-spirv-lacks": (
        _extra_binding,
        "cbuffer_bias",
        "lists binding 7 .*which the SPIR-V does not use",
    ),
    "other-descriptor-set": (
        _set("cbuffer_bias", "dst", "set", 1),
        "cbuffer_bias",
        "binding 2 .*does not list",
    ),
    "thread-group-size": (
        _entry_set("cbuffer_bias", "threads", [32, 1, 1]),
        "cbuffer_bias",
        r"thread-group size is 64 x 1 x 1; the manifest says \[32, 1, 1\]",
    ),
    "push-size-too-small": (
        _entry_set("push_saxpy", "push_size", 4),
        "push_saxpy",
        "push constants span 8 bytes; the manifest says 4",
    ),
    "push-size-too-large": (
        _entry_set("push_saxpy", "push_size", 64),
        "push_saxpy",
        "span 8 bytes; .* says 64",
    ),
    "push-size-left-out": (_drop_push, "push_saxpy", "span 8 bytes; the manifest says 0"),
    "push-size-where-none": (
        _entry_set("cbuffer_bias", "push_size", 8),
        "cbuffer_bias",
        "says 8 bytes of push constants; the SPIR-V reads none",
    ),
    "another-kernels-spirv": (
        _other_spirv,
        "cbuffer_bias",
        "names the SPIR-V file 'push_saxpy.computeMain.spv'",
    ),
    "spirv-outside-the-package": (
        _entry_set("cbuffer_bias", "spirv", "../../cbuffer_bias.computeMain.spv"),
        "cbuffer_bias",
        "names the SPIR-V file '../../cbuffer_bias",
    ),
    "sha256-not-a-hash": (_entry_set("cbuffer_bias", "spirv_sha256", "x"), "cbuffer_bias", "not a sha256"),
}


@pytest.mark.parametrize("case", sorted(TAMPERED))
def test_a_manifest_that_disagrees_with_its_spirv_is_refused(install: Any, case: str) -> None:
    tamper, shader, why = TAMPERED[case]
    kernels, load = install(tamper)
    module = load(shader)
    with pytest.raises(slangrt.SlangRTError, match=why) as info:
        _call(module, shader)
    message = str(info.value)
    assert f"kernel {shader}.computeMain of the package at {kernels}" in message
    with pytest.raises(slangrt.SlangRTError, match=why):  # refused again, not half-loaded
        _call(module, shader)
    # The other kernel's entry is untouched and still computes the right thing.
    other = next(k for k in KERNELS if k != shader)
    if case != "another-kernels-spirv":
        out, want = _call(load(other), other)
        np.testing.assert_array_equal(out, want)


def _at(*keys: str | int) -> Callable[[dict[str, Any], object], None]:
    def put(doc: dict[str, Any], value: object) -> None:
        obj: Any = doc
        for k in keys[:-1]:
            obj = obj[k]
        if value is _DELETE:
            del obj[keys[-1]]
        else:
            obj[keys[-1]] = value

    return put


_DELETE = object()
_CB = ("shaders", "cbuffer_bias", "entries", "computeMain")
_SRC = (*_CB, "bindings", 1)

# (where, the value put there, what the message names)
MALFORMED: dict[str, tuple[Callable[[dict[str, Any], object], None], object, str]] = {
    "binding-a-string": (_at(*_SRC, "binding"), "1", r"bindings\[1\]\.binding must be an int"),
    "binding-huge": (_at(*_SRC, "binding"), 1 << 40, r"bindings\[1\]\.binding must be an int from 0"),
    "binding-negative": (_at(*_SRC, "binding"), -1, r"bindings\[1\]\.binding must be an int from 0"),
    "binding-a-bool": (_at(*_SRC, "binding"), True, r"bindings\[1\]\.binding must be an int"),
    "binding-missing": (_at(*_SRC, "binding"), _DELETE, r"bindings\[1\]\.binding must be an int"),
    "binding-repeated": (_at(*_SRC, "binding"), 2, r"bindings\[2\]\.binding must be a binding no other"),
    "set-huge": (_at(*_SRC, "set"), 10**9, r"bindings\[1\]\.set must be an int from 0 to 63"),
    "writable-an-int": (_at(*_SRC, "writable"), 1, r"bindings\[1\]\.writable must be true or false"),
    "kind-unknown": (_at(*_SRC, "kind"), "image", r"bindings\[1\]\.kind must be"),
    "name-missing": (_at(*_SRC, "name"), _DELETE, r"bindings\[1\]\.name must be a string"),
    "binding-not-an-object": (_at(*_SRC), [1], r"bindings\[1\] must be an object"),
    "bindings-not-a-list": (_at(*_CB, "bindings"), {"0": {}}, r"computeMain\.bindings must be a list"),
    "threads-two": (_at(*_CB, "threads"), [64, 1], "threads must be a list of three ints"),
    "threads-huge": (_at(*_CB, "threads"), [64, 1, 10**12], r"threads\[2\] must be an int from 1"),
    "threads-zero": (_at(*_CB, "threads"), [0, 1, 1], r"threads\[0\] must be an int from 1"),
    "threads-floats": (_at(*_CB, "threads"), [64.0, 1, 1], r"threads\[0\] must be an int"),
    "push-size-negative": (_at(*_CB, "push_size"), -4, "push_size must be an int from 0"),
    "push-size-huge": (_at(*_CB, "push_size"), 10**15, "push_size must be an int from 0"),
    "spirv-missing": (_at(*_CB, "spirv"), _DELETE, "computeMain.spirv must be a file name"),
    "sha256-missing": (_at(*_CB, "spirv_sha256"), _DELETE, "spirv_sha256 must be a sha256"),
    "sha256-a-number": (_at(*_CB, "spirv_sha256"), 7, "spirv_sha256 must be a sha256"),
    "entry-not-an-object": (_at(*_CB), "main", r"computeMain must be an object, got 'main'"),
    "entries-a-list": (_at(*_CB[:3]), [], "cbuffer_bias.entries must be an object"),
    "shader-a-string": (_at(*_CB[:2]), "x", "shaders.cbuffer_bias must be an object"),
    "shaders-missing": (_at("shaders"), _DELETE, "manifest.shaders must be an object"),
}


@pytest.mark.parametrize("case", sorted(MALFORMED))
def test_a_malformed_manifest_is_a_clean_error_naming_the_package(install: Any, case: str) -> None:
    put, value, why = MALFORMED[case]
    kernels, load = install(lambda doc: put(doc, value))
    module = load("cbuffer_bias")
    with pytest.raises(slangrt.SlangRTError, match=why) as info:
        _call(module, "cbuffer_bias")
    assert f"{kernels / 'manifest.json'} is malformed" in str(info.value)


def _in_time(fn: Callable[[], None], seconds: float = 20) -> BaseException | None:
    """Run ``fn`` in a thread: what it raised (None: it returned); fails if it is still running
    after ``seconds`` (a read that blocks for ever)."""
    import threading

    got: list[BaseException | None] = []

    def run() -> None:
        try:
            fn()
        except BaseException as e:
            got.append(e)
        else:
            got.append(None)

    worker = threading.Thread(target=run, daemon=True)
    worker.start()
    worker.join(seconds)
    assert got, f"still running after {seconds} s"
    return got[0]


@pytest.mark.parametrize("planted", ["fifo", "dev-zero", "huge", "deep-json"])
@pytest.mark.parametrize("target", ["spv", "manifest"])
def test_a_planted_file_is_refused_never_read_for_ever(install: Any, planted: str, target: str) -> None:
    import os

    kernels, load = install(None)
    path = kernels / ("manifest.json" if target == "manifest" else "cbuffer_bias.computeMain.spv")
    path.unlink()
    if planted == "fifo":
        os.mkfifo(path)
    elif planted == "dev-zero":
        path.symlink_to("/dev/zero")
    elif planted == "huge":
        with path.open("wb") as f:
            f.truncate(3 << 30)  # sparse: no disk used
    else:
        path.write_text("[" * 200_000 + "]" * 200_000)
    error = _in_time(lambda: _call(load("cbuffer_bias"), "cbuffer_bias") and None)
    assert isinstance(error, slangrt.SlangRTError), repr(error)
    assert str(path.name) in str(error)
