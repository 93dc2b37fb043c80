"""The subgroup size each entry requires: its comment's ``Subgroup size`` lines
(:mod:`hatch_slang.comments.subgroups`), else the ``subgroup-size`` option of the overrides
that match the shader. A line naming an entry the file does not have is a warning naming it."""

from __future__ import annotations

from dataclasses import replace

from hatch_slang.comments.subgroups import read_subgroup_sizes
from hatch_slang.spec.model import EntrySpec, ShaderSpec

__all__ = ["with_subgroup_sizes"]


def _named(e: EntrySpec, written: str, spelled: str) -> bool:
    return written in (e.python, e.name, spelled)


def with_subgroup_sizes(spec: ShaderSpec, option: int | None = None) -> ShaderSpec:
    """``spec`` with each entry's required subgroup size (``option``: the overrides' value, for
    entries the comment gives none)."""
    lines, notes = read_subgroup_sizes(spec.shader.source)
    if not lines and not notes and option is None:
        return spec
    rel = spec.shader.rel
    warnings = [f"{rel}:{n.line}: warning: {n.message}" for n in notes]
    default = next((ln.size for ln in lines if not ln.entries), option)
    sizes: dict[str, int] = {}
    generated = spec.shader.generated
    for ln in lines:
        for written in ln.entries:
            hits = [
                e.name
                for e in spec.entries
                if _named(e, written, spec.shader.spelled(e.name).replace(" ", ""))
            ]
            if not hits:
                warnings.append(
                    f"{rel}:{ln.line}: warning: `Subgroup size` names `{written}`, which is no entry of "
                    "the file; not applied"
                )
            sizes.update(dict.fromkeys(hits, ln.size))
    entries = tuple(
        replace(e, subgroup_size=sizes.get(e.name, default)) if e.name not in generated else e
        for e in spec.entries
    )
    return replace(spec, entries=entries, warnings=(*spec.warnings, *warnings))
