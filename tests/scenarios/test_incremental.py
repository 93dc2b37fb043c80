"""Incremental builds: the cache, what invalidates it, and what a rebuild writes."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from hatch_slang.builder import pipeline
from hatch_slang.compile.cache import BuildCache, default_cache_dir
from hatch_slang.config.project import BuildConfig, load_project_config, parse_config
from hatch_slang.errors import CompileError

from ..helpers import PACKAGES, REPO

pytestmark = pytest.mark.compile

HATCH_SLANG = Path(sys.executable).parent / "hatch-slang"


@pytest.fixture(autouse=True)
def _project_cache(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test project keeps its own cache (in the test's user cache directory, see conftest)."""
    monkeypatch.delenv("HATCH_SLANG_CACHE_DIR", raising=False)


def build(root: Path, **kw: object) -> pipeline.BuildOutput:
    config = load_project_config(root)
    output = pipeline.build(config, cache=pipeline.open_cache(config), **kw)  # type: ignore[arg-type]
    pipeline.write_output(output, config.package_dir)
    return output


def mtimes(directory: Path) -> dict[str, int]:
    return {p.name: p.stat().st_mtime_ns for p in sorted(directory.iterdir())}


def test_noop_rebuild_compiles_and_rewrites_nothing(package: Callable[[str], Path]) -> None:
    root = package("multipkg")
    first = build(root)
    assert sorted(first.compiled) == ["shaders/offset.slang", "shaders/scale.slang", "shaders/square.slang"]
    kernels = root / "mypkg" / "kernels"
    before = mtimes(kernels)
    time.sleep(0.01)
    config = load_project_config(root)
    again = pipeline.build(config, cache=pipeline.open_cache(config))
    assert again.compiled == ()
    assert again.files == first.files
    assert pipeline.write_output(again, kernels) == []
    assert mtimes(kernels) == before


def test_touching_an_include_rebuilds_only_its_dependents(package: Callable[[str], Path]) -> None:
    root = package("multipkg")
    build(root)
    common = root / "shaders" / "common.slangh"
    os.utime(common)  # a touch alone changes nothing: the cache goes by content
    assert build(root).compiled == ()
    common.write_text(common.read_text() + "// edited\n")
    assert sorted(build(root).compiled) == ["shaders/offset.slang", "shaders/scale.slang"]
    assert build(root).compiled == ()


def test_editing_one_shader_rebuilds_it_alone_and_updates_its_files(package: Callable[[str], Path]) -> None:
    root = package("multipkg")
    build(root)
    square = root / "shaders" / "square.slang"
    square.write_text(square.read_text().replace("v * v", "v * v + 1.0f"))
    config = load_project_config(root)
    output = pipeline.build(config, cache=pipeline.open_cache(config))
    assert output.compiled == ("shaders/square.slang",)
    assert pipeline.write_output(output, config.package_dir) == ["manifest.json", "square.square.spv"]


def test_options_and_compiler_are_part_of_the_key(package: Callable[[str], Path]) -> None:
    root = package("multipkg")
    build(root)
    base = load_project_config(root)
    raw = {"shaders": list(base.shaders), "package": base.package, "optimization": 0}
    o0 = parse_config(root, raw)
    assert len(pipeline.build(o0, cache=pipeline.open_cache(o0)).compiled) == 3
    assert pipeline.build(o0, cache=pipeline.open_cache(o0)).compiled == ()
    other = BuildCache(default_cache_dir(root), root, "another-compiler:1", base.compile)
    assert len(pipeline.build(base, cache=other).compiled) == 3
    assert pipeline.build(base, cache=pipeline.open_cache(base)).compiled == ()  # -O2 entries are still there


def test_templates_change_the_output_without_recompiling(
    package: Callable[[str], Path], tmp_path: Path
) -> None:
    root = package("multipkg")
    first = build(root)
    templates = tmp_path / "templates"
    shutil.copytree(REPO / "templates", templates)
    module = templates / "module.py.tmpl"
    module.write_text(module.read_text().replace("Do not edit", "Do NOT edit"))
    base = load_project_config(root)
    custom = BuildConfig(base.root, base.shaders, base.package, base.compile, templates, base.strict)
    output = pipeline.build(custom, cache=pipeline.open_cache(custom))
    assert output.compiled == ()
    assert b"Do NOT edit" in output.files["scale.py"] and output.files["scale.py"] != first.files["scale.py"]


def test_a_damaged_cache_entry_is_a_miss(package: Callable[[str], Path]) -> None:
    root = package("multipkg")
    build(root)
    entries = sorted(default_cache_dir(root).glob("*/*.json"))
    assert len(entries) == 3
    entries[0].write_bytes(b"not an entry")
    entries[1].write_bytes(json.dumps({"format": "something else"}).encode())
    assert len(build(root).compiled) == 2
    assert build(root).compiled == ()


def test_cache_is_portable_between_checkouts(
    package: Callable[[str], Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HATCH_SLANG_CACHE_DIR", str(tmp_path / "shared-cache"))
    root = package("multipkg")
    first = build(root)
    elsewhere = tmp_path / "elsewhere"
    shutil.copytree(root, elsewhere, ignore=shutil.ignore_patterns("kernels"))
    second = build(elsewhere)
    assert second.compiled == ()
    assert second.files == first.files
    assert not (root / "build").exists()


def test_failures_are_not_cached(package: Callable[[str], Path]) -> None:
    root = package("multipkg")
    build(root)
    scale = root / "shaders" / "scale.slang"
    good = scale.read_text()
    scale.write_text(good.replace("asfloat(params[0].y)", "asfloat(params[0].y) *"))
    for _ in range(2):
        with pytest.raises(CompileError, match=r"shaders/scale.slang:\d+"):
            build(root)
    scale.write_text(good)
    assert build(root).compiled == ()  # the good version's entry was never replaced


def test_removed_shader_files_are_removed_from_the_package(package: Callable[[str], Path]) -> None:
    root = package("multipkg")
    build(root)
    kernels = root / "mypkg" / "kernels"
    (kernels / "notes.txt").write_text("mine")
    (root / "shaders" / "square.slang").unlink()
    build(root)
    assert sorted(p.name for p in kernels.iterdir()) == [
        "__init__.py",
        "manifest.json",
        "notes.txt",  # not generated: left alone
        "offset.offset.spv",
        "offset.py",
        "py.typed",
        "scale.py",
        "scale.scale.spv",
    ]


def test_building_some_shaders_keeps_the_others(package: Callable[[str], Path]) -> None:
    root = package("multipkg")
    full = build(root)
    config = load_project_config(root)
    square = root / "shaders" / "square.slang"
    square.write_text(square.read_text().replace("v * v", "v * v * v"))
    scale = root / "shaders" / "scale.slang"
    scale.write_text(scale.read_text().replace("asfloat(params[0].y)", "asfloat(params[0].y) *"))  # broken
    output = pipeline.build(
        config, only=["square"], keep_from=config.package_dir, cache=pipeline.open_cache(config)
    )
    assert output.compiled == ("shaders/square.slang",)
    assert output.kept == ("offset", "scale")
    assert output.files["scale.py"] == full.files["scale.py"]
    assert output.files["square.square.spv"] != full.files["square.square.spv"]
    assert sorted(output.files) == sorted(full.files)


def test_parallel_compile_uses_several_workers(package: Callable[[str], Path]) -> None:
    from hatch_slang.compile.compiler import CompileJob, CompilerPool

    root = package("multipkg")
    config = load_project_config(root)
    jobs = [
        CompileJob(f"shaders/{n}.slang", (n,), config.compile, str(root))
        for n in ("scale", "offset", "square")
    ]
    with CompilerPool(workers=2) as pool:
        results = pool.compile(jobs * 4)
        assert pool._pool is not None and len(pool._pool._processes) == 2  # type: ignore[attr-defined]
    assert [r.path for r in results] == [j.path for j in jobs * 4]  # in job order
    assert all(r.error is None and r.compiler for r in results)


def _corpus(root: Path, n: int) -> None:
    (root / "shaders").mkdir(parents=True)
    (root / "mypkg").mkdir()
    (root / "mypkg" / "__init__.py").write_text("")
    (root / "pyproject.toml").write_text(
        '[project]\nname = "corpus"\nversion = "0"\n\n'
        '[tool.hatch.build.hooks.slang]\nshaders = ["shaders/*.slang"]\npackage = "mypkg/kernels"\n'
    )
    text = (PACKAGES / "multipkg" / "shaders" / "square.slang").read_text()
    for k in range(n):
        (root / "shaders" / f"k{k:03}.slang").write_text(text.replace("square", f"k{k:03}"))


@pytest.mark.slow
def test_noop_cli_build_of_25_shaders_compiles_and_writes_nothing(tmp_path: Path) -> None:
    # How long it takes is a benchmark's business (no timed assertions in tests); the work is counted.
    _corpus(tmp_path, 25)
    cold = subprocess.run([HATCH_SLANG, "build"], cwd=tmp_path, capture_output=True, text=True)
    assert cold.returncode == 0, cold.stderr
    assert "25 compiled" in cold.stdout
    for _ in range(2):
        run = subprocess.run([HATCH_SLANG, "build"], cwd=tmp_path, capture_output=True, text=True)
        assert run.returncode == 0, run.stderr
        assert "0 compiled" in run.stdout and "(0 file(s) written)" in run.stdout


def test_temporary_files_of_killed_cache_writes_are_swept(package: Callable[[str], Path]) -> None:
    root = package("multipkg")
    build(root)
    slots = sorted(p.parent for p in default_cache_dir(root).glob("*/*.json"))
    old, fresh = slots[0] / ".tmp-killed", slots[0] / ".tmp-running"
    old.write_bytes(b"half an entry")
    fresh.write_bytes(b"a write in progress")
    an_hour_ago = time.time() - 3700
    os.utime(old, (an_hour_ago, an_hour_ago))
    for entry in default_cache_dir(root).glob("*/*.json"):
        entry.write_bytes(b"damaged")  # every shader is compiled and stored again
    build(root)
    assert not old.exists()  # an hour old: a build that died mid-write left it
    assert fresh.exists()  # young: it may belong to a build running right now


def test_own_templates_need_not_know_about_last_calls(package: Callable[[str], Path], tmp_path: Path) -> None:
    # A function template written before wrappers kept their last calls still gives modules that
    # define what the generated bodies use: the generator writes the LastCall lines itself.
    root = package("multipkg")
    templates = tmp_path / "templates"
    shutil.copytree(REPO / "templates", templates)
    (templates / "function.py.tmpl").write_text(
        '\n\ndef $name($parameters) -> None:\n    """$docstring"""\n$body\n'
    )
    base = load_project_config(root)
    custom = BuildConfig(base.root, base.shaders, base.package, base.compile, templates, base.strict)
    source = pipeline.build(custom, cache=pipeline.open_cache(custom)).files["scale.py"].decode()
    compile(source, "scale.py", "exec")
    assert "_scale_last = _c.LastCall()" in source
    assert "_scale_last.repeat(" in source
