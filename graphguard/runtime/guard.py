"""``GraphGuard``: stop a ``tf.compat.v1.Session`` loop from growing its graph.

A graph-mode training loop should only *run* ops. An op built inside the loop (``tf.reduce_mean``, a
``Saver``, an initializer, an ``assign``) is added to the graph on every step; the next
``Session.run`` then copies every node of the graph into the C++ session again
(``BaseSession._extend_graph``), so each step gets slower and the process keeps growing.

``GraphGuard(sess)`` wraps a session and has two modes:

* ``mode="finalize"`` (default) calls ``Graph.finalize()`` when guarding starts. The first attempt to
  add an op raises :class:`GraphGrowthError` at the line that tried, before any step pays for it.
* ``mode="count"`` leaves the graph editable and compares ``Graph.version`` (the number of ops, O(1))
  at every guarded run. Ops added after the warm-up steps raise :class:`GraphGrowthError` (or warn),
  grouped by op type and by the user line that created them (``Operation.traceback``).

Both modes record step wall time and process RSS; ``guard.stats`` returns a :class:`GuardStats`.

This module imports neither TensorFlow nor psutil at import time: it works on the session and graph
objects it is given, and imports psutil lazily (RSS is ``None`` without it).
"""

from __future__ import annotations

import collections
import importlib.util
import linecache
import os
import statistics
import sys
import sysconfig
import time
import warnings
from dataclasses import dataclass
from typing import Any, Iterable, Optional

__all__ = ["GraphGuard", "GraphGrowthError", "GuardStats", "StepSeconds"]

_FINALIZED_MESSAGE = "Graph is finalized and cannot be modified."
_WHY = (
    "Every op added inside the loop that calls sess.run is copied into the session again on the next "
    "run, so each step gets slower and memory keeps growing."
)
_FIX = (
    "Fix: build the op once, before the loop, and reuse it in the loop; feed values that change per "
    "step through a tf.compat.v1.placeholder and feed_dict."
)
# RSS (psutil, 33-44 us per read) is sampled after step 1, then on every _RSS_EVERY-th step if at
# least _RSS_SECONDS passed since the last sample, and when stats is read or the guard released. So a
# 0.2 ms step pays nothing measurable and a slow step is still sampled every 10 steps.
_RSS_EVERY = 10
_RSS_SECONDS = 1.0
# Median step time is taken over at most this many recent steps, so memory stays bounded.
_STEP_WINDOW = 1000
# Count mode reads Operation.traceback (about 11 us per op) for every new op up to this many; beyond
# it, for at most _SAMPLES_PER_TYPE ops of each op type.
_EXACT_OPS = 200
_SAMPLES_PER_TYPE = 3


class GraphGrowthError(RuntimeError):
    """An op was added to a guarded graph after guarding started (or after the warm-up steps).

    A subclass of ``RuntimeError``, so code that caught TensorFlow's own
    ``RuntimeError("Graph is finalized and cannot be modified.")`` still catches it.

    Attributes (data, also spelled out in the message):
        op_type: TensorFlow op type (``Operation.type``), e.g. ``"Mean"``; in count mode the type of
            the first new op. ``None`` when the change was not an op (a collection or a function).
        filename: absolute path of the user source file that added it, or ``None`` if every frame
            was inside TensorFlow, Keras or graphguard.
        lineno: line number in ``filename`` (1-based), or ``None``.
        step: number of guarded ``run`` calls that had completed when the op was added.
        ops_added: count mode only: how many ops the graph grew by (``Graph.version`` delta);
            ``None`` in finalize mode, where the op was refused and nothing was added.
    """

    # Shown in tracebacks as graphguard.GraphGrowthError, the name users import it by.
    __module__ = "graphguard"

    def __init__(
        self,
        message: str,
        *,
        op_type: Optional[str] = None,
        filename: Optional[str] = None,
        lineno: Optional[int] = None,
        step: int = 0,
        ops_added: Optional[int] = None,
    ) -> None:
        super().__init__(message)
        self.op_type = op_type
        self.filename = filename
        self.lineno = lineno
        self.step = step
        self.ops_added = ops_added


@dataclass(frozen=True)
class StepSeconds:
    """Wall time of guarded ``run`` calls, in seconds (``time.perf_counter`` around ``Session.run``).

    ``median`` is over the most recent steps (at most 1000), so a loop that slows down shows it.
    """

    first: float
    median: float
    last: float


@dataclass(frozen=True)
class GuardStats:
    """A snapshot of what a :class:`GraphGuard` measured.

    Attributes:
        steps: guarded ``run`` calls completed.
        ops: ops in the graph (``Graph.version``) now, or when the guard was released.
        ops_added_per_step: ops added since guarding started divided by ``steps`` (ops per step;
            0.0 before the first step). A healthy loop reports 0.0.
        step_seconds: first / median / last step wall time in seconds, ``None`` before the first step.
        rss_bytes: resident set size of this process at the last sample, in bytes (psutil
            ``memory_info().rss``); ``None`` if psutil is not installed or no step ran yet.
        rss_growth_bytes: last RSS sample minus the first (taken after step 1), in bytes; ``None``
            like ``rss_bytes``.
    """

    steps: int
    ops: int
    ops_added_per_step: float
    step_seconds: Optional[StepSeconds]
    rss_bytes: Optional[int]
    rss_growth_bytes: Optional[int]

    def __str__(self) -> str:
        parts = [
            f"{self.steps} guarded step{'s' if self.steps != 1 else ''}; "
            f"graph has {self.ops} ops ({self.ops_added_per_step:.2f} ops per step added since guarding started)"
        ]
        if self.step_seconds is not None:
            s = self.step_seconds
            parts.append(
                f"step time first {_ms(s.first)}, median {_ms(s.median)}, last {_ms(s.last)}"
            )
        if self.rss_bytes is not None:
            growth = self.rss_growth_bytes or 0
            parts.append(f"RSS {_mib(self.rss_bytes)} ({'+' if growth >= 0 else '-'}{_mib(abs(growth))} since step 1)")
        else:
            parts.append("RSS not measured (psutil missing or no step yet)")
        return "; ".join(parts) + "."


def _ms(seconds: float) -> str:
    return f"{seconds * 1e3:.3g} ms"


def _mib(nbytes: int) -> str:
    return f"{nbytes / 2**20:.1f} MiB"


# ---------------------------------------------------------------------------------------------------
# Which stack frames are "the user's"
#
# TF's traceback.get_user_frames() treats any path containing "keras" or "test.py" as user code and
# last_user_frame() returns an internal frame in TF 2.21, so graphguard filters frames itself: a frame
# is internal if it lives in the installed tensorflow / keras / tf_keras packages, in graphguard's
# runtime package (this file), or in the Python standard library (contextlib and friends sit between
# TF API layers). Only graphguard/runtime is skipped, not all of graphguard, so code in graphguard's
# own demo is attributed normally.


def _norm(path: str) -> str:
    return os.path.normcase(os.path.abspath(path))


def _internal_dirs() -> tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...]]:
    """(internal package dirs, stdlib dirs, site-packages dirs), each a tuple of normalized prefixes."""
    pkgs: list[str] = [os.path.dirname(os.path.abspath(__file__))]
    for name in ("tensorflow", "keras", "tf_keras", "tensorflow_estimator", "tensorflow_core"):
        try:
            spec = importlib.util.find_spec(name)  # top-level lookup only: does not import the package
        except (ImportError, ValueError):
            spec = None
        for loc in (spec.submodule_search_locations or []) if spec else []:
            pkgs.append(loc)
    paths = sysconfig.get_paths()
    stdlib = [paths.get("stdlib"), paths.get("platstdlib")]
    site_dirs = [paths.get("purelib"), paths.get("platlib")]
    variants = lambda ds: tuple(  # noqa: E731 - both the given and the symlink-resolved spelling
        {p + os.sep for d in ds if d for p in (_norm(d), os.path.normcase(os.path.realpath(d)))}
    )
    return variants(pkgs), variants(stdlib), variants(site_dirs)


_DIRS: Optional[tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...]]] = None
_INTERNAL: dict[str, bool] = {}  # filename -> verdict; a process touches few distinct files


def _is_internal(filename: str) -> bool:
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


def _user_location(frames: Iterable[Any]) -> tuple[Optional[str], Optional[int]]:
    """Innermost (filename, lineno) outside internals; ``frames`` is innermost first."""
    for frame in frames:
        if not _is_internal(frame.filename):
            return frame.filename, frame.lineno
    return None, None


class _PyFrame:
    """A live ``sys._getframe`` frame seen through the ``filename`` / ``lineno`` names."""

    __slots__ = ("filename", "lineno")

    def __init__(self, frame: Any) -> None:
        self.filename = frame.f_code.co_filename
        self.lineno = frame.f_lineno


def _live_frames(frame: Any) -> Iterable[_PyFrame]:
    while frame is not None:
        yield _PyFrame(frame)
        frame = frame.f_back


def _tb_frames(tb: Any) -> list[_PyFrame]:
    """Frames of an exception traceback, innermost first."""
    frames = []
    while tb is not None:
        f = _PyFrame(tb.tb_frame)
        f.lineno = tb.tb_lineno
        frames.append(f)
        tb = tb.tb_next
    return frames[::-1]


def _op_location(op: Any) -> tuple[Optional[str], Optional[int]]:
    """User (filename, lineno) that created ``op``, from ``Operation.traceback`` (outermost first)."""
    try:
        tb = op.traceback
    except Exception:  # an op imported from a GraphDef may have no traceback
        return None, None
    for i in range(len(tb) - 1, -1, -1):  # innermost first, without copying the whole stack
        frame = tb[i]
        if not _is_internal(frame.filename):
            return frame.filename, frame.lineno
    return None, None


def _where(filename: Optional[str], lineno: Optional[int]) -> str:
    if filename is None:
        return "<no user frame: created inside TensorFlow>"
    shown = filename
    try:
        rel = os.path.relpath(filename)
        if not rel.startswith(os.pardir):
            shown = rel
    except ValueError:  # other drive on Windows
        pass
    return f"{shown}:{lineno}"


def _source(filename: Optional[str], lineno: Optional[int]) -> str:
    if filename is None or lineno is None:
        return ""
    return linecache.getline(filename, lineno).strip()


def _source_lines(locations: Iterable[tuple[Optional[str], Optional[int]]]) -> str:
    """One indented ``file:line: source text`` line per distinct location."""
    lines = []
    for filename, lineno in dict.fromkeys(locations):
        src = _source(filename, lineno)
        lines.append(f"  {_where(filename, lineno)}" + (f": {src}" if src else ""))
    return "\n".join(lines)


# ---------------------------------------------------------------------------------------------------
# Finalize-mode interception
#
# TF checks finalization in Graph._check_not_finalized(), called first thing by _create_op_internal
# (every op built through op_def_library / create_op), _create_op_from_tf_operation and
# _add_new_tf_operations (while_loop, import_graph_def), add_to_collection(s), clear_collection and
# _add_function / _remove_function. tf.Graph subclasses the pybind PyGraph, which accepts instance
# attributes, and _check_not_finalized is a plain method (a non-data descriptor), so an instance
# attribute of that name shadows it for that one graph object only: no class-wide monkeypatch, no
# effect on other graphs or threads using other graphs, and `del` restores TF's method. The override
# keeps TF's semantics (it raises only when graph.finalized is true) and raises GraphGrowthError, a
# RuntimeError subclass, at creation time, from the user's own call, with or without a `with` block.
# The op type comes from the caller's locals (op_type in _create_op_internal, the C op otherwise).
# Limits: it relies on private names (_check_not_finalized, _create_op_internal); if a future TF
# refuses the instance attribute, install fails quietly and __exit__ converts TF's plain RuntimeError
# instead (after the fact, and only inside a `with` block). Library functions added without going
# through _add_function are not seen by either mode.

_CHECK_NAME = "_check_not_finalized"


_TF_CHANGERS = frozenset({
    "_create_op_internal", "_create_op_from_tf_operation", "_add_new_tf_operations",
    "add_to_collection", "add_to_collections", "clear_collection", "_add_function", "_remove_function",
})


def _refused_change(frame: Any) -> tuple[Optional[str], str]:
    """(op_type, description) of what the TF method in ``frame`` was about to add."""
    name = frame.f_code.co_name
    local = frame.f_locals
    if name == "_create_op_internal":
        op_type = str(local.get("op_type"))
        return op_type, f"add a new {op_type!r} op"
    if name == "_create_op_from_tf_operation":
        try:
            from tensorflow.python.client import pywrap_tf_session  # lazy: only on the error path

            op_type = pywrap_tf_session.TF_OperationOpType(local["c_op"])
            return op_type, f"add a new {op_type!r} op"
        except Exception:
            return None, "add new ops"
    if name in ("add_to_collection", "add_to_collections", "clear_collection"):
        return None, f"change graph collection {local.get('name', local.get('names'))!r}"
    if name in ("_add_function", "_remove_function"):
        fn_name = getattr(local.get("function"), "name", local.get("name"))
        if isinstance(fn_name, bytes):
            fn_name = fn_name.decode("utf-8", "replace")
        verb = "add" if name == "_add_function" else "remove"
        return None, f"{verb} library function {fn_name!r}"
    if name == "_add_new_tf_operations":
        return None, "add new ops"
    return None, "modify the graph"


def _finalized_error(
    op_type: Optional[str], what: str, filename: Optional[str], lineno: Optional[int], step: int
) -> GraphGrowthError:
    message = (
        f"tried to {what} at step {step} ({step} guarded run{'s' if step != 1 else ''} done), "
        f"at {_where(filename, lineno)}\n"
        f"{_source_lines([(filename, lineno)])}\n"
        f"The guarded graph is finalized, so nothing was added. {_WHY}\n{_FIX}"
    )
    return GraphGrowthError(message, op_type=op_type, filename=filename, lineno=lineno, step=step)


# ---------------------------------------------------------------------------------------------------
# Count-mode attribution


Location = tuple[Optional[str], Optional[int]]


def _growth_groups(new_ops: list[Any]) -> list[tuple[tuple[Location, ...], list[tuple[str, int]]]]:
    """Group new ops as ``[(user locations, [(op type, count), ...]), ...]`` in creation order.

    Up to ``_EXACT_OPS`` new ops, every op's ``Operation.traceback`` is read: one location per
    group, exact counts. For a larger burst, reading every traceback would cost about 11 us per op,
    so op types are counted exactly (``Operation.type`` is cheap) and only the first, middle and last
    op of each type are located; a type whose samples disagree is listed with all sampled locations.
    """
    groups: dict[tuple[Location, ...], dict[str, int]] = {}
    if len(new_ops) <= _EXACT_OPS:
        for op in new_ops:
            counts = groups.setdefault((_op_location(op),), {})
            counts[op.type] = counts.get(op.type, 0) + 1
    else:
        by_type: dict[str, list[Any]] = {}
        for op in new_ops:
            by_type.setdefault(op.type, []).append(op)
        for op_type, ops in by_type.items():
            picks = sorted({0, len(ops) // 2, len(ops) - 1})[:_SAMPLES_PER_TYPE]
            locations = tuple(dict.fromkeys(_op_location(ops[i]) for i in picks))
            groups.setdefault(locations, {})[op_type] = len(ops)
    return [(locs, list(counts.items())) for locs, counts in groups.items()]


def _describe_types(types: list[tuple[str, int]]) -> str:
    return ", ".join(f"{n} x {t}" if n > 1 else t for t, n in types)


# ---------------------------------------------------------------------------------------------------


class GraphGuard:
    """Guard a ``tf.compat.v1.Session`` (or ``MonitoredSession``) against graph growth.

    Use as ``with GraphGuard(sess) as guarded:`` or ``guarded = GraphGuard(sess)``; guarding starts
    in the constructor. Call ``guarded.run(...)`` in the loop instead of ``sess.run(...)``: it takes
    and returns exactly what ``Session.run`` does. Other attributes (``graph``, ``make_callable``,
    ``list_devices``, ...) are delegated to the session; calls made through them are not guarded.

    Args:
        sess: the session to guard; its graph is ``sess.graph``.
        mode: ``"finalize"`` (default): ``Graph.finalize()`` now; any later attempt to add an op
            raises :class:`GraphGrowthError` at that line, with the op type, the user's file:line and
            the step. ``"count"``: the graph stays editable; before each guarded run the guard reads
            ``Graph.version`` and reports ops added after the first ``warmup_steps`` runs, grouped by
            op type and creating user line (``Operation.traceback``).
        warmup_steps: count mode: ops added before the first ``warmup_steps`` guarded runs have
            completed are tolerated (lazy set-up in the first iteration). Default 1.
        on_growth: count mode: ``"raise"`` (default) raises :class:`GraphGrowthError`; ``"warn"``
            issues a ``RuntimeWarning`` once per creating user line and keeps running.

    Raises:
        ValueError: unknown ``mode`` or ``on_growth``, negative ``warmup_steps``, or
            ``on_growth="warn"`` with ``mode="finalize"`` (a finalized graph cannot grow).
        GraphGrowthError: from op creation (finalize mode, or any mode when the graph is finalized)
            or from ``run`` (count mode).

    Cost per guarded run: two ``time.perf_counter`` calls, one ``Graph.version`` read (O(1)), a
    counter and an append; a psutil RSS read (about 40 us) on every 10th step at most once a
    second. Measured about 1-2 us per run, see docs/guard.md.
    ``release()`` (also ``__exit__`` and ``close()``) undoes the guard: TF's finalization check is
    restored and the graph is un-finalized (``Graph._unsafe_unfinalize``) if it was not finalized
    when guarding started.
    """

    def __init__(
        self,
        sess: Any,
        mode: str = "finalize",
        *,
        warmup_steps: int = 1,
        on_growth: str = "raise",
    ) -> None:
        if mode not in ("finalize", "count"):
            raise ValueError(f"mode must be 'finalize' or 'count', not {mode!r}")
        if on_growth not in ("raise", "warn"):
            raise ValueError(f"on_growth must be 'raise' or 'warn', not {on_growth!r}")
        if mode == "finalize" and on_growth != "raise":
            raise ValueError("on_growth='warn' needs mode='count': a finalized graph cannot grow")
        if warmup_steps < 0:
            raise ValueError(f"warmup_steps must be >= 0, not {warmup_steps!r}")
        self._sess = sess
        self._graph = sess.graph
        self._mode = mode
        self._warmup_steps = warmup_steps
        self._warn = on_growth == "warn"
        self._warned: set[tuple[Optional[str], Optional[int]]] = set()

        self._steps = 0
        self._start_version = self._seen_version = self._graph.version
        self._final_version: Optional[int] = None
        self._first_seconds: Optional[float] = None
        self._recent_seconds: collections.deque[float] = collections.deque(maxlen=_STEP_WINDOW)
        self._process = _psutil_process()
        self._rss_time = float("inf") if self._process is None else 0.0  # perf_counter of the last sample
        self._rss_first: Optional[int] = None
        self._rss_last: Optional[int] = None

        self._active = True
        self._was_finalized = self._graph.finalized
        self._hooked = self._install_hook()
        if mode == "finalize":
            self._graph.finalize()

    # -- the loop -------------------------------------------------------------------------------

    def run(self, fetches: Any, feed_dict: Any = None, options: Any = None, run_metadata: Any = None) -> Any:
        """``Session.run(fetches, feed_dict, options, run_metadata)``, guarded and timed.

        Returns exactly what ``Session.run`` returns (same structure: single tensor, list, tuple,
        dict, nested). Raises what ``Session.run`` raises, plus :class:`GraphGrowthError` in count
        mode when ops were added after the warm-up steps (checked before the session runs, so the
        leaking step does not pay for copying the graph).
        """
        if not self._active:
            return self._sess.run(fetches, feed_dict, options, run_metadata)
        version = self._graph.version
        if version != self._seen_version:
            self._on_growth(version)
        start = time.perf_counter()
        result = self._sess.run(fetches, feed_dict, options, run_metadata)
        end = time.perf_counter()
        self._steps += 1
        self._recent_seconds.append(end - start)
        if self._steps % _RSS_EVERY == 0 and end - self._rss_time >= _RSS_SECONDS:
            self._sample_rss(end)
        elif self._steps == 1:
            self._first_seconds = end - start
            self._sample_rss(end)
        return result

    def _on_growth(self, version: int) -> None:
        added = version - self._seen_version
        self._seen_version = version
        if self._steps < self._warmup_steps:
            return
        ops = getattr(self._graph, "operations", None)  # the internal list: read, never mutate
        if not isinstance(ops, list):
            ops = self._graph.get_operations()
        new_ops = ops[len(ops) - added:] if added > 0 else []
        groups = _growth_groups(new_ops)
        first_loc = groups[0][0][0] if groups else (None, None)
        step = self._steps
        warmup = f"after the {self._warmup_steps} warm-up step{'s' if self._warmup_steps != 1 else ''}"
        summary = "; ".join(
            f"{_describe_types(types)} at {' and '.join(_where(f, n) for f, n in locs)}" for locs, types in groups
        )
        where = _source_lines(loc for locs, _ in groups for loc in locs)
        message = f"+{added} ops at step {step} ({warmup}): {summary}\n{where}\n{_WHY}\n{_FIX}"
        error = GraphGrowthError(
            message,
            op_type=new_ops[0].type if new_ops else None,
            filename=first_loc[0],
            lineno=first_loc[1],
            step=step,
            ops_added=added,
        )
        if not self._warn:
            raise error
        locations = {loc for locs, _ in groups for loc in locs}
        if not locations <= self._warned:
            self._warned |= locations
            warnings.warn(message, RuntimeWarning, stacklevel=3)

    # -- finalize-mode hook ---------------------------------------------------------------------

    def _install_hook(self) -> bool:
        graph = self._graph
        current = getattr(graph, _CHECK_NAME, None)
        # An instance attribute already there (a second guard on the same graph) is put back later.
        self._previous_hook = None if getattr(current, "__func__", None) is getattr(type(graph), _CHECK_NAME, None) else current
        try:
            setattr(graph, _CHECK_NAME, self._check_not_finalized)
        except (AttributeError, TypeError):
            return False
        return getattr(graph, _CHECK_NAME, None) == self._check_not_finalized

    def _check_not_finalized(self) -> None:
        # Stands in for Graph._check_not_finalized on this graph object: same condition, clearer error.
        if not self._graph.finalized:
            return
        caller = sys._getframe(1)
        op_type, what = _refused_change(caller)
        filename, lineno = _user_location(_live_frames(caller))
        raise _finalized_error(op_type, what, filename, lineno, self._steps)

    def _remove_hook(self) -> None:
        if not self._hooked:
            return
        graph = self._graph
        if getattr(graph, _CHECK_NAME, None) == self._check_not_finalized:
            if self._previous_hook is not None:
                setattr(graph, _CHECK_NAME, self._previous_hook)
            else:
                delattr(graph, _CHECK_NAME)
        self._hooked = False

    # -- lifecycle ------------------------------------------------------------------------------

    def release(self) -> None:
        """Stop guarding; idempotent. ``run`` keeps working afterwards, unguarded and untimed.

        Restores ``Graph._check_not_finalized`` on this graph and, if the graph was not finalized
        when guarding started, un-finalizes it (``Graph._unsafe_unfinalize()``) so the session can
        build new ops again. A graph that was already finalized (e.g. by ``MonitoredSession``) stays
        finalized. ``stats`` stays readable, frozen at this point.
        """
        if not self._active:
            return
        if self._steps:
            self._sample_rss()
        self._final_version = self._graph.version
        self._active = False
        self._remove_hook()
        if not self._was_finalized and self._graph.finalized:
            unfinalize = getattr(self._graph, "_unsafe_unfinalize", None)
            if unfinalize is not None:
                unfinalize()
            else:  # older TF: the flag is the whole state
                self._graph._finalized = False

    def close(self) -> None:
        """``release()``, then ``Session.close()``."""
        self.release()
        self._sess.close()

    def __enter__(self) -> "GraphGuard":
        return self

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        self.release()
        # Fallback for when the hook could not be installed (or TF raised from a path that does not
        # call _check_not_finalized): turn TF's plain error into a GraphGrowthError, after the fact.
        if exc_type is RuntimeError and str(exc) == _FINALIZED_MESSAGE:
            op_type, what = None, "add a new op"
            frame_tb = tb
            while frame_tb is not None:  # TF may have filtered its own frames out of the traceback
                if frame_tb.tb_frame.f_code.co_name in _TF_CHANGERS:
                    op_type, what = _refused_change(frame_tb.tb_frame)
                frame_tb = frame_tb.tb_next
            filename, lineno = _user_location(_tb_frames(tb))
            raise _finalized_error(op_type, what, filename, lineno, self._steps) from exc
        return None

    # -- reporting ------------------------------------------------------------------------------

    @property
    def stats(self) -> GuardStats:
        """A :class:`GuardStats` snapshot (steps, ops, ops per step, step seconds, RSS bytes).

        While guarding, reading it takes a fresh RSS sample (psutil, about 40 us).
        """
        if self._active and self._steps:
            self._sample_rss()
        ops = self._graph.version if self._final_version is None else self._final_version
        steps = self._steps
        step_seconds = None
        if steps:
            recent = self._recent_seconds
            step_seconds = StepSeconds(
                first=self._first_seconds, median=statistics.median(recent), last=recent[-1]
            )
        rss_growth = None
        if self._rss_last is not None and self._rss_first is not None:
            rss_growth = self._rss_last - self._rss_first
        return GuardStats(
            steps=steps,
            ops=ops,
            ops_added_per_step=(ops - self._start_version) / steps if steps else 0.0,
            step_seconds=step_seconds,
            rss_bytes=self._rss_last,
            rss_growth_bytes=rss_growth,
        )

    def _sample_rss(self, now: Optional[float] = None) -> None:
        if self._process is None:
            return
        self._rss_time = time.perf_counter() if now is None else now
        try:
            rss = self._process.memory_info().rss
        except Exception:  # psutil.Error: process info unavailable
            return
        if self._rss_first is None:
            self._rss_first = rss
        self._rss_last = rss

    # -- delegation -----------------------------------------------------------------------------

    def __getattr__(self, name: str) -> Any:
        # Only called for names GraphGuard does not define: graph, sess_str, make_callable, ...
        if name.startswith("__") or name == "_sess":
            raise AttributeError(name)
        return getattr(self._sess, name)

    def __repr__(self) -> str:
        state = "active" if self._active else "released"
        return f"<GraphGuard mode={self._mode!r} steps={self._steps} {state} session={self._sess!r}>"


def _psutil_process() -> Any:
    """A cached ``psutil.Process()`` for this process, or ``None`` if psutil is unavailable."""
    try:
        import psutil
    except ImportError:
        return None
    try:
        return psutil.Process()
    except Exception:
        return None
