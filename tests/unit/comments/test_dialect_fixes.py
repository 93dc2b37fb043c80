"""Forms from the dialect list that the parser once misread, each pinned on the line it came from."""

from __future__ import annotations

import re

import pytest

from hatch_slang.comments.contract import parse_contract


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


# --- forms met in a real engine's kernels (written here in our own words) ---------------------


def test_a_shape_written_with_x_inside_one_bracket_is_two_dimensions() -> None:
    c = parse_contract(
        "k.slang", "// Bindings:\n//   binding 1: state  f32, read-write, the window [taps x width]\n"
    )
    assert c.bindings is not None and not c.notes
    assert [d.text for d in c.bindings[0].shape or ()] == ["taps", "width"]


def test_a_layout_picture_in_brackets_gives_way_to_the_real_shape() -> None:
    text = "// Bindings:\n//   binding 1: out  f32, write (frames · 2·bins), [re | im] per frame\n"
    c = parse_contract("k.slang", text)
    assert c.bindings is not None and not c.notes
    assert [d.text for d in c.bindings[0].shape or ()] == ["frames * 2*bins"]
    alone = parse_contract(
        "k.slang", "// Bindings:\n//   binding 0: proj  f32, read, packed [a | b | c], h floats each\n"
    )
    assert alone.bindings is not None and not alone.notes and alone.bindings[0].shape is None


def test_a_params_named_binding_with_a_dtype_and_shape_is_data() -> None:
    c = parse_contract("k.slang", "// Bindings:\n//   binding 3: p  f32, read  [2*t-1][h*d]\n")
    assert c.bindings is not None and c.bindings[0].role == "data"
    assert [d.text for d in c.bindings[0].shape or ()] == ["2*t-1", "h*d"]


def test_an_element_list_header_with_one_tuple_per_line() -> None:
    text = (
        "// Bindings:\n//   binding 4: params  uint4 x 2:\n//       [0] = (cin, cout, h, w)\n"
        "//       [1] = (groups, _, _, _)\n"
    )
    c = parse_contract("k.slang", text)
    assert c.bindings is not None and not c.notes
    assert [(f.element, f.slot, f.name) for f in c.bindings[0].fields][:5] == [
        (0, 0, "cin"),
        (0, 1, "cout"),
        (0, 2, "h"),
        (0, 3, "w"),
        (1, 0, "groups"),
    ]


def test_numbered_binding_lines_a_params_list_and_a_workgroup_count() -> None:
    text = (
        "// Launch:\n//   workgroup size: (128, 1, 1)\n//   num workgroups: (heads, ceil(dim / 128), 1)\n//\n"
        "// Buffer bindings:\n//   0: q       f32, read, [heads * dim]\n"
        "//   1: params  u32, read, [heads, dim]\n"
    )
    c = parse_contract("k.slang", text)
    assert not c.notes and c.dispatch is not None
    assert [g.text for g in c.dispatch.grid] == ["heads", "ceil(dim / 128)", "1"]
    assert c.bindings is not None
    q, params = c.bindings
    assert (q.index, q.name, [d.text for d in q.shape or ()]) == (0, "q", ["heads * dim"])
    assert (params.role, [f.name for f in params.fields]) == ("params", ["heads", "dim"])


def test_a_count_in_parentheses_leaves_the_description_clean() -> None:
    c = parse_contract(
        "k.slang", "// Bindings:\n//   binding 0: x  f32, read-write (n elements) scaled in place\n"
    )
    assert c.bindings is not None and c.bindings[0].doc == "scaled in place"


def test_a_single_striding_workgroup_is_a_grid_of_one() -> None:
    c = parse_contract("k.slang", "// Softmax in place.\n// Single workgroup of 256, grid-striding over n.\n")
    assert (
        c.dispatch is not None and [g.text for g in c.dispatch.grid] == ["1"] and c.dispatch.group_size == 256
    )
    # One group per item, or no word of walking everything: no grid is guessed.
    assert parse_contract("k.slang", "// A single workgroup per row.\n").dispatch is None
    assert parse_contract("k.slang", "// A single workgroup of 256 handles a row.\n").dispatch is None


def test_brackets_right_after_a_name_index_it_and_are_no_shape() -> None:
    c = parse_contract(
        "k.slang", "// Bindings:\n//   binding 1: out  u32, read-write, writes out[0] = the index\n"
    )
    assert c.bindings is not None and c.bindings[0].shape is None and not c.notes
    c = parse_contract("k.slang", "// Bindings:\n//   binding 0: x  f32[n][m] the input\n")
    assert c.bindings is not None and [d.text for d in c.bindings[0].shape or ()] == ["n", "m"]


def test_words_holding_quantised_blocks_are_not_checked_by_a_weight_count() -> None:
    """`u32 ... [experts][m][k] Q4_0`: the shape counts weights, not the words the caller passes;
    `[rows][cols / 8] Q4_0 quants` over u32 already counts words and stays checked."""
    c = parse_contract("k.slang", "// Bindings:\n//   t0: w  u32, the stacked weights `[e][m][k]` Q4_0.\n")
    assert c.bindings is not None and (c.bindings[0].dtype, c.bindings[0].shape) == ("u32", None)
    c = parse_contract("k.slang", "// Bindings:\n//   t0: wq  u32, [rows][cols / 8] Q4_0 quants\n")
    assert c.bindings is not None and [d.text for d in c.bindings[0].shape or ()] == ["rows", "cols / 8"]
