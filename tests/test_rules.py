"""Every rule's VALID and INVALID snippets, one test case each (the snippets are also the docs)."""

from __future__ import annotations

import re
import subprocess
import sys
import textwrap

import pytest

from graphguard.checker import Checker
from graphguard.rules import RULES

CHECKER = Checker()
_MARKER = re.compile(r"#\s*(GG\d{3})\s*$")


def _cases(kind: str):
    for code, rule in RULES.items():
        for index, source in enumerate(getattr(rule, kind)):
            yield pytest.param(code, source, id=f"{code}-{kind.lower()}-{index}")


def _expected_rows(source: str, code: str) -> set[int]:
    return {row for row, line in enumerate(source.splitlines(), 1) if (m := _MARKER.search(line)) and m[1] == code}


@pytest.mark.parametrize(("code", "source"), list(_cases("VALID")))
def test_valid_snippet_is_not_reported(code, source):
    found = [d for d in CHECKER.check_source(source.encode(), "snippet.py") if d.code == code]
    assert found == []


@pytest.mark.parametrize(("code", "source"), list(_cases("INVALID")))
def test_invalid_snippet_is_reported_on_marked_lines(code, source):
    expected = _expected_rows(source, code)
    assert expected, "an INVALID snippet must mark at least one line"
    found = [d for d in CHECKER.check_source(source.encode(), "snippet.py") if d.code == code]
    assert {d.row for d in found} == expected
    assert len(found) == len(expected), "one finding per marked line"


@pytest.mark.parametrize("code", sorted(RULES))
def test_rule_has_six_examples_of_each_kind(code):
    rule = RULES[code]
    assert len(rule.VALID) >= 6 and len(rule.INVALID) >= 6


@pytest.mark.parametrize("code", sorted(RULES))
def test_rule_docstring_has_the_standard_headings(code):
    doc = RULES[code].__doc__
    for heading in ("## What it does", "## Why is this bad?", "## References"):
        assert heading in doc


def test_finding_reports_the_loop_that_repeats_it():
    source = b"""\
import tensorflow as tf
sess = tf.Session()
for epoch in range(100):
    for batch in batches:
        sess.run(train_op)
    acc = tf.reduce_mean(history)
"""
    (finding,) = CHECKER.check_source(source, "t.py")
    assert (finding.row, finding.column, finding.loop_row, finding.loop_column) == (6, 11, 3, 1)
    assert "in the loop at line 3" in finding.message
    assert finding.message.startswith("`tf.reduce_mean(...)`")


def test_a_kept_model_names_the_loop_that_repeats_it_not_a_loop_that_runs_once():
    # A ninth new user's trial: GG202 named `for lr in [1e-3]:`, which runs once per trial.
    source = b"""\
import tensorflow as tf
models = []
for units in widths:
    for lr in [1e-3]:
        model = tf.keras.Sequential([tf.keras.layers.Dense(units)])
        model.fit(x, y)
        models.append(model)
"""
    findings = [f for f in CHECKER.check_source(source, "t.py") if f.code == "GG202"]
    assert [(f.row, f.loop_row) for f in findings] == [(7, 3)]
    assert "of the loop at line 3" in findings[0].message


def test_innermost_session_loop_is_reported():
    source = b"""\
import tensorflow as tf
sess = tf.Session()
for epoch in range(100):
    for batch in batches:
        sess.run(tf.argmax(y, 1))
"""
    (finding,) = CHECKER.check_source(source, "t.py")
    assert finding.loop_row == 4


def test_nested_op_calls_are_one_finding_but_savers_inside_are_kept():
    source = b"""\
import tensorflow as tf
sess = tf.Session()
while True:
    sess.run(tf.argmax(tf.nn.softmax(tf.matmul(x, w)), 1))
    sess.run(tf.group(tf.global_variables_initializer(), tf.local_variables_initializer()))
"""
    found = [(d.row, d.code) for d in CHECKER.check_source(source, "t.py")]
    assert found == [(4, "GG101"), (5, "GG101"), (5, "GG103"), (5, "GG103")]


def test_for_iterable_is_evaluated_once():
    source = b"""\
import tensorflow as tf
sess = tf.Session()
for value in sess.run(tf.unstack(values)):
    sess.run(train_op, {x: value})
"""
    assert CHECKER.check_source(source, "t.py") == []


def test_graph_entered_outside_the_loop_is_not_fresh():
    source = b"""\
import tensorflow as tf
with tf.Graph().as_default():
    sess = tf.Session()
    for step in range(100):
        sess.run(tf.argmax(y, 1))
"""
    assert [d.row for d in CHECKER.check_source(source, "t.py")] == [5]


def test_graph_created_outside_but_entered_inside_the_loop_is_not_fresh():
    source = b"""\
import tensorflow as tf
g = tf.Graph()
sess = tf.Session(graph=g)
for step in range(100):
    with g.as_default():
        sess.run(tf.argmax(y, 1))
"""
    assert [d.row for d in CHECKER.check_source(source, "t.py")] == [6]


def test_reset_in_an_outer_loop_does_not_excuse_an_inner_session_loop():
    source = b"""\
import tensorflow as tf
for trial in range(3):
    tf.reset_default_graph()
    build()
    sess = tf.Session()
    for step in range(100):
        sess.run(tf.argmax(y, 1))
"""
    found = CHECKER.check_source(source, "t.py")
    assert [(d.row, d.loop_row) for d in found] == [(7, 6)]


def test_local_name_shadowing_tf_is_not_tensorflow():
    source = b"""\
import tensorflow as tf
def train(sess, tf):
    for step in range(100):
        sess.run(tf.argmax(y, 1))
"""
    assert CHECKER.check_source(source, "t.py") == []


def test_sess_run_results_are_not_tensors():
    source = b"""\
import tensorflow as tf
sess = tf.Session()
for step in range(100):
    loss = sess.run(loss_op)
    loss.eval()
    print(loss.mean())
"""
    assert CHECKER.check_source(source, "t.py") == []


def test_syntax_error_is_reported_in_files_that_mention_tensorflow():
    # Every file is parsed (any may hold a helper that a loop elsewhere calls), but GG001 is said only
    # for files that mention TensorFlow or Keras, however they were named (a Python 2 script named on
    # the command line was GG001, the same file found in a folder was not: third fuzz pass).
    (finding,) = CHECKER.check_source(b"import tensorflow as tf\ndef f(:\n", "broken.py")
    assert (finding.code, finding.row) == ("GG001", 2)
    assert CHECKER.check_source(b"def f(:\n", "broken.py") == []


def test_periodic_condition_is_not_a_once_guard():
    source = b"""\
import tensorflow as tf
sess = tf.Session()
for step in range(100000):
    sess.run(train_op)
    if step % 100 == 0:
        saver = tf.train.Saver()
    if step == 0:
        first = tf.reduce_mean(x)
"""
    assert [(d.row, d.code) for d in CHECKER.check_source(source, "t.py")] == [(6, "GG102")]


def test_unparsable_tensorflow_file_is_a_syntax_error_with_cpython_position():
    (finding,) = CHECKER.check_source(b"import tensorflow as tf\nx = (1,\n", "broken.py")
    assert (finding.code, finding.row, finding.column) == ("GG001", 2, 5)
    assert "never closed" in finding.message


def test_python2_tensorflow_file_is_read_not_a_syntax_error():
    # Issue 35: TF1-era code is often Python 2; it is read (graphguard.python2), not GG001.
    assert CHECKER.check_source(b"import tensorflow as tf\nprint 'x'\n", "py2.py") == []


def test_selection_limits_codes():
    source = b"""\
import tensorflow as tf
sess = tf.Session()
for step in range(100):
    sess.run(tf.argmax(y, 1))
    tf.train.Saver()
"""
    assert [d.code for d in Checker({"GG102"}).check_source(source, "t.py")] == ["GG102"]


def test_message_shows_a_multiline_chained_callee_on_one_line():
    # Regression: the callee's source text, line breaks and all, went into the message.
    source = b"""\
import tensorflow as tf
sess = tf.Session()
for step in range(100):
    train = tf.train.AdamOptimizer(learning_rate=lr,
                                   beta1=0.9).minimize(loss)
    sess.run(train)
"""
    (finding,) = CHECKER.check_source(source, "t.py")
    assert finding.message.startswith("`tf.train.AdamOptimizer(...).minimize(...)` builds ops")


def test_deeply_nested_code_is_analysed():
    # Regression: a 300-term operator chain and a 1,000-branch elif chain were internal errors
    # (RecursionError) although CPython parses both.
    chain = " + ".join(f"t{i}" for i in range(300))
    source = f"import tensorflow as tf\nsess = tf.Session()\nfor s in range(steps):\n    sess.run(tf.reduce_sum(x) + {chain})\n"
    (finding,) = CHECKER.check_source(source.encode(), "chain.py")
    assert (finding.code, finding.row) == ("GG106", 4)
    branches = "".join(f"    elif k == {i}:\n        v = {i}\n" for i in range(1000))
    source = f"import tensorflow as tf\nsess = tf.Session()\nfor k in range(steps):\n    if k < 0:\n        v = 0\n{branches}    sess.run(tf.argmax(y, 1))\n"
    assert [d.code for d in CHECKER.check_source(source.encode(), "elif.py")] == ["GG101"]


def test_code_too_deep_to_analyse_is_gg001_not_an_internal_error(tmp_path):
    # Fresh-user trial (issue 14): a 5,000-term chain was "internal error ... (please report this)", exit 2,
    # followed by "All checks passed". CPython's compiler refuses it too: GG001, like an unparsable file.
    chain = "+".join(["i"] * 5000)
    (tmp_path / "deep.py").write_text(f"import tensorflow as tf\nfor i in range(3):\n    y = {chain}\n")
    result = subprocess.run([sys.executable, "-m", "graphguard", "check", "--no-cache", "--extend-select", "GG001",
                             "deep.py"], cwd=tmp_path, capture_output=True, text=True)
    assert result.returncode == 1 and "internal error" not in result.stderr and "All checks passed" not in result.stderr
    assert "deep.py:1:1: GG001 syntax-error: cannot analyse file: too deeply nested" in result.stdout
    unselected = subprocess.run([sys.executable, "-m", "graphguard", "check", "--no-cache", "--ignore", "GG001",
                                 "deep.py"], cwd=tmp_path, capture_output=True, text=True)
    assert unselected.returncode == 0 and "1 file could not be parsed" in unselected.stderr


def test_code_too_deep_for_cpythons_parser_is_gg001_not_an_internal_error(tmp_path):
    # New-user trial (issue 18): 100,000 unary minus signs make CPython's parser raise MemoryError (not
    # RecursionError); it was "internal error: out of memory while parsing it", exit 2, for one file.
    (tmp_path / "deep.py").write_text(f"import tensorflow as tf\nx = {'-' * 100_000}1\n")
    result = subprocess.run([sys.executable, "-m", "graphguard", "check", "--no-cache", "--extend-select", "GG001",
                             "deep.py"], cwd=tmp_path, capture_output=True, text=True)
    assert result.returncode == 1 and "internal error" not in result.stderr, result.stderr
    assert "deep.py:1:1: GG001 syntax-error: cannot parse file: too deeply nested" in result.stdout


def test_augmented_assignment_on_a_tensor_is_one_finding():
    # Regression: `total += tf.reduce_sum(t) * 2` gave two GG106 (the statement and its right-hand side).
    source = b"""\
import tensorflow as tf
total = tf.constant(0.0)
sess = tf.Session()
for t in batches:
    total += tf.reduce_sum(t) * 2
    sess.run(total)
"""
    assert [(d.code, d.row) for d in CHECKER.check_source(source, "t.py")] == [("GG106", 5)]


def test_internal_tensorflow_modules_other_than_ops_build_nothing():
    # Regression: `from tensorflow.python.platform import tf_logging as logging` made logging.info an op.
    source = b"""\
import tensorflow as tf
from tensorflow.python.platform import tf_logging as logging
from tensorflow.python.lib.io import file_io
from tensorflow.python.ops import math_ops
sess = tf.Session()
for step in range(steps):
    sess.run(train_op)
    logging.info("step %d", step)
    file_io.delete_recursively("tmp")
    sess.run(math_ops.reduce_sum(x))
"""
    assert [(d.code, d.row) for d in CHECKER.check_source(source, "t.py")] == [("GG101", 10)]


def test_a_container_filled_before_the_loop_is_not_a_handful():
    # Regression: `checkpoints = []` filled by append() was taken for a loop of 0 iterations, and a
    # literal grown with append() kept its literal length (a GG201 on a public repository vanished).
    source = b"""\
import os
import tensorflow as tf
sess = tf.Session()
paths = []
for name in os.listdir("ckpt"):
    paths.append(name)
configs = [1, 2]
configs.append(3)
configs.append(4)
configs.append(5)
configs.append(6)
for path in paths:
    sess.run(tf.argmax(y, 1))
for config in configs:
    sess.run(tf.argmax(y, 1))
for config in (1, 2, 3):
    sess.run(tf.argmax(y, 1))
"""
    assert [(d.code, d.row) for d in CHECKER.check_source(source, "t.py")] == [("GG101", 13), ("GG101", 15)]


def _rows(source: str) -> list[tuple[str, int]]:
    return [(d.code, d.row) for d in CHECKER.check_source(source.encode(), "t.py")]


def test_values_found_by_a_new_user():
    # Regressions from a new user's programs (issue 11): each shape with the findings it must give.
    # A tuple a helper returns is a Python tuple: picking an element builds nothing.
    assert _rows(
        "import tensorflow as tf\nsess = tf.Session()\n"
        "def net(x): return tf.layers.dense(x, 1), {'hidden': tf.layers.dense(x, 2)}\n"
        "outputs = net(x)\nfor step in range(1000):\n"
        "    sess.run(outputs[0]); sess.run(outputs[1]['hidden'])\n") == []
    # TF 2 code that opens a compat.v1 session somewhere is still eager: predict is no session step
    # (it is Keras' predict per batch, GG303, and nothing else).
    assert [row for row in _rows(
        "import tensorflow as tf\ndef export(p):\n    with tf.compat.v1.Session(graph=tf.Graph()) as s:\n        pass\n"
        "model = tf.keras.Sequential([tf.keras.layers.Dense(3)])\nfor x in batches:\n"
        "    print(tf.argmax(model.predict(x), 1).numpy())\n") if row[0] != "GG303"] == []
    # ``self.optimizer = self.optimizer()`` replaces the method by what it returned (a K.function).
    assert _rows(
        "import tensorflow as tf\nfrom keras import backend as K\nclass Agent:\n    def __init__(self):\n"
        "        self.optimizer = self.optimizer()\n    def optimizer(self):\n        a = K.placeholder(shape=(None,))\n"
        "        return K.function([a], [K.mean(a)])\n    def train(self, batch):\n        self.optimizer([batch])\n"
        "agent = Agent()\nsess = K.get_session()\nwhile True:\n    sess.run(op)\n    agent.train(b)\n") == []
    # A closure that runs the step makes the loop a session loop; a lambda argument is a function.
    assert _rows(
        "import tensorflow as tf\nlogits = tf.layers.dense(x, 3)\nsess = tf.Session()\ndef make_scorer(logits):\n"
        "    def score(sess, batch): return sess.run(tf.argmax(logits, 1), {'x:0': batch})\n    return score\n"
        "score = make_scorer(logits)\nfor step in range(1000):\n    score(sess, [[1, 2, 3]])\n") == [("GG101", 9)]
    assert _rows(
        "import tensorflow as tf\ndef train_loop(sess, make_fetch, steps):\n    for i in range(steps):\n"
        "        sess.run(make_fetch(i))\nsess = tf.Session()\ntrain_loop(sess, lambda i: tf.square(x) * i, 1000)\n"
    ) == [("GG106", 4)]
    # The items of tf.get_collection(...) are one model's variables or ops.
    assert _rows(
        "import tensorflow as tf\ntarget = tf.get_collection(tf.GraphKeys.TRAINABLE_VARIABLES, 'target')\n"
        "with tf.Session() as sess:\n    while True:\n        for t_var in target:\n"
        "            sess.run(t_var.assign(0.0))\n") == [("GG104", 6)]


def test_recursion_and_lambdas_handed_to_drivers_end():
    # Regressions: a recursive function wrapping its parameter in a list nested values without end
    # (the value flow never settled on a public repository); a lambda handed to a driver was read as a call.
    source = (
        "import tensorflow as tf\nsess = tf.Session()\n"
        "def nest(x, depth):\n    return nest([x], depth - 1) if depth else x\n"
        "def walk(items):\n    for item in items:\n        walk([item])\n"
        "nest(tf.trainable_variables(), 3)\nwalk(tf.trainable_variables())\n"
        "results = list(map(lambda v: v, tf.trainable_variables()))\n"
        "for step in range(steps):\n    sess.run(train_op)\n")
    assert _rows(source) == []


def test_zip_runs_as_often_as_its_shortest_known_part():
    # A new user's case: zip(range(3), batches) runs at most 3 times.
    assert _rows("import tensorflow as tf\nsess = tf.Session()\nfor i, b in zip(range(3), batches):\n"
                 "    sess.run(tf.argmax(b, 1))\nfor i, b in zip(range(30), batches):\n"
                 "    sess.run(tf.argmax(b, 1))\n") == [("GG101", 6)]


def test_strategy_run_and_predicates_are_not_steps_or_ops():
    # Regressions (issue 12, item 12): in site-packages, a NumPy array indexed in a loop that calls
    # strategy.run was GG106 (strategy.run taken for a session step); ragged_tensor.is_ragged (an
    # isinstance check) was taken for an op builder.
    assert _rows(
        "import numpy as np\nimport tensorflow as tf\nfrom tensorflow.python.ops.ragged import ragged_tensor\n"
        "strategy = tf.distribute.MirroredStrategy()\ndata = np.zeros((10, 3))\nfor step in range(steps):\n"
        "    strategy.run(train_step, args=(data[step] * 2,))\n    if ragged_tensor.is_ragged(x):\n        pass\n") == []


def test_keras_imported_from_tensorflow_python_keras_is_keras():
    # TF1-era code imports Keras from TensorFlow's private package; the sweep through it was missed
    # (found by judging graphguard check on public notebooks).
    source = textwrap.dedent("""\
        from tensorflow.python.keras.models import Sequential
        from tensorflow.python.keras.layers import Dense

        def trial(rate):
            model = Sequential([Dense(1)])
            model.compile(optimizer="sgd", loss="mse")
            model.fit(x, y)
            return model.evaluate(x, y)

        for rate in rates:
            trial(rate)
        """).encode()
    assert [(d.code, d.row) for d in CHECKER.check_source(source, "sweep.py")] == [("GG201", 11)]


def test_gg301_names_every_argument_the_loop_changes_in_one_finding():
    # A new user's fifth trial: `train_step(X, Y, step, lr)` was reported for `step` only; `lr` came after
    # fixing it.
    source = textwrap.dedent("""\
        import tensorflow as tf

        @tf.function
        def train_step(x, step, lr):
            return tf.reduce_mean(x) * lr + step

        lr = 0.1
        for step in range(1000):
            lr = lr * 0.999
            train_step(tf.ones([4]), step, min(lr, 0.05))
    """).encode()
    found = Checker(["GG301"]).check_source(source, "t.py")
    assert [d.message.split(":")[0] for d in found] == ["`step`, `min(lr, 0.05)` in `train_step(...)`"], found


def test_gg301_says_shape_for_arrays_whose_length_changes_and_value_for_numbers():
    # A twenty-sixth new user's trial: arrays of a new length per epoch were said to be "a new value".
    source = b"""\
import numpy as np
import tensorflow as tf

@tf.function
def step(x, y, scale):
    return tf.reduce_sum(x) * scale + tf.reduce_sum(y)

data = np.random.rand(500, 8)
for epoch in range(100):
    xb = data[:32 + epoch]
    yb = data[:32 + epoch]
    step(xb, yb, 1.0)
    step(xb, yb, 0.5 * epoch)
    step(tf.ones((epoch + 1, 8)), 1.0, 1.0)
"""
    messages = [finding.message for finding in CHECKER.check_source(source, "t.py")]
    assert messages[0].startswith("`xb`, `yb` (shapes) in `step(...)`: a new shape per iteration"), messages
    assert messages[1].startswith("`xb` (shape), `yb` (shape), `0.5 * epoch` in `step(...)`: a new value or shape per"), messages
    assert "(shape set by `epoch`) in `step(...)`: a new shape per iteration" in messages[2], messages
