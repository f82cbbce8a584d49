"""``[tool.graphguard]`` in ``pyproject.toml``: what to check, what to skip, which names are sessions.

The closest ``pyproject.toml`` that has a ``[tool.graphguard]`` table, walking up from the path
checked (from the deepest folder holding them all when there are several; the current folder for
stdin without ``--stdin-filename``), wins: the same files get the same settings in any order; ``--config FILE`` names one explicitly. Keys are ruff's where
the meaning is the same::

    [tool.graphguard]
    select = ["GG1"]                  # codes or prefixes; default: every rule except GG900
    extend-select = ["GG900"]
    ignore = ["GG105"]
    per-file-ignores = { "tests/*" = ["GG101"] }
    exclude = ["third_party"]         # replaces the default excludes
    extend-exclude = ["legacy/*.py"]
    respect-gitignore = true          # default: files git ignores are not checked
    output-format = "concise"
    session-factories = ["utils.session.make_session"]   # project functions that return a session
    session-names = ["runner"]        # extra names always taken as sessions
    max-bounded-iterations = 10       # every rule stays silent when a construction repeats at most this often
    max-file-bytes = 16777216         # larger files are not read: a GG002 finding (default 16 MiB)

    [tool.graphguard.pytest]          # pytest --graphguard (graphguard.pytest_plugin checks these keys)
    max-traces = 8

Patterns are shell globs (``fnmatch``), matched against the path relative to the folder of the
configuration file and against each folder or file name on it, as ruff does. An unknown key, a value of
the wrong type or an unknown code is a :class:`ConfigError` whose one-line message names the file and
the key.
"""

from __future__ import annotations

import fnmatch
import functools
import os
import re
import sys
from dataclasses import dataclass, field

from graphguard.reading import read_regular

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

#: Folders never checked unless ``exclude`` replaces this list (``extend-exclude`` adds to it).
DEFAULT_EXCLUDE = (
    ".git", ".hg", ".svn", ".bzr", "__pycache__", ".mypy_cache", ".pytest_cache", ".ruff_cache",
    ".tox", ".nox", ".eggs", ".venv", "venv", "build", "dist", "node_modules", "site-packages",
    "__pypackages__", ".ipynb_checkpoints", ".graphguard_cache", "*.egg-info",
)

OUTPUT_FORMATS = ("concise", "full", "json", "json-lines", "sarif", "github", "junit")


class ConfigError(Exception):
    """A configuration problem, as one line: ``pyproject.toml: [tool.graphguard] select: unknown code 'GG9'``."""


@dataclass
class Config:
    """The settings of one run. ``root`` is the folder that relative patterns start from."""

    root: str = "."
    path: str | None = None
    #: None: not set (every rule but GG900); ``[]``: no rule, as in ruff (GG001/GG002 are still said)
    select: list | None = None
    extend_select: list = field(default_factory=list)
    ignore: list = field(default_factory=list)
    per_file_ignores: dict = field(default_factory=dict)
    exclude: tuple = DEFAULT_EXCLUDE
    extend_exclude: list = field(default_factory=list)
    respect_gitignore: bool = True
    output_format: str | None = None
    session_factories: list = field(default_factory=list)
    session_names: list = field(default_factory=list)
    #: GG101-GG110 are not reported when the loops around a construction run at most this many times in
    #: all (the product of their known trip counts: ``for case in (a, b, c)``, ``range(4)``), 0 to turn off
    max_bounded_iterations: int = 10
    #: Files larger than this many bytes are a GG002 finding instead of being read (a generated table,
    #: a named ``/dev/zero``); default :data:`graphguard.reading.MAX_FILE_BYTES`, 16 MiB
    max_file_bytes: int = 16 * 1024 * 1024

    # ------------------------------------------------------------------ paths

    def _relative(self, path: str) -> str:
        root = os.path.abspath(self.root)
        absolute = os.path.abspath(path)
        prefix = root if root.endswith(os.sep) else root + os.sep
        if absolute.startswith(prefix):  # below the root (every file a walk finds): no relpath needed
            relative = absolute[len(prefix):]
        else:
            relative = os.path.relpath(absolute, root)
        return relative.replace(os.sep, "/")

    @staticmethod
    def _matches(relative: str, patterns) -> bool:
        """Whether one of the glob ``patterns`` matches ``relative`` (a ``/``-separated path) or one of
        its parts, as ``fnmatch.fnmatch`` does (case-insensitively where the file system is)."""
        match = _pattern(tuple(patterns)).match
        normcase = os.path.normcase
        return bool(match(normcase(relative))) or any(match(normcase(part)) for part in relative.split("/"))

    def is_excluded(self, path: str) -> bool:
        """Whether ``path`` (a file or folder found by walking) is excluded by ``exclude``/``extend-exclude``."""
        return self._matches(self._relative(path), (*self.exclude, *self.extend_exclude))

    def ignored_codes(self, path: str) -> set:
        """Patterns of ``per-file-ignores`` that match ``path``: the codes (or prefixes) to drop there."""
        relative = self._relative(path)
        codes = set()
        for pattern, ignored in self.per_file_ignores.items():
            if self._matches(relative, (pattern,)):
                codes.update(ignored)
        return codes


_KEYS = {
    "select": list, "extend-select": list, "ignore": list, "per-file-ignores": dict, "exclude": list,
    "extend-exclude": list, "respect-gitignore": bool, "output-format": str, "session-factories": list,
    "session-names": list, "max-bounded-iterations": int,
    "max-file-bytes": int, "pytest": dict,
}


#: A ``pyproject.toml`` larger than this is not read (a real one is a few KiB; 500 MB were read whole).
MAX_CONFIG_BYTES = 4 * 1024 * 1024


def find_config(start: str, notes: list[str] | None = None) -> str | None:
    """The closest ``pyproject.toml`` with a ``[tool.graphguard]`` table at or above ``start``. One
    that cannot be read is passed over with a line appended to ``notes`` (it may or may not be ours)."""
    folder = os.path.abspath(start if os.path.isdir(start) else os.path.dirname(start) or ".")
    while True:
        candidate = os.path.join(folder, "pyproject.toml")
        if os.path.isfile(candidate):
            try:
                raw = read_regular(candidate, MAX_CONFIG_BYTES, setting=None)
                tool = tomllib.loads(raw.decode("utf-8")).get("tool", {})
                if isinstance(tool, dict) and "graphguard" in tool:
                    return candidate
            except OSError as error:
                if notes is not None:
                    notes.append(f"graphguard: warning: cannot read {candidate} ({error.strerror}); "
                                 "looking for the configuration further up")
            except (tomllib.TOMLDecodeError, UnicodeDecodeError, RecursionError):
                # Not valid TOML (or nested beyond Python's recursion limit, or not UTF-8): ours only if
                # it names us, also in UTF-16 (NUL bytes between the letters).
                if b"tool.graphguard" in raw or b"tool.graphguard" in raw.replace(b"\0", b""):
                    return candidate  # ours and broken: load_config reports it

        parent = os.path.dirname(folder)
        if parent == folder:
            return None
        folder = parent


def read_table(path: str) -> tuple[str, dict]:
    """(``path`` as errors name it, its ``[tool.graphguard]`` table: empty if it has none).
    Raises :class:`ConfigError` for a file that cannot be read or is not TOML (one line)."""
    if os.path.isdir(path):
        raise ConfigError(f"{path}: is a folder, not a pyproject.toml")
    where = os.path.relpath(path) if not os.path.isabs(path) or path.startswith(os.getcwd()) else path
    try:
        data = tomllib.loads(read_regular(path, MAX_CONFIG_BYTES, setting=None).decode("utf-8"))
    except OSError as error:
        raise ConfigError(f"{where}: cannot read configuration: {error.strerror}") from None
    except tomllib.TOMLDecodeError as error:
        raise ConfigError(f"{where}: invalid TOML: {error}") from None
    except RecursionError:
        raise ConfigError(f"{where}: invalid TOML: nested too deeply to read") from None
    except UnicodeDecodeError:
        raise ConfigError(f"{where}: invalid TOML: not UTF-8 text") from None
    tool = data.get("tool", {})
    table = tool.get("graphguard", {}) if isinstance(tool, dict) else {}
    if not isinstance(table, dict):
        raise ConfigError(f"{where}: [tool.graphguard] must be a table")
    return where, table


def load_config(path: str | None, known_codes: list[str]) -> Config:
    """Read ``[tool.graphguard]`` from ``path`` (None: defaults). Raises :class:`ConfigError`.
    ``[tool.graphguard.pytest]`` belongs to ``pytest --graphguard``, which checks it; the linter skips it."""
    if path is None:
        return Config()
    where, table = read_table(path)
    config = Config(root=os.path.dirname(os.path.abspath(path)), path=path)
    apply_table(config, where, table, known_codes)
    return config


def apply_override(config: Config, text: str, known_codes: list[str]) -> None:
    """Apply one ``--config 'KEY = VALUE'`` (a TOML line, as ruff's ``--config``) over ``config``:
    ``--config 'max-bounded-iterations = 0'``. Checked as a ``[tool.graphguard]`` key is. Raises
    :class:`ConfigError` (one line) for text that is not one TOML assignment or a bad key or value."""
    try:
        table = tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        raise ConfigError(f"--config {text!r}: neither a file nor a TOML 'key = value' pair ({error})") from None
    if len(table) != 1 or isinstance(next(iter(table.values())), dict):
        raise ConfigError(f"--config {text!r}: expected one [tool.graphguard] 'key = value' pair")
    apply_table(config, "--config", table, known_codes)


def apply_table(config: Config, where: str, table: dict, known_codes: list[str]) -> None:
    """Check each ``[tool.graphguard]`` key of ``table`` and set it on ``config``. Raises :class:`ConfigError`."""
    for key, value in table.items():
        expected = _KEYS.get(key)
        if expected is None:
            raise ConfigError(f"{where}: [tool.graphguard] unknown key {key!r} (known: {', '.join(sorted(_KEYS))})")
        if not isinstance(value, expected) or (expected is int and isinstance(value, bool)):
            raise ConfigError(f"{where}: [tool.graphguard] {key}: expected {_TYPE_NAMES[expected]}, got {value!r}")
        if expected is list and not all(isinstance(item, str) for item in value):
            raise ConfigError(f"{where}: [tool.graphguard] {key}: expected a list of strings, got {value!r}")
        if key == "pytest":  # pytest --graphguard's options (graphguard.pytest_plugin): not the linter's
            continue
        if key in ("select", "extend-select", "ignore"):
            _check_codes(where, key, value, known_codes)
        if key == "per-file-ignores":
            for pattern, codes in value.items():
                if not isinstance(codes, list) or not all(isinstance(code, str) for code in codes):
                    raise ConfigError(f"{where}: [tool.graphguard] per-file-ignores: {pattern!r}: expected a list of codes")
                _check_codes(where, f"per-file-ignores {pattern!r}", codes, known_codes)
        if key == "max-file-bytes" and not 1 <= value <= 2**31:
            raise ConfigError(f"{where}: [tool.graphguard] max-file-bytes: expected a whole number of bytes from 1 "
                              f"to 2147483648 (2 GiB), got {value!r}")
        if key == "max-bounded-iterations" and value < 0:
            raise ConfigError(f"{where}: [tool.graphguard] max-bounded-iterations: expected a whole number >= 0, got {value!r}")
        if key == "session-names":
            for name in value:
                if not name.isidentifier():
                    raise ConfigError(f"{where}: [tool.graphguard] session-names: {name!r} is not a Python name "
                                      f"(a variable or attribute name that holds a session, e.g. runner)")
        if key == "session-factories":
            for name in value:
                if not _DOTTED.match(name):
                    raise ConfigError(f"{where}: [tool.graphguard] session-factories: {name!r} is not a dotted name "
                                      f"of a project function (module.function, e.g. utils.session.make_session)")
        if key == "output-format" and value not in OUTPUT_FORMATS:
            raise ConfigError(f"{where}: [tool.graphguard] output-format: {value!r} is not one of {', '.join(OUTPUT_FORMATS)}")
        setattr(config, key.replace("-", "_"), tuple(value) if key == "exclude" else value)


_DOTTED = re.compile(r"^[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+$")
_TYPE_NAMES = {list: "a list", dict: "a table", bool: "true or false", str: "a string", int: "a whole number"}


def _check_codes(where: str, key: str, codes: list, known: list[str]) -> None:
    for code in codes:
        if not code.strip():
            raise ConfigError(f"{where}: [tool.graphguard] {key}: an empty rule code (codes or prefixes such as GG1, GG102, ALL)")
        if code.upper() != "ALL" and not any(k.startswith(code.upper()) for k in known):
            raise ConfigError(f"{where}: [tool.graphguard] {key}: unknown rule code or prefix {code!r}")


def gitignored(paths: list[str]) -> set[str]:
    """The subset of ``paths`` that git ignores, asked of ``git check-ignore`` (the reference
    implementation of ``.gitignore`` rules); empty outside a git checkout or without git."""
    import subprocess

    if not paths:
        return set()
    absolute = {os.path.abspath(p): p for p in paths}
    try:
        # Bytes, not text: a file name that is not valid UTF-8 (kept by Python as surrogate escapes)
        # goes to git as the bytes it has on disk.
        result = subprocess.run(
            ["git", "check-ignore", "--stdin", "-z"],
            input=b"\0".join(map(os.fsencode, absolute)) + b"\0",
            capture_output=True,
            timeout=60,
            cwd=os.path.dirname(next(iter(absolute))),
        )
    except (OSError, subprocess.SubprocessError):
        return set()
    if result.returncode not in (0, 1):  # 128: not a git repository
        return set()
    return {absolute[p] for p in map(os.fsdecode, result.stdout.split(b"\0")) if p in absolute}


@functools.lru_cache(maxsize=64)
def _pattern(patterns: tuple) -> re.Pattern:
    """``patterns`` (globs, a trailing ``/`` ignored) as one compiled expression: walking a large tree
    tested each file's path and parts against each pattern with ``fnmatch``, about 0.4 s for 3,300
    files and the default ``exclude``."""
    return re.compile("|".join(f"(?:{fnmatch.translate(os.path.normcase(pattern.rstrip('/')))})"
                               for pattern in patterns) or "(?!)")
