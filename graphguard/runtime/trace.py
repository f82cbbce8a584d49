"""``TraceGuard``: count ``tf.function`` traces per function and per calling line; stop one that keeps retracing.

In TF 2 a ``tf.function`` traces (runs the Python function again and builds a new graph) for every
new Python value, input shape, dtype or Python object it is called with, and every ``tf.function``
object made anew traces on its first call. A step counter passed as a Python ``int`` traces on every
call: 12.5 ms per call against 0.34 ms with a tensor, and about 148 KiB of RSS kept per trace
(TF-FACTS, "TF 2 retracing"). TensorFlow's own warning comes only after 5 of the last 10 calls
retraced, at most twice per function, and names the function, not the calling line.

``TraceGuard`` counts traces while it is active::

    guard = TraceGuard(max_traces=8, on_retrace="raise")
    with guard:
        train()
    print(guard.report().format())

How: while a guard is active, ``__call__`` (and ``__init__``) of TensorFlow's ``Function`` class,
obtained publicly as ``type(tf.function(lambda: 0))``, are replaced by thin wrappers. Each call reads
the public ``experimental_get_tracing_count()`` after the real call and compares it with the count
after the previous call of the same function (read before the call for a function the guard has not
seen yet, or when several guards are active), and counts the call; only when the count rose does the
guard take the caller's frame (the first frame outside TensorFlow,
Keras, graphguard's runtime and the standard library), summarise the arguments (Python scalars by
value, tensors, arrays and variables by shape and dtype, other objects by type and ``id``) and compare
them with the previous trace of the same function. ``__init__`` records where each ``tf.function``
object is made, so a new object per loop iteration is reported with that line. TensorFlow's own
retracing warning (logger ``tensorflow``) is collected as a cross-check. The wrappers are removed when
the last active guard stops.

Counts are kept per Python code object (``Function.python_function`` unwrapped, as TensorFlow keys its
own warning) and per ``tf.function`` object. A function is *retracing* when:

* one ``tf.function`` object traced more than ``max_traces`` times under the guard (not counting traces
  made only because a new model, layer, optimizer or ``tf.Module`` was passed: a new trial; nor those
  made only because a Python bool flag such as ``training`` changed: two values), or
* the same Python code (not a method, not TensorFlow's or Keras' own code) traced more than
  ``max_traces`` times through several ``tf.function`` objects, with at least half of its calls
  tracing: a ``tf.function`` made anew per call. A new model per trial in a sweep (Keras' train
  function, a ``@tf.function`` method, a step function built once per trial and called many times)
  is not; or
* Keras made its own step function more than ``max_traces`` times for one model (the model its
  closure holds, :func:`_keras_owner`): ``model.compile()`` per iteration (GG305).

This module imports TensorFlow only when a guard starts (never at ``import graphguard``).
"""

from __future__ import annotations

import collections
import inspect
import logging
from dataclasses import replace
import sys
import threading
import warnings
import weakref
from typing import Any, Callable, Optional, Union

from graphguard.runtime.attribution import is_internal, live_frames, source, user_origin, user_path, user_traceback
from graphguard.runtime.bounded import bounded_trips
from graphguard.runtime.report import where
from graphguard.runtime.trace_report import (
    ArgChange,
    CallSite,
    TracedFunction,
    TraceReport,
    fix_for,
    retracing_message,
)

__all__ = ["RetracingError", "RetracingWarning", "TraceGuard"]

#: Default limit of traces per function. A healthy function traces a few times: a first call that
#: creates variables traces twice (measured, TF 2.21), a ``training`` flag doubles that, a last
#: partial batch (train and evaluation sizes) adds one or two. 8 leaves room for those and still stops
#: a step counter passed as a Python int within 9 calls (about 0.1 s of retracing, TF-FACTS).
DEFAULT_MAX_TRACES = 8
_MAX_SITES = 10  # calling lines kept per function
_HISTORY = 16  # traces' arguments kept per tf.function object, for a calling line's first trace
_MAX_CHANGES = 8  # causes kept per function: distinct (kind of change, argument) pairs
_MAX_VALUES = 100  # distinct values counted per cause
_MAX_ITEMS = 16  # elements of a list/tuple/dict summarised per level
_MAX_DEPTH = 3  # nesting levels summarised
_MAX_TF_WARNINGS = 20
_TF_WARNING = "triggered tf.function retracing"

OnRetrace = Union[str, Callable[[TracedFunction], Any]]


class RetracingError(RuntimeError):
    """A ``tf.function`` traced more than ``max_traces`` times while a ``TraceGuard`` was active.

    Raised (``on_retrace="raise"``) in the calling line, after the call that traced returned, so
    TensorFlow's state is whole; that call's result is lost. The message names the function (qualified
    name, ``file:line`` of its definition), the user line that called it, traces and calls, the
    argument that changed between the last two traces and the fix.

    Attributes:
        function: the :class:`~graphguard.runtime.trace_report.TracedFunction` (counts, lines, changes).
        filename, lineno: the calling user line (``None`` when every frame was internal).
        report: the guard's :class:`~graphguard.runtime.trace_report.TraceReport` at that moment.
    """

    __module__ = "graphguard"  # importable from there (tracebacks print graphguard.RetracingError)

    def __init__(self, message: str, function: TracedFunction, filename: Optional[str], lineno: Optional[int],
                 report: TraceReport) -> None:
        super().__init__(message)
        self.function, self.filename, self.lineno, self.report = function, filename, lineno, report


class RetracingWarning(RuntimeWarning):
    """``on_retrace="warn"``: a ``tf.function`` keeps retracing; shown once per function at the calling line."""

    __module__ = "graphguard"


# -- what the arguments were ------------------------------------------------------------------------

Leaf = tuple  # ("value", type, repr) | ("tensor", kind, shape, dtype) | ("object" or "stateful", type, id)


def _leaf(value: Any) -> Leaf:
    kind = type(value)
    if value is None or kind in (bool, int, float, complex, str, bytes):
        text = repr(value)
        return ("value", kind.__name__, text if len(text) <= 40 else text[:37] + "...")
    shape, dtype = getattr(value, "shape", None), getattr(value, "dtype", None)
    if shape is not None and dtype is not None and not callable(shape):
        name = kind.__name__
        what = ("variable" if "Variable" in name else "array" if kind.__module__.startswith("numpy") else "tensor")
        try:
            dims: Any = tuple(None if d is None else int(d) for d in shape)
        except (TypeError, ValueError):  # unknown rank
            dims = "unknown"
        return ("tensor", what, dims, str(getattr(dtype, "name", dtype)))
    if hasattr(value, "trainable_variables") or hasattr(value, "trainable_weights") or hasattr(value, "apply_gradients"):
        # A model, layer, optimizer or tf.Module: a new one is a new trial (a fold, a sweep's model).
        return ("stateful", kind.__qualname__, id(value))
    return ("object", kind.__qualname__, id(value))


def _flatten(value: Any, path: str, out: dict[str, Leaf], depth: int = 0) -> None:
    if isinstance(value, (list, tuple)) and depth < _MAX_DEPTH:
        out[path + ".len"] = ("value", "len", str(len(value)))
        for i, item in enumerate(value[:_MAX_ITEMS]):
            _flatten(item, f"{path}[{i}]", out, depth + 1)
    elif isinstance(value, dict) and depth < _MAX_DEPTH:
        out[path + ".len"] = ("value", "len", str(len(value)))
        for key in list(value)[:_MAX_ITEMS]:
            _flatten(value[key], f"{path}[{key!r}]", out, depth + 1)
    else:
        out[path] = _leaf(value)


def _shown(leaf: Leaf, other: Optional[Leaf] = None) -> str:
    """A value leaf's text for a person: a float to 6 significant digits (``0.1 * 3`` is ``0.3``, not
    ``0.30000000000000004``; ``3.0`` stays ``3.0``), in full when that would hide its difference from ``other``."""
    text = leaf[2]
    if leaf[1] == "float":
        try:
            short = repr(float(f"{float(text):.6g}"))  # a float still reads as one: 3.0, not 3
            if other is None or other[1] != "float" or f"{float(other[2]):.6g}" != short:
                return short
        except ValueError:
            pass
    return text


def _text(leaf: Leaf, other: Optional[Leaf] = None) -> str:
    if leaf[0] == "value":
        return f"Python {leaf[1]} {_shown(leaf, other)}"
    if leaf[0] == "tensor":
        return f"{leaf[1]} shape {leaf[2]} {leaf[3]}"
    return f"`{leaf[1]}` object at {leaf[2]:#x}"  # "object" and "stateful"


def _value_of(change: ArgChange, summary: dict[str, Leaf]) -> Optional[Any]:
    """What ``change`` is about in one trace's argument ``summary``: the shape of a ``"shape"``
    change, the dtype of a ``"dtype"``, the length of a ``"structure"``, else the leaf; ``None`` for
    a change of no argument (a new tf.function object) or an argument the summary lacks."""
    if not change.argument:
        return None
    leaf = summary.get(change.argument + ".len") if change.kind == "structure" else None
    leaf = leaf or summary.get(change.argument)
    if leaf is None:
        return None
    if change.kind == "shape" and leaf[0] == "tensor":
        return leaf[2]
    if change.kind == "dtype" and leaf[0] == "tensor":
        return leaf[3]
    return leaf


def _diff(before: dict[str, Leaf], after: dict[str, Leaf]) -> list[ArgChange]:
    """What changed between two argument summaries, in argument order."""
    changes = []
    for path in dict.fromkeys([*after, *before]):
        old, new = before.get(path), after.get(path)
        if old == new:
            continue
        if path.endswith(".len"):
            if old is not None and new is not None:
                changes.append(ArgChange("structure", path[:-4], f"length {old[2]}", new[2]))
            continue
        if old is None or new is None:
            parent = path.rsplit("[", 1)[0] + ".len"
            if "[" in path and before.get(parent) != after.get(parent):
                continue  # an element of a list that grew or shrank: its length says it
            changes.append(ArgChange("structure", path, _text(old) if old else "not passed",
                                     _text(new) if new else "not passed"))
        elif old[0] == new[0] == "tensor":
            if old[2] != new[2]:
                changes.append(ArgChange("shape", path, f"shape {old[2]}", str(new[2])))
            if old[3] != new[3]:
                changes.append(ArgChange("dtype", path, f"dtype {old[3]}", new[3]))
            if old[1] != new[1] and old[2] == new[2] and old[3] == new[3]:
                changes.append(ArgChange("object", path, _text(old), _text(new)))
        elif old[0] == new[0] == "value":
            shown = _shown(new, old)
            changes.append(ArgChange("value", path, _text(old, new), shown if old[1] == new[1] else f"{new[1]} {shown}"))
        elif old[0] == new[0] == "stateful" and old[1] == new[1]:
            changes.append(ArgChange("new_model", path, _text(old), f"another `{new[1]}` object at {new[2]:#x}"))
        elif old[0] == new[0] == "object" and old[1] == new[1]:
            changes.append(ArgChange("object", path, _text(old), f"another `{new[1]}` object at {new[2]:#x}"))
        else:
            changes.append(ArgChange("value" if new[0] == "value" else "object", path, _text(old), _text(new)))
    return changes


# -- what the guard keeps --------------------------------------------------------------------------


class _Code:
    """Counts for one Python function (code object), over all its ``tf.function`` objects."""

    def __init__(self, fn: Any, target: Any, method: bool) -> None:
        code = getattr(target, "__code__", None)
        self.name = getattr(target, "__qualname__", None)
        if self.name is None:
            # ``tf.function(model)`` (a callable object), ``tf.function(functools.partial(f, ...))``.
            inner = getattr(target, "func", None)
            self.name = (f"partial({getattr(inner, '__qualname__', type(inner).__qualname__)})" if inner is not None
                         else f"{type(target).__qualname__} object")
        self.module = getattr(target, "__module__", None) or ""
        self.filename = code.co_filename if code is not None else None
        self.lineno = code.co_firstlineno if code is not None else None
        self.internal = bool(self.filename) and is_internal(self.filename)
        self.method = method
        self.signature: Optional[inspect.Signature] = None
        try:
            self.signature = inspect.signature(target)
        except (TypeError, ValueError):
            pass
        self.traces = self.functions = self.max_object_traces = 0
        self.excused = 0  # traces not counted against max_traces (a new trial, a loop's case, a bool flag)
        self.owners: dict[int, int] = {}  # id of the Keras model a step function closes over -> objects made
        self.recompiled = 0  # the most objects made for one model
        self.dead_calls = 0  # calls of this code's tf.function objects that are gone
        self.live: dict[int, "_Object"] = {}  # id -> record of this code's live objects
        self.sites: dict[tuple, list] = {}  # (filename, lineno) -> [text, traces]
        self.created: dict[str, int] = {}
        # Every cause of retracing seen: (kind, argument) -> its latest ArgChange, with line and traces.
        self.causes: dict[tuple[str, str], ArgChange] = {}
        self.values: dict[tuple[str, str], set] = {}  # each cause's distinct values (at most _MAX_VALUES)
        self.last: Optional[dict[str, Leaf]] = None
        self.retracing: Optional[str] = None
        self.warned = False

    @property
    def calls(self) -> int:
        return self.dead_calls + sum(record.calls for record in list(self.live.values()))

    def note_causes(self, changes: list[ArgChange], at: str, traced: int,
                    compared: tuple[dict[str, Leaf], ...] = ()) -> None:
        """One trace's changes (call with the guard's lock held): each kind of change to each argument
        is one cause, kept with its latest values and calling line, the traces it made and the distinct
        values it took in ``compared`` (the summaries of the two traces compared), so that a shape
        change from one line and a Python float from another are both reported, the one with more
        values first."""
        for change in changes:
            key = (change.kind, change.argument)
            known = self.causes.get(key)
            if known is None and len(self.causes) >= _MAX_CHANGES:
                continue
            seen = self.values.setdefault(key, set())
            for summary in compared:
                value = _value_of(change, summary)
                if value is not None and len(seen) < _MAX_VALUES:
                    seen.add(value)
            self.causes[key] = replace(change, at=at, traces=(known.traces if known else 0) + traced,
                                       values=len(seen))

    def ordered_causes(self) -> tuple[ArgChange, ...]:
        """The causes, a new tf.function object first, then those with the most values (a stable sort:
        first seen first among equals)."""
        return tuple(sorted(self.causes.values(), key=lambda c: (c.kind != "new_function", -c.values)))

    def snapshot(self, max_traces: int) -> TracedFunction:
        sites = sorted(self.sites.items(), key=lambda item: -item[1][1])
        return TracedFunction(
            name=self.name, module=self.module, filename=self.filename, lineno=self.lineno,
            traces=self.traces, calls=self.calls, functions=self.functions,
            max_object_traces=self.max_object_traces, internal=self.internal,
            call_sites=tuple(CallSite(f, n, text, t) for (f, n), (text, t) in sites[:_MAX_SITES]),
            created_at=tuple(sorted(self.created.items(), key=lambda item: -item[1])[:5]),
            changes=self.ordered_causes(), retracing=self.retracing, excused=self.excused,
            recompiled=self.recompiled, method=self.method,
            fix=fix_for(self.ordered_causes(), self.retracing) if self.retracing else "",
        )


class _Object:
    """Counts for one ``tf.function`` object (weakly referenced: a dead one's record is dropped)."""

    # calls: the hot path's one increment; seen: experimental_get_tracing_count() after the last call
    __slots__ = ("ref", "code", "calls", "traces", "seen", "last", "trials", "last_at", "history", "owned")

    def __init__(self, ref: weakref.ref, code: _Code) -> None:
        self.ref, self.code, self.calls, self.traces, self.seen = ref, code, 0, 0, 0
        self.owned = 0  # Keras' step function: how many objects of its code its model had when it was made
        self.trials = 0  # traces made because a new model, layer, optimizer or tf.Module was passed, a
        # loop handed the call its case (a dtype, a shape), or a Python bool flag took its other value
        self.last: Optional[dict[str, Leaf]] = None
        #: the arguments of the last trace from each calling line: a train step and an evaluation step
        #: sharing one function each change their own argument (a trial's report: a shape on one line
        #: was blamed on a float the other line changes)
        self.last_at: dict[tuple, dict[str, Leaf]] = {}
        #: the arguments of its latest traces (at most _HISTORY), for a calling line's first trace
        self.history: collections.deque = collections.deque(maxlen=_HISTORY)


class _SameCode:
    """A code object as a key by identity. Code objects compare equal by content, not file: a notebook
    cell run again (``In[4]`` repeating ``In[2]``) compiles an equal code object for a *new* function,
    whose traces are its own (a re-run defining cell is the fix docs/notebooks.md gives). The key holds
    the code, so its id is not reused while the key lives."""

    __slots__ = ("code",)

    def __init__(self, code: Any) -> None:
        self.code = code

    def __hash__(self) -> int:
        return id(self.code)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _SameCode) and other.code is self.code


def _target(fn: Any) -> tuple[Any, Any, bool]:
    """(code key, the Python function, is a method) of a ``tf.function`` object, as TensorFlow keys
    its own retracing warning (``Function._get_key_for_call_stats``: ``__wrapped__``, then ``__func__``);
    the key is the code object itself (:class:`_SameCode`), not an equal one."""
    target = fn.python_function
    for _ in range(32):
        inner = getattr(target, "__wrapped__", None)
        if inner is None or inner is target:
            break
        target = inner
    method = hasattr(target, "__self__") and hasattr(target, "__func__")
    function = getattr(target, "__func__", target)
    code = getattr(function, "__code__", None)
    return (_SameCode(code) if code is not None else type(function)), (target if method else function), method


# -- the patch, shared by every active guard -------------------------------------------------------

_LOCK = threading.RLock()
_GUARDS: tuple["TraceGuard", ...] = ()
# The records (id(Function) -> _Object) of the only active guard, or None: the per-call fast path.
_ONLY: Optional[dict[int, "_Object"]] = None
_PATCH: Optional[tuple[type, Any, Any]] = None  # (Function class, original __call__, original __init__)
_CREATED: dict[int, tuple[weakref.ref, Optional[str], Optional[int]]] = {}  # id(Function) -> where it was made
_FUNCTION_CLASS: Optional[type] = None


def _keras_owner(target: Any) -> Any:
    """The Keras model a step function of Keras' own closes over (``self`` in ``make_train_function``'s
    ``one_step_on_data``), or None: found among the closure's cells by what a model has (``compile``,
    ``fit`` and ``make_train_function``)."""
    for cell in getattr(target, "__closure__", None) or ():
        try:
            value = cell.cell_contents
        except ValueError:  # an empty cell
            continue
        if hasattr(value, "make_train_function") and hasattr(value, "compile") and hasattr(value, "fit"):
            return value
    return None


def function_class() -> type:
    """TensorFlow's ``Function`` class, obtained publicly: ``type(tf.function(lambda: 0))`` (imports TF)."""
    global _FUNCTION_CLASS
    if _FUNCTION_CLASS is None:
        import tensorflow as tf

        _FUNCTION_CLASS = type(tf.function(lambda: 0))
    return _FUNCTION_CLASS


class _TFWarnings(logging.Filter):
    """Collects TensorFlow's own retracing warnings for every active guard; lets every record through."""

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            message = record.getMessage()
        except Exception:  # a bad format string is logging's problem, not ours
            return True
        if _TF_WARNING in message:
            for guard in _GUARDS:
                if len(guard._tf_warnings) < _MAX_TF_WARNINGS:
                    guard._tf_warnings.append(message.split(". Tracing is expensive", 1)[0])
        return True


_FILTER = _TFWarnings()


def _install(cls: type) -> None:
    global _PATCH
    original_call, original_init = cls.__dict__["__call__"], cls.__dict__["__init__"]

    def __call__(self: Any, *args: Any, **kwds: Any) -> Any:
        guards = _GUARDS
        if not guards:
            return original_call(self, *args, **kwds)
        only = _ONLY
        record = only.get(id(self)) if only is not None else None
        # One active guard that knows this function: the count it saw after the previous call is the
        # count before this one (one read per call). Otherwise read it before the call too.
        before = record.seen if record is not None else self.experimental_get_tracing_count()
        try:
            result = original_call(self, *args, **kwds)
        except BaseException:  # the function's own error wins; a trace it made is still counted
            after = self.experimental_get_tracing_count()
            frame = sys._getframe(1) if after != before else None
            for guard in guards:
                guard._count(self, after - before, after, args, kwds, frame, failed=True)
            del frame
            raise
        after = self.experimental_get_tracing_count()
        if after == before and record is not None:  # the common case
            record.calls += 1
            return result
        frame = sys._getframe(1) if after != before else None
        error = None
        for guard in guards:
            found = guard._count(self, after - before, after, args, kwds, frame)
            error = error or found
        del frame
        if error is not None:
            # As GraphGuard's: the traceback ends at the user's call, this frame hidden for pytest and
            # IPython (a second new user's trial saw `trace.py ... raise error` under their line).
            __tracebackhide__ = True  # noqa: F841 - read by pytest and IPython
            raise error.with_traceback(None)
        return result

    def __init__(self: Any, *args: Any, **kwds: Any) -> None:
        original_init(self, *args, **kwds)
        if _GUARDS:
            filename, lineno, _ = user_origin(live_frames(sys._getframe(1)))
            key = id(self)

            def gone(ref: weakref.ref, key: int = key) -> None:
                entry = _CREATED.get(key)
                if entry is not None and entry[0] is ref:
                    _CREATED.pop(key, None)

            _CREATED[key] = (weakref.ref(self, gone), filename, lineno)

    __call__.__wrapped__, __init__.__wrapped__ = original_call, original_init  # type: ignore[attr-defined]
    __call__.__doc__, __init__.__doc__ = original_call.__doc__, original_init.__doc__
    cls.__call__, cls.__init__ = __call__, __init__  # type: ignore[method-assign]
    _PATCH = (cls, original_call, original_init)
    logging.getLogger("tensorflow").addFilter(_FILTER)


def _uninstall() -> None:
    global _PATCH
    if _PATCH is None:
        return
    cls, original_call, original_init = _PATCH
    # Put TensorFlow's methods back only if nobody replaced ours meanwhile; otherwise ours stay in
    # their chain and pass straight through (no guard is active).
    if getattr(cls.__dict__.get("__call__"), "__wrapped__", None) is original_call:
        cls.__call__ = original_call
    if getattr(cls.__dict__.get("__init__"), "__wrapped__", None) is original_init:
        cls.__init__ = original_init
    logging.getLogger("tensorflow").removeFilter(_FILTER)
    _CREATED.clear()
    _PATCH = None


def _set_only() -> None:
    global _ONLY
    _ONLY = _GUARDS[0]._objects if len(_GUARDS) == 1 else None


def _executing_eagerly() -> bool:
    tf = sys.modules.get("tensorflow")
    try:
        return bool(tf.executing_eagerly()) if tf is not None else True
    except Exception:
        return True


# -- the guard -------------------------------------------------------------------------------------


class TraceGuard:
    """Count ``tf.function`` traces while active; raise or warn when one function keeps retracing.

    Use it as a context manager (``with TraceGuard(): train()``) or call :meth:`start` and
    :meth:`stop`. Guards nest (each counts what ran while it was active) and a guard may be started
    again after it stopped (counts go on). Every ``tf.function`` called while active is counted, from
    any thread; counts may miss a call when threads call the same function at the same moment (no lock
    on the per-call path), traces are counted under a lock.

    Args:
        max_traces: traces, default 8 (:data:`DEFAULT_MAX_TRACES`): a ``tf.function`` object that traces
            more than this many times under the guard, or one Python function traced more than this
            many times through new ``tf.function`` objects (with at least half its calls tracing), is
            retracing. Must be an int >= 1.
        on_retrace: ``"raise"`` (default): :class:`RetracingError` in the calling line, after the call
            that traced past the limit returned, at every further trace of that function;
            ``"warn"``: a :class:`RetracingWarning` at the calling line, once per function; or a
            callable given the :class:`~graphguard.runtime.trace_report.TracedFunction` at every such
            trace (the run goes on unless it raises).

    Raises:
        ValueError: ``max_traces`` not an int >= 1, or ``on_retrace`` not ``"raise"``, ``"warn"`` or a
            callable.

    Cost: per call, one ``experimental_get_tracing_count()`` read, a dict lookup and an increment:
    about 1.5-2 us of the calling thread's CPU next to a real call, 1.0 % of a 0.2 ms Dense training
    step (``bench/trace_overhead.py``, 2 cores). A trace made without a call (``get_concrete_function``)
    is counted at the function's next call.
    Sources: ``tf.function``, ``Function.experimental_get_tracing_count`` and
    ``Function.python_function`` (TF 2.21 public API); TF-FACTS "TF 2 retracing".
    """

    def __init__(self, max_traces: int = DEFAULT_MAX_TRACES, on_retrace: OnRetrace = "raise") -> None:
        if isinstance(max_traces, bool) or not isinstance(max_traces, int) or max_traces < 1:
            raise ValueError(f"max_traces must be an int >= 1 (traces per tf.function before it counts as "
                             f"retracing; default {DEFAULT_MAX_TRACES}), not {max_traces!r}")
        if not (on_retrace in ("raise", "warn") or callable(on_retrace)):
            raise ValueError(f"on_retrace must be 'raise', 'warn' or a callable taking the TracedFunction, "
                             f"not {on_retrace!r}")
        self.max_traces = max_traces
        self.on_retrace = on_retrace
        self._lock = threading.Lock()
        self._codes: dict[Any, _Code] = {}
        self._objects: dict[int, _Object] = {}
        self._tf_warnings: list[str] = []
        self._depth = 0

    # -- life cycle ---------------------------------------------------------------------------------

    def start(self, _function_class: Optional[type] = None) -> "TraceGuard":
        """Start counting (imports TensorFlow on the first start); returns the guard. Re-entrant:
        each ``start`` needs its ``stop``."""
        cls = _function_class or function_class()
        global _GUARDS
        with _LOCK:
            if self._depth == 0:
                for record in list(self._objects.values()):  # traces made while stopped are not ours
                    fn = record.ref()
                    if fn is not None:
                        record.seen = fn.experimental_get_tracing_count()
                if _PATCH is None:
                    _install(cls)
                _GUARDS = (*_GUARDS, self)
                _set_only()
            self._depth += 1
        return self

    def stop(self) -> None:
        """Stop counting (the matching ``start``); when no guard is left active, TensorFlow's
        ``Function.__call__`` and ``__init__`` are restored. Stopping a stopped guard does nothing."""
        global _GUARDS
        with _LOCK:
            if self._depth == 0:
                return
            self._depth -= 1
            if self._depth == 0:
                _GUARDS = tuple(guard for guard in _GUARDS if guard is not self)
                _set_only()
                if not _GUARDS:
                    _uninstall()

    @property
    def active(self) -> bool:
        """True between :meth:`start` and the matching :meth:`stop`."""
        return self._depth > 0

    def __enter__(self) -> "TraceGuard":
        return self.start()

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        self.stop()
        if isinstance(exc, RetracingError):
            # the traceback ends at the user's line, as GraphGuard's does (a twenty-first new user's
            # trial: graphguard's own `raise` frame in a TraceGuard error's traceback)
            user_traceback(tb)

    # -- counting (called by the patched Function.__call__) ------------------------------------------

    def _count(self, fn: Any, traced: int, now: int, args: tuple, kwds: dict, frame: Any,
               failed: bool = False) -> Optional[RetracingError]:
        # A dead function's record is dropped by its weakref callback before its id can be reused.
        record = self._objects.get(id(fn))
        if record is None:
            record = self._new_object(fn)
        record.calls += 1
        record.seen = now
        if traced > 0:
            return self._traced(record, fn, traced, args, kwds, frame, failed)
        return None

    def _new_object(self, fn: Any) -> _Object:
        key_id, objects = id(fn), self._objects

        def gone(ref: weakref.ref, key: int = key_id) -> None:
            record = objects.get(key)
            if record is not None and record.ref is ref:
                objects.pop(key, None)
                if record.code.live.pop(key, None) is not None:
                    record.code.dead_calls += record.calls

        key, target, method = _target(fn)
        with self._lock:
            code = self._codes.get(key)
            if code is None:
                code = self._codes[key] = _Code(fn, target, method)
            code.functions += 1
            created = _CREATED.get(key_id)
            if created is not None and created[0]() is fn:
                made = where(created[1], created[2])
                code.created[made] = code.created.get(made, 0) + 1
            record = objects[key_id] = code.live[key_id] = _Object(weakref.ref(fn, gone), code)
            if code.internal:
                owner = _keras_owner(target)
                if owner is not None:
                    record.owned = code.owners[id(owner)] = code.owners.get(id(owner), 0) + 1
        return record

    def _summary(self, code: _Code, args: tuple, kwds: dict) -> dict[str, Leaf]:
        out: dict[str, Leaf] = {}
        bound = None
        if code.signature is not None:
            try:
                bound = code.signature.bind(*args, **kwds).arguments
            except TypeError:
                bound = None
        if bound is None:
            bound = {**{f"args[{i}]": value for i, value in enumerate(args)}, **kwds}
        for name, value in bound.items():
            _flatten(value, name, out)
        return out

    def _traced(self, record: _Object, fn: Any, traced: int, args: tuple, kwds: dict, frame: Any,
                failed: bool = False) -> Optional[RetracingError]:
        code = record.code
        summary = self._summary(code, args, kwds)
        frames = live_frames(frame) if frame is not None else []
        filename, lineno, _ = user_origin(frames) if frames else (None, None, frozenset())
        with self._lock:
            base = None
            if record.last is None and code.last is not None:  # this object's first trace: a new object
                created = _CREATED.get(id(fn))
                made = where(created[1], created[2]) if created is not None and created[0]() is fn else ""
                changes = [ArgChange("new_function", "", "", made)]
            elif record.last is not None:
                base = record.last_at.get((filename, lineno))
                if base is None:
                    # A line's first trace: against the earlier trace it differs least from, not the last
                    # one from another line (a seventh new user's trial: a float loop's first call was blamed
                    # for a shape change that only the loop before it made)
                    base = min(reversed(record.history), key=lambda earlier: len(_diff(earlier, summary)),
                               default=record.last)
                changes = _diff(base, summary) or [ArgChange("unknown", "")]
            else:
                changes = []
            record.traces += traced
            # Traces that are needed, not retraces: a new trial's model (its first trace); a loop over a
            # handful of cases handing the call its case (a dtype, a shape), as a session's op per case is
            # (runtime/bounded.py; a Python number per iteration is not: one tensor argument would serve
            # every value); a Python bool flag's other value (``training``: two values; docs/trace-guard.md,
            # a tenth new user's trial: a flag's second trace under a step-decay schedule was counted
            # against max_traces, and its fix said to make it a tensor).
            if changes and (all(change.kind == "new_model" for change in changes)
                            or all(change.kind == "value" and change.before.startswith("Python bool ")
                                   for change in changes)
                            or (all(change.kind in ("dtype", "shape") for change in changes)
                                and bounded_trips(user_path(frames)) is not None)):
                record.trials += traced
                code.excused += traced
            code.traces += traced
            code.max_object_traces = max(code.max_object_traces, record.traces)
            site = code.sites.get((filename, lineno))
            if site is None and len(code.sites) < 4 * _MAX_SITES:
                site = code.sites[(filename, lineno)] = [source(filename, lineno), 0]
            if site is not None:
                site[1] += traced
            if changes:
                code.note_causes(changes, where(filename, lineno) if filename else "", traced,
                                 (summary,) if base is None else (base, summary))
            record.last = code.last = summary
            record.history.append(summary)
            if (filename, lineno) in record.last_at or len(record.last_at) < _MAX_SITES:
                record.last_at[(filename, lineno)] = summary
            if failed or not _executing_eagerly():  # the call raised, or it traced inside another function's
                return None  # trace (counted; the outer function is judged): never acted on
            if record.traces - record.trials > self.max_traces:
                verdict = "same_function"
            elif (not code.internal and not code.method and code.functions > 1 and code.traces > self.max_traces
                  and 2 * code.traces >= code.calls):
                verdict = "new_function"
                if ("new_function", "") not in code.causes:
                    code.causes = {("new_function", ""): ArgChange("new_function", ""), **code.causes}
            elif record.owned > self.max_traces and record.traces == traced:
                # Keras made its step function anew for a model that had one: compile() per iteration (a
                # twenty-first new user's trial: 51 compiles read "no tf.function retracing", GG305 in check)
                verdict = "recompiled"
                code.recompiled = max(code.recompiled, record.owned)
                code.causes = {("recompiled", ""): ArgChange("recompiled", "", "", str(record.owned)),
                               **{k: v for k, v in code.causes.items() if k[0] != "new_function"}}
            else:
                return None
            code.retracing = code.retracing if code.retracing == "same_function" else verdict
            snapshot = code.snapshot(self.max_traces)
            first_warning = not code.warned
            traces, calls = record.traces, record.calls
            code.warned = True
        call = CallSite(filename, lineno, source(filename, lineno), 0)
        # a short loop the source fixes: graphguard check leaves it out; say why the guard does not
        bounded = bounded_trips(user_path(frames)) if frames and first_warning else None
        message = retracing_message(snapshot, call, self.max_traces, traces, calls, bounded)
        if self.on_retrace == "raise":
            return RetracingError(message, snapshot, filename, lineno, self.report())
        if self.on_retrace == "warn":
            if first_warning:
                if filename and lineno:  # Python adds the line's source after it: say what it is (as warn_at)
                    message = f"{message.rstrip()}\n(warned at {where(filename, lineno)}, the line below)"
                warnings.warn_explicit(message, RetracingWarning, filename or "<graphguard>", lineno or 0)
            return None
        self.on_retrace(snapshot)  # type: ignore[operator]
        return None

    # -- results ------------------------------------------------------------------------------------

    def report(self) -> TraceReport:
        """What was counted so far (while active or after :meth:`stop`): a
        :class:`~graphguard.runtime.trace_report.TraceReport`, retracing functions first, then by traces."""
        with self._lock:
            functions = [code.snapshot(self.max_traces) for code in self._codes.values() if code.calls]
            tf_warnings = tuple(self._tf_warnings)
        functions.sort(key=lambda fn: (fn.retracing is None, -fn.traces, fn.name))
        return TraceReport(self.max_traces, tuple(functions), tf_warnings, self.active)

    def __repr__(self) -> str:
        return (f"TraceGuard(max_traces={self.max_traces}, on_retrace={self.on_retrace!r}, "
                f"{'active' if self.active else 'stopped'}, {len(self._codes)} functions)")
