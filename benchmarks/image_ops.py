"""Image kernels against PyTorch on one GPU: a bilinear resize and a 3x3 blur of an RGBA image.

    python benchmarks/image_ops.py --spirv DIR [--size WxH] [--reps N] [--check] [--no-torch]
                                   [--only NAME ...] [--out FILE] [--json FILE]
    python benchmarks/image_ops.py --compile DIR [...]   (compile here first, then run)

The kernels are ``benchmarks/image_ops/*.slang`` (``resize``: ``Texture2D<float4>`` sampled with
a linear clamp-to-edge sampler at each output texel's centre; ``blur3x3``: the 1-2-1 binomial
blur by ``Load``, texels outside the image counting as 0), each compiled once per written
format: ``rgba32f``, ``rgba16f``, ``rgba8`` (UNORM). ``--compile DIR`` compiles them with
hatch-slang's compiler driver (it needs slangpy) into ``DIR/<kernel>_<format>.spv``; ``--spirv
DIR`` takes SPIR-V compiled before, for a machine without slangpy (the runtime and NumPy only).

For ``--size WxH`` (default 3840x2160) it times, on one Vulkan device: the resize to half and
to double the size, and the blur at the size; each in float32, and (ours only) rgba16f and
rgba8, inputs and outputs device-resident (``slangrt.Image``). Against it, on CUDA in the same
process: ``torch.nn.functional.interpolate(mode="bilinear", align_corners=False)`` and a
depthwise ``conv2d`` (padding 1) on ``(1, 4, H, W)`` CUDA tensors, float32 and float16.

- ``GPU us``: the median GPU time of one call, from ``slangrt.profile()``'s timestamps
  (``--reps`` calls in one ``slangrt.batch()``); torch's from CUDA events around each call;
- ``wall us``: the median wall-clock time of one call waited for (``Device.synchronize()``,
  ``torch.cuda.synchronize()``): launch and Python overhead included;
- ``GB/s``: the source's and the output's bytes over the GPU time;
- ``torch/ours GPU``, ``torch/ours wall``: torch's time over ours, against torch at the same
  precision where it has one (float32, float16; rgba8 against float32): above 1, ours is faster.

``--check`` first compares every output with a NumPy reference (``hatch_slang.images`` for the
sampling; tolerances from the filter's sub-texel precision and the format's rounding), and
with torch's where torch runs; use it at a small ``--size`` (a CPU device such as lavapipe).
Without torch (or CUDA), only our figures, saying so. Ratios are only ever taken between
figures of the same run.
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "runtime")]

import slangrt  # noqa: E402
from slangrt import BindingSpec, Image, Kernel, Sampler  # noqa: E402

KERNELS = ROOT / "benchmarks" / "image_ops"
# Our formats: name -> (host dtype, the define that picks the written format, torch's dtype name).
FORMATS: dict[str, tuple[type[np.generic], str | None, str]] = {
    "rgba32f": (np.float32, None, "float32"),
    "rgba16f": (np.float16, "OUT_RGBA16F", "float16"),
    "rgba8": (np.uint8, "OUT_RGBA8", "float32"),
}
OPS = ("resize_down", "resize_up", "blur3x3")
THREADS = (16, 16, 1)


def bindings(kernel: str, fmt: str) -> list[BindingSpec]:
    """What the kernel binds (the runtime checks these against the SPIR-V)."""
    src = BindingSpec(0, "src", "sampled_image", False, dim="2d", texel="float")
    if kernel == "resize":
        dst = BindingSpec(2, "dst", "storage_image", True, dim="2d", format=fmt, texel="float")
        return [src, BindingSpec(1, "samp", "sampler", False), dst]
    return [src, BindingSpec(1, "dst", "storage_image", True, dim="2d", format=fmt, texel="float")]


# -- SPIR-V --------------------------------------------------------------------------------------


def compile_all(out: Path) -> None:
    """Compile every kernel for every format into ``out`` (needs hatch-slang's compiler: slangpy)."""
    from hatch_slang.compile.compiler import CompileJob, CompileOptions, CompilerPool
    from hatch_slang.spec.reflection import normalize_spirv

    out.mkdir(parents=True, exist_ok=True)
    todo = [(k, f) for k in ("resize", "blur3x3") for f in FORMATS]
    jobs = []
    for kernel, fmt in todo:
        define = FORMATS[fmt][1]
        options = CompileOptions(defines=((define, ""),) if define else ())
        jobs.append(CompileJob(f"{kernel}.slang", (kernel,), options, str(KERNELS)))
    with CompilerPool() as pool:
        results = pool.compile(jobs)
    for (kernel, fmt), res in zip(todo, results, strict=True):
        if res.error is not None:
            sys.exit(f"compiling {kernel} for {fmt}: {res.error}")
        (out / f"{kernel}_{fmt}.spv").write_bytes(normalize_spirv(res.entries[0].spirv))
    print(f"wrote {len(todo)} SPIR-V files to {out}", file=sys.stderr)


def load_kernels(spirv: Path) -> dict[tuple[str, str], Kernel]:
    out = {}
    for kernel in ("resize", "blur3x3"):
        for fmt in FORMATS:
            path = spirv / f"{kernel}_{fmt}.spv"
            if not path.is_file():
                sys.exit(f"--spirv {spirv}: {path.name} is missing (make it with --compile DIR)")
            out[kernel, fmt] = Kernel(path.read_bytes(), kernel, bindings(kernel, fmt), THREADS)
    return out


# -- our side ------------------------------------------------------------------------------------


def host_image(h: int, w: int, fmt: str, rng: np.random.Generator) -> np.ndarray[Any, Any]:
    """An (H, W, 4) source: uint8 for rgba8 (read as UNORM), else values in [0, 1)."""
    dtype = FORMATS[fmt][0]
    if dtype is np.uint8:
        return rng.integers(0, 256, (h, w, 4), dtype=np.uint8)
    return rng.random((h, w, 4), dtype=np.float32).astype(dtype)


def out_shape(op: str, h: int, w: int) -> tuple[int, int]:
    return {"resize_down": (h // 2, w // 2), "resize_up": (h * 2, w * 2)}.get(op, (h, w))


@dataclass
class Ours:
    """One op in one format on our side: its kernel, device-resident images, and the call."""

    kernel: Kernel
    src: Image
    dst: Image
    sampler: Sampler

    def args(self) -> dict[int, Any]:
        if self.kernel.entry == "resize":
            return {0: self.src, 1: self.sampler, 2: self.dst}
        return {0: self.src, 1: self.dst}

    def call(self) -> None:
        oh, ow = self.dst.shape[:2]
        self.kernel.dispatch(self.args(), (-(-ow // THREADS[0]), -(-oh // THREADS[1]), 1))


def make_ours(kernels: dict[tuple[str, str], Kernel], op: str, fmt: str, host: np.ndarray[Any, Any]) -> Ours:
    kernel = kernels["blur3x3" if op == "blur3x3" else "resize", fmt]
    oh, ow = out_shape(op, *host.shape[:2])
    src = Image.from_numpy(host, texel="float")
    dst = Image.empty((oh, ow, 4), host.dtype, texel="float", format=fmt)
    return Ours(kernel, src, dst, Sampler("linear", "clamp"))


def time_ours(o: Ours, reps: int) -> tuple[float, float]:
    """(median GPU us, median wall us) of one call."""
    dev = slangrt.device()
    o.call()  # pipeline creation and first touch, outside the timing
    dev.synchronize()
    with slangrt.profile() as prof, slangrt.batch():
        for _ in range(reps):
            o.call()
    gpu = statistics.median(r.gpu_ns for r in prof.records) / 1e3
    walls = []
    for _ in range(reps):
        start = time.perf_counter()
        o.call()
        dev.synchronize()
        walls.append(time.perf_counter() - start)
    return gpu, statistics.median(walls) * 1e6


# -- torch ---------------------------------------------------------------------------------------


class Torch:
    """PyTorch on CUDA, when present: the same-run baseline."""

    device = "cuda"

    def __init__(self, enabled: bool) -> None:
        self.torch: Any = None
        self.reason = "disabled (--no-torch)"
        if not enabled:
            return
        try:
            import torch
        except ImportError:
            self.reason = "not installed: our figures only"
            return
        if not torch.cuda.is_available():
            self.reason = "no CUDA device: our figures only"
            return
        self.torch = torch
        self.reason = f"torch {torch.__version__} on {torch.cuda.get_device_name()}"

    def __bool__(self) -> bool:
        return self.torch is not None

    def op(self, op: str, host: np.ndarray[Any, Any], dtype: str) -> Callable[[], Any]:
        """The op on a (1, 4, H, W) CUDA tensor of ``host`` (UNORM bytes as c / 255)."""
        torch, F = self.torch, self.torch.nn.functional
        arr = host / np.float32(255) if host.dtype == np.uint8 else host
        x = torch.from_numpy(np.ascontiguousarray(arr.transpose(2, 0, 1)[None])).to(
            self.device, getattr(torch, dtype)
        )
        if op == "blur3x3":
            taps = torch.tensor([0.25, 0.5, 0.25], device=x.device, dtype=x.dtype)
            weight = (taps[:, None] * taps[None, :]).expand(4, 1, 3, 3).contiguous()
            return lambda: F.conv2d(x, weight, padding=1, groups=4)
        size = out_shape(op, *host.shape[:2])
        return lambda: F.interpolate(x, size=size, mode="bilinear", align_corners=False)

    def time_us(self, fn: Callable[[], Any], reps: int) -> tuple[float, float]:
        """(median GPU us from CUDA events around each call, median wall us of one call waited for)."""
        torch = self.torch
        fn()
        torch.cuda.synchronize()
        events = [
            (torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in range(reps)
        ]
        for start, end in events:
            start.record()
            fn()
            end.record()
        torch.cuda.synchronize()
        gpu = statistics.median(s.elapsed_time(e) for s, e in events) * 1e3
        walls = []
        for _ in range(reps):
            t0 = time.perf_counter()
            fn()
            torch.cuda.synchronize()
            walls.append(time.perf_counter() - t0)
        return gpu, statistics.median(walls) * 1e6


# -- checks --------------------------------------------------------------------------------------


def reference(op: str, host: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
    """The op in float64 with NumPy (hatch_slang.images for the sampler), on texels as read."""
    from hatch_slang import images as hi

    src = hi.unorm(host) if host.dtype == np.uint8 else host.astype(np.float64)
    h, w = host.shape[:2]
    if op == "blur3x3":
        taps = np.array([0.25, 0.5, 0.25])
        pad = np.pad(src, ((1, 1), (1, 1), (0, 0)))
        return sum(  # type: ignore[return-value]
            taps[j] * taps[i] * pad[j : j + h, i : i + w] for j in range(3) for i in range(3)
        )
    oh, ow = out_shape(op, h, w)
    s, t = np.meshgrid(hi.texel_centers(ow), hi.texel_centers(oh))
    return hi.sample_bilinear(src, s, t, address="clamp")


def tolerance(op: str, host: np.ndarray[Any, Any], fmt: str) -> float:
    """The filter's sub-texel precision (resize) plus one unit in the last place of the written
    format (Vulkan lets a store to float16 round toward zero, and a UNORM conversion be off by
    more than half a step): values here stay below 1."""
    from hatch_slang import images as hi

    src = hi.unorm(host) if host.dtype == np.uint8 else host.astype(np.float64)
    tol = hi.filter_tolerance(src) if op != "blur3x3" else 1e-5
    return tol + {"rgba8": 1 / 255 + 1e-6, "rgba16f": 2.0**-11 + 1e-6}.get(fmt, 0.0)


def check(
    o: Ours, op: str, fmt: str, host: np.ndarray[Any, Any], th: Torch
) -> tuple[float, float, list[str]]:
    """(ours' max error against NumPy, its tolerance, what is off: ours, and torch's float32,
    against NumPy; empty: all within)."""
    o.call()
    got = o.dst.numpy()
    got = got / np.float64(255) if got.dtype == np.uint8 else got.astype(np.float64)
    want = reference(op, host)
    tol = tolerance(op, host, fmt)
    bad = []
    err = float(np.max(np.abs(got - want)))
    if not err <= tol:
        bad.append(f"{op} {fmt}: ours is off NumPy by {err:.3g} (tolerance {tol:.3g})")
    if th and fmt == "rgba32f":
        ref = th.op(op, host, "float32")().cpu().numpy()[0].transpose(1, 2, 0)
        terr = float(np.max(np.abs(ref - want)))
        if not terr <= 1e-5:
            bad.append(f"{op}: torch float32 is off NumPy by {terr:.3g}")
    return err, tol, bad


# -- the run -------------------------------------------------------------------------------------


@dataclass
class Row:
    op: str
    shape: str  # source HxW -> output HxW
    fmt: str  # ours: rgba32f / rgba16f / rgba8; torch: float32 / float16
    side: str  # "slangrt" or "torch"
    gpu_us: float
    wall_us: float
    mb: float  # source + output bytes
    torch_over_ours: float | None = None  # torch's GPU time over ours (above 1: ours faster)
    torch_over_ours_wall: float | None = None  # the same of the wall times
    check_err: float | None = None  # --check: max |ours - NumPy| (texels as read: UNORM as c/255)
    check_tol: float | None = None


def run_op(
    kernels: dict[tuple[str, str], Kernel],
    op: str,
    size: tuple[int, int],
    args: argparse.Namespace,
    th: Torch,
) -> tuple[list[Row], list[str]]:
    """Every format of one op, ours then torch's, and what --check found off."""
    h, w = size
    oh, ow = out_shape(op, h, w)
    shape = f"{h}x{w} -> {oh}x{ow}"
    rng = np.random.default_rng(22)
    rows, bad = [], []
    torch_times: dict[str, tuple[float, float]] = {}
    for dtype in ("float32", "float16") if th else ():
        host = host_image(h, w, "rgba32f", rng).astype(dtype)
        gpu, wall = th.time_us(th.op(op, host, dtype), args.reps)
        mb = (h * w + oh * ow) * 4 * np.dtype(dtype).itemsize / 1e6
        rows.append(Row(op, shape, dtype, "torch", gpu, wall, mb))
        torch_times[dtype] = gpu, wall
    for fmt in FORMATS:
        host = host_image(h, w, fmt, rng)
        o = make_ours(kernels, op, fmt, host)
        err = tol = None
        try:
            if args.check:
                err, tol, off = check(o, op, fmt, host, th)
                bad += off
            gpu, wall = time_ours(o, args.reps)
        finally:
            o.src.close()
            o.dst.close()
        base = torch_times.get(FORMATS[fmt][2])
        mb = (h * w + oh * ow) * 4 * host.itemsize / 1e6
        ratios = (base[0] / gpu, base[1] / wall) if base else (None, None)
        rows.append(Row(op, shape, fmt, "slangrt", gpu, wall, mb, *ratios, err, tol))
        print(f"{op} {fmt}: done", file=sys.stderr, flush=True)
    return rows, bad


def table(rows: list[Row]) -> list[str]:
    out = [
        "| op | shape | format | side | GPU us | wall us | MB | GB/s | torch/ours GPU | torch/ours wall "
        "| max err (tol) |",
        "| --- | --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | --- |",
    ]
    for r in rows:
        ratio = "" if r.torch_over_ours is None else f"{r.torch_over_ours:.2f}"
        wall = "" if r.torch_over_ours_wall is None else f"{r.torch_over_ours_wall:.2f}"
        checked = "" if r.check_err is None else f"{r.check_err:.2g} ({r.check_tol:.2g})"
        out.append(
            f"| {r.op} | {r.shape} | {r.fmt} | {r.side} | {r.gpu_us:.1f} | {r.wall_us:.1f} "
            f"| {r.mb:.1f} | {r.mb / 1e3 / (r.gpu_us / 1e6):.1f} | {ratio} | {wall} | {checked} |"
        )
    return out


def environment(th: Torch, args: argparse.Namespace) -> dict[str, str]:
    info = slangrt.device().info
    return {
        "device": f"{info.name} ({info.type}, driver {info.driver}, Vulkan {info.api_version})",
        "torch": th.reason,
        "host": f"{platform.node() or '?'}, Python {platform.python_version()}, NumPy {np.__version__}",
        "reps": str(args.reps),
        "command": "`python benchmarks/image_ops.py" + " ".join(["", *sys.argv[1:]]) + "`",
    }


def _size(text: str) -> tuple[int, int]:
    """``WxH`` -> (H, W)."""
    try:
        w, h = (int(v) for v in text.lower().split("x"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected WxH such as 3840x2160, got {text!r}") from None
    if w < 2 or h < 2:
        raise argparse.ArgumentTypeError(f"expected at least 2x2, got {text!r}")
    return h, w


def _args() -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    where = ap.add_mutually_exclusive_group(required=True)
    where.add_argument("--spirv", type=Path, help="the precompiled SPIR-V (from --compile)")
    where.add_argument("--compile", type=Path, help="compile the kernels into this folder first")
    ap.add_argument("--size", type=_size, default=(2160, 3840), help="the source, WxH (default 3840x2160)")
    ap.add_argument("--reps", type=int, default=20, help="calls timed per figure (median; default 20)")
    ap.add_argument("--check", action="store_true", help="compare with NumPy (and torch) first")
    ap.add_argument("--no-torch", action="store_true", help="our figures only")
    ap.add_argument("--only", nargs="+", choices=OPS, help="these ops only")
    ap.add_argument("--out", type=Path, help="also write the Markdown report here")
    ap.add_argument("--json", type=Path, help="write the figures as JSON here")
    args = ap.parse_args()
    if args.reps < 1:
        ap.error(f"--reps must be at least 1, got {args.reps}")
    return args


def main() -> int:
    args = _args()
    if args.compile:
        compile_all(args.compile)
    kernels = load_kernels(args.compile or args.spirv)
    th = Torch(not args.no_torch)
    rows: list[Row] = []
    bad: list[str] = []
    for op in args.only or OPS:
        r, b = run_op(kernels, op, args.size, args, th)
        rows += r
        bad += b
    env = environment(th, args)
    checked = ("; ".join(bad) or "every output within tolerance of NumPy") if args.check else "not run"
    text = "\n".join([*(f"- {k}: {v}" for k, v in env.items()), f"- checks: {checked}", "", *table(rows)])
    print(text)
    if args.out:
        args.out.write_text(text + "\n")
    data = {"env": env, "checks": bad if args.check else None, "rows": [asdict(r) for r in rows]}
    if args.json:
        args.json.write_text(json.dumps(data, indent=1))
    else:
        print("\n" + json.dumps(data))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
