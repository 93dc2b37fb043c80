"""The instances of generic entries an entries line names (``gscale<float> gscale<half>``), and
the names and type arguments :mod:`hatch_slang.compile.discover` builds them under."""

from __future__ import annotations

import pytest

from hatch_slang.comments.contract import instance_key, parse_contract, split_arguments


@pytest.mark.parametrize(
    ("line", "entries", "instances"),
    [
        ("gscale<float> gscale<half>", (), ("gscale<float>", "gscale<half>")),
        ("plain, gscale< float >", ("plain",), ("gscale<float>",)),
        ("`f<float, 4>` and g", ("g",), ("f<float,4>",)),
        ("f<vector<float, 4>> f<int>", (), ("f<vector<float,4>>", "f<int>")),
        ("f<float> f<float>", (), ("f<float>",)),
    ],
)
def test_an_entries_line_names_instances(
    line: str, entries: tuple[str, ...], instances: tuple[str, ...]
) -> None:
    c = parse_contract("k.slang", f"// slang-entries: {line}\n// Dispatch: ceil(n / 64) groups of 64\n")
    assert c.entries == entries
    assert tuple(t for _, t in c.instances) == instances
    assert all(n == 1 for n, _ in c.instances)
    assert c.declares_entries and not c.notes


def test_instances_on_several_lines_union_and_no_line_declares_nothing() -> None:
    c = parse_contract("k.slang", "// slang-entries: f<float>\n// slang-entries: f<half> f<float>\n")
    assert c.instances == ((1, "f<float>"), (2, "f<half>"))
    assert not parse_contract("k.slang", "// a kernel\n").declares_entries


def test_a_dispatch_line_may_name_a_generic_or_an_instance() -> None:
    text = (
        "// slang-entries: f<float> f<half>\n"
        "// Dispatch (f): ceil(n / 64) groups of 64\n"
        "// Dispatch (f_half): ceil(n / 32) groups of 32\n"
        "// Dispatch (g): ceil(n / 8) groups of 8\n"
    )
    c = parse_contract("k.slang", text)
    assert [n.message for n in c.notes] == ["Dispatch names entry `g`, which `slang-entries` does not list"]


@pytest.mark.parametrize(
    ("text", "args"),
    [
        ("float", ("float",)),
        (" float , 4 ", ("float", "4")),
        ("vector<float, 4>, 2", ("vector<float,4>", "2")),
        ("A.B, C::D", ("A.B", "C::D")),
        ("float,", None),
        ("", None),
        ("float>", None),
        ("vector<float", None),
        ("float; x", None),
        ("x" * 201, None),
    ],
)
def test_type_arguments_split_at_top_level_commas(text: str, args: tuple[str, ...] | None) -> None:
    assert split_arguments(text) == args


@pytest.mark.parametrize(
    ("generic", "args", "key"),
    [
        ("gscale", ("float",), "gscale_float"),
        ("apply", ("Square",), "apply_Square"),
        ("f", ("float", "4"), "f_float_4"),
        ("f", ("vector<float,4>",), "f_vector_float_4"),
        ("f", ("A_B",), "f_A_B"),
        ("f", ("A", "B"), "f_A_B"),
        ("f", ("A::B",), "f_A_B"),
    ],
)
def test_an_instance_is_named_after_its_generic_and_arguments(
    generic: str, args: tuple[str, ...], key: str
) -> None:
    assert instance_key(generic, args) == key
