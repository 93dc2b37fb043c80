"""The ``hatch-slang`` command line: a thin front end over the same pipeline the build hook runs.

Every command works from a project root (``--root``, default: the current directory) and reads
its ``[tool.hatch.build.hooks.slang]`` table (or a custom hook's table that names ``shaders``).
"""

from __future__ import annotations

import json
import os
import re
import sys
import textwrap
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import click

from hatch_slang import __version__, pipeline
from hatch_slang.config import BuildConfig, load_project_config
from hatch_slang.discover import Shader
from hatch_slang.errors import BuildErrors, HatchSlangError
from hatch_slang.model import BufferSpec, EntrySpec, ShaderSpec

EXIT_CODES = """\b
Exit codes:
  0  success (for check: everything is current and consistent)
  1  the command found a problem: a failed build, a stale or inconsistent
     file, a kernel that disagrees with its reference, no device
  2  bad usage: an unknown option or a missing argument"""

F = TypeVar("F", bound=Callable[..., Any])


def _root_option(f: F) -> F:
    return click.option(
        "--root",
        default=".",
        show_default=True,
        type=click.Path(exists=True, file_okay=False),
        help="Project root (holds pyproject.toml).",
    )(f)


def _verbosity_options(f: F) -> F:
    f = click.option("-v", "--verbose", is_flag=True, help="Say what was compiled, cached and written.")(f)
    return click.option("-q", "--quiet", is_flag=True, help="Print only errors.")(f)


def _cache_option(f: F) -> F:
    return click.option(
        "--no-cache",
        is_flag=True,
        help="Compile every shader, ignoring and not updating the build cache (one directory per "
        "project in the user's cache: ~/.cache/hatch-slang on Linux; or under $HATCH_SLANG_CACHE_DIR).",
    )(f)


def _config(root: str) -> BuildConfig:
    try:
        return load_project_config(Path(root).resolve())
    except HatchSlangError as e:
        raise click.ClickException(str(e)) from None


def _errors(e: HatchSlangError) -> Iterator[HatchSlangError]:
    if isinstance(e, BuildErrors):
        for inner in e.errors:
            yield from _errors(inner)
    else:
        yield e


def _fail(e: HatchSlangError) -> click.ClickException:
    errors = list(_errors(e))
    if len(errors) == 1:
        return click.ClickException(str(errors[0]))
    return click.ClickException(f"{len(errors)} problems:\n" + "\n".join(str(x) for x in errors))


BAR_MIN = 3  # fewer shaders compile too fast for a bar to help


class _Bar:
    """Compile progress on stderr: a bar on a terminal when several shaders compile; with -v
    one line per shader instead (anywhere); nothing otherwise."""

    def __init__(self, quiet: bool, verbose: bool, stream: Any = None) -> None:
        self.quiet, self.verbose = quiet, verbose
        self.stream = stream if stream is not None else sys.stderr
        self.bar: Any = None

    def start(self, total: int, cached: int) -> None:
        if self.verbose and cached:
            # "Since the last build" would be wrong: `check` and `show` fill the cache too.
            click.echo(
                f"{cached} shader(s) unchanged since they were last compiled (from the build cache)",
                file=self.stream,
            )
        if self.verbose:
            if total:
                click.echo(f"compiling {total} shader(s)", file=self.stream)
        elif total >= BAR_MIN and not self.quiet and _isatty(self.stream):
            self.bar = click.progressbar(
                length=total,
                label=f"compiling {total} shaders",
                file=self.stream,
                item_show_func=lambda rel: rel,
            )
            self.bar.__enter__()

    def advance(self, shader: Shader) -> None:
        if self.bar is not None:
            self.bar.update(1, shader.rel)
        if self.verbose:
            click.echo(f"  compiled {shader.rel}", file=self.stream)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.__exit__(None, None, None)
            self.bar = None


def _isatty(stream: Any) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):  # no isatty, or a closed stream
        return False


def _run_build(
    config: BuildConfig,
    *,
    only: list[str] | None = None,
    keep_from: Path | None = None,
    no_cache: bool,
    quiet: bool,
    verbose: bool,
) -> pipeline.BuildOutput:
    bar = _Bar(quiet, verbose)
    try:
        cache = None if no_cache else pipeline.open_cache(config)
        if verbose and cache is not None:
            click.echo(f"build cache: {cache.directory}", err=True)
        return pipeline.build(config, only=only, keep_from=keep_from, cache=cache, progress=bar)
    except HatchSlangError as e:
        raise _fail(e) from None
    finally:
        bar.close()


def _warn(output: pipeline.BuildOutput, quiet: bool) -> None:
    if not quiet:
        for w in output.warnings:
            click.secho(f"warning: {w}", fg="yellow", err=True)


@click.group(epilog=EXIT_CODES, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="hatch-slang")
@click.option(
    "--color/--no-color",
    default=None,
    help="Colour the output. Default: only on a terminal, and never when NO_COLOR is set.",
)
@click.pass_context
def main(ctx: click.Context, color: bool | None) -> None:
    """Compile Slang kernels into typed Python wrappers, and check, inspect and run them."""
    if color is None and os.environ.get("NO_COLOR"):
        color = False
    ctx.color = color


def _select_device(device: str | None) -> None:
    """Make ``device`` slangrt's default (its settings are read once: read them again)."""
    if device is None:
        return
    os.environ["SLANGRT_DEVICE"] = device
    if "slangrt._settings" in sys.modules:
        sys.modules["slangrt._settings"].reload()


@main.command(epilog=EXIT_CODES)
@click.argument("shaders", nargs=-1)
@_root_option
@click.option(
    "--out",
    type=click.Path(file_okay=False),
    help="Write here instead of the configured package in the source tree.",
)
@_cache_option
@_verbosity_options
def build(
    shaders: tuple[str, ...], root: str, out: str | None, no_cache: bool, quiet: bool, verbose: bool
) -> None:
    """Regenerate wrappers, SPIR-V and manifest into the source tree.

    Only shaders that changed since the last build (their source, anything they include, the
    compiler, the options or the templates) are compiled again; files whose content is already
    right are not rewritten. SHADERS (module names, file names or paths) limits the build to
    those; the other shaders' files in the destination are kept.
    """
    config = _config(root)
    dest = Path(out).resolve() if out else config.package_dir
    output = _run_build(
        config,
        only=list(shaders) or None,
        keep_from=dest,
        no_cache=no_cache,
        quiet=quiet,
        verbose=verbose,
    )
    _warn(output, quiet)
    changed = pipeline.write_output(output, dest)
    if verbose:
        for name in changed:
            click.echo(f"  wrote {_shown(dest / name)}", err=True)
    if not quiet:
        click.echo(
            f"{len(output.modules)} shader(s), {len(output.compiled)} compiled -> {_shown(dest)} "
            f"({len(changed)} file(s) written)"
        )


def _shown(path: Path) -> str:
    """A path as messages show it: relative when under the current directory."""
    return str(path.relative_to(Path.cwd())) if path.is_relative_to(Path.cwd()) else str(path)


@main.command(epilog=EXIT_CODES)
@_root_option
@_cache_option
@_verbosity_options
def check(root: str, no_cache: bool, quiet: bool, verbose: bool) -> None:
    """Check that comments, code and the generated files in the source tree agree.

    Rebuilds in memory (writing nothing but the build cache) and fails, exit code 1, when a
    comment disagrees with what the compiler reflects (reported as file:line) or when a
    generated file is missing, stale or left over (reported as a unified diff). The command
    for a project's CI.
    """
    config = _config(root)
    try:
        cache = None if no_cache else pipeline.open_cache(config)
        bar = _Bar(quiet, verbose)
        try:
            output = pipeline.build(config, cache=cache, progress=bar)
        finally:
            bar.close()
    except HatchSlangError as e:
        errors = list(_errors(e))
        for err in errors:
            click.secho(str(err), fg="red", err=True)
        raise click.ClickException(
            f"{len(errors)} problem(s) in the shaders; the generated files were not compared"
        ) from None
    _warn(output, quiet)
    label = _shown(config.package_dir)
    drift = pipeline.drift(output, config.package_dir, label=label)
    for d in drift:
        if d.kind == "changed" and d.detail.startswith("---"):
            for line in d.detail.splitlines():
                colour = {"+": "green", "-": "red", "@": "cyan"}.get(line[:1])
                if colour:
                    click.secho(line, fg=colour)
                else:
                    click.echo(line)
        else:
            click.secho(d.detail, fg="red")
    if drift:
        raise click.ClickException(
            f"{len(drift)} generated file(s) in {label} are not what the sources give; "
            "run `hatch-slang build`"
        )
    if not quiet:
        click.echo(f"ok: {len(output.modules)} shader(s); {label} is current")


def _register(b: BufferSpec) -> str:
    return ("b" if b.kind == "uniform" else "u" if b.writable else "t") + str(b.index)


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
    for name in e.inferable:
        if name not in fields:
            b = dims[name]
            out.append({"name": name, "kind": f"dimension of `{b.name}`", "from": _origin(b.line)})
    for name in e.grid_only:
        out.append({"name": name, "kind": "Dispatch size", "from": _origin(e.grid_line)})
    if e.grid is None:
        out.append({"name": "grid", "kind": "grid=(x, y, z)", "from": "caller (no Dispatch line)"})
    return out


def _show_data(spec: ShaderSpec) -> dict[str, Any]:
    buffers: dict[int, BufferSpec] = {}
    for e in spec.entries:
        for b in e.buffers:
            buffers.setdefault(b.index, b)
    bindings = []
    for b in sorted(buffers.values(), key=lambda b: b.index):
        shape = "".join(f"[{d.text}]" for d in b.shape) if b.shape is not None else None
        if shape is not None and getattr(b, "flat", False):
            shape = f"flat{shape}"
        bindings.append(
            {
                "register": _register(b),
                "binding": b.index,
                "name": b.name,
                "role": b.role,
                "access": "read-write" if b.writable else "read-only",
                "dtype": b.dtype,
                "shape": shape,
                "shape_checked": b.shape_checked,
                "params": [
                    {"name": p.name, "type": p.scalar, "offset": p.offset, "float": p.as_float}
                    for p in b.params
                ],
                "doc": b.doc,
                "line": b.line,
                "from": _origin(b.line),
                "shape_from": _origin(b.line) if b.shape_checked else "not documented: not checked",
            }
        )
    entries = [
        {
            "name": e.name,
            "threads": list(e.threads),
            "threads_per_group": e.threads[0] * e.threads[1] * e.threads[2],
            "dispatch": re.sub(r"(?i)^\s*dispatch\s*:\s*", "", e.grid_text) if e.grid_text else None,
            "grid": [g.text for g in e.grid] if e.grid is not None else None,
            "uses": [_register(b) + " " + b.name for b in e.buffers],
            "params_required": list(e.params_required),
            "params_inferred": list(e.params_optional),
            "grid_from": _origin(e.grid_line) if e.grid is not None else "caller (grid=)",
            "arguments": _arguments(e),
        }
        for e in spec.entries
    ]
    return {
        "shader": spec.shader.rel,
        "module": spec.shader.module,
        "summary": spec.shader.contract.prose.split("\n\n")[0].replace("\n", " "),
        "bindings": bindings,
        "entries": entries,
        "warnings": list(spec.warnings),
    }


def _table(headers: list[str], rows: list[list[str]], out: Callable[[str], None] = click.echo) -> None:
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(headers)]
    out("  ".join(h.ljust(w) for h, w in zip(headers, widths)).rstrip())
    out("  ".join("-" * w for w in widths))
    for r in rows:
        out("  ".join(x.ljust(w) for x, w in zip(r, widths)).rstrip())


@main.command(epilog=EXIT_CODES)
@click.argument("name")
@_root_option
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object instead of tables.")
def show(name: str, root: str, as_json: bool) -> None:
    """Show what a kernel exposes: entries, bindings, params, dispatch and group size.

    NAME is a shader's module name, file name or path. Comment/code disagreements are shown
    as warnings here (``check`` and ``build`` fail on them when the project is strict).
    """
    config = _config(root)
    try:
        spec = pipeline.inspect(config, name, cache=pipeline.open_cache(config))
    except HatchSlangError as e:
        raise _fail(e) from None
    data = _show_data(spec)
    if as_json:
        click.echo(json.dumps(data, indent=2))
        return
    click.secho(f"{data['shader']}  (module {data['module']})", bold=True)
    if data["summary"]:
        click.echo(textwrap.fill(data["summary"], 100, initial_indent="  ", subsequent_indent="  "))
    click.echo()
    rows = []
    for b in data["bindings"]:
        if b["role"] == "params":
            what = "params (" + ", ".join(p["name"] for p in b["params"]) + ")"
        else:
            what = f"{b['dtype'] or 'any'} {b['shape'] if b['shape'] is not None else '(1-D)'}"
            if not b["shape_checked"]:
                what = f"{b['dtype'] or 'any'} (not documented)"
        rows.append([b["register"], b["name"], b["access"], what, b["doc"], b["from"]])
    click.secho("bindings", bold=True)
    _table(["reg", "name", "access", "dtype / shape", "doc", "from"], rows, lambda s: click.echo("  " + s))
    for b in data["bindings"]:
        if b["params"]:
            click.echo()
            click.secho(f"params in {b['register']} {b['name']}", bold=True)
            prow = [[p["name"], p["type"], str(p["offset"])] for p in b["params"]]
            _table(["field", "type", "byte offset"], prow, lambda s: click.echo("  " + s))
    for entry in data["entries"]:
        click.echo()
        t = entry["threads"]
        click.secho(f"entry {entry['name']}", bold=True)
        click.echo(f"  threads per group: {t[0]} x {t[1]} x {t[2]} = {entry['threads_per_group']}")
        click.echo(f"  dispatch: {entry['dispatch'] or 'not documented: the caller passes grid=(x, y, z)'}")
        grid = f"({', '.join(entry['grid'])})" if entry["grid"] is not None else "grid="
        click.echo(f"  grid: {grid}  [{entry['grid_from']}]")
        click.echo(f"  uses: {', '.join(entry['uses']) or 'no bindings'}")
        if entry["params_required"] or entry["params_inferred"]:
            params = entry["params_required"] + [f"{p} (inferred)" for p in entry["params_inferred"]]
            click.echo(f"  params: {', '.join(params)}")
        click.echo("  arguments:")
        arows = [[a["name"], a["kind"], a["from"]] for a in entry["arguments"]]
        _table(["name", "what", "from"], arows, lambda s: click.echo("    " + s))
    for w in data["warnings"]:
        click.secho(f"warning: {w}", fg="yellow", err=True)


@main.command(epilog=EXIT_CODES)
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object per device.")
def devices(as_json: bool) -> None:
    """List Vulkan devices with their limits; the default one is marked with *.

    The default is SLANGRT_DEVICE (an index or part of a name) if set, else the best device:
    discrete GPU, then integrated, then CPU (lavapipe).
    """
    import slangrt

    try:
        infos = slangrt.devices()
        default = slangrt.device().info.index if infos else -1
    except slangrt.SlangRTError as e:
        raise click.ClickException(str(e)) from None
    if not infos:
        raise click.ClickException("no Vulkan device found")
    for d in infos:
        if as_json:
            click.echo(
                json.dumps(
                    {
                        "index": d.index,
                        "default": d.index == default,
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
                )
            )
            continue
        mark = "*" if d.index == default else " "
        click.secho(
            f"{mark} {d.index}  {d.name}  [{d.type}]  driver {d.driver}  Vulkan {d.api_version}  "
            f"{d.memory_bytes / 2**30:.1f} GiB",
            bold=d.index == default,
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


@main.command(epilog=EXIT_CODES)
@click.argument("shaders", nargs=-1)
@_root_option
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object per line instead of a table.")
@click.option("--seed", default=0, show_default=True, help="Seed for the random inputs.")
@click.option(
    "--device", "device", default=None, help="Device index or name substring (sets SLANGRT_DEVICE)."
)
def validate(shaders: tuple[str, ...], root: str, as_json: bool, seed: int, device: str | None) -> None:
    """Run kernels on the default device and compare with their NumPy references.

    SHADERS (module names, file names or paths, as for `build`) limits the run to those;
    default: every configured shader that has a reference. The kernels are imported from the
    generated package in the project tree (`hatch-slang build`, `pip install -e .`), else from
    the installed project.

    A reference is a Python file beside the shader, shaders/<name>.py for
    shaders/<name>.slang, defining cases(rng), which yields hatch_slang.validate.Case objects:

    \b
        from hatch_slang.validate import Case

    \b
        def axpy(args):  # the NumPy reference: all arguments in, written arrays out
            return {"y": args["a"] * args["x"] + args["y"]}

    \b
        def cases(rng):  # rng: a seeded numpy.random.Generator (--seed)
            for n in (1, 1000, 100_000):
                yield Case("axpy", dims={"n": n}, args={"a": 0.5}, expect=axpy)

    Case(entry, dims=..., args=..., expect=..., atol=1e-5, rtol=1e-5, label=...): arguments
    the case does not give are made from the entry's documented dtype and shape, evaluated
    over dims and the params given (random normal floats, small random integers). expect is
    the arrays the kernel must leave in the arguments it writes, or a function of all the
    arguments returning them. A row fails when a written array is not within atol + rtol *
    |expected| of it.
    """
    from hatch_slang.validate import validate as validate_kernels  # imports NumPy: only here

    _select_device(device)
    config = _config(root)
    rows = []
    try:
        for row in validate_kernels(config, list(shaders) or None, seed):
            rows.append(row)
            if as_json:
                click.echo(json.dumps(row.as_json()))
    except HatchSlangError as e:
        raise click.ClickException(str(e)) from None
    if not rows:
        raise click.ClickException("the references yielded no case to run")
    if not as_json:
        _table(
            ["shader", "entry", "shape", "max abs err", "max rel err", "ms", "ok"],
            [
                [
                    r.shader,
                    r.entry,
                    r.shape,
                    "-" if r.skipped else f"{r.max_abs_err:.2e}",
                    "-" if r.skipped else f"{r.max_rel_err:.2e}",
                    "-" if r.skipped else f"{r.seconds * 1e3:.2f}",
                    r.status,
                ]
                for r in rows
            ],
            _echo_row,
        )
        for r in rows:
            if r.error:
                click.secho(f"{r.shader} {r.entry} [{r.shape}]: {r.error}", fg="red", err=True)
            if r.skipped:
                click.secho(f"{r.shader} {r.entry} [{r.shape}]: skipped: {r.skipped}", fg="yellow", err=True)
    bad = [r for r in rows if r.failed]
    skipped = [r for r in rows if r.skipped]
    if not as_json:
        ran = len(rows) - len(skipped)
        note = f", {len(skipped)} skipped (the device cannot run them)" if skipped else ""
        click.echo(f"\n{ran - len(bad)}/{ran} ok{note} on {rows[0].device}")
    sys.exit(1 if bad else 0)


@main.command(epilog=EXIT_CODES)
@click.argument("shaders", nargs=-1)
@_root_option
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object per line instead of a table.")
@click.option("--repeat", default=20, show_default=True, help="Timed calls per case (after one warm-up).")
@click.option("--all-cases", is_flag=True, help="Time every reference case, not only each entry's largest.")
@click.option(
    "--device", "device", default=None, help="Device index or name substring (sets SLANGRT_DEVICE)."
)
def bench(
    shaders: tuple[str, ...], root: str, as_json: bool, repeat: int, all_cases: bool, device: str | None
) -> None:
    """Time kernels on a device with GPU timestamps (inputs as for `validate`, kept on the device).

    SHADERS picks shaders as for `build`. Each entry is timed on its largest reference case
    (every case with --all-cases): one warm-up call, then --repeat calls, each waited for
    before the next. The columns are medians per call:

    \b
      GPU us     the kernel's time on the device (GPU timestamps around the dispatch)
      MB         the bytes its bindings span (written bindings counted twice)
      GB/s       MB over GPU us: the memory bandwidth the kernel reaches
      submit us  how long the call takes to return: argument checks, recording, submission
                 (the kernel then runs asynchronously: this can be far below GPU us)
      wall us    from the call to the kernel's end, waited for: what a caller who needs
                 the result sees (never below GPU us)
    """
    from hatch_slang.bench import bench as bench_kernels  # imports NumPy and slangrt: only here

    _select_device(device)
    config = _config(root)
    rows = []
    try:
        for row in bench_kernels(config, list(shaders) or None, repeat=repeat, all_cases=all_cases):
            rows.append(row)
            if as_json:
                click.echo(json.dumps(row.as_json()))
            else:
                click.echo(f"  timed {row.shader} {row.entry}", err=True)
    except HatchSlangError as e:
        raise click.ClickException(str(e)) from None
    if not rows:
        raise click.ClickException("the references yielded no case to time")
    if not as_json:
        _table(
            ["shader", "entry", "shape", "GPU us", "MB", "GB/s", "submit us", "wall us"],
            [
                [
                    r.shader,
                    r.entry,
                    r.shape,
                    f"{r.gpu_us:.2f}",
                    f"{r.bytes / 1e6:.2f}",
                    f"{r.gb_per_s:.1f}",
                    f"{r.submit_us:.1f}",
                    f"{r.wall_us:.1f}",
                ]
                for r in rows
            ],
        )
        click.echo(f"\nmedians of {repeat} calls each on {rows[0].device}")


def _echo_row(line: str) -> None:
    click.secho(line, fg="red" if line.endswith("FAIL") else None)


@main.command("init", epilog=EXIT_CODES)
@click.argument("directory", default=".", type=click.Path(file_okay=False))
@click.option(
    "--name",
    default=None,
    help="Distribution and package name (`-` becomes `_` for the package). Default: the directory's name.",
)
@click.option(
    "--force", is_flag=True, help="Write into a non-empty directory, overwriting files of the same names."
)
def init_command(directory: str, name: str | None, force: bool) -> None:
    """Create a new project in DIRECTORY (default: here) with the build hook configured.

    Writes pyproject.toml, shaders/saxpy.slang (a documented kernel), its NumPy reference
    shaders/saxpy.py, tests/test_saxpy.py, README.md and .gitignore, then prints the commands
    that install, validate and test it. Refuses a non-empty directory unless --force.
    """
    from hatch_slang.init import init_project, next_steps

    try:
        project = init_project(Path(directory), name, force=force)
    except HatchSlangError as e:
        raise click.ClickException(str(e)) from None
    click.echo(next_steps(project))
