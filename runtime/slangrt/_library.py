"""Kernels shipped by a generated package: ``manifest.json`` plus one SPIR-V file per entry."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

from ._errors import SlangRTError
from ._kernel import BindingSpec, Kernel

MANIFEST_FORMAT = 1


class KernelLibrary:
    """Loads kernels of one generated package lazily, once per (shader, entry)."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self._manifest: dict[str, Any] | None = None
        self._kernels: dict[tuple[str, str], Kernel] = {}
        self._lock = threading.Lock()

    @property
    def manifest(self) -> dict[str, Any]:
        if self._manifest is None:
            path = self.directory / "manifest.json"
            try:
                data = json.loads(path.read_text(encoding="utf-8"))
            except (OSError, ValueError) as e:
                raise SlangRTError(f"cannot read kernel manifest {path}: {e}") from None
            if data.get("format") != MANIFEST_FORMAT:
                raise SlangRTError(
                    f"{path} has manifest format {data.get('format')!r}; this slangrt reads "
                    f"format {MANIFEST_FORMAT} (rebuild the package or upgrade hatch-slang-runtime)"
                )
            self._manifest = data
        return self._manifest

    def entry(self, shader: str, entry: str) -> dict[str, Any]:
        try:
            info: dict[str, Any] = self.manifest["shaders"][shader]["entries"][entry]
        except KeyError:
            raise SlangRTError(f"{self.directory}/manifest.json has no kernel {shader}.{entry}") from None
        return info

    def kernel(self, shader: str, entry: str) -> Kernel:
        key = (shader, entry)
        k = self._kernels.get(key)
        if k is not None:
            return k
        with self._lock:
            k = self._kernels.get(key)
            if k is None:
                info = self.entry(shader, entry)
                spirv = (self.directory / info["spirv"]).read_bytes()
                bindings = [
                    BindingSpec(b["binding"], b["name"], b["kind"], b["writable"]) for b in info["bindings"]
                ]
                x, y, z = (int(v) for v in info["threads"])
                k = Kernel(spirv, entry, bindings, (x, y, z), name=f"{shader}.{entry}")
                self._kernels[key] = k
        return k
