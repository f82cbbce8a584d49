"""The runtime guard's errors and warnings, and the text they share (why growth hurts, the fix).

Kept apart from :mod:`graphguard.runtime.guard` (the session wrapper and its modes) and
:mod:`graphguard.runtime.growth` (the accounting of new ops), which both raise them. The classes are
public as ``graphguard.GraphGrowthError`` and ``graphguard.runtime.RssGrowthError``,
``GraphGrowthWarning``, ``SlowdownWarning``. Imports nothing heavy.
"""

from __future__ import annotations

import warnings
from typing import Optional

from graphguard.runtime.fixes import BURST_FIX, BURST_WHY, SESSIONS_FIX, SESSIONS_WHY  # noqa: F401  (growth.py)
from graphguard.runtime.records import built_once
from graphguard.runtime.report import GuardReport, Growth, SourceLine, where

__all__ = ["GraphGrowthError", "GraphGrowthWarning", "RssGrowthError", "SlowdownWarning"]

WHY = (
    "Every op added inside the loop that calls sess.run is copied into the session again on the next "
    "run, so each step gets slower and memory keeps growing."
)
#: :data:`WHY` for growth from lines in no loop of their own (a notebook cell run again, a function
#: called per step from code the guard does not see): there is no "loop that calls sess.run" to name.
WHY_NO_LOOP = (
    "Every op added between session runs is copied into the session again on the next run; code that "
    "builds ops each time it runs (a notebook cell run again, a function called per step) keeps adding "
    "them, so each step gets slower and memory keeps growing."
)
#: What a finalized graph's refusal of an op built once means (:func:`graphguard.runtime.records.built_once`):
#: nothing grows; finalize mode, like ``MonitoredSession``, needs every op built before the first run.
BUILT_ONCE = (
    "The line is in no loop: it builds its ops once, after the graph was finalized, and a finalized graph "
    "refuses every op, as MonitoredSession's does. Nothing grows here."
)
BUILT_ONCE_FIX = (
    "Fix: build it before the graph is finalized (before GraphGuard(sess) is made; under graphguard run, "
    "above the session's first run), or guard in count mode (graphguard run's default; "
    "GraphGuard(sess, mode=\"count\")), which tolerates ops built once."
)
FIX = (
    "Fix: build the op once, before the loop, and reuse it in the loop; feed values that change per "
    "step through a tf.compat.v1.placeholder and feed_dict."
)

class GraphGrowthError(RuntimeError):
    """An op was added to a guarded graph after guarding started (or after the warm-up steps).

    A subclass of ``RuntimeError``, so code that caught TensorFlow's own
    ``RuntimeError("Graph is finalized and cannot be modified.")`` still catches it.

    Attributes (data, also spelled out in the message):
        op_type: TensorFlow op type (``Operation.type``), e.g. ``"Mean"``; in count mode the type of
            the first new op. ``None`` when the change was not an op (a collection or a function).
        filename: absolute path of the user source file that added it, or ``None`` if every frame
            was inside TensorFlow, Keras or graphguard.
        lineno: line number in ``filename`` (1-based), or ``None``.
        step: number of guarded ``run`` calls that had completed when the op was added.
        ops_added: count mode only: how many ops the graph grew by (``Graph.version`` delta);
            ``None`` in finalize mode, where the op was refused and nothing was added.
        growth: the :class:`~graphguard.runtime.report.Growth` of this event (``None`` if raised
            by the ``with``-block fallback).
        earlier: count mode: the earlier growth events held as one-offs until this one made the
            growth sustained (``min_growth_steps``), oldest first; their lines are in the message.
        report: the guard's full :class:`~graphguard.runtime.report.GuardReport` when it stopped.
        checkpoint: path prefix of the checkpoint saved before raising (``saver=`` and
            ``checkpoint_path=``), or ``None``.
    """

    # Shown in tracebacks as graphguard.GraphGrowthError, the name users import it by.
    __module__ = "graphguard"

    def __init__(
        self,
        message: str,
        *,
        op_type: Optional[str] = None,
        filename: Optional[str] = None,
        lineno: Optional[int] = None,
        step: int = 0,
        ops_added: Optional[int] = None,
        growth: Optional[Growth] = None,
        earlier: tuple[Growth, ...] = (),
    ) -> None:
        super().__init__(message)
        self.op_type = op_type
        self.filename = filename
        self.lineno = lineno
        self.step = step
        self.ops_added = ops_added
        self.growth = growth
        self.earlier = earlier
        self.report: Optional[GuardReport] = None
        self.checkpoint: Optional[str] = None


class RssGrowthError(RuntimeError):
    """The process RSS grew by more than ``max_rss_growth`` bytes since the warm-up steps.

    Attributes:
        step: guarded runs completed at the sample that crossed the limit.
        rss_bytes: RSS at that sample (bytes).
        rss_growth_bytes: growth since the baseline sample taken after warm-up (bytes).
        limit_bytes: the guard's ``max_rss_growth`` (bytes).
        report: the guard's :class:`~graphguard.runtime.report.GuardReport` when it stopped.
        checkpoint: path prefix of the checkpoint saved before raising, or ``None``.
    """

    __module__ = "graphguard.runtime"  # importable from there

    def __init__(self, message: str, *, step: int, rss_bytes: int, rss_growth_bytes: int, limit_bytes: int) -> None:
        super().__init__(message)
        self.step = step
        self.rss_bytes = rss_bytes
        self.rss_growth_bytes = rss_growth_bytes
        self.limit_bytes = limit_bytes
        self.report: Optional[GuardReport] = None
        self.checkpoint: Optional[str] = None


class GraphGrowthWarning(RuntimeWarning):
    """``on_growth="warn"``: ops were added after warm-up; the run goes on. Once per creating line."""

    __module__ = "graphguard.runtime"  # importable from there


class SlowdownWarning(RuntimeWarning):
    """Step time rose and stayed up: the median of the latest 20 steps is ``slowdown_factor`` times
    (default 3x) the median of the 20 steps just after warm-up, and at least 1 ms more. Issued again
    at each further factor (9x, 27x). The message gives both medians, their steps, the graph's
    growth and the RSS growth over the same span; it fires with or without graph growth (memory
    pressure and swapping slow steps too). Turn it into an error with
    ``warnings.simplefilter("error", graphguard.runtime.SlowdownWarning)``.
    """

    __module__ = "graphguard.runtime"  # importable from there



def fix_text(growths: tuple, in_loop: bool = True) -> str:
    """``Fix:`` and one line per creating line, with the linter's advice for what it builds. With
    ``in_loop=False`` (no loop stands around the creating lines: a notebook cell run again, a function
    called per step from code the guard does not see), "before the loop" is said to mean before the
    code that repeats (a seventeenth new user's trial read of a loop in a cell that had none)."""
    from graphguard.runtime.fixes import fix_lines

    lines = fix_lines((g for growth in growths for g in growth.groups), label="")
    if not in_loop:
        # Each rule's advice says "before the loop", which a cell already built before its loop reads as
        # done (a twentieth new user's trial: a fixed cell run again, told to do what it did)
        for loop, instead in ((" once before the loop", " once, outside the code that repeats,"),
                              (" before the loop", " outside the code that repeats"),
                              (" in the loop", " in the code that repeats")):
            lines = lines.replace(loop, instead)
        lines += ("\n  (no loop stands around these lines: what repeats is the cell run again or the code "
                  "that calls them; build the ops once, in the cell or function that makes the session, and "
                  "run them from the repeated code)")
    return "Fix:\n" + lines


def warn_at(message: str, category: type, filename: Optional[str], lineno: Optional[int]) -> None:
    """A warning shown at the user's ``file:line`` (not at graphguard's own frame). Python's ``warnings``
    prints that line's source after the message: a message of several lines ends by saying so, or the
    source would read as the last line of its fix (a fifth new user's trial)."""
    if "\n" in message and filename and lineno:
        message = message.rstrip("\n") + f"\n(warned at {where(filename, lineno)}, the line below)"
    warnings.warn_explicit(message, category, filename or "<graphguard>", lineno or 0)



def finalized_error(
    op_type: Optional[str], what: str, line: SourceLine, step: int, finalized_by: str, growth: Optional[Growth]
) -> GraphGrowthError:
    text = f"  {where(line.filename, line.lineno)}"
    if line.text:
        text += f": {line.text}"
    once = growth is not None and bool(growth.groups) and built_once(growth.groups)
    message = (
        f"tried to {what} at step {step} ({step} guarded run{'s' if step != 1 else ''} done), at {line}\n"
        f"{text}\n"
        f"The graph was finalized {finalized_by}, so nothing was added. {BUILT_ONCE if once else WHY}\n"
        f"{BUILT_ONCE_FIX if once else fix_text((growth,)) if growth is not None and growth.groups else FIX}"
    )
    return GraphGrowthError(
        message, op_type=op_type, filename=line.filename, lineno=line.lineno, step=step, growth=growth
    )


