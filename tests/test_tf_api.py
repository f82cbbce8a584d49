"""The generated TensorFlow API data (graphguard/analysis/tf_api.json) and its loader.

The data is read without TensorFlow. Only the last test runs the generator, and only where
TensorFlow is installed: it checks that the committed file is what the installed TensorFlow gives.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import json
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from graphguard.analysis import tf_api

ROOT = Path(__file__).resolve().parents[1]

#: Names a TF1 training loop commonly calls, and what each builds. Both kinds: op-building and not.
COMMON = {
    # Ops (GG101).
    "tf.argmax": "op",
    "tf.reduce_mean": "op",
    "tf.reduce_sum": "op",
    "tf.equal": "op",
    "tf.cast": "op",
    "tf.nn.softmax": "op",
    "tf.nn.relu": "op",
    "tf.matmul": "op",
    "tf.layers.dense": "op",
    "tf.layers.conv2d": "op",
    "tf.nn.conv2d": "op",
    "tf.one_hot": "op",
    "tf.image.resize_images": "op",
    "tf.image.resize": "op",
    "tf.train.exponential_decay": "op",
    "tf.py_func": "op",
    "tf.random_normal": "op",
    "tf.math.reduce_mean": "op",
    "tf.nn.sparse_softmax_cross_entropy_with_logits": "op",
    "tf.losses.softmax_cross_entropy": "op",
    "tf.metrics.accuracy": "op",
    "tf.gradients": "op",
    "tf.train.shuffle_batch": "op",
    "tf.keras.backend.mean": "op",
    "tf.FIFOQueue": "op",
    # The other building effects (GG102-GG110).
    "tf.train.Saver": "saver",
    "tf.global_variables_initializer": "initializer",
    "tf.local_variables_initializer": "initializer",
    "tf.variables_initializer": "initializer",
    "tf.tables_initializer": "initializer",
    "tf.initialize_all_variables": "initializer",
    "tf.assign": "assign",
    "tf.assign_add": "assign",
    "tf.scatter_update": "assign",
    "tf.constant": "constant",
    "tf.convert_to_tensor": "constant",
    "tf.placeholder": "variable",
    "tf.placeholder_with_default": "variable",
    "tf.sparse_placeholder": "variable",
    "tf.get_variable": "variable",
    "tf.Variable": "variable",
    "tf.train.get_or_create_global_step": "variable",
    "tf.train.import_meta_graph": "graph_import",
    "tf.import_graph_def": "graph_import",
    "tf.saved_model.loader.load": "graph_import",
    "tf.data.Dataset.from_tensor_slices": "dataset",
    "tf.data.Dataset.range": "dataset",
    "tf.data.TFRecordDataset": "dataset",
    "tf.data.make_one_shot_iterator": "iterator",
    "tf.data.make_initializable_iterator": "iterator",
    "tf.summary.scalar": "summary",
    "tf.summary.histogram": "summary",
    "tf.summary.merge_all": "summary",
    "tf.summary.merge": "summary",
    "tf.summary.FileWriter": "file_writer",
    # Sessions, graphs and resets.
    "tf.Session": "session",
    "tf.InteractiveSession": "session",
    "tf.train.MonitoredTrainingSession": "session",
    "tf.train.SingularMonitoredSession": "session",
    "tf.Graph": "graph",
    "tf.reset_default_graph": "reset",
    "tf.keras.backend.clear_session": "reset",
    # Names that build nothing.
    "tf.train.AdamOptimizer": "none",
    "tf.train.GradientDescentOptimizer": "none",
    "tf.train.MomentumOptimizer": "none",
    "tf.train.ExponentialMovingAverage": "none",
    "tf.get_default_graph": "none",
    "tf.get_default_session": "none",
    "tf.train.latest_checkpoint": "none",
    "tf.train.get_checkpoint_state": "none",
    "tf.gfile.Exists": "none",
    "tf.gfile.GFile": "none",
    "tf.io.gfile.exists": "none",
    "tf.logging.info": "none",
    "tf.name_scope": "none",
    "tf.variable_scope": "none",
    "tf.device": "none",
    "tf.control_dependencies": "none",
    "tf.trainable_variables": "none",
    "tf.global_variables": "none",
    "tf.get_collection": "none",
    "tf.add_to_collection": "none",
    "tf.set_random_seed": "none",
    "tf.train.Coordinator": "none",
    "tf.train.SessionRunArgs": "none",
    "tf.train.SessionRunHook": "none",
    "tf.Summary": "none",
    "tf.train.Example": "none",
    "tf.ConfigProto": "none",
    "tf.TensorShape": "none",
    "tf.constant_initializer": "none",
    "tf.make_template": "none",
    "tf.keras.layers.Dense": "none",
}


@pytest.fixture(scope="module")
def api() -> tf_api.TFApi:
    return tf_api.load()


@pytest.mark.parametrize(("name", "effect"), sorted(COMMON.items()))
def test_common_name(api, name, effect):
    assert api.effect(name) == effect


def test_both_kinds_are_named():
    building = [n for n, e in COMMON.items() if e not in ("none", "session", "graph", "reset", "file_writer")]
    inert = [n for n, e in COMMON.items() if e == "none"]
    assert len(building) >= 40 and len(inert) >= 25


def test_unknown_names_and_kinds(api):
    assert api.effect("tf.no_such_function") is None
    assert api.effect("numpy.argmax") is None
    assert api.methods("no_such_kind") == frozenset()


def test_every_effect_is_described(api):
    assert set(api.names().values()) <= set(api.effects)


def test_reasons_cover_overridden_names(api):
    data = json.loads(tf_api.DATA_FILE.read_text())
    assert data["reasons"], "the generator's overrides carry reasons"
    for key, reason in data["reasons"].items():
        assert reason.strip() and "\n" not in reason, key
        if key.startswith("methods."):
            assert key.split(".")[1] in api.kinds(), key
        else:
            assert api.effect(key) is not None, key
    assert api.reason("tf.train.MonitoredTrainingSession")
    assert api.reason("tf.layers.dense")  # listed by hand: tf.compat.v1.layers needs tf_keras


@pytest.mark.parametrize(
    ("kind", "builds", "inert"),
    [
        ("tensor", {"__add__", "__radd__", "__mul__", "__getitem__", "__neg__", "__matmul__", "__lt__"}, {"eval", "get_shape", "set_shape", "__eq__"}),
        ("variable", {"assign", "assign_add", "assign_sub", "scatter_update", "read_value", "initialized_value", "__add__"}, {"load", "eval", "get_shape", "to_proto"}),
        ("optimizer", {"minimize", "apply_gradients", "compute_gradients"}, {"get_slot", "get_slot_names", "variables"}),
        ("dataset", {"map", "batch", "shuffle", "repeat", "prefetch", "make_one_shot_iterator", "make_initializable_iterator"}, {"options"}),
        ("iterator", {"get_next", "make_initializer"}, {"string_handle"}),
        ("ema", {"apply"}, {"average", "average_name", "variables_to_restore"}),
        ("queue", {"enqueue", "enqueue_many", "dequeue", "dequeue_many", "close", "size"}, set()),
        ("saver", set(), {"save", "restore", "export_meta_graph", "as_saver_def"}),
        ("file_writer", set(), {"add_summary", "add_graph", "flush", "close"}),
    ],
)
def test_methods(api, kind, builds, inert):
    methods = api.methods(kind)
    assert builds <= methods, builds - methods
    assert not inert & methods, inert & methods


def test_all_methods_is_the_union(api):
    assert api.all_methods() == frozenset().union(*(api.methods(k) for k in api.kinds()))
    assert {"minimize", "get_next", "assign"} <= api.all_methods()


def test_returns(api):
    assert api.returns("tf.train.AdamOptimizer") == "optimizer"
    assert api.returns("tf.get_variable") == "variable"
    assert api.returns("tf.data.Dataset.from_tensor_slices") == "dataset"
    assert api.returns("tf.train.Saver") == "saver"
    assert api.returns("tf.argmax") is None


def test_load_is_cached(api):
    assert tf_api.load() is api


def test_loads_without_tensorflow_and_fast():
    script = textwrap.dedent(
        """\
        import sys, time
        start = time.perf_counter()
        from graphguard.analysis import tf_api
        api = tf_api.load()
        elapsed = time.perf_counter() - start
        assert api.effect("tf.argmax") == "op"
        heavy = sorted(m for m in sys.modules if m.split(".")[0] in ("tensorflow", "keras", "numpy"))
        print(repr(heavy), elapsed)
        """
    )
    result = subprocess.run(
        [sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=60, check=True
    )
    heavy, elapsed = result.stdout.split()
    assert heavy == "[]"
    assert float(elapsed) < 0.5  # about 5 ms on a laptop; the bound only catches an accidental heavy import


def test_load_time(api):
    tf_api.load.cache_clear()
    try:
        start = time.perf_counter()
        tf_api.load()
        elapsed = time.perf_counter() - start
    finally:
        tf_api.load.cache_clear()
    assert elapsed < 0.1  # measured 2-4 ms


def _check_skip_reason() -> str | None:
    if importlib.util.find_spec("tensorflow") is None:
        return "tensorflow is not installed"
    data = json.loads(tf_api.DATA_FILE.read_text())
    installed = {
        "tensorflow": importlib.metadata.version("tensorflow"),
        "keras": importlib.metadata.version("keras") if importlib.util.find_spec("keras") else "",
    }
    committed = {"tensorflow": data["tensorflow_version"], "keras": data.get("keras_version", "")}
    if installed != committed:
        return f"the data was generated with {committed}, this environment has {installed}: regenerate it"
    return None


_SKIP_CHECK = _check_skip_reason()


@pytest.mark.skipif(_SKIP_CHECK is not None, reason=_SKIP_CHECK or "")
def test_committed_data_matches_installed_tensorflow():
    result = subprocess.run(
        [sys.executable, "tools/generate_tf_api.py", "--check"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert result.returncode == 0, result.stdout + result.stderr[-2000:]
