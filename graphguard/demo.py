"""``graphguard demo``: a public graph-growth report, ported to a model that runs on a laptop in two minutes.

The report: a network with seven losses, trained with its model structure and ``tf.train.Saver()``
built inside the loop that calls ``sess.run``, took 1.55 s per step on a Tesla P4 and kept getting
slower; built once before the session, it took 0.097 s per step, flat. ``fixtures/demo/`` holds the
same mistake and its fix on the 8x8 digits bundled with scikit-learn (an MLP with seven heads and losses):
``train_incorrect.py`` rebuilds the model, its seven losses, the train op and a Saver on every step;
``train_correct.py`` builds them once. They train identically; only the graph differs.

The demo has three parts, each in its own subprocess (``sys.executable``; this module never imports
TensorFlow, and each TensorFlow process pays about 5 s to import it):

1. **Lint**: ``graphguard check`` on both scripts (static; no TensorFlow).
2. **Run**: both scripts for ``steps`` training steps, one after the other (they would compete for
   the cores), and a side-by-side table at steps 1, 10, 50, 100, 200 (those up to ``steps``) and
   ``steps``, parsed from the scripts' ``step: N, time cost: S, ops: K`` lines:

   * *step time*, in seconds: wall time of one training step as the script measures it
     (``time.perf_counter`` around building that step's graph, if any, and its ``sess.run``;
     checkpoint saves and test evaluation every 50 steps are outside it);
   * *graph ops*: ``Graph.version`` of the default graph after the step, the number of ops created so
     far (a count, no unit);
   * *ratio*: incorrect / correct, for each.

   The incorrect script adds the same number of ops every step (70), and every ``sess.run`` after that
   copies the whole graph again (tens of microseconds per existing op), so its step time grows
   linearly and its total time quadratically: 200 steps take about a minute on two cores, the whole
   demo about a minute and a half. Each run has a safety timeout far above that
   (``INCORRECT_BUDGET_SECONDS``, ``RUN_BUDGET_SECONDS``) so that a stuck or overloaded machine cannot
   hang the demo; a run stopped by it is reported as such and the table marks the steps it did not reach.
3. **Guard**: ``train_incorrect.py --guard``, which runs its loop under ``GraphGuard(sess)``: the
   first op built in the loop raises ``GraphGrowthError`` naming the op type, file:line and step.

``run_demo`` returns 0 when every part ran, 1 when a part could not run or did not behave as
described (its output says which), 2 when the fixture scripts are missing.

``graphguard demo sweep`` (:func:`run_sweep_demo`) shows the other half of graph growth's cost: sweeps
(a learning-rate sweep, a k-fold) that keep every trial's model. ``fixtures/sweep/`` holds a NumPy
two-layer net and solver swept over four learning rates and a Keras 5-fold, each leaking and fixed,
each running its trials under :class:`graphguard.runtime.SweepGuard`, and, when Optuna is installed, the
NumPy sweep as an Optuna study (``sweep.optuna_callback()``; its leak is the trial attribute Optuna's
storage keeps). The demo lints the scripts,
runs each in a fresh process (one after the other), reads each script's per-trial report (``--json``)
and prints, per pair, the seconds and the RSS retained per trial side by side, then the leaks the
leaking scripts reported with the chains of references that hold them.
"""

from __future__ import annotations

import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Optional, TextIO

from graphguard.plot import judged_leak

__all__ = ["run_demo", "run_sweep_demo", "format_sweep_table", "parse_steps", "parse_accuracy", "table_steps", "format_table", "StepRecord"]

DEMO_DIR = Path(__file__).resolve().parents[1] / "fixtures" / "demo"
CORRECT, INCORRECT = "train_correct.py", "train_incorrect.py"
TABLE_STEPS = (1, 10, 50, 100, 200)
SWEEP_DIR = DEMO_DIR.parent / "sweep"
#: (title, leaking script, fixed script) in fixtures/sweep/.
SWEEP_PAIRS = (
    ("NumPy two-layer net and solver, 4 learning rates", "numpy_sweep_leaking.py", "numpy_sweep_fixed.py"),
    ("Keras MLP, 5-fold cross-validation on the 8x8 digits", "keras_kfold_leaking.py", "keras_kfold_fixed.py"),
)
#: The NumPy sweep as an Optuna study (``sweep.optuna_callback()``), shown when Optuna is installed.
OPTUNA_PAIR = ("The NumPy sweep as an Optuna study, 4 trials", "optuna_sweep_leaking.py", "optuna_sweep_fixed.py")


def _sweep_pairs() -> tuple[tuple[str, str, str], ...]:
    """:data:`SWEEP_PAIRS`, and :data:`OPTUNA_PAIR` when Optuna can be imported (found, not imported)."""
    import importlib.util

    return (*SWEEP_PAIRS, OPTUNA_PAIR) if importlib.util.find_spec("optuna") is not None else SWEEP_PAIRS

# Safety timeouts per subprocess, in seconds of wall time, TensorFlow import included. None is expected
# to be hit: on two cores the incorrect run takes about 60 s for the default 200 steps (about twice that
# when other work loads the machine; its time grows with the square of the steps), the correct one about
# 10 s, each other part a few seconds.
INCORRECT_BUDGET_SECONDS = 300.0
RUN_BUDGET_SECONDS = 120.0
LINT_BUDGET_SECONDS = 60.0
GUARD_BUDGET_SECONDS = 60.0
# Each sweep script takes 10-25 s on two cores (TensorFlow's import included for the Keras pair).
SWEEP_BUDGET_SECONDS = 240.0
GUARD_STEPS = 5  # the guard stops the incorrect script before step 1 completes; 5 bounds a miss

_STEP_LINE = re.compile(r"^step: (\d+), time cost: (\d+(?:\.\d*)?), ops: (\d+)\s*$")
_ACCURACY_LINE = re.compile(r"^step: (\d+), test accuracy: (\d+(?:\.\d*)?)")


@dataclass(frozen=True)
class StepRecord:
    """One ``step: N, time cost: S, ops: K`` line: ``seconds`` of wall time, ``ops`` in the graph."""

    seconds: float
    ops: int


def parse_steps(text: str) -> dict[int, StepRecord]:
    """Step number -> :class:`StepRecord`, from a demo script's stdout. Other lines are ignored."""
    records = {}
    for line in text.splitlines():
        match = _STEP_LINE.match(line.strip())
        if match:
            records[int(match[1])] = StepRecord(float(match[2]), int(match[3]))
    return records


def parse_accuracy(text: str) -> dict[int, float]:
    """Step number -> test accuracy (a fraction), from the ``step: N, test accuracy: A`` lines."""
    return {int(m[1]): float(m[2]) for m in map(_ACCURACY_LINE.match, text.splitlines()) if m}


def table_steps(steps: int) -> list[int]:
    """The steps the table shows: 1, 10, 50, 100, 200 up to ``steps``, then ``steps`` itself."""
    shown = [step for step in TABLE_STEPS if step <= steps]
    return shown if steps in shown else shown + [steps]


def _ratio(incorrect: float, correct: float) -> str:
    if correct <= 0:
        return "-"
    ratio = incorrect / correct
    return f"{ratio:.1f}x" if ratio < 10 else f"{ratio:,.0f}x"


def format_table(correct: dict[int, StepRecord], incorrect: dict[int, StepRecord], steps: list[int]) -> list[str]:
    """The side-by-side table, one string per line; a step a script did not reach shows ``-``."""
    lines = [
        f"{'':>6}  {'step time (s)':^30}  {'graph ops':^30}",
        f"{'step':>6}  {'correct':>9} {'incorrect':>10} {'ratio':>9}  {'correct':>9} {'incorrect':>10} {'ratio':>9}",
    ]
    for step in steps:
        good, bad = correct.get(step), incorrect.get(step)
        cells = [
            f"{good.seconds:.4f}" if good else "-",
            f"{bad.seconds:.4f}" if bad else "-",
            _ratio(bad.seconds, good.seconds) if good and bad else "-",
            f"{good.ops:,}" if good else "-",
            f"{bad.ops:,}" if bad else "-",
            _ratio(bad.ops, good.ops) if good and bad else "-",
        ]
        lines.append(f"{step:>6}  {cells[0]:>9} {cells[1]:>10} {cells[2]:>9}  {cells[3]:>9} {cells[4]:>10} {cells[5]:>9}")
    return lines


@dataclass
class _Result:
    returncode: Optional[int]
    seconds: float
    timed_out: bool
    stdout: list[str] = field(default_factory=list)
    stderr: list[str] = field(default_factory=list)
    error: Optional[str] = None  # the subprocess could not be started

    @property
    def text(self) -> str:
        return "\n".join(self.stdout)


def _run(args: list[str], timeout: float, on_line: Optional[Callable[[str], None]] = None) -> _Result:
    """Run ``args`` in the repository root; stop it after ``timeout`` seconds of wall time.

    Both streams are read on threads line by line, so a stopped run keeps the lines it printed and
    ``on_line`` sees stdout as it arrives.
    """
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    env.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    root = str(DEMO_DIR.parents[1])
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [root, env.get("PYTHONPATH")]))
    start = time.perf_counter()
    try:
        proc = subprocess.Popen(
            args, cwd=root, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, text=True, errors="replace",
        )
    except OSError as error:
        return _Result(None, 0.0, False, error=str(error))
    result = _Result(None, 0.0, False)

    def pump(stream: TextIO, into: list[str], callback: Optional[Callable[[str], None]]) -> None:
        for line in stream:
            into.append(line.rstrip("\n"))
            if callback is not None:
                callback(into[-1])

    readers = [
        threading.Thread(target=pump, args=(proc.stdout, result.stdout, on_line), daemon=True),
        threading.Thread(target=pump, args=(proc.stderr, result.stderr, None), daemon=True),
    ]
    for reader in readers:
        reader.start()
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        result.timed_out = True
    finally:  # also on KeyboardInterrupt: never leave a TensorFlow process behind
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        for reader in readers:
            reader.join(timeout=10)
    result.returncode = proc.returncode
    result.seconds = time.perf_counter() - start
    return result


def _stderr_tail(result: _Result, count: int = 5) -> list[str]:
    """The last lines of stderr, without TensorFlow's start-up log lines."""
    noise = re.compile(r"^([IWE]\d{4} |WARNING: All log messages|To enable the following instructions)")
    return [line for line in result.stderr if line.strip() and not noise.match(line)][-count:]


def _failure(result: _Result) -> str:
    if result.timed_out:
        return f"stopped by the safety timeout after {result.seconds:.0f} s"
    return result.error or f"exit status {result.returncode}"


# ---------------------------------------------------------------------------------------------------
# Shared by the two training demos (this one and graphguard.demo_tf2): a correct and an incorrect script
# run one after the other, then compared in a side-by-side table.
# ---------------------------------------------------------------------------------------------------


@dataclass
class _PairRuns:
    """What :func:`_run_pair` gathered, per script name (``CORRECT``, ``INCORRECT``): its step records
    (step number -> the ``parse`` function's record), its test accuracies (step number -> fraction) and
    its stderr lines; ``failures``, the names of the runs that failed; ``timed_out``, whether the
    incorrect run was stopped by its safety timeout after enough steps to still show the growth."""

    records: dict[str, dict[int, Any]] = field(default_factory=dict)
    accuracy: dict[str, dict[int, float]] = field(default_factory=dict)
    stderr: dict[str, list[str]] = field(default_factory=dict)
    failures: list[str] = field(default_factory=list)
    timed_out: bool = False


def _run_pair(say: Callable[[str], None], relative: dict[str, str], steps: int, *, budgets: dict[str, float],
              parse: Callable[[str], dict[int, Any]], describe_step: Callable[[Any], str],
              checkpoint_dir: bool = False, sum_digits: int = 1, enough_steps: int = 1) -> _PairRuns:
    """Run the correct, then the incorrect script (``relative``: name -> path from the repository root)
    for ``steps`` steps, each within its safety timeout (``budgets``: name -> seconds of wall time), and
    print each run's command, its progress at the table's steps and a one-line summary.

    ``parse`` reads a script's stdout into step number -> record (a record has ``seconds``, the step's
    wall time); ``describe_step`` says one record in the progress lines. With ``checkpoint_dir`` each
    script gets ``--checkpoint-dir`` in a temporary directory the demo removes. ``sum_digits``: the
    decimals of the summary's sum of step times (seconds). A run of the incorrect script stopped by its
    safety timeout after at least ``enough_steps`` steps still shows the growth: it is reported as
    stopped, not as a failure.
    """
    shown = table_steps(steps)
    runs = _PairRuns()
    for name in (CORRECT, INCORRECT):
        budget = budgets[name]
        say(f"$ python {relative[name]} --steps {steps}    (safety timeout: {budget:.0f} s)")

        def progress(line: str) -> None:
            for step, record in parse(line).items():
                if step in shown:
                    say(f"  step {step:>4}: {describe_step(record)}")

        args = [sys.executable, relative[name], "--steps", str(steps)]
        if checkpoint_dir:
            # A stopped script cannot delete its own temporary checkpoint directory, so the demo owns it.
            with tempfile.TemporaryDirectory(prefix="graphguard-demo-") as ckpt_dir:
                result = _run(args + ["--checkpoint-dir", ckpt_dir], budget, on_line=progress)
        else:
            result = _run(args, budget, on_line=progress)
        records = runs.records[name] = parse(result.text)
        runs.accuracy[name] = parse_accuracy(result.text)
        runs.stderr[name] = result.stderr
        reached = max(records, default=0)
        if result.timed_out and name == INCORRECT and reached >= enough_steps:
            # Still a demonstration of the growth, so not a failure; but say plainly what happened.
            runs.timed_out = True
            summary = (f"stopped by the safety timeout ({budget:.0f} s) at step {reached} of {steps}; "
                       f"this machine is much slower than expected, or overloaded")
        elif result.returncode == 0 and reached == steps:
            summary = f"{steps} steps in {result.seconds:.1f} s"
        else:
            summary = f"failed ({_failure(result)}) after step {reached}"
            for line in _stderr_tail(result):
                say(f"  | {line}")
            runs.failures.append(f"run {name}")
        if records:
            summary += f" (sum of step times {sum(r.seconds for r in records.values()):.{sum_digits}f} s)"
        say(f"  {name}: {summary}")
    return runs


def _added_per_step(records: dict[int, Any], attributes: tuple[str, ...]) -> Optional[tuple[float, ...]]:
    """Mean increase per step of each of the records' ``attributes`` (in their units) from the first to
    the last step recorded, or None (< 2 steps)."""
    if len(records) < 2:
        return None
    first, last = min(records), max(records)
    return tuple((getattr(records[last], name) - getattr(records[first], name)) / (last - first) for name in attributes)


def _say_table(say: Callable[[str], None], steps: int, runs: _PairRuns,
               table: Callable[[dict[int, Any], dict[int, Any], list[int]], list[str]], *, notes: tuple[str, ...],
               growth: tuple[str, ...], describe_growth: Callable[[tuple[float, ...], tuple[float, ...]], str]) -> None:
    """After a blank line, the ``notes`` (what the columns are), the side-by-side ``table`` (the
    formatter: correct records, incorrect records, steps shown -> lines) at :func:`table_steps`, a note
    when a step was not reached, then ``describe_growth(incorrect, correct)``: the line that says what
    each script added per step (:func:`_added_per_step` of the ``growth`` attributes), when both
    recorded two steps or more."""
    shown = table_steps(steps)
    good, bad = runs.records[CORRECT], runs.records[INCORRECT]
    say()
    for note in notes:
        say(note)
    for line in table(good, bad, shown):
        say(f"  {line}")
    if any(step not in bad or step not in good for step in shown):
        say("  (-: step not reached" + (", the run was stopped by its safety timeout)" if runs.timed_out else ")"))
    added = {name: _added_per_step(runs.records[name], growth) for name in (INCORRECT, CORRECT)}
    if None not in added.values():
        say(f"  {describe_growth(added[INCORRECT], added[CORRECT])}")


def _say_accuracy(say: Callable[[str], None], accuracy: dict[str, dict[int, float]], difference: str) -> None:
    """The two scripts' test accuracy at the last step both reported; ``difference`` says what alone
    differs between them (``"only the graph differs"``)."""
    common = sorted(set(accuracy[CORRECT]) & set(accuracy[INCORRECT]))
    if common:
        step = common[-1]
        say(f"  test accuracy at step {step}: correct {accuracy[CORRECT][step]:.4f}, "
            f"incorrect {accuracy[INCORRECT][step]:.4f} (same model, data and updates; {difference})")


def _printer(out: Optional[TextIO]) -> Callable[..., None]:
    """``say(line="")``: print one line to ``out`` (``sys.stdout`` when None) and flush it."""
    out = sys.stdout if out is None else out

    def say(line: str = "") -> None:
        print(line, file=out, flush=True)

    return say


def _find_scripts(command: str, folder: Path, names: tuple[str, ...]) -> Optional[dict[str, str]]:
    """Name -> path from the repository root (``folder``'s grandparent) of each script in ``folder``;
    None, after one line on stderr saying a clone is needed, when one is missing."""
    scripts = {name: folder / name for name in names}
    missing = [str(path) for path in scripts.values() if not path.is_file()]
    if missing:
        print(_not_a_clone(command, missing), file=sys.stderr)
        return None
    return {name: os.path.relpath(path, folder.parents[1]) for name, path in scripts.items()}


def _done(say: Callable[[str], None], command: str, started: float, failures: list[str]) -> int:
    """The last line: the demo's wall time since ``started`` (``time.perf_counter``) and the parts that
    failed. Returns the exit status: 1 when a part failed, else 0."""
    total = time.perf_counter() - started
    if failures:
        say(f"{command}: done in {total:.0f} s; these parts failed: {', '.join(failures)}")
        return 1
    say(f"{command}: done in {total:.0f} s")
    return 0


def _lint(say: Callable[[str], None], relative: dict[str, str], names: tuple[str, ...] = (INCORRECT, CORRECT)) -> list[str]:
    """Part 1: ``graphguard check`` on each script. Returns the names of the parts that failed."""
    failures = []
    for name in names:
        say(f"$ graphguard check {relative[name]}")
        result = _run([sys.executable, "-m", "graphguard", "check", relative[name]], LINT_BUDGET_SECONDS)
        if result.error or result.timed_out or result.returncode not in (0, 1):
            say(f"  the linter did not run ({_failure(result)})")
            for line in _stderr_tail(result, 3):
                say(f"  | {line}")
            failures.append(f"lint {name}")
            continue
        for line in result.stdout + result.stderr:
            say(f"  {line}")
        verdict = "findings reported" if result.returncode == 1 else "no findings"
        say(f"  (exit status {result.returncode}: {verdict})")
        if result.returncode == 0 and name in _LINT_BLIND:
            say(f"  ({_LINT_BLIND[name]})")
    return failures


#: Leaking demo scripts whose leak the linter does not see, and why (a tenth new user's trial: the
#: Optuna pair's leaking script "passes the linter without comment").
_LINT_BLIND = {
    "optuna_sweep_leaking.py": "the linter reports Keras and TensorFlow models kept across trials; this sweep keeps "
                               "NumPy solvers in Optuna's storage (trial.set_user_attr), which only the run below sees",
}


def _train(say: Callable[[str], None], relative: dict[str, str], steps: int, results: Optional[dict] = None) -> list[str]:
    """Part 2: both scripts for ``steps`` steps, then the table. Returns the names of failed parts;
    ``results`` (if given) receives each script's step records and accuracies."""
    runs = _run_pair(say, relative, steps, budgets={CORRECT: RUN_BUDGET_SECONDS, INCORRECT: INCORRECT_BUDGET_SECONDS},
                     parse=parse_steps, describe_step=_describe_step, checkpoint_dir=True)
    if results is not None:
        results.update(records=runs.records, accuracy=runs.accuracy)
    _say_table(say, steps, runs, format_table, notes=(
        "Step time: wall seconds of one training step (build + sess.run); graph ops: Graph.version after it.",
        "Run times above are wall times of the whole process, TensorFlow import (about 5 s) included.",
    ), growth=("ops",), describe_growth=_describe_ops_growth)
    _say_accuracy(say, runs.accuracy, "only the graph differs")
    return runs.failures


def _describe_step(record: StepRecord) -> str:
    """One step of the progress shown while a script runs: its step time (s) and graph ops."""
    return f"{record.seconds:.4f} s, {record.ops:,} ops"


def _describe_ops_growth(incorrect: tuple[float, ...], correct: tuple[float, ...]) -> str:
    """The growth line under the table: ops added per step (``(ops,)`` of :func:`_added_per_step`)."""
    return f"ops added per step after step 1: {INCORRECT} {incorrect[0]:,.0f}, {CORRECT} {correct[0]:,.0f}"


def _fix(say: Callable[[str], None], relative: dict[str, str], steps: int, reference: dict) -> list[str]:
    """Part 4: ``graphguard check --fix --unsafe-fixes`` on a copy of the incorrect script, then the copy
    trained for ``steps`` steps: its op count must stay flat after step 1 and its accuracy match the
    correct script's (``reference``: part 2's results). Returns ``["fix"]`` when either is not so."""
    import difflib
    import shutil

    with tempfile.TemporaryDirectory(prefix="graphguard-demo-fix-") as folder:
        copy = os.path.join(folder, "train_fixed.py")
        shutil.copyfile(DEMO_DIR / INCORRECT, copy)
        say(f"$ cp {relative[INCORRECT]} train_fixed.py && graphguard check --fix --unsafe-fixes train_fixed.py")
        result = _run([sys.executable, "-m", "graphguard", "check", "--no-cache", "--fix", "--unsafe-fixes", copy],
                      LINT_BUDGET_SECONDS)
        for line in result.stderr[-1:]:
            say(f"  {line}")
        before = (DEMO_DIR / INCORRECT).read_text(encoding="utf-8").splitlines()
        after = Path(copy).read_text(encoding="utf-8").splitlines()
        moved = [line[1:].strip() for line in difflib.unified_diff(before, after, lineterm="", n=0)
                 if line.startswith("+") and not line.startswith("+++")]
        say(f"  {len(moved)} statements now built once, before the session: "
            + "; ".join(line.split(" = ")[0] for line in moved))
        say(f"$ python train_fixed.py --steps {steps}")
        with tempfile.TemporaryDirectory(prefix="graphguard-demo-") as ckpt_dir:
            run = _run([sys.executable, copy, "--steps", str(steps), "--checkpoint-dir", ckpt_dir], RUN_BUDGET_SECONDS)
    records, accuracy = parse_steps(run.text), parse_accuracy(run.text)
    good = reference.get("records", {}).get(CORRECT, {})
    good_accuracy = reference.get("accuracy", {}).get(CORRECT, {})
    if run.returncode != 0 or max(records, default=0) != steps:
        say(f"  the fixed script did not train as expected ({_failure(run)})")
        for line in _stderr_tail(run):
            say(f"  | {line}")
        return ["fix"]
    first, last = records[1], records[steps]
    median = statistics.median(r.seconds for r in records.values())
    line = f"  graph ops: {first.ops:,} at step 1, {last.ops:,} at step {steps}; median step time {median:.4f} s"
    if good:
        line += f" (correct script: {statistics.median(r.seconds for r in good.values()):.4f} s)"
    say(line)
    common = sorted(set(accuracy) & set(good_accuracy))
    if common:
        step = common[-1]
        say(f"  test accuracy at step {step}: fixed {accuracy[step]:.4f}, correct {good_accuracy[step]:.4f}")
    same = not common or abs(accuracy[common[-1]] - good_accuracy[common[-1]]) < 1e-6
    if last.ops != first.ops or not same:
        say("  the fixed script still grows its graph or learns something else")
        return ["fix"]
    return []


def _guard(say: Callable[[str], None], relative: dict[str, str], steps: int) -> list[str]:
    """Part 3: the incorrect script with ``--guard``. Returns ``["guard"]`` unless the guard stopped it."""
    guard_steps = min(steps, GUARD_STEPS)
    say(f"$ python {relative[INCORRECT]} --guard --steps {guard_steps}")
    result = _run([sys.executable, relative[INCORRECT], "--guard", "--steps", str(guard_steps)], GUARD_BUDGET_SECONDS)
    for line in result.stdout:
        say(f"  {line}")
    location = re.search(re.escape(INCORRECT) + r":(\d+)", result.text)
    if result.returncode == 1 and "GraphGuard stopped training" in result.text and location:
        say(f"  (exit status 1: stopped at {INCORRECT}:{location[1]} before the graph grew)")
        return []
    say(f"  the guard did not stop the script as expected ({_failure(result)})")
    for line in _stderr_tail(result):
        say(f"  | {line}")
    return ["guard"]


def _not_a_clone(command: str, missing: list[str]) -> str:
    """One line: the demo scripts live in the repository's ``fixtures/``, which ``pip install .`` does
    not install."""
    return (f"{command}: error: the demo scripts are part of graphguard's source repository, not of the "
            f"installed package: install it from a clone with `pip install -e '.[demo]'` there (editable: the scripts stay in the clone); "
            f"not found: {missing[0]}")


def _draw(say: Callable[[str], None], draw: Callable[[], str]) -> list[str]:
    """Draw a picture (``draw`` returns its path) and say where it is; ``["plot"]`` when it failed."""
    try:
        say(f"picture: {draw()}")
        return []
    except Exception as error:  # noqa: BLE001 - matplotlib's own errors too: one line, never a traceback
        from graphguard.plot import error_line

        say(f"picture: not drawn ({error_line(error)})")
        return ["plot"]


def run_demo(steps: int = 200, out: Optional[TextIO] = None, plot: Optional[str] = None) -> int:
    """Lint, run and guard the two demo scripts for ``steps`` training steps; print to ``out``. With
    ``plot`` (a PNG path; matplotlib needed), also draw part 2's step times and op counts there
    (:func:`graphguard.plot.plot_demo`).

    ``out`` defaults to ``sys.stdout``. Returns 0 when every part ran as described, 1 when a part
    failed (the output says which), 2 when ``fixtures/demo`` is missing (graphguard installed with
    ``pip install .`` rather than from a clone: one line on stderr says so) or ``steps`` < 1.
    """
    say = _printer(out)
    relative = _find_scripts("graphguard demo", DEMO_DIR, (INCORRECT, CORRECT))
    if relative is None:
        return 2
    if steps < 1:
        say("graphguard demo: error: steps must be at least 1")
        return 2
    started = time.perf_counter()

    say("graphguard demo: a seven-head, seven-loss MLP on the 8x8 digits, trained twice")
    say(f"  {relative[INCORRECT]}: model, losses, train op and Saver built inside the session loop")
    say(f"  {relative[CORRECT]}: the same, built once before the session")
    say()
    say("== 1. Lint: graphguard check (static, TensorFlow not imported) ==")
    failures = _lint(say, relative)
    say()
    say(f"== 2. Run: {steps} training steps each, one script after the other ==")
    results: dict = {}
    failures += _train(say, relative, steps, results)
    if plot is not None:
        from graphguard.plot import plot_demo

        failures += _draw(say, lambda: plot_demo(results.get("records", {}), plot, incorrect=INCORRECT, correct=CORRECT))
    say()
    say("== 3. Guard: the incorrect script under GraphGuard(sess) ==")
    failures += _guard(say, relative, steps)
    say()
    say("== 4. Fix: graphguard check --fix on a copy of the incorrect script, then train the copy ==")
    failures += _fix(say, relative, steps, results)
    say()
    return _done(say, "graphguard demo", started, failures)


# ---------------------------------------------------------------------------------------------------
# graphguard demo sweep
# ---------------------------------------------------------------------------------------------------


def _signed_mib(nbytes: Optional[int]) -> str:
    return "-" if nbytes is None else f"{nbytes / 2**20:+.1f}"


def format_sweep_table(leaking: dict, fixed: dict) -> list[str]:
    """Per-trial seconds, RSS retained (MiB) and objects alive of a leaking and a fixed sweep, side by side.

    ``leaking`` and ``fixed`` are ``SweepReport.as_dict()`` data (what the scripts write with ``--json``);
    trials are matched by position. A trial one report lacks shows ``-``.
    """
    rows = max(len(leaking.get("trials", [])), len(fixed.get("trials", [])))
    names = [(leaking["trials"][i] if i < len(leaking["trials"]) else fixed["trials"][i])["name"] for i in range(rows)]
    width = max([len("trial"), *map(len, names)])
    lines = [
        f"{'':<{width}}  {'seconds':^17}  {'RSS retained (MiB)':^19}  {'objects alive':^15}",
        f"{'trial':<{width}}  {'leaking':>8} {'fixed':>8}  {'leaking':>9} {'fixed':>9}  {'leaking':>7} {'fixed':>7}",
    ]
    for i, name in enumerate(names):
        cells = []
        for report in (leaking, fixed):
            trial = report["trials"][i] if i < len(report.get("trials", [])) else None
            cells.append(trial)
        bad, good = cells
        seconds = [f"{t['seconds']:.2f}" if t else "-" for t in (bad, good)]
        retained = [_signed_mib(t.get("retained_bytes")) if t else "-" for t in (bad, good)]
        alive = [str(sum(1 for obj in t["alive"] if judged_leak(obj))) if t else "-" for t in (bad, good)]
        note = "  warm-up" if (bad or good or {}).get("warmup") else ""
        lines.append(f"{name:<{width}}  {seconds[0]:>8} {seconds[1]:>8}  {retained[0]:>9} {retained[1]:>9}  "
                     f"{alive[0]:>7} {alive[1]:>7}{note}")
    return lines


def _sweep_totals(report: dict) -> str:
    trials = report.get("trials", [])
    retained = [t["retained_bytes"] for t in trials if t.get("retained_bytes") is not None]
    text = f"{sum(t['seconds'] for t in trials):.1f} s in trials"
    if retained:
        text += f", {sum(retained) / 2**20:+.1f} MiB retained in all"
    return text


def run_sweep_demo(out: Optional[TextIO] = None, plot: Optional[str] = None) -> int:
    """Lint and run the sweep scripts of ``fixtures/sweep`` (four, six with Optuna installed); print the
    side-by-side tables to ``out``. With ``plot`` (a PNG path; matplotlib needed), also draw each pair's
    RSS retained and objects alive per trial there (:func:`graphguard.plot.plot_sweeps`).

    Each script runs in its own process (``sys.executable``), one after the other, with ``--json`` to
    a temporary file holding its :class:`~graphguard.runtime.SweepReport`. Returns 0 when every script
    ran and behaved as described (each leaking script reported at least one leaking trial with an
    object alive and its reference chain; each fixed script reported no leak), 1 otherwise (the output
    says which), 2 when a script is missing. The linter's findings are shown, not judged.
    """
    say = _printer(out)
    pairs = _sweep_pairs()
    names = tuple(name for _, leaking, fixed in pairs for name in (leaking, fixed))
    relative = _find_scripts("graphguard demo sweep", SWEEP_DIR, names)
    if relative is None:
        return 2
    started = time.perf_counter()
    say("graphguard demo sweep: sweeps that keep every trial's model, and their fixes, under SweepGuard")
    for title, leaking, fixed in pairs:
        say(f"  {title}: {relative[leaking]} / {relative[fixed]}")
    if OPTUNA_PAIR not in pairs:
        say(f"  ({OPTUNA_PAIR[0]}: skipped, Optuna is not installed; pip install optuna)")
    say()
    say("== 1. Lint: graphguard check (static, TensorFlow not imported) ==")
    failures = _lint(say, relative, names)
    say()
    say("== 2. Run: each script in a fresh process, one after the other ==")
    reports: dict[str, dict] = {}
    for name in names:
        say(f"$ python {relative[name]} --json REPORT    (safety timeout: {SWEEP_BUDGET_SECONDS:.0f} s)")
        with tempfile.TemporaryDirectory(prefix="graphguard-sweep-") as tmp:
            path = os.path.join(tmp, "report.json")
            result = _run([sys.executable, relative[name], "--json", path], SWEEP_BUDGET_SECONDS)
            try:
                with open(path, encoding="utf-8") as handle:
                    reports[name] = json.load(handle)
            except (OSError, ValueError):
                pass
        if result.returncode == 0 and name in reports:
            say(f"  {name}: {len(reports[name]['trials'])} trials, {_sweep_totals(reports[name])} "
                f"(process: {result.seconds:.1f} s wall)")
        else:
            say(f"  {name}: failed ({_failure(result)})")
            for line in _stderr_tail(result):
                say(f"  | {line}")
            failures.append(f"run {name}")
    say()
    say("== 3. Per trial, side by side ==")
    say("seconds: wall time of the trial's body; RSS retained: RSS at the trial's end minus at its start, each")
    say("after gc.collect() and malloc_trim(0); objects alive: the trial's tracked objects (Keras models found")
    say("without being told) judged leaked: still alive one trial later (at the end of the next trial, or at")
    say("report() for the last), not counting what only a loop variable or a one-at-a-time holder keeps.")
    for title, leaking, fixed in pairs:
        say()
        say(f"{title} ({leaking} vs {fixed})")
        if leaking not in reports or fixed not in reports:
            say("  (not run)")
            continue
        for line in format_sweep_table(reports[leaking], reports[fixed]):
            say(f"  {line}")
        limit = reports[leaking].get("max_retained_bytes")
        if limit is not None:
            say(f"  (threshold {limit / 2**20:.0f} MiB retained per trial after the warm-up trial)")
    if plot is not None:
        from graphguard.plot import plot_sweeps

        say()
        failures += _draw(say, lambda: plot_sweeps([(title, reports[leaking], reports[fixed]) for title, leaking, fixed
                                                    in pairs if leaking in reports and fixed in reports], plot))
    say()
    say("== 4. Leaks reported, with what keeps each object alive ==")
    for _, leaking, fixed in pairs:
        for name, expect_leak in ((leaking, True), (fixed, False)):
            report = reports.get(name)
            if report is None:
                continue
            leaked = [t for t in report["trials"] if t["leaked"]]
            chained = [obj for t in leaked for obj in t["alive"]
                       if judged_leak(obj) and obj.get("chain") and obj["chain"]["root_kind"] != "unknown"]
            if not leaked:
                say(f"{name}: no trial leaked")
            else:
                say(f"{name}: {len(leaked)} of {len(report['trials'])} trials leaked")
                for trial in leaked:
                    say(f"  trial {trial['name']!r}: {'; '.join(trial['reasons'])}")
                    for obj in trial["alive"]:
                        if judged_leak(obj):
                            # as the sweep's own report prints it: name (type): chain
                            kind = obj.get("type_name") or obj["name"]  # as AliveObject prints it: no "Sequential (Sequential)"
                            label = obj["name"] if kind == obj["name"] else f"{obj['name']} ({kind})"
                            say(f"    {label}: {obj['chain_text'] or 'alive'}")
            if expect_leak and not chained:
                say(f"  expected {name} to report objects alive with their reference chains")
                failures.append(f"sweep {name}")
            if not expect_leak and leaked:
                say(f"  expected {name} to report no leak")
                failures.append(f"sweep {name}")
    say()
    return _done(say, "graphguard demo sweep", started, failures)
