"""One function, several entries, chosen by device (issue 26): ``// slang-variants: scale =
scale_coop scale_plain`` makes ``scale`` run the first entry the device supports; and the subgroup
size an entry requires (``// Subgroup size (lanes8): 8``, or the ``subgroup-size`` option), a
pipeline setting the runtime makes and checks.

Built from ``tests/packages/variants`` and run on lavapipe, which has no cooperative matrices and
subgroups of 8 only: the cooperative-matrix entry and the one that requires 32 lanes are refused
there (each naming what it lacks), their variant functions run the entry that follows them, and
the lanes each kernel sees are the size it required."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import slangrt

from ..helpers import BuiltPackage, built_package, copy_package, requires_device

pytestmark = [pytest.mark.compile, requires_device]


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BuiltPackage]:
    root = copy_package("variants", tmp_path_factory.mktemp("variants"))
    with built_package(root) as package:
        yield package


def _lavapipe() -> bool:
    return "llvmpipe" in slangrt.device().info.name


def test_a_variant_function_runs_the_first_entry_the_device_supports(built: BuiltPackage) -> None:
    scale = built.kernels("scale")
    x = np.arange(1000, dtype=np.float32)
    y = np.zeros_like(x)
    scale.scale(x, y)
    np.testing.assert_array_equal(y, 2 * x)
    paths = dict(scale.scale.paths())
    assert list(paths) == ["scale_coop", "scale_plain"] and paths["scale_plain"] == []
    coop = "cooperativeMatrix" in slangrt.device().features
    assert scale.scale.chosen() == ("scale_coop" if coop else "scale_plain")
    if not coop:
        assert any("CooperativeMatrixKHR" in p for p in paths["scale_coop"])
        with pytest.raises(slangrt.UnsupportedKernelError, match="CooperativeMatrixKHR"):
            scale.scale_coop(x, y)
    assert "scale_coop" in scale.__all__ and "scale" in scale.__all__


def test_an_entry_runs_with_the_subgroup_size_it_requires(built: BuiltPackage) -> None:
    lanes = built.kernels("lanes")
    core = slangrt.device().parts.core
    out = np.zeros((100, 2), np.uint32)
    if core.subgroup_control and core.subgroup_range[0] <= 8 <= core.subgroup_range[1]:
        lanes.lanes8(out)
        assert (out == 8).all()  # lane count and the subgroup's sum of ones: every lane runs
    lanes.lanes_any(out)
    assert (out[:, 0] == core.subgroup_size).all()
    entries = built.manifest["shaders"]["lanes"]["entries"]
    assert entries["lanes8"]["subgroup_size"] == 8 and entries["lanes32"]["subgroup_size"] == 32
    assert "subgroup_size" not in entries["lanes_any"] and built.manifest["format"] == 4


@pytest.mark.skipif("not _lavapipe()", reason="lavapipe's subgroups are 8 lanes only")
def test_a_size_the_device_cannot_give_is_refused_and_a_variant_skips_it(built: BuiltPackage) -> None:
    lanes = built.kernels("lanes")
    out = np.zeros((64, 2), np.uint32)
    with pytest.raises(slangrt.UnsupportedKernelError, match=r"a subgroup size of 32 .*offers 8 to 8"):
        lanes.lanes32(out)
    assert lanes.lanes.chosen() == "lanes8"
    lanes.lanes(out)
    assert (out == 8).all()


def test_an_entry_whose_workgroup_the_device_cannot_hold_is_skipped(built: BuiltPackage) -> None:
    wide = built.kernels("wide")
    x = np.arange(5000, dtype=np.float32)
    y = np.zeros_like(x)
    wide.wide(x, y)
    np.testing.assert_array_equal(y, x + 1)
    info = slangrt.device().info
    if info.max_invocations >= 2048 and info.max_workgroup_size[0] >= 2048:
        pytest.skip(f"{info.name} holds workgroups of 2048 threads")
    assert wide.wide.chosen() == "wide_64"
    lacks = dict(wide.wide.paths())["wide_2048"]
    assert any("2048 threads" in p and "maxComputeWorkGroup" in p for p in lacks), lacks


def test_the_subgroup_size_option_applies_to_its_shaders(built: BuiltPackage) -> None:
    option = built.kernels("lanes_option")
    assert built.manifest["shaders"]["lanes_option"]["entries"]["lanes_option"]["subgroup_size"] == 8
    if _lavapipe():
        out = np.zeros(70, np.uint32)
        option.lanes_option(out)
        assert (out == 8).all()


def test_lines_that_make_no_function_are_warnings_naming_them(built: BuiltPackage) -> None:
    said = "\n".join(w for w in built.output.warnings if "unreadable.slang" in w)
    for line, text in [
        (2, "names `plus_three`, which is no entry of the file"),
        (3, "`plus_one` and `plus_wide` take different arrays (x f32 read-write; x f32 read-write, y f32"),
        (4, "`plus_one` cannot be the variant function's name"),
        (6, "names an entry twice for `twice`"),
        (7, "reads `slang-variants: name = first_entry second_entry ...`"),
        (14, "`Subgroup size` must be a power of two from 1 to 128, got `12`"),
        (15, "`Subgroup size` names `plus_nine`, which is no entry of the file"),
    ]:
        assert f"shaders/unreadable.slang:{line}: warning: " in said and text in said, (line, said)
    unreadable = built.kernels("unreadable")
    assert unreadable.__all__ == ["plus_one", "plus_two", "plus_wide", "either"]
    x = np.zeros(10, np.float32)
    unreadable.either(x)
    np.testing.assert_array_equal(x, 1.0)  # (the first entry, on every device)
    assert not any("subgroup_size" in e for e in built.manifest["shaders"]["unreadable"]["entries"].values())


def _typed(root: Path, code: str) -> subprocess.CompletedProcess[str]:
    (root / "use.py").write_text(code, encoding="utf-8")
    return subprocess.run(
        [Path(sys.executable).parent / "mypy", "--strict", "--no-incremental", "use.py", "varpkg"],
        cwd=root,
        capture_output=True,
        text=True,
    )


@pytest.mark.slow  # mypy --strict in a subprocess
def test_variant_functions_are_typed_as_their_entries(built: BuiltPackage) -> None:
    good = _typed(
        built.root,
        "import numpy as np\nfrom varpkg.kernels import scale\n\n"
        "x = np.zeros(8, np.float32)\nscale.scale(x, x, n=8)\nname: str = scale.scale.chosen()\n",
    )
    assert good.returncode == 0, good.stdout
    bad = _typed(
        built.root, "import numpy as np\nfrom varpkg.kernels import scale\n\nscale.scale(1, 2, m=3)\n"
    )
    assert bad.returncode != 0 and 'Unexpected keyword argument "m"' in bad.stdout


def test_no_entry_the_device_runs_names_what_each_lacks(built: BuiltPackage, monkeypatch: Any) -> None:
    lanes = built.kernels("lanes")
    from slangrt._calls._kernel import Kernel

    monkeypatch.setattr(Kernel, "unsupported", lambda self, device=None: [f"a part {self.entry} wants"])
    fresh = type(lanes.lanes)(lanes.lanes.name, lanes._LIB, lanes.lanes._entries)
    with pytest.raises(slangrt.UnsupportedKernelError) as e:
        fresh(np.zeros((8, 2), np.uint32))
    assert (
        "runs none of its entries: `lanes32` needs a part lanes32 wants; `lanes8` needs a part lanes8 wants"
        in str(e.value)
    )


def test_show_lists_variant_functions_and_subgroup_sizes(built: BuiltPackage) -> None:
    from hatch_slang.builder import pipeline
    from hatch_slang.cli.show import show_data
    from hatch_slang.config.project import load_project_config

    data = show_data(pipeline.inspect(load_project_config(built.root), "lanes"))
    assert data["variants"] == [{"name": "lanes", "line": 2, "entries": ["lanes32", "lanes8"]}]
    sizes = {e["name"]: e["subgroup_size"] for e in data["entries"]}
    assert sizes == {"lanes8": 8, "lanes32": 32, "lanes_any": None}
    assert "slang-variants" not in data["summary"]


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_a_line_of_generic_entries_makes_one_function_per_instance_and_a_picker(
    built: BuiltPackage, dtype: Any
) -> None:
    """`twice = twice_wide twice_any` (two generic entries): `twice_float` and `twice_half`
    each run the first of their instances the device supports; `twice` picks by dtype."""
    twice = built.kernels("twice")
    x = np.arange(300, dtype=dtype)
    twice.twice(x)
    np.testing.assert_array_equal(x, 2 * np.arange(300, dtype=dtype))
    one = twice.twice_float if dtype == np.float32 else twice.twice_half
    suffix = "float" if dtype == np.float32 else "half"
    assert one.entries == (f"twice_wide_{suffix}", f"twice_any_{suffix}")
    if _lavapipe():
        assert one.chosen() == f"twice_any_{suffix}"
    assert {"twice", "twice_float", "twice_half"} <= set(twice.__all__)


def test_instances_of_one_dtype_get_their_functions_and_a_warning_instead_of_a_picker(
    built: BuiltPackage,
) -> None:
    """`step = step_a step_b` over instances N = 1, 2 of the same dtype: `step_1` and `step_2`
    are made; `step` could not tell them apart by dtype, so it is not, and the build says so."""
    said = "\n".join(w for w in built.output.warnings if "steps.slang" in w)
    assert (
        "shaders/steps.slang:2: warning: `step` is not made: its instances' functions (`step_1`, `step_2`)"
        in said
    )
    steps = built.kernels("steps")
    assert "step" not in steps.__all__ and not hasattr(steps, "step")
    for n, fn in ((1, steps.step_1), (2, steps.step_2)):
        x = np.zeros(100, np.float32)
        fn(x)
        np.testing.assert_array_equal(x, float(n))
