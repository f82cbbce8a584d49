"""The demo pair (fixtures/demo) and ``graphguard demo``: real TensorFlow runs, kept short.

The scripts run as subprocesses (about 5 s of TensorFlow import each): 30 steps of each script once
per module, the guard on a few steps, and ``run_demo`` end to end on 2 steps. About a minute in all.
"""

from __future__ import annotations

import importlib.util
import io
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from graphguard import demo
from graphguard.demo import StepRecord, format_table, parse_accuracy, parse_steps, table_steps

ROOT = Path(__file__).resolve().parents[1]
CORRECT = ROOT / "fixtures" / "demo" / "train_correct.py"
INCORRECT = ROOT / "fixtures" / "demo" / "train_incorrect.py"
STEPS = 30
LOSSES_LINE = re.compile(r"^step: (\d+), losses: (.*)$")
needs_tf = pytest.mark.skipif(
    importlib.util.find_spec("tensorflow") is None or importlib.util.find_spec("sklearn") is None,
    reason="the demo scripts need tensorflow and scikit-learn",
)


def run_script(script: Path, *args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2")
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    return subprocess.run(
        [sys.executable, str(script), *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout
    )


def final_losses(stdout: str) -> dict[str, float]:
    """The seven test losses of the last ``step: N, losses: name value, ...`` line."""
    matches = [LOSSES_LINE.match(line) for line in stdout.splitlines()]
    last = [m for m in matches if m][-1]
    return {name: float(value) for name, value in (pair.split() for pair in last[2].split(", "))}


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> dict[str, subprocess.CompletedProcess]:
    """Both scripts, STEPS steps each, one after the other (they would fight for two cores)."""
    results = {}
    for script in (CORRECT, INCORRECT):
        ckpt = tmp_path_factory.mktemp(script.stem)
        results[script.stem] = result = run_script(script, "--steps", str(STEPS), "--checkpoint-dir", str(ckpt))
        assert result.returncode == 0, result.stderr[-2000:]
        results[script.stem + ":ckpt"] = ckpt
    return results


# -- parsing and the table (no TensorFlow) -----------------------------------------------------------

CANNED = """\
step: 1, time cost: 0.1320, ops: 326
step: 2, time cost: 0.0042, ops: 326
step: 10, time cost: 0.0040, ops: 326
step: 10, losses: digit 1.3210, parity 0.4584, high 0.6145, mod3 0.7337, prime 0.7676, aux_digit 1.3667, reconstruction 0.1929
step: 10, test accuracy: 0.6540 (448 test images)
not a step line: 3, time cost: 1.0, ops: 4
"""


def test_parse_steps_reads_step_lines_only():
    assert parse_steps(CANNED) == {
        1: StepRecord(0.132, 326),
        2: StepRecord(0.0042, 326),
        10: StepRecord(0.004, 326),
    }
    assert parse_accuracy(CANNED) == {10: 0.654}
    assert parse_steps("") == {} and parse_accuracy("") == {}


def test_table_steps_are_the_fixed_steps_up_to_n_plus_n():
    assert table_steps(200) == [1, 10, 50, 100, 200]
    assert table_steps(30) == [1, 10, 30]
    assert table_steps(100) == [1, 10, 50, 100]
    assert table_steps(1) == [1]
    assert table_steps(500) == [1, 10, 50, 100, 200, 500]


def test_format_table_shows_ratios_and_marks_steps_not_reached():
    correct = {1: StepRecord(0.1, 326), 10: StepRecord(0.004, 326), 50: StepRecord(0.004, 326)}
    incorrect = {1: StepRecord(0.2, 357), 10: StepRecord(0.4, 2535)}
    lines = format_table(correct, incorrect, [1, 10, 50])
    assert "step time (s)" in lines[0] and "graph ops" in lines[0]
    assert lines[2].split() == ["1", "0.1000", "0.2000", "2.0x", "326", "357", "1.1x"]
    assert lines[3].split() == ["10", "0.0040", "0.4000", "100x", "326", "2,535", "7.8x"]
    assert lines[4].split() == ["50", "0.0040", "-", "-", "326", "-", "-"]


def test_run_demo_without_the_scripts_exits_2(tmp_path, monkeypatch):
    monkeypatch.setattr(demo, "DEMO_DIR", tmp_path / "fixtures" / "demo")
    out = io.StringIO()
    assert demo.run_demo(steps=2, out=out) == 2
    assert out.getvalue().count("\n") == 1 and "not found" in out.getvalue()


# -- the scripts ---------------------------------------------------------------------------------------


@needs_tf
def test_incorrect_script_grows_by_the_same_number_of_ops_every_step(runs):
    steps = parse_steps(runs["train_incorrect"].stdout)
    assert sorted(steps) == list(range(1, STEPS + 1))
    growth = {steps[k].ops - steps[k - 1].ops for k in range(2, STEPS + 1)}
    assert len(growth) == 1 and growth.pop() > 100  # 242 ops per step: model, seven losses, train op, Saver


@needs_tf
def test_correct_script_graph_is_constant(runs):
    steps = parse_steps(runs["train_correct"].stdout)
    assert sorted(steps) == list(range(1, STEPS + 1))
    assert {record.ops for record in steps.values()} == {steps[1].ops}


@needs_tf
def test_incorrect_steps_are_slower(runs):
    # Medians over steps 2..STEPS: about 0.3 s against 3 ms; a 10x margin is safe on a loaded machine.
    def median(script):
        times = sorted(r.seconds for k, r in parse_steps(runs[script].stdout).items() if k > 1)
        return times[len(times) // 2]

    assert median("train_incorrect") > 10 * median("train_correct")


@needs_tf
def test_both_scripts_train_the_same_model(runs):
    correct, incorrect = runs["train_correct"].stdout, runs["train_incorrect"].stdout
    assert final_losses(correct).keys() == final_losses(incorrect).keys()
    assert len(final_losses(correct)) == 7
    assert final_losses(correct) == pytest.approx(final_losses(incorrect), abs=1e-3)
    assert parse_accuracy(correct)[STEPS] == pytest.approx(parse_accuracy(incorrect)[STEPS], abs=0.01)
    assert parse_accuracy(correct)[STEPS] > 0.2  # learning, not chance (0.1)


@needs_tf
def test_checkpoints_go_to_the_checkpoint_dir(runs):
    for script in ("train_correct", "train_incorrect"):
        assert (runs[script + ":ckpt"] / f"model.ckpt-{STEPS}.index").is_file()


def test_the_linter_flags_only_the_incorrect_script():
    def check(script: Path) -> subprocess.CompletedProcess:
        return subprocess.run(
            [sys.executable, "-m", "graphguard", "check", str(script.relative_to(ROOT))],
            cwd=ROOT, capture_output=True, text=True, timeout=60,
        )

    incorrect, correct = check(INCORRECT), check(CORRECT)
    assert incorrect.returncode == 1, incorrect.stderr
    assert "GG102" in incorrect.stdout and "GG101" in incorrect.stdout
    assert correct.returncode == 0, correct.stdout + correct.stderr


# -- the guard ----------------------------------------------------------------------------------------


@needs_tf
def test_guard_stops_the_incorrect_script_at_its_first_op():
    pytest.importorskip("graphguard.runtime.guard")
    result = run_script(INCORRECT, "--guard", "--steps", "3")
    assert result.returncode == 1, result.stderr[-2000:]
    assert "step: 1," not in result.stdout  # stopped before the first step ran
    assert result.stdout.startswith("GraphGuard stopped training:")
    assert re.search(r"train_incorrect\.py:\d+", result.stdout)


@needs_tf
def test_guard_lets_the_correct_script_run_and_save(tmp_path):
    pytest.importorskip("graphguard.runtime.guard")
    result = run_script(CORRECT, "--guard", "--steps", "3", "--checkpoint-dir", str(tmp_path))
    assert result.returncode == 0, result.stderr[-2000:]
    assert sorted(parse_steps(result.stdout)) == [1, 2, 3]
    assert (tmp_path / "model.ckpt-3.index").is_file()


# -- graphguard demo, end to end ----------------------------------------------------------------------


@needs_tf
def test_run_demo_end_to_end():
    pytest.importorskip("graphguard.runtime.guard")
    out = io.StringIO()
    status = demo.run_demo(steps=2, out=out)
    text = out.getvalue()
    assert status == 0, text
    for header in ("== 1. Lint", "== 2. Run: 2 training steps", "== 3. Guard"):
        assert header in text
    table = text[text.index("step time (s)") :]
    assert re.search(r"^\s+1\s+\d\.\d{4}\s+\d\.\d{4}\s+\S+x\s+\d", table, re.M)
    assert re.search(r"^\s+2\s+\d\.\d{4}\s+\d\.\d{4}\s+\S+x\s+\d", table, re.M)
    assert re.search(r"ops added per step after step 1: train_incorrect\.py [1-9][\d,]*, train_correct\.py 0\n", text)
    assert re.search(r"stopped at train_incorrect\.py:\d+", text)
