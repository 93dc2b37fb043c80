"""What Vulkan does not define on 64-bit floats: ``GLSL.std.450``'s transcendental functions
(``exp``, ``log``, ``pow``, ``sin``...) take 16- and 32-bit floats only. Slang writes them for
``double`` all the same, and a driver that takes the module computes what it likes (lavapipe:
garbage, silently). A build that finds one fails, naming the entry and the function."""

from __future__ import annotations

from slangrt.spirv import instructions, words

__all__ = ["undefined_float64"]

_OP_EXT_INST_IMPORT = 11
_OP_EXT_INST = 12
_OP_TYPE_FLOAT = 22
_OP_TYPE_VECTOR = 23

# GLSL.std.450 instructions defined for 16- and 32-bit floats only (the specification's
# "Result Type ... must be ... 16-bit or 32-bit floating-point").
_FLOAT32_ONLY = {
    13: "sin",
    14: "cos",
    15: "tan",
    16: "asin",
    17: "acos",
    18: "atan",
    19: "sinh",
    20: "cosh",
    21: "tanh",
    22: "asinh",
    23: "acosh",
    24: "atanh",
    25: "atan2",
    26: "pow",
    27: "exp",
    28: "log",
    29: "exp2",
    30: "log2",
}


def _text(module: tuple[int, ...], start: int, end: int) -> str:
    raw = b"".join(w.to_bytes(4, "little") for w in module[start:end])
    return raw.split(b"\0", 1)[0].decode(errors="replace")


def _is_double(op: int, operand: int, doubles: set[int]) -> bool:
    """Whether the type an instruction declares is a 64-bit float or a vector of them."""
    return (op == _OP_TYPE_FLOAT and operand == 64) or (op == _OP_TYPE_VECTOR and operand in doubles)


def undefined_float64(spirv: bytes) -> list[str]:
    """The GLSL.std.450 functions ``spirv`` applies to 64-bit floats (their names, once each)."""
    module = words(spirv)
    glsl: set[int] = set()
    doubles: set[int] = set()
    found: dict[str, None] = {}
    for i, op, count in instructions(module):
        if op == _OP_EXT_INST_IMPORT and _text(module, i + 2, i + count) == "GLSL.std.450":
            glsl.add(module[i + 1])
        elif _is_double(op, module[i + 2] if count > 2 else 0, doubles):
            doubles.add(module[i + 1])
        elif op == _OP_EXT_INST and count >= 5 and module[i + 3] in glsl and module[i + 1] in doubles:
            name = _FLOAT32_ONLY.get(module[i + 4])
            if name is not None:
                found[name] = None
    return list(found)
