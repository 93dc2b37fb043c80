"""What Vulkan does not define on 64-bit floats: ``GLSL.std.450``'s transcendental functions
(``exp``, ``log``, ``pow``, ``sin``...) take 16- and 32-bit floats only. Slang writes them for
``double`` all the same, and a driver that takes the module computes what it likes (lavapipe:
garbage, silently). :mod:`hatch_slang.spec.merge` fails a build that has one, naming the entry,
the function and its line; the scan is the SPIR-V format module's (``slangrt.spirv``)."""

from __future__ import annotations

from slangrt.spirv import undefined_float64

__all__ = ["undefined_float64"]
