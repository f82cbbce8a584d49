"""``graphguard demo tf2``: a TF 2 custom training loop that retraces its ``tf.function`` on every step.

The TF 1 demo (:mod:`graphguard.demo`) shows a graph that grows because ops are built in the loop that
runs the session. TF 2 has no session to grow, but the same cost comes back through ``tf.function``:
a Python value passed to a ``tf.function`` is part of its signature, so a loop that passes its Python
``int`` step (for a learning-rate warm-up computed inside the step) traces the function again on every
call, into a new graph, and keeps every concrete function. ``fixtures/demo_tf2/`` holds the mistake
and its fix on the 8x8 digits bundled with scikit-learn (a 64-64-10 Keras MLP, ``tf.GradientTape``
inside a ``@tf.function`` train step, SGD with momentum and a linear warm-up):
``train_incorrect.py`` calls ``train_step(images, labels, step)``, ``train_correct.py`` calls
``train_step(images, labels, tf.constant(step))``. They train identically (same data, seeds, updates,
accuracy); only the number of traces differs.

The demo has three parts, each in its own subprocess (``sys.executable``; this module never imports
TensorFlow; each TensorFlow process pays 2-5 s to import it), sharing :mod:`graphguard.demo`'s helpers:

1. **Lint**: ``graphguard check`` on both scripts (static; its output is shown, not judged).
2. **Run**: both scripts for ``steps`` steps, one after the other (they would compete for the cores),
   and a side-by-side table at steps 1, 10, 50, 100, 200 (those up to ``steps``) and ``steps``,
   parsed from the scripts' ``step: N, time cost: S, traces: T, rss: B`` lines:

   * *step time*, in milliseconds: wall time of one ``train_step(...)`` call as the script measures it
     (``time.perf_counter``; a trace included when the call traces);
   * *traces*: ``train_step.experimental_get_tracing_count()`` after the step (a count, no unit; TF's
     public API). The first call traces twice in both scripts: the Keras optimizer creates its
     variables then, and TensorFlow traces again once they exist;
   * *RSS*, in MiB (2**20 bytes): the script's resident set size after the step (``psutil``);
   * *ratio*: incorrect / correct step time.

   Measured on two cores (TF 2.21, Keras 3): about 35 ms per step against 0.28 ms (about 125x; TF-FACTS,
   "TF 2 retracing", has 12.5 ms against 0.34 ms for a smaller function), one trace and about 1.1 MiB of
   RSS more per step; 200 steps take about 10 s for the incorrect script, 2.5 s for the correct one,
   TensorFlow's import included. The part fails unless both scripts finish, the incorrect script's
   traces grow and the correct script's stay flat after step 1.
3. **Guard**: ``train_incorrect.py --guard``, which runs its loop under
   ``graphguard.TraceGuard(max_traces=8, on_retrace="raise")``: the call that traces ``train_step`` a
   ninth time (step 8; the first call traced twice) raises ``RetracingError`` naming the function, the
   script line that called it and the argument that changed (``step``: Python int 7 -> 8). The part fails unless the script stops with that error at the line of its
   ``train_step(...)`` call.

:func:`run_tf2_demo` returns 0 when every part behaved as described, 1 when a part did not (its output
says which), 2 when the fixture scripts are missing (graphguard installed without its ``fixtures/``).
"""

from __future__ import annotations

import importlib.util
import os
import re
import statistics
import sys
import time
from dataclasses import dataclass
from typing import Callable, Optional, TextIO

from graphguard import demo as _demo

__all__ = ["run_tf2_demo", "parse_trace_steps", "format_trace_table", "call_line", "TraceStepRecord"]

DEMO_DIR = _demo.DEMO_DIR.parent / "demo_tf2"
CORRECT, INCORRECT = _demo.CORRECT, _demo.INCORRECT  # the same names as the TF 1 pair, in their own folder

# Safety timeouts per subprocess, in seconds of wall time, TensorFlow import included. None is expected
# to be hit: 200 steps take about 10 s (incorrect) and 2.5 s (correct) on two cores. A run's budget is
# RUN_BUDGET_SECONDS plus SECONDS_PER_STEP_BUDGET per step, about 6x the 35 ms an incorrect step takes.
RUN_BUDGET_SECONDS = 60.0
SECONDS_PER_STEP_BUDGET = 0.2
GUARD_BUDGET_SECONDS = 60.0
MAX_TRACES = 8  # the scripts' TraceGuard(max_traces=8): the incorrect one is stopped at its 9th trace
GUARD_STEPS = 20  # steps of the guarded run: the guard stops the incorrect script at step 8; 20 bounds a miss
MIB = 2**20

_STEP_LINE = re.compile(r"^step: (\d+), time cost: (\d+(?:\.\d*)?), traces: (\d+), rss: (\d+)\s*$")
_CALL = re.compile(r"^\s*\w+\s*=\s*train_step\(")  # `loss = train_step(...)` in the scripts' loop
_TF_WARNING = re.compile(r"(\d+ out of the last \d+ calls to <function \S+)(?: at 0x[0-9a-f]+)?> triggered tf\.function retracing")


@dataclass(frozen=True)
class TraceStepRecord:
    """One ``step: N, time cost: S, traces: T, rss: B`` line: ``seconds`` of wall time of the step's
    ``train_step`` call, ``traces`` of ``train_step`` so far, ``rss`` in bytes after the step."""

    seconds: float
    traces: int
    rss: int


def parse_trace_steps(text: str) -> dict[int, TraceStepRecord]:
    """Step number -> :class:`TraceStepRecord`, from a TF 2 demo script's stdout. Other lines are ignored."""
    records = {}
    for line in text.splitlines():
        match = _STEP_LINE.match(line.strip())
        if match:
            records[int(match[1])] = TraceStepRecord(float(match[2]), int(match[3]), int(match[4]))
    return records


def format_trace_table(correct: dict[int, TraceStepRecord], incorrect: dict[int, TraceStepRecord],
                       steps: list[int]) -> list[str]:
    """The side-by-side table, one string per line: step time in ms (and the incorrect / correct ratio),
    traces, RSS in MiB. A step a script did not reach shows ``-``."""
    lines = [
        f"{'':>6}  {'step time (ms)':^29}  {'traces':^17}  {'RSS (MiB)':^19}",
        f"{'step':>6}  {'correct':>8} {'incorrect':>10} {'ratio':>9}  {'correct':>8} {'incorrect':>8}  "
        f"{'correct':>9} {'incorrect':>9}",
    ]
    for step in steps:
        good, bad = correct.get(step), incorrect.get(step)
        cells = [
            f"{good.seconds * 1000:.2f}" if good else "-",
            f"{bad.seconds * 1000:.2f}" if bad else "-",
            _demo._ratio(bad.seconds, good.seconds) if good and bad else "-",
            f"{good.traces:,}" if good else "-",
            f"{bad.traces:,}" if bad else "-",
            f"{good.rss / MIB:,.1f}" if good else "-",
            f"{bad.rss / MIB:,.1f}" if bad else "-",
        ]
        lines.append(f"{step:>6}  {cells[0]:>8} {cells[1]:>10} {cells[2]:>9}  {cells[3]:>8} {cells[4]:>8}  "
                     f"{cells[5]:>9} {cells[6]:>9}")
    return lines


def call_line(path: os.PathLike | str) -> Optional[int]:
    """The 1-based line of the ``... = train_step(...)`` call in a demo script, or None."""
    with open(path, encoding="utf-8") as handle:
        for number, line in enumerate(handle, start=1):
            if _CALL.match(line):
                return number
    return None


def _budget(steps: int) -> float:
    return RUN_BUDGET_SECONDS + SECONDS_PER_STEP_BUDGET * steps


def _describe_step(record: TraceStepRecord) -> str:
    """One step of the progress shown while a script runs: its step time (ms), traces and RSS (MiB)."""
    return f"{record.seconds * 1000:8.2f} ms, {record.traces:>4} traces, RSS {record.rss / MIB:,.1f} MiB"


def _describe_growth(incorrect: tuple[float, ...], correct: tuple[float, ...]) -> str:
    """The growth line under the table: traces and RSS bytes added per step (``(traces, rss)`` of
    :func:`graphguard.demo._added_per_step`), the RSS said in MiB."""
    (bad_traces, bad_rss), (good_traces, good_rss) = incorrect, correct
    return (f"per step after step 1: {INCORRECT} {bad_traces:.2f} traces, {bad_rss / MIB:+.2f} MiB RSS; "
            f"{CORRECT} {good_traces:.2f} traces, {good_rss / MIB:+.2f} MiB RSS")


def _tf_warning(stderr: list[str]) -> Optional[str]:
    """TensorFlow's own retracing warning, first seen, without the function's address."""
    for line in stderr:
        match = _TF_WARNING.search(line)
        if match:
            return f"{match[1]}> triggered tf.function retracing."
    return None


def _train(say: Callable[[str], None], relative: dict[str, str], steps: int, results: Optional[dict] = None) -> list[str]:
    """Part 2: both scripts for ``steps`` steps, then the table. Returns the names of the parts that did
    not behave as described; ``results`` (if given) receives each script's step records and accuracies."""
    budget = _budget(steps)
    runs = _demo._run_pair(say, relative, steps, budgets=dict.fromkeys((CORRECT, INCORRECT), budget),
                           parse=parse_trace_steps, describe_step=_describe_step, sum_digits=2, enough_steps=2)
    if results is not None:
        results.update(records=runs.records, accuracy=runs.accuracy)
    records, failures = runs.records, runs.failures
    good, bad = records[CORRECT], records[INCORRECT]
    _demo._say_table(say, steps, runs, format_trace_table, notes=(
        "Step time: wall milliseconds of one train_step(...) call; traces: train_step.experimental_get_tracing_count()",
        "after it (2 after step 1 in both: the optimizer makes its variables on the first call, which TensorFlow",
        "then traces again); RSS: the process's resident set size after the step (psutil).",
        "Run times above are wall times of the whole process, TensorFlow import included.",
    ), growth=("traces", "rss"), describe_growth=_describe_growth)
    both = sorted((set(good) & set(bad)) - {1})  # the first call traces in both scripts
    if both:
        medians = [statistics.median(records[name][step].seconds for step in both) for name in (CORRECT, INCORRECT)]
        say(f"  median step time, steps {both[0]}-{both[-1]}: correct {medians[0] * 1000:.2f} ms, incorrect "
            f"{medians[1] * 1000:.2f} ms ({_demo._ratio(medians[1], medians[0])}; one step's time varies on a "
            f"busy machine, the median much less)")
    _demo._say_accuracy(say, runs.accuracy, "only the traces differ")
    warning = _tf_warning(runs.stderr[INCORRECT])
    if warning:
        say(f"  TensorFlow's own warning (stderr, {INCORRECT}), naming the function but not the calling line:")
        say(f"    {warning}")

    # Behaved as described: the incorrect script's traces grow, the correct script's stay flat after step 1.
    if steps > 1 and len(bad) > 1 and bad[max(bad)].traces <= bad[min(bad)].traces:
        say(f"  {INCORRECT}: its traces did not grow")
        failures.append(f"traces {INCORRECT}")
    if len(good) > 1 and len({record.traces for step, record in good.items() if step > 1}) > 1:
        say(f"  {CORRECT}: its traces grew after step 1")
        failures.append(f"traces {CORRECT}")
    return failures


def _has_trace_guard() -> bool:
    """Whether this graphguard has ``TraceGuard`` (looked up without importing it, or TensorFlow)."""
    try:
        return importlib.util.find_spec("graphguard.runtime.trace") is not None
    except (ImportError, ValueError):
        return False


def _guard(say: Callable[[str], None], relative: dict[str, str]) -> list[str]:
    """Part 3: the incorrect script with ``--guard``. Returns ``["guard"]`` unless TraceGuard stopped it
    with a ``RetracingError`` naming the line of its ``train_step(...)`` call."""
    if not _has_trace_guard():
        say("  not run: this graphguard has no TraceGuard (graphguard/runtime/trace.py)")
        return ["guard"]
    # GUARD_STEPS whatever ``steps`` is: the guard needs MAX_TRACES traces before it can act.
    say(f"$ python {relative[INCORRECT]} --guard --steps {GUARD_STEPS}")
    result = _demo._run([sys.executable, relative[INCORRECT], "--guard", "--steps", str(GUARD_STEPS)],
                        GUARD_BUDGET_SECONDS)
    for line in result.stdout:
        say(f"  {line}")
    expected = call_line(DEMO_DIR / INCORRECT)
    lines = {int(number) for number in re.findall(re.escape(INCORRECT) + r":(\d+)", result.text)}
    stopped = result.returncode == 1 and "TraceGuard stopped training" in result.text
    if stopped and expected in lines:
        reached = max(parse_trace_steps(result.text), default=0)
        say(f"  (exit status 1: stopped at {INCORRECT}:{expected}, the train_step(...) call, after step {reached}: "
            f"the call of step {reached + 1} traced train_step more than {MAX_TRACES} times)")
        return []
    if stopped:
        say(f"  the guard stopped the script but did not name the line of its train_step(...) call "
            f"({INCORRECT}:{expected})")
    else:
        say(f"  the guard did not stop the script as expected ({_demo._failure(result)})")
        for line in _demo._stderr_tail(result):
            say(f"  | {line}")
    return ["guard"]


def run_tf2_demo(steps: int = 200, out: Optional[TextIO] = None) -> int:
    """Lint, run and guard the two TF 2 demo scripts for ``steps`` training steps; print to ``out``.

    ``out`` defaults to ``sys.stdout``. Returns 0 when every part behaved as described, 1 when a part
    did not (the output says which), 2 when ``fixtures/demo_tf2`` is missing (one line on stderr says a
    clone is needed) or ``steps`` < 1.
    """
    say = _demo._printer(out)
    relative = _demo._find_scripts("graphguard demo tf2", DEMO_DIR, (INCORRECT, CORRECT))
    if relative is None:
        return 2
    if steps < 1:
        say("graphguard demo tf2: error: steps must be at least 1")
        return 2
    started = time.perf_counter()

    say("graphguard demo tf2: a Keras MLP on the 8x8 digits in a TF 2 custom training loop, trained twice")
    say(f"  {relative[INCORRECT]}: train_step(images, labels, step), the step a Python int")
    say(f"  {relative[CORRECT]}: train_step(images, labels, tf.constant(step)), the step a tensor")
    say()
    say("== 1. Lint: graphguard check (static, TensorFlow not imported; shown, not judged) ==")
    failures = _demo._lint(say, relative)
    say()
    say(f"== 2. Run: {steps} training steps each, one script after the other ==")
    failures += _train(say, relative, steps)
    say()
    say(f"== 3. Guard: the incorrect script under TraceGuard(max_traces={MAX_TRACES}, on_retrace=\"raise\") ==")
    failures += _guard(say, relative)
    say()
    return _demo._done(say, "graphguard demo tf2", started, failures)
