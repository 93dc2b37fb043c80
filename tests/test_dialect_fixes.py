"""Forms from the dialect list that the parser once misread, each pinned on the line it came from."""

from __future__ import annotations

import re

import pytest

from hatch_slang.contract import parse_contract


def _binding(line: str) -> tuple[str, str | None, tuple[str, ...] | None, str | None]:
    c = parse_contract("k.slang", f"// Bindings:\n//   {line}\n")
    assert c.bindings is not None and not c.notes, c.notes
    (b,) = c.bindings
    return b.role, b.dtype, tuple(d.text for d in b.shape) if b.shape else None, b.access


@pytest.mark.parametrize(
    ("line", "want"),
    [
        # add_bias: one size in parentheses after the dtype and access word
        ("buffer 1: bias  f32, read   (n_cols)", ("data", "f32", ("n_cols",), "read")),
        ("u2: acc  f32, updated in place (rows)", ("data", "f32", ("rows",), "readwrite")),
        ("[2] acc  (rows) f32, rw", ("data", "f32", ("rows",), "readwrite")),
        ("t0: x  f32, read (n_rows * 4)", ("data", "f32", ("n_rows * 4",), "read")),
        # parentheses holding prose, an access word or a dtype stay prose
        ("t0: x  f32, read (see above)", ("data", "f32", None, "read")),
        ("t0: x  f32 (read)", ("data", "f32", None, "read")),
        ("t0: x  f32, read (all)", ("data", "f32", None, "read")),
        ("t0: x  f32, read (u32 words)", ("data", "f32", None, "read")),
        # prose before the parentheses: not a shape
        ("t0: x  f32, the input (optional)", ("data", "f32", None, None)),
    ],
)
def test_one_size_in_parentheses_is_a_one_dimensional_shape(
    line: str, want: tuple[str, str | None, tuple[str, ...] | None, str | None]
) -> None:
    assert _binding(line) == want


@pytest.mark.parametrize(
    "line",
    ["t1: params  (n)", "b1: cb  (n)  the only field", "[1] consts (n)"],
)
def test_a_single_field_tuple_is_still_params(line: str) -> None:
    c = parse_contract("k.slang", f"// Bindings:\n//   {line}\n")
    assert c.bindings is not None and not c.notes
    (b,) = c.bindings
    assert b.role == "params" and [f.name for f in b.fields] == ["n"]


@pytest.mark.parametrize(
    ("line", "message"),
    [
        # the whole name token is the name, and refused as one (not silently read as `a`)
        ("t0: a.b  f32, [n]", "the name `a.b` is not a valid identifier"),
        ("t0: x;y  f32, [n]", "the name `x;y` is not a valid identifier"),
        ("t0: 1abc  f32, [n]", "the name `1abc` is not a valid identifier"),
        # a dimension holding brackets is unreadable, not a shorter shape
        ("t0: x  f32, [n][m][n[0]]", r"shape `\[n\]\[m\]\[n\[0\]\]`: brackets inside a dimension"),
        # a params binding's tuple is read as one, whatever it holds
        ("t2: params  (n, m][n[0], s)", "params field `m\\]\\[n\\[0\\]` is not a valid identifier"),
        ("t2: params  (n, m", "cannot read `\\(n, m` as a params tuple"),
    ],
)
def test_unreadable_binding_lines_are_named(line: str, message: str) -> None:
    c = parse_contract("k.slang", f"// Bindings:\n//   {line}\n")
    assert [n.line for n in c.notes] == [2], c.notes
    assert re.search(message, c.notes[0].message), c.notes[0].message
    assert c.binding_sets[0].unread  # the wrapper takes that binding from reflection


def test_a_name_still_ends_at_its_separators() -> None:
    for line in ["t0: x. f32, [n]", "t0: x, f32, [n]", "t0: `x` f32 [n]", "t0: x[n] f32", "t0: x -- f32 [n]"]:
        c = parse_contract("k.slang", f"// Bindings:\n//   {line}\n")
        assert c.bindings is not None and [b.name for b in c.bindings] == ["x"], (line, c.notes)
