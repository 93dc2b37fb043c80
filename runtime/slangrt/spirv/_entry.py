"""What one compute entry point of a SPIR-V module binds, writes and declares, read off the module.

slangrt checks a package's ``manifest.json`` against these facts when it loads a kernel
(``_library``): the manifest says how to bind the kernel, the SPIR-V is what runs. :func:`read`
gives, for one entry point, each descriptor it uses (set, binding, storage or uniform buffer or
something else, descriptor count, and whether the entry may write through it), the bytes its
push-constant blocks span and its thread-group size.

Writes are found the way ``slangrt.spirv._access`` finds them, and as conservatively: an
``OpStore``, an atomic other than a load, an ``OpCopyMemory`` target, in any function the entry
reaches, through any pointer derived from the variable; a pointer that escapes (passed to a
function, stored, selected, used by an instruction not understood) counts as written. A buffer
declared ``NonWritable`` (on the variable, or on every member of its block) is never written.
Pure Python; raises ValueError for a module it cannot read.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from dataclasses import dataclass

__all__ = ["Entry", "Resource", "read"]

_MAGIC = 0x07230203

# Opcodes.
_OP_NAME = 5
_OP_EXT_INST = 12
_OP_ENTRY_POINT = 15
_OP_EXECUTION_MODE = 16
_OP_TYPE_BOOL, _OP_TYPE_INT, _OP_TYPE_FLOAT, _OP_TYPE_VECTOR, _OP_TYPE_MATRIX = 20, 21, 22, 23, 24
_OP_TYPE_ARRAY, _OP_TYPE_RUNTIME_ARRAY, _OP_TYPE_STRUCT, _OP_TYPE_POINTER = 28, 29, 30, 32
_OP_CONSTANT, _OP_CONSTANT_COMPOSITE, _OP_CONSTANT_NULL = 43, 44, 46
_OP_SPEC_CONSTANT, _OP_SPEC_CONSTANT_COMPOSITE = 50, 51
_OP_FUNCTION, _OP_FUNCTION_END, _OP_FUNCTION_CALL, _OP_VARIABLE = 54, 56, 57, 59
_OP_IMAGE_TEXEL_POINTER, _OP_LOAD, _OP_STORE, _OP_COPY_MEMORY, _OP_COPY_MEMORY_SIZED = 60, 61, 62, 63, 64
_ACCESS_CHAINS = frozenset({65, 66, 67, 70})
_OP_ARRAY_LENGTH = 68
_OP_DECORATE, _OP_MEMBER_DECORATE = 71, 72
_OP_COPY_OBJECT = 83
_OP_ATOMIC_LOAD, _OP_ATOMIC_STORE, _OP_ATOMIC_FLAG_CLEAR = 227, 228, 319
_OP_EXECUTION_MODE_ID = 331
_ATOMIC_RMW = frozenset({*range(229, 243), 318, 5614, 5615, 6035})
# Decorations, storage classes, execution modes and models.
_DEC_BUFFER_BLOCK, _DEC_ROW_MAJOR, _DEC_ARRAY_STRIDE, _DEC_MATRIX_STRIDE = 3, 4, 6, 7
_DEC_BUILTIN, _DEC_NON_WRITABLE, _DEC_BINDING, _DEC_DESCRIPTOR_SET, _DEC_OFFSET = 11, 24, 33, 34, 35
_BUILTIN_WORKGROUP_SIZE = 25
_SC_UNIFORM_CONSTANT, _SC_UNIFORM, _SC_PUSH_CONSTANT, _SC_STORAGE_BUFFER = 0, 2, 9, 12
_SC_PHYSICAL_STORAGE_BUFFER = 5349
_EXEC_LOCAL_SIZE, _EXEC_LOCAL_SIZE_ID = 17, 38
_GLCOMPUTE = 5

# Which words of a function-body instruction are ids (as slangrt.spirv._format.id_words).
_IMAGE_MASK_AT = {87: 5, 88: 5, 91: 5, 92: 5, 95: 5, 98: 5, 89: 6, 90: 6, 93: 6, 94: 6, 96: 6, 97: 6, 99: 4}
_GROUP_OPERATION = frozenset({*range(264, 272), 342, *range(349, 363)})
_IDS_UP_TO = {61: 4, 62: 3, 63: 3, 64: 4, 81: 4, 82: 5, 79: 5, 68: 4, 251: 3, 246: 3, 247: 2, 250: 4}
_IDS_UP_TO.update({256: 2, 257: 2, 8: 1, 317: 1, 4450: 5, 4451: 5, 4452: 5, 4453: 6, 4454: 6, 4455: 6})
_IDS_UP_TO[4459] = 6


@dataclass(frozen=True)
class Resource:
    """A descriptor an entry point uses (aliases of one set and binding merged)."""

    set: int
    binding: int
    kind: str  # "storage" | "uniform" (buffers) | "other" (images, samplers, ...)
    count: int  # descriptors: 1, N for an array of N, 0 for an unsized array
    written: bool  # the entry may write through it (see the module docstring)
    variable: str  # its OpName, for messages ("" if none)


@dataclass(frozen=True)
class Entry:
    """One GLCompute entry point: what :func:`read` found."""

    name: str
    entry_points: tuple[str, ...]  # every GLCompute entry point of the module
    resources: dict[tuple[int, int], Resource]  # by (set, binding)
    push_size: int | None  # bytes the push-constant blocks span; None: it reads none
    local_size: tuple[int, int, int] | None  # None: not a constant the module states


def _string(w: tuple[int, ...], start: int) -> tuple[str, int]:
    raw = struct.pack(f"<{len(w) - start}I", *w[start:])
    if b"\0" not in raw:
        raise ValueError("an unterminated string")
    text = raw.split(b"\0", 1)[0]
    return text.decode("utf-8", "replace"), start + len(text) // 4 + 1


def _id_words(w: tuple[int, ...]) -> Iterator[int]:
    op = w[0] & 0xFFFF
    if op in _IDS_UP_TO:
        yield from w[1 : _IDS_UP_TO[op]]
    elif op == _OP_EXT_INST:
        yield from w[1:4]
        yield from w[5:]
    elif op == _OP_VARIABLE:
        yield from w[1:3]
        yield from w[4:]
    elif op in _IMAGE_MASK_AT:
        yield from w[1 : _IMAGE_MASK_AT[op]]
        yield from w[_IMAGE_MASK_AT[op] + 1 :]
    elif op in _GROUP_OPERATION:
        yield from w[1:4]
        yield from w[5:]
    else:
        yield from w[1:]


class _Module:
    """The module's globals and function bodies, indexed."""

    def __init__(self, spirv: bytes) -> None:
        if len(spirv) < 20 or len(spirv) % 4:
            raise ValueError("not a SPIR-V module")
        words = struct.unpack(f"<{len(spirv) // 4}I", spirv)
        if words[0] != _MAGIC:
            raise ValueError("not a little-endian SPIR-V module")
        self.names: dict[int, str] = {}
        self.decorations: dict[tuple[int, int], tuple[int, ...]] = {}  # (target, decoration)
        self.member_decorations: dict[tuple[int, int, int], tuple[int, ...]] = {}
        self.types: dict[int, tuple[int, ...]] = {}
        self.constants: dict[int, int] = {}  # integer constants and spec constants' defaults
        self.composites: dict[int, tuple[int, ...]] = {}
        self.variables: dict[int, tuple[int, int]] = {}  # id -> (pointer type, storage class)
        self.entries: dict[str, tuple[int, tuple[int, ...]]] = {}  # GLCompute: (function, interface)
        self.local_size: dict[int, tuple[int, ...]] = {}  # function -> literal sizes
        self.local_size_ids: dict[int, tuple[int, ...]] = {}
        self.functions: dict[int, list[tuple[int, ...]]] = {}
        self.spans: dict[tuple[int, int, bool], int] = {}  # _span's answers
        body: list[tuple[int, ...]] | None = None
        i, n = 5, len(words)
        while i < n:
            op, count = words[i] & 0xFFFF, words[i] >> 16
            if count == 0 or i + count > n:
                raise ValueError(f"a truncated instruction at word {i}")
            w = words[i : i + count]
            i += count
            if body is not None:
                if op == _OP_FUNCTION_END:
                    body = None
                else:
                    body.append(w)
            elif op == _OP_FUNCTION and count >= 3:
                body = self.functions.setdefault(w[2], [])
            else:
                self._global(op, w)
        for name, (fn, _) in self.entries.items():
            if fn not in self.functions:
                raise ValueError(f"entry point {name!r} has no function")

    def _global(self, op: int, w: tuple[int, ...]) -> None:
        count = len(w)
        if op == _OP_NAME and count >= 3:
            self.names[w[1]] = _string(w, 2)[0]
        elif op == _OP_DECORATE and count >= 3:
            self.decorations[(w[1], w[2])] = w[3:]
        elif op == _OP_MEMBER_DECORATE and count >= 4:
            self.member_decorations[(w[1], w[2], w[3])] = w[4:]
        elif op == _OP_ENTRY_POINT and count >= 4:
            name, end = _string(w, 3)
            if w[1] == _GLCOMPUTE and name not in self.entries:
                self.entries[name] = (w[2], w[end:])
        elif op == _OP_EXECUTION_MODE and count >= 6 and w[2] == _EXEC_LOCAL_SIZE:
            self.local_size[w[1]] = w[3:6]
        elif op == _OP_EXECUTION_MODE_ID and count >= 6 and w[2] == _EXEC_LOCAL_SIZE_ID:
            self.local_size_ids[w[1]] = w[3:6]
        elif (19 <= op <= 39 or op in (5341, 4472, 4456)) and count >= 2:
            self.types[w[1]] = w
        elif op in (_OP_CONSTANT, _OP_SPEC_CONSTANT) and count >= 4:
            t = self.types.get(w[1])
            if t is not None and t[0] & 0xFFFF == _OP_TYPE_INT:
                v, bits = w[3] | (w[4] << 32 if count > 4 else 0), 32 * min(count - 3, 2)
                self.constants[w[2]] = v - (1 << bits) if t[3] and v >> (bits - 1) else v
        elif op == _OP_CONSTANT_NULL and count >= 3:
            self.constants[w[2]] = 0
        elif op in (_OP_CONSTANT_COMPOSITE, _OP_SPEC_CONSTANT_COMPOSITE) and count >= 3:
            self.composites[w[2]] = w[3:]
        elif op == _OP_VARIABLE and count >= 4:
            self.variables[w[2]] = (w[1], w[3])

    def op(self, type_id: int) -> int:
        t = self.types.get(type_id)
        if t is None:
            raise ValueError(f"%{type_id} is not a type")
        return t[0] & 0xFFFF

    def pointee(self, ptr_type: int) -> int:
        if self.op(ptr_type) != _OP_TYPE_POINTER or len(self.types[ptr_type]) < 4:
            raise ValueError(f"%{ptr_type} is not a pointer type")
        return self.types[ptr_type][3]

    def reachable(self, fn: int) -> list[int]:
        seen = {fn: None}
        work = [fn]
        while work:
            for w in self.functions.get(work.pop(), ()):
                if w[0] & 0xFFFF == _OP_FUNCTION_CALL and len(w) > 3 and w[3] not in seen:
                    seen[w[3]] = None
                    work.append(w[3])
        return [f for f in seen if f in self.functions]


def _written(m: _Module, uses: dict[int, list[tuple[int, ...]]], var: int) -> bool:
    """Whether any pointer derived from ``var`` may be written through (or escapes)."""
    derived: dict[int, tuple[int, ...] | None] = {var: None}  # pointer -> its defining instruction
    work = [var]
    while work:
        ptr = work.pop()
        for w in uses.get(ptr, ()):
            op = w[0] & 0xFFFF
            if w is derived[ptr]:
                continue
            if (op in _ACCESS_CHAINS or op in (_OP_COPY_OBJECT, _OP_IMAGE_TEXEL_POINTER)) and w[3] == ptr:
                if w[2] not in derived:
                    derived[w[2]] = w
                    work.append(w[2])
            elif op in (_OP_LOAD, _OP_ATOMIC_LOAD, _OP_ARRAY_LENGTH) and w[3] == ptr:
                pass  # read (or its length)
            elif op in (_OP_COPY_MEMORY, _OP_COPY_MEMORY_SIZED) and w[2] == ptr and w[1] != ptr:
                pass  # read from
            else:
                return True  # a store, an atomic write, a copy into it, or an escape
    return False


def _span(m: _Module, type_id: int, matrix_stride: int = 0, row_major: bool = False, depth: int = 0) -> int:
    """Bytes from the start of a value of ``type_id`` to the end of its last scalar."""
    key = (type_id, matrix_stride, row_major)
    found = m.spans.get(key)
    if found is None:
        if depth > 64:
            raise ValueError("types nested too deeply")
        found = m.spans[key] = _span_of(m, type_id, matrix_stride, row_major, depth)
    return found


def _span_of(m: _Module, type_id: int, matrix_stride: int, row_major: bool, depth: int) -> int:
    t, op = m.types[type_id], m.op(type_id)
    if op in (_OP_TYPE_INT, _OP_TYPE_FLOAT):
        return t[2] // 8
    if op == _OP_TYPE_BOOL:
        return 4
    if op == _OP_TYPE_POINTER:
        return 8 if t[2] == _SC_PHYSICAL_STORAGE_BUFFER else 0
    if op == _OP_TYPE_VECTOR:
        return t[3] * _span(m, t[2], depth=depth + 1)
    if op == _OP_TYPE_MATRIX:
        column, columns = t[2], t[3]
        components, scalar = m.types[column][3], _span(m, m.types[column][2], depth=depth + 1)
        if row_major:
            return (columns - 1) * scalar + (components - 1) * matrix_stride + scalar
        return (columns - 1) * matrix_stride + components * scalar
    if op == _OP_TYPE_ARRAY:
        length = m.constants.get(t[3], 1)
        stride = m.decorations.get((type_id, _DEC_ARRAY_STRIDE))
        element = _span(m, t[2], matrix_stride, row_major, depth + 1)
        return element if stride is None or length < 1 else (length - 1) * stride[0] + element
    if op == _OP_TYPE_STRUCT:
        end = 0
        for k, member in enumerate(t[2:]):
            offset = m.member_decorations.get((type_id, k, _DEC_OFFSET), (0,))[0]
            ms = m.member_decorations.get((type_id, k, _DEC_MATRIX_STRIDE), (0,))[0]
            rm = (type_id, k, _DEC_ROW_MAJOR) in m.member_decorations
            end = max(end, offset + _span(m, member, ms, rm, depth + 1))
        return end
    return 0


def _resource(m: _Module, uses: dict[int, list[tuple[int, ...]]], var: int) -> Resource | None:
    ptr_type, storage_class = m.variables[var]
    if storage_class not in (_SC_UNIFORM_CONSTANT, _SC_UNIFORM, _SC_STORAGE_BUFFER):
        return None
    t = m.pointee(ptr_type)
    count = 1
    if m.op(t) in (_OP_TYPE_ARRAY, _OP_TYPE_RUNTIME_ARRAY):  # an array of descriptors
        count = m.constants.get(m.types[t][3], 0) if m.op(t) == _OP_TYPE_ARRAY else 0
        t = m.types[t][2]
    set_ = m.decorations.get((var, _DEC_DESCRIPTOR_SET), (0,))[0]
    binding = m.decorations.get((var, _DEC_BINDING), (0,))[0]
    name = m.names.get(var, "")
    if storage_class == _SC_UNIFORM_CONSTANT:
        return Resource(set_, binding, "other", count, False, name)
    if m.op(t) != _OP_TYPE_STRUCT:
        raise ValueError(f"buffer variable %{var} is not a struct")
    storage = storage_class == _SC_STORAGE_BUFFER or (t, _DEC_BUFFER_BLOCK) in m.decorations
    if not storage:
        return Resource(set_, binding, "uniform", count, False, name)
    members = len(m.types[t]) - 2
    non_writable = (var, _DEC_NON_WRITABLE) in m.decorations or (
        members > 0 and all((t, k, _DEC_NON_WRITABLE) in m.member_decorations for k in range(members))
    )
    return Resource(set_, binding, "storage", count, not non_writable and _written(m, uses, var), name)


def _local_size(m: _Module, fn: int) -> tuple[int, int, int] | None:
    for (target, dec), value in m.decorations.items():
        if dec == _DEC_BUILTIN and value[:1] == (_BUILTIN_WORKGROUP_SIZE,) and target in m.composites:
            sizes = [m.constants.get(c) for c in m.composites[target]]
            break
    else:
        if fn in m.local_size:
            sizes = list(m.local_size[fn])
        elif fn in m.local_size_ids:
            sizes = [m.constants.get(c) for c in m.local_size_ids[fn]]
        else:
            return None
    if len(sizes) != 3 or any(s is None for s in sizes):
        return None
    x, y, z = (int(s) for s in sizes if s is not None)
    return (x, y, z)


def read(spirv: bytes, entry: str) -> Entry:
    """What the GLCompute entry point ``entry`` of ``spirv`` uses; ValueError if it has none or
    the module cannot be read."""
    try:
        m = _Module(spirv)
    except (IndexError, KeyError, struct.error) as e:
        raise ValueError(f"a malformed module ({type(e).__name__}: {e})") from None
    if entry not in m.entries:
        has = ", ".join(repr(e) for e in m.entries) or "none"
        raise ValueError(f"the SPIR-V has no compute entry point {entry!r} (it has: {has})")
    fn, interface = m.entries[entry]
    try:
        functions = m.reachable(fn)
        uses: dict[int, list[tuple[int, ...]]] = {}
        used: dict[int, None] = {v: None for v in interface if v in m.variables}
        for f in functions:
            for w in m.functions[f]:
                for word in set(_id_words(w)):
                    uses.setdefault(word, []).append(w)
                    if word in m.variables:
                        used[word] = None
        resources: dict[tuple[int, int], Resource] = {}
        push: int | None = None
        for var in used:
            if m.variables[var][1] == _SC_PUSH_CONSTANT:
                push = max(push or 0, _span(m, m.pointee(m.variables[var][0])))
                continue
            r = _resource(m, uses, var)
            if r is None:
                continue
            key = (r.set, r.binding)
            old = resources.get(key)
            if old is not None and (old.kind, old.count) != (r.kind, r.count):
                raise ValueError(f"set {r.set}, binding {r.binding} is declared as two kinds of descriptor")
            if old is None or (r.written and not old.written):
                resources[key] = r
        local = _local_size(m, fn)
    except (IndexError, KeyError, struct.error) as e:
        raise ValueError(f"a malformed module ({type(e).__name__}: {e})") from None
    return Entry(entry, tuple(m.entries), resources, push, local)
