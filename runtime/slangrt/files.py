"""Reading a file neither side wrote itself (a package's SPIR-V and manifest, the pipeline cache;
hatch-slang's build cache and the sources its entries name), bounded: only a regular file, only
up to a size. Public: the one such reader of both distributions.

Anyone who can write such a path can put something else there: a FIFO (a plain ``read`` blocks
for ever), a link to ``/dev/zero`` (it never ends) or a huge file. Each is an ``OSError`` naming
the path, which the caller turns into its own error (a package's) or a miss (a cache's)."""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

__all__ = ["read_regular"]


_FLAGS = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_BINARY", 0)


def read_regular(path: Path, limit: int, *, follow: bool = True) -> bytes:
    """The bytes of ``path``, a regular file of at most ``limit`` bytes; else ``OSError``
    (``ValueError`` for a path holding a NUL).

    Opened without blocking (a FIFO opens at once and is then refused by its type), checked by
    the open file's type and size, and read no further than the limit (a file that grows while
    it is read is refused too). ``follow=False``: a symbolic link is refused too."""
    fd = os.open(path, _FLAGS | (0 if follow else getattr(os, "O_NOFOLLOW", 0)))
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise OSError(errno.EINVAL, "not a regular file", str(path))
        if info.st_size > limit:
            raise OSError(errno.EFBIG, f"{info.st_size} bytes, more than {limit}", str(path))
        chunks: list[bytes] = []
        total = 0
        while chunk := os.read(fd, min(1 << 20, limit + 1 - total)):
            total += len(chunk)
            if total > limit:
                raise OSError(errno.EFBIG, f"more than {limit} bytes", str(path))
            chunks.append(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)
