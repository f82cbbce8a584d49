"""``graphguard run script.py``: every tf.compat.v1 session of an unmodified script guarded.

Small scripts run in this process through ``launcher.main`` (TensorFlow is already imported, so the
session class is patched at once and unpatched after); the demo pair runs through the real command
line in a subprocess, as a user would run it.
"""

import json
import os
import re
import runpy
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DEMO = ROOT / "fixtures" / "demo"


def graphguard(*args, timeout=180):
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2")
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    return subprocess.run(
        [sys.executable, "-m", "graphguard", *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout
    )


# -- command line, no TensorFlow needed ------------------------------------------------------------


def test_missing_script_is_a_one_line_error():
    result = graphguard("run", "no/such/script.py")
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [
        "graphguard: error: no/such/script.py: no such file (see 'graphguard run --help')"
    ]


def test_run_without_a_script_is_a_one_line_error():
    result = graphguard("run")
    assert result.returncode == 2 and len(result.stderr.strip().splitlines()) == 1
    assert "graphguard: error:" in result.stderr


def test_a_script_without_tensorflow_is_not_said_to_pass(tmp_path):
    # A new user's trial: "no graph growth" for a script that never used TensorFlow read as a pass.
    (tmp_path / "hello.py").write_text("print('hello')\n")
    result = graphguard("run", str(tmp_path / "hello.py"))
    assert result.returncode == 0 and result.stderr.rstrip().endswith(
        "graphguard run: nothing guarded: the script opened no TensorFlow session and called no tf.function")


def test_a_script_with_a_syntax_error_is_reported_as_such(tmp_path):
    # Regression (issue 12, item 7): a traceback through the launcher, then "no graph growth".
    (tmp_path / "broken.py").write_text("import tensorflow as tf\nfor x in :\n    pass\n")
    result = graphguard("run", str(tmp_path / "broken.py"))
    assert result.returncode == 1
    assert "launcher.py" not in result.stderr and "no graph growth" not in result.stderr
    assert result.stderr.splitlines()[-2:] == ["SyntaxError: invalid syntax",
                                               f"graphguard run: {tmp_path / 'broken.py'} did not run: it has a syntax error"]


def test_a_script_that_fails_is_no_pass_and_a_tf1_name_suggests_tf1(tmp_path):
    """Issue 39: a script that dies on a TF 1.x name under TF 2 ended with "no graph growth"; the
    verdict now says it failed, and the line before says to run it with --tf1."""
    pytest.importorskip("tensorflow")
    (tmp_path / "tf1.py").write_text("import tensorflow as tf\nx = tf.placeholder(tf.float32, [None])\n")
    result = graphguard("run", str(tmp_path / "tf1.py"))
    assert result.returncode == 1
    lines = result.stderr.rstrip().splitlines()
    assert "graphguard run --tf1" in result.stderr and "tf.placeholder" in result.stderr
    assert lines[-1] == ("graphguard run: the script failed (it raised AttributeError): no graph growth seen before it "
                         "stopped, which is no verdict")
    (tmp_path / "exits.py").write_text("import sys\nsys.exit(3)\n")
    exits = graphguard("run", str(tmp_path / "exits.py"))
    assert exits.returncode == 3 and "failed (it exited with status 3)" in exits.stderr.splitlines()[-1]
    # A new user's trial: a script that builds an op per step but exits within the warm-up read
    # "no graph growth after warm-up" in its session's lines; no step after warm-up was seen.
    (tmp_path / "early.py").write_text(
        "import sys\nimport tensorflow.compat.v1 as tf\ntf.disable_eager_execution()\nx = tf.constant(1.0)\n"
        "with tf.Session() as sess:\n    for step in range(2):\n        sess.run(tf.reduce_mean(x))\n"
        "    sys.exit(3)\n")
    early = graphguard("run", str(tmp_path / "early.py"))
    assert early.returncode == 3 and "no graph growth after warm-up" not in early.stderr
    assert "no growth seen: the run ended within its 2 warm-up steps" in early.stderr, early.stderr


def test_tf1_a_gone_package_fails_at_the_users_import_line_not_in_graphguard(tmp_path):
    # Regression: the traceback ended in graphguard/runtime/tf1.py (the import hook's `raise`), and a
    # module imported by the script showed the hook's frame between the user's frames.
    (tmp_path / "mnist.py").write_text("import sys\nfrom tensorflow.examples.tutorials.mnist import input_data\n")
    (tmp_path / "uses_model.py").write_text("import model\n")
    (tmp_path / "model.py").write_text("x = 1\nimport tensorflow.contrib.slim as slim\n")
    result = graphguard("run", "--tf1", str(tmp_path / "mnist.py"))
    assert result.returncode == 1
    lines = result.stderr.splitlines()
    error = next(i for i, line in enumerate(lines) if line.startswith("ImportError: "))
    assert lines[error - 3:error + 1] == [
        "Traceback (most recent call last):",
        f'  File "{tmp_path / "mnist.py"}", line 2, in <module>',
        "    from tensorflow.examples.tutorials.mnist import input_data",
        "ImportError: graphguard run --tf1: cannot import tensorflow.examples.tutorials.mnist: "
        + lines[error].split(": ", 3)[3],
    ]
    assert "tf1.py" not in result.stderr and "launcher.py" not in result.stderr

    result = graphguard("run", "--tf1", str(tmp_path / "uses_model.py"))
    assert result.returncode == 1
    files = re.findall(r'^  File "([^"]+)", line (\d+)', result.stderr, re.M)
    assert files == [(str(tmp_path / "uses_model.py"), "1"), (str(tmp_path / "model.py"), "2")], result.stderr
    assert "ImportError: graphguard run --tf1: cannot import tensorflow.contrib.slim: " in result.stderr


def test_finalize_mode_with_on_growth_warn_is_a_usage_error(tmp_path):
    # Regression: accepted silently and run as --on-growth raise; GraphGuard() refuses the combination.
    (tmp_path / "s.py").write_text("print('ran')\n")
    result = graphguard("run", "--mode", "finalize", "--on-growth", "warn", str(tmp_path / "s.py"))
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr.strip().splitlines() == [
        "graphguard: error: --on-growth warn needs --mode count: a finalized graph cannot grow, so the run "
        "cannot go on (see 'graphguard run --help')"
    ]
    assert graphguard("run", "--mode", "finalize", "--on-growth", "raise", str(tmp_path / "s.py")).returncode == 0


@pytest.mark.parametrize("argv, message", [
    (["--max-traces", "3"], "the following arguments are required: script"),
    (["--tf1", "--"], "the following arguments are required: script"),
    (["--max-rss-growth", "-5M", "x.py"], "argument --max-rss-growth: must be > 0: '-5M'"),
    (["--max-rss-growth=-5M", "x.py"], "argument --max-rss-growth: must be > 0: '-5M'"),
    (["--max-rss-g", "-5M", "x.py"], "argument --max-rss-growth: must be > 0: '-5M'"),
    (["--warmup-steps", "-1x", "x.py"], "argument --warmup-steps: invalid int value: '-1x'"),
    (["--max-traces", "--tf1", "x.py"], "argument --max-traces: expected one argument"),
    # a third new user's trial: the message named both options for one of them
    (["--warmup-steps", "-1", "x.py"], "--warmup-steps must be >= 0"),
    (["--max-rss-growth", "1GiBs", "x.py"], "argument --max-rss-growth: not a size in bytes: '1GiBs' (e.g. 2G, 500M, 1048576)"),
])
def test_bad_command_lines_are_one_clear_line(argv, message):
    # Regression: `--max-traces 3` alone said "required: script, args" (args are optional), and a
    # negative size after --max-rss-growth was taken for an option ("expected one argument").
    result = graphguard("run", *argv)
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [f"graphguard: error: {message} (see 'graphguard run --help')"]


def test_a_sweeps_healthy_tf_functions_are_one_line_not_a_table(capsys):
    # A fourth new user's trial: a Keras sweep's report ended in a table of Keras' own step functions.
    import argparse

    from graphguard.runtime.verdict import _print_reports
    from graphguard.runtime.sweep_report import SweepReport
    from graphguard.runtime.trace_report import TracedFunction, TraceReport

    step = TracedFunction("make_function.<locals>.one_step_on_data", "keras", "trainer.py", 131, 135, 90, 90, 2, True)
    traces = TraceReport(max_traces=8, functions=(step,))
    args = argparse.Namespace(mode="count", warmup_steps=2, on_retrace="raise", on_growth="warn", sweep=True)
    _print_reports([], args, False, traces, sweep_report=SweepReport((), None, 0, False))
    err = capsys.readouterr().err
    assert "graphguard run: 1 tf.function traced, none retracing (TraceGuard, max_traces=8)" in err, err
    assert "graphguard trace:" not in err and "one_step_on_data" not in err


def test_sizes_read_as_users_type_them():
    # A third new user's trial typed --max-rss-growth 1GB and was refused.
    from graphguard.runtime.launcher import _bytes

    assert _bytes("1GB") == _bytes("1G") == _bytes("1 GiB") == _bytes("1gib") == 2**30
    assert (_bytes("500M"), _bytes("2kb"), _bytes("1048576")) == (500 * 2**20, 2048, 2**20)


def test_everything_after_the_script_reaches_it_as_python_gives_it(tmp_path):
    # Regression: a `--` right after the script was swallowed by argparse, and sys.argv[0] was the
    # absolute path where python gives the path as typed.
    (tmp_path / "argv.py").write_text("import json, sys\nprint(json.dumps(sys.argv))\n")
    typed = os.path.relpath(tmp_path / "argv.py", ROOT)
    for script_args in (["--", "b", "--help"], ["--max-traces", "3", "--tf1", "-x", "--", "--"], []):
        expected = subprocess.run([sys.executable, typed, *script_args], cwd=ROOT, capture_output=True, text=True)
        result = graphguard("run", typed, *script_args)
        assert result.returncode == 0, result.stderr
        assert result.stdout == expected.stdout and json.loads(result.stdout)[0] == typed
    # A `--` before the script ends graphguard's options, as usual.
    result = graphguard("run", "--max-traces", "3", "--", typed, "--", "a")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == [typed, "--", "a"]


def test_a_script_with_a_null_byte_is_a_one_line_syntax_error(tmp_path):
    # Regression: runpy's ValueError "source code string cannot contain null bytes" came out as a
    # traceback through the launcher.
    (tmp_path / "nul.py").write_bytes(b"import sys\nx = 1\x00\n")
    result = graphguard("run", str(tmp_path / "nul.py"))
    assert result.returncode == 1
    assert result.stderr.strip().splitlines() == [
        f"graphguard run: {tmp_path / 'nul.py'} did not run: it has a syntax error: "
        "a null byte on line 2 (Python source cannot contain null bytes)"
    ]


# -- the demo pair, through the command line ---------------------------------------------------------

tf = pytest.importorskip("tensorflow.compat.v1")

from graphguard.runtime import launcher  # noqa: E402
from graphguard.runtime.report import where  # noqa: E402


def test_demo_incorrect_script_exits_non_zero_and_names_its_line():
    result = graphguard("run", "fixtures/demo/train_incorrect.py", "--steps", "5")
    assert result.returncode == 1, result.stderr[-3000:]
    err = result.stderr
    assert "graphguard run: 1 session guarded (count mode, 2 warm-up steps per session)" in err
    growth = next(line for line in err.splitlines() if line.startswith("growth: +"))
    # Steps 2 and 3 both add the same ops: sustained growth, stopped at the second growth step.
    assert re.match(r"growth: \+70 ops/step since step 2 \(2 steps to step 3\): ", growth)
    assert "stopped by GraphGrowthError at step 3" in err
    source = (DEMO / "train_incorrect.py").read_text().splitlines()
    # the creating lines (a helper's own lines are followed by the line that called it: "called from")
    places = [int(n) for n in re.findall(r"(?<!called from )fixtures/demo/train_incorrect\.py:(\d+)", growth)]
    assert places and all("tf." in source[n - 1] for n in places)
    assert "; and 5 more lines (all 8 listed below)" in growth and len(growth) < 600, growth  # (a fourth trial: 1,082 characters)
    assert "fixtures/demo/train_incorrect.py:135: saver = tf.train.Saver()" in err
    assert re.search(r"graphguard run: graph growth found: \+70 ops/step, from fixtures/demo/train_incorrect\.py:86 "
                     r"\(tf\.nn\.relu\) and 7 more lines$", err.rstrip())


def test_demo_correct_script_exits_zero():
    result = graphguard("run", "fixtures/demo/train_correct.py", "--steps", "5")
    assert result.returncode == 0, result.stderr[-3000:]
    assert "no graph growth after warm-up" in result.stderr
    assert result.stderr.rstrip().endswith("graphguard run: no graph growth")
    assert "step: 5," in result.stdout  # the script's own output is untouched


# -- small scripts, in this process -------------------------------------------------------------------


def _script(tmp_path, body, name="script.py"):
    path = tmp_path / name
    path.write_text(textwrap.dedent(body))
    return path


LEAK = """\
    import sys
    import tensorflow.compat.v1 as tf

    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [None])
        with tf.Session() as sess:
            for step in range(int(sys.argv[1])):
                total = tf.reduce_sum(x)  # LEAK
                sess.run(total, {x: [1.0, 2.0]})
    print("finished", sys.argv[1:])
"""


def test_leaking_script_is_stopped_with_its_line(tmp_path, capsys):
    script = _script(tmp_path, LEAK)
    base_run = tf.Session.run
    saved_argv, saved_path = sys.argv[:], sys.path[:]
    assert launcher.main([str(script), "6"]) == 1
    out, err = capsys.readouterr()
    assert "finished" not in out
    # The ops of step 2 are a one-off until step 3 adds them again: stopped at step 3.
    assert f"script.py\", line 9, in <module>" in err and "graphguard.GraphGrowthError: +2 ops at step 3: " in err
    assert f"growth: +2 ops/step since step 2 (2 steps to step 3): Const, Sum at {where(str(script), 8)} (tf.reduce_sum)" in err
    assert f"  {where(str(script), 8)}: total = tf.reduce_sum(x)  # LEAK" in err
    assert "stopped by GraphGrowthError at step 3" in err
    assert tf.Session.run is base_run and sys.argv == saved_argv and sys.path == saved_path


@pytest.mark.filterwarnings("ignore::graphguard.runtime.GraphGrowthWarning")
def test_warn_keeps_the_script_running_and_still_exits_non_zero(tmp_path, capsys):
    script = _script(tmp_path, LEAK)
    assert launcher.main(["--on-growth", "warn", str(script), "6", "--flag-for-the-script"]) == 1
    out, err = capsys.readouterr()
    assert "finished ['6', '--flag-for-the-script']" in out
    assert f"growth: +2 ops/step since step 2 (4 steps to step 5): Const, Sum at {where(str(script), 8)}" in err
    assert err.rstrip().endswith(f"graphguard run: graph growth found: +2 ops/step, from {where(str(script), 8)} "
                                 "(tf.reduce_sum)")


EVERY_THIRD_STEP = """\
    import tensorflow.compat.v1 as tf

    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [None])
        y = tf.reduce_sum(x)
        with tf.Session() as sess:
            for step in range(1, 20):
                sess.run(y, {x: [1.0, 2.0]})
                if step % 3 == 0:
                    summary = tf.add(y, 1.0)  # EVERY
"""


@pytest.mark.filterwarnings("ignore::graphguard.runtime.GraphGrowthWarning")
def test_growth_every_n_steps_is_said_so_in_the_report_and_the_verdict(tmp_path, capsys):
    # Issue 39: an op built every 3rd step (a summary, a Saver per epoch) was reported as "+N ops/step".
    script = _script(tmp_path, EVERY_THIRD_STEP)
    assert launcher.main(["--on-growth", "warn", str(script)]) == 1
    err = capsys.readouterr().err
    growth = next(line for line in err.splitlines() if line.startswith("growth: +"))
    assert re.match(r"growth: \+\d+ ops every 3 session runs since step 3 \(6 times, to step 18\): ", growth), growth
    assert re.search(rf"graphguard run: graph growth found: \+\d+ ops every 3 session runs, from "
                     rf"{re.escape(where(str(script), 10))} \(tf\.add\)$", err.rstrip()), err[-500:]
    assert "ops/step" not in err


def test_clean_script_with_set_up_after_the_first_run_exits_zero(tmp_path, capsys):
    script = _script(tmp_path, """\
        import tensorflow.compat.v1 as tf

        with tf.Graph().as_default():
            w = tf.get_variable("w", [], initializer=tf.zeros_initializer())
            step_op = tf.assign_add(w, 1.0)
            with tf.Session() as sess:
                sess.run(tf.global_variables_initializer())
                saver = tf.train.Saver()  # built after the first run: legitimate set-up
                for _ in range(30):
                    sess.run(step_op)
        """)
    assert launcher.main([str(script)]) == 0
    err = capsys.readouterr().err
    assert "graphguard: 31 guarded steps in count mode (2 warm-up steps)" in err
    assert "no graph growth after warm-up" in err and err.rstrip().endswith("graphguard run: no graph growth")


MNIST_STYLE = """\
    import sys
    import tensorflow.compat.v1 as tf

    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [None])
        y = tf.placeholder(tf.float32, [None])
        w = tf.get_variable("w", [], initializer=tf.zeros_initializer())
        pred = x * w
        train = tf.train.GradientDescentOptimizer(0.1).minimize(tf.reduce_mean(tf.square(pred - y)))
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            for step in range(100):
                sess.run(train, {x: [1.0, 2.0], y: [2.0, 4.0]})
            accuracy = tf.reduce_mean(tf.cast(tf.equal(tf.round(pred), y), tf.float32))  # EVAL
            print("accuracy", sess.run(accuracy, {x: [1.0, 2.0], y: [2.0, 4.0]}))
            saver = tf.train.Saver()  # SAVER
            print("saved", saver.save(sess, sys.argv[1]))
"""


@pytest.mark.parametrize("on_growth", ["raise", "warn"])
def test_ops_built_once_after_the_training_loop_are_a_tolerated_one_off(tmp_path, capsys, on_growth):
    script = _script(tmp_path, MNIST_STYLE)
    prefix = str(tmp_path / "model.ckpt")
    assert launcher.main(["--on-growth", on_growth, str(script), prefix]) == 0
    out, err = capsys.readouterr()
    assert "accuracy 1.0" in out and f"saved {prefix}" in out
    assert (tmp_path / "model.ckpt.index").is_file()
    assert "GraphGrowthError" not in err and "\ngrowth: " not in err
    assert "one-off (tolerated: its lines added ops on fewer than min_growth_steps=2 steps): +" in err
    assert f"+5 ops at step 101: Round, Equal, Cast, Const, Mean at {where(str(script), 14)} (tf.reduce_mean)" in err
    assert f"ops at step 102: " in err and f"{where(str(script), 16)} (tf.train.Saver)" in err
    assert "no sustained graph growth after warm-up" in err
    assert err.rstrip().endswith("graphguard run: no graph growth")


def test_min_growth_steps_1_restores_the_first_event_stop(tmp_path, capsys):
    script = _script(tmp_path, MNIST_STYLE)
    assert launcher.main(["--min-growth-steps", "1", str(script), str(tmp_path / "model.ckpt")]) == 1
    err = capsys.readouterr().err
    assert "graphguard.GraphGrowthError: +" in err and "at step 101: " in err
    assert not (tmp_path / "model.ckpt.index").exists()


@pytest.mark.filterwarnings("ignore::graphguard.runtime.GraphGrowthWarning")
def test_monitored_and_interactive_sessions_are_guarded(tmp_path, capsys):
    script = _script(tmp_path, """\
        import tensorflow.compat.v1 as tf

        with tf.Graph().as_default():
            x = tf.constant([1.0, 2.0])
            sess = tf.InteractiveSession()
            for _ in range(4):
                tf.reduce_max(x).eval()  # INTERACTIVE
            sess.close()
        """, name="interactive.py")
    assert launcher.main(["--on-growth", "warn", str(script)]) == 1
    err = capsys.readouterr().err
    assert "-- session 1 (InteractiveSession) --" in err and "interactive.py:7 (tf.reduce_max)" in err

    script = _script(tmp_path, """\
        import tensorflow.compat.v1 as tf

        with tf.Graph().as_default():
            w = tf.get_variable("w", [], initializer=tf.zeros_initializer())
            step_op = tf.assign_add(w, 1.0)
            with tf.train.MonitoredTrainingSession() as sess:
                for _ in range(5):
                    sess.run(tf.identity(step_op))  # MONITORED
        """, name="monitored.py")
    assert launcher.main([str(script)]) == 1
    err = capsys.readouterr().err
    assert "graphguard.GraphGrowthError: tried to add a new 'ReadVariableOp' op at step" in err
    assert "refused at step" in err and "monitored.py:8 (tf.identity)" in err


def test_the_scripts_own_exit_status_and_errors_pass_through(tmp_path, capsys):
    assert launcher.main([str(_script(tmp_path, "import sys\nsys.exit(3)\n"))]) == 3
    assert launcher.main([str(_script(tmp_path, "raise ValueError('boom')\n", name="fails.py"))]) == 1
    err = capsys.readouterr().err
    assert 'fails.py", line 1, in <module>' in err and "ValueError: boom" in err
    assert "launcher.py" not in err and "runpy" not in err
    assert "graphguard run: 0 sessions guarded" in err
    assert err.rstrip().endswith("graphguard run: the script failed (it raised ValueError): no graph growth seen "
                                 "before it stopped, which is no verdict")  # not a pass (issue 39)


def test_finalize_mode_refusing_an_op_built_once_says_so_and_not_build_it_before_the_loop(tmp_path, capsys):
    # A twelfth new user's trial: --fix moved a Saver before the loop, after `sess.run(init)`; finalize
    # mode refused it and the report said "build one Saver before the loop", the verdict "graph growth".
    # Run as a user runs them (subprocesses): in pytest's process the test's own frames call the script.
    script = _script(tmp_path, """\
        import tensorflow.compat.v1 as tf

        with tf.Graph().as_default():
            w = tf.Variable(tf.zeros([3]))
            y = tf.reduce_sum(w)
            with tf.Session() as sess:
                sess.run(tf.global_variables_initializer())
                saver = tf.train.Saver()
                for step in range(5):
                    sess.run(y)
        """, name="once.py")
    result = graphguard("run", "--mode", "finalize", str(script))
    assert result.returncode == 1, result.stderr
    err = result.stderr
    assert "built once, in no loop, after the graph was finalized: build it before, or guard in count mode" in err
    assert "build one Saver before the loop" not in err
    assert err.rstrip().splitlines()[-1] == (
        f"graphguard run: finalize mode refused an op built once: at step 1, from {script}:8 "
        "(tf.train.Saver) (in no loop, after the session's first run: build it before that run, or run in count mode)")
    assert launcher.main([str(script)]) == 0  # count mode tolerates it
    capsys.readouterr()
    # The API, and (a thirteenth trial) a helper in no loop of its own, called per step: growth, not "built once"
    guarded = _script(tmp_path, """\
        import tensorflow.compat.v1 as tf
        from graphguard import GraphGuard, GraphGrowthError


        def head(x):
            return tf.reduce_sum(x * 2.0)


        def saver_once(guarded, w):
            tf.train.Saver()


        def head_per_step(guarded, w):
            for step in range(5):
                guarded.run(head(w))


        def refused(build):
            with tf.Graph().as_default():
                w = tf.Variable(tf.zeros([3]))
                init = tf.global_variables_initializer()
                with tf.Session() as sess:
                    guarded = GraphGuard(sess)
                    guarded.run(init)
                    try:
                        build(guarded, w)
                    except GraphGrowthError as error:
                        return str(error)


        print("ONCE:", refused(saver_once))
        print("LOOP:", refused(head_per_step))
        """, name="api.py")
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2")
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    out = subprocess.run([sys.executable, str(guarded)], capture_output=True, text=True, timeout=180, env=env,
                         cwd=tmp_path).stdout
    once, loop = out.split("LOOP:")
    assert "The line is in no loop: it builds its ops once, after the graph was finalized" in once, out
    assert "Fix: build it before the graph is finalized" in once
    assert "in no loop" not in loop and "once before the loop" in loop, out


SAVER_AND_ASSIGN = """\
    import tensorflow.compat.v1 as tf

    with tf.Graph().as_default():
        w = tf.Variable(tf.zeros([3]))
        y = tf.reduce_sum(w)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            for step in range(20):
                sess.run(y)
                saver = tf.train.Saver()
                sess.run(tf.assign(w, tf.ones([3])))
"""


@pytest.mark.parametrize("mode", ["count", "finalize", "warn"])
def test_a_stopped_or_warned_run_names_each_construct_with_its_own_fix(tmp_path, capsys, mode):
    # Regression (issue 12, items 7 and 11): one generic fix for every construct; finalize mode printed
    # warm-up steps it does not use, and its traceback ran 20 frames deep into TensorFlow.
    script = _script(tmp_path, SAVER_AND_ASSIGN)
    options = {"count": [], "finalize": ["--mode", "finalize"], "warn": ["--on-growth", "warn"]}[mode]
    with __import__("warnings").catch_warnings():
        __import__("warnings").simplefilter("ignore")
        assert launcher.main([*options, str(script)]) == 1
    err = capsys.readouterr().err
    saver_fix = f"fix for {where(str(script), 10)} (Saver, GG102): a Saver adds save and restore ops for every variable: build one Saver before the loop and call its save() in the loop"
    assert saver_fix in err
    if mode != "finalize":  # finalize stops at the Saver, before the assign is built
        assert (f"fix for {where(str(script), 11)} (assign, GG104): build one placeholder-fed assign op "
                "before the loop, or use variable.load(value, sess)") in err
    assert "one-off" not in err
    if mode == "finalize":
        assert "finalize mode: each session's graph finalized at its first run" in err
        assert "graphguard: 2 guarded steps in finalize mode; graph has" in err  # no unused warm-up steps
        assert "site-packages" not in err and "tensorflow/python" not in err


def test_tf_layers_under_keras_3_without_tf1_says_what_to_install_and_to_run_with_tf1():
    # A sixth new user's trial: a compat.v1 script's tf.layers.dense failed under Keras 3 with no hint
    # when run without --tf1. The error is TensorFlow's own, raised in this process.
    tf = pytest.importorskip("tensorflow")
    from graphguard.runtime import launcher
    from graphguard.runtime.tf1 import tf_keras_available

    if tf_keras_available() or not tf.__version__.startswith("2."):
        pytest.skip("Keras 2 is installed: tf.layers works")
    try:
        with tf.Graph().as_default():
            tf.compat.v1.layers.dense(tf.compat.v1.placeholder(tf.float32, [None, 3]), 4)
    except AttributeError as error:
        hint = launcher._tf1_suggestion(error)
    else:
        pytest.skip("tf.layers works on this TensorFlow")
    assert hint is not None and hint.startswith("graphguard run: tf.layers needs Keras 2 on this TensorFlow: pip install tf_keras")
    assert "graphguard run --tf1" in hint and "\n" not in hint


def test_the_verdict_names_the_pattern_the_guard_stopped_at_else_the_one_that_added_most():
    # An eighth new user's trial: the verdict named a summary op built every 10 steps over the every-step
    # op that added 2,700 ops, and over the op the error had stopped the run at.
    from types import SimpleNamespace

    from graphguard.runtime.verdict import _growth_summary
    from graphguard.runtime.report import Growth, OpGroup, SourceLine

    def pattern(lineno, first, last, steps, ops):
        group = OpGroup((("Const", ops),), (SourceLine("t.py", lineno, ""),))
        return Growth(first, last, steps, ops, (group,), min_gap=1 if steps > 1 else 0,
                      max_gap=10 if lineno == 20 else 1)

    summary, mean = pattern(20, 2, 450, 50, 8), pattern(17, 3, 451, 449, 6)
    ran = [(1, "Session", SimpleNamespace(growth=(summary, mean), stopped=None))]
    assert _growth_summary(ran).startswith(": +6 ops/step, from t.py:17"), _growth_summary(ran)
    one_off, stop = pattern(20, 2, 2, 1, 8), pattern(17, 3, 3, 1, 6)
    stopped = [(1, "Session", SimpleNamespace(growth=(one_off, stop), stopped="GraphGrowthError at step 3"))]
    assert _growth_summary(stopped).startswith(": +6 ops at step 3, from t.py:17"), _growth_summary(stopped)


def test_the_sweep_verdict_says_the_linter_left_a_short_sweep_out_only_when_it_did(tmp_path):
    # A fourteenth new user's trial: a 3 x 5 k-fold keeping 15 models, which graphguard check reports,
    # was said to be left out by the linter because --sweep measured 3 trials.
    from graphguard.runtime.verdict import _linter_silent

    head = "import keras\nmodels = []\n"
    build = "        model = keras.Sequential([keras.layers.Dense(units)])\n        model.fit(x, y)\n        models.append(model)\n"
    nested = tmp_path / "nested.py"
    nested.write_text(head + "for units in (64, 128, 256):\n    for fold in range(5):\n" + build)
    short = tmp_path / "short.py"
    short.write_text(head + "for units in (64, 128, 256):\n    if True:\n" + build)
    for path, silent in ((nested, False), (short, True)):
        code = compile(path.read_bytes(), str(path), "exec")
        assert _linter_silent(str(path), code) is silent, path.name


def test_correct_sessions_with_the_same_one_offs_are_one_line(tmp_path, capsys):
    # A sixteenth new user's trial: 20 correct trials, each in its own graph with an op built once after
    # warm-up, printed 191 lines; sessions whose only ops are one-offs from the lines of one printed
    # before are one line.
    script = _script(tmp_path, """\
        import tensorflow.compat.v1 as tf

        for trial in range(4):
            with tf.Graph().as_default():
                w = tf.Variable(tf.zeros([3]))
                y = tf.reduce_sum(w)
                with tf.Session() as sess:
                    sess.run(tf.global_variables_initializer())
                    for step in range(5):
                        sess.run(y)
                    print(sess.run(tf.reduce_max(w)))  # built once, after the loop
        """, name="trials.py")
    assert launcher.main([str(script)]) == 0
    err = capsys.readouterr().err
    assert "-- sessions 2-4: one-offs from the same lines as session 1 (tolerated) --" in err, err
    assert err.count("-- session ") == 1


def test_max_rss_growth_is_checked_at_the_end_of_a_fast_session(tmp_path):
    # A twentieth new user's trial: a fast loop keeping every fetched array grew RSS by 320 MiB under
    # --max-rss-growth 50M and passed ("no graph growth", exit 0): no sample was due before it ended.
    pytest.importorskip("tensorflow")
    pytest.importorskip("psutil")
    script = tmp_path / "keeps_fetches.py"
    script.write_text(
        "import numpy as np\n"
        "import tensorflow.compat.v1 as tf\n"
        "tf.disable_eager_execution()\n"
        "x = tf.placeholder(tf.float32, [None])\n"
        "y = x * 2.0\n"
        "kept = []\n"
        "with tf.Session() as sess:\n"
        "    for step in range(300):\n"
        "        kept.append(sess.run(y, feed_dict={x: np.ones(200_000, np.float32)}))\n"
    )
    result = graphguard("run", "--max-rss-growth", "50M", str(script))
    assert result.returncode == 1, result.stderr[-2000:]
    last = result.stderr.strip().splitlines()[-1]
    assert last.startswith("graphguard run: session 1: RSS grew ") and "over --max-rss-growth 50.0 MiB" in last, last
