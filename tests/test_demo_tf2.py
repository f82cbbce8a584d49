"""The TF 2 demo pair (fixtures/demo_tf2) and ``graphguard demo tf2``: real TensorFlow runs, kept short.

Parsing, the table, the parts' verdicts and the command line are tested without TensorFlow (canned
lines). Then ``run_tf2_demo`` runs end to end once per module on 50 steps (both scripts, the linter
and the guard: about 15 s on two cores), and the correct script once under ``--guard``. Under half a
minute in all.
"""

from __future__ import annotations

import importlib.util
import io
import os
import re
import subprocess
import sys
from pathlib import Path

import forked
import pytest

from graphguard import demo, demo_tf2
from graphguard.demo_tf2 import TraceStepRecord, call_line, format_trace_table, parse_trace_steps

ROOT = Path(__file__).resolve().parents[1]
CORRECT = ROOT / "fixtures" / "demo_tf2" / "train_correct.py"
INCORRECT = ROOT / "fixtures" / "demo_tf2" / "train_incorrect.py"
STEPS = 50
MIB = 2**20
needs_tf = pytest.mark.skipif(
    any(importlib.util.find_spec(name) is None for name in ("tensorflow", "sklearn", "psutil")),
    reason="the TF 2 demo scripts need tensorflow, scikit-learn and psutil",
)
needs_trace_guard = pytest.mark.skipif(
    importlib.util.find_spec("graphguard.runtime.trace") is None,
    reason="graphguard.runtime.trace (TraceGuard) is not there yet",
)


def step_line(step: int, seconds: float, traces: int, rss: int) -> str:
    return f"step: {step}, time cost: {seconds:.6f}, traces: {traces}, rss: {rss}"


# -- parsing and the table (no TensorFlow) -----------------------------------------------------------

CANNED = """\
step: 1, time cost: 0.141975, traces: 2, rss: 674545664
step: 2, time cost: 0.159819, traces: 3, rss: 675708928
step: 10, time cost: 0.034293, traces: 11, rss: 685035520
step: 10, time cost: 0.03, ops: 11
step: 10, test accuracy: 0.9622 (450 test images)
"""


def test_parse_trace_steps_reads_step_lines_only():
    assert parse_trace_steps(CANNED) == {
        1: TraceStepRecord(0.141975, 2, 674545664),
        2: TraceStepRecord(0.159819, 3, 675708928),
        10: TraceStepRecord(0.034293, 11, 685035520),
    }
    assert demo.parse_accuracy(CANNED) == {10: 0.9622}
    assert parse_trace_steps("") == {}


def test_format_trace_table_shows_ms_traces_mib_and_marks_steps_not_reached():
    correct = {1: TraceStepRecord(0.144, 2, 643 * MIB), 10: TraceStepRecord(0.0003, 2, 643 * MIB),
               50: TraceStepRecord(0.0003, 2, 643 * MIB)}
    incorrect = {1: TraceStepRecord(0.142, 2, 643 * MIB), 10: TraceStepRecord(0.0348, 11, 653 * MIB + MIB // 2)}
    lines = format_trace_table(correct, incorrect, [1, 10, 50])
    assert "step time (ms)" in lines[0] and "traces" in lines[0] and "RSS (MiB)" in lines[0]
    assert lines[2].split() == ["1", "144.00", "142.00", "1.0x", "2", "2", "643.0", "643.0"]
    assert lines[3].split() == ["10", "0.30", "34.80", "116x", "2", "11", "643.0", "653.5"]
    assert lines[4].split() == ["50", "0.30", "-", "-", "2", "-", "643.0", "-"]


def test_call_line_is_the_train_step_call_in_the_loop():
    for script in (INCORRECT, CORRECT):
        lines = script.read_text(encoding="utf-8").splitlines()
        number = call_line(script)
        assert number is not None and "train_step(train_x[batch], train_y[batch]" in lines[number - 1]
    assert INCORRECT.read_text(encoding="utf-8").splitlines()[call_line(INCORRECT) - 1].strip().endswith(", step)")


def test_the_two_scripts_differ_only_in_the_step_argument_and_their_docstrings():
    def body(script: Path) -> list[str]:
        text = script.read_text(encoding="utf-8")
        return text[text.index('"""', 3):].splitlines()

    import difflib

    changed = [line for line in difflib.unified_diff(body(INCORRECT), body(CORRECT), lineterm="", n=0)
               if line[:1] in "+-" and not line.startswith(("+++", "---"))]
    assert len(changed) == 4, changed  # the comment above the call and the call, in each
    assert "+        loss = train_step(train_x[batch], train_y[batch], tf.constant(step))" in changed


def test_run_tf2_demo_without_the_scripts_exits_2(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(demo_tf2, "DEMO_DIR", tmp_path / "fixtures" / "demo_tf2")
    out = io.StringIO()
    assert demo_tf2.run_tf2_demo(steps=2, out=out) == 2
    err = capsys.readouterr().err
    assert out.getvalue() == "" and err.count("\n") == 1
    assert err.startswith("graphguard demo tf2: error: the demo scripts are part of") and "not found" in err


def fake_runs(monkeypatch, *, correct_grows: bool = False, guard_line: int | None = None) -> list[list[str]]:
    """Replace the subprocesses with canned output: the linter finds nothing, the scripts print step
    lines (the incorrect one's traces grow, the correct one's too if ``correct_grows``), the guarded
    script prints a RetracingError naming ``guard_line`` (default: its call line)."""
    calls = []
    line = call_line(INCORRECT) if guard_line is None else guard_line

    def fake_run(args, timeout, on_line=None):
        calls.append(args)
        if "check" in args:
            return demo._Result(0, 0.1, False, stdout=["All checks passed (1 file checked)."])
        if "--guard" in args:
            return demo._Result(1, 2.0, False, stdout=[*(step_line(k, 0.035, k + 1, 640 * MIB) for k in range(1, 8)),
                f"TraceGuard stopped training: RetracingError: train_step traced 9 times; called at "
                f"fixtures/demo_tf2/train_incorrect.py:{line}; argument `step`: Python int 8 -> 9"])
        steps = int(args[args.index("--steps") + 1])
        incorrect = INCORRECT.name in args[1] and "demo_tf2" in args[1]
        grows = incorrect or correct_grows
        lines = [step_line(k, 0.035 if incorrect else 0.0003, k + 1 if grows and k > 1 else 2,
                           (640 + (k if incorrect else 0)) * MIB) for k in range(1, steps + 1)]
        lines.append(f"step: {steps}, test accuracy: 0.9622 (450 test images)")
        for text in lines:
            if on_line is not None:
                on_line(text)
        stderr = ["WARNING:tensorflow:5 out of the last 5 calls to <function train.<locals>.train_step "
                  "at 0x7f7791478860> triggered tf.function retracing. Tracing is expensive"] if incorrect else []
        return demo._Result(0, 3.0, False, stdout=lines, stderr=stderr)

    monkeypatch.setattr(demo, "_run", fake_run)
    monkeypatch.setattr(demo_tf2, "_has_trace_guard", lambda: True)
    return calls


def test_run_tf2_demo_with_canned_runs_prints_the_table_and_passes(monkeypatch):
    calls = fake_runs(monkeypatch)
    out = io.StringIO()
    assert demo_tf2.run_tf2_demo(steps=10, out=out) == 0, out.getvalue()
    text = out.getvalue()
    scripts = [Path(args[1]).name + (" --guard" if "--guard" in args else "") for args in calls if "check" not in args]
    assert scripts == ["train_correct.py", "train_incorrect.py", "train_incorrect.py --guard"]
    assert sum("check" in args for args in calls) == 2
    for header in ("== 1. Lint", "== 2. Run: 10 training steps", "== 3. Guard"):
        assert header in text
    assert re.search(r"^\s+10\s+0\.30\s+35\.00\s+117x\s+2\s+11\s+640\.0\s+650\.0$", text, re.M)
    assert "per step after step 1: train_incorrect.py 1.00 traces, +1.00 MiB RSS; train_correct.py 0.00 traces" in text
    assert "median step time, steps 2-10: correct 0.30 ms, incorrect 35.00 ms (117x;" in text
    assert "5 out of the last 5 calls to <function train.<locals>.train_step> triggered" in text
    assert f"stopped at train_incorrect.py:{call_line(INCORRECT)}, the train_step(...) call, after step 7" in text


def test_run_tf2_demo_on_few_steps_still_runs_the_guard_long_enough(monkeypatch):
    calls = fake_runs(monkeypatch)
    out = io.StringIO()
    assert demo_tf2.run_tf2_demo(steps=2, out=out) == 0, out.getvalue()
    guarded = [args for args in calls if "--guard" in args]
    assert guarded and guarded[0][guarded[0].index("--steps") + 1] == str(demo_tf2.GUARD_STEPS)


def test_run_tf2_demo_fails_when_the_correct_script_retraces(monkeypatch):
    fake_runs(monkeypatch, correct_grows=True)
    out = io.StringIO()
    assert demo_tf2.run_tf2_demo(steps=10, out=out) == 1
    assert "these parts failed: traces train_correct.py" in out.getvalue()


def test_run_tf2_demo_fails_when_the_guard_names_another_line(monkeypatch):
    fake_runs(monkeypatch, guard_line=1)
    out = io.StringIO()
    assert demo_tf2.run_tf2_demo(steps=10, out=out) == 1
    assert "did not name the line of its train_step(...) call" in out.getvalue()
    assert "these parts failed: guard" in out.getvalue()


def test_run_tf2_demo_without_trace_guard_says_so_and_fails(monkeypatch):
    calls = fake_runs(monkeypatch)
    monkeypatch.setattr(demo_tf2, "_has_trace_guard", lambda: False)
    out = io.StringIO()
    assert demo_tf2.run_tf2_demo(steps=10, out=out) == 1
    assert "not run: this graphguard has no TraceGuard" in out.getvalue()
    assert not any("--guard" in args for args in calls)


def test_demo_command_chooses_tf2(monkeypatch):
    from graphguard import cli

    chosen = []
    monkeypatch.setattr(demo_tf2, "run_tf2_demo", lambda steps=200, out=None: chosen.append(steps) or 0)
    assert cli.main(["demo", "tf2"]) == 0
    assert cli.main(["demo", "tf2", "--steps", "7"]) == 0
    assert chosen == [200, 7]
    assert cli.main(["demo", "tf2", "--steps", "0"]) == 2


# -- graphguard demo tf2, end to end ------------------------------------------------------------------


@pytest.fixture(scope="module")
def tf2_demo() -> tuple[int, str]:
    """``run_tf2_demo(steps=STEPS)`` once: (exit status, output)."""
    out = io.StringIO()
    status = demo_tf2.run_tf2_demo(steps=STEPS, out=out)
    return status, out.getvalue()


def table_rows(text: str) -> dict[int, list[str]]:
    """The demo's table, step -> its cells."""
    table = text[text.index("step time (ms)"):text.index("== 3. Guard")]
    return {int(row[0]): row[1:] for row in (line.split() for line in table.splitlines())
            if len(row) == 8 and row[0].isdigit()}


@needs_tf
def test_demo_table_shows_traces_growing_for_the_incorrect_script_only(tf2_demo):
    status, text = tf2_demo
    assert "== 2. Run: 50 training steps each" in text
    rows = table_rows(text)
    assert sorted(rows) == [1, 10, 50], text
    correct_traces = [int(rows[step][3]) for step in (1, 10, 50)]
    incorrect_traces = [int(rows[step][4]) for step in (1, 10, 50)]
    assert correct_traces == [2, 2, 2]  # the first call traces twice (the optimizer's variables), then never
    assert incorrect_traces == [2, 11, 51]  # one more trace per step
    # About 35 ms against 0.3 ms per step (over 100x); 10x leaves room for a loaded machine.
    medians = re.search(r"median step time, steps 2-50: correct (\S+) ms, incorrect (\S+) ms", text)
    assert medians and float(medians[2]) > 10 * float(medians[1]), text
    # RSS: about 1.1 MiB per trace kept; the correct script's stays within a few MiB.
    assert float(rows[50][6].replace(",", "")) - float(rows[1][6].replace(",", "")) > 20
    assert abs(float(rows[50][5].replace(",", "")) - float(rows[1][5].replace(",", ""))) < 10
    accuracy = re.search(r"test accuracy at step 50: correct (\S+), incorrect (\S+) ", text)
    assert accuracy and float(accuracy[1]) == pytest.approx(float(accuracy[2]), abs=0.005) and float(accuracy[1]) > 0.5
    assert "triggered tf.function retracing." in text  # TensorFlow's own warning, shown beside
    if importlib.util.find_spec("graphguard.runtime.trace") is None:
        assert status == 1 and "these parts failed: guard" in text
    else:
        assert status == 0, text


@needs_tf
@needs_trace_guard
def test_demo_guard_names_the_incorrect_script_and_the_line_of_the_call(tf2_demo):
    status, text = tf2_demo
    guard = text[text.index("== 3. Guard"):]
    line = call_line(INCORRECT)
    assert "TraceGuard stopped training:" in guard, guard
    assert re.search(rf"train_incorrect\.py:{line}\b", guard.split("(exit status")[0]), guard
    assert f"stopped at train_incorrect.py:{line}, the train_step(...) call" in guard
    assert re.search(r"argument `step`: Python int \d+ -> \d+", guard), guard  # the argument that changed


@needs_tf
@needs_trace_guard
def test_the_guard_lets_the_correct_script_run():
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2")
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    steps = demo_tf2.MAX_TRACES + 4  # more calls than the guard allows traces
    result = forked.run([str(CORRECT), "--guard", "--steps", str(steps)], cwd=ROOT, env=env, timeout=120)
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    records = parse_trace_steps(result.stdout)
    assert sorted(records) == list(range(1, steps + 1))
    assert {record.traces for record in records.values()} == {2}


def test_the_linter_flags_the_python_int_step_of_the_incorrect_script_only():
    # What `graphguard demo tf2` shows in part 1 (it shows it without judging it).
    pytest.importorskip("graphguard.rules.gg301_python_number_retraces_function")

    def check(script: Path) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "graphguard", "check", "--no-cache", str(script.relative_to(ROOT))],
                              cwd=ROOT, capture_output=True, text=True, timeout=60)

    incorrect, correct = check(INCORRECT), check(CORRECT)
    assert incorrect.returncode == 1, incorrect.stdout + incorrect.stderr
    assert f"train_incorrect.py:{call_line(INCORRECT)}:" in incorrect.stdout and "GG301" in incorrect.stdout
    assert correct.returncode == 0, correct.stdout + correct.stderr
