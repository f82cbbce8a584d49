"""The runtime half of graphguard: guard a live ``tf.compat.v1`` session against graph growth.

* :class:`GraphGuard` wraps a session (``guarded.run`` in the loop);
* :class:`GraphGuardHook` is a ``SessionRunHook`` for ``MonitoredTrainingSession`` and Estimator;
* ``graphguard run script.py`` (:mod:`graphguard.runtime.launcher`) guards every session a script
  creates, without editing it;
* :class:`SweepGuard` (:mod:`graphguard.runtime.sweep`) measures each trial of a sweep (a learning-rate
  sweep, a k-fold) and names what keeps its models alive; it works on NumPy, Keras and TF1 code;
* :class:`TraceGuard` (:mod:`graphguard.runtime.trace`) counts TF 2 ``tf.function`` traces per function
  and calling line, and stops (or warns about) a function that keeps retracing.

The linter never imports this package. Importing it imports neither TensorFlow nor psutil:
``GraphGuardHook`` (which subclasses TensorFlow's ``SessionRunHook``) is loaded on first access.
"""

from graphguard.runtime.guard import (
    GraphGrowthError,
    GraphGrowthWarning,
    GraphGuard,
    RssGrowthError,
    SlowdownWarning,
)
from graphguard.runtime.report import GuardReport, GuardStats, Growth, OpGroup, Slowdown, SourceLine, StepSeconds
from graphguard.runtime.sweep import (
    AliveObject,
    ReferenceChain,
    RssTrend,
    SweepGuard,
    SweepLeakError,
    SweepLeakWarning,
    SweepTrendWarning,
    SweepReport,
    Trial,
    TrialRecord,
)
from graphguard.runtime.trace import RetracingError, RetracingWarning, TraceGuard
from graphguard.runtime.trace_report import ArgChange, CallSite, TracedFunction, TraceReport

__all__ = [
    "AliveObject",
    "ArgChange",
    "CallSite",
    "GraphGrowthError",
    "GraphGrowthWarning",
    "GraphGuard",
    "GraphGuardHook",
    "GuardReport",
    "GuardStats",
    "Growth",
    "OpGroup",
    "ReferenceChain",
    "RetracingError",
    "RetracingWarning",
    "RssGrowthError",
    "RssTrend",
    "Slowdown",
    "SlowdownWarning",
    "SourceLine",
    "StepSeconds",
    "SweepGuard",
    "SweepLeakError",
    "SweepLeakWarning",
    "SweepTrendWarning",
    "SweepReport",
    "TraceGuard",
    "TraceReport",
    "TracedFunction",
    "Trial",
    "TrialRecord",
]


def __getattr__(name):
    if name == "GraphGuardHook":  # imports TensorFlow: only when asked for
        from graphguard.runtime.hook import GraphGuardHook

        return GraphGuardHook
    raise AttributeError(f"module 'graphguard.runtime' has no attribute {name!r}")
