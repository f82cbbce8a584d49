"""Growth accounting: which new ops in a guarded graph are growth, and whose lines built them.

The session wrapper (:mod:`graphguard.runtime.guard`) and the hook (:mod:`graphguard.runtime.hook`)
notice *that* the graph changed; this module decides *what* the change is. New ops are sliced from
``Graph.operations`` (TensorFlow's own list, never copied whole), grouped by the user line that
built them (:func:`~graphguard.runtime.attribution.growth_groups`), and classified: ops built during
warm-up, a small step within ``max_new_ops_per_step``, a one-off held until its lines add ops again
(``min_growth_steps``), or sustained growth acted on through ``on_growth``.

Nothing here imports TensorFlow.
"""

from __future__ import annotations

from typing import Optional

from graphguard.runtime.attribution import first_location, growth_groups
from graphguard.runtime.errors import WHY, GraphGrowthError, GraphGrowthWarning, fix_text, warn_at
from graphguard.runtime.report import Growth, OpGroup

# Distinct growth patterns kept in the report; further ones are only counted.
_MAX_PATTERNS = 50


class Pattern:
    """A growth pattern being accumulated (frozen into a :class:`Growth` for the report)."""

    __slots__ = ("first_step", "last_step", "steps", "ops_per_step", "groups", "refused")

    def __init__(self, step: int, ops: int, groups: tuple[OpGroup, ...], refused: Optional[str]) -> None:
        self.first_step = self.last_step = step
        self.steps = 1
        self.ops_per_step = ops
        self.groups = groups
        self.refused = refused

    def freeze(self) -> Growth:
        return Growth(self.first_step, self.last_step, self.steps, self.ops_per_step, self.groups, self.refused)




class GrowthAccounting:
    """The growth half of the guard's monitor (``_Monitor`` in :mod:`graphguard.runtime.guard` adds
    step counting, step time, RSS and stopping). Uses the monitor's ``_lock``, ``_graph``,
    ``_steps``, ``_stop`` and ``report``; its state is set up in ``_Monitor._setup``.
    """

    # -- growth -----------------------------------------------------------------------------------

    def _on_version_change(self) -> None:
        """The graph may have changed since the last guarded run: classify, record, act."""
        with self._lock:
            self._changed = False
            version = self._graph.version
            seen = self._seen_version
            if version == seen:  # another thread handled it
                return
            self._seen_version = version
            added = version - seen
            steps = self._steps
            if steps < self._warmup_steps:
                self._warmup_ops += added
                return
            if added <= self._max_new:
                self._tolerated_ops += added
                return
            ops = self._graph.operations  # TF's internal list (TF-FACTS): read, never mutate
            if not isinstance(ops, list):
                ops = self._graph.get_operations()
            new_ops = ops[seen:version] if len(ops) >= version else ops[-added:]
            groups = growth_groups(new_ops)
            lines = {(line.filename, line.lineno) for g in groups for line in g.lines}
            sustained = False
            for key in lines:
                seen_steps = self._line_steps.setdefault(key, [0, None])
                if seen_steps[1] != steps:
                    seen_steps[0] += 1
                    seen_steps[1] = steps
                sustained = sustained or seen_steps[0] >= self._min_growth_steps
            if not sustained:
                # Not (yet) sustained: a one-off burst such as evaluation ops built once after the
                # loop. Kept for the report; it becomes growth if growth comes again at a later step.
                if len(self._one_offs) < _MAX_PATTERNS:
                    self._one_offs.append(Growth(steps, steps, 1, added, groups, None))
                self._one_off_ops += added
                return
            # Held events from the same lines are part of this growth now; others stay one-offs.
            earlier = tuple(
                e for e in self._one_offs if any((l.filename, l.lineno) in lines for g in e.groups for l in g.lines)
            )
            for event in earlier:
                self._record(event.first_step, event.ops_per_step, event.groups, None)
                self._one_off_ops -= event.ops_per_step
            self._one_offs = [e for e in self._one_offs if e not in earlier]
            growth = self._record(steps, added, groups, None)
        message = f"{growth}\n{growth.source_lines()}\n"
        if earlier:
            message += (
                f"Growth also at earlier step{'s' if len(earlier) > 1 else ''} (held as a one-off until growth "
                f"came again; min_growth_steps={self._min_growth_steps}):\n"
                + "".join(f"{event}\n{event.source_lines()}\n" for event in earlier)
            )
        message += f"{WHY}\n{fix_text(earlier + (growth,))}"
        on_growth = self._on_growth
        if on_growth == "warn":
            lines = {(line.filename, line.lineno) for e in earlier + (growth,) for g in e.groups for line in g.lines}
            if not lines <= self._warned:
                self._warned |= lines
                warn_at(message, GraphGrowthWarning, *first_location(groups))
            return
        if callable(on_growth):
            on_growth(self.report())
            return
        filename, lineno = first_location(groups)
        raise self._stop(
            GraphGrowthError(
                message,
                op_type=new_ops[0].type if new_ops else None,
                filename=filename,
                lineno=lineno,
                step=steps,
                ops_added=added,
                growth=growth,
                earlier=earlier,
            )
        )

    def _record(self, step: int, ops: int, groups: tuple[OpGroup, ...], refused: Optional[str]) -> Growth:
        """Add one growth event to its pattern (call with the lock held); returns the event alone."""
        key = (ops, refused, groups)
        pattern = self._patterns.get(key)
        if pattern is not None:
            pattern.last_step = step
            pattern.steps += 1
        elif len(self._patterns) < _MAX_PATTERNS:
            self._patterns[key] = Pattern(step, ops, groups, refused)
        else:
            self._other_growth_ops += ops
        return Growth(step, step, 1, ops, groups, refused)
