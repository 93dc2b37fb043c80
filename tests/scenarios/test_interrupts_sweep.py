"""A call that returns is right, wherever a KeyboardInterrupt came in the calls before it.

Python raises a signal's exception at any point where the interpreter checks for one: a function
entered, a line begun, a call returning (into Python, or from C: a driver call). The sweep below
raises a KeyboardInterrupt at each such point of one generated-wrapper call in turn (every
distinct point the call passes through in the runtime, the generated module and ``contextlib``,
at its first pass), then checks that the interrupted call, if it returned anyway, is right, and
that the next calls are right (one like it, the same tensors again for the ``hot`` form, and one
of another shape). Each call is queued behind a few milliseconds of busy work on the device, so
that an interrupted call's kernel is still to run when the next call starts.

Then the timer soak of ``benchmarks/soak_interrupts.py``: SIGALRM raising KeyboardInterrupt every
7 to 10 ms while calls of every form run; every call that returned is checked.
"""

from __future__ import annotations

import contextlib
import linecache
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from types import FrameType, ModuleType
from typing import Any

import numpy as np
import pytest
import slangrt

from benchmarks.soak_interrupts import MODES, Calls, Case, soak

from ..helpers import requires_device

pytestmark = [pytest.mark.gpu, pytest.mark.compile, requires_device]

# Busy work ahead of each interrupted call (a few ms on lavapipe: far longer than the next
# call takes to reach its kernel's memory).
BUSY_ROUNDS = 5000
Site = tuple[str, str, int, str]  # event, file, line, the C function (c_return)


class Interrupt:
    """Raises KeyboardInterrupt at ``target`` (its first pass), once; with no target, records
    the sites a call passes through, in order."""

    def __init__(self, roots: tuple[str, ...], target: Site | None = None) -> None:
        self.roots = roots
        self.target = target
        self.sites: dict[Site, None] = {}
        self.fired = False

    def _at(self, site: Site) -> None:
        if self.target is None:
            self.sites.setdefault(site, None)
        elif not self.fired and site == self.target:
            self.fired = True
            sys.settrace(None)
            sys.setprofile(None)
            raise KeyboardInterrupt

    def _trace(self, frame: FrameType, event: str, arg: Any) -> Any:
        code = frame.f_code
        if not code.co_filename.startswith(self.roots):
            return None
        if event == "line" and linecache.getline(code.co_filename, frame.f_lineno).strip() == "try:":
            # A `try:` line runs a NOP, where CPython checks for no signal; the hook could raise
            # there, and right after a `with` statement's __enter__ that is outside the block
            # whose exit undoes it (CPython 3.11): a lock left held, which no signal can do.
            return self._trace
        if event in ("call", "line", "return"):
            self._at((event, code.co_filename, frame.f_lineno, ""))
        return self._trace

    def _profile(self, frame: FrameType, event: str, arg: Any) -> None:
        if event == "c_return" and frame.f_code.co_filename.startswith(self.roots):
            name = getattr(arg, "__qualname__", None) or getattr(arg, "__name__", type(arg).__name__)
            if str(name).endswith("__enter__"):
                # A `with` statement's C __enter__ (a lock's): CPython checks for signals nowhere
                # between its return and the block whose exit undoes it, so no signal raises
                # there; the hook could, and would leave the lock held, which no signal can.
                return
            self._at(("c_return", frame.f_code.co_filename, frame.f_lineno, str(name)))

    def __enter__(self) -> Interrupt:
        sys.setprofile(self._profile)
        sys.settrace(self._trace)
        return self

    def __exit__(self, *exc: object) -> None:
        sys.settrace(None)
        sys.setprofile(None)


@pytest.fixture
def calls(kernels: ModuleType) -> Iterator[Calls]:
    call = Calls(kernels)
    queue = slangrt.device().parts.queue
    timeout, queue.timeout_ns = queue.timeout_ns, 20 * 10**9  # a hang fails, after 20 s
    try:
        yield call
    finally:
        queue.timeout_ns = timeout
        slangrt.device().synchronize()


def _roots(kernels: ModuleType) -> tuple[str, ...]:
    return (
        str(Path(slangrt.__file__).parent) + "/",
        str(Path(kernels.__file__).parent) + "/",
        contextlib.__file__,
    )


def _check(call: Calls, case: Case, what: str, failures: list[str]) -> None:
    try:
        wrong = case.wrong(call(case))
    except Exception as exc:
        wrong = f"raised {exc!r}"
    if wrong is not None:
        failures.append(f"{what}: {wrong}")


def _batch_submits(calls: Calls) -> bool:
    """Whether a ``batch()`` block submits its work as it ends (not left inside another one)."""
    queue = slangrt.device().parts.queue
    before = queue.submitted
    with slangrt.batch():
        calls.busy(1)
    return queue.submitted > before


def _another_thread_calls(calls: Calls, case: Case) -> bool:
    """Whether a call from another thread returns, right, within 20 s (the interrupted call
    left no lock of the kernel, the queue or the memory held: this thread could take it again)."""
    done: list[bool] = []
    worker = threading.Thread(target=lambda: done.append(case.wrong(calls(case)) is None), daemon=True)
    worker.start()
    worker.join(20)
    return done == [True]


@pytest.mark.parametrize("mode", MODES)
def test_an_interrupt_anywhere_in_a_call_leaves_the_next_calls_right(
    kernels: ModuleType, calls: Calls, mode: str
) -> None:
    rng = np.random.default_rng(8)
    roots = _roots(kernels)
    for _ in range(3):  # warm: every cache the call uses holds it
        _check(calls, Case(rng, mode), "warm-up", [])
    calls.busy(BUSY_ROUNDS)
    with Interrupt(roots) as seen:
        calls(Case(rng, mode))
    sites = list(seen.sites)
    assert len(sites) > 50, sites  # (the trace saw the call)
    failures: list[str] = []
    fired = 0
    for site in sites:
        where = f"interrupted at {site[0]} {Path(site[1]).name}:{site[2]} {site[3]}".rstrip()
        case = Case(rng, mode)
        calls.busy(BUSY_ROUNDS)
        got = None
        with contextlib.suppress(KeyboardInterrupt), Interrupt(roots, site) as interrupt:
            got = calls(case)
        fired += interrupt.fired
        if got is not None and (wrong := case.wrong(got)) is not None:
            failures.append(f"{where}: the interrupted call returned, {wrong}")
        _check(calls, Case(rng, mode), f"{where}: the next call", failures)
        _check(calls, Case(rng, "numpy" if mode == "hot" else mode), f"{where}: the call after", failures)
        if not _batch_submits(calls):
            failures.append(f"{where}: a batch() block no longer submits as it ends")
        if not _another_thread_calls(calls, Case(rng, "numpy")):
            failures.append(f"{where}: a call from another thread did not return (a lock left held?)")
            break
    assert not failures, f"{len(failures)} of {len(sites)} sites:\n" + "\n".join(failures[:40])
    assert fired >= len(sites) * 0.6, (fired, len(sites))  # (most sites come again in a later call)


@pytest.mark.parametrize("mode", ["numpy", "all"])
def test_a_timer_soak_of_interrupts_finds_no_wrong_result(kernels: ModuleType, mode: str) -> None:
    # (On the runtime before the fix, a NumPy call after an interrupted one came out wrong
    # about once in 300: the NumPy soak found 20 or so in 4000 calls.)
    wrong: list[str] = []
    report = soak(kernels, 4000, mode, on_wrong=wrong.append)
    total = report["total"]
    assert total["interrupted"] > 0 and total["returned"] > 0, total
    assert not wrong, f"{total}: " + "; ".join(wrong[:10])
