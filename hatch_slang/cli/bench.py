"""Time kernels with GPU timestamps, on the inputs ``validate`` builds or on zeros.

For each reference case (``shaders/<name>.py``) the inputs are uploaded once as device tensors,
the kernel is called once to warm up (pipeline creation, first-touch of memory), then ``repeat``
times inside :func:`slangrt.profile`, each call waited for before the next. With ``sizes``
(``hatch-slang bench --size NAME=N``) every entry of the chosen shaders is timed instead, on
zero-filled arrays shaped by the manifest's bindings over those sizes (zeros, so that index
buffers stay in range) and with the wrapper's other params from the same sizes, else 0; a
shader needs no reference for that. A row reports medians per call of:

- ``gpu_us``: the GPU time of the dispatch (timestamps around it on the device);
- ``bytes``: the bytes the call's bindings span (written ones counted twice), and the
  bandwidth that implies over the GPU time (``gb_per_s``);
- ``flops``: the floating-point operations of one call where the reference counts them
  (``flops(entry, sizes)``, :func:`hatch_slang.validate.reference_flops`), and the rate that
  implies over the GPU time (``gflop_per_s``); None where it does not;
- ``submit_us``: how long the call takes to return: argument checks, recording and submission
  (the kernel then runs asynchronously, so this can be far below the GPU time);
- ``wall_us``: from the call to the end of the kernel (submission, the GPU work and the wait),
  what a caller who waits for the result sees; never below the GPU time.
"""

from __future__ import annotations

import inspect
import itertools
import statistics
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any, ClassVar

import numpy as np
from slangrt import manifest

from hatch_slang.comments.expr import ExprError, parse_expr
from hatch_slang.config.project import BuildConfig
from hatch_slang.errors import HatchSlangError
from hatch_slang.validate import (
    CaseRun,
    UnsizedBinding,
    case_label,
    contract_inputs,
    contract_shapes,
    find_entry,
    import_kernels,
    known_sizes,
    load_manifest,
    load_reference,
    reference_cases,
    reference_flops,
    reference_path,
    selected_shaders,
)


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
    flops: float | None = None  # floating-point operations of one call (the reference's count)

    # The columns of the `hatch-slang bench` table, which :meth:`cells` fills.
    COLUMNS: ClassVar[tuple[str, ...]] = (
        "shader",
        "entry",
        "shape",
        "GPU us",
        "MB",
        "GB/s",
        "GFLOP/s",
        "submit us",
        "wall us",
    )

    @property
    def gb_per_s(self) -> float:
        return self.bytes / (self.gpu_us * 1e3) if self.gpu_us > 0 else float("inf")

    @property
    def gflop_per_s(self) -> float | None:
        """The operations over the GPU time; None without a count (or a GPU time)."""
        return self.flops / (self.gpu_us * 1e3) if self.flops is not None and self.gpu_us > 0 else None

    def cells(self) -> list[str]:
        """The row as the table shows it, one text per :attr:`COLUMNS` entry."""
        rate = self.gflop_per_s
        return [
            self.shader,
            self.entry,
            self.shape,
            f"{self.gpu_us:.2f}",
            f"{self.bytes / 1e6:.2f}",
            f"{self.gb_per_s:.1f}",
            "-" if rate is None else f"{rate:.3g}",  # (a tiny kernel's rate is far below 0.01)
            f"{self.submit_us:.1f}",
            f"{self.wall_us:.1f}",
        ]

    def as_json(self) -> dict[str, object]:
        rate = self.gflop_per_s
        return {
            "shader": self.shader,
            "entry": self.entry,
            "device": self.device,
            "shape": self.shape,
            "calls": self.calls,
            "gpu_us": round(self.gpu_us, 3),
            "bytes": self.bytes,
            "gb_per_s": round(self.gb_per_s, 2),
            "flops": self.flops,
            "gflop_per_s": None if rate is None else float(f"{rate:.4g}"),
            "submit_us": round(self.submit_us, 3),
            "wall_us": round(self.wall_us, 3),
        }


@dataclass(frozen=True)
class BenchCall:
    """One call to time: the wrapper, its host arguments, what the row shows."""

    shader: str
    entry: str
    label: str
    fn: Callable[..., Any]
    args: dict[str, Any]
    flops: float | None


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
    sizes: Mapping[str, int] | None = None,
    on_case: Callable[[], None] | None = None,
) -> Iterator[BenchRow]:
    """Yield a row per benchmarked call: by default each entry's largest reference case; with
    ``sizes``, every entry of the selected shaders on zero-filled inputs of those sizes."""
    import slangrt

    if repeat < 1:
        raise HatchSlangError(f"repeat must be at least 1, got {repeat}")
    if sizes is not None and all_cases:
        raise HatchSlangError("all_cases picks reference cases; with sizes there is one call per entry")
    plans = sized_calls(config, names, sizes) if sizes is not None else None
    try:
        dev = slangrt.device()
    except slangrt.SlangRTError as e:
        raise HatchSlangError(str(e)) from None
    for plan in plans if plans is not None else _reference_plans(config, names, all_cases, seed):
        yield _time(dev, plan, repeat)
        if on_case is not None:
            on_case()


def _reference_plans(
    config: BuildConfig, names: list[str] | None, all_cases: bool, seed: int
) -> Iterator[BenchCall]:
    """The reference cases to time, shader by shader: each entry's largest (by the bytes of its
    arguments), or every case."""
    for shader, runs in itertools.groupby(reference_cases(config, names, seed), key=lambda r: r.shader):
        chosen: dict[str, tuple[int, CaseRun, dict[str, Any]]] = {}
        picked: list[tuple[CaseRun, dict[str, Any]]] = []
        for run in runs:
            name, _, entry = _entry(run)
            args = contract_inputs(entry, run.case.dims, run.case.args, run.rng, where=run.where)
            if all_cases:
                picked.append((run, args))
            elif name not in chosen or _nbytes(args) > chosen[name][0]:
                chosen[name] = (_nbytes(args), run, args)
        if not all_cases:
            picked = [(run, args) for _, run, args in chosen.values()]
        for run, args in picked:
            name, function, entry = _entry(run)
            count = reference_flops(run.reference, name, known_sizes(entry, run.case.dims, args))
            fn = getattr(run.kernels, function, None)
            if not callable(fn):
                raise HatchSlangError(f"{run.where}: the kernels have no wrapper `{function}`; build again")
            yield BenchCall(shader, name, case_label(run.case, args), fn, args, count)


def _entry(run: CaseRun) -> tuple[str, str, manifest.Entry]:
    """The case's entry (named as Slang or its wrapper spells it): its name, function and record."""
    module = Path(run.kernels.__file__ or "").stem
    try:
        return find_entry(run.manifest, module, run.case.entry)
    except KeyError:
        raise HatchSlangError(f"{run.where}: the kernels have no entry `{run.case.entry}`") from None


def _time(dev: Any, plan: BenchCall, repeat: int) -> BenchRow:
    """One warm-up call, then ``repeat`` timed ones, each waited for; the medians."""
    import slangrt

    on_device = _to_device(plan.args)
    try:
        _call(plan, on_device)  # warm-up: pipeline creation and first touch of memory
        dev.synchronize()
        submits, walls = [], []
        with slangrt.profile() as p:
            for _ in range(repeat):
                start = time.perf_counter()
                _call(plan, on_device)
                returned = time.perf_counter()
                dev.synchronize()
                submits.append(returned - start)
                walls.append(time.perf_counter() - start)
    finally:
        for t in on_device.values():
            if isinstance(t, slangrt.Tensor):
                t.close()
    records = [r for r in p.records if r.kernel.endswith(f".{plan.entry}") or r.kernel == plan.entry]
    records = records or p.records
    if not records:
        raise HatchSlangError(f"{plan.shader} {plan.entry}: the profile recorded no dispatch")
    return BenchRow(
        shader=plan.shader,
        entry=plan.entry,
        device=dev.info.name,
        shape=plan.label,
        calls=repeat,
        gpu_us=statistics.median(r.gpu_ns for r in records) / 1e3,
        bytes=records[0].bytes,
        wall_us=statistics.median(walls) * 1e6,
        submit_us=statistics.median(submits) * 1e6,
        flops=plan.flops,
    )


def _call(plan: BenchCall, args: dict[str, Any]) -> None:
    """Call the wrapper; what it raises becomes a :class:`HatchSlangError` naming the call."""
    try:
        plan.fn(**args)
    except Exception as e:
        raise HatchSlangError(f"{plan.shader} {plan.entry} [{plan.label}]: {type(e).__name__}: {e}") from None


def sized_calls(config: BuildConfig, names: list[str] | None, sizes: Mapping[str, int]) -> list[BenchCall]:
    """Every entry of the selected shaders, on zero-filled inputs of ``sizes``; checked whole
    before anything runs: a size nobody needs, or one an entry needs and nobody gave, raises."""
    plans: list[BenchCall] = []
    used: set[str] = set()
    for src in selected_shaders(config, names):
        kernels = import_kernels(config, src.module)
        package = load_manifest(kernels)
        ref_path = reference_path(src)
        reference = load_reference(ref_path) if ref_path is not None else None
        try:
            entries = package["shaders"][src.module]["entries"]
        except KeyError:
            raise HatchSlangError(
                f"{src.rel}: the built package has no module `{src.module}`; build again"
            ) from None
        for name, entry in entries.items():
            function = entry.get("python", name)
            fn = getattr(kernels, function, None)
            if not callable(fn):
                raise HatchSlangError(f"{src.rel}: the kernels have no wrapper `{function}`; build again")
            plan, names_used = _sized_plan(src.path.name, name, entry, fn, sizes, reference)
            plans.append(plan)
            used |= names_used
    unused = [k for k in sizes if k not in used]
    if unused:
        raise HatchSlangError(
            f"--size {unused[0]}: no selected entry has a size or param `{unused[0]}`"
            + (f" (nor {', '.join(f'`{u}`' for u in unused[1:])})" if unused[1:] else "")
        )
    return plans


def _sized_plan(
    shader: str,
    name: str,
    entry: manifest.Entry,
    fn: Callable[..., Any],
    sizes: Mapping[str, int],
    reference: ModuleType | None,
) -> tuple[BenchCall, set[str]]:
    """One entry's call on zeros of ``sizes``, and the size names the entry knows."""
    where = f"{shader} {name}"
    dims = _dimension_names(entry, where)
    try:
        shapes = contract_shapes(entry, sizes, where=where)
    except UnsizedBinding as e:
        give = " ".join(f"--size {m}=N" for m in e.missing)
        raise HatchSlangError(
            f"{where}: binding `{e.binding}` {e.shape} needs {_names(e.missing)}, "
            f"which no --size gives: give `{give}`"
        ) from None
    scalars = _zero_params(fn, entry, sizes, dims, where)
    args: dict[str, Any] = {}
    for k, (shape, dtype) in shapes.items():
        try:
            args[k] = np.zeros(shape, dtype)
        except (MemoryError, ValueError, OverflowError) as e:
            raise HatchSlangError(
                f"{where}: cannot allocate binding `{k}` of shape {list(shape)}: {e}"
            ) from None
    args.update(scalars)
    known = dims | set(inspect.signature(fn).parameters)
    label = " ".join(f"{k}={v}" for k, v in sizes.items() if k in known)
    counted = {k: v for k, v in sizes.items() if k in known}
    counted.update({k: v for k, v in scalars.items() if type(v) is int})
    count = reference_flops(reference, name, counted) if reference is not None else None
    return BenchCall(shader, name, label, fn, args, count), known


def _names(names: tuple[str, ...]) -> str:
    return ("size " if len(names) == 1 else "sizes ") + ", ".join(f"`{n}`" for n in names)


def _dimension_names(entry: manifest.Entry, where: str) -> set[str]:
    """The names the entry's data shapes and its Dispatch line read: sizes a caller must give."""
    texts = [d for b in entry["bindings"] if b["role"] == "data" for d in b["shape"] or ()]
    texts += entry["grid"] or []
    try:
        return {n for t in texts for n in parse_expr(t).names}
    except ExprError as e:
        raise HatchSlangError(f"{where}: the manifest has an expression bench cannot read: {e}") from None


def _zero_params(
    fn: Callable[..., Any], entry: manifest.Entry, sizes: Mapping[str, int], dims: set[str], where: str
) -> dict[str, int | float]:
    """The wrapper's scalar params: from ``sizes`` where given; left to the wrapper where it
    infers or defaults them; else 0 (a size the entry needs is an error naming it)."""
    data = {b["name"] for b in entry["bindings"] if b["role"] == "data"}
    scalars: dict[str, int | float] = {}
    for p in inspect.signature(fn).parameters.values():
        if p.name in data or p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            continue
        kind = str(p.annotation).split("|")[0].strip()
        if p.name == "grid" and entry["grid"] is None:
            raise HatchSlangError(
                f"{where}: has no Dispatch line, so its wrapper takes `grid=`, which bench cannot choose: "
                "document one, or time it from a reference's cases"
            )
        if p.name in sizes and kind in ("int", "float"):
            scalars[p.name] = float(sizes[p.name]) if kind == "float" else sizes[p.name]
        elif p.default is not p.empty:
            continue
        elif p.name in dims:
            raise HatchSlangError(f"{where}: param `{p.name}` sizes the call: give `--size {p.name}=N`")
        elif kind in ("int", "float"):
            scalars[p.name] = 0.0 if kind == "float" else 0
        else:
            raise HatchSlangError(
                f"{where}: param `{p.name}` ({kind}) cannot be zero-filled: time it from a reference"
            )
    return scalars
