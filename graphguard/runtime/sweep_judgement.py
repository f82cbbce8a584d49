"""How a :class:`~graphguard.runtime.sweep.SweepGuard` judges a trial one trial later: which of its objects
are still alive (after a full collection when the long-lived objects were frozen), the chain that holds
each (:func:`~graphguard.runtime.sweep_references._search`), the one-at-a-time holders (an attribute that
held an earlier trial's object at that trial's end: ``EarlyStopping._model``), a library-driven search's
result, and the reasons a trial leaks. The guard's bookkeeping, trials and ``on_leak`` are in
:mod:`graphguard.runtime.sweep`; this module is its judgement, mixed into ``SweepGuard``
(:class:`_Judgement`), and imports nothing from it.
"""

from __future__ import annotations

import gc
import sys
import time
import types
import weakref
from dataclasses import replace
from typing import Any, Optional

from graphguard.runtime.report import bytes_text
from graphguard.runtime.sweep_measure import FREEZE
from graphguard.runtime.sweep_references import (
    CHAIN_FRONTIER,
    _edge,
    _Roots,
    _search,
    _type_name,
    loop_variables,
)
from graphguard.runtime.sweep_report import AliveObject, ReferenceChain, RssTrend, TrialRecord

#: The RSS trend (:func:`rss_trend`): at least this many judged trials in the fit, ...
TREND_MIN_TRIALS = 5
#: ... a slope of at least this many bytes per trial (the noise floor: 1 MiB per trial, 1 GiB over 1,000
#: trials; allocator and cache noise after gc.collect() and malloc_trim(0) is a fraction of it), ...
TREND_MIN_BYTES = 2**20
#: ... a line that explains at least this share of the variance (a cache filled once is not a trend), ...
TREND_MIN_R2 = 0.9
#: ... over at most the latest this many judged trials (a leak that starts late is still a line there).
TREND_WINDOW = 50


class _Judgement:
    """The judging half of :class:`~graphguard.runtime.sweep.SweepGuard` (its state lives on the guard:
    ``_pending``, ``_records``, ``_slots``, ``_unnotified``, the options)."""

    def _judge(self, frame: Optional[types.FrameType], key: Optional[tuple[Any, ...]], names: frozenset[str],
               at: str, final: bool = False) -> None:
        """Judge the pending trial's objects now. ``frame``: the code running the sweep now, ``names``:
        its loop variables for the trial ending now; the names changed since the pending trial started
        are loop variables too (when ``frame`` runs in the same namespace). ``final``: at the sweep's end
        (the last trial, which no later trial has followed)."""
        pending, self._pending = self._pending, None
        young: Optional[frozenset[int]] = None
        if FREEZE.frozen and any(ref() is not None for ref, _, _ in pending.objects):
            # Alive after a collection of the unfrozen objects only: thaw, and let a full one decide.
            # First, which of its direct holders were not frozen (made since the first trial started):
            # the others are long-lived objects from before the sweep (see _chains).
            still = [obj for obj in (ref() for ref, _, _ in pending.objects) if obj is not None]
            young = frozenset(map(id, gc.get_referrers(*still)))
            del still
            FREEZE.thaw()
            gc.collect()
        live: list[Any] = []
        labels: list[tuple[str, str]] = []
        freed = 0
        for ref, name, source in pending.objects:
            obj = ref()
            if obj is None:
                freed += 1
            else:
                live.append(obj)
                labels.append((name, source))
        if frame is not None and pending.frame_key is not None and pending.frame_key == key:
            names = names | loop_variables(pending.names, frame)
        alive = self._chains(live, labels, frame, names, pending.index, young, final) if live else ()
        del live
        record = self._records[pending.slot]
        reasons = _measure_reasons(record.retained_bytes, record.graph_ops, record.warmup, self._limit(record.index),
                                   objects_judged=True, leaks=tuple(obj.name for obj in alive if obj.leaked),
                                   trend=record.rss_trend)
        record = replace(record, alive=alive, leaked=bool(reasons), reasons=tuple(reasons), judged=True, judged_at=at,
                         freed_later=freed)
        self._records[pending.slot] = record
        if record.leaked:
            self._unnotified.append(record)

    def _trend(self, upto: Optional[int] = None) -> Optional[RssTrend]:
        """:func:`rss_trend` of this guard's judged trials (records ``[:upto]``): after warm-up, RSS
        measured, in this process (not a Ray worker's), not overlapping other trials."""
        records = self._records if upto is None else self._records[:upto]
        start = self._trend_from  # a script's later sweep loop fits its own line (SweepGuard._phase)
        return rss_trend([record for slot, record in enumerate(records) if slot >= start
                          and slot not in self._remote_slots and record.index not in self._rss_unjudged])

    def _limit(self, index: int) -> Optional[int]:
        """``max_retained_bytes`` for trial ``index``; None when it overlapped other trials (the process's
        RSS then holds their work in progress too)."""
        return None if index in self._rss_unjudged else self.max_retained_bytes

    def _keep_result(self, slot: int) -> None:
        """A library-driven sweep's last trial, judged at its end: when no earlier trial of the sweep
        left an object alive, its objects still alive are the search's result (``AliveObject.kept``)."""
        record = self._records[slot]
        if not record.leaks or any(other.leaks for other in self._records[:slot]):
            return
        alive = tuple(replace(obj, kept="the sweep's result") if obj.leaked else obj for obj in record.alive)
        reasons = _measure_reasons(record.retained_bytes, record.graph_ops, record.warmup, self._limit(record.index),
                                   objects_judged=True, leaks=(), trend=record.rss_trend)
        self._records[slot] = record = replace(record, alive=alive, leaked=bool(reasons), reasons=tuple(reasons))
        if self._unnotified and self._unnotified[-1].index == record.index:
            if record.leaked:
                self._unnotified[-1] = record
            else:
                self._unnotified.pop()

    def _chains(self, targets: list[Any], labels: list[tuple[str, str]], frame: Optional[types.FrameType],
                names: frozenset[str], index: int, young: Optional[frozenset[int]] = None,
                final: bool = False) -> tuple[AliveObject, ...]:
        """Chains for the objects in ``targets`` (bounded by ``chain_seconds`` in all). An automatically
        tracked object whose chain passes through another alive target (a ``Sequential``'s inner
        ``Functional``) is left out: its holder is reported. A chain whose last link is an attribute that
        held an earlier trial's object at that trial's end (a one-at-a-time holder: a callback's
        ``model``) is searched again without that link: another holder is the chain, a loop variable
        excuses it, none at all excuses it as the slot (``AliveObject.slot``). ``young``: when the objects
        were judged after a thaw (see :class:`~graphguard.runtime.sweep_measure._Freeze`), the ids of
        their direct holders that were not frozen; an attribute of a frozen holder (an object made before
        the sweep's first trial, which the cheap scans at the trials' ends could not see) holds one
        object at a time: a slot too. An object of TensorFlow's default graph judged one trial later (not
        ``final``) is held by that graph, which outlived the trial: no search (it would reach the graph
        through the next trial's loop variables, which share it, and excuse the object)."""
        roots = _Roots(frame, frame, names, engine=self._engine, namespaces=self._namespaces)
        deadline = time.perf_counter() + self.chain_seconds
        results: list[tuple[Any, ...]] = []
        inner = _held_by_another(targets)
        timed_out: list[int] = []  # results whose search did not run or ran out of time
        holders: dict[int, tuple[Any, int]] = {}  # id(direct holder) -> (holder, result index) of found chains
        # At the sweep's end, the last trial's graph is one graph, not growth, when the trials reset it;
        # when an earlier trial's objects were kept by the same default graph, the last trial's are kept
        # by it as theirs were (a tenth new user's trial: the last of 12 TF1 trials was excused as "held
        # only by a loop variable" while the graph held it and the 11 before it).
        graph_kept = final and any(other.leaked and other.chain is not None and other.chain.root_kind == "graph"
                                   for record in self._records if record.index < index for other in record.alive)
        for obj, (name, source) in zip(targets, labels):
            in_graph = _default_graph_chain(obj)
            if in_graph is not None and (not final or graph_kept):
                results.append((name, _type_name(obj), source, in_graph, None, None, frozenset(), None))
                continue
            if in_graph is not None:
                # The sweep's end: the last trial's graph is still the default graph, which holds the
                # object; one graph, not growth, whether a loop variable holds it too (then excused as
                # one). No search: it would walk the graph's own structures to the depth bound (about
                # 1 s an object; a TF1 sweep's end took 5 s), and another holder of the last trial's
                # object would hold the earlier trials' too, which are judged by search.
                held = roots.loop.get(id(obj))
                results.append((name, _type_name(obj), source, None if held else in_graph, held and held[1], None,
                                frozenset(), None if held else "the last trial's graph, still the default graph"))
                continue
            if source != "track" and id(obj) in inner:
                # a part held in another alive object's attribute (a Sequential's inner Functional): its
                # holder is reported, and a search would say nothing more (new users' trials: "13 x
                # Functional: alive (reference search skipped)" beside the 14 Sequentials, and, with time
                # left, a Functional counted beside its Sequential)
                results.append((name, _type_name(obj), source, None, None, None, frozenset(), _INNER))
                continue
            left = deadline - time.perf_counter()
            if left <= 0:
                timed_out.append(len(results))
                # No time left to search: an object that is the current value of a loop variable is
                # still known to be held by it (the last trial's ``x = tf.placeholder(...)`` at module
                # level), so it is not called a leak on an unfinished search.
                held = roots.loop.get(id(obj))
                chain = None if held else _default_graph_chain(obj)
                kept_text = "the last trial's graph, still the default graph" if final and chain is not None else None
                if final and not held and chain is None:
                    # the sweep's end, with the search's time spent on other objects: an unknown holder
                    # is no evidence, and earlier trials (judged one trial later) carry the verdict
                    kept_text = "not judged: the search's time ran out at the sweep's end"
                results.append((name, _type_name(obj), source, chain, held and held[1], None, frozenset(), kept_text))
                continue
            ignore = (targets, labels, results)
            chain, loop_variable, path, tail = _search(obj, roots, self.chain_depth, left, CHAIN_FRONTIER, ignore)
            first = chain
            slot_text = None
            slot = _slot_of(tail) if loop_variable is None and chain.root_kind != "unknown" else None
            if slot is not None and (self._is_slot(slot[0], slot[1], obj, index)
                                     or (young is not None and id(tail[0]) not in young)):
                skip = {id(tail[0]), id(slot[0])}
                try:  # naming the attribute may have made the owner's __dict__ (Python 3.11+ inline values)
                    skip.add(id(object.__getattribute__(slot[0], "__dict__")))
                except (AttributeError, TypeError):
                    pass
                left = max(deadline - time.perf_counter(), 0.5)
                again, loop_again, path_again, _ = _search(obj, roots, self.chain_depth, left, CHAIN_FRONTIER,
                                                           ignore, skip_first=frozenset(skip))
                if loop_again is not None or again.root_kind != "unknown":
                    chain, loop_variable, path = again, loop_again, path_again
                else:
                    slot_text = f"`{_type_name(slot[0])}.{slot[1]}`"
            if chain.root_kind == "unknown" and loop_variable is None and time.perf_counter() >= deadline:
                timed_out.append(len(results))
            elif tail is not None and chain is first and slot_text is None:  # the tail is this chain's
                holders.setdefault(id(tail[0]), (tail[0], len(results)))
            del tail, slot, first
            kept_text = None
            if loop_variable is None and chain.root_kind == "unknown":
                in_graph = _default_graph_chain(obj)
                if in_graph is not None:
                    chain = in_graph
                    if final:  # the last trial's graph, which nothing reset after it: one graph, not growth
                        kept_text = "the last trial's graph, still the default graph"
            results.append((name, _type_name(obj), source, chain, loop_variable, slot_text, path, kept_text))
        if timed_out and holders:
            _share_holders(targets, results, timed_out, holders)
        del holders
        ids = {id(obj) for obj in targets}
        paths = {id(obj): result[6] for obj, result in zip(targets, results)}
        known = {id(obj) for obj, result in zip(targets, results) if result[3] is not None and result[3].root_kind != "unknown"}
        kept = []
        for obj, (name, type_name, source, chain, loop_variable, slot_text, path, kept_text) in zip(targets, results):
            if kept_text is _INNER:
                continue
            others = (path & ids) - {id(obj)}
            if source != "track" and others:
                if id(obj) in known:
                    continue  # its chain passes through another alive object: that one is reported
                # No root found, but the search went through another alive object: reported through it,
                # unless the two reach each other and neither has a root (then the first is kept).
                if others & known or any(id(obj) not in paths[other] or other in {id(o) for o, _ in kept}
                                         for other in others):
                    continue
            elif others & known and id(obj) not in known and loop_variable is None:
                # A tracked object with no root of its own within the bounds, reached through another alive
                # object that has one (a solver's model): reported through that one, by name.
                holder = next(alive for alive, result in zip(targets, results) if id(alive) in others & known)
                held_by = results[[id(t) for t in targets].index(id(holder))]
                chain = ReferenceChain(held_by[3].root_kind, held_by[3].root, (*held_by[3].hops, held_by[1], "..."),
                                       type_name)
            kept.append((obj, AliveObject(name, type_name, source, chain, loop_variable, slot_text, kept_text)))
        del paths
        return tuple(alive for _, alive in kept)

    def _note_holders(self, targets: list[Any], index: int) -> None:
        """Remember which object attributes hold ``targets`` (trial ``index``'s objects alive at its end):
        one ``gc.get_referrers`` pass, and one more for the ``__dict__`` holders' owners. Weak references
        and ids only."""
        wanted = {id(obj): obj for obj in targets}
        referrers = gc.get_referrers(*targets)
        skip = (types.FrameType, list, tuple, set, frozenset, types.CellType, types.FunctionType, type, types.ModuleType)
        dicts: list[tuple[dict, str, int]] = []
        for holder in referrers:
            if holder is wanted or holder is targets or isinstance(holder, skip):
                continue
            for child in gc.get_referents(holder):
                if wanted.get(id(child)) is not child:
                    continue
                kind, label = _edge(holder, child)
                if not isinstance(label, str):
                    continue
                if isinstance(holder, dict):
                    if kind == "key":
                        dicts.append((holder, label, id(child)))
                elif kind == "attr":
                    self._note_slot(holder, label, id(child), index)
        del referrers, wanted
        if dicts:
            by_id = {id(namespace): namespace for namespace, _, _ in dicts}
            owners = gc.get_referrers(*by_id.values())
            found: set[int] = set()
            for owner in owners:
                if owner is by_id or owner is dicts or isinstance(owner, (dict, list, tuple, types.FrameType)):
                    continue
                try:
                    namespace = object.__getattribute__(owner, "__dict__")
                except (AttributeError, TypeError):
                    continue
                if by_id.get(id(namespace)) is namespace:
                    found.add(id(namespace))
                    for held, label, object_id in dicts:
                        if held is namespace:
                            self._note_slot(owner, label, object_id, index)
            # A __dict__ whose owner the pass did not see: the owner is frozen (made before the sweep;
            # its __dict__ became tracked when it got the trial's object). Noted by the dict's id.
            for held, label, object_id in dicts:
                if id(held) not in found:
                    self._note_slot(held, label, object_id, index, by_id=True)
            del owners, by_id
        del dicts

    def _note_slot(self, owner: Any, attr: str, object_id: int, index: int, by_id: bool = False) -> None:
        """Note that ``owner.attr`` held ``object_id`` at trial ``index``'s end. ``by_id``: ``owner`` is an
        object's ``__dict__`` (no weak reference possible; keyed by its id, checked against the owner's
        ``__dict__`` when judged)."""
        key = (id(owner), attr)
        entry = self._slots.get(key)
        if by_id:
            if entry is None or entry[0] is not None:
                entry = [None, []]
                self._slots[key] = entry
        elif entry is None or entry[0] is None or entry[0]() is not owner:
            try:
                entry = [weakref.ref(owner), []]
            except TypeError:
                return
            self._slots[key] = entry
            if len(self._slots) > 4096:  # drop the entries of owners since freed
                self._slots = {k: v for k, v in self._slots.items() if v[0] is None or v[0]() is not None}
        entry[1] = [*entry[1][-7:], (index, object_id)]

    def _is_slot(self, owner: Any, attr: str, obj: Any, index: int) -> bool:
        """True when ``owner.attr`` held another object of an earlier trial at that trial's end."""
        entry = self._slots.get((id(owner), attr))
        if entry is None or entry[0] is None or entry[0]() is not owner:
            try:
                namespace = object.__getattribute__(owner, "__dict__")
            except (AttributeError, TypeError):
                return False
            entry = self._slots.get((id(namespace), attr))
            if entry is None or entry[0] is not None:
                return False
        return any(trial < index and object_id != id(obj) for trial, object_id in entry[1])


def rss_trend(records: list[TrialRecord]) -> Optional[RssTrend]:
    """The steady rise of RSS across ``records`` (a sweep's trials, in order), or ``None``.

    A least-squares line through ``rss_after`` (bytes) against ``index`` of the records after warm-up
    with RSS measured, the latest :data:`TREND_WINDOW`; a trend when at least :data:`TREND_MIN_TRIALS`
    are in it, its slope is at least :data:`TREND_MIN_BYTES` per trial (the noise floor) and it explains
    at least :data:`TREND_MIN_R2` of the variance. A sweep keeping 7.6 MiB per trial passes a 32 MiB
    per-trial limit every time and keeps 7.4 GiB over 1,000 trials: the trend is how it is judged."""
    points = [(record.index, record.rss_after) for record in records
              if not record.warmup and record.rss_after is not None][-TREND_WINDOW:]
    n = len(points)
    if n < TREND_MIN_TRIALS:
        return None
    mean_x = sum(x for x, _ in points) / n
    mean_y = sum(y for _, y in points) / n
    sxx = sum((x - mean_x) ** 2 for x, _ in points)
    syy = sum((y - mean_y) ** 2 for _, y in points)
    if sxx <= 0 or syy <= 0:
        return None
    slope = sum((x - mean_x) * (y - mean_y) for x, y in points) / sxx
    r2 = slope * slope * sxx / syy
    if slope < TREND_MIN_BYTES or r2 < TREND_MIN_R2:
        return None
    return RssTrend(slope, points[0][0], points[-1][0], n, min(r2, 1.0))


def _measure_reasons(retained: Optional[int], graph_ops: Optional[int], warmup: bool, limit: Optional[int],
                     *, objects_judged: bool, leaks: tuple[str, ...] = (),
                     trend: Optional[RssTrend] = None) -> list[str]:
    """The reasons a trial leaks: objects alive (names in ``leaks``), RSS over ``limit``, RSS rising
    steadily across the sweep's trials up to this one (``trend``, said only when this trial is not over
    the limit itself) and default-graph ops after warm-up. An RSS-only flag on a judged trial says that
    the memory may not be this trial's."""
    reasons = []
    if leaks:
        counts: dict[str, int] = {}
        for name in leaks:
            counts[name] = counts.get(name, 0) + 1
        named = ", ".join(name if count == 1 else f"{count} x {name}" for name, count in counts.items())
        reasons.append(f"{len(leaks)} object{'s' if len(leaks) != 1 else ''} alive ({named})")
    over = not warmup and retained is not None and limit is not None and retained > limit
    if over:
        text = f"+{bytes_text(retained)} RSS retained (over {bytes_text(limit)})"
        if objects_judged and not leaks:
            text += ", no object of this trial alive: the memory may belong to an earlier trial or to a cache"
        reasons.append(text)
    if trend is not None and not warmup and not over and limit is not None and not leaks:
        # (a trial whose objects are alive leaks by them: the trend would repeat in every such trial's
        # paragraph, a new user's trial: 15 folds, 118 lines; the sweep's own trend line says it once)
        text = str(trend)
        if objects_judged and not leaks:
            text += (", no object of this trial alive: kept outside its objects (a cache; with Keras, "
                     "TensorFlow's functions)")
        reasons.append(text)
    if not warmup and graph_ops:
        reasons.append(f"+{graph_ops} ops kept in the default graph")
    return reasons


def _slot_of(tail: Optional[tuple[Any, ...]]) -> Optional[tuple[Any, str]]:
    """``(owner, attribute)`` when a chain's last link is an object's attribute (``es._model``), else None."""
    if tail is None:
        return None
    holder, (kind, label), owner, owner_edge = tail
    if isinstance(holder, dict):
        if kind == "key" and isinstance(label, str) and owner is not None and owner_edge == ("dict", None):
            return owner, label
        return None
    if kind == "attr" and isinstance(label, str):
        return holder, label
    return None


def _default_graph_chain(obj: Any) -> Optional[ReferenceChain]:
    """The holder of a TF1 object of TensorFlow's current default graph (a variable, a placeholder's
    tensor, an op): that graph, which keeps every op, tensor and variable built in it (its collections
    keep the variables) until ``tf.compat.v1.reset_default_graph()``; the reference search runs out of
    time or depth in it. ``None`` for anything else (TensorFlow not imported, an eager object, another
    graph)."""
    tf = sys.modules.get("tensorflow")
    if not any(hasattr(type(obj), name) for name in ("op", "node_def")):
        return None  # a Session has a graph too, but the graph does not hold it (a list of sessions does)
    try:
        graph = object.__getattribute__(obj, "graph")
        default = tf.compat.v1.get_default_graph() if tf is not None else None
    except Exception:  # not a graph object, a property that raises in eager mode, a partial TensorFlow
        return None
    if default is None or graph is not default:
        return None
    return ReferenceChain("graph", "TensorFlow's default graph (until tf.compat.v1.reset_default_graph())", (),
                          _type_name(obj))


def _share_holders(targets: list[Any], results: list[tuple[Any, ...]], timed_out: list[int],
                   holders: dict[int, tuple[Any, int]]) -> None:
    """Chains for the objects whose search the time budget cut (``results[i]`` for ``i`` in
    ``timed_out``), from the objects found in the same container: one ``gc.get_referrers`` pass over
    them; an object whose direct holder (a list, a dict, an instance's ``__dict__``) is the direct
    holder of a found chain gets that chain with its own last hop (``list[7]`` for ``list[2]``). So the
    objects of one list read alike, whether their search ran or the budget ran out first (a fifth new
    user's trial: "reference search skipped" beside "within 0.13 s of search" for one list)."""
    pending = {id(targets[i]): i for i in timed_out}
    wanted = [targets[i] for i in timed_out]
    referrers = gc.get_referrers(*wanted)
    for holder in referrers:
        found = holders.get(id(holder))
        if found is None or found[0] is not holder:
            continue
        base = results[found[1]]
        chain, loop_variable = base[3], base[4]
        for child in gc.get_referents(holder):
            index = pending.get(id(child))
            if index is None or targets[index] is not child:
                continue
            kind, label = _edge(holder, child)
            hops = chain.hops
            if kind == "key" and hops and not hops[-1].startswith(f"{_type_name(holder)}["):
                last = f"{hops[-1].rsplit('.', 1)[0]}.{label}"  # an attribute: `Owner.attr`
            elif kind in ("key", "index"):
                last = f"{_type_name(holder)}[{label!r}]" if kind == "key" else f"{_type_name(holder)}[{label}]"
            else:
                continue
            name, type_name, source = results[index][:3]
            own = ReferenceChain(chain.root_kind, chain.root, (*hops[:-1], last) if hops else (last,), type_name)
            results[index] = (name, type_name, source, own, loop_variable, None, base[6], None)
            del pending[id(child)]
    del referrers, wanted


#: :meth:`_Judgement._chains`'s mark for an object left out as a part of another alive object.
_INNER = "part of another alive object"


def _held_by_another(targets: list[Any]) -> set[int]:
    """The ids of the objects in ``targets`` that another of them holds in an attribute of its own
    ``__dict__`` (one level: a Keras ``Sequential``'s ``_functional``)."""
    wanted = {id(obj) for obj in targets}
    held: set[int] = set()
    for obj in targets:
        try:
            attributes = object.__getattribute__(obj, "__dict__")
        except (AttributeError, TypeError):
            continue
        if isinstance(attributes, dict):
            held.update(id(value) for value in attributes.values() if id(value) in wanted and value is not obj)
    return held
