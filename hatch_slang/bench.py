"""Time kernels with GPU timestamps, on the same inputs ``validate`` builds.

For each reference case (``shaders/<name>.py``) the inputs are uploaded once as device tensors,
the kernel is called once to warm up (pipeline creation, first-touch of memory), then ``repeat``
times inside :func:`slangrt.profile`. The table reports the median GPU time per call, the bytes
the call's bindings span (written ones counted twice) and the bandwidth that implies, and the
median wall-clock time per call (Python, argument checks and submission included).
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from hatch_slang.config import BuildConfig
from hatch_slang.discover import find_shaders, module_name
from hatch_slang.errors import HatchSlangError
from hatch_slang.validate import _label, contract_inputs, import_kernels, load_manifest, load_reference


@dataclass(frozen=True)
class BenchRow:
    shader: str
    entry: str
    device: str
    shape: str
    calls: int
    gpu_us: float  # median GPU time of one call
    bytes: int  # bytes the call's bindings span (written bindings counted twice)
    wall_us: float  # median wall-clock time of one call, as Python sees it

    @property
    def gb_per_s(self) -> float:
        return self.bytes / (self.gpu_us * 1e3) if self.gpu_us > 0 else float("inf")

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
        device = slangrt.device().info.name
    except slangrt.SlangRTError as e:
        raise HatchSlangError(str(e)) from None
    for path in find_shaders(config.root, list(config.shaders)):
        ref_path = path.with_suffix(".py")
        if (names and path.stem not in names) or not ref_path.is_file():
            continue
        kernels = import_kernels(config, module_name(path.stem))
        manifest = load_manifest(kernels)
        module = Path(kernels.__file__ or "").stem
        rng = np.random.default_rng(seed)
        chosen: dict[str, tuple[int, str, dict[str, Any]]] = {}
        picked: list[tuple[str, str, dict[str, Any]]] = []
        for number, case in enumerate(load_reference(ref_path).cases(rng), start=1):
            where = f"{ref_path.name} case {number} ({case.entry})"
            try:
                entry = manifest["shaders"][module]["entries"][case.entry]
            except KeyError:
                raise HatchSlangError(f"{where}: the kernels have no entry `{case.entry}`") from None
            args = contract_inputs(entry, case.dims, case.args, rng, where=where)
            if all_cases:
                picked.append((case.entry, _label(case, args), args))
            elif case.entry not in chosen or _nbytes(args) > chosen[case.entry][0]:
                chosen[case.entry] = (_nbytes(args), _label(case, args), args)
        if not all_cases:
            picked = [(e, label, args) for e, (_, label, args) in chosen.items()]
        for entry_name, label, args in picked:
            fn = getattr(kernels, entry_name)
            on_device = _to_device(args)
            fn(**on_device)  # warm-up: pipeline creation and first touch of memory
            walls = []
            with slangrt.profile() as p:
                for _ in range(repeat):
                    start = time.perf_counter()
                    fn(**on_device)
                    walls.append(time.perf_counter() - start)
            records = [r for r in p.records if r.kernel.endswith(f".{entry_name}") or r.kernel == entry_name]
            records = records or p.records
            if not records:
                raise HatchSlangError(f"{path.name} {entry_name}: the profile recorded no dispatch")
            gpu_ns = statistics.median(r.gpu_ns for r in records)
            yield BenchRow(
                shader=path.name,
                entry=entry_name,
                device=device,
                shape=label,
                calls=repeat,
                gpu_us=gpu_ns / 1e3,
                bytes=records[0].bytes,
                wall_us=statistics.median(walls) * 1e6,
            )
            for t in on_device.values():
                if isinstance(t, slangrt.Tensor):
                    t.close()
            if on_case is not None:
                on_case()
