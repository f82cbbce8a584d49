"""Growth accounting: which new ops in a guarded graph are growth, and whose lines built them.

The session wrapper (:mod:`graphguard.runtime.guard`) and the hook (:mod:`graphguard.runtime.hook`)
notice *that* the graph changed; this module decides *what* the change is. New ops are sliced from
``Graph.operations`` (TensorFlow's own list, never copied whole), grouped by the user line that
built them (:func:`~graphguard.runtime.attribution.growth_groups`), and classified: ops built during
warm-up, a small step within ``max_new_ops_per_step``, a one-off held until its lines add ops again
(``min_growth_steps``), a burst too large to be a one-off (``max_burst_ops`` and ``max_burst_ratio``),
or sustained growth acted on through ``on_growth``. The lines that build ops for each new session on
one graph are counted across sessions (:mod:`graphguard.runtime.sessions`, ``min_growth_sessions``).

Nothing here imports TensorFlow.
"""

from __future__ import annotations

import re
from typing import Optional

from graphguard.runtime.attribution import first_location, growth_groups
from graphguard.runtime.bounded import BOUND, bounded_trips, in_a_loop
from graphguard.runtime.errors import (
    BURST_FIX,
    BURST_WHY,
    SESSIONS_FIX,
    SESSIONS_WHY,
    WHY,
    WHY_NO_LOOP,
    GraphGrowthError,
    GraphGrowthWarning,
    fix_text,
    warn_at,
)
from graphguard.runtime.report import Growth, OpGroup
from graphguard.runtime.records import call_paths
from graphguard.runtime.sessions import ledger_for

# Distinct growth patterns kept in the report; further ones are only counted.
_MAX_PATTERNS = 50
#: An IPython cell's file name, ``<ipython-input-7-0123456789ab>``: its run number, then a hash of its
#: code (``IPython.core.compilerop.code_name``).
_CELL_RUN = re.compile(r"<ipython-input-\d+-")


def _same_cell(key: tuple) -> tuple:
    """``key`` ((filename, lineno), call path) with IPython's run number taken out of every cell's file
    name: a cell run again with the same code is the same line. ipykernel names a cell's file by its
    code alone, so this is for IPython's own shell (a ninth new user's trial: a cell re-run three times,
    each adding ops, was three one-offs)."""
    line, path = key

    def plain(location):  # (filename, lineno), or None where frames not the user's came between
        if location is None or not isinstance(location[0], str) or "<ipython-input-" not in location[0]:
            return location
        return _CELL_RUN.sub("<ipython-input-", location[0]), *location[1:]

    return plain(line), tuple(plain(l) for l in path)


class Pattern:
    """A growth pattern being accumulated (frozen into a :class:`Growth` for the report)."""

    __slots__ = ("first_step", "last_step", "steps", "ops_per_step", "groups", "refused", "kind", "session",
                 "min_gap", "max_gap")

    def __init__(self, step: int, ops: int, groups: tuple[OpGroup, ...], refused: Optional[str],
                 kind: str = "step", session: int = 0) -> None:
        self.first_step = self.last_step = step
        self.steps = 1
        self.ops_per_step = ops
        self.groups = groups
        self.refused = refused
        self.kind = kind
        self.session = session
        self.min_gap = self.max_gap = 0  # steps between consecutive steps of the pattern (0: not yet known)

    def again(self, step: int) -> None:
        """The pattern came again at ``step``: count it and note the gap since its last step."""
        gap = step - self.last_step
        if gap > 0:
            self.min_gap = min(self.min_gap, gap) if self.min_gap else gap
            self.max_gap = max(self.max_gap, gap)
        self.last_step = max(self.last_step, step)
        self.steps += 1

    def freeze(self) -> Growth:
        return Growth(self.first_step, self.last_step, self.steps, self.ops_per_step, self.groups, self.refused,
                      self.kind, self.session, self.min_gap, self.max_gap)


Found = tuple  # (growth, earlier events, message, op_type, ops added)


class GrowthAccounting:
    """The growth half of the guard's monitor (``_Monitor`` in :mod:`graphguard.runtime.guard` adds
    step counting, step time, RSS and stopping). Uses the monitor's ``_lock``, ``_graph``,
    ``_steps``, ``_stop`` and ``report``; its state is set up in ``_Monitor._setup``.
    """

    # -- sessions on one graph --------------------------------------------------------------------

    def _join_graph(self) -> None:
        """Before the guard's own interception is installed: the graph's ledger (made on first use)."""
        self._ledger = ledger_for(self._graph)

    def _session_started(self) -> None:
        """A session's guard starts: count the lines that built ops since the last guard on the graph
        looked. Growth confirmed here is acted on at the first guarded run (``_changed`` is set)."""
        ledger = self._ledger
        if ledger is None:
            return
        with self._lock:
            ledger.sessions += 1
            self._session_no = ledger.sessions
            version = self._graph.version
            start = ledger.accounted
            ledger.accounted = max(start, version)
            if self._session_no > 1 and version > start:
                new_ops = self._new_ops(start, version)
                found = self._for_session(growth_groups(new_ops, self._imported(start)), version - start, new_ops)
                if found is not None:
                    self._pending = found
                    self._changed = True

    def _imported(self, start: int):
        ledger = self._ledger
        if ledger is None:
            return None
        return lambda i: ledger.import_origin(start + i)

    def _new_ops(self, seen: int, version: int) -> list:
        ops = self._graph.operations  # TF's internal list (TF-FACTS): read, never mutate
        if not isinstance(ops, list):
            ops = self._graph.get_operations()
        return ops[seen:version] if len(ops) >= version else ops[-(version - seen):]

    def _for_session(self, groups: tuple[OpGroup, ...], added: int, new_ops: list) -> Optional[Found]:
        """Ops built for this session (between sessions, in warm-up, one-offs): count their lines on
        the graph's ledger; growth if one of them built ops for ``min_growth_sessions`` sessions."""
        keys = {(line.filename, line.lineno) for g in groups for line in g.lines}
        most = self._ledger.count(self._session_no, keys)
        if most < self._min_growth_sessions:
            return None
        steps = self._steps
        if self._max_bounded > 0 and self._within_bound(call_paths(groups), self._max_bounded, most):
            # a model per trial of a 6-trial loop on one graph: bounded, tolerated as the linter leaves it out
            if len(self._one_offs) < _MAX_PATTERNS:
                self._one_offs.append(Growth(steps, steps, most, added, groups, None, "bounded", self._session_no))
            self._one_off_ops += added
            return None
        self._record(steps, added, groups, None, "session", self._session_no, count=most)
        growth = Growth(steps, steps, most, added, groups, None, "session", self._session_no)
        message = (
            f"{growth.short()}\n{growth.source_lines()}\n"
            f"These lines built ops into this graph for {most} session{'s' if most != 1 else ''} on it after the first "
            f"(min_growth_sessions={self._min_growth_sessions}). {SESSIONS_WHY}\n{SESSIONS_FIX}"
        )
        return growth, (), message, new_ops[0].type if new_ops else None, added

    def _grown_at_most(self, key, trips: Optional[int]) -> bool:
        """Whether the growth along ``key`` (creating line, call path) came on at most ``trips`` steps, the
        count its loops have in the source (None: not counted). A run told to loop longer than a
        command-line option's default grows more often than that (a twenty-fifth new user's trial)."""
        return trips is not None and self._line_steps.get(_same_cell(key), [0])[0] <= trips

    def _within_bound(self, paths: set, bound: int, times: Optional[int] = None) -> bool:
        """Whether growth along every one of ``paths`` (creating line, call path) is bounded: the loops
        around it run a number of times the source fixes, at most ``bound`` in all
        (:func:`~graphguard.runtime.bounded.bounded_trips`), and it has not grown more often than that
        (on more distinct steps, or for more sessions, ``times``): a notebook cell run again, or a
        caller the source does not show, repeats the loop, and that is growth."""
        if not paths:
            return False
        for key in paths:
            trips = bounded_trips((key[0], *key[1]), bound, cases=False)
            if trips is None:
                return False
            grown = times if times is not None else self._line_steps.get(_same_cell(key), [0])[0]
            if grown > trips:
                return False
        return True

    # -- growth -----------------------------------------------------------------------------------

    def _on_version_change(self) -> None:
        """The graph may have changed since the last guarded run: classify, record, act."""
        with self._lock:
            self._changed = False
            found, self._pending = self._pending, None
            if found is None:
                found = self._classify()
        if found is not None:
            self._act(*found)

    def _classify(self) -> Optional[Found]:
        """Call with the lock held: what the ops added since the last look are (None: tolerated)."""
        version = self._graph.version
        seen = self._seen_version
        if version == seen:  # another thread handled it
            return None
        self._seen_version = version
        ledger = self._ledger
        if ledger is not None and version > ledger.accounted:
            ledger.accounted = version
        per_session = self._session_no > 1
        added = version - seen
        steps = self._steps
        if steps < self._warmup_steps:
            self._warmup_ops += added
            if per_session:  # a later session building in its warm-up: counted for the session
                new_ops = self._new_ops(seen, version)
                return self._for_session(growth_groups(new_ops, self._imported(seen)), added, new_ops)
            return None
        if added <= self._max_new:
            self._tolerated_ops += added
            return None
        new_ops = self._new_ops(seen, version)
        groups = growth_groups(new_ops, self._imported(seen))
        lines = {(line.filename, line.lineno) for g in groups for line in g.lines}
        # Counted per line and call path: a helper called for validation, then for test, after
        # training is two one-offs; called from a loop, it repeats on one path.
        paths = {pair for g in groups for pair in g.callers} or {(key, ()) for key in lines}
        sustained = False
        for key in paths:
            seen_steps = self._line_steps.setdefault(_same_cell(key), [0, None])
            if seen_steps[1] != steps:
                seen_steps[0] += 1
                seen_steps[1] = steps
            sustained = sustained or seen_steps[0] >= self._min_growth_steps
        cases = sustained and all(self._grown_at_most(key, bounded_trips((key[0], *key[1]))) for key in paths)
        # growth in loops the source counts, at most max_bounded_iterations runs in all, as the linter
        # leaves them out (a thirteenth new user's trial: `check` silent, `run` stopped the script)
        bound = self._max_bounded
        limited = sustained and not cases and bound > 0 and self._within_bound(paths, bound)
        if cases or limited:
            sustained = False  # a loop over a fixed handful of cases (four dtypes): see runtime/bounded.py
        op_type = new_ops[0].type if new_ops else None
        if not sustained:
            if self._max_burst is not None and added > self._max_burst and added > self._burst_ratio * self._start_version:
                growth = self._record(steps, added, groups, None, "burst")
                message = (
                    f"{growth}\n{growth.source_lines()}\n"
                    f"One step added {added} ops: more than max_burst_ops={self._max_burst} and more than "
                    f"max_burst_ratio={self._burst_ratio:g} x the {self._start_version} ops the graph had when "
                    f"guarding started. {BURST_WHY}\n{BURST_FIX}\n{fix_text((growth,))}"
                )
                return growth, (), message, op_type, added
            # Not (yet) sustained: a one-off burst such as evaluation ops built once after the
            # loop. Kept for the report; it becomes growth if growth comes again at a later step.
            if len(self._one_offs) < _MAX_PATTERNS:
                self._one_offs.append(Growth(steps, steps, 1, added, groups, None,
                                             "cases" if cases else "bounded" if limited else "step"))
            self._one_off_ops += added
            return self._for_session(groups, added, new_ops) if per_session else None
        # Held events from the same lines are part of this growth now; others stay one-offs.
        cells = {_same_cell(((f, n), ()))[0] for f, n in lines}
        earlier = tuple(
            e for e in self._one_offs
            if any(_same_cell(((l.filename, l.lineno), ()))[0] in cells for g in e.groups for l in g.lines)
        )
        for event in earlier:
            self._record(event.first_step, event.ops_per_step, event.groups, None)
            self._one_off_ops -= event.ops_per_step
        self._one_offs = [e for e in self._one_offs if e not in earlier]
        growth = self._record(steps, added, groups, None)
        pattern = self._patterns.get((added, None, groups, "step"))
        so_far = pattern.freeze() if pattern is not None else None
        # Growth every N steps (a Saver per epoch) is said so from the first line on, not as this step alone.
        headline = so_far if so_far is not None and so_far.every else growth
        message = f"{headline.short()}\n{growth.source_lines()}\n"
        if earlier:
            # one line when the earlier steps grew from lines listed above (a fifth new user's trial: the
            # same ops and lines printed twice); else their own ops and lines
            listed = {(l.filename, l.lineno) for g in growth.groups for l in g.lines}
            same = all({(l.filename, l.lineno) for g in e.groups for l in g.lines} <= listed for e in earlier)
            steps = ", ".join(str(e.first_step) for e in earlier)
            message += (
                f"Growth also at {'earlier steps' if len(earlier) > 1 else 'an earlier step'} ({steps}), held as a one-off until "
                f"growth came again (min_growth_steps={self._min_growth_steps})"
                + (".\n" if same else ":\n" + "".join(f"{event.short()}\n{event.source_lines()}\n" for event in earlier))
            )
        looped = any(in_a_loop((key[0], *key[1])) for key in paths)
        message += f"{WHY if looped else WHY_NO_LOOP}\n{fix_text(earlier + (growth,), in_loop=looped)}"
        limits = [bounded_trips((key[0], *key[1]), cases=False) for key in paths]
        if limits and None not in limits and all(self._grown_at_most(key, limit) for key, limit in zip(paths, limits)):
            # A new user's fifth trial: `check` hides a re-initializer per epoch of three, `run` stopped
            # the script at it. Growth it is; say that it is bounded and why the linter was silent.
            # (what to do first; the option in each front end's spelling: an eighth trial was pointed at a
            # command-line flag in a notebook)
            message += (f"\n(Bounded: the loops around it run {max(limits)} times in all, as the source says: fix it "
                        f"as above, or let the run finish with on_growth=\"warn\" (graphguard run --on-growth warn; "
                        f"%graphguard on on_growth=warn in a notebook). graphguard check leaves loops of at most "
                        f"max-bounded-iterations = {BOUND} out.)")
        return growth, earlier, message, op_type, added

    def _act(self, growth: Growth, earlier: tuple[Growth, ...], message: str, op_type: Optional[str],
             added: int) -> None:
        """``on_growth`` for one growth event (called without the lock)."""
        on_growth = self._on_growth
        if on_growth == "warn":
            lines = {(line.filename, line.lineno) for e in earlier + (growth,) for g in e.groups for line in g.lines}
            # Once per line on the graph: a server leaking per request warns once, not per session.
            warned = self._ledger.warned if self._ledger is not None else self._warned
            if not lines <= warned:
                warned |= lines
                warn_at(message, GraphGrowthWarning, *first_location(growth.groups))
            return
        if callable(on_growth):
            on_growth(self.report())
            return
        filename, lineno = first_location(growth.groups)
        raise self._stop(
            GraphGrowthError(
                message,
                op_type=op_type,
                filename=filename,
                lineno=lineno,
                step=growth.first_step,
                ops_added=added,
                growth=growth,
                earlier=earlier,
            )
        )

    def _record(self, step: int, ops: int, groups: tuple[OpGroup, ...], refused: Optional[str],
                kind: str = "step", session: int = 0, count: int = 0) -> Growth:
        """Add one growth event to its pattern (call with the lock held); returns the event alone.
        ``count``: for ``kind="session"``, the sessions its lines built ops for (the pattern's ``steps``)."""
        key = (ops, refused, groups, kind)
        pattern = self._patterns.get(key)
        if pattern is not None:
            if count:
                pattern.last_step, pattern.steps = step, max(pattern.steps, count)
            else:
                pattern.again(step)
            pattern.session = session
        elif len(self._patterns) < _MAX_PATTERNS:
            pattern = self._patterns[key] = Pattern(step, ops, groups, refused, kind, session)
            if count:
                pattern.steps = count
        else:
            self._other_growth_ops += ops
        return Growth(step, step, 1, ops, groups, refused, kind, session)
