"""GraphGuardHook under tf.compat.v1.train.MonitoredTrainingSession (real TensorFlow, own graphs).

MonitoredSession finalizes the graph before the first step, so a leak shows at op creation: the hook
must turn TensorFlow's bare RuntimeError into the explained GraphGrowthError. (Estimator is gone from
TF 2.21, ``tf.compat.v1.estimator`` does not exist, so only the monitored sessions are tested.)
"""

from pathlib import Path

import numpy as np
import pytest

tf = pytest.importorskip("tensorflow.compat.v1")

from graphguard import GraphGrowthError  # noqa: E402
from graphguard.runtime import GraphGuardHook  # noqa: E402

HERE = Path(__file__).resolve()
FEED = np.array([1.0, 2.0, 3.0], dtype=np.float32)


def _line(marker):
    hits = [n for n, text in enumerate(HERE.read_text().splitlines(), 1) if text.rstrip().endswith(f"# {marker}")]
    assert len(hits) == 1, (marker, hits)
    return hits[0]


@pytest.fixture
def model():
    """A fresh default graph with ``x``, ``w`` and a train op that moves ``w`` by a fixed amount."""
    graph = tf.Graph()
    with graph.as_default():
        x = tf.placeholder(tf.float32, [None], name="x")
        w = tf.get_variable("w", [], initializer=tf.constant_initializer(2.0))
        global_step = tf.train.get_or_create_global_step()
        train_op = tf.assign_add(w, 1.0)
        step_op = tf.assign_add(global_step, 1)
        yield graph, x, w, tf.group(train_op, step_op)


def _session(hook, **kwargs):
    return tf.train.MonitoredTrainingSession(
        hooks=[hook], save_summaries_steps=None, save_checkpoint_secs=None, log_step_count_steps=None, **kwargs
    )


def test_hook_counts_steps_and_reports_a_clean_loop(model):
    graph, x, w, train_op = model
    hook = GraphGuardHook()
    with _session(hook) as sess:
        assert graph.finalized  # by Scaffold.finalize, before the first step
        for _ in range(30):
            sess.run(train_op, {x: FEED})
    report = hook.report()
    assert (report.mode, report.stats.steps, report.grew, report.stopped) == ("finalize", 30, False, None)
    assert report.stats.ops_added_per_step == 0.0 and report.stats.step_seconds.median > 0
    # end() removed the hook's stand-in; what stays is the graph's import recorder (graphguard.runtime.sessions),
    # which calls TensorFlow's own check.
    assert type(graph._check_not_finalized).__name__ == "_ImportRecorder"


def test_hook_turns_tf_error_into_graph_growth_error_and_saves(model, tmp_path):
    graph, x, w, train_op = model
    prefix = str(tmp_path / "hook.ckpt")
    hook = GraphGuardHook(checkpoint_path=prefix)  # the Saver Scaffold built before finalizing
    with pytest.raises(GraphGrowthError) as info:
        with _session(hook) as sess:
            for step in range(10):
                if step == 4:
                    tf.reduce_sum(x)  # HOOK-LEAK
                sess.run(train_op, {x: FEED})
    err = info.value
    assert isinstance(err, RuntimeError) and type(err) is not RuntimeError
    assert (err.op_type, err.filename, err.lineno, err.step) == ("Const", str(HERE), _line("HOOK-LEAK"), 4)
    assert "(tf.reduce_sum)" in str(err).splitlines()[0]
    assert "finalized by MonitoredSession (Scaffold.finalize) before the first step" in str(err)
    assert err.checkpoint == prefix and f"before stopping: {prefix}" in str(err)
    with graph.as_default(), tf.Session(graph=graph) as fresh:
        tf.train.Saver([w]).restore(fresh, prefix)  # graph un-finalized by MonitoredSession's close
        assert fresh.run(w) == pytest.approx(6.0)  # 2.0 + 4 steps
    assert hook.report().stopped == "GraphGrowthError at step 4"


def test_hook_callable_sees_the_report_before_the_error(model):
    graph, x, w, train_op = model
    seen = []
    hook = GraphGuardHook(on_growth=seen.append)
    with pytest.raises(GraphGrowthError):
        with _session(hook) as sess:
            sess.run(train_op, {x: FEED})
            sess.run(train_op, {x: FEED})
            tf.train.Saver()  # HOOK-SAVER
    (report,) = seen
    line = report.growth[0].groups[0].lines[0]
    assert (line.lineno, line.call, report.stats.steps) == (_line("HOOK-SAVER"), "tf.train.Saver", 2)


def test_hook_restarts_for_each_monitored_session(model):
    graph, x, w, train_op = model
    hook = GraphGuardHook()
    for runs in (3, 5):
        with _session(hook) as sess:
            for _ in range(runs):
                sess.run(train_op, {x: FEED})
        assert hook.report().stats.steps == runs


@pytest.mark.parametrize("kwargs", [{"saver": object()}, {"on_growth": "stop"}, {"warmup_steps": -1}, {"rss_every": 0}])
def test_hook_rejects_bad_options(kwargs):
    with pytest.raises(ValueError):
        GraphGuardHook(**kwargs)
