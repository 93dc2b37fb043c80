"""Mapped functions (``// slang-map: poly``): a Slang function applied elementwise over arrays.

A comment line ``slang-map: f g`` anywhere in a shader names functions of the file to map. Each
becomes generated compute entries, compiled with the file (its text, then theirs, as one
translation unit: the file's own lines keep their numbers):

- ``_hs_map_<f>``: ``f`` at every element of the arguments' broadcast shape (NumPy's rule, over
  the element shape: a ``float3`` parameter takes arrays shaped ``(..., 3)``); its return value
  and ``out``/``inout`` parameters are written to arrays of that shape;
- ``_hs_vjp_<f>`` (a ``[Differentiable]`` function): ``bwd_diff(f)`` at every element, one
  gradient array of the broadcast shape per differentiable parameter;
- ``_hs_jvp_<f>``: ``fwd_diff(f)``, the tangent of the return value;
- ``_hs_sum_<type>``: a gradient summed over the axes its argument was broadcast along.

Every entry reads a ``uint`` array first (``hs_meta``, :func:`slangrt.wrapper_api.map_call`
fills it): the element count, the threads in a row of the grid, the rank and the broadcast
shape, then per array read whether it is indexed directly or through strides (``0`` on a
broadcast axis). What this module cannot read (a parameter type it does not map, a function it
cannot find) is a warning naming the line, and the function is left unmapped.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, replace

from hatch_slang.comments.contract import source_lines

__all__ = ["MAP_ELEMENTS", "MAP_GROUP", "MapParam", "MappedFunction", "find_mapped", "generated_source"]

MAP_GROUP = 256  # threads per group of every generated entry
# elements each thread of a map, vjp or jvp entry computes: element t + j * T for j < this, T the
# threads the runtime asks for (hs_meta[3]); every load of all of them is issued before the first
# store (a store may alias a later load), so each thread has this many reads in flight
MAP_ELEMENTS = 4
_MAX_RANK = 8

_MAP_LINE = re.compile(r"^\s*//+!?\s*slang-map\s*:(?P<names>.*)$", re.IGNORECASE)
# Slang's scalar types a mapped parameter may have: name -> (NumPy dtype, differentiable)
_SCALARS = {
    "float": ("float32", True),
    "float32_t": ("float32", True),
    "double": ("float64", True),
    "float64_t": ("float64", True),
    "half": ("float16", True),
    "float16_t": ("float16", True),
    "int": ("int32", False),
    "int32_t": ("int32", False),
    "uint": ("uint32", False),
    "uint32_t": ("uint32", False),
}
_VECTOR = re.compile(r"^(?P<scalar>[a-z]+(?:\d\d_t)?)(?P<n>[234])$")
_VECTOR_T = re.compile(r"^vector<(?P<scalar>\w+),(?P<n>[234])>$")


@dataclass(frozen=True)
class MapParam:
    """A parameter of a mapped function (or its return value, named ``result``)."""

    name: str
    slang: str  # its type as the generated code spells it (`float3`)
    dtype: str  # the NumPy dtype of its elements (`float32`)
    shape: tuple[int, ...]  # the element's own axes: () for a scalar, (3,) for a float3
    direction: str  # "in", "out" or "inout"
    diff: bool  # differentiable: a float type, not `no_diff`
    # A struct of the file: its fields (scalars and vectors, as parameters are), whose NumPy
    # dtype is the generated module's structured dtype for it (`dtype` is "void" here).
    fields: tuple[MapParam, ...] = ()


@dataclass(frozen=True)
class MappedFunction:
    name: str  # the Slang function, and the Python object that applies it (`poly`)
    line: int
    params: tuple[MapParam, ...]
    result: MapParam | None  # None: the function returns void
    differentiable: bool  # marked [Differentiable]: a vjp and a jvp entry too
    # An instance of a generic function (`poly<float>`): its type arguments; `key` names its
    # entries (`poly_float`), and `poly` picks the instance by the arguments' dtypes.
    args: tuple[str, ...] = ()
    origin: str = ""  # the imported module that defines it (`line` is there); "": the file

    @property
    def key(self) -> str:
        return "_".join([self.name, *(re.sub(r"\W", "", a) for a in self.args)])

    @property
    def callee(self) -> str:
        """How the generated code names the function (``poly<float>``)."""
        return f"{self.name}<{', '.join(self.args)}>" if self.args else self.name

    @property
    def inputs(self) -> tuple[MapParam, ...]:
        return tuple(p for p in self.params if p.direction != "out")

    @property
    def outputs(self) -> tuple[MapParam, ...]:
        """What a call returns: the return value, then each out/inout parameter."""
        own = (self.result,) if self.result is not None else ()
        return own + tuple(p for p in self.params if p.direction != "in")

    @property
    def grads(self) -> tuple[MapParam, ...]:
        """The parameters a vjp gives a gradient for."""
        return tuple(p for p in self.params if p.diff)

    @property
    def has_gradients(self) -> bool:
        """Whether vjp and jvp entries are generated (outputs other than the return value, or
        no differentiable result, are not differentiated yet)."""
        simple = all(p.direction == "in" for p in self.params) and any(p.diff for p in self.params)
        return self.differentiable and simple and self.result is not None and self.result.diff

    def entries(self) -> tuple[str, ...]:
        """The generated entries for this function, in build order."""
        own = [f"_hs_map_{self.key}"]
        if self.has_gradients:
            own += [f"_hs_vjp_{self.key}", f"_hs_jvp_{self.key}"]
        return tuple(own)


def sum_entry(param: MapParam) -> str:
    """The entry that sums a gradient of ``param``'s scalar type over broadcast axes (a vector's
    components are an axis of their own: ``_hs_sum_float`` for a float3 too)."""
    return f"_hs_sum_{param.slang if param.fields else param.slang.removeprefix('vector<').split(',')[0]}"


_STRUCT = re.compile(
    r"\bstruct\s+(?P<name>[A-Za-z_]\w*)\s*(?::\s*(?P<bases>[\w\s,]+?))?\s*\{(?P<body>[^{}]*)\}", re.ASCII
)


def _structs(code: str) -> dict[str, MapParam]:
    """The structs of ``code`` made only of scalar and vector fields (``no_diff`` ones allowed), as
    a parameter of that type would be (its fields in order); a struct is differentiable where it
    declares IDifferentiable."""
    out: dict[str, MapParam] = {}
    for m in _STRUCT.finditer(code):
        fields: list[MapParam] = []
        for decl in m.group("body").split(";"):
            if not decl.strip():
                continue
            words = decl.replace(",", " , ").split()
            no_diff = "no_diff" in words
            words = [w for w in words if w != "no_diff"]
            got = _type(words[0]) if words else None
            names = [w for w in words[1:] if w != ","]
            if got is None or not names or not all(_IDENT.match(n) for n in names):
                break
            slang, dtype, shape, diff = got
            fields += [MapParam(n, slang, dtype, shape, "in", diff and not no_diff) for n in names]
        else:
            bases = {b.strip() for b in (m.group("bases") or "").split(",")}
            name = m.group("name")
            diff = "IDifferentiable" in bases and any(f.diff for f in fields)
            if fields:
                out[name] = MapParam(name, name, "void", (), "in", diff, tuple(fields))
    return out


Structs = dict[str, MapParam]  # the file's structs a mapped function may take (`_structs`)


def _type(text: str, structs: Structs | None = None) -> tuple[str, str, tuple[int, ...], bool] | None:
    """(Slang spelling, dtype, element shape, differentiable) of a parameter type, or None."""
    text = text.replace(" ", "")
    if structs and text in structs:
        st = structs[text]
        return st.slang, "void", (), st.diff
    if text in _SCALARS:
        dtype, diff = _SCALARS[text]
        return text, dtype, (), diff
    m = _VECTOR.match(text) or _VECTOR_T.match(text)
    if m and m.group("scalar") in _SCALARS:
        dtype, diff = _SCALARS[m.group("scalar")]
        n = int(m.group("n"))
        return f"vector<{m.group('scalar')},{n}>", dtype, (n,), diff
    return None


_IDENT = re.compile(r"^[A-Za-z_]\w*$", re.ASCII)
_MODIFIERS = {"in", "out", "inout", "no_diff", "const"}


def _parameter(text: str, line: int, structs: Structs) -> MapParam | str:
    """One parameter's declaration (``no_diff float a``), or why it cannot be mapped."""
    decl = text.split("=")[0].split(":")[0].strip()
    words = decl.replace("<", " < ").replace(">", " > ").replace(",", " , ").split()
    if not words or not _IDENT.match(words[-1]):
        return f"cannot read the parameter `{text.strip()}`"
    name, rest = words[-1], words[:-1]
    mods = [w for w in rest if w in _MODIFIERS]
    typ = "".join(w for w in rest if w not in _MODIFIERS)
    got = _type(typ, structs)
    if got is None:
        return (
            f"parameter `{name}` has type `{typ}`, which a mapped function cannot take yet (scalars "
            "and vectors of float, double, half, int and uint, and structs of the file made of them)"
        )
    direction = "inout" if "inout" in mods else "out" if "out" in mods else "in"
    slang, dtype, shape, diff = got
    fields = structs[slang].fields if slang in structs else ()
    return MapParam(name, slang, dtype, shape, direction, diff and "no_diff" not in mods, fields)


def _split(params: str) -> list[str]:
    """Top-level comma-separated parts of a parameter list."""
    parts, depth, cur = [], 0, ""
    for ch in params:
        depth += 1 if ch in "<([" else -1 if ch in ">)]" else 0
        if ch == "," and depth == 0:
            parts.append(cur)
            cur = ""
        else:
            cur += ch
    if cur.strip():
        parts.append(cur)
    return parts


def _strip_comments(source: str) -> str:
    """``source`` with comments blanked (newlines kept: offsets and line numbers stay)."""

    def blank(m: re.Match[str]) -> str:
        return re.sub(r"[^\n]", " ", m.group(0))

    return re.sub(r"//[^\n]*|/\*.*?(?:\*/|\Z)", blank, source, flags=re.DOTALL)


def _definition(code: str, name: str) -> re.Match[str] | None:
    pattern = (
        r"(?P<attrs>(?:\[[^\[\];{}]*\]\s*)*)"
        r"(?:(?:public|internal|private|static|inline)\s+)*"
        r"(?P<ret>\b[A-Za-z_][\w]*(?:\s*<[^<>;{}]*>)?)\s+"
        rf"{re.escape(name)}\s*(?:<(?P<generics>[^<>(){{}};]*)>)?\s*\((?P<params>[^(){{}};]*)\)\s*\{{"
    )
    return re.search(pattern, code)


def _substitute(text: str, names: list[str], args: tuple[str, ...]) -> str:
    """``text`` with each generic parameter ``names[i]`` replaced by ``args[i]``."""
    for n, a in zip(names, args, strict=True):
        text = re.sub(rf"\b{re.escape(n)}\b", a, text)
    return text


def _read(code: str, name: str, structs: Structs, args: tuple[str, ...] = ()) -> MappedFunction | str:
    m = _definition(code, name)
    if m is None:
        where = "is in this file or what it imports"
        return f"`slang-map` names `{name}`, but no definition `<type> {name}(...) {{` {where}"
    defined = code.count("\n", 0, m.start("ret")) + 1
    generics = [
        g.split(":")[0].split()[-1] for g in _split(m.group("generics") or "") if g.split(":")[0].split()
    ]
    if len(generics) != len(args):
        want = f"`{name}<{', '.join(generics)}>` with its type arguments" if generics else f"`{name}`"
        return f"`{name}` (line {defined}) takes {len(generics)} type arguments; name it as {want}"
    ret_text = _substitute(m.group("ret"), generics, args).replace(" ", "")
    result: MapParam | None = None
    if ret_text != "void":
        got = _type(ret_text, structs)
        if got is None:
            return f"`{name}` (line {defined}) returns `{ret_text}`, which a mapped function cannot return"
        slang, dtype, shape, diff = got
        fields = structs[slang].fields if slang in structs else ()
        result = MapParam("result", slang, dtype, shape, "out", diff, fields)
    params: list[MapParam] = []
    for part in _split(_substitute(m.group("params"), generics, args)):
        p = _parameter(part, defined, structs)
        if isinstance(p, str):
            return f"`{name}` (line {defined}): {p}"
        params.append(p)
    if not params:
        return f"`{name}` (line {defined}) takes no parameter: there is nothing to map it over"
    if len({p.name for p in params} | {"result"}) != len(params) + 1:
        return (
            f"`{name}` (line {defined}): a parameter is called `result`, the name of the return "
            "value's output (or two parameters share a name); rename it"
        )
    if any(p.name.startswith("hs_") for p in params):
        return f"`{name}` (line {defined}): parameter names starting `hs_` are the generated code's"
    attrs = m.group("attrs")
    diff = bool(re.search(r"\b(?:Differentiable|BackwardDifferentiable)\b", attrs))
    if result is None and not any(p.direction != "in" for p in params):
        return f"`{name}` (line {defined}) returns nothing and writes no out parameter"
    return MappedFunction(name, defined, tuple(params), result, diff, args)


def _caveats(code: str, f: MappedFunction) -> list[str]:
    """What a reader of the function would expect that its mapping does not give."""
    out: list[str] = []
    defined = len(re.findall(rf"\b{re.escape(f.name)}\s*(?:<[^<>(){{}};]*>)?\s*\([^(){{}};]*\)\s*\{{", code))
    if defined > 1:
        out.append(f"`{f.name}` has {defined} definitions (overloads): the first, line {f.line}, is mapped")
    if f.differentiable and not f.has_gradients:
        why = (
            "it has out or inout parameters"
            if any(p.direction != "in" for p in f.params)
            else "no parameter is differentiable"
            if not f.grads
            else "its return value is not differentiable"
        )
        out.append(f"`{f.callee}` is [Differentiable], but no vjp or jvp is made for it: {why}")
    return out


def has_map_lines(source: str) -> bool:
    """Whether ``source`` has a ``slang-map`` line (its own entries are then only those marked)."""
    return any(_MAP_LINE.match(line) for line in source_lines(source))


def find_mapped(
    source: str, modules: Sequence[tuple[str, str]] = (), option: Sequence[str] = ()
) -> tuple[tuple[MappedFunction, ...], list[tuple[int, str]]]:
    """The functions ``source``'s ``slang-map`` lines name (then those ``option`` names, the
    ``map`` option's: as a line would, said of line 1), and a (line, warning) for each name
    that cannot be mapped. A function the file does not define is looked for in ``modules``
    (the files it imports or includes: (path as messages name it, text))."""
    code = _strip_comments("\n".join(source_lines(source)))
    others = [(rel, _strip_comments("\n".join(source_lines(text)))) for rel, text in modules]
    structs: Structs = {}
    for _, other in reversed(others):
        structs.update(_structs(other))
    structs.update(_structs(code))
    found: dict[str, MappedFunction] = {}
    warned: set[str] = set()
    warnings: list[tuple[int, str]] = []
    lines = [
        (n, m.group("names"))
        for n, t in enumerate(source_lines(source), start=1)
        if (m := _MAP_LINE.match(t))
    ]
    lines += [(1, f"{name} ") for name in option]  # (the option's, each as a line of its own)
    for number, names in lines:
        for item in _ITEM.finditer(names):
            name, inner = item.group("name"), item.group("args")
            args = tuple(a.replace(" ", "") for a in _split(inner)) if inner is not None else ()
            spelled = f"{name}<{', '.join(args)}>" if args else name
            if spelled in found or spelled in warned:
                continue
            warned.add(spelled)
            if not _IDENT.match(name) or any(not _TYPE_ARG.match(a) for a in args):
                warnings.append((number, f"`slang-map` names `{spelled}`, which is no function (left out)"))
                continue
            if name.startswith(("_hs", "hs_")):
                warnings.append(
                    (number, f"`{name}`: names starting `_hs` or `hs_` are the generated code's (left out)")
                )
                continue
            origin, where = next(
                ((rel, c) for rel, c in [("", code), *others] if _definition(c, name) is not None), ("", code)
            )
            got = _read(where, name, structs, args)
            if isinstance(got, MappedFunction) and origin:
                got = replace(got, origin=origin)
            if isinstance(got, str):
                warnings.append((number, f"{got} (left out)"))
                continue
            found[spelled] = got
            warnings += [(number, w) for w in _caveats(where, got)]
    return tuple(found.values()), warnings


_ITEM = re.compile(r"(?P<name>[^\s,<>]+)\s*(?:<(?P<args>[^<>]*)>)?")
_TYPE_ARG = re.compile(r"^[A-Za-z_][\w]*(?:<[\w, ]*>)?$|^\d+$")


# -- generated Slang ---------------------------------------------------------------------------

_HELPERS = """
// ---- generated by hatch-slang for `slang-map`: indexing through broadcast strides ----
// hs_meta: [0] elements, [1] threads in a row of the grid, [2] rank R, [3] threads T (each
// computes elements t + j * T), [4, 4 + R) the shape, then for each array read: a flag (0:
// indexed directly, 1: through the R strides after it).
uint hs_index(uint3 hs_tid, StructuredBuffer<uint> hs_meta)
{
    return hs_tid.x + hs_tid.y * hs_meta[1];
}

uint hs_offset(StructuredBuffer<uint> hs_meta, uint hs_i, uint hs_k)
{
    uint hs_r = hs_meta[2];
    uint hs_at = 4 + hs_r + hs_k * (hs_r + 1);
    if (hs_meta[hs_at] == 0)
        return hs_i;
    uint hs_off = 0;
    uint hs_rem = hs_i;
    for (int hs_d = int(hs_r) - 1; hs_d >= 0; hs_d--)
    {
        uint hs_n = hs_meta[4 + hs_d];
        hs_off += (hs_rem % hs_n) * hs_meta[hs_at + 1 + hs_d];
        hs_rem /= hs_n;
    }
    return hs_off;
}
"""


def _head(entry: str) -> list[str]:
    return [
        "",
        '[shader("compute")]',
        f"[numthreads({MAP_GROUP}, 1, 1)]",
        f"void {entry}(",
        "    uint3 hs_tid : SV_DispatchThreadID,",
        "    uniform StructuredBuffer<uint> hs_meta,",
    ]


def _params(decls: list[str]) -> list[str]:
    return [f"    {d}," for d in decls[:-1]] + [f"    {decls[-1]})", "{"]


class _Reads:
    """The values an entry reads for each of its elements, as arrays of :data:`MAP_ELEMENTS`
    filled before the first element is computed."""

    def __init__(self) -> None:
        self.decls: list[str] = []
        self.loads: list[str] = []

    def __call__(self, p: MapParam, buf: str, k: int) -> str:
        """``p``'s value in ``buf`` (read through slot ``k``) for the element being computed."""
        v = f"hs_l{len(self.decls)}"
        self.decls.append(f"    {p.slang} {v}[{MAP_ELEMENTS}];")
        self.loads.append(f"        {v}[hs_j] = {_load(p, buf, k)};")
        return f"{v}[hs_j]"


def _elements(reads: _Reads, body: list[str]) -> list[str]:
    """An entry's statements: ``body`` (computing element ``hs_i`` from ``reads``' values at
    ``hs_j``) for each element of the thread, after every load (an index past the last element
    reads the last: the loads need no branch)."""
    loop = [
        "    [ForceUnroll]",
        f"    for (uint hs_j = 0; hs_j < {MAP_ELEMENTS}; hs_j++)",
        "    {",
    ]
    return [
        "    uint hs_t = hs_index(hs_tid, hs_meta);",
        "    uint hs_T = hs_meta[3];",
        "    if (hs_t >= hs_T)",
        "        return;",
        "    uint hs_n = hs_meta[0];",
        *reads.decls,
        *loop,
        "        uint hs_i = min(hs_t + hs_j * hs_T, hs_n - 1);",
        *reads.loads,
        "    }",
        *loop,
        "        uint hs_i = hs_t + hs_j * hs_T;",
        "        if (hs_i >= hs_n)",
        "            break;",
        *("    " + line for line in body),
        "    }",
    ]


def _scalar(p: MapParam) -> str:
    """The element type of the buffers of ``p``: vectors are held as their scalars (no padding),
    a struct as itself (its layout the generated module's structured dtype)."""
    return p.slang if p.fields else p.slang.removeprefix("vector<").split(",")[0]


def _first(p: MapParam) -> tuple[str, str]:
    """(the path from a buffer element of ``p`` to its first scalar, that scalar's type)."""
    if not p.fields:
        return "", _scalar(p)
    f = p.fields[0]
    return f".{f.name}" + ("[0]" if f.shape else ""), _scalar(f)


def _to_d(p: MapParam, value: str) -> str:
    """``value`` of ``p``'s type as its Differential (a struct's: `hs_to_d_S`)."""
    return f"hs_to_d_{p.slang}({value})" if p.fields else value


def _from_d(p: MapParam, value: str) -> str:
    return f"hs_from_d_{p.slang}({value})" if p.fields else value


def _conversions(st: MapParam) -> list[str]:
    """A differentiable struct to and from its Differential, field by field (a field that has
    no derivative is 0 in a gradient)."""
    to = [f"    hs_d.{f.name} = hs_s.{f.name};" for f in st.fields if f.diff]
    back = [f"    hs_s.{f.name} = {('hs_d.' + f.name) if f.diff else f.slang + '(0)'};" for f in st.fields]
    return [
        "",
        f"{st.slang}.Differential hs_to_d_{st.slang}({st.slang} hs_s)",
        "{",
        f"    {st.slang}.Differential hs_d;",
        *to,
        "    return hs_d;",
        "}",
        "",
        f"{st.slang} hs_from_d_{st.slang}({st.slang}.Differential hs_d)",
        "{",
        f"    {st.slang} hs_s;",
        *back,
        "    return hs_s;",
        "}",
    ]


def _buffer(p: MapParam, name: str, writable: bool) -> str:
    kind = "RWStructuredBuffer" if writable else "StructuredBuffer"
    return f"uniform {kind}<{_scalar(p)}> {name}"


def _load(p: MapParam, buf: str, k: int) -> str:
    """``p``'s value in ``buf`` for the element the thread computes (read through slot ``k``)."""
    at = f"hs_offset(hs_meta, hs_i, {k})"
    if not p.shape:
        return f"{buf}[{at}]"
    n = p.shape[0]
    return f"{p.slang}(" + ", ".join(f"{buf}[{at} * {n} + {c}]" for c in range(n)) + ")"


def _store(p: MapParam, buf: str, value: str) -> list[str]:
    if not p.shape:
        return [f"    {buf}[hs_i] = {value};"]
    n = p.shape[0]
    return (
        [f"    {{ {p.slang} hs_w = {value};"]
        + [f"      {buf}[hs_i * {n} + {c}] = hs_w[{c}];" for c in range(n)]
        + ["    }"]
    )


def _keep(reads: list[tuple[MapParam, str]], out: tuple[MapParam, str]) -> list[str]:
    """Lines that read every buffer of ``reads`` (type, name) where no thread goes (no rank is
    0xFFFFFFFF): the compiler keeps each a binding even where the function's value does not
    depend on it, so that every entry takes every array its wrapper is given."""
    terms = " + ".join(f"uint({n}[0]{_first(p)[0]})" for p, n in reads)
    p, buf = out
    path, scalar = _first(p)
    return ["    if (hs_meta[2] == 0xFFFFFFFF)", f"        {buf}[0]{path} = {scalar}({terms});"]


def _forward(f: MappedFunction) -> list[str]:
    reads = [_buffer(p, p.name, False) for p in f.inputs]
    writes = [_buffer(p, f"hs_out_{p.name}", True) for p in f.outputs]
    values, body = _Reads(), []
    k = 0
    for p in f.params:
        if p.direction == "out":
            body.append(f"    {p.slang} hs_v_{p.name};")
        else:
            body.append(f"    {p.slang} hs_v_{p.name} = {values(p, p.name, k)};")
            k += 1
    call = f"{f.callee}({', '.join(f'hs_v_{p.name}' for p in f.params)})"
    if f.result is not None:
        body += _store(f.result, "hs_out_result", call)
    else:
        body.append(f"    {call};")
    for p in f.params:
        if p.direction != "in":
            body += _store(p, f"hs_out_{p.name}", f"hs_v_{p.name}")
    first = f.outputs[0]
    kept = _keep([(p, p.name) for p in f.inputs], (first, f"hs_out_{first.name}"))
    return [*_head(f"_hs_map_{f.key}"), *_params(reads + writes), *_elements(values, body), *kept, "}"]


def _vjp(f: MappedFunction) -> list[str]:
    assert f.result is not None
    reads = [_buffer(p, p.name, False) for p in f.params]
    reads.append(_buffer(f.result, "hs_grad", False))
    writes = [_buffer(p, f"hs_d_{p.name}", True) for p in f.grads]
    values, body, args = _Reads(), [], []
    for k, p in enumerate(f.params):
        if p.diff:
            body.append(f"    var hs_p_{p.name} = diffPair({values(p, p.name, k)});")
            args.append(f"hs_p_{p.name}")
        else:
            args.append(values(p, p.name, k))
    args.append(_to_d(f.result, values(f.result, "hs_grad", len(f.params))))
    body.append(f"    bwd_diff({f.callee})({', '.join(args)});")
    for p in f.grads:
        body += _store(p, f"hs_d_{p.name}", _from_d(p, f"hs_p_{p.name}.d"))
    first = f.grads[0]
    kept = [(p, p.name) for p in f.params] + [(f.result, "hs_grad")]
    tail = _keep(kept, (first, f"hs_d_{first.name}"))
    return [*_head(f"_hs_vjp_{f.key}"), *_params(reads + writes), *_elements(values, body), *tail, "}"]


def _jvp(f: MappedFunction) -> list[str]:
    assert f.result is not None
    reads = [_buffer(p, p.name, False) for p in f.params]
    reads += [_buffer(p, f"hs_t_{p.name}", False) for p in f.grads]
    writes = [_buffer(f.result, "hs_out_tangent", True)]
    values, args = _Reads(), []
    for k, p in enumerate(f.params):
        if p.diff:
            t = len(f.params) + f.grads.index(p)
            args.append(f"diffPair({values(p, p.name, k)}, {_to_d(p, values(p, f'hs_t_{p.name}', t))})")
        else:
            args.append(values(p, p.name, k))
    body = _store(f.result, "hs_out_tangent", _from_d(f.result, f"fwd_diff({f.callee})({', '.join(args)}).d"))
    kept = [(p, p.name) for p in f.params] + [(p, f"hs_t_{p.name}") for p in f.grads]
    tail = _keep(kept, (f.result, "hs_out_tangent"))
    return [*_head(f"_hs_jvp_{f.key}"), *_params(reads + writes), *_elements(values, body), *tail, "}"]


def _zero(p: MapParam) -> str:
    """``hs_s``, the sum, declared as zero."""
    if not p.fields:
        return f"{_scalar(p)} hs_s = {_scalar(p)}(0);"
    return f"{p.slang} hs_s;" + "".join(f" hs_s.{f.name} = {f.slang}(0);" for f in p.fields)


def _add(p: MapParam) -> str:
    """``hs_s`` += the element at ``hs_flat`` (a struct's: field by field)."""
    if not p.fields:
        return "hs_s += hs_src[hs_flat];"
    return f"{p.slang} hs_e = hs_src[hs_flat];" + "".join(
        f" hs_s.{f.name} += hs_e.{f.name};" for f in p.fields
    )


def _sum(param: MapParam) -> list[str]:
    """Each thread one chunk of one element of the reduced gradient: the sum over at most
    hs_meta[4 + 2R] of the elements it sums over the axes it was broadcast along (some drivers
    cut long loops short: lavapipe stops at 65535 iterations; the runtime sums the chunks'
    partial sums again). hs_meta: [0] threads (elements x chunks), [1] row threads, [2] rank R,
    [3, 3 + R) the full shape, [3 + R, 3 + 2R) the result's shape (1 on a summed axis),
    [3 + 2R] chunks per element, [4 + 2R] the chunk's length."""
    reads = [_buffer(param, "hs_src", False)]
    writes = [_buffer(param, "hs_dst", True)]
    body = f"""    uint hs_i = hs_index(hs_tid, hs_meta);
    if (hs_i >= hs_meta[0])
        return;
    uint hs_r = hs_meta[2];
    uint hs_chunks = hs_meta[3 + 2 * hs_r];
    uint hs_j = hs_i / hs_chunks;
    uint hs_first = (hs_i % hs_chunks) * hs_meta[4 + 2 * hs_r];
    uint hs_c[{_MAX_RANK}];
    uint hs_rem = hs_j;
    uint hs_count = 1;
    for (int hs_d = int(hs_r) - 1; hs_d >= 0; hs_d--)
    {{
        uint hs_n = hs_meta[3 + hs_r + hs_d];
        hs_c[hs_d] = hs_rem % hs_n;
        hs_rem /= hs_n;
        if (hs_n == 1)
            hs_count *= hs_meta[3 + hs_d];
    }}
    {_zero(param)}
    uint hs_end = min(hs_count, hs_first + hs_meta[4 + 2 * hs_r]);
    for (uint hs_t = hs_first; hs_t < hs_end; hs_t++)
    {{
        uint hs_left = hs_t;
        uint hs_flat = 0;
        uint hs_stride = 1;
        for (int hs_d = int(hs_r) - 1; hs_d >= 0; hs_d--)
        {{
            uint hs_full = hs_meta[3 + hs_d];
            uint hs_at = hs_c[hs_d];
            if (hs_meta[3 + hs_r + hs_d] == 1)
            {{
                hs_at = hs_left % hs_full;
                hs_left /= hs_full;
            }}
            hs_flat += hs_at * hs_stride;
            hs_stride *= hs_full;
        }}
        {_add(param)}
    }}
    hs_dst[hs_i] = hs_s;"""
    return [*_head(sum_entry(param)), *_params(reads + writes), body, "}"]


def generated_source(functions: tuple[MappedFunction, ...]) -> str:
    """The Slang text of every generated entry of ``functions`` (empty: none)."""
    if not functions:
        return ""
    lines = [_HELPERS]
    converted = {
        p.slang: p
        for f in functions
        if f.has_gradients
        for p in (*f.params, f.result)
        if p is not None and p.fields and p.diff
    }
    for st in converted.values():
        lines += _conversions(st)
    sums: dict[str, MapParam] = {}
    for f in functions:
        lines += _forward(f)
        if f.has_gradients:
            lines += _vjp(f) + _jvp(f)
            for p in f.grads:
                sums.setdefault(sum_entry(p), p)
    for p in sums.values():
        lines += _sum(p)
    return "\n".join(lines) + "\n"


def generated_entries(functions: tuple[MappedFunction, ...]) -> tuple[str, ...]:
    """The names of the entries :func:`generated_source` defines, in its order."""
    out = [e for f in functions for e in f.entries()]
    sums = dict.fromkeys(sum_entry(p) for f in functions if f.has_gradients for p in f.grads)
    return (*out, *sums)
