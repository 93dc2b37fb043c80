"""Image transfers beside buffer transfers: ``slangrt.Image`` against ``slangrt.Tensor``, same bytes.

    python benchmarks/images.py [--quick] [--sizes MIB ...] [--mip-size N] [--rounds N]
                                [--out FILE] [--json FILE]

Needs only ``slangrt`` and NumPy (``PYTHONPATH=runtime``: no compiler, no built kernels) and a
Vulkan device. For each format (2-D ``rgba8``: uint8, 4 channels, ``texel="float"``, so UNORM;
2-D ``r32f``: float32, 1 channel; 2-D ``rgba32f``; 3-D float32, 1 channel) and each size (about
1, 16 and 256 MiB; ``--quick``: 1 and 16) it times, on one host array:

- upload into a new object: ``Image.from_numpy`` against ``Tensor.from_numpy``;
- upload into an existing one: ``Image.write`` against ``Tensor.copy_from``;
- download into a new array: ``Image.numpy()`` against ``Tensor.numpy()``;

each upload followed by ``Device.synchronize()`` (the device copy is part of the time). Before
anything is timed, each round trip must give the array back (``np.array_equal``). Then
``Image.generate_mips()`` on a ``--mip-size`` square (default 4096) ``rgba8`` image with its
full chain, time per call, against building the same chain on the host with NumPy (2x2 means)
and uploading it with ``Image.write``; level 1 is first compared with the host's.

Timings are medians over interleaved rounds (each contender once per round, so that drift on a
shared machine hits all alike); GB/s are the array's bytes over the time; ``image/tensor`` is
the image's GB/s over the tensor's of the same bytes in the same run (above 1: the image is
faster). Ratios are only ever taken between figures of the same run.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import math
import os
import platform
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "runtime"))

import slangrt  # noqa: E402

_spec = importlib.util.spec_from_file_location("runtime_bench", ROOT / "benchmarks" / "runtime.py")
assert _spec is not None and _spec.loader is not None
rt = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(rt)  # Rounds: the interleaved timing of runtime.py

MIB = 1 << 20


@dataclass(frozen=True)
class Fmt:
    """One image format of the table: how its host array is made and read."""

    name: str
    kind: str  # "2d" or "3d"
    dtype: type[np.generic]
    channels: int
    texel: str | None

    @property
    def texel_bytes(self) -> int:
        return int(np.dtype(self.dtype).itemsize) * self.channels


FORMATS = (
    Fmt("rgba8", "2d", np.uint8, 4, "float"),
    Fmt("r32f", "2d", np.float32, 1, None),
    Fmt("rgba32f", "2d", np.float32, 4, None),
    Fmt("r32f 3-D", "3d", np.float32, 1, None),
)
OPS = (
    ("upload, new", "Image.from_numpy", "Tensor.from_numpy"),
    ("upload, existing", "Image.write", "Tensor.copy_from"),
    ("download, new array", "Image.numpy()", "Tensor.numpy()"),
)


def shape_for(fmt: Fmt, mib: float) -> tuple[int, ...]:
    """A power-of-two shape of about ``mib`` MiB, its axes as even as can be (outer ones larger)."""
    texels = max(1.0, mib * MIB / fmt.texel_bytes)
    bits = max(0, round(math.log2(texels)))
    axes = 3 if fmt.kind == "3d" else 2
    dims = tuple(1 << (bits // axes + (1 if i < bits % axes else 0)) for i in range(axes))
    return dims + ((fmt.channels,) if fmt.channels > 1 else ())


def host_array(fmt: Fmt, shape: tuple[int, ...], rng: np.random.Generator) -> np.ndarray[Any, Any]:
    if fmt.dtype is np.uint8:
        return rng.integers(0, 256, size=shape, dtype=np.uint8)
    return rng.standard_normal(shape, dtype=np.float32)


# -- transfers -----------------------------------------------------------------------------------


def _image(src: np.ndarray[Any, Any], fmt: Fmt) -> slangrt.Image:
    return slangrt.Image.from_numpy(src, kind=fmt.kind, texel=fmt.texel)  # type: ignore[arg-type]


def check_round_trips(src: np.ndarray[Any, Any], fmt: Fmt) -> tuple[list[str], str]:
    """What did not come back as it went in (empty: every round trip gave ``src`` back), and
    the image's ``VkFormat``."""
    bad = []
    with _image(src, fmt) as img:
        vk = img.format
        if not np.array_equal(img.numpy(), src):
            bad.append(f"Image.from_numpy(...).numpy() of {fmt.name} {src.shape} differs")
        img.write(src[::-1].copy())
        if not np.array_equal(img.numpy(), src[::-1]):
            bad.append(f"Image.write then numpy() of {fmt.name} {src.shape} differs")
    t = slangrt.Tensor.from_numpy(src)
    if not np.array_equal(t.numpy(), src):
        bad.append(f"Tensor.from_numpy(...).numpy() of {fmt.name} {src.shape} differs")
    t.close()
    return bad, vk


def time_transfers(src: np.ndarray[Any, Any], fmt: Fmt, rounds: int) -> dict[str, float]:
    """Seconds per call of each op, ``"<op>|image"`` and ``"<op>|tensor"`` (medians)."""
    dev = slangrt.device()
    img, t = _image(src, fmt), slangrt.Tensor.from_numpy(src)

    def new_image() -> None:
        x = _image(src, fmt)
        dev.synchronize()
        x.close()

    def new_tensor() -> None:
        x = slangrt.Tensor.from_numpy(src)
        dev.synchronize()
        x.close()

    def write_image() -> None:
        img.write(src)
        dev.synchronize()

    def write_tensor() -> None:
        t.copy_from(src)
        dev.synchronize()

    fns: dict[str, Callable[[], Any]] = {
        "upload, new|image": new_image,
        "upload, new|tensor": new_tensor,
        "upload, existing|image": write_image,
        "upload, existing|tensor": write_tensor,
        "download, new array|image": img.numpy,
        "download, new array|tensor": t.numpy,
    }
    r = rt.Rounds(rounds)
    for name, fn in fns.items():
        r.add(name, fn, 1)
    try:
        return dict(r.run())
    finally:
        img.close()
        t.close()


# -- mips ----------------------------------------------------------------------------------------


def host_chain(level0: np.ndarray[Any, Any]) -> list[np.ndarray[Any, Any]]:
    """The mip chain of a (H, W, C) uint8 array on the host: each level the rounded 2x2 means."""
    chain = [level0]
    cur = level0.astype(np.float32)
    while cur.shape[0] > 1 or cur.shape[1] > 1:
        h, w = max(1, cur.shape[0] // 2), max(1, cur.shape[1] // 2)
        fh, fw = cur.shape[0] // h, cur.shape[1] // w
        cur = cur[: h * fh, : w * fw].reshape(h, fh, w, fw, -1).mean(axis=(1, 3))
        chain.append(np.rint(cur).astype(np.uint8))
    return chain


def mips(size: int, rounds: int, rng: np.random.Generator) -> dict[str, Any]:
    """``generate_mips()`` on a ``size`` square rgba8 image against the host's chain + write."""
    dev = slangrt.device()
    src = rng.integers(0, 256, size=(size, size, 4), dtype=np.uint8)
    chain = host_chain(src)
    out: dict[str, Any] = {"shape": src.shape, "levels": len(chain)}
    img = slangrt.Image.from_numpy(src, texel="float", mip_levels=len(chain))
    try:
        img.generate_mips()
        if len(chain) > 1:
            diff = np.abs(img.numpy(1).astype(np.int16) - chain[1].astype(np.int16))
            out["level 1 max |diff| vs host"] = int(diff.max())

        def on_device() -> None:
            img.generate_mips()
            dev.synchronize()

        def on_host() -> None:
            img.write(host_chain(src))
            dev.synchronize()

        r = rt.Rounds(rounds)
        r.add("Image.generate_mips()", on_device, 1)
        r.add("host: NumPy 2x2 means + Image.write(chain)", on_host, 1)
        out.update(r.run())
    finally:
        img.close()
    # Each blit reads one level and writes the next: all levels but the last, all but the first.
    sizes = [a.nbytes for a in chain]
    out["bytes"] = sum(sizes[:-1]) + sum(sizes[1:])
    return out


# -- report --------------------------------------------------------------------------------------


def _ms(sec: float | None) -> str:
    return "n/a" if sec is None else f"{sec * 1e3:.2f}"


def _gbs(nbytes: int, sec: float | None) -> float | None:
    return nbytes / sec / 1e9 if sec else None


def _num(v: float | None, spec: str) -> str:
    return "n/a" if v is None else format(v, spec)


def transfer_lines(data: dict[str, Any]) -> list[str]:
    out = [
        "| format | VkFormat | shape | MiB | path | image ms | image GB/s | tensor ms | tensor GB/s "
        "| image/tensor |",
        "| --- | --- | --- | ---: | --- | ---: | ---: | ---: | ---: | ---: |",
    ]
    for case in data["cases"]:
        key, nbytes = case["key"], case["bytes"]
        for op, image_api, tensor_api in OPS:
            im, te = data.get(f"{key}|{op}|image"), data.get(f"{key}|{op}|tensor")
            gi, gt = _gbs(nbytes, im), _gbs(nbytes, te)
            ratio = gi / gt if gi and gt else None
            out.append(
                f"| {case['format']} | {case['vk']} | {case['shape']} | {nbytes / MIB:.2f} "
                f"| {op}: `{image_api}` vs `{tensor_api}` | {_ms(im)} | {_num(gi, '.2f')} "
                f"| {_ms(te)} | {_num(gt, '.2f')} | {_num(ratio, '.2f')} |"
            )
    return out


def mip_lines(m: dict[str, Any]) -> list[str]:
    dev_s = m.get("Image.generate_mips()")
    host_s = m.get("host: NumPy 2x2 means + Image.write(chain)")
    vs = host_s / dev_s if dev_s and host_s else None
    shape = "x".join(map(str, m["shape"]))
    return [
        f"Mips: a {shape} rgba8 image (VK_FORMAT_R8G8B8A8_UNORM), {m['levels']} levels; "
        f"{m['bytes'] / MIB:.1f} MiB read + written by the blits; level 1 against the host's "
        f"2x2 means: max |diff| {m.get('level 1 max |diff| vs host', 'n/a')} (of 255).",
        "",
        "| path | ms per call | GB/s | host / this |",
        "| --- | ---: | ---: | ---: |",
        f"| `Image.generate_mips()` | {_ms(dev_s)} | {_num(_gbs(m['bytes'], dev_s), '.2f')} "
        f"| {_num(vs, '.2f')} |",
        f"| host: NumPy 2x2 means + `Image.write(chain)` | {_ms(host_s)} | | 1.00 |",
    ]


def report(data: dict[str, Any]) -> str:
    env = data["env"]
    out = [f"- {k}: {v}" for k, v in env.items()]
    out += [
        "",
        f"Transfers, seconds per call as medians of {data['rounds']} interleaved rounds; each upload "
        "includes `Device.synchronize()`; image/tensor: the image's GB/s over the tensor's:",
        "",
        *transfer_lines(data),
    ]
    if "mips" in data:
        out += ["", *mip_lines(data["mips"])]
    ok = "every round trip gave the array back" + (
        "; mip level 1 within 1 of the host's 2x2 means" if "mips" in data else ""
    )
    out += ["", "Checks before timing: " + ("; ".join(data["failed"]) or ok)]
    return "\n".join(out) + "\n"


# -- main ----------------------------------------------------------------------------------------


def _args() -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="sizes 1 and 16 MiB, fewer rounds (a smoke run)")
    ap.add_argument("--sizes", type=float, nargs="+", help="array sizes in MiB (default 1 16 256)")
    ap.add_argument("--mip-size", type=int, default=4096, help="side of the mips image (0: skip)")
    ap.add_argument("--rounds", type=int, help="interleaved rounds (default 7; --quick 3)")
    ap.add_argument("--out", type=Path, help="also write the Markdown report here")
    ap.add_argument("--json", type=Path, help="write the figures as JSON here")
    args = ap.parse_args()
    if args.sizes and not all(s > 0 for s in args.sizes):
        ap.error(f"--sizes must be positive MiB, got {args.sizes}")
    if args.mip_size < 0 or (args.rounds is not None and args.rounds < 1):
        ap.error("--mip-size must be >= 0 and --rounds >= 1")
    return args


def environment(command: str, rounds: int) -> dict[str, str]:
    dev = slangrt.device()
    info = dev.info
    memory = "direct (host-mapped device memory)" if dev.direct_memory else "device-local + staging"
    return {
        "device": f"{info.name} ({info.type}, driver {info.driver}, Vulkan {info.api_version})",
        "memory": memory,
        "host": f"{platform.node() or '?'}, {os.cpu_count()} CPUs, Python {platform.python_version()}, "
        f"NumPy {np.__version__}",
        "slangrt": f"{slangrt.__version__} ({Path(slangrt.__file__).parent})",
        "rounds": str(rounds),
        "command": f"`{command}`",
    }


def run_case(data: dict[str, Any], fmt: Fmt, mib: float, rounds: int, rng: np.random.Generator) -> None:
    shape = shape_for(fmt, mib)
    src = host_array(fmt, shape, rng)
    key = f"transfer|{fmt.name} {'x'.join(map(str, shape))}"
    bad, vk = check_round_trips(src, fmt)
    data["cases"].append({"key": key, "format": fmt.name, "vk": vk, "shape": shape, "bytes": src.nbytes})
    data["failed"] += bad
    if bad:
        return
    for name, sec in time_transfers(src, fmt, rounds).items():
        data[f"{key}|{name}"] = sec
    print(f"{key}: done", file=sys.stderr, flush=True)


def main() -> int:
    args = _args()
    sizes = args.sizes or ([1.0, 16.0] if args.quick else [1.0, 16.0, 256.0])
    rounds = args.rounds or (3 if args.quick else 7)
    command = "python benchmarks/images.py" + " ".join(["", *sys.argv[1:]])
    data: dict[str, Any] = {"env": environment(command, rounds), "rounds": rounds, "cases": [], "failed": []}
    rng = np.random.default_rng(0)
    for fmt in FORMATS:
        for mib in sizes:
            run_case(data, fmt, mib, rounds, rng)
    if args.mip_size:
        m = mips(args.mip_size, rounds, rng)
        data["mips"] = m
        data.update({f"mips|{k}": v for k, v in m.items() if isinstance(v, float)})
        off = m.get("level 1 max |diff| vs host", 0)
        if off > 1:
            data["failed"].append(f"generate_mips: level 1 is off the host's 2x2 means by up to {off}")
    text = report(data)
    print(text)
    if args.out:
        args.out.write_text(text)
    if args.json:
        args.json.write_text(json.dumps(data, indent=1, default=str))
    return 1 if data["failed"] else 0


if __name__ == "__main__":
    sys.exit(main())
