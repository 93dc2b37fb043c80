"""The ``VkSampler`` objects of an open device: made once per set of sampler settings, shared by
every sampler argument with those settings, destroyed with the device.

The cache is a part of the core (attached on first use, so destroyed at teardown before the
``VkDevice``); ``slangrt.Sampler`` (``_devices._sampler``) validates the settings and hands the
create-info fields here with the key they are cached under.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Hashable, Mapping
from typing import Any

from . import _vk
from ._core import Core

__all__ = ["Samplers", "sampler_handle", "samplers"]


class Samplers:
    """The samplers made on one device, by key."""

    def __init__(self, core: Core) -> None:
        self._core = core
        self._lock = threading.Lock()
        self._items: dict[Hashable, Any] = {}

    def get(self, key: Hashable, fields: Mapping[str, Any], what: str) -> Any:
        """The ``VkSampler`` for ``key``, made from the ``VkSamplerCreateInfo`` ``fields`` the
        first time."""
        with self._lock:
            handle = self._items.get(key)
            if handle is not None:
                return handle
            vk = _vk.vk()
            info = vk.ffi.new(
                "VkSamplerCreateInfo*", {"sType": vk.VK_STRUCTURE_TYPE_SAMPLER_CREATE_INFO, **fields}
            )
            out = vk.ffi.new("VkSampler*")
            _vk.check(vk.lib.vkCreateSampler(self._core.handle, info, vk.ffi.NULL, out), f"creating {what}")
            self._items[key] = out[0]
            return out[0]

    def __len__(self) -> int:
        return len(self._items)

    def destroy(self) -> None:
        with self._lock:
            items, self._items = list(self._items.values()), {}
        if not self._core.alive:
            return
        vk = _vk.vk()
        for handle in items:
            vk.lib.vkDestroySampler(self._core.handle, handle, vk.ffi.NULL)


_by_core: weakref.WeakKeyDictionary[Core, Samplers] = weakref.WeakKeyDictionary()
_lock = threading.Lock()


def samplers(core: Core) -> Samplers:
    """``core``'s sampler cache (made and attached to the core on first use)."""
    with _lock:
        cache = _by_core.get(core)
        if cache is None:
            core.check_usable()
            cache = _by_core[core] = Samplers(core)
            core.attach(cache)
        return cache


def sampler_handle(core: Core, key: Hashable, fields: Mapping[str, Any], what: str) -> Any:
    """The ``VkSampler`` on ``core`` for the settings ``key`` (see :meth:`Samplers.get`)."""
    core.check_usable()
    return samplers(core).get(key, fields, what)
