"""Which files ``graphguard check PATH ...`` reads, and how a file is read safely."""

from __future__ import annotations

import os
import stat

from graphguard.config import Config, gitignored


def _walk(root: str, config: Config):
    stack = [root]
    while stack:
        folder = stack.pop()
        try:
            entries = sorted(os.scandir(folder), key=lambda e: e.name)
        except OSError:
            yield folder  # checked as a file: a GG002 finding says it could not be read, not a silent pass
            continue
        subdirs = []
        for entry in entries:
            try:
                if entry.is_dir(follow_symlinks=False):
                    # Any virtual environment, whatever its name (env/, .env3/, py311/).
                    if not config.is_excluded(entry.path) and not os.path.exists(os.path.join(entry.path, "pyvenv.cfg")):
                        subdirs.append(entry.path)
                elif entry.name.endswith((".py", ".pyi")) and entry.is_file() and not config.is_excluded(entry.path):
                    yield entry.path
            except OSError:
                continue
        stack.extend(reversed(subdirs))


def find_python_files(paths: list[str], config: Config | None = None, force_exclude: bool = False) -> list[str]:
    """Python files under ``paths``, sorted and without duplicates.

    A path that is a file is always included, whatever its name (as ruff does for explicit paths);
    folders are searched recursively, skipping what ``config`` excludes (by default version control,
    caches, build output, ``node_modules``, ``*.egg-info``), any folder holding a ``pyvenv.cfg``, and,
    with ``respect-gitignore`` (the default), files git ignores. Raises ``FileNotFoundError`` naming
    the first path that does not exist. With ``force_exclude`` (what the pre-commit hook passes),
    files named explicitly are excluded by the same rules.
    """
    config = config or Config()
    explicit: dict[str, None] = {}
    walked: dict[str, None] = {}
    for path in paths:
        if os.path.isdir(path):
            for file in _walk(path, config):
                walked[os.path.normpath(file)] = None
        elif os.path.exists(path):
            explicit[os.path.normpath(path)] = None
        else:
            raise FileNotFoundError(path)
    if force_exclude:
        explicit = {p: None for p in explicit if not config.is_excluded(p)}
        walked.update(explicit)
        explicit = {}
    if config.respect_gitignore and walked:
        for ignored in gitignored(list(walked)):
            walked.pop(ignored, None)
    found = sorted({**walked, **explicit}, key=lambda p: p.split(os.sep))
    # One file reached under two names (a symbolic or hard link) is checked once, under the first
    # name: twice, every finding was reported twice and --add-noqa commented each line twice.
    seen: set = set()
    unique = []
    for path in found:
        try:
            info = os.stat(path)
            identity = (info.st_dev, info.st_ino)
        except OSError:
            identity = path
        if identity not in seen:
            seen.add(identity)
            unique.append(path)
    return unique


#: The largest file read (bytes): anything larger is a GG002 finding ("file too large"), not a
#: gigabyte read into memory (a named ``/dev/zero``, a generated table).
MAX_FILE_BYTES = 16 * 1024 * 1024


class FileTooLarge(OSError):
    """Raised by :func:`read_regular` for a file over the size limit; ``strerror`` is the message."""


def _size(count: int) -> str:
    return f"{count / 2**20:.1f} MiB" if count >= 2**20 else f"{count:,} bytes"


def too_large(size: int, limit: int) -> str:
    """The GG002 message for a file of ``size`` bytes over the ``limit`` (``max-file-bytes``)."""
    return f"file too large ({_size(size)}; graphguard reads up to {_size(limit)}: max-file-bytes)"


def read_regular(path: str, limit: int = MAX_FILE_BYTES) -> bytes:
    """The bytes of the regular file ``path``. Raises ``OSError`` with a one-line ``strerror`` for
    anything else: a FIFO or device (opened without blocking, never read: it would hang or never
    end), a folder (with the error that listing it gives: a walk yields a folder it cannot list), or a
    file over ``limit`` bytes (:class:`FileTooLarge`)."""
    if os.path.isdir(path):  # a folder a walk could not list
        os.scandir(path).close()
        raise OSError(0, "a folder, not a file")
    descriptor = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    try:
        info = os.fstat(descriptor)
        if not stat.S_ISREG(info.st_mode):
            raise OSError(0, "not a regular file (a pipe, a device or a folder)")
        if info.st_size > limit:
            raise FileTooLarge(0, too_large(info.st_size, limit))
        with os.fdopen(descriptor, "rb", closefd=False) as handle:
            return handle.read(limit + 1)
    finally:
        os.close(descriptor)
