"""Recompile the runtime tests' fixture kernels: ``<name>.slang`` -> ``<name>.spv``.

Run with the project venv (it needs slangpy, which ships the Slang compiler library):

    .venv/bin/python tests/runtime/data/regen.py [name ...]

(names: only those fixtures, e.g. ``push pointer``; default: all of them). ``moe_combine.spv`` is
compiled from the reference seed shader, whose one copy is ``tests/packages/seedpkg/shaders/``;
the runtime's built-in ``indirect_check`` is written beside its source
(``runtime/slangrt/_calls/_builtin/``).

Each file is compiled for its single entry point, named like the file, by hatch-slang's own
compiler driver, and its SPIR-V normalized as the build normalizes what it ships (OpSource's
language set to Unknown, which Debian 12's validation layer requires; Slang's unneeded
StorageImageReadWithoutFormat dropped, except in ``AS_SLANG_DECLARES``). The runtime tests must not
need slangpy, hence the committed ``.spv`` files.
"""

from __future__ import annotations

import sys
from pathlib import Path

from hatch_slang.compile.compiler import CompileJob, CompileOptions, CompilerPool
from hatch_slang.spec.reflection import normalize_spirv

HERE = Path(__file__).resolve().parent
SEED = HERE.parent.parent / "packages" / "seedpkg" / "shaders" / "moe_combine.slang"
# The runtime's own built-in kernel (its SPIR-V is committed beside it, shipped in the wheel).
BUILTIN = HERE.parent.parent.parent / "runtime" / "slangrt" / "_calls" / "_builtin" / "indirect_check.slang"
# Inputs of the runtime's refusal of Slang's unneeded StorageImageReadWithoutFormat, which the
# build drops (normalize_spirv): kept as Slang declares it.
AS_SLANG_DECLARES = {"img_unformatted"}


def main() -> None:
    names = set(sys.argv[1:])
    sources = [
        s
        for s in sorted([*HERE.glob("*.slang"), SEED, BUILTIN], key=lambda s: s.name)
        if not names or s.stem in names
    ]
    jobs = [CompileJob(s.name, (s.stem,), CompileOptions(), str(s.parent)) for s in sources]
    with CompilerPool() as pool:
        results = pool.compile(jobs)
    for source, result in zip(sources, results, strict=True):
        if result.error is not None:
            sys.exit(str(result.error))
        spirv = normalize_spirv(result.entries[0].spirv, keep_capabilities=source.stem in AS_SLANG_DECLARES)
        out = (source.parent if source == BUILTIN else HERE) / f"{source.stem}.spv"
        out.write_bytes(spirv)
        print(f"{source.name} -> {out.name} ({len(spirv)} bytes)")


if __name__ == "__main__":
    main()
