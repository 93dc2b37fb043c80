"""Build-pipeline benchmark: hatch-slang's incremental, parallel build against one compiler
process per shader (what a build script that runs ``slangc`` per file does).

    .venv/bin/python benchmarks/build.py [--shaders 200] [--repeat 5] [--json out.json]

Two corpora, each copied into a fresh temporary project:

- ``generated``: ``--shaders`` kernels with distinct entry names, made from four real-sized
  templates (the reference ``moe_combine``, a row softmax with a groupshared reduction, a tiled
  2-D kernel with two entries, an element-wise kernel that includes a shared header);
- ``repo``: this repository's own ``shaders/``.

Measured per corpus, all wall-clock, all in one run (compare ratios, not absolute times):

- process per shader: a fresh ``python`` per shader that loads the Slang library, creates a
  session and compiles every entry of the file, one after the other (a shell loop over
  ``slangc``); and the same with as many processes at a time as there are cores;
- ``hatch-slang build``: cold (no cache, no outputs), no-op (nothing changed), one shader
  touched (its content changed); the no-op also in-process (``pipeline.build`` +
  ``write_output``, without the interpreter's start-up);
- the compile of the touched shader alone, in one fresh process: session start, then the
  compile, each timed;
- ``pip wheel --no-build-isolation`` of the project, with an empty cache and with a warm one.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
HATCH_SLANG = str(BIN / "hatch-slang")
SEED = REPO / "tests" / "packages" / "seedpkg" / "shaders" / "moe_combine.slang"  # the reference seed

PYPROJECT = """\
[build-system]
requires = ["hatchling", "hatch-slang"]
build-backend = "hatchling.build"

[project]
name = "benchpkg"
version = "0.1.0"

[tool.hatch.build.targets.wheel]
packages = ["benchpkg"]

[tool.hatch.build.hooks.slang]
shaders = ["shaders/*.slang"]
package = "benchpkg/kernels"
"""

SOFTMAX = """\
// Softmax over the last axis, in place, one workgroup per row.
//
// Bindings:
//   u0: x       f32, [n_rows][n] scores, replaced by probabilities
//   t1: params  (n, n_rows)
//
// Dispatch: (n_rows) threadgroups of 256.

[[vk::binding(0)]] RWStructuredBuffer<float> x;
[[vk::binding(1)]] StructuredBuffer<uint> params;

static const uint GROUP = 256;
groupshared float shared_max[GROUP];
groupshared float shared_sum[GROUP];

[shader("compute")]
[numthreads(256, 1, 1)]
void NAME(uint3 lid : SV_GroupThreadID, uint3 grp : SV_GroupID) {
    uint n = params[0];
    uint row = grp.x;
    float m = -1.0f / 0.0f;
    for (uint i = lid.x; i < n; i += GROUP) m = max(m, x[row * n + i]);
    shared_max[lid.x] = m;
    GroupMemoryBarrierWithGroupSync();
    for (uint s = GROUP / 2; s > 0; s >>= 1) {
        if (lid.x < s) shared_max[lid.x] = max(shared_max[lid.x], shared_max[lid.x + s]);
        GroupMemoryBarrierWithGroupSync();
    }
    m = shared_max[0];
    float sum = 0.0f;
    for (uint i = lid.x; i < n; i += GROUP) sum += exp(x[row * n + i] - m);
    shared_sum[lid.x] = sum;
    GroupMemoryBarrierWithGroupSync();
    for (uint s = GROUP / 2; s > 0; s >>= 1) {
        if (lid.x < s) shared_sum[lid.x] += shared_sum[lid.x + s];
        GroupMemoryBarrierWithGroupSync();
    }
    float inv = 1.0f / shared_sum[0];
    for (uint i = lid.x; i < n; i += GROUP) x[row * n + i] = exp(x[row * n + i] - m) * inv;
}
"""

TILED = """\
// slang-entries: NAME NAME_t
//
// out = a * b (matrix product) through 16 x 16 tiles in groupshared memory; NAME_t reads b
// transposed.
//
// Bindings:
//   t0: a       f32, [m][k]
//   t1: b       f32, [k][n]
//   u2: out     f32, [m][n]
//   t3: params  (m, k, n)
//
// Dispatch: (ceil(n / 16), ceil(m / 16)) groups of 256

[[vk::binding(0)]] StructuredBuffer<float> a;
[[vk::binding(1)]] StructuredBuffer<float> b;
[[vk::binding(2)]] RWStructuredBuffer<float> out_buf;
[[vk::binding(3)]] StructuredBuffer<uint4> params;

groupshared float ta[16][16];
groupshared float tb[16][16];

float tile_product(uint3 lid, uint3 id, bool transposed) {
    uint m = params[0].x, k = params[0].y, n = params[0].z;
    float acc = 0.0f;
    for (uint t = 0; t < k; t += 16) {
        ta[lid.y][lid.x] = (id.y < m && t + lid.x < k) ? a[id.y * k + t + lid.x] : 0.0f;
        uint bi = transposed ? id.x * k + t + lid.y : (t + lid.y) * n + id.x;
        tb[lid.y][lid.x] = (id.x < n && t + lid.y < k) ? b[bi] : 0.0f;
        GroupMemoryBarrierWithGroupSync();
        for (uint j = 0; j < 16; j++) acc += ta[lid.y][j] * tb[j][lid.x];
        GroupMemoryBarrierWithGroupSync();
    }
    return acc;
}

[shader("compute")]
[numthreads(16, 16, 1)]
void NAME(uint3 lid : SV_GroupThreadID, uint3 id : SV_DispatchThreadID) {
    float v = tile_product(lid, id, false);
    if (id.y < params[0].x && id.x < params[0].z) out_buf[id.y * params[0].z + id.x] = v;
}

[shader("compute")]
[numthreads(16, 16, 1)]
void NAME_t(uint3 lid : SV_GroupThreadID, uint3 id : SV_DispatchThreadID) {
    float v = tile_product(lid, id, true);
    if (id.y < params[0].x && id.x < params[0].z) out_buf[id.y * params[0].z + id.x] = v;
}
"""

ELEMENTWISE = """\
// y = silu(x) * g, elementwise, four at a time.
//
// Bindings:
//   t0: x       f32, [n]
//   t1: g       f32, [n]
//   u2: y       f32, [n]
//   t3: params  (n)
//
// Dispatch: ceil(n / 1024) groups of 256
#include "common.slangh"

[[vk::binding(0)]] StructuredBuffer<float> x;
[[vk::binding(1)]] StructuredBuffer<float> g;
[[vk::binding(2)]] RWStructuredBuffer<float> y;
[[vk::binding(3)]] StructuredBuffer<uint> params;

[shader("compute")]
[numthreads(256, 1, 1)]
void NAME(uint3 id : SV_DispatchThreadID) {
    uint n = params[0];
    for (uint k = 0; k < 4; k++) {
        uint i = id.x * 4 + k;
        if (i < n) y[i] = silu(x[i]) * g[i];
    }
}
"""

COMMON = """\
float silu(float v) { return v / (1.0f + exp(-v)); }
"""

# One compiler process per shader: load the library, create a session, compile, write SPIR-V.
ONE = """\
import sys
from pathlib import Path
from hatch_slang.compile.compiler import CompileJob, CompileOptions, compile_job
path, entries = sys.argv[1], tuple(sys.argv[2:])
result = compile_job(CompileJob(path, entries, CompileOptions(), "."))
assert result.error is None, result.error
for e in result.entries:
    Path(f"{Path(path).stem}.{e.name}.spv").write_bytes(e.spirv)
"""

# The touched shader alone in a fresh process: session start, then the compile.
SPLIT = """\
import json, sys, time
from hatch_slang import compiler
path, entries = sys.argv[1], tuple(sys.argv[2:])
t0 = time.perf_counter()
compiler._load()
t1 = time.perf_counter()
result = compiler.compile_job(compiler.CompileJob(path, entries, compiler.CompileOptions(), "."))
t2 = time.perf_counter()
assert result.error is None, result.error
print(json.dumps({"session_s": t1 - t0, "compile_s": t2 - t1}))
"""


def seed_text() -> str:
    return SEED.read_text()


def generated_corpus(root: Path, n: int) -> dict[str, tuple[str, ...]]:
    """Write ``n`` shaders; return {path: entries}."""
    shaders = root / "shaders"
    shaders.mkdir(parents=True)
    (shaders / "common.slangh").write_text(COMMON)
    seed = seed_text()
    out: dict[str, tuple[str, ...]] = {}
    for k in range(n):
        name = f"k{k:03}"
        kind = k % 4
        if kind == 0:
            text, entries = seed.replace("moe_combine", name), (name,)
        elif kind == 1:
            text, entries = SOFTMAX.replace("NAME", name), (name,)
        elif kind == 2:
            text, entries = TILED.replace("NAME", name), (name, f"{name}_t")
        else:
            text, entries = ELEMENTWISE.replace("NAME", name), (name,)
        (shaders / f"{name}.slang").write_text(text)
        out[f"shaders/{name}.slang"] = entries
    return out


def repo_corpus(root: Path) -> dict[str, tuple[str, ...]]:
    shutil.copytree(REPO / "shaders", root / "shaders", ignore=shutil.ignore_patterns("*.py", "__pycache__"))
    sys.path.insert(0, str(REPO))
    from hatch_slang.compile.discover import discover

    return {s.rel: s.entries for s in discover(root, ["shaders/*.slang"])}


def make_project(root: Path) -> None:
    (root / "pyproject.toml").write_text(PYPROJECT)
    (root / "benchpkg").mkdir()
    (root / "benchpkg" / "__init__.py").write_text("")


def wall(cmd: list[str], cwd: Path, env: dict[str, str] | None = None) -> float:
    start = time.perf_counter()
    done = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, env=env)
    elapsed = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"failed: {' '.join(cmd)}\n{done.stdout}{done.stderr}")
    return elapsed


def best(f: Callable[[], float], repeat: int) -> tuple[float, float]:
    times = [f() for _ in range(repeat)]
    return min(times), statistics.median(times)


def clean(root: Path) -> None:
    from hatch_slang.compile.cache import default_cache_dir

    shutil.rmtree(default_cache_dir(root), ignore_errors=True)  # under main()'s $HATCH_SLANG_CACHE_DIR
    shutil.rmtree(root / "build", ignore_errors=True)
    shutil.rmtree(root / "benchpkg" / "kernels", ignore_errors=True)
    shutil.rmtree(root / "dist", ignore_errors=True)
    shutil.rmtree(root / "pps", ignore_errors=True)


def process_per_shader(root: Path, corpus: dict[str, tuple[str, ...]], parallel: int) -> float:
    out = root / "pps"
    out.mkdir(exist_ok=True)

    def one(item: tuple[str, tuple[str, ...]]) -> None:
        path, entries = item
        cmd = [sys.executable, "-c", ONE, str(root / path), *entries]
        done = subprocess.run(cmd, cwd=out, capture_output=True, text=True)
        if done.returncode != 0:
            raise SystemExit(f"process-per-shader failed on {path}:\n{done.stderr}")

    start = time.perf_counter()
    if parallel == 1:
        for item in corpus.items():
            one(item)
    else:
        with ThreadPoolExecutor(parallel) as pool:
            list(pool.map(one, corpus.items()))
    return time.perf_counter() - start


def touch(root: Path, rel: str, k: int) -> None:
    path = root / rel
    path.write_text(path.read_text() + f"// touched {k}\n")


def in_process_noop(root: Path) -> float:
    from hatch_slang.builder import pipeline
    from hatch_slang.config.project import load_project_config

    start = time.perf_counter()
    config = load_project_config(root)
    output = pipeline.build(config, cache=pipeline.open_cache(config))
    changed = pipeline.write_output(output, config.package_dir)
    elapsed = time.perf_counter() - start
    assert not changed and not output.compiled, (changed, output.compiled)
    return elapsed


def bench_corpus(
    label: str, root: Path, corpus: dict[str, tuple[str, ...]], repeat: int
) -> dict[str, object]:
    make_project(root)
    n_entries = sum(len(e) for e in corpus.values())
    print(f"\n== {label}: {len(corpus)} shaders, {n_entries} entry points, in {root}", flush=True)
    cores = os.cpu_count() or 1
    r: dict[str, object] = {"corpus": label, "shaders": len(corpus), "entries": n_entries, "cores": cores}
    build = [HATCH_SLANG, "build", "-q"]

    # Cold builds (warm the OS file cache once first).
    clean(root)
    wall(build, root)
    colds = []
    for _ in range(max(1, repeat // 2)):
        clean(root)
        colds.append(wall(build, root))
    r["cold_s"] = min(colds)
    print(f"cold `hatch-slang build`: {min(colds):.2f} s (runs: {', '.join(f'{t:.2f}' for t in colds)})")

    r["noop_s"], r["noop_median_s"] = best(lambda: wall(build, root), repeat)
    print(f"no-op `hatch-slang build`: {r['noop_s']:.3f} s (median {r['noop_median_s']:.3f})")
    r["noop_inprocess_s"], _ = best(lambda: in_process_noop(root), repeat)
    print(f"no-op in-process pipeline.build + write_output: {r['noop_inprocess_s']:.3f} s")

    target = sorted(corpus)[len(corpus) // 2]
    touched = []
    for k in range(repeat):
        touch(root, target, k)
        touched.append(wall(build, root))
    r["touched_s"], r["touched_median_s"] = min(touched), statistics.median(touched)
    splits = []
    for _ in range(repeat):
        done = subprocess.run(
            [sys.executable, "-c", SPLIT, target, *corpus[target]],
            cwd=root,
            capture_output=True,
            text=True,
            check=True,
        )
        splits.append(json.loads(done.stdout))
    r["touched_session_s"] = min(s["session_s"] for s in splits)
    r["touched_compile_s"] = min(s["compile_s"] for s in splits)
    print(
        f"one shader touched ({target}): {r['touched_s']:.3f} s (median {r['touched_median_s']:.3f}); "
        f"that shader alone: session start {r['touched_session_s']:.3f} s + compile "
        f"{r['touched_compile_s']:.3f} s"
    )

    pip = [sys.executable, "-m", "pip", "wheel", "-q", "--disable-pip-version-check", "--no-deps",
           "--no-build-isolation", "-w", "dist", "."]  # fmt: skip
    pip_cold = []
    for _ in range(max(1, repeat // 2)):
        clean(root)
        pip_cold.append(wall(pip, root))
    r["pip_cold_s"] = min(pip_cold)
    r["pip_warm_s"], _ = best(
        lambda: (shutil.rmtree(root / "dist", ignore_errors=True), wall(pip, root))[1], repeat
    )
    print(f"`pip wheel`: empty cache {r['pip_cold_s']:.2f} s, warm cache {r['pip_warm_s']:.2f} s")

    clean(root)
    r["pps_serial_s"] = process_per_shader(root, corpus, 1)
    print(f"process per shader, one at a time: {r['pps_serial_s']:.2f} s")
    clean(root)
    r["pps_parallel_s"] = process_per_shader(root, corpus, cores)
    print(f"process per shader, {cores} at a time: {r['pps_parallel_s']:.2f} s")
    r["cold_speedup_vs_serial"] = r["pps_serial_s"] / r["cold_s"]  # type: ignore[operator]
    r["cold_speedup_vs_parallel"] = r["pps_parallel_s"] / r["cold_s"]  # type: ignore[operator]
    print(
        f"cold build is {r['cold_speedup_vs_serial']:.1f}x faster than process-per-shader one at a "
        f"time, {r['cold_speedup_vs_parallel']:.1f}x faster than {cores} at a time"
    )
    return r


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--shaders", type=int, default=200)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--json", type=Path)
    ap.add_argument("--only", choices=["generated", "repo"])
    args = ap.parse_args()
    print(f"{platform.node()}: {platform.processor() or platform.machine()}, {os.cpu_count()} cores, "
          f"Python {platform.python_version()}")  # fmt: skip
    load = os.getloadavg()
    print(f"load average at the start: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")
    results = []
    with tempfile.TemporaryDirectory(prefix="hatch-slang-bench-") as tmp:
        # A cache of its own, emptied by clean(): cold builds stay cold, the user's cache untouched.
        env_cache = os.environ.get("HATCH_SLANG_CACHE_DIR")
        os.environ["HATCH_SLANG_CACHE_DIR"] = str(Path(tmp) / "cache")
        try:
            if args.only in (None, "generated"):
                root = Path(tmp) / "generated"
                results.append(
                    bench_corpus("generated", root, generated_corpus(root, args.shaders), args.repeat)
                )
            if args.only in (None, "repo"):
                root = Path(tmp) / "repo"
                results.append(bench_corpus("repo shaders/", root, repo_corpus(root), args.repeat))
        finally:
            if env_cache is None:
                del os.environ["HATCH_SLANG_CACHE_DIR"]
            else:
                os.environ["HATCH_SLANG_CACHE_DIR"] = env_cache
    load = os.getloadavg()
    print(f"\nload average at the end: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f} (other work on the machine)")
    if args.json:
        args.json.write_text(json.dumps(results, indent=2) + "\n")


if __name__ == "__main__":
    main()
