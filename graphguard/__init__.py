"""graphguard: find and stop TensorFlow graph growth.

Two halves with one job:

* ``graphguard check`` (``graphguard.analysis``, ``graphguard.rules``) is a static linter built on
  CPython's ``ast`` module. It never imports TensorFlow.
* ``GraphGuard(sess)`` (``graphguard.runtime``) guards a live ``tf.compat.v1.Session``. It is
  imported lazily, on first access, so ``import graphguard`` stays cheap for the linter.
"""

__version__ = "0.1.0"

__all__ = ["GraphGuard", "GraphGrowthError", "__version__"]


def __getattr__(name):
    # Lazy: the runtime half imports psutil and works on TensorFlow objects; the linter must not pay for it.
    if name in ("GraphGuard", "GraphGrowthError"):
        from graphguard.runtime import guard

        return getattr(guard, name)
    raise AttributeError(f"module 'graphguard' has no attribute {name!r}")
