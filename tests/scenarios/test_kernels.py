"""The kernel library in shaders/: every reference case of every kernel, on lavapipe.

The library is built from the repository's own shaders into a temporary package (never the
in-tree one, which may be stale), then each `shaders/<name>.py` reference runs through the same
harness `hatch-slang validate` uses.
"""

from __future__ import annotations

import importlib
import shutil
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest

from hatch_slang.validate import Case, Skipped, load_manifest, load_reference, run_case

from ..helpers import REPO, built_package, requires_device

pytestmark = [pytest.mark.compile, pytest.mark.gpu, requires_device]

SHADERS = sorted(p.stem for p in (REPO / "shaders").glob("*.slang") if p.with_suffix(".py").is_file())
PACKAGE = "kernel_library_under_test"
# The kernels the issue names; each must have cases.
# The generic ones (elementwise, rmsnorm, softmax) for each storage format.
GENERIC = ("add_inplace", "scaled_add_inplace", "mul_inplace", "silu_mul_inplace")
GENERIC += ("rmsnorm_batch", "add_rmsnorm_batch", "softmax")
REQUIRED_ENTRIES = {f"{e}_{fmt}" for e in GENERIC for fmt in ("f32", "f16", "bf16")} | {
    "rope",
    "gelu",
    "gemv_f32",
    "gemv_q4_0",
    "moe_route",
    "moe_combine",
    "argmax",
}


@pytest.fixture(scope="module")
def library(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """Build shaders/ into <tmp>/kernel_library_under_test and put it on sys.path."""
    out = tmp_path_factory.mktemp("library")
    try:
        with built_package(REPO, into=out, package=PACKAGE):
            yield out / PACKAGE
    finally:
        shutil.rmtree(out, ignore_errors=True)


def kernels(name: str) -> ModuleType:
    return importlib.import_module(f"{PACKAGE}.{name}")


def reference_cases(name: str) -> list[Case]:
    ref = load_reference(REPO / "shaders" / f"{name}.py")
    return list(ref.cases(np.random.default_rng(0)))


def test_every_required_kernel_has_reference_cases() -> None:
    entries = {c.entry for name in SHADERS for c in reference_cases(name)}
    assert entries >= REQUIRED_ENTRIES, REQUIRED_ENTRIES - entries


@pytest.mark.parametrize("name", SHADERS)
def test_kernel_matches_numpy_reference(library: Path, name: str) -> None:
    module = kernels(name)
    manifest = load_manifest(module)
    rng = np.random.default_rng(1)
    failures = []
    labels: dict[str, list[str]] = {}
    for number, case in enumerate(reference_cases(name), start=1):
        try:
            label, abs_err, rel_err, ok, _, error = run_case(
                module, manifest, case, rng, f"{name}.py case {number}"
            )
        except Skipped as s:  # the device lacks what the kernel needs (coopmat on lavapipe): as validate
            labels.setdefault(case.entry, []).append(s.label)
            continue
        labels.setdefault(case.entry, []).append(label)
        if not ok:
            failures.append(
                f"{case.entry} [{label}]: max abs err {abs_err:.3g}, max rel err {rel_err:.3g} {error}"
            )
    assert not failures, "\n".join(failures)
    entries = manifest["shaders"][name]["entries"]
    # (a mapped function's generated entries are its; its cases name the function)
    mapped = {n for n in module.__all__ if type(getattr(module, n)).__name__.startswith("_hs_Mapped_")}
    own = {e for e in entries if not e.startswith("_hs_")}
    assert set(labels) == own | mapped, "every entry (each instance of a generic one) has cases"


def test_harness_catches_a_wrong_result(library: Path) -> None:
    """A reference that disagrees with the kernel fails its row: the comparison can fail."""
    module = kernels("elementwise")
    manifest = load_manifest(module)
    case = Case(
        "add_inplace_f32", dims={"n": 1000}, expect=lambda a: {"a": a["a"] + a["b"] + np.float32(1e-3)}
    )
    _, abs_err, _, ok, _, error = run_case(module, manifest, case, np.random.default_rng(0), "test")
    assert not ok and abs_err == pytest.approx(1e-3, rel=1e-2) and not error


def test_a_kernel_that_raises_is_a_failed_row(library: Path) -> None:
    module = kernels("elementwise")
    manifest = load_manifest(module)
    # `b` has fewer elements than `a`: the wrapper refuses the call; the row says why.
    args = {"a": np.zeros(10, np.float32), "b": np.zeros(9, np.float32)}
    case = Case("add_inplace_f32", args=args, expect={"a": np.zeros(10, np.float32)})
    _, abs_err, _, ok, _, error = run_case(module, manifest, case, np.random.default_rng(0), "test")
    assert not ok and abs_err == float("inf")
    assert error.startswith("ValueError: elementwise.add_inplace_f32(): argument `b` has 9 elements")


def test_inputs_are_built_from_the_contract(library: Path) -> None:
    from hatch_slang.validate import contract_inputs

    module = kernels("moe_gemv")
    entry = load_manifest(module)["shaders"]["moe_gemv"]["entries"]["moe_gemv_q4_0"]
    dims = {"n_entries": 6, "n_experts": 4, "rows": 10, "cols": 64}
    args = contract_inputs(entry, dims, {"x_div": 3}, np.random.default_rng(0))
    assert {k: (v.shape, v.dtype.name) for k, v in args.items() if isinstance(v, np.ndarray)} == {
        "wq": ((4, 10, 8), "uint32"),
        "wd": ((4, 10, 2), "float16"),
        "x": ((2, 64), "float32"),
        "sel_expert": ((6,), "uint32"),
        "z": ((6, 10), "float32"),
    }
    from hatch_slang.errors import HatchSlangError

    with pytest.raises(HatchSlangError, match=r"cannot size binding `wq`: no value for `n_experts`"):
        contract_inputs(entry, {"n_entries": 6}, {"x_div": 3}, np.random.default_rng(0), where="here")


def test_calls_on_tensors_batch_with_their_own_params(library: Path) -> None:
    """Packed params live on the device, one per distinct value: batched calls each see theirs."""
    import slangrt

    ew = kernels("elementwise")
    rng = np.random.default_rng(5)
    a, b = rng.standard_normal(1001, dtype=np.float32), rng.standard_normal(1001, dtype=np.float32)
    ta, tb = slangrt.Tensor.from_numpy(a), slangrt.Tensor.from_numpy(b)
    with slangrt.batch():
        for alpha in (0.5, 2.0, 0.5, -1.0):
            ew.scaled_add_inplace(ta, tb, alpha=alpha)
    want = a.astype(np.float64) + 2.0 * b
    np.testing.assert_allclose(ta.numpy(), want, rtol=1e-5, atol=1e-5)
