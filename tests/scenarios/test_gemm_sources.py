"""The library GEMMs' operand sources agree with themselves on lavapipe: what the cooperative-matrix
path stages (``decode(load(...))``, split so that the loads are in flight during a stage's
products) is bit for bit what ``fetch_h`` gives (the f16 words of ``fetch``'s values, which the
tiled path's validation covers), for every operand, row and 8-value chunk of k, past the end of
k included. For the quantized weights that is also the half-precision decode (``decode_q4_0_h``,
``decode_q8_0_h``) held to the f32 one, bit for bit.

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
# One stage of the cooperative-matrix path's staging (cm_fetch, cm_stage_store: the words of both
# operands' tiles, rows clamped, past k zero) and, after it, the same words from fetch_h at the
# places lib/gemm_coopmat.slang's products read them from (cm_at).
_STAGE_ENTRY = """
[shader("compute")]
[numthreads(CM_THREADS, 1, 1)]
void {name}(uint tid : SV_GroupIndex, uniform uint m0, uniform uint n0, uniform uint rows_x,
            uniform uint rows_w, uniform uint k_total, uniform uint k_stage)
{{
    GemmRaw h[CM_FETCH];
    cm_fetch<{src}>(tid, m0, n0, rows_x, rows_w, k_stage, k_total, h);
    cm_stage_store<{src}>(tid, 0, h);
    GroupMemoryBarrierWithGroupSync();
    for (uint w = tid; w < CM_STAGE; w += CM_THREADS)
        probe_out[w] = cm_tiles[w];
    for (uint c = tid; c < (CM_TM + CM_TN) * CM_CPR; c += CM_THREADS)
    {{
        uint op = c < CM_TM * CM_CPR ? 0 : 1;
        uint r = c / CM_CPR - op * CM_TM;
        uint row = op == 0 ? min(m0 + r, rows_x - 1) : min(n0 + r, rows_w - 1);
        uint at = cm_at(0, op, r) + c % CM_CPR;
        probe_out[CM_STAGE + at] = {src}.fetch_h(op, row, k_stage + (c % CM_CPR) * 8, k_total);
    }}
}}
"""
# The blocks of y that cm_m0 and cm_n0 give the workgroups of the grid, in the order of their index:
# probe_out[index] = (m0, n0).
_RASTER_ENTRY = """
[shader("compute")]
[numthreads(CM_THREADS, 1, 1)]
void {name}(uint tid : SV_GroupIndex, uniform uint rows_x, uniform uint rows_w)
{{
    uint across = (rows_w + CM_TN - 1) / CM_TN;
    uint4 p = uint4(rows_w, 0, rows_x, 0);  // (an entry's params: n, k, tokens, accumulate)
    for (uint g = tid; g < across * ((rows_x + CM_TM - 1) / CM_TM); g += CM_THREADS)
    {{
        uint3 group = uint3(g % across, g / across, 0);
        probe_out[g] = uint4(cm_m0(group, p), cm_n0(group, p), 0, 0);
    }}
}}
"""
# shader -> (its first free binding, {probe entry: the source it probes})
SHADERS = {
    "gemm_f16": (4, {"probe": "Operands"}),
    "gemm_q8_0": (5, {"probe_f32": "Operands<f32>", "probe_f16": "Operands<f16>"}),
    "gemm_q4_0": (5, {"probe_f32": "Operands<f32>", "probe_f16": "Operands<f16>"}),
}


def _project(
    tmp: Path, shader: str, stage: dict[str, int] | None = None, template: str = _STAGE_ENTRY
) -> Path:
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
    if stage is None:
        template = _ENTRY
    else:  # the shape's macros first, and one workgroup of its threads
        stage = {"CM_KSPLIT": 1, "CM_RASTER": 0, **stage}
        defines = "".join(f"#define {k} {v}\n" for k, v in stage.items())
        text = text.replace('#include "lib/floats.slang"', defines + '#include "lib/floats.slang"', 1)
        threads = 32 * stage["CM_SG_ROWS"] * stage["CM_SG_COLS"] * stage["CM_KSPLIT"]
        dispatch = f"// Dispatch ({', '.join(probes)}): (1) threadgroups of {threads}.\n"
        grid = f"(ceil(n / {stage['CM_TN']}), ceil(tokens / {stage['CM_TM']})) threadgroups of {threads}."
        entry = re.search(r"void (\w+_coopmat)<", text)
        assert entry is not None
        text = re.sub(r"// Dispatch \(\w+_coopmat\): .*\n", "", text)  # (the file's own, if any)
        dispatch += f"// Dispatch ({entry.group(1)}): {grid}\n"
    entries = "".join(template.format(name=n, src=s) for n, s in probes.items())
    text = text.replace("//\n// Dispatch: ", line + "//\n" + dispatch + "// Dispatch: ", 1)
    (root / "shaders" / f"{shader}.slang").write_text(text + _PROBE.format(binding=binding, entries=entries))
    return root


def _inputs(
    shader: str,
    rng: np.random.Generator,
    act: type,
    rows_x: int = ROWS_X,
    rows_w: int = ROWS_W,
    k: int = K,
    wide: bool = False,
) -> list[np.ndarray]:
    x = (rng.integers(-2048, 2048, (rows_x, k)) / 256).astype(act)  # (exact in f16: no underflow)
    if shader == "gemm_f16":
        return [(rng.integers(-2048, 2048, (rows_w, k)) / 256).astype(np.float16), x]
    if act == np.float16:  # (the probe is no instance: its x is f32 to the wrapper, read as f16)
        x = np.frombuffer(x.tobytes() + bytes(x.nbytes), np.float32).reshape(rows_x, k)
    per_word = 4 if shader == "gemm_q8_0" else 8
    wq = rng.integers(0, 2**32, size=(rows_w, k // per_word), dtype=np.uint32)
    size = (rows_w, k // 32)
    if wide:  # every quant byte, and scales of every binade from 2^-24 (products subnormal) to 2^8
        wq.reshape(-1)[:64] = np.arange(256, dtype=np.uint8).view(np.uint32)
        magnitude = np.exp2(rng.uniform(-24, 8, size)) * rng.choice([-1, 1], size=size)
    else:
        magnitude = rng.uniform(0.001, 0.01, size) * rng.choice([-1, 1], size=size)
    with np.errstate(under="ignore"):  # (subnormal scales on purpose)
        wd = magnitude.astype(np.float16)
    return [wq, wd, x]


def _check_words(
    tmp_path: Path,
    shader: str,
    rows_w: int = ROWS_W,
    wide: bool = False,
) -> None:
    """Each probe's decode(load(...)) against its reference's fetch_h, chunk by chunk."""
    rng = np.random.default_rng(3)
    with built_package(_project(tmp_path, shader)) as package:
        module = package.kernels(shader)
        for name in SHADERS[shader][1]:
            act = np.float32 if name.endswith("f32") else np.float16
            out = np.zeros((2048, 4), np.uint32)
            args = _inputs(shader, rng, act, rows_w=rows_w, wide=wide)
            if wide:  # (every quant value, so that each is held to the f32 decode)
                assert len(np.unique(args[0].view(np.uint8))) == 256
            getattr(module, name)(*args, out, rows_x=ROWS_X, rows_w=rows_w, k_total=K)
            used = 2 * max(ROWS_X, rows_w) * CHUNKS
            assert 2 * used <= len(out)
            pairs = out[: 2 * used].reshape(used, 2, 4)
            assert pairs.any(), name  # (the probe ran)
            np.testing.assert_array_equal(pairs[:, 1], pairs[:, 0], err_msg=f"{shader}.{name}")


@pytest.mark.parametrize("shader", list(SHADERS))
def test_the_staged_words_are_fetch_hs(tmp_path: Path, shader: str) -> None:
    _check_words(tmp_path, shader)


@pytest.mark.parametrize("shader", ["gemm_q4_0", "gemm_q8_0"])
def test_the_half_decodes_are_the_f32_decodes(tmp_path: Path, shader: str) -> None:
    """The staged weights (decoded in f16 arithmetic) are the f32 decode's rounded, bit for bit,
    for every quant byte and scales from 2^-24 to 2^8, subnormal products included."""
    _check_words(tmp_path, shader, rows_w=32, wide=True)


# name -> (the path's macros, m0, n0, rows of x and of w, k, k_stage): 128 x 128 with 16 subgroups
# one to a part and two to a part (the library's: split k, the grid's order), 128 x 256 and 64 x
# 128 with 8 and 256 x 128 with 16, each probed at a block past the first whose rows run out
# (clamped), all but the last at a stage that runs past the end of k.
STAGES = {
    "128x128_k64": (
        {"CM_TM": 128, "CM_TN": 128, "CM_TK": 64, "CM_SG_ROWS": 4, "CM_SG_COLS": 4},
        128,
        128,
        200,
        300,
        96,
        64,
    ),
    "128x128_k64_s2": (
        {
            "CM_TM": 128,
            "CM_TN": 128,
            "CM_TK": 64,
            "CM_SG_ROWS": 2,
            "CM_SG_COLS": 4,
            "CM_KSPLIT": 2,
            "CM_RASTER": 1,
        },
        0,
        128,
        140,
        200,
        224,
        192,
    ),
    "128x256_k32": (
        {"CM_TM": 128, "CM_TN": 256, "CM_TK": 32, "CM_SG_ROWS": 2, "CM_SG_COLS": 4},
        0,
        256,
        100,
        300,
        96,
        64,
    ),
    "64x128_k64": (
        {"CM_TM": 64, "CM_TN": 128, "CM_TK": 64, "CM_SG_ROWS": 2, "CM_SG_COLS": 4},
        64,
        256,
        100,
        300,
        96,
        64,
    ),
    "256x128_k32_t512": (
        {"CM_TM": 256, "CM_TN": 128, "CM_TK": 32, "CM_SG_ROWS": 4, "CM_SG_COLS": 4},
        256,
        0,
        300,
        60,
        64,
        32,
    ),
}


@pytest.mark.parametrize("shape", list(STAGES))
@pytest.mark.parametrize("shader", list(SHADERS))
def test_a_stage_lands_where_the_products_read_it(tmp_path: Path, shader: str, shape: str) -> None:
    macros, m0, n0, rows_x, rows_w, k, k_stage = STAGES[shape]
    rng = np.random.default_rng(5)
    stage = macros["CM_TM"] + macros["CM_TN"]
    stage *= macros["CM_TK"] // 8 + 1
    with built_package(_project(tmp_path, shader, macros)) as package:
        module = package.kernels(shader)
        for name in SHADERS[shader][1]:
            act = np.float32 if name.endswith("f32") else np.float16
            out = np.zeros((2 * stage, 4), np.uint32)
            args = _inputs(shader, rng, act, rows_x, rows_w, k)
            getattr(module, name)(
                *args, out, m0=m0, n0=n0, rows_x=rows_x, rows_w=rows_w, k_total=k, k_stage=k_stage
            )
            staged, expected = out[:stage], out[stage:]
            data = np.arange(stage) % (macros["CM_TK"] // 8 + 1) != macros["CM_TK"] // 8  # (not padding)
            assert expected[data].any(), name  # (the probe ran)
            np.testing.assert_array_equal(staged[data], expected[data], err_msg=f"{shader}.{name} {shape}")


@pytest.mark.parametrize("raster", [0, 1])
def test_every_block_has_one_workgroup(tmp_path: Path, raster: int) -> None:
    """cm_m0 and cm_n0 map the grid's workgroups onto the blocks of y one to one; with CM_RASTER, in
    the order of their index with the blocks of tokens fastest (the workgroups that run together
    share w's rows)."""
    macros = {"CM_TM": 128, "CM_TN": 128, "CM_TK": 64, "CM_SG_ROWS": 4, "CM_SG_COLS": 4, "CM_RASTER": raster}
    with built_package(_project(tmp_path, "gemm_f16", macros, _RASTER_ENTRY)) as package:
        probe = package.kernels("gemm_f16").probe
        for tokens, n in ((512, 14336), (300, 1000), (1, 129), (4096, 4096)):
            across, down = -(-n // 128), -(-tokens // 128)
            out = np.full((2048, 4), 7, np.uint32)
            probe(out, rows_x=tokens, rows_w=n)
            got = out[: across * down, :2] // 128
            ids = np.arange(across * down)
            if raster:
                want = np.stack([ids % down, ids // down], axis=1)
            else:
                want = np.stack([ids // across, ids % across], axis=1)
            np.testing.assert_array_equal(got, want, err_msg=f"{tokens} x {n}")
            assert len({tuple(b) for b in got}) == across * down  # (each block once)
