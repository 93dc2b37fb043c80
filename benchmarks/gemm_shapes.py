"""The GEMMs' tensor-core paths in other shapes, and the throughput their MMAs reach at most.

    python benchmarks/gemm_shapes.py --build DIR            (here: needs slangpy to compile)
    python benchmarks/gemm_shapes.py --run DIR [--json F]   (on the GPU: the runtime and NumPy)

``--build`` writes a hatch-slang project into DIR: for each shape below, copies of the library's
``gemm_f16``, ``gemm_q4_0`` and ``gemm_q8_0`` with that shape's macros defined first (the
``lib/gemm_coopmat.slang`` and ``lib/gemm_cm2.slang`` defaults give way to them, as do the files'
own) and their Dispatch lines rewritten to match, plus ``mma_peak`` (below); then builds it.
``--run`` times each shape's path on the products of benchmarks/gemm.py (torch's matmul in the
same process where torch has CUDA, each result's largest difference from its result reported),
and ``mma_peak``.

``mma_peak``: the throughput VK_KHR_cooperative_matrix gives with no memory traffic at all. Each
subgroup multiplies the same 16 x 16 f16 tiles into 8 independent f32 accumulators, many times:
what no GEMM through the same matrices can exceed on that device and driver.
"""

from __future__ import annotations

import argparse
import importlib
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "runtime")]

import slangrt  # noqa: E402

from benchmarks.gemm import PEAK_TFLOPS, Torch, row  # noqa: E402
from benchmarks.kernels import gpu_time_us  # noqa: E402

PACKAGE = "gemm_shapes"

# name -> (path, macros). coopmat: k per stage, subgroups down and across the 128 x 128 tile,
# staging buffers. cm2: the workgroup's block (n by tokens), k per stage, threads.
SHAPES: dict[str, tuple[str, dict[str, int]]] = {
    "cm_k32_b2_2x4": ("coopmat", {"CM_TK": 32, "CM_BUFFERS": 2, "CM_SG_ROWS": 2, "CM_SG_COLS": 4}),
    "cm_k64_b1_2x4": ("coopmat", {"CM_TK": 64, "CM_BUFFERS": 1, "CM_SG_ROWS": 2, "CM_SG_COLS": 4}),
    "cm_k64_b1_4x2": ("coopmat", {"CM_TK": 64, "CM_BUFFERS": 1, "CM_SG_ROWS": 4, "CM_SG_COLS": 2}),
    "cm2_128x128_k32_t256": ("cm2", {"CM2_BM": 128, "CM2_BN": 128, "CM2_BK": 32, "CM2_THREADS": 256}),
    "cm2_128x128_k64_t256": ("cm2", {"CM2_BM": 128, "CM2_BN": 128, "CM2_BK": 64, "CM2_THREADS": 256}),
    "cm2_128x128_k32_t128": ("cm2", {"CM2_BM": 128, "CM2_BN": 128, "CM2_BK": 32, "CM2_THREADS": 128}),
    "cm2_256x128_k32_t256": ("cm2", {"CM2_BM": 256, "CM2_BN": 128, "CM2_BK": 32, "CM2_THREADS": 256}),
    "cm2_128x256_k32_t256": ("cm2", {"CM2_BM": 128, "CM2_BN": 256, "CM2_BK": 32, "CM2_THREADS": 256}),
    "cm2_128x256_k32_t128": ("cm2", {"CM2_BM": 128, "CM2_BN": 256, "CM2_BK": 32, "CM2_THREADS": 128}),
}
KINDS = ("f16", "q4_0", "q8_0")

MMA_PEAK = """// slang-entries: mma_peak
//
// Subgroup size: 32
//
// Bindings:
//   t0: a       f16, [256] one 16 x 16 tile
//   u1: y       f32, [groups * 2048] one tile per subgroup
//   t2: params  (iters, groups, _pad, _pad)
//
// Dispatch: (groups, 1) threadgroups of 256.
using namespace linalg;
typealias CmA = CoopMat<half, MemoryScope.Subgroup, 16, 16, CoopMatMatrixUse.MatrixA>;
typealias CmB = CoopMat<half, MemoryScope.Subgroup, 16, 16, CoopMatMatrixUse.MatrixB>;
typealias CmC = CoopMat<float, MemoryScope.Subgroup, 16, 16, CoopMatMatrixUse.MatrixAccumulator>;

[[vk::binding(0)]] StructuredBuffer<half> a : register(t0);
[[vk::binding(1)]] RWStructuredBuffer<float> y : register(u1);
[[vk::binding(2)]] StructuredBuffer<uint4> params : register(t2);

[shader("compute")]
[numthreads(256, 1, 1)]
void mma_peak(uint3 group : SV_GroupID, uint tid : SV_GroupIndex)
{
    CmA ma = CmA.Load<CoopMatMatrixLayout.RowMajor>(a, 0, 16);
    CmB mb = CmB.Load<CoopMatMatrixLayout.RowMajor>(a, 0, 16);
    CmC acc[8];
    [unroll]
    for (uint j = 0; j < 8; j++)
        acc[j] = CmC(0.0f);
    for (uint i = 0; i < params[0].x; i++)
    {
        [unroll]
        for (uint j = 0; j < 8; j++)
            acc[j] = coopMatMulAdd<float, false>(ma, mb, acc[j]);
    }
    [unroll]
    for (uint j = 1; j < 8; j++)
        acc[0] = acc[0] + acc[j];
    acc[0].Store<CoopMatMatrixLayout.RowMajor>(y, (group.x * 8 + tid / 32) * 256, 16);
}
"""


def _variant(source: str, path: str, macros: dict[str, int]) -> str:
    """A library GEMM shader with ``macros`` defined first and the Dispatch lines to match."""
    if path == "cm2":
        bm, bn, threads = macros["CM2_BM"], macros["CM2_BN"], macros["CM2_THREADS"]
        cm2_line = f"(ceil(n / {bm}), ceil(tokens / {bn})) threadgroups of {threads}."
        source = re.sub(r"(// Dispatch \(\w+_cm2\): ).*", lambda m: m.group(1) + cm2_line, source)
    else:
        threads = 32 * macros["CM_SG_ROWS"] * macros["CM_SG_COLS"]
        line = f"(ceil(n / 128), ceil(tokens / 128)) threadgroups of {threads}."
        entry = re.search(r"void (\w+_coopmat)<", source)
        assert entry is not None
        source = re.sub(
            r"(// Dispatch: .*\n)", lambda m: f"{m.group(1)}// Dispatch ({entry.group(1)}): {line}\n", source
        )
    defines = "".join(f"#define {k} {v}\n" for k, v in macros.items())
    return source.replace('#include "lib/floats.slang"', defines + '#include "lib/floats.slang"', 1)


def build(out: Path, names: list[str]) -> None:
    """Write the project into ``out`` and build it (hatch-slang's compiler: slangpy)."""
    shaders = out / "shaders"
    if out.exists():
        shutil.rmtree(out)
    shutil.copytree(ROOT / "shaders" / "lib", shaders / "lib")
    (out / PACKAGE).mkdir()
    (out / PACKAGE / "__init__.py").write_text("", encoding="utf-8")
    for name in names:
        path, macros = SHAPES[name]
        for kind in KINDS:
            source = (ROOT / "shaders" / f"gemm_{kind}.slang").read_text(encoding="utf-8")
            (shaders / f"{kind}_{name}.slang").write_text(_variant(source, path, macros), encoding="utf-8")
    (shaders / "mma_peak.slang").write_text(MMA_PEAK, encoding="utf-8")
    (out / "pyproject.toml").write_text(
        f'[project]\nname = "{PACKAGE}"\nversion = "0"\n\n[tool.hatch.build.hooks.slang]\n'
        f'shaders = ["shaders/*.slang"]\npackage = "{PACKAGE}/kernels"\n',
        encoding="utf-8",
    )
    cmd = [sys.executable, "-c", "from hatch_slang.cli import main; main()", "build"]
    subprocess.run(cmd, cwd=out, check=True)


def mma_peak(kernels: Any) -> dict[str, Any]:
    """The MMAs' throughput with no memory traffic (8 subgroups a group, enough groups to fill
    the device several times over)."""
    a = slangrt.Tensor.from_numpy((np.random.default_rng(0).standard_normal(256) * 0.01).astype(np.float16))
    best: dict[str, Any] = {}
    iters = 4096
    for groups in (132, 528, 2112):
        y = slangrt.Tensor.empty((groups * 2048,), np.float32)

        def call(y: slangrt.Tensor = y, groups: int = groups) -> None:
            kernels.mma_peak(a, y, iters=iters, groups=groups)

        us, _, _ = gpu_time_us(call, 5)
        tflops = groups * 8 * iters * 8 * 2 * 16**3 / us / 1e6
        if tflops > best.get("TFLOPS", 0.0):
            best = {"entry": "mma_peak", "groups": groups, "us": us, "TFLOPS": tflops}
    best["of peak"] = best["TFLOPS"] / PEAK_TFLOPS["f16"]
    return best


def run(out: Path, names: list[str], reps: int) -> list[dict[str, Any]]:
    sys.path.insert(0, str(out))
    th = Torch(enabled=True)
    results: list[dict[str, Any]] = []
    products = [("f16", (4096, 4096, 4096)), ("f16", (512, 14336, 4096))]
    products += [(k, (512, 14336, 4096)) for k in ("q4_0", "q8_0")]
    for name in names:
        path = SHAPES[name][0]
        for kind, shape in products:
            module = importlib.import_module(f"{PACKAGE}.kernels.{kind}_{name}")
            fn = getattr(module, f"gemm_{kind}_{path}_f16")
            try:
                got = {"shape name": name, **row(th, name, fn, kind, shape, reps, "f16")}
            except slangrt.UnsupportedKernelError as e:
                print(f"{name} {kind}: skipped ({e})", flush=True)
                continue
            results.append(got)
            print(json.dumps(got), flush=True)
    try:
        results.append(mma_peak(importlib.import_module(f"{PACKAGE}.kernels.mma_peak")))
        print(json.dumps(results[-1]), flush=True)
    except slangrt.UnsupportedKernelError as e:
        print(f"mma_peak: skipped ({e})", flush=True)
    return results


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    where = ap.add_mutually_exclusive_group(required=True)
    where.add_argument("--build", type=Path, help="write and build the project into this folder")
    where.add_argument("--run", type=Path, help="run the project built there before")
    ap.add_argument("--shapes", nargs="*", choices=sorted(SHAPES), default=sorted(SHAPES))
    ap.add_argument("--reps", type=int, default=10)
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    if args.build:
        build(args.build, args.shapes)
        return 0
    results = run(args.run, args.shapes, args.reps)
    if args.json:
        header = {"device": slangrt.device().info.name}
        args.json.write_text(json.dumps({**header, "rows": results}, indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
