"""The records the runtime guard's reports are made of, and how they print: where a line is
(``where``), times and sizes as text, a step's sample, a source line, a group of ops built by one line.
Below :mod:`graphguard.runtime.report` and :mod:`graphguard.runtime.fixes`;
imports nothing of graphguard but the notebook's cell labels and :mod:`graphguard.runtime.bounded`
(which reads only the standard library).
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass, field
from typing import Optional

from graphguard.runtime.bounded import in_a_loop


def where(filename: Optional[str], lineno: Optional[int]) -> str:
    """``file:line``, the file relative to the current directory when it is below it; in IPython or a
    Jupyter kernel, a cell's code as IPython's tracebacks name it: ``cell In[3], line 4``."""
    if filename is None:
        return "<no user frame: created inside TensorFlow>"
    if "IPython.core.getipython" in sys.modules:  # only where IPython runs: scripts pay nothing
        from graphguard.runtime.notebook import cell_label

        label = cell_label(filename, lineno)
        if label is not None:
            return label
    shown = filename
    try:
        rel = os.path.relpath(filename)
        if not rel.startswith(os.pardir):
            shown = rel
    except ValueError:  # another drive on Windows
        pass
    return f"{shown}:{lineno}"


def seconds_text(seconds: float) -> str:
    """``12.3 ms``: three significant digits, in milliseconds."""
    return f"{seconds * 1e3:.3g} ms"


def bytes_text(nbytes: float) -> str:
    """``1.5 MiB``, ``180.0 KiB``, ``512 B``, with the sign kept for negative values."""
    sign, size = ("-" if nbytes < 0 else ""), abs(nbytes)
    for unit, scale in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if size >= scale:
            return f"{sign}{size / scale:.1f} {unit}"
    return f"{sign}{size:.0f} B"


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


@dataclass(frozen=True)
class StepSample:
    """One point of a guard's measurements over the run, taken when it does its periodic work (every
    10th step at most, and at the steps around warm-up): ``step`` (guarded runs completed),
    ``seconds`` (that step's wall time), ``ops`` (``Graph.version`` after it), ``rss_bytes`` (an RSS
    sample taken at that step, psutil ``memory_info().rss``; ``None`` when none was) and ``fetch``
    (what that run fetched, as :func:`graphguard.runtime.measures.fetch_label` names it:
    ``"GradientDescent"``, ``"Mean, Reshape"``; ``None`` when unknown). A loop that alternates
    training and evaluation runs has points of both: the picture draws one line per fetch."""

    step: int
    seconds: float
    ops: int
    rss_bytes: Optional[int] = None
    fetch: Optional[str] = None


@dataclass(frozen=True)
class SourceLine:
    """A user source line that built (or tried to build) ops.

    Attributes:
        filename: absolute path of the user's file; ``None`` when every frame of the op's
            ``Operation.traceback`` was inside TensorFlow, Keras or graphguard.
        lineno: 1-based line number in ``filename``, or ``None``.
        text: the line's source, stripped (``""`` when unavailable, e.g. ``<stdin>``).
        call: the TensorFlow call on that line that built the ops, as written there
            (``"tf.train.Saver"``, ``"tf.reduce_mean"``, ``"tf.train.AdamOptimizer().minimize"``);
            ``None`` for operators (``x * w``) or when the line could not be matched.
    """

    filename: Optional[str]
    lineno: Optional[int]
    text: str = ""
    call: Optional[str] = None

    def __str__(self) -> str:
        return where(self.filename, self.lineno) + (f" ({self.call})" if self.call else "")


@dataclass(frozen=True)
class OpGroup:
    """The ops one user line added in one step, by op type.

    Attributes:
        op_types: ``(Operation.type, ops)`` pairs in creation order, e.g. ``(("Const", 12), ("Mean", 1))``;
            empty for a refused change that is not an op (a collection, a library function).
        lines: the creating line; several only when a burst of more than 200 new ops was
            sampled (first, middle and last op of each type) and the samples disagree.
        callers: ``(creating line, call path)`` pairs, both as ``(filename, lineno)``: the call path
            is the user frames outside the creating line, innermost first (``()``: module level, or
            unknown). Growth is counted per line *and* path (``min_growth_steps``): a helper
            called once for validation and once for test after training is two one-offs, the same
            helper called from a loop is growth. Not part of the group's identity.
    """

    op_types: tuple[tuple[str, int], ...]
    lines: tuple[SourceLine, ...]
    callers: frozenset = field(default=frozenset(), compare=False, repr=False)

    @property
    def ops(self) -> int:
        """Ops in the group."""
        return sum(n for _, n in self.op_types)

    def __str__(self) -> str:
        types = ", ".join(f"{n} x {t}" if n > 1 else t for t, n in self.op_types)
        places = " and ".join(str(line) for line in self.lines) + self.called_from()
        return f"{types} at {places}" if types else f"at {places}"

    def called_from(self) -> str:
        """``", called from train.py:21"``: the user's line that called the creating line's function
        from another file (a helper module has no loop; the call in the loop is the line to change: a
        new user's trial), or ``""`` when the creating line's own file called it, or no user line called
        it directly (pytest's runner, a framework's loop came between). From the same file too when the
        creating lines stand in no loop of their own (a helper above the test that calls it per step:
        issue 40's second trial), read from the source (:func:`graphguard.runtime.bounded.in_a_loop`)."""
        files = {line.filename for line in self.lines}
        if self.callers and not in_a_loop([(line.filename, line.lineno) for line in self.lines]):
            files = set()
        here = {(line.filename, line.lineno) for line in self.lines}  # a comprehension's own frame
        outer = sorted({path[0] for _, path in self.callers
                        if path and path[0] is not None and path[0][0] not in files and tuple(path[0]) not in here},
                       key=lambda pair: (str(pair[0]), pair[1] or 0))
        if not outer:
            return ""
        more = f" and {len(outer) - 1} more" if len(outer) > 1 else ""
        return f", called from {where(*outer[0])}{more}"


def call_paths(groups: "tuple[OpGroup, ...] | list[OpGroup]") -> set:
    """The ``(creating line, call path)`` pairs of ``groups`` (:attr:`OpGroup.callers`), or each creating
    line with an empty path when none were recorded."""
    return {pair for group in groups for pair in group.callers} or {
        ((line.filename, line.lineno), ()) for group in groups for line in group.lines}


def built_once(groups: "tuple[OpGroup, ...] | list[OpGroup]") -> bool:
    """Whether the ops of ``groups`` were built by code that runs once: every creating line, and every
    user line on its call path, stands in no loop of its function, in a ``.py`` file on disk (a notebook
    cell may be run again; a path with frames that are not the user's may come from a framework's loop).

    A finalized graph refuses such an op as it refuses growth (``tf.train.Saver()`` made after the
    session's first run, as ``--fix`` places it after ``sess.run(init)``): the report then says it was
    built once, and what finalize mode needs, instead of "build it once before the loop" (a twelfth new
    user's trial)."""
    paths = call_paths(groups)
    if not paths:
        return False
    for key, path in paths:
        located = [key, *path]
        while located and located[-1] is None:  # the runner's frames outside the outermost user line
            located.pop()
        if not located or any(place is None or not str(place[0] or "").endswith(".py") or not os.path.isfile(place[0])
                              for place in located):
            return False
        if in_a_loop(located):
            return False
    return True


def loop_runs(groups: "tuple[OpGroup, ...] | list[OpGroup]") -> Optional[int]:
    """How many times the loops around the creating lines of ``groups`` (and their call paths) run in
    all, when the source fixes it for every line (the largest), else None: the count a bounded growth
    event's report line names."""
    from graphguard.runtime.bounded import bounded_trips

    paths = call_paths(groups)
    counts = [bounded_trips((key, *path), bound=10**9, cases=False) for key, path in paths]
    return max(counts) if counts and None not in counts else None
