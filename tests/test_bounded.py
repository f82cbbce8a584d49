"""Growth in a loop over a fixed handful of cases (graphguard.runtime.bounded): no TensorFlow needed."""

from __future__ import annotations

import linecache

import pytest

from graphguard.runtime import bounded
from graphguard.runtime.bounded import bounded_trips

SOURCE = '''import tensorflow as tf
DTYPES = (tf.float16, tf.float32, tf.float64, tf.int32)

def per_dtype(sess):
    for dtype in (tf.float16, tf.float32, tf.float64, tf.int32):
        x = tf.constant([-1, 0, 2], dtype=dtype)
        sess.run(tf.nn.relu(x))                       # 7: derived from the case

def named(sess):
    for i, dtype in enumerate(DTYPES):
        sess.run(tf.cast(1, dtype))                   # 11: the case itself

def same_op(sess):
    for step in range(5):
        sess.run(tf.argmax(y, 1))                     # 15: the same op five times

def picked(sess):
    for step in range(5):
        sess.run(tf.square(x) if step else loss)      # 19: the case only picks

def nested(sess):
    for epoch in range(4):
        for dtype in DTYPES:
            sess.run(tf.cast(1, dtype))               # 24: epochs repeat it

def many(sess):
    for size in range(12):
        sess.run(tf.zeros([size]))                    # 28: more than the bound

def helper(dtype):
    return tf.cast(1, dtype)                          # 31: called per case

def caller(sess):
    for dtype in DTYPES:
        sess.run(helper(dtype))                       # 35

def unknown(sess, batches):
    for batch in batches:
        sess.run(tf.constant(batch))                  # 39: a count the source does not fix

def decay(sess):
    for step in range(300):
        if step % 100 == 99:
            sess.run(tf.assign(lr, lr * 0.5))         # 44: on every 100th of 300 steps
        if not (step + 1) % 3:
            sess.run(tf.assign(lr, lr * 0.9))         # 46: on every 3rd: 100 times

def shown(sess):
    for step in range(100):
        if step % 20 == 0:
            print(step, sess.run(tf.reduce_max(out)))  # 51: prints the case, builds the same op

import argparse
parser = argparse.ArgumentParser()
parser.add_argument("--steps", type=int, default=60)
args = parser.parse_args()

def checkpoints(sess):
    for step in range(args.steps):
        if step % 20 == 0:
            tf.train.Saver().save(sess, "m")          # 61: every 20th of the option's 60 by default

def decayed(sess):
    for step in range(300):
        if step % 50 == 0:
            sess.run(tf.assign(lr, 0.95 ** (step // 50)))  # 66: reads the counter, every 50th step
'''


@pytest.fixture
def script(tmp_path):
    path = tmp_path / "cases.py"
    path.write_text(SOURCE)
    linecache.checkcache(str(path))
    yield str(path)
    bounded._trees.pop(str(path), None)


@pytest.mark.parametrize("line, expected", [(7, 4), (11, 4), (15, None), (19, None), (24, None), (28, None),
                                            (39, None), (2, None), (51, None)])
def test_a_line_in_loops_over_its_cases_is_bounded(script, line, expected):
    assert bounded_trips([(script, line)]) == expected


def test_a_helper_called_per_case_is_bounded_through_its_call_path(script):
    assert bounded_trips([(script, 31), (script, 35), None]) == 4  # pytest's runner outside: ignored
    assert bounded_trips([(script, 31), None, (script, 35)]) is None  # a library's loop between: unknown
    assert bounded_trips([(script, 31)]) is None  # no loop at all


def test_an_unreadable_file_is_not_bounded(tmp_path):
    assert bounded_trips([(str(tmp_path / "missing.py"), 3)]) is None


def test_any_counted_loop_is_bounded_when_the_case_is_not_asked_for(script):
    # graphguard run's verdict says such growth is bounded (a fifth new-user trial: an initializer per epoch
    # of three stopped the run while graphguard check hid it as a short loop)
    assert bounded_trips([(script, 15)], cases=False) == 5
    assert bounded_trips([(script, 24)], cases=False) is None  # 4 x 4: more than the bound
    assert bounded_trips([(script, 39)], cases=False) is None
    # a line run on every k-th step runs count / k times, as the linter counts it (a third new user's
    # trial: the linter hid a decay every 100 of 300 steps, the run stopped at it without saying bounded)
    assert bounded_trips([(script, 44)], cases=False) == 3
    assert bounded_trips([(script, 46)], cases=False) is None
    # a loop over a command-line option's int default runs that many times by default, as the linter
    # reads it (a twenty-fifth new user's trial: check hid a Saver every 20th of `--steps 60`, run stopped it)
    assert bounded_trips([(script, 61)], cases=False) == 3
    # a line under an every-k-th guard that reads the counter is periodic growth, not a case of a loop
    # over a handful (a twenty-sixth new user's trial: one decayed assign was told as five "cases")
    assert bounded_trips([(script, 66)]) is None and bounded_trips([(script, 66)], cases=False) == 6


def test_growth_more_often_than_the_counted_loops_is_not_called_bounded(script):
    # `--steps 400` against `default=60`: the run grew more often than the source's count, so its
    # verdict does not say the graph grows 3 times at most (a twenty-fifth new user's trial)
    from types import SimpleNamespace

    from graphguard.runtime.verdict import _bounded_note

    line = SimpleNamespace(filename=script, lineno=61)
    growth = SimpleNamespace(groups=(SimpleNamespace(callers=frozenset(), lines=(line,)),), steps=3)
    assert _bounded_note([growth]).startswith(" (bounded: its loops run 3 times in all")
    growth.steps = 4
    assert _bounded_note([growth]) == ""


def test_the_run_verdict_says_growth_in_a_short_loop_is_bounded(script):
    from types import SimpleNamespace

    from graphguard.runtime.verdict import _bounded_note

    line = SimpleNamespace(filename=script, lineno=15)
    growth = SimpleNamespace(groups=(SimpleNamespace(callers=frozenset(), lines=(line,)),), steps=1)
    assert _bounded_note([growth]).startswith(" (bounded: its loops run 5 times in all")
    # what to do first, then why the linter did not show it (a seventh new user's trial: the note read
    # as half an excuse for a failed run)
    assert ": fix it as the report says, or let the run finish with --on-growth warn; " in _bounded_note([growth])
    assert "--config 'max-bounded-iterations = 0' shows" in _bounded_note([growth])
    # a run that went on at growth (--sweep's default) is not told to (a fourth new user's trial)
    assert "--on-growth" not in _bounded_note([growth], warned=True)
    line.lineno = 39
    assert _bounded_note([growth]) == ""


def test_a_line_outside_any_loop_is_told_apart(script, tmp_path):
    # Issue 40's second trial: a notebook cell with no loop, run again, was told about "the loop that
    # calls sess.run"; the guard words such growth without a loop (errors.WHY_NO_LOOP).
    from graphguard.runtime.bounded import in_a_loop

    assert in_a_loop([(script, 15)]) and in_a_loop([(script, 31), (script, 35)])
    assert not in_a_loop([(script, 2)]) and not in_a_loop([(script, 31)])
    assert in_a_loop([(str(tmp_path / "gone.py"), 3)])  # unreadable: the usual wording


def test_the_guards_bounded_note_says_what_to_do_in_each_front_ends_spelling(tmp_path):
    # An eighth new user's trial: in a notebook the error pointed at graphguard run's --on-growth flag.
    pytest.importorskip("tensorflow")
    import os

    import forked

    (tmp_path / "short.py").write_text(
        "import tensorflow.compat.v1 as tf\ntf.disable_eager_execution()\nx = tf.constant(1.0)\n"
        "from graphguard import GraphGuard\n"
        "with tf.Session() as sess, GraphGuard(sess, mode=\"count\") as guarded:\n    for epoch in range(3):\n"
        "        for step in range(20):\n            guarded.run(x)\n        guarded.run(tf.reduce_mean(x))\n")
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2")  # (the other forked tests' start-up environment)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [root, env.get("PYTHONPATH")]))
    result = forked.run(["short.py"], cwd=tmp_path, env=env, timeout=120)
    assert result.returncode == 1, result.stderr[-2000:]
    assert ("(Bounded: the loops around it run 3 times in all, as the source says: fix it as above, or let the run "
            "finish with on_growth=\"warn\" (graphguard run --on-growth warn; %graphguard on on_growth=warn in a "
            "notebook).") in result.stderr, result.stderr[-2000:]
