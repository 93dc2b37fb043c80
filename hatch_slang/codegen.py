"""Generate the Python wrapper module of a shader, and the package manifest, from specs.

Output is deterministic (same specs, same bytes), already formatted as ``ruff format`` would
format it, fully annotated for ``mypy --strict``. Names in it are validated identifiers;
expressions are the re-rendered whitelisted ASTs of :mod:`hatch_slang.expr`; comment text only
appears inside docstrings, escaped.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from string import Template

from hatch_slang import __version__
from hatch_slang.contract import DTYPES
from hatch_slang.settings import TEMPLATE_FILES
from hatch_slang.spec import BufferSpec, EntrySpec, ParamSlot, ShaderSpec

LINE = 88
MANIFEST = "manifest.json"
# Format 2: bindings may carry "set" (descriptor set, default 0), entries "push_size" (bytes of
# push constants, default 0). slangrt reads formats 1 and 2.
MANIFEST_FORMAT = 2


@dataclass(frozen=True)
class Templates:
    module: Template
    function: Template
    digest: str  # part of the build cache key

    @classmethod
    def load(cls, directory: Path | None = None) -> Templates:
        texts = []
        for name in TEMPLATE_FILES:
            if directory is not None:  # config checked that it holds them all
                texts.append((directory / name).read_text(encoding="utf-8"))
            else:
                texts.append(_default_template(name))
        digest = hashlib.sha256("\0".join(texts).encode()).hexdigest()
        return cls(Template(texts[0]), Template(texts[1]), digest)


def _default_template(name: str) -> str:
    shipped = resources.files("hatch_slang").joinpath("templates", name)
    if shipped.is_file():
        return shipped.read_text(encoding="utf-8")
    # Running from a source checkout: the templates live at the repository's top level.
    return (Path(__file__).resolve().parent.parent / "templates" / name).read_text(encoding="utf-8")


def spv_name(module: str, entry: str) -> str:
    return f"{module}.{entry}.spv"


def render_module(spec: ShaderSpec, templates: Templates) -> str:
    functions = "".join(_render_function(spec, e, templates) for e in spec.entries)
    names = ", ".join(_lit(e.name) for e in spec.entries)
    text = templates.module.substitute(
        version=__version__,
        source=spec.shader.rel,
        docstring=_escape_doc(f"Wrappers for the Slang kernels in ``{spec.shader.rel}``."),
        all=names,
        functions=functions,
    )
    return text.rstrip("\n") + "\n"


def _annotation(b: BufferSpec) -> str:
    if b.dtype is None:
        return "npt.NDArray[Any] | slangrt.Tensor"
    return f"npt.NDArray[np.{DTYPES[b.dtype]}] | slangrt.Tensor"


def _render_function(spec: ShaderSpec, e: EntrySpec, templates: Templates) -> str:
    data = [b for b in e.buffers if b.role == "data"]
    slots = {p.name: p for b in e.buffers for p in b.params}
    params = [f"    {b.name}: {_annotation(b)}," for b in data]
    kw: list[str] = []
    for name in e.params_required:
        kw.append(f"    {name}: {_scalar_annotation(slots[name])},")
    for name in e.grid_only:
        kw.append(f"    {name}: int,")
    for name in e.params_optional:
        kw.append(f"    {name}: {_scalar_annotation(slots[name])} | None = None,")
    for name in e.params_unread:
        kw.append(
            f"    {name}: {_scalar_annotation(slots[name])} = {'0.0' if slots[name].as_float else '0'},"
        )
    if e.grid is None:
        kw.append("    grid: tuple[int, int, int],")
    if kw:
        params += ["    *,", *kw]
    parameters = "\n" + "\n".join(params) + "\n" if params else ""

    body: list[str] = [f"_d = _c.Dims({_lit(spec.shader.module + '.' + e.name)})"]
    for name in (*e.params_optional, *e.grid_only):
        body.append(f"_d.given({_lit(name)}, {name})")
    for b in data:
        if b.shape_checked and b.shape is not None:
            dims = [
                _lit(d.names[0]) if d.is_name else str(d.constant) if d.constant is not None else "None"
                for d in b.shape
            ]
            shape = "(" + ", ".join(dims) + ("," if len(dims) == 1 else "") + ")"
        else:
            shape = "None"
        body += _call(
            f"_{b.name} = _d.array(",
            [
                _lit(b.name),
                b.name,
                _lit(DTYPES[b.dtype]) if b.dtype else "None",
                shape,
                f"writable={b.writable}",
                f"checked={b.shape_checked}",
                *(["flat=True"] if b.flat else []),
            ],
        )
    needed = _names_needed(e)
    for name in e.inferable:
        if name in needed:
            body.append(f"{name} = _d.get({_lit(name)})")
    for b in data:
        for axis, d in enumerate(b.shape or ()):
            if not d.is_name and d.constant is None:
                body += _call("_d.expect(", [_lit(b.name), str(axis), _lit(d.text), d.python])
    for b in e.buffers:
        for p in b.params:
            if p.derived is not None:
                body.append(f"{p.name} = _d.derived({_lit(p.name)}, {p.derived.python})")
    for b in e.buffers:
        if b.role == "params":
            fields = [
                f"({_lit(p.name or 'literal')}, {p.offset}, {_lit(p.scalar)}, {_value(p, e)})"
                for p in b.params
            ]
            packed = _tuple(fields)
            if 4 + len(f"_{b.name} = _d.pack({_lit(b.name)}, {b.params_size}, {packed})") > LINE:
                packed = "(\n" + "".join(f"    {f},\n" for f in fields) + ")"
            body += _call(f"_{b.name} = _d.pack(", [_lit(b.name), str(b.params_size), packed])
    if e.grid is not None:
        axes = [f"_c.grid_dim({_lit('xyz'[i])}, {g.python})" for i, g in enumerate(e.grid)]
        axes += ["1"] * (3 - len(axes))
        body += _call("_grid = (", axes, close=")")
    else:
        body.append("_grid = _c.grid_arg(grid)")
    bound = [b for b in e.buffers if b.kind != "push"]
    push = next((b for b in e.buffers if b.kind == "push"), None)
    keys = {b.name: str(b.index) if not b.set else f"({b.set}, {b.index})" for b in bound}
    buffers = ["{", *[f"    {keys[b.name]}: _{b.name}," for b in bound], "}"] if bound else ["{}"]
    body += ["_d.run(", f"    _LIB.kernel({_lit(spec.shader.module)}, {_lit(e.name)}),"]
    body += ["    " + line for line in buffers[:-1]] + ["    " + buffers[-1] + ","]
    body += ["    _grid,", *([f"    push=_{push.name},"] if push else []), ")"]

    return templates.function.substitute(
        name=e.name,
        parameters=parameters,
        docstring=_docstring(spec, e),
        body="\n".join("    " + line if line else "" for line in body),
    )


def _value(p: ParamSlot, e: EntrySpec) -> str:
    if not p.name:
        return str(p.literal)
    return p.name


def _scalar_annotation(p: ParamSlot) -> str:
    return "slangrt.Tensor" if p.scalar == "ptr" else "float" if p.as_float else "int"


def _names_needed(e: EntrySpec) -> set[str]:
    names: set[str] = set()
    for g in e.grid or ():
        names.update(g.names)
    for b in e.buffers:
        names.update(p.name for p in b.params if p.name)
        for p in b.params:
            names.update(p.derived.names if p.derived else ())
        for d in b.shape or ():
            if not d.is_name:
                names.update(d.names)
    return names


def _call(head: str, args: Sequence[str], close: str = ")") -> list[str]:
    """Lay out ``head(args)`` (inside a function body) as ruff format would keep it.

    On one line when it fits; otherwise one argument per line with a trailing comma, which ruff
    format keeps as it is (the "magic trailing comma").
    """
    one = head + ", ".join(args) + close
    if 4 + len(one) <= LINE:
        return [one]
    lines = [head]
    for a in args:
        lines += ["    " + part for part in f"{a},".split("\n")]
    return [*lines, close]


def _tuple(items: Sequence[str]) -> str:
    return "(" + ", ".join(items) + ("," if len(items) == 1 else "") + ")"


def _lit(text: str) -> str:
    """A double-quoted Python string literal (ruff's preferred quotes) for ``text``."""
    out = json.dumps(text, ensure_ascii=True)
    return out


def _escape_doc(text: str) -> str:
    """Text that is safe inside a triple-quoted docstring and reads the same."""
    text = text.replace("\\", "\\\\").replace('"""', '\\"\\"\\"').replace("\t", "    ")
    text = "".join(
        ch
        if ch == "\n" or ch.isprintable()
        else f"\\x{ord(ch):02x}"
        if ord(ch) < 256
        else f"\\u{ord(ch):04x}"
        if ord(ch) < 0x10000
        else f"\\U{ord(ch):08x}"
        for ch in text
    )
    text = "\n".join(line.rstrip() for line in text.split("\n"))
    if text.endswith('"'):
        text += " "
    return text


def _described(prose: str, name: str) -> str:
    """The comment's own sentence about a field: one that opens with it (`` `name` ...``, ``name:``)."""
    text = " ".join(prose.split())
    m = re.search(
        rf"(?:^|(?<=[.!?]\s))(?:`{re.escape(name)}`|{re.escape(name)}\s*:)\s*(?P<s>[^.!?]*[.!?]?)", text
    )
    if m is None:
        return ""
    sentence = m.group(0).strip()
    return sentence if len(sentence) <= 240 else sentence[:237].rstrip() + "..."


def _docstring(spec: ShaderSpec, e: EntrySpec) -> str:
    prose = spec.shader.contract.prose
    lines = prose.split("\n") if prose else [f"Run the `{e.name}` kernel of {spec.shader.rel}."]
    lines += ["", "Args:"]
    for b in e.buffers:
        if b.role == "data":
            dtype = b.dtype or "any dtype"
            shape = "".join(f"[{d.text}]" for d in b.shape) if b.shape else ""
            shape = f"flat{shape}" if b.flat else shape
            shape = f" ``{shape}``" if shape else (" (any shape)" if not b.shape_checked else " (1-D)")
            access = "read-write" if b.writable else "read-only"
            lines.append(f"    {b.name}: {dtype}{shape}, {access}. {b.doc}".rstrip())
    owner = {p.name: (b, p) for b in e.buffers for p in b.params if p.name}
    # In the signature's order: required fields, grid-only sizes, inferred dims, unread fields.
    for name in (*e.params_required, *e.grid_only, *e.params_optional, *e.params_unread):
        if name in e.grid_only:
            what = "int, a size the Dispatch line uses (not a params field or array dimension)"
        else:
            b, p = owner[name]
            what = f"`{b.name}` field ({'pointer: a slangrt.Tensor' if p.scalar == 'ptr' else p.scalar})"
            if name in e.params_optional:
                what += "; inferred from the arrays when omitted"
            if name in e.params_unread:
                what += "; this entry does not read it (default 0)"
        said = _described(prose, name)
        lines.append(f"    {name}: {what}." + (f" {said}" if said else ""))
    if e.grid is None:
        lines.append("    grid: thread groups to dispatch, (x, y, z).")
    lines.append("")
    if e.grid_text:
        lines.append(e.grid_text)
    lines.append(f"Threads per group: {e.threads[0]} x {e.threads[1]} x {e.threads[2]}.")
    text = _escape_doc("\n".join(lines))
    indented = "\n".join(("    " + line) if line and i else line for i, line in enumerate(text.split("\n")))
    return indented + "\n    "


def manifest_entry(spec: ShaderSpec) -> dict[str, object]:
    entries: dict[str, object] = {}
    for e in spec.entries:
        entries[e.name] = {
            "spirv": spv_name(spec.shader.module, e.name),
            "spirv_sha256": hashlib.sha256(e.spirv).hexdigest(),
            "threads": list(e.threads),
            **(
                {"push_size": push[0]}
                if (push := [b.params_size for b in e.buffers if b.kind == "push"])
                else {}
            ),
            "grid": [g.text for g in e.grid] if e.grid is not None else None,
            "bindings": [
                {
                    "binding": b.index,
                    **({"set": b.set} if b.set else {}),
                    "name": b.name,
                    "role": b.role,
                    "kind": b.kind,
                    "writable": b.writable,
                    "dtype": b.dtype,
                    "shape": [d.text for d in b.shape] if b.shape is not None else None,
                    **({"flat": True} if b.flat else {}),
                    "params": [[p.name, p.offset, p.scalar] for p in b.params],
                    "params_size": b.params_size,
                }
                for b in e.buffers
                if b.kind != "push"
            ],
        }
    return {"source": spec.shader.rel, "sha256": spec.shader.sha256, "entries": entries}


def render_manifest(shaders: dict[str, dict[str, object]], compiler: str) -> str:
    doc = {
        "format": MANIFEST_FORMAT,
        "generator": f"hatch-slang {__version__}",
        "compiler": f"slang {compiler}",
        "shaders": shaders,
    }
    return json.dumps(doc, indent=2, sort_keys=True) + "\n"
