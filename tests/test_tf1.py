"""TF1-era scripts on TF 2 (issue 15): attribution that survives ``sys.modules["tensorflow"]``
replaced by ``tensorflow.compat.v1``, and ``graphguard run --tf1`` on scripts written for TF 1.x.

Everything runs through the real command line in a subprocess: both change process-wide state
(``sys.modules``, ``disable_v2_behavior()``) that must not leak into the rest of the suite.
"""

import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

pytest.importorskip("tensorflow.compat.v1")


def graphguard(*args, cwd=ROOT, timeout=180):
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2")
    env.pop("TF_USE_LEGACY_KERAS", None)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    return subprocess.run([sys.executable, "-m", "graphguard", *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=timeout)


def _write(path, body):
    path.write_text(textwrap.dedent(body).lstrip())
    return path


def _growth(stderr):
    return next(line for line in stderr.splitlines() if line.startswith("growth: +"))


# -- part 4: attribution whatever module object `tensorflow` is ------------------------------------

ALIASED = """
    import sys

    import tensorflow.compat.v1

    sys.modules["tensorflow"] = tensorflow.compat.v1  # the common way to run a TF1 script on TF 2
    import tensorflow as tf

    tf.disable_v2_behavior()
    x = tf.placeholder(tf.float32, [3])
    {before}
    with tf.Session() as sess:
        for step in range(6):
            {inside}
            sess.run(mean, {{x: [1.0, 2.0, 3.0]}})
"""


def test_ops_of_a_script_that_aliases_tensorflow_to_compat_v1_are_attributed_to_its_line(tmp_path):
    # Regression: internal frames were found with find_spec("tensorflow"), which then answers with
    # tensorflow/_api/v2/compat/v1, so every op was reported at TensorFlow's own ops.py.
    script = _write(tmp_path / "aliased.py", ALIASED.format(before="", inside="mean = tf.reduce_mean(x * 2.0)"))
    result = graphguard("run", "--max-bounded-iterations", "0", str(script), cwd=tmp_path)
    assert result.returncode == 1, result.stderr[-3000:]
    growth = _growth(result.stderr)
    assert re.search(r": 2 x Const, Mul, Mean at aliased\.py:13 \(tf\.reduce_mean\)$", growth), growth
    assert "ops.py" not in result.stderr and "site-packages" not in growth


def test_the_fixed_aliased_script_reports_nothing(tmp_path):
    script = _write(tmp_path / "aliased.py", ALIASED.format(before="mean = tf.reduce_mean(x * 2.0)", inside="pass"))
    result = graphguard("run", str(script), cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "growth" not in result.stderr.replace("no graph growth", "")
    assert result.stderr.rstrip().endswith("graphguard run: no graph growth")


# -- part 3: graphguard run --tf1 -------------------------------------------------------------------

# Written the way the TF 1.x tutorials were (hunkim/DeepLearningZeroToAll lab-02-2, MorvanZhou
# 301_simple_regression): `import tensorflow as tf`, placeholders, a Session; the model sits in a
# module of the user's own next to the script, which gets tensorflow.compat.v1 too.
TUTORIAL_MODEL = """
    import tensorflow as tf


    def model(x):
        w = tf.Variable(tf.random_normal([1]), name="weight")
        b = tf.Variable(tf.random_normal([1]), name="bias")
        return x * w + b
"""

TUTORIAL = """
    import numpy as np
    import tensorflow as tf
    from tensorflow import placeholder

    from model import model

    x = placeholder(tf.float32, shape=[None])
    y = tf.placeholder(tf.float32, shape=[None])
    hypothesis = model(x)
    cost = tf.reduce_mean(tf.square(hypothesis - y))
    train = tf.train.GradientDescentOptimizer(learning_rate=0.01).minimize(cost)
    {before}
    sess = tf.Session()
    sess.run(tf.global_variables_initializer())
    data = np.arange(1.0, 4.0, dtype=np.float32)
    for step in range(8):
        cost_val, _ = sess.run([cost, train], feed_dict={{x: data, y: data + 1.0}})
        {inside}
"""


def _tutorial(tmp_path, before="", inside="pass"):
    _write(tmp_path / "model.py", TUTORIAL_MODEL)
    return _write(tmp_path / "lab.py", TUTORIAL.format(before=before, inside=inside))


def test_a_tf1_era_tutorial_fails_on_tf2_without_tf1(tmp_path):
    result = graphguard("run", str(_tutorial(tmp_path)), cwd=tmp_path)
    assert result.returncode == 1
    assert "ImportError: cannot import name 'placeholder' from 'tensorflow'" in result.stderr


def test_tf1_runs_a_tf1_era_tutorial_and_names_the_leaking_line(tmp_path):
    script = _tutorial(tmp_path, inside="accuracy = tf.reduce_mean(tf.abs(hypothesis - y))  # built per step")
    result = graphguard("run", "--tf1", "--max-bounded-iterations", "0", str(script), cwd=tmp_path)
    assert result.returncode == 1, result.stderr[-3000:]
    growth = _growth(result.stderr)
    assert re.search(r": Sub, Abs, Const, Mean at lab\.py:18 \(tf\.reduce_mean\)$", growth), growth
    assert "stopped by GraphGrowthError" in result.stderr
    last = result.stderr.rstrip().splitlines()[-1]
    # the tutorial's loop runs a counted handful of steps: the verdict says the growth is bounded
    assert last.startswith("graphguard run: graph growth found: +4 ops/step, from lab.py:18 (tf.reduce_mean) (bounded: "), last
    # by default graphguard run tolerates it, as graphguard check leaves the loop out (a thirteenth trial)
    result = graphguard("run", "--tf1", str(script), cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stderr.rstrip().splitlines()[-1].startswith(
        "graphguard run: no sustained graph growth; bounded growth tolerated at lab.py:18 (tf.reduce_mean)")


def test_tf1_runs_the_fixed_tutorial_to_the_end_and_reports_nothing(tmp_path):
    script = _tutorial(tmp_path, before="accuracy = tf.reduce_mean(tf.abs(hypothesis - y))",
                       inside="print(step, cost_val, sess.run(accuracy, feed_dict={x: data, y: data + 1.0}))")
    result = graphguard("run", "--tf1", str(script), cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.splitlines()[-1].startswith("7 ")
    assert "growth:" not in result.stderr and "one-off" not in result.stderr
    assert result.stderr.rstrip().endswith("graphguard run: no graph growth")


def test_tf1_tf_layers_run_on_keras_2_and_their_ops_are_the_scripts(tmp_path):
    pytest.importorskip("tf_keras")  # tf.layers needs Keras 2 on TF >= 2.16; CI's .[test] may not have it
    script = _write(tmp_path / "layers.py", """
        import numpy as np
        import tensorflow as tf

        x = tf.placeholder(tf.float32, [None, 4])
        hidden = tf.layers.dense(x, 8, activation=tf.nn.relu)
        out = tf.layers.dense(hidden, 1, name="head")
        sess = tf.Session()
        sess.run(tf.global_variables_initializer())
        for step in range(6):
            out = tf.layers.dense(hidden, 1, name="head", reuse=True)  # rebuilt per step on the same weights
            sess.run(out, {x: np.ones((2, 4), np.float32)})
    """)
    result = graphguard("run", "--tf1", str(script), cwd=tmp_path)
    assert result.returncode == 1, result.stderr[-3000:]
    growth = _growth(result.stderr)
    assert re.search(r" at layers\.py:10 \(tf\.layers\.dense\)$", growth), growth
    assert "tf_keras" not in growth and "keras" not in growth


def test_tf1_a_gone_package_is_a_one_line_error_naming_it(tmp_path):
    script = _write(tmp_path / "slim.py", "import tensorflow.contrib.slim as slim\n")
    result = graphguard("run", "--tf1", str(script), cwd=tmp_path)
    assert result.returncode == 1
    assert ("ImportError: graphguard run --tf1: cannot import tensorflow.contrib.slim: "
            "tf.contrib was removed in TensorFlow 2.0") in result.stderr


def test_tf1_an_attribute_of_a_gone_package_gets_a_one_line_hint(tmp_path):
    script = _write(tmp_path / "contrib.py", "import tensorflow as tf\ninit = tf.contrib.layers.xavier_initializer()\n")
    result = graphguard("run", "--tf1", str(script), cwd=tmp_path)
    assert result.returncode == 1
    lines = result.stderr.splitlines()
    # TensorFlow names the module 'tensorflow.compat.v1' or 'tensorflow._api.v2.compat.v1' (the latter
    # without tf_keras installed, as in CI): match its error by what it says, not by that name.
    hint = next(i for i, line in enumerate(lines)
                if line.startswith("AttributeError: module 'tensorflow") and line.endswith("has no attribute 'contrib'")) + 1
    assert lines[hint].startswith("graphguard run --tf1: tf.contrib was removed in TensorFlow 2.0")


def test_tf1_hint_names_tf_keras_when_the_script_uses_tf_layers_and_it_is_missing(tmp_path, monkeypatch):
    from graphguard.runtime import tf1

    script = _write(tmp_path / "s.py", "import tensorflow as tf\nh = tf.layers.dense(x, 8)\n")
    plain = _write(tmp_path / "p.py", "import tensorflow as tf\nh = tf.matmul(x, w)\n")
    # a fifth new user's trial: tf.layers only in a comment and a docstring brought the hint
    commented = _write(tmp_path / "c.py", '"""Was tf.layers.dense."""\nimport tensorflow as tf\n'
                                          'h = tf.matmul(x, w)  # tf.layers.dense(x, 8) before\n')
    monkeypatch.setattr(tf1, "tf_keras_available", lambda: False)
    monkeypatch.setattr(tf1, "_keras_major", lambda: 3)
    hint = tf1.Tf1Shim(str(script)).hint()
    assert hint is not None and "\n" not in hint
    assert hint.startswith("graphguard run --tf1: this script uses tf.layers or tf.keras, which need Keras 2")
    assert "pip install tf_keras==" in hint
    assert tf1.Tf1Shim(str(plain)).hint() is None and tf1.Tf1Shim(str(commented)).hint() is None
    monkeypatch.setattr(tf1, "tf_keras_available", lambda: True)
    assert tf1.Tf1Shim(str(script)).hint() is None


def test_tf1_on_tf2_code_says_to_run_without_tf1_not_to_install_keras_2(tmp_path, monkeypatch):
    # A third new user's trial: a GradientTape loop under --tf1 was told to pip install tf_keras, then
    # failed on a SymbolicTensor: --tf1 had turned off the eager execution it needs.
    from graphguard.runtime import tf1

    monkeypatch.setattr(tf1, "tf_keras_available", lambda: False)
    monkeypatch.setattr(tf1, "_keras_major", lambda: 3)
    script = _write(tmp_path / "s.py", """\
        import tensorflow as tf
        model = tf.keras.Sequential([tf.keras.layers.Dense(1)])

        @tf.function
        def step(x):
            with tf.GradientTape() as tape:
                loss = tf.reduce_sum(model(x))
            return loss
        """)
    assert tf1.Tf1Shim(str(script)).hint() == ("graphguard run --tf1: this script is TF 2 code (`tf.function` at "
                                               "line 4), which needs the eager execution --tf1 turns off: run it "
                                               "without --tf1")
    for error in (TypeError("float() argument must be a string or a real number, not 'SymbolicTensor'"),
                  RuntimeError("`tf.data.Dataset` only supports Python-style iteration in eager mode or within tf.function.")):
        assert tf1.explain(error).endswith("which --tf1 turns off: run it without --tf1")


def test_tf1_gives_compat_v1_to_user_code_only(tmp_path):
    import tensorflow

    from graphguard.runtime import attribution, tf1

    shim = tf1.Tf1Shim(str(tmp_path / "s.py"))
    shim.v1 = tensorflow.compat.v1  # as after the script's first import (without disabling v2 here)
    shim._original_import = __import__
    library = {"__file__": os.path.join(os.path.dirname(tensorflow.__file__), "python", "x.py")}
    assert attribution.is_library(library["__file__"])
    assert shim._import("tensorflow", library) is tensorflow
    assert shim._import("tensorflow", {"__name__": "no_file"}) is tensorflow
    user = {"__file__": str(tmp_path / "s.py")}
    assert shim._import("tensorflow", user) is tensorflow.compat.v1
    assert shim._import("tensorflow", user, None, ("Session",)) is tensorflow.compat.v1
    assert shim._import("tensorflow.compat.v1", user) is tensorflow  # dotted: Python binds the real package
    with pytest.raises(ImportError, match=r"cannot import estimator from tensorflow: tf\.estimator was removed"):
        shim._import("tensorflow", user, None, ("estimator",))


def test_the_tf_keras_pin_reads_tensorflow_cpu_too(monkeypatch):
    # Issue 39 (a new user's trial): with tensorflow-cpu installed the hint said "the version of your
    # TensorFlow" instead of the pin the docs show.
    import importlib.metadata

    from graphguard.runtime import tf1

    def version(name):
        if name == "tensorflow-cpu":
            return "2.21.0"
        raise importlib.metadata.PackageNotFoundError(name)

    monkeypatch.setattr(importlib.metadata, "version", version)
    assert tf1._tf_version() == "2.21.0"
