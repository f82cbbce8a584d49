"""``GraphGuardHook``: the guard as a ``tf.compat.v1.train.SessionRunHook``.

For code that trains through ``MonitoredTrainingSession``, ``MonitoredSession``,
``SingularMonitoredSession`` or an Estimator, where the loop calls the monitored session and there is
no ``sess.run`` to wrap::

    hook = GraphGuardHook()
    with tf.compat.v1.train.MonitoredTrainingSession(hooks=[hook]) as sess:
        while not sess.should_stop():
            sess.run(train_op)
    print(hook.report())

``MonitoredSession`` finalizes the graph in ``Scaffold.finalize()`` before the first step (after
``begin`` and before ``after_create_session``), so growth can never show between steps: it shows as
TensorFlow's ``RuntimeError("Graph is finalized and cannot be modified.")`` at the line that builds
an op. The hook installs graphguard's interception on the graph in ``begin`` (the graph is still
editable then), so that error becomes the same explained :class:`~graphguard.GraphGrowthError` as
``GraphGuard(sess)`` raises: op type, ``file:line``, the call, the step, a checkpoint if asked for.
On a graph that is not finalized (a runner that does not finalize), the hook counts
``Graph.version`` before each step like ``GraphGuard(mode="count")``.

This module imports TensorFlow (the hook must subclass ``SessionRunHook``: Estimator checks);
``graphguard.runtime`` loads it only when ``GraphGuardHook`` is asked for.
"""

from __future__ import annotations

from typing import Any, Optional

import tensorflow.compat.v1 as tf

from graphguard.runtime import guard as _guard
from graphguard.runtime.guard import OnGrowth, _Monitor, setup_options

__all__ = ["GraphGuardHook"]


class GraphGuardHook(tf.train.SessionRunHook, _Monitor):
    """A ``SessionRunHook`` that guards a monitored session against graph growth.

    Each ``MonitoredSession.run`` is one step. Lifecycle (``session_run_hook.py``):

    * ``begin()``: the graph is still editable; the hook takes the default graph and installs its
      interception of ``Graph._check_not_finalized`` on it.
    * ``after_create_session(session, coord)``: the graph is finalized (by ``Scaffold.finalize``);
      the hook keeps the raw ``session`` for the checkpoint and starts counting from this version,
      so the ops ``MonitoredSession`` added for itself are not growth.
    * ``before_run`` / ``after_run``: step time, step count, RSS samples, slowdown checks, and on a
      graph that is not finalized the ``Graph.version`` comparison of count mode.
    * ``end(session)``: removes the interception (``MonitoredSession`` calls ``end`` only on a
      clean exit; after an exception the interception stays on that graph object, harmless: it has
      TensorFlow's condition and a better message).

    Args (keyword only, same meaning and units as :class:`~graphguard.GraphGuard`'s):
        warmup_steps: runs (default 1) before the step-time and RSS baselines; on a graph that is not
            finalized, runs during which new ops are tolerated.
        max_new_ops_per_step: ops (default 0), for a graph that is not finalized.
        min_growth_steps: steps (default 2), for a graph that is not finalized: growth is acted on
            only once a creating line added ops on this many distinct steps after warm-up; a single burst is
            a one-off in ``report().one_off``.
        min_growth_sessions: sessions (default 3): lines that built ops into one graph for this many
            monitored sessions after the first on it are growth (a graph built once per session).
        max_burst_ops: ops (default 5000, ``None``: off) and
        max_burst_ratio: ratio (default 1.0), for a graph that is not finalized: one step adding more
            than both limits (the second times the ops when the session was created) is growth.
        max_bounded_iterations: loop runs (default 0: act on any growth), for a graph that is not
            finalized: growth in loops the source counts, at most this many runs in all, is tolerated.
        on_growth: ``"raise"`` (default), ``"warn"`` or a callable taking the report. On a
            finalized graph the op cannot be built, so the hook always raises
            :class:`~graphguard.GraphGrowthError` (after calling the callable).
        slowdown_factor: ratio (default 3.0, ``None``: off) for :class:`~graphguard.runtime.SlowdownWarning`.
        rss_every: steps between RSS samples (default 10, at most one per second; ``None``: off).
        max_rss_growth: bytes of RSS growth since warm-up at which the hook raises
            :class:`~graphguard.runtime.RssGrowthError` from ``after_run`` (default ``None``: no limit).
        checkpoint_path: path prefix; when the hook stops the run it first saves a checkpoint there
            with ``saver``, or, without one, with the Saver ``Scaffold`` built before finalizing (the
            first in the ``SAVERS`` collection).
        saver: a ``tf.compat.v1.train.Saver`` built before the monitored session was created.

    ``report()`` and ``stats`` work as on ``GraphGuard``; one hook guards one monitored session at a
    time (``begin`` starts afresh).
    """

    _saver_optional = True  # checkpoint_path alone: the Scaffold's Saver is used

    def __init__(
        self,
        *,
        warmup_steps: int = 1,
        max_new_ops_per_step: int = 0,
        min_growth_steps: int = 2,
        min_growth_sessions: int = _guard.DEFAULT_MIN_GROWTH_SESSIONS,
        max_burst_ops: Optional[int] = _guard.DEFAULT_MAX_BURST_OPS,
        max_burst_ratio: float = _guard.DEFAULT_MAX_BURST_RATIO,
        on_growth: OnGrowth = "raise",
        slowdown_factor: Optional[float] = 3.0,
        rss_every: Optional[int] = 10,
        max_rss_growth: Optional[int] = None,
        checkpoint_path: Optional[str] = None,
        saver: Any = None,
        max_bounded_iterations: int = 0,
    ) -> None:
        if saver is not None and checkpoint_path is None:
            raise ValueError("saver= needs checkpoint_path=: the hook saves with that Saver to that path")
        self._options = setup_options(locals())
        # Validate now, on a stand-in graph, so a bad option fails where the hook is made.
        self._setup(_NoGraph(), mode="count", **self._options)
        self._session: Any = None

    # -- SessionRunHook ---------------------------------------------------------------------------

    def begin(self) -> None:
        if getattr(self, "_interceptor", None) is not None:
            self._interceptor.remove()
        self._setup(tf.get_default_graph(), mode="count", **self._options)
        self._session = None
        self._join_graph()
        self._interceptor.install()

    def after_create_session(self, session: Any, coord: Any) -> None:
        self._session = session
        graph = self._graph
        self._mode = "finalize" if graph.finalized else "count"
        with self._lock:
            self._start_version = self._seen_version = graph.version
            self._changed = False
        self._session_started()
        if self._saver is None and self._checkpoint_path is not None:
            savers = graph.get_collection(tf.GraphKeys.SAVERS)
            self._saver = savers[0] if savers else None
        self._active = True

    def before_run(self, run_context: Any) -> None:
        if self._changed:
            self._on_version_change()
        # The run context is one object per run, so the start time is per thread too.
        run_context._graphguard_start = _guard._clock()
        return None

    def after_run(self, run_context: Any, run_values: Any) -> None:
        end = _guard._clock()
        start = getattr(run_context, "_graphguard_start", end)
        args = getattr(run_context, "original_args", None)
        self._step_done(end - start, end, getattr(args, "fetches", None))

    def end(self, session: Any) -> None:
        if self._active:
            self._freeze()

    # -- _Monitor ---------------------------------------------------------------------------------

    def _finalized_by(self) -> str:
        return "by MonitoredSession (Scaffold.finalize) before the first step"

    def _session_for_saver(self) -> Any:
        if self._session is None:
            raise RuntimeError("no session yet: the monitored session was not created")
        return self._session

    def __repr__(self) -> str:
        return f"<GraphGuardHook steps={self._steps} {'active' if self._active else 'idle'}>"


class _NoGraph:
    """Stands in for a graph while the hook validates its options, before ``begin``."""

    version = 0
    finalized = False
