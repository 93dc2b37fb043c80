"""Drive the Slang compiler shipped inside the ``slangpy`` wheel, through its C API.

This is the only module that touches Slang. Compilation runs in worker processes: a native crash
in the compiler then becomes a build error naming the shader, not a dead ``pip``. Each worker
creates Slang's global session once (0.2-0.5 s) and reuses it for every shader it is given; the
parent process never loads the library, so a build that finds everything in the cache
(:mod:`hatch_slang.compile.cache`) never pays for it.
One compile request per entry point: several ``-entry`` flags in one request crash on code fetch.
An entry with link-time constants gets a second translation unit in its request, the module
:func:`hatch_slang.compile.constants.constants_module` writes, which Slang links with the shader.
"""

from __future__ import annotations

import contextlib
import ctypes
import faulthandler
import glob
import hashlib
import importlib.util
import json
import os
import re
import struct
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from slangrt.spirv import OP_ENTRY_POINT, instructions, words

from hatch_slang.compile.constants import MODULE_PATH, LinkConstant, constants_module, unresolved_hint
from hatch_slang.config.project import CompileOptions as CompileOptions  # re-exported: jobs carry them
from hatch_slang.config.settings import HookSettings, option_name
from hatch_slang.errors import CompileError, HatchSlangError

if TYPE_CHECKING:  # the pool's modules load only when something needs compiling
    import multiprocessing.context
    from concurrent.futures import ProcessPoolExecutor


def slang_args(options: CompileOptions) -> list[str]:
    """The Slang command-line arguments ``options`` stand for (after the path, target and entry).

    Here rather than in :mod:`hatch_slang.config.project`: this file's source is part of the build
    cache's key, so a change to how options reach Slang never reuses results made before."""
    out = [f"-O{options.optimization}"]
    for d in options.include_dirs:
        out += ["-I", d]
    for name, value in options.defines:
        out += ["-D", f"{name}={value}" if value else name]
    return out + list(options.compiler_args)


@dataclass(frozen=True)
class CompileJob:
    path: str  # as the compiler should see it (messages quote it), relative to `cwd`
    entries: tuple[str, ...]
    options: CompileOptions
    cwd: str
    # Per entry, the link-time constants it links with (:func:`hatch_slang.compile.constants.link_constants`
    # fills it; an instance of a generic entry may get values of its own): the caller fills it.
    # An entry not in it links with none.
    constants: Mapping[str, tuple[LinkConstant, ...]] = field(default_factory=dict)
    # Instances of generic entries: (entry, what `-entry` is given: `gscale<float>`). Slang names
    # the SPIR-V entry point and the reflection's after the generic (`gscale`); both are renamed
    # to the entry (`gscale_float`), the name the manifest and the runtime know it by.
    instances: tuple[tuple[str, str], ...] = ()
    # Instances of entries with interface-typed parameters: (entry, the function, the conforming
    # type of each such parameter). `-entry` names the function; the types specialize it.
    conformances: tuple[tuple[str, str, tuple[str, ...]], ...] = ()
    # Where not empty: the text compiled in place of the file's (the file's own, then the entries
    # :mod:`hatch_slang.compile.mapped` generates), under the file's path, so that messages and
    # relative includes read as they would from the file.
    source: str = ""
    # Where ``source`` is written for the compiler (a directory the caller removes); empty: a
    # temporary directory of the worker's own.
    scratch: str = ""


@dataclass(frozen=True)
class CompiledEntry:
    name: str
    spirv: bytes
    reflection: str  # the JSON slangc -reflection-json would print


@dataclass(frozen=True)
class CompileResult:
    path: str
    entries: tuple[CompiledEntry, ...] = ()
    dependencies: tuple[str, ...] = ()
    # CompileError from Slang; a ShaderError (or several) for what stopped a job being made
    error: HatchSlangError | None = None
    warnings: str = ""
    compiler: str = ""  # the Slang build tag that produced it


class _GlobalSessionDesc(ctypes.Structure):
    """``SlangGlobalSessionDesc`` (slang.h): what ``slang_createGlobalSession2`` reads."""

    _fields_ = [
        ("structureSize", ctypes.c_uint32),
        ("apiVersion", ctypes.c_uint32),  # SLANG_API_VERSION
        ("minLanguageVersion", ctypes.c_uint32),
        ("enableGLSL", ctypes.c_bool),
        ("reserved", ctypes.c_uint32 * 16),
    ]


_SLANG_LANGUAGE_VERSION_2025 = 2025  # the header's default for minLanguageVersion


@dataclass
class _Slang:
    lib: ctypes.CDLL
    session: int
    version: str


_WORKER: _Slang | None = None


def slang_library_path() -> Path:
    # Locate the package without importing it: importing slangpy loads its GPU runtime too.
    spec = importlib.util.find_spec("slangpy")
    if spec is None or not spec.submodule_search_locations:
        raise HatchSlangError(
            "the Slang compiler comes from the `slangpy` package, which is not installed; "
            "`pip install slangpy`"
        )
    here = Path(next(iter(spec.submodule_search_locations)))
    found = sorted(
        glob.glob(str(here / "libslang-compiler.so*")) + glob.glob(str(here / "slang-compiler.dll"))
    )
    found += sorted(glob.glob(str(here / "libslang-compiler*.dylib")))
    if not found:
        raise HatchSlangError(f"no Slang compiler library found in {here}")
    return Path(found[0])


def compiler_fingerprint() -> str:
    """Identify the installed compiler without loading it (part of every build-cache key).

    The library's file name carries Slang's version; its size tells builds of one version apart.
    The libraries beside it that it loads while compiling (``slang-glslang``, which validates and
    optimizes SPIR-V, and the ``glsl`` module) count the same way: any of them changing changes
    what a compile gives. The path is left out on purpose: isolated build environments install
    the same compiler in a new temporary directory each time, and their builds should share the
    cache.
    """
    lib = slang_library_path()
    libs = [lib, *sorted(p for p in lib.parent.glob("*slang-*") if p != lib and _is_library(p))]
    return ";".join(f"{p.name}:{p.stat().st_size}" for p in libs)


def _is_library(path: Path) -> bool:
    return path.is_file() and (".so" in path.suffixes or path.suffix in (".dll", ".dylib"))


def _load() -> _Slang:
    global _WORKER
    if _WORKER is None:
        lib = ctypes.CDLL(str(slang_library_path()))
        vp, cp, i = ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int
        sigs: dict[str, tuple[Any, list[Any]]] = {
            "slang_createGlobalSession2": (i, [ctypes.POINTER(_GlobalSessionDesc), ctypes.POINTER(vp)]),
            "spCreateCompileRequest": (vp, [vp]),
            "spDestroyCompileRequest": (None, [vp]),
            "spProcessCommandLineArguments": (i, [vp, ctypes.POINTER(cp), i]),
            "spCompile": (i, [vp]),
            "spGetDiagnosticOutput": (cp, [vp]),
            "spGetEntryPointCodeBlob": (i, [vp, i, i, ctypes.POINTER(vp)]),
            "spGetReflection": (vp, [vp]),
            "spReflection_ToJson": (i, [vp, vp, ctypes.POINTER(vp)]),
            "spGetDependencyFileCount": (i, [vp]),
            "spGetDependencyFilePath": (cp, [vp, i]),
            "spGetBuildTagString": (cp, []),
            "spAddTranslationUnit": (i, [vp, i, cp]),
            "spAddTranslationUnitSourceString": (None, [vp, i, cp, cp]),
            "spSetTypeNameForEntryPointExistentialTypeParam": (None, [vp, i, i, cp]),
        }
        for name, (res, args) in sigs.items():
            fn = getattr(lib, name)
            fn.restype = res
            fn.argtypes = args
        # A global session with GLSL enabled (its `glsl` module loaded), so that GLSL-style
        # shaders (`#version 450`, `layout(...) in;`, buffer blocks) compile; `spCreateSession`
        # makes one without it. The compile requests below take the global session as it is.
        desc = _GlobalSessionDesc(
            structureSize=ctypes.sizeof(_GlobalSessionDesc),
            apiVersion=0,
            minLanguageVersion=_SLANG_LANGUAGE_VERSION_2025,
            enableGLSL=True,
        )
        session = ctypes.c_void_p()
        if lib.slang_createGlobalSession2(ctypes.byref(desc), ctypes.byref(session)) < 0 or not session.value:
            raise HatchSlangError("the Slang compiler could not create a session")
        _WORKER = _Slang(lib, session.value, lib.spGetBuildTagString().decode())
    return _WORKER


def _blob(ptr: int) -> bytes:
    """Copy out and release an ISlangBlob (COM: slot 2 release, 3 pointer, 4 size)."""
    vtable = ctypes.cast(ctypes.c_void_p(ptr), ctypes.POINTER(ctypes.POINTER(ctypes.c_void_p)))[0]
    get_ptr = ctypes.CFUNCTYPE(ctypes.c_void_p, ctypes.c_void_p)(vtable[3])
    get_size = ctypes.CFUNCTYPE(ctypes.c_size_t, ctypes.c_void_p)(vtable[4])
    release = ctypes.CFUNCTYPE(ctypes.c_uint32, ctypes.c_void_p)(vtable[2])
    data = ctypes.string_at(get_ptr(ptr), get_size(ptr))
    release(ptr)
    return data


def compile_job(job: CompileJob) -> CompileResult:
    """Compile every entry of one shader, in this process."""
    if os.environ.get("HATCH_SLANG_TEST_CRASH") == Path(job.path).name:
        os.abort()  # test seam: a native compiler crash
    slang = _load()
    os.chdir(job.cwd)  # worker processes are single-threaded: changing directory is safe here
    entries: list[CompiledEntry] = []
    deps: dict[str, None] = {}
    warnings: list[str] = []
    with contextlib.ExitStack() as stack:
        tmp = job.scratch or (
            stack.enter_context(tempfile.TemporaryDirectory(prefix="hatch-slang-")) if job.source else ""
        )
        path = _source_file(job, tmp)
        for entry in job.entries:
            got = _compile_entry(slang, job, entry, path, deps)
            if isinstance(got, CompileError):
                return CompileResult(job.path, error=got)
            compiled, diag = got
            entries.append(compiled)
            if diag.strip():
                warnings.append(diag)
    return CompileResult(
        job.path, tuple(entries), tuple(deps), warnings="".join(warnings), compiler=slang.version
    )


def _compile_entry(
    slang: _Slang, job: CompileJob, entry: str, path: str, deps: dict[str, None]
) -> tuple[CompiledEntry, str] | CompileError:
    """One entry compiled (and its diagnostics), or why not; the files it read go into ``deps``."""
    spelled = dict(job.instances)
    typed = {e: (function, types) for e, function, types in job.conformances}
    spelled.update((e, function) for e, (function, _) in typed.items())
    req = slang.lib.spCreateCompileRequest(slang.session)
    try:
        if not _request(slang, req, job, entry, spelled.get(entry, entry), path):
            diag = _as_file((slang.lib.spGetDiagnosticOutput(req) or b"").decode(errors="replace"), job, path)
            return CompileError(job.path, entry, diag or "bad options")
        _link_constants(slang, req, job.constants.get(entry, ()))
        for slot, name in enumerate(typed.get(entry, ("", ()))[1]):
            slang.lib.spSetTypeNameForEntryPointExistentialTypeParam(req, 0, slot, name.encode())
        rc = slang.lib.spCompile(req)
        diag = _as_file((slang.lib.spGetDiagnosticOutput(req) or b"").decode(errors="replace"), job, path)
        if rc < 0:
            return CompileError(job.path, entry, _failure(diag, rc, spelled.get(entry), entry))
        out = _outputs(slang, req)
        if isinstance(out, str):
            return CompileError(job.path, entry, out)
        spirv, reflection = out
        for k in range(slang.lib.spGetDependencyFileCount(req)):
            dep = os.fsdecode(slang.lib.spGetDependencyFilePath(req, k))
            if dep != MODULE_PATH:  # the constants module: no file
                deps[_as_file(dep, job, path)] = None
        if entry in spelled:
            generic = spelled[entry].partition("<")[0]
            spirv, reflection = rename_entry(spirv, generic, entry), _renamed(reflection, entry)
        return CompiledEntry(entry, spirv, reflection), diag
    finally:
        slang.lib.spDestroyCompileRequest(req)


def _request(slang: _Slang, req: int, job: CompileJob, entry: str, spelled: str, path: str) -> bool:
    """Fill a compile request for one entry of the file at ``path`` (the job's, or a copy of
    ``job.source``: see :func:`_source_file`); False where Slang refused the arguments."""
    args = [path, "-target", "spirv", "-entry", spelled, "-stage", "compute", "-fvk-use-entrypoint-name"]
    if path != job.path:  # (the copy's includes and imports are found beside the file)
        args += ["-I", str(Path(job.cwd, job.path).parent)]
    args += [*slang_args(job.options), "-o", f"{entry}.spv"]
    argv = (ctypes.c_char_p * len(args))(*[a.encode() for a in args])
    return bool(slang.lib.spProcessCommandLineArguments(req, argv, len(args)) >= 0)


def _source_file(job: CompileJob, tmp: str) -> str:
    """Where the compiler reads the job's text: the file, or ``job.source`` written under the
    file's name into ``tmp`` (messages name the file again: :func:`_as_file`)."""
    if not job.source:
        return job.path
    own = Path(tmp, hashlib.sha256(job.path.encode()).hexdigest()[:16])  # (one per shader)
    own.mkdir(exist_ok=True)
    path = own / Path(job.path).name
    path.write_text(job.source, encoding="utf-8")
    return str(path)


def _as_file(text: str, job: CompileJob, path: str) -> str:
    """``text`` (diagnostics, a dependency) naming the job's file where it names the copy."""
    return text if path == job.path else text.replace(path, job.path)


def _failure(diag: str, rc: int, spelled: str | None, entry: str) -> str:
    """Why a compile failed: Slang's diagnostics, with what hatch-slang knows of the cause."""
    return (diag or f"code {rc}") + unresolved_hint(diag) + _instance_hint(spelled, entry, diag)


# Slang's errors that say an entry's type arguments are wrong (not its body): no entry point of
# that spelling, a type argument that does not conform, an identifier it does not know.
_TYPE_ARGUMENT_ERRORS = re.compile(r"error\[E(38000|38029|30015|30019)\]")


def _instance_hint(spelled: str | None, entry: str, diag: str = "") -> str:
    """What a failed compile of an instance of a generic entry was asked (Slang's own message
    may point at the file's first declaration, not at the instance); where Slang says a type
    argument is wrong, what a type argument must be."""
    if spelled is None or spelled == entry:
        return ""
    said = f"\n(while compiling the instance `{spelled}`"
    if not _TYPE_ARGUMENT_ERRORS.search(diag):
        return said + ")"
    return (
        f"{said}: each type argument must name a type the file declares or imports and meet the "
        "generic's constraints; the instance comes from the file's `slang-entries` line or the "
        f"`{option_name(HookSettings, 'instances')}` option)"
    )


def _outputs(slang: _Slang, req: int) -> tuple[bytes, str] | str:
    """A compiled request's SPIR-V and reflection JSON, or what is missing."""
    code = ctypes.c_void_p()
    if slang.lib.spGetEntryPointCodeBlob(req, 0, 0, ctypes.byref(code)) < 0 or not code.value:
        return "no SPIR-V produced"
    refl = ctypes.c_void_p()
    if slang.lib.spReflection_ToJson(slang.lib.spGetReflection(req), None, ctypes.byref(refl)) < 0:
        return "no reflection"
    return _blob(code.value), repair_json(_blob(refl.value or 0).decode(errors="replace"))


_SLANG_SOURCE_LANGUAGE_SLANG = 1  # SlangSourceLanguage (slang.h)


def _link_constants(slang: _Slang, req: int, constants: tuple[LinkConstant, ...]) -> None:
    """Add the module defining ``constants`` to the request, as a translation unit of its own:
    Slang links its ``export static const`` definitions with the shader's ``extern`` ones."""
    if constants:
        unit = slang.lib.spAddTranslationUnit(req, _SLANG_SOURCE_LANGUAGE_SLANG, b"hatch_slang_constants")
        source = constants_module(constants).encode()
        slang.lib.spAddTranslationUnitSourceString(req, unit, MODULE_PATH.encode(), source)


def rename_entry(spirv: bytes, old: str, new: str) -> bytes:
    """``spirv`` with its ``OpEntryPoint`` named ``old`` named ``new`` (its other operands kept:
    execution model, function, interface); unchanged when no entry point is named ``old``."""
    module = list(words(spirv))
    for i, op, count in instructions(tuple(module)):
        if op != OP_ENTRY_POINT or count < 4:
            continue
        raw = struct.pack(f"<{count - 3}I", *module[i + 3 : i + count])
        name = raw.split(b"\0", 1)[0]
        if name != old.encode():
            continue
        literal = new.encode() + b"\0" * (4 - len(new.encode()) % 4)
        named = list(struct.unpack(f"<{len(literal) // 4}I", literal))
        rest = module[i + 3 + (len(name) // 4 + 1) : i + count]
        head = [((3 + len(named) + len(rest)) << 16) | op, module[i + 1], module[i + 2]]
        module[i : i + count] = head + named + rest
        return struct.pack(f"<{len(module)}I", *module)
    return spirv


def _renamed(reflection: str, entry: str) -> str:
    """The reflection JSON with its (one) entry point named ``entry``."""
    data = json.loads(reflection)
    for ep in data.get("entryPoints", []):
        ep["name"] = entry
    return json.dumps(data, indent=2)


# Slang writes the shader's string literals (`printf` formats, say) into its reflection JSON with
# C escapes: `\a`, `\'`, octal `\303\251`, which are no JSON escapes. A backslash pair, or one
# that starts a JSON escape, is kept; any other backslash (group 1) is escaped.
_ESCAPES = re.compile(r'\\\\|\\(?=["/bfnrt]|u[0-9a-fA-F]{4})|(\\)')


def repair_json(text: str) -> str:
    """Slang's reflection JSON made valid: backslashes that start no JSON escape are escaped.

    ``"\\a\\303"`` becomes ``"\\\\a\\\\303"`` (the string keeps the C escape as text); valid
    JSON comes back unchanged.
    """
    if "\\" not in text:
        return text
    return _ESCAPES.sub(lambda m: "\\\\" if m.group(1) else m.group(0), text)


def _worker_init(parent: int) -> None:
    # A compiler crash is reported as a build error naming the shader; a Python traceback dump
    # from the dying worker (faulthandler, on under pytest) would only be noise on top of it.
    faulthandler.disable()
    _exit_with(parent)
    with contextlib.suppress(HatchSlangError):
        _load()  # if it fails, the first job fails the same way and carries the error back


def _exit_with(parent: int) -> None:
    """Exit when the build process does, however it ends.

    A forked worker holds both ends of the pool's pipes, so a build killed with SIGKILL (a CI
    timeout, the OOM killer) would otherwise leave it waiting for work forever, with its Slang
    session (some 200 MB) resident.
    """

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(0.5)
        os._exit(1)

    threading.Thread(target=watch, name="hatch-slang-watch-parent", daemon=True).start()


def _worker_version() -> str:
    return _load().version


@dataclass
class CompilerPool:
    """A pool of compiler worker processes, each holding one Slang session."""

    workers: int = field(default_factory=lambda: os.cpu_count() or 1)
    _pool: ProcessPoolExecutor | None = None

    def __enter__(self) -> CompilerPool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        # Waiting for the workers to exit (some 10 ms). A pool left to shut down on its own races
        # the interpreter's exit on Python < 3.12: concurrent.futures' exit hook writes to the
        # pool's wake-up pipe while the pool's manager thread closes it, and a build that ends
        # right after compiling (a compile error) printed "Exception ignored in: <module
        # 'threading'> ... OSError: [Errno 9] Bad file descriptor".
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None

    def version(self) -> str:
        """The Slang build tag, asked of a worker so that this process never loads Slang."""
        return self._executor(1).submit(_worker_version).result()

    def _executor(self, n_jobs: int) -> ProcessPoolExecutor:
        from concurrent.futures import ProcessPoolExecutor

        if self._pool is None:
            ctx = _mp_context()
            self._pool = ProcessPoolExecutor(
                max_workers=max(1, min(self.workers, n_jobs)),
                mp_context=ctx,
                initializer=_worker_init,
                initargs=(os.getpid(),),
            )
        return self._pool

    def compile(
        self, jobs: Sequence[CompileJob], progress: Callable[[CompileResult], None] | None = None
    ) -> list[CompileResult]:
        """Compile all jobs; results come back in job order. A crashed worker names its shader.

        Jobs are handed out one at a time, largest source first, to whichever worker is free:
        one job is 15-100 ms of compiling against well under 1 ms of hand-over, so finer
        balancing beats batching. ``progress`` is called as each job finishes.
        """
        from concurrent.futures import Future, as_completed
        from concurrent.futures.process import BrokenProcessPool

        if not jobs:
            return []
        pool = self._executor(len(jobs))
        order = sorted(range(len(jobs)), key=lambda k: -_size(jobs[k]))
        futures: dict[Future[CompileResult], int] = {pool.submit(compile_job, jobs[k]): k for k in order}
        results: list[CompileResult | None] = [None] * len(jobs)
        crashed = False

        def done(k: int, result: CompileResult) -> None:
            results[k] = result
            if progress is not None:
                progress(result)

        for fut in as_completed(futures):
            try:
                done(futures[fut], fut.result())
            except BrokenProcessPool:
                crashed = True
        if crashed:
            # The pool cannot say whose job killed it: retry the unfinished ones one process each.
            self.close()
            for k, job in enumerate(jobs):
                if results[k] is None:
                    done(k, _isolated(job))
        return [r for r in results if r is not None]


def _size(job: CompileJob) -> int:
    try:
        return (Path(job.cwd) / job.path).stat().st_size * len(job.entries)
    except OSError:
        return 0


def _mp_context() -> multiprocessing.context.BaseContext:
    import multiprocessing

    # fork on Linux: no re-import of the caller's __main__ (a build script without a main guard
    # works) and no interpreter start-up per worker; the parent never loads Slang, so a forked
    # worker starts clean. Elsewhere fork is unsafe and spawn is the default anyway.
    return multiprocessing.get_context("fork" if sys.platform.startswith("linux") else "spawn")


def _isolated(job: CompileJob) -> CompileResult:
    from concurrent.futures import ProcessPoolExecutor
    from concurrent.futures.process import BrokenProcessPool

    ctx = _mp_context()
    with ProcessPoolExecutor(
        max_workers=1, mp_context=ctx, initializer=_worker_init, initargs=(os.getpid(),)
    ) as pool:
        try:
            return pool.submit(compile_job, job).result()
        except BrokenProcessPool:
            return CompileResult(
                job.path,
                error=CompileError(job.path, None, "the Slang compiler crashed (worker process died)"),
            )
