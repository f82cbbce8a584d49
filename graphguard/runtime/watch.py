"""Every ``tf.compat.v1`` session and every ``tf.function`` of this process, guarded from now on.

The machinery shared by the three front ends that guard code they do not wrap themselves:
``graphguard run script.py`` (:mod:`graphguard.runtime.launcher`), ``pytest --graphguard``
(:mod:`graphguard.pytest_plugin`, one :class:`Watch` per test) and ``%load_ext graphguard`` in IPython
(:mod:`graphguard.runtime.extension`). It decides nothing itself: each session gets a count-mode
:class:`~graphguard.runtime.guard.GraphGuard` (growth across steps, across sessions on one graph,
bursts), and ``tf.function`` calls are counted by a :class:`~graphguard.runtime.trace.TraceGuard`.

* :class:`SessionPatch` replaces ``BaseSession.run`` and ``close`` (TensorFlow's
  ``tensorflow/python/client/session.py``; ``Session``, ``InteractiveSession`` and the sessions inside
  ``MonitoredSession`` and ``Supervisor`` all run through them). The patched ``run`` makes a guard for
  the session on its first call and goes through it; ``close`` freezes that guard's report and drops
  it, so many sessions are not kept alive.
* TensorFlow is never imported here. When it is not imported yet, a ``sys.meta_path`` finder
  (:class:`TensorFlowFinder`) waits for ``tensorflow.python.client.session`` to be executed and patches
  it then, and starts the trace guard when the ``tensorflow`` package has finished importing: code
  that sets ``TF_CPP_MIN_LOG_LEVEL`` before its own ``import tensorflow`` still works, and code that
  never imports TensorFlow pays for one finder that answers two module names.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import sys
import threading
import weakref
from typing import Any, Optional

from graphguard.runtime.guard import GraphGuard
from graphguard.runtime.report import GuardReport
from graphguard.runtime.trace import TraceGuard

__all__ = ["SESSION_MODULE", "TF_MODULE", "SessionPatch", "TensorFlowFinder", "Watch", "start_trace_guard"]

SESSION_MODULE = "tensorflow.python.client.session"
TF_MODULE = "tensorflow"
_GUARD_ATTR = "_graphguard_guard"  # a patched session's guard, in the session's __dict__

#: One guarded session: (its number in the order guards were made, its class name, its guard's report).
SessionReport = tuple[int, str, GuardReport]


class SessionPatch:
    """Guards every session that runs while ``BaseSession.run`` is patched.

    Args:
        options: keyword arguments of :class:`~graphguard.runtime.guard.GraphGuard` (``mode`` included)
            given to the guard of each session, made at the session's first patched ``run``.

    Attributes:
        live: ``id(session)`` -> (number, class name, weak reference to its guard) for open sessions.
        done: reports of the sessions closed (or released) so far, as :data:`SessionReport`.
        count: guards made so far (the last session's number).
        resumed: ``id(session)`` -> (number, weak reference to the session) of sessions an earlier patch
            guarded and released (``%graphguard off`` then ``on``): such a session keeps its number and
            its guard skips the warm-up, which the session had.
    """

    def __init__(self, options: dict[str, Any], count: int = 0,
                 resumed: Optional[dict[int, tuple[int, weakref.ref]]] = None) -> None:
        self.options = options
        self.resumed = resumed if resumed is not None else {}
        # Re-entrant: building a guard in attach() can run the garbage collector, whose Session.__del__
        # calls close() and so detach() on this thread while attach() holds the lock.
        self.lock = threading.RLock()
        # Weak: the session holds its guard, so a session dropped without close() is still collected
        # (its __del__ calls close, which detaches).
        self.live: dict[int, tuple[int, str, weakref.ref]] = {}
        self.done: list[SessionReport] = []
        self.count = count
        self.released: dict[int, tuple[int, weakref.ref]] = {}  #: as ``resumed``, for the next patch
        self.patched: Optional[tuple[Any, Any, Any]] = None  # (BaseSession, original run, original close)

    def patch(self, session_module: Any) -> None:
        """Replace ``run`` and ``close`` of ``session_module.BaseSession``; a second call does nothing."""
        base = session_module.BaseSession
        if self.patched is not None:
            return
        original_run, original_close = base.run, base.close
        patch = self

        def run(self: Any, fetches: Any, feed_dict: Any = None, options: Any = None, run_metadata: Any = None) -> Any:
            guard = self.__dict__.get(_GUARD_ATTR)
            if guard is None:
                guard = patch.attach(self, original_run)
            return guard.run(fetches, feed_dict, options, run_metadata)

        def close(self: Any) -> None:
            try:
                original_close(self)
            finally:
                patch.detach(self)

        run.__doc__, close.__doc__ = original_run.__doc__, original_close.__doc__
        run.__wrapped__, close.__wrapped__ = original_run, original_close
        base.run, base.close = run, close
        self.patched = (base, original_run, original_close)

    def unpatch(self) -> None:
        """Put TensorFlow's ``run`` and ``close`` back (sessions keep their guards: see :meth:`release_all`)."""
        if self.patched is not None:
            base, original_run, original_close = self.patched
            base.run, base.close = original_run, original_close
            self.patched = None

    def attach(self, sess: Any, original_run: Any) -> GraphGuard:
        """The guard of ``sess``, made now if it has none (it calls ``original_run``, not the patch)."""
        with self.lock:
            guard = sess.__dict__.get(_GUARD_ATTR)
            if guard is not None:  # another thread attached it first
                return guard
            options = {k: v for k, v in self.options.items() if k != "mode"}
            earlier = self.resumed.pop(id(sess), None)
            if earlier is not None and earlier[1]() is sess:
                number = earlier[0]
                options["warmup_steps"] = 0  # it warmed up under the earlier guard
            else:
                self.count += 1
                number = self.count
            guard = GraphGuard(sess, mode=self.options["mode"], **options)
            guard._core._run = original_run.__get__(sess)  # the guard calls the real run, not this patch
            self.live[id(sess)] = (number, type(sess).__name__, weakref.ref(guard))
            sess.__dict__[_GUARD_ATTR] = guard
            return guard

    def detach(self, sess: Any) -> None:
        """``sess`` closed: release its guard and keep its report."""
        with self.lock:
            guard = sess.__dict__.pop(_GUARD_ATTR, None)
            entry = self.live.pop(id(sess), None)
        if guard is not None and entry is not None:
            guard.release()
            self.done.append((entry[0], entry[1], guard.report()))

    def release_all(self) -> None:
        """Release the guard of every session still open and keep its report, so that a later patch
        (the next test, ``%graphguard on`` again) gives the session a fresh guard. The graphs keep their
        ledgers (:mod:`graphguard.runtime.sessions`): a fresh guard on a graph is a new session on it."""
        with self.lock:
            live, self.live = self.live, {}
        for number, kind, ref in live.values():
            guard = ref()
            if guard is None:
                continue
            sess = guard._sess
            if sess.__dict__.get(_GUARD_ATTR) is guard:
                del sess.__dict__[_GUARD_ATTR]
            try:
                self.released[id(sess)] = (number, weakref.ref(sess))
            except TypeError:  # a session type without weak references: guarded afresh later
                pass
            guard.release()
            with self.lock:
                self.done.append((number, kind, guard.report()))

    def reports(self) -> list[SessionReport]:
        """Every guarded session's report (closed ones frozen, open ones as of now), in order."""
        with self.lock:
            live = list(self.live.values())
            done = list(self.done)
        out = done + [(n, kind, ref().report()) for n, kind, ref in live if ref() is not None]
        return sorted(out, key=lambda item: item[0])


class TensorFlowFinder(importlib.abc.MetaPathFinder):
    """Patches ``BaseSession`` right after ``tensorflow.python.client.session`` is executed, and starts
    the trace guard (``trace_guard``, if given) right after the ``tensorflow`` package is."""

    def __init__(self, patch: SessionPatch, trace_guard: Optional[TraceGuard] = None) -> None:
        self.patch = patch
        self.trace_guard = trace_guard

    def find_spec(self, fullname: str, path: Any, target: Any = None) -> Any:
        """TensorFlow's own spec for the two modules watched, with a loader that patches after it runs;
        ``None`` (not ours) for every other module."""
        if fullname != SESSION_MODULE and (fullname != TF_MODULE or self.trace_guard is None):
            return None
        spec = importlib.machinery.PathFinder.find_spec(fullname, path)
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec
        loader, patch, guard = spec.loader, self.patch, self.trace_guard

        class _PatchingLoader(importlib.abc.Loader):
            def create_module(self, spec: Any) -> Any:
                return loader.create_module(spec)

            def exec_module(self, module: Any) -> None:
                try:
                    loader.exec_module(module)
                finally:  # the package is TensorFlow's again, whatever asks for its loader later
                    if module.__spec__ is not None:
                        module.__spec__.loader = loader
                    module.__loader__ = loader
                if fullname == SESSION_MODULE:
                    patch.patch(module)
                elif guard is not None and not guard.active:
                    start_trace_guard(guard, module)

        spec.loader = _PatchingLoader()
        return spec


_FUNCTION_CLASSES: "weakref.WeakKeyDictionary[Any, Any]" = weakref.WeakKeyDictionary()


def start_trace_guard(guard: TraceGuard, tf: Any) -> None:
    """Starts ``guard`` on TensorFlow's ``Function`` class (``type(tf.function(lambda: 0))``, found once
    per ``tf`` module); a TensorFlow without ``tf.function`` (1.x) is left alone."""
    cls = _FUNCTION_CLASSES.get(tf) if isinstance(tf, type(sys)) else None
    if cls is None:
        make = getattr(tf, "function", None)
        if make is None:
            return
        try:
            cls = type(make(lambda: 0))
        except Exception:  # a TensorFlow too old or too new to make one: nothing to count
            return
        try:
            _FUNCTION_CLASSES[tf] = cls
        except TypeError:
            pass
    if callable(getattr(cls, "experimental_get_tracing_count", None)):
        guard.start(_function_class=cls)


class Watch:
    """A :class:`SessionPatch` and a :class:`~graphguard.runtime.trace.TraceGuard`, started and stopped
    together, with the finder when TensorFlow is not imported yet.

    Args:
        options: the ``GraphGuard`` options of each session (``mode`` included), as :class:`SessionPatch`.
        trace_guard: the trace guard to start when TensorFlow is (or gets) imported; ``None``: sessions only.

    Attributes:
        sessions: the :class:`SessionPatch`.
        trace_guard: as given.
        finder: the :class:`TensorFlowFinder`, in ``sys.meta_path`` between :meth:`start` and
            :meth:`stop` while TensorFlow is not fully imported. A finder that starts a watch while
            ``tensorflow`` is being looked up hands that lookup to it (``watch.finder.find_spec``).
    """

    def __init__(self, options: dict[str, Any], trace_guard: Optional[TraceGuard] = None,
                 after: Optional["Watch"] = None) -> None:
        # ``after``: the watch this one follows in the same process (``%graphguard on`` after ``off``):
        # numbers go on from it, and the sessions it released resume (SessionPatch.resumed).
        self.sessions = (SessionPatch(options) if after is None else
                         SessionPatch(options, after.sessions.count, after.sessions.released))
        self.trace_guard = trace_guard
        self.finder = TensorFlowFinder(self.sessions, trace_guard)

    def start(self) -> None:
        """Patch now what TensorFlow has loaded; wait (the finder, first in ``sys.meta_path``) for the rest."""
        modules = sys.modules
        if SESSION_MODULE in modules:  # TensorFlow already imported
            self.sessions.patch(modules[SESSION_MODULE])
        if self.trace_guard is not None and TF_MODULE in modules:
            start_trace_guard(self.trace_guard, modules[TF_MODULE])
        if SESSION_MODULE not in modules or TF_MODULE not in modules:
            sys.meta_path.insert(0, self.finder)

    def stop(self, release: bool = False) -> None:
        """Remove the finder and the patches; stop the trace guard. ``release``: also release the guards of
        sessions still open (:meth:`SessionPatch.release_all`). Reports stay readable."""
        if self.finder in sys.meta_path:
            sys.meta_path.remove(self.finder)
        if release:
            self.sessions.release_all()
        self.sessions.unpatch()
        guard = self.trace_guard
        while guard is not None and guard.active:
            guard.stop()

    @property
    def active(self) -> bool:
        """True while the session patch is on or the finder is waiting for TensorFlow."""
        return self.sessions.patched is not None or self.finder in sys.meta_path

    def reports(self) -> list[SessionReport]:
        """The guarded sessions' reports (:meth:`SessionPatch.reports`)."""
        return self.sessions.reports()
