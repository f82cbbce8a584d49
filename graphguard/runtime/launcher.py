"""``graphguard run script.py [args...]``: run a script with every ``tf.compat.v1`` session guarded.

No code change needed to try the guard. The script runs in this process, as ``runpy.run_path`` runs it
(its code in a fresh ``__main__`` module with ``__file__`` absolute), with ``sys.argv`` and ``sys.path[0]``
set as ``python script.py`` sets them: ``sys.argv[0]`` is the path as typed, and every argument after
the script reaches it untouched, a ``--`` included (a ``--`` before the script ends graphguard's options).
Every session it creates is guarded from its first ``run``: ``Session``, ``InteractiveSession``, and
the session inside ``MonitoredSession`` / ``MonitoredTrainingSession`` / ``Supervisor``, because they
all run through ``BaseSession.run``. At exit the report of every guarded session is printed on
stderr, and the exit status says whether the graph grew.

TensorFlow is not imported by the launcher: scripts often set ``TF_CPP_MIN_LOG_LEVEL`` or
``CUDA_VISIBLE_DEVICES`` before their own ``import tensorflow``, and that must still work. Instead a
``sys.meta_path`` finder waits for ``tensorflow.python.client.session`` to be imported by the script
and patches ``BaseSession.run`` (and ``close``) right after the module is executed. The patched
``run`` creates a count-mode :class:`~graphguard.GraphGuard` for the session on its first call and
goes through it; ``close`` freezes that guard's report and drops it, so scripts that make many
sessions do not keep them alive. (The patch and the finder are :mod:`graphguard.runtime.watch`, which
``pytest --graphguard`` and ``%load_ext graphguard`` use too.)

Count mode is the default because an unmodified script legitimately builds ops after its first
``run`` (a ``Saver`` or summaries after ``sess.run(init)``, lazy set-up in the first iteration): with
``--warmup-steps 2`` (the default here) the ops built before a session's third run are tolerated.
Ops built later are growth only when it is sustained: the same creating line (file:line) adds ops
on at least ``--min-growth-steps`` (default 2) distinct steps, as a line inside the loop does. A single burst after warm-up (evaluation ops and a Saver built once
after the training loop, as the classic tutorials do) is listed in the report as a one-off and does
not fail the script. Finalize mode is not the default because it refuses any op, even those.
A burst larger than ``--max-burst-ops`` (and ``--max-burst-ratio`` times the graph) is growth anyway,
and the sessions on one graph are counted together (:mod:`graphguard.runtime.sessions`): a line that
builds ops for each new session on one graph (a GraphDef imported per request, a model per trial
without ``reset_default_graph()``) is growth at the ``--min-growth-sessions``-th session after the first.

TF 2 scripts (eager): every ``tf.function`` the script calls is counted by a
:class:`~graphguard.runtime.trace.TraceGuard` (``--max-traces``, default 8; ``--on-retrace raise`` by
default stops the script at the call that traced past the limit, ``warn`` lets it run). It starts when
the script's own ``import tensorflow`` (or ``import keras``) has finished, through the same kind of
``sys.meta_path`` finder, and is stopped when the script ends. Its report (functions, traces, calls,
the calling line, what changed and the fix) is printed after the session reports, only if the script
called a ``tf.function``: a TF1 script's output is unchanged.

TF1-era scripts (``--tf1``): ``import tensorflow as tf`` inside the script gives
``tensorflow.compat.v1`` with v2 behaviour disabled, and Keras 2 (``tf_keras``) backs ``tf.layers``
when it is installed; see :mod:`graphguard.runtime.tf1`.

Exit status: the script's own status if it is not 0 (an uncaught exception is 1, as with
``python``); otherwise 1 if any guarded session grew or a ``tf.function`` kept retracing (or a guard
stopped the script), else 0. A script that does not compile (a syntax error, a null byte) does not run
and the status is 1, as with ``python``. A missing script or a bad option (a bad value, ``--mode finalize``
with ``--on-growth warn``) is a one-line error and status 2.
"""

from __future__ import annotations

import argparse
import importlib.util
import itertools
import io
import marshal
import os
import re
import runpy
import sys
import traceback
import types
import warnings
import zipfile
from typing import Any, Optional, Sequence

from graphguard.runtime.guard import (
    DEFAULT_MAX_BURST_OPS,
    DEFAULT_MAX_BURST_RATIO,
    DEFAULT_MIN_GROWTH_SESSIONS,
    GraphGrowthError,
    GraphGrowthWarning,
    RssGrowthError,
)
from graphguard.runtime.report import GuardReport
from graphguard.runtime.bounded import BOUND
from graphguard.runtime.sweep_script import GUARD_NAME
from graphguard.runtime.trace import DEFAULT_MAX_TRACES, RetracingError, TraceGuard
from graphguard.runtime.verdict import _linter_silent, _print_reports, _unjudged
from graphguard.runtime.watch import Watch

__all__ = ["main"]

_STOPPING_ERRORS = (GraphGrowthError, RssGrowthError, RetracingError)  # a guard stopped the script
EXIT_CLEAN, EXIT_GROWTH, EXIT_ERROR = 0, 1, 2


class _OneLineParser(argparse.ArgumentParser):
    def __init__(self, **kwargs: Any) -> None:
        self.options: dict[str, argparse.Action] = {}  # option string -> its action (filled by add_argument)
        super().__init__(**kwargs)

    def add_argument(self, *args: Any, **kwargs: Any) -> argparse.Action:
        action = super().add_argument(*args, **kwargs)
        self.options.update(dict.fromkeys(action.option_strings, action))
        return action

    def option(self, arg: str) -> Optional[argparse.Action]:
        """The option ``arg`` names, as argparse finds it (a unique prefix of a long option is enough); ``None``
        for anything else, ``--option=value`` included."""
        if arg in self.options:
            return self.options[arg]
        if not arg.startswith("--") or "=" in arg or not self.allow_abbrev:
            return None
        matches = {action for name, action in self.options.items() if name.startswith(arg)}
        return matches.pop() if len(matches) == 1 else None

    def error(self, message: str):  # one line, as the rest of graphguard's command line
        print(f"graphguard: error: {message} (see 'graphguard run --help')", file=sys.stderr)
        raise SystemExit(EXIT_ERROR)


def _parser() -> argparse.ArgumentParser:
    parser = _OneLineParser(
        prog="graphguard run",
        description="Run a Python script with every tf.compat.v1 session it creates guarded against graph growth, "
                    "and every tf.function call counted for retracing (TF 2).",
    )
    parser.add_argument("--mode", choices=("count", "finalize"), default="count",
                        help="count (default): compare Graph.version per run; finalize: refuse new ops from the first run")
    parser.add_argument("--warmup-steps", type=int, default=2, metavar="N",
                        help="count mode: runs per session during which new ops are tolerated (default: 2)")
    parser.add_argument("--max-new-ops-per-step", type=int, default=0, metavar="N",
                        help="ops a step may add after warm-up (default: 0)")
    parser.add_argument("--min-growth-steps", type=int, default=2, metavar="N",
                        help="count mode: distinct steps after warm-up on which one line must add ops before it is growth; "
                        "a single burst is a tolerated one-off (default: 2)")
    parser.add_argument("--min-growth-sessions", type=int, default=DEFAULT_MIN_GROWTH_SESSIONS, metavar="N",
                        help="sessions after the first on one graph that the same line builds ops for before it is "
                        f"growth: a session per request or per trial on one graph (default: {DEFAULT_MIN_GROWTH_SESSIONS})")
    parser.add_argument("--max-bounded-iterations", type=int, default=BOUND, metavar="N",
                        help="count mode: growth in loops the source counts, at most N runs in all (a 5-fold loop, "
                        "a Saver on every 50th of 200 steps), is tolerated and reported, as graphguard check leaves "
                        f"such loops out; 0 acts on it (default: {BOUND})")
    parser.add_argument("--max-burst-ops", type=_burst_ops, default=DEFAULT_MAX_BURST_OPS, metavar="N",
                        help="count mode: one step after warm-up may add this many ops (and --max-burst-ratio times "
                        f"the graph) as a one-off; more is growth; 'none' turns it off (default: {DEFAULT_MAX_BURST_OPS})")
    parser.add_argument("--max-burst-ratio", type=float, default=DEFAULT_MAX_BURST_RATIO, metavar="R",
                        help="count mode: the burst limit relative to the ops in the graph when the session's guard "
                        f"started (default: {DEFAULT_MAX_BURST_RATIO:g})")
    parser.add_argument("--on-growth", choices=("raise", "warn"), default=None,
                        help="raise (default): stop the script at the first growth; warn: keep running "
                        "(the default with --sweep, whose report judges each trial's graph ops)")
    parser.add_argument("--max-rss-growth", type=_bytes, default=None, metavar="BYTES",
                        help="stop when RSS grows by more than this since warm-up (e.g. 2G, 500M)")
    parser.add_argument("--max-traces", type=int, default=DEFAULT_MAX_TRACES, metavar="N",
                        help="TF 2: traces one tf.function may make before it is retracing "
                        f"(default: {DEFAULT_MAX_TRACES})")
    parser.add_argument("--on-retrace", choices=("raise", "warn"), default="raise",
                        help="TF 2: raise (default): stop the script at the call that traced past --max-traces; "
                        "warn: keep running")
    parser.add_argument("--tf1", action="store_true",
                        help="run a TF1-era script unchanged on TF 2: `import tensorflow as tf` in the script gives "
                        "tensorflow.compat.v1 with v2 behaviour disabled (tf.layers needs the tf_keras package)")
    parser.add_argument("--sweep", action="store_true",
                        help="measure the script's sweep with SweepGuard: the iterations of the outermost loop that "
                        "builds and trains a model (the loop of a GG201/GG202 finding, else one calling .fit()/.train()) "
                        "are trials; a trial that leaves its model alive makes the exit status 1 (RSS retained alone is "
                        "reported, not failed)")
    parser.add_argument("--plot", metavar="FILE.png",
                        help="draw step time, graph ops and RSS against step of the session with the most steps (with "
                        "--sweep: seconds and RSS retained per trial) into this PNG file; needs matplotlib: "
                        "pip install -e '.[plot]' in a clone of graphguard")
    parser.add_argument("script", help="the Python script to run")
    # Listed for --help only: parse() cuts the command line after the script and hands the rest over itself.
    parser.add_argument("args", nargs="*", default=[], help="arguments passed to the script untouched, a '--' included")
    return parser


def _split(parser: _OneLineParser, argv: Sequence[str]) -> tuple[list[str], list[str]]:
    """``argv`` cut after the script: (graphguard's options and the script, the script's arguments).

    argparse never sees the script's arguments: ``nargs=REMAINDER`` drops a ``--`` that follows the
    script. The script is the first argument that is not an option or an option's value (or the one
    after a ``--``). An option that takes a value is joined to it (``--max-rss-growth=-5M``), so that a
    value starting with ``-`` reaches the option's check instead of being taken for an unknown option.
    """
    head: list[str] = []
    i = 0
    while i < len(argv):
        arg = argv[i]
        if arg == "--":
            return head + list(argv[i:i + 2]), list(argv[i + 2:])
        if not arg.startswith("-") or arg == "-":
            return head + [arg], list(argv[i + 1:])
        action = parser.option(arg)
        value = argv[i + 1] if i + 1 < len(argv) else None
        if action is not None and action.nargs != 0 and value not in (None, "--") and parser.option(value) is None:
            head.append(f"{arg}={value}")
            i += 2
        else:
            head.append(arg)
            i += 1
    return head, []


def _burst_ops(text: str) -> Optional[int]:
    if text.lower() == "none":
        return None
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of ops: {text!r} (an int >= 0, or none)") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be >= 0 (or none): {text!r}")
    return value


def _bytes(text: str) -> int:
    """``2G``, ``500M``, ``1GB``, ``1 GiB``, ``1048576``: bytes (K, M, G are powers of 1024, as the
    reports print them; a trial's user typed ``1GB``)."""
    unit = text.strip().upper()
    for suffix in ("IB", "B"):
        if unit.endswith(suffix) and unit[:-len(suffix)][-1:] in ("K", "M", "G"):
            unit = unit[:-len(suffix)]
            break
    scale = {"K": 2**10, "M": 2**20, "G": 2**30}.get(unit[-1:], 1)
    number = unit[:-1] if scale != 1 else unit
    try:
        value = int(float(number) * scale)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a size in bytes: {text!r} (e.g. 2G, 500M, 1048576)") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be > 0: {text!r}")
    return value


def parse(argv: Sequence[str]) -> argparse.Namespace:
    """The launcher's options, ``args`` being the script's arguments exactly as given; raises
    ``SystemExit(2)`` after a one-line error on a bad command line."""
    parser = _parser()
    if not argv:
        parser.error("a script to run is required: graphguard run [OPTIONS] SCRIPT [ARGS...]")
    head, script_args = _split(parser, argv)
    args = parser.parse_args(head)
    args.args = script_args
    if args.warmup_steps < 0 or args.max_new_ops_per_step < 0:
        parser.error("--warmup-steps must be >= 0" if args.warmup_steps < 0 else "--max-new-ops-per-step must be >= 0")
    if args.min_growth_steps < 1:
        parser.error("--min-growth-steps must be >= 1")
    if args.min_growth_sessions < 1:
        parser.error("--min-growth-sessions must be >= 1")
    if args.max_bounded_iterations < 0:
        parser.error("--max-bounded-iterations must be >= 0")
    if not args.max_burst_ratio >= 0:
        parser.error("--max-burst-ratio must be >= 0")
    if args.max_traces < 1:
        parser.error("--max-traces must be >= 1")
    if args.on_growth is None:  # a sweep runs to its end (a third new user's trial: stopped at trial 4 of 6)
        args.on_growth = "warn" if args.sweep and args.mode != "finalize" else "raise"
    if args.mode == "finalize" and args.on_growth == "warn":  # GraphGuard() refuses it too (ValueError)
        parser.error("--on-growth warn needs --mode count: a finalized graph cannot grow, so the run cannot go on")
    if importlib.util.find_spec("tensorflow") is None and not args.sweep:
        parser.error("TensorFlow is not installed in this environment, so there is no session to guard "
                     "(pip install tensorflow, or run with the Python that has it: python -m graphguard run ...)")
    if not os.path.isfile(args.script):
        parser.error(f"{args.script}: " + ("is a folder, not a script" if os.path.isdir(args.script)
                                           else "is not a regular file" if os.path.exists(args.script) else "no such file"))
    return args


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Run ``argv`` (``[options] script.py [args...]``, default ``sys.argv[1:]``); returns the exit status."""
    try:
        args = parse(sys.argv[1:] if argv is None else argv)
    except SystemExit as stop:
        return int(stop.code or 0)
    if args.plot is not None:
        from graphguard.plot import PlotUnavailable, check_target

        try:
            check_target(args.plot)
        except (PlotUnavailable, ValueError) as error:
            print(f"graphguard: error: {error}", file=sys.stderr)
            return EXIT_ERROR
    script = os.path.abspath(args.script)
    try:
        code = _compile(script)
    except OSError as error:  # as python: "can't open file", status 2
        print(f"graphguard: error: {args.script}: cannot read it: {error.strerror or error}", file=sys.stderr)
        return EXIT_ERROR
    except SyntaxError as error:  # as python prints it; the script never ran, so there is nothing to report on
        traceback.print_exception(type(error), error, None, file=sys.stderr)
        print(f"graphguard run: {args.script} did not run: it has a syntax error", file=sys.stderr)
        return 1
    except _NullByte as error:
        print(f"graphguard run: {args.script} did not run: it has a syntax error: a null byte on line {error.line} "
              "(Python source cannot contain null bytes)", file=sys.stderr)
        return 1
    sweep = None
    if args.sweep:
        planned = _sweep_plan(args.script, script, code)
        if isinstance(planned, int):
            return planned
        if planned is not None:
            code, sweep = planned
    options = dict(
        mode=args.mode,
        warmup_steps=args.warmup_steps,
        max_new_ops_per_step=args.max_new_ops_per_step,
        min_growth_steps=args.min_growth_steps,
        min_growth_sessions=args.min_growth_sessions,
        max_burst_ops=args.max_burst_ops,
        max_burst_ratio=args.max_burst_ratio,
        on_growth=args.on_growth,
        max_rss_growth=args.max_rss_growth,
        max_bounded_iterations=args.max_bounded_iterations,
    )
    trace_guard = TraceGuard(max_traces=args.max_traces, on_retrace=args.on_retrace)
    watch = Watch(options, trace_guard)
    watch.start()  # patches at once when TensorFlow is already imported (graphguard run called in-process)
    shown = warnings.showwarning
    warnings.showwarning = _short_growth_warning(shown)

    saved_argv, saved_path0 = sys.argv[:], sys.path[0] if sys.path else None
    shim = _tf1_shim(script) if args.tf1 else None
    sys.argv = [args.script, *args.args]
    if sys.path:
        sys.path[0] = os.path.dirname(script)
    else:
        sys.path.insert(0, os.path.dirname(script))
    status, stopped_by_guard, failed = EXIT_CLEAN, False, None
    try:
        if code is None:  # a zip archive with a __main__.py, which python runs too
            runpy.run_path(args.script, run_name="__main__")
        else:
            _run_main(code, script, None if sweep is None else {GUARD_NAME: sweep},
                      None if sweep is None else _finish_in(script))
    except SystemExit as stop:
        status = _exit_status(stop.code)
        if status:
            failed = f"it exited with status {status}"
    except KeyboardInterrupt:
        status = 130
        failed = "it was interrupted"
    except BaseException as error:  # the script's own failure: print it as python would
        stopped_by_guard = isinstance(error, _STOPPING_ERRORS)
        if shim is not None:  # the traceback ends at the script's import line, not in the import hook
            shim.hide_frames(error)
        _print_script_error(error, script)
        hint = _tf1_explain(error) if shim else _tf1_suggestion(error)
        said = shim.said if shim is not None else None
        # (said again at the error when it names what to install: a sixth new user's trial found the line
        # said before the run buried under TensorFlow's log; "run it without --tf1" is said once)
        if hint and not (said and "without --tf1" in hint and "without --tf1" in said):
            print(hint, file=sys.stderr)
        status = 1
        if not stopped_by_guard:
            failed = f"it raised {type(error).__name__}"
    finally:
        sys.stdout.flush()
        if shim is not None:
            shim.uninstall()
        sys.argv = saved_argv
        if warnings.showwarning is not shown:  # (unless the script replaced it)
            warnings.showwarning = shown
        if saved_path0 is not None and sys.path:
            sys.path[0] = saved_path0
        watch.stop()

    leaked = False
    sweep_report = None
    if sweep is not None:
        try:
            sweep_report = sweep.report()
        except Exception as error:  # an on_leak that raises, a trial left open by the script's own error
            print(f"graphguard run --sweep: no report: {error}", file=sys.stderr)
        else:
            print(sweep_report, file=sys.stderr)
            leaked = any(record.leaks for record in sweep_report.trials)  # objects kept; RSS alone is reported
    reports = watch.reports()
    traces = trace_guard.report()
    retraced = bool(traces.retracing)
    grew = (stopped_by_guard and not retraced) or any(report.grew or report.stopped for _, _, report in reports)
    # (--sweep that measured nothing judges nothing: the loops keeping models are named as without it)
    unjudged = None if failed else _unjudged(args.script, script, code, args.sweep and sweep is not None,
                                             asked=args.sweep)
    silent = leaked and _linter_silent(script, code)
    _print_reports(reports, args, grew, traces, failed, sweep_report, unjudged, silent)
    over = _rss_over_at_end(reports, args.max_rss_growth)
    if args.plot is not None:
        _plot(args.plot, reports, sweep_report)
    if status == EXIT_CLEAN and (grew or retraced or leaked or over):
        return EXIT_GROWTH
    return status


def _rss_over_at_end(reports: list[tuple[int, str, GuardReport]], limit: Optional[int]) -> bool:
    """``--max-rss-growth`` checked once more on each session's last RSS reading: RSS is sampled every
    few steps and at most once a second, so a fast loop can end before any sample after warm-up is
    taken (a twentieth new user's trial: +319.6 MiB over a 50 MiB limit, "no graph growth", exit 0).
    Prints one line per session over the limit; True when there is one."""
    from graphguard.runtime.records import bytes_text

    if limit is None:
        return False
    over = False
    for number, _, report in reports:
        growth = report.stats.rss_growth_bytes
        if growth is None or growth <= limit or report.stopped is not None:
            continue
        over = True
        print(f"graphguard run: session {number}: RSS grew {bytes_text(growth)} since warm-up, over --max-rss-growth "
              f"{bytes_text(limit)} (read when the session ended: RSS is sampled at most once a second while it "
              f"runs, so a fast loop can end first)", file=sys.stderr)
    return over


def _plot(path: str, reports: list[tuple[int, str, GuardReport]], sweep_report) -> None:
    """``--plot``: the sweep's picture with ``--sweep``, else the picture of the session with the most
    guarded steps; one line on stderr says where it is, or why there is none (the exit status stays)."""
    try:
        if sweep_report is not None:
            drawn, what = sweep_report.plot(path), "the sweep"
        elif reports:
            number, _, report = max(reports, key=lambda entry: entry[2].stats.steps)
            drawn, what = report.plot(path), f"session {number}"
        else:
            raise ValueError("no session was guarded")
    except Exception as error:  # noqa: BLE001 - matplotlib's own errors too: one line, never a traceback
        from graphguard.plot import error_line

        print(f"graphguard run: --plot: no picture: {error_line(error)}", file=sys.stderr)
    else:
        print(f"graphguard run: picture of {what}: {drawn}", file=sys.stderr)


def _finish_in(script: str) -> Any:
    """``--sweep``: judge the last trial from code running in the script's own globals, as if the script
    called ``finish()`` on its last line: a loop at module level then has its variables as loop
    variables (the last ``model`` is not a leak), and what the script's globals hold is still there."""
    code = compile(f"{GUARD_NAME}.finish()", script, "exec", dont_inherit=True)

    def finish(namespace: dict[str, Any]) -> None:
        exec(code, namespace)

    return finish


def _sweep_plan(typed: str, script: str, code: Optional[types.CodeType]) -> Any:
    """``--sweep``: (the instrumented code, its SweepGuard); None when no loop trains a model (said on
    stderr; the script runs as it is); an exit status for a script that cannot be instrumented."""
    from graphguard.runtime.sweep import SweepGuard
    from graphguard.runtime.sweep_script import plan

    if code is None or code.co_filename != script:
        print(f"graphguard run: error: --sweep needs the script's source; {typed} is a zip archive or a .pyc",
              file=sys.stderr)
        return EXIT_ERROR
    with io.open_code(script) as handle:
        source = handle.read()
    planned = plan(source, script)
    if planned is None:
        from graphguard.runtime.sweep_script import search_rows, unwrapped_rows

        rows = unwrapped_rows(source, script)
        searches = [] if rows else search_rows(source, script)
        if rows:
            print(f"graphguard run --sweep: the sweep at {typed}:{', '.join(map(str, rows))} is a comprehension, "
                  "which --sweep cannot divide into trials (write it as a for loop to measure it): running it "
                  "without SweepGuard", file=sys.stderr)
        elif searches:
            # ``study.optimize(objective, n_trials=15)``: the linter's GG201/GG202 are at an engine's search
            # call, not a loop of the script (a twenty-third new user's trial read "no GG201/GG202 finding"
            # beside graphguard check's two)
            print(f"graphguard run --sweep: the sweep at {typed}:{', '.join(map(str, searches))} is run by a search engine (Optuna, Keras "
                  "Tuner, scikit-learn, hyperopt...), which --sweep cannot divide into trials: pass the engine's "
                  "callback, SweepGuard().optuna_callback() or .keras_callback() (docs/sweep-guard.md), to measure "
                  "it; running it without SweepGuard", file=sys.stderr)
        else:
            print(f"graphguard run --sweep: no loop in {typed} builds and trains a model (no GG201/GG202 finding, "
                  "no loop calling .fit() or .train()): running it without SweepGuard", file=sys.stderr)
        return None
    lines = ", ".join(str(line) for line in planned.loops)
    print(f"graphguard run --sweep: trials are the iterations of the loop at {typed}:{lines} ({planned.why})",
          file=sys.stderr)
    leaks = itertools.count(1)  # leaking trials told so far, this one included

    def on_leak(record: Any) -> None:
        if sweep.repeats_trend(record):  # a steady RSS rise once, not per trial on it
            return
        told = next(leaks)
        if told <= _LEAKS_SAID:
            print(f"graphguard run --sweep: {sweep.leak_message(record)}", file=sys.stderr)  # the fix once per sweep
        elif told == _LEAKS_SAID + 1:
            # the report at the end lists every trial: a sweep of 50 leaking trials printed each twice (a
            # fourth new user's trial)
            # (a trial over the RSS limit with nothing alive is not said to leak: a twenty-third new user's
            # trial read "leaked too" on a correct sweep 0.6 MiB over 32 MiB)
            what = "leaked too" if record.leaks else "went over the RSS limit too (no object alive)"
            print(f"graphguard run --sweep: trial '{record.name}' {what}; the report at the end lists it and "
                  f"every later trial", file=sys.stderr)

    sweep = SweepGuard(on_leak=on_leak)
    sweep._track_bound = True  # the values the loop's body binds (a model, a solver) are its trial's objects
    return planned.code, sweep


#: ``--sweep``: leaking trials said as they are judged; the others are in the report at the end.
_LEAKS_SAID = 3


class _NullByte(Exception):
    def __init__(self, line: int) -> None:
        super().__init__(line)
        self.line = line


def _compile(script: str) -> Optional[types.CodeType]:
    """The code of ``script`` (absolute), compiled as ``runpy.run_path`` does (source, or a ``.pyc``);
    ``None`` for a zip archive. Raises ``SyntaxError``, ``_NullByte`` (Python refuses a null byte in
    source, with a ``ValueError`` or a ``SyntaxError`` depending on the version) or ``OSError``."""
    if zipfile.is_zipfile(script):
        return None
    with io.open_code(script) as handle:
        data = handle.read()
    if data[:4] == importlib.util.MAGIC_NUMBER:  # a compiled .pyc: a 16-byte header, then the code
        return marshal.loads(data[16:])
    if b"\0" in data:
        raise _NullByte(data.count(b"\n", 0, data.index(b"\0")) + 1)
    return compile(data, script, "exec", dont_inherit=True)  # not this module's __future__ flags


def _run_main(code: types.CodeType, script: str, names: Optional[dict[str, Any]] = None,
              at_end: Optional[Any] = None) -> None:
    """Runs ``code`` as ``runpy.run_path`` would (a fresh ``__main__`` module in ``sys.modules`` while it
    runs, ``__file__`` absolute as python 3.9+ makes it), but leaves ``sys.argv`` alone: ``run_path``
    sets ``sys.argv[0]`` to the path it is given, where python keeps the path as typed. ``names`` are
    bound in the script's globals first; ``at_end`` is called when the script's code has run (or
    raised), while its module still exists (``--sweep`` judges the last trial then: afterwards the
    script's globals, and what they held, are gone)."""
    main = types.ModuleType("__main__")
    main.__dict__.update(__file__=script, __cached__=None, __loader__=None, __package__=None, __spec__=None)
    main.__dict__.update(names or {})
    saved = sys.modules.get("__main__")
    sys.modules["__main__"] = main
    try:
        exec(code, main.__dict__)
    finally:
        if at_end is not None:
            at_end(main.__dict__)
        if saved is not None:
            sys.modules["__main__"] = saved
        else:
            sys.modules.pop("__main__", None)


def _tf1_shim(script: str) -> Any:
    """``--tf1``: the import hook of :mod:`graphguard.runtime.tf1`, installed, and its hint printed."""
    from graphguard.runtime.tf1 import Tf1Shim

    shim = Tf1Shim(script)
    hint = shim.said = shim.hint()
    if hint:
        print(hint, file=sys.stderr)
    shim.install()
    return shim


def _tf1_suggestion(error: BaseException) -> Optional[str]:
    """For a script run without ``--tf1`` that fails on a TF 1.x name TF 2 dropped from ``tf`` but keeps
    in ``tf.compat.v1`` (``tf.placeholder``, ``tf.Session``): one line saying to run it with ``--tf1``."""
    if not isinstance(error, AttributeError):
        return None
    if "not available with Keras 3" in str(error):  # ``tf.compat.v1.layers.dense`` on TF 2.16 and later
        from graphguard.runtime.tf1 import keras_2_pin

        return (f"graphguard run: tf.layers needs Keras 2 on this TensorFlow: pip install {keras_2_pin()}, then "
                f"run the script with graphguard run --tf1 (it makes tf.layers and tf.keras use Keras 2)")
    match = re.search(r"module 'tensorflow' has no attribute '(\w+)'", str(error))
    tensorflow = sys.modules.get("tensorflow")
    if not match or tensorflow is None:
        return None
    try:
        v1 = tensorflow.compat.v1
    except AttributeError:
        return None
    if not hasattr(v1, match.group(1)):
        return None
    return (f"graphguard run: tf.{match.group(1)} is a TF 1.x name that TF 2 keeps only in tf.compat.v1: "
            f"run the script with graphguard run --tf1")


def _tf1_explain(error: BaseException) -> Optional[str]:
    from graphguard.runtime.tf1 import explain

    return explain(error)


def _exit_status(code: Any) -> int:
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    print(code, file=sys.stderr)  # sys.exit("message"), as python does
    return 1


def _print_script_error(error: BaseException, script: str) -> None:
    """The script's traceback as python prints it, from the script's first frame on.

    For the guard's own errors the frames inside graphguard are dropped too and the message is
    one line: the report printed next has the details.
    """
    tb = error.__traceback__
    while tb is not None and os.path.abspath(tb.tb_frame.f_code.co_filename) != script:
        tb = tb.tb_next
    tb = tb or error.__traceback__
    if not isinstance(error, _STOPPING_ERRORS):
        traceback.print_exception(type(error), error, tb, file=sys.stderr)
        return
    from graphguard.runtime.attribution import is_internal

    # The user's frames only: in finalize mode the refusal is raised 20 frames deep inside TensorFlow,
    # a RetracingError in graphguard's wrapper of tf.function's __call__.
    frames = [f for f in traceback.extract_tb(tb) if not is_internal(f.filename)]
    print("Traceback (most recent call last):", file=sys.stderr)
    print("".join(traceback.format_list(frames)), end="", file=sys.stderr)
    print(f"{type(error).__module__}.{type(error).__name__}: {str(error).splitlines()[0]}", file=sys.stderr)
    if getattr(error, "checkpoint", None):
        print(f"checkpoint saved before stopping: {error.checkpoint}", file=sys.stderr)


def _short_growth_warning(show: Any) -> Any:
    """``warnings.showwarning`` for the script's run: a ``GraphGrowthWarning`` (``--on-growth warn``, a
    sweep's sessions) as its first line only, since the report at exit lists its lines and the fix (a
    seventh new user's trial read each 7-line block twice under ``--sweep``). Other warnings as ``show``
    shows them."""
    def short(message: Any, category: type, filename: str, lineno: int, file: Any = None, line: Any = None) -> None:
        if issubclass(category, GraphGrowthWarning) and "\n" in str(message):
            message = (str(message).split("\n", 1)[0]
                       + " (its lines and the fix are in graphguard run's report at exit)")
        show(message, category, filename, lineno, file, line)

    return short
