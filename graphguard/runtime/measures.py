"""What the guard measures besides growth: step time (a sustained rise is a slowdown), RSS (and its
limit), and the series of points that ``GuardReport.plot()`` draws.

A mixin of the guard's monitor (``_Monitor`` in :mod:`graphguard.runtime.guard`), as
:mod:`graphguard.runtime.growth` is for new ops: the monitor decides *when* (its periodic work, every
10th step at most, under its lock); this module says *what* a sample, a slowdown and an RSS limit are.
Units: seconds (``time.perf_counter`` around ``Session.run``), bytes (psutil ``memory_info().rss``).

Nothing here imports TensorFlow or psutil (the monitor hands in its cached ``psutil.Process``).
"""

from __future__ import annotations

import collections
import os
import re
import statistics
from typing import Any, Optional

from graphguard.runtime.errors import RssGrowthError
from graphguard.runtime.report import GuardStats, Slowdown, StepSample, bytes_text


class FetchTimes:
    """Sampled step times of one fetch (runs with the same :func:`fetch_label`), for the slowdown
    check of a loop that alternates fetches.

    Attributes:
        where: (filename, lineno) of the user line that ran it when it was first sampled.
        times: the latest :data:`_FETCH_WINDOW` samples, (step, seconds).
        count: samples taken after warm-up.
        baseline: (median seconds, (first, last) step, graph version, RSS bytes or ``None``) of its first
            :data:`_FETCH_WINDOW` samples, once there are that many.
        next_ratio: the ratio the next warning for this fetch needs.
    """

    __slots__ = ("where", "times", "count", "baseline", "next_ratio")

    def __init__(self, where: tuple[Optional[str], Optional[int]], next_ratio: float) -> None:
        self.where = where
        self.times: collections.deque[tuple[int, float]] = collections.deque(maxlen=_FETCH_WINDOW)
        self.count = 0
        self.baseline: Optional[tuple[float, tuple[int, int], int, Optional[int]]] = None
        self.next_ratio = next_ratio

# GuardReport.series keeps at most this many points (thinned by half when full).
_SERIES_POINTS = 2048
# Slowdown: the median of _SLOW_WINDOW steps just after warm-up is the baseline; every
# _CHECK_EVERY steps the median of the latest _SLOW_WINDOW steps is compared with it. A warning needs
# the ratio to reach `slowdown_factor` AND the medians to differ by _SLOW_MIN_SECONDS, so a loaded
# machine (another job on the same cores slows a 0.3 ms step to 0.6 ms) does not fire it; each
# further warning needs another factor (3x, 9x, 27x with the default 3.0).
_SLOW_WINDOW = 20
_SLOW_MIN_SECONDS = 1e-3
# A loop that alternates fetches (a training run, then an evaluation run) has no one step time: a
# median over every run mixes a 30 ms and a 1 ms run. Once the periodic samples (about 2 runs in 10,
# at offsets that walk through the window) have seen more than one fetch, each fetch is judged on its
# own sampled runs: the median of its first _FETCH_WINDOW samples after warm-up against the median of
# its latest _FETCH_WINDOW.
_FETCH_WINDOW = 10
# TensorFlow makes op names unique with a suffix: `Mean`, `Mean_1`, `Mean_2` (per scope too).
_UNIQUE_SUFFIX = re.compile(r"_\d+$")


def fetch_label(fetches: Any, depth: int = 0) -> str:
    """What one ``Session.run`` fetched, as a short label for the picture's step-time lines: op and
    tensor names without TensorFlow's ``_N`` suffixes and output index (``GradientDescent_12`` and
    ``GradientDescent_13`` are the same training step built again; ``Mean_5:0`` is ``Mean``), lists as
    their first three names, dicts as their keys; at most 40 characters. Called on the guard's
    periodic work only (every 10th step at most), never per run."""
    if isinstance(fetches, str):
        name = fetches
    elif isinstance(fetches, dict) and depth < 2:
        keys = [str(key) for key in list(fetches)[:3]]
        name = "{" + ", ".join(keys) + (", ..." if len(fetches) > 3 else "") + "}"
    elif isinstance(fetches, (list, tuple)) and depth < 2:
        items = [fetch_label(item, depth + 1) for item in list(fetches)[:3]]
        name = ", ".join(items) + (", ..." if len(fetches) > 3 else "")
        name = f"[{name}]" if depth == 0 else name
    else:
        name = getattr(fetches, "name", None)
        if not isinstance(name, str):
            return type(fetches).__name__
    if not isinstance(fetches, (dict, list, tuple)):
        name = "/".join(_UNIQUE_SUFFIX.sub("", part) for part in name.split(":")[0].split("/"))
    return name if len(name) <= 40 else name[:39] + "…"


class StepMeasures:
    """The measuring half of the guard's monitor (``_Monitor`` in :mod:`graphguard.runtime.guard`):
    series points, RSS reads and the RSS limit, the slowdown check and its message. Uses the
    monitor's state set up in ``_Monitor._setup`` (``_seconds``, ``_series``, ``_process``,
    ``_rss_base``/``_rss_last``, ``_baseline``, ...); call with the monitor's lock held, except
    :meth:`_slowdown_message`.
    """

    def _sample(self, steps: int, rss: Optional[int], label: Optional[str] = None) -> None:
        """One point of :attr:`GuardReport.series` (under the lock), with what the run fetched
        (``label``, from :func:`fetch_label`). Bounded: when the list is full, every other point
        without an RSS sample is dropped (the first point and the RSS samples, at most one a second,
        are kept) and one periodic point in twice as many is kept from then on."""
        self._series_skipped += 1
        if (self._series_skipped < self._series_every and rss is None) or not self._seconds:
            return
        self._series_skipped = 0
        self._series.append(StepSample(steps, self._seconds[-1], self._graph.version, rss, label))
        if len(self._series) >= _SERIES_POINTS:
            series = self._series
            self._series = [point for index, point in enumerate(series)
                            if index == 0 or point.rss_bytes is not None or index % 2 == 0]
            if len(self._series) >= _SERIES_POINTS * 3 // 4:  # mostly RSS samples: a long run, thin those too
                self._series = self._series[:1] + self._series[1::2]
            self._series_every *= 2

    def _read_rss(self, now: float) -> int:
        self._rss_time = now
        try:
            return self._process.memory_info().rss
        except Exception:  # psutil.Error: process info unavailable
            return self._rss_last[1] if self._rss_last else 0

    def _rss_over_limit(self) -> Optional[RssGrowthError]:
        if self._max_rss_growth is None or self._rss_base is None or self._rss_last is None:
            return None
        (base_step, base), (step, rss) = self._rss_base, self._rss_last
        growth = rss - base
        if growth <= self._max_rss_growth:
            return None
        per_step = growth / (step - base_step) if step > base_step else float(growth)
        added = self._graph.version - self._start_version
        message = (
            f"RSS grew by {bytes_text(growth)} since step {base_step} ({bytes_text(base)} -> {bytes_text(rss)}, "
            f"+{bytes_text(per_step)} per step), over max_rss_growth={self._max_rss_growth} bytes "
            f"({bytes_text(self._max_rss_growth)}), at step {step}. Stopped before the machine swaps or the OOM "
            f"killer ends the process.\n"
            + (
                f"The graph grew by {added} ops since guarding started: the report names the lines and the fix for each."
                if added > self._warmup_ops + self._tolerated_ops + self._one_off_ops
                else "The graph did not grow: the memory is held elsewhere (Python objects kept per step, "
                "data loaded per step, fetched arrays appended to a list)."
            )
        )
        return RssGrowthError(message, step=step, rss_bytes=rss, rss_growth_bytes=growth, limit_bytes=self._max_rss_growth)

    def _time_fetch(self, steps: int, label: str, origin: Any) -> None:
        """One sampled run of fetch ``label`` (this run's time is ``_seconds[-1]``); ``origin()`` gives
        the user's (filename, lineno), asked only the first time a fetch is seen."""
        times = self._by_fetch.get(label)
        if times is None:
            if len(self._by_fetch) >= 16:  # fetches named per step: no fetch repeats, nothing to judge
                return
            times = self._by_fetch[label] = FetchTimes(origin(), self._slowdown_factor)
        times.times.append((steps, self._seconds[-1]))
        times.count += 1
        if times.count == _FETCH_WINDOW:
            rss = self._rss_last[1] if self._rss_last else None
            times.baseline = (statistics.median(s for _, s in times.times), (times.times[0][0], steps),
                              self._graph.version, rss)

    def _check_slowdown(self, steps: int) -> Optional[Slowdown]:
        if len(self._by_fetch) > 1:
            return self._check_fetch_slowdown(steps)
        # The latest _SLOW_WINDOW step times, by index from the end: cheap, and safe while other
        # threads append (a value may shift by one, which a median does not notice).
        seconds = self._seconds
        recent = statistics.median([seconds[i] for i in range(-min(_SLOW_WINDOW, len(seconds)), 0)])
        if self._baseline is None:
            rss = self._rss_last[1] if self._rss_last else None
            self._baseline = (recent, (steps - _SLOW_WINDOW + 1, steps), self._graph.version, rss)
            return None
        if steps < self._baseline[1][1] + _SLOW_WINDOW:
            return None  # the latest window still overlaps the baseline
        slowdown, self._next_ratio = self._slower(steps, self._baseline, recent, self._next_ratio,
                                                  (steps - _SLOW_WINDOW + 1, steps))
        return slowdown

    def _check_fetch_slowdown(self, steps: int) -> Optional[Slowdown]:
        """:meth:`_check_slowdown` for a loop that alternates fetches: each fetch against its own
        baseline (the first fetch found slower is reported; the others wait for the next check)."""
        for label, times in self._by_fetch.items():
            if times.baseline is None or times.times[0][0] <= times.baseline[1][1]:
                continue  # no baseline yet, or the latest samples still overlap it
            recent = statistics.median(s for _, s in times.times)
            slowdown, times.next_ratio = self._slower(
                steps, times.baseline, recent, times.next_ratio, (times.times[0][0], times.times[-1][0]),
                fetch=label, filename=times.where[0], lineno=times.where[1], runs=len(times.times))
            if slowdown is not None:
                return slowdown
        return None

    def _slower(self, steps: int, baseline: tuple, recent: float, next_ratio: float,
                recent_steps: tuple[int, int], **fetch: Any) -> tuple[Optional[Slowdown], float]:
        """``(slowdown, next_ratio)``: a :class:`Slowdown` (kept in the report) when the ``recent`` median
        (seconds) is ``next_ratio`` times ``baseline``'s (``(median, (first, last) step, graph version,
        RSS)``) and at least :data:`_SLOW_MIN_SECONDS` more, with the ratio the next warning needs (another
        factor); ``(None, next_ratio)`` otherwise. ``fetch``: :class:`Slowdown`'s fetch fields."""
        base, base_steps, base_version, base_rss = baseline
        if base <= 0 or recent < next_ratio * base or recent - base < _SLOW_MIN_SECONDS:
            return None, next_ratio
        ratio = recent / base
        while next_ratio <= ratio:
            next_ratio *= self._slowdown_factor
        rss_growth = None if base_rss is None or self._rss_last is None else self._rss_last[1] - base_rss
        slowdown = Slowdown(step=steps, baseline_seconds=base, baseline_steps=base_steps, recent_seconds=recent,
                            recent_steps=recent_steps, ratio=ratio, ops_added=self._graph.version - base_version,
                            rss_growth_bytes=rss_growth, **fetch)
        self._slowdowns.append(slowdown)
        return slowdown, next_ratio

    def _slowdown_message(self, slowdown: Slowdown) -> str:
        text = f"{slowdown}."
        if slowdown.ops_added:
            text += (" Graph growth is the likely cause: the guard's report (guarded.report(), or graphguard run's "
                     "at exit) names the lines and the fix for each.")
        else:
            try:
                load = os.getloadavg()[0]
                text += f" Load average {load:.2f} on {os.cpu_count()} CPUs."
            except (OSError, AttributeError):
                pass
            text += " Without graph growth, look at memory (RSS, swapping), the input pipeline, or other processes."
        return text
    def _final_series(self, stats: GuardStats) -> tuple[StepSample, ...]:
        """The series with the last step too (the report's own RSS sample), when it is not the last point."""
        series = tuple(self._series)
        if stats.steps and self._seconds and (not series or series[-1].step < stats.steps):
            series += (StepSample(stats.steps, self._seconds[-1], stats.ops, stats.rss_bytes),)
        elif series and series[-1].rss_bytes is None and stats.rss_bytes is not None:
            last = series[-1]  # the report's own RSS sample belongs to the last step
            series = series[:-1] + (StepSample(last.step, last.seconds, last.ops, stats.rss_bytes),)
        return series
