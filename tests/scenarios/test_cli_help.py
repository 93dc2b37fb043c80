"""What a user reads: each command's one-line summary whole (no `...`), its own --help and exit
codes (no text copied from another command), and `validate`/`bench` saying which shaders they
leave out for want of a reference."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner

from hatch_slang.cli.commands import main

from ..helpers import BuildProject, requires_device

COMMANDS = ("bench", "build", "check", "devices", "init", "show", "validate")


def _help(*args: str) -> str:
    result = CliRunner().invoke(main, [*args, "--help"], terminal_width=80)
    assert result.exit_code == 0, result.output
    return result.output


def test_every_command_summary_is_whole() -> None:
    listed = _help().split("Commands:\n", 1)[1].split("\n\n", 1)[0].splitlines()
    assert [line.split()[0] for line in listed] == list(COMMANDS)
    for line in listed:
        assert not line.rstrip().endswith("..."), line
        assert len(line) <= 80, line


@pytest.mark.parametrize("command", COMMANDS)
def test_each_command_says_its_own_exit_codes(command: str) -> None:
    text = _help(command)
    assert "Exit codes:" in text
    assert "for check:" not in text or command == "check"
    one = _code_one(text)
    others = {c: _code_one(_help(c)) for c in COMMANDS if c != command}
    assert one not in others.values(), (command, one)


def _code_one(text: str) -> str:
    """What a command's help says exit code 1 means."""
    lines = [line.strip() for line in text.split("Exit codes:", 1)[1].splitlines()]
    [one] = [line for line in lines if line.startswith("1  ")]
    return one


def test_bench_refuses_a_repeat_below_one_as_usage() -> None:
    result = CliRunner().invoke(main, ["bench", "--repeat", "0"])
    assert result.exit_code == 2 and "--repeat" in result.output


@requires_device
@pytest.mark.gpu
@pytest.mark.compile
def test_validate_and_bench_say_which_shaders_have_no_reference(
    package: Callable[[str], Path], build_project: BuildProject
) -> None:
    root = build_project(package("conventions")).root
    without = sorted(
        p.relative_to(root).as_posix()
        for p in (root / "shaders").glob("*.slang")
        if not p.with_suffix(".py").exists()
    )
    assert without and len(without) < len(list((root / "shaders").glob("*.slang")))
    for command, doing in (("validate", "validated"), ("bench", "timed")):
        args = [command, "--root", str(root), "--json"] + (["--repeat", "1"] if command == "bench" else [])
        result = CliRunner().invoke(main, args)
        assert result.exit_code == 0, result.output
        note = (
            f"{len(without)} shader(s) have no reference <name>.py, so are not {doing}: {', '.join(without)}"
        )
        assert note in result.stderr, result.stderr
        assert all(json.loads(line) for line in result.stdout.splitlines())  # stdout stays JSON
    picked = CliRunner().invoke(main, ["validate", "--root", str(root), "block_sum"])
    assert picked.exit_code == 0 and "no reference" not in picked.stderr, picked.stderr


def test_bench_help_documents_sizes_and_flop_counts() -> None:
    text = " ".join(_help("bench").split())
    assert "--size NAME=N" in text and "zero-filled" in text and "index buffers stay in range" in text
    assert "GFLOP/s" in text and "flops(entry, sizes)" in text and "gflop_per_s" in text
