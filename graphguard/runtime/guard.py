"""``GraphGuard``: stop a ``tf.compat.v1.Session`` loop from growing its graph, and say where it grew.

A graph-mode training loop should only *run* ops. An op built inside the loop (``tf.reduce_mean``, a
``Saver``, an initializer, an ``assign``) is added to the graph on every step; the next
``Session.run`` then copies every node of the graph into the C++ session again
(``BaseSession._extend_graph``, about 11-22 us per existing op, TF-FACTS), so each step gets slower and
the process keeps growing.

``GraphGuard(sess)`` wraps a session; ``guarded.run`` replaces ``sess.run`` in the loop:

* ``mode="finalize"`` (default) calls ``Graph.finalize()`` when guarding starts. The first attempt to
  add an op raises :class:`GraphGrowthError` at the line that tried, before any step pays for it.
* ``mode="count"`` leaves the graph editable and compares ``Graph.version`` (the number of ops, O(1))
  before every guarded run. Ops added after ``warmup_steps`` runs are a growth event, grouped by op
  type and by the user line that created them (``Operation.traceback``). Growth must be sustained:
  only when a creating line added ops on ``min_growth_steps`` (default 2) distinct steps after warm-up does
  ``on_growth`` raise (the default: count mode stops the run too, one step later than finalize mode),
  warn, or call your function with the report; a single burst (evaluation ops
  built once after the training loop, a Saver made once at the end) is kept in the report as a
  one-off and tolerated.

Both modes time every run (a sustained rise is a :class:`SlowdownWarning`), sample the process RSS
every few steps (psutil; ``max_rss_growth`` raises :class:`RssGrowthError`), and can save a checkpoint
with your ``saver`` before they stop a run. ``guarded.report()`` returns it all as data
(:class:`~graphguard.runtime.report.GuardReport`). :class:`~graphguard.runtime.hook.GraphGuardHook` does
the same for ``MonitoredTrainingSession`` and Estimator; ``graphguard run script.py`` for a script you
do not want to edit (:mod:`graphguard.runtime.launcher`).

This module imports neither TensorFlow nor psutil at import time: it works on the session and graph
objects it is given, and imports psutil lazily (RSS is ``None`` without it).

Layout: this module is the session wrapper, its modes, step time, RSS and stopping;
:mod:`~graphguard.runtime.growth` classifies new ops (per step, per session, bursts);
:mod:`~graphguard.runtime.measures` holds the step-time, RSS and series measurements;
:mod:`~graphguard.runtime.interception` replaces TensorFlow's finalization check on the guarded graph;
:mod:`~graphguard.runtime.errors` holds the errors and warnings (re-exported here).
"""

from __future__ import annotations

import collections
import itertools
import os
import statistics
import sys
import threading
import time
from typing import Any, Callable, Optional, Union

from graphguard.runtime.attribution import (live_frames, source_line, traceback_frames, user_origin, user_path,
                                          user_traceback)
from graphguard.runtime.errors import (
    GraphGrowthError,
    GraphGrowthWarning,
    RssGrowthError,
    SlowdownWarning,
    finalized_error,
    warn_at,
)
from graphguard.runtime.growth import GrowthAccounting, Pattern
from graphguard.runtime.measures import _SERIES_POINTS, _SLOW_WINDOW, FetchTimes, StepMeasures, fetch_label  # noqa: F401 (tests)
from graphguard.runtime.interception import TF_CHANGERS, refused_change
from graphguard.runtime.interception import Interceptor as _Interceptor  # tests patch guard._Interceptor
from graphguard.runtime.report import (
    GuardReport,
    GuardStats,
    Growth,
    OpGroup,
    Slowdown,
    StepSample,
    StepSeconds,
)

__all__ = [
    "GraphGrowthError",
    "GraphGrowthWarning",
    "GraphGuard",
    "RssGrowthError",
    "SlowdownWarning",
]

_FINALIZED_MESSAGE = "Graph is finalized and cannot be modified."
# The errors the guard stops a run with: raised with their traceback cut to the user's frames.
_GUARD_ERRORS = (GraphGrowthError, RssGrowthError)

# The clock around Session.run (seconds). Tests replace it to drive the slowdown detector.
_clock = time.perf_counter

# Periodic work (RSS sample, slowdown check) runs on every _CHECK_EVERY-th step at most, so the
# per-run path is a version read, two clock reads, a lock, two appends and one comparison.
_CHECK_EVERY = 10
# RSS (psutil, 33-44 us per read) is sampled when the warm-up steps are done (the baseline), then on
# every `rss_every`-th step if at least _RSS_SECONDS passed since the last sample, and when stats or
# the report is read.
_RSS_SECONDS = 1.0
# Series points between checks are this many steps further into each window, modulo its length:
# coprime with 10, so the points fall on every phase of a loop whose runs repeat with a period of 2-12.
_SAMPLE_STRIDE = 3
# The median of the step times is over at most this many recent steps, so memory stays bounded.
_STEP_WINDOW = 1000


#: What :class:`GraphGuard` and :class:`~graphguard.runtime.GraphGuardHook` pass on to
#: ``_SessionGuard._setup`` besides the graph and the mode: their keyword arguments of these names.
SETUP_OPTIONS = ("warmup_steps", "max_new_ops_per_step", "min_growth_steps", "min_growth_sessions", "max_burst_ops",
                 "max_burst_ratio", "on_growth", "slowdown_factor", "rss_every", "max_rss_growth", "saver",
                 "checkpoint_path", "max_bounded_iterations")

#: Defaults of the across-sessions and burst limits (shared by GraphGuard, the hook and the launcher).
#: A Saver built once after training adds 15-507 ops, evaluation ops 10-210 (measured on the demo and
#: TF1 tutorials); an unrolled 40x40 Cholesky adds 11,315-18,872.
DEFAULT_MIN_GROWTH_SESSIONS = 3
DEFAULT_MAX_BURST_OPS = 5000
DEFAULT_MAX_BURST_RATIO = 1.0


def _check_int(name: str, value: Any, minimum: int, off: str = "") -> None:
    """Raises ``ValueError`` naming option ``name`` unless ``value`` is an int (not a bool) >= ``minimum``."""
    if not isinstance(value, int) or isinstance(value, bool) or value < minimum:
        raise ValueError(f"{name} must be an int >= {minimum}{off}, not {value!r}")


def _number(value: Any) -> bool:
    """An int or float, not a bool or a string such as ``"3"``."""
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def setup_options(arguments: dict) -> dict:
    """The guard options among a constructor's ``locals()`` (:data:`SETUP_OPTIONS`)."""
    return {name: arguments[name] for name in SETUP_OPTIONS}


def _raw_session(sess: Any) -> Any:
    """The ``tf.compat.v1.Session`` under a ``MonitoredSession`` (``Saver.save`` needs the real one)."""
    for _ in range(8):
        inner = getattr(sess, "_tf_sess", None)
        if not callable(inner):
            break
        sess = inner()
    return sess


_PROCESS: Optional[tuple[int, Any]] = None  # (pid, psutil.Process) made by the first guard of this process


def _psutil_process() -> Any:
    """A cached ``psutil.Process()`` for this process (made anew after a fork), or ``None`` if psutil is
    unavailable. Making one reads ``/proc`` (about 0.2 ms); a process that guards a session per test or
    per request makes it once."""
    global _PROCESS
    try:
        import psutil  # a dict lookup once imported; fails where psutil is missing (or hidden, in tests)
    except ImportError:
        return None
    pid = os.getpid()
    if _PROCESS is not None and _PROCESS[0] == pid:
        return _PROCESS[1]
    try:
        process = psutil.Process()
    except Exception:
        return None
    _PROCESS = (pid, process)
    return process


# ---------------------------------------------------------------------------------------------------


OnGrowth = Union[str, Callable[[GuardReport], Any]]


class _Monitor(GrowthAccounting, StepMeasures):
    """What ``GraphGuard`` and ``GraphGuardHook`` share: step counting, growth, slowdown, RSS, stop.

    Thread safety: steps are counted with an ``itertools.count`` (``next()`` is atomic in CPython);
    the version bookkeeping is done under one ``threading.Lock``. The per-run path tests ``_changed``
    (set by the interception whenever TensorFlow is about to change the graph) without the lock, and
    ``_on_version_change`` re-reads ``Graph.version`` under it, so two threads never report the
    same ops twice and no step is lost; ``_periodic`` compares the version every 10 steps as a
    backstop. ``deque.append`` is atomic in CPython.
    """

    _sess: Any = None
    _active = False

    def _setup(
        self,
        graph: Any,
        *,
        mode: str,
        warmup_steps: int,
        max_new_ops_per_step: int,
        on_growth: OnGrowth,
        slowdown_factor: Optional[float],
        rss_every: Optional[int],
        max_rss_growth: Optional[int],
        saver: Any,
        checkpoint_path: Optional[str],
        min_growth_steps: int = 2,
        min_growth_sessions: int = DEFAULT_MIN_GROWTH_SESSIONS,
        max_burst_ops: Optional[int] = DEFAULT_MAX_BURST_OPS,
        max_burst_ratio: float = DEFAULT_MAX_BURST_RATIO,
        max_bounded_iterations: int = 0,
    ) -> None:
        if mode not in ("finalize", "count"):
            raise ValueError(f"mode must be 'finalize' or 'count', not {mode!r}")
        if not (on_growth in ("raise", "warn") or callable(on_growth)):
            raise ValueError(f"on_growth must be 'raise', 'warn' or a callable taking the report, not {on_growth!r}")
        _check_int("warmup_steps", warmup_steps, 0)
        _check_int("max_new_ops_per_step", max_new_ops_per_step, 0)
        _check_int("min_growth_steps", min_growth_steps, 1)
        _check_int("min_growth_sessions", min_growth_sessions, 1)
        _check_int("max_bounded_iterations", max_bounded_iterations, 0, " (0 acts on growth in short loops too)")
        if max_burst_ops is not None:
            _check_int("max_burst_ops", max_burst_ops, 0, " (or None to turn the limit off)")
        if not _number(max_burst_ratio) or not max_burst_ratio >= 0:
            raise ValueError(f"max_burst_ratio must be a number >= 0, not {max_burst_ratio!r}")
        if slowdown_factor is not None and (not _number(slowdown_factor) or not slowdown_factor > 1):
            raise ValueError(f"slowdown_factor must be a number > 1 (or None to turn it off), not {slowdown_factor!r}")
        if rss_every is not None:
            _check_int("rss_every", rss_every, 1, " (or None to turn RSS off)")
        if max_rss_growth is not None and (not _number(max_rss_growth) or not max_rss_growth > 0):
            raise ValueError(f"max_rss_growth must be a number of bytes > 0 (2 * 2**30 for 2 GiB; the command line's "
                             f"'2G' is parsed by graphguard run), not {max_rss_growth!r}")
        if checkpoint_path is not None and not isinstance(checkpoint_path, (str, os.PathLike)):
            raise ValueError(f"checkpoint_path must be a path (str or os.PathLike), not {checkpoint_path!r}")
        if saver is not None and not callable(getattr(saver, "save", None)):
            raise ValueError(f"saver must be a tf.compat.v1.train.Saver (something with save(sess, path)), not {saver!r}")
        if (checkpoint_path is None) != (saver is None) and not getattr(self, "_saver_optional", False):
            raise ValueError("saver= and checkpoint_path= go together: the guard saves with that Saver to that path")
        process = _psutil_process() if rss_every is not None or max_rss_growth is not None else None
        if max_rss_growth is not None and (process is None or rss_every is None):
            raise ValueError("max_rss_growth needs psutil (pip install psutil) and rss_every set")

        self._graph = graph
        self._mode = mode
        self._warmup_steps = warmup_steps
        self._warm = max(1, warmup_steps)  # step-time and RSS baselines start after this many runs
        self._max_new = max_new_ops_per_step
        self._min_growth_steps = min_growth_steps
        self._min_growth_sessions = min_growth_sessions
        self._max_burst = max_burst_ops
        self._burst_ratio = float(max_burst_ratio)
        self._max_bounded = max_bounded_iterations
        self._ledger: Any = None  # the graph's GraphLedger (graphguard.runtime.sessions), once joined
        self._session_no = 0  # this guard's session number on its graph (1 for the first)
        self._pending: Optional[tuple] = None  # growth found at the session's start, acted on at its first run
        self._on_growth = on_growth
        self._slowdown_factor = slowdown_factor
        self._rss_every = rss_every
        self._max_rss_growth = max_rss_growth
        self._saver = saver
        self._checkpoint_path = checkpoint_path
        self._every = min(_CHECK_EVERY, rss_every or _CHECK_EVERY)

        self._lock = threading.Lock()
        self._counter = itertools.count(1)  # next() hands out step numbers; see _steps
        self._next_check = 1  # the next step the per-run path calls _periodic at (a check, or a sample between)
        self._check_at = 1  # the next check (RSS, slowdown, version backstop); _next_check <= _check_at
        self._checks = 0
        self._start_version = self._seen_version = graph.version
        self._final_version: Optional[int] = None
        self._warmup_ops = 0
        self._tolerated_ops = 0
        self._patterns: dict[tuple, Pattern] = {}
        self._other_growth_ops = 0
        # Count mode: growth events held as one-offs until growth is seen on min_growth_steps steps.
        self._one_offs: list[Growth] = []
        self._one_off_ops = 0
        # Per creating line (filename, lineno): [distinct growth steps after warm-up, last such step].
        self._line_steps: dict[tuple[Optional[str], Optional[int]], list] = {}
        self._warned: set[tuple[Optional[str], Optional[int]]] = set()
        self._stopped: Optional[str] = None
        self._checkpoint: Optional[str] = None

        self._first_seconds: Optional[float] = None
        self._seconds: collections.deque[float] = collections.deque(maxlen=_STEP_WINDOW)
        self._baseline: Optional[tuple[float, tuple[int, int], int, Optional[int]]] = None
        self._next_ratio = slowdown_factor or 0.0
        self._slowdowns: list[Slowdown] = []
        self._by_fetch: dict[str, FetchTimes] = {}  # sampled step times per fetch (measures._time_fetch)

        self._series: list[StepSample] = []  # what GuardReport.plot() draws, at most _SERIES_POINTS long
        self._series_every = 1  # keep one periodic point in this many (doubled when the list is full)
        self._series_skipped = 0
        self._process = process
        self._rss_time = 0.0  # clock time of the last sample
        self._rss_base: Optional[tuple[int, int]] = None  # (step, bytes) after warm-up
        self._rss_last: Optional[tuple[int, int]] = None

        self._changed = False  # set by the interception when TensorFlow is about to change the graph
        self._interceptor = _Interceptor(graph, self)

    # -- per step ---------------------------------------------------------------------------------

    @property
    def _steps(self) -> int:
        """Guarded runs completed, from every thread.

        The per-run path counts with ``next(itertools.count(1))``: one C call, atomic in CPython (it
        runs under the GIL, no Python code in between), so no step is lost without a lock on the path
        every step pays for. The count is read back from the counter's ``repr`` (``count(N)`` means
        N - 1 numbers were handed out), which does not consume a number.
        """
        return int(repr(self._counter)[6:-1]) - 1

    def _step_done(self, seconds: float, now: float, fetches: Any = None) -> None:
        """Bookkeeping after one run (the hook's path; ``GraphGuard.run`` inlines it)."""
        steps = next(self._counter)
        self._seconds.append(seconds)
        if steps >= self._next_check:
            self._periodic(steps, now, fetches)

    def _periodic(self, steps: int, now: float, fetches: Any = None) -> None:
        slowdown = stop = None
        # Backstop for the _changed flag: an op built by another thread between the flag's reset and
        # the version read, or a graph on which the interception could not be installed.
        if steps >= self._check_at and self._graph.version != self._seen_version:
            self._on_version_change()
        with self._lock:
            if steps < self._next_check:  # another thread got here first
                return
            label = fetch_label(fetches) if fetches is not None else None
            if label is not None and self._slowdown_factor and steps >= self._warm:
                self._time_fetch(steps, label, lambda: user_origin(live_frames(sys._getframe(2)))[:2])
            if steps < self._check_at:  # a series point between two checks, nothing else
                self._sample(steps, None, label)
                self._next_check = self._check_at
                return
            if self._first_seconds is None and self._seconds:
                self._first_seconds = self._seconds[0]
            warm, window = self._warm, _SLOW_WINDOW
            nxt = steps + self._every
            if steps < warm:
                nxt = min(nxt, warm)
            if self._slowdown_factor and self._baseline is None and steps < warm + window:
                nxt = min(nxt, warm + window)
            self._check_at = self._next_check = nxt
            # One more series point between this check and the next, at an offset that walks through the
            # window (0, 3, 6, 9, 2, ... of 10): checks every 10 steps see one run of a loop that alternates
            # training and evaluation runs, never the other; the picture draws one line per fetch.
            self._checks += 1
            offset = self._checks * _SAMPLE_STRIDE % self._every
            if 0 < offset < nxt - steps:
                self._next_check = steps + offset
            sampled = None
            if self._process is not None and steps >= warm:
                if self._rss_base is None:
                    self._rss_base = self._rss_last = (steps, self._read_rss(now))
                    sampled = self._rss_last[1]
                elif steps - self._rss_last[0] >= self._rss_every and now - self._rss_time >= _RSS_SECONDS:
                    self._rss_last = (steps, self._read_rss(now))
                    sampled = self._rss_last[1]
                    stop = self._rss_over_limit()
            self._sample(steps, sampled, label)
            if self._slowdown_factor and steps >= warm + window:
                slowdown = self._check_slowdown(steps)
        if slowdown is not None:
            filename, lineno = slowdown.filename, slowdown.lineno
            if slowdown.fetch is None:
                filename, lineno, _ = user_origin(live_frames(sys._getframe(1)))
            warn_at(self._slowdown_message(slowdown), SlowdownWarning, filename, lineno)
        if stop is not None:
            raise self._stop(stop)

    def _refuse(self, caller: Any) -> None:
        """The graph is finalized and TF is about to change it (``caller`` is TF's frame): raise."""
        op_type, what = refused_change(caller)
        frames = live_frames(caller)
        filename, lineno, called = user_origin(frames)
        line = source_line(filename, lineno, called)
        # the call path too: a helper's line is in no loop, its caller's is (a thirteenth new user's
        # trial: the demo's `model()` called per step read "built once" without it)
        path = user_path(frames)
        callers = frozenset({(path[0], tuple(path[1:]))}) if path else frozenset()
        group = OpGroup(((op_type, 1),) if op_type else (), (line,), callers)
        with self._lock:
            steps = self._steps
            self._record(steps, 0, (group,), what)
        growth = Growth(steps, steps, 1, 0, (group,), what)
        error = finalized_error(op_type, what, line, steps, self._finalized_by(), growth)
        if callable(self._on_growth):
            self._on_growth(self.report())
        raise self._stop(error)

    def _finalized_by(self) -> str:
        return "by GraphGuard(mode='finalize')"

    # -- stopping ---------------------------------------------------------------------------------

    def _stop(self, error: Any) -> Any:
        """Save a checkpoint if configured, note it in ``error``, attach the report; returns ``error``."""
        path = note = None
        if self._saver is not None and self._checkpoint_path is not None:
            try:
                sess = self._session_for_saver()
                # Saver.save refuses a missing parent folder; the user asked for this path, and the
                # run is about to stop: an error then would lose the weights it exists to keep.
                parent = os.path.dirname(self._checkpoint_path)
                if parent and "://" not in self._checkpoint_path:
                    os.makedirs(parent, exist_ok=True)
                with self._graph.as_default():
                    path = self._saver.save(sess, self._checkpoint_path, write_meta_graph=False)
                note = (
                    f"Saved a checkpoint of the variables at step {self._steps} before stopping: {path} "
                    f"(restore with saver.restore(sess, {path!r}))."
                )
            except Exception as exc:  # say so, but still raise the guard's error
                note = f"Could not save a checkpoint to {self._checkpoint_path}: {type(exc).__name__}: {exc}"
        with self._lock:
            self._stopped = f"{type(error).__name__} at step {getattr(error, 'step', self._steps)}"
            self._checkpoint = path
        if note:
            error.args = (f"{error.args[0]}\n{note}",) + tuple(error.args[1:])
        error.checkpoint = path
        error.report = self.report()
        return error

    def _session_for_saver(self) -> Any:
        return _raw_session(self._sess)

    # -- reporting --------------------------------------------------------------------------------

    @property
    def stats(self) -> GuardStats:
        """A :class:`GuardStats` snapshot (steps, ops, ops per step, step seconds, RSS bytes).

        While guarding, reading it takes a fresh RSS sample (psutil, about 40 us).
        """
        with self._lock:
            if self._active and self._steps and self._process is not None:
                sample = (self._steps, self._read_rss(_clock()))
                if self._rss_base is None:
                    self._rss_base = sample
                self._rss_last = sample
            ops = self._graph.version if self._final_version is None else self._final_version
            steps = self._steps
            step_seconds = None
            if steps and self._seconds:
                recent = self._seconds
                first = self._first_seconds if self._first_seconds is not None else recent[0]
                step_seconds = StepSeconds(first=first, median=statistics.median(recent), last=recent[-1])
            rss = growth = per_step = None
            if self._rss_last is not None and self._rss_base is not None:
                (base_step, base), (last_step, rss) = self._rss_base, self._rss_last
                growth = rss - base
                if last_step > base_step:
                    per_step = growth / (last_step - base_step)
        return GuardStats(
            steps=steps,
            ops=ops,
            ops_added_per_step=(ops - self._start_version) / steps if steps else 0.0,
            step_seconds=step_seconds,
            rss_bytes=rss,
            rss_growth_bytes=growth,
            rss_bytes_per_step=per_step,
        )

    def report(self) -> GuardReport:
        """Everything measured so far, as a :class:`~graphguard.runtime.report.GuardReport` (data).

        ``str(report)`` is the text ``graphguard run`` prints: growth patterns such as
        ``+14 ops/step since step 2 (5 steps to step 6): 12 x Const, Mean at train.py:57 (tf.reduce_mean);
        2 x SaveV2 at train.py:63 (tf.train.Saver)`` with each line's source, slowdowns, step time, RSS.
        """
        stats = self.stats
        with self._lock:
            growth = tuple(p.freeze() for p in self._patterns.values())
            return GuardReport(
                mode=self._mode,
                warmup_steps=self._warmup_steps,
                stats=stats,
                growth=growth,
                warmup_ops=self._warmup_ops,
                tolerated_ops=self._tolerated_ops,
                one_off=tuple(self._one_offs) if self._mode == "count" else (),
                min_growth_steps=self._min_growth_steps if self._mode == "count" else 1,
                slowdowns=tuple(self._slowdowns),
                stopped=self._stopped,
                checkpoint=self._checkpoint,
                other_growth_ops=self._other_growth_ops,
                series=self._final_series(stats),
            )

    def _freeze(self) -> None:
        """Stop measuring: final RSS sample, version frozen, interception removed."""
        if self._steps and self._process is not None:
            self.stats  # noqa: B018 - takes the final RSS sample
        self._final_version = self._graph.version
        self._active = False
        self._interceptor.remove()
        ledger = self._ledger
        if ledger is not None and self._final_version > ledger.accounted:
            ledger.accounted = self._final_version


class _SessionGuard(_Monitor):
    """The state and per-run path behind a :class:`GraphGuard`.

    A separate class because ``GraphGuard`` delegates unknown attributes to the session with
    ``__getattr__``, and a class with ``__getattr__`` loses CPython 3.11's specialized attribute
    reads: ``run`` below would pay about 0.5 us more per call (measured around a stub session).
    """

    def __init__(self, sess: Any) -> None:
        self._sess = sess
        self._run = sess.run  # the launcher replaces it with the unpatched Session.run
        self._was_finalized = False

    def run(self, fetches: Any, feed_dict: Any = None, options: Any = None, run_metadata: Any = None) -> Any:
        # The guard's errors are raised again from here with their traceback cut (and, for pytest and
        # IPython, this frame hidden): below the user's line a plain traceback shows this one frame,
        # not the guard's internals; `with GraphGuard(...)` cuts this one too (see __exit__).
        if self._changed:
            try:
                self._on_version_change()
            except _GUARD_ERRORS as error:
                __tracebackhide__ = True  # noqa: F841 - read by pytest and IPython
                raise error.with_traceback(None)
        start = _clock()
        result = self._run(fetches, feed_dict, options, run_metadata)
        end = _clock()
        # _Monitor._step_done, inlined: this is the path every step pays for. Each extra attribute,
        # call or object touched here costs several times its micro-benchmark price next to a real
        # Session.run, which evicts this code and data from the CPU caches.
        steps = next(self._counter)
        self._seconds.append(end - start)
        if steps >= self._next_check:
            try:
                self._periodic(steps, end, fetches)
            except _GUARD_ERRORS as error:
                __tracebackhide__ = True  # noqa: F841
                raise error.with_traceback(None)
        return result

    def _finalized_by(self) -> str:
        if self._was_finalized:
            return "before guarding started (MonitoredSession, Supervisor and Scaffold finalize their graph)"
        return "by GraphGuard(mode='finalize')"


_SESSION_CLASS: list = []  # the GraphGuard subclass that is a TensorFlow SessionInterface, made once


def _as_session_class() -> Optional[type]:
    """``GraphGuard`` made a subclass of TensorFlow's ``SessionInterface`` too (the type that
    ``Saver.save``/``restore`` and ``Tensor.eval(session=...)`` check), with that interface's members
    delegated to the session as ``GraphGuard``'s other attributes are; None when TensorFlow's class
    cannot be found."""
    if not _SESSION_CLASS:
        try:
            from tensorflow.python.client.session import SessionInterface
        except ImportError:  # pragma: no cover - TensorFlow without the module
            _SESSION_CLASS.append(None)
        else:
            members = {
                "__module__": GraphGuard.__module__,
                "__qualname__": GraphGuard.__qualname__,
                "__doc__": GraphGuard.__doc__,
                "graph": property(lambda self: self._sess.graph),
                "sess_str": property(lambda self: self._sess.sess_str),
                "partial_run_setup": lambda self, *args, **kwargs: self._sess.partial_run_setup(*args, **kwargs),
                "partial_run": lambda self, *args, **kwargs: self._sess.partial_run(*args, **kwargs),
            }
            _SESSION_CLASS.append(type("GraphGuard", (GraphGuard, SessionInterface), members))
    return _SESSION_CLASS[0]


class GraphGuard:
    """Guard a ``tf.compat.v1.Session`` (or ``MonitoredSession``) against graph growth.

    Use as ``with GraphGuard(sess) as guarded:`` or ``guarded = GraphGuard(sess)``; guarding starts
    in the constructor. Call ``guarded.run(...)`` in the loop instead of ``sess.run(...)``: it takes
    and returns exactly what ``Session.run`` does. Other attributes (``graph``, ``make_callable``,
    ``list_devices``, ...) are delegated to the session; calls made through them are not guarded.
    Several threads may call ``guarded.run`` at once (queue runners, a ``Coordinator``'s threads).

    Args:
        sess: the session to guard; its graph is ``sess.graph``. A session on a remote target
            (``grpc://...``, e.g. ``tf.compat.v1.train.Server``) is guarded the same way: the graph
            lives in this process.
        mode: ``"finalize"`` (default): ``Graph.finalize()`` now; any later attempt to add an op
            raises :class:`GraphGrowthError` at that line, with the op type, the user's file:line and
            the step. ``"count"``: the graph stays editable; before each guarded run the guard reads
            ``Graph.version`` and reports ops added after the first ``warmup_steps`` runs, grouped by
            op type and creating user line (``Operation.traceback``). With the default
            ``on_growth="raise"`` count mode stops the run too, with :class:`GraphGrowthError` at the
            second step that grows (``min_growth_steps``); ``"warn"`` or a callable let it go on.
        warmup_steps: runs (default 1). Count mode tolerates ops added before this many guarded runs
            have completed (lazy set-up in the first iteration: Keras in graph mode, a Saver made on
            first use). Both modes take the step-time and RSS baselines after them (after at least 1).
        max_new_ops_per_step: ops (default 0). Count mode: a step that adds at most this many ops
            after warm-up is tolerated (counted in ``report().tolerated_ops``), more is growth.
        min_growth_steps: steps (default 2). Count mode: growth must be sustained. Ops added after
            warm-up count as growth (``on_growth`` acts, ``report().grew``) only once a user line
            that creates them (file:line) added ops on at least this many distinct steps, as a line
            inside the loop does on every iteration; until then each event is a one-off, kept in
            ``report().one_off`` and tolerated (ops built once after the training loop, a Saver made
            once at the end). When growth is confirmed, the error or warning names the lines of the
            earlier events too. ``1`` acts on the first event. Finalize mode refuses any op anyway.
        min_growth_sessions: sessions (default 3). Growth across sessions on one graph: the guard
            of each session after the first on a graph counts the user lines that built ops for
            it (since the previous guard on that graph last looked, during its warm-up, one-offs);
            a line that built ops for this many sessions is growth, acted on at the session's
            first guarded run with ``on_growth``: a server that imports a GraphDef or builds a
            placeholder per request in a new session, a sweep that builds a model per trial
            without ``tf.compat.v1.reset_default_graph()``. Train, validation and test sessions
            that each build on one graph (2 after the first) stay quiet with the default.
        max_burst_ops: ops (default 5000; ``None`` turns it off), and
        max_burst_ratio: a ratio (default 1.0). Count mode: one step after warm-up that adds more
            than ``max_burst_ops`` ops and more than ``max_burst_ratio`` times the ops the graph had
            when guarding started is growth even if it never repeats (a factorisation unrolled
            with tensors, 11,000-19,000 ops). A Saver (15-507 ops) or an evaluation graph built once
            after training stays a tolerated one-off.
        max_bounded_iterations: loop runs (default 0: act on any growth). Count mode: growth whose
            lines stand in loops that run a number of times the source fixes, at most this many in all
            (``for lr in (0.1, 0.01, 0.001)``, a Saver under ``if step % 50 == 0`` in 200 steps), and
            that has not grown more often than that, is bounded: tolerated, kept in
            ``report().one_off`` (kind ``"bounded"``), as ``graphguard check`` leaves such loops out
            (its ``max-bounded-iterations``, 10). ``graphguard run`` passes 10: it judges a whole
            program as the linter does; a test or your own loop acts on all growth (tests run short
            loops on purpose). Read from the source (``graphguard.runtime.bounded``).
        on_growth: what to do at a growth event. ``"raise"`` (default): save a checkpoint if
            configured, then raise :class:`GraphGrowthError` with the report. ``"warn"`` (count mode):
            a :class:`GraphGrowthWarning` at the creating line, once per line, and keep running.
            A callable: called with ``guarded.report()`` (a ``GuardReport``) at every growth event;
            the run goes on unless it raises. In finalize mode the op cannot be built, so after the
            callable returns the guard raises :class:`GraphGrowthError` anyway.
        slowdown_factor: ratio (default 3.0; ``None`` turns it off). A :class:`SlowdownWarning` when
            the median step time of the latest 20 steps is this many times the median of the 20
            steps just after warm-up (and at least 1 ms more), again at each further factor.
        rss_every: steps (default 10; ``None`` turns RSS off). The process RSS (psutil
            ``memory_info().rss``, about 40 us per read) is sampled on every ``rss_every``-th step,
            at most once a second, plus once when the warm-up steps are done (the baseline).
        max_rss_growth: bytes (default ``None``: no limit). When a sample shows RSS grown by more
            than this since the baseline, the guard stops the run with :class:`RssGrowthError`.
            Needs psutil.
        saver: a ``tf.compat.v1.train.Saver`` built before guarding (before finalization), and
        checkpoint_path: the path prefix to save to (``Saver.save``'s ``save_path``). Given both,
            the guard saves a checkpoint (variables only, no meta graph) before it raises
            :class:`GraphGrowthError` or :class:`RssGrowthError`, and names the path in the error.

    Raises:
        TypeError: ``sess`` is not a session (no ``run`` or ``graph``: a graph, ``None``, a name).
        ValueError: a bad option (unknown ``mode`` or ``on_growth``, negative counts, a string or a
            bool where a number goes, ``on_growth="warn"`` with ``mode="finalize"``, ``saver``
            without ``checkpoint_path`` or without ``save``, ``max_rss_growth`` without psutil).
        GraphGrowthError: from op creation (finalize mode, or any mode when the graph is finalized)
            or from ``run`` (count mode).
        RssGrowthError: from ``run``, when ``max_rss_growth`` is exceeded.

    Cost per guarded run: one attribute test (the interception flags graph changes, so
    ``Graph.version`` is read only after one and every 10th step), two clock reads, one
    ``next()`` on a counter, one deque append and a comparison: about 1-1.5 us around a stub session, a few us next to a
    real ``Session.run`` (see docs/graph-guard.md). The RSS read and the slowdown median run every 10th
    step at most. ``guarded.run`` is bound to an inner object whose class has no ``__getattr__``, so
    the delegation below does not slow its attribute reads. ``release()`` (also ``__exit__`` and
    ``close()``) undoes the guard: TF's finalization check is restored and the graph is un-finalized
    (``Graph._unsafe_unfinalize``) if it was not finalized when guarding started.
    """

    def __init__(
        self,
        sess: Any,
        mode: str = "finalize",
        *,
        warmup_steps: int = 1,
        max_new_ops_per_step: int = 0,
        min_growth_steps: int = 2,
        min_growth_sessions: int = DEFAULT_MIN_GROWTH_SESSIONS,
        max_burst_ops: Optional[int] = DEFAULT_MAX_BURST_OPS,
        max_burst_ratio: float = DEFAULT_MAX_BURST_RATIO,
        on_growth: OnGrowth = "raise",
        slowdown_factor: Optional[float] = 3.0,
        rss_every: Optional[int] = 10,
        max_rss_growth: Optional[int] = None,
        saver: Any = None,
        checkpoint_path: Optional[str] = None,
        max_bounded_iterations: int = 0,
    ) -> None:
        if mode == "finalize" and on_growth == "warn":
            raise ValueError("on_growth='warn' needs mode='count': a finalized graph cannot grow, so the run cannot go on")
        if not callable(getattr(sess, "run", None)) or getattr(sess, "graph", None) is None:
            raise TypeError(f"GraphGuard guards a session: pass a tf.compat.v1.Session or MonitoredSession (with "
                            f".run and .graph), not {type(sess).__name__}")
        self._sess = sess
        core = _SessionGuard(sess)
        core._setup(sess.graph, mode=mode, **setup_options(locals()))
        self._core = core
        core._active = True
        core._was_finalized = core._graph.finalized
        core._join_graph()  # before the interception, which then chains to the graph's import recorder
        core._interceptor.install()
        core._session_started()
        if mode == "finalize":
            core._graph.finalize()
        self.run = core.run  # an instance attribute: see _SessionGuard
        session_class = _as_session_class()
        if session_class is not None:
            # A tf.compat.v1 SessionInterface too: ``saver.save(guarded, path)`` checks the type (a
            # twenty-second new user's trial: "TypeError: 'sess' must be a Session" after an epoch)
            self.__class__ = session_class

    # -- the loop -------------------------------------------------------------------------------

    def run(self, fetches: Any, feed_dict: Any = None, options: Any = None, run_metadata: Any = None) -> Any:
        """``Session.run(fetches, feed_dict, options, run_metadata)``, guarded and timed.

        Returns exactly what ``Session.run`` returns (same structure: single tensor, list, tuple,
        dict, nested). Raises what ``Session.run`` raises, plus :class:`GraphGrowthError` in count
        mode when ops were added after the warm-up steps (checked before the session runs, so the
        leaking step does not pay for copying the graph), and :class:`RssGrowthError`.
        (``guarded.run`` is bound to the guard's inner object; this method is the same call.)
        """
        return self.__dict__["run"](fetches, feed_dict, options, run_metadata)

    # -- reporting ------------------------------------------------------------------------------

    @property
    def stats(self) -> GuardStats:
        """A :class:`~graphguard.runtime.report.GuardStats` snapshot (steps, ops, ops per step, step
        seconds, RSS bytes). While guarding, reading it takes a fresh RSS sample (psutil, about 40 us).
        """
        return self._core.stats

    def report(self) -> GuardReport:
        """Everything measured so far, as a :class:`~graphguard.runtime.report.GuardReport` (data).

        ``str(report)`` is the text ``graphguard run`` prints: growth patterns such as
        ``+14 ops/step since step 2 (5 steps to step 6): 12 x Const, Mean at train.py:57 (tf.reduce_mean);
        2 x SaveV2 at train.py:63 (tf.train.Saver)`` with each line's source, slowdowns, step time, RSS.
        """
        return self._core.report()

    # -- lifecycle ------------------------------------------------------------------------------

    def release(self) -> None:
        """Stop guarding; idempotent. ``run`` keeps working afterwards, unguarded and untimed.

        Restores ``Graph._check_not_finalized`` on this graph and, if the graph was not finalized
        when guarding started, un-finalizes it (``Graph._unsafe_unfinalize()``) so the session can
        build new ops again. A graph that was already finalized (e.g. by ``MonitoredSession``) stays
        finalized. ``stats`` and ``report()`` stay readable, frozen at this point.
        """
        core = self._core
        if not core._active:
            return
        core._freeze()
        self.run = core._run  # later calls go straight to the session
        graph = core._graph
        if not core._was_finalized and graph.finalized:
            unfinalize = getattr(graph, "_unsafe_unfinalize", None)
            if unfinalize is not None:
                unfinalize()
            else:  # older TF: the flag is the whole state
                graph._finalized = False

    def close(self) -> None:
        """``release()``, then ``Session.close()``."""
        self.release()
        self._sess.close()

    def __enter__(self) -> "GraphGuard":
        return self

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        self.release()
        if isinstance(exc, _GUARD_ERRORS):
            user_traceback(tb)
        # Fallback for when the interception could not be installed (or TF raised from a path that
        # does not call _check_not_finalized): turn TF's plain error into a GraphGrowthError.
        if exc_type is RuntimeError and str(exc) == _FINALIZED_MESSAGE:
            op_type, what = None, "add a new op"
            frame_tb = tb
            while frame_tb is not None:  # TF may have filtered its own frames out of the traceback
                if frame_tb.tb_frame.f_code.co_name in TF_CHANGERS:
                    op_type, what = refused_change(frame_tb.tb_frame)
                frame_tb = frame_tb.tb_next
            filename, lineno, called = user_origin(traceback_frames(tb))
            line = source_line(filename, lineno, called)
            core = self._core
            raise finalized_error(op_type, what, line, core._steps, core._finalized_by(), None) from exc
        return None

    # -- delegation -----------------------------------------------------------------------------

    def __getattr__(self, name: str) -> Any:
        # Only called for names GraphGuard does not define: graph, sess_str, make_callable, ...
        if name.startswith("__") or name in ("_sess", "_core"):
            raise AttributeError(name)
        return getattr(self._sess, name)

    def __repr__(self) -> str:
        core = self._core
        state = "active" if core._active else "released"
        return f"<GraphGuard mode={core._mode!r} steps={core._steps} {state} session={self._sess!r}>"
