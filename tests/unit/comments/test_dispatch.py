"""hatch_slang.comments.dispatch: the grid and group size of a Dispatch line, in its many phrasings."""

from __future__ import annotations

import pytest

from hatch_slang.comments.dialect import Unreadable
from hatch_slang.comments.dispatch import MAX_GROUP, read_dispatch


def read(text: str) -> tuple[list[str], int | None]:
    """The grid as the wrappers compute it, and the group size."""
    doc = read_dispatch(text)
    return [g.python for g in doc.grid], doc.group_size


@pytest.mark.parametrize(
    ("text", "grid", "size"),
    [
        (
            "(ceil(hidden / 256), n_tokens) threadgroups of 256.",
            ["_c.ceil(_c.div(hidden, 256))", "n_tokens"],
            256,
        ),
        ("ceil(n / 64) workgroups x 64 threads", ["_c.ceil(_c.div(n, 64))"], 64),
        ("(rows, 1, 1) × 256", ["rows", "1", "1"], 256),
        ("`ceil(n / 64)` × 64", ["_c.ceil(_c.div(n, 64))"], 64),
        ("ceil(n / 128) x 128", ["_c.ceil(_c.div(n, 128))"], 128),
        ("n_blocks groups of 256", ["n_blocks"], 256),
        ("rows threadgroups x 128 threads (one threadgroup per row)", ["rows"], 128),
        ("(X, Y)", ["X", "Y"], None),  # no group size: reflection's
    ],
)
def test_grids_and_group_sizes(text: str, grid: list[str], size: int | None) -> None:
    assert read(text) == (grid, size)


def test_prose_around_the_grid_is_left_out() -> None:
    assert read("one thread per element, ceil(n / 256) workgroups of 256.") == (
        ["_c.ceil(_c.div(n, 256))"],
        256,
    )
    assert read("(ceil(cols / 16), ceil(rows / 16)) groups of 256 (16×16 threads)")[1] == 256


@pytest.mark.parametrize(
    ("text", "size"), [("(ceil(n / 16), rows) groups of 16x16", 256), ("[n, 4] groups of (8, 8)", 64)]
)
def test_a_group_of_several_dimensions_counts_its_threads(text: str, size: int) -> None:
    assert read(text)[1] == size


def test_the_c_round_up_idiom_is_integer_division() -> None:
    assert read("(n + 255) / 256 groups of 256") == (["((n + 255) // 256)"], 256)
    assert read("(n + 63u) / 64u") == (["((n + 63) // 64)"], None)  # C's suffixes dropped
    # Inside ceil() a `/` is exact division: ceil() already rounds up.
    assert read("ceil((n + 1) / 64) groups of 64") == (["_c.ceil(_c.div((n + 1), 64))"], 64)


def test_comment_arithmetic_is_read_as_python() -> None:
    doc = read_dispatch("ceil(n_blocks·32 / 256) workgroups of 256")
    assert doc.grid[0].text == "ceil(n_blocks*32 / 256)"
    assert doc.grid[0].names == ("n_blocks",)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("n / 0 groups of 64", "the grid `n / 0`: division by zero in `n / 0`"),
        ("ceil(n / 64) groups of 100000", f"a group of `100000` threads is more than {MAX_GROUP}"),
        ("some groups of 64", "cannot find a grid in `some groups of 64`; expected e.g."),
        ("(a, b, c, d) groups of 4", "cannot find a grid in `(a, b, c, d) groups of 4`"),  # four dimensions
        ("a lot of work", "cannot find a grid in `a lot of work`"),
    ],
)
def test_what_cannot_be_read_says_why(text: str, message: str) -> None:
    with pytest.raises(Unreadable) as e:
        read_dispatch(text)
    assert str(e.value).startswith(message)
