"""`hatch-slang init`: the files it writes, the names and directories it refuses, and the flow
it promises: a fresh venv, `pip install -e '.[dev]'`, `hatch-slang validate` and `pytest` pass
straight away, through each front end (pip, pip without build isolation, build, uv, hatch)."""

from __future__ import annotations

import shutil
import subprocess
import sys
import tomllib
import venv
import zipfile
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from hatch_slang.cli.commands import main
from hatch_slang.cli.scaffold import InitError, check_name, init_project

from ..helpers import BuildProject, requires_device
from ..wheelhouse import offline_env, shared_wheelhouse

EXPECTED_FILES = [
    "pyproject.toml",
    "README.md",
    ".gitignore",
    "mykernels/__init__.py",
    "shaders/saxpy.slang",
    "shaders/saxpy.py",
    "tests/test_saxpy.py",
]


def files_under(root: Path) -> list[str]:
    return sorted(p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file())


def test_init_writes_the_project(tmp_path: Path) -> None:
    root = tmp_path / "mykernels"
    result = CliRunner().invoke(main, ["init", str(root)])
    assert result.exit_code == 0, result.output
    assert files_under(root) == sorted(EXPECTED_FILES)
    config = tomllib.loads((root / "pyproject.toml").read_text())
    assert config["build-system"]["requires"] == ["hatchling", "hatch-slang"]
    assert config["build-system"]["build-backend"] == "hatchling.build"
    assert config["project"]["name"] == "mykernels"
    assert config["tool"]["hatch"]["build"]["hooks"]["slang"] == {
        "shaders": ["shaders/*.slang"],
        "package": "mykernels/kernels",
    }
    assert "hatch-slang" in config["project"]["optional-dependencies"]["dev"]
    slang = (root / "shaders" / "saxpy.slang").read_text()
    assert "// Bindings:" in slang and "// Dispatch: ceil(n / 256) threadgroups of 256." in slang
    assert "def cases(rng" in (root / "shaders" / "saxpy.py").read_text()
    assert "from mykernels.kernels import saxpy" in (root / "tests" / "test_saxpy.py").read_text()
    gitignore = (root / ".gitignore").read_text().splitlines()
    for ignored in ["/mykernels/kernels/", "build/", "dist/", "__pycache__/", ".venv/", ".pytest_cache/"]:
        assert ignored in gitignore
    # The success message gives the next steps as commands.
    out = result.output
    assert f"Created project `mykernels` (import `mykernels`) in {root}" in out
    for step in ["-m venv .venv", "pip install -e '.[dev]'", "hatch-slang validate", ".venv/bin/pytest"]:
        assert step in out
    assert f"cd {root}" in out


def test_init_name_option_and_dashes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = init_project(tmp_path / "anything", "my-fast-kernels").root
    assert (root / "my_fast_kernels" / "__init__.py").is_file()
    config = tomllib.loads((root / "pyproject.toml").read_text())
    assert config["project"]["name"] == "my-fast-kernels"
    assert config["tool"]["hatch"]["build"]["hooks"]["slang"]["package"] == "my_fast_kernels/kernels"
    assert config["tool"]["hatch"]["build"]["targets"]["wheel"]["packages"] == ["my_fast_kernels"]
    assert "/my_fast_kernels/kernels/" in (root / ".gitignore").read_text()
    # The default name comes from the directory, made absolute first ("." included).
    here = tmp_path / "from-dir"
    here.mkdir()
    monkeypatch.chdir(here)
    result = CliRunner().invoke(main, ["init"])
    assert result.exit_code == 0, result.output
    assert (here / "from_dir" / "__init__.py").is_file()
    assert "Created project `from-dir` (import `from_dir`) in .:" in result.output
    assert "cd " not in result.output


@pytest.mark.parametrize(
    ("name", "why"),
    [
        ("1kernels", "Python identifier"),
        ("my.kernels", "Python identifier"),
        ("my kernels", "Python identifier"),
        ("größe", "Python identifier"),
        ("-kernels", "Python identifier"),
        ("kernels-", "Python identifier"),
        ("_private", "Python identifier"),
        ("", "Python identifier"),
        ("class", "keyword"),
        ("os", "standard library"),
        ("json", "standard library"),
        ("numpy", "a module the project uses"),
        ("slangrt", "a module the project uses"),
        ("hatch-slang", "a module the project uses"),
        ("tests", "a module the project uses"),
    ],
)
def test_bad_names_are_refused_writing_nothing(tmp_path: Path, name: str, why: str) -> None:
    with pytest.raises(InitError, match=why):
        check_name(name)
    result = CliRunner().invoke(main, ["init", str(tmp_path / "p"), "--name", name])
    assert result.exit_code == 1
    assert why in result.output and repr(name) in result.output
    assert not (tmp_path / "p").exists()


@pytest.mark.parametrize("name", ["k", "mykernels", "my-kernels", "My_Kernels2", "match", "k_2"])
def test_good_names(name: str) -> None:
    assert check_name(name) == name.replace("-", "_")


def test_bad_directory_name_asks_for_name(tmp_path: Path) -> None:
    result = CliRunner().invoke(main, ["init", str(tmp_path / "2025-kernels")])
    assert result.exit_code == 1
    assert "directory name '2025-kernels'" in result.output and "--name" in result.output
    result = CliRunner().invoke(main, ["init", str(tmp_path / "2025-kernels"), "--name", "k2025"])
    assert result.exit_code == 0, result.output
    assert (tmp_path / "2025-kernels" / "k2025" / "__init__.py").is_file()


def test_non_empty_directory_is_refused_unless_force(tmp_path: Path) -> None:
    root = tmp_path / "mykernels"
    root.mkdir()
    (root / "notes.txt").write_text("mine")
    (root / "pyproject.toml").write_text("# mine\n")
    result = CliRunner().invoke(main, ["init", str(root)])
    assert result.exit_code == 1
    assert "is not empty (it holds notes.txt, pyproject.toml)" in result.output
    assert "--force" in result.output
    assert files_under(root) == ["notes.txt", "pyproject.toml"]
    assert (root / "pyproject.toml").read_text() == "# mine\n"

    result = CliRunner().invoke(main, ["init", str(root), "--force"])
    assert result.exit_code == 0, result.output
    assert files_under(root) == sorted([*EXPECTED_FILES, "notes.txt"])
    assert (root / "notes.txt").read_text() == "mine"  # only the project's own files are written
    assert "[tool.hatch.build.hooks.slang]" in (root / "pyproject.toml").read_text()
    assert "(overwritten)" in next(line for line in result.output.splitlines() if "pyproject.toml" in line)


def test_repository_and_venv_count_as_empty(tmp_path: Path) -> None:
    root = tmp_path / "mykernels"
    (root / ".git").mkdir(parents=True)
    (root / ".venv").mkdir()
    result = CliRunner().invoke(main, ["init", str(root)])
    assert result.exit_code == 0, result.output
    assert "-m venv .venv" not in result.output  # there is one already


def test_a_file_in_the_way_is_refused(tmp_path: Path) -> None:
    (tmp_path / "afile").write_text("x")
    result = CliRunner().invoke(main, ["init", str(tmp_path / "afile"), "--name", "k"])
    assert result.exit_code != 0
    assert (tmp_path / "afile").read_text() == "x"
    root = tmp_path / "mykernels"
    root.mkdir()
    (root / "shaders").write_text("not a directory")
    with pytest.raises(InitError, match="in the way"):
        init_project(root, force=True)
    assert files_under(root) == ["shaders"]


@pytest.mark.compile
@requires_device
def test_generated_kernel_builds_checks_and_matches_its_reference(
    tmp_path: Path, build_project: BuildProject
) -> None:
    """In process (no venv): the kernel compiles strictly, its reference cases and its test pass."""
    from hatch_slang.config.project import load_project_config
    from hatch_slang.validate import validate

    root = init_project(tmp_path / "mykernels").root
    saxpy = build_project(root).kernels("saxpy")
    x = np.arange(300, dtype=np.float32)
    y = np.ones(300, dtype=np.float32)
    saxpy.saxpy(x, y, alpha=2.0)
    assert np.array_equal(y, 2 * np.arange(300, dtype=np.float32) + 1)
    rows = list(validate(load_project_config(root), None, 0))
    assert len(rows) == 5 and all(r.ok for r in rows), rows
    assert "ok: 1 shader(s)" in CliRunner().invoke(main, ["check", "--root", str(root)]).output


# --- the flow, through each front end, in fresh venvs that see only an offline wheelhouse ---


def run(*args: str | Path, cwd: Path, env: dict[str, str]) -> str:
    done = subprocess.run(
        [str(a) for a in args], cwd=cwd, env=env, capture_output=True, text=True, timeout=900
    )
    assert done.returncode == 0, f"{args}\n{done.stdout}\n{done.stderr}"
    return done.stdout + done.stderr


@pytest.fixture
def wheelhouse(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return shared_wheelhouse(tmp_path_factory.getbasetemp())


@pytest.fixture
def project(tmp_path: Path) -> Path:
    return init_project(tmp_path / "mykernels").root


def fresh_venv(root: Path) -> Path:
    venv.create(root / ".venv", with_pip=True)
    return root / ".venv" / "bin"


def validate_and_test(bin_dir: Path, root: Path, env: dict[str, str]) -> None:
    assert (root / "mykernels" / "kernels" / "saxpy.py").is_file()  # the editable build wrote it
    out = run(bin_dir / "hatch-slang", "validate", cwd=root, env=env)
    assert "5/5 ok" in out, out
    out = run(bin_dir / "pytest", "-q", cwd=root, env=env)
    assert "6 passed" in out, out
    run(bin_dir / "hatch-slang", "check", cwd=root, env=env)


@pytest.mark.parametrize("isolation", ["find-links", "no-build-isolation"])
@pytest.mark.integration
@pytest.mark.slow
@requires_device
def test_fresh_venv_pip_install_validate_pytest(project: Path, wheelhouse: Path, isolation: str) -> None:
    env = offline_env(wheelhouse)
    bin_dir = fresh_venv(project)
    pip = [bin_dir / "python", "-m", "pip", "install", "--quiet"]
    if isolation == "find-links":
        # As in the README: pip finds hatch-slang (for the isolated build) and hatch-slang-runtime
        # through PIP_FIND_LINKS.
        run(*pip, "-e", ".[dev]", cwd=project, env=env)
    else:
        # hatch-slang installed first; the build uses this environment's hatchling and hatch-slang
        # (and editables, which hatchling's editable builds need); then no wheelhouse is needed.
        run(*pip, "--find-links", wheelhouse, "hatch-slang", "editables", "pytest", cwd=project, env=env)
        no_links = {k: v for k, v in env.items() if k != "PIP_FIND_LINKS"}
        run(*pip, "--no-build-isolation", "-e", ".[dev]", cwd=project, env=no_links)
    validate_and_test(bin_dir, project, env)


@pytest.mark.integration
@pytest.mark.slow
def test_python_m_build_with_pip_find_links(project: Path, wheelhouse: Path, tmp_path: Path) -> None:
    env = offline_env(wheelhouse)
    run(sys.executable, "-m", "build", "--outdir", tmp_path / "dist", ".", cwd=project, env=env)
    wheel = next((tmp_path / "dist").glob("mykernels-0.1.0-py3-none-any.whl"))
    names = zipfile.ZipFile(wheel).namelist()
    assert "mykernels/kernels/saxpy.py" in names and "mykernels/kernels/saxpy.saxpy.spv" in names


@pytest.mark.integration
@pytest.mark.slow
@requires_device
@pytest.mark.skipif(shutil.which("uv") is None, reason="uv is not installed")
def test_uv_with_uv_find_links(project: Path, wheelhouse: Path, tmp_path: Path) -> None:
    env = offline_env(wheelhouse, UV_PYTHON_DOWNLOADS="never")
    uv = shutil.which("uv")
    assert uv
    run(uv, "build", "--out-dir", tmp_path / "dist", cwd=project, env=env)
    assert (tmp_path / "dist" / "mykernels-0.1.0-py3-none-any.whl").is_file()
    run(uv, "venv", "--quiet", "--python", sys.executable, cwd=project, env=env)
    run(uv, "pip", "install", "--quiet", "-e", ".[dev]", cwd=project, env=env)
    validate_and_test(project / ".venv" / "bin", project, env)


@pytest.mark.integration
@pytest.mark.slow
@pytest.mark.skipif(shutil.which("hatch") is None, reason="hatch is not installed")
def test_hatch_build_with_uv_find_links(project: Path, wheelhouse: Path) -> None:
    env = offline_env(wheelhouse, UV_PYTHON_DOWNLOADS="never")
    hatch = shutil.which("hatch")
    assert hatch
    run(hatch, "build", "-t", "wheel", cwd=project, env=env)
    assert (project / "dist" / "mykernels-0.1.0-py3-none-any.whl").is_file()
