"""Recompile the runtime tests' fixture kernels: ``<name>.slang`` -> ``<name>.spv``.

Run with the project venv (it needs slangpy, which ships the Slang compiler library):

    .venv/bin/python tests/runtime/data/regen.py

Each file is compiled for its single entry point, named like the file, with the flags the build
side uses (SPIR-V 1.5, entry point names kept). OpSource's source-language operand is then set to
0 (Unknown): Slang writes 11 (Slang), which Debian 12's validation layer rejects although drivers
run the module. The runtime tests must not need slangpy, hence the committed ``.spv`` files.
"""

from __future__ import annotations

import ctypes
import glob
import os
import struct
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
_OP_SOURCE = 3


def _load_compiler() -> ctypes.CDLL:
    import slangpy

    libs = glob.glob(os.path.join(os.path.dirname(slangpy.__file__), "libslang-compiler.so*"))
    if not libs:
        sys.exit("slangpy has no libslang-compiler library")
    lib = ctypes.CDLL(libs[0])
    lib.spCreateSession.restype = ctypes.c_void_p
    lib.spCreateSession.argtypes = [ctypes.c_char_p]
    lib.spCreateCompileRequest.restype = ctypes.c_void_p
    lib.spCreateCompileRequest.argtypes = [ctypes.c_void_p]
    lib.spProcessCommandLineArguments.argtypes = [
        ctypes.c_void_p,
        ctypes.POINTER(ctypes.c_char_p),
        ctypes.c_int,
    ]
    lib.spProcessCommandLineArguments.restype = ctypes.c_int
    lib.spCompile.argtypes = [ctypes.c_void_p]
    lib.spCompile.restype = ctypes.c_int
    lib.spGetDiagnosticOutput.argtypes = [ctypes.c_void_p]
    lib.spGetDiagnosticOutput.restype = ctypes.c_char_p
    lib.spGetEntryPointCodeBlob.argtypes = [
        ctypes.c_void_p,
        ctypes.c_int,
        ctypes.c_int,
        ctypes.POINTER(ctypes.c_void_p),
    ]
    lib.spGetEntryPointCodeBlob.restype = ctypes.c_int
    lib.spDestroyCompileRequest.argtypes = [ctypes.c_void_p]
    return lib


def _blob_bytes(ptr: int) -> bytes:
    # ISlangBlob is a COM object: vtable slot 2 release, 3 getBufferPointer, 4 getBufferSize.
    vtable = ctypes.cast(ctypes.c_void_p(ptr), ctypes.POINTER(ctypes.POINTER(ctypes.c_void_p)))[0]
    get_ptr = ctypes.CFUNCTYPE(ctypes.c_void_p, ctypes.c_void_p)(vtable[3])
    get_size = ctypes.CFUNCTYPE(ctypes.c_size_t, ctypes.c_void_p)(vtable[4])
    release = ctypes.CFUNCTYPE(ctypes.c_uint32, ctypes.c_void_p)(vtable[2])
    data = ctypes.string_at(get_ptr(ptr), get_size(ptr))
    release(ptr)
    return data


def patch_source_language(spirv: bytes) -> bytes:
    """Set every OpSource's source-language operand to 0 (Unknown)."""
    words = list(struct.unpack(f"<{len(spirv) // 4}I", spirv))
    if words[0] != 0x07230203:
        raise ValueError("not a little-endian SPIR-V module")
    i = 5  # after the header
    while i < len(words):
        count, opcode = words[i] >> 16, words[i] & 0xFFFF
        if count == 0:
            raise ValueError(f"malformed SPIR-V: zero word count at word {i}")
        if opcode == _OP_SOURCE:
            words[i + 1] = 0
        i += count
    return struct.pack(f"<{len(words)}I", *words)


def compile_entry(lib: ctypes.CDLL, session: int, source: Path, entry: str) -> bytes:
    request = lib.spCreateCompileRequest(session)
    try:
        args = [
            str(source),
            "-target",
            "spirv",
            "-profile",
            "spirv_1_5",
            "-entry",
            entry,
            "-stage",
            "compute",
            "-fvk-use-entrypoint-name",
            "-o",
            f"{entry}.spv",
        ]  # -o makes it generate code; nothing is written
        argv = (ctypes.c_char_p * len(args))(*[a.encode() for a in args])
        if lib.spProcessCommandLineArguments(request, argv, len(args)) < 0:
            raise RuntimeError(f"bad compiler arguments: {args}")
        rc = lib.spCompile(request)
        diagnostics = (lib.spGetDiagnosticOutput(request) or b"").decode()
        if rc < 0:
            raise RuntimeError(f"compiling {source.name} failed:\n{diagnostics}")
        blob = ctypes.c_void_p()
        if lib.spGetEntryPointCodeBlob(request, 0, 0, ctypes.byref(blob)) < 0 or not blob.value:
            raise RuntimeError(f"no code for {entry} in {source.name}")
        return _blob_bytes(blob.value)
    finally:
        lib.spDestroyCompileRequest(request)


def main() -> None:
    lib = _load_compiler()
    session = lib.spCreateSession(None)
    for source in sorted(HERE.glob("*.slang")):
        spirv = patch_source_language(compile_entry(lib, session, source, source.stem))
        out = source.with_suffix(".spv")
        out.write_bytes(spirv)
        print(f"{source.name} -> {out.name} ({len(spirv)} bytes)")


if __name__ == "__main__":
    main()
