"""``Subgroup size:`` lines of a kernel's comment: the subgroup size its entries require.

A kernel that assumes 32 lanes (``WaveGetLaneCount() == 32``, a reduction over 32 threads with
subgroup operations) computes wrong where the device's subgroups have another size (lavapipe's
have 8; AMD's 32 or 64; Intel's 8 to 32). Vulkan lets a pipeline require a size
(``VK_EXT_subgroup_size_control``, core in 1.3): the kernel says which in its comment::

    // Subgroup size: 32
    // Subgroup size (reduce_rows, reduce_cols): 32

(``Required subgroup size: 32``, ``Subgroup size = 32 lanes`` read the same.) A line without
entries applies to every entry without a line of its own. The runtime requires that size of
the pipeline, and a device that cannot give it refuses the kernel, naming the size and what the
device offers (or a ``slang-variants`` function tries its next entry). A value that is no power
of two from 1 to 128 is a warning naming the line, and is not applied.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from hatch_slang.comments.bindings import Note
from hatch_slang.comments.contract import leading_comment

__all__ = ["SubgroupLine", "read_subgroup_sizes"]

_LINE = re.compile(
    r"^\s*(?:[-*•]\s*)?(?:required\s+)?subgroup[- _]?size\s*"
    r"(?:\((?P<entries>[^()]*)\))?\s*[:=]\s*(?P<value>\S+?)(?:\s+(?:lanes|threads|invocations))?\s*\.?\s*$",
    re.IGNORECASE,
)
MAX_SUBGROUP = 128


@dataclass(frozen=True)
class SubgroupLine:
    line: int
    size: int
    entries: tuple[str, ...]  # empty: every entry without a line of its own


def read_subgroup_sizes(source: str) -> tuple[tuple[SubgroupLine, ...], tuple[Note, ...]]:
    """The ``Subgroup size`` lines of ``source``'s leading comment, and a note for each value
    that cannot be a subgroup size."""
    found: list[SubgroupLine] = []
    notes: list[Note] = []
    for number, text in leading_comment(source):
        m = _LINE.match(text)
        if m is None:
            continue
        value = m.group("value")
        size = int(value) if value.isdigit() and len(value) <= 4 else 0
        if size < 1 or size > MAX_SUBGROUP or size & (size - 1):
            notes.append(
                Note(
                    number,
                    f"`Subgroup size` must be a power of two from 1 to {MAX_SUBGROUP}, got `{value}`; "
                    "not applied",
                )
            )
            continue
        entries = tuple(e for e in re.split(r"[\s,]+", m.group("entries") or "") if e)
        found.append(SubgroupLine(number, size, entries))
    return tuple(found), tuple(notes)
