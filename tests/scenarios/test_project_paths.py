"""Every path-valued option names something inside the project, or says why not.

Shader globs and the package path are refused when they would leave the project root (a ``..``
part, an absolute path, a symbolic link to elsewhere) or cannot be read as a path (a backslash,
``~``, a drive letter, nothing), naming the option. Include directories, templates and the files a
shader includes may lie outside: a warning (an sdist will not contain them), the build goes on. A
template with a placeholder code generation does not fill is a clean error naming the template's
file and line and the placeholder.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner

from hatch_slang.cli.commands import main
from hatch_slang.config.project import load_project_config
from hatch_slang.errors import ConfigError

from ..helpers import REPO
from .test_cli_options import configure


def _build(root: Path) -> tuple[int, str]:
    result = CliRunner().invoke(main, ["build", "--root", str(root)])
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    return result.exit_code, result.output


@pytest.fixture
def project(package: Callable[[str], Path], tmp_path: Path) -> Path:
    """multipkg, with a shader and a header outside its root (beside it, in tmp_path/outside)."""
    root = package("multipkg")
    outside = tmp_path / "outside"
    (outside / "pk").mkdir(parents=True)
    shutil.copy(root / "shaders" / "square.slang", outside / "far.slang")
    shutil.copy(root / "shaders" / "common.slangh", outside / "far.slangh")
    return root


REFUSED = [
    (
        'shaders = ["../outside/*.slang"]',
        "Option `shaders` for build hook `slang`: glob `../outside/*.slang` has a `..`",
    ),
    (
        'shaders = ["shaders/../../outside/far.slang"]',
        "glob `shaders/../../outside/far.slang` has a `..` part",
    ),
    ('shaders = ["/etc/*.slang"]', "glob `/etc/*.slang` is absolute"),
    ('shaders = ["~/shaders/*.slang"]', "glob `~/shaders/*.slang` starts with `~`, which is not expanded"),
    ('shaders = ["shaders\\\\*.slang"]', "holds a backslash: write paths with `/`"),
    ('shaders = ["C:/shaders/*.slang"]', "starts with a drive letter"),
    ('shaders = [" "]', "glob ` ` is empty"),
    ('shaders = [""]', "Option `shaders` for build hook `slang` must be a list of non-empty strings"),
    (
        'overrides = [{shaders = ["../outside/far.slang"], defines = {X = "1"}}]',
        "Option `overrides[0].shaders` for build hook `slang`: glob `../outside/far.slang` has a `..` part",
    ),
    (
        'package = "../../outside/pk"',
        "Option `package` for build hook `slang` must be a path of Python identifiers such as "
        '"mypkg/kernels", not "../../outside/pk" (it has a `..` part)',
    ),
    ('package = "/tmp/pk"', 'not "/tmp/pk" (it is absolute)'),
    ('package = "mypkg\\\\kernels"', 'not "mypkg\\kernels" (it holds a backslash'),
    ('package = "~/pk"', 'not "~/pk" (it starts with `~`'),
    ('package = "mypkg//kernels"', 'not "mypkg//kernels"'),
    ('package = "mypkg/class"', 'not "mypkg/class"'),
    ('package = "."', 'not "."'),
    ('include-dirs = ["~/inc"]', "Option `include-dirs` for build hook `slang`: `~/inc` starts with `~`"),
    (
        'include-dirs = ["inc\\\\sub"]',
        "Option `include-dirs` for build hook `slang`: `inc\\sub` holds a backslash",
    ),
    ('templates = " "', "Option `templates` for build hook `slang`: ` ` is empty"),
]


@pytest.mark.parametrize(("line", "message"), REFUSED)
def test_a_path_that_leaves_the_project_or_is_no_path_is_refused_naming_the_option(
    project: Path, line: str, message: str
) -> None:
    configure(project, line)
    with pytest.raises(ConfigError) as e:
        load_project_config(project)
    assert message in str(e.value)
    code, output = _build(project)
    assert code == 1 and message in output and "Traceback" not in output, output
    assert not (project / "mypkg" / "kernels").exists()
    assert not (project.parent / "outside" / "pk" / "manifest.json").exists()


def test_a_shader_linked_from_outside_is_refused(project: Path) -> None:
    os.symlink(project.parent / "outside" / "far.slang", project / "shaders" / "far.slang")
    code, output = _build(project)
    assert code == 1, output
    assert (
        "glob `shaders/*.slang` matches `shaders/far.slang`, which leads outside the project root" in output
    )
    assert not (project / "mypkg" / "kernels").exists()


def test_a_package_directory_linked_to_outside_is_refused(project: Path) -> None:
    os.symlink(project.parent / "outside", project / "mypkg" / "kernels")
    code, output = _build(project)
    assert code == 1, output
    assert 'Option `package` for build hook `slang`: "mypkg/kernels" leads outside the project root' in output
    assert not [p for p in (project.parent / "outside").iterdir() if p.suffix in (".py", ".spv", ".json")]


def test_the_package_may_be_dotted_or_end_in_a_slash(project: Path) -> None:
    for spelling in ("mypkg.kernels", "mypkg/kernels/"):
        configure(project, f'package = "{spelling}"')
        assert load_project_config(project).package == "mypkg/kernels"


def test_include_dirs_and_includes_outside_the_project_are_warnings(project: Path) -> None:
    """The build goes on (the shader compiles); the warnings name the option, and the shader's
    file and line that includes a file from outside."""
    shader = project / "shaders" / "offset.slang"
    shader.write_text(shader.read_text().replace('#include "common.slangh"', '#include "far.slangh"'))
    configure(project, 'include-dirs = ["../outside"]')
    code, output = _build(project)
    assert code == 0, output
    assert (
        "warning: Option `include-dirs` for build hook `slang`: `../outside` is outside the project root: "
        "an sdist will not contain what the shaders include from it" in output
    ), output
    far = (project.parent / "outside" / "far.slangh").resolve()
    assert f"shaders/offset.slang:9: warning: reads {far}, outside the project root" in output, output
    assert "scale.slang" not in output.split("warning: reads")[0]  # only the shader that includes it
    assert (project / "mypkg" / "kernels" / "offset.py").is_file()


def test_templates_outside_the_project_are_a_warning(project: Path) -> None:
    shutil.copytree(
        REPO / "templates", project.parent / "outside" / "tmpl", ignore=shutil.ignore_patterns("init")
    )
    configure(project, 'templates = "../outside/tmpl"')
    code, output = _build(project)
    assert code == 0, output
    assert (
        "warning: Option `templates` for build hook `slang`: `../outside/tmpl` is outside the project root"
        in output
    )


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (("$body", "$body\n    # $bogus"), "function.py.tmpl:6: unknown placeholder `$bogus`"),
        (("$body", "$body\n    # ${nope}"), "function.py.tmpl:6: unknown placeholder `$nope`"),
        (("$body", "$body\n    # cost: 5$"), "function.py.tmpl:6: a `$` that starts no placeholder (`$`)"),
    ],
)
def test_a_template_with_an_unknown_placeholder_is_a_clean_error(
    project: Path, edit: tuple[str, str], message: str
) -> None:
    tmpl = project / "tmpl"
    shutil.copytree(REPO / "templates", tmpl, ignore=shutil.ignore_patterns("init"))
    function = tmpl / "function.py.tmpl"
    function.write_text(function.read_text().replace(*edit))
    configure(project, 'templates = "tmpl"')
    code, output = _build(project)
    assert code == 1 and "Traceback" not in output, output
    assert message in output, output
    assert "function.py.tmpl may hold $name, $parameters, $docstring, $body" in output
    assert not (project / "mypkg" / "kernels").exists()


def test_a_literal_dollar_in_a_template_is_kept(project: Path) -> None:
    tmpl = project / "tmpl"
    shutil.copytree(REPO / "templates", tmpl, ignore=shutil.ignore_patterns("init"))
    function = tmpl / "function.py.tmpl"
    function.write_text(function.read_text().replace("$body", "$body\n    # costs $$5"))
    configure(project, 'templates = "tmpl"')
    code, output = _build(project)
    assert code == 0, output
    assert "# costs $5" in (project / "mypkg" / "kernels" / "offset.py").read_text()


def test_a_relative_project_root_builds(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Compiler workers change directory to the project: a root left relative moved with them.
    from hatch_slang.builder import pipeline

    monkeypatch.chdir(project.parent)
    config = load_project_config(Path(project.name))
    assert config.root.is_absolute()
    out = pipeline.build(config, cache=None)
    assert out.files
