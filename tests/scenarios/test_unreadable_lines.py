"""An unreadable comment line is a warning naming file:line with its fallback; the build goes on.

Real builds (``pipeline.build`` over a config from ``parse_config``) of a small kernel whose
comment has one unreadable line each: a bad shape expression, a bad name, an unreadable Dispatch
line, an unreadable params tuple, a duplicate binding, a bad entries line, an unreadable entries
qualifier. Then several files at once: one file's problems never stop another from building, and
every problem of every file is reported by the one run.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from hatch_slang.builder import pipeline
from hatch_slang.config.project import parse_config
from hatch_slang.errors import BuildErrors, CompileError, ShaderError

from .test_hostile import assert_safe_module

pytestmark = pytest.mark.compile

CODE = """\
[[vk::binding(0)]] StructuredBuffer<float> a;
[[vk::binding(1)]] RWStructuredBuffer<float> b;
[[vk::binding(2)]] StructuredBuffer<uint4> params;
[shader("compute")]
[numthreads(64, 1, 1)]
void k(uint3 id : SV_DispatchThreadID) {
    if (id.x < params[0].x * params[0].y) b[id.x] = a[id.x] * asfloat(params[0].z);
}
"""

GOOD = [
    "// slang-entries: k",  # line 1
    "// Scale a matrix.",
    "//",
    "// Bindings:",
    "//   t0: x  f32, [n][m]",  # line 5
    "//   u1: y  f32, [n][m] written",
    "//   t2: params  (n, m, scale_bits)",  # line 7
    "//",
    "// Dispatch: ceil(n * m / 64) threadgroups of 64",  # line 9
]
GOOD_SIGNATURE = "x, y, *, scale, n, m, grid"  # (grid: optional, an indirect grid)


def comment(replace: dict[int, str] | None = None, insert: dict[int, str] | None = None) -> str:
    """GOOD with 1-based lines replaced, and lines inserted before the given 1-based lines."""
    lines = list(GOOD)
    for number, text in (replace or {}).items():
        lines[number - 1] = text
    for number, text in sorted((insert or {}).items(), reverse=True):
        lines.insert(number - 1, text)
    return "\n".join(lines) + "\n"


def build(root: Path, files: dict[str, str], **options: object) -> pipeline.BuildOutput:
    shaders = root / "shaders"
    shaders.mkdir(exist_ok=True)
    for name, text in files.items():
        (shaders / name).write_text(text)
    config = parse_config(root, {"shaders": ["shaders/*.slang"], "package": "p/k", **options})
    return pipeline.build(config)


def signature(source: str, entry: str = "k") -> str:
    """The wrapper's parameter names, `*` before the keyword-only ones."""
    m = re.search(rf"^def {entry}\((.*?)^\) -> None:", source, re.S | re.M)
    assert m is not None, source
    names = [re.split(r"[:=]", p.strip())[0].strip() for p in m.group(1).split(",\n") if p.strip()]
    return ", ".join(n.rstrip(",") for n in names)


@pytest.mark.parametrize(
    ("what", "text", "line", "message", "wrapper"),
    [
        (
            "bad shape expression",
            comment(replace={5: "//   t0: x  f32, [n][__import__('os').system('x')]"}),
            5,
            r"binding 0 \(`x`\): shape dimension .*; the wrapper takes it as reflection describes it",
            "a, y, *, scale, n, m, grid",  # the Slang variable, any shape
        ),
        (
            "bad name",
            comment(replace={5: "//   t0: a.b  f32, [n][m]"}),
            5,
            r"binding 0 \(`a.b`\): the name `a.b` is not a valid identifier; "
            "the wrapper takes it as reflection describes it",
            "a, y, *, scale, n, m, grid",
        ),
        (
            "unreadable Dispatch line",
            comment(replace={9: "// Dispatch: whenever it feels right"}),
            9,
            r"cannot find a grid in `whenever it feels right`.*; "
            r"wrappers of this kernel take `grid=\(x, y, z\)` instead",
            "x, y, *, scale, n, m, grid",
        ),
        (
            "unreadable params tuple",
            comment(replace={7: "//   t2: params  (n, m, scale bits here)"}),
            7,
            r"binding 2 \(`params`\): params field `scale bits here` is not a valid identifier; "
            "the wrapper takes it as reflection describes it",
            "x, y, params, *, grid",  # the Slang array; n and m come from the shapes of x and y
        ),
        (
            "duplicate binding",
            comment(insert={6: "//   t0: z  f32, [n][m]"}),
            6,
            r"binding 0 is already documented at line 5; this line is ignored",
            GOOD_SIGNATURE,
        ),
        (
            "bad entries line",
            comment(replace={1: "// slang-entries: k bad-name"}),
            1,
            r"entry point `bad-name` is not a valid identifier; it is left out",
            GOOD_SIGNATURE,
        ),
        (
            "unreadable entries qualifier",
            comment(replace={9: "// Dispatch (k-2): ceil(n * m / 64) threadgroups of 64"}),
            9,
            r"cannot read which entries `Dispatch \(k-2\): .*` is for; the line is ignored",
            "x, y, *, scale, n, m, grid",
        ),
    ],
)
def test_an_unreadable_line_is_a_warning_naming_file_and_line(
    tmp_path: Path, what: str, text: str, line: int, message: str, wrapper: str
) -> None:
    out = build(tmp_path, {"k.slang": text + CODE})
    assert out.modules == ("k",), what
    notes = [w for w in out.warnings if w.startswith("shaders/k.slang:")]
    assert len(notes) == 1, (what, out.warnings)
    assert re.fullmatch(rf"shaders/k\.slang:{line}: warning: {message}", notes[0]), (what, notes[0])
    source = out.files["k.py"].decode()
    assert_safe_module(source)
    assert signature(source) == wrapper, what


def test_unreadable_dispatch_still_builds_a_callable_with_grid(tmp_path: Path) -> None:
    """The fallback for an unreadable grid, and the fields it used, end up in the signature."""
    out = build(tmp_path, {"k.slang": comment(replace={9: "// Dispatch: (n, m"}) + CODE})
    (note,) = out.warnings
    assert note.startswith("shaders/k.slang:9: warning: ")
    assert signature(out.files["k.py"].decode()) == "x, y, *, scale, n, m, grid"


def test_the_good_comment_has_no_warnings(tmp_path: Path) -> None:
    out = build(tmp_path, {"k.slang": comment() + CODE})
    assert out.warnings == ()
    assert signature(out.files["k.py"].decode()) == GOOD_SIGNATURE


def test_all_problems_of_all_files_in_one_run(tmp_path: Path) -> None:
    files = {
        # two unreadable lines: two warnings, built
        "a.slang": comment(
            replace={5: "//   t0: x  f32, [n][(]", 9: "// Dispatch: when ready"},
        )
        + CODE,
        # one unreadable line: built
        "b.slang": comment(replace={1: "// slang-entries: k 2nd"}) + CODE,
        # a contradiction (the dtype): an error under strict, a warning otherwise
        "c.slang": comment(replace={5: "//   t0: x  u8, [n][m]"}).replace("f32, [n][m] written", "i32 [n][m]")
        + CODE,
        # code that does not compile: always an error
        "d.slang": comment() + CODE.replace("b[id.x] =", "b[id.x] = undefined_name +"),
    }
    with pytest.raises(BuildErrors) as info:
        build(tmp_path, files)
    errors = info.value.errors
    assert {e.path for e in errors} == {"shaders/c.slang", "shaders/d.slang"}
    c_errors = [e for e in errors if isinstance(e, ShaderError) and e.path == "shaders/c.slang"]
    assert [e.line for e in c_errors] == [5, 6]
    assert any(isinstance(e, CompileError) for e in errors)

    # Without strict, the contradiction is a warning; the compile error still fails, alone.
    with pytest.raises(CompileError) as one:
        build(tmp_path, files, strict=False)
    assert one.value.path == "shaders/d.slang"

    # Without the file that cannot compile, every other file builds and every warning is reported.
    (tmp_path / "shaders" / "d.slang").unlink()
    out = build(tmp_path, {}, strict=False)
    assert out.modules == ("a", "b", "c")
    where = sorted(w.split(": ")[0] for w in out.warnings if re.match(r"shaders/\w\.slang:\d+:", w))
    assert where == [
        "shaders/a.slang:5",
        "shaders/a.slang:9",
        "shaders/b.slang:1",
        "shaders/c.slang:5",
        "shaders/c.slang:6",
    ]
    for name in ("a.py", "b.py", "c.py"):
        assert_safe_module(out.files[name].decode())


def test_a_binding_the_lines_leave_out_is_a_warning_and_comes_from_reflection(tmp_path: Path) -> None:
    """Leaving a binding out of the comment is no contradiction: the build goes on, strict or not."""
    text = comment(replace={6: "//   (y is the output)"}) + CODE
    out = build(tmp_path, {"k.slang": text})
    warned = [w for w in out.warnings if "missing from the binding lines" in w]
    assert len(warned) == 1 and warned[0].startswith("shaders/k.slang:4: warning: binding 1 (`b`)")
    assert signature(out.files["k.py"].decode()) == "x, b, *, scale, n, m, grid"
