"""The ``hatch-slang`` command line: a thin front end over the same pipeline the build hook runs.

Every command works from a project root (``--root``, default: the current directory) and reads
its ``[tool.hatch.build.hooks.slang]`` table (or a custom hook's table that names ``shaders``).
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click

from hatch_slang import __version__
from hatch_slang.builder import pipeline
from hatch_slang.cli.show import device_data, print_device, print_show, show_data, table
from hatch_slang.compile.discover import Shader
from hatch_slang.config.project import BuildConfig, load_project_config
from hatch_slang.errors import BuildErrors, HatchSlangError

if TYPE_CHECKING:
    from hatch_slang.cli.bench import BenchRow


def _exit_codes(problem: str) -> str:
    """A command's epilog: what its exit codes mean, ``problem`` being what makes it 1."""
    return (
        "\b\nExit codes:\n  0  success\n  1  "
        + problem
        + "\n  2  bad usage: an unknown option or a missing argument"
    )


EXIT_CODES = _exit_codes("the command found a problem (each command's --help says which)")


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
            said = w if ": warning: " in w.split("\n", 1)[0] else f"warning: {w}"
            click.secho(said, fg="yellow", err=True)


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


@main.command(
    short_help="Regenerate wrappers, SPIR-V and manifest in the tree.",
    epilog=_exit_codes("the build failed (nothing was written)"),
)
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


@main.command(
    short_help="Check that comments, code and generated files agree.",
    epilog=_exit_codes("a shader has a problem, or a generated file is missing, stale or left over"),
)
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


@main.command(
    short_help="Show a kernel's entries, bindings, params and dispatch.",
    epilog=_exit_codes("no such shader, or it does not build"),
)
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
    data = show_data(spec, pipeline.shader_constants(config, spec.shader))
    if as_json:
        click.echo(json.dumps(data, indent=2))
        return
    print_show(data)


@main.command(
    short_help="List Vulkan devices and their limits.",
    epilog=_exit_codes("no Vulkan device (or no loader or driver)"),
)
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
            click.echo(json.dumps(device_data(d, d.index == default)))
        else:
            print_device(d, d.index == default)


@main.command(
    short_help="Run kernels and compare them with their NumPy references.",
    epilog=_exit_codes("a kernel disagrees with its reference or fails; no reference; no device"),
)
@click.argument("shaders", nargs=-1)
@_root_option
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object per line instead of a table.")
@click.option("--seed", default=0, show_default=True, type=int, help="Seed for the random inputs.")
@click.option(
    "--device", "device", default=None, help="Device index or name substring (sets SLANGRT_DEVICE)."
)
def validate(shaders: tuple[str, ...], root: str, as_json: bool, seed: int, device: str | None) -> None:
    """Run kernels on a device (--device, else the default) and compare with their NumPy references.

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
    from hatch_slang.validate import Row  # imports NumPy: only here
    from hatch_slang.validate import validate as validate_kernels

    _select_device(device)
    config = _config(root)
    _say_unreferenced(config, shaders, "validated")
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
        table(list(Row.COLUMNS), [r.cells() for r in rows], _echo_row)
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


def _sizes(ctx: click.Context, param: click.Parameter, given: tuple[str, ...]) -> dict[str, int] | None:
    """``--size NAME=N`` values by name (None when none is given): NAME an identifier, N a whole
    number >= 0; a malformed one, or a name given twice differently, is bad usage."""
    if not given:
        return None
    sizes: dict[str, int] = {}
    for text in given:
        name, eq, number = (part.strip() for part in text.partition("="))
        if not eq or not (name.isidentifier() and name.isascii()):
            raise click.BadParameter(f"{text!r} is not NAME=N (NAME an identifier, N a whole number)")
        if not (number.isascii() and number.isdigit()) or len(number) > 19:
            raise click.BadParameter(f"{text!r}: {number!r} is not a whole number from 0 to 10**19")
        if sizes.get(name, int(number)) != int(number):
            raise click.BadParameter(f"`{name}` given twice ({sizes[name]} and {int(number)})")
        sizes[name] = int(number)
    return sizes


@main.command(
    short_help="Time kernels on a device (GPU timestamps).",
    epilog=_exit_codes(
        "a kernel could not be timed (it raised, a size is missing, no case to time); no device"
    ),
)
@click.argument("shaders", nargs=-1)
@_root_option
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object per line instead of a table.")
@click.option(
    "--repeat",
    default=20,
    show_default=True,
    type=click.IntRange(min=1),
    help="Timed calls per case (after one warm-up).",
)
@click.option("--all-cases", is_flag=True, help="Time every reference case, not only each entry's largest.")
@click.option(
    "--size",
    "size",
    multiple=True,
    metavar="NAME=N",
    callback=_sizes,
    help="Time every entry of the chosen shaders on zero-filled inputs, sized by NAME=N (repeatable; "
    "no reference needed).",
)
@click.option(
    "--device", "device", default=None, help="Device index or name substring (sets SLANGRT_DEVICE)."
)
def bench(
    shaders: tuple[str, ...],
    root: str,
    as_json: bool,
    repeat: int,
    all_cases: bool,
    size: dict[str, int] | None,
    device: str | None,
) -> None:
    """Time kernels on a device with GPU timestamps (inputs as for `validate`, kept on the device).

    SHADERS picks shaders as for `build`. Each entry is timed on its largest reference case
    (every case with --all-cases): one warm-up call, then --repeat calls, each waited for
    before the next.

    With --size NAME=N (repeatable, e.g. `--size rows=4096 --size cols=1024`) every entry of
    the chosen shaders is timed instead, reference or not, on zero-filled arrays (zeros, so
    index buffers stay in range) shaped by its documented bindings over those sizes; its
    integer and float params come from the same sizes, else are 0. A size an entry needs that
    no --size gives, or a --size no entry uses, is an error naming it.

    The columns are medians per call:

    \b
      GPU us     the kernel's time on the device (GPU timestamps around the dispatch)
      MB         the bytes its bindings span (written bindings counted twice)
      GB/s       MB over GPU us: the memory bandwidth the kernel reaches
      GFLOP/s    floating-point operations over GPU us, where the reference counts them:
                 `flops(entry, sizes)` in shaders/<name>.py returns the operations of one
                 call (`sizes`: the sizes by name); `-` without a count
      submit us  how long the call takes to return: argument checks, recording, submission
                 (the kernel then runs asynchronously: this can be far below GPU us)
      wall us    from the call to the kernel's end, waited for: what a caller who needs
                 the result sees (never below GPU us)

    --json rows add `flops` and `gflop_per_s` (null without a count).
    """
    from hatch_slang.cli.bench import BenchRow  # imports NumPy and slangrt: only here

    if size is not None and all_cases:
        raise click.UsageError("--all-cases picks reference cases; with --size each entry is timed once")
    _select_device(device)
    config = _config(root)
    if size is None:
        _say_unreferenced(config, shaders, "timed", "; time them on zero-filled inputs with `--size NAME=N`")
    rows = _bench_rows(config, shaders, as_json, repeat, all_cases, size)
    if not as_json:
        table(list(BenchRow.COLUMNS), [r.cells() for r in rows])
        click.echo(f"\nmedians of {repeat} calls each on {rows[0].device}")


def _bench_rows(
    config: BuildConfig,
    shaders: tuple[str, ...],
    as_json: bool,
    repeat: int,
    all_cases: bool,
    sizes: dict[str, int] | None,
) -> list[BenchRow]:
    """The rows of ``bench``, each echoed as it comes (as JSON, or as progress on stderr)."""
    from hatch_slang.cli.bench import bench as bench_kernels
    from hatch_slang.validate import NoReference

    rows = []
    try:
        for row in bench_kernels(
            config, list(shaders) or None, repeat=repeat, all_cases=all_cases, sizes=sizes
        ):
            rows.append(row)
            if as_json:
                click.echo(json.dumps(row.as_json()))
            else:
                click.echo(f"  timed {row.shader} {row.entry}", err=True)
    except NoReference as e:
        raise click.ClickException(
            f"{e}; or time the kernels on zero-filled inputs with `--size NAME=N`"
        ) from None
    except HatchSlangError as e:
        raise click.ClickException(str(e)) from None
    if not rows:
        raise click.ClickException(
            "the references yielded no case to time" if sizes is None else "no entry to time"
        )
    return rows


def _say_unreferenced(config: BuildConfig, shaders: tuple[str, ...], doing: str, hint: str = "") -> None:
    """On stderr: how many of the selected shaders have no reference, and which (not ``doing``),
    then ``hint``."""
    from hatch_slang.validate import unreferenced_shaders

    try:
        missing = unreferenced_shaders(config, list(shaders) or None)
    except HatchSlangError as e:
        raise click.ClickException(str(e)) from None
    if missing:
        click.secho(
            f"{len(missing)} shader(s) have no reference <name>.py, so are not {doing}: {', '.join(missing)}"
            + hint,
            fg="yellow",
            err=True,
        )


def _echo_row(line: str) -> None:
    click.secho(line, fg="red" if line.endswith("FAIL") else None)


@main.command(
    "init",
    short_help="Create a new project with the build hook configured.",
    epilog=_exit_codes("the directory is not empty (without --force), or cannot be written"),
)
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
    from hatch_slang.cli.scaffold import init_project, next_steps

    try:
        project = init_project(Path(directory), name, force=force)
    except HatchSlangError as e:
        raise click.ClickException(str(e)) from None
    click.echo(next_steps(project))
