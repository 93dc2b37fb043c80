"""The comment forms added for real-world kernels, parsed, and `hatch-slang validate` on a project.

Per-entry Dispatch lines, `flat[n]` shapes, params documented element by element, aliased views
of one binding; every bad form fails naming file and line.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner

from hatch_slang.builder import pipeline
from hatch_slang.cli.commands import main
from hatch_slang.comments.contract import parse_contract
from hatch_slang.config.project import parse_config
from hatch_slang.errors import HatchSlangError, ShaderError
from hatch_slang.spec.reflection import ReflectedBinding, Scalar, _merge

from ..helpers import BuildProject, requires_device

PER_ENTRY = """\
// slang-entries: first second third
//
// Bindings:
//   u0: data  f32, flat[n] any shape
//   t1: p     p[0] = (n, stride, _, _), p[1] = (scale_bits)
//
// Dispatch (first): ceil(n / 64) groups of 64
// Dispatch [second, third]: (ceil(n / 128),
//                            2) workgroups of 128
// Dispatch: n groups of 1
"""


def test_per_entry_dispatch_flat_shapes_and_params_by_element() -> None:
    c = parse_contract("k.slang", PER_ENTRY)
    assert c.dispatch is not None and c.dispatch.line == 10 and c.dispatch.entries == ()
    assert [(d.entries, d.group_size, d.line) for d in c.entry_dispatch] == [
        (("first",), 64, 7),
        (("second", "third"), 128, 8),
    ]
    assert c.dispatch_for("first") is c.entry_dispatch[0]
    assert c.dispatch_for("third") is c.entry_dispatch[1]
    assert c.dispatch_for("other") is c.dispatch
    assert c.bindings is not None
    data, p = c.bindings
    assert data.flat and [d.text for d in data.shape or ()] == ["n"] and data.doc == "any shape"
    assert [(f.element, f.slot, f.name) for f in p.fields] == [
        (0, 0, "n"),
        (0, 1, "stride"),
        (0, 2, None),
        (0, 3, None),
        (1, 0, "scale"),
    ]


def test_dispatch_for_form_and_prose_that_only_looks_like_it() -> None:
    c = parse_contract("k.slang", "// Dispatch for a, b: (n) groups of 8\n// Dispatch forms vary.\n")
    assert [d.entries for d in c.entry_dispatch] == [("a", "b")]
    assert "Dispatch forms vary." in c.prose


@pytest.mark.parametrize(
    ("text", "line", "message"),
    [
        (
            "// slang-entries: a\n// Dispatch (b): n groups of 4\n",
            2,
            "Dispatch names entry `b`, which `slang-entries` does not list",
        ),
        (
            "// Dispatch (a): n groups of 4\n// Dispatch (b, a): n groups of 4\n",
            2,
            "a second Dispatch line for `a` \\(the first is used\\)",
        ),
        ("// Dispatch (): n groups of 4\n", 1, "cannot read which entries"),
        # (a keyword is a name since any identifier is: `class` reads as the entry `class`)
        ("// Dispatch (a.b): n groups of 4\n", 1, "cannot read which entries"),
        ("// Bindings:\n//   u0: x  f32, flat[n][m]\n", 2, "takes one size"),
        ("// Bindings:\n//   t0: p  p[0] = (a, c), p[0] = (b, d)\n", 2, "element \\[0\\] is listed twice"),
        ("// Bindings:\n//   t0: p  (a, b\n", 2, "cannot read"),
    ],
)
def test_unreadable_forms_are_notes_naming_the_line(text: str, line: int, message: str) -> None:
    c = parse_contract("shaders/k.slang", text)
    assert [n.line for n in c.notes] == [line], c.notes
    assert re.search(message, c.notes[0].message), c.notes[0].message


def test_several_bare_tuples_are_consecutive_elements() -> None:
    c = parse_contract("k.slang", "// Bindings:\n//   t0: p  (a, b), (c, _)\n")
    assert c.bindings is not None
    assert [(f.element, f.slot, f.name) for f in c.bindings[0].fields] == [
        (0, 0, "a"),
        (0, 1, "b"),
        (1, 0, "c"),
        (1, 1, None),
    ]


def _view(index: int, name: str, kind: str = "storage", scalar: str = "f32", n: int = 1) -> ReflectedBinding:
    scalars = tuple(Scalar("xyzw"[k] if n > 1 else "x", scalar, 4 * k) for k in range(n))
    return ReflectedBinding(index, name, kind, "structuredBuffer", name.startswith("rw"), scalars, 4 * n)  # type: ignore[arg-type]


def test_aliased_views_merge_into_one_binding() -> None:
    merged = _merge([_view(0, "a"), _view(1, "b"), _view(0, "rw_a4", n=4), _view(0, "a_bits", scalar="u32")])
    assert [b.variable for b in merged] == ["a", "b"]
    a = merged[0]
    assert a.writable and [v.variable for v in a.aliases] == ["rw_a4", "a_bits"]
    assert a.scalar_types == {"f32", "u32"}
    with pytest.raises(HatchSlangError, match="share binding 0 but one is a storage buffer"):
        _merge([_view(0, "a"), _view(0, "c", kind="uniform")])


def test_dispatch_for_an_entry_the_shader_lacks(tmp_path: Path) -> None:
    (tmp_path / "shaders").mkdir()
    (tmp_path / "shaders" / "k.slang").write_text(
        "// Bindings:\n//   u0: data  f32, [n]\n//   t1: params (n)\n// Dispatch (kk): n groups of 64\n"
        "[[vk::binding(0)]] RWStructuredBuffer<float> data;\n"
        "[[vk::binding(1)]] StructuredBuffer<uint> params;\n"
        '[shader("compute")] [numthreads(64, 1, 1)]\n'
        "void k(uint3 id : SV_DispatchThreadID) { if (id.x < params[0]) data[id.x] = 1.0f; }\n"
    )
    config = parse_config(tmp_path, {"shaders": ["shaders/*.slang"], "package": "mypkg/kernels"})
    with pytest.raises(ShaderError, match=r"shaders/k.slang:4: Dispatch names entry `kk`, which is not"):
        pipeline.build(config)


@pytest.fixture
def conventions(package: Callable[[str], Path], build_project: BuildProject) -> Path:
    return build_project(package("conventions")).root


@requires_device
@pytest.mark.gpu
@pytest.mark.compile
def test_validate_cli_json_rows_and_exit_code(conventions: Path) -> None:
    runner = CliRunner()
    result = runner.invoke(main, ["validate", "--root", str(conventions), "--json", "--device", "0"])
    assert result.exit_code == 0, result.output
    rows = [json.loads(line) for line in result.stdout.splitlines()]  # the no-reference note: stderr
    assert len(rows) == 6
    assert {(r["shader"], r["entry"]) for r in rows} == {
        ("binding_lines.slang", "axpy"),
        ("block_sum.slang", "block_sum"),
    }
    assert all(
        set(r) == {"shader", "entry", "device", "shape", "max_abs_err", "max_rel_err", "ok", "status"}
        for r in rows
    )
    assert all(r["ok"] and r["status"] == "ok" for r in rows)

    # A reference that disagrees: that row fails and the command exits 1.
    ref = conventions / "shaders" / "binding_lines.py"
    ref.write_text(ref.read_text().replace('args["a"] * args', '(args["a"] + 1) * args'))
    result = runner.invoke(main, ["validate", "--root", str(conventions), "binding_lines"])
    assert result.exit_code == 1
    assert "FAIL" in result.output and "0/3 ok" in result.output
