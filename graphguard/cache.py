"""The result cache: ``.graphguard_cache/`` keeps each file's phase-1 facts between runs.

What is cached is what reading one file produced (its :class:`~graphguard.analysis.facts.ModuleFacts`,
its ``GG001``/``GG002`` findings, whether it has suppression comments), keyed by the file's path,
modification time and size; and the last run's findings, keyed by every file's key and the selected
rules, so a run in which nothing changed reads one small file. The cache file itself is keyed by
graphguard's version and the size and modification time of its own analysis, rule and checker files
(an editable install changes them without a new version), the TensorFlow API data it classifies names
with, and the settings that change what is read (``session-names``, ``session-factories``). Summaries and findings (phases 2 and 3) are recomputed from the facts on
every run, so a changed helper module changes the findings of the modules that call it, with nothing to
invalidate by hand; the one exception is an edit that only moves lines, answered from the last run's
findings (:mod:`graphguard.incremental`), which the run file keeps with every file's key.

Each file's entry stays pickled on its own (the bytes a worker process sent back): a run unpickles only
the entries it uses, and saving after one changed file writes the other entries' bytes as they were.

Layout (as ruff's): ``<cache-dir>/CACHEDIR.TAG`` (so backup tools skip it), ``<cache-dir>/.gitignore``
(``*``), ``<cache-dir>/<version>/facts-<settings hash>.pickle`` and ``run-<settings hash>.pickle``,
written atomically (a temporary file
then ``os.replace``). A cache file is unpickled with an allow-list of graphguard's own classes, so a
cache planted in a repository cannot run code.
"""

from __future__ import annotations

import hashlib
import io
import os
import pickle
import re
import tempfile

from graphguard import __version__
from graphguard.reading import read_regular

CACHEDIR_TAG = (
    "Signature: 8a477f597d28d172789f06886806bc55\n"
    "# This file is a cache directory tag created by graphguard.\n"
    "# For information about cache directory tags, see https://bford.info/cachedir/\n"
)

_ALLOWED_MODULES = ("graphguard.analysis.", "graphguard.diagnostics", "graphguard.checker", "graphguard.fix.edits")
_ALLOWED_BUILTINS = frozenset({"frozenset", "set", "tuple", "list", "dict"})


class _SafeUnpickler(pickle.Unpickler):
    """Loads only graphguard's own classes and a few container builtins: a dotted name
    (``graphguard.checker`` + ``os.system``) or anything that is not a class defined in graphguard
    (or one of its enum members and markers) is refused."""

    _allowed: dict = {}  # (module, name) -> what find_class gave, for the next pickle (entries are one each)

    def find_class(self, module, name):
        found = self._allowed.get((module, name))
        if found is not None:
            return found
        found = self._find_class(module, name)
        self._allowed[(module, name)] = found
        return found

    def _find_class(self, module, name):
        if "." in name or not name.isidentifier():
            raise pickle.UnpicklingError(f"{module}.{name} is not allowed in a graphguard cache")
        if module == "builtins" and name in _ALLOWED_BUILTINS:
            return super().find_class(module, name)
        if module.startswith(_ALLOWED_MODULES):
            found = super().find_class(module, name)
            owner = found.__module__ if isinstance(found, type) else type(found).__module__
            if owner.startswith("graphguard.") and (isinstance(found, type) or _is_constant(found)):
                return found
        raise pickle.UnpicklingError(f"{module}.{name} is not allowed in a graphguard cache")


def _is_constant(value) -> bool:
    """An enum member or a marker object of graphguard's (``SESSION``), never a function."""
    import enum

    from graphguard.analysis.bindings import _Marker

    return isinstance(value, (enum.Enum, _Marker))


_STAMP: list = []


def _code_stamp() -> str:
    """Size and modification time of graphguard's own analysis, rules and checker files: with an
    editable install (``pip install -e .``), a changed rule or analysis must not be answered from a
    cache written by the previous code under the same version. A few dozen ``stat`` calls, once per
    process."""
    if not _STAMP:
        package = os.path.dirname(os.path.abspath(__file__))
        parts = []
        for folder in (package, os.path.join(package, "analysis"), os.path.join(package, "rules")):
            try:
                names = sorted(os.listdir(folder))
            except OSError:
                continue
            for name in names:
                if name.endswith((".py", ".json")):
                    try:
                        stat = os.stat(os.path.join(folder, name))
                    except OSError:
                        continue
                    parts.append(f"{os.path.basename(folder)}/{name}:{stat.st_size}:{stat.st_mtime_ns}")
        _STAMP.append(hashlib.sha256("\n".join(parts).encode()).hexdigest()[:16])
    return _STAMP[0]


class FactsCache:
    """Per-file results of phase 1, and the last run's findings, for one combination of version and
    settings.

    ``folder`` is the cache directory; ``settings`` a string that changes when anything that affects
    reading a file changes. The per-file entries are loaded lazily, on the first :meth:`get`: a run in
    which nothing changed is answered from the small run file (:meth:`run_result`) without them.
    """

    def __init__(self, folder: str, settings: str) -> None:
        self.folder = folder
        self._settings = settings
        self.select("")

    def select(self, extra: str) -> None:
        """Use the cache files for ``extra`` too (the checker passes a digest of the run's module names,
        which decide which imports are project code)."""
        text = f"{__version__}\0{_code_stamp()}\0{self._settings}\0{extra}"
        digest = hashlib.sha256(text.encode("utf-8", "surrogateescape")).hexdigest()[:16]
        self.path = os.path.join(self.folder, __version__, f"facts-{digest}.pickle")
        self.run_path = os.path.join(self.folder, __version__, f"run-{digest}.pickle")
        self.fixes_path = os.path.join(self.folder, __version__, f"fixes-{digest}.pickle")
        self._entries: dict | None = None
        self._dirty = False
        self._fixes: dict | None = None
        self._fixes_dirty = False
        self._run = None
        self._stored_run = None

    @staticmethod
    def _load(path: str):
        try:
            # Only a regular file: a FIFO planted here would hang every run.
            return loads(read_regular(path, limit=1 << 31))
        except OSError:
            return None  # no cache

    @staticmethod
    def key(path: str) -> tuple | None:
        """(modification time in ns, size in bytes, status-change time in ns, inode) of ``path``, or None
        when it cannot be read. The change time is set by the kernel on every write and cannot be set
        back (``touch -r`` restores the modification time only), so an edit that keeps the size and
        the modification time still misses the cache."""
        try:
            stat = os.stat(path)
        except OSError:
            return None
        return (stat.st_mtime_ns, stat.st_size, stat.st_ctime_ns, stat.st_ino)

    def get(self, path: str, key: tuple):
        """The value stored for ``path`` under ``key`` (its :meth:`key` when it was stored), or None."""
        if self._entries is None:
            entries = self._load(self.path)
            self._entries = entries if isinstance(entries, dict) else {}
        entry = self._entries.get(os.path.abspath(path))
        if isinstance(entry, tuple) and len(entry) == 2 and entry[0] == key and isinstance(entry[1], bytes):
            return loads(entry[1])
        return None

    def has(self, path: str, key: tuple) -> bool:
        """Whether an entry for ``path`` is stored under ``key`` (not unpickled: :meth:`get` may still
        find it damaged)."""
        if self._entries is None:
            self.get(path, None)
        entry = self._entries.get(os.path.abspath(path))
        return isinstance(entry, tuple) and len(entry) == 2 and entry[0] == key and isinstance(entry[1], bytes)

    def stored(self, path: str) -> tuple | None:
        """(key, pickled value) stored for ``path`` under any key (what a file held before it changed),
        or None; :func:`loads` reads the value."""
        if self._entries is None:
            self.get(path, None)
        entry = self._entries.get(os.path.abspath(path))
        if isinstance(entry, tuple) and len(entry) == 2 and isinstance(entry[1], bytes):
            return entry
        return None

    def put(self, path: str, key: tuple, value, pickled: bytes | None = None) -> None:
        """Store ``value`` for ``path`` under ``key``; ``pickled`` is ``value`` already pickled (as a
        worker process sends it back), kept as it is. Entries stay pickled, one each, so a run loads
        only the entries it uses, and saving after one changed file writes the others' bytes as they were."""
        if self._entries is None:
            self.get(path, key)
        self._entries[os.path.abspath(path)] = (key, pickled if pickled is not None else
                                                pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL))
        self._dirty = True

    def get_fixes(self, path: str, key: tuple):
        """The fixes stored for ``path`` under ``key`` (:func:`graphguard.fix.attach.job_key`: the file
        and its findings), one ``(Fix or None, reason or None)`` per finding, or None. Loaded on first
        use: only output formats that carry fixes read this file."""
        if self._fixes is None:
            stored = self._load(self.fixes_path)
            self._fixes = stored if isinstance(stored, dict) else {}
        entry = self._fixes.get(os.path.abspath(path))
        if isinstance(entry, tuple) and len(entry) == 2 and entry[0] == key and isinstance(entry[1], bytes):
            value = loads(entry[1])
            return value if isinstance(value, list) else None
        return None

    def put_fixes(self, path: str, key: tuple, value: list) -> None:
        """Store the fixes of ``path``'s findings under ``key`` (see :meth:`get_fixes`)."""
        if self._fixes is None:
            self.get_fixes(path, key)
        self._fixes[os.path.abspath(path)] = (key, pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL))
        self._fixes_dirty = True

    def _last(self):
        if self._stored_run is None:
            stored = self._load(self.run_path)
            self._stored_run = stored if isinstance(stored, tuple) and len(stored) == 2 else (None, None)
        return self._stored_run

    def run_result(self, run_key: str):
        """What the checker kept of the last run if its key was exactly ``run_key`` (every file's key,
        the selection), or None."""
        stored = self._last()
        return stored[1] if stored[0] == run_key else None

    def last_run(self):
        """What the checker kept of the last run, whatever its key (an edit that only moves lines is
        answered from it: :mod:`graphguard.incremental`), or None."""
        return self._last()[1]

    def put_run_result(self, run_key: str, value) -> None:
        """Keep ``value``, what the checker needs of the run with ``run_key``."""
        self._run = (run_key, value)

    def save(self) -> None:
        """Write the cache atomically; a cache that cannot be written is skipped silently (it is only a cache)."""
        try:
            if unusable(self.folder) is not None:
                return  # never write into a folder that is not graphguard's (the CLI says so once)
            os.makedirs(os.path.dirname(self.path), exist_ok=True)
            for name, text in (("CACHEDIR.TAG", CACHEDIR_TAG), (".gitignore", _GITIGNORE)):
                marker = os.path.join(self.folder, name)
                if not os.path.exists(marker):
                    with open(marker, "w", encoding="utf-8") as handle:
                        handle.write(text)
            if self._dirty:
                _write_atomically(self.path, self._entries)
                self._dirty = False
            if self._fixes_dirty:
                _write_atomically(self.fixes_path, self._fixes)
                self._fixes_dirty = False
            if self._run is not None:
                _write_atomically(self.run_path, self._run)
                self._stored_run, self._run = self._run, None
        except OSError:
            pass


def loads(data: bytes):
    """Unpickle ``data`` with the allow-list of graphguard's own classes; None when it cannot be read
    (damaged, or written by another version)."""
    try:
        return _SafeUnpickler(io.BytesIO(data)).load()
    except (pickle.UnpicklingError, EOFError, AttributeError, ValueError, TypeError, ImportError,
            KeyError, IndexError, MemoryError, OverflowError, RecursionError):
        return None  # from another version, or damaged: start afresh


def _write_atomically(path: str, value) -> None:
    handle, temporary = tempfile.mkstemp(prefix=".graphguard-", dir=os.path.dirname(path))
    try:
        with os.fdopen(handle, "wb") as out:
            pickle.dump(value, out, protocol=pickle.HIGHEST_PROTOCOL)
        os.replace(temporary, path)
    except BaseException:
        if os.path.exists(temporary):
            os.unlink(temporary)
        raise


_GITIGNORE = "# Created by graphguard.\n*\n"
#: The names graphguard writes in its cache folder: the markers and one folder per version.
_VERSION_FOLDER = re.compile(r"^\d+(?:\.\d+)+(?:[.+-][\w.+-]*)?$")
#: The names graphguard writes in a version folder: the caches and the temporary files of atomic writes.
_CACHE_FILE = re.compile(r"^(?:(?:facts|run|fixes)-[0-9a-f]{16}\.pickle|\.graphguard-\w+)$")


def _is_ours(folder: str) -> bool:
    """Whether ``folder`` holds graphguard's own marker and nothing but graphguard's names."""
    try:
        with open(os.path.join(folder, "CACHEDIR.TAG"), encoding="utf-8") as handle:
            if handle.read() != CACHEDIR_TAG:
                return False
        for entry in os.listdir(folder):
            path = os.path.join(folder, entry)
            if entry in ("CACHEDIR.TAG", ".gitignore") and os.path.isfile(path) and not os.path.islink(path):
                continue
            if not (_VERSION_FOLDER.match(entry) and os.path.isdir(path) and not os.path.islink(path)):
                return False
            if not all(_CACHE_FILE.match(name) for name in os.listdir(path)):
                return False
    except (OSError, UnicodeDecodeError):
        return False
    return True


def unusable(folder: str) -> str | None:
    """Why ``folder`` cannot be graphguard's cache folder, or None when it can: it is a symbolic link
    (it would be followed outside the project), not a folder, a folder that cannot be made (it is made
    here when missing), or a folder that already holds files that are not graphguard's (``--cache-dir
    .``: graphguard never writes its markers there)."""
    if os.path.islink(folder):
        return "is a symbolic link"
    if not os.path.exists(folder):
        try:
            os.makedirs(folder)  # made now (as ruff makes .ruff_cache), so a folder that cannot be is said
        except FileExistsError:
            pass
        except OSError as error:
            return f"cannot be made ({error.strerror})"
        return None
    if not os.path.isdir(folder):
        return "is not a folder"
    try:
        if not os.listdir(folder):
            return None
    except OSError as error:
        return f"cannot be read ({error.strerror})"
    return None if _is_ours(folder) else "holds files that are not graphguard's"


def clean(folder: str) -> bool:
    """Remove graphguard's cache from ``folder``: its ``CACHEDIR.TAG`` and ``.gitignore`` and the
    ``<version>/facts-*.pickle`` and ``run-*.pickle`` files, then the folders left empty. Only a folder
    that is graphguard's (its marker and only graphguard's names in it, not a symbolic link) is
    touched, so ``--cache-dir .`` cannot cost a user a file. Raises ``ValueError`` for any other
    folder. Returns False when there is nothing to remove (no such folder)."""
    if not os.path.lexists(folder):
        return False
    reason = unusable(folder)
    if reason is None and not os.listdir(folder):
        reason = "holds no graphguard cache"
    if reason is not None:
        raise ValueError(f"{folder} is not a graphguard cache: it {reason}; nothing removed")
    for entry in sorted(os.listdir(folder)):
        path = os.path.join(folder, entry)
        if entry in ("CACHEDIR.TAG", ".gitignore"):
            continue
        for name in os.listdir(path):
            os.unlink(os.path.join(path, name))
        os.rmdir(path)
    os.unlink(os.path.join(folder, "CACHEDIR.TAG"))
    ignore = os.path.join(folder, ".gitignore")
    try:
        with open(ignore, encoding="utf-8") as handle:
            if handle.read() == _GITIGNORE:
                os.unlink(ignore)
    except OSError:
        pass
    try:
        os.rmdir(folder)
    except OSError:
        pass  # the current folder, or a .gitignore the user edited: leave it
    return True


class MemoryCache:
    """A :class:`FactsCache` that lives only as long as one command: ``--fix`` with ``--no-cache``
    re-lints the run after each file's fixes, and without it every file was read again for every
    file fixed (a folder of 300 files took minutes). Nothing is written to disk."""

    key = staticmethod(FactsCache.key)

    def __init__(self) -> None:
        self._entries: dict = {}
        self._digest = ""

    def select(self, digest: str) -> None:
        self._digest = digest

    def get(self, path: str, key: tuple):
        entry = self._entries.get((self._digest, os.path.abspath(path)))
        return entry[1] if entry is not None and entry[0] == key else None

    def has(self, path: str, key: tuple) -> bool:
        entry = self._entries.get((self._digest, os.path.abspath(path)))
        return entry is not None and entry[0] == key

    def stored(self, path: str) -> tuple | None:
        return self._entries.get((self._digest, os.path.abspath(path)))

    def put(self, path: str, key: tuple, value, pickled: bytes | None = None) -> None:
        self._entries[(self._digest, os.path.abspath(path))] = (key, value)

    def run_result(self, run_key: str):
        return None

    def last_run(self):
        return None

    def put_run_result(self, run_key: str, value) -> None:
        pass

    def save(self) -> None:
        pass
