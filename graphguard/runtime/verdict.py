"""What ``graphguard run`` prints at exit: the session reports, the trace report and the verdict line.

The verdict says, in the exit status's terms, what the run found: graph growth (its largest or stopping
pattern, bounded or not), an op refused once by a finalized graph, a stop by a guard, a script that
failed, the sweep's judgement under ``--sweep``, and what the linter reads in the script that no
runtime guard judged (models kept per iteration, Keras ``predict``/``fit`` per step). Kept apart from
:mod:`graphguard.runtime.launcher`, which parses the command line and runs the script.
"""

from __future__ import annotations

import argparse
import io
import sys
import types
from typing import Any, Optional

from graphguard.runtime.records import built_once
from graphguard.runtime.report import GuardReport, line_keys
from graphguard.runtime.trace_report import TraceReport


#: The verdict's words for a refused op whose lines run once (:func:`graphguard.runtime.records.built_once`).
_ONCE = " (in no loop, after the session's first run: build it before that run, or run in count mode)"


def _growth_summary(reports: list[tuple[int, str, GuardReport]], warned: bool = False) -> str:
    """``: +12 ops every 30 steps, from train.py:14 (tf.train.Saver)``: the growth pattern that added most ops: its size
    and cadence (``Growth.rate``) and its first line, for the verdict; ``""`` when no pattern is itemized.
    Patterns from the same lines as one before (a session per trial) count once. ``warned``: the run
    went on at growth (``--on-growth warn``), so the bounded note does not suggest it."""
    patterns, seen = [], set()
    for _, _, report in reports:
        for growth in report.growth:
            key = line_keys((growth,))
            if key not in seen:
                seen.add(key)
                patterns.append(growth)
    if not patterns:
        return ""
    # the pattern the guard stopped the run at, else the one that added most ops (an eighth new user's
    # trial: the verdict named a summary op built every 10 steps, about 100 ops, over the every-step op of
    # 2,700, and over the op the error had stopped at)
    stopped = [report.growth[-1] for _, _, report in reports if report.stopped and report.growth]
    first = stopped[0] if stopped else max(patterns, key=lambda growth: growth.ops)
    lines = list(dict.fromkeys(str(line) for group in first.groups for line in group.lines))
    once = first.refused is not None and len(patterns) == 1 and built_once(first.groups)
    text = f": {'at step ' + str(first.first_step) if once else first.rate()}" + (f", from {lines[0]}" if lines else "")
    if once:
        text += _ONCE
    if len(lines) > 1:
        text += f" and {len(lines) - 1} more line{'s' if len(lines) > 2 else ''}"
    if len(patterns) > 1:
        text += f" ({len(patterns) - 1} more pattern{'s' if len(patterns) > 2 else ''} in the report)"
    return text + _bounded_note(patterns, warned)


def _bounded_note(patterns: list, warned: bool = False) -> str:
    """`` (bounded: ...)`` when every growth pattern's lines stand in loops whose count the source fixes, at
    most 10 runs in all: ``graphguard check`` leaves such loops out (``max-bounded-iterations``), and a new
    user's fifth trial read the two as disagreeing (a re-initializer per epoch of three)."""
    from graphguard.runtime.bounded import BOUND, bounded_trips

    counts = []
    for growth in patterns:
        paths = {pair for group in growth.groups for pair in group.callers} or {
            ((line.filename, line.lineno), ()) for group in growth.groups for line in group.lines}
        trips = [bounded_trips((key, *path), cases=False) for key, path in paths]
        # a run told to loop longer than the source's default (``--steps 400`` against ``default=60``)
        # grew more often than the loops were counted: not bounded (a twenty-fifth new user's trial)
        counts += [None if count is not None and growth.steps > count else count for count in trips]
    if not counts or None in counts:
        return ""
    # (a seventh new user's trial: the note half-excused a failed run; it says what to do first)
    return (f" (bounded: its loops run {max(counts)} times in all, so the graph grows {max(counts)} times at most: "
            f"fix it as the report says" + ("" if warned else ", or let the run finish with --on-growth warn")
            + f"; graphguard check leaves loops of at most max-bounded-iterations = {BOUND} out, which "
            f"--config 'max-bounded-iterations = 0' shows)")


def _sweep_verdict(report: Any, failed_anyway: bool = False, linter_silent: bool = False) -> str:
    """``--sweep``'s part of the verdict line, in the exit status's terms: objects kept alive fail the
    run (exit 1); RSS or graph ops flagged alone are reported, not failed, unless the run fails anyway
    (``failed_anyway``: graph growth or a guard stopped it), where "not failed" would contradict its
    status (a new user's trial: a TF1 per-trial sweep stopped by GraphGrowthError). ``linter_silent``:
    ``graphguard check`` with its default configuration reports no model loop in the script (its
    short-loop bound hides it), so a failed short sweep says why the linter said nothing."""
    trials = report.trials
    if not trials:
        return "the sweep measured no trial"
    kept = [record for record in trials if record.leaks]
    flagged = [record for record in trials if record.leaked and not record.leaks]
    of = f" of {len(trials)} trial{'s' if len(trials) != 1 else ''}"
    if kept:
        text = f"the sweep kept objects alive in {len(kept)}{of} (a leak: exit status 1)"
        from graphguard.runtime.bounded import BOUND

        if len(trials) <= BOUND and not failed_anyway and linter_silent:
            # (a twelfth new user's trial: `check` left a 5-fold loop out as short, `run --sweep` failed it;
            # the two read as disagreeing, as GraphGuard's bounded note says for graph growth)
            text += (f" (bounded: {len(trials)} trials; graphguard check leaves loops of at most "
                     f"max-bounded-iterations = {BOUND} out, which --config 'max-bounded-iterations = 0' shows)")
    else:
        text = "the sweep kept no object alive"
    trend = report.rss_trend or next((record.rss_trend for record in reversed(flagged) if record.trend_only), None)
    if flagged and not kept and trend is not None and all(record.trend_only for record in flagged):
        # one steady rise, not a count of the trials after its start (a correct Keras sweep read "the RSS
        # trend flagged in 35 of 40 trials" as mostly flagged; a new user's trial)
        text += (f"; RSS rises about {trend.bytes_per_trial / 2**20:.1f} MiB per trial (the RSS trend"
                 + (")" if failed_anyway else ": reported, not failed)"))
    elif flagged:
        # which of them: a new user's trial found "RSS or graph ops" vague where the guard knew
        kinds = [kind for kind, test in (
            ("the RSS trend", lambda r: r.rss_trend is not None),
            ("RSS over the limit", lambda r: any("RSS retained (over" in reason for reason in r.reasons)),
            ("default-graph ops", lambda r: bool(r.graph_ops))) if any(test(record) for record in flagged)]
        # beside kept objects, the others are "more" trials (a third trial read "default-graph ops flagged
        # in 1 of 6 trials" as a count of the trials whose graph grew, which also kept objects)
        count = (f"{len(flagged)} more trial{'s' if len(flagged) != 1 else ''} with no object kept" if kept
                 else f"{len(flagged)}{of}")
        text += (f"; {' and '.join(kinds) or 'RSS or graph ops'} flagged in {count}"
                 + ("" if failed_anyway else " (reported, not failed)"))
    return text


def _numbers(numbers: list[int]) -> str:
    """``1-3, 5, 7-27``: sorted session numbers as ranges."""
    runs: list[list[int]] = []
    for number in numbers:
        if runs and number == runs[-1][1] + 1:
            runs[-1][1] = number
        else:
            runs.append([number, number])
    return ", ".join(str(a) if a == b else f"{a}-{b}" for a, b in runs)


def _linter_silent(script: str, code: Optional[types.CodeType]) -> bool:
    """Whether ``graphguard check`` with its default configuration reports no loop of the script that
    builds or keeps a model per iteration (GG201/GG202/GG111): its short-loop bound hides them (a
    fourteenth new user's trial: a 3 x 5 k-fold the linter reports was said to be left out)."""
    if code is None or code.co_filename != script:
        return False
    from graphguard.runtime.sweep_script import reported_model_rows

    try:
        with io.open_code(script) as handle:
            return not reported_model_rows(handle.read(), script)
    except (OSError, SyntaxError, ValueError):
        return False


def _unjudged(typed: str, script: str, code: Optional[types.CodeType], sweep: bool,
              asked: bool = False) -> Optional[str]:
    """The verdict's note on what the script does that no runtime guard judged, read by the linter: a
    loop that keeps or rebuilds a Keras model per iteration (GG201/GG202, however short; without
    ``--sweep`` only, which judges it), and Keras' ``predict``/``fit`` per step (GG303/GG306, as the
    linter reports them). None when there is neither. Seventh and eleventh new users' trials: a sweep
    keeping 12 models, and 200 one-row predicts (27 s against 7 s batched), each ended in a verdict
    that read as a pass."""
    if code is None or code.co_filename != script:
        return None
    from graphguard.runtime.sweep_script import keras_step_rows, kept_model_rows, reported_model_rows

    try:
        with io.open_code(script) as handle:
            source = handle.read()
        kept = [] if sweep else kept_model_rows(source, script)
        reported = set(reported_model_rows(source, script)) if kept else set()
        steps = keras_step_rows(source, script)
    except (OSError, SyntaxError, ValueError):
        return None
    notes = []
    if kept:
        # a loop the linter leaves out as short is said to be one (a twenty-first new user's trial: a 5-fold
        # loop named here read as contradicting graphguard check, which hides it)
        short = [row for row in kept if row not in reported]
        rows = ", ".join(f"{row} (short: graphguard check leaves it out)" if row in short else str(row) for row in kept)
        how = ("--sweep could not divide it into trials (see the note at the start)" if asked
               else "graphguard run --sweep judges what each iteration keeps")
        notes.append(f"models kept per iteration not judged: the loop at {typed}:{rows} makes a "
                     f"Keras model per iteration (GG201/GG202); {how}")
    if steps:
        notes.append(f"Keras predict or fit per step not judged: the loop at {typed}:{', '.join(map(str, steps))} calls "
                     f"it on one step's data (GG303/GG306; graphguard check {typed} shows where)")
    return "; ".join(notes) or None


def _print_reports(reports: list[tuple[int, str, GuardReport]], args: argparse.Namespace, grew: bool,
                   traces: TraceReport, failed: Optional[str] = None, sweep_report: Any = None,
                   unjudged: Optional[str] = None, linter_silent: bool = False) -> None:
    """Session reports (unless the script made no session but called tf.functions or ran a sweep), the
    trace report (only if it called a tf.function), and a verdict line. ``failed`` says how the script
    ended early (``it raised AttributeError``): then no growth seen is not a pass, and the verdict says
    so. ``sweep_report`` (``--sweep``): the verdict starts with the sweep's, which can fail the run."""
    err = sys.stderr
    print("", file=err)
    sessions = bool(reports) or (not traces.functions and sweep_report is None)
    if sessions:
        how = (f"count mode, {args.warmup_steps} warm-up step{'s' if args.warmup_steps != 1 else ''} per session"
               if args.mode == "count" else "finalize mode: each session's graph finalized at its first run")
        header = f"graphguard run: {len(reports)} session{'s' if len(reports) != 1 else ''} guarded ({how})"
        print(header, file=err)
    # Many sessions (a per-trial sweep): the clean ones in one line, as a new user asked (28 blocks
    # of 5 lines hid the one that grew).
    clean = [(number, kind) for number, kind, report in reports
             if not (report.grew or report.stopped or report.one_off)] if len(reports) > 3 else []
    if len(clean) < 2:
        clean = []
    clean_numbers = {number for number, _ in clean}
    # Sessions that grew from the same lines as one printed before (a TF1 sweep's model per trial on one
    # graph): one line each, naming that session (a third new user's trial: 10 lines per trial again).
    printed: dict[tuple, int] = {}
    same: dict[int, list[int]] = {}
    bounded: dict[int, list[int]] = {}
    for number, kind, report in reports:
        if number in clean_numbers:
            continue
        key = line_keys(report.growth)
        # sessions whose only ops are bounded growth from lines printed before: one line each (a fifteenth
        # new user's trial: a 6-rate TF1 sweep printed the same 15-line block for sessions 4, 5 and 6)
        # (and a sixteenth's: 20 correct trials, each with a lazily built op held as a one-off, printed in full)
        held = not key and not report.stopped and bool(report.one_off)
        hold_key = ("bounded" if all(event.kind == "bounded" for event in report.one_off) else "one-off",
                    line_keys(report.one_off)) if held else None
        if key and key in printed and not report.stopped:
            same.setdefault(printed[key], []).append(number)
            continue
        if hold_key is not None and hold_key in printed:
            bounded.setdefault((printed[hold_key], hold_key[0]), []).append(number)
            continue
        if key:
            printed.setdefault(key, number)
        if hold_key is not None:
            printed.setdefault(hold_key, number)
        print(f"-- session {number} ({kind}) --", file=err)
        print(str(report), file=err)
    for first, numbers in same.items():
        print(f"-- session{'s' if len(numbers) > 1 else ''} {_numbers(numbers)}: graph growth from the same lines "
              f"as session {first} --", file=err)
    for (first, kind), numbers in bounded.items():
        what = "bounded growth" if kind == "bounded" else "one-offs"
        print(f"-- session{'s' if len(numbers) > 1 else ''} {_numbers(numbers)}: {what} from the same lines "
              f"as session {first} (tolerated) --", file=err)
    if clean:
        kinds = sorted({kind for _, kind in clean})
        print(f"-- {len(clean)} sessions ({', '.join(kinds)}): no graph growth after warm-up: "
              f"{_numbers(sorted(clean_numbers))} --", file=err)
    if traces.functions and sweep_report is not None and not traces.retracing:
        # a sweep's Keras fits trace Keras' own step functions once per model: the table of them is noise
        # beside the sweep's report (a fourth new user's trial); TraceGuard.report() has them all
        count = len(traces.functions)
        print(f"graphguard run: {count} tf.function{'s' * (count != 1)} traced, none retracing (TraceGuard, "
              f"max_traces={traces.max_traces})", file=err)
    elif traces.functions:
        print(f"graphguard run: tf.function traces counted (TraceGuard, max_traces={traces.max_traces}, "
              f"on-retrace {args.on_retrace})", file=err)
        print(traces.format(), file=err)
    stopped = [report.stopped for _, _, report in reports if report.stopped and not report.grew]
    if grew and not stopped:
        summary = _growth_summary(reports, warned=args.on_growth == "warn")
        # an op built once, refused by a finalized graph, is no growth (a twelfth new user's trial)
        verdict = ("finalize mode refused an op built once" if _ONCE in summary else "graph growth found") + summary
    elif stopped:
        verdict = f"the guard stopped the script: {stopped[0]}"
    elif failed:
        verdict = f"the script failed ({failed}): no graph growth seen before it stopped, which is no verdict"
    elif not reports and not traces.functions:
        # (a new user's trial: "no graph growth" for a script without TensorFlow read as a pass)
        verdict = "nothing guarded: the script opened no TensorFlow session and called no tf.function"
    else:
        verdict = "no graph growth"
        bounded = list(dict.fromkeys(str(line) for _, _, report in reports for event in report.one_off
                                     if event.kind == "bounded" for group in event.groups for line in group.lines))
        if bounded:  # said, so that the tolerance reads as what it is (a thirteenth new user's trial)
            verdict = (f"no sustained graph growth; bounded growth tolerated at {bounded[0]}"
                       + (f" and {len(bounded) - 1} more line{'s' * (len(bounded) > 2)}" if len(bounded) > 1 else "")
                       + " (in loops of at most --max-bounded-iterations runs, as graphguard check leaves them out)")
    parts = [verdict] if sessions or failed else []
    if traces.functions:
        parts.append("tf.function retracing found" if traces.retracing else "no tf.function retracing")
    if sweep_report is not None:
        parts.insert(0, _sweep_verdict(sweep_report, failed_anyway=bool(grew or stopped), linter_silent=linter_silent))
    elif args.sweep:  # no loop to measure: say so first, so that what follows cannot read as the sweep's pass
        parts.insert(0, "no sweep measured (see the note at the start)")
    if unjudged is not None:
        # first, so that what follows ("no tf.function retracing") cannot read as the run's pass (a
        # thirteenth new user's trial: exit 0 on a k-fold keeping every model read as one)
        parts.insert(0, unjudged)
    print(f"graphguard run: {'; '.join(parts)}", file=err, flush=True)
