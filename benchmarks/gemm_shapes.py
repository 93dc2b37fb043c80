"""The GEMMs' tensor-core paths in other shapes, and the throughput their MMAs reach at most.

    python benchmarks/gemm_shapes.py --build DIR            (here: needs slangpy to compile)
    python benchmarks/gemm_shapes.py --run DIR [--json F]   (on the GPU: the runtime and NumPy)
        [--no-micro] [--stats]

``--build`` writes a hatch-slang project into DIR: for each shape below, copies of the library's
``gemm_f16``, ``gemm_q4_0`` and ``gemm_q8_0`` with that shape's macros defined first (the
``lib/gemm_coopmat.slang`` and ``lib/gemm_cm2.slang`` defaults give way to them, as do the files'
own) and their Dispatch lines rewritten to match, plus ``mma_peak``, ``mma_smem_*`` and
``gemm_direct`` (below); then builds it. ``--run`` times ``mma_peak``, ``mma_smem_*`` and
``gemm_direct``, then each shape's path on the products of benchmarks/gemm.py (torch's matmul in
the same process where torch has CUDA, each result's largest difference from its result
reported, and its largest error on small odd shapes against float64 NumPy: ``check``). The
``probe_*`` shapes are the library's path with one part taken out (``PROBES``): timed on f16
4096^3 only (``probe_q4_0_*``, ``probe_q8_0_*``: that kind at 512 x 14336 x 4096), their results
wrong by design. ``--no-micro`` skips the microbenchmarks;
``--stats`` adds each shape's registers a thread, spilled bytes and shared memory as the driver
compiled it (benchmarks/pipeline_stats.py), where the driver reports them.

Shape names: ``cm_`` the subgroup-matrix path (block tokens x n, 128 x 128 unless named; k per
stage; b1/b2 staging buffers, d2 loads two stages ahead; subgroups down x across; s2/s4: that
many subgroups a part of the block, each with its share of k, ``CM_KSPLIT``; r: the blocks of
tokens fastest in the grid, ``CM_RASTER``), ``cm2_`` workgroup matrices.

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

from benchmarks import pipeline_stats  # noqa: E402
from benchmarks.gemm import PEAK_TFLOPS, Torch, _weights, row  # noqa: E402
from benchmarks.kernels import gpu_time_us  # noqa: E402

PACKAGE = "gemm_shapes"

# name -> (path, macros). coopmat: the workgroup's block (tokens by n, 128 x 128 unless named),
# k per stage, staging buffers or (d2) stages of loads in flight, subgroups down and across the
# block. cm2: the workgroup's block (n by tokens), k per stage, threads.
_B1_2X4 = {"CM_BUFFERS": 1, "CM_SG_ROWS": 2, "CM_SG_COLS": 4}
_B1_4X2 = {"CM_BUFFERS": 1, "CM_SG_ROWS": 4, "CM_SG_COLS": 2}
_B2_2X4 = {"CM_BUFFERS": 2, "CM_SG_ROWS": 2, "CM_SG_COLS": 4}
_B2_4X2 = {"CM_BUFFERS": 2, "CM_SG_ROWS": 4, "CM_SG_COLS": 2}
_B1_4X4 = {"CM_BUFFERS": 1, "CM_SG_ROWS": 4, "CM_SG_COLS": 4}
_B2_4X4 = {"CM_BUFFERS": 2, "CM_SG_ROWS": 4, "CM_SG_COLS": 4}
_B1_2X2 = {"CM_BUFFERS": 1, "CM_SG_ROWS": 2, "CM_SG_COLS": 2}
_D2 = {"CM_DEPTH": 2}
SHAPES: dict[str, tuple[str, dict[str, int]]] = {
    "cm_k32_b2_2x4": ("coopmat", {"CM_TK": 32, "CM_BUFFERS": 2, "CM_SG_ROWS": 2, "CM_SG_COLS": 4}),
    "cm_k64_b1_2x4": ("coopmat", {"CM_TK": 64, "CM_BUFFERS": 1, "CM_SG_ROWS": 2, "CM_SG_COLS": 4}),
    "cm_k64_b1_4x2": ("coopmat", {"CM_TK": 64, "CM_BUFFERS": 1, "CM_SG_ROWS": 4, "CM_SG_COLS": 2}),
    "cm_128x256_k32_b1_2x4": ("coopmat", {"CM_TM": 128, "CM_TN": 256, "CM_TK": 32, **_B1_2X4}),
    "cm_256x128_k32_b1_4x2": ("coopmat", {"CM_TM": 256, "CM_TN": 128, "CM_TK": 32, **_B1_4X2}),
    "cm_128x256_k16_b2_2x4": ("coopmat", {"CM_TM": 128, "CM_TN": 256, "CM_TK": 16, **_B2_2X4}),
    "cm_256x128_k16_b2_4x2": ("coopmat", {"CM_TM": 256, "CM_TN": 128, "CM_TK": 16, **_B2_4X2}),
    "cm_128x256_k32_b1_4x4": ("coopmat", {"CM_TM": 128, "CM_TN": 256, "CM_TK": 32, **_B1_4X4}),
    "cm_256x128_k32_b1_4x4": ("coopmat", {"CM_TM": 256, "CM_TN": 128, "CM_TK": 32, **_B1_4X4}),
    "cm_k64_d2_2x4": ("coopmat", {"CM_TK": 64, "CM_DEPTH": 2, **_B1_2X4}),
    "cm_128x256_k32_d2_2x4": ("coopmat", {"CM_TM": 128, "CM_TN": 256, "CM_TK": 32, "CM_DEPTH": 2, **_B1_2X4}),
    "cm_256x128_k32_d2_4x2": ("coopmat", {"CM_TM": 256, "CM_TN": 128, "CM_TK": 32, "CM_DEPTH": 2, **_B1_4X2}),
    "cm_k32_b1_2x4": ("coopmat", {"CM_TK": 32, **_B1_2X4}),
    "cm_k64_b1_4x4": ("coopmat", {"CM_TK": 64, **_B1_4X4}),
    "cm_k64_b1_2x4_s2": ("coopmat", {"CM_TK": 64, **_B1_2X4, "CM_KSPLIT": 2}),
    "cm_k64_b1_4x4_r": ("coopmat", {"CM_TK": 64, **_B1_4X4, "CM_RASTER": 1}),
    "cm_k64_b1_2x4_s2_r": ("coopmat", {"CM_TK": 64, **_B1_2X4, "CM_KSPLIT": 2, "CM_RASTER": 1}),
    "cm_k64_b1_4x2_s2": ("coopmat", {"CM_TK": 64, **_B1_4X2, "CM_KSPLIT": 2}),
    "cm_k64_b1_2x2_s2": ("coopmat", {"CM_TK": 64, **_B1_2X2, "CM_KSPLIT": 2}),
    "cm_k64_b1_2x2_s4": ("coopmat", {"CM_TK": 64, **_B1_2X2, "CM_KSPLIT": 4}),
    "cm_64x128_k64_b1_2x4": ("coopmat", {"CM_TM": 64, "CM_TN": 128, "CM_TK": 64, **_B1_2X4}),
    "cm_128x64_k64_b1_4x2": ("coopmat", {"CM_TM": 128, "CM_TN": 64, "CM_TK": 64, **_B1_4X2}),
    "cm_k32_b1_4x4": ("coopmat", {"CM_TK": 32, **_B1_4X4}),
    "cm_k32_b2_4x4": ("coopmat", {"CM_TK": 32, **_B2_4X4}),
    "cm_k64_d2_4x4": ("coopmat", {"CM_TK": 64, **_B1_4X4, **_D2}),
    "cm_k64_b1_8x4": ("coopmat", {"CM_TK": 64, "CM_BUFFERS": 1, "CM_SG_ROWS": 8, "CM_SG_COLS": 4}),
    "cm_k64_b1_4x8": ("coopmat", {"CM_TK": 64, "CM_BUFFERS": 1, "CM_SG_ROWS": 4, "CM_SG_COLS": 8}),
    "cm_128x64_k32_b1_2x2": ("coopmat", {"CM_TM": 128, "CM_TN": 64, "CM_TK": 32, **_B1_2X2}),
    "cm_128x64_k64_b1_2x2": ("coopmat", {"CM_TM": 128, "CM_TN": 64, "CM_TK": 64, **_B1_2X2}),
    "cm2_128x128_k32_t256": ("cm2", {"CM2_BM": 128, "CM2_BN": 128, "CM2_BK": 32, "CM2_THREADS": 256}),
    "cm2_128x128_k64_t256": ("cm2", {"CM2_BM": 128, "CM2_BN": 128, "CM2_BK": 64, "CM2_THREADS": 256}),
    "cm2_128x128_k32_t128": ("cm2", {"CM2_BM": 128, "CM2_BN": 128, "CM2_BK": 32, "CM2_THREADS": 128}),
    "cm2_256x128_k32_t256": ("cm2", {"CM2_BM": 256, "CM2_BN": 128, "CM2_BK": 32, "CM2_THREADS": 256}),
    "cm2_128x256_k32_t256": ("cm2", {"CM2_BM": 128, "CM2_BN": 256, "CM2_BK": 32, "CM2_THREADS": 256}),
    "cm2_128x256_k32_t128": ("cm2", {"CM2_BM": 128, "CM2_BN": 256, "CM2_BK": 32, "CM2_THREADS": 128}),
}
KINDS = ("f16", "q4_0", "q8_0")

# Timing-only probes of the library's coopmat shape (``probe_*``: f16 at 4096^3 only, results wrong
# by design, not checked): lib/gemm_coopmat.slang with one part taken out, to see what each costs.
_LIB_SHAPE = {"CM_TM": 128, "CM_TN": 128, "CM_TK": 64, **_B1_2X4, "CM_KSPLIT": 2, "CM_RASTER": 1}
_SYNC = r"GroupMemoryBarrierWithGroupSync\(\);"
_NO_MMA = (r"cm_multiply(_part)?\(buf, wm, wn, (kh, )?acc\);", "")
# f16's loads without the branch for a k not a multiple of 8 (one value at a time), which the
# compiler keeps beside each 16-byte load
_ALIGNED = (
    r"fetch_f16_bits\((\w+)_8, \w+_1, row \* k_total, k, k_total\)",
    r"(k < k_total ? \1_8[(row * k_total + k) / 8] : uint4(0))",
)
# name -> [(pattern, replacement)]: regular expressions, each of which must match
# lib/gemm_coopmat.slang or the entry's file
PROBES: dict[str, list[tuple[str, str]]] = {
    # every stage's loads from the same 8 rows and chunks of k (cached near the SM): no L2 traffic
    "probe_cached_loads": [
        (
            re.escape("h[i] = Src.load(op, row, k_stage + (c % CM_CPR) * 8, k);"),
            "h[i] = Src.load(op, row % 8, (c % CM_CPR) * 8, k);",
        ),
    ],
    # no loads from memory (one kept behind a k no product has, so that the buffers stay bound):
    # each thread stages words made from its indices; the staging, barriers and products remain
    "probe_no_loads": [
        (
            re.escape("h[i] = Src.load(op, row, k_stage + (c % CM_CPR) * 8, k);"),
            "h[i] = k == 0xFFFFFFFFu ? Src.load(op, row, k_stage, k)"
            " : gemm_raw(uint4(row, k_stage, c, tid));",
        ),
    ],
    # no products: the staging alone
    "probe_no_mma": [_NO_MMA],
    # loads of 16 bytes only (k a multiple of 8, as every timed product's is)
    "probe_aligned": [_ALIGNED],
    "probe_aligned_no_mma": [_ALIGNED, _NO_MMA],
    # no barriers between the stages (races): what the workgroup's synchronization costs
    "probe_no_sync": [
        (r"\n *if \(CM_BUFFERS == 1\)\n *" + _SYNC + "[^\n]*", ""),
        (r"(cm_stage_store<Src>\(tid, CM_BUFFERS == 2 \? buf \^ 1 : 0, h\);\n) *" + _SYNC, r"\1"),
    ],
}
# the quantized weights staged as their raw words, not decoded (the kind's entry file patched)
_RAW_Q4 = (re.escape("return decode_q4_0_h(raw);"), "return raw.a;")
_RAW_Q8 = (re.escape("return decode_q8_0_h(raw.a.xy, raw.d);"), "return raw.a;")
PROBES.update(
    {
        "probe_q4_0_no_decode": [_RAW_Q4],
        "probe_q8_0_no_decode": [_RAW_Q8],
        "probe_q4_0_cached_loads": PROBES["probe_cached_loads"],
        "probe_q4_0_no_loads": PROBES["probe_no_loads"],
        "probe_q8_0_no_loads": PROBES["probe_no_loads"],
        # neither loads nor barriers: the stores to shared memory and the products alone
        "probe_no_loads_no_sync": PROBES["probe_no_loads"] + PROBES["probe_no_sync"],
    }
)
SHAPES.update({name: ("coopmat", _LIB_SHAPE) for name in PROBES})


def probe_kind(name: str) -> str:
    """The kind a probe runs: f16 unless its name says q4_0 or q8_0."""
    return next((kind for kind in KINDS if f"_{kind}_" in name), "f16")


# The microbenchmarks' matrices: 16 x 16 x 16, f16 operands, f32 sums, subgroup scope.
_TYPES = """using namespace linalg;
typealias CmA = CoopMat<half, MemoryScope.Subgroup, 16, 16, CoopMatMatrixUse.MatrixA>;
typealias CmB = CoopMat<half, MemoryScope.Subgroup, 16, 16, CoopMatMatrixUse.MatrixB>;
typealias CmC = CoopMat<float, MemoryScope.Subgroup, 16, 16, CoopMatMatrixUse.MatrixAccumulator>;
"""


def _mma_head(entry: str, a_doc: str, a_type: str) -> str:
    """A microbenchmark's comment and bindings: a (one tile), y (a tile per subgroup), params."""
    return (
        f"// slang-entries: {entry}\n//\n// Subgroup size: 32\n//\n// Bindings:\n"
        f"//   t0: a       {a_doc}\n"
        "//   u1: y       f32, [groups * 2048] one tile per subgroup\n"
        "//   t2: params  (iters, groups, _pad, _pad)\n//\n"
        "// Dispatch: (groups, 1) threadgroups of 256.\n"
        + _TYPES
        + f"\n[[vk::binding(0)]] StructuredBuffer<{a_type}> a : register(t0);\n"
        "[[vk::binding(1)]] RWStructuredBuffer<float> y : register(u1);\n"
        "[[vk::binding(2)]] StructuredBuffer<uint4> params : register(t2);\n"
    )


MMA_PEAK = (
    _mma_head("mma_peak", "f16, [256] one 16 x 16 tile", "half")
    + """
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
)


# ``mma_smem_<AM>x<AN>``: the same MMAs fed from groupshared memory as ``lib/gemm_coopmat.slang``
# feeds them (a 128-row tile per operand, 64 of k a row padded by 8 halves), each subgroup of 8
# loading AM tiles of x and AN of w per 16 of k and multiplying them into AM x AN accumulators;
# the stage offsets turn with the iteration so that no load can leave the loop. Between
# ``mma_peak`` and the GEMM: what the loads from shared memory cost, with no global traffic.
MMA_SMEM = (
    _mma_head("mma_smem_{am}x{an}", "u32, [128] one 16 x 16 tile of f16, as words", "uint")
    + """
static const uint AM = {am};
static const uint AN = {an};
static const uint ROW = 9;                 // uint4s a staged row: 64 halves and 8 of padding
static const uint WORDS = 2 * 128 * ROW;
groupshared uint4 tiles[WORDS];

[shader("compute")]
[numthreads(256, 1, 1)]
void mma_smem_{am}x{an}(uint3 group : SV_GroupID, uint tid : SV_GroupIndex)
{{
    for (uint w = tid; w < WORDS; w += 256)
        tiles[w] = uint4(a[w * 4 % 128], a[w * 4 % 128 + 1], a[w * 4 % 128 + 2], a[w * 4 % 128 + 3]);
    GroupMemoryBarrierWithGroupSync();
    uint sg = tid / 32;
    uint wm = (sg / (8 / (128 / (16 * AN)))) * 16 * AM % 128;
    uint wn = (sg % (128 / (16 * AN))) * 16 * AN;
    CmC acc[AM][AN];
    [unroll]
    for (uint i = 0; i < AM; i++)
        [unroll]
        for (uint j = 0; j < AN; j++)
            acc[i][j] = CmC(0.0f);
    for (uint it = 0; it < params[0].x; it++)
    {{
        [unroll]
        for (uint ks = 0; ks < 4; ks++)
        {{
            uint off = ((ks + it) & 3) * 2;
            CmA ma[AM];
            CmB mb[AN];
            [unroll]
            for (uint i = 0; i < AM; i++)
                ma[i] = CmA.Load<CoopMatMatrixLayout.RowMajor, uint4, WORDS>(
                    tiles, (wm + i * 16) * ROW + off, ROW);
            [unroll]
            for (uint j = 0; j < AN; j++)
                mb[j] = CmB.Load<CoopMatMatrixLayout.ColumnMajor, uint4, WORDS>(
                    tiles, (128 + wn + j * 16) * ROW + off, ROW);
            [unroll]
            for (uint i = 0; i < AM; i++)
                [unroll]
                for (uint j = 0; j < AN; j++)
                    acc[i][j] = coopMatMulAdd<float, false>(ma[i], mb[j], acc[i][j]);
        }}
    }}
    [unroll]
    for (uint i = 0; i < AM; i++)
        [unroll]
        for (uint j = 0; j < AN; j++)
            if (i + j > 0)
                acc[0][0] = acc[0][0] + acc[i][j];
    acc[0][0].Store<CoopMatMatrixLayout.RowMajor>(y, (group.x * 8 + sg) * 256, 16);
}}
"""
)
SMEM_SHAPES = ((4, 2), (4, 4), (2, 4))

# ``gemm_direct``: a probe with no staging at all: each subgroup loads its matrices of x and w
# straight from the buffers (what other subgroups of the workgroup load again comes from the
# caches), no shared memory, no barriers. Blocks of 128 x 128 (the library's), 8 subgroups of
# 64 x 32; shapes multiples of 128 and k of 16 only (no bounds checks); y in f16.
DIRECT = (
    """// slang-entries: gemm_direct
//
// Subgroup size: 32
//
// Bindings:
//   t0: w       f16, [n][k]
//   t1: x       f16, [tokens][k]
//   u2: y       f16, [tokens][n]
//   t3: params  (n, k, tokens, accumulate)
//
// Dispatch: (ceil(n / 128), ceil(tokens / 128)) threadgroups of 256.
"""
    + _TYPES
    + """typealias CmH = CoopMat<half, MemoryScope.Subgroup, 16, 16, CoopMatMatrixUse.MatrixAccumulator>;

[[vk::binding(0)]] StructuredBuffer<half> w : register(t0);
[[vk::binding(1)]] StructuredBuffer<half> x : register(t1);
[[vk::binding(2)]] RWStructuredBuffer<half> y : register(u2);
[[vk::binding(3)]] StructuredBuffer<uint4> params : register(t3);

[shader("compute")]
[numthreads(256, 1, 1)]
void gemm_direct(uint3 group : SV_GroupID, uint tid : SV_GroupIndex)
{
    uint n = params[0].x;
    uint k = params[0].y;
    uint sg = tid / 32;
    uint m0 = group.y * 128 + (sg / 4) * 64;
    uint n0 = group.x * 128 + (sg % 4) * 32;
    CmC acc[4][2];
    [unroll]
    for (uint i = 0; i < 4; i++)
        [unroll]
        for (uint j = 0; j < 2; j++)
            acc[i][j] = CmC(0.0f);
    for (uint kk = 0; kk < k; kk += 16)
    {
        CmA a[4];
        CmB b[2];
        [unroll]
        for (uint i = 0; i < 4; i++)
            a[i] = CmA.Load<CoopMatMatrixLayout.RowMajor>(x, (m0 + i * 16) * k + kk, k);
        [unroll]
        for (uint j = 0; j < 2; j++)
            b[j] = CmB.Load<CoopMatMatrixLayout.ColumnMajor>(w, (n0 + j * 16) * k + kk, k);
        [unroll]
        for (uint i = 0; i < 4; i++)
            [unroll]
            for (uint j = 0; j < 2; j++)
                acc[i][j] = coopMatMulAdd<float, false>(a[i], b[j], acc[i][j]);
    }
    [unroll]
    for (uint i = 0; i < 4; i++)
        [unroll]
        for (uint j = 0; j < 2; j++)
            CmH(acc[i][j]).Store<CoopMatMatrixLayout.RowMajor>(y, (m0 + i * 16) * n + n0 + j * 16, n);
}
"""
)


def _variant(source: str, path: str, macros: dict[str, int]) -> str:
    """A library GEMM shader with ``macros`` defined first and the Dispatch lines to match."""
    if path == "cm2":
        bm, bn, threads = macros["CM2_BM"], macros["CM2_BN"], macros["CM2_THREADS"]
        cm2_line = f"(ceil(n / {bm}), ceil(tokens / {bn})) threadgroups of {threads}."
        source = re.sub(r"(// Dispatch \(\w+_cm2\): ).*", lambda m: m.group(1) + cm2_line, source)
    else:
        # (all of the path's shape defined: the library files' own give way as a whole)
        macros = {"CM_TM": 128, "CM_TN": 128, "CM_KSPLIT": 1, "CM_RASTER": 0, **macros}
        threads = 32 * macros["CM_SG_ROWS"] * macros["CM_SG_COLS"] * macros["CM_KSPLIT"]
        line = f"(ceil(n / {macros['CM_TN']}), ceil(tokens / {macros['CM_TM']})) threadgroups of {threads}."
        entry = re.search(r"void (\w+_coopmat)<", source)
        assert entry is not None
        source = re.sub(r"// Dispatch \(\w+_coopmat\): .*\n", "", source)  # (the file's own, if any)
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
    lib = (shaders / "lib" / "gemm_coopmat.slang").read_text(encoding="utf-8")
    for name in names:
        path, macros = SHAPES[name]
        for kind in KINDS if name not in PROBES else (probe_kind(name),):
            source = _variant(
                (ROOT / "shaders" / f"gemm_{kind}.slang").read_text(encoding="utf-8"), path, macros
            )
            if name in PROBES:
                probe = lib
                for pattern, repl in PROBES[name]:
                    probe, count = re.subn(pattern, repl, probe)
                    source, in_entry = re.subn(pattern, repl, source)
                    assert count + in_entry, (name, pattern)
                (shaders / "lib" / f"{name}.slang").write_text(probe, encoding="utf-8")
                source = source.replace('"lib/gemm_coopmat.slang"', f'"lib/{name}.slang"')
            (shaders / f"{kind}_{name}.slang").write_text(source, encoding="utf-8")
    (shaders / "mma_peak.slang").write_text(MMA_PEAK, encoding="utf-8")
    (shaders / "gemm_direct.slang").write_text(DIRECT, encoding="utf-8")
    for am, an in SMEM_SHAPES:
        text = MMA_SMEM.format(am=am, an=an)
        (shaders / f"mma_smem_{am}x{an}.slang").write_text(text, encoding="utf-8")
    (out / "pyproject.toml").write_text(
        f'[project]\nname = "{PACKAGE}"\nversion = "0"\n\n[tool.hatch.build.hooks.slang]\n'
        f'shaders = ["shaders/*.slang"]\npackage = "{PACKAGE}/kernels"\n',
        encoding="utf-8",
    )
    cmd = [sys.executable, "-c", "from hatch_slang.cli import main; main()", "build"]
    subprocess.run(cmd, cwd=out, check=True)


def mma_peak(name: str, fn: Any, mmas: int, a: slangrt.Tensor) -> dict[str, Any]:
    """The throughput of ``fn`` (``mma_peak`` or an ``mma_smem``), ``mmas`` 16 x 16 x 16 products a
    subgroup an iteration (8 subgroups a group, enough groups to fill the device several times)."""
    best: dict[str, Any] = {}
    iters = 4096 if name == "mma_peak" else 1024
    for groups in (132, 528, 2112):
        y = slangrt.Tensor.empty((groups * 2048,), np.float32)

        def call(y: slangrt.Tensor = y, groups: int = groups) -> None:
            fn(a, y, iters=iters, groups=groups)

        us, _, _ = gpu_time_us(call, 5)
        tflops = groups * 8 * iters * mmas * 2 * 16**3 / us / 1e6
        if tflops > best.get("TFLOPS", 0.0):
            best = {"entry": name, "groups": groups, "us": us, "TFLOPS": tflops}
    best["of peak"] = best["TFLOPS"] / PEAK_TFLOPS["f16"]
    return best


def mma_rows() -> list[dict[str, Any]]:
    """``mma_peak`` and each ``mma_smem``, on the devices that have their matrices."""
    rng = np.random.default_rng(0)
    a16 = (rng.standard_normal(256) * 0.01).astype(np.float16)
    rows: list[dict[str, Any]] = []
    words = a16.view(np.uint32)
    benches = [("mma_peak", 8, a16)] + [(f"mma_smem_{m}x{n}", 4 * m * n, words) for m, n in SMEM_SHAPES]
    for name, mmas, data in benches:
        fn = getattr(importlib.import_module(f"{PACKAGE}.kernels.{name}"), name)
        try:
            rows.append(mma_peak(name, fn, mmas, slangrt.Tensor.from_numpy(data)))
        except slangrt.UnsupportedKernelError as e:
            print(f"{name}: skipped ({e})", flush=True)
            continue
        print(json.dumps(rows[-1]), flush=True)
    return rows


CHECKS = ((37, 72, 64), (300, 200, 96), (130, 300, 4096))  # (tokens, n, k): partial blocks


def check(fn: Any, kind: str) -> float:
    """The largest error of ``fn`` (f16 x and y) on small odd shapes, ``accumulate`` on, against
    float64 NumPy on the operands rounded to f16 as the tensor-core paths round them, relative to
    the largest value: what each shape's rows rest on besides their agreement with torch."""
    rng = np.random.default_rng(1)
    worst = 0.0
    for tokens, n, k in CHECKS:
        weights, w32 = _weights(kind, n, k, rng)
        x = rng.standard_normal((tokens, k), dtype=np.float32).astype(np.float16)
        y0 = rng.standard_normal((tokens, n), dtype=np.float32).astype(np.float16)
        y = slangrt.Tensor.from_numpy(y0)
        fn(*(slangrt.Tensor.from_numpy(np.ascontiguousarray(a)) for a in (*weights, x)), y, accumulate=1)
        ref = x.astype(np.float64) @ w32.astype(np.float16).astype(np.float64).T + y0
        err = np.abs(y.numpy().astype(np.float64) - ref).max() / np.abs(ref).max()
        worst = max(worst, float(err))
    return worst


def direct_rows(th: Torch, reps: int) -> list[dict[str, Any]]:
    """``gemm_direct`` on the f16 products (timing and torch's difference; no ``check``: it has no
    bounds checks)."""
    fn = importlib.import_module(f"{PACKAGE}.kernels.gemm_direct").gemm_direct
    rows: list[dict[str, Any]] = []
    for shape in ((4096, 4096, 4096), (512, 14336, 4096), (512, 4096, 14336)):
        try:
            rows.append(
                {
                    "shape name": "direct",
                    "kind": "f16",
                    **row(th, "gemm_direct", fn, "f16", shape, reps, "f16"),
                }
            )
        except slangrt.UnsupportedKernelError as e:
            print(f"gemm_direct: skipped ({e})", flush=True)
            break
        print(json.dumps(rows[-1]), flush=True)
    return rows


def run(
    out: Path, names: list[str], reps: int, micro: bool = True, stats: bool = False
) -> list[dict[str, Any]]:
    sys.path.insert(0, str(out))
    if stats:
        pipeline_stats.install()
    th = Torch(enabled=True)
    results: list[dict[str, Any]] = []
    if micro:
        results += mma_rows()  # first: the figures that say what bounds every path below
        results += direct_rows(th, reps)
    products = [("f16", (4096, 4096, 4096)), ("f16", (512, 14336, 4096)), ("f16", (512, 4096, 14336))]
    products += [(k, (512, 14336, 4096)) for k in ("q4_0", "q8_0")]
    for name in names:
        path = SHAPES[name][0]
        mine = [p for p in products if p[0] == probe_kind(name)][:1] if name in PROBES else products
        for kind, shape in mine:
            module = importlib.import_module(f"{PACKAGE}.kernels.{kind}_{name}")
            fn = getattr(module, f"gemm_{kind}_{path}_f16")
            pipeline_stats.LABEL[0] = f"{kind}_{name}"
            try:
                got = {"shape name": name, "kind": kind, **row(th, name, fn, kind, shape, reps, "f16")}
                if f"{kind}_{name}" in pipeline_stats.STATS:
                    got.update(pipeline_stats.summary(pipeline_stats.STATS[f"{kind}_{name}"]))
                if name not in PROBES:
                    got["check"] = check(fn, kind)
            except slangrt.UnsupportedKernelError as e:
                print(f"{name} {kind}: skipped ({e})", flush=True)
                continue
            results.append(got)
            print(json.dumps(got), flush=True)
    return results


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    where = ap.add_mutually_exclusive_group(required=True)
    where.add_argument("--build", type=Path, help="write and build the project into this folder")
    where.add_argument("--run", type=Path, help="run the project built there before")
    ap.add_argument("--shapes", nargs="*", choices=sorted(SHAPES), default=sorted(SHAPES))
    ap.add_argument("--reps", type=int, default=10)
    ap.add_argument("--json", type=Path)
    ap.add_argument("--no-micro", action="store_true", help="skip mma_peak, mma_smem_* and gemm_direct")
    ap.add_argument(
        "--stats",
        action="store_true",
        help="each shape's registers, spills and shared memory (pipeline_stats)",
    )
    args = ap.parse_args()
    if args.build:
        build(args.build, args.shapes)
        return 0
    results = run(args.run, args.shapes, args.reps, micro=not args.no_micro, stats=args.stats)
    if args.json:
        header = {"device": slangrt.device().info.name}
        args.json.write_text(json.dumps({**header, "rows": results}, indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
