"""What the runtime guard measured, as data: :class:`GuardReport` and the records it is made of.

Every record is a frozen dataclass whose ``str()`` is the line graphguard prints, so a program can read
the fields and a person can read the text. Units are in the field docs: steps are guarded ``run``
calls, times are seconds (``time.perf_counter``), memory is bytes (psutil ``memory_info().rss``).

This module imports nothing heavy: no TensorFlow, no psutil.
"""

from __future__ import annotations

import re

from dataclasses import dataclass
from typing import Any, Optional

from graphguard.runtime.records import (  # noqa: F401  (importable from here, as before)
    OpGroup,
    SourceLine,
    StepSample,
    built_once,
    loop_runs,
    _plural,
    bytes_text,
    seconds_text,
    where,
)

__all__ = ["GuardReport", "GuardStats", "Growth", "OpGroup", "Slowdown", "SourceLine", "StepSample", "StepSeconds"]


@dataclass(frozen=True)
class Growth:
    """One growth pattern: the same ops added by the same lines, at one step or at several.

    A loop that builds ops every iteration gives one ``Growth`` whose ``steps`` keeps counting; a
    different set of lines or op counts gives another. In finalize mode a refused change is a
    ``Growth`` with ``refused`` set and ``ops_per_step == 0`` (nothing was added).

    Attributes:
        first_step: guarded runs completed when this pattern was first seen (the leak sits in the
            loop iteration after that run).
        last_step: the same, when it was last seen.
        steps: how many steps added exactly this (``1`` for a one-off).
        ops_per_step: ops added per such step (``Graph.version`` delta).
        groups: the ops per creating user line, in creation order.
        refused: finalize mode: what TensorFlow was asked to do (``"add a new 'Mean' op"``);
            ``None`` in count mode.
        kind: ``"step"`` (ops added between guarded runs, the default), ``"session"`` (ops built into
            one graph for each new session on it: the lines built ops for ``steps`` sessions, the
            latest being session ``session`` on that graph; ``ops_per_step`` is the ops it added
            for that session), or ``"burst"`` (one step added more than ``max_burst_ops`` ops and
            more than ``max_burst_ratio`` times the ops the graph had when guarding started), or
            ``"cases"`` (a held one-off from a loop over a handful of cases the line reads, each op a
            different one: :mod:`graphguard.runtime.bounded`).
        session: ``kind="session"``: the number of the session on its graph (2 for the second
            session guarded on that graph) when growth was confirmed; ``0`` otherwise.
        min_gap, max_gap: ``kind="step"``: the fewest and the most steps between two consecutive
            steps of this pattern (``1``: on consecutive steps; ``30``: a Saver built every 30th
            step); ``0`` when unknown (one step, or a record made by hand). The text says
            ``ops/step`` when the pattern came on most steps (on average less than 1.5 steps
            apart: a training loop whose evaluation runs do not build ops), else ``every 30
            steps`` (``every 10-26 steps`` when the gaps vary).
    """

    first_step: int
    last_step: int
    steps: int
    ops_per_step: int
    groups: tuple[OpGroup, ...]
    refused: Optional[str] = None
    kind: str = "step"
    session: int = 0
    min_gap: int = 0
    max_gap: int = 0

    @property
    def ops(self) -> int:
        """Ops this pattern added in all (``ops_per_step * steps``)."""
        return self.ops_per_step * self.steps

    @property
    def every(self) -> Optional[str]:
        """How often a pattern of several steps came, in words: ``"30 session runs"`` (regular gaps),
        ``"10-26 session runs"`` (gaps that vary), ``None`` when it came on most steps (``ops/step``), for a
        single step, and for refusals, sessions and bursts. From ``first_step``, ``last_step``,
        ``steps``, ``min_gap`` and ``max_gap``."""
        if self.kind != "step" or self.refused is not None or self.steps < 2:
            return None
        mean = (self.last_step - self.first_step) / (self.steps - 1)
        if mean < 1.5:
            return None
        # "session runs", not "steps": a loop iteration that makes two runs (train, then evaluate) and
        # builds an op once is "every 2 session runs", which "every 2 steps" made read as every other
        # iteration (a new user's trial).
        if not self.min_gap:  # gaps not recorded: the mean is all there is
            return f"{round(mean)} session runs"
        if self.min_gap == self.max_gap:
            return f"{self.min_gap} session runs"
        return f"{self.min_gap}-{self.max_gap} session runs"

    def rate(self) -> str:
        """The pattern's size and cadence without its lines: ``+12 ops every 30 session runs``, ``+70 ops/step``,
        ``+4 ops at step 3``, ``+25420 ops in one burst at step 3``, ``refused at step 1``."""
        if self.refused is not None:
            return f"refused at step {self.first_step}"
        if self.kind == "session":
            return f"+{_ops(self.ops_per_step)} for session {self.session} on one graph"
        if self.kind == "burst":
            return f"+{_ops(self.ops_per_step)} in one burst at step {self.first_step}"
        if self.steps == 1:
            return f"+{_ops(self.ops_per_step)} at step {self.first_step}"
        every = self.every
        if every and self.steps == 2:
            # one gap is no cadence (a sixth new user's trial: "every 3 session runs" from two events of
            # a loop that makes 2 runs an iteration and a third every 10th)
            return (f"+{_ops(self.ops_per_step)} at steps {self.first_step} and {self.last_step} "
                    f"({self.last_step - self.first_step} session runs apart)")
        return f"+{_ops(self.ops_per_step)} every {every}" if every else f"+{_ops(self.ops_per_step)}/step"

    def __str__(self) -> str:
        return self._text("; ".join(str(g) for g in self.groups))

    def short(self, groups: int = 3) -> str:
        """``str()`` with the op groups of the first ``groups`` creating lines only, then how many more
        lines there are (listed below it, one per line, in messages and reports): a new user's fourth
        trial read growth lines of over 1,000 characters."""
        if len(self.groups) <= groups + 1:
            return str(self)
        more = len(self.groups) - groups
        return self._text("; ".join(str(g) for g in self.groups[:groups]) + f"; and {more} more lines (all {len(self.groups)} listed below)")

    def _text(self, groups: str) -> str:
        if self.refused is not None:
            return f"refused at step {self.first_step} (graph finalized, nothing added): {groups}"
        if self.kind == "session":
            return (
                f"+{_ops(self.ops_per_step)} for session {self.session} on this graph, from lines that built ops "
                f"for {self.steps} session{'s' if self.steps != 1 else ''} on it after the first: {groups}"
            )
        if self.kind == "burst" or self.steps == 1 or (self.steps == 2 and self.every):
            return f"{self.rate()}: {groups}"
        if self.every:
            return (f"{self.rate()} since step {self.first_step} ({self.steps} times, to step {self.last_step}): "
                    f"{groups}")
        return f"{self.rate()} since step {self.first_step} ({self.steps} steps to step {self.last_step}): {groups}"

    def source_lines(self) -> str:
        """One indented ``file:line: source`` line per distinct creating line."""
        seen: dict[tuple, SourceLine] = {}
        for group in self.groups:
            for line in group.lines:
                seen.setdefault((line.filename, line.lineno), line)
        return "\n".join(
            f"  {where(s.filename, s.lineno)}" + (f": {s.text}" if s.text else "") for s in seen.values()
        )


def line_keys(growths) -> frozenset:
    """The ``(filename, lineno)`` pairs of the creating lines of ``growths`` (growth events or patterns);
    empty for none."""
    return frozenset((line.filename, line.lineno) for growth in growths for group in growth.groups
                     for line in group.lines)


@dataclass(frozen=True)
class Slowdown:
    """A sustained step-time increase (reported as a :class:`~graphguard.runtime.SlowdownWarning`).

    Attributes:
        step: guarded runs completed when it was detected.
        baseline_seconds: median step time of ``baseline_steps``, the window just after warm-up (s).
        baseline_steps: (first, last) step of that window, inclusive.
        recent_seconds: median step time of ``recent_steps``, the latest window (s).
        recent_steps: (first, last) step of that window, inclusive.
        ratio: ``recent_seconds / baseline_seconds``.
        ops_added: ops the graph gained between the end of the baseline window and ``step``.
        rss_growth_bytes: RSS change over the same span (bytes); ``None`` without psutil.
        fetch: in a loop that alternates fetches (training and evaluation runs), the fetch that slowed
            (its label, as in the picture), judged on its own sampled runs; ``None``: every run.
        filename, lineno: the user line that runs ``fetch`` (``None`` for every run).
        runs: the sampled runs of ``fetch`` in each median (``None``: every run of the window).
    """

    step: int
    baseline_seconds: float
    baseline_steps: tuple[int, int]
    recent_seconds: float
    recent_steps: tuple[int, int]
    ratio: float
    ops_added: int
    rss_growth_bytes: Optional[int]
    fetch: Optional[str] = None
    filename: Optional[str] = None
    lineno: Optional[int] = None
    runs: Optional[int] = None

    def __str__(self) -> str:
        if self.fetch is None:
            text = f"step time {seconds_text(self.recent_seconds)} (median of steps {self.recent_steps[0]}-{self.recent_steps[1]}) "
        else:
            text = (f"step time of {self.fetch} runs at {where(self.filename, self.lineno)}: "
                    f"{seconds_text(self.recent_seconds)} (median of {self.runs} sampled in steps "
                    f"{self.recent_steps[0]}-{self.recent_steps[1]}) ")
        text += (
            f"is {self.ratio:.1f}x the {seconds_text(self.baseline_seconds)} median of steps "
            f"{self.baseline_steps[0]}-{self.baseline_steps[1]} (just after warm-up); "
        )
        if self.ops_added:
            text += f"the graph grew by {self.ops_added} ops since then"
        else:
            text += "the graph did not grow"
        if self.rss_growth_bytes is not None:
            text += f", RSS {'+' if self.rss_growth_bytes >= 0 else ''}{bytes_text(self.rss_growth_bytes)}"
        return text


@dataclass(frozen=True)
class StepSeconds:
    """Wall time of guarded ``run`` calls, in seconds (``time.perf_counter`` around ``Session.run``).

    ``median`` is over the most recent steps (at most 1000), so a loop that slows down shows it.
    """

    first: float
    median: float
    last: float


@dataclass(frozen=True)
class GuardStats:
    """A snapshot of the guard's counters.

    Attributes:
        steps: guarded ``run`` calls completed (from every thread).
        ops: ops in the graph (``Graph.version``) now, or when the guard was released.
        ops_added_per_step: ops added since guarding started divided by ``steps`` (ops per step;
            0.0 before the first step). A healthy loop reports 0.0 (or a small figure from warm-up).
        step_seconds: first / median / last step wall time in seconds, ``None`` before the first step.
        rss_bytes: resident set size of this process at the last sample, in bytes (psutil
            ``memory_info().rss``); ``None`` without psutil or before the first step.
        rss_growth_bytes: last RSS sample minus the baseline sample taken when the warm-up steps
            were done, in bytes; ``None`` like ``rss_bytes``.
        rss_bytes_per_step: ``rss_growth_bytes`` divided by the steps between the two samples
            (bytes per step); ``None`` until two samples at different steps exist.
    """

    steps: int
    ops: int
    ops_added_per_step: float
    step_seconds: Optional[StepSeconds]
    rss_bytes: Optional[int]
    rss_growth_bytes: Optional[int]
    rss_bytes_per_step: Optional[float] = None

    def __str__(self) -> str:
        parts = [
            f"{_plural(self.steps, 'guarded step')}; graph has {_plural(self.ops, 'op')} "
            f"({self.ops_added_per_step:.2f} ops per step added since guarding started)"
        ]
        if self.step_seconds is not None:
            s = self.step_seconds
            parts.append(
                f"step time first {seconds_text(s.first)}, median {seconds_text(s.median)}, last {seconds_text(s.last)}"
            )
        if self.rss_bytes is not None:
            growth = self.rss_growth_bytes or 0
            rss = f"RSS {bytes_text(self.rss_bytes)} ({'+' if growth >= 0 else ''}{bytes_text(growth)} since warm-up"
            if self.rss_bytes_per_step is not None:
                rss += f", {'+' if self.rss_bytes_per_step >= 0 else ''}{bytes_text(self.rss_bytes_per_step)} per step"
            parts.append(rss + ")")
        else:
            parts.append("RSS not measured (psutil missing or no step yet)")
        return "; ".join(parts) + "."


def _plain(value: Any) -> Any:
    """``value`` with its sets made sorted lists and its tuples lists, for JSON."""
    if isinstance(value, dict):
        return {key: _plain(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(item) for item in value]
    if isinstance(value, (set, frozenset)):
        return sorted((_plain(item) for item in value), key=repr)
    return value


@dataclass(frozen=True)
class GuardReport:
    """Everything a guard found: growth, slowdowns, memory, and whether it stopped the run.

    Returned by ``GraphGuard.report()`` and ``GraphGuardHook.report()``, passed to an
    ``on_growth`` callable, and attached to :class:`~graphguard.GraphGrowthError` as ``.report``.

    Attributes:
        mode: ``"finalize"`` or ``"count"``.
        warmup_steps: the guard's ``warmup_steps``.
        stats: counters (:class:`GuardStats`).
        growth: growth patterns in order of first appearance (:class:`Growth`); empty for a healthy loop.
        warmup_ops: ops added before ``warmup_steps`` runs had completed (tolerated, count mode).
        tolerated_ops: ops added after warm-up in steps that added at most
            ``max_new_ops_per_step`` ops (tolerated, not in ``growth``).
        slowdowns: sustained step-time increases, in order (:class:`Slowdown`).
        stopped: how the guard stopped the run, e.g. ``"GraphGrowthError at step 2"``, or ``None``.
        checkpoint: path prefix of the checkpoint saved when the guard stopped the run, or ``None``.
        other_growth_ops: ops from growth patterns beyond the first 50 distinct ones (not itemized).
        one_off: count mode: growth events after warm-up that were tolerated because growth was not
            sustained: their creating lines added ops on fewer than ``min_growth_steps`` distinct steps (ops built once after
            the training loop, a Saver made once at the end). Not in ``growth``, not ``grew``. When
            growth comes again on enough steps, these events move into ``growth``.
        min_growth_steps: the guard's ``min_growth_steps`` (steps; 1 in finalize mode).
        series: step time, ops and RSS over the run (:class:`StepSample`, in step order; at most
            2,048 points: when more are taken, every other point without an RSS sample is dropped,
            the first point and the RSS samples kept), what :meth:`plot` draws.
    """

    mode: str
    warmup_steps: int
    stats: GuardStats
    growth: tuple[Growth, ...]
    warmup_ops: int
    tolerated_ops: int
    slowdowns: tuple[Slowdown, ...]
    stopped: Optional[str] = None
    checkpoint: Optional[str] = None
    other_growth_ops: int = 0
    one_off: tuple[Growth, ...] = ()
    min_growth_steps: int = 1
    series: tuple[StepSample, ...] = ()

    def _ran_on(self) -> bool:
        """Whether the session ran more steps after the guard stopped it (``stopped``'s step)."""
        stop = re.search(r"at step (\d+)", self.stopped or "")
        return stop is not None and self.stats.steps > int(stop[1])

    def _unconfirmed(self, event: Growth) -> bool:
        """Whether a held one-off may be growth the stop cut short: the run was stopped and did not go on
        (the lines had no steps to add ops again), or went on for fewer than ``min_growth_steps`` steps
        after it. (A session used on after the stop, a notebook's next cell, had the steps to tell.)"""
        if self.stopped is None:
            return False
        return not self._ran_on() or self.stats.steps < event.last_step + self.min_growth_steps

    def plot(self, path: str) -> str:
        """Draw step time (ms), graph ops and RSS (MiB) against step into the PNG file ``path``, each
        growth pattern marked at its first step with its first source line; returns ``path``.

        Needs matplotlib (``pip install -e '.[plot]'`` in a clone of graphguard), imported here, with its Agg backend (no
        display). Raises :class:`graphguard.plot.PlotUnavailable` without it, ``ValueError`` when the
        guard measured no step (a finalize-mode guard that stopped the first run before it completed)
        or ``path`` is not a ``.png`` name, ``OSError`` when ``path`` cannot be written."""
        from graphguard.plot import plot_guard_report

        return plot_guard_report(self, path)

    @property
    def grew(self) -> bool:
        """True if the guard saw (or refused) graph growth after warm-up."""
        return bool(self.growth) or self.other_growth_ops > 0

    def as_dict(self) -> dict:
        """The report as plain data (dicts, lists, numbers, strings, None), as
        :meth:`graphguard.SweepReport.as_dict` gives a sweep's: every attribute above, seconds and bytes
        as measured, and ``grew``. ``json.dumps`` takes it as it is."""
        from dataclasses import asdict

        data = _plain(asdict(self))
        data["grew"] = self.grew
        return data

    def __str__(self) -> str:
        from graphguard.runtime.fixes import fix_lines

        # Finalize mode finalizes the graph at once: its warm-up runs only set the step-time and RSS
        # baselines, so they are not printed as if ops were tolerated during them.
        warmup = f" ({_plural(self.warmup_steps, 'warm-up step')})" if self.mode == "count" else ""
        lines = [
            f"graphguard: {_plural(self.stats.steps, 'guarded step')} in {self.mode} mode{warmup}; "
            f"graph has {_plural(self.stats.ops, 'op')}"
        ]
        if self.growth:
            for growth in self.growth:
                once = growth.refused is not None and built_once(growth.groups)
                # (a fourteenth new user's trial: "growth: refused ..." for what the next line calls built once)
                lines.append(f"{'built once' if once else 'growth'}: {growth.short()}")
                lines.append(growth.source_lines())
                if once:
                    # (a twelfth new user's trial: a Saver that --fix had moved after `sess.run(init)` read
                    # "build one Saver before the loop"; it was before the loop)
                    lines.append("  built once, in no loop, after the graph was finalized: build it before, or guard "
                                 "in count mode (graphguard run's default), which tolerates ops built once")
                elif growth.kind != "session":
                    # (lines that build a model per session belong together, in a graph per trial: "build
                    # it once before the loop" per line contradicts that fix; a third new user's trial)
                    lines.append(fix_lines(growth.groups))
                if growth.kind in ("session", "burst"):
                    from graphguard.runtime.fixes import BURST_FIX, SESSIONS_FIX

                    lines.append("  " + (SESSIONS_FIX if growth.kind == "session" else BURST_FIX))
            if self.other_growth_ops:
                lines.append(f"growth: +{self.other_growth_ops} more ops in other patterns (not itemized)")
        else:
            tolerated = self.warmup_ops + self.tolerated_ops
            # A run that ended within its warm-up (a script that failed, or exited, after a few steps) saw
            # no step after it: no growth was *seen*, which is no verdict (a new user's trial).
            early = self.mode == "count" and self.stats.steps <= self.warmup_steps
            unconfirmed = any(self._unconfirmed(event) for event in self.one_off)
            lines.append(
                ("no growth confirmed before the run was stopped" if unconfirmed
                 else f"no growth seen: the run ended within its {_plural(self.warmup_steps, 'warm-up step')}"
                 if early
                 else "no sustained graph growth after warm-up" if self.one_off
                 else "no graph growth (finalize mode: no op was added)" if self.mode == "finalize"
                 else "no graph growth after warm-up")
                + (f" ({tolerated} op{'s' * (tolerated != 1)} built during warm-up or within max_new_ops_per_step)" if tolerated else "")
            )
        # Bounded growth is one line per set of lines, its events' steps listed (held events of the same
        # lines, the first one-off among them, join it): not one paragraph per event.
        bounded_lines: dict = {}
        for event in self.one_off:
            if event.kind == "bounded":
                bounded_lines.setdefault(line_keys((event,)), []).append(event)
        for event in self.one_off:
            if event.kind != "bounded" and line_keys((event,)) in bounded_lines:
                bounded_lines[line_keys((event,))].insert(0, event)
        said: set = set()
        for event in self.one_off:
            keys = line_keys((event,))
            if keys in bounded_lines:
                if keys in said:
                    continue
                said.add(keys)
                events = sorted(bounded_lines[keys], key=lambda e: e.first_step)
                runs = loop_runs(event.groups)
                steps = ", ".join(str(e.first_step) for e in events)
                first = events[0]
                what = "; ".join(str(g) for g in first.groups)
                lines.append(f"bounded growth (tolerated: the loops around its lines run {runs or 'a few'} times in all, "
                             f"as the source says, and graphguard check leaves such loops out too; "
                             f"max_bounded_iterations=0 acts on it): +{_ops(first.ops_per_step)} at "
                             f"step{'s' * (len(events) > 1)} {steps}: {what}")
                lines.append(first.source_lines())
                continue
            if self._unconfirmed(event):
                # The run ended before these lines could add ops again: not known to be one-offs. (A
                # session that ran on after the stop, a notebook's next cell, had the steps to say so.)
                lines.append(f"ops added after warm-up (the run was stopped before min_growth_steps="
                             f"{self.min_growth_steps} steps could confirm growth): {event}")
                lines.append(event.source_lines())
                # (an op built once on first use, ``if self._best is None:``, looks the same here; a new
                # user's trial "fixed" such correct code from an unconditional fix line)
                lines.append("  if these lines build ops on every step (not once, on first use), then:")
                lines.append(fix_lines(event.groups))
            elif event.kind == "cases":  # (a tenth new user's trial: a bounded case read "fewer than 2 steps")
                lines.append(f"bounded case (tolerated: a loop over a handful of cases that the line reads, each op a "
                             f"different one, as graphguard check leaves it out): {event}")
            else:
                lines.append(f"one-off (tolerated: its lines added ops on fewer than min_growth_steps="
                             f"{self.min_growth_steps} steps): {event}")
                lines.append(event.source_lines())
        lines.extend(f"slowdown: {s}" for s in self.slowdowns)
        stats = self.stats
        if stats.step_seconds is not None:
            s = stats.step_seconds
            lines.append(
                f"step time: first {seconds_text(s.first)}, median {seconds_text(s.median)}, last {seconds_text(s.last)}"
            )
        if stats.rss_bytes is not None:
            rss = f"RSS: {bytes_text(stats.rss_bytes)}"
            if stats.rss_growth_bytes is not None:
                since = "since warm-up" if self.mode == "count" else "since the first runs"  # finalize: no warm-up
                rss += f", {'+' if stats.rss_growth_bytes >= 0 else ''}{bytes_text(stats.rss_growth_bytes)} {since}"
            if stats.rss_bytes_per_step is not None:
                rss += f" ({'+' if stats.rss_bytes_per_step >= 0 else ''}{bytes_text(stats.rss_bytes_per_step)} per step)"
            lines.append(rss)
        if self.stopped is not None:
            # (a notebook's next cell, or a caught error, used the session on: say so, or "stopped at step
            # 3" contradicts "13 guarded steps" above; a second new user's trial)
            ran_on = self._ran_on()
            lines.append(f"stopped by {self.stopped}" + (f"; the session ran on to step {self.stats.steps}" if ran_on else ""))
        if self.checkpoint is not None:
            lines.append(f"checkpoint saved before stopping: {self.checkpoint}")
        return "\n".join(lines)


def _ops(count: int) -> str:
    """``1 op``, ``4 ops``."""
    return f"{count} op" if count == 1 else f"{count} ops"
