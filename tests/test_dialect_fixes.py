"""Forms from the dialect list that the parser once misread, each pinned on the line it came from."""

from __future__ import annotations

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
