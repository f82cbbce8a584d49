"""What :class:`~graphguard.runtime.sweep.SweepGuard` measured, as data: :class:`SweepReport` and its records.

:class:`TrialRecord` is one trial: its seconds, RSS before and after, the objects still alive one trial
later (:class:`AliveObject`, each with the :class:`ReferenceChain` that keeps it alive:
``root -> hop -> ... -> target``), its default-graph ops, the verdict and its reasons;
:meth:`TrialRecord.message` is the text of a leak warning or error. Every record is a frozen dataclass
whose ``str()`` is the text graphguard prints; :meth:`SweepReport.as_dict` gives JSON-ready data. Units
are in the field docs: time in seconds (``time.perf_counter``), memory in bytes (psutil
``memory_info().rss``), shown in MiB in the report's table.

This module imports nothing heavy (no TensorFlow, Keras, NumPy or psutil) and nothing from the guard
(:mod:`graphguard.runtime.sweep`), the measurements or the reference search.
"""

from __future__ import annotations

import re

from dataclasses import asdict, dataclass
from typing import Any, Optional

from graphguard.runtime.records import bytes_text

__all__ = ["AliveObject", "ReferenceChain", "RssTrend", "SweepReport", "TrialRecord", "trial_label"]

_FIX = (
    "Fix: keep only what you need from a trial (scores, a copy of the best weights), not the model or "
    "its solver; run the trial in a function so its locals go when it returns; with Keras call "
    "keras.backend.clear_session() per trial (or SweepGuard(clear_session=True)); in TF1 build each "
    "trial in its own `with tf.Graph().as_default():`."
)
#: The fix when no object of the trial stayed alive and only RSS says so (a second new user's trial: a
#: sweep that already called clear_session() was told to call it).
_FIX_RSS = (
    "No object of the trial stayed alive: the memory kept is TensorFlow's or the allocator's (kernels and "
    "caches made once, memory not given back to the system), which clear_session() and gc.collect() do not "
    "return. If it keeps rising over a long sweep, run each trial in its own process "
    "(multiprocessing with maxtasksperchild=1, or a search engine's process-based trials)."
)
_FIX_OUTPUT = (
    "In a notebook: a cell's displayed value stays in IPython's output history (Out[N], _N) until "
    "`%reset -f out` (`del Out[N]` alone leaves IPython's own copies); end a cell with `;` so that its "
    "value is not displayed and kept."
)


@dataclass(frozen=True)
class ReferenceChain:
    """How an object is kept alive: a root, the references followed from it, and the object.

    ``str()`` is ``root -> hop -> ... -> target``, e.g.
    ``local `solvers` in main() -> dict[0.001] -> Solver.model -> TwoLayerNet`` or
    ``module-level `train.ALL_MODELS` -> list[2] -> Sequential``.

    Attributes:
        root_kind: ``"global"`` (a module's global, or a variable of the cells in IPython / a
            notebook), ``"local"`` (a local variable of a running function, the one running the sweep
            included), ``"output"`` (IPython's output history: ``Out[12]``, ``_12``, which keep every
            displayed value), ``"graph"`` (a TF1 variable, tensor or op of TensorFlow's default graph,
            which keeps them until it is reset) or ``"unknown"`` (no root within the search bounds: held from C, by another
            thread's running function, or too deep). A finished frame kept by a traceback or a
            generator is a hop, not a root.
        root: the root in words (``local `solvers` in main()``, ``module-level `train.ALL_MODELS```,
            ``notebook variable `solvers```, ``output history `Out[12]` (also `_12`)``).
        hops: one string per object between the root's value and the target: ``list[2]``,
            ``dict['fold 3']``, ``Solver.model`` (attribute), ``Model.__class__`` etc.
        target: the type name of the object kept alive.
    """

    root_kind: str
    root: str
    hops: tuple[str, ...]
    target: str

    def __str__(self) -> str:
        return " -> ".join((self.root, *self.hops, self.target))


@dataclass(frozen=True)
class AliveObject:
    """A tracked object still alive one trial later (at the end of the next trial, or when the sweep is
    finished for the last trial), after a garbage collection.

    Attributes:
        name: the name given to :meth:`Trial.track`, or the type name for automatic tracking.
        type_name: ``type(obj).__qualname__``.
        source: ``"track"`` (:meth:`Trial.track`), ``"keras"`` (a Keras model created in the trial),
            ``"tf.Graph"`` or ``"tf.Session"`` (created in the trial).
        chain: what keeps it alive (:class:`ReferenceChain`), or ``None`` if the search was skipped
            (the sweep's ``chain_seconds`` budget ran out).
        loop_variable: set (``"`model` in main()"``, ``"`solver` at module level of train"``) when the
            object is held only through loop variables of the sweep (see the module docstring): it goes
            when the next trial rebinds them, so it is listed but not a leak. ``None`` otherwise.
        slot: set (``"`EarlyStopping._model`"``) when the object is held only by an attribute that held
            an earlier trial's object at that trial's end (a one-at-a-time holder: a callback made once
            before the loop): the next trial replaces it, so it is listed but not a leak. ``None``
            otherwise.
        kept: set (``"the sweep's result"``) for an object of the last trial of a sweep driven by a
            library (Optuna, Keras, scikit-learn, Keras Tuner: :mod:`~graphguard.runtime.sweep_engines`)
            when no earlier trial left an object alive: one model kept after the search (a refit
            ``best_estimator_``, a best model) is the search's result, not growth. ``None`` otherwise.
    """

    name: str
    type_name: str
    source: str
    chain: Optional[ReferenceChain]
    loop_variable: Optional[str] = None
    slot: Optional[str] = None
    kept: Optional[str] = None

    @property
    def leaked(self) -> bool:
        """True unless only the sweep's loop variables or a one-at-a-time holder hold the object, or it
        is the result of a library-driven sweep (``kept``)."""
        return self.loop_variable is None and self.slot is None and self.kept is None

    def __str__(self) -> str:
        label = self.name if self.name == self.type_name else f"{self.name} ({self.type_name})"
        if self.loop_variable is not None:
            return f"{label}: held only by the loop variable {self.loop_variable} (freed when rebound; not a leak)"
        if self.slot is not None:
            return (f"{label}: held only by {self.slot}, which held an earlier trial's object and let it go "
                    f"(one at a time; not a leak)")
        chain = self.chain if self.chain is not None else 'alive (reference search skipped: time budget spent)'
        if self.kept is not None and self.chain is None:
            return f"{label}: alive ({self.kept})"
        if self.kept is not None:
            return f"{label}: {chain} ({self.kept}, kept after the search; not growth)"
        return f"{label}: {chain}"


_INDEX = re.compile(r"\[(\d+)\]")


def leak_lines(leaks: tuple) -> list[str]:
    """The lines (indented two spaces) that list a trial's leaked objects: objects whose lines differ
    only in the index of the list that holds them are one line, ``5 x Sequential: module-level
    `models` -> list[43..47] -> Sequential`` (a new user's trial: a grid of 6 models per trial printed
    six near-identical chains per trial, twice); objects of several names held directly by one holder
    are one line too, ``6 objects (5 SymbolicTensor, 1 Operation) held by TensorFlow's default graph
    (...): h, logits, loss, train, x, y`` (a third trial: six such chains per trial of a TF1 sweep)."""
    groups: dict[str, list[tuple[object, str, int | None]]] = {}
    # named objects first, then the others by their text: the same order in every trial (an eleventh
    # new user's trial read a grid's four chains in a different order per trial)
    for obj in sorted(leaks, key=lambda obj: (obj.name == obj.type_name, str(obj))):
        text = str(obj)
        first = _INDEX.search(text)
        groups.setdefault(_INDEX.sub("[#]", text, count=1), []).append((obj, text, int(first[1]) if first else None))
    held: dict[str, list] = {}
    for members in groups.values():
        holder = _holder(members[0][0]) if len(members) == 1 else None
        if holder is not None:
            held.setdefault(holder, []).append(members[0][0])
    lines, said = [], set()
    for key, members in groups.items():
        holder = _holder(members[0][0]) if len(members) == 1 else None
        if holder is not None and len(held[holder]) > 1:
            if holder not in said:
                said.add(holder)
                types: dict[str, int] = {}
                for obj in held[holder]:
                    types[obj.type_name] = types.get(obj.type_name, 0) + 1
                kinds = ", ".join(f"{count} {name}" for name, count in types.items())
                names = ", ".join(obj.name for obj in held[holder])
                lines.append(f"  {len(held[holder])} objects ({kinds}) held by {holder}: {names}")
        elif len(members) == 1:
            lines.append(f"  {members[0][1]}")
        else:  # (several objects may print the same text, with no index: a fourth new user's trial crashed here)
            indices = [index for _, _, index in members if index is not None]
            span = f"[{min(indices)}..{max(indices)}]" if indices else "[#]"
            lines.append(f"  {len(members)} x " + key.replace("[#]", span, 1))
    return lines


#: The numbers a sweep's trials' leak lines differ by: a line's leading count (``5 x Sequential``), list
#: indices (``list[18]``, ``list[43..47]``) and the numbers of a dict key (``dict[(16, 0.001)]``,
#: ``dict[0.01]``: an eleventh new user's trial's grid kept each trial's models by its hyperparameters); in
#: their reasons, every number (``+7.2 MiB``, ``+214 ops``).
_LEAK_NUMBER = re.compile(r"(?<=\A  )\d+(?= x )|\[\d+(?:\.\.\d+)?\]"
                          r"|(?:(?<=[(\[])|(?<=, ))[+-]?\d+(?:\.\d+)?(?:e[+-]?\d+)?(?=[\]),])")
_NUMBER = re.compile(r"(?<![\w.])[+-]?\d+(?:\.\d+)?(?!\w)")


def _slots(text: str, pattern: re.Pattern) -> tuple[tuple[str, ...], list[str]]:
    """``text`` cut at ``pattern``'s matches: (the text between them, the matches)."""
    parts, values, at = [], [], 0
    for match in pattern.finditer(text):
        parts.append(text[at:match.start()])
        values.append(match.group())
        at = match.end()
    parts.append(text[at:])
    return tuple(parts), values


def _shape(record: TrialRecord) -> tuple:
    """What two trials' report lines share when they differ only in numbers (list indices, counts, bytes):
    their leak lines and reasons with those numbers cut out."""
    return (tuple(_slots(line, _LEAK_NUMBER)[0] for line in leak_lines(record.leaks)),
            tuple(_slots(reason, _NUMBER)[0] for reason in record.reasons))


def _merged(texts: list[str], pattern: re.Pattern) -> str:
    """One text for ``texts`` of one shape (:func:`_shape`): each number that differs between them as the
    range of its values (``+7.1..+7.8``; a list index ``[1..39]``, the spans of ``[a..b]`` included)."""
    cut = [_slots(text, pattern) for text in texts]
    parts, out = cut[0][0], []
    for slot in range(len(cut[0][1])):
        values = [found[slot] for _, found in cut]
        if values[0].startswith("["):
            bounds = [int(bound) for value in values for bound in value[1:-1].split("..")]
            low, high = min(bounds), max(bounds)
            value = f"[{low}]" if low == high else f"[{low}..{high}]"
        elif len(set(values)) == 1:
            value = values[0]
        else:
            value = f"{min(values, key=float)}..{max(values, key=float)}"
        out += [parts[slot], value]
    return "".join([*out, parts[-1]])


def block_lines(records: list[TrialRecord]) -> list[str]:
    """The report's lines for consecutive leaking trials whose lines differ only in numbers (one
    :func:`_shape`): one block, ``trials 'units=9' .. 'units=47' (39 trials): model (Sequential):
    module-level `m.models` -> list[1..39] -> Sequential``, or, with other reasons or several lines, a
    head ``trials ... (39 trials), each: <reasons>`` over the merged :func:`leak_lines` (a new user's
    trial: an 80-trial leaking Keras sweep printed about 300 lines, each trial's chain differing from the
    one before only in its list index)."""
    first, last = records[0], records[-1]
    head = f"trials {first.name!r} .. {last.name!r} ({len(records)} trials)"
    each = [leak_lines(record.leaks) for record in records]
    merged = [_merged([lines[row] for lines in each], _LEAK_NUMBER) for row in range(len(each[0]))]
    if len(merged) == 1 and len(first.reasons) == 1 and first.leaks and not first.graph_ops:
        return [f"{head}: {merged[0].strip()}"]  # the line names the object; its reason would repeat it
    reasons = [_merged([record.reasons[row] for record in records], _NUMBER) for row in range(len(first.reasons))]
    return [f"{head}, each: {'; '.join(reasons)}", *merged]


def _holder(obj) -> str | None:
    """What holds ``obj`` directly, its chain's root with no object between (``TensorFlow's default graph
    (until ...) -> SymbolicTensor``); None for longer chains and for objects that are not leaks."""
    chain = getattr(obj, "chain", None)
    if (chain is None or getattr(obj, "loop_variable", None) is not None or getattr(obj, "slot", None) is not None
            or getattr(obj, "kept", None) is not None):
        return None
    if getattr(chain, "hops", True):
        return None
    return chain.root


@dataclass(frozen=True)
class RssTrend:
    """A steady rise of the process's RSS across a sweep's judged trials, under or over the per-trial
    limit: 7.6 MiB kept per trial passes a 32 MiB limit every time, and is 7.4 GiB after 1,000 trials.

    Found by :func:`~graphguard.runtime.sweep_judgement.rss_trend`: a least-squares line through RSS
    after each judged trial (after warm-up, RSS measured, not overlapping other trials; the latest 50)
    against the trial's number, kept when at least 5 trials were judged, the slope is at least 1 MiB
    per trial (the noise floor: below it, allocator and cache noise; 1 GiB over 1,000 trials) and the
    line explains at least 90 % of the variance (``r2``): a cache filled once in trials 2 and 3 and
    then flat is not a trend.

    Attributes:
        bytes_per_trial: the slope (bytes per trial).
        first, last: the first and last trial numbers (``TrialRecord.index``) in the fit.
        trials: trials in the fit.
        r2: the share of the variance of RSS that the line explains (0 to 1).
    """

    bytes_per_trial: float
    first: int
    last: int
    trials: int
    r2: float

    def over(self, trials: int = 1000) -> float:
        """Bytes the trend keeps over ``trials`` trials (default 1,000)."""
        return self.bytes_per_trial * trials

    def __str__(self) -> str:
        # (what 1,000 trials would keep, only from a fit of 20 trials or more: a thirteenth new user's trial
        # read "+10.4 GiB over 1,000 trials" from five points of a 6-fold k-fold as alarming)
        extent = f"; +{bytes_text(self.over())} over 1,000 trials" if self.trials >= 20 else ""
        return (f"RSS rising steadily: +{bytes_text(self.bytes_per_trial)} per trial over trials "
                f"{self.first}-{self.last} (least-squares slope{extent})")


@dataclass(frozen=True)
class TrialRecord:
    """What one trial left behind. Memory in bytes, time in seconds.

    Attributes:
        index: 1-based position in the sweep.
        name: the name given to :meth:`SweepGuard.trial` (default ``"trial N"``).
        seconds: wall time of the trial's body (``time.perf_counter``), without the guard's own
            garbage collections and searches.
        rss_before: RSS at the start, after ``gc.collect()`` and ``malloc_trim(0)`` (bytes), or
            ``None`` without psutil.
        rss_after: RSS at the end, after ``clear_session`` (if asked), ``gc.collect()`` and
            ``malloc_trim(0)`` (bytes), or ``None``.
        alive: the trial's tracked objects still alive one trial later (at the end of the next trial, or
            when the sweep is finished for the last trial), with their chains (:class:`AliveObject`).
        graph_ops: ops added to TensorFlow's default graph during the trial (``Graph.version`` delta),
            or ``None`` when TensorFlow was not loaded at the start or the default graph was replaced
            (``reset_default_graph``, ``clear_session``).
        warmup: True for the first ``warmup`` trials: their RSS and graph ops are not judged.
        leaked: True when the trial was judged to leak (see ``reasons``).
        reasons: why, one phrase each: ``"2 objects alive"``, ``"+48.0 MiB RSS retained (over 32.0 MiB)"``,
            ``"+214 ops kept in the default graph"``.
        guard_seconds: time the guard spent at both ends of the trial (collections, trims, scans,
            search), seconds.
        error: the exception type name if the trial's body raised, else ``None`` (``FAILED (...)`` in
            the report's table).
        judged: False while the trial's objects wait for their judgement (the end of the next trial, or
            :meth:`SweepGuard.report` / :meth:`SweepGuard.finish`): ``alive`` is then empty and
            ``leaked`` / ``reasons`` cover RSS and graph ops only.
        judged_at: when the objects were judged (``"the end of trial 'lr=0.01' (trial 3)"``,
            ``"the end of the sweep (report() or finish())"``), or ``None``.
        alive_at_end: the trial's tracked objects alive at its own end, before the judgement.
        freed_later: of those, how many were freed before the judgement (by the next trial: a callback's
            or a history's ``model`` replaced, a loop variable rebound, an exception's traceback gone).
        rss_trend: the :class:`RssTrend` of the judged trials up to this one, when RSS rose steadily
            across them (a reason to leak after warm-up, under the per-trial limit too); ``None``
            otherwise.
    """

    index: int
    name: str
    seconds: float
    rss_before: Optional[int]
    rss_after: Optional[int]
    alive: tuple[AliveObject, ...]
    graph_ops: Optional[int]
    warmup: bool
    leaked: bool
    reasons: tuple[str, ...]
    guard_seconds: float = 0.0
    error: Optional[str] = None
    judged: bool = True
    judged_at: Optional[str] = None
    alive_at_end: int = 0
    freed_later: int = 0
    rss_trend: Optional[RssTrend] = None

    @property
    def retained_bytes(self) -> Optional[int]:
        """``rss_after - rss_before`` (bytes; negative when the trial freed memory), or ``None``."""
        if self.rss_before is None or self.rss_after is None:
            return None
        return self.rss_after - self.rss_before

    @property
    def leaks(self) -> tuple[AliveObject, ...]:
        """The alive objects that count as leaks (not held only by the loop variable)."""
        return tuple(obj for obj in self.alive if obj.leaked)

    def message(self, fix: bool = True, output_fix: bool = True) -> str:
        """The one message of a leak warning or error: trial, bytes, objects and chains, when judged, fix.

        ``fix=False`` leaves the fix paragraph out, with a line saying where it is (a sweep's warnings
        after its first, :class:`~graphguard.runtime.sweep.SweepGuard` gives it once per sweep);
        ``output_fix=False`` likewise leaves out the notebook paragraph on IPython's output history."""
        retained = self.retained_bytes
        # RSS alone is reported, not failed: "grew", not "leaked", above a passing verdict (a new user's trial)
        verb = "leaked" if self.leaks or self.graph_ops else "grew"
        head = f"trial {self.name!r} (trial {self.index} of the sweep) {verb}: {'; '.join(self.reasons)}"
        if self.trend_only:  # a note, not a verdict (a fifth new user's trial read "grew" on correct code as one)
            head = (f"note: from trial {self.name!r} (trial {self.index} of the sweep) on, RSS rises across trials, "
                    f"reported, not failed: {'; '.join(self.reasons)}")
        if retained is not None:
            sign = "+" if retained >= 0 else ""
            head += f". RSS {bytes_text(self.rss_before)} -> {bytes_text(self.rss_after)} ({sign}{bytes_text(retained)} retained after gc)"
        lines = [head + "."]
        if self.judged_at is not None and fix:
            lines.append(f"  (judged at {self.judged_at}: a trial's objects are judged one trial later, once the "
                         f"next trial has replaced what holds one model at a time)")
        elif self.judged_at is not None:  # the why is in the sweep's first leak message, with the fix
            lines.append(f"  (judged at {self.judged_at})")
        lines.extend(leak_lines(self.leaks))
        if output_fix and self.has_output_root():
            lines.append(_FIX_OUTPUT)
        only_rss = not self.leaks and not self.graph_ops
        lines.append((_FIX_RSS if only_rss else _FIX) if fix else "(The fix is in this sweep's first leak message.)")
        return "\n".join(lines)

    @property
    def trend_only(self) -> bool:
        """Whether the RSS trend is its one reason: nothing of it alive, no graph op, under the limit."""
        return self.rss_trend is not None and len(self.reasons) == 1 and not self.leaks and not self.graph_ops

    def has_output_root(self) -> bool:
        """Whether an object judged leaked is held by IPython's output history (``Out[N]``)."""
        return any(obj.chain is not None and obj.chain.root_kind == "output" for obj in self.leaks)


def trial_label(pairs: tuple[tuple[str, Any], ...]) -> Optional[str]:
    """``graphguard run --sweep``'s trial name (``SweepGuard._label``, which the instrumented script calls)
    from the loop target's names and values (``lr=0.001``): the names bound to a number, a string, a bool
    or None (a short tuple of them), each ``repr`` cut to 24 characters; None (the guard's ``trial N``)
    when none is, as for a k-fold's index arrays (``train_idx=array([  0... 198, 199])`` made a
    150-character table; a new user's trial)."""
    import reprlib

    def plain(value: Any) -> Any:
        """A NumPy scalar as the Python number it holds (``np.logspace``'s ``np.float64(0.0015...)``
        read ``lr=np.float64...``, the same for three trials: a new user's trial)."""
        if type(value).__module__ == "numpy" and hasattr(value, "item") and getattr(value, "ndim", 1) == 0:
            value = value.item()
        return float(f"{value:.6g}") if isinstance(value, float) else value  # 6 significant digits

    def simple(value: Any, depth: int = 0) -> bool:
        if value is None or isinstance(value, (bool, int, float, str)):
            return True
        return (depth == 0 and isinstance(value, tuple) and len(value) <= 4
                and all(simple(item, 1) for item in value))

    short = reprlib.Repr()
    short.maxstring = short.maxother = 24
    short.maxlist = short.maxtuple = short.maxdict = 4
    values = [(name, plain(value)) for name, value in pairs]
    kept = [f"{name}={short.repr(value)}" for name, value in values if simple(value)]
    return ", ".join(kept) if kept else None


def _mib(nbytes: Optional[int], sign: bool = False) -> str:
    if nbytes is None:
        return "-"
    return f"{nbytes / 2**20:+.1f}" if sign else f"{nbytes / 2**20:.1f}"


@dataclass(frozen=True)
class SweepReport:
    """Every trial of a sweep (:class:`TrialRecord`) and the settings that judged them.

    ``str()`` is a table (trial, seconds, RSS before / after / retained in MiB, objects alive) followed
    by each leaking trial's reasons and chains. :meth:`as_dict` gives plain JSON-ready data. ``notes``:
    what the guard could not measure and why (an engine whose trials it never saw), one line each.
    ``rss_trend``: the sweep's :class:`RssTrend` over its judged trials when RSS rose steadily across
    them, else ``None``. ``watched``: what the guard looked for in the trials, for the report's words
    (``"track"``: ``track()`` was called; ``"keras"``, ``"tf.Graph"``, ``"tf.Session"``: those were
    looked for automatically; ``"bound"``: ``graphguard run --sweep``'s values bound by the loop's body);
    not in :meth:`as_dict`.
    """

    trials: tuple[TrialRecord, ...]
    max_retained_bytes: Optional[int]
    warmup: int
    clear_session: bool
    rss_available: bool = True
    notes: tuple[str, ...] = ()
    rss_trend: Optional[RssTrend] = None
    watched: tuple[str, ...] = ()

    @property
    def leaked(self) -> tuple[TrialRecord, ...]:
        """The trials judged to leak."""
        return tuple(record for record in self.trials if record.leaked)

    def as_dict(self) -> dict[str, Any]:
        """The report as plain data (dicts, lists, numbers, strings), ``retained_bytes`` included."""
        data = asdict(self)
        del data["watched"]  # the text's concern: the JSON is what it was
        for record, plain in zip(self.trials, data["trials"]):
            plain["retained_bytes"] = record.retained_bytes
            for obj, obj_plain in zip(record.alive, plain["alive"]):
                obj_plain["chain_text"] = None if obj.chain is None else str(obj.chain)
                obj_plain["leaked"] = obj.leaked
        return data

    def plot(self, path: str) -> str:
        """Draw seconds and RSS retained (MiB) per trial into the PNG file ``path``, trials judged to leak
        in red and marked ``LEAK``, from :meth:`as_dict` (what ``--json`` writes); returns ``path``.

        Needs matplotlib (``pip install -e '.[plot]'`` in a clone of graphguard), imported here, with its Agg backend (no
        display). Raises :class:`graphguard.plot.PlotUnavailable` without it, ``ValueError`` when no
        trial was measured or ``path`` is not a ``.png`` name, ``OSError`` when ``path`` cannot be written."""
        from graphguard.plot import plot_sweep_report

        return plot_sweep_report(self, path)

    def _blocks(self, leaked: tuple[TrialRecord, ...]) -> list[list[TrialRecord]]:
        """``leaked`` in blocks of consecutive trials (no trial between them) whose lines differ only in
        numbers (:func:`_shape`), for :func:`block_lines`; the first leaking trial alone, in full, and the
        trials flagged by the RSS trend alone each alone (said once, below the table)."""
        numbers = {id(record): number for number, record in enumerate(self.trials)}
        blocks: list[list[TrialRecord]] = []
        shapes: list[tuple] = []
        first = None  # the first leaking trial's block: stays in full
        for record in leaked:
            shape = None if record.trend_only else _shape(record)
            block = blocks[-1] if blocks else None
            if (block is not None and shape is not None and block is not first and shapes[-1] == shape
                    and numbers[id(record)] == numbers[id(block[-1])] + 1):
                block.append(record)
                continue
            blocks.append([record])
            shapes.append(shape)
            if first is None and shape is not None:
                first = blocks[-1]
        return blocks

    def table(self) -> list[str]:
        """The summary table, one string per line."""
        width = max([len("trial"), *(len(record.name) for record in self.trials)])
        lines = [f"  {'trial':<{width}}  {'seconds':>8}  {'RSS before':>10}  {'RSS after':>10}  {'retained':>9}  {'alive':>5}",
                 f"  {'':<{width}}  {'':>8}  {'(MiB)':>10}  {'(MiB)':>10}  {'(MiB)':>9}  {'':>5}"]
        limit = self.max_retained_bytes
        for number, record in enumerate(self.trials):
            over = limit is not None and record.retained_bytes is not None and record.retained_bytes > limit
            # Each mark says what it stands on: objects alive under the RSS limit read as a contradiction
            # beside the header's "limit 32 MiB" when marked "LEAK" alone (a twentieth new user's trial)
            leak = ("LEAK (objects alive)" if record.leaks else "LEAK" if not record.judged else
                    "RSS trend" if record.rss_trend is not None and not over else "LEAK? (RSS)")
            if record.leaks and over and not record.warmup:  # a warm-up trial's RSS is not judged
                leak = "LEAK (objects alive, RSS)"
            if record.leaked and record.graph_ops and not record.warmup:
                leak = "LEAK (graph ops)" if not record.leaks else f"{leak[:-1]}, graph ops)"
            flag = "  warm-up" if record.warmup else (f"  {leak}" if record.leaked else "")
            if record.trend_only:
                # The trend once, where it starts, not on every row after (a correct Keras sweep read as
                # flagged: "RSS trend" on 35 of 40 rows, reported, not failed; a new user's trial)
                flag = "" if number and self.trials[number - 1].trend_only else f"  {self._trend_from(number)}"
            if record.warmup and record.leaked:
                flag = f"  warm-up, {leak}"
            if not record.judged:
                flag = f"{flag}{',' if flag else ' '} objects not judged yet"
            if record.error is not None:
                flag = f"{flag}{',' if flag else ' '} FAILED ({record.error})"
            lines.append(
                f"  {record.name:<{width}}  {record.seconds:>8.2f}  {_mib(record.rss_before):>10}  "
                f"{_mib(record.rss_after):>10}  {_mib(record.retained_bytes, sign=True):>9}  {len(record.leaks):>5}{flag}"
            )
        return lines

    def _trend_from(self, number: int) -> str:
        """The table's mark at trial ``number`` (0-based), where a run of trials flagged by the RSS trend
        alone starts: its slope as fitted at the run's last trial."""
        end = number
        while end + 1 < len(self.trials) and self.trials[end + 1].trend_only:
            end += 1
        return (f"RSS trend from here on: +{bytes_text(self.trials[end].rss_trend.bytes_per_trial)} per trial "
                f"(reported, not failed)")

    def _nothing_alive(self) -> str:
        """The line for a sweep none of whose trials had a watched object alive at its end: what was
        watched, when the guard looked for anything; else how to track (the Python API's trials)."""
        watched = set(self.watched)
        if "keras" in watched:  # a model, whether Keras's or a graph or session of TensorFlow's
            watched -= {"tf.Graph", "tf.Session"}
        kinds = [kind for kind, key in (("model", "keras"), ("tf.Graph", "tf.Graph"), ("session", "tf.Session"),
                                        ("tracked object", "track"), ("value bound by the loop's body", "bound"))
                 if key in watched]
        if not kinds:
            return ("(no object was tracked in any trial, so only RSS and graph ops were judged: track what a trial "
                    "makes with trial.track(obj) or sweep.track(obj); Keras models, tf.Graphs and sessions are found "
                    "without it)")
        # (a correct Keras sweep under graphguard run --sweep, whose models were looked for in every trial, was
        # told to call trial.track(), which it has no trial to call on; a new user's trial)
        named = kinds[0] if len(kinds) == 1 else f"{', '.join(kinds[:-1])} or {kinds[-1]}"
        return f"(no {named} was alive at the end of its trial, so no trial kept one)"

    def __str__(self) -> str:
        limit = ("no RSS limit per trial" if self.max_retained_bytes is None
                 else f"limit {bytes_text(self.max_retained_bytes)} retained per trial")
        head = (f"graphguard sweep: {len(self.trials)} trial{'s' if len(self.trials) != 1 else ''}, "
                f"{self.warmup} warm-up, {limit}{', clear_session after each' if self.clear_session else ''}")
        if not self.rss_available:
            head += " (no RSS: pip install psutil to measure it)"
        lines = [head, *self.table()]
        leaked = self.leaked
        if not self.trials:
            lines.append("no trial was measured, so nothing was judged: " + (
                "; ".join(self.notes) if self.notes else
                "no `with sweep.trial()` ran, and no engine's callback saw a trial (a Keras callback the fits did "
                "not get, such as in Keras 3's SKLearnClassifier(fit_kwargs=...), or fits run in other processes: "
                "n_jobs > 1)"))
        elif not leaked:
            lines.append("no trial leaked")
        if self.rss_trend is not None:
            lines.append(f"{self.rss_trend}: memory a long sweep keeps, whatever each trial keeps against the limit "
                         "(with no object of a trial alive, TensorFlow's and Keras' own caches grow this way: "
                         "on Keras 3 clear_session() per trial frees little of them, a worker process per trial all)")
        if self.trials:
            lines.extend(f"({note})" for note in self.notes)
            if not any(record.alive_at_end or record.alive for record in self.trials):
                lines.append(self._nothing_alive())
        trend_said = False
        position = {id(record): number for number, record in enumerate(leaked)}
        for block in self._blocks(leaked):
            if len(block) > 1:
                lines.extend(block_lines(block))
                continue
            record = block[0]
            if record.trend_only and trend_said:
                continue  # the sweep's trend line above says it; the first such trial is named below
            lines.append(f"trial {record.name!r}: {'; '.join(record.reasons)}")
            lines.extend(leak_lines(record.leaks))
            if record.trend_only:
                trend_said = True
                later = [r.name for r in leaked[position[id(record)] + 1:] if r.trend_only]
                if later:
                    lines.append(f"  (and {len(later)} later trial{'s' if len(later) != 1 else ''} on the same trend: "
                                 f"{', '.join(repr(name) for name in later[:3])}{', ...' if len(later) > 3 else ''})")
        held = [(record, obj) for record in self.trials for obj in record.alive if obj.loop_variable is not None]
        if held:
            record, obj = held[-1]
            lines.append(f"({len(held)} object{'s' if len(held) != 1 else ''} held only by a loop variable when "
                         f"judged, e.g. {obj.name} by {obj.loop_variable}: freed when rebound, not a leak)")
        slots = [(record, obj) for record in self.trials for obj in record.alive if obj.slot is not None]
        if slots:
            record, obj = slots[-1]
            lines.append(f"({len(slots)} object{'s' if len(slots) != 1 else ''} held only by a one-at-a-time holder "
                         f"when judged, e.g. {obj.name} by {obj.slot}: replaced by the next trial, not a leak)")
        kept = [obj for record in self.trials for obj in record.alive if obj.kept is not None]
        if kept:
            obj = kept[-1]
            held = f": {obj.chain}" if obj.chain is not None else ""
            lines.append(f"(the last trial's {obj.name} is the sweep's result, kept after it (a refit, a best model; no "
                         f"earlier trial's object stayed): not growth{held})")
        if any(obj.chain is not None and obj.chain.root_kind == "output" for record in leaked for obj in record.leaks):
            lines.append(f"({_FIX_OUTPUT})")
        freed = sum(record.freed_later for record in self.trials)
        if freed:
            lines.append(f"({freed} object{'s' if freed != 1 else ''} alive at a trial's end freed by the next trial "
                         f"(a callback's or history's model, a loop variable, a traceback): not leaks)")
        return "\n".join(lines)
