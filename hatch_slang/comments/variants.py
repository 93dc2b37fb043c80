"""``slang-variants`` lines: one Python function for several entries, run by device.

``// slang-variants: gemm_f16 = gemm_f16_coopmat gemm_f16_tiled`` (anywhere in the file, one
function a line; commas may separate the entries) makes ``gemm_f16`` a function that calls the
first of the entries, in that order, that the device a call runs on supports: what the entry's
SPIR-V declares it needs (a capability such as ``CooperativeMatrixKHR``, an extension) against
the device's features, the check a kernel's first dispatch makes. Each entry stays a wrapper of
its own, so a caller can still ask for one path by name.

The entries are named as their wrappers are (``gemm_f16_tiled``; an instance of a generic entry
by its key, ``gemm_half``, or as Slang spells it, ``gemm<half>``). A line that cannot be read
is a warning naming it, and no function is made of it; :mod:`hatch_slang.spec.variants` checks
what a readable line names against the built entries.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from hatch_slang.comments.bindings import Note
from hatch_slang.comments.contract import source_lines

__all__ = ["VariantsLine", "read_variants"]

_LINE = re.compile(r"^\s*//+!?\s*slang-variants\s*:(?P<rest>.*)$", re.IGNORECASE)
_NAME = re.compile(r"^[A-Za-z_]\w*$")
_ENTRY = re.compile(r"^[A-Za-z_]\w*(?:<[\w\s,]*>)?$")
MAX_ENTRIES = 16


@dataclass(frozen=True)
class VariantsLine:
    line: int
    name: str  # the function: a Python identifier (checked again where the module's names are known)
    entries: tuple[str, ...]  # as written, whitespace inside `<...>` dropped


def _split(text: str) -> list[str]:
    """The entries of ``text``, separated by whitespace or commas outside ``<...>``."""
    out, depth, word = [], 0, ""
    for ch in text:
        depth += (ch == "<") - (ch == ">")
        if depth == 0 and (ch.isspace() or ch == ","):
            if word:
                out.append(word)
            word = ""
        elif not ch.isspace():
            word += ch
    return [*out, word] if word else out


def _read(number: int, rest: str) -> VariantsLine | Note:
    name, eq, entries = rest.partition("=")
    name = name.strip()
    if not eq or not _NAME.match(name):
        return Note(
            number, "`slang-variants` reads `slang-variants: name = first_entry second_entry ...`; left out"
        )
    listed = _split(entries)
    if not listed:
        return Note(number, f"`slang-variants` names no entries for `{name}`; left out")
    if len(listed) > MAX_ENTRIES:
        return Note(
            number,
            f"`slang-variants` names {len(listed)} entries for `{name}`, more than {MAX_ENTRIES}; left out",
        )
    bad = [e for e in listed if not _ENTRY.match(e)]
    if bad:
        return Note(number, f"`slang-variants`: `{bad[0]}` is no entry name; `{name}` left out")
    if len(set(listed)) != len(listed):
        return Note(number, f"`slang-variants` names an entry twice for `{name}`; left out")
    return VariantsLine(number, name, tuple(listed))


def read_variants(source: str) -> tuple[tuple[VariantsLine, ...], tuple[Note, ...]]:
    """The ``slang-variants`` lines of ``source``, and a note for each that cannot be read (or
    names a function an earlier line made)."""
    found: dict[str, VariantsLine] = {}
    notes: list[Note] = []
    for number, text in enumerate(source_lines(source), start=1):
        m = _LINE.match(text)
        if m is None:
            continue
        got = _read(number, m.group("rest"))
        if isinstance(got, Note):
            notes.append(got)
        elif got.name in found:
            notes.append(
                Note(
                    number,
                    f"`slang-variants` makes `{got.name}` again (line {found[got.name].line}); left out",
                )
            )
        else:
            found[got.name] = got
    return tuple(found.values()), tuple(notes)
