"""The Python side of mapped functions (``slang-map``): one object per function, ``poly``, whose
call applies it elementwise, and (a ``[Differentiable]`` one) whose ``vjp`` and ``jvp`` give
its gradients and forward-mode derivative, through the generated entries' wrappers and
:mod:`slangrt.wrapper_api`'s ``map_call``, ``map_vjp`` and ``map_jvp``."""

from __future__ import annotations

from collections.abc import Callable

from hatch_slang.codegen import layout
from hatch_slang.comments.expr import ExprError, argument_name, entry_name
from hatch_slang.compile.mapped import MapParam, MappedFunction, sum_entry
from hatch_slang.errors import ShaderError

__all__ = ["render"]


def _array(p: MapParam) -> str:
    return f"_hs_{p.dtype}"  # (an alias: `_aliases`)


def _arg() -> str:
    return "_hs_Arg"


def _q(text: str) -> str:
    return f'"{text}"'  # (identifiers and dtype names: nothing to escape)


# A struct parameter's dtype: the generated module's structured dtype for the binding that holds
# it in an entry (entry, binding) -> its module-level name, None where it holds none.
StructDtype = Callable[[str, str], str | None]


def _param(
    p: MapParam, c: str, entry: str = "", binding: str = "", structs: StructDtype | None = None
) -> str:
    dtype = _q(p.dtype)
    if p.fields:
        found = structs(entry, binding) if structs is not None else None
        if found is None:
            raise ValueError(f"no structured dtype for `{binding}` of {entry}")  # (a generator bug)
        dtype = found
    return f"{c}.MapParam({_q(p.name)}, {dtype}, {p.shape!r})"


def _aliases(functions: tuple[MappedFunction, ...], own: dict[str, str]) -> list[str]:
    """The annotations' aliases: what an argument may be, and each output dtype's array."""
    dtypes = dict.fromkeys(p.dtype for f in functions for p in (*f.params, *f.outputs))
    lines = [f"_hs_Arg = {own['npt']}.ArrayLike | {own['slangrt']}.Tensor"]
    lines += [f"_hs_{d} = {own['npt']}.NDArray[{own['np']}.{d}] | {own['slangrt']}.Tensor" for d in dtypes]
    return ["", "", "# What mapped functions take and return (`slang-map`).", *lines]


def _union(group: list[MappedFunction], k: int, outputs: bool = False) -> str:
    """The alias union of parameter (or output) ``k``'s arrays over a generic's instances."""
    return " | ".join(dict.fromkeys(_array(f.outputs[k] if outputs else f.params[k]) for f in group))


def _returns(group: list[MappedFunction]) -> str:
    outs = [_union(group, k, outputs=True) for k in range(len(group[0].outputs))]
    return outs[0] if len(outs) == 1 else "tuple[" + ", ".join(outs) + "]"


def _doc(group: list[MappedFunction], rel: str) -> str:
    f = group[0]
    shapes = ", ".join(f"`{_py(p.name)}` {p.slang}" for p in f.inputs)
    outs = ", ".join(f"`{p.name}`" for p in f.outputs)
    lines = [
        f"`{f.name}` of {f.origin or rel} (line {f.line}), applied elementwise (`slang-map`).",
        "",
        f"    Takes {shapes}: arrays of those element types (a vector's components are the last",
        "    axis), broadcast together as NumPy does, or numbers. Returns " + outs + " of the",
        "    broadcast shape: NumPy arrays, or slangrt.Tensors where an argument is one (`out=`:",
        "    write the given arrays instead); on torch tensors, a torch op"
        + (" with autograd." if f.has_gradients else " (no derivatives)."),
    ]
    if len(group) > 1:
        listed = ", ".join(f"`{g.callee}`" for g in group)
        lines += ["", f"    Instances: {listed}, picked by the arguments' dtypes."]
    if f.has_gradients:
        grads = ", ".join(f"`{_py(p.name)}`" for p in f.grads) or "none"
        lines += [
            "",
            "    `vjp(..., grad_output=g)`: the gradient of each parameter (None for a no_diff or",
            f"    integer one; here: {grads}), each summed to its argument's shape. `jvp(...,",
            "    tangents=(...))`: the derivative of the value along the tangents (None: zero).",
        ]
    text = "\n".join(lines).replace("\\", "\\\\").replace('"""', '\\"\\"\\"')
    return '    """' + text + '\n    """'


# The generated methods' own names: a parameter spelled so is renamed in Python (`out_`).
_OWN = {"self", "out", "grad_output", "tangents", "got"}


def _py(name: str) -> str:
    """A Slang parameter's Python name: an identifier (``lambda`` -> ``lambda_``) that is none of
    the methods' own."""
    py = argument_name(name)
    while py in _OWN or py.startswith("_hs_"):
        py += "_"
    return py


def _method(head: str, f: MappedFunction, params: tuple[MapParam, ...], extra: str, ret: str) -> list[str]:
    args = [f"        {_py(p.name)}: {_arg()}," for p in params]
    return [
        "    def " + head + "(",
        "        self,",
        *args,
        "        *,",
        f"        {extra},",
        f"    ) -> {ret}:",
    ]


def _body(ret: str, c: str, head: str, specs: list[str], args: list[str], last: str) -> list[str]:
    if len(specs) == 1:
        spec: layout.Code = specs[0]
    else:
        spec = layout.call(f"{c}.map_pick", [layout.tuple_of(specs), layout.tuple_of(args)])
    call = layout.call(head, [spec, layout.tuple_of(args), last])
    return [*layout.lines(call, f"got: {ret} = ", depth=2), "        return got"]


def _call(group: list[MappedFunction], c: str, specs: list[str]) -> list[str]:
    f = group[0]
    outs = _returns(group)
    head = _method("__call__", f, f.inputs, f"out: {outs} | None = None", outs)
    return head + _body(outs, c, f"{c}.map_call", specs, [_py(p.name) for p in f.inputs], "out")


def _vjp(group: list[MappedFunction], c: str, specs: list[str]) -> list[str]:
    f = group[0]
    grads = [_union(group, k) if p.diff else "None" for k, p in enumerate(f.params)]
    ret = "tuple[" + ", ".join(grads) + "]"
    head = _method("vjp", f, f.params, f"grad_output: {_arg()}", ret)
    return head + _body(ret, c, f"{c}.map_vjp", specs, [_py(p.name) for p in f.params], "grad_output")


def _jvp(group: list[MappedFunction], c: str, specs: list[str]) -> list[str]:
    f = group[0]
    ret = _returns(group)
    tangents = "tuple[" + ", ".join(["_hs_Arg | None"] * len(f.params)) + "]"
    head = _method("jvp", f, f.params, f"tangents: {tangents}", ret)
    return head + _body(ret, c, f"{c}.map_jvp", specs, [_py(p.name) for p in f.params], "tangents")


def _spec(f: MappedFunction, c: str, namespace: str, structs: StructDtype) -> list[str]:
    entry = f"_hs_map_{f.key}"
    items: list[layout.Code] = [
        _q(f.key),
        _q(namespace),
        layout.tuple_of([_param(p, c, entry, p.name, structs) for p in f.inputs]),
        layout.tuple_of([_param(p, c, entry, f"hs_out_{p.name}", structs) for p in f.outputs]),
        layout.tuple_of([repr(p.diff) for p in f.params] if f.has_gradients else []),
        f"_hs_map_{f.key}",
    ]
    if f.has_gradients:
        items += [
            f"_hs_vjp_{f.key}",
            f"_hs_jvp_{f.key}",
            layout.tuple_of([layout.tuple_of([_q(p.name), sum_entry(p)]) for p in f.grads]),
        ]
    return layout.lines(layout.call(f"{c}.MapSpec", items, split=True), f"_hs_spec_{f.key} = ")


def render(
    functions: tuple[MappedFunction, ...],
    rel: str,
    c: str,
    own: dict[str, str],
    taken: frozenset[str],
    namespace: str,
    structs: StructDtype,
) -> tuple[str, list[str]]:
    """The module text of ``functions``' objects, and their names (for ``__all__``);
    ``namespace``: their torch ops'; ``structs``: the structured dtypes of struct parameters."""
    text: list[str] = _aliases(functions, own) if functions else []
    exported: list[str] = []
    groups: dict[str, list[MappedFunction]] = {}
    for f in functions:
        groups.setdefault(f.name, []).append(f)
    for name, group in groups.items():
        f = group[0]
        try:
            usable = entry_name(name) == name
        except ExprError:  # (`__name__`: no name a generated module may bind)
            usable = False
        if not usable or name in taken or name in own.values() or name in (c, "_LIB", "torch_ops"):
            raise ShaderError(
                rel,
                f.line,
                f"mapped function `{name}` cannot be a Python name of the generated module (a "
                "keyword, or an entry's, argument's or import's name); rename it",
            )
        if any(
            g.inputs != f.inputs and [p.name for p in g.inputs] != [p.name for p in f.inputs] for g in group
        ):
            raise ShaderError(rel, f.line, f"the instances of `{name}` take different parameters")
        specs = [f"_hs_spec_{g.key}" for g in group]
        cls = f"_hs_Mapped_{name}"
        body = _call(group, c, specs)
        if all(g.has_gradients for g in group):
            body += ["", *_vjp(group, c, specs), "", *_jvp(group, c, specs)]
        for g in group:
            text += ["", "", *_spec(g, c, namespace, structs)]
        text += ["", "", f"class {cls}:", _doc(group, rel), "", *body, "", "", f"{name} = {cls}()"]
        exported.append(name)
    return "\n".join(text) + ("\n" if text else ""), exported
