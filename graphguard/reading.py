"""How graphguard reads a file it did not create: only a regular file, only up to a size limit.

A named FIFO would block the read forever, a device such as ``/dev/zero`` would never end, and a
gigabyte file would be held in memory: each is refused with one ``OSError`` line instead. Used for
source files (GG002), the cache, ``--output-format full`` and ``pyproject.toml``.
"""

from __future__ import annotations

import os
import stat

#: The largest file read (bytes): anything larger is a GG002 finding ("file too large"), not a
#: gigabyte read into memory (a named ``/dev/zero``, a generated table).
MAX_FILE_BYTES = 16 * 1024 * 1024


class FileTooLarge(OSError):
    """Raised by :func:`read_regular` for a file over the size limit; ``strerror`` is the message."""


def _size(count: int) -> str:
    return f"{count / 2**20:.1f} MiB" if count >= 2**20 else f"{count:,} bytes"


def too_large(size: int | None, limit: int, setting: str | None = "max-file-bytes") -> str:
    """The message for a file of ``size`` bytes over the ``limit`` (None: its size is not known, stdin
    being read only up to one byte over it), naming the ``setting`` that sets it."""
    known = f"{_size(size)}; " if size is not None else ""
    return f"file too large ({known}graphguard reads up to {_size(limit)}{': ' + setting if setting else ''})"


def read_regular(path: str, limit: int = MAX_FILE_BYTES, setting: str | None = "max-file-bytes") -> bytes:
    """The bytes of the regular file ``path``. Raises ``OSError`` with a one-line ``strerror`` for
    anything else: a FIFO or device (opened without blocking, never read: it would hang or never
    end), a folder (with the error that listing it gives: a walk yields a folder it cannot list), or a
    file over ``limit`` bytes (:class:`FileTooLarge`, its message naming ``setting``)."""
    if os.path.isdir(path):  # a folder a walk could not list
        os.scandir(path).close()
        raise OSError(0, "a folder, not a file")
    descriptor = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    try:
        info = os.fstat(descriptor)
        if not stat.S_ISREG(info.st_mode):
            raise OSError(0, "not a regular file (a pipe, a device or a folder)")
        if info.st_size > limit:
            raise FileTooLarge(0, too_large(info.st_size, limit, setting))
        with os.fdopen(descriptor, "rb", closefd=False) as handle:
            # In pieces: read(limit + 1) reserves the whole limit up front (a MemoryError under
            # `ulimit -v` for a 180-byte file when the limit is large).
            chunks, total = [], 0
            while total <= limit:
                chunk = handle.read(min(1 << 20, limit + 1 - total))
                if not chunk:
                    break
                chunks.append(chunk)
                total += len(chunk)
            return b"".join(chunks)
    finally:
        os.close(descriptor)
