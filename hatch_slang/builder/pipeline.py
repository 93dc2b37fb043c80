"""The one build pipeline both front ends (the hatch hook and the CLI) run.

discover -> parse comments -> compile (the cache, else worker processes) -> check against
reflection -> generate. The result is held in memory (:class:`BuildOutput`); :mod:`hatch_slang.builder.output`
then writes it, all or nothing (:func:`write_output`), or compares it with what a destination holds
(:func:`drift`, what ``hatch-slang check`` reports). Those two (and ``Drift``, ``generated_files``)
are re-exported here: the front ends build and write through this module.
"""

from __future__ import annotations

import re
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path, PurePosixPath
from typing import Protocol

from slangrt import manifest
from slangrt.spirv import SpirvError

from hatch_slang.builder import output
from hatch_slang.builder.output import Drift as Drift
from hatch_slang.builder.output import drift as drift
from hatch_slang.builder.output import generated_files as generated_files
from hatch_slang.builder.output import write_output as write_output
from hatch_slang.codegen import torch_ops
from hatch_slang.codegen import wrappers as codegen
from hatch_slang.compile.cache import BuildCache, default_cache_dir
from hatch_slang.compile.compiler import CompileJob, CompileResult, CompilerPool, compiler_fingerprint
from hatch_slang.compile.constants import LinkConstant, grid_with_constants, link_constants
from hatch_slang.compile.discover import Shader, Source, parse, read_sources, select, sources
from hatch_slang.config.project import BuildConfig
from hatch_slang.config.settings import HookSettings, option_name
from hatch_slang.errors import BuildErrors, CompileError, ConfigError, HatchSlangError, ShaderError
from hatch_slang.spec.merge import build_spec
from hatch_slang.spec.model import ShaderSpec
from hatch_slang.spec.subgroups import with_subgroup_sizes
from hatch_slang.spec.variants import with_variants


class Progress(Protocol):
    """What a front end shows while shaders compile (a progress bar, hatchling's log)."""

    def start(self, total: int, cached: int) -> None:
        """``total`` shaders need compiling; ``cached`` more came from the cache."""

    def advance(self, shader: Shader) -> None:
        """One shader finished compiling (successfully or not)."""


@dataclass(frozen=True)
class ShaderOutput:
    """What one shader contributes to the package (made afresh by every build)."""

    module: str
    files: dict[str, bytes]  # the wrapper module and one .spv per entry
    manifest: manifest.Shader  # its record in manifest.json
    warnings: tuple[str, ...]
    compiler: str


@dataclass(frozen=True)
class BuildOutput:
    files: dict[str, bytes]  # path relative to the package directory -> content
    modules: tuple[str, ...]  # one per shader built (not those kept from the destination)
    kernels: int  # entry points among them
    warnings: tuple[str, ...]
    compiler: str
    compiled: tuple[str, ...] = ()  # shaders (root-relative) compiled this time; the rest were cached
    kept: tuple[str, ...] = ()  # modules of a partial build taken over from the destination


def open_cache(config: BuildConfig) -> BuildCache:
    """The project's build cache (see :mod:`hatch_slang.compile.cache` for where it lives)."""
    return BuildCache(
        default_cache_dir(config.root),
        config.root,
        compiler_fingerprint(),
        config.compile,
        options_for=config.options_for if config.overrides else None,
    )


def compile_shaders(
    config: BuildConfig,
    shaders: list[Shader],
    *,
    cache: BuildCache | None = None,
    progress: Progress | None = None,
    cached: int = 0,
) -> tuple[list[CompileResult], list[Shader]]:
    """Compile results in ``shaders`` order, from the cache where valid, else from worker processes;
    and the shaders that were compiled. ``cached`` counts shaders the caller found cached already
    (for the progress report). A cached result is still to be checked as a fresh one is
    (:func:`checked_specs` does both)."""
    results: dict[str, CompileResult] = {}
    todo: list[Shader] = []
    for shader in shaders:
        hit = cache.lookup(shader) if cache is not None else None
        if hit is not None:
            results[shader.rel] = hit
        else:
            todo.append(shader)
    hits = len(shaders) - len(todo)
    jobs: list[CompileJob] = []
    for shader in list(todo):
        try:
            jobs.append(compile_job_for(config, shader))
        except HatchSlangError as e:  # a link-time constant without a value: nothing to compile
            results[shader.rel] = CompileResult(shader.rel, error=e)
            todo.remove(shader)
    if progress is not None:
        progress.start(len(todo), cached + hits)
    if todo:
        by_rel = {s.rel: s for s in todo}

        def on_done(result: CompileResult) -> None:
            if progress is not None:
                progress.advance(by_rel[result.path])

        # Generated sources are written where this process removes them, whatever a worker does.
        with tempfile.TemporaryDirectory(prefix="hatch-slang-") as scratch, CompilerPool() as pool:
            jobs = [replace(j, scratch=scratch) if j.source else j for j in jobs]
            compiled = pool.compile(jobs, on_done)
        for shader, result in zip(todo, compiled):
            results[shader.rel] = result
            if cache is not None:
                cache.store(shader, result)
    return [results[s.rel] for s in shaders], todo


def compile_job_for(config: BuildConfig, shader: Shader) -> CompileJob:
    """The job that compiles ``shader``: its options, and each entry's link-time constants with
    their values (a ShaderError naming the declaration when one has no value, or one it cannot
    hold), an entry's own values (an instance's table in option `constants`) winning over the shared."""
    options = config.options_for(shader.path)
    constants = link_constants(shader.rel, shader.source, shader.entries, options.constants_for)
    instances, conformances = _spelled(shader)
    return CompileJob(
        shader.rel,
        shader.entries,
        options,
        str(config.root),
        instances=instances,
        conformances=conformances,
        constants=constants,
        source=shader.compiled_source(),
    )


def shader_constants(config: BuildConfig, shader: Shader) -> dict[str, tuple[LinkConstant, ...]]:
    """Each entry's link-time constants and their values, as its compile job has them (what
    ``hatch-slang show`` lists); {} for every entry when the values are missing or wrong (the
    build says why)."""
    try:
        return dict(compile_job_for(config, shader).constants)
    except HatchSlangError:
        return {}


def _with_constants(config: BuildConfig, shader: Shader) -> Shader:
    """``shader`` with the values of the link-time constants its Dispatch lines name, each
    entry's own where they differ."""
    return grid_with_constants(shader, shader_constants(config, shader))


def checked_specs(
    config: BuildConfig,
    shaders: list[Shader],
    errors: dict[str, list[HatchSlangError]],
    *,
    strict: bool,
    cache: BuildCache | None = None,
    progress: Progress | None = None,
) -> tuple[list[tuple[ShaderSpec, CompileResult]], list[Shader]]:
    """The specs of ``shaders`` (in order) that compiled and agree with their comments, problems
    into ``errors``; and the shaders that were compiled.

    A cached result goes through exactly the checks a fresh one does (:func:`_spec`); one that
    fails them is a miss, discarded and compiled afresh, so that a damaged or planted cache entry
    never fails a build nor gets into its output: only the fresh result's problems are reported.
    """
    shaders = [_with_constants(config, s) for s in shaders]
    sizes = {s.rel: config.subgroup_size_for(s.path) for s in shaders}
    hits: dict[str, tuple[ShaderSpec, CompileResult]] = {}
    for shader in shaders if cache is not None else ():
        assert cache is not None
        hit = cache.lookup(shader)
        try:
            if hit is not None:
                hits[shader.rel] = (_spec(shader, hit, strict=strict, subgroup=sizes[shader.rel]), hit)
        except HatchSlangError:
            cache.discard(shader)
    todo = [s for s in shaders if s.rel not in hits]
    results, compiled = compile_shaders(config, todo, cache=cache, progress=progress, cached=len(hits))
    made = _specs(todo, results, errors, strict=strict, sizes=sizes)
    fresh = {spec.shader.rel: (spec, r) for spec, r in made}
    done = hits | fresh
    return [done[s.rel] for s in shaders if s.rel in done], compiled


def _spelled(
    shader: Shader,
) -> tuple[tuple[tuple[str, str], ...], tuple[tuple[str, str, tuple[str, ...]], ...]]:
    """What the compiler is asked for each instance of a generic entry (``gscale<float>``), and
    for each of an entry with interface-typed parameters (the function, the conforming types)."""
    generic = tuple((i.key, i.spelled) for i in shader.instances if not i.keywords)
    typed = tuple((i.key, i.generic, i.args) for i in shader.instances if i.keywords)
    return generic, typed


def _collect(errors: list[HatchSlangError], e: HatchSlangError) -> None:
    errors.extend(e.errors if isinstance(e, BuildErrors) else [e])


def _raise(errors: list[HatchSlangError]) -> None:
    if errors:
        raise errors[0] if len(errors) == 1 else BuildErrors(errors)


def _parse(
    config: BuildConfig, srcs: list[Source], errors: dict[str, list[HatchSlangError]], *, every: bool = False
) -> list[Shader]:
    """The shaders whose comments parsed; the others' problems go into ``errors`` (by file).
    With ``every`` (all the project's shaders), the names options ``instances`` and ``constants``
    give that no entry has (:func:`unused_option_names`)."""
    shaders: list[Shader] = []
    for src in srcs:
        try:
            shaders.append(parse(src, config.instances_for(src.path), config.map_for(src.path)))
        except HatchSlangError as e:
            _collect(errors.setdefault(src.rel, []), e)
    if every and not errors:
        for unused in unused_option_names(config, shaders):
            _collect(errors.setdefault("", []), unused)
    return shaders


def unused_option_names(config: BuildConfig, shaders: list[Shader]) -> list[HatchSlangError]:
    """An error for each entry the ``instances`` option (project-wide, or an override's) lists
    that no shader it applies to has as a generic entry (or one with interface-typed
    parameters), and for each entry's table of option ``constants`` that names no entry of
    those shaders: a misspelt name would otherwise change nothing, silently."""
    found: list[HatchSlangError] = []
    tables: list[tuple[str, list[Shader], Mapping[str, object], Mapping[str, object]]] = [
        ("", shaders, config.instances, dict(config.compile.entry_constants))
    ]
    for k, override in enumerate(config.overrides):
        own = {n: v for n, v in override.constants.items() if isinstance(v, Mapping)}
        tables.append(
            (
                ", ".join(override.shaders),
                [s for s in shaders if config.applies(k, s.path)],
                override.instances,
                own,
            )
        )
    for globs, mine, instances, constants in tables:
        of = f" of the override for {globs}" if globs else ""
        generics = sorted({i.generic for s in mine for i in s.instances})
        entries = sorted({e for s in mine for e in s.entries})
        for name in instances:
            if name not in generics:
                have = f"the generic entries: {', '.join(generics)}" if generics else "no generic entry there"
                found.append(
                    ConfigError(
                        f"option `{option_name(HookSettings, 'instances')}`{of} lists `{name}`, which no "
                        f"shader it applies to has as a generic entry ({have})"
                    )
                )
        for name in constants:
            if name not in entries:
                close = ", ".join(e for e in entries if e.startswith(name.split("_")[0])) or ", ".join(
                    entries[:8]
                )
                found.append(
                    ConfigError(
                        f"option `{option_name(HookSettings, 'constants')}`{of} has a table for `{name}`, "
                        f"which is no entry of a shader it applies to (entries: {close})"
                    )
                )
    return found


def _spec(shader: Shader, result: CompileResult, *, strict: bool, subgroup: int | None = None) -> ShaderSpec:
    """One shader's spec. Whatever goes wrong reading the compiler's output becomes a ShaderError
    naming the file, so that one odd reflection never hides the other files' problems behind a
    traceback."""
    try:
        return with_variants(with_subgroup_sizes(build_spec(shader, result, strict=strict), subgroup))
    except (ShaderError, CompileError, BuildErrors):
        raise
    except (HatchSlangError, SpirvError) as e:  # names no file: a SPIR-V module it could not read
        raise ShaderError(shader.rel, None, f"could not read the compiler's output: {e}") from e
    except Exception as e:  # KeyError, ValueError, json.JSONDecodeError, struct.error...
        raise ShaderError(
            shader.rel, None, f"could not read the compiler's reflection: {type(e).__name__}: {e}"
        ) from e


def _specs(
    shaders: list[Shader],
    results: list[CompileResult],
    errors: dict[str, list[HatchSlangError]],
    *,
    strict: bool,
    sizes: dict[str, int | None],
) -> list[tuple[ShaderSpec, CompileResult]]:
    """Specs of the shaders that compiled and agree with their comments; problems into ``errors``
    (``sizes``: each shader's ``subgroup-size`` option)."""
    specs: list[tuple[ShaderSpec, CompileResult]] = []
    for shader, result in zip(shaders, results):
        try:
            specs.append((_spec(shader, result, strict=strict, subgroup=sizes.get(shader.rel)), result))
        except HatchSlangError as e:
            _collect(errors.setdefault(shader.rel, []), e)
    return specs


def _generate(
    spec: ShaderSpec, templates: codegen.Templates, result: CompileResult, config: BuildConfig
) -> ShaderOutput:
    module = spec.shader.module
    ns = torch_ops.namespace(config.package, module) if config.torch_ops else None
    files = {f"{module}.py": codegen.render_module(spec, templates, ns, config.package).encode()}
    for entry in spec.entries:
        files[codegen.spv_name(module, entry.name)] = entry.spirv
    warnings = (*spec.warnings, *_outside_includes(spec.shader, result, config.root))
    return ShaderOutput(module, files, codegen.manifest_entry(spec), warnings, result.compiler)


def _outside_includes(shader: Shader, result: CompileResult, root: Path) -> list[str]:
    """A warning for each file the compiler read for ``shader`` from outside the project root
    (an ``#include`` or ``import`` through ``include-dirs``, a ``..`` path or a symbolic link):
    an sdist will not contain it. Named at the line that includes it, where that can be told."""
    real = root.resolve()
    said = []
    for dep in result.dependencies:
        path = (root / dep).resolve()
        if path == shader.path.resolve() or path.is_relative_to(real):
            continue
        line = next(
            (
                k
                for k, text in enumerate(shader.source.splitlines(), start=1)
                if re.match(r"\s*(#\s*include|(__exported\s+)?import)\b", text) and path.stem in text
            ),
            None,
        )
        at = f"{shader.rel}:{line}" if line else shader.rel
        said.append(
            f"{at}: warning: reads {path}, outside the project root: an sdist will not contain it, "
            "so a build from the sdist fails"
        )
    return said


def build(
    config: BuildConfig,
    *,
    only: list[str] | None = None,
    keep_from: Path | None = None,
    cache: BuildCache | None = None,
    progress: Progress | None = None,
) -> BuildOutput:
    """Build the package in memory.

    ``only`` names a subset of the configured shaders (see :func:`discover.select`); the
    others' modules, SPIR-V and manifest entries are then taken over from ``keep_from`` (the
    destination, when it holds a previous build) so that the package stays whole.
    """
    srcs, read_errors = read_sources(config.root, list(config.shaders))
    # Every problem of every file is reported, together, in the order of the files: a file that
    # cannot be read, parsed, compiled or checked does not stop the others from being tried.
    errors: dict[str, list[HatchSlangError]] = {}
    for e in read_errors:
        _collect(errors.setdefault(e.path if isinstance(e, ShaderError) else "", []), e)
    chosen = select(srcs, only) if only else srcs
    templates = codegen.Templates.load(config.templates)
    shaders = _parse(config, chosen, errors, every=not only)
    specs, compiled = checked_specs(
        config, shaders, errors, strict=config.strict, cache=cache, progress=progress
    )
    outputs = {spec.shader.rel: _generate(spec, templates, result, config) for spec, result in specs}
    _raise([e for rel in sorted(errors, key=lambda r: PurePosixPath(r).parts) for e in errors[rel]])
    built = [outputs[s.rel] for s in chosen]

    files: dict[str, bytes] = {}
    records: dict[str, manifest.Shader] = {}
    for out in built:
        files.update(out.files)
        records[out.module] = out.manifest
    kept: list[str] = []
    if only and keep_from is not None:
        others = {s.module for s in srcs} - {s.module for s in chosen}
        for module, old_entry, names in output.manifest_modules(keep_from):
            if module in others and all((keep_from / n).is_file() for n in names):
                records[module] = old_entry
                files.update((n, (keep_from / n).read_bytes()) for n in names)
                kept.append(module)
    compiler = built[0].compiler if built else ""
    files[codegen.MANIFEST] = codegen.render_manifest(records, compiler).encode()
    files["py.typed"] = b""
    init = config.package_dir / "__init__.py"
    if not init.is_file() or codegen.is_generated_init(init):
        files["__init__.py"] = codegen.render_init(sorted(records)).encode()
    return BuildOutput(
        files=files,
        modules=tuple(o.module for o in built),
        kernels=sum(name.endswith(".spv") for o in built for name in o.files),
        warnings=(*config.warnings, *(w for o in built for w in o.warnings)),
        compiler=compiler,
        compiled=tuple(s.rel for s in compiled),
        kept=tuple(sorted(kept)),
    )


def inspect(config: BuildConfig, name: str, *, cache: BuildCache | None = None) -> ShaderSpec:
    """One shader's merged contract and reflection, disagreements as warnings (``hatch-slang show``)."""
    every = sources(config.root, list(config.shaders))
    [src] = select(every, [name])[:1]
    shader = parse(src, config.instances_for(src.path), config.map_for(src.path))
    errors: dict[str, list[HatchSlangError]] = {}
    specs, _ = checked_specs(config, [shader], errors, strict=False, cache=cache)
    _raise(errors.get(shader.rel, []))
    # What a build would refuse in the options (a name they give that no entry has), said here.
    unused = unused_option_names(config, _parse(config, every, {}))
    return replace(specs[0][0], warnings=(*specs[0][0].warnings, *(str(e) for e in unused)))


def tree_outputs(config: BuildConfig) -> list[str]:
    """Root-relative paths of build outputs inside the project tree: generated files, the cache.

    These never belong in an sdist (it carries sources), nor in a wheel beside the files the
    wheel build generates itself.
    """
    root = config.root.resolve()
    out = [f"{config.package}/{n}" for n in sorted(output.generated_files(config.package_dir))]
    cache_dir = default_cache_dir(config.root).resolve()
    if cache_dir.is_relative_to(root) and cache_dir != root:
        out.append(cache_dir.relative_to(root).as_posix() + "/")
    return out
