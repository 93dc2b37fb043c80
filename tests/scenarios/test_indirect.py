"""Indirect dispatch through generated wrappers: ``tests/packages/indirect``'s ``moe_route``.

``moe_count`` counts the tokens routed to each expert and writes ``(ceil(count / 64), 1, 1)``
per expert; ``moe_gather`` (a Dispatch line, overridden by ``grid=``) and ``moe_gather_any`` (no
Dispatch line: ``grid=`` a tuple or an indirect grid) copy each expert's tokens into its slots
over exactly that grid: checked against NumPy in plain calls, ``batch()`` and a recorded step
replayed with other routings. The arguments' errors name them. The runtime's own cases:
tests/runtime/test_indirect.py.
"""

from __future__ import annotations

import inspect
from collections.abc import Iterator
from types import ModuleType

import numpy as np
import pytest
import slangrt

from ..helpers import built_package, copy_package, requires_device

pytestmark = [pytest.mark.gpu, pytest.mark.compile, requires_device]
EXPERTS, TOKENS = 3, 300


@pytest.fixture(scope="module")
def route(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ModuleType]:
    with built_package(copy_package("indirect", tmp_path_factory.mktemp("indirect"))) as package:
        yield package.kernels("moe_route")


def _expected(routing: np.ndarray, x: np.ndarray, e: int) -> np.ndarray:
    """Expert ``e``'s slots after a gather over its indirect grid: its tokens' values, then -1 up
    to the grid's end (a multiple of 64), then untouched (0)."""
    mine = x[routing == e]
    slots = np.zeros(TOKENS, np.float32)
    end = min(TOKENS, -(-len(mine) // 64) * 64)
    slots[:end] = -1.0
    slots[: len(mine)] = mine
    return slots


class Step:
    def __init__(self, route: ModuleType, any_grid: bool = False) -> None:
        self.route, self.any_grid = route, any_grid
        self.routing = slangrt.Tensor.zeros(TOKENS, np.uint32)
        self.x = slangrt.Tensor.zeros(TOKENS, np.float32)
        self.grid = slangrt.Tensor.zeros((EXPERTS, 3), np.uint32)
        self.slots = [slangrt.Tensor.zeros(TOKENS, np.float32) for _ in range(EXPERTS)]

    def fill(self, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
        routing = rng.choice(EXPERTS, TOKENS, p=[0.75, 0.25, 0.0]).astype(np.uint32)
        x = rng.standard_normal(TOKENS).astype(np.float32)
        self.routing.copy_from(routing)
        self.x.copy_from(x)
        for s in self.slots:
            s.copy_from(np.zeros(TOKENS, np.float32))
        return routing, x

    def __call__(self) -> None:
        self.route.moe_count(self.routing, self.grid)
        for e in range(EXPERTS):
            grid = slangrt.IndirectGrid(self.grid, 3 * e)
            if self.any_grid:
                self.route.moe_gather_any(self.routing, self.x, self.slots[e], expert=e, grid=grid)
            else:
                self.route.moe_gather(self.routing, self.x, self.slots[e], expert=e, grid=grid)

    def check(self, routing: np.ndarray, x: np.ndarray) -> None:
        for e in range(EXPERTS):
            np.testing.assert_array_equal(self.slots[e].numpy(), _expected(routing, x, e))


@pytest.mark.parametrize("any_grid", [False, True], ids=["dispatch-line", "no-dispatch-line"])
def test_wrappers_dispatch_the_grid_a_kernel_wrote(route: ModuleType, any_grid: bool) -> None:
    step, rng = Step(route, any_grid), np.random.default_rng(0)
    for _ in range(2):
        routing, x = step.fill(rng)
        step()
        step.check(routing, x)
        assert step.grid.numpy()[2].tolist() == [0, 1, 1]  # expert 2 has no tokens: nothing ran
    routing, x = step.fill(rng)
    with slangrt.batch():
        step()
    step.check(routing, x)


def test_a_recorded_step_follows_the_counts_of_each_replay(route: ModuleType) -> None:
    step, rng = Step(route), np.random.default_rng(1)
    routing, x = step.fill(rng)
    with slangrt.record() as recorded:
        step()
    step.check(routing, x)
    for _ in range(3):
        routing, x = step.fill(rng)
        recorded.replay()
        step.check(routing, x)


def test_the_grid_keyword(route: ModuleType) -> None:
    params = inspect.signature(route.moe_gather).parameters
    assert params["grid"].default is None  # optional: the Dispatch line's grid otherwise
    assert params["grid"].kind is inspect.Parameter.KEYWORD_ONLY
    # moe_count has an argument named grid (the counts it writes): its indirect grid is grid_
    assert list(inspect.signature(route.moe_count).parameters)[-1] == "grid_"
    # the Dispatch line's grid when none is given, as before
    routing = np.array([0, 1, 0], np.uint32)
    slots = np.zeros(3, np.float32)
    route.moe_gather(routing, np.array([5, 6, 7], np.float32), slots, expert=0)
    np.testing.assert_array_equal(slots, [5, 7, -1])
    route.moe_gather_any(routing, np.array([5, 6, 7], np.float32), slots, expert=1, grid=(1, 1, 1))
    np.testing.assert_array_equal(slots, [6, -1, -1])


def test_bad_indirect_grids_name_the_argument(route: ModuleType) -> None:
    routing = slangrt.Tensor.zeros(TOKENS, np.uint32)
    x = slangrt.Tensor.zeros(TOKENS, np.float32)
    slots = slangrt.Tensor.zeros(TOKENS, np.float32)
    cases: list[tuple[object, type[Exception], str]] = [
        (np.ones(3, np.uint32), TypeError, r"argument `grid` is a NumPy array.*slangrt\.Tensor"),
        (slangrt.Tensor.zeros(3, np.int32), TypeError, r"argument `grid` must be a uint32 tensor.*int32"),
        (slangrt.Tensor.zeros(2, np.uint32), ValueError, r"argument `grid`: offset 0 needs 3 elements"),
        (
            slangrt.IndirectGrid(slangrt.Tensor.zeros(6, np.uint32), 4),
            ValueError,
            r"argument `grid`: offset 4 needs 7 elements \(x, y, z\), the tensor has 6",
        ),
        ((1, 1, 1), TypeError, r"argument `grid` of a kernel with a Dispatch line takes only a grid read"),
    ]
    for grid, kind, message in cases:
        with pytest.raises(kind, match=message):
            route.moe_gather(routing, x, slots, expert=0, grid=grid)
    with pytest.raises(TypeError, match=r"argument `grid` is a NumPy array"):
        route.moe_gather_any(routing, x, slots, expert=0, grid=np.ones(3, np.uint32))
    other = slangrt.Device(slangrt.device().info.index)
    try:
        elsewhere = slangrt.Tensor.zeros(3, np.uint32, device=other)
        with pytest.raises(ValueError, match=r"argument `grid` is a tensor on .*; the kernel runs on"):
            route.moe_gather(routing, x, slots, expert=0, grid=elsewhere)
    finally:
        other.close()
    assert not slots.numpy().any()  # nothing ran


def test_the_runtime_s_check_kernel_is_its_source() -> None:
    """The built-in check kernel's committed SPIR-V (shipped in the runtime's wheel, which needs no
    compiler) is what its source compiles to: rebuild it with tests/runtime/data/regen.py."""
    from hatch_slang.compile.compiler import CompileJob, CompileOptions, CompilerPool
    from hatch_slang.spec.reflection import normalize_spirv

    from ..helpers import REPO

    here = REPO / "runtime" / "slangrt" / "_calls" / "_builtin"
    job = CompileJob("indirect_check.slang", ("indirect_check",), CompileOptions(), str(here))
    with CompilerPool(workers=1) as pool:
        (result,) = pool.compile([job])
    assert result.error is None, result.error
    spirv = normalize_spirv(result.entries[0].spirv, keep_capabilities=False)
    assert spirv == (here / "indirect_check.spv").read_bytes(), (
        "run tests/runtime/data/regen.py indirect_check"
    )
