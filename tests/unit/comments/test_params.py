"""hatch_slang.comments.params: a params binding's tuple, in the spellings kernels' comments use."""

from __future__ import annotations

import pytest

from hatch_slang.comments.dialect import Unreadable
from hatch_slang.comments.params import ParamsDoc, bare_field_list, looks_like_params, read_params

Slot = tuple[str | None, bool, int | None, str | None, str | None]  # name, bits, literal, derived, dtype


def slots(doc: ParamsDoc) -> list[tuple[int, list[Slot]]]:
    return [
        (
            element,
            [
                (f.name, f.is_bits, f.literal, f.derived.text if f.derived else None, f.declared)
                for f in fields
            ],
        )
        for element, fields in doc.elements
    ]


def test_a_flat_tuple_with_padding_and_float_bits() -> None:
    doc = read_params("(rows, cols, eps_bits, _)")
    assert not doc.per_element
    assert slots(doc) == [
        (
            0,
            [
                ("rows", False, None, None, None),
                ("cols", False, None, None, None),
                ("eps", True, None, None, None),
                (None, False, None, None, None),
            ],
        )
    ]


def test_every_spelling_of_float_bits_and_a_literal_slot() -> None:
    doc = read_params("(n, bitcast(scale), limit (f32 bits), 7)")
    assert slots(doc)[0][1] == [
        ("n", False, None, None, None),
        ("scale", True, None, None, None),
        ("limit", True, None, None, None),
        (None, False, 7, None, None),
    ]


def test_per_element_tuples_labelled_or_in_a_row() -> None:
    labelled = read_params("p[0] = (n_expert, k), p[1] = (norm, _)")
    in_a_row = read_params("(n_expert, k), (norm, _)")
    assert labelled.per_element and in_a_row.per_element
    assert (
        slots(labelled)
        == slots(in_a_row)
        == [
            (0, [("n_expert", False, None, None, None), ("k", False, None, None, None)]),
            (1, [("norm", False, None, None, None), (None, False, None, None, None)]),
        ]
    )


def test_an_element_list_after_its_vector_type() -> None:
    doc = read_params("uint4 x 2: dim, n_groups, eps_bits, _pad, n_tok, _, _, _")
    names = [s[0] for s in slots(doc)[0][1]]
    assert names == ["dim", "n_groups", "eps", None, "n_tok", None, None, None]
    assert slots(doc)[0][1][2][1]  # eps_bits: the raw bits of an f32


@pytest.mark.parametrize("prefix", ["cbuffer ", "uniform ", "struct ", "params "])
def test_a_word_that_says_what_the_tuple_is_is_no_field(prefix: str) -> None:
    assert [s[0] for s in slots(read_params(prefix + "(n, lo, hi, reserved)"))[0][1]] == [
        "n",
        "lo",
        "hi",
        None,
    ]


def test_declared_dtypes_and_fields_the_wrapper_computes() -> None:
    assert slots(read_params("(eps: f32, n: u32)"))[0][1] == [
        ("eps", False, None, None, "f32"),
        ("n", False, None, None, "u32"),
    ]
    inline = read_params("(n, total = rows * dim)")
    where = read_params("(rows, dim, total)  where total = rows * dim")
    assert slots(inline)[0][1][1] == ("total", False, None, "rows * dim", None)
    assert slots(where)[0][1][2] == ("total", False, None, "rows * dim", None)
    assert where.doc == "where total = rows * dim"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("(a, , b)", "an empty params slot"),
        ("p[0] = (a), (b)", "params tuples mix `p[k] = (...)` and bare `(...)`"),
        ("p[0] = (a), p[0] = (b)", "params element [0] is listed twice"),
        ("(n, total = n / 0)", "params field `total` = `n / 0`: division by zero in `n / 0`"),
        ("garbage", "cannot read `garbage` as a params tuple `(a, b, ...)`"),
        ("(n, a.b)", "params field `a.b` is not a valid identifier"),
    ],
)
def test_what_cannot_be_read_says_why(text: str, message: str) -> None:
    with pytest.raises(Unreadable) as e:
        read_params(text)
    assert str(e.value).startswith(message)


def test_a_tuple_is_told_from_a_data_buffers_shape() -> None:
    assert looks_like_params("(n, scale)")
    assert looks_like_params("(n)", "params")  # one field, under a params name
    assert not looks_like_params("(rows) f32, rw")  # a dtype after it: a one-dimensional shape
    assert not looks_like_params("(rows x cols), read")
    assert not looks_like_params("f32 [n]")
    assert not looks_like_params("(n elements)")


def test_a_bare_field_list_only_after_a_params_name() -> None:
    assert bare_field_list("params", "dim (u32), eps (f32 bits)")
    assert not bare_field_list("x", "dim (u32), eps (f32 bits)")
    assert not bare_field_list("p", "f32, read")  # a data buffer's dtype and access
