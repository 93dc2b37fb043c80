"""The build's configuration: the hook's settings (:mod:`hatch_slang.config.settings`) resolved against
the project root, with the checks that need the file system or Slang's command line.

This module sits below the pipeline's stages: it imports none of them. :class:`CompileOptions`
is plain values; :mod:`hatch_slang.compile.compiler` turns them into Slang arguments.
"""

from __future__ import annotations

import keyword
import re
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path, PurePosixPath
from typing import Any

from hatch_slang.config.settings import (
    CUSTOM_HOOK_OPTIONS,
    HATCH_OPTIONS,
    HOOK,
    TEMPLATE_FILES,
    Constant,
    HookSettings,
    OverrideSettings,
    default,
    option_name,
    read,
    where,
)
from hatch_slang.errors import ConfigError

__all__ = [
    "HOOK",
    "BuildConfig",
    "CompileOptions",
    "check_compiler_args",
    "check_glob",
    "glob_files",
    "hook_table",
    "load_project_config",
    "parse_config",
    "without_custom_options",
]


@dataclass(frozen=True)
class CompileOptions:
    """What a shader is compiled with, besides its path and entries."""

    include_dirs: tuple[str, ...] = ()  # absolute
    defines: tuple[tuple[str, str], ...] = ()  # sorted by name
    optimization: int = default(HookSettings, "optimization")
    compiler_args: tuple[str, ...] = ()  # validated by check_compiler_args
    # Values of link-time constants (option `constants`), sorted by name: checked data, never
    # source text. :mod:`hatch_slang.compile.constants` writes them in the type each shader declares.
    constants: tuple[tuple[str, Constant], ...] = ()
    # Entries' own values (a table under an entry's name in option `constants`), by entry, each
    # sorted by name: they win over ``constants`` for that entry.
    entry_constants: tuple[tuple[str, tuple[tuple[str, Constant], ...]], ...] = ()

    def constants_for(self, entry: str) -> dict[str, Constant]:
        """The values ``entry`` links with: the shared ones, then its own."""
        return {**dict(self.constants), **dict(dict(self.entry_constants).get(entry, ()))}

    def with_constants(self, table: Mapping[str, Any]) -> CompileOptions:
        """These options with a table of option `constants` added (a later value of a name wins,
        an entry's table name by name)."""
        shared = dict(self.constants) | {k: v for k, v in table.items() if not isinstance(v, Mapping)}
        own = {k: dict(v) for k, v in self.entry_constants}
        for k, v in table.items():
            if isinstance(v, Mapping):
                own[k] = {**own.get(k, {}), **v}
        return replace(
            self,
            constants=tuple(sorted(shared.items())),
            entry_constants=tuple(sorted((k, tuple(sorted(v.items()))) for k, v in own.items())),
        )


@dataclass(frozen=True)
class BuildConfig:
    root: Path
    shaders: tuple[str, ...]
    package: str  # slash-separated path inside the wheel, e.g. "mypkg/kernels"
    compile: CompileOptions  # project-wide; :meth:`options_for` adds a shader's overrides
    templates: Path | None  # a directory holding every TEMPLATE_FILES (checked when read)
    strict: bool
    overrides: tuple[OverrideSettings, ...] = ()
    # What the options hold that a build should say (paths outside the project root).
    warnings: tuple[str, ...] = ()
    # Project-wide instances of generic entries: entry -> type-argument texts (`"half, 4"`).
    instances: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    torch_ops: bool = False  # each module's wrappers as torch custom ops too (option `torch-ops`)
    _matches: dict[int, frozenset[Path]] = field(default_factory=dict, compare=False, repr=False)

    @property
    def package_dir(self) -> Path:
        return self.root / self.package

    def instances_for(self, path: Path) -> dict[str, tuple[str, ...]]:
        """The instances the ``instances`` options add to one shader's generic entries: the
        project-wide ones, then every matching override's (a list adds to the list before it)."""
        out = {k: tuple(v) for k, v in self.instances.items()}
        for k, override in enumerate(self.overrides):
            if override.instances and self.applies(k, path):
                for name, texts in override.instances.items():
                    out[name] = tuple(dict.fromkeys((*out.get(name, ()), *texts)))
        return out

    def map_for(self, path: Path) -> tuple[str, ...]:
        """The functions the ``map`` options of the overrides matching the shader at ``path``
        name for it (as its ``slang-map`` lines would)."""
        names: dict[str, None] = {}
        for k, override in enumerate(self.overrides):
            if override.map and self.applies(k, path):
                names.update(dict.fromkeys(override.map))
        return tuple(names)

    def subgroup_size_for(self, path: Path) -> int | None:
        """The ``subgroup-size`` of the last override matching the shader at ``path`` that
        gives one (None: none does)."""
        size = None
        for k, override in enumerate(self.overrides):
            if override.subgroup_size is not None and self.applies(k, path):
                if override.subgroup_size & (override.subgroup_size - 1):
                    name = option_name(OverrideSettings, "subgroup_size")
                    raise ConfigError(
                        f"option `{name}` of override {k + 1} must be a power of two from 1 to 128, "
                        f"got {override.subgroup_size}"
                    )
                size = override.subgroup_size
        return size

    def applies(self, k: int, path: Path) -> bool:
        """Whether override ``k``'s globs match the shader at ``path``."""
        return path.resolve() in self._matching(k)

    def _matching(self, k: int) -> frozenset[Path]:
        if k not in self._matches:
            self._matches[k] = frozenset(
                p.resolve()
                for pattern in self.overrides[k].shaders
                for p in self.root.glob(pattern)
                if p.is_file()
            )
        return self._matches[k]

    def options_for(self, path: Path) -> CompileOptions:
        """The compile options of one shader: the project-wide ones, then every override whose
        globs match it, in the order they are written (a later define or constant of a name wins)."""
        options = self.compile
        for k, override in enumerate(self.overrides):
            if self.applies(k, path):
                defines = {**dict(options.defines), **override.defines}
                options = replace(
                    options.with_constants(override.constants),
                    defines=tuple(sorted(defines.items())),
                    compiler_args=options.compiler_args + override.compiler_args,
                )
        return options


# Compiler arguments hatch-slang passes on: they change how code is compiled, not what is written
# where. Flag -> how many values follow it. `-D`, `-W` and `-g` also take their value attached.
_ALLOWED_ARGS: dict[str, int] = {
    "-experimental-feature": 0,
    "-enable-experimental-passes": 0,
    "-capability": 1,
    "-matrix-layout-column-major": 0,
    "-matrix-layout-row-major": 0,
    "-fvk-use-dx-layout": 0,
    "-fvk-use-scalar-layout": 0,
    "-force-glsl-scalar-layout": 0,
    "-fvk-use-gl-layout": 0,
    "-fvk-use-c-layout": 0,
    "-fvk-invert-y": 0,
    "-fvk-use-dx-position-w": 0,
    "-fvk-b-shift": 2,
    "-fvk-s-shift": 2,
    "-fvk-t-shift": 2,
    "-fvk-u-shift": 2,
    "-fvk-bind-globals": 2,
    "-fspv-reflect": 0,
    "-emit-spirv-directly": 0,
    "-emit-spirv-via-glsl": 0,
    "-warnings-disable": 1,
    "-warnings-as-errors": 1,
    "-fp-mode": 1,
    "-denorm-mode-fp16": 1,
    "-denorm-mode-fp32": 1,
    "-denorm-mode-fp64": 1,
    "-lang": 1,
    "-std": 1,
    "-profile": 1,
    "-allow-glsl": 0,
    "-zero-initialize": 0,
    "-ignore-capabilities": 0,
    "-restrictive-capability-check": 0,
    "-unscoped-enum": 0,
    "-preserve-params": 0,
    "-minimum-slang-optimization": 0,
    "-disable-short-circuit": 0,
    "-default-image-format-unknown": 0,
    "-no-hlsl-binding": 0,
    "-no-hlsl-pack-constant-buffer-elements": 0,
    "-D": 1,
    "-g": 0,
}
_WRITES = "it changes what the compiler writes, or where"
# Refused: (flag, or prefix ending in "*") -> why, and what to use instead.
_REFUSED_ARGS: dict[str, str] = {
    "-o": "hatch-slang names and writes the outputs itself",
    "-target": "hatch-slang always compiles to SPIR-V (`-target spirv`)",
    "-entry": "entry points come from `// slang-entries: ...` in the shader (or are discovered)",
    "-stage": "hatch-slang compiles compute entry points only",
    "-I": f"use option `{option_name(HookSettings, 'include_dirs')}`",
    "-O*": f"use option `{option_name(HookSettings, 'optimization')}`",
    "-r": "it links a precompiled module into the output; use option "
    f"`{option_name(HookSettings, 'include_dirs')}` and `import`",
    "-reflection-json": "hatch-slang reads the reflection itself",
    "-fvk-use-entrypoint-name": "hatch-slang always passes it (the SPIR-V entry keeps its name)",
    "-language": "Slang calls it `-lang`",
    "-depfile": _WRITES,
    "-module-name": _WRITES,
    "-dump*": _WRITES,
    "-output*": _WRITES,
    "-save*": _WRITES,
    "-load*": _WRITES,
    "-repro*": _WRITES,
    "-extract-repro": _WRITES,
    "-precompile*": _WRITES,
    "-emit-ir": _WRITES,
    "-serial-ir": _WRITES,
    "-archive-type": _WRITES,
    "-embed-downstream-ir": _WRITES,
    "-separate-debug-info": _WRITES,
    "-no-codegen": _WRITES,
    "-skip-codegen": _WRITES,
    "-pass-through": _WRITES,
    "-E": "it only preprocesses",
    "-h": "it only prints help",
    "-help": "it only prints help",
    "-v": "it only prints the version",
    "-version": "it only prints the version",
}


def _refusal(flag: str) -> str | None:
    for refused, why in _REFUSED_ARGS.items():
        if flag == refused or (refused.endswith("*") and flag.startswith(refused[:-1])):
            return why
    if flag.startswith("-I") and len(flag) > 2:
        return _REFUSED_ARGS["-I"]
    return None


def check_compiler_args(option: str, args: Sequence[str]) -> tuple[str, ...]:
    """Validate Slang command-line arguments; raise a ConfigError naming the option and the flag."""
    i = 0
    while i < len(args):
        flag = args[i]
        if not flag.startswith("-"):
            raise ConfigError(
                f"{where(option)}: `{flag}` is no flag (a value must follow the flag that takes it, "
                "as its own list item)"
            )
        why = _refusal(flag)
        if why is not None:
            raise ConfigError(f"{where(option)}: `{flag}` is not allowed: {why}")
        if flag in _ALLOWED_ARGS:
            arity = _ALLOWED_ARGS[flag]
        elif flag.startswith(("-D", "-W")) or re.fullmatch(r"-g[0-3]", flag):
            arity = 0
        else:
            raise ConfigError(
                f"{where(option)}: `{flag}` is not an argument hatch-slang passes on; it allows those that "
                "change how code is compiled, not what is written where: "
                + ", ".join(sorted([*_ALLOWED_ARGS, "-D<NAME>[=value]", "-W<...>", "-g<level>"]))
            )
        values = args[i + 1 : i + 1 + arity]
        if len(values) < arity or any(v.startswith("-") and not _number(v) for v in values):
            raise ConfigError(f"{where(option)}: `{flag}` takes {arity} value(s), each its own list item")
        i += 1 + arity
    return tuple(args)


def _number(text: str) -> bool:
    return re.fullmatch(r"-\d+", text) is not None


# -- path-valued options ---------------------------------------------------------------------------


def _path_problem(text: str) -> str | None:
    """Why ``text`` cannot be read as a path at all (whatever it points at), or None."""
    if not text.strip():
        return "is empty"
    if "\\" in text:
        return "holds a backslash: write paths with `/`"
    if text.startswith("~"):
        return "starts with `~`, which is not expanded: write it relative to the project root"
    if re.match(r"[A-Za-z]:", text):
        return "starts with a drive letter: write it relative to the project root"
    if "\0" in text or any(ord(c) < 32 for c in text):
        return "holds a control character"
    return None


def _escape(text: str) -> str | None:
    """Why a path written as ``text`` leaves the project root (absolute, or a ``..`` part), or None."""
    if PurePosixPath(text).is_absolute():
        return "is absolute"
    if ".." in PurePosixPath(text).parts:
        return "has a `..` part"
    return None


def _outside(root: Path, path: Path) -> bool:
    """Whether ``path`` (symbolic links followed) lies outside the project root."""
    return not path.resolve().is_relative_to(root.resolve())


def check_glob(option: str, pattern: str) -> None:
    """Refuse a shader glob that cannot name files inside the project root, naming the option."""
    why = _path_problem(pattern) or _escape(pattern)
    if why is not None:
        raise ConfigError(
            f"{where(option)}: glob `{pattern}` {why} (globs are relative to the project root, "
            "and name files inside it)"
        )


def glob_files(root: Path, option: str, pattern: str) -> list[Path]:
    """The files ``pattern`` (checked) matches under ``root``; a file that is a symbolic link to a
    place outside the root is refused (an sdist would not hold it), naming the option."""
    check_glob(option, pattern)
    try:
        matches = sorted(p for p in root.glob(pattern) if p.is_file())
    except ValueError as e:  # pathlib rejects some patterns ("**x", "")
        raise ConfigError(f"{where(option)}: glob `{pattern}`: {e}") from None
    for p in matches:
        if _outside(root, p):
            raise ConfigError(
                f"{where(option)}: glob `{pattern}` matches `{p.relative_to(root).as_posix()}`, "
                f"which leads outside the project root (to {p.resolve()}): shaders must live inside it"
            )
    if not matches:
        raise ConfigError(
            f"{where(option)}: glob `{pattern}` matches no file under {root} "
            "(globs are relative to the project root)"
        )
    return matches


def _package(root: Path, raw: str) -> str:
    """The package path, slash-separated: dotted or slashed, every part a Python identifier,
    inside the project root (a symbolic link to elsewhere is refused)."""
    option = where(option_name(HookSettings, "package"))
    text = raw[:-1] if raw.endswith("/") else raw
    why = _path_problem(text) or _escape(text)
    parts = re.split(r"[./]", text)
    if why is not None or not all(p.isidentifier() and not keyword.iskeyword(p) for p in parts):
        said = f" (it {why})" if why else ""
        raise ConfigError(
            f'{option} must be a path of Python identifiers such as "mypkg/kernels", not "{raw}"{said}'
        )
    package = "/".join(parts)
    if _outside(root, root / package):
        raise ConfigError(
            f'{option}: "{raw}" leads outside the project root (to {(root / package).resolve()}, '
            "through a symbolic link): the generated package must live inside it"
        )
    return package


def _outside_warning(option: str, value: str, what: str) -> str:
    return (
        f"{where(option)}: `{value}` is outside the project root: an sdist will not contain "
        f"{what}, so a build from the sdist fails"
    )


def _include_dirs(root: Path, dirs: tuple[str, ...], warnings: list[str]) -> tuple[str, ...]:
    option = option_name(HookSettings, "include_dirs")
    for d in dirs:
        if (why := _path_problem(d)) is not None:
            raise ConfigError(f"{where(option)}: `{d}` {why}")
        if not (root / d).is_dir():
            raise ConfigError(f"{where(option)}: `{d}` is not a directory under {root}")
        if _escape(d) is not None or _outside(root, root / d):
            warnings.append(_outside_warning(option, d, "what the shaders include from it"))
    return tuple(str((root / d).resolve()) for d in dirs)


def _templates(root: Path, templates: str | None, warnings: list[str]) -> Path | None:
    if templates is None:
        return None
    option = option_name(HookSettings, "templates")
    if (why := _path_problem(templates)) is not None:
        raise ConfigError(f"{where(option)}: `{templates}` {why}")
    # The one check of a templates directory: code generation reads the files it found here.
    missing = [n for n in TEMPLATE_FILES if not (root / templates / n).is_file()]
    if missing:
        raise ConfigError(
            f"{where(option)}: `{templates}` must be a directory "
            f"holding {' and '.join(TEMPLATE_FILES)} (missing: {', '.join(missing)})"
        )
    outside = _escape(templates) is not None or any(
        _outside(root, root / templates / n) for n in TEMPLATE_FILES
    )
    if outside:
        warnings.append(_outside_warning(option, templates, "the templates"))
    return root / templates


def _resolve_overrides(root: Path, overrides: tuple[OverrideSettings, ...]) -> tuple[OverrideSettings, ...]:
    out = []
    for k, override in enumerate(overrides):
        name = f"{option_name(HookSettings, 'overrides')}[{k}]."
        shaders = f"{name}{option_name(OverrideSettings, 'shaders')}"
        for pattern in override.shaders:
            glob_files(root, shaders, pattern)
        args = name + option_name(OverrideSettings, "compiler_args")
        out.append(replace(override, compiler_args=check_compiler_args(args, override.compiler_args)))
    return tuple(out)


def parse_config(root: Path, raw: Mapping[str, Any]) -> BuildConfig:
    """The hook's table (as hatchling hands it over) read, checked and resolved against ``root``."""
    root = root.absolute()  # compiler workers change directory: a relative root would move
    settings = read(HookSettings, raw, accept=tuple(HATCH_OPTIONS))
    for pattern in settings.shaders:  # (matched when the shaders are found)
        check_glob(option_name(HookSettings, "shaders"), pattern)
    package = _package(root, settings.package)
    warnings: list[str] = []
    include_dirs = _include_dirs(root, settings.include_dirs, warnings)
    compiler_args = check_compiler_args(option_name(HookSettings, "compiler_args"), settings.compiler_args)
    overrides = _resolve_overrides(root, settings.overrides)
    templates = _templates(root, settings.templates, warnings)
    return BuildConfig(
        root=root,
        shaders=settings.shaders,
        package=package,
        compile=CompileOptions(
            include_dirs=include_dirs,
            defines=tuple(sorted(settings.defines.items())),
            optimization=settings.optimization,
            compiler_args=compiler_args,
        ).with_constants(settings.constants),
        templates=templates,
        strict=settings.strict,
        torch_ops=settings.torch_ops,
        overrides=overrides,
        warnings=tuple(warnings),
        instances=dict(settings.instances),
    )


def hook_table(hooks: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The hook's table among ``[tool.hatch.build.hooks]``: ``slang``'s, else that of a custom hook
    building with the in-tree plugin (as this repository does: one that names ``shaders``), without
    the custom hook's own options."""
    table = hooks.get(HOOK)
    custom = hooks.get("custom", {})
    if table is None and option_name(HookSettings, "shaders") in custom:
        table = without_custom_options(custom)
    return table


def without_custom_options(table: Mapping[str, Any]) -> dict[str, Any]:
    """A custom hook's table less what hatchling's custom hook takes itself (``path``)."""
    return {k: v for k, v in table.items() if k not in CUSTOM_HOOK_OPTIONS}


def load_project_config(root: Path) -> BuildConfig:
    """Read the hook's table from ``root/pyproject.toml`` (what the CLI uses)."""
    pyproject = root / "pyproject.toml"
    if not pyproject.is_file():
        raise ConfigError(f"no pyproject.toml in {root}")
    try:
        data = tomllib.loads(pyproject.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as e:
        raise ConfigError(f"{pyproject}: {e}") from None
    table = hook_table(data.get("tool", {}).get("hatch", {}).get("build", {}).get("hooks", {}))
    if table is None:
        raise ConfigError(f"{pyproject} has no [tool.hatch.build.hooks.{HOOK}] table")
    return parse_config(root, table)
