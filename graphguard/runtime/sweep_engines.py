"""``SweepGuard`` where sweeps really run: Optuna, Keras (scikit-learn searches, Keras Tuner), Ray Tune.

Each is one line in the user's code; the trials are the engine's, measured and judged as
``with sweep.trial():`` blocks are (see :mod:`graphguard.runtime.sweep`)::

    sweep = SweepGuard()
    study.optimize(objective, n_trials=20, callbacks=[sweep.optuna_callback()])       # Optuna
    tuner.search(x, y, epochs=5, callbacks=[sweep.keras_callback()])                   # Keras Tuner
    GridSearchCV(SKLearnClassifier(build), grid).fit(x, y, callbacks=[sweep.keras_callback()])   # scikit-learn
    GridSearchCV(KerasClassifier(build, callbacks=[sweep.keras_callback()]), grid).fit(x, y)      # SciKeras
    tune.Tuner(sweep.ray_trainable(train), ...).fit()                                  # Ray Tune
    print(sweep.report())

* **Optuna** (:class:`OptunaCallback`): Optuna calls a callback after each trial, never before one, so
  the callback starts the guard's next trial when it is made (just before ``optimize()``) and after each
  trial; the one left open when the study ends is dropped at ``report()``. A trial is judged one trial
  later, as always, and its verdict is written to the study, ``study.user_attrs["graphguard:trial N"]``
  (``leaked``, ``reasons``, ``alive``, ``retained_bytes``, ``seconds``): Optuna's storages refuse to
  change a finished trial (``UpdateFinishedTrialError``), and a callback only ever sees finished ones.
  ``stop_on_leak=True`` calls ``study.stop()`` at the first leak (pruning is not possible: the trial
  judged has finished). With ``n_jobs > 1`` (threads) trials overlap: the guard's trials are then the
  windows between two trials' ends, named after the trial that ended; RSS is the process's over the
  window, an object is any tracked one made in it, and what the other threads' running trials hold is
  work in progress, not a holder.
* **Keras** (:func:`keras_callback`): every ``fit`` the callback is passed to is a trial, from
  ``on_train_begin`` to ``on_train_end``, with the fitted model tracked. scikit-learn's
  ``GridSearchCV``/``RandomizedSearchCV``/``cross_validate`` over a Keras wrapper (Keras 3's
  ``keras.wrappers.SKLearnClassifier``, SciKeras) fit one clone per candidate and fold, and Keras Tuner
  fits each trial's model with the callbacks given to ``search()``: each fit is a trial. Where the
  callback goes depends on the wrapper: Keras 3's ``SKLearnClassifier`` passes what ``search.fit(...)``
  is given to each clone's ``fit`` (its ``__sklearn_clone__`` drops ``fit_kwargs``: a callback there
  never runs); SciKeras drops what ``fit()`` is given and takes ``KerasClassifier(callbacks=[...])``. Both copy the
  callbacks they are given (``clone``, ``copy.deepcopy``): the copy is the callback itself. A search
  run in other processes (``n_jobs > 1`` with joblib's processes) is not measured there: the callback
  says so once. The refit of a search (``best_estimator_``) is its last fit: kept when the sweep ends,
  with no earlier fit's model alive, it is the search's result, not a leak (``AliveObject.kept``).
* **Ray Tune** (:func:`ray_trainable`): the wrapped function runs each trial inside a guard of the
  worker process (one per worker: actors reused with ``reuse_actors=True`` run many trials, which is
  where a module-level cache grows), judged at the trial's own end after a collection, and sends its
  record to a named actor of the driver's sweep; ``report()`` on the driver gathers them. The
  trainable's globals, when Ray sent the function by value, are roots like a module's.

The engines' running code (between the user's call and the callback) is not a holder: what its frames
hold is the search's work in progress (see ``engine`` in :class:`~graphguard.runtime.sweep_references._Roots`).

This module imports none of the engines: each is looked up when its integration is used, and only in
``sys.modules`` where the user's code already imported it.
"""

from __future__ import annotations

import dataclasses
import functools
import os
import sys
import threading
import types
import traceback
import uuid
import warnings
import weakref
from typing import TYPE_CHECKING, Any, Callable, Optional

from graphguard.runtime.sweep_references import _is_guard_frame

if TYPE_CHECKING:
    from graphguard.runtime.sweep import SweepGuard, Trial, TrialRecord

__all__ = ["OptunaCallback", "keras_callback", "ray_trainable"]

#: Top-level packages whose frames are an engine's, not the code running the sweep.
_ENGINE_PACKAGES = frozenset({
    "optuna", "keras", "tf_keras", "keras_tuner", "sklearn", "scikeras", "joblib", "ray", "tensorflow",
    "threading", "concurrent", "graphguard", "runpy", "importlib",
})


def _creator_code(depth: int = 2) -> Optional[tuple[types.CodeType, str, int]]:
    """(code object, file, line) of the first frame outside graphguard, ``depth`` frames up: the user's
    code that made the callback (its frame runs the sweep; the line is where warnings from an engine's
    threads point)."""
    frame: Optional[types.FrameType] = sys._getframe(depth)
    while frame is not None and _package(frame) == "graphguard":
        frame = frame.f_back
    return (frame.f_code, frame.f_code.co_filename, frame.f_lineno) if frame is not None else None


def _package(frame: types.FrameType) -> str:
    return str(frame.f_globals.get("__name__", "")).partition(".")[0]


def _sweep_frame(code: Optional[types.CodeType]) -> Optional[types.FrameType]:
    """The frame running the sweep: the innermost running frame of ``code`` (the callback's maker) on this
    thread's stack, else on another thread's (Optuna's ``n_jobs`` workers run callbacks off the main
    thread), else the innermost frame on this stack outside the engines' packages."""
    current = sys._getframe(1)
    if code is not None:
        frame: Optional[types.FrameType] = current
        while frame is not None:
            if frame.f_code is code:
                return frame
            frame = frame.f_back
        for top in sys._current_frames().values():
            frame = top
            while frame is not None:
                if frame.f_code is code:
                    return frame
                frame = frame.f_back
    frame = current
    while frame is not None and (_is_guard_frame(frame) or _package(frame) in _ENGINE_PACKAGES):
        frame = frame.f_back
    return frame


class _Driver:
    """Starts and ends a guard's trials from an engine's callbacks (thread-safe)."""

    def __init__(self, guard: "SweepGuard", engine: str, site: Optional[tuple[types.CodeType, str, int]]) -> None:
        self.guard = guard
        self.code = site[0] if site is not None else None
        if site is not None:
            guard._engine_site = (site[1], site[2])
        self.lock = threading.RLock()
        guard._engine = engine
        guard._engine_lock = self.lock

    def begin(self, name: Optional[str] = None, standby: bool = False) -> "Trial":
        guard = self.guard
        guard._count += 1
        trial = guard._trial_type(guard, name or f"trial {guard._count}", guard._count, _sweep_frame(self.code))
        trial._driven = True
        trial.__enter__()
        trial._standby = standby
        return trial

    def end(self, trial: "Trial", name: Optional[str] = None, error: Optional[str] = None) -> None:
        if name is not None:
            trial.name = name
        trial._standby = False
        trial._error_name = error
        trial.__exit__(None, None, None)


def _summary(record: "TrialRecord") -> dict[str, Any]:
    """A judged record as JSON-ready data (for Optuna's storages, RDB ones included)."""
    return {
        # the RSS trend alone is a note, not a leak (a nineteenth new user's trial: a correct study's
        # attributes read "leaked": true, which a CI gate on them would fail)
        "leaked": record.leaked and not record.trend_only,
        "trend_only": record.trend_only,
        "reasons": list(record.reasons),
        "alive": [str(obj) for obj in record.alive],
        "retained_bytes": record.retained_bytes,
        "seconds": round(record.seconds, 6),
        "guard_seconds": round(record.guard_seconds, 6),
    }


# ---------------------------------------------------------------------------------------------------
# Optuna
# ---------------------------------------------------------------------------------------------------


class OptunaCallback:
    """``study.optimize(objective, callbacks=[sweep.optuna_callback()])``: every Optuna trial a guard trial.

    Made by :meth:`SweepGuard.optuna_callback`; see the module docstring for what is measured when, and
    with ``n_jobs > 1``. Called by Optuna as ``callback(study, frozen_trial)`` (Optuna's callback
    protocol, ``optuna.study.Study.optimize``). Each call ends the guard's trial (named ``"trial N"``
    after Optuna's ``frozen_trial.number``; a failed or pruned trial's state is its ``error``), which
    judges the one before it; the verdicts go to ``study.user_attrs["graphguard:trial N"]`` (the last
    trial's when the sweep is finished: ``sweep.report()``), to the guard's ``on_leak``, and with
    ``stop_on_leak`` a leak calls ``study.stop()``.

    Attributes:
        leaked: the Optuna trial numbers judged to leak so far.
    """

    def __init__(self, guard: "SweepGuard", *, stop_on_leak: bool = False,
                 code: Optional[tuple[types.CodeType, str, int]] = None) -> None:
        if not isinstance(stop_on_leak, bool):
            raise TypeError(f"optuna_callback(): stop_on_leak must be True or False, not {stop_on_leak!r}")
        self.stop_on_leak = stop_on_leak
        self.leaked: list[int] = []
        guard._close_engine_trial()  # a previous study's callback left its next trial open
        self._driver = _Driver(guard, "Optuna", code)
        guard._keep_last = False  # a study keeps no model of its own: the last trial is judged like the others
        self._numbers: dict[int, int] = {}  # guard trial index -> Optuna trial number
        self._published: set[int] = set()  # guard trial indexes written to the study
        self._study: Any = None
        self._thread = threading.get_ident()  # the thread that runs optimize(); callbacks elsewhere: n_jobs > 1
        guard._finish_hooks.append(self._published_at_finish)
        self._trial: Optional["Trial"] = self._driver.begin(standby=True)

    def _published_at_finish(self) -> None:
        if self._study is not None:
            self._publish(self._study, stop=False)  # the study is over: nothing to stop

    def __call__(self, study: Any, frozen_trial: Any) -> None:
        with self._driver.lock:
            self._study = study
            trial, self._trial = self._trial, None
            guard = self._driver.guard
            if trial is None or trial._done or guard._active is not trial:
                trial = self._driver.begin()  # a study optimized again after report(): starts afresh here
            number = int(getattr(frozen_trial, "number", guard._count))
            state = getattr(getattr(frozen_trial, "state", None), "name", "COMPLETE")
            self._numbers[trial.index] = number
            trial._overlapping = threading.get_ident() != self._thread
            name = f"trial {number}" + (" (pruned)" if state == "PRUNED" else "")
            try:
                self._driver.end(trial, name=name, error=None if state in ("COMPLETE", "PRUNED") else state)
            finally:
                self._publish(study)
            self._trial = self._driver.begin(standby=True)
            self._trial._unfinished_name = self._unfinished_name

    def _unfinished_name(self) -> Optional[str]:
        """Optuna's name for the trial the study stopped in (an exception out of ``optimize()``)."""
        try:
            return f"trial {self._study.trials[-1].number}"
        except Exception:
            return None

    def _publish(self, study: Any, stop: bool = True) -> None:
        """Write the newly judged trials to the study and, with ``stop``, stop it on a leak if asked."""
        for record in self._driver.guard.records:
            if not record.judged or record.index in self._published or record.index not in self._numbers:
                continue
            self._published.add(record.index)
            number = self._numbers[record.index]
            try:
                study.set_user_attr(f"graphguard:trial {number}", _summary(record))
            except Exception as error:  # a storage that refuses: the report still has it
                warnings.warn(f"graphguard: could not write trial {number}'s verdict to the study: {error}",
                              RuntimeWarning, stacklevel=2)
            if record.leaked:
                self.leaked.append(number)
                # (the RSS trend alone is a note: it stops no study; an eleventh new user's trial)
                if self.stop_on_leak and stop and not record.trend_only:
                    study.stop()



# ---------------------------------------------------------------------------------------------------
# Keras (and scikit-learn searches and Keras Tuner through it)
# ---------------------------------------------------------------------------------------------------


def _keras_module(name: Optional[str]) -> Any:
    """The Keras whose ``callbacks.Callback`` the callback subclasses: ``name`` ("keras" or "tf_keras"),
    else Keras 3 if imported (or importable), else tf_keras if imported."""
    if name is not None:
        if name not in ("keras", "tf_keras"):
            raise ValueError(f"keras_callback(): keras must be 'keras' or 'tf_keras', not {name!r}")
        import importlib

        return importlib.import_module(name)
    if "keras" not in sys.modules and "tf_keras" in sys.modules:
        return sys.modules["tf_keras"]
    import keras

    return keras


_CALLBACK_CLASSES: dict[str, type] = {}


def _callback_class(keras: Any) -> type:
    """The ``Callback`` subclass for ``keras`` (made once per Keras)."""
    cls = _CALLBACK_CLASSES.get(keras.__name__)
    if cls is not None:
        return cls
    base = keras.callbacks.Callback

    class SweepCallback(base):  # type: ignore[misc, valid-type]
        """Marks a trial of a :class:`~graphguard.runtime.sweep.SweepGuard` around every ``fit``."""

        def __init__(self, driver: _Driver) -> None:
            super().__init__()
            self._driver = driver
            self._trial: Optional["Trial"] = None

        def __deepcopy__(self, memo: dict) -> "SweepCallback":
            return self  # sklearn's clone() and Keras Tuner copy callbacks: every copy marks the same sweep

        def __copy__(self) -> "SweepCallback":
            return self

        def __reduce__(self) -> Any:
            return _unmeasured_callback, (keras.__name__,)

        def on_train_begin(self, logs: Any = None) -> None:
            with self._driver.lock:
                model = getattr(self, "model", None)
                if self._trial is not None and not self._trial._done:  # the previous fit raised: no on_train_end
                    if model is not None:  # built for this fit, before this call: not the interrupted fit's
                        self._trial._before[id(model)] = weakref.ref(model)
                    self._driver.end(self._trial, error="fit interrupted")
                self._driver.guard._fits += 1
                self._trial = self._driver.begin(f"fit {self._driver.guard._fits}")
                if model is not None:
                    self._trial.track(model, name="model")

        def on_train_end(self, logs: Any = None) -> None:
            with self._driver.lock:
                trial, self._trial = self._trial, None
                _forget_model(self)
                if trial is not None:
                    self._driver.end(trial)

    SweepCallback.__qualname__ = "SweepCallback"
    SweepCallback.__module__ = __name__
    _CALLBACK_CLASSES[keras.__name__] = SweepCallback
    return SweepCallback


def _forget_model(callback: Any) -> None:
    """Drop the callback's reference to the model it was given (Keras 3 keeps ``_model``, tf_keras
    ``model``): the callback, made once, must not be what keeps the last model."""
    for attr in ("_model", "model"):
        try:
            if attr in vars(callback):
                setattr(callback, attr, None)
        except (AttributeError, TypeError):
            pass


_unmeasured_warned = False


def _unmeasured_callback(keras_name: str) -> Any:
    """What a sweep callback becomes in another process (joblib's processes for ``n_jobs > 1``): a
    callback that does nothing and says once that those fits are not measured."""
    global _unmeasured_warned
    import importlib

    keras = importlib.import_module(keras_name)
    if not _unmeasured_warned:
        _unmeasured_warned = True
        warnings.warn(
            f"graphguard: a SweepGuard callback was sent to another process (pid {os.getpid()}): the fits "
            f"there are not measured; run the search with n_jobs=1 (or threads) to guard it",
            RuntimeWarning, stacklevel=2)
    return keras.callbacks.Callback()


def keras_callback(guard: "SweepGuard", keras: Optional[str] = None,
                   code: Optional[tuple[types.CodeType, str, int]] = None) -> Any:
    """A Keras callback that makes every ``fit`` it is passed to a trial of ``guard`` (see the module
    docstring). ``on_leak="raise"`` raises at ``report()``/``finish()``, not out of a fit: scikit-learn's
    searches catch what a fit raises and score it as a failed fit. ``keras``: ``"keras"`` (Keras 3) or
    ``"tf_keras"``; default the one imported. Raises ``ImportError`` when no Keras is installed,
    ``ValueError`` for another ``keras``."""
    module = _keras_module(keras)
    driver = _Driver(guard, "Keras", code)
    guard._defer_raise = True
    guard._keep_last = True  # a search's refit (best_estimator_) is its last fit
    return _callback_class(module)(driver)


# ---------------------------------------------------------------------------------------------------
# Ray Tune
# ---------------------------------------------------------------------------------------------------


#: The worker process's guards, one per driver sweep (the collector actor's name).
_WORKER_GUARDS: dict[str, "SweepGuard"] = {}


def _collector(name: str) -> Any:
    """The named actor that keeps a sweep's records from the workers (made by whoever comes first)."""
    import ray

    @ray.remote(num_cpus=0)
    class GraphguardSweepRecords:
        def __init__(self) -> None:
            self.records: list[Any] = []

        def add(self, record: Any) -> None:
            self.records.append(record)

        def get(self) -> list[Any]:
            return list(self.records)

    # Outside the trial's placement group (Tune's trials capture their child actors: this one must
    # outlive them) and detached from the worker that made it; the driver's report() kills it.
    return GraphguardSweepRecords.options(name=name, namespace="graphguard", get_if_exists=True,
                                          lifetime="detached", scheduling_strategy="DEFAULT").remote()


class RaySource:
    """Where a driver's :class:`SweepGuard` reads the trials run by Ray Tune workers (see
    :func:`ray_trainable`); gathered by ``report()`` and ``finish()``."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.seen = 0
        self.gathered = 0  # records gathered in all
        self.missed = False  # a gather found Ray not running

    def note(self) -> Optional[str]:
        """Why no Ray Tune trial was gathered, when none was and Ray was not running to ask."""
        if self.gathered or not self.missed:
            return None
        return ("the Ray Tune trials' records are kept in Ray, which was not running when the sweep was finished: "
                "call sweep.report() before ray.shutdown()")

    def gather(self) -> list["TrialRecord"]:
        """The records sent since the last call; empty when Ray is not running or no trial ran."""
        ray = sys.modules.get("ray")
        if ray is None or not ray.is_initialized():
            self.missed = True
            return []
        try:
            actor = ray.get_actor(self.name, namespace="graphguard")
        except ValueError:
            return []
        records = ray.get(actor.get.remote())
        new, self.seen = records[self.seen:], len(records)
        self.gathered += len(new)
        return new

    def close(self) -> None:
        """Kill the collector actor (after the driver's last read)."""
        ray = sys.modules.get("ray")
        if ray is None or not ray.is_initialized():
            return
        try:
            ray.kill(ray.get_actor(self.name, namespace="graphguard"))
        except ValueError:
            pass
        self.seen = 0  # trials run after this make a new collector


def ray_trainable(guard: "SweepGuard", trainable: Callable[[dict], Any]) -> Callable[[dict], Any]:
    """``trainable`` (a Ray Tune function trainable, ``f(config)``) wrapped so that each call is a trial
    of a guard in the worker process, with ``guard``'s options; the records go to ``guard`` (see the
    module docstring). Raises ``TypeError`` for a ``trainable`` that is not callable."""
    if not callable(trainable) or isinstance(trainable, type):
        raise TypeError(f"ray_trainable(): pass the function Ray Tune runs per trial (f(config)), not {trainable!r}")
    source = RaySource(f"graphguard-sweep-{uuid.uuid4().hex[:12]}")
    guard._remote.append(source)
    options = dict(max_retained_bytes=guard.max_retained_bytes, warmup=guard.warmup,
                   clear_session=guard.clear_session, track_models=guard.track_models,
                   chain_depth=guard.chain_depth, chain_seconds=guard.chain_seconds, freeze=guard.freeze)
    name, guard_type = source.name, type(guard)
    module = sys.modules.get(getattr(trainable, "__module__", None) or "")
    filename = getattr(module, "__file__", None)
    label = (os.path.splitext(os.path.basename(filename))[0] if filename and trainable.__module__ == "__main__"
             else str(getattr(trainable, "__module__", "trainable")))

    @functools.wraps(trainable)
    def guarded(config: dict) -> Any:
        return _run_ray_trial(trainable, config, options, name, label, guard_type)

    return guarded


def _run_ray_trial(trainable: Callable[[dict], Any], config: dict, options: dict, name: str, label: str,
                   guard_type: type) -> Any:
    """In the worker: one trial of this process's guard (a ``guard_type``, the driver's
    :class:`~graphguard.runtime.sweep.SweepGuard` class) around ``trainable(config)``, judged at its end
    (a function trainable's locals are gone when it returns; nothing rebinds its holders), then sent to
    the collector actor ``name``."""
    guard = _WORKER_GUARDS.get(name)
    if guard is None:
        guard = _WORKER_GUARDS[name] = guard_type(on_leak="ignore", **options)
        guard._engine = "Ray Tune"
        guard._keep_last = False  # every trial is judged at its own end here: none is "the last"
    namespace = getattr(trainable, "__globals__", None)
    module = sys.modules.get(getattr(trainable, "__module__", None) or "")
    if isinstance(namespace, dict) and getattr(module, "__dict__", None) is not namespace:
        guard._namespaces[id(namespace)] = label  # sent by value: the script's globals, copied
    trial_name = _ray_trial_name()
    outcome: list[Any] = []
    error: Optional[BaseException] = None
    try:
        with guard.trial(trial_name):
            outcome.append(trainable(config))
    except BaseException as raised:  # noqa: BLE001 (re-raised below, after the record is sent)
        error = raised
        # Its traceback keeps the trainable's finished frames, and their locals (the model): a failed
        # trial's traceback is not a holder. Ray still prints the lines.
        traceback.clear_frames(raised.__traceback__)
        del raised
    guard.finish()
    record = guard.records[-1]
    record = dataclasses.replace(record, name=f"{record.name} (pid {os.getpid()})")
    import ray

    ray.get(_collector(name).add.remote(record))
    if error is not None:
        raise error
    return outcome[0]


class _WorkerSweep:
    """A :class:`SweepGuard` unpickled in a Ray Tune worker: ``track()`` goes to the trial running there."""

    def track(self, obj: Any, *others: Any, name: Optional[str] = None) -> Any:
        for guard in _WORKER_GUARDS.values():
            if guard._active is not None:
                return guard._active.track(obj, *others, name=name)
        raise RuntimeError("sweep.track() in a Ray worker needs a trial run by sweep.ray_trainable(trainable)")

    def __getattr__(self, name: str) -> Any:
        raise AttributeError(f"in a Ray Tune worker, a SweepGuard only tracks objects (sweep.track()); "
                             f"{name} is on the driver's guard")


def _worker_sweep() -> _WorkerSweep:
    return _WorkerSweep()


def _ray_trial_name() -> str:
    try:
        from ray import tune

        return str(tune.get_context().get_trial_name())
    except Exception:
        return f"ray trial in pid {os.getpid()}"
