"""Which files ``graphguard check PATH ...`` reads."""

from __future__ import annotations

import os
from pathlib import Path

#: Folder names never descended into: version control, caches, build output, dependencies.
SKIPPED_DIRS = frozenset(
    {
        ".git", ".hg", ".svn", ".bzr", "__pycache__", ".mypy_cache", ".pytest_cache", ".ruff_cache",
        ".tox", ".nox", ".eggs", ".venv", "venv", "build", "dist", "node_modules", "site-packages",
        "__pypackages__", ".ipynb_checkpoints", ".graphguard_cache",
    }
)


def _skip_dir(entry: os.DirEntry) -> bool:
    name = entry.name
    if name in SKIPPED_DIRS or name.endswith(".egg-info"):
        return True
    # Any virtual environment, whatever its name (env/, .env3/, py311/).
    return os.path.exists(os.path.join(entry.path, "pyvenv.cfg"))


def _walk(root: str):
    stack = [root]
    while stack:
        folder = stack.pop()
        try:
            entries = sorted(os.scandir(folder), key=lambda e: e.name)
        except OSError:
            continue
        subdirs = []
        for entry in entries:
            try:
                if entry.is_dir(follow_symlinks=False):
                    if not _skip_dir(entry):
                        subdirs.append(entry.path)
                elif entry.name.endswith((".py", ".pyi")) and entry.is_file():
                    yield entry.path
            except OSError:
                continue
        stack.extend(reversed(subdirs))


def find_python_files(paths: list[str]) -> list[str]:
    """Python files under ``paths``, sorted and without duplicates.

    A path that is a file is always included, whatever its name (as ruff does for explicit paths);
    folders are searched recursively, skipping :data:`SKIPPED_DIRS`, ``*.egg-info`` and any folder
    holding a ``pyvenv.cfg``. Raises ``FileNotFoundError`` naming the first path that does not exist.
    """
    found: dict[str, None] = {}
    for path in paths:
        if os.path.isdir(path):
            for file in _walk(path):
                found[os.path.normpath(file)] = None
        elif os.path.exists(path):
            found[os.path.normpath(path)] = None
        else:
            raise FileNotFoundError(path)
    return sorted(found, key=lambda p: Path(p).parts)
