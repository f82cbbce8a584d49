"""Which user line built an op: stack frames, ``Operation.traceback`` and the call on the line.

TF's ``traceback.get_user_frames()`` treats any path containing ``keras`` or ``test.py`` as user code
and ``last_user_frame()`` returns an internal frame in TF 2.21, so graphguard filters frames itself:
a frame is internal if it lives in the installed TensorFlow or Keras distributions (``tensorflow``,
``keras``, ``tf_keras``, ``tensorboard``, ``tensorflow_estimator`` ...), in graphguard's runtime package
(this folder), or in the Python standard library (``contextlib``, ``runpy`` and friends sit between TF API layers and around scripts
run by ``graphguard run``). Only ``graphguard/runtime`` is skipped, not all of graphguard, so code in
graphguard's own demo is attributed normally.

The packages are located through the installed distributions (``importlib.metadata``: each one's
``top_level.txt`` or file list, resolved in its own ``site-packages``), and through the path finder
for a package installed without metadata, never through the module objects: a script that replaces
``sys.modules["tensorflow"]`` with ``tensorflow.compat.v1`` (a common way to run TF1-era code) makes
``importlib.util.find_spec("tensorflow")`` answer with ``tensorflow/_api/v2/compat/v1``, and every
op would then be attributed to TensorFlow's own ``ops.py``.

The call on the line (``SourceLine.call``) is found by parsing the line's source with :mod:`ast` and
matching its calls, outermost first, against the names of the TensorFlow functions the op's stack
went through just below the user frame (``reduce_mean_v1`` matches ``tf.reduce_mean``; ``__init__``
matches a class such as ``tf.train.Saver``). Reading one ``Operation.traceback`` costs about 11 us
(TF-FACTS), so large bursts are sampled (:data:`EXACT_OPS`).

Nothing here imports TensorFlow.
"""

from __future__ import annotations

import ast
import importlib.machinery
import importlib.metadata
import inspect
import linecache
import os
import sys
import sysconfig
from typing import Any, Callable, Iterable, Optional

from graphguard.runtime.report import OpGroup, SourceLine

# Up to this many new ops, every op's Operation.traceback is read (exact counts per line); beyond
# it, op types are counted exactly and only the first, middle and last op of each type are located.
EXACT_OPS = 200
SAMPLES_PER_TYPE = 3
# How many TensorFlow frames below the user frame are searched for the called function's name.
_CALL_DEPTH = 12

Location = tuple[Optional[str], Optional[int]]


def _norm(path: str) -> str:
    return os.path.normcase(os.path.abspath(path))


# Distributions whose frames are TensorFlow's or Keras's, whatever module object a script imported them
# as; then top-level package names, for a package installed without metadata (a source checkout).
_DISTRIBUTIONS = (
    "tensorflow", "tensorflow-cpu", "tensorflow-gpu", "tensorflow-intel", "tensorflow-macos", "tf-nightly",
    "tf-nightly-cpu", "keras", "keras-nightly", "tf-keras", "tf-keras-nightly", "tensorboard",
    "tensorflow-estimator", "tensorflow-io-gcs-filesystem",
)
_PACKAGES = ("tensorflow", "keras", "tf_keras", "tensorflow_estimator", "tensorflow_core", "tensorboard")


def _distribution_dirs(name: str) -> list[str]:
    """The folders of the top-level packages installed by distribution ``name`` (none if missing)."""
    try:
        dist = importlib.metadata.distribution(name)
    except (importlib.metadata.PackageNotFoundError, ValueError):
        return []
    tops = (dist.read_text("top_level.txt") or "").split()
    if not tops:  # no top_level.txt (wheels built by other tools): the first part of each file
        tops = sorted({f.parts[0] for f in dist.files or () if f.parts and f.parts[0] != ".."
                       and not f.parts[0].endswith((".dist-info", ".egg-info", ".data"))})
    found = []
    for top in tops:
        path = str(dist.locate_file(top))
        if os.path.isdir(path):
            found.append(path)
    return found


def _package_dirs(name: str) -> list[str]:
    """``name``'s folders as the path finder sees them on ``sys.path``: never from ``sys.modules``."""
    try:
        spec = importlib.machinery.PathFinder.find_spec(name)
    except (ImportError, ValueError):
        spec = None
    return list(spec.submodule_search_locations or []) if spec is not None else []


def _internal_dirs() -> tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...]]:
    """(internal package dirs, stdlib dirs, site-packages dirs), each a tuple of normalized prefixes."""
    pkgs: list[str] = [os.path.dirname(os.path.abspath(__file__))]
    for dist in _DISTRIBUTIONS:
        pkgs.extend(_distribution_dirs(dist))
    for name in _PACKAGES:
        pkgs.extend(_package_dirs(name))
    paths = sysconfig.get_paths()
    stdlib = [paths.get("stdlib"), paths.get("platstdlib")]
    site_dirs = [paths.get("purelib"), paths.get("platlib")]
    variants = lambda ds: tuple(  # noqa: E731 - both the given and the symlink-resolved spelling
        {p + os.sep for d in ds if d for p in (_norm(d), os.path.normcase(os.path.realpath(d)))}
    )
    return variants(pkgs), variants(stdlib), variants(site_dirs)


_DIRS: Optional[tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...]]] = None
_INTERNAL: dict[str, bool] = {}  # filename -> verdict; a process touches few distinct files


def is_internal(filename: str) -> bool:
    """True if frames in ``filename`` are TensorFlow's, Keras's, graphguard runtime's or the stdlib's."""
    verdict = _INTERNAL.get(filename)
    if verdict is None:
        verdict = _INTERNAL[filename] = _classify(filename)
    return verdict


def _classify(filename: str) -> bool:
    global _DIRS
    if not filename or filename.startswith("<frozen"):  # importlib; but <stdin>, <ipython-input-..> are user code
        return True
    if filename.startswith("<"):
        return False
    if _DIRS is None:
        _DIRS = _internal_dirs()
    pkgs, stdlib, site_dirs = _DIRS
    path = _norm(filename)
    if path.startswith(pkgs):
        return True
    return path.startswith(stdlib) and not path.startswith(site_dirs)


_LIBRARY: dict[str, bool] = {}


def is_library(filename: str) -> bool:
    """True if ``filename`` is not the user's own code: :func:`is_internal`, or an installed package
    (a ``site-packages`` or ``dist-packages`` folder, in any environment). ``graphguard run --tf1``
    gives ``tensorflow.compat.v1`` only to imports made by the rest."""
    verdict = _LIBRARY.get(filename)
    if verdict is None:
        parts = set(os.path.normcase(os.path.abspath(filename)).split(os.sep)) if not filename.startswith("<") else set()
        verdict = _LIBRARY[filename] = is_internal(filename) or bool(parts & {"site-packages", "dist-packages"})
    return verdict


_GRAPHGUARD = os.path.normcase(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))) + os.sep
#: The environment's own folders (``.venv/bin/graphguard``, the console script that starts ``graphguard run``).
_ENVIRONMENT = tuple({os.path.normcase(os.path.abspath(p)) + os.sep for p in (sys.prefix, sys.exec_prefix)})


def _is_caller(filename: str) -> bool:
    """Whether a frame in ``filename`` is the user's on a call path: not a library's (an installed
    package: pytest's runner, a framework's training loop), graphguard's (``graphguard run``'s
    launcher) or the environment's (its console scripts)."""
    if filename.startswith("<"):  # ``<string>`` (exec: pytest-xdist's worker), ``<frozen runpy>``
        # a cell, and a ``%%time`` cell's body (a twenty-first new user's trial: its loop around a helper
        # was not seen, "no loop stands around these lines")
        return filename.startswith("<ipython-input") or filename == "<timed exec>"
    path = os.path.normcase(os.path.abspath(filename))
    return not is_library(filename) and not path.startswith(_GRAPHGUARD) and not path.startswith(_ENVIRONMENT)


def _runs_cells(filename: str) -> bool:
    """Whether a frame in ``filename`` is IPython's shell running a cell (``run_cell``, ``run_code``):
    the frames above it drive the shell (a kernel's event loop, or a script calling ``run_cell`` in a
    loop: a seventeenth new user's trial read its own driver's loop as the loop around a cell)."""
    return f"{os.sep}IPython{os.sep}core{os.sep}" in filename


class PyFrame:
    """A live frame (or a traceback entry) seen through TF's frame names: filename, lineno, name."""

    __slots__ = ("filename", "lineno", "name")

    def __init__(self, frame: Any, lineno: Optional[int] = None) -> None:
        self.filename = frame.f_code.co_filename
        self.lineno = frame.f_lineno if lineno is None else lineno
        self.name = frame.f_code.co_name


def live_frames(frame: Any) -> list[PyFrame]:
    """``frame`` and its callers, innermost first."""
    frames = []
    while frame is not None:
        frames.append(PyFrame(frame))
        frame = frame.f_back
    return frames


def user_path(frames: list[PyFrame]) -> list[Optional[Location]]:
    """The innermost user frame of ``frames`` (innermost first) and the user frames that called it, as
    ``(filename, lineno)``, with None where frames that are not the user's came between, as
    :func:`op_origin_and_callers` gives an op's (:func:`graphguard.runtime.bounded.bounded_trips` reads
    it); [] when no frame is the user's."""
    for i, frame in enumerate(frames):
        if not is_internal(frame.filename):
            path: list[Optional[Location]] = [(frame.filename, frame.lineno)]
            for caller in frames[i + 1:]:
                if _runs_cells(caller.filename):
                    break  # a notebook cell is the top of the user's program: above it, the shell's driver
                if _is_caller(caller.filename):
                    path.append((caller.filename, caller.lineno))
                elif path[-1] is not None:
                    path.append(None)
            return path
    return []


def traceback_frames(tb: Any) -> list[PyFrame]:
    """Frames of an exception traceback, innermost first."""
    frames = []
    while tb is not None:
        frames.append(PyFrame(tb.tb_frame, tb.tb_lineno))
        tb = tb.tb_next
    return frames[::-1]


def user_traceback(tb: Any) -> Any:
    """``tb`` (a traceback, outermost frame first) cut after its last frame outside TensorFlow, Keras,
    graphguard's runtime and the standard library (:func:`is_internal`), in place: a guard's error
    leaving ``with GraphGuard(...)`` then prints the user's lines and the error, as TensorFlow's own
    errors do, and nothing of the guard's or TensorFlow's machinery below them. Returns ``tb``; one
    with no user frame is left whole. (Python 3.7+: ``tb_next`` is writable.)"""
    last, node = None, tb
    while node is not None:
        if not is_internal(node.tb_frame.f_code.co_filename):
            last = node
        node = node.tb_next
    if last is not None:
        last.tb_next = None
    return tb


def user_origin(frames: list[Any]) -> tuple[Optional[str], Optional[int], frozenset[str]]:
    """(filename, lineno, called) of the innermost user frame; ``frames`` is innermost first.

    ``called`` holds the names of up to 12 functions the stack entered below that frame (the
    TensorFlow API it called, then what that called).
    """
    for i, frame in enumerate(frames):
        if not is_internal(frame.filename):
            return frame.filename, frame.lineno, frozenset(f.name for f in frames[max(0, i - _CALL_DEPTH) : i])
    return None, None, frozenset()


def op_origin(op: Any) -> tuple[Optional[str], Optional[int], frozenset[str]]:
    """:func:`user_origin` of an op, from ``Operation.traceback`` (outermost frame first)."""
    return op_origin_and_callers(op)[:3]


def op_origin_and_callers(op: Any) -> tuple[Optional[str], Optional[int], frozenset[str], tuple[Location, ...]]:
    """:func:`op_origin` and the user frames that called the creating line, innermost first, as
    ``(filename, lineno)``, with None where frames that are not the user's came between (a library's,
    graphguard's): the call path through the user's code (``()`` at module level). One read
    of ``Operation.traceback`` (about 11 us); an op imported by ``tf.import_graph_def`` /
    ``import_meta_graph`` has none: ``(None, None, frozenset(), ())``."""
    try:
        tb = op.traceback
    except Exception:
        tb = None
    if not tb:
        return None, None, frozenset(), ()
    for i in range(len(tb) - 1, -1, -1):  # innermost first, without copying the whole stack
        frame = tb[i]
        if not is_internal(frame.filename):
            called = frozenset(tb[j].name for j in range(i + 1, min(len(tb), i + 1 + _CALL_DEPTH)))
            callers: list = []
            for j in range(i - 1, -1, -1):  # the user frames that called it; None where others came
                if _runs_cells(tb[j].filename):
                    break  # a notebook cell is the top of the user's program
                if _is_caller(tb[j].filename):  # between (pytest's runner, a framework's loop)
                    callers.append((tb[j].filename, tb[j].lineno))
                elif not callers or callers[-1] is not None:
                    callers.append(None)
            callers = tuple(callers)
            return frame.filename, frame.lineno, called, callers
    return None, None, frozenset(), ()


def source(filename: Optional[str], lineno: Optional[int]) -> str:
    """The stripped source text of a line, or ``""``."""
    if filename is None or lineno is None:
        return ""
    return linecache.getline(filename, lineno).strip()


# -- the call on the line -------------------------------------------------------------------------


_PAIRS = {"(": ")", "[": "]", "{": "}"}


def _closed(text: str) -> str:
    """``text`` without its comment and with the brackets it left open (outside string literals)
    closed: the first line of a call spread over several lines, made a whole expression."""
    stack: list[str] = []
    quote = None
    end = len(text)
    for i, char in enumerate(text):
        if quote:
            if char == quote and text[i - 1] != "\\":
                quote = None
        elif char in "'\"":
            quote = char
        elif char == "#":
            end = i
            break
        elif char in _PAIRS:
            stack.append(_PAIRS[char])
        elif char in ")]}" and stack:
            stack.pop()
    return text[:end].rstrip(", ") + "".join(reversed(stack))


def _parse(text: str) -> Optional[ast.AST]:
    # A single physical line of a longer statement often does not parse on its own: try the usual
    # repairs (a trailing comma in a list of calls, an opening block, a dangling bracket).
    closed = _closed(text)
    for candidate in (text, text.rstrip(",;"), text + "\n    pass", text.rstrip(",") + ")", closed,
                      text.rstrip("([{,")):
        try:
            return ast.parse(candidate)
        except (SyntaxError, ValueError):
            continue
    return None


def _dotted(node: ast.AST) -> Optional[str]:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        base = _dotted(node.value)
        return None if base is None else f"{base}.{node.attr}"
    if isinstance(node, ast.Call):
        base = _dotted(node.func)
        return None if base is None else f"{base}()"
    if isinstance(node, ast.Subscript):
        base = _dotted(node.value)
        return None if base is None else f"{base}[...]"
    return None


def _matches(last: str, called: frozenset[str]) -> bool:
    if last in called or any(name.startswith(last + "_v") for name in called):  # reduce_mean -> reduce_mean_v1
        return True
    return last[:1].isupper() and bool(called & {"__init__", "__call__", "__new__"})  # a class: tf.train.Saver


_CALLS: dict[tuple[str, frozenset[str], Optional[str]], Optional[str]] = {}


def _module_globals(filename: Optional[str]) -> Optional[dict]:
    """The globals of the loaded module whose source is ``filename`` (the script is ``__main__``)."""
    if not filename:
        return None
    for module in list(sys.modules.values()):
        if getattr(module, "__file__", None) == filename:
            return vars(module)
    return None


def _resolved_name(dotted: str, namespace: Optional[dict]) -> Optional[str]:
    """The ``__name__`` of the function ``dotted`` names in ``namespace`` (``tf.mod`` is TensorFlow's
    ``floor_mod``: an alias the spelling cannot match), or None if it is not a plain attribute path."""
    if namespace is None or not all(part.isidentifier() for part in dotted.split(".")):
        return None
    head, *rest = dotted.split(".")
    value = namespace.get(head)
    try:
        for part in rest:
            value = getattr(value, part, None)
        value = inspect.unwrap(value) if callable(value) else None
    except Exception:  # a user object whose attribute access or __wrapped__ fails
        return None
    name = getattr(value, "__name__", None)
    return name if isinstance(name, str) else None


def call_on_line(text: str, called: frozenset[str], filename: Optional[str] = None) -> Optional[str]:
    """The outermost call in ``text`` whose name matches a function in ``called``, as written.

    A call whose spelling matches none (an alias: ``tf.mod`` runs ``floor_mod``) is resolved through
    the globals of the module loaded from ``filename``, if given, and matched by the function's own name.
    """
    key = (text, called, filename)
    if key not in _CALLS:
        if len(_CALLS) > 4096:
            _CALLS.clear()
        tree = _parse(text) if text and called else None
        calls = [_dotted(node.func) for node in ast.walk(tree) if isinstance(node, ast.Call)] if tree else []
        calls = [dotted for dotted in calls if dotted is not None]  # breadth first: outermost call first
        found = next((dotted for dotted in calls if _matches(dotted.rsplit(".", 1)[-1], called)), None)
        if found is None and calls and filename is not None:
            namespace = _module_globals(filename)
            found = next((dotted for dotted in calls if _resolved_name(dotted, namespace) in called), None)
        _CALLS[key] = found
    return _CALLS[key]


def source_line(filename: Optional[str], lineno: Optional[int], called: frozenset[str] = frozenset()) -> SourceLine:
    """A :class:`SourceLine` with the line's text and the call that built the ops."""
    text = source(filename, lineno)
    return SourceLine(filename, lineno, text, call_on_line(text, called, filename))


# -- grouping new ops -----------------------------------------------------------------------------


def growth_groups(new_ops: list[Any], imported: Optional[Callable[[int], tuple]] = None) -> tuple[OpGroup, ...]:
    """Group new ops by creating user line, in creation order, counting op types per line.

    ``imported(i)``, if given, locates ``new_ops[i]`` when its own traceback names no user line (an op
    made by ``tf.import_graph_def`` has none): ``(filename, lineno, called)`` as :func:`op_origin`.

    Each group's ``callers`` holds ``(line, call path)`` pairs (:func:`op_origin_and_callers`) for the ops located.
    Up to :data:`EXACT_OPS` new ops, every op's ``Operation.traceback`` is read: one line per group,
    exact counts. For a larger burst op types are counted exactly (``Operation.type`` is cheap) and
    only the first, middle and last op of each type are located; a type whose samples disagree is
    listed with all sampled lines (``30 x Const at a.py:3 and b.py:9``).
    """
    groups: dict[tuple[Location, ...], dict[str, int]] = {}
    called: dict[Location, set[str]] = {}
    paths: dict[Location, set[tuple[Location, ...]]] = {}

    def locate(i: int) -> Location:
        filename, lineno, names, path = op_origin_and_callers(new_ops[i])
        if filename is None and imported is not None:
            filename, lineno, names = imported(i)
        called.setdefault((filename, lineno), set()).update(names)
        paths.setdefault((filename, lineno), set()).add(path)
        return filename, lineno

    if len(new_ops) <= EXACT_OPS:
        for i, op in enumerate(new_ops):
            counts = groups.setdefault((locate(i),), {})
            counts[op.type] = counts.get(op.type, 0) + 1
    else:
        by_type: dict[str, list[int]] = {}
        for i, op in enumerate(new_ops):
            by_type.setdefault(op.type, []).append(i)
        for op_type, indexes in by_type.items():
            picks = sorted({0, len(indexes) // 2, len(indexes) - 1})[:SAMPLES_PER_TYPE]
            locations = tuple(dict.fromkeys(locate(indexes[i]) for i in picks))
            groups.setdefault(locations, {})[op_type] = len(indexes)
    return tuple(
        OpGroup(
            op_types=tuple(counts.items()),
            lines=tuple(source_line(f, n, frozenset(called.get((f, n), ()))) for f, n in locations),
            callers=frozenset((location, path) for location in locations for path in paths.get(location, ())),
        )
        for locations, counts in groups.items()
    )


def first_location(groups: Iterable[OpGroup]) -> Location:
    for group in groups:
        for line in group.lines:
            return line.filename, line.lineno
    return None, None
