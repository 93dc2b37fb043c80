from __future__ import annotations

import re

import pytest

from hatch_slang.comments.contract import parse_contract

from ...helpers import SEED


def test_seed_contract_parses_completely() -> None:
    c = parse_contract("moe_combine.slang", SEED.read_text())
    assert c.entries == ("moe_combine",)
    assert c.bindings is not None
    assert [(b.register, b.index, b.name, b.role, b.dtype) for b in c.bindings] == [
        ("t", 0, "z", "data", "f32"),
        ("t", 1, "sel_weight", "data", "f32"),
        ("u", 2, "out", "data", "f32"),
        ("t", 3, "params", "params", None),
    ]
    assert [d.text for d in c.bindings[0].shape or ()] == ["n_entries", "hidden"]
    assert c.bindings[1].doc == "renormalized probabilities from `moe_route`"
    assert [f.name for f in c.bindings[3].fields] == ["hidden", "n_used", "n_tokens", "accumulate"]
    assert c.dispatch is not None and c.dispatch.group_size == 256
    assert [g.text for g in c.dispatch.grid] == ["ceil(hidden / 256)", "n_tokens"]
    assert c.dispatch.line == 31
    assert c.prose.startswith("Combine the routed experts'")
    assert "Bindings" not in c.prose and "slang-entries" not in c.prose


VARIANTS = """\
// slang-entries: first
// slang-entries: second first
//
// Buffers:
//   binding 0: x  f32, [rows][cols] input rows, described on a line
//       that wraps onto the next one
//   buffer 1: y  u32 whole-array, no shape
//   b2: params p[0] = (rows, _, scale_bits, cols)
//
// Dispatch: (ceil(rows / 8),
//            cols) workgroups of 64 threads
"""


def test_tolerated_variations() -> None:
    c = parse_contract("v.slang", VARIANTS)
    assert c.entries == ("first", "second")
    assert c.bindings is not None
    x, y, p = c.bindings
    assert x.register is None and x.index == 0 and x.doc.endswith("that wraps onto the next one")
    assert y.register is None and y.shape is None and y.dtype == "u32"
    assert p.register == "b"
    assert [(f.slot, f.name, f.is_bits) for f in p.fields] == [
        (0, "rows", False),
        (1, None, False),
        (2, "scale", True),
        (3, "cols", False),
    ]
    assert c.dispatch is not None and [g.text for g in c.dispatch.grid] == ["ceil(rows / 8)", "cols"]


def test_no_bindings_block() -> None:
    c = parse_contract("k.slang", "// Just prose.\nvoid main() {}\n")
    assert c.bindings is None and c.dispatch is None and c.entries == ()


@pytest.mark.parametrize(
    ("text", "line", "message"),
    [
        ("// Bindings:\n//   t0: x  f32, [n +]\n", 2, "shape dimension `n \\+`"),
        ("// Bindings:\n//   t0: x'y  f32, [n]\n", 2, "not a valid identifier"),
        ("// Bindings:\n//   t0: x  f32, [__import__('os')]\n", 2, "only ceil"),
        (
            "// Bindings:\n//   t0: x  f32, [n]\n//   t0: y  f32, [n]\n",
            3,
            "binding 0 is already documented at line 2",
        ),
        (
            "// Bindings:\n//   t0: x  f32, [n]\n//   t1: x  f32, [n]\n",
            3,
            "the name `x` is already documented",
        ),
        ("// Bindings:\n//   t0: p (a, a)\n", 2, "appears twice"),
        ("// Bindings:\n//   t0: p (a, 1st)\n", 2, "not a valid identifier"),
        ("// Bindings:\n//   t0: p  (a, b\n", 2, "cannot read"),
        ("//\n// Dispatch: (n.real) groups of 4\n", 2, "cannot find a grid"),
        ("//\n// Dispatch: whenever you like\n", 2, "cannot find a grid"),
        ("// slang-entries: ok not-ok\n", 1, "not a valid identifier"),
        ("// Dispatch: (lambda: 0)() groups of 4\n", 1, "cannot find a grid"),
    ],
)
def test_unreadable_lines_are_notes_naming_the_line(text: str, line: int, message: str) -> None:
    """A line that cannot be read is never an error: a note naming it, and the rest is read."""
    c = parse_contract("shaders/k.slang", text)
    assert [n.line for n in c.notes] == [line], c.notes
    assert re.search(message, c.notes[0].message), c.notes[0].message
