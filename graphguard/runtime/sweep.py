"""``SweepGuard``: a learning-rate sweep, a k-fold, a hyperparameter search whose trials do not leak.

One model per iteration: the first trial runs at full speed, later ones crawl, because earlier models
were never freed and the machine swaps. The usual holders are a container that outlives the loop
(``solvers[lr] = solver``, ``models.append(model)``, a module-level list), Keras's global state (every
model's layers and names, until ``keras.backend.clear_session()``), and, in TF1 graph mode, the
default graph that keeps every trial's ops. ``SweepGuard`` measures each trial and names the holder::

    sweep = SweepGuard()                          # on_leak="warn", 32 MiB retained per trial
    for lr in (1e-4, 3e-4, 1e-3, 3e-3):
        with sweep.trial(f"lr={lr:g}") as trial:
            model = TwoLayerNet(...)
            solver = trial.track(Solver(model, data, learning_rate=lr))
            solver.train()
    print(sweep.report())                         # judges the last trial; trial, seconds, RSS, objects alive

Per trial (:class:`TrialRecord`):

* **RSS retained** (bytes): the process RSS (psutil ``memory_info().rss``) at the end of the trial
  minus at its start, each read after ``gc.collect()`` and, on glibc, ``malloc_trim(0)`` (so memory
  that Python freed but the C allocator kept is not counted as retained). With ``clear_session=True``
  Keras's ``clear_session()`` runs before the end reading.
* **Objects alive, one trial later**: every object passed to :meth:`Trial.track`, every Keras model
  (Keras 3 ``keras.Model``, and ``tf_keras.Model`` if loaded) and every ``tf.Graph`` /
  ``tf.compat.v1.Session`` created during the trial is held by a weak reference. Those alive at the
  trial's end are *judged one trial later*: at the end of the next trial (after its garbage collection),
  or, for the last trial, when the sweep is finished (:meth:`SweepGuard.report`, :meth:`SweepGuard.finish`
  or the end of ``with SweepGuard() as sweep:``). Many holders keep one model at a time and let it go when
  the next trial's replaces it: a Keras callback made once before the loop (``EarlyStopping``,
  ``ModelCheckpoint``: their ``model``), a ``History``, an exception's traceback after the ``except``.
  Judged at its own end, such a trial would look leaking; one trial later its objects are gone. One
  still alive then is a leak, reported with the chain of references that keeps it alive *then*
  (:class:`ReferenceChain`, found with ``gc.get_referrers``, see :func:`find_chain`), which names the
  lasting holder (``rec -> Recorder.seen -> list[2]``), not a slot that now holds a newer model; unless
  it is held only through the sweep's *loop variables* (below), or only by an object attribute that held
  an earlier trial's object at that trial's end (a one-at-a-time slot, searched past: what matters for
  the last trial, whose slot nothing replaces): then it is listed but not a leak.
* **Loop variables**: at the trial's start the guard notes ``{name: id(value)}`` of the variables of
  the code running the ``with sweep.trial()`` (a function's locals; at module level, in a script or a
  notebook, the module's globals); at its end, the names whose value changed or that appeared during
  the trial are its loop variables (``model``, ``solver``, ``history``, ``trial``): the next trial
  rebinds them. When trial n is judged at the end of trial n+1, the loop variables are the names rebound
  during either trial (by the same code; for the last trial, judged at the sweep's end, the names rebound
  since it started). They are not roots: a chain may pass through them (``history._model``), and a
  closure cell holding a loop variable's current value is that variable (``lambda: solver.score``). The
  search looks for a chain from any other root first (a container made before the loop keeps its id
  while it grows: ``solvers[lr] = solver`` is a real holder); only if none exists is the object "held by
  loop variables only". So the last trial's loop variables never make a leak (nothing rebinds them), and
  a name bound in a trial and then left alone (``best = model`` in trial 1) excuses that trial: one kept
  model is not growth.
* **Default-graph ops**: ``Graph.version`` delta of TensorFlow's default graph over the trial (TF1
  graph mode keeps every trial's ops there until ``tf.compat.v1.reset_default_graph()``).

A trial after the first ``warmup`` trials *leaks* when an object is alive one trial later, its retained
RSS is over ``max_retained_bytes``, RSS rose steadily across the judged trials up to it (the trend: a
least-squares slope of at least 1 MiB per trial over at least 5 trials, explaining 90 % of the
variance; :func:`~graphguard.runtime.sweep_judgement.rss_trend`), or the default graph kept ops;
warm-up trials are judged on objects only (their RSS pays one-time costs: imports, TensorFlow function
caches, data loading). RSS and ops are measured per trial; a trial flagged on RSS alone is worded as
such ("no object of this trial alive: the memory may belong to an earlier trial or to a cache": RSS is
the whole process). A leak goes to
``on_leak`` when the trial is judged, naming that trial: ``"warn"`` (:class:`SweepLeakWarning`),
``"raise"`` (:class:`SweepLeakError`, so it surfaces at the end of the *next* trial's ``with`` block, or
at ``report()`` / ``finish()`` for the last trial; never over an exception leaving a trial's block: it
then waits for the next judgement) or a callable given the :class:`TrialRecord`. Until judged, a
trial's record is provisional (``TrialRecord.judged``). Trials of one guard do not nest
(``RuntimeError``); use a second guard for an inner loop.

Cost per trial (``guard_seconds``, both ends): two ``gc.collect()`` and two ``malloc_trim(0)``, plus, when
Keras or TensorFlow is loaded, two scans for models (one ``gc.get_referrers`` over their classes) and one
``gc.get_referrers`` pass over the objects alive at the trial's end (which attributes hold them). With
Keras loaded a process holds about 375,000 gc-tracked objects, and each full collection or pass over them
costs 30-150 ms: 0.42-0.73 s per trial. So the guard freezes (``gc.freeze()``, ``freeze=True``) what is
alive when the first trial starts, after one full collection and scan there (0.3 s, once): later
collections and scans see only the objects made since (about 8,000 after a small Keras fit), and a
trial costs 10-15 ms (``bench/sweep_overhead.py --keras``, 2 cores, Python 3.11, TF 2.21 / Keras 3;
6-10 ms to 0.4 ms for NumPy trials). A trial object still alive one trial later is judged after
``gc.unfreeze()`` and a full collection (so frozen holders cannot fake or hide a leak), followed by a
reference search; the guard then stays unfrozen until the sweep is finished, so a leaking sweep costs
what it did before. Nothing a trial made is ever frozen: the guards freeze only when no trial object
exists (see :class:`~graphguard.runtime.sweep_measure._Freeze`).

This module is the guard: :class:`SweepGuard`, :class:`Trial`, the trials' bookkeeping and ``on_leak``;
the judgement one trial later (objects alive, chains, one-at-a-time holders, reasons) is in
:mod:`graphguard.runtime.sweep_judgement`, the engines' callbacks in
:mod:`graphguard.runtime.sweep_engines`. The records are in :mod:`graphguard.runtime.sweep_report`, the process
measurements (RSS, models, graphs) in :mod:`graphguard.runtime.sweep_measure`, and the reference search
(:func:`find_chain`) in :mod:`graphguard.runtime.sweep_references`; their public names are importable
from here too.

This module imports neither TensorFlow, Keras nor NumPy: it only looks at TensorFlow and Keras when
they are already in ``sys.modules``, so a NumPy-only sweep never imports TensorFlow. psutil is imported
lazily (RSS figures are ``None`` without it).
"""

from __future__ import annotations

import gc
import sys
import time
import types
import warnings
import weakref
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Callable, Optional, Union

from graphguard.runtime.sweep_measure import (
    _NOT_TRACKED,
    FREEZE,
    _auto_classes,
    _clear_sessions,
    _default_graph,
    _instances,
    _is_data,
    _rss,
    _settle,
    _sync_frame_locals,
    _weakrefable,
)
from graphguard.runtime.sweep_references import (
    CHAIN_DEPTH,
    CHAIN_SECONDS,
    _is_guard_frame,
    _namespace,
    _type_name,
    find_chain,
    loop_variables,
)
from graphguard.runtime.errors import warn_at
from graphguard.runtime.sweep_judgement import _Judgement, _measure_reasons
from graphguard.runtime.sweep_report import (AliveObject, ReferenceChain, RssTrend, SweepReport, TrialRecord,
                                             trial_label)

if TYPE_CHECKING:
    from graphguard.runtime.sweep_engines import OptunaCallback

__all__ = [
    "AliveObject",
    "ReferenceChain",
    "RssTrend",
    "SweepGuard",
    "SweepLeakError",
    "SweepLeakWarning",
    "SweepReport",
    "Trial",
    "TrialRecord",
    "find_chain",
]

#: Default ``max_retained_bytes``: 32 MiB per trial. A correct Keras sweep (a fresh model per trial, nothing
#: keeping it, ``clear_session()`` after each) still leaves RSS behind, and more for bigger models: TF-FACTS
#: measured about 3.7 MB per iteration with ``clear_session()`` (5.2 MB without) for a small model, the
#: residue being functions left in the eager context's function library; on TF 2.21 / Keras 3 we measured
#: 5.5-6.2 MiB per fold for a 64-128-128-10 MLP fit for 2 epochs with Adam, 8-11 MiB at 512 units and
#: 15-26 MiB at 1,024 units (1.1 million weights), after ``gc.collect()`` and ``malloc_trim(0)``. 32 MiB keeps
#: such sweeps quiet on RSS alone; a kept model is still reported as an object alive, whatever its size.
DEFAULT_MAX_RETAINED_BYTES = 32 * 2**20


class SweepLeakError(RuntimeError):
    """``on_leak="raise"``: a trial left objects alive or retained more RSS than allowed.

    Raised when the trial is judged: when the *next* trial's ``with sweep.trial(...)`` block exits, or by
    ``report()`` / ``finish()`` / the end of ``with SweepGuard() as sweep:`` for the last trial; never over
    an exception leaving a trial's block (it then waits for the next judgement). ``record`` is the judged
    trial's :class:`TrialRecord`; the message names that trial and when it was judged, and gives the bytes
    retained and every object alive with its reference chain.
    """

    __module__ = "graphguard.runtime"

    def __init__(self, message: str, record: "TrialRecord") -> None:
        super().__init__(message)
        self.record = record


class SweepLeakWarning(RuntimeWarning):
    """``on_leak="warn"`` (default): a trial leaked; the sweep goes on. One warning per leaking trial,
    issued when it is judged: at the next trial's ``with sweep.trial(...)`` line, or at the
    ``sweep.report()`` / ``finish()`` call for the last trial. The sweep's first warning gives the fix
    paragraph; the later ones name their trial, objects and chains and say where the fix is
    (:meth:`SweepGuard.leak_message`). Turn it into an error with
    ``warnings.simplefilter("error", SweepLeakWarning)`` or ``on_leak="raise"``."""

    __module__ = "graphguard.runtime"


class SweepTrendWarning(RuntimeWarning):
    """A sweep's RSS rises steadily across its trials with no object of a trial kept (the RSS trend,
    :class:`~graphguard.runtime.sweep_report.RssTrend`): a note, reported and not failed, so not a
    :class:`SweepLeakWarning` (a thirteenth new user's trial: CI that turned leak warnings into errors
    failed a correct k-fold whose RSS rose with TensorFlow's caches). One per sweep."""

    __module__ = "graphguard.runtime"


# ---------------------------------------------------------------------------------------------------
# The guard
# ---------------------------------------------------------------------------------------------------


class Trial:
    """One iteration of a sweep: ``with sweep.trial(name) as trial:``. Made by :meth:`SweepGuard.trial`.

    Attributes:
        name: the trial's name.
        index: 1-based position in the sweep.
        record: the :class:`TrialRecord`, once the ``with`` block has exited (else ``None``). Until the
            trial's objects are judged (at the end of the next trial, or by :meth:`SweepGuard.report` /
            :meth:`SweepGuard.finish`) it is provisional: ``record.judged`` is False.
    """

    def __init__(self, guard: "SweepGuard", name: str, index: int, frame: Optional[types.FrameType]) -> None:
        self.name = name
        self.index = index
        self._guard = guard
        self._frame = frame
        self._slot: Optional[int] = None  # position of this trial's record in the guard's records
        self._tracked: list[tuple[weakref.ref, str, str]] = []
        self._before: dict[int, weakref.ref] = {}
        self._graph: Optional[weakref.ref] = None
        self._graph_version: Optional[int] = None
        self._rss_before: Optional[int] = None
        self._names: dict[str, int] = {}  # the sweep frame's variables at the start: {name: id(value)}
        self._start = 0.0
        self._guard_start_seconds = 0.0
        self._entered = False
        self._done = False
        self._standby = False  # started by an engine's callback for a trial that may never come
        self._driven = False  # started by an engine's callback (ended by the next one, or at the sweep's end)
        self._unfinished_name: Optional[Callable[[], Optional[str]]] = None  # the engine's name for it, if known
        self._error_name: Optional[str] = None  # an engine's word for a failed trial (Optuna's FAIL)
        self._overlapping = False  # other trials ran at the same time (threads): RSS is reported, not judged

    @property
    def record(self) -> Optional[TrialRecord]:
        """This trial's :class:`TrialRecord` as it stands (provisional until judged), or ``None``."""
        return None if self._slot is None else self._guard._records[self._slot]

    def track(self, obj: Any, *others: Any, name: Optional[str] = None) -> Any:
        """Watch ``obj`` (a model, a solver, a session...), and any ``others``, with weak references;
        returns ``obj``, or the tuple ``(obj, *others)`` when several are given
        (``model, solver = trial.track(model, solver)``).

        If one is still alive one trial later (at the end of the next trial, or when the sweep is
        finished, after a garbage collection) and held by something the next trial does not replace, the
        trial is reported with the chain of references that keeps it alive. ``name`` labels a single
        object in the report (default: its type name); ``trial.track(model, "model")`` also gives it
        as the second argument. Raises ``TypeError`` at the call for objects that cannot be weakly
        referenced (``list``, ``dict``, ``int``...: track the object that holds them instead), for a
        ``name`` that is not a ``str``, and ``RuntimeError`` outside the ``with`` block.
        """
        if not self._entered or self._done:
            raise RuntimeError("Trial.track() is for use inside `with sweep.trial(...) as trial:`")
        if len(others) == 1 and isinstance(others[0], str) and name is None:
            others, name = (), others[0]  # ``trial.track(model, "model")``
        if name is not None and not isinstance(name, str):
            raise TypeError(f"Trial.track(): name must be a str, not {_type_name(name)}; "
                            f"to track several objects pass them all positionally: trial.track(model, solver)")
        if others and name is not None:
            raise TypeError("Trial.track(): name= labels one object; several objects are labelled by their types")
        refs = []
        for item in (obj, *others):
            if isinstance(item, str):
                raise TypeError(f"Trial.track(): cannot track the str {item!r}; a label goes in name=")
            try:
                refs.append((weakref.ref(item), name or _type_name(item), "track"))
            except TypeError:
                raise TypeError(
                    f"cannot track an object of type {_type_name(item)}: it does not support weak references; "
                    f"track the object that holds it (a model, a solver) instead"
                ) from None
        self._tracked.extend(refs)
        self._guard._watched.add("track")
        return (obj, *others) if others else obj

    def __enter__(self) -> "Trial":
        if self._entered:
            raise RuntimeError("a Trial can be entered once; call sweep.trial() for the next one")
        guard = self._guard
        if guard._active is not None:
            if guard._active._driven:
                raise RuntimeError(
                    f"trial {self.name!r}: this SweepGuard's trials are run by {guard._engine} (its callback); "
                    f"`with sweep.trial()` cannot run inside one: use sweep.track(obj) in the objective, or a "
                    f"second SweepGuard for an inner loop"
                )
            raise RuntimeError(
                f"trials of one SweepGuard do not nest: trial {self.name!r} was started inside trial "
                f"{guard._active.name!r}; use a second SweepGuard for an inner loop"
            )
        started = time.perf_counter()
        self._entered = True
        guard._active = self
        if guard.freeze and guard._pending is None:
            FREEZE.freeze(guard, _auto_classes() if guard.track_models else [])
        FREEZE.busy.add(guard)
        self._rss_before = _settle(self._frame)
        if guard.track_models:
            self._before = {id(obj): weakref.ref(obj) for obj, _ in _instances(_auto_classes()) if _weakrefable(obj)}
            self._before.update(FREEZE.preexisting())  # frozen: invisible to the scans until thawed
        self._graph, self._graph_version = _default_graph()
        if self._frame is not None:
            self._names = {name: id(value) for name, value in list(_namespace(self._frame).items())}
            window = guard._names_since if self._driven else None
            if window is not None and window[0] == _frame_key(self._frame):
                # An engine's trial starts inside the engine, after the code between two trials ran
                # (``m = make()`` before ``m.fit(...)``): its loop variables are the names rebound since
                # the previous trial ended.
                self._names = dict(window[1])
        self._start = time.perf_counter()
        self._guard_start_seconds = self._start - started
        return self

    def _ran(self) -> bool:
        """Whether anything happened in this trial: an object tracked, or a tracked kind made (a model)."""
        if self._tracked:
            return True
        if not self._guard.track_models:
            return False
        return any(id(obj) not in self._before for obj, _ in _instances(_auto_classes()))

    def _cancel(self) -> None:
        """Drop a trial started by an engine's callback whose trial never came (the search ended)."""
        if self._guard._count == self.index:
            self._guard._count -= 1  # its number goes to the next trial
        self._guard._active = None
        self._done = True
        self._frame = None
        self._tracked.clear()
        self._before.clear()
        self._names.clear()

    def __exit__(self, exc_type, exc, tb) -> None:
        seconds = time.perf_counter() - self._start
        guard = self._guard
        guard._active = None
        self._done = True
        started = time.perf_counter()
        graph_ops = None
        if self._graph is not None:
            graph, version = _default_graph()
            if graph is not None and graph() is self._graph():
                graph_ops = version - self._graph_version
        if guard.clear_session:
            _clear_sessions()
        rss_after = _settle(self._frame)
        frame = self._frame
        key = _frame_key(frame)
        names = loop_variables(self._names, frame) if frame is not None else frozenset()
        # The previous trial's objects are judged now, one trial later: what held one model at a time (a
        # callback's `model`, a history, a propagating exception's traceback) holds this trial's by now.
        if guard._pending is not None:
            guard._judge(frame, key, names, f"the end of trial {self.name!r} (trial {self.index})")

        # This trial's objects alive now: kept by weak references only, judged at the end of the next trial.
        objects: list[tuple[weakref.ref, str, str]] = []
        targets: list[Any] = []
        seen: set[int] = set()
        for ref, name, source in self._tracked:
            obj = ref()
            if obj is not None and id(obj) not in seen:
                seen.add(id(obj))
                objects.append((ref, name, source))
                targets.append(obj)
        if guard._track_bound and frame is not None:  # graphguard run --sweep: what the loop's body bound
            namespace, value = _namespace(frame), None
            for name in sorted(names):
                value = namespace.get(name)
                if id(value) in seen or isinstance(value, _NOT_TRACKED) or _is_data(value) or not _weakrefable(value):
                    continue
                seen.add(id(value))
                objects.append((weakref.ref(value), name, "track"))
                targets.append(value)
            del namespace, value
        classes = _auto_classes() if guard.track_models else []  # modules imported during the trial count too
        guard._watched.update(source for _, source in classes)  # what was looked for, for the report's words
        for obj, source in _instances(classes):
            before = self._before.get(id(obj))
            if (before is not None and before() is obj) or id(obj) in seen or not _weakrefable(obj):
                continue
            seen.add(id(obj))
            objects.append((weakref.ref(obj), _type_name(obj), source))
            targets.append(obj)
        if targets:
            guard._note_holders(targets, self.index)
        del targets
        warmup = self.index <= guard.warmup
        retained = None if self._rss_before is None or rss_after is None else rss_after - self._rss_before
        if self._overlapping:
            guard._rss_unjudged.add(self.index)
        reasons = _measure_reasons(retained, graph_ops, warmup, guard._limit(self.index), objects_judged=False)
        record = TrialRecord(
            index=self.index, name=self.name, seconds=seconds, rss_before=self._rss_before, rss_after=rss_after,
            alive=(), graph_ops=graph_ops, warmup=warmup, leaked=bool(reasons), reasons=tuple(reasons),
            guard_seconds=self._guard_start_seconds + time.perf_counter() - started,
            error=self._error_name if exc_type is None else exc_type.__name__, judged=False, alive_at_end=len(objects),
        )
        self._slot = len(guard._records)
        guard._records.append(record)
        trend = guard._trend() if not warmup and guard._limit(self.index) is not None else None
        if trend is not None and trend.last == self.index:  # RSS rose steadily up to this trial: a reason
            reasons = _measure_reasons(retained, graph_ops, warmup, guard._limit(self.index), objects_judged=False,
                                       trend=trend)
            guard._records[self._slot] = record = replace(record, rss_trend=trend, leaked=bool(reasons),
                                                          reasons=tuple(reasons))
        guard._pending = _Pending(self._slot, self.index, objects, dict(self._names), key)
        guard._names_since = None
        if self._driven and frame is not None:
            guard._names_since = (key, {name: id(value) for name, value in list(_namespace(frame).items())})
        self._frame = None  # frames hold every local: never keep one past the trial
        self._tracked.clear()
        self._before.clear()
        self._names.clear()
        try:
            guard._notify(raising=exc_type is None)
        except SweepLeakError as error:
            raise error.with_traceback(None) from None  # the user's frames, not the guard's


@dataclass
class _Pending:
    """A finished trial whose objects are not judged yet: weak references and ids only (holding the
    objects, or the frame, would keep them alive into the judgement)."""

    slot: int  # position of its record in SweepGuard._records
    index: int  # the trial's 1-based index
    objects: list[tuple[weakref.ref, str, str]]  # (weak reference, name, source) alive at the trial's end
    names: dict[str, int]  # the sweep frame's {name: id(value)} at the trial's start
    frame_key: Optional[tuple[Any, ...]]  # which namespace those names belong to (see _frame_key)


def _frame_key(frame: Optional[types.FrameType]) -> Optional[tuple[Any, ...]]:
    """What identifies the namespace of the code running a trial: a running function's frame, or, at
    module level (a script, notebook cells), the module's globals (each notebook cell is a new frame)."""
    if frame is None:
        return None
    if frame.f_code.co_flags & 0x01:  # CO_OPTIMIZED: a function
        return ("function", id(frame), id(frame.f_code))
    return ("module", id(frame.f_globals))


#: What ``--sweep`` does not track among the values a loop body binds: code, classes, modules.
OnLeak = Union[str, Callable[[TrialRecord], Any]]


def _check_type(name: str, value: Any, kinds, expected: str, optional: bool = False) -> None:
    """Raise ``TypeError`` at the call when ``value`` is not of ``kinds`` (``bool`` is not a number here)."""
    if optional and value is None:
        return
    number = kinds is int or (isinstance(kinds, tuple) and int in kinds)
    if not isinstance(value, kinds) or (number and isinstance(value, bool)):
        raise TypeError(f"SweepGuard(): {name} must be {expected}, not {value!r}")


class SweepGuard(_Judgement):
    """Measure each trial of a sweep and report what it leaves behind (see the module docstring).

    A trial's objects are judged one trial later: at the end of the next trial, or, for the last trial,
    when the sweep is finished (:meth:`report`, :meth:`finish`, or the end of ``with SweepGuard() as
    sweep:``). Its RSS and default-graph ops are measured at its own end.

    Args:
        max_retained_bytes: RSS a trial after warm-up may keep (bytes; ``rss_after - rss_before``),
            default :data:`DEFAULT_MAX_RETAINED_BYTES` (32 MiB, above the 4-26 MiB per trial measured
            for correct Keras sweeps, which TensorFlow keeps in its function library); with a limit,
            RSS rising steadily across the trials (:class:`RssTrend`, at least 1 MiB per trial) is
            judged too, whatever each trial keeps; ``None`` judges objects and graph ops only.
        warmup: trials (from the first) whose retained RSS and default-graph ops are reported but not
            judged (default 1: the first trial pays imports, function caches, data loading). Objects
            alive are judged in every trial.
        on_leak: ``"warn"`` (default; :class:`SweepLeakWarning`), ``"raise"`` (:class:`SweepLeakError`),
            ``"ignore"`` (only the report), or a callable receiving the :class:`TrialRecord`. It is
            called when the trial is judged: at the end of the next trial's ``with`` block, or by
            :meth:`report` / :meth:`finish` for the last trial. ``"raise"`` never raises over an
            exception leaving a trial's block: the error then waits for the next judgement. A trial
            flagged by the RSS trend alone (:attr:`TrialRecord.trend_only`: nothing kept, under the limit)
            is a note: warned unless ``"ignore"``, never raised nor passed to the callable.
        clear_session: call ``keras.backend.clear_session()`` (Keras 3 and tf_keras, if loaded; else
            ``tf.compat.v1.reset_default_graph()`` if TensorFlow is loaded) at the end of every trial,
            before the end RSS reading. Default False.
        track_models: track Keras models, ``tf.Graph`` and ``tf.compat.v1.Session`` objects created in a
            trial (default True; one ``gc.get_referrers`` over their classes at each trial's start and
            end, only when Keras or TensorFlow is already imported).
        chain_depth: levels of referrers searched per object (default 12).
        chain_seconds: wall-time budget of the reference search per judgement (seconds, default 5).
        freeze: keep the objects alive when the first trial starts (the interpreter's long-lived
            objects: TensorFlow, Keras, the data) out of the trials' collections and scans with
            ``gc.freeze()`` (default True), until a trial's object is still alive one trial later, which a
            full collection then judges; ``gc.unfreeze()`` when the sweep is finished. With Keras loaded
            this takes a trial's cost from about 0.4 s to a few ms (see the module docstring). False:
            every collection is a full one. A process that called ``gc.freeze()`` itself is left alone.

    Raises ``ValueError`` for a bad ``on_leak``, a negative ``warmup`` or ``max_retained_bytes``, and
    ``TypeError`` for an argument of the wrong type (``max_retained_bytes="32MB"``,
    ``clear_session="yes"``), at the call.
    """

    #: The trials this guard makes (the sweep engines make them through it, without importing this module).
    _trial_type = Trial

    def __init__(
        self,
        *,
        max_retained_bytes: Optional[int] = DEFAULT_MAX_RETAINED_BYTES,
        warmup: int = 1,
        on_leak: OnLeak = "warn",
        clear_session: bool = False,
        track_models: bool = True,
        chain_depth: int = CHAIN_DEPTH,
        chain_seconds: float = CHAIN_SECONDS,
        freeze: bool = True,
    ) -> None:
        if not callable(on_leak) and on_leak not in ("warn", "raise", "ignore"):
            raise ValueError(f"on_leak must be 'warn', 'raise', 'ignore' or a callable, not {on_leak!r}")
        _check_type("max_retained_bytes", max_retained_bytes, int, "a number of bytes (an int) or None",
                    optional=True)
        _check_type("warmup", warmup, int, "a number of trials (an int)")
        _check_type("clear_session", clear_session, bool, "True or False")
        _check_type("track_models", track_models, bool, "True or False")
        _check_type("freeze", freeze, bool, "True or False")
        _check_type("chain_depth", chain_depth, int, "a number of levels (an int)")
        _check_type("chain_seconds", chain_seconds, (int, float), "a number of seconds")
        if warmup < 0:
            raise ValueError(f"warmup must be >= 0, not {warmup}")
        if max_retained_bytes is not None and max_retained_bytes < 0:
            raise ValueError(f"max_retained_bytes must be >= 0 or None, not {max_retained_bytes}")
        if chain_depth < 1 or chain_seconds < 0:
            raise ValueError("chain_depth must be >= 1 and chain_seconds >= 0")
        self.max_retained_bytes = max_retained_bytes
        self.warmup = warmup
        self.on_leak = on_leak
        self.clear_session = clear_session
        self.track_models = track_models
        self.chain_depth = chain_depth
        self.chain_seconds = chain_seconds
        self.freeze = freeze
        weakref.finalize(self, _guard_gone)
        self._records: list[TrialRecord] = []
        self._count = 0
        self._active: Optional[Trial] = None
        self._pending: Optional[_Pending] = None  # the last finished trial, not judged yet
        self._unnotified: list[TrialRecord] = []  # judged leaking, on_leak not called yet
        # One-at-a-time holders: (id(owner), attribute) -> [weak reference to owner, [(trial, id(object))]]
        # for every object attribute that held a trial's object at that trial's end.
        self._slots: dict[tuple[int, str], list[Any]] = {}
        self._engine: Optional[str] = None  # the library driving the trials (sweep_engines), if any
        self._namespaces: dict[int, str] = {}  # id(globals) -> label: namespaces that are roots like modules
        self._remote: list[Any] = []  # sources of trials judged in other processes (Ray Tune workers)
        self._finish_hooks: list[Callable[[], Any]] = []  # engines' work once the last trial is judged
        self._keep_last = False  # Keras's callback: a search's last fit may be its result (see _keep_result)
        self._track_bound = False  # graphguard run --sweep: track the values the trial's loop body binds
        self._watched: set[str] = set()  # SweepReport.watched: track() called, models looked for ("keras"...)
        self._engine_site: Optional[tuple[str, int]] = None  # (file, line) where the engine's callback was made
        self._fits = 0  # fits seen by this guard's Keras callbacks (one count, however many callbacks)
        # (frame key, {name: id(value)}) of the sweep's frame at an engine trial's end: where the next
        # engine trial's loop-variable window starts (see Trial.__enter__).
        self._names_since: Optional[tuple[Any, dict[str, int]]] = None
        self._defer_raise = False  # on_leak="raise" waits for report()/finish() (an engine that catches errors)
        self._engine_lock: Any = None  # held by an engine's callback while it ends one trial and starts the next
        self._rss_unjudged: set[int] = set()  # trials that overlapped others (Optuna n_jobs > 1): RSS not judged
        self._fix_given = self._output_fix_given = False  # leak_message(): the fix paragraphs once per sweep
        self._raised = False  # a SweepLeakError was raised: report() then returns the table, never raises
        self._trend_warned = False  # a warning for the RSS trend alone is given once per sweep
        self._trend_from = 0  # the first record the RSS trend fits (_phase: a script's next sweep loop)
        self._remote_slots: set[int] = set()  # records gathered from Ray Tune workers: other processes' RSS

    def trial(self, name: Optional[str] = None) -> Trial:
        """A :class:`Trial` for ``with sweep.trial(name) as trial:`` (default name ``"trial N"``).

        The code calling ``trial()`` is taken as the one running the sweep: its variables (a function's
        locals, or the module's globals at module level) are roots of the reference chains, except its
        loop variables (the names rebound during the trial, see the module docstring). Raises
        ``RuntimeError`` when entered inside another trial of the same guard (trials do not nest).
        """
        self._count += 1
        return Trial(self, str(name) if name is not None else f"trial {self._count}", self._count, sys._getframe(1))

    # -- engines: the same trials, started and ended by a library's callbacks (sweep_engines) ----------

    def optuna_callback(self, *, stop_on_leak: bool = False) -> "OptunaCallback":
        """A callback for ``study.optimize(objective, callbacks=[sweep.optuna_callback()])``: each Optuna
        trial is a trial of this guard, judged one trial later; verdicts in
        ``study.user_attrs["graphguard:trial N"]``; ``stop_on_leak=True`` stops the study at the first
        leak. Make it right before ``optimize()``: its first trial starts when it is made. Works with
        ``n_jobs > 1`` (trials overlap: see :mod:`graphguard.runtime.sweep_engines`). Raises
        ``TypeError`` for a ``stop_on_leak`` that is not a bool, ``RuntimeError`` inside a trial."""
        from graphguard.runtime.sweep_engines import OptunaCallback, _creator_code

        self._refuse_inside_trial("optuna_callback")
        return OptunaCallback(self, stop_on_leak=stop_on_leak, code=_creator_code())

    def keras_callback(self, keras: Optional[str] = None) -> Any:
        """A Keras callback that makes every ``fit`` it is passed to a trial of this guard: a Keras fit
        loop, scikit-learn's ``GridSearchCV``/``RandomizedSearchCV``/``cross_validate`` over a Keras
        wrapper (``fit_kwargs={"callbacks": [...]}``), Keras Tuner's ``tuner.search(...,
        callbacks=[...])``. ``keras``: ``"keras"`` (Keras 3, default) or ``"tf_keras"``. Raises
        ``ImportError`` without Keras, ``ValueError`` for another ``keras``."""
        from graphguard.runtime.sweep_engines import _creator_code, keras_callback

        self._refuse_inside_trial("keras_callback")
        return keras_callback(self, keras, code=_creator_code())

    def ray_trainable(self, trainable: Callable[[dict], Any]) -> Callable[[dict], Any]:
        """``trainable`` (a Ray Tune function trainable) wrapped so that every trial it runs, in whatever
        worker, is measured there by a guard with this guard's options and reported here at
        :meth:`report`: ``tune.Tuner(sweep.ray_trainable(train), ...)``. Raises ``TypeError`` when
        ``trainable`` is not a function."""
        from graphguard.runtime.sweep_engines import ray_trainable

        return ray_trainable(self, trainable)

    def track(self, obj: Any, *others: Any, name: Optional[str] = None) -> Any:
        """:meth:`Trial.track` on the trial running now: for code that does not hold the
        :class:`Trial`, such as an Optuna objective under :meth:`optuna_callback`
        (``sweep.track(solver, name="solver")``). Returns what ``Trial.track`` returns. Raises
        ``RuntimeError`` when no trial of this guard is running, and what ``Trial.track`` raises."""
        lock = self._engine_lock
        if lock is not None:  # an engine's callback may be between two trials on another thread
            with lock:
                active = self._active
        else:
            active = self._active
        if active is None:
            raise RuntimeError("sweep.track() needs a running trial: call it inside `with sweep.trial()`, or in "
                               "the objective of a search guarded by sweep.optuna_callback() or sweep.keras_callback()")
        return active.track(obj, *others, name=name)

    #: ``graphguard run --sweep``'s trial names (``lr=0.001``): :func:`~graphguard.runtime.sweep_report.trial_label`
    _label = staticmethod(trial_label)

    def __reduce__(self) -> Any:
        """Pickled into a Ray Tune worker (a trainable that calls ``sweep.track(...)``), a guard is that
        worker's stand-in: its ``track()`` tracks in the trial the worker runs (see :meth:`ray_trainable`)."""
        from graphguard.runtime.sweep_engines import _worker_sweep

        return _worker_sweep, ()

    def __deepcopy__(self, memo: dict) -> "SweepGuard":
        return self

    def _refuse_inside_trial(self, what: str) -> None:
        if self._active is not None and not self._active._standby:
            raise RuntimeError(f"sweep.{what}() inside trial {self._active.name!r}: make it before the search, "
                               f"outside `with sweep.trial()`")

    @property
    def records(self) -> tuple[TrialRecord, ...]:
        """The finished trials' records, in order; the last one is provisional (``judged`` False) until
        the next trial ends or the sweep is finished."""
        return tuple(self._records)

    def finish(self) -> "SweepGuard":
        """Judge the last trial now (its objects still alive, held by anything but the variables the
        sweep rebound since that trial started) and call ``on_leak`` for any leak not yet notified.
        :meth:`report` and the end of ``with SweepGuard() as sweep:`` call it; call it yourself after the
        loop when you want the verdict without a report. Trials may follow (they start a new judgement).
        Returns the guard."""
        try:
            self._finish(sys._getframe(1), raising=True)
        except SweepLeakError as error:
            raise error.with_traceback(None) from None  # the user's frames, not the guard's
        return self

    def report(self) -> SweepReport:
        """Every finished trial as a :class:`SweepReport` (``str()`` is the summary table), after
        :meth:`finish` (so call it after the loop: inside the loop it judges the trial just finished as
        the sweep's last). Under ``on_leak="raise"`` it raises :class:`SweepLeakError` for a leak found
        here, unless the guard has raised one already: then it returns the table (a fourteenth new
        user's trial caught the first error and could not print the report)."""
        try:
            self._finish(sys._getframe(1), raising=not self._raised)
        except SweepLeakError as error:
            raise error.with_traceback(None) from None
        notes = tuple(note for source in self._remote for note in (source.note(),) if note)
        return SweepReport(tuple(self._records), self.max_retained_bytes, self.warmup, self.clear_session,
                           rss_available=_rss() is not None, notes=notes,
                           rss_trend=self._trend() if self.max_retained_bytes is not None else None,
                           watched=tuple(sorted(self._watched | ({"bound"} if self._track_bound else set()))))

    def __enter__(self) -> "SweepGuard":
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        self._finish(sys._getframe(1), raising=exc_type is None)

    # -- judging ---------------------------------------------------------------------------------------

    def _finish(self, frame: Optional[types.FrameType], raising: bool) -> None:
        self._close_engine_trial()
        if self._active is not None:
            raise RuntimeError(f"the sweep cannot be finished inside trial {self._active.name!r}")
        if self._pending is not None:
            while frame is not None and _is_guard_frame(frame):
                frame = frame.f_back
            started = time.perf_counter()
            _sync_frame_locals(frame)
            gc.collect()  # what the code freed since the trial's end (an exception's traceback) goes
            slot = self._pending.slot
            self._judge(frame, _frame_key(frame), frozenset(), "the end of the sweep (report() or finish())", final=True)
            if (self._engine is not None and self._keep_last) or (self._engine is None and slot > 0):
                self._keep_result(slot)
            self._records[slot] = replace(self._records[slot],
                                          guard_seconds=self._records[slot].guard_seconds + time.perf_counter() - started)
            if self._unnotified and self._unnotified[-1].index == self._records[slot].index:
                self._unnotified[-1] = self._records[slot]
        FREEZE.idle(self)  # nothing pending: the process's collections are its own again
        for source in self._remote:  # trials judged in Ray Tune workers
            for record in source.gather():
                self._remote_slots.add(len(self._records))
                self._records.append(record)
                if record.leaked:
                    self._unnotified.append(record)
            source.close()
        for hook in self._finish_hooks:
            hook()
        self._notify(raising, finishing=True)

    def _close_engine_trial(self) -> None:
        """The trial an engine's callback left open: dropped when nothing happened in it (the next trial
        that never came), else ended as interrupted (an exception out of ``optimize()``, a fit that raised
        in the last trial: the callback that would have ended it never ran)."""
        active = self._active
        if active is None or not active._driven:
            return
        if active._standby and not active._ran():
            active._cancel()
            return
        if active._standby:
            name = active._unfinished_name() if active._unfinished_name is not None else None
            active.name = f"{name or active.name} (did not finish)"
        active._error_name = active._error_name or "interrupted"
        active._standby = False
        active.__exit__(None, None, None)

    def _notify(self, raising: bool, finishing: bool = False) -> None:
        """Call ``on_leak`` for the judged leaking trials not yet notified, oldest first. With an exception
        leaving a trial's block (``raising`` False), ``"raise"`` waits for the next judgement; under an
        engine that catches what a fit raises (Keras, in scikit-learn's searches), for the sweep's end."""
        while self._unnotified:
            if self.on_leak == "raise" and (not raising or (self._defer_raise and not finishing)):
                return
            self._on_leak(self._unnotified.pop(0))

    def _on_leak(self, record: TrialRecord) -> None:
        if record.trend_only and self.on_leak != "ignore":
            # A note, not a verdict: never raised, never handed to a callback that may stop the sweep (an
            # eleventh new user's trial: on_leak="raise" failed a correct Keras sweep on a message that
            # said "reported, not failed"); warned as in "warn" mode.
            self._warn(record)
        elif callable(self.on_leak):
            self.on_leak(record)
        elif self.on_leak == "raise":
            self._raised = True
            raise SweepLeakError(record.message(), record)
        elif self.on_leak == "warn":
            self._warn(record)

    def _warn(self, record: TrialRecord) -> None:
        """A :class:`SweepLeakWarning` for ``record``, at the user's line."""
        if self.repeats_trend(record):
            return  # one warning for a steady rise; the table and the report mark every trial on it
        message = self.leak_message(record)
        category = SweepTrendWarning if record.trend_only else SweepLeakWarning
        level = _user_stacklevel(self._engine is not None)
        if self._engine_site is not None and level is None:  # an engine's thread: no user frame on it
            warn_at(message, category, *self._engine_site)
        else:
            # at the user's line, saying that Python prints that line after the message (a twenty-sixth
            # new user's trial read the echoed ``clear_session()`` as graphguard's advice)
            frame = sys._getframe((level or 2) - 1)  # stacklevel k names the frame k - 1 above this one
            warn_at(message, category, frame.f_code.co_filename, frame.f_lineno)

    def _phase(self) -> None:
        """A new sweep loop of the same script starts (``graphguard run --sweep`` calls it before each
        loop of a script with several): the RSS trend fits this loop's trials only, its first one left
        out as its warm-up (a new user's trial: a correct 3-trial loop after a leaking one was flagged
        by the trend of both)."""
        self._trend_from = len(self._records) + 1
        self._trend_warned = False

    def repeats_trend(self, record: TrialRecord) -> bool:
        """Whether ``record``'s one reason is the RSS trend (:attr:`TrialRecord.trend_only`) and a message
        of this sweep has said it: a steady rise is one warning, not one per trial on it (a correct Keras
        grid of 30 trials whose RSS rises 12 MiB per trial with TensorFlow's caches gave 29 paragraphs);
        the table and the report still mark every such trial. The first time, it notes that it was said."""
        if not record.trend_only:
            return False
        said, self._trend_warned = self._trend_warned, True
        return said

    def leak_message(self, record: TrialRecord) -> str:
        """``record.message()`` with the fix paragraph the first time only: a sweep that leaks in every
        trial gives its fix once, in its first leak message, not once per trial (the notebook paragraph
        on IPython's output history likewise, the first time a chain starts there)."""
        text = record.message(fix=not self._fix_given, output_fix=not self._output_fix_given)
        self._fix_given = True
        self._output_fix_given = self._output_fix_given or record.has_output_root()
        return text


def _guard_gone() -> None:
    """A guard was garbage-collected (never finished): thaw when no other guard is busy."""
    if not any(True for _ in FREEZE.busy):
        FREEZE.thaw()


def _user_stacklevel(engine: bool = False) -> Optional[int]:
    """The ``stacklevel`` of ``warnings.warn`` called from this module that names the first frame outside
    it (the ``with sweep.trial(...)`` line, or the ``sweep.report()`` call); with ``engine``, outside the
    engines' packages too (the user's ``study.optimize(...)`` or ``search.fit(...)`` line), or None when
    no frame is (an engine's worker thread)."""
    from graphguard.runtime.sweep_engines import _ENGINE_PACKAGES, _package

    level, frame = 1, sys._getframe(1)
    while frame is not None and (_is_guard_frame(frame) or (engine and _package(frame) in _ENGINE_PACKAGES)):
        level += 1
        frame = frame.f_back
    return level if frame is not None or not engine else None
