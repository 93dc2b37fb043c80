"""Where the build cache lives: the user's cache directory by each platform's convention (or
$HATCH_SLANG_CACHE_DIR), one subdirectory per project; never the source tree by default."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from hatch_slang.compile import cache
from hatch_slang.compile.cache import default_cache_dir, project_key, user_cache_dir


def project(where: Path, name: str | None) -> Path:
    where.mkdir(parents=True)
    table = f'[project]\nname = "{name}"\nversion = "0"\n' if name is not None else "[tool.x]\n"
    (where / "pyproject.toml").write_text(table)
    return where


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.delenv("HATCH_SLANG_CACHE_DIR", raising=False)
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    return tmp_path / "home"


def test_linux_follows_xdg(home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "platform", "linux")
    assert user_cache_dir() == home / ".cache" / "hatch-slang"
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert user_cache_dir() == tmp_path / "xdg" / "hatch-slang"
    monkeypatch.setenv("XDG_CACHE_HOME", "relative/dir")  # invalid per the spec: ignored
    assert user_cache_dir() == home / ".cache" / "hatch-slang"


def test_macos_and_windows_conventions(home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "platform", "darwin")
    assert user_cache_dir() == home / "Library" / "Caches" / "hatch-slang"
    monkeypatch.setattr(sys, "platform", "win32")
    monkeypatch.setenv("LOCALAPPDATA", str(tmp_path / "Local"))
    assert user_cache_dir() == tmp_path / "Local" / "hatch-slang" / "Cache"
    monkeypatch.delenv("LOCALAPPDATA")
    assert user_cache_dir() == home / "AppData" / "Local" / "hatch-slang" / "Cache"


def test_one_directory_per_project_outside_the_tree(home: Path, tmp_path: Path) -> None:
    a = project(tmp_path / "a", "My_Kernels.Lib")
    b = project(tmp_path / "b", "other")
    assert project_key(a) == "my-kernels-lib"  # the normalized distribution name
    assert default_cache_dir(a) == user_cache_dir() / "my-kernels-lib"
    assert default_cache_dir(b) == user_cache_dir() / "other"
    assert not default_cache_dir(a).is_relative_to(a)
    # Another checkout of the same project (or its unpacked sdist) shares the directory.
    assert default_cache_dir(project(tmp_path / "elsewhere" / "a", "my-kernels-lib")) == default_cache_dir(a)


def test_a_project_without_a_readable_name_is_keyed_by_its_path(home: Path, tmp_path: Path) -> None:
    one, two = project(tmp_path / "x" / "proj", None), project(tmp_path / "y" / "proj", None)
    assert project_key(one).startswith("proj-") and project_key(one) != project_key(two)
    assert project_key(one) == project_key(one)
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "pyproject.toml").write_text("not toml [")
    assert project_key(bad).startswith("bad-")


def test_the_environment_variable_overrides_the_base(
    home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = project(tmp_path / "p", "proj")
    monkeypatch.setenv(cache.ENV, str(tmp_path / "ci-cache"))
    assert default_cache_dir(root) == (tmp_path / "ci-cache").resolve() / "proj"
