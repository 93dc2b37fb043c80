"""hatch_slang.codegen.structs: the names a wrapper module gives its structs' dtypes (the Slang
name, a second layout numbered, a taken name with a trailing ``_``, a name that is no
identifier made one) and the literal definitions, which make the dtype the manifest's record
of the struct makes."""

from __future__ import annotations

import numpy as np

from hatch_slang.codegen.structs import definitions, names
from hatch_slang.spec.structs import Field, Struct
from hatch_slang.validate import struct_dtype

INNER = Struct("Inner", 8, (Field("a", 0, "f32"), Field("b", 4, "u16", (2,), array=(2,))))
OUTER = Struct(
    "Outer",
    48,
    (
        Field("v", 0, "f32", (3,), width=3),
        Field("m", 16, "f32", (2, 4), matrix=(2, 3, "row")),
        Field("inner", 40, None, (), INNER),
    ),
)


def test_names() -> None:
    other = Struct("Inner", 12, INNER.fields)
    taken = {"Outer", "np"}
    got = names([INNER, other, OUTER, Struct("Pair<float>", 4, ()), Struct("__x", 4, ())], taken)
    assert list(got.values()) == ["Inner", "Inner_2", "Outer_", "Pair_float", "x"]
    assert {"Inner", "Inner_2", "Outer_"} <= taken


def test_definitions_make_the_manifests_dtype() -> None:
    named = names([INNER, OUTER], set())
    text = definitions([INNER, OUTER], named, "np", "mod")
    space: dict[str, object] = {"np": np}
    exec(compile(text, "<generated>", "exec"), space)  # the test's own generated text
    assert space["Inner"] == struct_dtype(INNER.describe())
    assert space["Outer"] == struct_dtype(OUTER.describe())
    assert "# Outer: Slang struct `Outer`, 48 bytes per element." in text
    assert "m[i][j] is [i, j]" in text
    # Each dtype names itself, for the runtime's message about an array of another dtype.
    assert space["Outer"].metadata == {"slang_struct": "mod.Outer"}  # type: ignore[attr-defined]
