"""The functions of ``slang-variants`` lines: one object per function, whose call runs the first
of its entries the device supports (``slangrt.wrapper_api.Variants``).

``gemm_f16 = gemm_f16_coopmat gemm_f16_tiled`` becomes a class deriving ``Variants`` whose
``__call__`` takes the entries' arguments (the first entry's signature: every entry takes the
same, :mod:`hatch_slang.spec.variants` checked) and hands them to the wrapper
``Variants.pick`` chose for the device of the call, and a module-level instance named after
the function. Names reach the code as the validated identifiers of the spec.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from hatch_slang.codegen import generics, layout
from hatch_slang.spec.model import EntrySpec, ShaderSpec, Variant

__all__ = ["pickers", "render"]


def pickers(spec: ShaderSpec) -> list[generics.Picker]:
    """The functions of ``slang-variants`` lines of generic entries (``gemm = gemm_coopmat
    gemm_tiled``): each picks, by the arrays' dtypes, the variant function of one instance
    (``gemm_f32``, ``gemm_f16``), as a generic entry's function picks an instance."""
    by_name = {e.name: e for e in spec.entries}
    made = {v.name: v for v in spec.variants}
    out: list[generics.Picker] = []
    for p in spec.variant_pickers:
        firsts = tuple(replace(by_name[made[n].entries[0]], python=n) for n in p.entries)
        arrays = tuple(b.name for b in firsts[0].buffers if b.role == "data" and b.kind != "sampler")
        if len({generics.dtypes_of(e, arrays) for e in firsts}) > 1:
            out.append(generics.Picker(p.name, p.name, arrays, firsts))
    return out


def _doc(v: Variant, entries: list[EntrySpec], escape: Callable[[str], str]) -> list[str]:
    listed = "\n".join(f"        {k}. ``{e.python}``" for k, e in enumerate(entries, start=1))
    text = (
        f"Run the first of these entries that the device supports (``slang-variants``, line {v.line}):\n\n"
        f"{listed}\n\n"
        "        Each takes the same arguments, and is a function of its own. What a device supports is\n"
        "        what an entry's SPIR-V declares it needs (a capability such as CooperativeMatrixKHR,\n"
        "        an extension, a limit) against the device's features: ``.chosen()`` names the entry\n"
        "        the default device runs, ``.paths()`` what each lacks. A device that supports none\n"
        "        raises ``slangrt.UnsupportedKernelError`` naming what each lacks.\n"
    )
    return ['        """' + escape(text) + '        """']


def render(
    spec: ShaderSpec,
    helpers: str,
    library: str,
    fresh: Callable[[str], str],
    parameters: Callable[[EntrySpec], str],
    positional: Callable[[EntrySpec], list[str]],
    keywords: Callable[[EntrySpec], list[str]],
    escape: Callable[[str], str],
    lit: Callable[[str], str],
) -> str:
    """The module text of ``spec``'s variant functions (empty: none). ``fresh`` gives a name no
    other of the module has; ``parameters`` an entry's parameter list, ``positional`` and
    ``keywords`` the names it takes each way."""
    by_name = {e.name: e for e in spec.entries}
    text = ""
    for v in spec.variants:
        entries = [by_name[n] for n in v.entries]
        first = entries[0]
        cls, me = fresh(f"_hs_Variants_{v.name}"), fresh("self")
        params = [f"    {line}" for line in parameters(first).split("\n") if line]
        head = [f"    def __call__(\n        {me},", *params, "    ) -> None:"]
        arrays = layout.tuple_of(list(positional(first)))
        call = layout.call(
            f"{me}.pick({layout.flat(arrays)})", [*positional(first), *(f"{k}={k}" for k in keywords(first))]
        )
        body = layout.lines(call, depth=2)
        made = [
            layout.tuple_of([lit(e.python), lit(spec.shader.module), lit(e.name), e.python]) for e in entries
        ]
        obj = layout.call(
            cls, [lit(f"{spec.shader.module}.{v.name}"), library, layout.tuple_of(made)], split=True
        )
        text += "\n\n" + "\n".join(
            [
                f"class {cls}({helpers}.Variants):",
                *head,
                *_doc(v, entries, escape),
                *body,
                "",
                "",
                *layout.lines(obj, f"{v.name} = "),
            ]
        )
        text += "\n"
    return text
