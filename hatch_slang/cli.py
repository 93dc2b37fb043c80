"""The ``hatch-slang`` command line: a thin front end over the same pipeline the build hook runs.

Exit codes: 0 success; 1 the work found a problem (a failed build, a stale file, a kernel that
disagrees with its reference); 2 bad usage (click's own).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click

from hatch_slang import __version__, pipeline
from hatch_slang.config import BuildConfig, load_project_config
from hatch_slang.errors import HatchSlangError
from hatch_slang.validate import Row
from hatch_slang.validate import validate as validate_kernels


def _config(root: str) -> BuildConfig:
    try:
        return load_project_config(Path(root).resolve())
    except HatchSlangError as e:
        raise click.ClickException(str(e)) from None


@click.group()
@click.version_option(__version__, prog_name="hatch-slang")
def main() -> None:
    """Compile Slang kernels into typed Python wrappers, and check, inspect and run them."""


@main.command()
@click.option("--root", default=".", show_default=True, help="Project root (holds pyproject.toml).")
@click.option("--out", type=click.Path(file_okay=False), help="Write here instead of the configured package.")
@click.option("-q", "--quiet", is_flag=True, help="Print only errors.")
def build(root: str, out: str | None, quiet: bool) -> None:
    """Regenerate wrappers, SPIR-V and manifest into the source tree."""
    config = _config(root)
    dest = Path(out) if out else config.package_dir
    try:
        output = pipeline.build(config)
    except HatchSlangError as e:
        raise click.ClickException(str(e)) from None
    for w in output.warnings:
        click.secho(f"warning: {w}", fg="yellow", err=True)
    changed = pipeline.write_output(output, dest)
    if not quiet:
        click.echo(f"{len(output.specs)} shader(s) -> {dest} ({len(changed)} file(s) written)")


@main.command()
def devices() -> None:
    """List Vulkan devices; the default one is marked with *."""
    import slangrt

    try:
        infos = slangrt.devices()
        default = slangrt.device().info.index if infos else -1
    except slangrt.SlangRTError as e:
        raise click.ClickException(str(e)) from None
    for d in infos:
        mark = "*" if d.index == default else " "
        click.echo(
            f"{mark} {d.index}  {d.name}  [{d.type}]  driver {d.driver}  "
            f"Vulkan {d.api_version}  {d.memory_bytes / 2**30:.1f} GiB"
        )


@main.command()
@click.argument("shaders", nargs=-1)
@click.option("--root", default=".", show_default=True, help="Project root (holds pyproject.toml).")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object per line instead of a table.")
@click.option("--seed", default=0, show_default=True, help="Seed for the random inputs.")
def validate(shaders: tuple[str, ...], root: str, as_json: bool, seed: int) -> None:
    """Run kernels on the default device and compare with their NumPy references."""
    config = _config(root)
    rows = []
    try:
        for row in validate_kernels(config, list(shaders) or None, seed):
            rows.append(row)
            if as_json:
                click.echo(json.dumps(row.as_json()))
    except HatchSlangError as e:
        raise click.ClickException(str(e)) from None
    if not as_json:
        _table(rows)
    bad = [r for r in rows if not r.ok]
    if not rows:
        raise click.ClickException("no kernel has a reference (shaders/<name>.py) to validate against")
    if not as_json:
        click.echo(f"\n{len(rows) - len(bad)}/{len(rows)} ok on {rows[0].device}")
    sys.exit(1 if bad else 0)


def _table(rows: list[Row]) -> None:
    headers = ["shader", "entry", "shape", "max abs err", "max rel err", "ms", "ok"]
    cells = [
        [
            r.shader,
            r.entry,
            r.shape,
            f"{r.max_abs_err:.2e}",
            f"{r.max_rel_err:.2e}",
            f"{r.seconds * 1e3:.2f}",
            "ok" if r.ok else "FAIL",
        ]
        for r in rows
    ]
    widths = [max(len(h), *(len(c[i]) for c in cells)) if cells else len(h) for i, h in enumerate(headers)]
    click.echo("  ".join(h.ljust(w) for h, w in zip(headers, widths)))
    click.echo("  ".join("-" * w for w in widths))
    for c in cells:
        line = "  ".join(x.ljust(w) for x, w in zip(c, widths))
        click.secho(line, fg=None if c[-1] == "ok" else "red")
