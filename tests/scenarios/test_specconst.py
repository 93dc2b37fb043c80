"""Specialization constants through the build: ``tests/packages/types``' ``specconst_*`` kernels
(a group size and an unroll factor, a float and a bool) validated against NumPy with two values
each, the wrappers' keyword arguments and their checks, repeated calls with other values, the
manifest's record; and the build errors of constants that cannot be arguments.
"""

from __future__ import annotations

import inspect
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import slangrt
from click.testing import CliRunner

from hatch_slang.builder import pipeline
from hatch_slang.cli.commands import main
from hatch_slang.config.project import parse_config
from hatch_slang.errors import BuildErrors, HatchSlangError, ShaderError

from ..helpers import BuiltPackage, built_package, copy_package, requires_device

pytestmark = [pytest.mark.compile]
SHADERS = ("specconst_chunks", "specconst_scale")


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BuiltPackage]:
    with built_package(copy_package("types", tmp_path_factory.mktemp("types"))) as package:
        yield package


def test_the_manifest_records_each_entry_s_constants(built: BuiltPackage) -> None:
    chunks = built.entry("specconst_chunks", "specconst_chunks")
    assert chunks["constants"] == [
        {"id": 0, "name": "BLOCK", "scalar": "u32", "default": 64},
        {"id": 1, "name": "UNROLL", "scalar": "u32", "default": 4},
    ]
    assert chunks["threads"] == [64, 1, 1]  # BLOCK's default
    scale = built.entry("specconst_scale", "specconst_scale")
    assert [(c["name"], c["scalar"], c["default"]) for c in scale["constants"]] == [
        ("SCALE", "f32", 2.0),
        ("NEGATE", "bool", False),
    ]
    assert "constants" not in built.entry("scale_rows", "scale_rows")  # (no key without constants)
    assert built.manifest["format"] == 2


def test_each_constant_is_a_keyword_argument_at_its_default(built: BuiltPackage) -> None:
    chunks = built.kernels("specconst_chunks").specconst_chunks
    params = inspect.signature(chunks).parameters
    assert (params["BLOCK"].default, params["UNROLL"].default) == (64, 4)
    assert params["BLOCK"].kind is inspect.Parameter.KEYWORD_ONLY
    assert "BLOCK: specialization constant (u32), default 64" in (chunks.__doc__ or "")
    assert "Threads per group: BLOCK (default 64) x 1 x 1." in (chunks.__doc__ or "")
    scale = inspect.signature(built.kernels("specconst_scale").specconst_scale).parameters
    assert (scale["SCALE"].default, scale["NEGATE"].default) == (2.0, False)


@requires_device
@pytest.mark.gpu
def test_the_kernels_validate_against_numpy_with_two_values_each(built: BuiltPackage) -> None:
    result = CliRunner().invoke(main, ["validate", "--root", str(built.root), "--json", *SHADERS])
    rows = [json.loads(line) for line in result.output.splitlines() if line.startswith("{")]
    assert result.exit_code == 0, result.output[-2000:]
    assert rows and all(r["ok"] for r in rows), [r for r in rows if not r["ok"]]
    shapes = {r["shape"] for r in rows}
    assert {"n=1000 BLOCK=32", "n=1000 BLOCK=128 UNROLL=2", "n=1000 UNROLL=3"} <= shapes
    assert {"n=100 SCALE=0.5", "n=100 SCALE=-3.0 NEGATE=True"} <= shapes


@requires_device
@pytest.mark.gpu
def test_a_repeated_call_with_another_value_runs_that_value(built: BuiltPackage) -> None:
    """The same tensors each call: the wrapper's LastCall and the kernel's plans of one set of
    values must not run for another."""
    chunks = built.kernels("specconst_chunks").specconst_chunks
    n = 1000
    x = slangrt.Tensor.from_numpy(np.arange(n, dtype=np.float32))
    for unroll, block in [(4, 64), (4, 64), (4, 32), (4, 32), (2, 32), (4, 64)]:
        m = -(-n // unroll)
        y, g = slangrt.Tensor.zeros(m, np.float32), slangrt.Tensor.zeros(m, np.uint32)
        for _ in range(2):  # the second: a repeat of the first
            g.copy_from(np.zeros(m, np.uint32))
            chunks(x, y, g, BLOCK=block, UNROLL=unroll)
            np.testing.assert_array_equal(g.numpy(), np.arange(m) // block)
        want = np.arange(m * unroll, dtype=np.float32).reshape(m, unroll)
        want[want >= n] = 0
        np.testing.assert_allclose(y.numpy(), want.sum(axis=1), rtol=1e-6)
    # One tensor set across values: the last call's values are not the next one's.
    m = n // 4
    y, g = slangrt.Tensor.zeros(m, np.float32), slangrt.Tensor.zeros(m, np.uint32)
    for block in (64, 32, 64, 128):
        chunks(x, y, g, BLOCK=block)
        np.testing.assert_array_equal(g.numpy(), np.arange(m) // block)


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"BLOCK": 1.5}, TypeError, r"'specconst_chunks.specconst_chunks': specialization constant BLOCK"),
        ({"BLOCK": -1}, ValueError, r"BLOCK \(u32\) is -1, out of its range"),
        ({"BLOCK": 0}, ValueError, "BLOCK sets the thread-group size's x, which must be at least 1"),
        ({"UNROLL": True}, TypeError, "UNROLL .* takes an int, got bool True"),
    ],
)  # fmt: skip
def test_a_bad_value_is_an_error_naming_the_constant(
    built: BuiltPackage, kwargs: dict[str, Any], error: type[Exception], match: str
) -> None:
    chunks = built.kernels("specconst_chunks").specconst_chunks
    x, y, g = np.ones(100, np.float32), np.zeros(25, np.float32), np.zeros(25, np.uint32)
    with pytest.raises(error, match=match):
        chunks(x, y, g, **kwargs)
    scale = built.kernels("specconst_scale").specconst_scale
    with pytest.raises(TypeError, match=r"NEGATE \(bool\) takes a bool, got int 1"):
        scale(x, np.zeros(100, np.float32), NEGATE=1)


KERNEL = """\
// Bindings:
//   u0: data    f32, `[n]`
//   t1: params  (n)
//
// Dispatch: ceil(n / BLOCK) groups{of}
[vk::constant_id(0)] const uint BLOCK = 64;
[vk::constant_id(1)] const float {name} = 1.0;
[[vk::binding(0)]] RWStructuredBuffer<float> data;
[[vk::binding(1)]] StructuredBuffer<uint> params;
[shader("compute")]
[numthreads(BLOCK, 1, 1)]
void k(uint3 id : SV_DispatchThreadID) {{ if (id.x < params[0]) data[id.x] *= {name}; }}
"""


def _errors(tmp_path: Path, *, name: str = "SCALE", of: str = "") -> list[HatchSlangError]:
    (tmp_path / "shaders").mkdir()
    (tmp_path / "shaders" / "k.slang").write_text(KERNEL.format(name=name, of=of))
    config = parse_config(tmp_path, {"shaders": ["shaders/*.slang"], "package": "p/k"})
    with pytest.raises((BuildErrors, ShaderError)) as info:
        pipeline.build(config)
    e = info.value
    return e.errors if isinstance(e, BuildErrors) else [e]


@pytest.mark.parametrize(
    ("name", "match"),
    [
        (
            "n",
            r"k.slang:7: specialization constant `n` of entry `k` has the name of another",
        ),
        ("_s", r"k.slang:7: specialization constant `_s` of entry `k` cannot name a keyword argument"),
    ],
)
def test_a_constant_that_cannot_be_an_argument_is_a_build_error(
    tmp_path: Path, name: str, match: str
) -> None:
    [e] = _errors(tmp_path, name=name)
    assert isinstance(e, ShaderError)
    assert e.line == 7
    with pytest.raises(ShaderError, match=match):
        raise e


def test_a_number_for_a_group_size_a_constant_sets_is_a_build_error(tmp_path: Path) -> None:
    [e] = _errors(tmp_path, of=" of 64")
    assert isinstance(e, ShaderError) and e.line == 5
    assert "group size is set by specialization constant BLOCK: leave the number off" in str(e)


def test_show_lists_the_constants_with_their_defaults(built: BuiltPackage) -> None:
    result = CliRunner().invoke(main, ["show", "--root", str(built.root), "--json", "specconst_chunks"])
    assert result.exit_code == 0, result.output[-2000:]
    [entry] = json.loads(result.output[result.output.index("{") :])["entries"]
    assert entry["constants"][0] == {"id": 0, "name": "BLOCK", "scalar": "u32", "default": 64}
    assert entry["threads_by"] == ["BLOCK", None, None]
    kinds = {a["name"]: a["kind"] for a in entry["arguments"]}
    assert kinds["BLOCK"] == "specialization constant u32, default 64, the group size's x"
    text = CliRunner().invoke(main, ["show", "--root", str(built.root), "specconst_chunks"]).output
    assert "threads per group: BLOCK (default 64) x 1 x 1 = 64" in text
