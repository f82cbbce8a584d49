"""Pictures of what the demos and the runtime guards measured, as PNG files (matplotlib, optional).

The stories graphguard tells are curves: step time and graph ops creeping up in a session loop that
builds ops (the public report this project starts from: 0.1 s per step past 1.7 s), RSS climbing trial
after trial in a sweep that keeps every model (the CS231n learning-rate sweep). Four drawings:

* :func:`plot_demo`: the slowdown demo's two scripts, step time (ms) and graph ops against step;
* :func:`plot_sweeps`: the sweep demo's pairs, RSS retained (MiB, summed over trials) and objects
  alive per trial, from the ``SweepReport.as_dict()`` data the scripts write with ``--json``;
* :func:`plot_guard_report`: one :class:`~graphguard.runtime.report.GuardReport`'s step time, ops and
  RSS against step, each growth pattern marked with its first source line (``GuardReport.plot``);
* :func:`plot_sweep_report`: one :class:`~graphguard.runtime.sweep_report.SweepReport`'s seconds and
  RSS retained per trial, leaking trials marked (``SweepReport.plot``).

matplotlib is the ``plot`` extra (``pip install -e '.[plot]'`` in a clone of graphguard), imported only when a picture is
asked for, and used through its Agg canvas (no display, no change to ``pyplot``'s backend, so a
notebook's own plots are left alone). Without it every function raises :class:`PlotUnavailable`, whose
message says how to install it (the command line prints it as one line, exit 2). A picture is written
to a temporary file next to ``path`` and moved into place, so a failed drawing leaves no half file.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
import warnings
from typing import Any, Iterable, Mapping, Optional

__all__ = ["PlotUnavailable", "INSTALL", "require", "check_target", "error_line", "plot_demo", "plot_sweeps", "plot_guard_report",
           "plot_sweep_report"]

#: What to run when matplotlib is missing.
INSTALL = "drawing a plot needs matplotlib: pip install -e '.[plot]' in a clone of graphguard"
#: The colours of the two sides of every picture (matplotlib's default blue and red).
INCORRECT_COLOR = "#d62728"
CORRECT_COLOR = "#1f77b4"
#: a sweep's trial flagged only by its RSS (over the limit, or the sweep's steady rise): no object or
#: graph op was found kept, so it is reported, not failed: a neutral grey, not a warning colour (a
#: correct Keras sweep drawn mostly orange read as flagged; a new user's trial)
RSS_ONLY_COLOR = "#8c8c8c"
#: Pixels per inch of the PNG files (a 11 x 4.4 inch figure is 1100 x 440 pixels).
DPI = 100


class PlotUnavailable(RuntimeError):
    """matplotlib cannot be imported; the message says how to install it."""


def require() -> None:
    """Raise :class:`PlotUnavailable` now when matplotlib cannot be imported (before a long run whose
    picture could not be drawn)."""
    _figure_class()


def check_target(path: str, option: str = "--plot") -> str:
    """``path`` checked before a long run whose picture it is to hold: matplotlib importable, a ``.png``
    name, its folder existing; returns ``path``. Raises :class:`PlotUnavailable` or ``ValueError``
    (each with a one-line message naming ``option``)."""
    require()
    _png_name(path, option)
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        raise ValueError(f"{option}: cannot write {path}: no folder {folder}")
    if os.path.isdir(path):
        raise ValueError(f"{option}: cannot write {path}: it is a folder")
    try:  # a read-only or immutable folder: found now, not after the run
        handle, probe = tempfile.mkstemp(prefix=".graphguard-plot-", suffix=".png", dir=folder)
        os.close(handle)
        os.unlink(probe)
    except OSError as error:
        raise ValueError(f"{option}: cannot write {path}: {error.strerror or error}") from None
    return path


def _png_name(path: str, option: str = "path") -> None:
    if not str(path).lower().endswith(".png"):
        raise ValueError(f"{option}: {str(path)!r} is not a .png file name (the pictures are PNG files)")


def error_line(error: BaseException) -> str:
    """One line for a drawing that failed: the first line of the error's message (matplotlib's parser
    errors run over several), or its type's name, and the type's name before a lookup error's key."""
    text = str(error)
    if isinstance(error, LookupError) or not text:  # ``KeyError(None)`` reads "None": a bug of ours, named
        return f"{type(error).__name__}: {text}" if text else type(error).__name__
    return text.splitlines()[0]


def _figure_class():
    try:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
    except ImportError:
        raise PlotUnavailable(INSTALL) from None
    return Figure, FigureCanvasAgg


def _figure(width: float, height: float):
    Figure, FigureCanvasAgg = _figure_class()
    figure = Figure(figsize=(width, height), dpi=DPI, layout="constrained")
    FigureCanvasAgg(figure)
    return figure


@contextlib.contextmanager
def _drawing():
    """Names are text, not mathematics (a trial named ``lr=$1`` is drawn as written, and one named
    ``a=$\\frac$`` does not fail the drawing); a glyph the font lacks (CJK in DejaVu Sans) is drawn as
    a box without a warning per character."""
    import matplotlib

    with matplotlib.rc_context({"text.parse_math": False, "axes.formatter.useoffset": False}), \
            warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=r"Glyph \d+ .* missing from font")
        warnings.filterwarnings("ignore", message=".*constrained_layout not applied")
        yield


def _label(name: str, number: int, width: int = 18) -> str:
    """A trial's name on one line, at most ``width`` characters (``trial N`` for an empty one)."""
    text = " ".join(str(name).split()) or f"trial {number}"
    return text if len(text) <= width else text[: width - 1] + "…"


def _save(figure, path: str) -> str:
    """Write ``figure`` as a PNG to ``path`` atomically; returns ``path``. Raises ``ValueError`` for a
    name that is not ``.png``, ``OSError`` (naming ``path``) when it cannot be written."""
    _png_name(path)
    folder = os.path.dirname(os.path.abspath(path))
    temporary = None
    try:
        handle, temporary = tempfile.mkstemp(prefix=".graphguard-plot-", suffix=".png", dir=folder)
        with os.fdopen(handle, "wb") as out:
            figure.savefig(out, format="png", dpi=DPI)
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(temporary, 0o666 & ~umask)  # as open() would make it (mkstemp's file is private)
        os.replace(temporary, path)
    except OSError as error:
        raise OSError(error.errno, f"cannot write {path}: {error.strerror or error}") from None
    finally:
        if temporary is not None and os.path.exists(temporary):
            os.unlink(temporary)
    return path


def _integer_axis(axis) -> None:
    from matplotlib.ticker import MaxNLocator

    axis.set_major_locator(MaxNLocator(integer=True))


def _mib_axis(axes, values: list[float], span: float = 8.0) -> None:
    """RSS in MiB on ``axes``' y axis, at least ``span`` MiB tall: a flat run's noise (0.1 MiB) is not
    drawn as a ramp."""
    low, high = min(values), max(values)
    if high - low < span:
        middle = (low + high) / 2
        axes.set_ylim(middle - span / 2, middle + span / 2)


def _log_scale(axes) -> None:
    """A log y axis with plain numbers at 1, 2 and 5 of each decade (``20``, ``50``, ``100``), not ``2x10^1``."""
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

    axes.set_yscale("log")
    axes.yaxis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
    axes.yaxis.set_major_formatter(FuncFormatter(lambda value, _: f"{value:,.10g}"))
    axes.yaxis.set_minor_formatter(NullFormatter())


def _thousands(axis) -> None:
    """Whole numbers with thousands separators (``14,000``) on ``axis``."""
    from matplotlib.ticker import FuncFormatter, MaxNLocator

    axis.set_major_locator(MaxNLocator(integer=True, steps=[1, 2, 2.5, 5, 10]))
    axis.set_major_formatter(FuncFormatter(lambda value, _: f"{value:,.0f}"))


def _mib(nbytes: Optional[float]) -> Optional[float]:
    return None if nbytes is None else nbytes / 2**20


# ---------------------------------------------------------------------------------------------------
# the demos
# ---------------------------------------------------------------------------------------------------


def plot_demo(runs: Mapping[str, Mapping[int, Any]], path: str, *, incorrect: str, correct: str) -> str:
    """The slowdown demo as a picture: step time (ms, log scale) and graph ops (linear: a constant
    number of ops per step is a straight line) against step for both scripts, side by side.
    ``runs``: script name -> step number -> record with ``seconds``
    (wall time of the step) and ``ops`` (``Graph.version`` after it), as
    :func:`graphguard.demo.parse_steps` reads them; ``incorrect``/``correct`` name the two scripts.
    Writes a 1100 x 440 PNG to ``path`` and returns it. Raises :class:`PlotUnavailable`, ``ValueError``
    when neither script has a step or ``path`` is not a ``.png`` name, ``OSError``."""
    _png_name(path)
    if not any(runs.get(name) for name in (incorrect, correct)):
        raise ValueError("no step was measured: nothing to draw")
    with _drawing():
        figure = _figure(11, 4.4)
        times, ops = figure.subplots(1, 2)
        for name, color, label in ((incorrect, INCORRECT_COLOR, "ops built inside the session loop"),
                                   (correct, CORRECT_COLOR, "ops built once, before the session")):
            records = runs.get(name) or {}
            steps = sorted(records)
            if not steps:
                continue
            marker = "o" if len(steps) < 20 else None
            times.plot(steps, [records[s].seconds * 1e3 for s in steps], color=color, linewidth=1.2, marker=marker,
                       markersize=3, label=f"{name}: {label}")
            ops.plot(steps, [records[s].ops for s in steps], color=color, linewidth=1.6, marker=marker, markersize=3)
            ops.annotate(f"{records[steps[-1]].ops:,} ops", (steps[-1], records[steps[-1]].ops), xytext=(-4, 4),
                         textcoords="offset points", ha="right", va="bottom", fontsize=9, color=color)
        times.set(title="Step time", xlabel="training step", ylabel="step time (ms, log scale)")
        # Graph size on a linear axis: ops added at a constant rate are a straight line (on a log axis
        # linear growth looks like it levels off). Step time stays on a log axis: 0.4 ms and 280 ms.
        ops.set(title="Graph size", xlabel="training step", ylabel="ops in the graph")
        _log_scale(times)
        _thousands(ops.yaxis)
        ops.set_ylim(0, ops.get_ylim()[1] * 1.1)  # room for the label at the top curve's end
        for axes in (times, ops):
            _integer_axis(axes.xaxis)
            axes.grid(True, which="major", alpha=0.3)
        figure.suptitle("graphguard demo: the same model trained twice; only where the ops are built differs")
        figure.legend(loc="outside lower center", ncols=2, frameon=False)
        return _save(figure, path)


def _kept_something(trial: dict) -> bool:
    """Whether a trial of ``SweepReport.as_dict()`` kept an object judged a leak or default-graph ops,
    or was not judged (the table's ``LEAK``), rather than being flagged by its RSS alone (``LEAK?``)."""
    return (any(judged_leak(obj) for obj in trial.get("alive", ())) or bool(trial.get("graph_ops"))
            or not trial.get("judged", True))


def judged_leak(obj: dict) -> bool:
    """Whether an object of :meth:`SweepReport.as_dict() <graphguard.runtime.sweep_report.SweepReport.as_dict>`'s ``alive``
    lists was judged a leak (not excused as held only by a loop variable or a one-at-a-time holder);
    data without ``leaked`` counts unless a loop variable held it. What the demo's tables and pictures
    count as objects kept."""
    return bool(obj.get("leaked", obj.get("loop_variable") is None))


def _trial_series(report: Mapping[str, Any]) -> tuple[list[int], list[float], list[int], list[bool]]:
    """(trial numbers, RSS retained summed over the trials so far in MiB, objects judged leaked, leaked)
    of one ``SweepReport.as_dict()``."""
    numbers, total, alive, leaked = [], [], [], []
    running = 0.0
    for index, trial in enumerate(report.get("trials", []), start=1):
        numbers.append(index)
        running += _mib(trial.get("retained_bytes")) or 0.0
        total.append(running)
        alive.append(sum(1 for obj in trial.get("alive", []) if judged_leak(obj)))
        leaked.append(bool(trial.get("leaked")))
    return numbers, total, alive, leaked


def _zero_marks(axes, positions: list[float], color: str) -> None:
    """A bar of height 0 is invisible: at each of ``positions`` a short thick dash on the zero line in
    the bar's ``color``, labelled ``0``, so that a fixed sweep's "no object kept" is drawn, not blank."""
    if not positions:
        return
    axes.plot(positions, [0] * len(positions), linestyle="none", marker="_", markersize=18, markeredgewidth=3,
              color=color, clip_on=False, zorder=3)
    for position in positions:
        axes.annotate("0", (position, 0), xytext=(0, 4), textcoords="offset points", ha="center", va="bottom",
                      fontsize=8, color=color)


def plot_sweeps(pairs: Iterable[tuple[str, Mapping[str, Any], Mapping[str, Any]]], path: str) -> str:
    """The sweep demo as a picture: for each (title, leaking report, fixed report), RSS retained summed
    over the trials so far (MiB, from 0) and the objects judged leaked per trial, leaking sweep against
    fixed (a count of 0 drawn as a dash labelled ``0``, not an invisible bar), trials judged to leak
    marked with a cross. Reports are ``SweepReport.as_dict()`` data (what
    the demo's scripts write with ``--json``). Writes a PNG 1100 pixels wide (260 high per pair, plus
    the title) to ``path`` and returns it. Raises :class:`PlotUnavailable`, ``ValueError`` when no pair
    has a trial or ``path`` is not a ``.png`` name, ``OSError``."""
    _png_name(path)
    pairs = [pair for pair in pairs if pair[1].get("trials") or pair[2].get("trials")]
    if not pairs:
        raise ValueError("no trial was measured: nothing to draw")
    with _drawing():
        figure = _figure(11, 0.9 + 2.6 * len(pairs))
        grid = figure.subplots(len(pairs), 2, squeeze=False)
        for row, (title, leaking, fixed) in enumerate(pairs):
            memory, objects = grid[row]
            for report, color, label, offset in ((leaking, INCORRECT_COLOR, "keeps every trial's model", -0.2),
                                                 (fixed, CORRECT_COLOR, "frees each trial's model", 0.2)):
                numbers, total, alive, leaked = _trial_series(report)
                memory.plot(numbers, total, color=color, marker="o", markersize=4, linewidth=1.6,
                            label=label if row == 0 else None)
                marked = [n for n, flag in zip(numbers, leaked) if flag]
                if marked:
                    memory.plot(marked, [total[n - 1] for n in marked], linestyle="none", marker="x", markersize=9,
                                color="black", label="trial judged to leak" if row == 0 and report is leaking else None)
                objects.bar([n + offset for n in numbers], alive, width=0.4, color=color)
                _zero_marks(objects, [n + offset for n, count in zip(numbers, alive) if count == 0], color)
            memory.set_title(_label(title, row + 1, 70), loc="left", fontsize=10)
            memory.set(xlabel="trial", ylabel="RSS retained, summed (MiB)")
            memory.set_ylim(bottom=min(0.0, memory.get_ylim()[0]))
            objects.set_title("objects alive one trial later", loc="left", fontsize=10)
            objects.set(xlabel="trial", ylabel="objects kept (count)")
            for axes in (memory, objects):
                axes.grid(True, alpha=0.3)
                _integer_axis(axes.xaxis)
            _integer_axis(objects.yaxis)
            objects.set_ylim(top=max(1.0, objects.get_ylim()[1]))
        figure.suptitle("graphguard demo sweep: memory a sweep keeps, trial after trial, under SweepGuard")
        figure.legend(loc="outside lower center", ncols=3, frameon=False)
        return _save(figure, path)


# ---------------------------------------------------------------------------------------------------
# the runtime reports
# ---------------------------------------------------------------------------------------------------

#: Growth patterns drawn with a line of their own and a legend entry; the others are drawn faint.
GROWTH_LINES = 5
_GROWTH_COLORS = ("black", "#9467bd", "#2ca02c", "#ff7f0e", "#8c564b")


#: Fetches drawn with a step-time line of their own; the others share one grey line.
FETCH_LINES = 4
_FETCH_COLORS = (INCORRECT_COLOR, CORRECT_COLOR, "#2ca02c", "#ff7f0e")


def _step_times(axes, series) -> None:
    """Step time (ms) against step, one line per fetch (``StepSample.fetch``, the :data:`FETCH_LINES`
    most sampled, the others together in grey): a loop that alternates a 30 ms training run with a
    1 ms evaluation run is then two lines, each with its own trend, not a 1-30 ms sawtooth. A series
    of one fetch (or none named) is one red line, as before."""
    groups: dict[Any, list] = {}
    for sample in series:
        groups.setdefault(getattr(sample, "fetch", None), []).append(sample)
    if len(groups) > 1 and 0 < len(groups.get(None, ())) <= 2:
        del groups[None]  # the report's own last sample (no run fetched it), not a fetch of its own
    ranked = sorted(groups, key=lambda fetch: -len(groups[fetch]))
    lines = [(fetch, groups[fetch]) for fetch in ranked[:FETCH_LINES]]
    rest = sorted((sample for fetch in ranked[FETCH_LINES:] for sample in groups[fetch]), key=lambda s: s.step)
    if rest:
        lines.append((None, rest))
    several = len(lines) > 1
    handles, labels = [], []
    for index, (fetch, samples) in enumerate(lines):
        other = several and index == FETCH_LINES
        color = "gray" if other else _FETCH_COLORS[index % len(_FETCH_COLORS)]
        marker = "o" if len(samples) < 30 else None
        drawn, = axes.plot([sample.step for sample in samples], [sample.seconds * 1e3 for sample in samples],
                           color=color, linewidth=1.2, marker=marker, markersize=3)
        handles.append(drawn)
        labels.append(f"other fetches: {len(samples)} point{'s' * (len(samples) != 1)}" if other else
                      f"{f'sess.run({fetch})' if fetch is not None else 'fetch not recorded'}: "
                      f"{len(samples)} point{'s' * (len(samples) != 1)}")
    if several:  # the axes' own legend, beside them (inside it covered the curves: a thirteenth new user's
        # trial); the figure's lists the growth lines
        axes.legend(handles, labels, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0, fontsize=8,
                    frameon=False, title="step time per fetch", title_fontsize=8)


def plot_guard_report(report, path: str) -> str:
    """One guard's run as a picture: step time (ms, log scale; one line per fetch, see
    :func:`_step_times`), graph ops (linear) and RSS (MiB) against step, from ``report.series``
    (:class:`~graphguard.runtime.report.StepSample`); the first
    :data:`GROWTH_LINES` growth patterns are dashed lines at their first step, labelled with their
    first source line (``train.py:57``), the others faint lines counted in the legend. RSS is left out
    when psutil was missing. Writes a 1000 x 780 PNG to ``path`` and returns it. Raises
    :class:`PlotUnavailable`, ``ValueError`` when the series is empty (no step measured) or ``path`` is
    not a ``.png`` name, ``OSError``."""
    _png_name(path)
    series = tuple(report.series)
    if not series:
        raise ValueError("the guard measured no step: nothing to draw")
    with _drawing():
        figure = _figure(10, 7.8)
        times, ops, memory = figure.subplots(3, 1, sharex=True)
        steps = [sample.step for sample in series]
        marker = "o" if len(series) < 30 else None
        _step_times(times, series)
        times.set(ylabel="step time (ms, log scale)")
        _log_scale(times)
        ops.plot(steps, [sample.ops for sample in series], color=INCORRECT_COLOR, linewidth=1.6, marker=marker,
                 markersize=3)
        ops.set(ylabel="ops in the graph")
        _thousands(ops.yaxis)
        rss = [(sample.step, _mib(sample.rss_bytes)) for sample in series if sample.rss_bytes is not None]
        if rss:
            # A few samples are points, not a line: two reads (after warm-up, at the end) joined by a line
            # looked like steady growth on a clean run (a sixth new user's trial).
            few = len(rss) < 4
            memory.plot([s for s, _ in rss], [m for _, m in rss], color=INCORRECT_COLOR, marker="o",
                        markersize=5 if few else 3, linewidth=0 if few else 1.2)
            if few:
                memory.text(0.01, 0.95, f"{len(rss)} RSS read{'s' if len(rss) != 1 else ''} (at most one a second)",
                            ha="left", va="top", fontsize=8, transform=memory.transAxes)
            _mib_axis(memory, [m for _, m in rss])
        else:
            memory.text(0.5, 0.5, "RSS not measured (install psutil: pip install psutil)",
                        ha="center", va="center", transform=memory.transAxes)
        memory.set(ylabel="RSS (MiB)", xlabel="guarded step (Session.run calls)")
        _integer_axis(memory.xaxis)
        if steps[-1] - steps[0] < 4:  # a run stopped in its first steps: whole steps on the axis
            memory.set_xlim(max(0, steps[0] - 2), steps[-1] + 2)
        counts = [sample.ops for sample in series]
        if max(counts) - min(counts) < 4:
            ops.set_ylim(min(counts) - 2, max(counts) + 2)
        for index, growth in enumerate(report.growth):
            origin = str(growth.groups[0].lines[0]) if growth.groups and growth.groups[0].lines else growth.kind
            shown = index < GROWTH_LINES
            for axes in (times, ops, memory):
                axes.axvline(growth.first_step, color=_GROWTH_COLORS[index] if shown else "gray",
                             linestyle="--" if shown else ":", linewidth=1 if shown else 0.6,
                             label=(f"{'refused at' if growth.refused else 'growth from'} step {growth.first_step}: "
                                    f"{origin}" if shown and axes is times else None))
        hidden = len(report.growth) - GROWTH_LINES
        if hidden > 0:
            times.plot([], [], color="gray", linestyle=":", linewidth=0.6,
                       label=f"{hidden} more growth pattern{'s' if hidden != 1 else ''} (see the report's text)")
        for axes in (times, ops, memory):
            axes.grid(True, alpha=0.3)
        count = report.stats.steps
        grew = (f"{len(report.growth)} growth pattern{'s' if len(report.growth) != 1 else ''}" if report.growth
                else "no growth")
        if report.other_growth_ops:  # the guard itemizes at most 50 patterns
            grew += f" and {report.other_growth_ops} more ops in others (not itemized)"
        figure.suptitle(f"graphguard: {count} guarded step{'s' if count != 1 else ''} in {report.mode} mode, {grew}"
                        + (f", stopped by {report.stopped}" if report.stopped else ""))
        if report.growth:
            figure.legend(loc="outside lower center", ncols=1 if len(report.growth) <= 3 else 2, frameon=False)
        return _save(figure, path)


def _over_limit(trial: Mapping[str, Any], limit: Optional[int]) -> bool:
    """Whether a judged trial of ``SweepReport.as_dict()`` retained more RSS than ``limit``."""
    return limit is not None and not trial.get("warmup") and (trial.get("retained_bytes") or 0) > limit


def _sweep_title(trials: list, confirmed: list[bool], trend: Optional[Mapping[str, Any]], limit: Optional[int]) -> str:
    """:func:`plot_sweep_report`'s title: trials counted (not objects: a fifth trial read "9 kept objects"
    of 46), on two lines when long. When no trial kept anything, RSS flagged alone is a note, as the text
    and the exit status have it (``RSS rises about 3.6 MiB per trial: reported, not failed; ...``), not a
    count of flagged trials (a correct Keras sweep was titled "35 flagged by RSS only")."""
    kept = sum(confirmed)
    flagged = sum(1 for trial in trials if trial["leaked"]) - kept
    count = f"graphguard: {len(trials)} trial{'s' if len(trials) != 1 else ''}"
    if kept or not flagged:
        title = f"{count}, {kept or 'none'} of them kept objects or graph ops"
        if flagged:
            title += f", {flagged} flagged by RSS only (reported, not failed)"
        if trend:  # a steady rise under the limit: equal bars below the dashed line, judged across them
            title += (f"\nRSS rising steadily: +{trend['bytes_per_trial'] / 2**20:.1f} MiB per trial over trials "
                      f"{trend['first']}-{trend['last']}")
        return title
    if not trend:  # a script's earlier loop's trend (the sweep's is the last loop's): the last trial on one
        trend = next((trial["rss_trend"] for trial in reversed(trials)
                      if trial.get("leaked") and trial.get("rss_trend")), None)
    said = [f"RSS rises about {trend['bytes_per_trial'] / 2**20:.1f} MiB per trial"] if trend else []
    over = sum(1 for trial, sure in zip(trials, confirmed)
               if trial["leaked"] and not sure and _over_limit(trial, limit))
    if over:
        said.append(f"RSS over the {limit / 2**20:.0f} MiB limit in {over} trial{'s' if over != 1 else ''}")
    return f"{count}\nnote: {'; '.join(said) or 'RSS flagged'}: reported, not failed; no trial kept objects or graph ops"


def plot_sweep_report(report, path: str) -> str:
    """One sweep as a picture: seconds and RSS retained (MiB) per trial, from ``report.as_dict()`` (a
    :class:`~graphguard.runtime.sweep_report.SweepReport`): trials that kept objects or graph ops in red
    (``LEAK`` written in the bar when it is tall enough, else a cross above it), trials flagged by their
    RSS alone in grey (reported, not failed; over the limit: ``RSS``, or a dot), the others blue, warm-up
    trials hatched (their RSS is not judged), the ``max_retained_bytes`` limit dashed, the sweep's RSS
    trend (``rss_trend``: RSS rising steadily across the trials) in the title, which is a note when no
    trial kept anything (``RSS rises about 3.6 MiB per trial: reported, not failed; ...``). Past 20 trials
    only every n-th name is written. Writes a 1000 x 640 PNG to ``path`` and returns it. Raises
    :class:`PlotUnavailable`, ``ValueError`` when there is no trial or ``path`` is not a ``.png`` name,
    ``OSError``."""
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    _png_name(path)
    data = report.as_dict()
    trials = data.get("trials", [])
    if not trials:
        raise ValueError("no trial was measured: nothing to draw")
    with _drawing():
        figure = _figure(10, 6.4)
        seconds, memory = figure.subplots(2, 1, sharex=True)
        numbers = list(range(1, len(trials) + 1))
        confirmed = [trial["leaked"] and _kept_something(trial) for trial in trials]
        colors = [INCORRECT_COLOR if sure else RSS_ONLY_COLOR if trial["leaked"] else CORRECT_COLOR
                  for sure, trial in zip(confirmed, trials)]
        hatches = ["//" if trial.get("warmup") else None for trial in trials]
        retained = [_mib(trial.get("retained_bytes")) or 0.0 for trial in trials]
        for axes, values in ((seconds, [trial["seconds"] for trial in trials]), (memory, retained)):
            bars = axes.bar(numbers, values, color=colors, edgecolor="white")
            for bar, hatch in zip(bars, hatches):
                bar.set_hatch(hatch)
        seconds.set(ylabel="trial time (s)")
        memory.axhline(0, color="black", linewidth=0.8)
        # only what the picture shows (a fifth new user's trial: "LEAK" in the legend of a clean sweep)
        handles = [Patch(color=INCORRECT_COLOR, label="kept objects or graph ops (LEAK)")] if any(confirmed) else []
        if any(trial["leaked"] and not sure for sure, trial in zip(confirmed, trials)):
            handles.append(Patch(color=RSS_ONLY_COLOR, label="RSS rose, nothing kept (reported, not failed)"))
        # (a tenth new user's trial: "nothing kept" listed in blue with no blue bar, the crosses unexplained)
        if CORRECT_COLOR in colors:
            handles.append(Patch(color=CORRECT_COLOR, label="nothing kept"))
        if any(hatches):
            handles.append(Patch(facecolor="white", edgecolor="gray", hatch="//", label="warm-up trial (RSS not judged)"))
        limit = data.get("max_retained_bytes")
        top = max([*retained, 0.0])
        if limit is not None:
            memory.axhline(limit / 2**20, color="black", linestyle="--", linewidth=1)
            handles.append(Line2D([], [], color="black", linestyle="--",
                                  label=f"limit: {limit / 2**20:.0f} MiB retained per trial"))
            top = max(top, limit / 2**20)
        memory.set_ylim(top=(top or 1.0) * 1.15)
        memory.set(ylabel="RSS retained (MiB)", xlabel="trial")
        tall = memory.get_ylim()[1] * 0.12
        crossed = False
        for number, trial, value, sure in zip(numbers, trials, retained, confirmed):
            if not trial["leaked"] or not (sure or _over_limit(trial, limit)):
                continue  # (a trial on the RSS trend alone: the title says it once)
            if value >= tall and len(trials) <= 30:  # inside the bar, where no threshold line can cover it
                memory.text(number, value / 2, "LEAK" if sure else "RSS", ha="center", va="center", fontsize=9,
                            color="white", fontweight="bold")
            else:
                memory.plot([number], [max(value, 0.0) + tall / 3], marker="x" if sure else "o",
                            color=INCORRECT_COLOR if sure else RSS_ONLY_COLOR, markersize=7)
                crossed = crossed or sure
        if crossed:
            handles.append(Line2D([], [], linestyle="none", marker="x", color=INCORRECT_COLOR, markersize=7,
                                  label="LEAK on a bar too short to write it in"))
        every = max(1, -(-len(trials) // 20))
        names = [_label(trial["name"], number) if (number - 1) % every == 0 else ""
                 for number, trial in zip(numbers, trials)]
        slanted = len(trials) > 6 or max(map(len, names)) > 8
        memory.set_xticks(numbers, names, rotation=30 if slanted else 0, ha="right" if slanted else "center")
        for axes in (seconds, memory):
            axes.grid(True, axis="y", alpha=0.3)
        figure.suptitle(_sweep_title(trials, confirmed, data.get("rss_trend"), limit))
        figure.legend(handles=handles, loc="outside lower center", ncols=min(len(handles), 3), frameon=False)
        return _save(figure, path)
