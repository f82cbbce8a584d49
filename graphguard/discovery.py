"""Which files ``graphguard check PATH ...`` reads (how one is read: :mod:`graphguard.reading`)."""

from __future__ import annotations

import os

from graphguard.config import Config, gitignored

#: What a folder walk checks: Python modules, stubs and Jupyter notebooks (``exclude``/``extend-exclude``
#: ``["*.ipynb"]`` leaves notebooks out).
SUFFIXES = (".py", ".pyi", ".ipynb")


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
                    # Any virtual environment, whatever its name (env/, .env3/, py311/), and a copy of
                    # TensorFlow's own source (the library, not code that uses it: its kernel tests build
                    # ops in loops over test cases on purpose).
                    if (not config.is_excluded(entry.path) and not os.path.exists(os.path.join(entry.path, "pyvenv.cfg"))
                            and not _tensorflow_source(entry)):
                        subdirs.append(entry.path)
                elif entry.name.endswith(SUFFIXES) and entry.is_file() and not config.is_excluded(entry.path):
                    yield entry.path
            except OSError:
                continue
        stack.extend(reversed(subdirs))


def _tensorflow_source(entry: os.DirEntry) -> bool:
    """Whether the folder ``entry`` is a copy of TensorFlow's own source tree (named ``tensorflow`` and
    holding ``python/framework/ops.py``, where TensorFlow defines its ``Graph``), vendored into a
    project. One ``stat`` for a folder of that name, none for any other."""
    return entry.name == "tensorflow" and os.path.exists(os.path.join(entry.path, "python", "framework", "ops.py"))


def _named(path: str) -> bool:
    """Whether ``path``, named on the command line, is something to report on: it exists, or it cannot
    be looked at (a folder on the way that may not be entered, a symbolic-link loop): reading it then
    gives a GG002 finding with the reason, not "no such file". A broken link is missing, as for ruff."""
    try:
        os.stat(path)
        return True
    except FileNotFoundError:
        return False
    except OSError:
        return True  # EACCES, ELOOP, ENAMETOOLONG...: said by the GG002 finding


def find_python_files(paths: list[str], config: Config | None = None, force_exclude: bool = False) -> list[str]:
    """Python files and notebooks (:data:`SUFFIXES`) under ``paths``, sorted and without duplicates.

    A path that is a file is always included, whatever its name (as ruff does for explicit paths);
    folders are searched recursively, skipping what ``config`` excludes (by default version control,
    caches, build output, ``node_modules``, ``*.egg-info``), any folder holding a ``pyvenv.cfg``, and,
    with ``respect-gitignore`` (the default), files git ignores. Raises ``FileNotFoundError`` naming
    the first path that does not exist (a path that exists but cannot be looked at is kept: GG002). With ``force_exclude`` (what the pre-commit hook passes),
    files named explicitly are excluded by the same rules.
    """
    config = config or Config()
    explicit: dict[str, None] = {}
    walked: dict[str, None] = {}
    for path in paths:
        if os.path.isdir(path):
            for file in _walk(path, config):
                walked[os.path.normpath(file)] = None
        elif _named(path):
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
