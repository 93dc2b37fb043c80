"""Time kernels with GPU timestamps, on the same inputs ``validate`` builds.

For each reference case (``shaders/<name>.py``) the inputs are uploaded once as device tensors,
the kernel is called once to warm up (pipeline creation, first-touch of memory), then ``repeat``
times inside :func:`slangrt.profile`, each call waited for before the next. A row reports
medians per call of:

- ``gpu_us``: the GPU time of the dispatch (timestamps around it on the device);
- ``bytes``: the bytes the call's bindings span (written ones counted twice), and the
  bandwidth that implies over the GPU time (``gb_per_s``);
- ``submit_us``: how long the call takes to return: argument checks, recording and submission
  (the kernel then runs asynchronously, so this can be far below the GPU time);
- ``wall_us``: from the call to the end of the kernel (submission, the GPU work and the wait),
  what a caller who waits for the result sees; never below the GPU time.
"""

from __future__ import annotations

import itertools
import statistics
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from hatch_slang.config import BuildConfig
from hatch_slang.errors import HatchSlangError
from hatch_slang.validate import _label, contract_inputs, find_entry, reference_cases


@dataclass(frozen=True)
class BenchRow:
    shader: str
    entry: str
    device: str
    shape: str
    calls: int
    gpu_us: float  # median GPU time of one call
    bytes: int  # bytes the call's bindings span (written bindings counted twice)
    wall_us: float  # median time from the call to the end of its kernel (waited for)
    submit_us: float = 0.0  # median time the call takes to return (the kernel runs asynchronously)

    # The columns of the `hatch-slang bench` table, which :meth:`cells` fills.
    COLUMNS: ClassVar[tuple[str, ...]] = (
        "shader",
        "entry",
        "shape",
        "GPU us",
        "MB",
        "GB/s",
        "submit us",
        "wall us",
    )

    @property
    def gb_per_s(self) -> float:
        return self.bytes / (self.gpu_us * 1e3) if self.gpu_us > 0 else float("inf")

    def cells(self) -> list[str]:
        """The row as the table shows it, one text per :attr:`COLUMNS` entry."""
        return [
            self.shader,
            self.entry,
            self.shape,
            f"{self.gpu_us:.2f}",
            f"{self.bytes / 1e6:.2f}",
            f"{self.gb_per_s:.1f}",
            f"{self.submit_us:.1f}",
            f"{self.wall_us:.1f}",
        ]

    def as_json(self) -> dict[str, object]:
        return {
            "shader": self.shader,
            "entry": self.entry,
            "device": self.device,
            "shape": self.shape,
            "calls": self.calls,
            "gpu_us": round(self.gpu_us, 3),
            "bytes": self.bytes,
            "gb_per_s": round(self.gb_per_s, 2),
            "submit_us": round(self.submit_us, 3),
            "wall_us": round(self.wall_us, 3),
        }


def _to_device(args: dict[str, Any]) -> dict[str, Any]:
    import slangrt

    return {k: slangrt.Tensor.from_numpy(v) if isinstance(v, np.ndarray) else v for k, v in args.items()}


def _nbytes(args: dict[str, Any]) -> int:
    return sum(int(v.nbytes) for v in args.values() if isinstance(v, np.ndarray))


def bench(
    config: BuildConfig,
    names: list[str] | None = None,
    *,
    repeat: int = 20,
    all_cases: bool = False,
    seed: int = 0,
    on_case: Callable[[], None] | None = None,
) -> Iterator[BenchRow]:
    """Yield a row per benchmarked case: by default each entry's largest reference case."""
    import slangrt

    if repeat < 1:
        raise HatchSlangError(f"repeat must be at least 1, got {repeat}")
    try:
        dev = slangrt.device()
    except slangrt.SlangRTError as e:
        raise HatchSlangError(str(e)) from None
    device = dev.info.name
    for shader, runs in itertools.groupby(reference_cases(config, names, seed), key=lambda r: r.shader):
        chosen: dict[str, tuple[int, str, dict[str, Any]]] = {}
        picked: list[tuple[str, str, dict[str, Any]]] = []
        functions: dict[str, str] = {}  # entry -> its wrapper function
        kernels: Any = None
        for run in runs:
            kernels, case = run.kernels, run.case
            module = Path(kernels.__file__ or "").stem
            try:
                name, function, entry = find_entry(run.manifest, module, case.entry)
            except KeyError:
                raise HatchSlangError(f"{run.where}: the kernels have no entry `{case.entry}`") from None
            args = contract_inputs(entry, case.dims, case.args, run.rng, where=run.where)
            functions[name] = function
            if all_cases:
                picked.append((name, _label(case, args), args))
            elif name not in chosen or _nbytes(args) > chosen[name][0]:
                chosen[name] = (_nbytes(args), _label(case, args), args)
        if not all_cases:
            picked = [(e, label, args) for e, (_, label, args) in chosen.items()]
        for entry_name, label, args in picked:
            fn = getattr(kernels, functions[entry_name])
            on_device = _to_device(args)
            fn(**on_device)  # warm-up: pipeline creation and first touch of memory
            dev.synchronize()
            submits, walls = [], []
            with slangrt.profile() as p:
                for _ in range(repeat):
                    start = time.perf_counter()
                    fn(**on_device)
                    returned = time.perf_counter()
                    dev.synchronize()
                    submits.append(returned - start)
                    walls.append(time.perf_counter() - start)
            records = [r for r in p.records if r.kernel.endswith(f".{entry_name}") or r.kernel == entry_name]
            records = records or p.records
            if not records:
                raise HatchSlangError(f"{shader} {entry_name}: the profile recorded no dispatch")
            gpu_ns = statistics.median(r.gpu_ns for r in records)
            yield BenchRow(
                shader=shader,
                entry=entry_name,
                device=device,
                shape=label,
                calls=repeat,
                gpu_us=gpu_ns / 1e3,
                bytes=records[0].bytes,
                wall_us=statistics.median(walls) * 1e6,
                submit_us=statistics.median(submits) * 1e6,
            )
            for t in on_device.values():
                if isinstance(t, slangrt.Tensor):
                    t.close()
            if on_case is not None:
                on_case()
