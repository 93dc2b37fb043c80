"""What an entry point does with one resource variable: which bytes it reads, whether it writes,
whether it reads an image's texels or goes through it with atomics.

:class:`Analysis` follows every pointer derived from the variable, and every image or sampler
handle loaded from it, through the functions the entry reaches; anything it does not understand is
answered conservatively (written, every byte read).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence

from ._format import (
    ATOMIC_RMW,
    DEC_ARRAY_STRIDE,
    IMAGE_QUERIES,
    IMAGE_READS,
    OP_ACCESS_CHAIN,
    OP_ARRAY_LENGTH,
    OP_ATOMIC_FLAG_CLEAR,
    OP_ATOMIC_LOAD,
    OP_ATOMIC_STORE,
    OP_COMPOSITE_EXTRACT,
    OP_COPY_MEMORY,
    OP_COPY_MEMORY_SIZED,
    OP_COPY_OBJECT,
    OP_IMAGE,
    OP_IMAGE_TEXEL_POINTER,
    OP_IMAGE_WRITE,
    OP_IN_BOUNDS_ACCESS_CHAIN,
    OP_IN_BOUNDS_PTR_ACCESS_CHAIN,
    OP_LOAD,
    OP_PTR_ACCESS_CHAIN,
    OP_SAMPLED_IMAGE,
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

Uses = Mapping[int, Sequence[Inst]]  # id -> the function-body instructions that use it

# What one use does: (it may write through the pointer, it reads through it, the index paths of
# the parts of the pointer's place it reads: [()] all of it, None what cannot be told).
Effect = tuple[bool, bool, "list[tuple[int, ...]] | None"]

_CHAINS = frozenset(
    {OP_ACCESS_CHAIN, OP_IN_BOUNDS_ACCESS_CHAIN, OP_PTR_ACCESS_CHAIN, OP_IN_BOUNDS_PTR_ACCESS_CHAIN}
)
_PTR_CHAINS = frozenset({OP_PTR_ACCESS_CHAIN, OP_IN_BOUNDS_PTR_ACCESS_CHAIN})
_HANDLES = frozenset({OP_TYPE_IMAGE, OP_TYPE_SAMPLER, OP_TYPE_SAMPLED_IMAGE, OP_TYPE_ACCELERATION_STRUCTURE})
_ATOMICS = frozenset({*ATOMIC_RMW, OP_ATOMIC_LOAD, OP_ATOMIC_STORE, OP_ATOMIC_FLAG_CLEAR})


def uses_of(p: Parsed, functions: Iterable[int]) -> dict[int, list[Inst]]:
    """Each id's uses in the given functions' bodies: built once per entry point and shared by
    the analyses of all its variables."""
    uses: defaultdict[int, list[Inst]] = defaultdict(list)
    for fn in functions:
        for inst in p.functions[fn]:
            for word in id_words(inst):
                found = uses[word]
                if not found or found[-1] is not inst:  # an id used twice by one instruction
                    found.append(inst)
    return dict(uses)


class Analysis:
    """Follow every pointer derived from one variable through the functions whose ``uses`` are
    given (:func:`uses_of`).

    ``reads``: byte offsets (as :func:`slangrt.spirv._module.loaded_offsets` defines them) of the
    scalars loaded, or None when that cannot be told. ``written``: some store, atomic, copy or
    image write may go through the variable. ``texels_read``: an image handle loaded from it (or
    a sampled image made with it, for a sampler) is sampled, fetched, gathered or read
    (``OpImageRead``); queries of its size, levels or samples read no texel. ``atomic``: an
    atomic instruction goes through a pointer into it (into a buffer, or ``OpImageTexelPointer``
    into an image). A pointer or handle that escapes (passed to a function, stored, bitcast,
    selected, returned, used by an instruction not understood) counts as written and read.
    """

    def __init__(self, p: Parsed, uses: Uses, var: int) -> None:
        self.p = p
        self.uses = uses
        self.written = False
        self.texels_read = False
        self.atomic = False
        self.reads: set[int] | None = set()
        ptr_type, _ = p.variables[var]
        self._pointers: dict[int, Place] = {var: Place(p.pointee(ptr_type), 0)}
        self._pointer_type: dict[int, int] = {var: ptr_type}
        self._defined_by: dict[int, Inst] = {}
        self._handles: set[int] = set()
        done: set[int] = set()
        work = [var]
        # Walk uses until nothing new is derived (uses may precede their definition: OpPhi).
        while work:
            value = work.pop()
            if value not in done:
                done.add(value)
                work += self._handle_uses(value) if value in self._handles else self._pointer_uses(value)

    def _pointer_uses(self, ptr: int) -> list[int]:
        """Take in every use of a pointer into the variable; returns the pointers and handles
        derived from it."""
        at = self._pointers[ptr]
        derived: list[int] = []
        for inst in self.uses.get(ptr, ()):
            if inst is self._defined_by.get(ptr):
                continue
            new = self._derive(ptr, at, inst)
            if new is not None:
                derived.append(new)
                continue
            writes, reads, parts = self._effect(ptr, at, inst)
            self.atomic = self.atomic or inst.op in _ATOMICS
            self.written = self.written or writes
            if reads:
                self.reads = self._read(self.reads, at, parts)
        return derived

    def _derive(self, ptr: int, at: Place, inst: Inst) -> int | None:
        """The pointer (an access chain, a copy, a texel pointer) or handle (a loaded image or
        sampler) that ``inst`` derives from ``ptr``, recorded; None for any other use."""
        w, op = inst.words, inst.op
        if op == OP_LOAD and w[3] == ptr and self._is_handle(at.type):
            self._handles.add(w[2])
            return w[2]
        if op in _CHAINS and w[3] == ptr:
            place = self._chain_place(ptr, at, inst)
        elif op == OP_COPY_OBJECT and w[3] == ptr:
            place = at
        elif op == OP_IMAGE_TEXEL_POINTER and w[3] == ptr:
            # A pointer to one texel of a storage image (for atomics): not a byte offset.
            place = Place(self.p.pointee(w[1]), None)
        else:
            return None
        self._pointers[w[2]] = place
        self._pointer_type[w[2]] = w[1]
        self._defined_by[w[2]] = inst
        return w[2]

    def _chain_place(self, ptr: int, at: Place, inst: Inst) -> Place:
        """Where an access chain from ``ptr`` (at ``at``) points."""
        p = self.p
        indices = list(inst.words[4:])
        place = at
        if inst.op in _PTR_CHAINS:
            element = p.constants.get(indices.pop(0))
            stride = p.decoration(self._pointer_type[ptr], DEC_ARRAY_STRIDE)
            if element is None or place.offset is None or (element and stride is None):
                place = Place(place.type, None)
            elif element:
                assert stride is not None
                place = Place(place.type, place.offset + element * stride[0])
        for index in indices:
            place = step(p, place, p.constants.get(index))
        return place

    def _effect(self, ptr: int, at: Place, inst: Inst) -> Effect:
        """What a use of ``ptr`` that derives nothing does: reads, writes or lets it escape."""
        w, op = inst.words, inst.op
        if op == OP_LOAD and w[3] == ptr:
            parts = self._used_parts(w[2], at.type)
            return False, True, [()] if parts is None else parts
        if op == OP_STORE and w[1] == ptr and w[2] != ptr:
            return True, False, None
        if op == OP_ATOMIC_LOAD and w[3] == ptr:
            return False, True, [()]
        if op in ATOMIC_RMW and w[3] == ptr:
            return True, True, [()]
        if op in (OP_ATOMIC_STORE, OP_ATOMIC_FLAG_CLEAR) and w[1] == ptr:
            return True, False, None
        if op in (OP_COPY_MEMORY, OP_COPY_MEMORY_SIZED) and ptr in (w[1], w[2]):
            # The source of a sized copy: which bytes it reads is not told by a type.
            return w[1] == ptr, w[2] == ptr, [()] if op == OP_COPY_MEMORY else None
        if op == OP_ARRAY_LENGTH and w[3] == ptr:
            return False, False, None
        return True, True, None  # an escape: stored, passed, selected, or not understood

    def _is_handle(self, type_id: int) -> bool:
        return self.p.types[type_id].op in _HANDLES

    def _handle_uses(self, value: int) -> list[int]:
        """Take in the uses of an image, sampler or acceleration structure loaded from the
        variable; returns the handles derived from it (its copies, the sampled images made with
        it and the images taken back out of those)."""
        derived: list[int] = []
        for inst in self.uses.get(value, ()):
            w, op = inst.words, inst.op
            if op in (OP_LOAD, OP_COPY_OBJECT, OP_SAMPLED_IMAGE, OP_IMAGE) and w[2] == value:
                continue  # its definition
            if op == OP_IMAGE_WRITE and w[1] == value:
                self.written = True
            elif op in IMAGE_READS and w[3] == value:
                self.texels_read = True
            elif op in IMAGE_QUERIES and w[3] == value:
                continue
            elif op in (OP_COPY_OBJECT, OP_SAMPLED_IMAGE, OP_IMAGE):
                self._handles.add(w[2])
                derived.append(w[2])
            else:  # escaped (passed, stored, selected, returned) or not understood
                self.written = self.texels_read = True
        return derived

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
        """``reads`` with the offsets of ``parts`` of what lies at ``at`` added."""
        if reads is None or at.offset is None or parts is None:
            return None
        for part in parts:
            place = at
            for index in part:
                place = step(self.p, place, index)
            if place.offset is None:
                return None
            if self.p.types[place.type].op == OP_TYPE_RUNTIME_ARRAY:
                return None  # a whole runtime array: unbounded
            reads.update(m.offset for m in leaves(self.p, place))
        return reads
