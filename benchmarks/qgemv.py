"""Quantized GEMV kernels, old beside new, in one process: gemv_q4_0, moe_gemv_q4_0, gemv_q8_0.

Two steps, because the device machine has no Slang compiler:

- ``python benchmarks/qgemv.py build`` (where slangpy is installed) compiles the kernels of
  ``shaders/`` as they are, the same files as they were at ``--old`` (a commit), and variants of
  the new ones (other rows per thread, blocks per step, workgroup sizes: the ``static const``
  lines rewritten) into ``build/qgemv/`` with an index;
- ``python benchmarks/qgemv.py run`` (anywhere slangrt runs) times each of them with GPU
  timestamps (``slangrt.profile()``, the median of ``--reps`` dispatches in one batch, over
  interleaved rounds: the median of the rounds' medians), checks each output against NumPy in
  float64, and reports GB/s over the weight bytes against PyTorch's ``a.add_(b)`` in the same
  process (NumPy's ``a += b`` without CUDA).

The ``_pq8`` entries read x rounded by a ``quantize_q8`` dispatch before them: each of their
calls is the pair, timed together (the two dispatches' GPU times summed: from the end of the
work before the pair to the end of the GEMV). Every row also gives the wall time of a call in a
batch of ``--reps`` calls (from the batch's submission to the device going idle, per call).
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "build" / "qgemv"
F32 = np.float32

# Diagnostic rewrites of the new kernels (their outputs are wrong where they drop work):
NO_ALU_Q8 = (
    r"(float word_dot\([^)]*\)\n\{\n)(.*?)(    return s;)",
    r"\g<1>    s += asfloat(word) * xv.x;\n\g<3>",
)
NO_DOT = (  # gemv_q4_0_q8's integer dot products of a row replaced by one add per word
    r"s = dot4add_i8packed\(w & 0x0F0F0F0Fu, xa\[k\], s\);\n\s*s = dot4add_i8packed\(\(w >> 4\) [^;]*;",
    "s += int(w);",
)
LIMB_NO_DOT = (  # gemv_q4_0's block_dot (24 packed dot products) replaced by one add per word
    r"(int block_dot\([^)]*\)\n\{\n)(.*?)(    return int\(t\);)",
    r"\g<1>    uint t = w.x + w.y + w.z + w.w + offset;\n\g<3>",
)
TWO_LIMBS = (  # gemv_q4_0's block_dot without its last limb (8 of its 24 dot products)
    r"    t = t \* 256u \+ offset;\n\s*\[unroll\]\n\s*for \(uint k = 0; k < 4; k\+\+\)\n\s*"
    r"t = dot4add_u8packed\(hi\[k\], l\[5\]\[k\], dot4add_u8packed\(lo\[k\], l\[4\]\[k\], t\)\);\n",
    "    t = t + offset;\n",
)
X23 = [  # gemv_q4_0's x split to 23 bits (n = round(x 2^(22 - e)), |n| < 2^23) instead of 22
    (r"float up = asfloat\(uint\(148 - e\) << 23\);[^\n]*", "float up = asfloat(uint(149 - e) << 23);"),
    (
        r"int4 n = asint\(v\[(\w)\] \* up \+ 12582912.0f\) - 0x4B400000;",
        r"int4 m = asint(min(abs(v[\1]) * up, 8388607.0f) + 8388608.0f) - 0x4B000000;"
        r" int4 n = select(v[\1] < 0.0f, -m, m);",
    ),
    (r"uint\(106 \+ e\) << 23", "uint(105 + e) << 23"),
]
DIAG = {
    "no_alu": "byte arithmetic replaced by one FMA per word",
    "no_dot": "the integer dot products per row and block replaced by one add per word",
    "two_limbs": "the last of the 3 limbs of x dropped (16 of the 24 dot products left)",
}

# name -> (shader, entry, {static const name: value} overrides, [(regex, replacement)])
VARIANTS: dict[str, tuple[str, str, dict[str, int], list[tuple[str, str]]]] = {
    "gemv_q4_0 new": ("gemv_q4_0", "gemv_q4_0", {}, []),
    # Persistent workgroups: at most C of them (C{n}), each taking ceil(tiles / C) tiles of rows.
    "gemv_q4_0 C224": ("gemv_q4_0", "gemv_q4_0", {"MAX_GROUPS": 224}, []),
    "gemv_q4_0 C528": ("gemv_q4_0", "gemv_q4_0", {"MAX_GROUPS": 528}, []),
    "gemv_q4_0 U1": ("gemv_q4_0", "gemv_q4_0", {"UNROLL": 1}, []),
    "gemv_q4_0 X23": ("gemv_q4_0", "gemv_q4_0", {}, X23),
    "gemv_q4_0 no_dot": ("gemv_q4_0", "gemv_q4_0", {}, [LIMB_NO_DOT]),
    "gemv_q4_0 two_limbs": ("gemv_q4_0", "gemv_q4_0", {}, [TWO_LIMBS]),
    "gemv_q4_0_q8 new": ("gemv_q4_0", "gemv_q4_0_q8", {}, []),
    "gemv_q4_0_q8 no_dot": ("gemv_q4_0", "gemv_q4_0_q8", {}, [NO_DOT]),
    "moe_gemv_q4_0 new": ("moe_gemv", "moe_gemv_q4_0", {}, []),
    **{
        f"moe_gemv_q4_0 {'R2 ' if rows == 2 else ''}C{cap}": (
            "moe_gemv",
            "moe_gemv_q4_0",
            {"LIMB_MAX_GROUPS": cap, **({"Q_ROWS_PER_THREAD": 2} if rows == 2 else {})},
            [],
        )
        for rows, cap in ((4, 264), (4, 528), (4, 896), (2, 600))
    },
    **{
        f"moe_gemv_q4_0_q8 R{rows} C{cap}": (
            "moe_gemv",
            "moe_gemv_q4_0_q8",
            {"Q8_MAX_GROUPS": cap, "Q8_ROWS_PER_THREAD": rows},
            [],
        )
        for rows, cap in ((4, 528), (4, 896), (2, 528), (2, 1056), (2, 1792), (1, 600), (1, 896), (1, 1200))
    },
    "moe_gemv_q4_0_q8 new": ("moe_gemv", "moe_gemv_q4_0_q8", {}, []),
    "moe_gemv_q4_0_q8 U1": ("moe_gemv", "moe_gemv_q4_0_q8", {"Q_UNROLL": 1}, []),
    "moe_gemv_q4_0_q8 G512": ("moe_gemv", "moe_gemv_q4_0_q8", {"Q_GROUP": 512}, []),
    "moe_gemv_q4_0_q8 R8": ("moe_gemv", "moe_gemv_q4_0_q8", {"Q8_ROWS_PER_THREAD": 8}, []),
    "quantize_q8 new": ("quantize_q8", "quantize_q8", {}, []),
    "gemv_q4_0_pq8 new": ("gemv_q4_0", "gemv_q4_0_pq8", {}, []),
    "moe_gemv_q4_0_pq8 new": ("moe_gemv", "moe_gemv_q4_0_pq8", {}, []),
    "gemv_q8_0 new": ("gemv_q8_0", "gemv_q8_0", {}, []),
    "gemv_q8_0 no_alu": ("gemv_q8_0", "gemv_q8_0", {}, [NO_ALU_Q8]),
}
OLD = {"gemv_q4_0 old": ("gemv_q4_0", "gemv_q4_0"), "moe_gemv_q4_0 old": ("moe_gemv", "moe_gemv_q4_0")}
# The kernels as they were at --before (the last change's baseline, timed in the same run).
BEFORE = {
    "gemv_q4_0 before": ("gemv_q4_0", "gemv_q4_0"),
    "gemv_q4_0_q8 before": ("gemv_q4_0", "gemv_q4_0_q8"),
    "moe_gemv_q4_0 before": ("moe_gemv", "moe_gemv_q4_0"),
    "moe_gemv_q4_0_q8 before": ("moe_gemv", "moe_gemv_q4_0_q8"),
}
# The persistent entries' cap on workgroups (a static const): their grid is
# ceil(tiles / ceil(tiles / cap)) groups, tiles = ceil(rows / rows_per_group) * grid_y.
CAPS = {"gemv_q4_0": "MAX_GROUPS", "moe_gemv_q4_0": "LIMB_MAX_GROUPS", "moe_gemv_q4_0_q8": "Q8_MAX_GROUPS"}
QUANTIZE = "quantize_q8 new"  # the dispatch before each _pq8 one
QUANTIZE_COLS = 2048  # columns per quantize_q8 workgroup (64 threads, a block each)


def bindings(entry: str) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """An entry's (read, written) bindings."""
    if entry == "quantize_q8":
        return (0, 3), (1, 2)
    if entry.startswith("moe"):
        return ((1, 2, 4, 6, 7, 8) if entry.endswith("pq8") else (1, 2, 3, 4, 6)), (5,)
    return ((0, 1, 4, 5, 6) if entry.endswith("pq8") else (0, 1, 2, 4)), (3,)


def _consts(text: str) -> dict[str, int]:
    return {m[1]: int(m[2]) for m in re.finditer(r"static const uint (\w+) = (\d+);", text)}


def _rewrite(text: str, overrides: dict[str, int], edits: list[tuple[str, str]]) -> str:
    for pattern, replacement in edits:
        text, n = re.subn(pattern, replacement, text, flags=re.DOTALL)
        if not n:
            raise SystemExit(f"`{pattern}` matches nothing")
    for name, value in overrides.items():
        text, n = re.subn(rf"(static const uint {name} = )\d+;", rf"\g<1>{value};", text)
        if n != 1:
            raise SystemExit(f"no `static const uint {name}` to rewrite")
    group = overrides.get("GROUP", overrides.get("Q_GROUP"))
    if group:  # the entry's numthreads follows its group size (only that entry is compiled)
        text = re.sub(r"\[numthreads\(\d+, 1, 1\)\]", f"[numthreads({group}, 1, 1)]", text)
    return text


def build(old: str, before: str) -> int:
    from hatch_slang.compile.compiler import CompileJob, CompileOptions, compile_job

    OUT.mkdir(parents=True, exist_ok=True)
    index: dict[str, Any] = {}

    def compile_one(name: str, text: str, entry: str) -> None:
        src = OUT / (re.sub(r"\W+", "_", name) + ".slang")
        src.write_text(text)
        result = compile_job(CompileJob(src.name, (entry,), CompileOptions(), str(OUT)))
        if result.error:
            raise SystemExit(f"{name}: {result.error}")
        spv = src.with_suffix(".spv")
        spv.write_bytes(result.entries[0].spirv)
        consts = _consts(text)
        group = int(re.search(rf"\[numthreads\((\d+), 1, 1\)\]\s*void {entry}\b", text)[1])
        if entry == "quantize_q8":  # "rows" are columns of x here
            index[name] = {"spv": spv.name, "entry": entry, "threads": group, "rows_per_group": QUANTIZE_COLS}
            return
        q = "Q_" if "Q_LANES" in consts and entry.startswith("moe") else ""  # moe_gemv's Q4_0 constants
        rows_per_thread = consts[f"{q}ROWS_PER_THREAD"]
        if entry == "moe_gemv_q4_0_q8" and "Q8_ROWS_PER_THREAD" in consts:
            rows_per_thread = consts["Q8_ROWS_PER_THREAD"]
        # The old moe_gemv_q4_0 declares LANES inside the entry (moe_gemv_f32's is 64).
        lanes = 32 if entry.startswith("moe") and not q else consts[f"{q}LANES"]
        index[name] = {
            "spv": spv.name,
            "entry": entry,
            "threads": group,
            "rows_per_group": group // lanes * rows_per_thread,
        }
        if CAPS.get(entry) in consts:
            index[name]["max_groups"] = consts[CAPS[entry]]
        print(f"{name}: {group} threads, {index[name]['rows_per_group']} rows per group", file=sys.stderr)

    olds = [(name, old, shader, entry) for name, (shader, entry) in OLD.items()]
    olds += [(name, before, shader, entry) for name, (shader, entry) in BEFORE.items()]
    for name, commit, shader, entry in olds:
        text = subprocess.run(
            ["git", "show", f"{commit}:shaders/{shader}.slang"],
            cwd=ROOT,
            check=True,
            capture_output=True,
            text=True,
        ).stdout
        compile_one(name, text, entry)
    for name, (shader, entry, overrides, edits) in VARIANTS.items():
        text = (ROOT / "shaders" / f"{shader}.slang").read_text()
        compile_one(name, _rewrite(text, overrides, edits), entry)
    (OUT / "index.json").write_text(json.dumps({"old": old, "before": before, "kernels": index}, indent=1))
    return 0


@dataclass
class Problem:
    label: str
    weight_bytes: int
    buffers: dict[int, Any]  # binding -> slangrt.Tensor
    grid_y: int
    rows: int
    out: Any
    want: np.ndarray
    # _pq8: quantize_q8's buffers and grid (its dispatch comes first), and the xq it must write
    pre: tuple[dict[int, Any], tuple[int, int, int], np.ndarray] | None = None


def problems(rng: np.random.Generator, small: bool) -> dict[str, list[Problem]]:
    import slangrt

    sys.path.insert(0, str(ROOT / "shaders"))
    from gemv_q4_0 import dequantize_q4_0, quantize_x_q8, round_x_q8
    from gemv_q8_0 import dequantize_q8_0

    T = slangrt.Tensor.from_numpy
    shapes = [(4096, 1024), (1024, 4096)] if small else [(14336, 4096), (4096, 14336)]
    out: dict[str, list[Problem]] = {
        "gemv_q4_0": [],
        "gemv_q4_0_q8": [],
        "moe_gemv_q4_0": [],
        "gemv_q8_0": [],
        "gemv_q4_0_pq8": [],
        "quantize_q8": [],
    }

    def quantize(x: np.ndarray) -> tuple[dict[int, Any], tuple[int, int, int], np.ndarray]:
        """quantize_q8's buffers for x, its grid, and the xq it must write; binds xq and xd."""
        tokens, cols = x.shape
        xq, xd = quantize_x_q8(x)
        bufs = {
            0: T(x),
            1: slangrt.Tensor.empty(xq.shape, np.uint32),
            2: slangrt.Tensor.empty(xd.shape, F32),
            3: T(np.array([cols, tokens], np.uint32)),
        }
        out["quantize_q8"].append(
            Problem(f"cols={cols}", x.nbytes + xq.nbytes + xd.nbytes, bufs, tokens, cols, bufs[2], xd[0])
        )
        return bufs, (-(-cols // QUANTIZE_COLS), tokens, 1), xq

    for rows, cols in shapes:
        x = rng.standard_normal((1, cols), dtype=F32)
        x64 = x[0].astype(np.float64)
        params = T(np.array([rows, cols, 1, 0], np.uint32))
        for kind, words, deq in (
            ("gemv_q4_0", cols // 8, dequantize_q4_0),
            ("gemv_q8_0", cols // 4, dequantize_q8_0),
        ):
            wq = rng.integers(0, 2**32, size=(rows, words), dtype=np.uint32)
            wd = rng.uniform(0.005, 0.02, size=(rows, cols // 32)).astype(np.float16)
            y = slangrt.Tensor.empty((1, rows), F32)
            want = deq(wq, wd).astype(np.float64) @ x64
            bufs = {0: T(wq), 1: T(wd), 2: T(x), 3: y, 4: params}
            nbytes = wq.nbytes + wd.nbytes + 4 * cols + 4 * rows
            out[kind].append(Problem(f"rows={rows} cols={cols}", nbytes, bufs, 1, rows, y, want))
            if kind == "gemv_q4_0":  # the same weights, x rounded to 8 bits
                want = deq(wq, wd).astype(np.float64) @ round_x_q8(x)[0]
                out["gemv_q4_0_q8"].append(
                    Problem(f"rows={rows} cols={cols}", nbytes, bufs, 1, rows, y, want)
                )
                pre = quantize(x)
                pbufs = {0: bufs[0], 1: bufs[1], 3: y, 4: params, 5: pre[0][1], 6: pre[0][2]}
                out["gemv_q4_0_pq8"].append(
                    Problem(f"rows={rows} cols={cols}", nbytes, pbufs, 1, rows, y, want, pre)
                )
    experts, rows, cols, used = (8, 1024, 1024, 2) if small else (8, 14336, 4096, 2)
    x = rng.standard_normal((1, cols), dtype=F32)
    sel = rng.permutation(experts)[:used].astype(np.uint32)
    wq = rng.integers(0, 2**32, size=(experts, rows, cols // 8), dtype=np.uint32)
    wd = rng.uniform(0.005, 0.02, size=(experts, rows, cols // 32)).astype(np.float16)
    z = slangrt.Tensor.empty((used, rows), F32)
    want = np.einsum(
        "erc,c->er", dequantize_q4_0(wq[sel], wd[sel]).astype(np.float64), x[0].astype(np.float64)
    )
    bufs = {
        1: T(wq),
        2: T(wd),
        3: T(x),
        4: T(sel),
        5: z,
        6: T(np.array([rows, cols, used, experts, used], np.uint32)),
    }
    nbytes = used * (wq[0].nbytes + wd[0].nbytes) + 4 * cols + 4 * used * rows
    label = f"experts={experts} rows={rows} cols={cols} used={used}"
    out["moe_gemv_q4_0"].append(Problem(label, nbytes, bufs, used, rows, z, want))
    w_sel = dequantize_q4_0(wq[sel], wd[sel]).astype(np.float64)
    want = np.einsum("erc,c->er", w_sel, round_x_q8(x)[0])
    out["moe_gemv_q4_0_q8"] = [Problem(label, nbytes, bufs, used, rows, z, want)]
    pre = quantize(x)
    pbufs = {**{k: v for k, v in bufs.items() if k != 3}, 7: pre[0][1], 8: pre[0][2]}
    out["moe_gemv_q4_0_pq8"] = [Problem(label, nbytes, pbufs, used, rows, z, want, pre)]
    return out


def run(reps: int, rounds: int, small: bool, out_md: Path | None, only: str | None = None) -> int:
    import slangrt

    sys.path.insert(0, str(ROOT / "benchmarks"))
    import kernels as kb

    index = json.loads((OUT / "index.json").read_text())
    th = kb.Torch(True)
    n = 1 << 25 if not small else 1 << 20
    if th:
        a, b = th.torch.randn(n, device="cuda"), th.torch.randn(n, device="cuda")
        base = 12 * n / (th.time_us(lambda: a.add_(b), 50) * 1e3)
        baseline = f"PyTorch a.add_(b) over {n} floats: {base:.0f} GB/s ({th.reason})"
        del a, b
        th.torch.cuda.empty_cache()
    else:
        a, b = np.ones(n, F32), np.ones(n, F32)
        times = []
        for _ in range(10):
            start = time.perf_counter()
            np.add(a, b, out=a)
            times.append(time.perf_counter() - start)
        base = 12 * n / (min(times) * 1e9)
        baseline = f"NumPy a += b over {n} floats: {base:.1f} GB/s (PyTorch: {th.reason})"
    probs = problems(np.random.default_rng(0), small)

    kernels: dict[str, Any] = {}
    for name, k in index["kernels"].items():
        if only and name != QUANTIZE and not re.search(only, name):
            continue
        reads, written = bindings(k["entry"])
        specs = [slangrt.BindingSpec(i, f"b{i}", "storage", writable=False) for i in reads]
        specs += [slangrt.BindingSpec(i, f"out{i}", "storage", writable=True) for i in written]
        spirv = (OUT / k["spv"]).read_bytes()
        kernels[name] = (slangrt.Kernel(spirv, k["entry"], specs, (k["threads"], 1, 1), name=name), k)

    rows_out: list[tuple[str, Problem, list[float], float, str, str]] = []
    cases = []
    quant = kernels[QUANTIZE][0]
    for name, (kernel, k) in kernels.items():
        kind = k["entry"]
        for prob in probs.get(kind, []):
            grid = (-(-prob.rows // k["rows_per_group"]), prob.grid_y, 1)
            if "max_groups" in k:  # persistent: one row of groups over all the tiles
                tiles = grid[0] * grid[1]
                grid = (-(-tiles // -(-tiles // k["max_groups"])), 1, 1)

            def call(kernel: Any = kernel, prob: Problem = prob, grid: tuple[int, int, int] = grid) -> None:
                if prob.pre:
                    quant.dispatch(prob.pre[0], prob.pre[1])
                kernel.dispatch(prob.buffers, grid)

            call()
            got = prob.out.numpy().astype(np.float64).reshape(prob.want.shape)
            err = float(np.abs(got - prob.want).max() / np.abs(prob.want).max())
            if prob.pre and not np.array_equal(prob.pre[0][1].numpy(), prob.pre[2]):
                err = float("inf")  # quantize_q8 did not round x as quantize_x_q8 does
            cases.append((name, prob, call, err))
    samples: dict[int, list[float]] = {i: [] for i in range(len(cases))}
    parts: dict[int, list[tuple[float, float]]] = {i: [] for i in range(len(cases))}  # first, last
    walls: dict[int, list[float]] = {i: [] for i in range(len(cases))}
    for _ in range(rounds):
        for i, (_name, _prob, call, _err) in enumerate(cases):
            call()
            slangrt.device().synchronize()
            with slangrt.profile() as prof, slangrt.batch():
                for _ in range(reps):
                    call()
            per = len(prof.records) // reps  # dispatches per call
            ns = [r.gpu_ns for r in prof.records]
            samples[i].append(statistics.median(sum(ns[j : j + per]) for j in range(0, len(ns), per)) / 1e3)
            parts[i].append((statistics.median(ns[::per]) / 1e3, statistics.median(ns[per - 1 :: per]) / 1e3))
            slangrt.device().synchronize()
            with slangrt.batch():
                for _ in range(reps):
                    call()
                start = time.perf_counter()  # the dispatches are kept; leaving submits them
            slangrt.device().synchronize()
            walls[i].append((time.perf_counter() - start) * 1e6 / reps)
    for i, (name, prob, _call, err) in enumerate(cases):
        first, last = (statistics.median(p) for p in zip(*parts[i]))
        note = f"{first:.2f} + {last:.2f}" if prob.pre else ""
        rows_out.append((name, prob, samples[i], err, f"{statistics.median(walls[i]):.2f}", note))

    # Size-matched references: how fast a plain streaming kernel moves the same bytes.
    from hatch_slang.kernels import gemv_f32

    refs = []
    for rows, cols in ((2048, 4096), (4096, 4096)):
        w = np.random.default_rng(1).standard_normal((rows, cols), dtype=F32)
        x = np.ones((1, cols), F32)
        tw, tx, ty = (
            slangrt.Tensor.from_numpy(w),
            slangrt.Tensor.from_numpy(x),
            slangrt.Tensor.empty((1, rows), F32),
        )
        f32s = []
        for _ in range(rounds):
            gemv_f32.gemv_f32(tw, tx, ty, accumulate=0)
            slangrt.device().synchronize()
            with slangrt.profile() as prof, slangrt.batch():
                for _ in range(reps):
                    gemv_f32.gemv_f32(tw, tx, ty, accumulate=0)
            f32s.append(statistics.median(r.gpu_ns for r in prof.records) / 1e3)
        refs.append((f"gemv_f32 rows={rows} cols={cols}", w.nbytes, statistics.median(f32s)))
        if th:
            m = w.nbytes // 12
            a, b = th.torch.randn(m, device="cuda"), th.torch.randn(m, device="cuda")
            refs.append((f"torch add_ n={m}", 12 * m, th.time_us(lambda a=a, b=b: a.add_(b), reps)))

    info = slangrt.device().info
    lines = [
        f"- device: {info.name} ({info.type}, driver {info.driver})",
        f"- baseline (vs add_): {baseline}",
        f"- {rounds} interleaved rounds of {reps} dispatches in one batch each; GPU us: median of the "
        "rounds' medians (min .. max of the rounds)",
        f"- old: `shaders/` at `{index['old']}`; before: at `{index.get('before')}`",
        "- _pq8 rows: quantize_q8 + the GEMV, GPU us summed (`parts`: quantize_q8 + GEMV, medians); "
        "`wall us`: per call in a batch of the reps, from submission to idle (median of the rounds)",
        "",
        "| kernel | shape | weight MB | GPU us | rounds | GB/s | vs add_ | wall us | parts "
        "| max err / max abs |",
        "| --- | --- | ---: | ---: | --- | ---: | ---: | ---: | --- | ---: |",
    ]
    for name, prob, s, err, wall, note in rows_out:
        us = statistics.median(s)
        gb = prob.weight_bytes / (us * 1e3)
        lines.append(
            f"| {name} | {prob.label} | {prob.weight_bytes / 1e6:.1f} | {us:.2f} | "
            f"{min(s):.2f} .. {max(s):.2f} | {gb:.0f} | {gb / base:.2f} | {wall} | {note} | {err:.1e} |"
        )
    lines += [
        "",
        "| size-matched reference | MB | GPU us | GB/s | vs add_ |",
        "| --- | ---: | ---: | ---: | ---: |",
    ]
    for label, nbytes, us in refs:
        gb = nbytes / (us * 1e3)
        lines.append(f"| {label} | {nbytes / 1e6:.1f} | {us:.2f} | {gb:.0f} | {gb / base:.2f} |")
    text = "\n".join(lines) + "\n"
    print(text)
    if out_md:
        out_md.write_text(text)
    return 1 if any(row[3] > 1e-5 for row in rows_out) else 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    b = sub.add_parser("build", help="compile the kernels and variants into build/qgemv (needs slangpy)")
    b.add_argument("--old", default="d52bb00", help="the commit whose shaders are the old kernels")
    b.add_argument("--before", default="bab178b", help="the commit of the 'before' rows")
    r = sub.add_parser("run", help="time them")
    r.add_argument("--reps", type=int, default=50)
    r.add_argument("--rounds", type=int, default=5)
    r.add_argument("--small", action="store_true", help="small shapes (a CPU device)")
    r.add_argument("--out", type=Path)
    r.add_argument("--only", help="time only the kernels whose name matches this regex (quantize_q8 stays)")
    args = ap.parse_args()
    if args.cmd == "build":
        return build(args.old, args.before)
    return run(args.reps, args.rounds, args.small, args.out, args.only)


if __name__ == "__main__":
    sys.exit(main())
