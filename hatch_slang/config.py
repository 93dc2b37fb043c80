"""The ``[tool.hatch.build.hooks.slang]`` options: every default in one place, each validated once."""

from __future__ import annotations

import re
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
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
KNOWN = (
    "shaders",
    "package",
    "include-dirs",
    "defines",
    "optimization",
    "compiler-args",
    "overrides",
    "templates",
    "strict",
)
OVERRIDE_KNOWN = ("shaders", "compiler-args", "defines")
_DEFINE = re.compile(r"^[A-Za-z_]\w*$")


@dataclass(frozen=True)
class Override:
    """One ``[[tool.hatch.build.hooks.slang.overrides]]`` table: options for the shaders its globs match."""

    shaders: tuple[str, ...]  # globs relative to the project root, as the `shaders` option
    compiler_args: tuple[str, ...] = ()  # appended to the project-wide `compiler-args`
    defines: tuple[tuple[str, str], ...] = ()  # added to (or replacing) the project-wide ones


@dataclass(frozen=True)
class BuildConfig:
    root: Path
    shaders: tuple[str, ...]
    package: str  # slash-separated path inside the wheel, e.g. "mypkg/kernels"
    compile: CompileOptions  # project-wide; :meth:`options_for` adds a shader's overrides
    templates: Path | None
    strict: bool
    overrides: tuple[Override, ...] = ()
    _matches: dict[int, frozenset[Path]] = field(default_factory=dict, compare=False, repr=False)

    @property
    def package_dir(self) -> Path:
        return self.root / self.package

    def options_for(self, path: Path) -> CompileOptions:
        """The compile options of one shader: the project-wide ones, then every override whose
        globs match it, in the order they are written (a later define of a name wins)."""
        options = self.compile
        real = path.resolve()
        for k, override in enumerate(self.overrides):
            if k not in self._matches:
                self._matches[k] = frozenset(
                    p.resolve()
                    for pattern in override.shaders
                    for p in self.root.glob(pattern)
                    if p.is_file()
                )
            if real in self._matches[k]:
                defines = dict(options.defines) | dict(override.defines)
                options = replace(
                    options,
                    defines=tuple(sorted(defines.items())),
                    compiler_args=options.compiler_args + override.compiler_args,
                )
        return options


def _bad(option: str, must: str) -> ConfigError:
    return ConfigError(f"Option `{option}` for build hook `{HOOK}` must be {must}")


def _str_list(raw: Mapping[str, Any], key: str, default: list[str] | None, option: str = "") -> list[str]:
    option = option or key
    value = raw.get(key, default)
    if value is None:
        raise ConfigError(f"Option `{option}` for build hook `{HOOK}` is required")
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
        raise _bad(option, "a list of non-empty strings")
    return value


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
    "-I": "use option `include-dirs`",
    "-O*": "use option `optimization`",
    "-r": "it links a precompiled module into the output; use option `include-dirs` and `import`",
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
    where = f"Option `{option}` for build hook `{HOOK}`"
    i = 0
    while i < len(args):
        flag = args[i]
        if not flag.startswith("-"):
            raise ConfigError(
                f"{where}: `{flag}` is no flag (a value must follow the flag that takes it, "
                "as its own list item)"
            )
        why = _refusal(flag)
        if why is not None:
            raise ConfigError(f"{where}: `{flag}` is not allowed: {why}")
        if flag in _ALLOWED_ARGS:
            arity = _ALLOWED_ARGS[flag]
        elif flag.startswith(("-D", "-W")) or re.fullmatch(r"-g[0-3]", flag):
            arity = 0
        else:
            raise ConfigError(
                f"{where}: `{flag}` is not an argument hatch-slang passes on; it allows those that "
                "change how code is compiled, not what is written where: "
                + ", ".join(sorted([*_ALLOWED_ARGS, "-D<NAME>[=value]", "-W<...>", "-g<level>"]))
            )
        values = args[i + 1 : i + 1 + arity]
        if len(values) < arity or any(v.startswith("-") and not _number(v) for v in values):
            raise ConfigError(f"{where}: `{flag}` takes {arity} value(s), each its own list item")
        i += 1 + arity
    return tuple(args)


def _number(text: str) -> bool:
    return re.fullmatch(r"-\d+", text) is not None


def _defines(option: str, raw: object) -> tuple[tuple[str, str], ...]:
    if isinstance(raw, list) and all(isinstance(d, str) for d in raw):
        raw = dict((d.split("=", 1) + [""])[:2] for d in raw)
    if not isinstance(raw, dict) or not all(
        isinstance(k, str) and _DEFINE.match(k) and isinstance(v, str | int) for k, v in raw.items()
    ):
        raise _bad(option, 'a table of NAME = "value" (or a list of "NAME=value")')
    return tuple(sorted((k, str(v)) for k, v in raw.items()))


def _compiler_args(raw: Mapping[str, Any], option: str) -> tuple[str, ...]:
    value = raw.get("compiler-args", [])
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
        raise _bad(option, "a list of non-empty strings (Slang command-line arguments)")
    return check_compiler_args(option, value)


def _overrides(root: Path, raw: object) -> tuple[Override, ...]:
    if not isinstance(raw, list) or not all(isinstance(t, dict) for t in raw):
        raise _bad("overrides", "an array of tables (`[[tool.hatch.build.hooks.slang.overrides]]`)")
    out = []
    for k, table in enumerate(raw):
        name = f"overrides[{k}]"
        unknown = sorted(set(table) - set(OVERRIDE_KNOWN))
        if unknown:
            raise ConfigError(
                f"Unknown option(s) {', '.join(f'`{name}.{u}`' for u in unknown)} for build hook "
                f"`{HOOK}`; an override knows: {', '.join(OVERRIDE_KNOWN)}"
            )
        globs = _str_list(table, "shaders", None, f"{name}.shaders")
        if not globs:
            raise _bad(f"{name}.shaders", "a non-empty list of globs")
        for pattern in globs:
            try:
                hit = not Path(pattern).is_absolute() and any(p.is_file() for p in root.glob(pattern))
            except ValueError as e:
                raise ConfigError(
                    f"Option `{name}.shaders` for build hook `{HOOK}`: glob `{pattern}`: {e}"
                ) from None
            if not hit:
                raise ConfigError(
                    f"Option `{name}.shaders` for build hook `{HOOK}`: glob `{pattern}` matches no file "
                    f"under {root} (globs are relative to the project root)"
                )
        out.append(
            Override(
                shaders=tuple(globs),
                compiler_args=_compiler_args(table, f"{name}.compiler-args"),
                defines=_defines(f"{name}.defines", table.get("defines", {})),
            )
        )
    return tuple(out)


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
    if package is None:
        raise ConfigError(
            f"Option `package` for build hook `{HOOK}` is required: the package path the generated "
            'wrappers go to, such as "mypkg/kernels"'
        )
    if not isinstance(package, str) or not package:
        raise _bad("package", 'a package path such as "mypkg/kernels"')
    package = package.replace(".", "/").strip("/")
    if not all(part.isidentifier() for part in package.split("/")):
        raise _bad("package", f'a path of Python identifiers such as "mypkg/kernels", not "{package}"')
    include_dirs = _str_list(raw, "include-dirs", [])
    defines = _defines("defines", raw.get("defines", {}))
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
    compiler_args = _compiler_args(raw, "compiler-args")
    overrides = _overrides(root, raw.get("overrides", []))
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
            compiler_args=compiler_args,
        ),
        templates=(root / templates) if templates else None,
        strict=strict,
        overrides=overrides,
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
