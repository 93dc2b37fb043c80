"""A garbage collection can run in any thread at any allocation, and so inside slangrt while it
holds one of its own locks; the finalizers it runs free tensors, which takes the memory's lock
again. That must neither deadlock nor corrupt the memory's bookkeeping.

The collection is made to happen exactly there: the heap's lock is wrapped so that taking it
runs ``gc.collect()`` with tensors in reference cycles waiting to be freed (a soak of interrupted
calls on an H200 hung so: an interrupted call's traceback kept its tensors in a cycle). In a
process of its own, so that a deadlock fails the test instead of hanging the suite."""

from __future__ import annotations

import subprocess
import sys

CHILD = r"""
import gc
import numpy as np
import slangrt

dev = slangrt.device()
heap = dev.parts.memory.device


class Collecting:
    # The heap's lock, with a collection each time it is taken.
    def __init__(self, lock):
        self.lock = lock

    def __enter__(self):
        self.lock.__enter__()
        gc.collect()
        return self

    def __exit__(self, *exc):
        return self.lock.__exit__(*exc)


class Cycle:
    def __init__(self, i):
        self.me = self
        self.t = slangrt.Tensor.from_numpy(np.full(16, -i, np.float32))


heap._lock = Collecting(heap._lock)
kept = []
for i in range(200):
    Cycle(i)  # garbage, freed by the collection inside the next allocation's lock
    kept.append((i, slangrt.Tensor.from_numpy(np.full(16 + i % 3, i, np.float32))))
    if len(kept) > 8:
        kept.pop(0)
    for j, t in kept:  # no live tensor's memory was handed out again
        assert (t.numpy() == j).all(), (i, j, t.numpy())
heap._lock = heap._lock.lock
del kept
gc.collect()
dev.synchronize()
blocks, _ = heap.stats()
print("ok", blocks)
"""


def test_a_collection_inside_the_memorys_lock_frees_tensors_without_deadlock() -> None:
    proc = subprocess.run([sys.executable, "-c", CHILD], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr[-3000:]
    words = proc.stdout.split()
    assert words[0] == "ok", proc.stdout
    assert int(words[1]) <= 2, f"memory blocks left after every tensor was freed: {words[1]}"
