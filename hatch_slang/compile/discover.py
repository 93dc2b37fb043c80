"""Find the shaders a project builds and decide each one's module name and entry points.

Two steps: :func:`sources` reads and hashes the files, :func:`parse` reads a source's comment
contract and entry points; the build parses every chosen source, and the cache looks a parsed
:class:`Shader` up (its entries are part of what a cached result must match). :func:`discover`
does both.
"""

from __future__ import annotations

import hashlib
import keyword
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TypeVar

from hatch_slang.comments.bindings import Note
from hatch_slang.comments.contract import (
    Contract,
    instance_key,
    parse_contract,
    source_lines,
    split_arguments,
)
from hatch_slang.comments.expr import ExprError, entry_name
from hatch_slang.compile.mapped import (
    MappedFunction,
    find_mapped,
    generated_entries,
    generated_source,
    has_map_lines,
)
from hatch_slang.config.project import glob_files
from hatch_slang.config.settings import HookSettings, option_name
from hatch_slang.errors import BuildErrors, ConfigError, HatchSlangError, ShaderError


@dataclass(frozen=True)
class Source:
    """A shader file as read, before its comments are parsed."""

    path: Path  # absolute
    rel: str  # relative to the project root, posix separators
    module: str
    source: str
    sha256: str


@dataclass(frozen=True)
class Shader:
    path: Path  # absolute
    rel: str  # relative to the project root, posix separators: what messages and the manifest show
    module: str  # the Python module the wrappers go in
    source: str
    sha256: str
    contract: Contract
    entries: tuple[str, ...]  # instances of generic entries by their keys (`gscale_float`)
    instances: tuple[Instance, ...] = ()
    notes: tuple[Note, ...] = ()  # what discovery decided that a reader should be told
    # Functions a `slang-map` line names (:mod:`hatch_slang.compile.mapped`): their generated
    # entries are among `entries`; what could not be mapped is a warning each.
    mapped: tuple[MappedFunction, ...] = ()
    map_warnings: tuple[Note, ...] = ()

    @property
    def generated(self) -> frozenset[str]:
        """The entries hatch-slang generated (for mapped functions), not the file's own."""
        return frozenset(generated_entries(self.mapped))

    def compiled_source(self) -> str:
        """What the compiler reads: the file's text, then the generated entries' (empty: the file)."""
        extra = generated_source(self.mapped)
        return self.source + "\n" + extra if extra else ""

    def instance(self, entry: str) -> Instance | None:
        """The instance of a generic entry that ``entry`` (a key of :attr:`entries`) is, or None."""
        return next((i for i in self.instances if i.key == entry), None)

    def spelled(self, entry: str) -> str:
        """How the compiler is asked for ``entry``: its name, or an instance's ``gscale<float>``."""
        i = self.instance(entry)
        return entry if i is None else i.spelled


@dataclass(frozen=True)
class Instance:
    """One instance of a generic entry point, built as an entry of its own."""

    key: str  # the entry, the manifest's key, the SPIR-V entry name and the wrapper: `gscale_float`
    generic: str  # the generic entry: `gscale`
    args: tuple[str, ...]  # its type arguments as written, whitespace dropped: ("float",)
    line: int | None  # the entries line naming it, else the generic's definition
    option: bool = False  # named by the `instances` option, not by the file
    # Where the entry is no generic but takes interface-typed parameters (`uniform IOp op`): their
    # names; `args` are then the conforming types they are built for, one each.
    keywords: tuple[str, ...] = ()
    # The generic's parameter names, one for each of `args` (`f<T : IFloat>`: ("T",)); a binding
    # line whose dtype is one of them takes its instance's argument as its dtype where that names one.
    params: tuple[str, ...] = ()

    def argument(self, param: str) -> str | None:
        """The type argument this instance gives the generic's parameter ``param``, or None."""
        if param in self.params and len(self.params) == len(self.args):
            return self.args[self.params.index(param)]
        return None

    @property
    def spelled(self) -> str:
        """What Slang is asked to compile: ``gscale<float>``."""
        return f"{self.generic}<{', '.join(self.args)}>"


def module_name(stem: str) -> str:
    """A Python module name for a shader file stem (``my-kernel`` -> ``my_kernel``)."""
    name = re.sub(r"\W", "_", stem, flags=re.ASCII)
    if not name or name[0].isdigit():
        name = f"k_{name}"
    if keyword.iskeyword(name) or name in {"manifest", "slangrt", "numpy"}:
        name = f"{name}_"
    return name


# Tokens of a shader, comments and string literals aside: strings are kept as tokens (the stage
# of `[shader("compute")]` is one) and never searched for code; preprocessor lines are skipped.
_TOKEN = re.compile(
    r"""
    (?P<skip>//[^\n]*|/\*.*?(?:\*/|\Z)|^[ \t]*\#(?:[^\n\\]|\\.)*)
    | (?P<string>"(?:[^"\\\n]|\\.)*"?|'(?:[^'\\\n]|\\.)*'?)
    | (?P<ident>[^\W\d]\w*)
    | (?P<number>\d\w*(?:\.\w*)?)
    | (?P<punct>\S)
    """,
    re.VERBOSE | re.DOTALL | re.MULTILINE,
)
# Words before a name that make `name(` a call, not a definition: `return f(x)`, `new T(x)`...
_NOT_A_TYPE = {"return", "if", "while", "for", "switch", "else", "case", "do", "new", "sizeof", "throw"}
# Words followed by `(` that are no function: `if (x)`, `for (...)`.
_NOT_A_NAME = {"if", "while", "for", "switch", "return", "sizeof", "catch"}


def _tokens(source: str) -> list[tuple[str, str, int]]:
    """(kind, text, offset) for each token of ``source``; kind is ``string``, ``ident``,
    ``number``, ``punct``."""
    out: list[tuple[str, str, int]] = []
    for m in _TOKEN.finditer(source):
        kind = m.lastgroup or "punct"
        if kind != "skip":
            out.append((kind, m.group(kind), m.start()))
    return out


def _close(tokens: list[tuple[str, str, int]], i: int) -> int:
    """The index just past the bracket that closes the one at ``tokens[i]``."""
    pairs = {"(": ")", "[": "]", "{": "}", "<": ">"}
    stack = [pairs[tokens[i][1]]]
    i += 1
    while i < len(tokens) and stack:
        text = tokens[i][1]
        if tokens[i][0] == "punct":
            if text in pairs:
                stack.append(pairs[text])
            elif text == stack[-1]:
                stack.pop()
        i += 1
    return i


@dataclass(frozen=True)
class _Function:
    name: str
    compute: bool  # marked [shader("compute")]
    numthreads: bool  # has a [numthreads(...)] attribute
    stage: str = ""  # another stage it is marked for ([shader("vertex")])
    generic: bool = False  # has type or value parameters (`f<T>(...)`, `__generic<T> ... f(...)`)
    line: int | None = None  # where its name is
    existential: tuple[str, ...] = ()  # its parameters of an interface type (`uniform IOp op`)
    type_params: tuple[str, ...] = ()  # its generic parameters' names (`f<T : IFloat, let N : int>`: T, N)
    value_params: frozenset[str] = frozenset()  # those of them that are values (`let N : int`)


def _generic_names(inner: list[tuple[str, str, int]]) -> tuple[tuple[str, ...], frozenset[str]]:
    """The parameter names of a generic parameter list's tokens (``T : IFloat, let N : int``:
    ``T``, ``N``): each part's first name after ``let``, ``typename`` or ``each``; and those
    that are values (``let``)."""
    names: list[str] = []
    values: set[str] = set()
    depth, first, value = 0, True, False
    for kind, text, _ in inner:
        if kind == "punct" and text in "(<[":
            depth += 1
        elif kind == "punct" and text in ")>]":
            depth -= 1
        elif kind == "punct" and text == "," and depth == 0:
            first, value = True, False
        elif kind == "ident" and depth == 0 and first and text == "let":
            value = True
        elif kind == "ident" and depth == 0 and first and text not in ("typename", "each"):
            names.append(text)
            if value:
                values.add(text)
            first = False
    return tuple(names), frozenset(values)


def _angle_end(tokens: list[tuple[str, str, int]], i: int) -> int | None:
    """The index just past the ``>`` that closes the ``<`` at ``tokens[i]`` (a generic's
    parameters); None if a declaration ends or a body starts first."""
    depth = 0
    for k in range(i, len(tokens)):
        kind, text, _ = tokens[k]
        if kind != "punct":
            continue
        if text == "<":
            depth += 1
        elif text == ">":
            depth -= 1
            if depth == 0:
                return k + 1
        elif text in ";{}":
            return None
    return None


def _parameters_at(tokens: list[tuple[str, str, int]], i: int) -> int | None:
    """Where the parameter list of a function named at ``tokens[i]`` opens: right after the name,
    or after its generic parameters (``f<T : IFloat, let N : int>(``); None if it is no function."""
    if i + 1 >= len(tokens) or tokens[i + 1][1] not in ("(", "<"):
        return None
    if tokens[i + 1][1] == "(":
        return i + 1
    end = _angle_end(tokens, i + 1)
    return end if end is not None and end < len(tokens) and tokens[end][1] == "(" else None


def _existential(params: list[tuple[str, str, int]], interfaces: set[str]) -> tuple[str, ...]:
    """The names of the parameters in ``params`` (a parameter list's tokens) whose type is one
    of ``interfaces`` (``uniform IOp op``)."""
    out: list[str] = []
    depth, words = 0, list[str]()
    for kind, text, _ in [*params, ("punct", ",", 0)]:
        if kind == "punct" and text in "(<[":
            depth += 1
        elif kind == "punct" and text in ")>]":
            depth -= 1
        elif kind == "punct" and text == "," and depth == 0:
            typed = [k for k, w in enumerate(words[:-1]) if w in interfaces]
            if typed and typed[-1] == len(words) - 2:
                out.append(words[-1])
            words = []
        elif kind == "ident" and depth == 0:
            words.append(text)
        elif kind == "punct" and text in ":=" and depth == 0:
            words.append("")  # `: SV_DispatchThreadID`, `= 0`: no more of the declaration
    return tuple(out)


def _attribute(tokens: list[tuple[str, str, int]], i: int) -> tuple[int, str | None]:
    """The attribute (or indexing) whose ``[`` is at ``tokens[i]``: where it ends, and what it
    says of an entry point: ``"numthreads"``, the stage a ``[shader("...")]`` names, or None."""
    end = _close(tokens, i)
    inner = tokens[i + 1 : end - 1]
    if len(inner) >= 2 and inner[0][1] == "[" and inner[-1][1] == "]":
        inner = inner[1:-1]  # `[[shader("compute")]]`, `[[numthreads(8, 8, 1)]]`
    prev = tokens[i - 1] if i else ("punct", ";", 0)
    # `a[i]`, `f(x)[0]`: indexing, no attribute.
    if (prev[0] in ("ident", "number") and prev[1] not in _NOT_A_TYPE) or prev[1] == ")" or not inner:
        return end, None
    if inner[0][1] == "shader":
        return end, next((t for k, t, _ in inner if k == "string"), "").strip("\"'").strip()
    return end, "numthreads" if inner[0][1] == "numthreads" else None


def _functions(source: str) -> list[_Function]:
    """Functions defined in ``source``, with what their attributes say, in order of appearance."""
    source = "\n".join(source_lines(source))  # Slang's lines: `//` ends at a lone `\r` too
    tokens = _tokens(source)
    interfaces = {tokens[k + 1][1] for k, t in enumerate(tokens[:-1]) if t[1] == "interface"}
    found: list[_Function] = []
    compute = numthreads = generic = False  # attributes seen since the last declaration ended
    other, outer = "", (tuple[str, ...](), frozenset[str]())  # another stage; `__generic<T>`'s parameters
    i = 0
    while i < len(tokens):
        kind, text, at = tokens[i]
        if text == "[" and kind == "punct":
            end, said = _attribute(tokens, i)
            if said == "numthreads":
                numthreads = True
            elif said is not None:
                compute = compute or said == "compute"
                other = other or ("" if compute else said)
            i = end  # other attributes (`[[vk::binding(0)]]`...) say nothing about entry points
            continue
        if kind == "punct" and text in ";{}=":  # a declaration ended, or a body starts
            compute = numthreads = generic = False
            other, outer = "", ((), frozenset())
            i += 1
            continue
        if text == "__generic" and i + 1 < len(tokens) and tokens[i + 1][1] == "<":
            generic = True  # `__generic<T> void f(...)`
            close = _angle_end(tokens, i + 1)
            outer = _generic_names(tokens[i + 2 : close - 1]) if close else ((), frozenset())
            i = close or i + 1
            continue
        params = _parameters_at(tokens, i) if kind == "ident" and i > 0 else None
        if params is not None:
            before = tokens[i - 1]
            is_definition = (before[0] == "ident" and before[1] not in _NOT_A_TYPE) or before[1] in (">", "]")
            if is_definition and text not in _NOT_A_NAME:
                end = _close(tokens, params)
                after = tokens[end][1] if end < len(tokens) else ""
                if after in ("{", ":", "throws", "->") or compute or numthreads or other:
                    line = source.count("\n", 0, at) + 1
                    typed = _existential(tokens[params + 1 : end - 1], interfaces)
                    own = _generic_names(tokens[i + 2 : params - 1])
                    generic = generic or params > i + 1
                    names = (outer[0] + own[0], outer[1] | own[1])
                    found.append(_Function(text, compute, numthreads, other, generic, line, typed, *names))
                    compute = numthreads = generic = False
                    other, outer = "", ((), frozenset())
                i = end
                continue
        i += 1
    return found


def default_entries(rel: str, stem: str, source: str) -> tuple[str, ...]:
    """The entry points of a shader with no `slang-entries` line.

    Every function marked ``[shader("compute")]``; failing that, every function with a
    ``[numthreads(...)]`` attribute (several: :func:`picked_entries` gives a note for each);
    failing that, the function named after the file, ``main`` or ``computeMain`` (the first of
    these that is defined); in a file with mapped functions (``slang-map``), only the marked
    ones (perhaps none). Comments, string literals and preprocessor lines are not read.
    Otherwise a :class:`ShaderError` lists what was found. A generic entry (``void f<T>(...)``)
    is a :class:`ShaderError` naming its line and the entries line that would build it.
    """
    functions = _functions(source)
    if has_map_lines(source):  # a file of mapped functions: its own entries are those marked so
        return _unique(f.name for f in functions if f.compute or f.numthreads)
    names, _ = picked_entries(rel, stem, functions)
    refuse_generic(rel, functions, names)
    return names


def picked_entries(rel: str, stem: str, functions: list[_Function]) -> tuple[tuple[str, ...], list[Note]]:
    """The default rule's entries (:func:`default_entries`), and a note for each that is an entry
    only because it has ``[numthreads]`` beside others."""
    marked = _unique(f.name for f in functions if f.compute)
    if marked:
        return marked, []
    threads = _unique(f.name for f in functions if f.numthreads)
    if len(threads) > 1:
        first = {f.name: f.line for f in reversed(functions) if f.numthreads}
        others = ", ".join(f"`{n}`" for n in threads)
        return threads, [
            Note(
                first[n] or 1,
                f'`{n}` is an entry point: no function is marked [shader("compute")], so each '
                f"with [numthreads] is one ({others}); list the entries with `// slang-entries: ...` "
                "to build fewer",
            )
            for n in threads
        ]
    if threads:
        return threads, []
    defined = {f.name for f in functions}
    for name in (stem, "main", "computeMain"):
        if name in defined:
            return (name,), []
    staged = [f for f in functions if f.stage]
    if staged:
        listed = ", ".join(f"`{f.name}` ({f.stage})" for f in staged)
        raise ShaderError(
            rel,
            None,
            f"has no compute entry point, only entries for other stages: {listed}; hatch-slang builds "
            f"compute kernels: leave this file out of `{option_name(HookSettings, 'shaders')}`",
        )
    raise ShaderError(
        rel,
        None,
        'cannot tell the entry points (no function marked [shader("compute")] or [numthreads(...)], '
        f"and none named `{stem}`, `main` or `computeMain`); add `// slang-entries: ...`",
    )


def _generic(functions: list[_Function], name: str) -> _Function | None:
    """The generic function an entry named ``name`` would be: one marked as an entry, or the
    only kind of function of that name the file defines."""
    same = [f for f in functions if f.name == name]
    generic = [f for f in same if f.generic or f.existential]
    marked = [f for f in generic if f.compute or f.numthreads]
    if marked:
        return marked[0]
    return generic[0] if generic and len(generic) == len(same) else None


def refuse_generic(
    rel: str, functions: list[_Function], names: Iterable[str], listed_at: int | None = None
) -> None:
    """A :class:`ShaderError` naming the line of the first entry in ``names`` that is generic:
    it has no instance to build."""
    for name in names:
        f = _generic(functions, name)
        if f is not None:
            what, a, b = "is generic (it has type or value parameters)", "float", "half"
            if len(f.type_params) > 1:  # one argument per parameter: `f<float, 4>`
                a = ", ".join(_example(f, p, "float", "4") for p in f.type_params)
                b = ", ".join(_example(f, p, "half", "8") for p in f.type_params)
            if not f.generic:
                typed = ", ".join(f"`{p}`" for p in f.existential)
                what = f"takes parameters of an interface type ({typed}), each built for a type that conforms"
                numbered = len(f.existential) > 1  # one conforming type per parameter
                a, b = (
                    ", ".join(f"Type{x}{k if numbered else ''}" for k in range(1, len(f.existential) + 1))
                    for x in "AB"
                )
            raise ShaderError(
                rel,
                f.line if f.line is not None else listed_at,
                f"entry point `{name}` {what} and no instance of "
                f"it is listed: add its instances, as in `// slang-entries: {name}<{a}> {name}<{b}>`, "
                f"or in the `{option_name(HookSettings, 'instances')}` option "
                f'(`{option_name(HookSettings, "instances")} = {{ {name} = ["{a}", "{b}"] }}`)'
                + (" (one type per parameter, in order)" if "," in a else ""),
            )


def _example(f: _Function, param: str, type_: str, value: str) -> str:
    """An example argument for a generic parameter: ``value`` for a value parameter; ``type_``
    for the first type parameter and a placeholder named after any other."""
    if param in f.value_params:
        return value
    types = [p for p in f.type_params if p not in f.value_params]
    return type_ if types and param == types[0] else f"{param}{'1' if type_ == 'float' else '2'}"


def _instances(
    rel: str,
    contract: Contract,
    functions: list[_Function],
    names: tuple[str, ...],
    option: Mapping[str, tuple[str, ...]],
) -> tuple[tuple[str, ...], tuple[Instance, ...]]:
    """``names`` with each generic entry replaced by its instances (the entries lines', then the
    ``instances`` option's); a generic entry with none, an instance of no generic function, or
    two instances of one name are :class:`ShaderError` s naming the line."""
    listed: dict[str, list[Instance]] = {}
    for line, text in contract.instances:
        generic, _, inner = text.partition("<")
        args = split_arguments(inner[:-1])
        if args is None:
            raise ShaderError(rel, line, f"cannot read the type arguments of instance `{text}`")
        listed.setdefault(generic, []).append(Instance(instance_key(generic, args), generic, args, line))
    entries: list[str] = []
    found: dict[str, Instance] = {}
    for name in names:
        f = _generic(functions, name)
        if f is None:
            if name in listed:
                first = listed[name][0]
                raise ShaderError(
                    rel,
                    first.line,
                    f"`{first.spelled}` names an instance of `{name}`, which this file does not "
                    "define as a generic function (`void f<T>(...)`)",
                )
            entries.append(name)
            continue
        mine = listed.get(name, []) + _from_option(rel, name, f.line, option.get(name, ()))
        if not mine:
            refuse_generic(rel, functions, [name], contract.entries_line)
        if not f.generic:
            mine = [_conforming(rel, f, inst) for inst in mine]
        else:
            mine = [replace(inst, params=f.type_params) for inst in mine]
        for inst in mine:
            if (seen := found.get(inst.key)) is not None and seen.args != inst.args:
                raise ShaderError(
                    rel,
                    inst.line,
                    f"instances `{inst.spelled}` and `{seen.spelled}` (line {seen.line}) would both be "
                    f"the entry `{inst.key}`; list one of them",
                )
            if seen is None:
                found[inst.key] = inst
                entries.append(inst.key)
    return tuple(entries), tuple(found.values())


def _conforming(rel: str, f: _Function, inst: Instance) -> Instance:
    """An instance of an entry with interface-typed parameters: one conforming type for each."""
    if len(inst.args) != len(f.existential):
        typed = ", ".join(f"`{p}`" for p in f.existential)
        raise ShaderError(
            rel,
            inst.line,
            f"`{inst.spelled}` gives {len(inst.args)} type(s) for the {len(f.existential)} "
            f"interface-typed parameter(s) of `{f.name}` ({typed})",
        )
    return replace(inst, keywords=f.existential)


def _from_option(rel: str, name: str, line: int | None, texts: tuple[str, ...]) -> list[Instance]:
    out: list[Instance] = []
    for text in texts:
        args = split_arguments(text)
        if args is None:
            raise ShaderError(
                rel,
                line,
                f"cannot read the type arguments `{text}` that the "
                f"`{option_name(HookSettings, 'instances')}` option lists for `{name}`",
            )
        out.append(Instance(instance_key(name, args), name, args, line, option=True))
    return out


def _unique(names: Iterable[str]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(names))


def find_shaders(root: Path, patterns: list[str]) -> list[Path]:
    """Expand the configured globs, relative to ``root``, into a sorted list of files (each
    inside the root: see :func:`hatch_slang.config.project.glob_files`)."""
    option = option_name(HookSettings, "shaders")
    return sorted({p.resolve() for pattern in patterns for p in glob_files(root, option, pattern)})


def read_source(root: Path, path: Path) -> Source:
    """Read one shader; ``root`` and ``path`` are resolved (absolute, no symlinks)."""
    data = path.read_bytes()
    rel = path.relative_to(root).as_posix() if path.is_relative_to(root) else str(path)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise ShaderError(rel, None, f"not UTF-8 text ({e.reason} at byte {e.start})") from None
    # Every reader after this one sees Slang's lines, `\n`-terminated, without the BOM.
    source = "\n".join(source_lines(text))
    return Source(path, rel, module_name(path.stem), source, hashlib.sha256(data).hexdigest())


def parse(
    src: Source, instances: Mapping[str, tuple[str, ...]] | None = None, mapped: tuple[str, ...] = ()
) -> Shader:
    """Read the comment contract and decide the entry points; ``instances`` (the ``instances``
    option for this file: entry -> type-argument texts) adds instances of generic entries,
    ``mapped`` (the ``map`` option's names for it) functions to map."""
    contract = parse_contract(src.rel, src.source)
    functions = _functions(src.source)
    maps = has_map_lines(src.source) or bool(mapped)
    modules = imported_modules(src.path, src.source) if maps else []
    functions_mapped, said = find_mapped(src.source, modules, mapped) if maps else ((), [])
    notes: list[Note] = []
    if contract.declares_entries:
        generics = (t.partition("<")[0] for _, t in contract.instances)
        names = _unique([*contract.entries, *generics])
    elif maps:  # the file's own entries: only those marked so (a mapped function is none)
        names = _unique(f.name for f in functions if f.compute or f.numthreads)
    else:
        names, notes = _default_names(src, contract, functions)
    entries, found = _instances(src.rel, contract, functions, names, instances or {})
    shader = Shader(
        src.path,
        src.rel,
        src.module,
        src.source,
        src.sha256,
        contract,
        (*entries, *generated_entries(functions_mapped)),
        found,
        tuple(notes),
        functions_mapped,
        tuple(Note(line, msg) for line, msg in said),
    )
    entry_functions(shader)  # an entry no wrapper can be named after fails here, before compiling
    return shader


_IMPORT = re.compile(
    r'^\s*(?:(?:__include|import)\s+(?P<module>[\w.\-]+|"[^"]+")\s*;|#\s*include\s+"(?P<file>[^"]+)")', re.M
)


def imported_modules(path: Path, source: str, depth: int = 3) -> list[tuple[str, str]]:
    """The files ``source`` (the shader at ``path``) imports or includes, found beside it
    (``import a.b;`` is ``a/b.slang``, ``-`` for ``_`` too), each once, ``depth`` levels deep:
    (their path relative to the shader's directory, their text). What cannot be found or read
    is left out: the compiler says so, if it matters."""
    found: dict[Path, str] = {}

    def walk(at: Path, text: str, level: int) -> None:
        for m in _IMPORT.finditer(text):
            name = m.group("module") or ""
            if m.group("file"):
                candidates = [at.parent / m.group("file")]
            elif name.startswith('"'):
                candidates = [at.parent / name.strip('"')]
            else:
                stem = name.replace(".", "/")
                candidates = [at.parent / f"{stem}.slang", at.parent / f"{stem.replace('_', '-')}.slang"]
            for c in candidates:
                c = c.resolve()
                if c in found or c == path.resolve() or not c.is_file():
                    continue
                try:
                    found[c] = c.read_text(encoding="utf-8", errors="replace")
                except OSError:
                    continue
                if level > 1:
                    walk(c, found[c], level - 1)
                break

    walk(path, source, depth)
    base = path.resolve().parent
    return [
        (c.relative_to(base).as_posix() if c.is_relative_to(base) else str(c), t) for c, t in found.items()
    ]


def _default_names(
    src: Source, contract: Contract, functions: list[_Function]
) -> tuple[tuple[str, ...], list[Note]]:
    try:
        return picked_entries(src.rel, src.path.stem, functions)
    except ShaderError as e:
        # An entries line that could not be read: say so where the default rule gives up.
        rejected = [
            n for n in contract.notes if n.line == contract.entries_line or "entry point" in n.message
        ]
        if not rejected:
            raise
        raise ShaderError(
            src.rel, rejected[0].line, f"{e.message} (the entries line says: {rejected[0].message})"
        ) from None


@dataclass(frozen=True)
class EntryFunction:
    """An entry point and the wrapper function generated for it."""

    entry: str  # as Slang spells it: the SPIR-V entry point, the manifest's key
    python: str  # the function (:func:`hatch_slang.comments.expr.entry_name`)
    line: int | None  # the entries line that names it, else the line that defines it


def entry_functions(shader: Shader) -> tuple[EntryFunction, ...]:
    """The wrapper function of each of ``shader``'s entries.

    A :class:`ShaderError` naming the line when an entry cannot have one (``__init__``) or when
    two entries would have the same one (``ﬁll`` and ``fill``, ``lambda`` and ``lambda_``).
    """
    c = shader.contract
    defined = {f.name: f.line for f in reversed(_functions(shader.source))} if not c.declares_entries else {}
    out: dict[str, EntryFunction] = {}
    for name in shader.entries:
        inst = shader.instance(name)
        line = inst.line if inst else c.entries_line if c.declares_entries else defined.get(name)
        try:
            python = entry_name(name)
        except ExprError as e:
            raise ShaderError(shader.rel, line, f"entry point {e}") from None
        if python in out:
            first = out[python]
            raise ShaderError(
                shader.rel,
                line,
                f"entry points `{name}` and `{first.entry}` (line {first.line}) are the same Python "
                f"name `{python}`; rename one",
            )
        out[python] = EntryFunction(name, python, line)
    return tuple(out.values())


def read_sources(root: Path, patterns: list[str]) -> tuple[list[Source], list[HatchSlangError]]:
    """Every configured shader that could be read, and a problem for each that could not (not
    UTF-8, a module name another file has already, the package's own ``__init__``)."""
    real = root.resolve()
    found: list[Source] = []
    errors: list[HatchSlangError] = []
    by_module: dict[str, Source] = {}
    for path in find_shaders(root, patterns):
        try:
            s = read_source(real, path)
        except ShaderError as e:
            errors.append(e)
            continue
        if s.module in by_module:
            errors.append(
                ShaderError(
                    s.rel,
                    None,
                    f"module name `{s.module}` also used by {by_module[s.module].rel}; rename one",
                )
            )
        elif s.module == "__init__":  # its wrapper module would be overwritten by the package's
            errors.append(
                ShaderError(s.rel, None, "its module would be the package's own `__init__`; rename the file")
            )
        else:
            by_module[s.module] = s
            found.append(s)
    return found, errors


def sources(root: Path, patterns: list[str]) -> list[Source]:
    """Read every configured shader; module names must be unique."""
    found, errors = read_sources(root, patterns)
    if errors:
        raise errors[0] if len(errors) == 1 else BuildErrors(errors)
    return found


def discover(
    root: Path, patterns: list[str], instances: Mapping[str, tuple[str, ...]] | None = None
) -> list[Shader]:
    return [parse(s, instances) for s in sources(root, patterns)]


_S = TypeVar("_S", Source, Shader)


def select(shaders: list[_S], names: list[str], cwd: Path | None = None) -> list[_S]:
    """The configured shaders that ``names`` pick, in discovery order.

    A name is a module name or file stem (``moe_combine``), a file name (``moe_combine.slang``),
    or a path relative to the project root or to ``cwd``.
    """
    picked: dict[str, _S] = {}
    for name in names:
        as_path = Path(cwd or Path.cwd(), name).resolve()
        found = [
            s for s in shaders if name in (s.module, s.path.stem, s.path.name, s.rel) or s.path == as_path
        ]
        if not found:
            known = ", ".join(s.module for s in shaders)
            raise ConfigError(f"no configured shader is called `{name}`; the shaders are: {known}")
        picked.update((s.rel, s) for s in found)
    return [s for s in shaders if s.rel in picked]
