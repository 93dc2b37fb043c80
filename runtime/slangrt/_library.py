"""Kernels shipped by a generated package: ``manifest.json`` plus one SPIR-V file per entry."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

from ._errors import SlangRTError
from ._kernel import BindingSpec, Kernel

# The newest manifest format this slangrt reads; it reads every format in MANIFEST_FORMATS.
# Format 2 adds the optional per-binding "set" (default 0) and per-entry "push_size" (default 0).
MANIFEST_FORMAT = 2
MANIFEST_FORMATS = (1, 2)


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
            fmt = data.get("format") if isinstance(data, dict) else None
            if fmt not in MANIFEST_FORMATS or isinstance(fmt, bool):
                raise SlangRTError(
                    f"{path} has manifest format {fmt!r}; this slangrt reads formats "
                    f"{', '.join(map(str, MANIFEST_FORMATS))} (rebuild the package or upgrade "
                    "hatch-slang-runtime)"
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
                    BindingSpec(b["binding"], b["name"], b["kind"], b["writable"], int(b.get("set", 0)))
                    for b in info["bindings"]
                ]
                x, y, z = (int(v) for v in info["threads"])
                k = Kernel(
                    spirv,
                    entry,
                    bindings,
                    (x, y, z),
                    name=f"{shader}.{entry}",
                    push_size=int(info.get("push_size", 0)),
                )
                self._kernels[key] = k
        return k
