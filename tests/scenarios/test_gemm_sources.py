"""The library GEMMs' operand sources agree with themselves on lavapipe: what the cooperative-matrix
path stages (``decode(load(...))``, split so that the loads are in flight during a stage's
products) is bit for bit what ``fetch_h`` gives (the f16 words of ``fetch``'s values, which the
tiled path's validation covers), for every operand, row and 8-value chunk of k, past the end of
k included.

lavapipe has no cooperative matrices, so the coopmat entries themselves run only on a GPU
(``hatch-slang validate`` there); this checks the part of them that is no tensor-core code. Each
shader is copied with a probe entry appended (its own binding and Dispatch line), built, and run.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import numpy as np
import pytest

from ..helpers import REPO, built_package, requires_device

pytestmark = [pytest.mark.compile, requires_device]

ROWS_X, ROWS_W, K = 3, 5, 96
CHUNKS = K // 8 + 2  # (the last two past k)

_PROBE = """
[[vk::binding({binding})]] RWStructuredBuffer<uint4> probe_out : register(u{binding});

{entries}
"""
_ENTRY = """
[shader("compute")]
[numthreads(256, 1, 1)]
void {name}(uint3 tid : SV_DispatchThreadID, uniform uint rows_x, uniform uint rows_w, uniform uint k_total)
{{
    uint chunks = k_total / 8 + 2;
    uint rows = max(rows_x, rows_w);
    uint op = tid.x / (rows * chunks);
    uint row = (tid.x / chunks) % rows;
    uint k = (tid.x % chunks) * 8;
    if (op > 1 || row >= (op == 0 ? rows_x : rows_w))
        return;
    probe_out[2 * tid.x] = {src}.fetch_h(op, row, k, k_total);
    probe_out[2 * tid.x + 1] = {src}.decode(op, {src}.load(op, row, k, k_total));
}}
"""
# shader -> (its first free binding, {probe entry: the source it probes})
SHADERS = {
    "gemm_f16": (4, {"probe": "Operands"}),
    "gemm_q8_0": (5, {"probe_f32": "Operands<f32>", "probe_f16": "Operands<f16>"}),
    "gemm_q4_0": (5, {"probe_f32": "Operands<f32>", "probe_f16": "Operands<f16>"}),
}


def _project(tmp: Path, shader: str) -> Path:
    root = tmp / "probe"
    (root / "shaders").mkdir(parents=True)
    (root / "probepkg").mkdir()
    (root / "probepkg" / "__init__.py").write_text("")
    shutil.copytree(REPO / "shaders" / "lib", root / "shaders" / "lib")
    (root / "pyproject.toml").write_text(
        '[build-system]\nrequires = ["hatchling", "hatch-slang"]\nbuild-backend = "hatchling.build"\n'
        '[project]\nname = "probepkg"\nversion = "0.1.0"\n'
        '[tool.hatch.build.targets.wheel]\npackages = ["probepkg"]\n'
        '[tool.hatch.build.hooks.slang]\nshaders = ["shaders/*.slang"]\npackage = "probepkg/kernels"\n'
    )
    binding, probes = SHADERS[shader]
    text = (REPO / "shaders" / f"{shader}.slang").read_text()
    names = " ".join(probes)
    text = re.sub(r"^// slang-entries: ", f"// slang-entries: {names}\n// slang-entries: ", text, count=1)
    line = f"//   u{binding}: probe_out  u32, flat[probe_len] each chunk's two f16 words\n"
    dispatch = f"// Dispatch ({', '.join(probes)}): (4) threadgroups of 256.\n"
    text = text.replace("//\n// Dispatch: ", line + "//\n" + dispatch + "// Dispatch: ", 1)
    entries = "".join(_ENTRY.format(name=n, src=s) for n, s in probes.items())
    (root / "shaders" / f"{shader}.slang").write_text(text + _PROBE.format(binding=binding, entries=entries))
    return root


def _inputs(shader: str, rng: np.random.Generator, act: type) -> list[np.ndarray]:
    x = rng.standard_normal((ROWS_X, K)).astype(act)
    if shader == "gemm_f16":
        return [rng.standard_normal((ROWS_W, K)).astype(np.float16), x]
    if act == np.float16:  # (the probe is no instance: its x is f32 to the wrapper, read as f16)
        x = np.frombuffer(x.tobytes() + bytes(x.nbytes), np.float32).reshape(ROWS_X, K)
    per_word = 4 if shader == "gemm_q8_0" else 8
    wq = rng.integers(0, 2**32, size=(ROWS_W, K // per_word), dtype=np.uint32)
    wd = (
        rng.uniform(0.001, 0.01, size=(ROWS_W, K // 32)) * rng.choice([-1, 1], size=(ROWS_W, K // 32))
    ).astype(np.float16)
    return [wq, wd, x]


@pytest.mark.parametrize("shader", list(SHADERS))
def test_the_staged_words_are_fetch_hs(tmp_path: Path, shader: str) -> None:
    rng = np.random.default_rng(3)
    with built_package(_project(tmp_path, shader)) as package:
        module = package.kernels(shader)
        for name in SHADERS[shader][1]:
            act = np.float32 if name.endswith("f32") else np.float16
            out = np.zeros((2048, 4), np.uint32)
            fn = getattr(module, name)
            fn(*_inputs(shader, rng, act), out, rows_x=ROWS_X, rows_w=ROWS_W, k_total=K)
            used = 2 * max(ROWS_X, ROWS_W) * CHUNKS
            pairs = out[: 2 * used].reshape(used, 2, 4)
            assert pairs.any(), name  # (the probe ran)
            np.testing.assert_array_equal(pairs[:, 1], pairs[:, 0], err_msg=f"{shader}.{name}")
