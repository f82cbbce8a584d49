"""The demo pair (fixtures/demo) and ``graphguard demo``: real TensorFlow runs, kept short.

The scripts run as subprocesses (about 5 s of TensorFlow import each): 30 steps of each script once
per module, the guard on a few steps, and ``run_demo`` end to end on 2 steps. ``graphguard demo sweep``
is tested with canned reports, then end to end on its NumPy pair (the Keras pair runs in
test_sweep.py). Under a minute and a half in all.
"""

from __future__ import annotations

import importlib.util
import io
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import forked
import pytest

from graphguard import demo
from graphguard.demo import StepRecord, format_table, parse_accuracy, parse_steps, table_steps

ROOT = Path(__file__).resolve().parents[1]
CORRECT = ROOT / "fixtures" / "demo" / "train_correct.py"
INCORRECT = ROOT / "fixtures" / "demo" / "train_incorrect.py"
STEPS = 30
OPS_PER_STEP = 70  # train_incorrect.py: forward pass 7, seven losses 10, gradients and updates 38, Saver 15
CORRECT_OPS = 102  # train_correct.py: the whole graph, built once
LOSSES_LINE = re.compile(r"^step: (\d+), losses: (.*)$")
needs_tf = pytest.mark.skipif(
    importlib.util.find_spec("tensorflow") is None or importlib.util.find_spec("sklearn") is None,
    reason="the demo scripts need tensorflow and scikit-learn",
)


def run_script(script: Path, *args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2")
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    # (the demo scripts guard their own sessions with GraphGuard: forked from a process that imported
    # TensorFlow, tests/forked.py; `graphguard demo` below and test_launcher run them as real processes)
    return forked.run([str(script), *args], cwd=ROOT, env=env, timeout=timeout)


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
step: 1, time cost: 0.1101, ops: 102
step: 2, time cost: 0.0014, ops: 102
step: 10, time cost: 0.0009, ops: 102
step: 10, losses: digit 1.9144, parity 0.5006, high 1.3979, mod3 0.8156, prime 1.6037, square 0.5532, mod4 1.2548
step: 10, test accuracy: 0.4152 (448 test images)
not a step line: 3, time cost: 1.0, ops: 4
"""


def test_parse_steps_reads_step_lines_only():
    assert parse_steps(CANNED) == {
        1: StepRecord(0.1101, 102),
        2: StepRecord(0.0014, 102),
        10: StepRecord(0.0009, 102),
    }
    assert parse_accuracy(CANNED) == {10: 0.4152}
    assert parse_steps("") == {} and parse_accuracy("") == {}


def test_table_steps_are_the_fixed_steps_up_to_n_plus_n():
    assert table_steps(200) == [1, 10, 50, 100, 200]
    assert table_steps(30) == [1, 10, 30]
    assert table_steps(100) == [1, 10, 50, 100]
    assert table_steps(1) == [1]
    assert table_steps(500) == [1, 10, 50, 100, 200, 500]


def test_format_table_shows_ratios_and_marks_steps_not_reached():
    correct = {1: StepRecord(0.1, 102), 10: StepRecord(0.001, 102), 50: StepRecord(0.001, 102)}
    incorrect = {1: StepRecord(0.2, 109), 10: StepRecord(0.08, 739)}
    lines = format_table(correct, incorrect, [1, 10, 50])
    assert "step time (s)" in lines[0] and "graph ops" in lines[0]
    assert lines[2].split() == ["1", "0.1000", "0.2000", "2.0x", "102", "109", "1.1x"]
    assert lines[3].split() == ["10", "0.0010", "0.0800", "80x", "102", "739", "7.2x"]
    assert lines[4].split() == ["50", "0.0010", "-", "-", "102", "-", "-"]


def test_run_demo_without_the_scripts_exits_2(tmp_path, monkeypatch, capsys):
    # Regression (issue 12, item 11): after `pip install .` the fixtures are absent; say a clone is needed.
    monkeypatch.setattr(demo, "DEMO_DIR", tmp_path / "fixtures" / "demo")
    out = io.StringIO()
    assert demo.run_demo(steps=2, out=out) == 2
    err = capsys.readouterr().err
    assert out.getvalue() == "" and err.count("\n") == 1
    assert "source repository, not of the installed package: install it from a clone with `pip install -e" in err and "not found" in err


def test_a_run_stopped_by_the_safety_timeout_is_reported(monkeypatch):
    # No TensorFlow: _run is replaced by canned results, the incorrect run stopped at step 60 of 200.
    def fake_run(args, timeout, on_line=None):
        incorrect = "i.py" in args
        last = 60 if incorrect else 200
        lines = [f"step: {k}, time cost: {0.005 * k if incorrect else 0.001:.4f}, ops: "
                 f"{102 + 7 + 70 * (k - 1) if incorrect else 102}" for k in range(1, last + 1)]
        for line in lines:
            if on_line is not None:
                on_line(line)
        return demo._Result(None if incorrect else 0, timeout if incorrect else 9.0, incorrect, stdout=lines)

    monkeypatch.setattr(demo, "_run", fake_run)
    out = io.StringIO()
    failures = demo._train(lambda line="": print(line, file=out), {demo.CORRECT: "c.py", demo.INCORRECT: "i.py"}, 200)
    text = out.getvalue()
    assert failures == []  # the growth was still shown; the output says what happened
    assert f"stopped by the safety timeout ({demo.INCORRECT_BUDGET_SECONDS:.0f} s) at step 60 of 200" in text
    assert "(-: step not reached, the run was stopped by its safety timeout)" in text
    assert re.search(r"^\s+100\s+0\.0010\s+-\s+-\s+102\s+-\s+-$", text, re.M)
    assert "ops added per step after step 1: train_incorrect.py 70, train_correct.py 0" in text


# -- the scripts ---------------------------------------------------------------------------------------


@needs_tf
def test_incorrect_script_grows_by_the_same_number_of_ops_every_step(runs):
    steps = parse_steps(runs["train_incorrect"].stdout)
    assert sorted(steps) == list(range(1, STEPS + 1))
    growth = {steps[k].ops - steps[k - 1].ops for k in range(2, STEPS + 1)}
    assert growth == {OPS_PER_STEP}  # the same ops every step: model, seven losses, train op, Saver
    # Step 1 holds the graph of the correct script plus the variables' extra forward pass (7 ops).
    assert steps[1].ops == CORRECT_OPS + 7


@needs_tf
def test_correct_script_graph_is_constant(runs):
    steps = parse_steps(runs["train_correct"].stdout)
    assert sorted(steps) == list(range(1, STEPS + 1))
    assert {record.ops for record in steps.values()} == {CORRECT_OPS}


@needs_tf
def test_incorrect_steps_are_slower(runs):
    # Medians over steps 2..STEPS: about 0.07 s against 1 ms; a 10x margin is safe on a loaded machine.
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
def test_run_demo_end_to_end(tmp_path):
    pytest.importorskip("graphguard.runtime.guard")
    out = io.StringIO()
    picture = tmp_path / "demo.png" if importlib.util.find_spec("matplotlib") is not None else None
    status = demo.run_demo(steps=2, out=out, plot=None if picture is None else str(picture))
    text = out.getvalue()
    assert status == 0, text
    if picture is not None:
        assert f"picture: {picture}" in text and picture.read_bytes()[:4] == b"\x89PNG"
    for header in ("== 1. Lint", "== 2. Run: 2 training steps", "== 3. Guard"):
        assert header in text
    table = text[text.index("step time (s)") :]
    assert re.search(r"^\s+1\s+\d\.\d{4}\s+\d\.\d{4}\s+\S+x\s+\d", table, re.M)
    assert re.search(r"^\s+2\s+\d\.\d{4}\s+\d\.\d{4}\s+\S+x\s+\d", table, re.M)
    assert re.search(r"ops added per step after step 1: train_incorrect\.py [1-9][\d,]*, train_correct\.py 0\n", text)
    assert re.search(r"stopped at train_incorrect\.py:\d+", text)


# -- graphguard demo sweep ----------------------------------------------------------------------------


def canned_sweep(names, *, leaking: bool) -> dict:
    """A SweepReport.as_dict() as the sweep scripts write it, one trial per name."""
    trials = []
    for index, name in enumerate(names):
        alive = [{"name": "model", "type_name": "Net", "source": "track", "loop_variable": None,
                  "chain": {"root_kind": "local", "root": "local `models` in main()", "hops": [f"list[{index}]"],
                            "target": "Net"},
                  "chain_text": f"local `models` in main() -> list[{index}] -> Net"}] if leaking else []
        trials.append({"index": index + 1, "name": name, "seconds": 1.5 + index, "rss_before": 100 * 2**20,
                       "rss_after": (150 if leaking else 100) * 2**20, "retained_bytes": (50 if leaking else 0) * 2**20,
                       "alive": alive, "graph_ops": None, "warmup": index == 0, "leaked": leaking,
                       "reasons": ["1 object alive (model)"] if leaking else [], "guard_seconds": 0.1, "error": None})
    return {"trials": trials, "max_retained_bytes": 32 * 2**20, "warmup": 1, "clear_session": False,
            "rss_available": True}


def test_format_sweep_table_puts_leaking_and_fixed_side_by_side():
    lines = demo.format_sweep_table(canned_sweep(["lr=0.1", "lr=0.01"], leaking=True),
                                    canned_sweep(["lr=0.1"], leaking=False))
    assert "seconds" in lines[0] and "RSS retained (MiB)" in lines[0] and "objects alive" in lines[0]
    assert lines[2].split() == ["lr=0.1", "1.50", "1.50", "+50.0", "+0.0", "1", "0", "warm-up"]
    assert lines[3].split() == ["lr=0.01", "2.50", "-", "+50.0", "-", "1", "-"]


def test_format_sweep_table_counts_only_objects_judged_leaked():
    leaking = canned_sweep(["lr=0.1", "lr=0.01"], leaking=True)
    excused = dict(leaking["trials"][1]["alive"][0], leaked=False, slot="`EarlyStopping._model`")
    leaking["trials"][1]["alive"].append(excused)  # held only by a one-at-a-time holder: listed, not counted
    leaking["trials"][0]["alive"][0]["leaked"] = True
    lines = demo.format_sweep_table(leaking, canned_sweep(["lr=0.1", "lr=0.01"], leaking=False))
    assert lines[2].split()[5:7] == ["1", "0"] and lines[3].split()[5:7] == ["1", "0"]


def fake_sweep_runs(monkeypatch, fixed_leaks: bool = False) -> list[list[str]]:
    """Replace the subprocesses: the linter 'finds' nothing, each script writes a canned report (the NumPy
    and Keras pairs; the Optuna pair runs for real in its own test)."""
    calls = []
    monkeypatch.setattr(demo, "_sweep_pairs", lambda: demo.SWEEP_PAIRS)

    def fake_run(args, timeout, on_line=None):
        calls.append(args)
        if "check" in args:
            return demo._Result(0, 0.1, False, stdout=["All checks passed (1 file checked)."])
        script = Path(args[1]).name
        path = args[args.index("--json") + 1]
        names = ["fold 1", "fold 2"] if "kfold" in script else ["lr=0.1", "lr=0.01"]
        Path(path).write_text(json.dumps(canned_sweep(names, leaking="leaking" in script or fixed_leaks)))
        return demo._Result(0, 2.0, False, stdout=[])

    monkeypatch.setattr(demo, "_run", fake_run)
    return calls


def test_run_sweep_demo_prints_tables_and_chains(monkeypatch, tmp_path):
    calls = fake_sweep_runs(monkeypatch)
    out = io.StringIO()
    picture = tmp_path / "sweep.png" if importlib.util.find_spec("matplotlib") is not None else None
    assert demo.run_sweep_demo(out=out, plot=None if picture is None else str(picture)) == 0, out.getvalue()
    text = out.getvalue()
    if picture is not None:
        assert f"picture: {picture}" in text and picture.read_bytes()[:4] == b"\x89PNG"
    scripts = [Path(args[1]).name for args in calls if "--json" in args]
    assert scripts == ["numpy_sweep_leaking.py", "numpy_sweep_fixed.py", "keras_kfold_leaking.py", "keras_kfold_fixed.py"]
    assert sum("check" in args for args in calls) == 4
    for header in ("== 1. Lint", "== 2. Run", "== 3. Per trial", "== 4. Leaks reported"):
        assert header in text
    assert "local `models` in main() -> list[1] -> Net" in text
    assert "numpy_sweep_fixed.py: no trial leaked" in text and "keras_kfold_fixed.py: no trial leaked" in text


def test_run_sweep_demo_fails_when_a_fixed_sweep_leaks(monkeypatch):
    fake_sweep_runs(monkeypatch, fixed_leaks=True)
    out = io.StringIO()
    assert demo.run_sweep_demo(out=out) == 1
    assert "these parts failed: sweep numpy_sweep_fixed.py, sweep keras_kfold_fixed.py" in out.getvalue()


def test_run_sweep_demo_without_the_scripts_exits_2(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(demo, "SWEEP_DIR", tmp_path / "fixtures" / "sweep")
    out = io.StringIO()
    assert demo.run_sweep_demo(out=out) == 2
    assert "graphguard demo sweep: error: the demo scripts are part of" in capsys.readouterr().err


def test_demo_command_chooses_the_demo(monkeypatch):
    from graphguard import cli

    chosen = []
    monkeypatch.setattr(demo, "run_demo", lambda steps=200, out=None, plot=None: chosen.append(("slowdown", steps, plot)) or 0)
    monkeypatch.setattr(demo, "run_sweep_demo", lambda out=None, plot=None: chosen.append(("sweep", None, plot)) or 0)
    assert cli.main(["demo"]) == 0
    assert cli.main(["demo", "--steps", "7"]) == 0
    assert cli.main(["demo", "sweep"]) == 0
    assert cli.main(["demo", "slowdown"]) == 0
    assert chosen == [("slowdown", 200, None), ("slowdown", 7, None), ("sweep", None, None), ("slowdown", 200, None)]
    assert cli.main(["demo", "nope"]) == 2
    assert cli.main(["demo", "tf2", "--plot", "x.png"]) == 2  # the tf2 demo draws nothing
    if importlib.util.find_spec("matplotlib") is not None:
        chosen.clear()
        assert cli.main(["demo", "--plot", "x.png"]) == 0 and cli.main(["demo", "sweep", "--plot", "y.png"]) == 0
        assert chosen == [("slowdown", 200, "x.png"), ("sweep", None, "y.png")]
        assert cli.main(["demo", "--plot", "x.svg"]) == 2 and cli.main(["demo", "--plot", "no/such/x.png"]) == 2


def test_run_sweep_demo_end_to_end_on_the_numpy_pair(monkeypatch):
    # Real linter and real sweeps (NumPy, no TensorFlow: about 15 s); the Keras pair runs in test_sweep.py.
    pytest.importorskip("psutil")
    monkeypatch.setattr(demo, "_sweep_pairs", lambda: demo.SWEEP_PAIRS[:1])
    out = io.StringIO()
    status = demo.run_sweep_demo(out=out)
    text = out.getvalue()
    assert status == 0, text
    table = text[text.index("== 3. Per trial"):text.index("== 4.")]
    rows = [line.split() for line in table.splitlines() if line.strip().startswith("lr=")]
    assert [row[0] for row in rows] == ["lr=0.0001", "lr=0.0003", "lr=0.001", "lr=0.003"]
    for row in rows[1:]:
        leaking_mib, fixed_mib = float(row[3]), float(row[4])
        assert leaking_mib > 40 and abs(fixed_mib) < 16  # about 72 MiB against 0
        assert row[5:7] == ["2", "0"]
    assert "    model (TwoLayerNet): module-level `numpy_sweep_leaking.ALL_MODELS` -> list[2] -> TwoLayerNet" in text
    assert "local `solvers` in main() -> dict[0.001] -> Solver" in text
    assert "GG202" in text or "(exit status 0: no findings)" in text  # shown, not judged


def test_run_sweep_demo_runs_the_optuna_pair_when_optuna_is_installed(monkeypatch):
    # Issue 17: the NumPy sweep as an Optuna study under sweep.optuna_callback(), real Optuna (about 10 s).
    pytest.importorskip("psutil")
    pytest.importorskip("optuna")
    assert demo._sweep_pairs()[-1] == demo.OPTUNA_PAIR
    monkeypatch.setattr(demo, "SWEEP_PAIRS", ())
    out = io.StringIO()
    status = demo.run_sweep_demo(out=out)
    text = out.getvalue()
    assert status == 0, text
    table = text[text.index("== 3. Per trial"):text.index("== 4.")]
    rows = [line.split() for line in table.splitlines() if line.split()[:1] == ["trial"] and line.split()[1].isdigit()]
    assert [row[1] for row in rows] == ["0", "1", "2", "3"]
    for row in rows[1:]:
        leaking_mib, fixed_mib = float(row[4]), float(row[5])
        assert leaking_mib > 40 and abs(fixed_mib) < 16  # about 72 MiB against 0
        assert row[6:8] == ["2", "0"]
    assert ("local `study` in main() -> Study._storage -> InMemoryStorage._studies -> dict[0] -> _StudyInfo.trials "
            "-> list[2] -> FrozenTrial._user_attrs -> dict['solver'] -> Solver") in text
    assert "optuna_sweep_fixed.py: no trial leaked" in text
    # the leaking script's clean lint is explained, not left to read as a pass (a tenth new user's trial)
    assert "which only the run below sees)" in text[:text.index("== 2. Run")]


def test_run_sweep_demo_says_when_optuna_is_missing(monkeypatch):
    monkeypatch.setattr(demo, "SWEEP_PAIRS", ())
    monkeypatch.setattr(demo, "_sweep_pairs", lambda: ())
    monkeypatch.setattr(demo, "_run", lambda *a, **k: pytest.fail("nothing to run"))
    monkeypatch.setattr(demo, "_lint", lambda say, relative, names: [])
    out = io.StringIO()
    demo.run_sweep_demo(out=out)
    assert "skipped, Optuna is not installed; pip install optuna" in out.getvalue()


@needs_tf
def test_the_fixed_incorrect_script_trains_like_the_correct_one(runs):
    # Issue 13: `graphguard check --fix --unsafe-fixes` on a copy of the incorrect script gives a script
    # whose graph is flat after step 1 and that learns what the correct script learns.
    reference = {"records": {demo.CORRECT: parse_steps(runs["train_correct"].stdout)},
                 "accuracy": {demo.CORRECT: parse_accuracy(runs["train_correct"].stdout)}}
    lines = []
    relative = {demo.INCORRECT: "fixtures/demo/train_incorrect.py", demo.CORRECT: "fixtures/demo/train_correct.py"}
    assert demo._fix(lambda line="": lines.append(line), relative, STEPS, reference) == [], "\n".join(lines)
    text = "\n".join(lines)
    assert "Found 7 findings (7 fixed, 0 remaining)." in text
    import re

    first, last = map(int, re.search(r"graph ops: (\d+) at step 1, (\d+) at step", text).groups())
    assert first == last  # 109: the correct script's 102 plus the model call the incorrect one makes before its loop
