"""Registers the ``slang`` build hook with hatchling (``[project.entry-points.hatch]``)."""

from __future__ import annotations

from hatchling.plugin import hookimpl

from hatch_slang.hatch.plugin import SlangBuildHook


@hookimpl
def hatch_register_build_hook() -> type[SlangBuildHook]:
    return SlangBuildHook
