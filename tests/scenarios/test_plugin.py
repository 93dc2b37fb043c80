"""The hatchling plugin's layout and its `clean`: `hatch clean` and `hatch build --clean` remove the
generated files an editable build (or `hatch-slang build`) wrote into the source tree, and only those."""

from __future__ import annotations

import importlib
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest
from hatchling.builders.wheel import WheelBuilder

from hatch_slang.builder import pipeline
from hatch_slang.config.project import load_project_config
from hatch_slang.hatch import hooks
from hatch_slang.hatch.plugin import SlangBuildHook

from ..helpers import build_tree
from ..wheelhouse import offline_env, shared_wheelhouse


def test_hooks_module_only_registers_the_plugin() -> None:
    assert hooks.hatch_register_build_hook() is SlangBuildHook
    assert SlangBuildHook.PLUGIN_NAME == "slang"
    public = {n for n in vars(hooks) if not n.startswith("_")} - {"annotations", "hookimpl"}
    assert public == {"hatch_register_build_hook", "SlangBuildHook"}
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module("hatch_slang.hook")  # the old name is gone: plugin.py


def built_tree(root: Path) -> Path:
    """Generate `root`'s package into its source tree, as an editable build does."""
    build_tree(root)
    return load_project_config(root).package_dir


def wheel_hook(root: Path, tmp_path: Path) -> SlangBuildHook:
    hook = WheelBuilder(str(root)).get_build_hooks(str(tmp_path / "dist"))["slang"]
    assert isinstance(hook, SlangBuildHook)
    return hook


@pytest.mark.compile
def test_clean_removes_the_generated_files_and_says_which(
    package: Callable[[str], Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = package("multipkg")
    dest = built_tree(root)
    generated = sorted(pipeline.generated_files(dest))
    assert {"__init__.py", "manifest.json", "py.typed"} < set(generated)
    capsys.readouterr()
    wheel_hook(root, tmp_path).clean(["standard"])
    assert not dest.exists()  # nothing else was in it
    out = capsys.readouterr()
    said = out.out + out.err
    assert f"removed {len(generated)} generated file(s) from mypkg/kernels" in said, said
    assert all(name in said for name in generated), said
    assert (root / "mypkg" / "__init__.py").is_file()  # the project's own package stays
    wheel_hook(root, tmp_path).clean(["standard"])  # nothing left to clean: fine, and silent
    out = capsys.readouterr()
    assert "removed" not in out.out + out.err


@pytest.mark.compile
def test_clean_keeps_what_no_build_wrote(package: Callable[[str], Path], tmp_path: Path) -> None:
    root = package("multipkg")
    dest = built_tree(root)
    (dest / "notes.txt").write_text("mine\n")
    (dest / "__pycache__").mkdir(exist_ok=True)
    (dest / "__pycache__" / "__init__.cpython-311.pyc").write_bytes(b"")
    # `hatch clean` runs each target's builder with clean_only; the sdist target's hook is a no-op.
    list(WheelBuilder(str(root)).build(directory=str(tmp_path / "dist"), clean_only=True))
    assert sorted(p.name for p in dest.iterdir()) == ["notes.txt"]


def test_clean_of_a_bad_table_fails_naming_option_and_hook(
    package: Callable[[str], Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = package("multipkg")
    with (root / "pyproject.toml").open("a") as f:
        f.write("optimization = 9\n")
    with pytest.raises(SystemExit):
        wheel_hook(root, tmp_path).clean(["standard"])
    out = capsys.readouterr()
    assert "Option `optimization` for build hook `slang` must be an integer from 0 to 3" in out.out + out.err


@pytest.mark.integration
@pytest.mark.slow
@pytest.mark.compile
@pytest.mark.skipif(shutil.which("hatch") is None, reason="hatch is not installed")
def test_hatch_build_clean(
    package: Callable[[str], Path], tmp_path: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    root = package("multipkg")
    dest = built_tree(root)
    hatch = shutil.which("hatch")
    assert hatch
    env = offline_env(shared_wheelhouse(tmp_path_factory.getbasetemp()))
    env["HATCH_DATA_DIR"] = str(tmp_path / "hatch-data")
    env["HATCH_CACHE_DIR"] = str(tmp_path / "hatch-cache")
    done = subprocess.run(
        [hatch, "build", "--clean", "-t", "wheel"],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    log = done.stdout + done.stderr
    assert done.returncode == 0, log
    assert "removed" in log and "generated file(s) from mypkg/kernels" in log, log
    assert not dest.exists()  # the wheel was built without writing into the tree
    assert list((root / "dist").glob("multipkg-0.1.0-*.whl"))


def test_leaving_generated_files_out_fails_by_name_if_hatchling_changes_its_exclude_spec() -> None:
    """The one reach into hatchling's objects checks what it relies on instead of guessing."""
    import functools

    import pytest

    from hatch_slang.errors import HatchSlangError
    from hatch_slang.hatch.plugin import exclude_from_walk

    class Cached:
        @functools.cached_property
        def exclude_spec(self) -> None:
            return None

    class Plain:
        @property
        def exclude_spec(self) -> None:
            return None

    cached = Cached()
    exclude_from_walk(cached, ["/pkg/kernels/a.py"])
    assert cached.exclude_spec is not None and cached.exclude_spec.match_file("pkg/kernels/a.py")
    assert not cached.exclude_spec.match_file("pkg/other.py")
    with pytest.raises(HatchSlangError, match="exclude_spec is not a cached property"):
        exclude_from_walk(Plain(), ["/x"])
