"""The project's exception tree.

Every failure the build pipeline can report derives from :class:`HatchSlangError`; the front ends
(the build hook and the CLI) turn it into one clean message and a non-zero exit.
"""

from __future__ import annotations

from pathlib import Path


class HatchSlangError(Exception):
    """Root of every error hatch-slang raises on purpose."""


class ConfigError(HatchSlangError):
    """A bad option in ``[tool.hatch.build.hooks.slang]`` (or on the command line)."""


class ShaderError(HatchSlangError):
    """A problem in a shader file or its comment contract, located at ``path:line``."""

    def __init__(self, path: Path | str, line: int | None, message: str) -> None:
        self.path = str(path)
        self.line = line
        self.message = message
        where = f"{self.path}:{line}" if line is not None else self.path
        super().__init__(f"{where}: {message}")

    def __reduce__(self) -> tuple[type[ShaderError], tuple[str, int | None, str]]:
        return (type(self), (self.path, self.line, self.message))  # picklable across processes


class CompileError(HatchSlangError):
    """The Slang compiler rejected a shader (or crashed on it); carries its diagnostics."""

    def __init__(self, path: Path | str, entry: str | None, diagnostics: str) -> None:
        self.path = str(path)
        self.entry = entry
        self.diagnostics = diagnostics
        what = f"{self.path} (entry `{entry}`)" if entry else self.path
        body = "\n".join("    " + line for line in diagnostics.rstrip().splitlines())
        super().__init__(f"Slang failed to compile {what}:\n{body}")

    def __reduce__(self) -> tuple[type[CompileError], tuple[str, str | None, str]]:
        return (type(self), (self.path, self.entry, self.diagnostics))  # results cross processes


class BuildErrors(HatchSlangError):
    """Several independent errors from one build, reported together."""

    def __init__(self, errors: list[HatchSlangError]) -> None:
        self.errors = errors
        super().__init__("\n".join(str(e) for e in errors))
