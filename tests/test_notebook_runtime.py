"""SweepGuard and GraphGuard in a running notebook: a real IPython kernel (ipykernel) driven by nbclient.

Each test executes a notebook made with nbformat, cell by cell, as Jupyter does: the cells share the
kernel's user namespace, and IPython's output history (``Out``/``_oh``, ``_N``, ``_``) keeps every
displayed value. TensorFlow graph mode is entered only inside the kernel (``with tf.Graph().as_default()``),
never in this process.
"""

from __future__ import annotations

import re

import pytest

pytest.importorskip("IPython")
pytest.importorskip("ipykernel")
nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")


def run_notebook(*sources: str, timeout: int = 180, tracebacks: list | None = None) -> list[str]:
    """Execute the cells in a fresh kernel; return each cell's output text (streams, results, errors).
    ``tracebacks``, if given, gets the traceback text of every error shown."""
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(source) for source in sources])
    nbclient.NotebookClient(nb, timeout=timeout, kernel_name="python3", allow_errors=True).execute()
    texts = []
    for cell in nb.cells:
        parts = []
        for output in cell.outputs:
            if output.output_type == "stream":
                parts.append(output.text)
            elif output.output_type in ("execute_result", "display_data"):
                parts.append(output.data.get("text/plain", ""))
            elif output.output_type == "error":
                parts.append(f"ERROR {output.ename}: {output.evalue}")
                if tracebacks is not None:
                    tracebacks.append("\n".join(output.traceback))
        texts.append("\n".join(parts))
    return texts


NUMPY_SETUP = """
import warnings
import numpy as np
from graphguard import SweepGuard, SweepLeakWarning

class TwoLayerNet:
    def __init__(self, hidden=64):
        self.params = {"W1": np.random.randn(32, hidden), "W2": np.random.randn(hidden, 4)}

class Solver:
    def __init__(self, model, learning_rate):
        self.model, self.learning_rate = model, learning_rate
    def train(self):
        for _ in range(3):
            for value in self.model.params.values():
                value -= self.learning_rate * value
        return float(sum(abs(v).sum() for v in self.model.params.values()))

sweep = SweepGuard(on_leak="ignore")
"""

TRIAL_CELL = """
with sweep.trial(f"lr={lr:g}") as trial:
    model = trial.track(TwoLayerNet(), name="model")
    solver = trial.track(Solver(model, lr), name="solver")
    score = solver.train()
"""


def test_numpy_sweep_displayed_model_is_named_by_out_and_freed_by_reset():
    texts = run_notebook(
        NUMPY_SETUP,
        "lr = 1e-3" + TRIAL_CELL + "model",          # cell 2: displays the model: Out[2] keeps it
        "lr = 1e-2" + TRIAL_CELL + "model",          # cell 3: Out[3]
        "lr = 1e-1" + TRIAL_CELL + "model;",         # cell 4: `;` displays nothing
        "report = sweep.report()\nprint(report)",
        "print([str(obj.chain) for r in report.trials for obj in r.leaks])\n"
        "print([obj.chain.root_kind for r in report.trials for obj in r.leaks])",
        "%reset -f out",
        "sweep = SweepGuard(on_leak='ignore')\n"
        "for lr in (1e-3, 1e-2, 1e-1):" + TRIAL_CELL.replace("\n", "\n    ") + "\n"
        "print(sweep.report())",
    )
    report, chains, after = texts[4], texts[5], texts[7]
    assert "ERROR" not in "".join(texts), texts
    # trial 1's model was displayed as Out[2], trial 2's as Out[3]; the solver (not displayed) is not a leak
    assert "model (TwoLayerNet): output history `Out[2]` (also `_2`) -> TwoLayerNet" in report, report
    assert "model (TwoLayerNet): output history `Out[3]` (also `_3`) -> TwoLayerNet" in report, report
    assert "%reset -f out" in report
    assert "__main__" not in report and "_oh" not in report and "DisplayHook" not in report, report
    assert "lr=0.1 " in report and report.count("LEAK") == 2, report
    assert "'output'" in chains and "Out[2]" in chains
    # after `%reset -f out` and with nothing displayed, the same sweep is quiet
    assert "no trial leaked" in after, after


def test_numpy_sweep_in_cells_quiet_when_fixed_and_rerun_cells():
    texts = run_notebook(
        NUMPY_SETUP,
        "scores = {}",
        "for lr in (1e-3, 1e-2, 1e-1):" + TRIAL_CELL.replace("\n", "\n    ") + "\n    scores[lr] = score",
        "print(sweep.report())",
        # re-executed cells: a new guard, the trial cell run again, then once more without a new guard
        NUMPY_SETUP,
        "for lr in (1e-3, 1e-2):" + TRIAL_CELL.replace("\n", "\n    "),
        "for lr in (3e-3, 3e-2):" + TRIAL_CELL.replace("\n", "\n    "),
        "report = sweep.report()\nprint(report)\nprint([r.name for r in report.trials])",
        # the leaky version: every solver kept in a dict of the notebook
        "solvers = {}\nsweep = SweepGuard(on_leak='ignore')\n"
        "for lr in (1e-3, 1e-2, 1e-1):" + TRIAL_CELL.replace("\n", "\n    ") + "\n    solvers[lr] = solver\n"
        "print(sweep.report())",
    )
    assert "ERROR" not in "".join(texts), texts
    assert "no trial leaked" in texts[3], texts[3]
    assert "no trial leaked" in texts[7], texts[7]
    assert "['lr=0.001', 'lr=0.01', 'lr=0.003', 'lr=0.03']" in texts[7], texts[7]
    leaky = texts[8]
    assert "solver (Solver): notebook variable `solvers` -> dict[0.001] -> Solver" in leaky, leaky
    assert "Out[" not in leaky and "%reset" not in leaky, leaky


GRAPH_SETUP = """
import tensorflow as tf
from graphguard import GraphGuard, GraphGrowthError
from graphguard.runtime.notebook import cell_label
g = tf.Graph()
with g.as_default():
    x = tf.compat.v1.placeholder(tf.float32, [None, 3])
    w = tf.Variable(tf.ones([3, 1]))
    y = tf.reduce_sum(tf.matmul(x, w))
    init = tf.compat.v1.global_variables_initializer()
sess = tf.compat.v1.Session(graph=g)
sess.run(init)
"""


def test_graphguard_in_cells_error_names_the_cell_line_and_rerun_works():
    texts = run_notebook(
        GRAPH_SETUP,
        "with g.as_default(), GraphGuard(sess) as guarded:\n"
        "    for step in range(5):\n"
        "        loss = tf.reduce_mean(y)\n"
        "        guarded.run(loss, feed_dict={x: [[1, 2, 3]]})\n",
        "err = _exc = __import__('sys').last_value\n"
        "print(type(err).__name__, cell_label(err.filename, err.lineno), g.finalized)",
        # the same cell, fixed, re-run: the graph was released by the guard
        "with g.as_default():\n"
        "    loss = tf.reduce_mean(y)\n"
        "with GraphGuard(sess) as guarded:\n"
        "    for step in range(5):\n"
        "        guarded.run(loss, feed_dict={x: [[1, 2, 3]]})\n"
        "print(g.finalized)",
        # the leaking cell once more: the same error again, not a stale state
        "with g.as_default(), GraphGuard(sess) as guarded:\n"
        "    for step in range(5):\n"
        "        loss = tf.reduce_mean(y)\n"
        "        guarded.run(loss, feed_dict={x: [[1, 2, 3]]})\n",
    )
    assert texts[1].startswith("ERROR GraphGrowthError"), texts[1]
    # Located as IPython's own tracebacks name cells (was the kernel's /tmp/ipykernel_.../N.py:3).
    assert "loss = tf.reduce_mean(y)" in texts[1] and "at cell In[2], line 3 (tf.reduce_mean)" in texts[1], texts[1]
    assert texts[2].strip() == "GraphGrowthError cell In[2], line 3 False", texts[2]
    assert "ERROR" not in texts[3] and texts[3].strip().endswith("False"), texts[3]
    assert texts[4].startswith("ERROR GraphGrowthError") and "cell In[5], line 3 (tf.reduce_mean)" in texts[4], texts[4]


KERAS_SETUP = """
import numpy as np
import keras
from graphguard import SweepGuard
xs = np.random.rand(64, 8).astype("float32")
ys = (xs.sum(axis=1) > 4).astype("int32")

def fit(lr):
    model = keras.Sequential([keras.Input((8,)), keras.layers.Dense(8, activation="relu"), keras.layers.Dense(2)])
    model.compile(optimizer=keras.optimizers.SGD(lr), loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    return model, model.fit(xs, ys, epochs=1, batch_size=32, verbose=0)

sweep = SweepGuard(on_leak="ignore", max_retained_bytes=None)
"""


def test_keras_sweep_clear_session_quiet_unless_out_holds_the_history():
    trial = ("with sweep.trial(f'lr={lr:g}'):\n"
             "    model, history = fit(lr)\n"
             "    keras.backend.clear_session()\n")
    texts = run_notebook(
        KERAS_SETUP,
        "for lr in (0.1, 0.01, 0.001):\n    " + trial.replace("\n", "\n    ") + "\nhistory;",
        "print(sweep.report())",
        "sweep = SweepGuard(on_leak='ignore', max_retained_bytes=None)\nlr = 0.1\n" + trial + "history",
        "lr = 0.01\n" + trial + "history",
        "print(sweep.report())",
    )
    assert "ERROR" not in "".join(texts), texts
    assert "no trial leaked" in texts[2], texts[2]
    leaky = texts[5]
    # the displayed History keeps its model: a real leak, named by the output history
    assert "output history `Out[4]` (also `_4`) -> History._model -> Sequential" in leaky, leaky
    assert "%reset -f out" in leaky


def test_load_ext_graphguard_reports_the_leaking_cells_and_stays_quiet_on_their_fixed_twins():
    """Issue 40, item 2: ``%load_ext graphguard`` guards every session and tf.function of later cells;
    the error is under the leaking cell, naming its line as IPython does, with the cell's frames only."""
    leaking_loop = ("with g.as_default():\n"
                    "    for step in range(20):\n"  # (more than max_bounded_iterations: a loop of 10 is tolerated)
                    "        loss = tf.reduce_mean(y)\n"
                    "        sess.run(loss, feed_dict={x: [[1, 2, 3]]})\n")
    tracebacks: list[str] = []
    texts = run_notebook(
        "%load_ext graphguard",  # before TensorFlow is imported: the cells' own import is seen
        GRAPH_SETUP.replace("from graphguard import GraphGuard, GraphGrowthError\n", ""),
        leaking_loop,
        # the fixed twin, in a graph and session of its own
        "g2 = tf.Graph()\n"
        "with g2.as_default():\n"
        "    x2 = tf.compat.v1.placeholder(tf.float32, [None, 3])\n"
        "    loss2 = tf.reduce_mean(tf.matmul(x2, tf.ones([3, 1])))\n"
        "with tf.compat.v1.Session(graph=g2) as sess2:\n"
        "    for step in range(10):\n"
        "        sess2.run(loss2, feed_dict={x2: [[1, 2, 3]]})\n",
        "@tf.function\n"
        "def scaled(v, n):\n"
        "    return tf.reduce_sum(v) * tf.cast(n, tf.float32)\n"
        "for n in range(12):\n"
        "    scaled(tf.ones([3]), n)\n",
        "@tf.function\n"
        "def scaled_fixed(v, n):\n"
        "    return tf.reduce_sum(v) * tf.cast(n, tf.float32)\n"
        "for n in range(12):\n"
        "    scaled_fixed(tf.ones([3]), tf.constant(n))\n",
        "%graphguard report",
        "%graphguard on max_traces=zero",
        "%graphguard off",
        leaking_loop + "print('ran unguarded')",
        "%graphguard on on_growth=warn",
        leaking_loop,  # the session resumes after off/on: no second warm-up (issue 40's trial)
        "%graphguard on max_traces=20",  # while on: options change, open sessions keep their guards
        "%graphguard",
        tracebacks=tracebacks,
    )
    growth, fixed, retracing, fixed_function, report = texts[2], texts[3], texts[4], texts[5], texts[6]
    assert growth.startswith("ERROR GraphGrowthError: +5 ops at step 3: 3 x Const, Range, Mean at cell In[3], line 3 "
                             "(tf.reduce_mean)"), growth
    assert "cell In[3], line 3 (op, GG101): build it once before the loop" in growth
    assert fixed == "" and fixed_function == "", (fixed, fixed_function)
    assert ("ERROR RetracingError: tf.function `scaled` (defined at cell In[5], line 1) keeps retracing: 9 traces in "
            "9 calls") in retracing, retracing  # after TensorFlow's own warnings, on stderr
    assert "called from cell In[5], line 5" in retracing and "argument `n`: Python int 7 -> 8" in retracing
    # the report: both sessions (the leaking one grew), the tf.function table
    assert report.startswith("graphguard: 2 sessions guarded (count mode, 2 warm-up steps per session), 1 grew"), report
    assert "growth: +5 ops/step since step 2 (2 steps to step 3): 3 x Const, Range, Mean at cell In[3], line 3" in report
    assert "scaled        cell In[5], line 1       9      9        1  RETRACING" in report, report
    assert texts[7] == "UsageError: %graphguard on: max_traces must be a whole number >= 1, not 'zero'\n", texts[7]
    assert texts[8].startswith("graphguard: off") and texts[9].strip() == "ran unguarded", texts[8:10]
    assert texts[10].startswith("graphguard: on (max_traces=8 on_growth=warn"), texts[10]
    assert "GraphGrowthWarning: +5 ops at step 2: 3 x Const, Range, Mean at cell In[12], line 3" in texts[11], texts[11]
    assert texts[13].startswith("graphguard: on (max_traces=20 on_growth=warn") and "2 sessions guarded" in texts[13], texts[13]
    # the two errors' tracebacks: the cells' frames only, none of graphguard's or TensorFlow's
    plain = [re.sub(r"\x1b\[[0-9;]*m", "", tb) for tb in tracebacks]
    assert len(plain) == 2 and "Cell In[3], line 4" in plain[0] and "Cell In[5], line 5" in plain[1], plain
    assert not any("graphguard/runtime" in tb or "site-packages/tensorflow" in tb for tb in plain), plain


#: IPython's own shell (the terminal ``ipython``, or a script driving ``InteractiveShell``) names a cell's
#: code ``<ipython-input-N-HASH>``, N the run number: the same cell run again has another name.
IPYTHON_CELLS = r"""
import sys
from IPython.core.interactiveshell import InteractiveShell
shell = InteractiveShell.instance()
cells = [
    "%load_ext graphguard",
    SETUP,
    "for step in range(3):\n    sess.run(y, feed_dict={x: [[1, 2, 3]]})",
] + ["with g.as_default():\n    out = sess.run(y * 2.0, feed_dict={x: [[1, 2, 3]]})"] * 3
for source in cells:
    result = shell.run_cell(source, store_history=True)
    error = result.error_in_exec
    print("CELL", type(error).__name__ if error else "ok", str(error).splitlines()[0] if error else "", flush=True)
    print("TEXT", repr(str(error)) if error else "", flush=True)
"""


def test_a_cell_run_again_in_ipythons_own_shell_is_growth_at_its_second_run():
    # A ninth new user's trial: the same cell run three times, each run adding ops, was three one-offs
    # (one per run number) and never reported, although docs/notebooks.md says it is growth.
    import subprocess
    import sys

    script = IPYTHON_CELLS.replace("SETUP", repr(GRAPH_SETUP))
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300,
                          env={**__import__("os").environ, "TF_CPP_MIN_LOG_LEVEL": "3"})
    cells = [line.split(" ", 2)[1:] for line in done.stdout.splitlines() if line.startswith("CELL ")]
    assert [cell[0] for cell in cells] == ["ok", "ok", "ok", "ok", "GraphGrowthError", "GraphGrowthError"], done.stdout
    assert "+2 ops at step" in cells[4][1] and "cell In[5], line 2" in cells[4][1], cells[4]
    # no loop around the cell's line: the fix says what repeats (a seventeenth new user's trial drove the
    # shell from a script's loop, and read of "the loop" in a cell that had none)
    texts = [line for line in done.stdout.splitlines() if line.startswith("TEXT ")]
    assert "between session runs" in texts[4] and "no loop stands around these lines" in texts[4], texts[4]
    # ... and its advice does not say "before the loop" to a cell that had no loop (twentieth trial)
    assert "before the loop" not in texts[4] and "outside the code that repeats" in texts[4], texts[4]


def test_a_script_driving_the_shell_in_a_loop_is_not_the_loop_around_a_cell(tmp_path):
    import subprocess
    import sys

    driver = tmp_path / "drive.py"  # a readable file: its `for source in cells:` is a loop the guard could read
    driver.write_text(IPYTHON_CELLS.replace("SETUP", repr(GRAPH_SETUP)))
    done = subprocess.run([sys.executable, str(driver)], capture_output=True, text=True, timeout=300,
                          env={**__import__("os").environ, "TF_CPP_MIN_LOG_LEVEL": "3"})
    texts = [line for line in done.stdout.splitlines() if line.startswith("TEXT ")]
    assert len(texts) == 6 and "no loop stands around these lines" in texts[4], done.stdout + done.stderr[-2000:]
    assert "inside the loop that calls sess.run" not in texts[4]


def test_a_timed_cell_is_named_and_its_line_classified_as_any_cell():
    # A tenth new user's trial: in a `%%time` cell the error read `<timed exec>:3` with no source line
    # and the operator rule (GG106) for a tf.argmax call.
    import os
    import subprocess
    import sys

    timed = ("%%time\nwith g.as_default():\n    for step in range(100):\n"
             "        pred = tf.argmax(y, 0)\n        sess.run(pred, feed_dict={x: [[1, 2, 3]]})")
    script = IPYTHON_CELLS.replace("SETUP", repr(GRAPH_SETUP.replace("tf.reduce_sum(tf.matmul(x, w))",
                                                                     "tf.reduce_sum(tf.matmul(x, w), 1)")))
    # (a twenty-first new user's trial: a timed cell's loop was read from the timed cell before it, which
    # had none: "no loop stands around these lines")
    helper = "def evaluate():\n    with g.as_default():\n        return sess.run(tf.argmax(y, 0), feed_dict={x: [[1, 2, 3]]})"
    calling = "%%time\nfor step in range(100):\n    print(evaluate())"
    script = script.replace('] + ["with g.as_default():\\n    out = sess.run(y * 2.0, feed_dict={x: [[1, 2, 3]]})"] * 3',
                            "] + [" + repr(timed) + ", " + repr(helper) + ", " + repr(calling) + "]")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300,
                          env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"})
    cells = [line.split(" ", 2)[1:] for line in done.stdout.splitlines() if line.startswith("CELL ")]
    assert [cell[0] for cell in cells] == ["ok", "ok", "ok", "GraphGrowthError", "ok", "GraphGrowthError"], (
        done.stdout + done.stderr)
    assert cells[3][1].endswith("at cell In[4], line 4 (tf.argmax)"), cells[3]
    # a timed cell's loop around a helper of another cell is the loop (a twenty-first new user's trial:
    # "no loop stands around these lines", and no calling line)
    texts = [line for line in done.stdout.splitlines() if line.startswith("TEXT ")]
    assert "called from cell In[6], line 3" in texts[5] and "no loop stands around" not in texts[5], texts[5]
