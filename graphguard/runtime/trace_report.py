"""What :class:`~graphguard.runtime.trace.TraceGuard` counted, as data, and the words for it.

:class:`TraceReport` holds one :class:`TracedFunction` per Python function that a ``tf.function`` wraps
(keyed by its code object, so a ``tf.function`` made anew in a loop is one entry with many function
objects). Each entry says how often it traced and was called, from which user lines, what changed in
its arguments between traces (:class:`ArgChange`: a Python value, a shape, a dtype, a new object, a
new ``tf.function`` object) and the fix for that change.

This module imports nothing heavy: no TensorFlow.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Optional

from graphguard.runtime.report import where

__all__ = ["ArgChange", "CallSite", "TraceReport", "TracedFunction", "fix_for", "retracing_message"]

#: TF-FACTS (TF 2.21, CPU): a retrace of a small step costs about 12.5 ms against 0.34 ms for a call
#: that reuses a trace, and each trace keeps a concrete function (about 148 KiB of RSS).
_WHY = ("Each trace runs the Python function again and builds a new graph, and TensorFlow keeps every trace "
        "(measured on TF 2.21 for a small step: about 12 ms and 150 KiB of memory per trace, against 0.3 ms "
        "for a call that reuses one; more for larger functions).")


#: TensorFlow's own retracing warnings shown in a report's text (all are in ``tf_warnings``).
_SHOWN_TF_WARNINGS = 4


@dataclass(frozen=True)
class ArgChange:
    """One difference between two consecutive traces of a function.

    Attributes:
        kind: ``"value"`` (a Python scalar's value or type), ``"shape"``, ``"dtype"`` (of a tensor,
            array or variable), ``"object"`` (a different Python object of the same type, or another
            type), ``"structure"`` (an element or key added or removed), ``"new_function"`` (a new
            ``tf.function`` object of the same Python code), ``"recompiled"`` (Keras' train, test or
            predict function made anew for a model that had one: ``model.compile()`` again),
            ``"unknown"`` (no visible difference).
        argument: the argument's name as the function declares it, with an index for nested values
            (``"step"``, ``"batch[0]"``, ``"inputs['x']"``); ``""`` for ``new_function``/``unknown``.
        before, after: the two summaries as text (``"Python int 3"``, ``"shape (32, 10)"``); for
            ``new_function``, ``after`` is where the new object was made (``file:line``). In a
            :class:`TracedFunction`, those of the latest trace with this change.
        at: the user line that called the function for the latest trace with this change
            (``file:line``); ``""`` when unknown.
        traces: traces made with this change (of this kind, to this argument) under the guard, from
            every calling line; ``0`` when not counted.
        values: distinct values the argument took in those traces (shapes for ``"shape"``, dtypes
            for ``"dtype"``, lengths for ``"structure"``), counting the trace each was compared
            with; ``0`` when not counted (``new_function``, ``unknown``). A cause with few values
            (a smaller last batch: 2 shapes) makes a few traces; one with a value per epoch or step
            makes them without end.
    """

    kind: str
    argument: str
    before: str = ""
    after: str = ""
    at: str = ""
    traces: int = 0
    values: int = 0

    def counted(self, total: int = 0) -> str:
        """``str()`` and, when known, in how many of the function's ``total`` traces it changed and the
        latest calling line, with the distinct values when they repeat (fewer values than traces and
        the one compared with: a shape that alternates between two values is not what makes new traces
        without end): ``argument `x`: shape (4, 10) -> (5, 10) (2 values; in 5 of 9 traces; last called
        from train.py:18)``. One trace can change several arguments, so the counts of a function's
        causes add up to more than its traces (an eighteenth new user's trial read "4 traces", "8
        traces", "8 traces" of 9 as 20); the traces are those of every calling line, so the line is
        said to be the latest."""
        if not self.traces:
            return str(self)
        values = f"{self.values} value{'s' * (self.values != 1)}; " if 0 < self.values <= self.traces else ""
        count = (f"in {self.traces} of {total} traces" if total >= self.traces
                 else f"{self.traces} trace{'s' * (self.traces != 1)}")
        where_from = f"; last called from {self.at}" if self.at else ""
        return f"{self} ({values}{count}{where_from})"

    def __str__(self) -> str:
        if self.kind == "new_function":
            return f"a new tf.function object per call: made at {self.after}" if self.after else \
                "a new tf.function object per call (made before the guard started)"
        if self.kind == "recompiled":
            return (f"a new tf.function object for the same Keras model ({self.after} made for it): "
                    f"model.compile() again makes Keras build its step function anew")
        if self.kind == "unknown":
            return "no argument changed as graphguard sees them (a captured global or closure value?)"
        return f"argument `{self.argument}`: {self.before} -> {self.after}"


@dataclass(frozen=True)
class CallSite:
    """A user source line that called a ``tf.function`` when it traced.

    Attributes:
        filename: absolute path of the first frame outside TensorFlow, Keras, graphguard's runtime
            and the standard library; ``None`` when every frame was internal.
        lineno: 1-based line in ``filename``.
        text: the line's source, stripped.
        traces: traces started from this line (under the guard).
    """

    filename: Optional[str]
    lineno: Optional[int]
    text: str
    traces: int

    def __str__(self) -> str:
        return where(self.filename, self.lineno)


@dataclass(frozen=True)
class TracedFunction:
    """One Python function wrapped by ``tf.function``, with every trace counted under the guard.

    Attributes:
        name: the Python function's qualified name (``"train.<locals>.step"``, ``"Model.train_step"``).
        module: its ``__module__`` (``"__main__"`` for a script).
        filename, lineno: where it is defined (``co_filename``, ``co_firstlineno``: the decorator line
            for a decorated function).
        traces: traces under the guard (``experimental_get_tracing_count()`` rises), all function
            objects together.
        calls: calls under the guard, all function objects together.
        functions: distinct ``tf.function`` objects of this code that were called (a method gets
            one per instance; a ``tf.function(f)`` in a loop one per iteration).
        max_object_traces: the most traces of any one of those objects.
        internal: the code lives in TensorFlow or Keras (Keras' own train/predict steps); such a
            function is reported when one object keeps retracing, or when Keras made more than
            ``max_traces`` objects of it for one model (``"recompiled"``), never for new objects
            otherwise (a new model per trial).
        call_sites: user lines that called it when it traced, most traces first (at most 10).
        created_at: ``(file:line, objects)`` where its ``tf.function`` objects were made while the
            guard was active, most first (at most 5).
        changes: every cause of retracing seen, one :class:`ArgChange` per kind of change and
            argument (a shape change of ``x`` from one line, a Python float ``lr`` from another),
            those with the most distinct values first (first seen first among equals), each with the
            values and calling line of its latest trace, its trace count and its distinct values; a trace is compared with the one before it of the same ``tf.function`` object (an
            object's first trace is a ``new_function``); at most 8.
        retracing: ``None``; ``"same_function"`` when one object traced more than ``max_traces``
            times; ``"new_function"`` when the code traced more than ``max_traces`` times through
            several objects while at least half of its calls traced; ``"recompiled"`` when Keras made
            more than ``max_traces`` objects of its own step function for one model (each
            ``compile()`` makes a new one, traced again: GG305).
        fix: what to change, for the changes seen, one sentence a line, most values first (``""``
            when not retracing).
        excused: its traces not counted against ``max_traces`` (see the field).
    """

    name: str
    module: str
    filename: Optional[str]
    lineno: Optional[int]
    traces: int
    calls: int
    functions: int
    max_object_traces: int
    internal: bool
    call_sites: tuple[CallSite, ...] = ()
    created_at: tuple[tuple[str, int], ...] = ()
    changes: tuple[ArgChange, ...] = ()
    retracing: Optional[str] = None
    fix: str = ""
    #: traces not counted against ``max_traces``: a new model per trial, a case of a loop over a handful
    #: (a dtype or shape per iteration, :mod:`graphguard.runtime.bounded`), a Python bool's other value
    excused: int = 0
    #: the most ``tf.function`` objects of this (Keras) code made for one model: one per ``compile()``
    recompiled: int = 0
    #: a method (``@tf.function`` on a method: one object per instance, as it must be)
    method: bool = False

    @property
    def defined_at(self) -> str:
        """``file:line`` of the definition, relative to the current directory when below it."""
        if self.filename is None and self.created_at:
            return f"{self.created_at[0][0]} (made there)"  # a callable object or partial: no code of its own
        return where(self.filename, self.lineno)

    def to_dict(self) -> dict[str, Any]:
        """The fields as JSON-ready values (``call_sites`` and ``changes`` as lists of dicts)."""
        out = asdict(self)
        out["defined_at"] = self.defined_at
        out["created_at"] = [{"where": w, "functions": n} for w, n in self.created_at]
        out["changes"] = [dict(asdict(change), text=str(change)) for change in self.changes]
        return out

    def remade(self, max_traces: int) -> bool:
        """Whether the project's own function (not TensorFlow's or Keras') was traced more than
        ``max_traces`` times through more than ``max_traces`` new ``tf.function`` objects, without being
        called retracing (each object is called more often than it traces): a ``tf.function`` made per
        epoch, or a step function made per trial. Marked in the table, not failed."""
        return (not self.retracing and not self.internal and not self.method and self.functions > max_traces
                and self.traces - self.excused > max_traces)

    def summary(self) -> str:
        """One line: ``train.<locals>.step (train.py:12): 9 traces in 9 calls``, with the objects."""
        objects = f" through {self.functions} tf.function objects" if self.functions > 1 else ""
        # (more traces than calls: TensorFlow traces a function twice on a call that creates variables,
        # once to make them and once to use them; a fourth new user's trial asked why 9 traces in 8 calls)
        twice = " (a call that creates variables traces twice)" if self.traces > self.calls else ""
        return (f"{self.name} ({self.defined_at}): {self.traces} trace{'s' * (self.traces != 1)} "
                f"in {self.calls} call{'s' * (self.calls != 1)}{objects}{twice}")


def fix_for(changes: tuple[ArgChange, ...] | list[ArgChange], retracing: Optional[str]) -> str:
    """The advice for the changes that made a function retrace: one sentence per cause, one line each
    (``"\\n"`` between them), in the order of ``changes`` (the causes with the most values first: a
    sixteenth new user's trial read the advice for two shapes of a last batch before that for the
    decaying Python float that retraced every epoch)."""
    advice: dict[str, None] = {}
    values: dict[str, str] = {}  # number arguments: argument -> how to make it a tensor
    shapes: dict[str, int] = {}  # tensor arguments whose shape changed -> values seen
    if retracing == "recompiled" or any(c.kind == "recompiled" for c in changes):
        advice["compile the model once, before the loop (each compile() makes Keras build and trace its step "
               "function again); to change the learning rate, assign it: "
               "model.optimizer.learning_rate.assign(value)"] = None
    elif retracing == "new_function" or any(c.kind == "new_function" for c in changes):
        advice["create the tf.function once, outside the loop (decorate the function at module level or "
               "build it before the loop), and call that same object in the loop"] = None
    flags_only = all(c.kind == "value" and c.before.startswith("Python bool ") for c in changes)
    most = max((c.values for c in changes), default=0)
    for change in changes:
        arg = change.argument.split("[", 1)[0] or "x"
        if change.kind == "value" and change.before.startswith("Python bool ") and not flags_only:
            continue  # a flag's two values are two traces, not the retracing (docs/trace-guard.md)
        if change.kind == "value":
            # the number itself, inside its dict or list (``cfg['scale']``): tf.constant of the whole dict
            # raises (a twentieth new user's trial)
            arg = change.argument or arg
            # tf.constant of a Python int is an int32 tensor: in a function that multiplies it with floats,
            # the fix as written would raise (issue 40's second trial); say which dtype to give.
            made = (f"tf.constant({arg}, tf.float32) if the function computes in floats, else tf.constant({arg})"
                    if "Python int" in change.before or change.after.startswith("int ") else f"tf.constant({arg})")
            values.setdefault(arg, made)
            advice[_VALUES] = None  # one sentence for every number argument, written below
        elif change.kind == "shape":
            shapes[arg] = max(shapes.get(arg, 0), change.values)
            advice[_SHAPES] = None  # one sentence for every tensor argument whose shape changed
        elif change.kind == "dtype":
            advice[f"cast `{arg}` to one dtype before the call (tf.cast({arg}, tf.float32)), or give "
                   f"input_signature=[...] with that dtype"] = None
        elif change.kind == "object" and change.before.startswith("Python ") and change.after.startswith(
                ("tensor shape", "variable shape", "array shape")):
            # the fix applied to a function object that traced before it (a notebook's next cell)
            advice[f"`{arg}` is a tensor now (it was a Python number): the calls are fixed, but this tf.function "
                   f"object keeps the traces it made before; create it again (in a notebook, run the cell that "
                   f"defines it again) to start from one trace"] = None
        elif change.kind in ("object", "structure", "new_model"):
            advice[f"pass the same Python object as `{arg}` on every call, or tensors instead of new "
                   f"Python objects (tf.function traces once per distinct Python object or structure)"] = None
    if not advice:
        advice["give the function an input_signature=[...], and pass changing values as tensors "
               "(see https://www.tensorflow.org/guide/function#controlling_retracing)"] = None
    written = {_VALUES: lambda: _values_advice(values), _SHAPES: lambda: _shapes_advice(shapes, most)}
    return "\n".join(written[text]() if text in written else text for text in advice)


def _shapes_advice(shapes: dict[str, int], most: int) -> str:
    """One sentence for the tensor arguments whose shape changed; a handful of shapes, when another
    cause took more values, is said to be a few traces (a smaller last batch: one more)."""
    names = ", ".join(f"`{arg}`" for arg in shapes)
    few = max(shapes.values(), default=0)
    lead = ""
    if 0 < few <= 3 < most or 0 < few < most <= 3:
        lead = f"{names} took only {few} shape{'s' * (few != 1)} (a few traces, a smaller last batch?): "
    return (f"{lead}give input_signature=[tf.TensorSpec(shape=..., dtype=...)] with None for the dimension "
            f"of {names} that changes, or tf.function(..., reduce_retracing=True); or pad or bucket inputs to "
            f"a few fixed shapes")


_VALUES = "\0values"  # fix_for's place-holders for the number and shape arguments' sentences
_SHAPES = "\0shapes"


def _values_advice(values: dict[str, str]) -> str:
    """One sentence for the Python-number arguments that changed (a third new user's trial read the
    same clause once per argument)."""
    if len(values) == 1:
        ((arg, made),) = values.items()
        return (f"pass `{arg}` as a tensor ({made}) instead of a Python number, so one trace serves every "
                f"value; or give input_signature=[...] with a tf.TensorSpec for it")
    names = ", ".join(f"`{arg}`" for arg in values)
    return (f"pass {names} as tensors ({'; '.join(values.values())}) instead of Python numbers, so one trace "
            f"serves every value; or give input_signature=[...] with a tf.TensorSpec for each")


def retracing_message(fn: TracedFunction, call: CallSite, max_traces: int, traces: int, calls: int,
                      bounded: Optional[int] = None) -> str:
    """The text of a ``RetracingError`` / ``RetracingWarning``: what, where, how often, what changed, fix.

    ``traces`` and ``calls`` are those of the one ``tf.function`` object that retraced (for
    ``fn.retracing == "same_function"``); ``bounded``, the runs of the loops around the call when the
    source fixes them at a handful (:func:`graphguard.runtime.bounded.bounded_trips`), adds a note. The first line stands alone (``graphguard run`` prints only
    it above the report).
    """
    if fn.retracing == "new_function":
        how = (f"{fn.traces} traces in {fn.calls} calls through {fn.functions} tf.function objects made from "
               f"the same code (limit max_traces={max_traces})")
    elif fn.retracing == "recompiled":
        how = (f"{fn.recompiled} tf.function objects made for one Keras model, each traced anew "
               f"(limit max_traces={max_traces})")
    else:
        twice = "; a call that creates variables traces twice" if traces > calls else ""
        how = f"{traces} traces in {calls} calls of one tf.function object (limit max_traces={max_traces}{twice})"
    lines = [f"tf.function `{fn.name}` (defined at {fn.defined_at}) keeps retracing: {how}, called from {call}"]
    if call.text:
        lines.append(f"  {call}: {call.text}")
    for change in fn.changes:
        lines.append(f"  changed between traces: {change.counted(fn.traces)}")
    lines.append("  " + _WHY)
    lines.extend(f"  Fix: {text}" for text in fn.fix.splitlines())
    if bounded is not None:
        # (a nineteenth new user's trial: `graphguard check` hid a 10-iteration loop as short, and the
        # guard raised on its 10 traces)
        lines.append(f"  (Bounded: the loops around the call run {bounded} times in all, as the source says, and "
                     f"graphguard check leaves such loops out; a Python number per iteration is counted here "
                     f"however short the loop, since one tensor argument would serve every value.)")
    return "\n".join(lines)


def _fit(text: str, width: int) -> str:
    """``text``, or ``...`` and its last ``width - 3`` characters (the end of a name or path says most)."""
    return text if len(text) <= width else "..." + text[-(width - 3):]


@dataclass(frozen=True)
class TraceReport:
    """Every ``tf.function`` called while a :class:`~graphguard.runtime.trace.TraceGuard` was active.

    Attributes:
        max_traces: the guard's limit (traces per function before it is retracing).
        functions: one :class:`TracedFunction` per Python function, retracing ones first, then by
            traces.
        tf_warnings: TensorFlow's own "N out of the last M calls to F triggered tf.function
            retracing" messages logged while active (a cross-check: TensorFlow logs it only after
            5 retracing calls of the last 10, at most twice per function, and names no line).
        active: the guard was still active when the report was made.
    """

    max_traces: int
    functions: tuple[TracedFunction, ...] = ()
    tf_warnings: tuple[str, ...] = field(default=())
    active: bool = False

    @property
    def retracing(self) -> tuple[TracedFunction, ...]:
        """The functions that traced past ``max_traces`` (see :attr:`TracedFunction.retracing`)."""
        return tuple(fn for fn in self.functions if fn.retracing)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: ``{"max_traces", "retracing", "functions": [...], "tf_warnings": [...]}``."""
        return {
            "max_traces": self.max_traces,
            "retracing": len(self.retracing),
            "functions": [fn.to_dict() for fn in self.functions],
            "tf_warnings": list(self.tf_warnings),
        }

    def format(self, rows: int = 20) -> str:
        """A readable table, then each retracing function's lines and fix. The table has the retracing
        functions and the others with the most traces, ``rows`` in all at most (a program with hundreds
        of healthy ``tf.function`` s gets a line saying how many are left out)."""
        if not self.functions:
            return f"graphguard trace: no tf.function was called (max_traces={self.max_traces})"
        ranked = sorted(self.functions, key=lambda fn: (not fn.retracing, -fn.traces, fn.name))
        shown = [fn for fn in ranked if fn.retracing]
        shown += [fn for fn in ranked if not fn.retracing][:max(0, rows - len(shown))]
        left_out = len(self.functions) - len(shown)
        rows = [("function", "defined at", "traces", "calls", "objects", "")]
        for fn in shown:
            verdict = ("RETRACING" if fn.retracing == "same_function" else
                       "NEW OBJECTS" if fn.retracing == "new_function" else
                       "RECOMPILED" if fn.retracing == "recompiled" else
                       "remade (see below)" if fn.remade(self.max_traces) else "")
            rows.append((fn.name, fn.defined_at, str(fn.traces), str(fn.calls), str(fn.functions), verdict))
        rows = [(_fit(row[0], 40), _fit(row[1], 40), *row[2:]) for row in rows]
        widths = [max(len(row[i]) for row in rows) for i in range(5)]
        lines = [f"graphguard trace: {len(self.functions)} tf.function{'s' * (len(self.functions) != 1)}, "
                 f"{len(self.retracing)} retracing (max_traces={self.max_traces})"]
        for row in rows:
            lines.append(f"  {row[0]:<{widths[0]}}  {row[1]:<{widths[1]}}  {row[2]:>{widths[2]}}  "
                         f"{row[3]:>{widths[3]}}  {row[4]:>{widths[4]}}  {row[5]}".rstrip())
        for fn in shown:
            if not fn.retracing and fn.excused and fn.traces > self.max_traces:
                # (a twelfth new user's trial: 9 traces over a 9-case loop under max_traces=3 read "0
                # retracing" with no word of why)
                lines.append(f"  {fn.name.rsplit('.', 1)[-1]}: {fn.excused} of its {fn.traces} traces not counted against "
                             f"max_traces (each for a new trial's model, a case of a loop over at most 10, or a "
                             f"Python bool's other value)")
            elif fn.remade(self.max_traces):
                # (a twenty-fifth new user's trial: a tf.function made anew per epoch, 30 traces, read "0
                # retracing" with no word of why while check reported GG302)
                made = f" at {fn.created_at[0][0]}" if fn.created_at else ""
                lines.append(f"  {fn.name.rsplit('.', 1)[-1]}: {fn.functions} tf.function objects made{made}, each traced "
                             f"anew ({fn.traces} traces in {fn.calls} calls): not counted as retracing, as fewer than "
                             f"half of its calls traced (a step function made once per trial counts so too); if it is "
                             f"made per epoch or per call, make it once, outside that loop (GG302)")
        if any(fn.traces > fn.calls for fn in shown):
            # (a twenty-eighth new user's trial: Keras' "traces 3, calls 2" in the table looked impossible)
            lines.append("  (more traces than calls: TensorFlow traces a function twice on a call that creates variables)")
        if left_out:
            lines.append(f"  ... and {left_out} more tf.function{'s' * (left_out != 1)} with fewer traces, none "
                         f"retracing (TraceGuard.report().functions lists them all)")
        # TensorFlow's own warnings name the Python function (``<function f at 0x...>``): each goes under
        # its function's section; others (a function not shown) under their own heading (a new user's
        # trial: f's warnings were printed in h's section).
        tf_warnings = list(self.tf_warnings[:_SHOWN_TF_WARNINGS])
        for fn in self.retracing:
            lines.append(f"-- {fn.summary()} --")
            for site in fn.call_sites[:3]:
                code = _without_comment(site.text)  # (a ninth new user's trial: its comment sat before the count)
                lines.append(f"  called from {site}{': ' + code if code else ''} ({site.traces} trace{'s' * (site.traces != 1)})")
            for made, count in fn.created_at[:3] if fn.retracing == "new_function" else ():
                lines.append(f"  tf.function objects made at {made}: {count}")
            for change in fn.changes:
                lines.append(f"  changed: {change.counted(fn.traces)}")
            lines.extend(f"  fix: {text}" for text in fn.fix.splitlines())
            spelled = f"<function {fn.name.rsplit('.', 1)[-1]} at "
            for message in [m for m in tf_warnings if spelled in m]:
                lines.append(f"  TensorFlow's own warning: {message[:200]}")
                tf_warnings.remove(message)
        if tf_warnings:
            # (a seventeenth new user's trial: a clean guard listed "6 out of the last 6 calls" that counted
            # the calls of an earlier guard: TensorFlow keeps its counts per function, not per guard)
            lines.append("-- TensorFlow's own retracing warnings (its counts include calls before the guard) --")
            lines.extend(f"  {message[:200]}" for message in tf_warnings)
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.format()


def _without_comment(line: str) -> str:
    """``line`` (one source line) without its ``#`` comment, read as Python tokens so that a ``#`` in a
    string stays; the line as it is when it does not tokenize alone (part of a bracketed expression)."""
    if "#" not in line:
        return line
    import io
    import tokenize

    try:
        for token in tokenize.generate_tokens(io.StringIO(line).readline):
            if token.type == tokenize.COMMENT:
                return line[:token.start[1]].rstrip()
    except (tokenize.TokenError, SyntaxError):
        pass
    return line
