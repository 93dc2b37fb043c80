"""The hatchling build hook: a thin front end over :mod:`hatch_slang.pipeline`.

Wheels get the generated package through ``force_include`` from a temporary directory that is
removed in ``finalize``; editable installs get it written into the source tree (where
``hatch-slang build`` keeps it up to date); sdists ship sources only, nothing compiled.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path
from typing import Any

from hatchling.builders.hooks.plugin.interface import BuildHookInterface

from hatch_slang import pipeline
from hatch_slang.config import HOOK, parse_config
from hatch_slang.errors import HatchSlangError

RUNTIME_REQUIREMENT = "hatch-slang-runtime>=0.1,<0.2"


class SlangBuildHook(BuildHookInterface):  # type: ignore[type-arg]
    PLUGIN_NAME = HOOK

    _tmp: Path | None = None

    def initialize(self, version: str, build_data: dict[str, Any]) -> None:
        if self.target_name != "wheel":
            return  # sdist: the shader sources travel as ordinary files
        config = parse_config(Path(self.root), self.config)
        self.app.display_info(f"hatch-slang: compiling shaders {', '.join(config.shaders)}")
        try:
            output = pipeline.build(config, progress=lambda s: self.app.display_debug(f"  compiled {s.rel}"))
        except HatchSlangError as e:
            # One clean message, no traceback through hatchling; nothing was written.
            self.app.display_error(f"hatch-slang: build failed\n{e}")
            raise SystemExit(1) from None
        for w in output.warnings:
            self.app.display_warning(f"hatch-slang: {w}")

        build_data.setdefault("dependencies", []).append(RUNTIME_REQUIREMENT)
        if version == "editable":
            pipeline.write_output(output, config.package_dir)
            return
        self._tmp = Path(tempfile.mkdtemp(prefix="hatch-slang-wheel-"))
        pipeline.write_output(output, self._tmp)
        for name in sorted(output.files):
            build_data["force_include"][str(self._tmp / name)] = f"{config.package}/{name}"
        self.app.display_info(
            f"hatch-slang: {len(output.specs)} shader(s), "
            f"{sum(len(s.entries) for s in output.specs)} kernel(s) -> {config.package}"
        )

    def finalize(self, version: str, build_data: dict[str, Any], artifact_path: str) -> None:
        if self._tmp is not None:
            shutil.rmtree(self._tmp, ignore_errors=True)
            self._tmp = None
