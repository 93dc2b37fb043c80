"""The contract between generated kernel wrappers and the runtime: what generated code may use.

Modules that hatch-slang generates import this module (as ``_c``) and nothing else of slangrt
but the public ``slangrt.Tensor``, ``slangrt.Image``, ``slangrt.Sampler`` and
``slangrt.TorchTensor`` (in annotations, and a module-level default ``slangrt.Sampler(...)`` per
sampler argument; ``TorchTensor``, a protocol that ``torch.Tensor`` matches, was added within
API 2 and is only ever read by type checkers). It is versioned:
:data:`API_VERSION` changes whenever a name here is removed or changes meaning, and hatch-slang
declares the hatch-slang-runtime releases that provide the version it generates for as the
wheel's ``Requires-Dist`` (API 2: ``hatch-slang-runtime>=0.2,<0.3``; API 1 was the 0.1 series).
A generated module first calls :func:`require` with the version it was written for, so a
runtime that provides another one is refused at import with an ``ImportError`` naming both,
never with an error mid-call.

The names (implemented in ``slangrt._calls._call``, with ``_lastcall`` and ``_library``):

- :func:`require` ``(version, module)``: refuse another API version (kept by every version).
- :func:`library` ``(__file__)``: the package's kernel library (``manifest.json`` beside the
  module); its ``.kernel(shader, entry)`` is the ``Kernel`` to dispatch, and
  ``.kernel(shader, entry, {name: value})`` that kernel specialized with the values of its
  specialization constants (checked there; one pipeline per distinct set). Added in API 2.
- :class:`Dims` ``(name)``: one call's argument checks (``name``: the entry, for messages):
  ``given``, ``array``, ``get``, ``expect``, ``derived``, ``pack`` and ``run`` (the dispatch);
  ``array``'s dtype may be a NumPy structured dtype (a buffer of structs: the argument's must
  equal it, field names included), and ``pointer`` ``(name, value, dtype)`` checks a pointer to
  structs (a ``slangrt.Tensor`` of that structured dtype) before ``pack`` packs its address
  (both added in API 2);
  for images, samplers and texel buffers ``image`` (a storage or sampled image: a
  ``slangrt.Image`` or a NumPy array, checked against the binding's dim, arrayed, channels,
  texel and declared format, its documented size axes bound like an array's), ``combined`` (an
  image or ``(image, slangrt.Sampler)``; returns the pair), ``sampler`` (None: the wrapper's
  default ``slangrt.Sampler``) and ``texels`` (a ``slangrt.Tensor`` or NumPy array ``(N,)`` or
  ``(N, C)``). Those four were added within API 1 (the 0.1 series, before its first release),
  and a call that uses them is never kept by ``LastCall``: it takes every check each time.
- :class:`LastCall` ``()``: one per wrapper, at module level; ``.repeat(arrays, scalars)``
  dispatches again, unchecked, when a call's arguments are the last kept call's (the same open
  tensors, equal values of the same types), and ``Dims.run(..., last=, args=, scalars=)`` keeps
  a call that may be repeated. Added within API 1 (the 0.1 series, before its first release).
- API 2 (the 0.2 series): ``Dims.pack(name, size, fields, whole=())`` takes a vector, matrix
  or array field of an uncommented block as one value, ``(field, offset, scalar, value, shape,
  strides)``: a sequence or NumPy array shaped as Slang indexes it, written at ``offset +
  sum(index * stride)`` (the compiled layout's strides), its shape and element kind checked
  (``slangrt._calls._values``). API 1 wrappers took such a field one component at a time
  (``transform_0_x`` ...), so their keyword arguments changed meaning with it. Within API 2,
  ``Dims.pack(name, size, fields, whole, structs)``: ``structs`` holds ``(field, offset, value,
  dtype, shape)`` per struct or array-of-struct field, a NumPy structured scalar or array of
  that ``shape`` whose dtype equals ``dtype`` (the module's, as the block lays the struct out),
  copied as its bytes (``slangrt._calls._values.write_struct``); a wrapper without struct
  values never passes it.
- :func:`pick` ``(name, arrays, instances, args, kwargs)``: the function named after a generic
  entry (``gscale``) calls the one instance (``gscale_float``) whose array dtypes the arguments
  have; none, or several, is a ``TypeError`` listing the instances (``_calls._pick``). Added in API 2.
- :func:`choose` ``(name, keyword, value, choices, args, kwargs)``: the function named after an
  entry with an interface-typed parameter calls the instance built for the type its keyword
  names (``op="Square"``); another value is a ``TypeError`` listing the types. With several
  such parameters, ``keyword`` and ``value`` are tuples (their names, the values given) and each
  choice's types a tuple, one type each. Added in API 2.
- :class:`TorchOps` ``(namespace, specs)``: a module's wrappers as torch custom ops (the hook
  option ``torch-ops``; ``specs``: ``(name, wrapper, schema, mutated arguments)`` each),
  registered on first use (``slangrt._cuda._ops``). Added in API 2.
- :class:`MapParam` ``(name, dtype, shape)``, :class:`MapSpec` ``(name, namespace, params,
  outputs, grads, forward, backward, tangent, sums)``, :func:`map_call` ``(spec, args, out)``,
  :func:`map_vjp` ``(spec, args, grad_output)``, :func:`map_jvp` ``(spec, args, tangents)``
  and :func:`map_pick` ``(specs, args)`` (a generic's instance by the arguments' dtypes):
  a mapped function (hatch-slang's ``slang-map``) applied elementwise with NumPy broadcasting
  through its generated entries, its gradients and its forward-mode derivative; on torch
  tensors, a torch custom op with autograd (``slangrt._calls._mapped``, ``_mapped_api``, ``_mapped_torch``).
  Added within API 2.
- :class:`Variants` ``(name, library, entries)``: a function that runs the first of several
  entries (``(wrapper name, shader, entry, wrapper)`` each, in order) that the device supports
  (hatch-slang's ``slang-variants``); ``.pick(arrays)`` is the wrapper a call with those array
  arguments runs, ``.chosen(device)`` its name, ``.paths(device)`` what each entry lacks there
  (``slangrt._calls._variants``). Added within API 2.
- :func:`grid_dim` ``(axis, value)``, :func:`grid_arg` ``(grid)``: a computed or an explicit grid
  (within API 2, ``grid_arg`` also takes a grid read on the device: a ``slangrt.IndirectGrid``
  or a ``slangrt.Tensor``); :func:`grid_or` ``(grid, computed)``: a Dispatch line's grid
  ``computed``, or the caller's indirect ``grid=`` in its place (added within API 2).
- :func:`div`, :func:`ceil`, :func:`min`, :func:`max`: the arithmetic of shape and Dispatch
  expressions (``/`` is exact division); ``+ - * // %`` are Python's own. ``hatch_slang.comments.expr``
  evaluates expressions with these same functions.
"""

from __future__ import annotations

from ._calls._call import Dims, ceil, div, grid_arg, grid_dim, grid_or, library, max, min
from ._calls._lastcall import LastCall
from ._calls._mapped import Param as MapParam
from ._calls._mapped import Spec as MapSpec
from ._calls._mapped_api import call as map_call
from ._calls._mapped_api import jvp as map_jvp
from ._calls._mapped_api import pick as map_pick
from ._calls._mapped_api import vjp as map_vjp
from ._calls._pick import choose, pick
from ._calls._variants import Variants
from ._cuda._ops import TorchOps

API_VERSION = 2

__all__ = [
    "API_VERSION",
    "Dims",
    "LastCall",
    "MapParam",
    "MapSpec",
    "TorchOps",
    "Variants",
    "WrapperAPIError",
    "ceil",
    "choose",
    "div",
    "grid_arg",
    "grid_dim",
    "grid_or",
    "library",
    "map_call",
    "map_jvp",
    "map_pick",
    "map_vjp",
    "max",
    "min",
    "pick",
    "require",
]


class WrapperAPIError(ImportError):
    """A generated module written for a wrapper API version this runtime does not provide."""


def require(version: int, module: str) -> None:
    """Refuse ``module``, generated for wrapper API ``version``, unless this runtime provides it."""
    if version != API_VERSION:
        from slangrt import __version__

        raise WrapperAPIError(
            f"{module} was generated for slangrt wrapper API {version}, but the installed "
            f"hatch-slang-runtime {__version__} provides wrapper API {API_VERSION}: install a "
            f"hatch-slang-runtime that provides API {version}, or rebuild the package with a "
            f"hatch-slang that generates API {API_VERSION}",
            name=module,
        )
