"""What an entry point does with one resource variable: which bytes it reads, whether it writes.

:class:`Analysis` follows every pointer derived from the variable through the functions the entry
reaches; anything it does not understand is answered conservatively (written, every byte read).
"""

from __future__ import annotations

from collections.abc import Iterable

from ._format import (
    ATOMIC_RMW,
    DEC_ARRAY_STRIDE,
    OP_ACCESS_CHAIN,
    OP_ARRAY_LENGTH,
    OP_ATOMIC_FLAG_CLEAR,
    OP_ATOMIC_LOAD,
    OP_ATOMIC_STORE,
    OP_COMPOSITE_EXTRACT,
    OP_COPY_MEMORY,
    OP_COPY_MEMORY_SIZED,
    OP_COPY_OBJECT,
    OP_FUNCTION_CALL,
    OP_IMAGE_TEXEL_POINTER,
    OP_IMAGE_WRITE,
    OP_IN_BOUNDS_ACCESS_CHAIN,
    OP_IN_BOUNDS_PTR_ACCESS_CHAIN,
    OP_LOAD,
    OP_PHI,
    OP_PTR_ACCESS_CHAIN,
    OP_RETURN_VALUE,
    OP_SELECT,
    OP_STORE,
    OP_TYPE_ACCELERATION_STRUCTURE,
    OP_TYPE_ARRAY,
    OP_TYPE_IMAGE,
    OP_TYPE_MATRIX,
    OP_TYPE_RUNTIME_ARRAY,
    OP_TYPE_SAMPLED_IMAGE,
    OP_TYPE_SAMPLER,
    OP_TYPE_STRUCT,
    OP_TYPE_VECTOR,
    OP_VECTOR_SHUFFLE,
    Inst,
    Parsed,
    id_words,
)
from ._layout import Place, leaves, step


class Analysis:
    """Follow every pointer derived from one variable through the given functions.

    ``reads``: byte offsets (as :func:`slangrt.spirv._module.loaded_offsets` defines them) of the
    scalars loaded, or None when that cannot be told. ``written``: some store, atomic, copy or
    image write may go through the variable; a pointer or handle that escapes (passed to a
    function, stored, bitcast, selected, returned, used by an instruction not understood) counts
    as written and read.
    """

    def __init__(self, p: Parsed, functions: Iterable[int], var: int) -> None:
        self.p = p
        self.written = False
        reads: set[int] | None = set()
        body = [inst for fn in functions for inst in p.functions[fn]]
        uses: dict[int, list[Inst]] = {}
        for inst in body:
            for word in set(id_words(inst)):
                uses.setdefault(word, []).append(inst)
        self.uses = uses
        ptr_type, _ = p.variables[var]
        pointers: dict[int, Place] = {var: Place(p.pointee(ptr_type), 0)}
        pointer_type: dict[int, int] = {var: ptr_type}
        defined_by: dict[int, Inst] = {}
        handles: set[int] = set()
        done: set[int] = set()
        work = [var]
        # Walk uses until nothing new is derived (uses may precede their definition: OpPhi).
        while work:
            ptr = work.pop()
            if ptr in done:
                continue
            done.add(ptr)
            if ptr in handles:
                self._handle_uses(ptr, handles, work)
                continue
            at = pointers[ptr]
            for inst in uses.get(ptr, ()):
                w, op = inst.words, inst.op
                if inst is defined_by.get(ptr):
                    continue
                if op in (
                    OP_ACCESS_CHAIN,
                    OP_IN_BOUNDS_ACCESS_CHAIN,
                    OP_PTR_ACCESS_CHAIN,
                    OP_IN_BOUNDS_PTR_ACCESS_CHAIN,
                ) and (w[3] == ptr):
                    indices = list(w[4:])
                    place = at
                    if op in (OP_PTR_ACCESS_CHAIN, OP_IN_BOUNDS_PTR_ACCESS_CHAIN):
                        element = p.constants.get(indices.pop(0))
                        stride = p.decoration(pointer_type[ptr], DEC_ARRAY_STRIDE)
                        if element is None or place.offset is None or (element and stride is None):
                            place = Place(place.type, None)
                        elif element:
                            assert stride is not None
                            place = Place(place.type, place.offset + element * stride[0])
                    for index in indices:
                        place = step(p, place, p.constants.get(index))
                    pointers[w[2]] = place
                    pointer_type[w[2]] = w[1]
                    defined_by[w[2]] = inst
                    work.append(w[2])
                elif op == OP_COPY_OBJECT and w[3] == ptr:
                    pointers[w[2]] = at
                    pointer_type[w[2]] = w[1]
                    defined_by[w[2]] = inst
                    work.append(w[2])
                elif op == OP_LOAD and w[3] == ptr and len(w) > 3:
                    if self._is_handle(at.type):
                        handles.add(w[2])
                        work.append(w[2])
                    else:
                        reads = self._read(reads, at, self._used_parts(w[2], at.type))
                elif op == OP_STORE and w[1] == ptr and w[2] != ptr:
                    self.written = True
                elif op == OP_ATOMIC_LOAD and w[3] == ptr:
                    reads = self._read(reads, at, None)
                elif op in ATOMIC_RMW and w[3] == ptr:
                    reads = self._read(reads, at, None)
                    self.written = True
                elif op in (OP_ATOMIC_STORE, OP_ATOMIC_FLAG_CLEAR) and w[1] == ptr:
                    self.written = True
                elif op == OP_COPY_MEMORY and ptr in (w[1], w[2]):
                    if w[1] == ptr:
                        self.written = True
                    if w[2] == ptr:
                        reads = self._read(reads, at, None)
                elif op == OP_COPY_MEMORY_SIZED and ptr in (w[1], w[2]):
                    if w[1] == ptr:
                        self.written = True
                    if w[2] == ptr:
                        reads = None
                elif op == OP_ARRAY_LENGTH and w[3] == ptr:
                    pass
                elif op == OP_IMAGE_TEXEL_POINTER and w[3] == ptr:
                    # A pointer to one texel of a storage image (for atomics): not a byte offset.
                    pointers[w[2]] = Place(p.pointee(w[1]), None)
                    pointer_type[w[2]] = w[1]
                    defined_by[w[2]] = inst
                    work.append(w[2])
                else:
                    reads = None
                    self.written = True
        self.reads = reads

    def _is_handle(self, type_id: int) -> bool:
        t = self.p.types[type_id]
        return t.op in (
            OP_TYPE_IMAGE,
            OP_TYPE_SAMPLER,
            OP_TYPE_SAMPLED_IMAGE,
            OP_TYPE_ACCELERATION_STRUCTURE,
        )

    def _handle_uses(self, value: int, handles: set[int], work: list[int]) -> None:
        """An image, sampler or acceleration structure loaded from the variable."""
        for inst in self.uses.get(value, ()):
            w, op = inst.words, inst.op
            if op in (OP_LOAD, OP_COPY_OBJECT) and w[2] == value:
                continue  # its definition
            if op == OP_IMAGE_WRITE and w[1] == value:
                self.written = True
            elif op == OP_COPY_OBJECT:
                handles.add(w[2])
                work.append(w[2])
            elif op in (OP_FUNCTION_CALL, OP_PHI, OP_SELECT, OP_STORE, OP_RETURN_VALUE):
                self.written = True

    def _used_parts(self, value: int, type_id: int) -> list[tuple[int, ...]] | None:
        """Index paths of the parts of a loaded value its uses take out; None = all of it."""
        users = [
            inst
            for inst in self.uses.get(value, ())
            if not (inst.op in (OP_LOAD, OP_COPY_OBJECT) and inst.words[2] == value)
        ]
        if not users or self.p.types[type_id].op not in (
            OP_TYPE_VECTOR,
            OP_TYPE_STRUCT,
            OP_TYPE_ARRAY,
            OP_TYPE_MATRIX,
        ):
            return None
        parts: list[tuple[int, ...]] = []
        for inst in users:
            w, op = inst.words, inst.op
            if op == OP_COMPOSITE_EXTRACT and w[3] == value:
                parts.append(tuple(w[4:]))
            elif op == OP_COPY_OBJECT and w[3] == value:
                sub = self._used_parts(w[2], type_id)
                if sub is None:
                    return None
                parts += sub
            elif op == OP_VECTOR_SHUFFLE and w[3] == value:
                # Components below the first operand's size come from it, the rest from the
                # second: that is `value` again, or the components are not of `value`.
                first = self.p.types[type_id].words[3]
                for c in w[5:]:
                    if c == 0xFFFFFFFF:
                        continue
                    if c < first and w[3] == value:
                        parts.append((c,))
                    elif c >= first and w[4] == value:
                        parts.append((c - first,))
            else:
                return None
        return parts

    def _read(
        self, reads: set[int] | None, at: Place, parts: list[tuple[int, ...]] | None
    ) -> set[int] | None:
        if reads is None or at.offset is None:
            return None
        for part in parts if parts is not None else [()]:
            place = at
            for index in part:
                place = step(self.p, place, index)
            if place.offset is None:
                return None
            if self.p.types[place.type].op == OP_TYPE_RUNTIME_ARRAY:
                return None  # a whole runtime array: unbounded
            reads.update(m.offset for m in leaves(self.p, place))
        return reads
