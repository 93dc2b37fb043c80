"""``hatch-slang init``: a new project with the build hook configured and one documented kernel.

The project holds a ``pyproject.toml`` (hatchling with the ``slang`` hook, a ``dev`` extra with
hatch-slang and pytest), ``shaders/saxpy.slang`` with its comment contract, its NumPy reference
``shaders/saxpy.py`` for ``hatch-slang validate``, ``tests/test_saxpy.py`` calling the generated
wrapper, a README and a ``.gitignore``. The files come from ``templates/init/`` (shipped in the
wheel as ``hatch_slang/templates/init/``), with ``{{name}}`` (the distribution name) and
``{{module}}`` (the import name) filled in.
"""

from __future__ import annotations

import keyword
import os
import re
import shlex
import sys
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path

from hatch_slang.errors import HatchSlangError

# (template file, path in the new project); paths may hold {{module}}.
FILES: tuple[tuple[str, str, str], ...] = (
    ("pyproject.toml.tmpl", "pyproject.toml", "the build system and [tool.hatch.build.hooks.slang]"),
    ("README.md.tmpl", "README.md", "how to build, test and call it"),
    ("gitignore.tmpl", ".gitignore", "build outputs, the generated kernels, caches"),
    ("init.py.tmpl", "{{module}}/__init__.py", "the package; kernels/ is generated beside it"),
    ("saxpy.slang.tmpl", "shaders/saxpy.slang", "the kernel, its contract in the leading comment"),
    ("saxpy.py.tmpl", "shaders/saxpy.py", "its NumPy reference, for `hatch-slang validate`"),
    ("test_saxpy.py.tmpl", "tests/test_saxpy.py", "a pytest test calling the generated wrapper"),
)

# Entries a directory may hold and still count as empty: a repository, an environment.
IGNORED_ENTRIES = frozenset({".git", ".hg", ".venv"})

# Import names that would shadow what the project itself needs, or its own directories.
RESERVED = frozenset(
    {"hatch_slang", "slangrt", "hatchling", "slangpy", "numpy", "vulkan", "pytest", "click"}
    | {"tests", "shaders", "build", "dist"}
)

# PEP 508 project names.
_DIST_NAME = re.compile(r"^[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?$")


class InitError(HatchSlangError):
    """A name ``init`` cannot use, or a directory it will not write into."""


@dataclass
class Project:
    root: Path
    name: str  # the distribution name, as given
    module: str  # the import name
    written: list[Path] = field(default_factory=list)  # relative to root
    overwritten: list[Path] = field(default_factory=list)


def check_name(name: str, *, origin: str = "--name") -> str:
    """The import name for a distribution name (``-`` becomes ``_``); :class:`InitError` if unusable."""
    module = name.replace("-", "_")
    hint = "" if origin == "--name" else "; pass one with --name"
    if not _DIST_NAME.match(name) or not module.isidentifier() or not module.isascii():
        raise InitError(
            f"{origin} {name!r} is not a usable project name{hint}: with `-` read as `_` it must be a "
            "Python identifier (ASCII letters, digits and `_`) that starts with a letter and does not "
            "end with `-` or `_`"
        )
    if keyword.iskeyword(module):
        raise InitError(f"{origin} {name!r} is a Python keyword and cannot be imported{hint}")
    if module in sys.stdlib_module_names or module.lower() in RESERVED:
        raise InitError(
            f"{origin} {name!r}: package `{module}` would shadow "
            f"{'the standard library' if module in sys.stdlib_module_names else 'a module the project uses'}"
            f"{hint}"
        )
    return module


def _template(name: str) -> str:
    shipped = resources.files("hatch_slang").joinpath("templates", "init", name)
    if shipped.is_file():
        return shipped.read_text(encoding="utf-8")
    # Running from a source checkout: the templates live at the repository's top level.
    path = Path(__file__).resolve().parents[2] / "templates" / "init" / name
    return path.read_text(encoding="utf-8")


def _fill(text: str, name: str, module: str) -> str:
    return text.replace("{{name}}", name).replace("{{module}}", module)


def init_project(directory: Path, name: str | None = None, *, force: bool = False) -> Project:
    """Write a new project into ``directory`` (created if missing).

    Refuses, writing nothing, a name that is not a Python identifier once ``-`` reads as ``_``,
    and a directory that holds anything but ``.git``, ``.hg`` or ``.venv`` unless ``force``
    (which overwrites the project's own files and leaves everything else alone).
    """
    root = directory.resolve()
    if name is None:
        module = check_name(root.name, origin="directory name")
        name = root.name
    else:
        module = check_name(name)
    if root.exists() and not root.is_dir():
        raise InitError(f"{directory} exists and is not a directory")
    if root.is_dir() and not force:
        found = sorted(p.name for p in root.iterdir() if p.name not in IGNORED_ENTRIES)
        if found:
            shown = ", ".join(found[:5]) + (f" and {len(found) - 5} more" if len(found) > 5 else "")
            raise InitError(
                f"{directory} is not empty (it holds {shown}); choose a new directory, "
                "or pass --force to write the project's files into it anyway (overwriting "
                "files of the same names)"
            )
    targets = [(template, Path(_fill(dest, name, module))) for template, dest, _ in FILES]
    for _, rel in targets:
        if (root / rel).is_dir() or any((root / p).is_file() for p in rel.parents if p != Path(".")):
            raise InitError(f"{directory / rel} cannot be written: something of another kind is in the way")
    project = Project(root, name, module)
    texts = [(rel, _fill(_template(template), name, module)) for template, rel in targets]
    for rel, text in texts:
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if path.exists():
            project.overwritten.append(rel)
        path.write_text(text, encoding="utf-8")
        project.written.append(rel)
    return project


def _venv_bin() -> str:
    return ".venv\\Scripts\\" if os.name == "nt" else ".venv/bin/"


def next_steps(project: Project, cwd: Path | None = None) -> str:
    """What ``hatch-slang init`` prints: the files, then the exact commands to run next."""
    cwd = (cwd or Path.cwd()).resolve()
    where = project.root.relative_to(cwd) if project.root.is_relative_to(cwd) else project.root
    described = {Path(_fill(dest, project.name, project.module)): what for _, dest, what in FILES}
    width = max(len(p.as_posix()) for p in project.written)
    lines = [f"Created project `{project.name}` (import `{project.module}`) in {where}:"]
    for rel in project.written:
        note = " (overwritten)" if rel in project.overwritten else ""
        lines.append(f"  {rel.as_posix():<{width}}  {described.get(rel, '')}{note}")
    vbin = _venv_bin()
    python = "python" if os.name == "nt" else "python3"
    steps = [] if where == Path(".") else [f"cd {shlex.quote(str(where))}"]
    if not (project.root / ".venv").exists():
        steps.append(f"{python} -m venv .venv")
    steps += [
        f"{vbin}python -m pip install -e '.[dev]'  # compiles the kernels into {project.module}/kernels/",
        f"{vbin}hatch-slang validate  # each kernel against its NumPy reference",
        f"{vbin}pytest",
    ]
    lines += ["", "Next steps:", *(f"  {s}" for s in steps), ""]
    links = os.environ.get("PIP_FIND_LINKS")
    if links:
        lines.append(f"pip finds hatch-slang and hatch-slang-runtime in PIP_FIND_LINKS ({links}).")
    else:
        here = shlex.quote(sys.executable)
        lines += [
            "hatch-slang is not on a package index yet: before the install, point pip at a directory",
            "holding the hatch-slang and hatch-slang-runtime wheels (hatch-slang's README,",
            '"Installation", says how to build them):',
            "  export PIP_FIND_LINKS=/path/to/wheelhouse   # UV_FIND_LINKS for uv and hatch",
            "or build with the hatch-slang of the environment this one runs in (editable builds",
            "also need `editables` there):",
            f"  {here} -m pip install editables",
            f"  {here} -m pip install --no-build-isolation -e '.[dev]'",
        ]
    lines += ["", "Then edit shaders/saxpy.slang, or add shaders beside it, and run `hatch-slang build`."]
    return "\n".join(lines)
