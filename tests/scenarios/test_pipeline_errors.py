"""Every problem of every file in one run; the compiler's output read defensively.

- A build reads, parses, compiles and checks every file it can, and reports all the problems
  together, in file order: a bad comment in one file no longer hides the others' problems
  until the next round.
- Whatever goes wrong reading one file's reflection becomes a ShaderError for that file.
- Slang's reflection JSON holds the shader's string literals with C escapes (`\\a`, octal):
  the compiler driver repairs them, so that the JSON parses.
- A build that ends right after compiling exits without the "Exception ignored in: <module
  'threading'> ... Bad file descriptor" noise that the compiler pool's shutdown caused.
"""

from __future__ import annotations

import json
import os
import struct
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from hatch_slang.builder import pipeline
from hatch_slang.compile.compiler import (
    CompiledEntry,
    CompileJob,
    CompileOptions,
    CompileResult,
    CompilerPool,
    repair_json,
)
from hatch_slang.compile.discover import Shader, discover
from hatch_slang.config.project import BuildConfig, parse_config
from hatch_slang.errors import BuildErrors, CompileError, HatchSlangError, ShaderError
from hatch_slang.spec.merge import ShaderSpec, build_spec

pytestmark = pytest.mark.compile

HATCH_SLANG = Path(sys.executable).parent / "hatch-slang"

KERNEL = """\
// Bindings:
//   u0: data    f32, `[n]`
//   t1: params  (n)
//
// Dispatch: ceil(n / 64) threadgroups of {group}.
[[vk::binding(0)]] RWStructuredBuffer<float> data;
[[vk::binding(1)]] StructuredBuffer<uint> params;
[shader("compute")]
[numthreads(64, 1, 1)]
void {name}(uint3 id : SV_DispatchThreadID) {{ if (id.x < params[0]) data[id.x] = {body}; }}
"""


def kernel(name: str, *, group: int = 64, body: str = "data[id.x] * 2.0f") -> str:
    return KERNEL.format(name=name, group=group, body=body)


def project(root: Path, files: dict[str, str | bytes]) -> BuildConfig:
    (root / "shaders").mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        path = root / "shaders" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(text, bytes):
            path.write_bytes(text)
        else:
            path.write_text(text)
    return parse_config(root, {"shaders": ["shaders/**/*.slang"], "package": "p/k"})


def errors_of(config: BuildConfig) -> list[HatchSlangError]:
    with pytest.raises(BuildErrors) as info:
        pipeline.build(config)
    return info.value.errors


def where(e: HatchSlangError) -> str:
    assert isinstance(e, ShaderError | CompileError), e
    return e.path


# -- all files, all problems, one run --------------------------------------------------------------


def test_every_problem_of_every_file_in_one_run(tmp_path: Path) -> None:
    config = project(
        tmp_path,
        {
            # a: good, and built (the others' problems are still all listed)
            "a_good.slang": kernel("a_good"),
            # b: compiles with an error
            "b_syntax.slang": kernel("b_syntax", body="data[id.x] * ;"),
            # c: parses and compiles, but disagrees with its code
            "c_group.slang": kernel("c_group", group=32),
            # d: its entry points cannot be told (fails before compiling)
            "d_entries.slang": "float helper(float x) { return x; }\n",
            # e: not UTF-8 (fails before parsing)
            "e_bytes.slang": b"// \xff\xfe\n",
            # sub/a_good: the same module name as a_good
            "sub/a_good.slang": kernel("a_good"),
        },
    )
    errors = errors_of(config)
    assert [where(e) for e in errors] == [
        "shaders/b_syntax.slang",
        "shaders/c_group.slang",
        "shaders/d_entries.slang",
        "shaders/e_bytes.slang",
        "shaders/sub/a_good.slang",
    ]
    b, c, d, e, sub = errors
    assert isinstance(b, CompileError) and "b_syntax.slang:10" in str(b)
    assert isinstance(c, ShaderError) and "Dispatch says groups of 32" in str(c)
    assert "cannot tell the entry points" in str(d)
    assert "not UTF-8" in str(e)
    assert "module name `a_good` also used by shaders/a_good.slang" in str(sub)
    # The same problems, in the same order, every time.
    assert [str(e) for e in errors_of(config)] == [str(e) for e in errors]


def test_a_file_that_fails_before_compiling_does_not_stop_the_others(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = project(
        tmp_path,
        {"a.slang": "void helper() {}\n", "b.slang": kernel("b", body="x"), "c.slang": kernel("c")},
    )
    compiled: list[str] = []
    real = pipeline.compile_shaders

    def spy(config: BuildConfig, shaders: list[Shader], **kw: object) -> object:
        compiled.extend(s.rel for s in shaders)
        return real(config, shaders, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(pipeline, "compile_shaders", spy)
    errors = errors_of(config)
    assert compiled == ["shaders/b.slang", "shaders/c.slang"]
    assert [where(e) for e in errors] == ["shaders/a.slang", "shaders/b.slang"]
    assert isinstance(errors[0], ShaderError) and isinstance(errors[1], CompileError)


def test_one_problem_is_raised_as_itself(tmp_path: Path) -> None:
    config = project(tmp_path, {"a.slang": kernel("a", group=32), "b.slang": kernel("b")})
    with pytest.raises(ShaderError, match=r"^shaders/a.slang:5: Dispatch says groups of 32"):
        pipeline.build(config)


# -- a safety net around reading the compiler's output ---------------------------------------------


@pytest.mark.parametrize(
    "exc",
    [
        KeyError("parameters"),
        ValueError("bad"),
        json.JSONDecodeError("Invalid \\escape", "{}", 1),
        struct.error("unpack requires a buffer of 4 bytes"),
        IndexError("list index out of range"),
    ],
)
def test_unexpected_failures_reading_reflection_become_shader_errors(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, exc: Exception
) -> None:
    config = project(
        tmp_path, {"a.slang": kernel("a"), "b.slang": kernel("b"), "c.slang": kernel("c", group=32)}
    )

    def flaky(shader: Shader, *args: object, **kw: object) -> ShaderSpec:
        if shader.module == "b":
            raise exc
        return build_spec(shader, *args, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(pipeline, "build_spec", flaky)
    errors = errors_of(config)
    assert [where(e) for e in errors] == ["shaders/b.slang", "shaders/c.slang"]
    b = errors[0]
    assert isinstance(b, ShaderError) and b.line is None
    assert b.message.startswith(f"could not read the compiler's reflection: {type(exc).__name__}")
    assert b.__cause__ is exc


def test_garbage_from_the_compiler_is_a_shader_error(tmp_path: Path) -> None:
    config = project(tmp_path, {"a.slang": kernel("a")})
    [shader] = discover(tmp_path, ["shaders/*.slang"])
    [good], _ = pipeline.compile_shaders(config, [shader])
    [entry] = good.entries
    broken = [
        CompiledEntry("a", entry.spirv, "{not json"),
        CompiledEntry("a", entry.spirv, '{"parameters": 3}'),
        CompiledEntry("a", entry.spirv, "[]"),
        CompiledEntry("a", entry.spirv, '{"parameters": [{"binding": {}}]}'),
        CompiledEntry("a", entry.spirv[:10], entry.reflection),  # truncated SPIR-V
    ]
    for compiled in broken:
        result = CompileResult(shader.rel, (compiled,), good.dependencies, compiler=good.compiler)
        with pytest.raises(ShaderError) as info:
            pipeline._spec(shader, result, strict=True)
        assert info.value.path == "shaders/a.slang"
        assert info.value.message.startswith("could not read the compiler's"), info.value


# -- reflection JSON with C escapes ----------------------------------------------------------------

PRINTF = """\
[[vk::binding(0)]] RWStructuredBuffer<float> data;
[shader("compute")]
[numthreads(64, 1, 1)]
void chatty(uint3 id : SV_DispatchThreadID)
{
    if (id.x == 0) { printf("bell\\a quote\\' tab\\t slash\\\\ caf\\u00e9 é %d\\n", 1); }
    data[id.x] = 1.0f;
}
"""


def test_repair_json_escapes_only_stray_backslashes() -> None:
    valid = r'{"a\\b": "x\"y\n\u00e9\/"}'
    assert repair_json(valid) == valid
    assert json.loads(repair_json(r'{"\a\303\251\'": 1, "ok\t": 2}')) == {r"\a\303\251\'": 1, "ok\t": 2}
    assert json.loads(repair_json(r'{"\\\q": 1}')) == {r"\\q": 1}


def test_reflection_of_a_shader_with_string_escapes_is_valid_json(tmp_path: Path) -> None:
    (tmp_path / "chatty.slang").write_text(PRINTF, encoding="utf-8")
    with CompilerPool(workers=1) as pool:
        [result] = pool.compile([CompileJob("chatty.slang", ("chatty",), CompileOptions(), str(tmp_path))])
    assert result.error is None, result.error
    reflection = result.entries[0].reflection
    assert "\\\\a" in reflection  # Slang's `\a`, escaped: it is not JSON
    assert json.loads(reflection)["entryPoints"][0]["name"] == "chatty"


def test_a_shader_with_string_escapes_builds(tmp_path: Path) -> None:
    config = project(tmp_path, {"chatty.slang": PRINTF})
    out = pipeline.build(config)
    assert "chatty.chatty.spv" in out.files


# -- a clean exit --------------------------------------------------------------------------------


@pytest.mark.slow  # repeated CLI builds: ~8 s
def test_cli_builds_exit_without_threading_noise(package: Callable[[str], Path]) -> None:
    """The compiler pool used to be left to shut down on its own; a build ending right after it
    (a compile error ends it fastest) raced the interpreter's exit: one run in twenty printed
    "Exception ignored in: <module 'threading'> ... OSError: [Errno 9] Bad file descriptor"."""
    root = package("broken")
    env = {k: v for k, v in os.environ.items() if k != "HATCH_SLANG_CACHE_DIR"}
    for k in range(int(os.environ.get("HATCH_SLANG_EXIT_RUNS", "10"))):
        flag = "--no-cache" if k % 2 else "-q"
        run = subprocess.run(
            [str(HATCH_SLANG), "build", flag, "--root", str(root)],
            capture_output=True,
            text=True,
            env=env,
            timeout=120,
            check=False,
        )
        assert run.returncode == 1, run.stderr
        assert "broken.slang" in run.stderr
        for noise in ("Exception ignored", "Bad file descriptor", "Traceback"):
            assert noise not in run.stderr, f"run {k}:\n{run.stderr}"


def test_closing_the_compiler_pool_leaves_no_thread_or_worker_behind(tmp_path: Path) -> None:
    """What keeps the exit clean: once the pool is closed its workers have exited and its manager
    thread (whose wake-up pipe the interpreter's exit hook writes to) has finished."""
    import multiprocessing
    import threading

    (tmp_path / "chatty.slang").write_text(PRINTF, encoding="utf-8")
    before = set(threading.enumerate())
    with CompilerPool(workers=2) as pool:
        pool.compile([CompileJob("chatty.slang", ("chatty",), CompileOptions(), str(tmp_path))] * 2)
        assert multiprocessing.active_children()
    assert set(threading.enumerate()) <= before
    assert not multiprocessing.active_children()
