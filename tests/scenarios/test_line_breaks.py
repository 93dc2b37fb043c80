"""Lines are Slang's lines: a comment line ends at `\\n`, `\\r\\n` or `\\r`, and nowhere else.

A form feed, a vertical tab, NEL (U+0085), U+2028/U+2029 or an ASCII separator (U+001C-U+001E)
inside a prose line is whitespace to Slang's lexer (``str.splitlines`` would split there: the
rest of the line would read as code, end the comment block and drop its Bindings block, and the
line numbers of every message after it would shift). A UTF-8 BOM at the start of the file is no
text. Real builds of a small kernel; every warning names the line an editor and Slang show.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from hatch_slang.comments.contract import leading_comment, parse_contract, source_lines
from hatch_slang.compile.discover import default_entries
from hatch_slang.spec.resources import declared_at

from .test_unreadable_lines import CODE, GOOD_SIGNATURE, build, comment, signature

pytestmark = pytest.mark.compile

# Whitespace inside a line for Slang, a line break for `str.splitlines`.
NOT_BREAKS = ["\u2028", "\u2029", "\x85", "\x0c", "\x0b", "\x1c", "\x1d", "\x1e"]
BOM = "\ufeff"
UNREADABLE_DISPATCH = 9  # the line `comment()` puts the Dispatch line on


def shader(inside: str = "", ending: str = "\n", bom: str = "") -> str:
    """The good kernel with ``inside`` in its prose line, and an unreadable Dispatch line (line 9)."""
    text = comment(
        replace={2: f"// Scale{inside}a matrix.", UNREADABLE_DISPATCH: "// Dispatch: whenever it feels right"}
    )
    return bom + (text + CODE).replace("\n", ending)


def assert_built_with_bindings(root: Path, text: str) -> None:
    out = build(root, {"k.slang": text})
    source = out.files["k.py"].decode()
    # The Bindings block was read: its names and shape checks, not reflection's `a, b, params`.
    assert signature(source) == GOOD_SIGNATURE, out.warnings  # (grid: the fallback, required)
    assert '_d.array("x", x, "float32", ("n", "m"), writable=False, checked=True)' in source, source
    notes = [w for w in out.warnings if w.startswith("shaders/k.slang")]
    # The one warning, on the line Slang and an editor show (no shifted numbering).
    assert len(notes) == 1 and notes[0].startswith(f"shaders/k.slang:{UNREADABLE_DISPATCH}: "), notes


@pytest.mark.parametrize("char", NOT_BREAKS, ids=[f"U+{ord(c):04X}" for c in NOT_BREAKS])
def test_a_character_slang_does_not_break_at_keeps_the_bindings(tmp_path: Path, char: str) -> None:
    assert_built_with_bindings(tmp_path, shader(inside=char))


@pytest.mark.parametrize("ending", ["\n", "\r\n", "\r"], ids=["LF", "CRLF", "CR"])
def test_line_endings_and_a_bom_keep_the_bindings_and_line_numbers(tmp_path: Path, ending: str) -> None:
    assert_built_with_bindings(tmp_path, shader(inside="\u2028", ending=ending, bom=BOM))


def test_the_readers_of_source_lines_count_lines_as_slang() -> None:
    code = "[[vk::binding(0)]] RWStructuredBuffer<float> out;"
    text = f"{BOM}// one\u2028still one\r// two\x0c\r\n// three\x85\n{code}\r"
    assert source_lines(text) == [
        "// one\u2028still one",
        "// two\x0c",
        "// three\x85",
        code,
        "",
    ]
    assert [n for n, _ in leading_comment(text)] == [1, 2, 3]
    assert declared_at(text, "out") == 4
    # A `//` comment ends at a lone `\r` too: the function after it is found.
    code = '// slang-entries are not listed\r[shader("compute")] [numthreads(1, 1, 1)] void k() {}\r'
    assert default_entries("k.slang", "x", code) == ("k",)
    # The BOM is no part of the first line's text: a binding on line 1 reads.
    c = parse_contract("k.slang", f"{BOM}// t0: x  f32, [n] read\r// u1: y  f32, [n] written\r")
    assert c.bindings is not None and [(b.name, b.line) for b in c.bindings] == [("x", 1), ("y", 2)]
