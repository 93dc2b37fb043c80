"""SPIR-V, read as the ground truth of what a compute kernel needs: public, so that the build
side (hatch-slang) and the runtime read a module the same way, through one reader.

- :func:`read_module` -> :class:`Module`: per entry point (:class:`EntryInfo`) its thread-group
  size and its :class:`Resource`\\ s (descriptor set, binding, kind, block layout as
  :class:`Member`\\ s, written, read, updated with atomics or not; for an image, texel buffer or
  combined image sampler its :class:`Image`: dimensionality, format, texel type ...), and the
  module's capabilities and extensions, its specialization constants (:class:`SpecConstant`:
  SpecId, name, scalar, default) and which set the thread-group size (``local_size_ids``);
  :func:`loaded_offsets`: which bytes of a params buffer an entry reads. The build side takes
  its bindings and layouts from here; the runtime checks a package's manifest against it.
- :func:`little_endian`: whether bytes are a module in the byte order Vulkan takes.
- The word-level reader (:func:`words`, :func:`instructions`), the opcodes and the capability
  numbers (``CAPABILITY_NAMES``: number -> name) it names, for the build side's rewrites of a
  module (marking its source language, dropping an unneeded capability, naming an instance of a
  generic entry point after the instance).

Only ``_format`` knows the binary format (the magic number, opcodes, decorations, storage
classes, capability names); every other reader goes through it, and a module is parsed once
per blob. Everything here is pure Python with no dependencies and runs on Python 3.10;
malformed input raises :class:`~slangrt.SpirvError`.
"""

from __future__ import annotations

from .._errors import SpirvError
from ._constants import SPEC_SCALARS, SpecConstant
from ._format import CAPABILITIES as CAPABILITY_NAMES
from ._format import (
    OP_CAPABILITY,
    OP_ENTRY_POINT,
    OP_IMAGE_READ,
    OP_IMAGE_SPARSE_READ,
    OP_SOURCE,
    instructions,
    little_endian,
    undefined_float64,
    words,
)
from ._images import Descriptor, Dim, Image
from ._layout import Member
from ._module import EntryInfo, Module, Resource, loaded_offsets, read_module

__all__ = [
    "CAPABILITY_NAMES",
    "OP_CAPABILITY",
    "OP_ENTRY_POINT",
    "OP_IMAGE_READ",
    "OP_IMAGE_SPARSE_READ",
    "OP_SOURCE",
    "SPEC_SCALARS",
    "Descriptor",
    "Dim",
    "EntryInfo",
    "Image",
    "Member",
    "Module",
    "Resource",
    "SpecConstant",
    "SpirvError",
    "instructions",
    "little_endian",
    "loaded_offsets",
    "read_module",
    "undefined_float64",
    "words",
]
