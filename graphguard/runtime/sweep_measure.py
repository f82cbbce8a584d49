"""What a :class:`~graphguard.runtime.sweep.SweepGuard` trial left in the process: RSS, Keras models, TF graphs.

* :func:`_settle` refreshes the running frames' ``f_locals`` snapshots, runs ``gc.collect()`` and, on
  glibc, ``malloc_trim(0)`` (so memory that Python freed but the C allocator kept is not counted), then
  reads the RSS in bytes (psutil ``memory_info().rss`` of a cached ``psutil.Process``, 33-44 us per
  read; ``None`` without psutil).
* :func:`_instances` finds the live instances of the classes :func:`_auto_classes` names (Keras 3 and
  tf_keras models, ``tf.Graph``, ``tf.compat.v1.Session``) with one ``gc.get_referrers`` over those
  classes (about 55 ms with Keras loaded, 334,000 gc-tracked objects).
* :class:`_Freeze` keeps the interpreter's long-lived objects (everything alive when a sweep's first
  trial starts: TensorFlow, Keras, the data) out of the guard's collections and scans with
  ``gc.freeze()`` (Python ``gc`` docs: frozen objects are ignored by every later collection, and by
  ``gc.get_referrers``), until an object of a trial is still alive one trial later: then ``gc.unfreeze()``
  and a full collection decide, and the search sees every object.
* :func:`_default_graph` reads TensorFlow's default graph and its ``Graph.version`` (ops added);
  :func:`_clear_sessions` calls Keras's ``clear_session()`` (or ``tf.compat.v1.reset_default_graph()``).

This module never imports TensorFlow, Keras or NumPy: it only looks at modules already in
``sys.modules``. psutil is imported lazily, on the first RSS read. Nothing here imports the guard
(:mod:`graphguard.runtime.sweep`).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import gc
import os
import sys
import types
import weakref
from typing import Any, Optional

# ---------------------------------------------------------------------------------------------------
# Memory
# ---------------------------------------------------------------------------------------------------

_process: Any = None
_process_pid: Optional[int] = None
_malloc_trim: Any = None  # None: not looked up yet; False: unavailable


def _rss() -> Optional[int]:
    """Resident set size of this process in bytes (psutil ``memory_info().rss``), or ``None``.

    The ``psutil.Process`` is cached (TF-FACTS: 33-44 us per read with a cached object); a fork gets
    its own.
    """
    global _process, _process_pid
    if _process is None or _process_pid != os.getpid():
        try:
            import psutil
        except ImportError:
            return None
        try:
            _process, _process_pid = psutil.Process(), os.getpid()
        except Exception:
            return None
    try:
        return int(_process.memory_info().rss)
    except Exception:
        return None


def _trim() -> None:
    """glibc ``malloc_trim(0)``: give freed heap pages back to the system, so that RSS shows what is
    still in use rather than what the C allocator kept for later. NumPy arrays and TensorFlow buffers
    are allocated with ``malloc``; without this, a trial that freed 50 MB may show no drop in RSS.
    A no-op where the C library has no ``malloc_trim`` (macOS, Windows, musl)."""
    global _malloc_trim
    if _malloc_trim is None:
        _malloc_trim = False
        if sys.platform.startswith("linux"):
            try:
                libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
                function = libc.malloc_trim
                function.argtypes, function.restype = [ctypes.c_size_t], ctypes.c_int
                _malloc_trim = function
            except (OSError, AttributeError):
                pass
    if _malloc_trim:
        _malloc_trim(0)


def _sync_frame_locals(frame: Optional[types.FrameType]) -> None:
    """Refresh ``f_locals`` of ``frame`` and every frame above it.

    On CPython before 3.13, reading ``frame.f_locals`` of a running function stores a snapshot dict on
    the frame that holds the locals' values until the next read. The chain search reads it; refreshing
    before each measurement keeps a snapshot from holding an object the function has since rebound.
    """
    while frame is not None:
        if frame.f_code.co_flags & 0x01:  # CO_OPTIMIZED: a function frame (module frames use globals)
            frame.f_locals  # noqa: B018 (the read is the refresh)
        frame = frame.f_back


def _settle(frame: Optional[types.FrameType]) -> Optional[int]:
    """Refresh locals snapshots, collect every generation, trim the C heap; return the RSS (bytes)."""
    _sync_frame_locals(frame)
    gc.collect()
    _trim()
    return _rss()



# ---------------------------------------------------------------------------------------------------
# gc.freeze(): the long-lived objects out of every trial's collections
# ---------------------------------------------------------------------------------------------------


class _Freeze:
    """The process's ``gc.freeze()`` as the sweep guards use it (one per process: :data:`FREEZE`).

    Measured (2 cores, Python 3.11, TF 2.21 / Keras 3, about 375,000 gc-tracked objects with Keras
    loaded): a full ``gc.collect()`` takes 110-150 ms and a ``gc.get_referrers`` pass 31-43 ms; after
    ``gc.freeze()`` the same collection takes 1.2-1.5 ms and the pass 0.4 ms, since only the ~8,000
    objects made since are traversed. ``freeze()`` and ``unfreeze()`` are O(1) list splices.

    The rule that keeps the verdicts of a full collection: the guards freeze only when no trial's objects
    exist yet (the start of a trial of a guard with nothing pending, no other guard busy), so nothing a
    trial made is ever frozen; a trial object that the cheap collection did not free (it may be in a
    cycle with a frozen object) is judged after :meth:`thaw` and a full ``gc.collect()``. After a thaw
    the guards stay unfrozen until they are idle again (a leaking sweep costs what it did before).

    A process that froze objects itself (``gc.get_freeze_count() > 0`` before the first trial) is left
    alone: the guards then neither freeze nor unfreeze.

    ``instances``: weak references to the tracked model, graph and session instances alive at the freeze
    (frozen, so invisible to the later scans, which must still not count them as a trial's once thawed).
    """

    def __init__(self) -> None:
        self.frozen = False  # True while a gc.freeze() of ours is in force
        self.instances: dict[int, weakref.ref] = {}
        self.busy: "weakref.WeakSet[Any]" = weakref.WeakSet()  # guards with a trial running or pending

    def freeze(self, guard: Any, classes: list[tuple[type, str]]) -> None:
        """Freeze every object alive now, when ``guard`` is the only busy guard and the process has no
        freeze of its own; first a full collection (what is garbage now is not frozen) and one full scan
        for the tracked instances."""
        if self.frozen or any(other is not guard for other in self.busy) or gc.get_freeze_count():
            return
        gc.collect()
        self.instances = {}
        for obj, _ in _instances(classes) if classes else ():
            try:
                self.instances[id(obj)] = weakref.ref(obj)
            except TypeError:
                pass
        gc.freeze()
        self.frozen = True

    def thaw(self) -> bool:
        """``gc.unfreeze()`` if frozen by the guards; True when it was."""
        if not self.frozen:
            return False
        gc.unfreeze()
        self.frozen = False
        return True

    def idle(self, guard: Any) -> None:
        """``guard`` has no trial running or pending: thaw when no other guard is busy (the process's
        collections are its own again after a sweep)."""
        self.busy.discard(guard)
        if not self.busy:
            self.thaw()
            self.instances = {}

    def preexisting(self) -> dict[int, weakref.ref]:
        """The frozen instances still alive (see the class docstring)."""
        return {key: ref for key, ref in self.instances.items() if ref() is not None}


#: The one :class:`_Freeze` of the process.
FREEZE = _Freeze()


# ---------------------------------------------------------------------------------------------------
# What TensorFlow and Keras left: only modules already imported are looked at
# ---------------------------------------------------------------------------------------------------


def _auto_classes() -> list[tuple[type, str]]:
    """(class, source) pairs whose instances are tracked automatically, from modules already loaded."""
    classes = []
    for module_name, attr, source in (
        ("keras.src.models.model", "Model", "keras"),
        ("tf_keras.src.engine.training", "Model", "keras"),
        ("tensorflow.python.framework.ops", "Graph", "tf.Graph"),
        ("tensorflow.python.client.session", "BaseSession", "tf.Session"),
    ):
        module = sys.modules.get(module_name)
        cls = getattr(module, attr, None) if module is not None else None
        if isinstance(cls, type):
            classes.append((cls, source))
    return classes


def _func_graph_class() -> Optional[type]:
    module = sys.modules.get("tensorflow.python.framework.func_graph")
    return getattr(module, "FuncGraph", None) if module is not None else None


def _subclasses(kinds: tuple[type, ...]) -> set[type]:
    """``kinds`` and all their subclasses, transitively (``type.__subclasses__``; classes defined since the
    last call included)."""
    found: set[type] = set()
    stack = list(kinds)
    while stack:
        cls = stack.pop()
        if cls in found:
            continue
        found.add(cls)
        try:
            stack.extend(type.__subclasses__(cls))
        except TypeError:
            pass
    return found


_HEAPTYPE = 1 << 9  # Py_TPFLAGS_HEAPTYPE: a class defined in Python; its instances refer to it for gc


def _instances(classes: list[tuple[type, str]]) -> list[tuple[Any, str]]:
    """Live instances of ``classes``, without ``tf.function`` graphs (``FuncGraph``: owned by their
    functions), the current default graph, and empty graphs (``Graph.version == 0``: the default graphs
    that ``reset_default_graph`` and Keras's ``clear_session`` make stay referenced as ``outer_graph`` by
    functions TensorFlow keeps in its function library; they hold no ops and no user data).

    One ``gc.get_referrers`` call over the classes and their subclasses: an instance of a class defined
    in Python refers to its class, so the referrers are the instances (plus a few class tuples and
    namespaces, filtered out). This is one pass over the gc-tracked objects in C, about 40 % cheaper than
    testing every object of ``gc.get_objects()`` with ``isinstance`` in Python (55 ms against 90-100 ms
    with Keras loaded, 334,000 objects). If a class is not a Python class, the ``gc.get_objects()`` pass
    is used."""
    if not classes:
        return []
    kinds = tuple(cls for cls, _ in classes)
    types_ = _subclasses(kinds)
    if all(cls.__flags__ & _HEAPTYPE for cls in types_):
        candidates = gc.get_referrers(*types_)
    else:
        candidates = gc.get_objects()
    skip = _func_graph_class()
    ops = sys.modules.get("tensorflow.python.framework.ops")
    default = None
    if ops is not None:
        try:
            default = ops.get_default_graph()
        except Exception:
            default = None
    found = []
    for obj in candidates:
        if type(obj) in types_ and obj is not default and not (skip is not None and isinstance(obj, skip)):
            source = next(source for cls, source in classes if isinstance(obj, cls))
            if source == "tf.Graph" and getattr(obj, "version", 1) == 0:
                continue
            found.append((obj, source))
    del candidates
    return found


def _default_graph() -> tuple[Optional[weakref.ref], Optional[int]]:
    """(weak reference to TensorFlow's default graph, its ``version``), or (None, None) if TF is not loaded."""
    ops = sys.modules.get("tensorflow.python.framework.ops")
    if ops is None:
        return None, None
    try:
        graph = ops.get_default_graph()
        return weakref.ref(graph), int(graph.version)
    except Exception:
        return None, None


def _clear_sessions() -> list[str]:
    """Release Keras and TensorFlow state, for each library already loaded; returns what was called.

    * Keras 3: ``keras.backend.clear_session()`` (resets Keras's global state: layer-name counters,
      the functional-API graph; with the TensorFlow backend it also calls
      ``tf.compat.v1.reset_default_graph()``, and it runs ``gc.collect()``).
    * tf_keras (Keras 2): ``tf_keras.backend.clear_session()``.
    * TensorFlow without Keras: ``tf.compat.v1.reset_default_graph()`` (a fresh default graph for
      TF1 graph-mode code), skipped while a graph is entered with ``as_default()``.
    """
    called = []
    for name in ("keras", "tf_keras"):
        module = sys.modules.get(name)
        backend = getattr(module, "backend", None) if module is not None else None
        clear = getattr(backend, "clear_session", None)
        if clear is not None:
            clear()
            called.append(f"{name}.backend.clear_session()")
    if not called and "tensorflow.python.framework.ops" in sys.modules:
        ops = sys.modules["tensorflow.python.framework.ops"]
        try:
            ops.reset_default_graph()
            called.append("tf.compat.v1.reset_default_graph()")
        except AssertionError:  # a graph is entered with as_default(): TF refuses, and so do we
            pass
    return called


#: What a trial does not track among the names it binds: functions, classes, modules (not what it builds).
_NOT_TRACKED = (types.FunctionType, types.BuiltinFunctionType, types.MethodType, type, types.ModuleType)


def _is_data(obj: Any) -> bool:
    """A NumPy array or a pandas object: a trial's data (``val = folds[k]``, a slice of arrays made before
    the loop), not what it builds; ``--sweep`` does not track it (a new user's trial: every fold of a
    k-fold was a LEAK held by ``folds``, the list of the data)."""
    module = type(obj).__module__ or ""
    return module.startswith(("numpy", "pandas"))


def _weakrefable(obj: Any) -> bool:
    try:
        weakref.ref(obj)
        return True
    except TypeError:
        return False
