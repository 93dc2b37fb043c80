"""SPIR-V, read as the ground truth of what a compute kernel needs: public, so that the build
side (hatch-slang) and the runtime read a module the same way.

- :func:`read_module` -> :class:`Module`: per entry point its thread-group size and its
  :class:`Resource`\\ s (descriptor set, binding, kind, block layout, written or not), and the
  module's capabilities and extensions; :func:`loaded_offsets`: which bytes of a params buffer an
  entry reads.
- The word-level reader (:func:`words`, :func:`instructions`, :func:`literal_string`) and the
  opcodes and decorations it names, for readers of other facts (Slang's reflection).

Everything here is pure Python with no dependencies; malformed input raises
:class:`~slangrt.SpirvError`.
"""

from __future__ import annotations

from .._errors import SpirvError
from ._format import (
    DEC_BINDING,
    DEC_DESCRIPTOR_SET,
    OP_DECORATE,
    OP_ENTRY_POINT,
    OP_SOURCE,
    instructions,
    literal_string,
    words,
)
from ._layout import Member
from ._module import EntryInfo, Module, Resource, loaded_offsets, read_module

__all__ = [
    "DEC_BINDING",
    "DEC_DESCRIPTOR_SET",
    "OP_DECORATE",
    "OP_ENTRY_POINT",
    "OP_SOURCE",
    "EntryInfo",
    "Member",
    "Module",
    "Resource",
    "SpirvError",
    "instructions",
    "literal_string",
    "loaded_offsets",
    "read_module",
    "words",
]
