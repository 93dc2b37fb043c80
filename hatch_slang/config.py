"""The ``[tool.hatch.build.hooks.slang]`` options: every default in one place, each validated once."""

from __future__ import annotations

import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hatch_slang.codegen import TEMPLATE_FILES
from hatch_slang.compiler import CompileOptions
from hatch_slang.errors import ConfigError

HOOK = "slang"
# Options hatchling itself understands for every build hook; they are not ours to reject.
_HATCH_GENERIC = {
    "dependencies",
    "require-runtime-dependencies",
    "require-runtime-features",
    "enable-by-default",
}
KNOWN = ("shaders", "package", "include-dirs", "defines", "optimization", "templates", "strict")
_DEFINE = re.compile(r"^[A-Za-z_]\w*$")


@dataclass(frozen=True)
class BuildConfig:
    root: Path
    shaders: tuple[str, ...]
    package: str  # slash-separated path inside the wheel, e.g. "mypkg/kernels"
    compile: CompileOptions
    templates: Path | None
    strict: bool

    @property
    def package_dir(self) -> Path:
        return self.root / self.package


def _bad(option: str, must: str) -> ConfigError:
    return ConfigError(f"Option `{option}` for build hook `{HOOK}` must be {must}")


def _str_list(raw: Mapping[str, Any], option: str, default: list[str] | None) -> list[str]:
    value = raw.get(option, default)
    if value is None:
        raise ConfigError(f"Option `{option}` for build hook `{HOOK}` is required")
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
        raise _bad(option, "a list of non-empty strings")
    return value


def parse_config(root: Path, raw: Mapping[str, Any]) -> BuildConfig:
    unknown = sorted(set(raw) - set(KNOWN) - _HATCH_GENERIC)
    if unknown:
        raise ConfigError(
            f"Unknown option(s) {', '.join(f'`{u}`' for u in unknown)} for build hook `{HOOK}`; "
            f"known options: {', '.join(KNOWN)}"
        )
    shaders = _str_list(raw, "shaders", None)
    if not shaders:
        raise _bad("shaders", "a non-empty list of globs")
    package = raw.get("package")
    if not isinstance(package, str) or not package:
        raise _bad("package", 'a package path such as "mypkg/kernels"')
    package = package.replace(".", "/").strip("/")
    if not all(part.isidentifier() for part in package.split("/")):
        raise _bad("package", f'a path of Python identifiers such as "mypkg/kernels", not "{package}"')
    include_dirs = _str_list(raw, "include-dirs", [])
    defines_raw = raw.get("defines", {})
    if isinstance(defines_raw, list) and all(isinstance(d, str) for d in defines_raw):
        defines_raw = dict((d.split("=", 1) + [""])[:2] for d in defines_raw)
    if not isinstance(defines_raw, dict) or not all(
        isinstance(k, str) and _DEFINE.match(k) and isinstance(v, str | int) for k, v in defines_raw.items()
    ):
        raise _bad("defines", 'a table of NAME = "value" (or a list of "NAME=value")')
    defines = tuple(sorted((k, str(v)) for k, v in defines_raw.items()))
    optimization = raw.get("optimization", 2)
    if type(optimization) is not int or not 0 <= optimization <= 3:
        raise _bad("optimization", "an integer from 0 to 3")
    templates = raw.get("templates")
    if templates is not None and (not isinstance(templates, str) or not templates):
        raise _bad("templates", "a directory path")
    strict = raw.get("strict", True)
    if not isinstance(strict, bool):
        raise _bad("strict", "true or false")
    for d in include_dirs:
        if not (root / d).is_dir():
            raise ConfigError(
                f"Option `include-dirs` for build hook `{HOOK}`: `{d}` is not a directory under {root}"
            )
    if templates:
        missing = [n for n in TEMPLATE_FILES if not (root / templates / n).is_file()]
        if missing:
            raise ConfigError(
                f"Option `templates` for build hook `{HOOK}`: `{templates}` must be a directory holding "
                f"{' and '.join(TEMPLATE_FILES)} (missing: {', '.join(missing)})"
            )
    return BuildConfig(
        root=root,
        shaders=tuple(shaders),
        package=package,
        compile=CompileOptions(
            include_dirs=tuple(str((root / d).resolve()) for d in include_dirs),
            defines=defines,
            optimization=optimization,
        ),
        templates=(root / templates) if templates else None,
        strict=strict,
    )


def load_project_config(root: Path) -> BuildConfig:
    """Read the hook's table from ``root/pyproject.toml`` (what the CLI uses)."""
    pyproject = root / "pyproject.toml"
    if not pyproject.is_file():
        raise ConfigError(f"no pyproject.toml in {root}")
    try:
        data = tomllib.loads(pyproject.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as e:
        raise ConfigError(f"{pyproject}: {e}") from None
    hooks = data.get("tool", {}).get("hatch", {}).get("build", {}).get("hooks", {})
    table = hooks.get(HOOK)
    if table is None and "shaders" in hooks.get("custom", {}):
        # A project building with the in-tree plugin through a custom hook (as this repo does).
        table = {k: v for k, v in hooks["custom"].items() if k != "path"}
    if table is None:
        raise ConfigError(f"{pyproject} has no [tool.hatch.build.hooks.{HOOK}] table")
    return parse_config(root, table)
