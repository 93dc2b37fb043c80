"""A generated package's kernel files, made by a test: ``manifest.json`` (format 3 unless told)
written from the bindings the test gives, beside SPIR-V fixtures of ``data/`` named as the build
names them (``<shader>.<entry>.spv``), each with its sha256."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from rt_helpers import spirv

SHADER = "imgs"

# The fixture kernels' bindings as a build would list them (format 3), by entry.
BINDINGS: dict[str, list[dict[str, Any]]] = {
    "img_copy": [
        {"binding": 0, "name": "src", "kind": "storage_image", "writable": False, "dim": "2d",
         "arrayed": False, "format": "rgba32f", "texel": "float", "channels": 4},
        {"binding": 1, "name": "dst", "kind": "storage_image", "writable": True, "dim": "2d",
         "arrayed": False, "format": "rgba32f", "texel": "float", "channels": 4},
    ],
    "img_sample": [
        {"binding": 0, "name": "tex", "kind": "sampled_image", "writable": False, "dim": "2d",
         "arrayed": False, "format": None, "texel": "float", "channels": 4},
        {"binding": 1, "name": "samp", "kind": "sampler", "writable": False,
         "sampler": {"filter": "nearest", "address": "repeat", "compare": None}},
        {"binding": 2, "name": "out", "kind": "storage", "writable": True},
    ],
    "img_combined": [
        {"binding": 0, "name": "tex", "kind": "combined_image_sampler", "writable": False, "dim": "2d",
         "arrayed": False, "texel": "float", "channels": 1,
         "sampler": {"filter": "linear", "address": "clamp", "compare": None}},
        {"binding": 1, "name": "out", "kind": "storage", "writable": True},
    ],
    "texel_buf": [
        {"binding": 0, "name": "src", "kind": "uniform_texel_buffer", "writable": False, "dim": "buffer",
         "texel": "float", "channels": 4},
        {"binding": 1, "name": "dst", "kind": "storage_texel_buffer", "writable": True, "dim": "buffer",
         "format": "rgba32f", "texel": "float", "channels": 4},
    ],
    "img_hist": [
        {"binding": 0, "name": "values", "kind": "sampled_image", "writable": False, "dim": "2d",
         "arrayed": False, "texel": "uint", "channels": 1},
        {"binding": 1, "name": "hist", "kind": "storage_image", "writable": True, "dim": "1d",
         "arrayed": False, "format": "r32ui", "texel": "uint", "channels": 1},
    ],
    "img_volume": [
        {"binding": 0, "name": "vol", "kind": "sampled_image", "writable": False, "dim": "3d",
         "texel": "float", "channels": 1},
        {"binding": 1, "name": "samp", "kind": "sampler", "writable": False},
        {"binding": 2, "name": "out", "kind": "storage", "writable": True},
    ],
}  # fmt: skip
THREADS = {"img_copy": [8, 8, 1], "img_sample": [8, 8, 1], "img_combined": [8, 8, 1], "texel_buf": [64, 1, 1],
           "img_hist": [8, 8, 1], "img_volume": [4, 4, 4]}  # fmt: skip


def bindings(entry: str) -> list[dict[str, Any]]:
    """A fresh copy of ``entry``'s bindings (for a test to change)."""
    return [dict(b) for b in BINDINGS[entry]]


def write_package(
    directory: Path, entries: dict[str, list[dict[str, Any]]] | None = None, *, fmt: int = 3
) -> Path:
    """The package's kernel files in ``directory``: every fixture entry, or ``entries`` (entry ->
    its bindings); returns the directory."""
    directory.mkdir(parents=True, exist_ok=True)
    found: dict[str, Any] = {}
    for entry, listed in (entries or {e: bindings(e) for e in BINDINGS}).items():
        code = spirv(entry)
        (directory / f"{SHADER}.{entry}.spv").write_bytes(code)
        found[entry] = {
            "spirv": f"{SHADER}.{entry}.spv",
            "spirv_sha256": hashlib.sha256(code).hexdigest(),
            "threads": THREADS[entry],
            "grid": None,
            "bindings": [{"role": "data", "dtype": None, "shape": None, "params": [], **b} for b in listed],
        }
    shaders = {SHADER: {"source": "x.slang", "entries": found}}
    manifest = {"format": fmt, "compiler": "slang test", "shaders": shaders}
    (directory / "manifest.json").write_text(json.dumps(manifest, indent=2))
    return directory
