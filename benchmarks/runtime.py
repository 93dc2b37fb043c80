"""slangrt against the raw Vulkan floor and its peers, same kernels, same machine, one run.

    python benchmarks/runtime.py [--quick] [--out results.md] [--json results.json]

Needs ``slangrt`` importable (``pip install -e runtime`` or ``PYTHONPATH=runtime``) and a Vulkan
device. Peers are measured when importable: wgpu-py (WGSL ports of the kernels, on the same
Vulkan driver), CuPy ``RawKernel`` (CUDA C ports) and PyTorch; a peer that is missing is listed
as such. The raw floor is the same submission as slangrt's (the same SPIR-V, a command buffer
recorded once, submitted and waited for) written directly against the ``vulkan`` package.

Cases: ``a += b`` over 256 floats (dispatch + wait, dispatch without wait, 100 dependent
dispatches in one submission), over 16.8 M floats (bandwidth), ``moe_combine`` (decode-sized
and batch-sized), host <-> device transfers of 256 MiB, the peak RSS of a 1 GiB round trip,
and the start-up of a second process with the on-disk pipeline cache.

Timings are medians over interleaved rounds (each contender once per round, so that drift on a
shared machine hits all alike); ratios are only ever taken between figures of the same run.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

REPO = Path(__file__).resolve().parent.parent
DATA = REPO / "tests" / "runtime" / "data"
sys.path.insert(0, str(REPO / "runtime"))

import slangrt  # noqa: E402
from slangrt import BindingSpec as B  # noqa: E402
from slangrt import _settings  # noqa: E402

TINY = 256
LARGE = 1 << 24
MOE_SHAPES = {"decode": (4096, 8, 1), "batch": (4096, 8, 512)}  # hidden, n_used, n_tokens
TRANSFER = 256 << 20
ROUND_TRIP = 1 << 30

WGSL_ADD = """
@group(0) @binding(0) var<storage, read_write> a: array<f32>;
@group(0) @binding(1) var<storage, read> b: array<f32>;
@group(0) @binding(2) var<storage, read> params: array<u32>;
@compute @workgroup_size(256)
fn main(@builtin(local_invocation_id) lid: vec3<u32>, @builtin(workgroup_id) grp: vec3<u32>) {
    let i = (grp.y * params[1] + grp.x) * 256u + lid.x;
    if (i < params[0]) { a[i] = a[i] + b[i]; }
}
"""
WGSL_MOE = """
@group(0) @binding(0) var<storage, read> z: array<f32>;
@group(0) @binding(1) var<storage, read> w: array<f32>;
@group(0) @binding(2) var<storage, read_write> o: array<f32>;
@group(0) @binding(3) var<storage, read> p: array<vec4<u32>>;
@compute @workgroup_size(256)
fn main(@builtin(local_invocation_id) lid: vec3<u32>, @builtin(workgroup_id) grp: vec3<u32>) {
    let hidden = p[0].x;
    let n_used = p[0].y;
    let row = grp.x * 256u + lid.x;
    let tok = grp.y;
    if (row >= hidden || tok >= p[0].z) { return; }
    var acc = 0.0;
    for (var s = 0u; s < n_used; s = s + 1u) {
        let e = tok * n_used + s;
        acc = acc + w[e] * z[e * hidden + row];
    }
    let d = tok * hidden + row;
    if (p[0].w != 0u) { o[d] = o[d] + acc; } else { o[d] = acc; }
}
"""
CUDA_SRC = r"""
extern "C" __global__ void add_wide(float* a, const float* b, const unsigned* params) {
    unsigned i = (blockIdx.y * params[1] + blockIdx.x) * 256u + threadIdx.x;
    if (i < params[0]) a[i] += b[i];
}
extern "C" __global__ void moe_combine(const float* z, const float* w, float* o, const unsigned* p) {
    unsigned hidden = p[0], n_used = p[1], n_tokens = p[2];
    unsigned row = blockIdx.x * 256u + threadIdx.x, tok = blockIdx.y;
    if (row >= hidden || tok >= n_tokens) return;
    float acc = 0.0f;
    for (unsigned s = 0; s < n_used; ++s) {
        unsigned e = tok * n_used + s;
        acc += w[e] * z[e * hidden + row];
    }
    unsigned d = tok * hidden + row;
    o[d] = p[3] ? o[d] + acc : acc;
}
"""


def log(msg: str) -> None:
    print(msg, flush=True)


def add_grid(n: int) -> tuple[int, int, int]:
    groups = max(1, -(-n // 256))
    gx = min(groups, 32768)
    return gx, -(-groups // gx), 1


def add_params(n: int) -> np.ndarray[Any, Any]:
    return np.array([n, add_grid(n)[0]], np.uint32)


def moe_reference(z: np.ndarray, w: np.ndarray, out: np.ndarray, n_used: int) -> np.ndarray:
    n_tokens, hidden = out.shape
    zz = z.reshape(n_tokens, n_used, hidden).astype(np.float64)
    return out + np.einsum("tu,tuh->th", w.reshape(n_tokens, n_used).astype(np.float64), zz)


class Rounds:
    """Interleaved timing: each round runs every contender once; report medians."""

    def __init__(self, rounds: int) -> None:
        self.rounds = rounds
        self.entries: list[tuple[str, Callable[[], None], int, Callable[[], None] | None]] = []

    def add(
        self, name: str, fn: Callable[[], None], inner: int, after: Callable[[], None] | None = None
    ) -> None:
        self.entries.append((name, fn, inner, after))

    def run(self) -> dict[str, float]:
        samples: dict[str, list[float]] = {name: [] for name, *_ in self.entries}
        for _name, fn, _, after in self.entries:  # warm-up
            fn()
            if after:
                after()
        for _ in range(self.rounds):
            for name, fn, inner, after in self.entries:
                t0 = time.perf_counter()
                for _ in range(inner):
                    fn()
                if after:
                    after()
                samples[name].append((time.perf_counter() - t0) / inner)
        return {name: statistics.median(v) for name, v in samples.items()}


# ---------------------------------------------------------------------------------------------
# The raw Vulkan floor: the same SPIR-V, a command buffer recorded once, submitted and waited.


class RawVulkan:
    def __init__(
        self, dev: slangrt.Device, spirv: bytes, entry: str, buffers: list[Any], grid: tuple[int, int, int]
    ):
        import vulkan as vk

        self.vk = vk
        ffi = vk.ffi
        core = dev._core
        h = self.h = core.handle
        self.queue = core.queue_handle
        self.shader = vk.vkCreateShaderModule(
            h, vk.VkShaderModuleCreateInfo(codeSize=len(spirv), pCode=spirv), None
        )
        lb = [
            vk.VkDescriptorSetLayoutBinding(
                binding=i,
                descriptorType=vk.VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
                descriptorCount=1,
                stageFlags=vk.VK_SHADER_STAGE_COMPUTE_BIT,
            )
            for i in range(len(buffers))
        ]
        self.set_layout = vk.vkCreateDescriptorSetLayout(
            h, vk.VkDescriptorSetLayoutCreateInfo(bindingCount=len(lb), pBindings=lb), None
        )
        self.layout = vk.vkCreatePipelineLayout(
            h, vk.VkPipelineLayoutCreateInfo(setLayoutCount=1, pSetLayouts=[self.set_layout]), None
        )
        stage = vk.VkPipelineShaderStageCreateInfo(
            stage=vk.VK_SHADER_STAGE_COMPUTE_BIT, module=self.shader, pName=entry
        )
        pinfo = vk.VkComputePipelineCreateInfo(stage=stage, layout=self.layout)
        self.pipeline = vk.vkCreateComputePipelines(h, None, 1, [pinfo], None)[0]
        sizes = [
            vk.VkDescriptorPoolSize(type=vk.VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, descriptorCount=len(buffers))
        ]
        self.pool = vk.vkCreateDescriptorPool(
            h, vk.VkDescriptorPoolCreateInfo(maxSets=1, poolSizeCount=1, pPoolSizes=sizes), None
        )
        self.set = vk.vkAllocateDescriptorSets(
            h,
            vk.VkDescriptorSetAllocateInfo(
                descriptorPool=self.pool, descriptorSetCount=1, pSetLayouts=[self.set_layout]
            ),
        )[0]
        infos = [vk.VkDescriptorBufferInfo(buffer=b.buffer, offset=b.offset, range=b.nbytes) for b in buffers]
        writes = [
            vk.VkWriteDescriptorSet(
                dstSet=self.set,
                dstBinding=i,
                descriptorCount=1,
                descriptorType=vk.VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
                pBufferInfo=[info],
            )
            for i, info in enumerate(infos)
        ]
        vk.vkUpdateDescriptorSets(h, len(writes), writes, 0, None)
        self.cmd_pool = vk.vkCreateCommandPool(
            h,
            vk.VkCommandPoolCreateInfo(
                flags=vk.VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT, queueFamilyIndex=core.queue_family
            ),
            None,
        )
        cbs = vk.vkAllocateCommandBuffers(
            h,
            vk.VkCommandBufferAllocateInfo(
                commandPool=self.cmd_pool, level=vk.VK_COMMAND_BUFFER_LEVEL_PRIMARY, commandBufferCount=2
            ),
        )
        self.cb, self.batch_cb = cbs[0], cbs[1]
        self.barrier = vk.VkMemoryBarrier(
            srcAccessMask=vk.VK_ACCESS_SHADER_WRITE_BIT,
            dstAccessMask=vk.VK_ACCESS_SHADER_READ_BIT
            | vk.VK_ACCESS_SHADER_WRITE_BIT
            | vk.VK_ACCESS_HOST_READ_BIT,
        )
        self.grid = grid
        vk.vkBeginCommandBuffer(self.cb, vk.VkCommandBufferBeginInfo())
        self._record(self.cb)
        vk.vkEndCommandBuffer(self.cb)
        self.fence = vk.vkCreateFence(h, vk.VkFenceCreateInfo(), None)
        self.fences = ffi.new("VkFence[1]", [self.fence])
        self.cb_array = ffi.new("VkCommandBuffer[1]", [self.cb])
        self.batch_array = ffi.new("VkCommandBuffer[1]", [self.batch_cb])
        self.submit_info = ffi.new(
            "VkSubmitInfo*",
            {
                "sType": vk.VK_STRUCTURE_TYPE_SUBMIT_INFO,
                "commandBufferCount": 1,
                "pCommandBuffers": self.cb_array,
            },
        )
        self.batch_submit = ffi.new(
            "VkSubmitInfo*",
            {
                "sType": vk.VK_STRUCTURE_TYPE_SUBMIT_INFO,
                "commandBufferCount": 1,
                "pCommandBuffers": self.batch_array,
            },
        )
        self.raw_barrier = ffi.new(
            "VkMemoryBarrier*",
            {
                "sType": vk.VK_STRUCTURE_TYPE_MEMORY_BARRIER,
                "srcAccessMask": vk.VK_ACCESS_SHADER_WRITE_BIT,
                "dstAccessMask": vk.VK_ACCESS_SHADER_READ_BIT | vk.VK_ACCESS_SHADER_WRITE_BIT,
            },
        )
        self.sets = ffi.new("VkDescriptorSet[1]", [self.set])
        # The same submission signalling a timeline semaphore (what slangrt waits on) instead.
        type_info = ffi.new(
            "VkSemaphoreTypeCreateInfo*",
            {
                "sType": vk.VK_STRUCTURE_TYPE_SEMAPHORE_TYPE_CREATE_INFO,
                "semaphoreType": vk.VK_SEMAPHORE_TYPE_TIMELINE,
            },
        )
        sem_info = ffi.new(
            "VkSemaphoreCreateInfo*",
            {"sType": vk.VK_STRUCTURE_TYPE_SEMAPHORE_CREATE_INFO, "pNext": type_info},
        )
        out = ffi.new("VkSemaphore*")
        vk.lib.vkCreateSemaphore(h, sem_info, ffi.NULL, out)
        self.timeline = out[0]
        self.timeline_value = 0
        self.signal = ffi.new("uint64_t[1]")
        self.counter = ffi.new("uint64_t*")
        self.timeline_array = ffi.new("VkSemaphore[1]", [self.timeline])
        self.timeline_info = ffi.new(
            "VkTimelineSemaphoreSubmitInfo*",
            {
                "sType": vk.VK_STRUCTURE_TYPE_TIMELINE_SEMAPHORE_SUBMIT_INFO,
                "signalSemaphoreValueCount": 1,
                "pSignalSemaphoreValues": self.signal,
            },
        )
        self.timeline_submit = ffi.new(
            "VkSubmitInfo*",
            {
                "sType": vk.VK_STRUCTURE_TYPE_SUBMIT_INFO,
                "pNext": self.timeline_info,
                "commandBufferCount": 1,
                "pCommandBuffers": self.cb_array,
                "signalSemaphoreCount": 1,
                "pSignalSemaphores": self.timeline_array,
            },
        )
        self.begin = ffi.new(
            "VkCommandBufferBeginInfo*",
            {
                "sType": vk.VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO,
                "flags": vk.VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT,
            },
        )

    def _record(self, cb: Any) -> None:
        vk = self.vk
        vk.vkCmdBindPipeline(cb, vk.VK_PIPELINE_BIND_POINT_COMPUTE, self.pipeline)
        vk.vkCmdBindDescriptorSets(
            cb, vk.VK_PIPELINE_BIND_POINT_COMPUTE, self.layout, 0, 1, [self.set], 0, None
        )
        vk.vkCmdDispatch(cb, *self.grid)
        vk.vkCmdPipelineBarrier(
            cb,
            vk.VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
            vk.VK_PIPELINE_STAGE_HOST_BIT | vk.VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
            0, 1, [self.barrier], 0, None, 0, None,
        )  # fmt: skip

    def _wait(self, spin: bool) -> None:
        lib = self.vk.lib
        if spin:
            while lib.vkGetFenceStatus(self.h, self.fence) != 0:
                pass
        else:
            lib.vkWaitForFences(self.h, 1, self.fences, 1, 10**10)
        lib.vkResetFences(self.h, 1, self.fences)

    def submit_wait(self, spin: bool) -> None:
        self.vk.lib.vkQueueSubmit(self.queue, 1, self.submit_info, self.fence)
        self._wait(spin)

    def submit_wait_timeline(self) -> None:
        lib = self.vk.lib
        self.timeline_value += 1
        self.signal[0] = self.timeline_value
        lib.vkQueueSubmit(self.queue, 1, self.timeline_submit, self.vk.ffi.NULL)
        while True:
            lib.vkGetSemaphoreCounterValue(self.h, self.timeline, self.counter)
            if self.counter[0] >= self.timeline_value:
                return

    def batch(self, n: int) -> None:
        """Record n dependent dispatches with barriers (raw cffi calls), submit, wait (spin)."""
        vk = self.vk
        lib = vk.lib
        ffi = vk.ffi
        cb = self.batch_cb
        lib.vkResetCommandBuffer(cb, 0)
        lib.vkBeginCommandBuffer(cb, self.begin)
        lib.vkCmdBindPipeline(cb, 1, self.pipeline)
        lib.vkCmdBindDescriptorSets(cb, 1, self.layout, 0, 1, self.sets, 0, ffi.NULL)
        gx, gy, gz = self.grid
        for _ in range(n):
            lib.vkCmdDispatch(cb, gx, gy, gz)
            lib.vkCmdPipelineBarrier(cb, 0x800, 0x800, 0, 1, self.raw_barrier, 0, ffi.NULL, 0, ffi.NULL)
        lib.vkEndCommandBuffer(cb)
        lib.vkQueueSubmit(self.queue, 1, self.batch_submit, self.fence)
        self._wait(True)

    def close(self) -> None:
        vk = self.vk
        h = self.h
        vk.vkDeviceWaitIdle(h)
        vk.vkDestroyFence(h, self.fence, None)
        vk.lib.vkDestroySemaphore(h, self.timeline, vk.ffi.NULL)
        vk.vkDestroyCommandPool(h, self.cmd_pool, None)
        vk.vkDestroyDescriptorPool(h, self.pool, None)
        vk.vkDestroyPipeline(h, self.pipeline, None)
        vk.vkDestroyPipelineLayout(h, self.layout, None)
        vk.vkDestroyDescriptorSetLayout(h, self.set_layout, None)
        vk.vkDestroyShaderModule(h, self.shader, None)


# ---------------------------------------------------------------------------------------------
# Peers


class Wgpu:
    def __init__(self) -> None:
        import wgpu

        self.wgpu = wgpu
        adapter = wgpu.gpu.request_adapter_sync(power_preference="high-performance")
        self.name = f"{adapter.info['device']} ({adapter.info['backend_type']})"
        limits = adapter.limits
        self.device = adapter.request_device_sync(
            required_limits={
                "max-buffer-size": limits["max-buffer-size"],
                "max-storage-buffer-binding-size": limits["max-storage-buffer-binding-size"],
            }
        )
        self.max_buffer = limits["max-buffer-size"]
        self.add = self._pipeline(WGSL_ADD)
        self.moe = self._pipeline(WGSL_MOE)

    def _pipeline(self, code: str) -> Any:
        d = self.device
        module = d.create_shader_module(code=code)
        return d.create_compute_pipeline(layout="auto", compute={"module": module, "entry_point": "main"})

    def buffer(self, arr: np.ndarray) -> Any:
        u = self.wgpu.BufferUsage
        return self.device.create_buffer_with_data(data=arr, usage=u.STORAGE | u.COPY_SRC | u.COPY_DST)

    def bind(self, pipeline: Any, buffers: list[Any]) -> Any:
        layout = pipeline.get_bind_group_layout(0)
        entries = [
            {"binding": i, "resource": {"buffer": b, "offset": 0, "size": b.size}}
            for i, b in enumerate(buffers)
        ]
        return self.device.create_bind_group(layout=layout, entries=entries)

    def dispatch(self, pipeline: Any, group: Any, grid: tuple[int, int, int], n: int = 1) -> None:
        enc = self.device.create_command_encoder()
        p = enc.begin_compute_pass()
        p.set_pipeline(pipeline)
        p.set_bind_group(0, group)
        for _ in range(n):
            p.dispatch_workgroups(*grid)
        p.end()
        self.device.queue.submit([enc.finish()])

    def wait(self) -> None:
        # wgpuDevicePoll(wait=True): blocks until all submitted work is done. (wgpu-py 0.32's
        # queue.on_submitted_work_done_sync() fails against its own wgpu-native.)
        self.device._poll_wait()

    def read(self, buf: Any) -> np.ndarray:
        return np.frombuffer(self.device.queue.read_buffer(buf), np.float32)


class Cuda:
    def __init__(self) -> None:
        import cupy as cp

        self.cp = cp
        mod = cp.RawModule(code=CUDA_SRC)
        self.add = mod.get_function("add_wide")
        self.moe = mod.get_function("moe_combine")
        self.stream = cp.cuda.get_current_stream()
        self.name = cp.cuda.runtime.getDeviceProperties(0)["name"].decode()

    def sync(self) -> None:
        self.stream.synchronize()

    def event_time(self, fn: Callable[[], None], n: int) -> float:
        cp = self.cp
        start, end = cp.cuda.Event(), cp.cuda.Event()
        times = []
        for _ in range(5):
            start.record()
            for _ in range(n):
                fn()
            end.record()
            end.synchronize()
            times.append(cp.cuda.get_elapsed_time(start, end) / 1e3 / n)
        return statistics.median(times)


# ---------------------------------------------------------------------------------------------


def kernel(
    name: str, bindings: list[B], threads: tuple[int, int, int], dev: slangrt.Device
) -> slangrt.Kernel:
    return slangrt.Kernel((DATA / f"{name}.spv").read_bytes(), name, bindings, threads, device=dev, name=name)


ADD_B = [B(0, "a", "storage", True), B(1, "b", "storage", False), B(2, "params", "storage", False)]
MOE_B = [
    B(0, "z", "storage", False),
    B(1, "sel_weight", "storage", False),
    B(2, "out", "storage", True),
    B(3, "params", "storage", False),
]


class Bench:
    def __init__(self, quick: bool) -> None:
        self.quick = quick
        self.rounds = 5 if quick else 11
        self.results: dict[str, Any] = {
            "env": {},
            "tiny": {},
            "batch": {},
            "large": {},
            "moe": {},
            "transfer": {},
        }
        self.notes: list[str] = []
        self.dev = slangrt.device()
        self.add = kernel("add_wide", ADD_B, (256, 1, 1), self.dev)
        self.moe = kernel("moe_combine", MOE_B, (256, 1, 1), self.dev)
        self.wg: Wgpu | None = None
        self.cu: Cuda | None = None
        self.torch: Any = None
        try:
            self.wg = Wgpu()
        except Exception as exc:
            self.notes.append(f"wgpu-py not measured: {type(exc).__name__}: {exc}")
        try:
            self.cu = Cuda()
        except Exception as exc:
            self.notes.append(f"CuPy not measured: {type(exc).__name__}: {str(exc)[:120]}")
        try:
            import torch

            if torch.cuda.is_available():
                self.torch = torch
            else:
                self.notes.append("PyTorch not measured: no CUDA device")
        except Exception as exc:
            self.notes.append(f"PyTorch not measured: {type(exc).__name__}: {exc}")
        env = self.results["env"]
        env["device"] = f"{self.dev.info.name} ({self.dev.info.type}, {self.dev.info.driver})"
        env["memory"] = (
            "direct (host-mapped device memory)" if self.dev.direct_memory else "device-local + staging"
        )
        env["python"] = platform.python_version()
        env["numpy"] = np.__version__
        env["cpus"] = os.cpu_count()
        env["wgpu"] = self.wg.name if self.wg else None
        env["cuda"] = self.cu.name if self.cu else None
        env["torch"] = self.torch.__version__ if self.torch else None

    # -- tiny ------------------------------------------------------------------------------------

    def tiny(self) -> None:
        log("== tiny a += b (256 floats)")
        dev, queue = self.dev, self.dev.parts.queue
        n = TINY
        grid = add_grid(n)
        host_a = np.zeros(n, np.float32)
        host_b = np.ones(n, np.float32)
        params = add_params(n)
        ta, tb, tp = (slangrt.Tensor.from_numpy(x) for x in (host_a, host_b, params))
        buf = {0: ta, 1: tb, 2: tp}
        npbuf = {0: host_a, 1: host_b, 2: params}
        raw = RawVulkan(
            dev, (DATA / "add_wide.spv").read_bytes(), "add_wide", [ta._alloc, tb._alloc, tp._alloc], grid
        )
        k = self.add
        default_spin = queue.spin_s

        def ours_wait() -> None:
            k.dispatch(buf, grid)
            dev.synchronize()

        def ours_sleep() -> None:
            queue.spin_s = 0.0
            k.dispatch(buf, grid)
            dev.synchronize()
            queue.spin_s = default_spin

        def ours_spin() -> None:
            queue.spin_s = 200e-6
            k.dispatch(buf, grid)
            dev.synchronize()
            queue.spin_s = default_spin

        inner = 200 if self.quick else 1000
        r = Rounds(self.rounds)
        r.add("raw vulkan, fence spin", lambda: raw.submit_wait(True), inner)
        r.add("raw vulkan, fence sleep", lambda: raw.submit_wait(False), inner)
        r.add("raw vulkan, timeline semaphore spin", raw.submit_wait_timeline, inner)
        r.add("slangrt Tensor args + synchronize()", ours_wait, inner)
        r.add("slangrt Tensor args, wait sleeps at once", ours_sleep, inner)
        r.add("slangrt Tensor args, wait polls 200 µs first", ours_spin, inner)
        r.add("slangrt NumPy args (waits, copies back)", lambda: k.dispatch(npbuf, grid), inner)
        r.add("slangrt Tensor args, no wait", lambda: k.dispatch(buf, grid), inner, dev.synchronize)
        wg = self.wg
        if wg:
            wa, wb, wp = wg.buffer(host_a), wg.buffer(host_b), wg.buffer(params)
            group = wg.bind(wg.add, [wa, wb, wp])

            def wg_wait() -> None:
                wg.dispatch(wg.add, group, grid)
                wg.wait()

            r.add("wgpu-py dispatch + wait", wg_wait, max(20, inner // 10))
            r.add("wgpu-py dispatch, no wait", lambda: wg.dispatch(wg.add, group, grid), inner // 4, wg.wait)
        cu = self.cu
        if cu:
            cp = cu.cp
            ca, cb_, cpar = cp.asarray(host_a), cp.asarray(host_b), cp.asarray(params)
            args = (ca, cb_, cpar)

            def cu_wait() -> None:
                cu.add(grid[:2], (256,), args)
                cu.sync()

            r.add("CuPy RawKernel launch + sync", cu_wait, inner)
            r.add("CuPy RawKernel launch, no sync", lambda: cu.add(grid[:2], (256,), args), inner, cu.sync)
        torch = self.torch
        if torch:
            xa = torch.zeros(n, device="cuda")
            xb = torch.ones(n, device="cuda")

            def t_wait() -> None:
                xa.add_(xb)
                torch.cuda.synchronize()

            r.add("PyTorch add_ + synchronize", t_wait, inner)
            r.add("PyTorch add_, no sync", lambda: xa.add_(xb), inner, torch.cuda.synchronize)
        res = {name: t * 1e6 for name, t in r.run().items()}
        self.results["tiny"] = res
        # correctness: everything above added b to a some number of times
        got = ta.numpy()
        assert np.all(got == got[0]) and got[0] > 0, "slangrt tiny add went wrong"

        log("== batched: 100 dependent dispatches")
        nb = 100

        def ours_batch() -> None:
            with slangrt.batch():
                for _ in range(nb):
                    k.dispatch(buf, grid)
            dev.synchronize()

        def ours_unbatched() -> None:
            for _ in range(nb):
                k.dispatch(buf, grid)
            dev.synchronize()

        def ours_numpy_loop() -> None:
            for _ in range(nb):
                k.dispatch(npbuf, grid)

        def ours_batch_flushing() -> None:
            with _settings.overridden(batch_flush=16):
                ours_batch()

        r = Rounds(self.rounds)
        inner_b = 3 if self.quick else 10
        r.add("raw vulkan: record 100 + barriers, submit, spin", lambda: raw.batch(nb), inner_b)
        r.add("slangrt batch(): 100 dispatches + synchronize()", ours_batch, inner_b)
        r.add("slangrt batch(), submitting every 16 (SLANGRT_BATCH_FLUSH=16)", ours_batch_flushing, inner_b)
        r.add("slangrt 100 dispatches (Tensors, no batch) + synchronize()", ours_unbatched, inner_b)
        r.add("slangrt 100 dispatches with NumPy args", ours_numpy_loop, max(1, inner_b // 2))
        if wg:

            def wg_batch() -> None:
                wg.dispatch(wg.add, group, grid, nb)
                wg.wait()

            r.add("wgpu-py: 100 dispatches in one pass + wait", wg_batch, inner_b)
        if cu:

            def cu_batch() -> None:
                for _ in range(nb):
                    cu.add(grid[:2], (256,), args)
                cu.sync()

            r.add("CuPy: 100 launches + sync", cu_batch, inner_b)
        if torch:

            def t_batch() -> None:
                for _ in range(nb):
                    xa.add_(xb)
                torch.cuda.synchronize()

            r.add("PyTorch: 100 add_ + synchronize", t_batch, inner_b)
        self.results["batch"] = {name: t / nb * 1e6 for name, t in r.run().items()}
        raw.close()
        for t in (ta, tb, tp):
            t.close()

    # -- large -----------------------------------------------------------------------------------

    def large(self) -> None:
        log("== large a += b (16.8 M floats)")
        dev = self.dev
        n = LARGE
        grid = add_grid(n)
        nbytes = 3 * 4 * n
        rng = np.random.default_rng(0)
        host_a = rng.standard_normal(n, dtype=np.float32)
        host_b = rng.standard_normal(n, dtype=np.float32)
        params = add_params(n)
        ta, tb, tp = (slangrt.Tensor.from_numpy(x) for x in (host_a, host_b, params))
        buf = {0: ta, 1: tb, 2: tp}
        k = self.add
        reps = 5 if self.quick else 20
        res: dict[str, Any] = {}
        k.dispatch(buf, grid)
        res["slangrt max error vs NumPy"] = float(np.abs(ta.numpy() - (host_a + host_b)).max())
        with slangrt.profile() as p:
            for _ in range(reps):
                k.dispatch(buf, grid)
        gpu = statistics.median(r.gpu_ns for r in p.records) * 1e-9
        res["slangrt (GPU timestamps)"] = (gpu, nbytes / gpu / 1e9)
        r = Rounds(self.rounds if not self.quick else 3)

        def ours() -> None:
            k.dispatch(buf, grid)

        r.add("slangrt (wall clock, 1 dispatch + sync)", ours, reps, dev.synchronize)
        wg = self.wg
        if wg:
            wa, wb, wp = wg.buffer(host_a), wg.buffer(host_b), wg.buffer(params)
            group = wg.bind(wg.add, [wa, wb, wp])
            r.add("wgpu-py (wall clock)", lambda: wg.dispatch(wg.add, group, grid), reps, wg.wait)
        wall = r.run()
        for name, t in wall.items():
            res[name] = (t, nbytes / t / 1e9)
        cu = self.cu
        if cu:
            cp = cu.cp
            ca, cb_, cpar = cp.asarray(host_a), cp.asarray(host_b), cp.asarray(params)
            t = cu.event_time(lambda: cu.add(grid[:2], (256,), (ca, cb_, cpar)), reps)
            res["CuPy RawKernel (CUDA events)"] = (t, nbytes / t / 1e9)
            del ca, cb_, cpar
        torch = self.torch
        if torch:
            xa = torch.from_numpy(host_a).cuda()
            xb = torch.from_numpy(host_b).cuda()
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            times = []
            for _ in range(5):
                start.record()
                for _ in range(reps):
                    xa.add_(xb)
                end.record()
                end.synchronize()
                times.append(start.elapsed_time(end) / 1e3 / reps)
            t = statistics.median(times)
            res["PyTorch add_ (CUDA events)"] = (t, nbytes / t / 1e9)
            del xa, xb
        self.results["large"] = res
        for t_ in (ta, tb, tp):
            t_.close()

    # -- moe_combine -----------------------------------------------------------------------------

    def moe_case(self, label: str, hidden: int, n_used: int, n_tokens: int) -> None:
        log(f"== moe_combine {label}: hidden={hidden} n_used={n_used} n_tokens={n_tokens}")
        dev = self.dev
        rng = np.random.default_rng(1)
        n_entries = n_tokens * n_used
        z = rng.standard_normal((n_entries, hidden), dtype=np.float32)
        w = rng.random(n_entries, dtype=np.float32)
        out = rng.standard_normal((n_tokens, hidden), dtype=np.float32)
        params = np.array([hidden, n_used, n_tokens, 1], np.uint32)
        grid = (-(-hidden // 256), n_tokens, 1)
        nbytes = z.nbytes + w.nbytes + 2 * out.nbytes
        tz, tw, to, tp = (slangrt.Tensor.from_numpy(x) for x in (z, w, out, params))
        buf = {0: tz, 1: tw, 2: to, 3: tp}
        k = self.moe
        res: dict[str, Any] = {"bytes": nbytes}
        # correctness, once
        check = out.copy()
        k.dispatch({0: z, 1: w, 2: check, 3: params}, grid)
        ref = moe_reference(z, w, out, n_used)
        res["slangrt max error vs float64 NumPy"] = float(np.abs(check - ref).max())
        reps = 5 if self.quick else 20
        k.dispatch(buf, grid)
        with slangrt.profile() as p:
            for _ in range(reps):
                k.dispatch(buf, grid)
        gpu = statistics.median(r.gpu_ns for r in p.records) * 1e-9
        res["slangrt GPU time (timestamps)"] = (gpu, nbytes / gpu / 1e9)
        r = Rounds(self.rounds)
        inner = 20 if n_tokens > 64 else 200
        if self.quick:
            inner = max(5, inner // 4)

        def ours_wait() -> None:
            k.dispatch(buf, grid)
            dev.synchronize()

        r.add("slangrt Tensor args, dispatch + wait", ours_wait, inner)
        out_host = out.copy()
        r.add(
            "slangrt NumPy args (upload, run, copy back)",
            lambda: k.dispatch({0: z, 1: w, 2: out_host, 3: params}, grid),
            max(3, inner // 4),
        )
        wg = self.wg
        if wg:
            bufs = [wg.buffer(x) for x in (z, w, out, params)]
            group = wg.bind(wg.moe, bufs)

            def wg_wait() -> None:
                wg.dispatch(wg.moe, group, grid)
                wg.wait()

            r.add("wgpu-py dispatch + wait", wg_wait, max(5, inner // 10))
        cu = self.cu
        if cu:
            cp = cu.cp
            cz, cw, co, cpar = (cp.asarray(x) for x in (z, w, out, params))

            def cu_wait() -> None:
                cu.moe(grid[:2], (256,), (cz, cw, co, cpar))
                cu.sync()

            r.add("CuPy RawKernel launch + sync", cu_wait, inner)
        torch = self.torch
        if torch:
            xz = torch.from_numpy(z).cuda().view(n_tokens, n_used, hidden)
            xw = torch.from_numpy(w).cuda().view(n_tokens, 1, n_used)
            xo = torch.from_numpy(out).cuda()

            def t_wait() -> None:
                xo.add_(torch.bmm(xw, xz).view(n_tokens, hidden))
                torch.cuda.synchronize()

            r.add("PyTorch bmm + add_ + synchronize", t_wait, inner)
        for name, t in r.run().items():
            res[name] = (t, nbytes / t / 1e9)
        if cu:
            t = cu.event_time(lambda: cu.moe(grid[:2], (256,), (cz, cw, co, cpar)), reps)
            res["CuPy RawKernel GPU time (CUDA events)"] = (t, nbytes / t / 1e9)
        self.results["moe"][label] = res
        for t_ in (tz, tw, to, tp):
            t_.close()

    # -- transfers -------------------------------------------------------------------------------

    def transfers(self) -> None:
        log("== transfers: 256 MiB")
        dev = self.dev
        n = TRANSFER // 4
        src = np.random.default_rng(2).standard_normal(n, dtype=np.float32)
        dst = np.empty_like(src)
        dst[...] = 0
        t = slangrt.Tensor.from_numpy(src)
        res: dict[str, Any] = {}
        r = Rounds(3 if self.quick else 7)
        r.add("NumPy copy into a new array (np.copy)", lambda: np.copy(src), 1)
        r.add("NumPy copy into an existing array (np.copyto)", lambda: np.copyto(dst, src), 1)

        def up_new() -> None:
            x = slangrt.Tensor.from_numpy(src)
            dev.synchronize()
            x.close()

        def up_existing() -> None:
            t.copy_from(src)
            dev.synchronize()

        r.add("slangrt upload: Tensor.from_numpy (new tensor)", up_new, 1)
        r.add("slangrt upload: Tensor.copy_from (existing tensor)", up_existing, 1)
        r.add("slangrt download: Tensor.numpy() (new array)", lambda: t.numpy(), 1)
        r.add("slangrt download: Tensor.numpy(out=) (existing array)", lambda: t.numpy(out=dst), 1)
        mem = dev.parts.memory
        if not mem.direct:
            # Variants: twice the copy threads; the GPU copying the array's own pages
            # (SLANGRT_HOST_IMPORT=1) instead of staging.
            import_default = mem._import_ok
            threads_default = _settings.get().copy_threads

            def variant(fn: Callable[[], Any], threads: int, host_import: bool) -> Callable[[], None]:
                def run() -> None:
                    mem._import_ok = host_import
                    try:
                        with _settings.overridden(copy_threads=threads):
                            fn()
                    finally:
                        mem._import_ok = import_default

                return run

            label = f"staged, {2 * threads_default} copy threads"
            r.add(f"slangrt upload: copy_from, {label}", variant(up_existing, 2 * threads_default, False), 1)
            r.add(
                f"slangrt download: numpy(out=), {label}",
                variant(lambda: t.numpy(out=dst), 2 * threads_default, False),
                1,
            )
            if mem._get_host_properties is not None:
                label = "imported host pages (SLANGRT_HOST_IMPORT=1)"
                r.add(f"slangrt upload: from_numpy, {label}", variant(up_new, threads_default, True), 1)
                r.add(f"slangrt upload: copy_from, {label}", variant(up_existing, threads_default, True), 1)
                r.add(
                    f"slangrt download: numpy(), {label}",
                    variant(lambda: t.numpy(), threads_default, True),
                    1,
                )
                r.add(
                    f"slangrt download: numpy(out=), {label}",
                    variant(lambda: t.numpy(out=dst), threads_default, True),
                    1,
                )
            self.results["env"]["copy threads"] = threads_default
        torch = self.torch
        if torch:
            xt = torch.empty(n, device="cuda")
            hsrc = torch.from_numpy(src)
            hdst = torch.from_numpy(dst)

            def t_up() -> None:
                xt.copy_(hsrc)
                torch.cuda.synchronize()

            def t_down() -> None:
                hdst.copy_(xt)
                torch.cuda.synchronize()

            r.add("PyTorch upload (pageable, existing)", t_up, 1)
            r.add("PyTorch download (pageable, existing)", t_down, 1)
        cu = self.cu
        if cu:
            cp = cu.cp
            r.add("CuPy upload: cp.asarray (new)", lambda: (cp.asarray(src), cu.sync()), 1)
            cx = cp.asarray(src)
            r.add("CuPy download: cp.asnumpy (new)", lambda: cp.asnumpy(cx), 1)
        wg = self.wg
        if wg and wg.max_buffer >= TRANSFER:
            wbuf = wg.buffer(src)

            def wg_up() -> None:
                wg.device.queue.write_buffer(wbuf, 0, src)
                wg.wait()

            r.add("wgpu-py upload: queue.write_buffer (existing)", wg_up, 1)
            r.add("wgpu-py download: queue.read_buffer", lambda: wg.device.queue.read_buffer(wbuf), 1)
        for name, sec in r.run().items():
            res[name] = (sec, TRANSFER / sec / 1e9)
        np.testing.assert_array_equal(t.numpy(), src)
        t.close()
        res["round trip 1 GiB: peak RSS over baseline (GiB)"] = self.rss_round_trip()
        self.results["transfer"] = res

    def rss_round_trip(self) -> float:
        code = textwrap.dedent(
            f"""
            import sys, numpy as np
            sys.path.insert(0, {str(REPO / "runtime")!r})
            import slangrt
            slangrt.device()
            def status(key):
                for line in open("/proc/self/status"):
                    if line.startswith(key + ":"):
                        return int(line.split()[1]) * 1024
            src = np.ones({ROUND_TRIP // 4}, np.float32)  # the caller's data: part of the baseline
            base = status("VmRSS")
            try:
                with open("/proc/self/clear_refs", "w") as f:
                    f.write("5")  # reset the peak (VmHWM) to the current RSS
            except OSError:
                base = status("VmHWM")  # cannot reset: measure from the peak so far
            t = slangrt.Tensor.from_numpy(src)
            out = t.numpy()
            assert out[0] == 1 and out[-1] == 1
            print((status("VmHWM") - base) / 2**30, status("VmHWM") / 2**30, base / 2**30)
            """
        )
        proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
        if proc.returncode:
            self.notes.append(f"RSS round trip failed: {proc.stderr[-300:]}")
            return float("nan")
        growth, peak, base = (float(x) for x in proc.stdout.split())
        self.notes.append(f"1 GiB round trip: RSS {base:.2f} GiB with the source array, peak {peak:.2f} GiB")
        return growth

    # -- start-up --------------------------------------------------------------------------------

    def startup(self) -> None:
        log("== start-up of a fresh process, pipeline cache empty vs populated")
        code = textwrap.dedent(
            f"""
            import sys, time, numpy as np
            sys.path.insert(0, {str(REPO / "runtime")!r})
            t0 = time.perf_counter()
            import slangrt
            from slangrt import BindingSpec as B
            dev = slangrt.device()
            t1 = time.perf_counter()
            k = slangrt.Kernel(open({str(DATA / "moe_combine.spv")!r}, "rb").read(), "moe_combine",
                [B(0, "z", "storage", False), B(1, "w", "storage", False), B(2, "o", "storage", True),
                 B(3, "p", "storage", False)], (256, 1, 1))
            out = np.zeros((1, 256), np.float32)
            k.dispatch({{0: np.ones((1, 256), np.float32), 1: np.ones(1, np.float32), 2: out,
                        3: np.array([256, 1, 1, 0], np.uint32)}}, (1, 1, 1))
            t2 = time.perf_counter()
            print(t1 - t0, t2 - t1, dev._core.pipeline_cache.loaded_bytes)
            """
        )
        res: dict[str, Any] = {}
        with tempfile.TemporaryDirectory() as tmp:
            env = dict(os.environ, SLANGRT_CACHE_DIR=tmp)
            for label in ("first process (empty cache)", "second process (cache on disk)"):
                proc = subprocess.run(
                    [sys.executable, "-c", code], capture_output=True, text=True, env=env, check=False
                )
                if proc.returncode:
                    self.notes.append(f"start-up run failed: {proc.stderr[-300:]}")
                    return
                open_s, first_s, loaded = proc.stdout.split()
                res[label] = (float(open_s), float(first_s), int(loaded))
        self.results["startup"] = res


# ---------------------------------------------------------------------------------------------
# Report


def ratio(a: float | None, b: float | None) -> str:
    if a is None or b is None or not b:
        return "n/a"
    return f"{a / b:.2f}x"


def report(results: dict[str, Any], notes: list[str], command: str) -> str:
    env = results["env"]
    out: list[str] = []
    w = out.append
    w(f"Device: {env['device']}; memory: {env['memory']}; {env['cpus']} CPUs; Python {env['python']}, "
      f"NumPy {env['numpy']}; wgpu-py: {env['wgpu'] or 'absent'}; CUDA: {env['cuda'] or 'absent'}; "
      f"PyTorch: {env['torch'] or 'absent'}.")  # fmt: skip
    w("")
    w(f"Command: `{command}`")
    w("")
    tiny = results["tiny"]
    w("Tiny `a += b` (256 floats), microseconds per call (median of interleaved rounds):")
    w("")
    w("| path | µs |")
    w("| --- | ---: |")
    for name, us in tiny.items():
        w(f"| {name} | {us:.1f} |")
    w("")
    floor = min(tiny.get("raw vulkan, fence spin", 1e9), tiny.get("raw vulkan, fence sleep", 1e9))
    ours = tiny.get("slangrt Tensor args + synchronize()")
    nowait = tiny.get("slangrt Tensor args, no wait")
    wgw, wgn = tiny.get("wgpu-py dispatch + wait"), tiny.get("wgpu-py dispatch, no wait")
    cuw = tiny.get("CuPy RawKernel launch + sync")
    batch = results["batch"]
    ob = batch.get("slangrt batch(): 100 dispatches + synchronize()")
    ou = batch.get("slangrt 100 dispatches (Tensors, no batch) + synchronize()")
    w("Batched, microseconds per dispatch (100 dependent dispatches, including the final wait):")
    w("")
    w("| path | µs per dispatch |")
    w("| --- | ---: |")
    for name, us in batch.items():
        w(f"| {name} | {us:.1f} |")
    w("")
    large = results["large"]
    w("Large `a += b` (16.8 M floats, 3 × 4 bytes × N moved):")
    w("")
    w("| path | ms | GB/s |")
    w("| --- | ---: | ---: |")
    for name, v in large.items():
        if isinstance(v, tuple):
            w(f"| {name} | {v[0] * 1e3:.3f} | {v[1]:.0f} |")
    w("")
    w(f"slangrt max error vs NumPy: {large.get('slangrt max error vs NumPy')}")
    w("")
    for label, res in results["moe"].items():
        w(f"moe_combine, {label} ({res['bytes'] / 2**20:.1f} MiB moved per call):")
        w("")
        w("| path | µs | GB/s |")
        w("| --- | ---: | ---: |")
        for name, v in res.items():
            if isinstance(v, tuple):
                w(f"| {name} | {v[0] * 1e6:.1f} | {v[1]:.1f} |")
        w("")
        w(f"slangrt max error vs float64 NumPy: {res['slangrt max error vs float64 NumPy']:.2e}")
        w("")
    tr = results["transfer"]
    w("Transfers, 256 MiB:")
    w("")
    w("| path | ms | GB/s |")
    w("| --- | ---: | ---: |")
    for name, v in tr.items():
        if isinstance(v, tuple):
            w(f"| {name} | {v[0] * 1e3:.1f} | {v[1]:.1f} |")
    rss = tr.get("round trip 1 GiB: peak RSS over baseline (GiB)", float("nan"))
    w("")
    w(f"1 GiB round trip (`Tensor.from_numpy(src).numpy()`): peak RSS {rss:.2f} GiB over the baseline "
      "(the process with `src` allocated).")  # fmt: skip
    w("")
    st = results.get("startup")
    if st:
        w("Start-up (fresh process: import + open device; then first moe_combine: pipeline + dispatch):")
        w("")
        w("| run | open device s | first dispatch s | cache bytes loaded |")
        w("| --- | ---: | ---: | ---: |")
        for name, (a, b, c) in st.items():
            w(f"| {name} | {a:.3f} | {b:.3f} | {c} |")
        w("")
    w("Targets (ratios within this run):")
    w("")
    w("| target | measured | met |")
    w("| --- | --- | --- |")

    def row(what: str, value: str, ok: bool | None) -> None:
        w(f"| {what} | {value} | {'n/a' if ok is None else ('yes' if ok else 'NO')} |")

    if wgw and ours:
        row("tiny dispatch + wait ≤ 0.4× wgpu-py", ratio(ours, wgw), ours / wgw <= 0.4)
    if ours:
        row(
            "tiny dispatch + wait ≤ 1.3× raw Vulkan floor",
            f"{ratio(ours, floor)} (floor {floor:.1f} µs)",
            ours / floor <= 1.3,
        )
    if cuw and ours:
        row("moonshot: tiny dispatch + wait ≤ 3× CuPy launch + sync", ratio(ours, cuw), ours / cuw <= 3)
    if wgn and nowait:
        row("tiny dispatch without wait ≤ 0.5× wgpu-py", ratio(nowait, wgn), nowait / wgn <= 0.5)
    if ob:
        row("batched ≤ 15 µs per dispatch (H200)", f"{ob:.1f} µs", ob <= 15 if env["cuda"] else None)
    if ob and ou:
        row("batch() under half the per-call cost of unbatched calls", ratio(ob, ou), ob / ou < 0.5)
    cu_large = large.get("CuPy RawKernel (CUDA events)")
    ours_large = large.get("slangrt (GPU timestamps)")
    if cu_large and ours_large:
        row(
            "large kernel ≥ 0.95× CuPy RawKernel bandwidth",
            ratio(ours_large[1], cu_large[1]),
            ours_large[1] / cu_large[1] >= 0.95,
        )
    np_new = tr.get("NumPy copy into a new array (np.copy)")
    np_old = tr.get("NumPy copy into an existing array (np.copyto)")
    for key, base in (
        ("slangrt upload: Tensor.copy_from (existing tensor)", np_old),
        ("slangrt download: Tensor.numpy(out=) (existing array)", np_old),
        ("slangrt upload: Tensor.from_numpy (new tensor)", np_new),
        ("slangrt download: Tensor.numpy() (new array)", np_new),
    ):
        v = tr.get(key)
        if v and base:
            what = key.split(": ", 1)[1]
            if env["cuda"]:
                row(f"256 MiB {what} ≥ 20 GB/s (H200)", f"{v[1]:.1f} GB/s", v[1] >= 20)
            else:
                row(f"256 MiB {what} ≥ 0.5× the same NumPy copy", ratio(v[1], base[1]), v[1] / base[1] >= 0.5)
    if rss == rss:
        row("1 GiB round trip peak RSS ≤ baseline + 2.2 GiB", f"+{rss:.2f} GiB", rss <= 2.2)
    if notes:
        w("")
        for note in notes:
            w(f"- {note}")
    return "\n".join(out)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="fewer rounds (for a smoke run)")
    ap.add_argument("--out", type=Path, help="write the Markdown report here too")
    ap.add_argument("--json", type=Path, help="write the raw results as JSON")
    ap.add_argument("--skip", default="", help="comma-separated: tiny,large,moe,transfer,startup")
    ap.add_argument("--report-from", type=Path, help="only print the report of an earlier --json file")
    args = ap.parse_args()
    if args.report_from:
        saved = json.loads(args.report_from.read_text())
        for section in ("large", "transfer"):
            saved[section] = {k: tuple(v) if isinstance(v, list) else v for k, v in saved[section].items()}
        for res in saved["moe"].values():
            res.update({k: tuple(v) for k, v in res.items() if isinstance(v, list)})
        if "startup" in saved:
            saved["startup"] = {k: tuple(v) for k, v in saved["startup"].items()}
        print(report(saved, saved.get("notes", []), saved.get("command", "python3 benchmarks/runtime.py")))
        return
    skip = set(filter(None, args.skip.split(",")))
    bench = Bench(args.quick)
    log(f"device: {bench.results['env']['device']}")
    steps: list[tuple[str, Callable[[], None]]] = [
        ("tiny", bench.tiny),
        ("large", bench.large),
        *[("moe", lambda s=s, lab=lab: bench.moe_case(lab, *s)) for lab, s in MOE_SHAPES.items()],
        ("transfer", bench.transfers),
        ("startup", bench.startup),
    ]
    for name, step in steps:
        if name in skip:
            continue
        try:
            step()
        except Exception as exc:
            import traceback

            traceback.print_exc()
            bench.notes.append(f"{name} failed: {type(exc).__name__}: {exc}")
    command = "python3 benchmarks/runtime.py" + (" --quick" if args.quick else "")
    bench.results["notes"] = bench.notes
    bench.results["command"] = command
    text = report(bench.results, bench.notes, command)
    print(text)
    if args.out:
        args.out.write_text(text + "\n")
    if args.json:
        args.json.write_text(json.dumps(bench.results, indent=1, default=str))
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20
    log(f"(benchmark process peak RSS {peak:.1f} GiB)")


if __name__ == "__main__":
    main()
