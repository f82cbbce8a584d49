"""The runtime half of graphguard: ``GraphGuard`` wraps a live ``tf.compat.v1.Session``.

The linter never imports this package. ``guard`` itself imports neither TensorFlow nor psutil at
import time; it works on the session and graph objects it is handed.
"""

from graphguard.runtime.guard import GraphGrowthError, GraphGuard, GuardStats, StepSeconds

__all__ = ["GraphGuard", "GraphGrowthError", "GuardStats", "StepSeconds"]
