"""Option ``torch-ops``: each generated module gets ``torch_ops``, its wrappers as torch custom ops
(``torch.library.custom_op``), registered on first use so that importing the module never
imports torch. Built from the example packages with the option turned on: what becomes an op,
with which schema, what is left out and why; then, where torch is installed, the ops called on
CPU tensors (lavapipe) and inside ``torch.compile``.
"""

from __future__ import annotations

import importlib.util
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from hatch_slang.errors import HatchSlangError

from ..helpers import built_package, copy_package, requires_device, vulkan_device_name

pytestmark = [pytest.mark.compile]

HAS_TORCH = importlib.util.find_spec("torch") is not None


def _with_torch_ops(tmp_path: Path, name: str) -> Path:
    root = copy_package(name, tmp_path)
    toml = root / "pyproject.toml"
    text = toml.read_text()
    text = re.sub(
        r"(\[tool\.hatch\.build\.hooks\.slang\]\n(?:.*\n)*?package = .*\n)", r"\1torch-ops = true\n", text
    )
    assert "torch-ops = true" in text
    toml.write_text(text)
    return root


def test_entries_become_ops_with_their_schemas(tmp_path: Path) -> None:
    root = _with_torch_ops(tmp_path, "types")
    with built_package(root) as pkg:
        scale = pkg.kernels("scale_rows")
        assert "torch_ops" in scale.__all__
        text = (root / "typespkg" / "kernels" / "scale_rows.py").read_text()
        assert '"(Tensor x, Tensor s, Tensor(a!) y, *, int? rows=None, int? cols=None) -> ()"' in text
        assert '("y",)' in text
        ops = scale.torch_ops
        assert ops.namespace == "typespkg_kernels_scale_rows"
        assert dir(ops) == ["scale_rows"]
        axpy = pkg.kernels("instances_axpy")
        # each instance, and the function that picks one by dtype
        assert sorted(dir(axpy.torch_ops)) == [
            "instances_axpy",
            "instances_axpy_bf16",
            "instances_axpy_f16",
            "instances_axpy_f32",
        ]
        spec = (root / "typespkg" / "kernels" / "specconst_scale.py").read_text()
        assert re.search(r"# `specconst_scale\w*` is no torch op: `\w+` is a specialization constant\.", spec)
        structs = (root / "typespkg" / "kernels" / "structs_particles.py").read_text()
        assert re.search(r"# `\w+` is no torch op: `\w+` is a buffer of structs\.", structs)


def test_importing_a_module_with_ops_does_not_import_torch(tmp_path: Path) -> None:
    root = _with_torch_ops(tmp_path, "types")
    with built_package(root):
        code = (
            "import sys; import typespkg.kernels.scale_rows as m; ops = m.torch_ops; "
            "print(repr(ops)); print('torch' in sys.modules)"
        )
        proc = subprocess.run(
            [sys.executable, "-c", code], cwd=root, capture_output=True, text=True, timeout=120, check=False
        )
        assert proc.returncode == 0, proc.stderr
        assert proc.stdout.splitlines() == ["<torch ops typespkg_kernels_scale_rows: scale_rows>", "False"]


# A field the entry never reads is a keyword defaulting to 0 in the wrapper: so in the op's schema.
UNREAD = """// scale_unread: y = x * scale over [n]; `bias` is a field this entry never reads.
//
// Bindings:
//   t0: x  f32 [n]
//   u1: y  f32 [n]
//
// Dispatch: ceil(n / 64) groups of 64

struct Params { uint n; float scale; float bias; };

[[vk::binding(0)]] StructuredBuffer<float> x;
[[vk::binding(1)]] RWStructuredBuffer<float> y;
[[vk::binding(2)]] ConstantBuffer<Params> params;

[shader("compute")]
[numthreads(64, 1, 1)]
void scale_unread(uint3 tid: SV_DispatchThreadID)
{
    if (tid.x < params.n)
        y[tid.x] = x[tid.x] * params.scale;
}
"""


def test_a_field_never_read_defaults_to_zero_as_in_the_wrapper(tmp_path: Path) -> None:
    root = _with_torch_ops(tmp_path, "types")
    (root / "shaders" / "scale_unread.slang").write_text(UNREAD)
    with built_package(root) as pkg:
        text = (root / "typespkg" / "kernels" / "scale_unread.py").read_text()
        assert '"(Tensor x, Tensor(a!) y, *, float scale, int? n=None, float bias=0.0) -> ()"' in text
        assert "bias: float = 0.0," in text
        if HAS_TORCH and vulkan_device_name() is not None:  # the op on CPU tensors too
            import torch

            x, y = torch.arange(4, dtype=torch.float32), torch.zeros(4)
            pkg.kernels("scale_unread").torch_ops.scale_unread(x, y, scale=2.0)
            np.testing.assert_array_equal(y.numpy(), [0.0, 2.0, 4.0, 6.0])


def test_images_are_no_ops(tmp_path: Path) -> None:
    root = _with_torch_ops(tmp_path, "images")
    with built_package(root):
        text = (root / "imgpkg" / "kernels" / "blur_separable.py").read_text()
        assert re.search(r"# `\w+` is no torch op: `\w+` is an image, sampler or texel buffer\.", text)


def test_an_entry_named_torch_ops_is_refused(tmp_path: Path) -> None:
    root = _with_torch_ops(tmp_path, "types")
    src = (root / "shaders" / "scale_rows.slang").read_text()
    (root / "shaders" / "named.slang").write_text(src.replace("void scale_rows(", "void torch_ops("))
    refused = pytest.raises(
        HatchSlangError, match=r"option `torch-ops` names the module's torch ops `torch_ops`"
    )
    with refused, built_package(root):
        pass


@pytest.mark.gpu
@requires_device
@pytest.mark.skipif(not HAS_TORCH, reason="torch is not installed")
def test_ops_run_on_cpu_tensors_and_inside_torch_compile(tmp_path: Path) -> None:
    import torch

    root = _with_torch_ops(tmp_path, "types")
    with built_package(root) as pkg:
        mod = pkg.kernels("scale_rows")
        x = torch.arange(12, dtype=torch.float32).reshape(3, 4)
        s = torch.tensor([1.0, 2.0, -1.0])
        y = torch.zeros(3, 4)
        mod.torch_ops.scale_rows(x, s, y)
        np.testing.assert_array_equal(y.numpy(), x.numpy() * s.numpy()[:, None])
        op = mod.torch_ops.scale_rows

        @torch.compile(backend="eager")
        def f(x: torch.Tensor, s: torch.Tensor) -> torch.Tensor:
            y = torch.empty_like(x)
            op(x + 1, s, y)
            return y * 2

        np.testing.assert_array_equal(f(x, s).numpy(), (x.numpy() + 1) * s.numpy()[:, None] * 2)
        assert torch.ops.typespkg_kernels_scale_rows.scale_rows is not None
