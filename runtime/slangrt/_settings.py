"""The runtime's settings: every environment variable slangrt reads, read once, in one place.

:func:`get` reads the environment the first time slangrt needs a setting (when the first device
is listed or opened, not at ``import slangrt``) and returns the same frozen :class:`Settings`
afterwards. Tests and benchmarks change them with :func:`overridden`, or call :func:`reload`
after changing the environment. runtime/README.md ("Environment variables") lists them.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from ._errors import SlangRTError

__all__ = ["Settings", "get", "overridden", "read", "reload"]

_DEFAULT_TIMEOUT_S = 120.0
# How long a wait polls before it sleeps (see _queue.Queue.wait). Waking from the driver's sleep
# costs more than a small kernel takes: a tiny dispatch + wait measured 17.6 µs polling against
# 47.7 µs sleeping on an H200, and 44 against 67-79 µs on lavapipe with 2 cores (where polling
# lost only while other processes kept both cores busy).
_DEFAULT_SPIN_US = 200.0
# Calls closer together than this share one vkQueueSubmit (see _queue): an H200 VM's device takes
# 12 µs over each separate submission, a repeated wrapper call's Python 2-3 µs. Not on a CPU device
# (lavapipe): there the helper thread only competes with the driver's own threads for the cores
# (a tiny call without a wait: 24 µs coalesced against 21 µs alone on 2 cores).
DEFAULT_SUBMIT_DELAY_US = 20.0
_TRUE = ("1", "true", "yes", "on")


@dataclass(frozen=True)
class Settings:
    """What the environment asks of the runtime (see runtime/README.md for each variable)."""

    #: SLANGRT_DEVICE: the default device, an index or a name substring ("" = the best one).
    device: str = ""
    #: SLANGRT_VALIDATION=1: the Khronos validation layer, its errors raised as ValidationError.
    validation: bool = False
    #: SLANGRT_TIMEOUT_S: how long any wait may take.
    timeout_s: float = _DEFAULT_TIMEOUT_S
    #: SLANGRT_SPIN_US: how long a wait polls before it sleeps in the driver.
    spin_us: float = _DEFAULT_SPIN_US
    #: SLANGRT_SUBMIT_DELAY_US: calls this close together share one vkQueueSubmit (0: none do;
    #: None, unset: DEFAULT_SUBMIT_DELAY_US on a GPU, 0 on a CPU device).
    submit_delay_us: float | None = None
    #: SLANGRT_CACHE_DIR (else $XDG_CACHE_HOME/slangrt, else ~/.cache/slangrt): the on-disk
    #: pipeline cache; None (SLANGRT_CACHE_DIR set empty) turns it off.
    cache_dir: Path | None = None
    #: SLANGRT_BATCH_FLUSH: submit an open batch every this many dispatches (0: at the end only).
    batch_flush: int = 0
    #: SLANGRT_COPY_THREADS: threads for large host copies.
    copy_threads: int = 1
    #: SLANGRT_HOST_IMPORT=1: transfers through imported host pages instead of staging.
    host_import: bool = False
    #: SLANGRT_STAGING=1: staging transfers even where device memory is host-visible.
    staging: bool = False
    #: SLANGRT_CUDA: memory and semaphores shared with CUDA. "auto" (unset): on an NVIDIA device
    #: where ``cuda.bindings`` is installed (the ``[cuda]`` extra); "1": exportable wherever the
    #: device has the extensions; "0": never.
    cuda: str = "auto"

    @property
    def timeout_ns(self) -> int:
        return max(1, int(self.timeout_s * 1e9))

    @property
    def spin_s(self) -> float:
        return self.spin_us * 1e-6

    def submit_delay_s(self, device_type: str) -> float:
        """The submission delay for a device of this type ("cpu", "discrete", ...)."""
        delay = self.submit_delay_us
        if delay is None:
            delay = 0.0 if device_type == "cpu" else DEFAULT_SUBMIT_DELAY_US
        return delay * 1e-6


def _flag(env: Mapping[str, str], name: str) -> bool:
    return env.get(name, "").strip().lower() in _TRUE


def _number(env: Mapping[str, str], name: str, default: float, unit: str) -> float:
    raw = env.get(name, "").strip()
    try:
        return float(raw) if raw else default
    except ValueError:
        raise SlangRTError(f"{name} must be a number of {unit}, got {raw!r}") from None


def _cache_dir(env: Mapping[str, str]) -> Path | None:
    raw = env.get("SLANGRT_CACHE_DIR")
    if raw is not None:
        return Path(raw).expanduser() if raw.strip() else None
    xdg = env.get("XDG_CACHE_HOME", "").strip()
    base = Path(xdg) if xdg else Path.home() / ".cache"
    return base / "slangrt"


def _copy_threads(env: Mapping[str, str]) -> int:
    raw = env.get("SLANGRT_COPY_THREADS", "").strip()
    if raw.isdigit():
        return max(1, int(raw))
    # On the H200's 16 cores, 16 threads copied 256 MiB at 18-21 GB/s, 8 at 18-20, one at 10.
    # Two cores are busy enough with one copy (and, on lavapipe, with the driver's threads).
    cpus = os.cpu_count() or 1
    return 1 if cpus < 4 else min(16, cpus)


def _cuda(env: Mapping[str, str]) -> str:
    raw = env.get("SLANGRT_CUDA", "").strip().lower()
    if raw in ("", "auto"):
        return "auto"
    if raw in ("1", "0"):
        return raw
    raise SlangRTError(f"SLANGRT_CUDA={raw!r}: expected auto, 1 or 0")


def read(env: Mapping[str, str] | None = None) -> Settings:
    """Settings from ``env`` (default ``os.environ``); SlangRTError for a malformed number."""
    e = os.environ if env is None else env
    flush = e.get("SLANGRT_BATCH_FLUSH", "").strip()
    return Settings(
        device=e.get("SLANGRT_DEVICE", "").strip(),
        validation=_flag(e, "SLANGRT_VALIDATION"),
        timeout_s=_number(e, "SLANGRT_TIMEOUT_S", _DEFAULT_TIMEOUT_S, "seconds"),
        spin_us=max(0.0, _number(e, "SLANGRT_SPIN_US", _DEFAULT_SPIN_US, "microseconds")),
        submit_delay_us=(
            max(0.0, _number(e, "SLANGRT_SUBMIT_DELAY_US", 0.0, "microseconds"))
            if e.get("SLANGRT_SUBMIT_DELAY_US", "").strip()
            else None
        ),
        cache_dir=_cache_dir(e),
        batch_flush=int(flush) if flush.isdigit() else 0,
        copy_threads=_copy_threads(e),
        host_import=_flag(e, "SLANGRT_HOST_IMPORT"),
        staging=_flag(e, "SLANGRT_STAGING"),
        cuda=_cuda(e),
    )


_current: Settings | None = None
_lock = threading.Lock()


def get() -> Settings:
    """The settings, read from the environment on first use."""
    s = _current
    return s if s is not None else reload()


def reload() -> Settings:
    """Read the environment again (for tests that change it); returns the new settings."""
    global _current
    with _lock:
        _current = read()
        return _current


@contextmanager
def overridden(**changes: Any) -> Iterator[Settings]:
    """Inside the block, :func:`get` returns the settings with ``changes`` (field=value)."""
    global _current
    before = get()
    _current = replace(before, **changes)
    try:
        yield _current
    finally:
        _current = before
