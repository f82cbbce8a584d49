"""Shared test hygiene, and one TensorFlow process that runs many TF1 programs."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

#: The runner: reads a program's path per line, runs it in a fresh default graph with its output
#: captured, and answers one JSON line (what it printed, and the error it ended with).
RUNNER = r"""
import contextlib, io, json, sys, os
os.environ["TF_CPP_MIN_LOG_LEVEL"] = "3"
import numpy as np
import tensorflow.compat.v1 as tf
tf.disable_v2_behavior()
print("ready", flush=True)
for line in sys.stdin:
    path = line.strip()
    tf.reset_default_graph()
    np.random.seed(0)
    out = io.StringIO()
    try:
        with contextlib.redirect_stdout(out):
            exec(compile(open(path).read(), path, "exec"), {"__name__": "__main__"})
        error = None
    except BaseException as exc:
        error = type(exc).__name__
    print(json.dumps({"out": out.getvalue(), "error": error}), flush=True)
"""


@pytest.fixture(scope="module")
def tf1_runner():
    """``run(path) -> {"out": printed text, "error": exception name or None}``: runs the TF1 program at
    ``path`` in a fresh default graph of one TensorFlow process shared by the test module (TensorFlow
    is imported once, about 3-5 s, instead of once per program)."""
    pytest.importorskip("tensorflow.compat.v1")
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3")
    process = subprocess.Popen([sys.executable, "-u", "-c", RUNNER], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                               stderr=subprocess.DEVNULL, text=True, env=env)
    assert process.stdout.readline().strip() == "ready"

    def run(path: Path) -> dict:
        process.stdin.write(f"{path}\n")
        process.stdin.flush()
        return json.loads(process.stdout.readline())

    yield run
    process.stdin.close()
    process.wait(timeout=60)


@pytest.fixture(autouse=True)
def _no_freeze_left_behind():
    """A test that fails inside a SweepGuard trial leaves the guard busy and the process frozen
    (gc.freeze, graphguard.runtime.sweep_measure.FREEZE) until the guard is collected: give the process
    its collections back, so the next test starts as a fresh one would."""
    yield
    from graphguard.runtime.sweep_measure import FREEZE

    if FREEZE.frozen:
        FREEZE.busy.clear()
        FREEZE.thaw()


#: The tests that take longest (each 15-85 s of real TensorFlow, Keras, sweeps or demos; measured with
#: ``pytest --durations``), run first: pytest-xdist hands tests out in collection order, and one of
#: these started last kept a core busy while the other sat idle (longest-first scheduling).
SLOW_FIRST = (
    "tests/test_demo.py::test_run_demo_end_to_end",
    "tests/test_demo_tf2.py",
    "tests/test_sweep_engines.py::test_sklearn_grid_search_over_a_keras_classifier",
    "tests/test_guard_sessions.py::test_max_burst_ops_none_or_above_the_burst_tolerates_it_as_a_one_off",
    "tests/test_sweep_engines.py::test_keras_tuner_random_search",
    "tests/test_demo.py::test_run_sweep_demo_runs_the_optuna_pair_when_optuna_is_installed",
    "tests/test_demo.py",
    "tests/test_sweep.py::test_keras_leaking_kfold_reports_each_folds_model_in_the_list",
    "tests/test_sweep_engines.py::test_ray_tune_with_a_reused_worker",
    "tests/test_launcher.py::test_a_script_that_fails_is_no_pass_and_a_tf1_name_suggests_tf1",
    "tests/test_launcher.py::test_demo_incorrect_script_exits_non_zero_and_names_its_line",
    "tests/test_sweep_engines.py::test_optuna_example_pair_reports_the_storage_and_is_silent_when_fixed",
)


def pytest_collection_modifyitems(config, items):
    """Run :data:`SLOW_FIRST` first, in its order (a stable sort: the rest keep theirs)."""

    def rank(item) -> int:
        for index, prefix in enumerate(SLOW_FIRST):
            if item.nodeid == prefix or item.nodeid.startswith(prefix + "::") or item.nodeid.startswith(prefix + "["):
                return index
        return len(SLOW_FIRST)

    items.sort(key=rank)
