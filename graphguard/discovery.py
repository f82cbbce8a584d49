"""Which files ``graphguard check PATH ...`` reads (how one is read: :mod:`graphguard.reading`)."""

from __future__ import annotations

import os
import re
import sys

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


_IMPORT = re.compile(rb"^[ \t]*(?:from[ \t]+(\.*)([\w.]*)[ \t]+import[ \t]+([\w, \t(]+)|import[ \t]+([\w., \t]+))",
                     re.MULTILINE)


#: The most imported project modules ``graphguard check FILE`` reads to follow calls (:func:`followed_imports`).
FOLLOW_LIMIT = 500


def _imports(path: str, source: bytes | None = None) -> dict[str, str]:
    """The project modules the file ``path`` imports: dotted name -> the file found for it, in its own
    folder or the current folder (an installed package of the same name is not project code, see
    :func:`_installed`). Read with a regular expression over the file's bytes and a ``stat`` per
    imported name: no analysis. Empty for a file that cannot be read."""
    found_files: dict[str, str] = {}
    if source is None:
        try:
            with open(path, "rb") as handle:
                source = handle.read(1 << 20)
        except OSError:
            return found_files
    folders = [os.path.dirname(os.path.abspath(path)), os.getcwd()]
    for dots, module, names, plain in _IMPORT.findall(source):
        if plain:
            candidates = [part.strip().split(b" ")[0] for part in plain.split(b",")]
        elif module:
            candidates = [module]
        else:  # ``from . import models``
            candidates = [name.strip().split(b" ")[0] for name in names.replace(b"(", b"").split(b",")]
        for dotted in candidates:
            parts = [part.decode("ascii", "replace") for part in dotted.split(b".") if part]
            if not parts:
                continue
            for index, folder in enumerate(folders[:1] if dots else folders):
                base = os.path.join(folder, *parts)
                found = next((f for f in (base + ".py", os.path.join(base, "__init__.py")) if os.path.isfile(f)), None)
                if found is not None:
                    if not (index and _installed(parts[0])):
                        found_files[".".join(parts)] = found
                    break
    return found_files


def followed_imports(explicit: list[str], files: list[str], config,
                     sources: dict[str, bytes] | None = None) -> tuple[list[str], list[str]]:
    """For files named on the command line: the project modules they import, and those modules' own,
    that the run does not check (a new user's trial: ``graphguard check train.py`` passed a loop whose
    op-building helper lives in ``metrics.py``; pre-commit passes only the changed files). They are
    read so that calls into them are followed, as mypy and pyright follow imports, and not reported.
    Returns (paths to read, at most :data:`FOLLOW_LIMIT`; dotted names of those past the limit).
    Excluded files (``exclude``) are not read."""
    seen = {os.path.abspath(f) for f in files}
    followed: list[str] = []
    left: list[str] = []
    frontier = list(explicit[:FOLLOW_LIMIT])
    absolute_style = bool(explicit) and os.path.isabs(explicit[0])
    while frontier:
        imported = {}
        for path in frontier:
            imported.update(_imports(path, sources.get(path) if sources else None))
        frontier = []
        for name, found in imported.items():
            absolute = os.path.abspath(found)
            if absolute in seen:
                continue
            seen.add(absolute)
            relative = os.path.relpath(absolute)
            # written as the named files are (absolute beside absolute): the analysis tells a module
            # beside its importer by their folders (`check /abs/train.py` missed model.py's helper)
            shown = absolute if relative.startswith(os.pardir) or absolute_style else relative
            if config.is_excluded(shown):
                continue
            if len(followed) >= FOLLOW_LIMIT:
                left.append(name)
                continue
            followed.append(shown)
            frontier.append(shown)
    return followed, left


def _installed(name: str) -> bool:
    """Whether the top-level module ``name`` is importable without the current folder: installed in the
    environment (an editable install too) or in the standard library. A script run from elsewhere
    imports that one, so a folder of the same name here (graphguard's own clone, where its demos import
    ``graphguard``) is not the script's project code. Asks the import system's finders; imports nothing."""
    here = os.getcwd()
    search = [entry for entry in sys.path if os.path.abspath(entry or ".") != here]
    for finder in sys.meta_path:
        find = getattr(finder, "find_spec", None)
        if find is None:
            continue
        try:
            if find(name, search) is not None:
                return True
        except (ImportError, ValueError, TypeError):
            continue
    return False
