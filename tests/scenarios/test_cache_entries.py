"""What the build cache holds and what it does with what it finds: plain data, never code.

Real builds of tests/packages/multipkg. Whatever sits in the cache directory (a pickle that
would run code when loaded, an entry with a planted wrapper, tampered SPIR-V, reflection, key or
path, truncated or non-JSON bytes, a dependency that is a FIFO) is at worst a miss: the shader is
compiled afresh, the output is byte for byte that of a clean build, nothing planted runs, and the
build after it hits the cache again.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import pickle
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from hatch_slang.builder import pipeline
from hatch_slang.compile.cache import BuildCache
from hatch_slang.compile.discover import discover
from hatch_slang.config.project import load_project_config

from ..helpers import REPO, copy_package

pytestmark = pytest.mark.compile

SCALE = "shaders/scale.slang"
SHADERS = ["shaders/offset.slang", "shaders/scale.slang", "shaders/square.slang"]


class Clean:
    """A clean build of multipkg: its output files and its cache directory."""

    def __init__(self, files: dict[str, bytes], cache: Path) -> None:
        self.files = files
        self.cache = cache


@pytest.fixture(scope="module")
def clean(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Clean]:
    where = tmp_path_factory.mktemp("clean")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("HATCH_SLANG_CACHE_DIR", str(where / "cache"))
        root = copy_package("multipkg", where)
        out = build(root)
        assert sorted(out.compiled) == SHADERS
        yield Clean(out.files, where / "cache")


@pytest.fixture
def project(clean: Clean, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fresh copy of multipkg whose cache starts as the clean build left it."""
    shutil.copytree(clean.cache, tmp_path / "cache")
    monkeypatch.setenv("HATCH_SLANG_CACHE_DIR", str(tmp_path / "cache"))
    return copy_package("multipkg", tmp_path)


def build(root: Path) -> pipeline.BuildOutput:
    config = load_project_config(root)
    return pipeline.build(config, cache=pipeline.open_cache(config))


def open_cache(root: Path) -> BuildCache:
    return pipeline.open_cache(load_project_config(root))


def slot(root: Path, rel: str) -> Path:
    """The file the cache reads a shader's entry from."""
    config = load_project_config(root)
    [shader] = [s for s in discover(root, list(config.shaders)) if s.rel == rel]
    key = open_cache(root).key(shader)
    path = pipeline.open_cache(config).directory / key[:2] / f"{key[2:]}.json"
    assert path.is_file()
    return path


def cache_files(root: Path) -> list[Path]:
    return sorted(p for p in open_cache(root).directory.rglob("*") if p.is_file())


class Planted:
    """Unpickling it creates ``marker``: the proof that a pickle in the cache ran."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self) -> tuple[Any, ...]:
        return (open, (str(self.marker), "w"))


def test_a_pickle_in_the_cache_never_runs(project: Path, clean: Clean, tmp_path: Path) -> None:
    marker = tmp_path / "the-pickle-ran"
    evil = pickle.dumps(Planted(marker))
    # Every file the cache holds (its entries among them), and beside each entry the names both
    # this cache and the pickle-based one before it read entries from.
    files = cache_files(project)
    assert len([f for f in files if f.suffix in (".json", ".pickle")]) == 3
    targets = {*files, *(f.with_suffix(s) for f in files for s in (".json", ".pickle"))}
    for path in targets:
        path.write_bytes(evil)
    out = build(project)
    assert not marker.exists()
    assert sorted(out.compiled) == SHADERS and out.files == clean.files
    assert build(project).compiled == ()
    assert not marker.exists()


def test_the_cache_holds_no_generated_code(project: Path, clean: Clean) -> None:
    wrappers = [content for name, content in clean.files.items() if name.endswith(".py")]
    assert len(wrappers) == 4  # three modules and the package's __init__
    distinctive = [line for w in wrappers for line in w.splitlines() if line.startswith(b"def ")]
    assert distinctive
    for path in cache_files(project):
        data = path.read_bytes()
        assert not any(line in data for line in distinctive), path
        assert b"slangrt" not in data, path  # no import of the runtime, hence no wrapper at all


def spirv_of(entry: dict[str, Any]) -> bytes:
    return base64.b64decode(entry["compiled"][0]["spirv"])


def set_spirv(entry: dict[str, Any], spirv: bytes, *, checksum: bool = True) -> None:
    entry["compiled"][0]["spirv"] = base64.b64encode(spirv).decode()
    if checksum:
        entry["compiled"][0]["spirv_sha256"] = hashlib.sha256(spirv).hexdigest()


def other(root: Path) -> dict[str, Any]:
    """The square shader's entry, whole."""
    loaded: dict[str, Any] = json.loads(slot(root, "shaders/square.slang").read_bytes())
    return loaded


# Each takes the scale shader's entry (parsed) and the project; returns what to write instead.
Tamper = Callable[[dict[str, Any], Path], bytes | dict[str, Any]]


def _wrapper(e: dict[str, Any], root: Path) -> dict[str, Any]:
    planted = "import os\nos.system('touch planted')\n"
    return {**e, "output": {"files": {"scale.py": planted}}}


def _reflection_text(e: dict[str, Any], root: Path) -> dict[str, Any]:
    e["compiled"][0]["reflection"] = "{not json"
    return e


def _reflection_shape(e: dict[str, Any], root: Path) -> dict[str, Any]:
    e["compiled"][0]["reflection"] = '{"parameters": [{"binding": {}}]}'
    return e


def _reflection_of_another(e: dict[str, Any], root: Path) -> dict[str, Any]:
    e["compiled"][0]["reflection"] = other(root)["compiled"][0]["reflection"]
    return e


def _spirv_unchecked(e: dict[str, Any], root: Path) -> dict[str, Any]:
    spirv = bytearray(spirv_of(e))
    spirv[40] ^= 0xFF
    set_spirv(e, bytes(spirv), checksum=False)
    return e


def _spirv_garbage(e: dict[str, Any], root: Path) -> dict[str, Any]:
    set_spirv(e, bytes(range(256)) * 4)
    return e


def _spirv_truncated(e: dict[str, Any], root: Path) -> dict[str, Any]:
    set_spirv(e, spirv_of(e)[:8])
    return e


def _spirv_of_another(e: dict[str, Any], root: Path) -> dict[str, Any]:
    set_spirv(e, spirv_of(other(root)))
    return e


def _key_of_another(e: dict[str, Any], root: Path) -> dict[str, Any]:
    return {**other(root), "entries": e["entries"], "compiled": e["compiled"]}


def _moved(e: dict[str, Any], root: Path) -> bytes:
    return slot(root, "shaders/square.slang").read_bytes()  # a whole entry copied into this slot


def _fifo_dependency(e: dict[str, Any], root: Path) -> dict[str, Any]:
    fifo = root / "shaders" / "pipe.slangh"
    os.mkfifo(fifo)
    e["dependencies"].append(["shaders/pipe.slangh", "0" * 64])
    return e


TAMPERS: dict[str, Tamper] = {
    "planted wrapper": _wrapper,
    "reflection not JSON": _reflection_text,
    "reflection of the wrong shape": _reflection_shape,
    "reflection of another shader": _reflection_of_another,
    "SPIR-V not matching its sha256": _spirv_unchecked,
    "SPIR-V garbage with its sha256": _spirv_garbage,
    "SPIR-V truncated with its sha256": _spirv_truncated,
    "SPIR-V of another shader": _spirv_of_another,
    "key of another shader": _key_of_another,
    "entry of another slot": _moved,
    "key not hex": lambda e, root: {**e, "key": "k" * 64},
    "path changed": lambda e, root: {**e, "path": "shaders/square.slang"},
    "format 1": lambda e, root: {**e, "format": 1},
    "format as a bool": lambda e, root: {**e, "format": True},
    "field missing": lambda e, root: {k: v for k, v in e.items() if k != "warnings"},
    "entry names changed": lambda e, root: {**e, "entries": ["offset"]},
    "lone surrogate": lambda e, root: {**e, "warnings": "\ud800"},
    "warnings a list": lambda e, root: {**e, "warnings": ["x"]},
    "dependency a FIFO": _fifo_dependency,
    "truncated": lambda e, root: json.dumps(e).encode()[: len(json.dumps(e)) // 2],
    "not JSON": lambda e, root: b"\x80\x81 not json",
    "empty": lambda e, root: b"",
    "NaN": lambda e, root: json.dumps({**e, "format": float("nan")}).encode(),
    "nested too deep": lambda e, root: b"[" * 100_000 + b"]" * 100_000,
}


@pytest.mark.parametrize("tamper", list(TAMPERS.values()), ids=list(TAMPERS))
def test_a_bad_entry_is_a_miss_and_the_output_is_a_clean_builds(
    tamper: Tamper, project: Path, clean: Clean
) -> None:
    path = slot(project, SCALE)
    changed = tamper(json.loads(path.read_bytes()), project)
    path.write_bytes(changed if isinstance(changed, bytes) else json.dumps(changed).encode())
    out = build(project)
    assert out.compiled == (SCALE,)  # a miss: compiled afresh, the others still hit
    assert out.files == clean.files
    assert not (project / "planted").exists()
    again = build(project)
    assert again.compiled == () and again.files == clean.files  # the fresh result was stored


def test_a_cache_entry_that_is_a_fifo_or_a_link_is_a_miss(
    project: Path, clean: Clean, tmp_path: Path
) -> None:
    if not hasattr(os, "mkfifo"):
        pytest.skip("no FIFOs here")
    scale, square = slot(project, SCALE), slot(project, "shaders/square.slang")
    scale.unlink()
    os.mkfifo(scale)  # opening it to read would wait for a writer forever
    kept = tmp_path / "entry.json"
    shutil.move(square, kept)
    square.symlink_to(kept)  # an entry is a file the cache wrote itself, never a link
    out = build(project)
    assert sorted(out.compiled) == [SCALE, "shaders/square.slang"] and out.files == clean.files
    assert build(project).compiled == ()


def test_entries_are_json_naming_their_slot(project: Path) -> None:
    entry = json.loads(slot(project, SCALE).read_bytes())
    assert entry["format"] == 2 and entry["path"] == SCALE
    assert entry["key"] == slot(project, SCALE).parent.name + slot(project, SCALE).stem
    assert entry["entries"] == ["scale"] and [c["name"] for c in entry["compiled"]] == ["scale"]
    assert sorted(d[0] for d in entry["dependencies"]) == ["shaders/common.slangh", SCALE]
    spirv = spirv_of(entry)
    assert spirv[:4] == b"\x03\x02\x23\x07"  # the SPIR-V magic, little-endian
    assert entry["compiled"][0]["spirv_sha256"] == hashlib.sha256(spirv).hexdigest()


def test_a_new_file_that_shadows_an_include_is_a_miss(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # scale.slang includes "common.slangh", found in the include directory `inc/`. A file of that
    # name created later in the shader's own directory (searched first) changes what a compile
    # gives, though no file the compiler read has changed.
    monkeypatch.setenv("HATCH_SLANG_CACHE_DIR", str(tmp_path / "cache"))
    root = copy_package("multipkg", tmp_path)
    (root / "inc").mkdir()
    shutil.move(root / "shaders" / "common.slangh", root / "inc" / "common.slangh")
    with (root / "pyproject.toml").open("a") as f:
        f.write('include-dirs = ["inc"]\n')
    first = build(root)
    assert sorted(first.compiled) == SHADERS
    assert build(root).compiled == ()
    text = (root / "inc" / "common.slangh").read_text()
    (root / "shaders" / "common.slangh").write_text(text.replace("x * k", "x * k + 1.0f"))
    out = build(root)
    assert sorted(out.compiled) == ["shaders/offset.slang", SCALE]  # square includes nothing
    fresh = pipeline.build(load_project_config(root)).files  # no cache at all
    assert out.files == fresh and fresh["scale.scale.spv"] != first.files["scale.scale.spv"]
    assert build(root).compiled == ()


def test_every_library_of_the_compiler_is_in_the_key() -> None:
    from hatch_slang.compile.compiler import compiler_fingerprint, slang_library_path

    here = slang_library_path().parent
    libs = [p for p in here.iterdir() if "slang-" in p.name and (".so" in p.suffixes or p.suffix == ".dll")]
    assert len(libs) >= 2  # the compiler, and the glslang it validates and optimizes SPIR-V with
    fingerprint = compiler_fingerprint()
    for lib in libs:
        assert f"{lib.name}:{lib.stat().st_size}" in fingerprint


def test_the_cache_key_covers_every_module_of_every_subpackage(tmp_path: Path) -> None:
    from hatch_slang.compile.cache import code_digest

    (tmp_path / "sub" / "deeper").mkdir(parents=True)
    (tmp_path / "kernels").mkdir()
    for name in ("a.py", "sub/b.py", "sub/deeper/c.py", "kernels/k.py"):
        (tmp_path / name).write_text("x = 1\n")
    before = code_digest(tmp_path)
    (tmp_path / "kernels" / "k.py").write_text("x = 2\n")  # built kernels are not the build's code
    assert code_digest(tmp_path) == before
    for name in ("a.py", "sub/deeper/c.py"):
        (tmp_path / name).write_text("x = 3\n")
        after = code_digest(tmp_path)
        assert after != before, name
        before = after
    (tmp_path / "sub" / "deeper" / "c.py").rename(tmp_path / "sub" / "c.py")  # a move counts too
    assert code_digest(tmp_path) != before
    assert code_digest() == code_digest(REPO / "hatch_slang")
