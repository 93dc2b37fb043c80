"""The dialects corpus: 32 kernels documented in other engines' comment dialects (FORMS.md).

One project, default options: the build has no errors (its warnings are printed), and the shares
of entries that get typed wrappers and a computed grid are measured from the manifest it writes:

* typed: every binding of the entry is the comment's (a data binding named on one of its binding
  lines, with the documented shape; a params binding with its named fields) and the wrapper's
  parameters are exactly those names, the params fields and the grid-only sizes;
* grid computed: the manifest has the entry's grid (from its Dispatch line) and the wrapper takes
  no ``grid=``.

Then ``hatch-slang validate`` runs every entry against its NumPy reference on the device.
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from click.testing import CliRunner

from hatch_slang.builder import pipeline
from hatch_slang.cli.commands import main
from hatch_slang.comments.contract import leading_comment

from ..helpers import BuildProject, BuiltPackage, build_tree, requires_device

pytestmark = pytest.mark.compile

SHADERS = 32
ENTRIES = 34  # clamp_vals and scale_inplace have two entries each
# Data bindings whose comment documents no shape, only prose; they are the comment's all the same.
NO_SHAPE = {
    ("argmax_rows", "logits"): "rows of n_vocab values back to back",
    ("argmax_rows", "ids"): "one index per row",
    ("l2_norm", "x"): "each `dim` long, one after another",
    ("soft_max_rows", "x"): "all rows back to back",
    ("gemv_q8_0", "wq"): "q8_0 blocks, rows*cols/32 of them (counted in blocks, not words)",
}


def _build(root: Path) -> tuple[pipeline.BuildOutput, dict[str, Any]]:
    output = build_tree(root)
    return output, json.loads((root / "dialectpkg" / "kernels" / "manifest.json").read_text())


def _wrapper_params(module_source: str, entry: str) -> list[str]:
    fn = next(n for n in ast.parse(module_source).body if isinstance(n, ast.FunctionDef) and n.name == entry)
    return [a.arg for a in fn.args.args + fn.args.kwonlyargs]


def _comment_words(source: str) -> set[str]:
    words = {w for _, text in leading_comment(source) for w in re.findall(r"[A-Za-z_]\w*", text)}
    return words | {w.removesuffix("_bits") for w in words}  # `scale_bits`: the float `scale`


def _measure(root: Path, manifest: dict[str, Any]) -> tuple[list[str], list[str], list[str]]:
    """(every entry, the typed ones, the ones whose grid is computed) as `shader.entry` names."""
    package = root / "dialectpkg" / "kernels"
    all_entries, typed, gridded = [], [], []
    for module, shader in sorted(manifest["shaders"].items()):
        source = (root / shader["source"]).read_text()
        words = _comment_words(source)
        wrapper = (package / f"{module}.py").read_text()
        for entry, e in sorted(shader["entries"].items()):
            name = f"{module}.{entry}"
            all_entries.append(name)
            params = _wrapper_params(wrapper, entry)
            if e["grid"] is not None:  # (its optional indirect grid: no comment name)
                params = [p for p in params if p.rstrip("_") != "grid"]
            expected: list[str] = []
            ok = True
            for b in e["bindings"]:
                if b["role"] == "params":
                    fields = [p[0] for p in b["params"] if p[0]]
                    ok &= bool(fields) and all(f in words for f in fields)
                    expected += fields
                else:
                    ok &= b["name"] in words
                    ok &= b["shape"] is not None or (module, b["name"]) in NO_SHAPE
                    expected.append(b["name"])
            # Every wrapper argument is a comment name (derived fields are computed, so fewer).
            ok &= all(p in words for p in params) and set(params) <= set(expected) | words
            ok &= all(b["name"] in params for b in e["bindings"] if b["role"] == "data")
            if ok:
                typed.append(name)
            if e["grid"] is not None and "grid" not in params:
                gridded.append(name)
    return all_entries, typed, gridded


def test_dialects_build_with_default_options_typed_and_gridded(package: Callable[[str], Path]) -> None:
    root = package("dialects")
    output, manifest = _build(root)  # raises on any error
    for w in output.warnings:
        print("warning:", w)
    # The two files documenting several backends say which binding list they use.
    notes = [w for w in output.warnings if "binding list matches the compiled code" in w]
    assert sorted(n.split(":")[0] for n in notes) == ["shaders/attn_scores.slang", "shaders/gemv_f16.slang"]
    assert all("Vulkan binding list" in n for n in notes)

    entries, typed, gridded = _measure(root, manifest)
    print(f"typed: {len(typed)}/{len(entries)}; grid from Dispatch: {len(gridded)}/{len(entries)}")
    print("not typed:", sorted(set(entries) - set(typed)))
    print("grid not computed:", sorted(set(entries) - set(gridded)))
    assert len(manifest["shaders"]) == SHADERS and len(entries) == ENTRIES
    assert len(typed) / len(entries) >= 0.9
    assert len(gridded) / len(entries) >= 0.9


def test_the_measure_tells_a_comment_that_was_not_understood(package: Callable[[str], Path]) -> None:
    """A kernel whose comment says nothing usable counts as neither typed nor gridded."""
    root = package("dialects")
    path = root / "shaders" / "silu.slang"
    code = "\n".join(line for line in path.read_text().splitlines() if not line.startswith("//"))
    path.write_text("// slang-entries: silu\n// A SiLU.\n" + code + "\n")
    _, manifest = _build(root)
    entries, typed, gridded = _measure(root, manifest)
    assert len(entries) == ENTRIES
    assert set(entries) - set(typed) == {"silu.silu"}
    assert set(entries) - set(gridded) == {"silu.silu"}


def test_dialects_grid_only_names_and_unread_fields(package: Callable[[str], Path]) -> None:
    root = package("dialects")
    _, manifest = _build(root)
    package_dir = root / "dialectpkg" / "kernels"

    def params(module: str, entry: str) -> list[str]:
        return _wrapper_params((package_dir / f"{module}.py").read_text(), entry)

    # Names only the Dispatch line uses are required int keyword arguments.
    for module, entry, name in [
        ("soft_max_rows", "soft_max_rows", "nrows"),
        ("argmax_rows", "argmax_rows", "rows"),
        ("l2_norm", "l2_norm", "rows"),
        ("rope_gptj", "rope_gptj", "n_heads"),
    ]:
        source = (package_dir / f"{module}.py").read_text()
        fn = next(n for n in ast.parse(source).body if isinstance(n, ast.FunctionDef) and n.name == entry)
        kw = {a.arg: a for a in fn.args.kwonlyargs}
        defaults = dict(zip([a.arg for a in fn.args.kwonlyargs], fn.args.kw_defaults))
        assert name in kw and ast.unparse(kw[name].annotation or ast.Constant(None)) == "int"
        assert defaults[name] is None, (module, name)  # required
    # A params field an entry's SPIR-V never reads is no required argument of that entry.
    for module, entry, field, required in [
        ("clamp_vals", "clamp_floor", "hi", False),
        ("clamp_vals", "clamp_vals", "hi", True),
        ("scale_inplace", "scale_inplace", "limit", False),
        ("scale_inplace", "scale_clamp_inplace", "limit", True),
    ]:
        source = (package_dir / f"{module}.py").read_text()
        fn = next(n for n in ast.parse(source).body if isinstance(n, ast.FunctionDef) and n.name == entry)
        defaults = dict(zip([a.arg for a in fn.args.kwonlyargs], fn.args.kw_defaults))
        assert (defaults[field] is None) == required, (module, entry, field)
    # A derived field is computed, not passed.
    assert "total" not in params("concat_rows", "concat_rows")
    assert "total" not in params("residual_add", "residual_add")
    # The grid of every entry is the Dispatch line's.
    assert manifest["shaders"]["transpose2d"]["entries"]["transpose2d"]["grid"] == [
        "ceil(cols / 16)",
        "ceil(rows / 16)",
    ]


def _validate(built: BuiltPackage, *shaders: str) -> tuple[int, list[dict[str, Any]], str]:
    root = built.root
    # NumPy's default: f16 outputs compared in `allclose` underflow harmlessly (the suite raises).
    with np.errstate(under="ignore"):
        result = CliRunner().invoke(main, ["validate", "--root", str(root), "--json", *shaders])
    rows = [json.loads(line) for line in result.output.splitlines() if line.startswith("{")]
    return result.exit_code, rows, result.output


@requires_device
@pytest.mark.gpu
@pytest.mark.slow
def test_dialects_validate_on_the_device(package: Callable[[str], Path], build_project: BuildProject) -> None:
    built = build_project(package("dialects"))
    manifest = built.manifest
    code, rows, output = _validate(built)
    failed = [(r["shader"], r["entry"], r["shape"], r.get("error", "")) for r in rows if not r["ok"]]
    assert not failed, failed
    assert code == 0, [line for line in output.splitlines() if not line.startswith("{")]
    # Every entry of every shader was run against its reference.
    entries = {(s["source"].split("/")[-1], e) for s in manifest["shaders"].values() for e in s["entries"]}
    assert {(r["shader"], r["entry"]) for r in rows} == entries
    assert len(entries) == ENTRIES


@requires_device
@pytest.mark.gpu
@pytest.mark.slow
def test_dialects_fields_an_entry_never_reads_are_not_required(
    package: Callable[[str], Path], build_project: BuildProject
) -> None:
    """clamp_vals/clamp_floor never reads `hi`, scale_inplace never reads `limit`: not required."""
    code, rows, output = _validate(build_project(package("dialects")), "clamp_vals", "scale_inplace")
    assert {r["entry"] for r in rows} == {"clamp_vals", "clamp_floor", "scale_inplace", "scale_clamp_inplace"}
    failed = [(r["entry"], r["shape"], r.get("error", "")) for r in rows if not r["ok"]]
    assert not failed, failed
    assert code == 0, [line for line in output.splitlines() if not line.startswith("{")]
