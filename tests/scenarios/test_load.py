"""Load: many threads calling one generated kernel at once, and many calls in a row.

The full-size runs (8 threads x 1,000 calls, 100,000 calls) are ``benchmarks/soak.py``, with
figures; these are the same checks at a size that keeps the suite fast (2-core CI).
"""

from __future__ import annotations

import gc
import os
import threading
from types import ModuleType

import numpy as np
import pytest

from benchmarks.axpy_kernels import one_call

from ..helpers import requires_device

pytestmark = [pytest.mark.gpu, pytest.mark.compile, requires_device]

THREADS = 8
CALLS_PER_THREAD = 200
SEQUENTIAL_CALLS = 10_000
# Small read-only arguments are kept by content in a bounded cache (4,096 entries) and packed
# params on the device (another 4,096): the warm-up fills both, so that what follows is flat.
WARM_UP = 2_500


def test_threads_calling_one_kernel_get_their_own_results(kernels: ModuleType) -> None:
    errors: list[BaseException] = []
    done = [0] * THREADS
    start = threading.Barrier(THREADS)

    def work(t: int) -> None:
        rng = np.random.default_rng(1000 + t)
        try:
            start.wait()
            for i in range(CALLS_PER_THREAD):
                one_call(kernels, rng, as_tensors=i % 10 == 9)
                done[t] += 1
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(t,)) for t in range(THREADS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors[0]
    assert done == [CALLS_PER_THREAD] * THREADS


def _rss() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


@pytest.mark.slow  # 12,500 calls: ~5 s
@pytest.mark.skipif(not os.path.exists("/proc/self/statm"), reason="needs /proc")
def test_many_calls_leave_rss_and_device_memory_flat(kernels: ModuleType) -> None:
    import slangrt

    dev = slangrt.device()
    rng = np.random.default_rng(5)
    for i in range(WARM_UP):
        one_call(kernels, rng, as_tensors=i % 50 == 0)
    dev.synchronize()
    gc.collect()
    memory, rss = dev.memory_stats(), _rss()
    for i in range(SEQUENTIAL_CALLS):
        one_call(kernels, rng, as_tensors=i % 50 == 0)
    dev.synchronize()
    gc.collect()
    # Not above where it started (it may be below: memory the earlier tests' calls held, as
    # params that the bounded caches have since dropped, is given back meanwhile).
    for kind, (blocks, nbytes) in dev.memory_stats().items():
        assert blocks <= memory[kind][0] and nbytes <= memory[kind][1], (kind, memory, dev.memory_stats())
    growth = _rss() - rss
    assert growth < 8 << 20, f"RSS grew by {growth / 2**20:.1f} MiB over {SEQUENTIAL_CALLS} calls"
