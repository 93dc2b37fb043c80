"""Build this repository's own kernel library (shaders/) with the in-tree hatch-slang plugin."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))
# hatch_slang imports slangrt (the dtype table, the manifest model): the in-tree runtime, so that
# building this repository needs no hatch-slang-runtime from an index.
sys.path.insert(1, str(Path(__file__).parent / "runtime"))

from hatch_slang.config.project import without_custom_options
from hatch_slang.hatch.plugin import SlangBuildHook


class CustomBuildHook(SlangBuildHook):
    PLUGIN_NAME = "custom"

    @property
    def config(self) -> dict[str, Any]:
        # `path` is hatchling's option for custom hooks, not one of ours.
        return without_custom_options(super().config)


def get_build_hook() -> type[CustomBuildHook]:
    # hatchling looks for exactly one hook class in this file; the imported base is a second one.
    return CustomBuildHook
