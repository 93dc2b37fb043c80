"""Run kernels against their NumPy references.

References live beside the shaders: ``shaders/<name>.py`` next to ``shaders/<name>.slang``,
defining ``cases(rng)`` that yields :class:`Case` objects. The kernels themselves are imported
from the configured package (built by ``pip install`` or ``hatch-slang build``).
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np

from hatch_slang.config import BuildConfig
from hatch_slang.discover import find_shaders, module_name
from hatch_slang.errors import HatchSlangError


@dataclass
class Case:
    entry: str
    label: str
    args: dict[str, Any]
    expect: dict[str, np.ndarray]  # argument name -> what the kernel must leave in it
    atol: float = 1e-5
    rtol: float = 1e-5


@dataclass(frozen=True)
class Row:
    shader: str
    entry: str
    device: str
    shape: str
    max_abs_err: float
    max_rel_err: float
    ok: bool
    seconds: float = field(default=0.0, compare=False)

    def as_json(self) -> dict[str, object]:
        return {
            "shader": self.shader,
            "entry": self.entry,
            "device": self.device,
            "shape": self.shape,
            "max_abs_err": self.max_abs_err,
            "max_rel_err": self.max_rel_err,
            "ok": self.ok,
        }


def load_reference(path: Path) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"_hatch_slang_ref_{module_name(path.stem)}", path)
    if spec is None or spec.loader is None:
        raise HatchSlangError(f"cannot load reference {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def import_kernels(config: BuildConfig, module: str) -> ModuleType:
    name = f"{config.package.replace('/', '.')}.{module}"
    try:
        return importlib.import_module(name)
    except ImportError as e:
        raise HatchSlangError(
            f"cannot import {name} ({e}); build the kernels first (`pip install .` or `hatch-slang build`)"
        ) from None


def _errors(got: np.ndarray, want: np.ndarray) -> tuple[float, float]:
    if got.size == 0:
        return 0.0, 0.0
    diff = np.abs(got.astype(np.float64) - want.astype(np.float64))
    rel = diff / np.maximum(np.abs(want.astype(np.float64)), 1e-30)
    return float(diff.max()), float(rel.max())


def validate(
    config: BuildConfig,
    names: list[str] | None = None,
    seed: int = 0,
    on_row: Callable[[Row], None] | None = None,
) -> Iterator[Row]:
    import slangrt

    device = slangrt.device().info.name
    for path in find_shaders(config.root, list(config.shaders)):
        ref_path = path.with_suffix(".py")
        if names and path.stem not in names:
            continue
        if not ref_path.is_file():
            continue
        ref = load_reference(ref_path)
        kernels = import_kernels(config, module_name(path.stem))
        rng = np.random.default_rng(seed)
        for case in ref.cases(rng):
            args = {k: (v.copy() if isinstance(v, np.ndarray) else v) for k, v in case.args.items()}
            start = time.perf_counter()
            getattr(kernels, case.entry)(**args)
            elapsed = time.perf_counter() - start
            worst_abs = worst_rel = 0.0
            ok = True
            for name, want in case.expect.items():
                got = np.asarray(args[name])
                a, r = _errors(got, want)
                worst_abs, worst_rel = max(worst_abs, a), max(worst_rel, r)
                ok = (
                    ok
                    and got.shape == want.shape
                    and bool(np.allclose(got, want, atol=case.atol, rtol=case.rtol))
                )
            row = Row(path.name, case.entry, device, case.label, worst_abs, worst_rel, ok, elapsed)
            if on_row is not None:
                on_row(row)
            yield row
