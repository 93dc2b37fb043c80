"""Kernels shipped by a generated package: ``manifest.json`` plus one SPIR-V file per entry."""

from __future__ import annotations

import hashlib
import math
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Literal

from .. import manifest as _manifest
from .._errors import SlangRTError, SpirvError
from ..files import read_regular
from ..spirv import _entry as _spirv
from ..spirv._module import Resource
from ._kernel import BindingSpec, Kernel

Facts = _spirv.Entry  # what the SPIR-V says of an entry (the class's `_spirv` is a method)
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

    def _check(self, shader: str, entry: str, info: _manifest.Entry, spirv: bytes) -> Facts:
        """Refuse a manifest entry that disagrees with its SPIR-V about how to bind and run it;
        return the SPIR-V's facts."""
        try:
            facts = _spirv.read(spirv, entry)
        except SpirvError as e:
            raise self._refuse(shader, entry, f"goes with SPIR-V that slangrt cannot use: {e}") from None
        problem = _disagreement(facts, info)
        if problem is not None:
            raise self._refuse(shader, entry, f"disagrees with the kernel's SPIR-V: {problem}")
        return facts

    def kernel(self, shader: str, entry: str, constants: Mapping[str, object] | None = None) -> Kernel:
        """The kernel of ``entry``; with ``constants`` (values of its specialization constants by
        name) the kernel specialized with them (:meth:`Kernel.specialized`: made once per set)."""
        key = (shader, entry)
        k = self._kernels.get(key)
        if k is not None:
            return k.specialized(constants) if constants else k
        with self._lock:
            k = self._kernels.get(key)
            if k is None:
                info = self.entry(shader, entry)
                spirv = self._spirv(shader, entry, info)
                facts = self._check(shader, entry, info, spirv)
                bindings = [_spec(b, facts) for b in info["bindings"]]
                x, y, z = (int(v) for v in info["threads"])
                k = Kernel(
                    spirv,
                    entry,
                    bindings,
                    (x, y, z),
                    name=f"{shader}.{entry}",
                    push_size=int(info.get("push_size", 0)),
                    subgroup_size=info.get("subgroup_size"),
                )
                self._kernels[key] = k
        return k.specialized(constants) if constants else k


def _spec(b: _manifest.Binding, facts: _spirv.Entry) -> BindingSpec:
    """A manifest binding as the kernel binds it; an image's facts the manifest leaves out (it
    agrees with the SPIR-V on those it gives) are the SPIR-V's."""
    key = (int(b.get("set", 0)), b["binding"])
    image = facts.descriptors[key].image
    if image is None:
        return BindingSpec(b["binding"], b["name"], b["kind"], b["writable"], key[0])
    return BindingSpec(
        b["binding"],
        b["name"],
        b["kind"],
        b["writable"],
        key[0],
        dim=b.get("dim", image.dim),
        arrayed=b.get("arrayed", image.arrayed),
        # (only a storage image or texel buffer binds by its declared format: Slang declares one
        # on others too)
        format=b.get("format", image.format) if b["kind"] in _FORMATTED else None,
        texel=b.get("texel", _texel(image.texel)),
    )


_FORMATTED = ("storage_image", "storage_texel_buffer")  # the kinds a declared format binds


def _where(key: tuple[int, int]) -> str:
    return f"binding {key[1]}" if key[0] == 0 else f"set {key[0]}, binding {key[1]}"


# The manifest's kind of each Vulkan descriptor type slangrt binds (`Resource.descriptor`).
_KIND_OF = {
    "storage_buffer": "storage",
    "uniform_buffer": "uniform",
    "storage_image": "storage_image",
    "sampled_image": "sampled_image",
    "sampler": "sampler",
    "combined_image_sampler": "combined_image_sampler",
    "uniform_texel_buffer": "uniform_texel_buffer",
    "storage_texel_buffer": "storage_texel_buffer",
}
# How messages say each manifest kind.
_KIND_WORDS = {
    "storage": "a storage buffer",
    "uniform": "a uniform buffer",
    "storage_image": "a storage image",
    "sampled_image": "a sampled image",
    "sampler": "a sampler",
    "combined_image_sampler": "a combined image sampler",
    "uniform_texel_buffer": "a uniform texel buffer",
    "storage_texel_buffer": "a storage texel buffer",
}


def _texel(scalar: str) -> Literal["float", "int", "uint"]:
    """The manifest's texel of a SPIR-V sampled type (``f32`` -> ``float``, ``u32`` -> ``uint``)."""
    return "float" if scalar[0] == "f" else "int" if scalar[0] == "i" else "uint"


def _descriptor(r: Resource, b: _manifest.Binding, what: str) -> str | None:
    """How one descriptor of the SPIR-V and the manifest's binding for it disagree (None: not)."""
    kind = _KIND_OF.get(r.descriptor)
    if kind is None or r.array_size != 1:
        shown = "an array of descriptors" if r.array_size != 1 else f"a {r.type_text or r.descriptor}"
        return f"the SPIR-V's {what} is {shown}, which slangrt does not bind"
    if kind != b["kind"]:
        said = _KIND_WORDS.get(b["kind"], "")
        return f"the SPIR-V's {what} is {_KIND_WORDS[kind]}; the manifest says {b['kind']} ({said})"
    if r.writable and not b["writable"]:
        return f"the SPIR-V writes {what}; the manifest says it is read-only (its results would be lost)"
    image = r.image
    if image is None:
        return None
    if image.multisampled:
        return f"the SPIR-V's {what} is a multisampled image, which slangrt does not bind"
    if "dim" in b and b["dim"] != image.dim:
        return f"the SPIR-V's {what} is a {image.dim} image; the manifest says {b['dim']}"
    if "arrayed" in b and b["arrayed"] != image.arrayed:
        which = ("an arrayed", "not arrayed") if image.arrayed else ("not arrayed", "arrayed")
        return f"the SPIR-V's {what} is {which[0]} image; the manifest says {which[1]}"
    fmt = b.get("format")
    if (("format" in b and kind in _FORMATTED) or fmt is not None) and fmt != image.format:
        return (
            f"the SPIR-V's {what} declares the format {image.format or 'Unknown'}; the manifest says "
            f"{fmt or 'none'}"
        )
    if "texel" in b and b["texel"] != _texel(image.texel):
        got = f"{_texel(image.texel)} texels ({image.texel})"
        return f"the SPIR-V's {what} reads {got}; the manifest says {b['texel']}"
    return None


def _disagreement(facts: _spirv.Entry, info: _manifest.Entry) -> str | None:
    """How the manifest's entry and the SPIR-V's facts disagree (None: they agree)."""
    listed = {(int(b.get("set", 0)), b["binding"]): b for b in info["bindings"]}
    for key, r in sorted(facts.descriptors.items()):
        b = listed.get(key)
        what = f"{_where(key)} (`{r.variable}`)" if r.variable else _where(key)
        if b is None:
            return f"the SPIR-V uses {what}, which the manifest does not list (it would run unbound)"
        problem = _descriptor(r, b, what)
        if problem is not None:
            return problem
    for key in sorted(listed.keys() - facts.descriptors.keys()):
        return f"the manifest lists {_where(key)} ({listed[key]['name']}), which the SPIR-V does not use"
    push = int(info.get("push_size", 0))
    if facts.push_size is None and push:
        return f"the manifest says {push} bytes of push constants; the SPIR-V reads none"
    if facts.push_size is not None and not facts.push_size <= push <= max(facts.push_size + 3 & ~3, 4):
        return f"the SPIR-V's push constants span {facts.push_size} bytes; the manifest says {push}"
    problem = _constants(facts, info)
    if problem is not None:
        return problem
    threads = tuple(info["threads"])
    if threads != facts.local_size:
        x, y, z = facts.local_size
        return f"the SPIR-V's thread-group size is {x} x {y} x {z}; the manifest says {list(threads)}"
    return None


def _constants(facts: _spirv.Entry, info: _manifest.Entry) -> str | None:
    """How the manifest's specialization constants and the SPIR-V's disagree (None: not)."""
    listed = {c["id"]: c for c in info.get("constants", [])}
    for c in facts.constants:
        m = listed.pop(c.id, None)
        if m is None:
            if c.name:  # (a constant without a name is no keyword argument: its default runs)
                return (
                    f"the SPIR-V has specialization constant {c.name} (SpecId {c.id}), which the "
                    "manifest does not list"
                )
            continue
        if (m["name"], m["scalar"]) != (c.name, c.scalar):
            return (
                f"the SPIR-V's specialization constant {c.id} is {c.name} ({c.scalar}); the manifest "
                f"says {m['name']} ({m['scalar']})"
            )
        same = m["default"] == c.default or (
            isinstance(c.default, float) and math.isnan(c.default) and math.isnan(float(m["default"]))
        )
        if not same or isinstance(m["default"], bool) != isinstance(c.default, bool):
            return f"the SPIR-V's {c.name} defaults to {c.default!r}; the manifest says {m['default']!r}"
    for spec_id, m in sorted(listed.items()):
        return (
            f"the manifest lists specialization constant {m['name']} (SpecId {spec_id}), which the "
            "SPIR-V lacks"
        )
    return None
