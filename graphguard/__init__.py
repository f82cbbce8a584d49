"""graphguard: find and stop TensorFlow graph growth.

Two halves with one job:

* ``graphguard check`` (``graphguard.analysis``, ``graphguard.rules``) is a static linter built on
  CPython's ``ast`` module. It never imports TensorFlow.
* ``GraphGuard(sess)`` (``graphguard.runtime``) guards a live ``tf.compat.v1.Session``. It is
  imported lazily, on first access, so ``import graphguard`` stays cheap for the linter. So is
  ``SweepGuard``, which measures each trial of a sweep (learning rates, k folds) and names what keeps
  its models alive, and ``TraceGuard``, which counts TF 2 ``tf.function`` traces and stops one that
  keeps retracing.

``pytest --graphguard`` (``graphguard.pytest_plugin``) and ``%load_ext graphguard`` in IPython
(:func:`load_ipython_extension`) put those guards on every test or every notebook cell.
"""

__version__ = "0.2.0"

_RUNTIME = ("GraphGuard", "GraphGrowthError", "GraphGuardHook", "SlowdownWarning", "GraphGrowthWarning",
            "RssGrowthError", "SweepGuard", "SweepLeakError", "SweepLeakWarning", "SweepTrendWarning", "TraceGuard",
            "RetracingError", "RetracingWarning")

__all__ = [*_RUNTIME, "__version__"]


def __getattr__(name):
    # Lazy: the runtime half imports psutil and works on TensorFlow objects; the linter must not pay for it.
    if name in _RUNTIME:
        from graphguard import runtime

        return getattr(runtime, name)
    raise AttributeError(f"module 'graphguard' has no attribute {name!r}")


def load_ipython_extension(ipython):
    """``%load_ext graphguard``: from now on, every ``tf.compat.v1`` session and ``tf.function`` the
    notebook's cells run is guarded, and ``%graphguard on|off|report`` is defined (docs/notebooks.md).
    ``ipython`` is the running shell. Imports the runtime (not TensorFlow) now, not at ``import graphguard``."""
    from graphguard.runtime.extension import load

    load(ipython)


def unload_ipython_extension(ipython):
    """``%unload_ext graphguard``: stop guarding (reports are dropped) and remove ``%graphguard``."""
    from graphguard.runtime.extension import unload

    unload(ipython)


def __dir__():
    # The lazy runtime names are attributes too: list them for dir(), tab completion and help().
    return sorted({*globals(), *_RUNTIME})
