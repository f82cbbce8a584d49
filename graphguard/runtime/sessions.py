"""Growth across sessions: one graph, a new session per request or per trial, the same lines building.

A guard watches one session. A server that opens a new ``tf.compat.v1.Session()`` per request on the
default graph and first builds into it (``tf.import_graph_def`` or ``tf.train.import_meta_graph`` per
request, a placeholder per call), or a sweep that builds a model per trial without
``tf.compat.v1.reset_default_graph()``, never grows the graph *during* a session: each session is
guarded on its own and sees nothing after its first run, yet the graph keeps every copy. So the
accounting is kept per graph too, in a :class:`GraphLedger` that outlives the sessions (a weak map
from graph to ledger: a graph that is dropped takes its ledger with it).

For each session after the first on a graph, the ledger counts the user lines that built ops for it:
the ops added since the previous session's guard last looked (between the sessions), and the ops
that session's own guard tolerated (during warm-up, or one-offs). A line that built ops for
``min_growth_sessions`` sessions (default 3: train, validation and test sessions that each build on one
graph stay quiet) is growth, reported by the guard of the session that confirmed it.

Ops made by ``tf.import_graph_def`` (and ``import_meta_graph``, which calls it) come from the C API and
have no ``Operation.traceback``. The ledger therefore stands in for ``Graph._check_not_finalized`` on
its graph (below any guard's own stand-in, :mod:`graphguard.runtime.interception`), and when TensorFlow
calls it from ``Graph._add_new_tf_operations`` (directly, or through the stand-ins of the guards of
sessions open on the graph) it notes the user line and the graph's op count, so the imported ops are
attributed to the line that imported them. Cost: one Python call and a frame-name
comparison per op built on that graph (about 0.2 us, next to 20-50 us for TensorFlow to build the op).

Nothing here imports TensorFlow.
"""

from __future__ import annotations

import bisect
import sys
import weakref
from typing import Any, Iterable, Optional

from graphguard.runtime.attribution import live_frames, user_origin
from graphguard.runtime.interception import Interceptor

_STAND_IN = Interceptor._check.__code__

__all__ = ["GraphLedger", "ledger_for"]

# Import records kept per graph (older ones are dropped: their ops are long accounted for).
_MAX_IMPORTS = 256
_CHECK_NAME = "_check_not_finalized"
_IMPORTER = "_add_new_tf_operations"

Origin = tuple[Optional[str], Optional[int], frozenset]
_UNKNOWN: Origin = (None, None, frozenset())


class GraphLedger:
    """What the guards on one graph have seen, kept from one session to the next.

    Attributes:
        accounted: ops (``Graph.version``) that some guard on this graph has already classified;
            ops beyond it were built since the last guard looked.
        sessions: guards started on this graph so far (the first is session 1).
        lines: per user line ``(filename, lineno)``: ``[sessions it built ops for, last such session]``.
        warned: user lines a ``GraphGrowthWarning`` was issued for (``on_growth="warn"``: once per
            line on the graph, whichever session's guard saw it).
    """

    __slots__ = ("accounted", "sessions", "lines", "warned", "_positions", "_origins", "__weakref__")

    def __init__(self, version: int) -> None:
        self.accounted = version
        self.sessions = 0
        self.lines: dict[tuple[Optional[str], Optional[int]], list] = {}
        self.warned: set = set()
        self._positions: list[int] = []
        self._origins: list[Origin] = []

    def count(self, session: int, keys: Iterable[tuple[Optional[str], Optional[int]]]) -> int:
        """Note that these lines built ops for ``session``; returns the most sessions any of them built for."""
        most = 0
        for key in keys:
            seen = self.lines.setdefault(key, [0, None])
            if seen[1] != session:
                seen[0] += 1
                seen[1] = session
            most = max(most, seen[0])
        return most

    def note_import(self, position: int, origin: Origin) -> None:
        """The ops from ``position`` on (``Graph.version`` before the import) came from ``origin``."""
        if self._positions and position < self._positions[-1]:  # the graph was rebuilt below: start over
            self._positions.clear()
            self._origins.clear()
        self._positions.append(position)
        self._origins.append(origin)
        if len(self._positions) > _MAX_IMPORTS:
            del self._positions[: _MAX_IMPORTS // 2], self._origins[: _MAX_IMPORTS // 2]

    def import_origin(self, position: int) -> Origin:
        """The user line that imported the op at ``position`` in ``Graph.operations``, if noted."""
        i = bisect.bisect_right(self._positions, position) - 1
        return self._origins[i] if i >= 0 else _UNKNOWN


class _ImportRecorder:
    """Stands in for ``Graph._check_not_finalized`` (TensorFlow's check, kept) and notes imports."""

    __slots__ = ("_graph", "_ledger")

    def __init__(self, graph: Any, ledger: GraphLedger) -> None:
        self._graph = weakref.ref(graph)  # the graph holds this object: no cycle back to it
        self._ledger = ledger

    def __call__(self) -> None:
        graph = self._graph()
        if graph is None:
            return
        caller = sys._getframe(1)
        # Guards' stand-ins installed above this one call it in turn (interception.Interceptor._check).
        while caller is not None and caller.f_code is _STAND_IN:
            caller = caller.f_back
        if caller is not None and caller.f_code.co_name == _IMPORTER:
            filename, lineno, called = user_origin(live_frames(caller))
            self._ledger.note_import(graph.version, (filename, lineno, called))
        getattr(type(graph), _CHECK_NAME)(graph)  # TensorFlow's own check: raises on a finalized graph


_LEDGERS: "weakref.WeakKeyDictionary[Any, GraphLedger]" = weakref.WeakKeyDictionary()


def ledger_for(graph: Any) -> Optional[GraphLedger]:
    """The ledger of ``graph``, made (and its import recorder installed) on first use.

    ``None`` for an object that cannot be weakly referenced or hashed (a stand-in graph in tests).
    Call before a guard installs its own stand-in, so that stand-in chains to the recorder.
    """
    try:
        ledger = _LEDGERS.get(graph)
    except TypeError:
        return None
    if ledger is None:
        ledger = GraphLedger(graph.version)
        try:
            _LEDGERS[graph] = ledger
        except TypeError:
            return None
        current = getattr(graph, _CHECK_NAME, None)
        own = getattr(type(graph), _CHECK_NAME, None)
        if own is not None and getattr(current, "__func__", None) is own:  # nothing installed over TF's
            try:
                setattr(graph, _CHECK_NAME, _ImportRecorder(graph, ledger))
            except (AttributeError, TypeError):
                pass
    return ledger
