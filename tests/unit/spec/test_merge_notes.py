"""hatch_slang.spec.merge's notes: Slang's diagnostics, repeated by every entry's compile (each
instance of a generic is one), are said once each."""

from __future__ import annotations

from hatch_slang.spec.merge import _once


def test_each_diagnostic_is_said_once_in_order() -> None:
    said = (
        "warning[E31106]: moved\n --> k.slang:3:1\n"
        "warning[E31107]: member\nwarning[E31106]: moved\n --> k.slang:3:1\n"
        "warning[E31107]: member\nnote[E1]: x"
    )
    assert _once(said) == "warning[E31106]: moved\n --> k.slang:3:1\nwarning[E31107]: member\nnote[E1]: x"
    # The same message at two places is two diagnostics.
    two = "warning[E2]: a\n --> k.slang:1:1\nwarning[E2]: a\n --> k.slang:9:1"
    assert _once(two) == two
