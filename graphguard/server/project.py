"""The project side of ``graphguard server``: the workspace as ``graphguard check`` run in its root
sees it (configuration, selection, checker, facts cache, file list) and the scope of a lint: every
project file, or the edited file plus the project files it imports (:meth:`Project.closure`).

Nothing here speaks LSP: the protocol side (:mod:`graphguard.server.protocol`) hands documents over
as file names and bytes, and ``log(message, level)`` takes a level name (``"error"``, ``"warning"``,
``"info"``, ``"log"``). pygls is imported only to turn a ``file:`` URI into a path.
"""

from __future__ import annotations

import dataclasses
import io
import os
import re
import time
import tokenize
import types as _stdtypes
from urllib.parse import unquote, urlparse

#: A lint of the whole project slower than this (seconds) makes lints while typing check the edited
#: file with only the project files it imports (``scope`` "auto"); open and save still check them all.
PROJECT_BUDGET = 0.1
#: The accepted values of the ``scope`` initialization option.
SCOPES = ("auto", "project", "imports")
_ROWS = re.compile(r"\r\n|\r|\n")  # the line endings Python's tokenizer (and LSP) count lines by
_FROM = re.compile(rb"^[ \t]*from[ \t]+([\w.]+)[ \t]+import[ \t]+\(?[ \t]*([\w, \t]*)", re.M)
_IMPORT = re.compile(rb"^[ \t]*import[ \t]+([\w., \t]+)", re.M)


def imported_modules(source: bytes, path: str) -> set[str]:
    """The dotted module names ``source`` (the file ``path``, relative to the root) may import, read
    from its import lines without parsing (a document being typed may not parse): ``import a.b``
    gives ``a.b``; ``from a import b, c`` gives ``a``, ``a.b``, ``a.c``; relative imports are resolved
    against ``path``'s folder. Over-approximates; names on continuation lines are not read."""
    names: set[str] = set()
    package = os.path.dirname(os.path.normpath(path)).split(os.sep) if os.path.dirname(path) else []
    for match in _FROM.finditer(source):
        module = match[1].decode("ascii", "replace")
        if module.startswith("."):
            dots = len(module) - len(module.lstrip("."))
            base = package[: len(package) - (dots - 1)] if dots - 1 <= len(package) else []
            module = ".".join([*base, *filter(None, module.lstrip(".").split("."))])
        if module:
            names.add(module)
        for name in match[2].decode("ascii", "replace").split(","):
            name = name.strip().split(" ")[0]
            if name and name != "*":
                names.add(f"{module}.{name}" if module else name)
    for match in _IMPORT.finditer(source):
        for part in match[1].decode("ascii", "replace").split(","):
            words = part.split()
            if words:
                names.add(words[0])
    return names


def encode_text(text: str) -> bytes:
    """A document's text as the bytes its file would hold: in the encoding its coding cookie declares
    (``# -*- coding: latin-1 -*-``), UTF-8 otherwise or when the text cannot be encoded so. A lone
    surrogate (the client's JSON may hold ``"\\ud800"``) is kept as ``surrogatepass`` writes it, as
    graphguard's readers of notebooks and fixes do: the checker then reports the file as one it cannot
    decode (GG001), as it would that file on disk."""
    head = "\n".join(_ROWS.split(text, 2)[:2]).encode("utf-8", "surrogatepass") + b"\n"  # not every row
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(head).readline)
    except SyntaxError:
        encoding = "utf-8"
    if encoding in ("utf-8", "utf-8-sig"):
        return text.encode("utf-8", "surrogatepass")
    try:
        return text.encode(encoding)
    except (UnicodeEncodeError, LookupError):
        return text.encode("utf-8", "surrogatepass")


class ProjectCache:
    """The facts cache of one workspace, kept in memory between lints: a
    :class:`~graphguard.cache.FactsCache` that does not reload its file while the run's module names
    stay the same (``FactsCache.select`` drops its entries each run), or a
    :class:`~graphguard.cache.MemoryCache` when the folder cannot be the cache."""

    @staticmethod
    def make(folder: str, settings: str, log) -> object:
        from graphguard.cache import FactsCache, MemoryCache, unusable

        class ServerCache(FactsCache):
            def select(self, extra: str) -> None:
                if getattr(self, "_extra", None) == extra:
                    self._run = None
                    return
                self._extra = extra
                super().select(extra)

        reason = unusable(folder)
        if reason is not None:
            log(f"graphguard: the cache folder {folder} {reason}; linting with a cache in memory only",
                "warning")
            return MemoryCache()
        return ServerCache(folder, settings)


class Project:
    """The workspace as ``graphguard check`` run in its root would see it: configuration, selection,
    checker, cache and file list. ``root`` None: no workspace; documents are checked alone."""

    def __init__(self, root: str | None, log, scope: str = "auto") -> None:
        self.root = root
        self.log = log
        self.scope = scope  #: "auto", "project" (always every file) or "imports" (while typing)
        self.slow = scope == "imports"  #: lints while typing check only the imported files
        self._imports: dict = {}  # path -> (stat key, imported module names)
        self.error: str | None = None
        self.files: list[str] | None = None
        self._config_stamp = None
        if root:
            # Paths relative to the root, as ``graphguard check .`` run there names them: the same
            # module names, so the same cache files.
            os.chdir(root)
        self._load()

    def _config_path(self):
        from graphguard.config import find_config

        return find_config(self.root) if self.root else None

    def _stamp(self, path):
        try:
            stat = os.stat(path if path else os.path.join(self.root or ".", "pyproject.toml"))
            return (path, stat.st_mtime_ns, stat.st_size)
        except OSError:
            return (path, None, None)

    def _load(self) -> None:
        from graphguard.checker import Checker
        from graphguard.lint import CELLS_OFF_BY_DEFAULT, UsageError, default_cache_dir as _default_cache_dir, known_codes as _known_codes, selection as _selection
        from graphguard.config import Config, ConfigError, load_config

        self.error = None
        path = self._config_path()
        self._config_stamp = self._stamp(path)
        try:
            config = load_config(path, _known_codes())
            if config.path is None:
                config = dataclasses.replace(config, root=self.root or os.getcwd())
            # GG001 off in the editor: a buffer mid-edit does not parse every few keystrokes
            self.selected = _selection(_stdtypes.SimpleNamespace(select=None, extend_select=[], ignore=[]), config,
                                       CELLS_OFF_BY_DEFAULT)
        except (ConfigError, UsageError) as error:
            self.error = f"graphguard: {error}; nothing is checked until the configuration is fixed"
            self.log(self.error, "error")
            config = Config(root=self.root or os.getcwd())
            self.selected = set()
        self.config = config
        self.checker = Checker(self.selected, session_names=config.session_names,
                               session_factories=config.session_factories,
                               max_bounded_iterations=config.max_bounded_iterations,
                               max_file_bytes=config.max_file_bytes)
        self.cache = None
        if self.root:
            self.cache = ProjectCache.make(_default_cache_dir(config), self.checker.settings_key, self.log)
        self.files = None

    def refresh(self, rescan: bool = False) -> None:
        """Read the configuration again if its file changed; list the project's files again when
        ``rescan`` (a document was saved, opened or closed) or when they were never listed."""
        if self._stamp(self._config_path()) != self._config_stamp:
            self._load()
        if self.root and (rescan or self.files is None):
            from graphguard.discovery import find_python_files

            try:
                self.files = find_python_files(["."], self.config)
            except OSError:
                self.files = []

    def path_of(self, uri: str) -> str:
        """The file name graphguard uses for the document ``uri``: relative to the root for a file
        below it (as ``graphguard check .`` names it there), else absolute; an ``untitled:`` document
        is ``untitled.py``."""
        if not uri.startswith("file:"):
            return "untitled.py"
        from pygls.uris import to_fs_path

        path = os.path.normpath(to_fs_path(uri) or unquote(urlparse(uri).path))
        if self.root and path.startswith(os.path.join(self.root, "")):
            return os.path.relpath(path, self.root)
        return path

    def lint(self, path: str, sources: dict, typing: bool = False) -> tuple[list, list]:
        """Lint ``path`` whose current bytes are ``sources[path]`` in the project's context (the other
        open documents' bytes in ``sources`` too); returns (its reported findings, internal errors).
        See :meth:`lint_open`."""
        findings, errors = self.lint_open(path, sources, typing)
        return findings.get(path, []), errors

    def lint_open(self, path: str, sources: dict, typing: bool = False, others=()) -> tuple[dict, list]:
        """Lint ``path`` whose current bytes are ``sources[path]`` in the project's context, the open
        documents ``others`` (file names) from their bytes in ``sources`` too; returns ({file name: its
        reported findings}, internal errors): ``path``'s, and those of each of ``others`` the lint
        covered. A file the configuration excludes (and that ``check .`` therefore skips) has no findings.

        Every project file is checked, from the cache, as ``graphguard check .`` would, and every one
        of ``others`` among them is covered; but when ``typing`` (a lint after a change) and the last
        whole-project lint took longer than :data:`PROJECT_BUDGET`, only ``path`` and the project files
        it imports, transitively, are checked (with a cache in memory), and no other file is covered
        (a finding in one may depend on a file that imports it, which was not checked)."""
        from graphguard.lint import kept as _kept

        if self.error is not None:
            return {name: [] for name in [path, *others]}, []
        files = list(self.files or [])
        if self.root and not os.path.isabs(path) and path not in files:
            # On disk but not checked by `graphguard check .`: excluded. A new file not saved yet
            # is excluded as it will be once saved (a new user's trial: ``gen/new.py`` under
            # ``extend-exclude`` got findings until it was saved).
            if os.path.exists(path) or self.config.is_excluded(path):
                return {path: []}, []
        if path not in files:
            files.append(path)
        cache = self.cache
        whole = not (typing and self.slow and self.scope != "project")
        if not whole:
            files = self.closure(path, files, sources)
            cache = self._typing_cache
        sources = {p: b for p, b in sources.items() if p in files}
        start = time.perf_counter()
        report = self.checker.check_paths(files, sources, jobs=1, cache=cache, explicit=[path])
        if whole and self.scope == "auto":
            self.slow = time.perf_counter() - start > PROJECT_BUDGET and len(files) > 1
        covered = [path, *(name for name in others if name in files and name != path)] if whole else [path]
        return {name: _kept(report, self.config, self.selected, only=name) for name in covered}, report.errors

    @property
    def _typing_cache(self):
        from graphguard.cache import MemoryCache

        if getattr(self, "_memory", None) is None:
            self._memory = MemoryCache()
        return self._memory

    def closure(self, path: str, files: list[str], sources: dict) -> list[str]:
        """``path`` and the files of ``files`` it imports, directly or through each other (module
        names as :func:`graphguard.analysis.fixpoint.module_names` gives them), in ``files``' order."""
        from graphguard.analysis.fixpoint import module_names
        from graphguard.reading import read_regular

        by_name: dict[str, list] = {}
        for file in files:
            for name in module_names(file):
                by_name.setdefault(name, []).append(file)
        seen, todo = {path}, [path]
        while todo:
            current = todo.pop()
            if current in sources:
                # A document over max-file-bytes is not read (GG002): nor are its imports (a regular
                # expression over 20 MB held the event loop's GIL for 200 ms after each pause in typing).
                source = sources[current]
                names = imported_modules(source, current) if len(source) <= self.config.max_file_bytes else set()
            else:
                from graphguard.cache import FactsCache

                key = FactsCache.key(current)
                cached = self._imports.get(current)
                if cached is not None and cached[0] == key:
                    names = cached[1]
                else:
                    try:
                        names = imported_modules(read_regular(current, limit=self.config.max_file_bytes), current)
                    except OSError:
                        names = set()
                    self._imports[current] = (key, names)
            for name in names:
                for file in by_name.get(name, ()):
                    if file not in seen:
                        seen.add(file)
                        todo.append(file)
        return [file for file in files if file in seen]
