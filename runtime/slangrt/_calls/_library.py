"""Kernels shipped by a generated package: ``manifest.json`` plus one SPIR-V file per entry."""

from __future__ import annotations

import hashlib
import threading
from pathlib import Path

from .. import manifest as _manifest
from .._errors import SlangRTError, SpirvError
from ..files import read_regular
from ..spirv import _entry as _spirv
from ._kernel import BindingSpec, Kernel

_HEX = frozenset("0123456789abcdef")
MAX_SPIRV_BYTES = 64 << 20  # the largest SPIR-V module read (real kernels: kilobytes)


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

    def _spirv(self, shader: str, entry: str, info: _manifest.Entry) -> bytes:
        """The entry's SPIR-V: the file the build names for it, checked against the hash the
        manifest records for it."""
        name, want = info["spirv"], info["spirv_sha256"]
        if name != f"{shader}.{entry}.spv":
            raise self._refuse(shader, entry, f"names the SPIR-V file {name!r}, not {shader}.{entry}.spv")
        if len(want) != 64 or not set(want) <= _HEX:
            raise self._refuse(shader, entry, f"has a spirv_sha256 that is not a sha256: {want[:80]!r}")
        path = self.directory / name
        try:
            spirv = read_regular(path, MAX_SPIRV_BYTES)
        except OSError as e:
            raise self._refuse(shader, entry, f"names {name}, which cannot be read ({e})") from None
        if hashlib.sha256(spirv).hexdigest() != want:
            raise SlangRTError(
                f"{path} does not match its sha256 in {_manifest.FILENAME}: the package is damaged "
                "or half-updated (rebuild or reinstall it)"
            )
        return spirv

    def _refuse(self, shader: str, entry: str, why: str) -> SlangRTError:
        return SlangRTError(
            f"kernel {shader}.{entry} of the package at {self.directory}: its {_manifest.FILENAME} "
            f"{why}; the package is damaged or was tampered with (rebuild or reinstall it)"
        )

    def _check(self, shader: str, entry: str, info: _manifest.Entry, spirv: bytes) -> None:
        """Refuse a manifest entry that disagrees with its SPIR-V about how to bind and run it."""
        try:
            facts = _spirv.read(spirv, entry)
        except SpirvError as e:
            raise self._refuse(shader, entry, f"goes with SPIR-V that slangrt cannot use: {e}") from None
        problem = _disagreement(facts, info)
        if problem is not None:
            raise self._refuse(shader, entry, f"disagrees with the kernel's SPIR-V: {problem}")

    def kernel(self, shader: str, entry: str) -> Kernel:
        key = (shader, entry)
        k = self._kernels.get(key)
        if k is not None:
            return k
        with self._lock:
            k = self._kernels.get(key)
            if k is None:
                info = self.entry(shader, entry)
                spirv = self._spirv(shader, entry, info)
                self._check(shader, entry, info, spirv)
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


def _where(key: tuple[int, int]) -> str:
    return f"binding {key[1]}" if key[0] == 0 else f"set {key[0]}, binding {key[1]}"


def _disagreement(facts: _spirv.Entry, info: _manifest.Entry) -> str | None:
    """How the manifest's entry and the SPIR-V's facts disagree (None: they agree)."""
    listed = {(int(b.get("set", 0)), b["binding"]): b for b in info["bindings"]}
    for key, r in sorted(facts.descriptors.items()):
        b = listed.get(key)
        what = f"{_where(key)} (`{r.variable}`)" if r.variable else _where(key)
        if b is None:
            return f"the SPIR-V uses {what}, which the manifest does not list (it would run unbound)"
        if r.storage == "other" or r.array_size != 1:
            kind = "an array of descriptors" if r.array_size != 1 else "an image, sampler or other non-buffer"
            return f"the SPIR-V's {what} is {kind}, which slangrt does not bind"
        if r.storage != b["kind"]:
            return f"the SPIR-V's {what} is a {r.storage} buffer; the manifest says {b['kind']}"
        if r.writable and not b["writable"]:
            return f"the SPIR-V writes {what}; the manifest says it is read-only (its results would be lost)"
    for key in sorted(listed.keys() - facts.descriptors.keys()):
        return f"the manifest lists {_where(key)} ({listed[key]['name']}), which the SPIR-V does not use"
    push = int(info.get("push_size", 0))
    if facts.push_size is None and push:
        return f"the manifest says {push} bytes of push constants; the SPIR-V reads none"
    if facts.push_size is not None and not facts.push_size <= push <= max(facts.push_size + 3 & ~3, 4):
        return f"the SPIR-V's push constants span {facts.push_size} bytes; the manifest says {push}"
    threads = tuple(info["threads"])
    if threads != facts.local_size:
        x, y, z = facts.local_size
        return f"the SPIR-V's thread-group size is {x} x {y} x {z}; the manifest says {list(threads)}"
    return None
