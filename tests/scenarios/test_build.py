"""The build pipeline on real Slang: outputs, determinism, generated-code quality, failures."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from hatch_slang.builder import pipeline
from hatch_slang.config.project import load_project_config, parse_config
from hatch_slang.errors import BuildErrors, CompileError, HatchSlangError, ShaderError

pytestmark = pytest.mark.compile

BIN = Path(sys.executable).parent


def build(root: Path, **options: object) -> pipeline.BuildOutput:
    raw: dict[str, object] = {"shaders": ["shaders/*.slang"], "package": "mypkg/kernels", **options}
    return pipeline.build(parse_config(root, raw))


def test_seed_builds_wrapper_spirv_manifest(package: Callable[[str], Path]) -> None:
    out = build(package("seedpkg"))
    assert sorted(out.files) == [
        "__init__.py",
        "manifest.json",
        "moe_combine.moe_combine.spv",
        "moe_combine.py",
        "py.typed",
    ]
    manifest = json.loads(out.files["manifest.json"])
    entry = manifest["shaders"]["moe_combine"]["entries"]["moe_combine"]
    assert entry["threads"] == [256, 1, 1]
    assert entry["grid"] == ["ceil(hidden / 256)", "n_tokens"]
    assert [(b["binding"], b["name"], b["writable"]) for b in entry["bindings"]] == [
        (0, "z", False),
        (1, "sel_weight", False),
        (2, "out", True),
        (3, "params", False),
    ]
    assert manifest["compiler"].startswith("slang ")
    assert out.files["moe_combine.moe_combine.spv"][:4] == b"\x03\x02\x23\x07"
    assert out.warnings == ()


@pytest.mark.skipif(shutil.which("spirv-val") is None, reason="spirv-val not installed")
def test_shipped_spirv_passes_spirv_val(package: Callable[[str], Path], tmp_path: Path) -> None:
    spv = tmp_path / "k.spv"
    spv.write_bytes(build(package("seedpkg")).files["moe_combine.moe_combine.spv"])
    run = subprocess.run(["spirv-val", "--target-env", "vulkan1.2", str(spv)], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr + run.stdout


def test_generation_is_deterministic(package: Callable[[str], Path], tmp_path: Path) -> None:
    root = package("seedpkg")
    first = build(root).files
    assert build(root).files == first
    # The same sources elsewhere give the same bytes too (no absolute paths leak in).
    other = tmp_path / "elsewhere"
    shutil.copytree(root, other)
    assert build(other).files == first


def test_generated_code_is_ruff_formatted(package: Callable[[str], Path], tmp_path: Path) -> None:
    out = build(package("seedpkg"))
    for name in ("moe_combine.py", "__init__.py"):
        (tmp_path / name).write_bytes(out.files[name])
    run = subprocess.run(
        [BIN / "ruff", "format", "--isolated", "--check", "--diff", tmp_path], capture_output=True, text=True
    )
    assert run.returncode == 0, run.stdout + run.stderr


GOOD_CALL = """\
import numpy as np
from mypkg.kernels import moe_combine

z = np.zeros((8, 300), np.float32)
w = np.zeros(8, np.float32)
out = np.zeros((2, 300), np.float32)
moe_combine.moe_combine(z, w, out, n_used=4, accumulate=True)
moe_combine.moe_combine(z, w, out, n_used=4, accumulate=0, hidden=300, n_tokens=2)
"""
BAD_CALLS = {
    "missing": "moe_combine.moe_combine(z, w, out, accumulate=True)\n",
    "wrong type": "moe_combine.moe_combine(z, w, out, n_used='4', accumulate=True)\n",
    "positional param": "moe_combine.moe_combine(z, w, out, 4, True)\n",
    "list for array": "moe_combine.moe_combine([1.0], w, out, n_used=4, accumulate=True)\n",
}


def _mypy(root: Path, code: str) -> subprocess.CompletedProcess[str]:
    (root / "use.py").write_text(code)
    return subprocess.run(
        [BIN / "mypy", "--strict", "--no-incremental", "use.py", "mypkg"],
        cwd=root,
        capture_output=True,
        text=True,
    )


@pytest.mark.slow  # mypy --strict in subprocesses: ~12-17 s
def test_mypy_strict_accepts_good_calls_and_rejects_bad_ones(package: Callable[[str], Path]) -> None:
    root = package("seedpkg")
    pipeline.write_output(build(root), root / "mypkg" / "kernels")
    ok = _mypy(root, GOOD_CALL)
    assert ok.returncode == 0, ok.stdout
    head = GOOD_CALL.rsplit("moe_combine.moe_combine(z, w, out, n_used=4, accumulate=True)", 1)[0]
    for what, line in BAD_CALLS.items():
        bad = _mypy(root, head + line)
        assert bad.returncode == 1, f"mypy accepted the {what} call:\n{bad.stdout}"
        assert "use.py:7: error" in bad.stdout, bad.stdout


def test_syntax_error_names_file_and_line_and_writes_nothing(package: Callable[[str], Path]) -> None:
    root = package("broken")
    config = load_project_config(root)
    with pytest.raises(CompileError) as info:
        pipeline.build(config)
    assert "shaders/broken.slang:10" in str(info.value)
    assert "error[E" in str(info.value)  # the compiler's own diagnostic, as it wrote it
    assert not config.package_dir.exists()


def _write(root: Path, name: str, text: str) -> None:
    (root / "shaders").mkdir(parents=True, exist_ok=True)
    (root / "shaders" / name).write_text(text)


SCALE = """\
// Bindings:
//   {reg}0: data  f32, [n]
//   t1: params (n, factor_bits)
// Dispatch: ceil(n / 64) groups of {group}
[[vk::binding(0)]] RWStructuredBuffer<float> data;
[[vk::binding(1)]] StructuredBuffer<uint2> params;
[shader("compute")]
[numthreads(64, 1, 1)]
void scale(uint3 id : SV_DispatchThreadID) {{
    if (id.x < params[0].x) data[id.x] *= asfloat(params[0].y);
}}
"""


def test_read_only_register_on_read_write_buffer_names_binding_and_line(tmp_path: Path) -> None:
    _write(tmp_path, "scale.slang", SCALE.format(reg="t", group=64))
    with pytest.raises(ShaderError) as info:
        build(tmp_path)
    msg = str(info.value)
    assert msg.startswith("shaders/scale.slang:2:")
    assert "`data` is declared `t0`" in msg and "write `u0`" in msg
    # Not strict: a warning, and reflection's access wins.
    out = build(tmp_path, strict=False)
    assert any("declared `t0`" in w for w in out.warnings)
    manifest = json.loads(out.files["manifest.json"])
    assert manifest["shaders"]["scale"]["entries"]["scale"]["bindings"][0]["writable"] is True


def test_group_size_must_match_numthreads(tmp_path: Path) -> None:
    _write(tmp_path, "scale.slang", SCALE.format(reg="u", group=256))
    with pytest.raises(
        ShaderError, match=r"shaders/scale.slang:4: Dispatch says groups of 256 .* = 64 threads"
    ):
        build(tmp_path)


def test_several_problems_are_reported_together(tmp_path: Path) -> None:
    _write(tmp_path, "a.slang", SCALE.format(reg="t", group=64).replace("void scale", "void a"))
    _write(tmp_path, "b.slang", SCALE.format(reg="u", group=32).replace("void scale", "void b"))
    with pytest.raises(BuildErrors) as info:
        build(tmp_path)
    assert [e.path for e in info.value.errors] == ["shaders/a.slang", "shaders/b.slang"]  # type: ignore[attr-defined]


def test_compiler_crash_is_a_build_error_naming_the_shader(
    package: Callable[[str], Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    root = package("broken")
    (root / "shaders" / "broken.slang").unlink()
    monkeypatch.setenv("HATCH_SLANG_TEST_CRASH", "good.slang")
    with pytest.raises(CompileError, match=r"(?s)shaders/good.slang.*crashed"):
        pipeline.build(load_project_config(root))


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"shaders": "x"}, "Option `shaders` for build hook `slang` must be a list of non-empty strings"),
        ({"package": "my-pkg/k"}, "Option `package` for build hook `slang`"),
        ({"optimization": 7}, "Option `optimization`"),
        ({"strict": "yes"}, "Option `strict`"),
        (
            {"shader": ["x"]},
            "Unknown option(s) `shader` for build hook `slang`; known options: shaders, package",
        ),
        ({"shaders": ["nothing/*.slang"]}, "matches no file"),
    ],
)
def test_options_are_validated_with_their_names(
    tmp_path: Path, options: dict[str, object], message: str
) -> None:
    raw: dict[str, object] = {"shaders": ["*.slang"], "package": "mypkg/kernels", **options}
    (tmp_path / "k.slang").write_text("")
    with pytest.raises(HatchSlangError) as info:
        pipeline.build(parse_config(tmp_path, raw))
    assert message in str(info.value)
