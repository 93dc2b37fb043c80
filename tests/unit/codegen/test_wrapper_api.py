"""The contract between generated code and slangrt: ``slangrt.wrapper_api``, its version, the
Requires-Dist that names the runtimes providing it, and the tables both sides share."""

from __future__ import annotations

import importlib
import json
import re
from pathlib import Path
from types import SimpleNamespace
from typing import get_args

import numpy as np
import pytest
import slangrt
from packaging.requirements import Requirement
from slangrt import dtypes, manifest, wrapper_api

from hatch_slang import runtime_requirement
from hatch_slang.codegen import generics, mapped, torch_ops, variants
from hatch_slang.codegen import wrappers as codegen
from hatch_slang.comments import expr
from hatch_slang.spec import reflection
from hatch_slang.spec.model import IMAGE_KINDS

from ...helpers import REPO, importable


def test_the_generator_targets_the_runtime_it_requires() -> None:
    assert codegen.WRAPPER_API == wrapper_api.API_VERSION == 2
    req = Requirement(runtime_requirement())  # the wheel's Requires-Dist
    assert req.name == "hatch-slang-runtime"
    assert req.specifier.contains(slangrt.__version__, prereleases=True), (req, slangrt.__version__)


def _emitted() -> set[str]:
    """Every `_c.<name>` the generator can write: templates, codegen's (the generic entries'
    pickers too) and expr's renderings."""
    texts = [(REPO / "templates" / name).read_text() for name in codegen.TEMPLATE_FILES]
    texts += [Path(m.__file__).read_text() for m in (codegen, generics, mapped, torch_ops, variants, expr)]
    # The wrapper API is `_c` in a module unless a user's name takes it: `$helpers` in the
    # templates, `{c}` / `{at.helpers}` / `{own.helpers}` / `{helpers}` where codegen and expr
    # write it; codegen names a call by its head (`layout.call(f"{c}.grid_dim", ...)`), a base
    # class by itself (`class _hs_Variants_f({helpers}.Variants):`).
    api = r"(?:_c|\$helpers|\{c\}|\{at\.helpers\}|\{own\.helpers\}|\{helpers\})"
    names = {m for t in texts for m in re.findall(api + r"\.(\w+)[(\")]", t)}
    return names | {expr.DIVISION, *expr.FUNCTIONS}  # expr writes `_c.{name}(...)`


def test_the_api_exports_exactly_what_generated_code_uses() -> None:
    emitted = _emitted()
    assert emitted <= set(wrapper_api.__all__), emitted - set(wrapper_api.__all__)
    # Besides the functions generated code calls: the version and the refusal's exception.
    assert set(wrapper_api.__all__) - emitted == {"API_VERSION", "WrapperAPIError"}
    for name in wrapper_api.__all__:
        assert hasattr(wrapper_api, name), name


def _module(tmp_path: Path, api: int) -> str:
    """A generated module (no kernels) written for wrapper API ``api``, in package `apipkg`."""
    templates = codegen.Templates.load()
    own = codegen.Names.of(SimpleNamespace(entries=(), variants=(), variant_pickers=()))  # type: ignore[arg-type]  # a module of no entries
    text = templates.module.substitute(
        version="0",
        api=api,
        source="shaders/x.slang",
        docstring="x",
        all="",
        functions="",
        imports=own.imports(),
        helpers=own.helpers,
        library=own.library,
    )
    pkg = tmp_path / "apipkg"
    pkg.mkdir(exist_ok=True)
    (pkg / "__init__.py").write_text("")
    (pkg / f"m{api}.py").write_text(text)
    return f"apipkg.m{api}"


def test_a_runtime_with_another_api_is_refused_at_import(tmp_path: Path) -> None:
    with importable(tmp_path, "apipkg"):
        good = importlib.import_module(_module(tmp_path, wrapper_api.API_VERSION))
        assert good._c is wrapper_api
        with pytest.raises(ImportError) as info:
            importlib.import_module(_module(tmp_path, 7))
    assert isinstance(info.value, wrapper_api.WrapperAPIError)
    message = str(info.value)
    assert "apipkg.m7" in message and "wrapper API 7" in message
    assert f"provides wrapper API {wrapper_api.API_VERSION}" in message
    assert f"hatch-slang-runtime {slangrt.__version__}" in message


def test_one_manifest_format() -> None:
    """Format 4 (the newest) only where an entry requires a subgroup size, format 3 where a
    binding is an image kind; without either the bytes stay format 2's, as every package built
    before images was."""
    assert codegen.MANIFEST == manifest.FILENAME == "manifest.json"
    assert manifest.FORMAT == 4 and manifest.FORMATS == (1, 2, 3, 4)
    assert set(get_args(manifest.Kind)) == {"storage", "uniform", *IMAGE_KINDS}  # one vocabulary
    text = codegen.render_manifest({}, "2025.1")
    assert text == manifest.dumps({"format": 2, "compiler": "slang 2025.1", "shaders": {}})
    for kind in IMAGE_KINDS:
        binding: manifest.Binding = {
            "binding": 0,
            "name": "x",
            "kind": kind,
            "writable": False,
            "role": "data",
            "dtype": None,
            "shape": None,
            "params": [],
        }
        entry: manifest.Entry = {
            "spirv": "m.k.spv",
            "spirv_sha256": "0" * 64,
            "threads": [1, 1, 1],
            "grid": None,
            "bindings": [binding],
        }
        shaders: dict[str, manifest.Shader] = {"m": {"source": "m", "entries": {"k": entry}}}
        assert json.loads(codegen.render_manifest(shaders, "2025.1"))["format"] == 3
        entry["subgroup_size"] = 32
        assert json.loads(codegen.render_manifest(shaders, "2025.1"))["format"] == manifest.FORMAT == 4


def test_manifest_read_refuses_other_formats(tmp_path: Path) -> None:
    path = tmp_path / manifest.FILENAME
    path.write_text('{"format": 99, "shaders": {}}')
    with pytest.raises(slangrt.SlangRTError, match="manifest format 99; this slangrt reads formats 1, 2"):
        manifest.read(path)
    path.write_text("{")
    with pytest.raises(slangrt.SlangRTError, match="cannot read kernel manifest"):
        manifest.read(path)


def test_one_dtype_table() -> None:
    import ml_dtypes  # registers `bfloat16` with NumPy (the runtime never imports it)

    assert np.dtype("bfloat16") == np.dtype(ml_dtypes.bfloat16)
    for code, t in dtypes.DTYPES.items():
        assert t.code == code
        assert np.dtype(t.numpy).itemsize == t.size == reflection.scalar_size(code)
        if code == "bf16":  # no NumPy type: its bits, as uint16
            assert t.is_float and t.little_endian == "<u2" and t.accepts(np.dtype(np.uint16))
            assert reflection.SCALARS[t.numpy] == code
            continue
        assert np.dtype(t.little_endian) == np.dtype(t.numpy).newbyteorder("<")
        assert (np.dtype(t.numpy).kind == "f") == t.is_float
        if not t.is_float:
            info = np.iinfo(t.numpy)
            assert t.range == (int(info.min), int(info.max))
        assert reflection.SCALARS[t.numpy] == code
    assert reflection.SCALARS["bool"] == "u32"


def test_a_spirv_file_that_does_not_match_the_manifest_is_refused(tmp_path: Path) -> None:
    from slangrt._calls._library import KernelLibrary

    entry = {"spirv": "m.k.spv", "spirv_sha256": "0" * 64, "threads": [1, 1, 1], "grid": None, "bindings": []}
    doc = {
        "format": manifest.FORMAT,
        "compiler": "slang x",
        "shaders": {"m": {"source": "m", "entries": {"k": entry}}},
    }
    (tmp_path / manifest.FILENAME).write_text(manifest.dumps(doc))  # type: ignore[arg-type]
    (tmp_path / "m.k.spv").write_bytes(b"\x03\x02\x23\x07" * 8)
    with pytest.raises(slangrt.SlangRTError, match=r"m\.k\.spv does not match its sha256 in manifest\.json"):
        KernelLibrary(tmp_path).kernel("m", "k")
