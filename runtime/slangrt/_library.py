"""Kernels shipped by a generated package: ``manifest.json`` plus one SPIR-V file per entry."""

from __future__ import annotations

import hashlib
import threading
from pathlib import Path

from . import manifest as _manifest
from ._errors import SlangRTError
from ._kernel import BindingSpec, Kernel


class KernelLibrary:
    """Loads kernels of one generated package lazily, once per (shader, entry)."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self._manifest: _manifest.Manifest | None = None
        self._kernels: dict[tuple[str, str], Kernel] = {}
        self._lock = threading.Lock()

    @property
    def manifest(self) -> _manifest.Manifest:
        if self._manifest is None:
            self._manifest = _manifest.read(self.directory / _manifest.FILENAME)
        return self._manifest

    def entry(self, shader: str, entry: str) -> _manifest.Entry:
        try:
            return self.manifest["shaders"][shader]["entries"][entry]
        except KeyError:
            raise SlangRTError(
                f"{self.directory}/{_manifest.FILENAME} has no kernel {shader}.{entry}"
            ) from None

    def _spirv(self, info: _manifest.Entry) -> bytes:
        """The entry's SPIR-V, checked against the hash the manifest records for it."""
        path = self.directory / info["spirv"]
        spirv = path.read_bytes()
        want = info.get("spirv_sha256")
        if want is not None and hashlib.sha256(spirv).hexdigest() != want:
            raise SlangRTError(
                f"{path} does not match its sha256 in {_manifest.FILENAME}: the package is damaged "
                "or half-updated (rebuild or reinstall it)"
            )
        return spirv

    def kernel(self, shader: str, entry: str) -> Kernel:
        key = (shader, entry)
        k = self._kernels.get(key)
        if k is not None:
            return k
        with self._lock:
            k = self._kernels.get(key)
            if k is None:
                info = self.entry(shader, entry)
                spirv = self._spirv(info)
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
