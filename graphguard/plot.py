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

matplotlib is the ``plot`` extra (``pip install 'graphguard[plot]'``), imported only when a picture is
asked for, and used through its Agg canvas (no display, no change to ``pyplot``'s backend, so a
notebook's own plots are left alone). Without it every function raises :class:`PlotUnavailable`, whose
message says how to install it (the command line prints it as one line, exit 2). A picture is written
to a temporary file next to ``path`` and moved into place, so a failed drawing leaves no half file.
"""

from __future__ import annotations

import os
import tempfile
from typing import Any, Iterable, Mapping, Optional

__all__ = ["PlotUnavailable", "INSTALL", "require", "check_target", "plot_demo", "plot_sweeps", "plot_guard_report", "plot_sweep_report"]

#: What to run when matplotlib is missing.
INSTALL = "drawing a plot needs matplotlib: pip install 'graphguard[plot]'"
#: The colours of the two sides of every picture (matplotlib's default blue and red).
INCORRECT_COLOR = "#d62728"
CORRECT_COLOR = "#1f77b4"
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
    if not path.lower().endswith(".png"):
        raise ValueError(f"{option}: {path!r} is not a .png file name")
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        raise ValueError(f"{option}: cannot write {path}: no folder {folder}")
    return path


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


def _save(figure, path: str) -> str:
    """Write ``figure`` as a PNG to ``path`` atomically; returns ``path``. Raises ``OSError``."""
    folder = os.path.dirname(os.path.abspath(path))
    handle, temporary = tempfile.mkstemp(prefix=".graphguard-plot-", suffix=".png", dir=folder)
    try:
        with os.fdopen(handle, "wb") as out:
            figure.savefig(out, format="png", dpi=DPI)
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(temporary, 0o666 & ~umask)  # as open() would make it (mkstemp's file is private)
        os.replace(temporary, path)
    except BaseException:
        if os.path.exists(temporary):
            os.unlink(temporary)
        raise
    return path


def _log_scale(axes) -> None:
    """A log y axis with plain numbers at 1, 2 and 5 of each decade (``20``, ``50``, ``100``), not ``2x10^1``."""
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

    axes.set_yscale("log")
    axes.yaxis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
    axes.yaxis.set_major_formatter(FuncFormatter(lambda value, _: f"{value:,.10g}"))
    axes.yaxis.set_minor_formatter(NullFormatter())


def _mib(nbytes: Optional[float]) -> Optional[float]:
    return None if nbytes is None else nbytes / 2**20


# ---------------------------------------------------------------------------------------------------
# the demos
# ---------------------------------------------------------------------------------------------------


def plot_demo(runs: Mapping[str, Mapping[int, Any]], path: str, *, incorrect: str, correct: str) -> str:
    """The slowdown demo as a picture: step time (ms, log scale) and graph ops (log scale) against step
    for both scripts, side by side. ``runs``: script name -> step number -> record with ``seconds``
    (wall time of the step) and ``ops`` (``Graph.version`` after it), as
    :func:`graphguard.demo.parse_steps` reads them; ``incorrect``/``correct`` name the two scripts.
    Writes a 1100 x 440 PNG to ``path`` and returns it. Raises :class:`PlotUnavailable`, ``ValueError``
    when neither script has a step, ``OSError``."""
    if not any(runs.get(name) for name in (incorrect, correct)):
        raise ValueError("no step was measured: nothing to draw")
    figure = _figure(11, 4.4)
    times, ops = figure.subplots(1, 2)
    for name, color, label in ((incorrect, INCORRECT_COLOR, "ops built inside the session loop"),
                               (correct, CORRECT_COLOR, "ops built once, before the session")):
        records = runs.get(name) or {}
        steps = sorted(records)
        if not steps:
            continue
        times.plot(steps, [records[s].seconds * 1e3 for s in steps], color=color, linewidth=1.2,
                   label=f"{name}: {label}")
        ops.plot(steps, [records[s].ops for s in steps], color=color, linewidth=1.6)
    times.set(title="Step time", xlabel="training step", ylabel="step time (ms, log scale)")
    ops.set(title="Graph size", xlabel="training step", ylabel="ops in the graph (log scale)")
    _log_scale(times)
    _log_scale(ops)
    for axes in (times, ops):
        axes.grid(True, which="major", alpha=0.3)
    figure.suptitle("graphguard demo: the same model trained twice; only where the ops are built differs")
    figure.legend(loc="outside lower center", ncols=2, frameon=False)
    return _save(figure, path)


def _trial_series(report: Mapping[str, Any]) -> tuple[list[int], list[float], list[int], list[bool]]:
    """(trial numbers, RSS retained summed over the trials so far in MiB, objects judged leaked, leaked)
    of one ``SweepReport.as_dict()``."""
    numbers, total, alive, leaked = [], [], [], []
    running = 0.0
    for index, trial in enumerate(report.get("trials", []), start=1):
        numbers.append(index)
        running += _mib(trial.get("retained_bytes")) or 0.0
        total.append(running)
        alive.append(sum(1 for obj in trial.get("alive", []) if obj.get("leaked", obj.get("loop_variable") is None)))
        leaked.append(bool(trial.get("leaked")))
    return numbers, total, alive, leaked


def plot_sweeps(pairs: Iterable[tuple[str, Mapping[str, Any], Mapping[str, Any]]], path: str) -> str:
    """The sweep demo as a picture: for each (title, leaking report, fixed report), RSS retained summed
    over the trials so far (MiB) and the objects judged leaked per trial, leaking sweep against fixed,
    trials judged to leak marked with a cross. Reports are ``SweepReport.as_dict()`` data (what the
    demo's scripts write with ``--json``). Writes a PNG 1100 pixels wide (260 high per pair, plus
    the title) to ``path`` and returns it. Raises :class:`PlotUnavailable`, ``ValueError`` when no pair
    has a trial, ``OSError``."""
    pairs = [pair for pair in pairs if pair[1].get("trials") or pair[2].get("trials")]
    if not pairs:
        raise ValueError("no trial was measured: nothing to draw")
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
        memory.set_title(title, loc="left", fontsize=10)
        memory.set(xlabel="trial", ylabel="RSS retained, summed (MiB)")
        objects.set_title("objects alive one trial later", loc="left", fontsize=10)
        objects.set(xlabel="trial", ylabel="objects kept (count)")
        for axes in (memory, objects):
            axes.grid(True, alpha=0.3)
            axes.xaxis.get_major_locator().set_params(integer=True)
        objects.yaxis.get_major_locator().set_params(integer=True)
    figure.suptitle("graphguard demo sweep: memory a sweep keeps, trial after trial, under SweepGuard")
    figure.legend(loc="outside lower center", ncols=3, frameon=False)
    return _save(figure, path)


# ---------------------------------------------------------------------------------------------------
# the runtime reports
# ---------------------------------------------------------------------------------------------------


def plot_guard_report(report, path: str) -> str:
    """One guard's run as a picture: step time (ms, log scale), graph ops and RSS (MiB) against step,
    from ``report.series`` (:class:`~graphguard.runtime.report.StepSample`); each growth pattern is
    a dashed line at its first step, labelled with its first source line (``train.py:57``). RSS is
    left out when no sample was taken (psutil missing). Writes a 1000 x 780 PNG to ``path`` and returns
    it. Raises :class:`PlotUnavailable`, ``ValueError`` when the series is empty, ``OSError``."""
    series = tuple(report.series)
    if not series:
        raise ValueError("the guard measured no step: nothing to draw")
    figure = _figure(10, 7.8)
    times, ops, memory = figure.subplots(3, 1, sharex=True)
    steps = [sample.step for sample in series]
    times.plot(steps, [sample.seconds * 1e3 for sample in series], color=INCORRECT_COLOR, linewidth=1.2)
    times.set(ylabel="step time (ms, log scale)")
    _log_scale(times)
    ops.plot(steps, [sample.ops for sample in series], color=INCORRECT_COLOR, linewidth=1.6)
    ops.set(ylabel="ops in the graph")
    rss = [(sample.step, _mib(sample.rss_bytes)) for sample in series if sample.rss_bytes is not None]
    if rss:
        memory.plot([s for s, _ in rss], [m for _, m in rss], color=INCORRECT_COLOR, marker="o", markersize=3,
                    linewidth=1.2)
        memory.set(ylabel="RSS (MiB)")
    else:
        memory.text(0.5, 0.5, "RSS not measured (install psutil: pip install 'graphguard[runtime]')",
                    ha="center", va="center", transform=memory.transAxes)
        memory.set(ylabel="RSS (MiB)")
    memory.set(xlabel="guarded step (Session.run calls)")
    for index, growth in enumerate(report.growth):
        origin = str(growth.groups[0].lines[0]) if growth.groups and growth.groups[0].lines else growth.kind
        for axes in (times, ops, memory):
            axes.axvline(growth.first_step, color="black", linestyle="--", linewidth=1,
                         label=f"growth from step {growth.first_step}: {origin}" if axes is times else None)
    for axes in (times, ops, memory):
        axes.grid(True, alpha=0.3)
    grew = f"{len(report.growth)} growth pattern{'s' if len(report.growth) != 1 else ''}" if report.growth else "no growth"
    figure.suptitle(f"graphguard: {report.stats.steps} guarded steps in {report.mode} mode, {grew}"
                    + (f", stopped by {report.stopped}" if report.stopped else ""))
    if report.growth:
        figure.legend(loc="outside lower center", ncols=1, frameon=False)
    return _save(figure, path)


def plot_sweep_report(report, path: str) -> str:
    """One sweep as a picture: seconds and RSS retained (MiB) per trial, bars of trials judged to leak
    in red and marked ``LEAK``, from ``report.as_dict()`` (a
    :class:`~graphguard.runtime.sweep_report.SweepReport`). Writes a 1000 x 640 PNG to ``path`` and
    returns it. Raises :class:`PlotUnavailable`, ``ValueError`` when there is no trial, ``OSError``."""
    data = report.as_dict()
    trials = data.get("trials", [])
    if not trials:
        raise ValueError("no trial was measured: nothing to draw")
    figure = _figure(10, 6.4)
    seconds, memory = figure.subplots(2, 1, sharex=True)
    numbers = list(range(1, len(trials) + 1))
    colors = [INCORRECT_COLOR if trial["leaked"] else CORRECT_COLOR for trial in trials]
    seconds.bar(numbers, [trial["seconds"] for trial in trials], color=colors)
    seconds.set(ylabel="trial time (s)")
    retained = [_mib(trial.get("retained_bytes")) or 0.0 for trial in trials]
    memory.bar(numbers, retained, color=colors)
    memory.axhline(0, color="black", linewidth=0.8)
    limit = data.get("max_retained_bytes")
    if limit is not None:
        memory.axhline(limit / 2**20, color="black", linestyle="--", linewidth=1,
                       label=f"max_retained_bytes: {limit / 2**20:.0f} MiB retained per trial")
        figure.legend(loc="outside lower center", frameon=False)
        memory.set_ylim(top=max([*retained, limit / 2**20]) * 1.12)  # the threshold line inside the axes
    memory.set(ylabel="RSS retained (MiB)", xlabel="trial")
    for number, trial, value in zip(numbers, trials, retained):
        if trial["leaked"]:  # inside the bar, where no threshold line or neighbour can cover it
            memory.text(number, value / 2, "LEAK", ha="center", va="center", fontsize=9, color="white",
                        fontweight="bold")
    names = [trial["name"] if len(trial["name"]) <= 18 else trial["name"][:17] + "…" for trial in trials]
    memory.set_xticks(numbers, names, rotation=30 if len(trials) > 6 or max(map(len, names)) > 8 else 0, ha="right"
                      if len(trials) > 6 or max(map(len, names)) > 8 else "center")
    for axes in (seconds, memory):
        axes.grid(True, axis="y", alpha=0.3)
    leaked = sum(1 for trial in trials if trial["leaked"])
    figure.suptitle(f"graphguard: {len(trials)} trials, {leaked} judged to leak (red)")
    return _save(figure, path)
