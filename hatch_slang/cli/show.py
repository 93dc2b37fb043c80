"""What the commands print: `hatch-slang show`'s description of a kernel, `devices`' of a device,
and the column tables.

:func:`show_data` describes a :class:`~hatch_slang.spec.model.ShaderSpec` as plain data (the ``--json``
output): every binding with its register, access, dtype and shape, params fields and where each
comes from (a comment line or reflection), and per entry its group size, grid and the arguments
of its wrapper, and the forms of Slang's type system it is built with (:func:`_entry_types`: its
link-time constants and their values). :func:`print_show` prints that as tables; :func:`device_data` and
:func:`print_device` describe a Vulkan device; :func:`table` is the table printer.
"""

from __future__ import annotations

import re
import textwrap
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

import click

from hatch_slang.codegen.generics import pickers
from hatch_slang.codegen.wrappers import grid_keyword
from hatch_slang.compile.constants import LinkConstant
from hatch_slang.compile.discover import Shader
from hatch_slang.compile.mapped import MapParam
from hatch_slang.config.settings import HookSettings, option_name
from hatch_slang.spec.images import describe
from hatch_slang.spec.model import BufferSpec, EntrySpec, ParamSlot, ShaderSpec
from hatch_slang.spec.structs import Struct, subarray_doc

if TYPE_CHECKING:
    from slangrt import DeviceInfo


def _origin(line: int | None) -> str:
    """Where a piece of a wrapper comes from: the comment (with its line) or reflection."""
    return f"comment line {line}" if line is not None else "reflection"


def _arguments(e: EntrySpec) -> list[dict[str, str]]:
    """Every argument of an entry's wrapper, what it is and where it comes from."""
    out = []
    for b in e.buffers:
        if b.role == "data":
            shape = "".join(f"[{d.text}]" for d in b.shape or ())
            shape = (f"flat{shape}" if b.flat else shape or "1-D") if b.shape_checked else "any shape"
            kind = f"array {b.dtype or 'any dtype'} {shape}"
            if b.struct is not None:
                kind = f"array of struct {b.struct.name} ({b.struct.itemsize} bytes each) {shape}"
            if b.image is not None:  # an image, sampler or texel buffer
                kind = describe(b.kind, b.image) + ("" if b.kind == "sampler" else f" {shape}")
            out.append({"name": b.name, "kind": kind, "from": _origin(b.line)})
    dims: dict[str, BufferSpec] = {}
    for b in e.buffers:
        for d in b.shape or ():
            dims.setdefault(d.text, b)
    fields = {p.name: b for b in e.buffers for p in b.params if p.name}
    for name in [*e.params_required, *e.params_optional, *e.params_unread]:
        b = fields[name]
        kind = "params field" + (
            f", inferred from `{dims[name].name}` when omitted" if name in e.params_optional else ""
        )
        kind += ", not read by this entry" if name in e.params_unread else ""
        out.append({"name": name, "kind": kind, "from": _origin(b.line)})
    for name in e.grid_only:
        out.append({"name": name, "kind": "Dispatch size", "from": _origin(e.grid_line)})
    if e.grid is None:
        kind = "grid=(x, y, z), or read on the device (slangrt.IndirectGrid)"
        out.append({"name": "grid", "kind": kind, "from": "caller (no Dispatch line)"})
    else:
        kind = "optional: read on the device (slangrt.IndirectGrid) in the Dispatch line's place"
        out.append({"name": grid_keyword(e), "kind": kind, "from": "caller"})
    for c in e.constants:
        sets = [axis for axis, by in zip("xyz", e.threads_by, strict=True) if by == c.name]
        kind = f"specialization constant {c.scalar}, default {c.default!r}"
        kind += f", the group size's {' and '.join(sets)}" if sets else ""
        out.append({"name": c.name, "kind": kind, "from": f"SPIR-V (SpecId {c.id})"})
    return out


def _sizes(e: EntrySpec) -> list[dict[str, str]]:
    """The sizes an entry's wrapper reads off its arrays' shapes and takes no argument for (a
    params field it infers is an argument: :func:`_arguments`)."""
    fields = {p.name for b in e.buffers for p in b.params if p.name}
    dims: dict[str, BufferSpec] = {}
    for b in e.buffers:
        for d in b.shape or ():
            dims.setdefault(d.text, b)
    return [
        {"name": n, "of": dims[n].name, "from": _origin(dims[n].line)} for n in e.inferable if n not in fields
    ]


def _constants(e: EntrySpec) -> dict[str, Any]:
    """An entry's specialization constants for ``show --json`` (no key for an entry without)."""
    if not e.constants:
        return {}
    return {
        "constants": [
            {"id": c.id, "name": c.name, "scalar": c.scalar, "default": c.default} for c in e.constants
        ],
        "threads_by": list(e.threads_by),
    }


def _entry_types(constants: tuple[LinkConstant, ...]) -> dict[str, Any]:
    """What an entry is built with of Slang's type system (issue 23's forms), as ``show`` lists it
    per entry: its link-time constants (``extern static const``) with the values they linked with
    and the declaration's line. The other forms go here too, one key each, each printed by
    :func:`_print_types`: the instances of a generic entry (``instances``), its specialization
    constants with their defaults (``specialization_constants``); the layouts of the structs its
    bindings hold (``structs``) are per binding, and go into :func:`show_data`'s bindings."""
    return {
        "link_constants": [
            {
                "name": c.name,
                "type": c.type,
                "value": c.value,
                "literal": c.literal,
                "line": c.line,
                "from": f"option `{option_name(HookSettings, 'constants')}`",
            }
            for c in constants
        ],
    }


def _struct_data(s: Struct) -> dict[str, Any]:
    """A buffer's struct as `show` gives it: its name, size and each field's offset and form
    (a matrix's subarray and how Slang's ``m[i][j]`` maps onto it); nested structs in full."""
    return {
        "name": s.name,
        "itemsize": s.itemsize,
        "fields": [
            {
                "name": f.name,
                "offset": f.offset,
                "type": subarray_doc(f),
                **({"struct": _struct_data(f.struct)} if f.struct is not None else {}),
            }
            for f in s.fields
        ],
    }


def _binding_data(b: BufferSpec, dtypes: list[str | None] | None = None) -> dict[str, Any]:
    """One binding as `show --json` gives it; ``dtypes``: its dtype in each entry that uses it,
    where they differ (the instances of a generic entry)."""
    shape = "".join(f"[{d.text}]" for d in b.shape) if b.shape is not None else None
    if shape is not None and b.flat:
        shape = f"flat{shape}"
    return {
        **({"image": describe(b.kind, b.image)} if b.image is not None else {}),
        **({"dtypes": dtypes} if dtypes and len(dtypes) > 1 else {}),
        **({"struct": _struct_data(b.struct)} if b.struct is not None else {}),
        "register": b.register,
        "binding": b.index,
        "name": b.name,
        "role": b.role,
        "access": "read-write" if b.writable else "read-only",
        "dtype": b.dtype,
        "shape": shape,
        "shape_checked": b.shape_checked,
        "params": [_param_data(p) for p in b.params],
        "doc": b.doc,
        "line": b.line,
        "from": _origin(b.line),
        "shape_from": _origin(b.line) if b.shape_checked else "not documented: not checked",
    }


def _param_data(p: ParamSlot) -> dict[str, Any]:
    """One params field as `show --json` gives it; a struct value (type ``struct``) adds its
    ``shape`` (``[n]`` for an array of structs) and its layout in the block (``struct``)."""
    out: dict[str, Any] = {"name": p.name, "type": p.scalar, "offset": p.offset, "float": p.as_float}
    if p.scalar == "struct" and p.struct is not None:
        out.update(shape=list(p.shape), struct=_struct_data(p.struct))
    return out


def _entry_data(e: EntrySpec, constants: tuple[LinkConstant, ...], shader: Shader) -> dict[str, Any]:
    """One entry as `show --json` gives it (``constants``: its link-time constants as linked;
    an instance of a generic entry says which, ``instance_of``)."""
    inst = shader.instance(e.name)
    return {
        "name": e.name,
        "function": e.python,
        "threads": list(e.threads),
        "threads_per_group": e.threads[0] * e.threads[1] * e.threads[2],
        "subgroup_size": e.subgroup_size,
        "dispatch": re.sub(r"(?i)^\s*dispatch\s*:\s*", "", e.grid_text) if e.grid_text else None,
        "grid": [g.text for g in e.grid] if e.grid is not None else None,
        "uses": [b.register + " " + b.name for b in e.buffers],
        "params_required": list(e.params_required),
        "params_inferred": list(e.params_optional),
        "grid_from": _origin(e.grid_line) if e.grid is not None else "caller (grid=)",
        "arguments": _arguments(e),
        "sizes": _sizes(e),
        **_constants(e),
        **_entry_types(constants),
        **({"instance_of": {"generic": inst.generic, "type_args": list(inst.args)}} if inst else {}),
    }


def show_data(
    spec: ShaderSpec, constants: Mapping[str, tuple[LinkConstant, ...]] | None = None
) -> dict[str, Any]:
    """What `hatch-slang show` says of a shader, as plain data (its ``--json`` output); ``constants``:
    each entry's link-time constants as linked (:func:`hatch_slang.builder.pipeline.shader_constants`)."""
    constants = constants or {}
    buffers: dict[tuple[str, int], BufferSpec] = {}
    dtypes: dict[tuple[str, int], list[str | None]] = {}
    generated = spec.shader.generated  # (mapped functions' entries: shown as the functions)
    own = [e for e in spec.entries if e.name not in generated]
    for e in own:
        for b in e.buffers:
            key = (b.kind if b.kind == "push" else "", b.index)
            buffers.setdefault(key, b)
            seen = dtypes.setdefault(key, [])
            if b.role == "data" and b.dtype not in seen:
                seen.append(b.dtype)
    ordered = sorted(buffers, key=lambda k: (k[0] == "push", k[1]))
    return {
        "shader": spec.shader.rel,
        "module": spec.shader.module,
        "summary": spec.shader.contract.prose.split("\n\n")[0].replace("\n", " "),
        "bindings": [_binding_data(buffers[k], dtypes[k]) for k in ordered],
        "entries": [_entry_data(e, constants.get(e.name, ()), spec.shader) for e in own],
        "generics": _generics(spec),
        "mapped": _mapped(spec),
        "variants": [
            {"name": v.name, "line": v.line, "entries": _pythons(spec, v.entries)} for v in spec.variants
        ],
        "warnings": list(spec.warnings),
    }


def _pythons(spec: ShaderSpec, entries: tuple[str, ...]) -> list[str]:
    """The wrapper names of ``entries`` (EntrySpec names)."""
    by_name = {e.name: e.python for e in spec.entries}
    return [by_name[n] for n in entries]


def _generics(spec: ShaderSpec) -> list[dict[str, Any]]:
    """Each generic entry: its instances (entry, type arguments, where listed) and the function
    that picks one by dtype, where there is one."""
    found = {p.generic: p for p in pickers(spec)}
    out: dict[str, dict[str, Any]] = {}
    for i in spec.shader.instances:
        p = found.get(i.generic)
        g = out.setdefault(
            i.generic,
            {
                "name": i.generic,
                "function": p.python if p else None,
                "keywords": list(p.keywords) if p else [],
                "instances": [],
            },
        )
        listed = f"option `{option_name(HookSettings, 'instances')}`" if i.option else _origin(i.line)
        g["instances"].append(
            {"entry": i.key, "type_args": list(i.args), "spelled": i.spelled, "from": listed}
        )
    return list(out.values())


_BROADCAST = (
    "NumPy's rule over the arguments' leading axes (a scalar or a length-1 axis broadcasts); a "
    "vector parameter's components are the last axis"
)


def _mapped(spec: ShaderSpec) -> list[dict[str, Any]]:
    """Each mapped function (`slang-map`): its instances, their parameters and outputs, the
    broadcast rule, and which parameters have gradients."""
    out: dict[str, dict[str, Any]] = {}
    for f in spec.shader.mapped:
        m = out.setdefault(f.name, {"name": f.name, "line": f.line, "broadcast": _BROADCAST, "instances": []})

        def param(p: MapParam, grads: bool = f.has_gradients) -> dict[str, Any]:
            got = {"name": p.name, "type": p.slang, "dtype": p.dtype, "element_shape": list(p.shape)}
            return {**got, "direction": p.direction, "gradient": grads and p.diff}

        m["instances"].append(
            {
                "instance": f.callee,
                "parameters": [param(p) for p in f.params],
                "outputs": [param(p, False) for p in f.outputs],
                "vjp": f.has_gradients,
                "jvp": f.has_gradients,
                "entries": list(f.entries()),
            }
        )
    return list(out.values())


def _array(p: dict[str, Any]) -> str:
    """The arrays a mapped parameter takes: its dtype, any leading axes, its element's axes."""
    dtype = f"struct {p['type']}" if p["dtype"] == "void" else p["dtype"]
    return f"{dtype} (...{''.join(f', {n}' for n in p['element_shape'])})"


def _print_mapped(mapped: list[dict[str, Any]]) -> None:
    for m in mapped:
        click.echo()
        many = len(m["instances"]) > 1
        picks = f", {len(m['instances'])} instances picked by dtype" if many else ""
        click.secho(f"mapped function {m['name']} (line {m['line']}){picks}", bold=True)
        click.echo(
            textwrap.fill(f"broadcast: {m['broadcast']}", 100, initial_indent="  ", subsequent_indent="    ")
        )
        for inst in m["instances"]:
            derivs = "vjp, jvp" if inst["vjp"] else "none"
            click.echo(f"  {inst['instance']}: derivatives: {derivs}")
            rows = [
                [p["name"], p["direction"], p["type"], _array(p), "yes" if p["gradient"] else "no"]
                for p in inst["parameters"]
            ]
            rows += [
                [p["name"], "returned", p["type"], _array(p), "-"]
                for p in inst["outputs"]
                if p["name"] == "result"
            ]
            table(["name", "direction", "type", "array", "gradient"], rows, lambda s: click.echo("    " + s))


def _print_generics(generics: list[dict[str, Any]]) -> None:
    for g in generics:
        click.echo()
        by = ", ".join(f"`{k}=`" for k in g.get("keywords") or ())
        how = f"`{g['function']}` picks one by {f'its keywords {by}' if by else 'dtype'}"
        how = how if g["function"] else "each called by its name"
        click.secho(f"generic entry {g['name']}: {len(g['instances'])} instance(s), {how}", bold=True)
        rows = [[i["entry"], i["spelled"], i["from"]] for i in g["instances"]]
        table(["entry", "instance", "from"], rows, lambda s: click.echo("  " + s))


def table(headers: list[str], rows: list[list[str]], out: Callable[[str], None] = click.echo) -> None:
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(headers)]
    out("  ".join(h.ljust(w) for h, w in zip(headers, widths)).rstrip())
    out("  ".join("-" * w for w in widths))
    for r in rows:
        out("  ".join(x.ljust(w) for x, w in zip(r, widths)).rstrip())


def print_show(data: dict[str, Any]) -> None:
    """Print :func:`show_data`'s description as `hatch-slang show` does: tables on stdout, the
    warnings in yellow on stderr."""
    click.secho(f"{data['shader']}  (module {data['module']})", bold=True)
    if data["summary"]:
        click.echo(textwrap.fill(data["summary"], 100, initial_indent="  ", subsequent_indent="  "))
    click.echo()
    rows = []
    for b in data["bindings"]:
        if b["role"] == "params":
            what = "params (" + ", ".join(p["name"] for p in b["params"]) + ")"
        elif "image" in b:
            what = b["image"] + (f" {b['shape']}" if b["shape"] and b["shape_checked"] else "")
        else:
            dtype = f"struct {b['struct']['name']}" if "struct" in b else b["dtype"] or "any"
            dtype = " | ".join(d or "any" for d in b["dtypes"]) if "dtypes" in b else dtype
            what = f"{dtype} {b['shape'] if b['shape'] is not None else '(1-D)'}"
            if not b["shape_checked"]:
                what = f"{dtype} (not documented)"
        rows.append([b["register"], b["name"], b["access"], what, b["doc"], b["from"]])
    if rows or not data.get("mapped"):
        click.secho("bindings", bold=True)
        table(["reg", "name", "access", "dtype / shape", "doc", "from"], rows, lambda s: click.echo("  " + s))
    for b in data["bindings"]:
        if b["params"]:
            click.echo()
            click.secho(f"params in {b['register']} {b['name']}", bold=True)
            prow = [[p["name"], _param_type(p), str(p["offset"])] for p in b["params"]]
            table(["field", "type", "byte offset"], prow, lambda s: click.echo("  " + s))
            for p in b["params"]:
                if "struct" in p:
                    _print_struct(p["struct"], f"{b['register']} {b['name']}.{p['name']}")
        if "struct" in b:
            _print_struct(b["struct"], f"{b['register']} {b['name']}")
    for entry in data["entries"]:
        click.echo()
        t = entry["threads"]
        function = entry.get("function", entry["name"])
        renamed = f" (function {function})" if function != entry["name"] else ""
        of = entry.get("instance_of")
        instance = f" (instance of {of['generic']}<{', '.join(of['type_args'])}>)" if of else ""
        click.secho(f"entry {entry['name']}{renamed}{instance}", bold=True)
        by = entry.get("threads_by") or [None, None, None]
        size = " x ".join(f"{n} (default {v})" if n else str(v) for v, n in zip(t, by, strict=True))
        sub = f", subgroups of {entry['subgroup_size']} required" if entry.get("subgroup_size") else ""
        click.echo(f"  threads per group: {size} = {entry['threads_per_group']}{sub}")
        click.echo(f"  dispatch: {entry['dispatch'] or 'not documented: the caller passes grid=(x, y, z)'}")
        grid = f"({', '.join(entry['grid'])})" if entry["grid"] is not None else "grid="
        click.echo(f"  grid: {grid}  [{entry['grid_from']}]")
        click.echo(f"  uses: {', '.join(entry['uses']) or 'no bindings'}")
        if entry["params_required"] or entry["params_inferred"]:
            params = entry["params_required"] + [f"{p} (inferred)" for p in entry["params_inferred"]]
            click.echo(f"  params: {', '.join(params)}")
        _print_arguments(entry)
        _print_types(entry)
    _print_generics(data.get("generics", []))
    _print_mapped(data.get("mapped", []))
    _print_variants(data.get("variants", []))
    for w in data["warnings"]:
        click.secho(f"warning: {w}", fg="yellow", err=True)


def _print_variants(variants: list[dict[str, Any]]) -> None:
    for v in variants:
        click.echo()
        click.secho(f"variant function {v['name']} (line {v['line']})", bold=True)
        click.echo(f"  runs the first the device supports of: {', '.join(v['entries'])}")


def _print_arguments(entry: dict[str, Any]) -> None:
    """An entry's arguments, and the sizes its wrapper reads off the arrays instead."""
    click.echo("  arguments:")
    arows = [[a["name"], a["kind"], a["from"]] for a in entry["arguments"]]
    table(["name", "what", "from"], arows, lambda s: click.echo("    " + s))
    if entry.get("sizes"):
        read = ", ".join(f"{z['name']} (of {z['of']})" for z in entry["sizes"])
        click.echo(f"  sizes read off the arrays (no arguments): {read}")


def _param_type(p: dict[str, Any]) -> str:
    """A params field's type as `show` prints it (``struct Light[3]`` for an array of structs)."""
    if "struct" not in p:
        return str(p["type"])
    return f"struct {p['struct']['name']}" + "".join(f"[{n}]" for n in p["shape"])


def _print_types(entry: dict[str, Any]) -> None:
    """Print what :func:`_entry_types` says of an entry, a table per form it has (instances,
    specialization constants: their tables go here, after the link-time constants')."""
    if entry.get("link_constants"):
        click.echo(f"  link-time constants (option `{option_name(HookSettings, 'constants')}`):")
        rows = [[c["name"], c["type"], c["literal"], f"line {c['line']}"] for c in entry["link_constants"]]
        table(["name", "type", "value", "declared"], rows, lambda s: click.echo("    " + s))


def _print_struct(s: dict[str, Any], where: str) -> None:
    """A struct's layout as `show` prints it: a table of its fields, then each nested struct's."""
    click.echo()
    click.secho(f"struct {s['name']} in {where}: {s['itemsize']} bytes per element", bold=True)
    rows = [[f["name"], str(f["offset"]), f["type"]] for f in s["fields"]]
    table(
        ["field", "byte offset", "NumPy field (Slang m[i][j] for matrices)"],
        rows,
        lambda t: click.echo("  " + t),
    )
    for f in s["fields"]:
        if "struct" in f:
            _print_struct(f["struct"], f"{where}.{f['name']}")


def device_data(d: DeviceInfo, default: bool) -> dict[str, Any]:
    """A device as `hatch-slang devices --json` prints it (``default``: slangrt's default device)."""
    return {
        "index": d.index,
        "default": default,
        "name": d.name,
        "type": d.type,
        "driver": d.driver,
        "api_version": d.api_version,
        "memory_bytes": d.memory_bytes,
        "max_workgroup_count": list(d.max_workgroup_count),
        "max_workgroup_size": list(d.max_workgroup_size),
        "max_invocations": d.max_invocations,
        "max_storage_buffer_range": d.max_storage_buffer_range,
        "max_push_constants_size": getattr(d, "max_push_constants_size", 0),
        "features": list(getattr(d, "features", ())),
    }


def print_device(d: DeviceInfo, default: bool) -> None:
    """A device as `hatch-slang devices` lists it: name, type, driver, memory, limits, features;
    the default one marked with ``*``."""
    mark = "*" if default else " "
    click.secho(
        f"{mark} {d.index}  {d.name}  [{d.type}]  driver {d.driver}  Vulkan {d.api_version}  "
        f"{d.memory_bytes / 2**30:.1f} GiB",
        bold=default,
    )
    count, size = d.max_workgroup_count, d.max_workgroup_size
    click.echo(
        f"      groups <= {count[0]} x {count[1]} x {count[2]}; group size <= "
        f"{size[0]} x {size[1]} x {size[2]}, {d.max_invocations} threads; "
        f"storage buffer <= {_bytes(d.max_storage_buffer_range)}"
    )
    features = list(getattr(d, "features", ()))
    if features:
        text = "features: " + ", ".join(features)
        click.echo(textwrap.fill(text, 110, initial_indent=" " * 6, subsequent_indent=" " * 16))
    else:
        click.echo("      features: none (slangrt cannot use this device)")


def _bytes(n: int) -> str:
    size, unit = float(n), 0
    while size >= 1024 and unit < 3:
        size, unit = size / 1024, unit + 1
    return f"{size:.0f} B" if unit == 0 else f"{size:.1f} {('KiB', 'MiB', 'GiB')[unit - 1]}"
