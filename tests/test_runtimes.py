"""Which runtime executes the code decides what grows (issue 34, first contact): TF 2's eager Keras or one
whose predict is cheap, a TF 2 program or TF1 graphs; and loops that run a handful of times for every rule."""

from __future__ import annotations

import textwrap

import pytest

from graphguard.analysis.runtimes import cheap_predict, spells_compat_v1, spells_tf1
from graphguard.checker import Checker

CHECKER = Checker()


def codes(source: str, path: str = "t.py") -> list[tuple[str, int]]:
    return [(d.code, d.row) for d in CHECKER.check_source(textwrap.dedent(source).encode(), path)]


PREDICT_LOOP = """\
{imports}
model = Sequential([Dense(1, input_dim=4)])
model.compile(optimizer={optimizer}, loss="mse")
state = env.reset()
while True:
    action = model.predict(state.reshape(1, 4))
    state, reward, done = env.step(action)
"""


@pytest.mark.parametrize("imports, optimizer, expected", [
    # TF 2's Keras: every predict call builds a data pipeline (TF-FACTS: 70-190 ms).
    ("from tensorflow.keras.models import Sequential\nfrom tensorflow.keras.layers import Dense", "Adam(1e-3)",
     [("GG303", 6)]),
    # Keras 3 (standalone, no pre-2.4 spelling) on its default TensorFlow backend: the same.
    ("from keras.models import Sequential\nfrom keras.layers import Dense", "Adam(learning_rate=1e-3)",
     [("GG303", 6)]),
    # Standalone Keras before 2.4 (lr=, the TF1 backend): predict runs a cached predict function.
    ("from keras.models import Sequential\nfrom keras.layers import Dense", "Adam(lr=1e-3)", []),
    ("from keras.models import Sequential\nfrom keras.layers.core import Dense", "'adam'", []),
    # The same module through another import form (a set P notebook: `from keras.utils import np_utils`).
    ("from keras.models import Sequential\nfrom keras.layers import Dense\nfrom keras.utils import np_utils", "'adam'", []),
    ("from keras.models import Sequential\nfrom keras.layers import Dense\nfrom keras.utils import to_categorical", "'adam'",
     [("GG303", 6)]),
    # Keras 2.6-2.8 on TF 2 (its optimizers' *_v2 modules) still runs lr= with a warning: TF 2's predict.
    ("from keras.models import Sequential\nfrom keras.layers import Dense\nfrom keras.optimizers import adam_v2",
     "adam_v2.Adam(lr=1e-3)", [("GG303", 6)]),
    # Keras 3 on JAX: predict reuses its jitted function.
    ("import os\nos.environ['KERAS_BACKEND'] = 'jax'\nfrom keras.models import Sequential\nfrom keras.layers import Dense",
     "'adam'", []),
])
def test_predict_in_a_loop_depends_on_which_keras_runs_it(imports, optimizer, expected):
    source = PREDICT_LOOP.format(imports=imports, optimizer=optimizer)
    rows = {("GG303", 6): source.splitlines().index("    action = model.predict(state.reshape(1, 4))") + 1}
    assert codes(source) == [(code, rows[(code, row)]) for code, row in expected]


def test_cheap_predict_reads_spellings_not_names():
    assert cheap_predict(b"import keras\nmodel.fit_generator(gen)\n")
    assert not cheap_predict(b"import keras\nlr = 0.1\ndef set_rate(net, lr): pass\n")  # a name, not a keyword
    assert not cheap_predict(b"from tensorflow import keras\nAdam(lr=0.1)\n")  # tf.keras: TF's own Keras
    assert cheap_predict(b'import os\nos.environ.setdefault("KERAS_BACKEND", "torch")\n')
    # A TF 2 spelling beside lr= (Keras 2.6-2.10 accept lr= with a warning): TF 2's Keras.
    assert not cheap_predict(b"import keras\nwriter = tf.summary.create_file_writer(d)\nAdam(lr=0.1)\n")
    assert spells_compat_v1(b"import tensorflow.compat.v1 as tf\n")
    assert spells_compat_v1(b"from tensorflow.compat import v1\n")
    assert not spells_compat_v1(b"import tensorflow as tf\n")


def _project(tmp_path, helper: str) -> list[tuple[str, str, int]]:
    (tmp_path / "encoder.py").write_text(textwrap.dedent(helper))
    (tmp_path / "track.py").write_text(textwrap.dedent("""\
        import tensorflow as tf
        from encoder import Encoder

        encoder = Encoder("net.pb")
        while True:
            frame = camera.read()
            boxes = tf.reshape(detect(frame), (-1, 4))
            features = encoder(frame, boxes)
        """))
    files = [str(tmp_path / "encoder.py"), str(tmp_path / "track.py")]
    report = Checker().check_paths(files)
    return [(d.filename.rsplit("/", 1)[-1], d.code, d.row) for d in report.diagnostics]


ENCODER = """\
{imports}

class Encoder:
    def __init__(self, path):
        self.session = tf.Session()
        self.input = tf.placeholder(tf.float32, [None, 128, 64, 3])
        self.output = tf.identity(self.input)

    def __call__(self, frame, boxes):
        return self.session.run(self.output, {{self.input: crop(frame, boxes)}})
"""


def test_a_tf2_program_builds_eager_ops_outside_its_graph_code(tmp_path):
    # TF 2: the helper runs its own graph through compat.v1 and nothing turns eager execution off, so
    # the caller's tf.reshape runs eagerly every frame and grows no graph.
    assert _project(tmp_path, ENCODER.format(imports="import tensorflow.compat.v1 as tf")) == []


def test_a_tf1_program_grows_the_session_graph(tmp_path):
    # The same program spelled as TF 1.x: ops build into the default graph the session runs.
    assert _project(tmp_path, ENCODER.format(imports="import tensorflow as tf")) == [("track.py", "GG101", 7)]


def test_a_program_that_turns_eager_off_grows_the_session_graph(tmp_path):
    imports = "import tensorflow.compat.v1 as tf\ntf.disable_v2_behavior()"
    assert _project(tmp_path, ENCODER.format(imports=imports)) == [("track.py", "GG101", 7)]


@pytest.mark.parametrize("header, loop, expected", [
    ("k = 4", "for i in range(k):", []),
    ("k = 40", "for i in range(k):", [("GG201", 5)]),
    ("k = 4\nk = 40", "for i in range(k):", [("GG201", 6)]),  # two values: unknown
    ("kf = KFold(5, shuffle=True)", "for train, test in kf.split(x):", []),
    ("kf = KFold(n_splits=50)", "for train, test in kf.split(x):", [("GG201", 5)]),
    ("", "for train, test in StratifiedKFold().split(x, y):", []),  # scikit-learn's default: 5 folds
    ("", "for train, test in RepeatedKFold().split(x):", [("GG201", 4)]),  # 5 x 10
    ("n = 3", "for i in range(2 * n + 1):", []),
])
def test_a_loop_counted_from_the_source_is_bounded_for_sweeps_too(header, loop, expected):
    source = f"import tensorflow as tf\nfrom sklearn.model_selection import KFold, RepeatedKFold, StratifiedKFold\n{header}\n{loop}\n" \
             "    model = tf.keras.Sequential([tf.keras.layers.Dense(1)])\n    model.compile(optimizer='adam', loss='mse')\n" \
             "    model.fit(x, y)\n"
    assert codes(source.replace("\n\n", "\n")) == expected


def test_a_name_bound_in_a_function_or_passed_as_a_parameter_is_not_the_module_constant():
    source = """\
        import tensorflow as tf
        k = 4
        def sweep(k):
            for i in range(k):
                model = tf.keras.Sequential([tf.keras.layers.Dense(1)])
                model.fit(x, y)
        """
    assert codes(source) == [("GG201", 5)]


def test_a_web_route_is_a_loop_per_request():
    # Issue 34 (requests are a loop no statement shows): Flask / FastAPI handlers predict once per request.
    source = """\
        import numpy as np
        from flask import Flask, request
        from tensorflow.keras.models import load_model

        app = Flask(__name__)
        model = load_model("mpg.h5")

        @app.route("/api/mpg", methods=["POST"])
        def predict_mpg():
            x = np.zeros((1, 7))
            x[0, 0] = request.json["cylinders"]
            return {"mpg": float(model.predict(x)[0])}

        def offline(rows):
            return model.predict(rows)
        """
    (finding,) = CHECKER.check_source(textwrap.dedent(source).encode(), "server.py")
    assert (finding.code, finding.row) == ("GG303", 12)
    assert "in every request to the handler at line 9" in finding.message


def test_a_search_driver_is_named_as_a_search():
    source = """\
        import optuna
        import tensorflow as tf

        def objective(trial):
            model = tf.keras.Sequential([tf.keras.layers.Dense(trial.suggest_int("units", 4, 64))])
            model.compile(optimizer="adam", loss="mse")
            return model.fit(x, y).history["loss"][-1]

        optuna.create_study().optimize(objective, n_trials=50)
        """
    (finding,) = CHECKER.check_source(textwrap.dedent(source).encode(), "search.py")
    assert finding.code == "GG201" and "in every trial of the search at line 9" in finding.message


@pytest.mark.parametrize("data, expected", [
    ("frame[np.newaxis, ...].astype(np.float32)", [("GG303", 8)]),  # a one-row chain, through a name
    ("np.expand_dims(frame, 0).copy()", [("GG303", 8)]),
    ("frames.astype(np.float32)", []),  # the iteration's data, not known as one row: not by its use
])
def test_a_parameter_used_as_a_keras_model_on_one_sample_is_one(data, expected):
    source = f"""\
import numpy as np
import tensorflow as tf

def track(detector, video):
    while True:
        frame, frames = video.read()
        image = {data}
        boxes = detector.predict(image)
"""
    assert codes(source) == expected


def test_an_estimator_held_in_an_attribute_is_not_taken_by_its_use():
    source = """\
        import numpy as np
        import tensorflow as tf
        from sklearn.tree import DecisionTreeClassifier

        class Baseline:
            def __init__(self):
                self.tree = DecisionTreeClassifier()

            def run(self, rows):
                for row in rows:
                    self.tree.predict(row.reshape(1, -1))
        """
    assert codes(source) == []


STRUCTURE = """\
import tensorflow as tf
sess = tf.Session()
{loop}
    {body}
"""


@pytest.mark.parametrize("loop, body, expected", [
    # A pass over the model's or the graph's structure builds one needed op per element: setup.
    ("for layer in model.layers:", "sess.run(tf.gradients(layer.output, images), {images: batch})", []),
    ("for layer in model.layers[-4:]:", "sess.run(tf.reduce_mean(layer.output), {images: batch})", []),
    ("for op in tf.get_default_graph().get_operations():", "sess.run(tf.size(op.outputs[0]))", []),
    ("for name in tensor_names:", "sess.run(tf.reduce_max(graph.get_tensor_by_name(name + ':0')))", []),
    ("for pool in [l for l in model.layers if 'pool' in l.name]:", "sess.run(tf.reduce_mean(pool.output))", []),
    # Data: batches, steps, an iterable passed in whose elements are not looked up by name.
    ("for batch in batches:", "sess.run(tf.argmax(logits, 1), {images: batch})", [("GG101", 4)]),
    ("for name in tensor_names:", "sess.run(tf.reduce_max(tensors[name]))", [("GG101", 4)]),
])
def test_a_loop_over_the_model_or_graph_structure_is_setup(loop, body, expected):
    assert codes(STRUCTURE.format(loop=loop, body=body)) == expected


def test_a_structural_loop_inside_a_training_loop_is_still_repeated():
    source = """\
        import tensorflow as tf
        sess = tf.Session()
        for epoch in range(num_epochs):
            sess.run(train_op)
            for layer in model.layers:
                sess.run(tf.reduce_mean(layer.output))
        """
    assert codes(source) == [("GG101", 6)]


@pytest.mark.parametrize("first, second, expected", [
    ("sess.run(tf.argmax(y, 1))", "sess.run(train_op)", [("GG101", 6)]),  # the loop runs the first definition
    ("sess.run(train_op)", "sess.run(tf.argmax(y, 1))", []),  # a later cell's fix does not reach back
])
def test_a_function_redefined_in_a_later_cell_is_bound_in_execution_order(tmp_path, first, second, expected):
    # Issue 34: a loop in one cell ran the definition active when the cell ran, not a later cell's.
    import json

    cells = [f"import tensorflow as tf\nsess = tf.Session()\ndef step():\n    return {first}",
             "for i in range(1000):\n    step()", f"def step():\n    return {second}"]
    notebook = {"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": [
        {"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": None, "source": cell} for cell in cells]}
    (tmp_path / "nb.ipynb").write_text(json.dumps(notebook))
    report = Checker().check_paths([str(tmp_path / "nb.ipynb")])
    assert [(d.code, d.row) for d in report.diagnostics] == expected


def _run(tmp_path, files: dict) -> list[tuple[str, str, int]]:
    for name, text in files.items():
        (tmp_path / name).write_text(textwrap.dedent(text))
    report = Checker().check_paths([str(tmp_path / name) for name in files])
    return [(d.filename.rsplit("/", 1)[-1], d.code, d.row) for d in report.diagnostics]


AGENT = """\
    import numpy as np
    from keras.models import Sequential
    from keras.layers import Dense

    class Agent:
        def __init__(self):
            self.model = Sequential([Dense(2, input_dim=4)])
            self.model.compile(optimizer="adam", loss="mse")

        def act(self, state):
            return np.argmax(self.model.predict(state[None])[0])
    """
MAIN = """\
    from agent import Agent
    agent = Agent()
    state = env.reset()
    while True:
        state, reward, done, _ = env.step(agent.act(state))
    """


def test_a_program_on_keras_before_2_4_is_one_runtime(tmp_path):
    # A new user's trial: the old spelling in one module of the program silenced it there only.
    helpers = "from keras.optimizers import Adam\nfrom keras.backend.tensorflow_backend import set_session\n"
    assert _run(tmp_path, {"agent.py": AGENT, "main.py": MAIN, "session.py": helpers}) == []


def test_a_program_that_also_shows_tf2_keras_keeps_gg303(tmp_path):
    tf2 = "import tensorflow as tf\nloss_fn = tf.keras.losses.MeanSquaredError()\n"
    assert _run(tmp_path, {"agent.py": AGENT, "main.py": MAIN, "losses.py": tf2}) == [("main.py", "GG303", 5)]


@pytest.mark.parametrize("graph, expected", [
    # TF 1.x's own names, as TF 1.x spells them: the program runs TF 1.x, so Keras before 2.4 (set X)
    ("import tensorflow as tf\nx = tf.placeholder(tf.float32)\nsess = tf.Session()\n", []),
    ("import tensorflow as tf\nopt = tf.train.AdamOptimizer(0.1)\n", []),
    # the same names through compat.v1: code for TF 2, whose Keras builds a pipeline per predict
    ("import tensorflow.compat.v1 as tf\nx = tf.placeholder(tf.float32)\nsess = tf.Session()\n",
     [("main.py", "GG303", 5)]),
    ("import tensorflow as tf\nsess = tf.compat.v1.Session()\n", [("main.py", "GG303", 5)]),
])
def test_a_program_that_runs_tf1_runs_keras_before_2_4(tmp_path, graph, expected):
    assert _run(tmp_path, {"agent.py": AGENT, "main.py": MAIN, "graph.py": graph}) == expected


def test_tf2_findings_left_out_by_a_tf1_module_of_the_program_are_said_in_the_summary(tmp_path):
    # An eleventh new user's trial: a Keras file beside a `tf.placeholder` file lost its GG305/GG306,
    # and the run read "All checks passed".
    import subprocess
    import sys

    (tmp_path / "fit.py").write_text("import numpy as np\nimport keras\nmodel = keras.Sequential([keras.layers.Dense(1)])\n"
                                     "for i in range(len(X)):\n    model.fit(X[i:i + 1], Y[i:i + 1], verbose=0)\n")
    (tmp_path / "tiny.py").write_text("import tensorflow as tf\nx = tf.placeholder(tf.float32)\n")
    result = subprocess.run([sys.executable, "-m", "graphguard", "check", "--no-cache", "."], cwd=tmp_path,
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0 and result.stdout == ""
    assert result.stderr.startswith("No findings shown (2 files checked); 1 TF 2 finding in 1 file not shown: "
                                    "tiny.py spells TF 1.x's own names"), result.stderr


def test_spells_tf1_reads_tf1_names_not_their_compat_spelling():
    assert spells_tf1(b"import tensorflow as tf\nwith tf.Session() as s: pass\n")
    assert spells_tf1(b"import tensorflow as tf\nnet = tf.contrib.layers.flatten(x)\n")
    assert not spells_tf1(b"import tensorflow as tf\nwith tf.compat.v1.Session() as s: pass\n")
    assert not spells_tf1(b"import tensorflow as tf\nsessions = tf.SessionRunHook\n")
    assert not spells_tf1(b"import tensorflow as tf\nm = tf.keras.Sequential()\n")


def test_each_program_of_a_folder_of_projects_has_its_own_keras(tmp_path):
    # The whole fixtures folder checked at once: a TF 2 program beside one on Keras before 2.4 made the
    # old program's predict loop a GG303 (a regression of lookalike/128 in CI).
    helpers = "from keras.optimizers import Adam\nfrom keras.backend.tensorflow_backend import set_session\n"
    tf2 = "import tensorflow as tf\nloss_fn = tf.keras.losses.MeanSquaredError()\n"
    (tmp_path / "old").mkdir()
    (tmp_path / "new").mkdir()
    files = {"old/agent.py": AGENT, "old/main.py": MAIN, "old/session.py": helpers,
             "new/agent.py": AGENT, "new/main.py": MAIN, "new/losses.py": tf2}
    for name, text in files.items():
        (tmp_path / name).write_text(textwrap.dedent(text))
    report = Checker().check_paths([str(tmp_path / name) for name in files])
    assert [(d.filename.split("/")[-2], d.code, d.row) for d in report.diagnostics] == [("new", "GG303", 5)]


@pytest.mark.parametrize("chunks, expected", [("4", []), ("40", [("GG303", 5)])])
def test_chunked_inference_over_a_handful_of_parts_is_bounded(chunks, expected):
    source = f"""\
import numpy as np
import tensorflow as tf
model = tf.keras.models.load_model("m.keras")
for part in np.array_split(data, {chunks}):
    out.append(model.predict(part))
"""
    assert codes(source) == expected


def test_a_module_that_runs_eagerly_builds_no_graph_nor_do_its_helpers(tmp_path):
    # First contact (set C): a TF 2 tracker makes a compat.v1 InteractiveSession for its GPU options and
    # calls .numpy() on its results; its per-frame tf.constant and a helper's ops are eager.
    files = {
        "boxes.py": """\
            import tensorflow as tf

            def filter_boxes(scores, threshold):
                keep = tf.math.reduce_max(scores, axis=-1) >= threshold
                return tf.boolean_mask(scores, keep)
            """,
        "track.py": """\
            import tensorflow as tf
            from tensorflow.compat.v1 import ConfigProto, InteractiveSession
            from boxes import filter_boxes

            session = InteractiveSession(config=ConfigProto())
            while True:
                frame = tf.constant(camera.read())
                scores = filter_boxes(infer(frame), 0.5)
                count = scores.numpy().shape[0]
                session.run(encoder_op)
            """,
    }
    assert _run(tmp_path, files) == []


def test_a_root_scope_that_reuses_variables_makes_no_new_ones_in_helpers():
    source = """\
        import tensorflow as tf

        def generator(z):
            w = tf.get_variable("g_w", [100, 784])
            return tf.matmul(z, w)

        fake = generator(z)
        tf.get_variable_scope().reuse_variables()
        sess = tf.Session()
        for step in range(steps):
            sess.run(train_op)
            images = sess.run(generator(z))
        """
    assert codes(source) == [("GG101", 12)]  # the ops again, but no new variable (GG107)


FLAG_HELPER = """\
import tensorflow as tf

class Scorer:
    def __init__(self, logits, smooth=False):
        self.smooth = smooth
        if self.smooth:
            self.scores = tf.nn.softmax(logits / 2.0)
        else:
            self.scores = logits

with tf.Session() as session:
    for step in range(1000):
        session.run(train_op)
        session.run(Scorer(logits{smooth}).scores)
"""


@pytest.mark.parametrize("smooth, expected", [("", []), (", smooth=False", []), (", True", [("GG101", 14)])])
def test_a_branch_on_an_attribute_set_from_a_flag_parameter(smooth, expected):
    # ``self.smooth = smooth`` then ``if self.smooth:`` in ``__init__`` (keras-rl's dueling flag): a
    # construction that leaves it False never builds the softmax (the mechanism of fixture lookalike/135).
    assert codes(FLAG_HELPER.format(smooth=smooth)) == expected


def test_a_learning_rate_parameter_of_the_programs_own_function_says_no_keras_era():
    # A twenty-third new user's trial: `def build(units=32, lr=1e-3):` in a Keras 3 module read as standalone
    # Keras before 2.4 (its `Adam(lr=...)` keyword), and a 15-model sweep got the TF1-era bound of 10.
    from graphguard.analysis.runtimes import read_runtime

    assert read_runtime(b"import keras\n\ndef build(units=32, lr=1e-3):\n    return keras.Sequential()\n").keras_era == ""
    assert read_runtime(b"import keras\n\ndef build(units,\n          lr=1e-3):\n    pass\n").keras_era == ""
    assert read_runtime(b"import keras\nopt = keras.optimizers.Adam(lr=0.01)\n").keras_era == "old"
    assert read_runtime(b"import keras\ndef f(a): return Adam(lr=0.1)\n").keras_era == "old"
