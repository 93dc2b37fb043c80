"""The hatchling build hook (registered by :mod:`hatch_slang.hatch.hooks`): a thin front end over
:mod:`hatch_slang.builder.pipeline`.

- wheel: the generated package goes in through ``force_include`` from a temporary directory
  removed in ``finalize``; generated files lying in the source tree (from an editable install
  or ``hatch-slang build``) are left out, so a wheel never depends on what the tree happens to
  hold and is the same whether built from the tree or from its sdist.
- editable: the generated package is written into the source tree, where the editable install
  imports it and ``hatch-slang build`` keeps it up to date.
- sdist: sources only. The shader files and a custom templates directory are always included;
  generated files and the build cache never are.
- clean (``hatch clean``, ``hatch build --clean``): the generated files lying in the source
  tree are removed (only those a build wrote, per the package's manifest and ``__init__``).

Every build goes through the project's build cache (:mod:`hatch_slang.compile.cache`).
"""

from __future__ import annotations

import contextlib
import functools
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

import pathspec
from hatchling.builders.hooks.plugin.interface import BuildHookInterface

from hatch_slang import runtime_requirement
from hatch_slang.builder import pipeline
from hatch_slang.compile.discover import Shader, find_shaders
from hatch_slang.config.project import HOOK, BuildConfig, parse_config
from hatch_slang.errors import HatchSlangError

RUNTIME_REQUIREMENT = runtime_requirement()


def exclude_from_walk(build_config: object, patterns: list[str]) -> None:
    """Leave files matching ``patterns`` out of hatchling's walk of the project's files.

    hatchling has no ``build_data`` key for exclusions. Its builder config computes the exclude
    spec once, as a ``functools.cached_property`` that every file walk asks; a cached property's
    value lives in the instance's ``__dict__``, where setting it is the documented way to replace
    it. This is the one place hatch-slang reaches into hatchling's objects, and it checks that the
    property is still what it relies on (tests/scenarios/test_sdist.py and
    tests/scenarios/test_wheel.py pin the result), so that a hatchling that changed it fails the
    build by name instead of shipping generated files."""
    prop = next(
        (vars(k)["exclude_spec"] for k in type(build_config).__mro__ if "exclude_spec" in vars(k)), None
    )
    if not isinstance(prop, functools.cached_property):
        raise HatchSlangError(
            f"hatch-slang: this hatchling's {type(build_config).__name__}.exclude_spec is not a cached "
            "property; hatch-slang cannot leave generated files out of the build (report this, with "
            "the hatchling version)"
        )
    extra = pathspec.GitIgnoreSpec.from_lines(patterns)
    base = prop.__get__(build_config, type(build_config))
    vars(build_config)["exclude_spec"] = extra if base is None else base + extra


class _Log:
    """Compile progress through hatchling's display: how many shaders compile, then a line as
    each one finishes. Build front ends show a backend's output only when asked (``pip -v``,
    ``python -m build`` always); ``HATCH_QUIET`` hides it."""

    def __init__(self, hook: SlangBuildHook) -> None:
        self.app = hook.app
        self.total = 0
        self.done = 0
        self.started = time.monotonic()

    def start(self, total: int, cached: int) -> None:
        self.total = total
        self.started = time.monotonic()
        if total:
            self.app.display_info(
                f"hatch-slang: compiling {total} shader(s), {cached} unchanged (from the build cache)"
            )

    def advance(self, shader: Shader) -> None:
        self.done += 1
        elapsed = time.monotonic() - self.started
        self.app.display_info(f"hatch-slang: [{self.done}/{self.total}] {shader.rel} ({elapsed:.1f} s)")


class SlangBuildHook(BuildHookInterface):  # type: ignore[type-arg]
    PLUGIN_NAME = HOOK

    _tmp: Path | None = None

    def _fail(self, error: HatchSlangError) -> SystemExit:
        # One clean message, no traceback through hatchling; nothing was written.
        self.app.display_error(f"hatch-slang: build failed\n{error}")
        return SystemExit(1)

    def initialize(self, version: str, build_data: dict[str, Any]) -> None:
        try:
            config = parse_config(Path(self.root), self.config)
            if self.target_name == "sdist":
                self._sdist(config, build_data)
            elif self.target_name == "wheel":
                self._wheel(config, version, build_data)
        except HatchSlangError as e:
            raise self._fail(e) from None

    def _exclude_tree_outputs(self, config: BuildConfig) -> None:
        outputs = pipeline.tree_outputs(config)
        if not outputs:
            return
        exclude_from_walk(self.build_config, [f"/{p}" for p in outputs])

    def _sdist(self, config: BuildConfig, build_data: dict[str, Any]) -> None:
        for w in config.warnings:  # what lies outside the project root: the sdist will not hold it
            self.app.display_warning(f"hatch-slang: {w}")
        self._exclude_tree_outputs(config)
        root = config.root.resolve()
        sources = find_shaders(config.root, list(config.shaders))
        if config.templates is not None:  # a directory holding the templates (config checked)
            sources += sorted(p.resolve() for p in config.templates.rglob("*") if p.is_file())
        for path in sources:
            if path.is_relative_to(root):
                build_data["force_include"][str(path)] = path.relative_to(root).as_posix()

    def _wheel(self, config: BuildConfig, version: str, build_data: dict[str, Any]) -> None:
        output = pipeline.build(config, cache=pipeline.open_cache(config), progress=_Log(self))
        for w in output.warnings:
            self.app.display_warning(f"hatch-slang: {w}")
        build_data.setdefault("dependencies", []).append(RUNTIME_REQUIREMENT)
        if version == "editable":
            pipeline.write_output(output, config.package_dir)
            return
        self._exclude_tree_outputs(config)
        self._tmp = Path(tempfile.mkdtemp(prefix="hatch-slang-wheel-"))
        try:
            pipeline.write_output(output, self._tmp)
        except BaseException:
            self.finalize(version, build_data, "")
            raise
        for name in sorted(output.files):
            build_data["force_include"][str(self._tmp / name)] = f"{config.package}/{name}"
        self.app.display_info(
            f"hatch-slang: {len(output.modules)} shader(s), {output.kernels} kernel(s) -> {config.package}"
        )

    def finalize(self, version: str, build_data: dict[str, Any], artifact_path: str) -> None:
        if self._tmp is not None:
            shutil.rmtree(self._tmp, ignore_errors=True)
            self._tmp = None

    def clean(self, versions: list[str]) -> None:
        """Remove the generated files an editable build (or ``hatch-slang build``) wrote into the
        source tree, and say what was removed. Files a build did not write are left alone; the
        package directory goes too when nothing else is left in it."""
        if self.target_name != "wheel":  # only wheel builds write into the tree
            return
        try:
            config = parse_config(Path(self.root), self.config)
        except HatchSlangError as e:
            raise self._fail(e) from None
        removed = remove_tree_outputs(config)
        if removed:
            self.app.display_info(
                f"hatch-slang: removed {len(removed)} generated file(s) from {config.package}: "
                + ", ".join(removed)
            )


def remove_tree_outputs(config: BuildConfig) -> list[str]:
    """Delete the generated files in ``config.package_dir``; return their names, sorted."""
    dest = config.package_dir
    if not dest.is_dir():
        return []
    removed = sorted(pipeline.generated_files(dest))
    for name in removed:
        (dest / name).unlink(missing_ok=True)
        for cached in (dest / "__pycache__").glob(f"{Path(name).stem}.*.pyc"):
            cached.unlink(missing_ok=True)
    for directory in (dest / "__pycache__", dest):
        with contextlib.suppress(OSError):  # missing, or holding what no build wrote
            directory.rmdir()
    return removed
