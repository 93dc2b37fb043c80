"""The Python side of mapped functions (``slang-map``): one object per function, ``poly``, whose
call applies it elementwise, and (a ``[Differentiable]`` one) whose ``vjp`` and ``jvp`` give
its gradients and forward-mode derivative, through the generated entries' wrappers and
:mod:`slangrt.wrapper_api`'s ``map_call``, ``map_vjp`` and ``map_jvp``."""

from __future__ import annotations

from hatch_slang.codegen import layout
from hatch_slang.compile.mapped import MapParam, MappedFunction, sum_entry
from hatch_slang.errors import ShaderError

__all__ = ["render"]


def _array(p: MapParam) -> str:
    return f"_hs_{p.dtype}"  # (an alias: `_aliases`)


def _arg() -> str:
    return "_hs_Arg"


def _q(text: str) -> str:
    return f'"{text}"'  # (identifiers and dtype names: nothing to escape)


def _param(p: MapParam, c: str) -> str:
    return f"{c}.MapParam({_q(p.name)}, {_q(p.dtype)}, {p.shape!r})"


def _aliases(functions: tuple[MappedFunction, ...], own: dict[str, str]) -> list[str]:
    """The annotations' aliases: what an argument may be, and each output dtype's array."""
    dtypes = dict.fromkeys(p.dtype for f in functions for p in (*f.params, *f.outputs))
    lines = [f"_hs_Arg = {own['npt']}.ArrayLike | {own['slangrt']}.Tensor"]
    lines += [f"_hs_{d} = {own['npt']}.NDArray[{own['np']}.{d}] | {own['slangrt']}.Tensor" for d in dtypes]
    return ["", "", "# What mapped functions take and return (`slang-map`).", *lines]


def _tuple(items: list[str]) -> str:
    return f"({items[0]},)" if len(items) == 1 else "(" + ", ".join(items) + ")"


def _params(ps: tuple[MapParam, ...], c: str) -> str:
    return _tuple([_param(p, c) for p in ps])


def _returns(ps: tuple[MapParam, ...]) -> str:
    if len(ps) == 1:
        return _array(ps[0])
    return "tuple[" + ", ".join(_array(p) for p in ps) + "]"


def _doc(f: MappedFunction, rel: str) -> str:
    shapes = ", ".join(f"`{p.name}` {p.slang}" for p in f.inputs)
    outs = ", ".join(f"`{p.name}`" for p in f.outputs)
    lines = [
        f'    """`{f.name}` of {rel} (line {f.line}), applied elementwise (`slang-map`).',
        "",
        f"    Takes {shapes}: arrays of those element types (a vector's components are the last",
        "    axis), broadcast together as NumPy does, or numbers. Returns " + outs + " of the",
        "    broadcast shape: NumPy arrays, or slangrt.Tensors where an argument is one (`out=`:",
        "    write the given arrays instead).",
    ]
    if f.has_gradients:
        grads = ", ".join(f"`{p.name}`" for p in f.grads) or "none"
        lines += [
            "",
            "    `vjp(..., grad_output=g)`: the gradient of each parameter (None for a no_diff or",
            f"    integer one; here: {grads}), each summed to its argument's shape. `jvp(...,",
            "    tangents=(...))`: the derivative of the value along the tangents (None: zero).",
        ]
    return "\n".join([*lines, '    """'])


def _method(head: str, f: MappedFunction, params: tuple[MapParam, ...], extra: str, ret: str) -> list[str]:
    args = [f"        {p.name}: {_arg()}," for p in params]
    return [
        "    def " + head + "(",
        "        self,",
        *args,
        "        *,",
        f"        {extra},",
        f"    ) -> {ret}:",
    ]


def _body(ret: str, c: str, fn: str, spec: str, args: list[str], last: str) -> list[str]:
    call = layout.call(f"{c}.{fn}", [spec, layout.tuple_of(args), last])
    return [*layout.lines(call, f"got: {ret} = ", depth=2), "        return got"]


def _call(f: MappedFunction, c: str, spec: str) -> list[str]:
    outs = _returns(f.outputs)
    head = _method("__call__", f, f.inputs, f"out: {outs} | None = None", outs)
    return head + _body(outs, c, "map_call", spec, [p.name for p in f.inputs], "out")


def _vjp(f: MappedFunction, c: str, spec: str) -> list[str]:
    ret = "tuple[" + ", ".join(_array(p) if p.diff else "None" for p in f.params) + "]"
    head = _method("vjp", f, f.params, f"grad_output: {_arg()}", ret)
    return head + _body(ret, c, "map_vjp", spec, [p.name for p in f.params], "grad_output")


def _jvp(f: MappedFunction, c: str, spec: str) -> list[str]:
    assert f.result is not None
    ret = _array(f.result)
    tangents = "tuple[" + ", ".join(["_hs_Arg | None"] * len(f.params)) + "]"
    head = _method("jvp", f, f.params, f"tangents: {tangents}", ret)
    return head + _body(ret, c, "map_jvp", spec, [p.name for p in f.params], "tangents")


def _spec(f: MappedFunction, c: str, namespace: str) -> list[str]:
    items: list[layout.Code] = [
        _q(f.name),
        _q(namespace),
        layout.tuple_of([_param(p, c) for p in f.inputs]),
        layout.tuple_of([_param(p, c) for p in f.outputs]),
        layout.tuple_of([repr(p.diff) for p in f.params] if f.has_gradients else []),
        f"_hs_map_{f.name}",
    ]
    if f.has_gradients:
        sums = {p.dtype: sum_entry(p) for p in f.grads}
        items += [
            f"_hs_vjp_{f.name}",
            f"_hs_jvp_{f.name}",
            layout.tuple_of([layout.tuple_of([_q(d), e]) for d, e in sums.items()]),
        ]
    return layout.lines(layout.call(f"{c}.MapSpec", items, split=True), f"_hs_spec_{f.name} = ")


def render(
    functions: tuple[MappedFunction, ...],
    rel: str,
    c: str,
    own: dict[str, str],
    taken: frozenset[str],
    namespace: str,
) -> tuple[str, list[str]]:
    """The module text of ``functions``' objects, and their names (for ``__all__``);
    ``namespace``: their torch ops'."""
    text: list[str] = _aliases(functions, own) if functions else []
    exported: list[str] = []
    for f in functions:
        if f.name in taken or f.name in own.values():
            raise ShaderError(
                rel,
                f.line,
                f"mapped function `{f.name}` has the name of an entry, an argument or an import of "
                "the generated module; rename one",
            )
        cls, spec = f"_hs_Mapped_{f.name}", f"_hs_spec_{f.name}"
        body = _call(f, c, spec)
        if f.has_gradients:
            body += ["", *_vjp(f, c, spec), "", *_jvp(f, c, spec)]
        text += ["", "", *_spec(f, c, namespace), "", "", f"class {cls}:", _doc(f, rel), "", *body]
        text += ["", "", f"{f.name} = {cls}()"]
        exported.append(f.name)
    return "\n".join(text) + ("\n" if text else ""), exported
