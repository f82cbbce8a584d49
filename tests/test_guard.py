"""GraphGuard against real TensorFlow (tf.compat.v1 graph mode). Every test builds its own tf.Graph.

Lines that must be reported are marked with a ``# <NAME>`` comment; ``_line(NAME)`` finds them, so
the assertions check exact file:line attribution.
"""

import importlib.util
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

tf = pytest.importorskip("tensorflow.compat.v1")
# Graph mode comes from each test's own `with tf.Graph().as_default()` (the `model` fixture), not from
# tf.disable_eager_execution(): that switch is process-wide and cannot be undone once a graph was
# used, so calling it at import would change every other test module collected in the same run.

from graphguard import GraphGrowthError, GraphGuard  # noqa: E402
from graphguard.runtime import guard as guard_module  # noqa: E402

HERE = Path(__file__).resolve()
_spec = importlib.util.spec_from_file_location("guard_helper_ops", HERE.parent / "guard_helper_ops.py")
helper = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(helper)


def _line(marker, path=HERE):
    hits = [n for n, text in enumerate(path.read_text().splitlines(), 1) if text.rstrip().endswith(f"# {marker}")]
    assert len(hits) == 1, (marker, hits)
    return hits[0]


@pytest.fixture
def model():
    """A fresh graph with a placeholder ``x``, a variable ``w`` and ``loss``; an initialized session."""
    graph = tf.Graph()
    with graph.as_default():
        x = tf.placeholder(tf.float32, [None], name="x")
        w = tf.get_variable("w", [], initializer=tf.constant_initializer(2.0))
        loss = tf.reduce_mean(x * w)
        init = tf.global_variables_initializer()
        sess = tf.Session(graph=graph)
        sess.run(init)
        yield graph, sess, x, w, loss
        sess.close()


FEED = np.array([1.0, 2.0, 3.0], dtype=np.float32)


# -- finalize mode -------------------------------------------------------------------------------


def test_finalize_names_op_type_user_line_and_step(model):
    graph, sess, x, _, loss = model
    with pytest.raises(GraphGrowthError) as info:
        with GraphGuard(sess) as guarded:
            for step in range(5):
                if step == 3:
                    doubled = tf.square(x)  # FINALIZE-LEAK
                guarded.run(loss, {x: FEED})
    err = info.value
    line = _line("FINALIZE-LEAK")
    assert isinstance(err, RuntimeError)
    assert (err.op_type, err.filename, err.lineno, err.step) == ("Square", str(HERE), line, 3)
    message = str(err)
    assert message.startswith("tried to add a new 'Square' op at step 3 (3 guarded runs done), at ")
    assert f"test_guard.py:{line}: doubled = tf.square(x)" in message
    assert "placeholder" in message and "before the loop" in message
    assert guarded.stats.steps == 3
    assert "doubled" not in locals()


def test_finalize_raises_at_creation_without_with_block(model):
    graph, sess, x, _, loss = model
    guarded = GraphGuard(sess)
    guarded.run(loss, {x: FEED})
    with pytest.raises(GraphGrowthError) as info:
        guarded.run(tf.reduce_sum(x), {x: FEED})  # INLINE-LEAK
    assert (info.value.lineno, info.value.step) == (_line("INLINE-LEAK"), 1)
    assert graph.finalized
    guarded.release()
    assert not graph.finalized


def test_finalize_correct_loop_returns_what_session_run_returns(model):
    graph, sess, x, w, loss = model
    fetch_sets = [
        loss,
        [loss, w],
        {"loss": loss, "pair": (w, loss)},
        {"nested": [{"w": w}], "op": w.initializer},
    ]
    expected = [sess.run(f, {x: FEED}) for f in fetch_sets]
    version = graph.version
    with GraphGuard(sess) as guarded:
        assert graph.finalized
        got = [guarded.run(f, feed_dict={x: FEED}) for f in fetch_sets]
        options = tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE)
        metadata = tf.RunMetadata()
        assert guarded.run(w, None, options, metadata) == pytest.approx(2.0)
        assert len(metadata.step_stats.dev_stats) > 0
    for e, g in zip(expected, got):
        assert type(e) is type(g)
    assert got[0] == pytest.approx(4.0)
    assert [float(v) for v in got[1]] == pytest.approx([4.0, 2.0])
    assert set(got[2]) == {"loss", "pair"} and isinstance(got[2]["pair"], tuple)
    assert got[3]["nested"][0]["w"] == pytest.approx(2.0) and got[3]["op"] is None
    assert guarded.stats.steps == 5
    assert graph.version == version


def test_unfinalized_after_exit_and_session_still_usable(model):
    graph, sess, x, _, loss = model
    with GraphGuard(sess) as guarded:
        guarded.run(loss, {x: FEED})
    assert not graph.finalized
    total = tf.reduce_sum(x)  # TF's own check is back and the graph is editable
    assert sess.run(total, {x: FEED}) == pytest.approx(6.0)
    graph.finalize()
    with pytest.raises(RuntimeError) as info:
        tf.reduce_max(x)
    assert type(info.value) is RuntimeError  # hook removed: TF's plain error, not ours
    assert str(info.value) == "Graph is finalized and cannot be modified."


@pytest.mark.parametrize("mode", ["finalize", "count"])
def test_finalized_before_stays_finalized(model, mode):
    graph, sess, x, _, loss = model
    graph.finalize()  # as MonitoredSession does
    with GraphGuard(sess, mode=mode) as guarded:
        guarded.run(loss, {x: FEED})
        with pytest.raises(GraphGrowthError):
            tf.reduce_max(x)
    assert graph.finalized
    guarded.close()
    assert sess._closed


def test_exit_converts_tf_error_when_hook_cannot_be_installed(model, monkeypatch):
    graph, sess, x, _, loss = model
    monkeypatch.setattr(GraphGuard, "_install_hook", lambda self: False)
    with pytest.raises(GraphGrowthError) as info:
        with GraphGuard(sess) as guarded:
            guarded.run(loss, {x: FEED})
            tf.reduce_max(x)  # FALLBACK-LEAK
    err = info.value
    assert type(err.__cause__) is RuntimeError
    assert (err.lineno, err.step) == (_line("FALLBACK-LEAK"), 1)
    assert not graph.finalized


# -- count mode ----------------------------------------------------------------------------------


def test_count_tolerates_warmup_and_raises_after_it(model):
    graph, sess, x, _, loss = model
    with pytest.raises(GraphGrowthError) as info:
        with GraphGuard(sess, mode="count") as guarded:
            assert not graph.finalized
            for step in range(4):
                if step == 0:
                    guarded.run(tf.reduce_max(x), {x: FEED})  # built before the first run: warm-up
                if step == 2:
                    total = tf.add(x, 1.0)  # COUNT-LEAK
                guarded.run(loss, {x: FEED})
    err = info.value
    line = _line("COUNT-LEAK")
    assert (err.op_type, err.filename, err.lineno, err.step, err.ops_added) == ("Const", str(HERE), line, 3, 2)
    assert str(err).startswith("+2 ops at step 3 (after the 1 warm-up step): Const, AddV2 at ")
    assert str(err).splitlines()[0].endswith(f"test_guard.py:{line}")
    assert guarded.stats.steps == 3


def test_count_attributes_ops_to_helper_module_line(model):
    graph, sess, x, _, loss = model
    guarded = GraphGuard(sess, mode="count", warmup_steps=2)
    with pytest.raises(GraphGrowthError) as info:
        for _ in range(5):
            guarded.run(helper.mean_of(x), {x: FEED})
    helper_path = Path(helper.__file__).resolve()
    err = info.value
    assert (err.filename, err.lineno, err.step) == (str(helper_path), _line("HELPER-LEAK", helper_path), 2)
    assert "return tf.reduce_mean(x)" in str(err)
    guarded.release()


def test_count_correct_loop_and_stats(model):
    graph, sess, x, _, loss = model
    with GraphGuard(sess, mode="count") as guarded:
        for _ in range(25):
            guarded.run(loss, {x: FEED})
    stats = guarded.stats
    assert (stats.steps, stats.ops, stats.ops_added_per_step) == (25, graph.version, 0.0)
    s = stats.step_seconds
    assert 0 < s.first and 0 < s.last and 0 < s.median < 1
    assert stats.rss_bytes > 10 * 2**20 and isinstance(stats.rss_growth_bytes, int)
    assert str(stats).startswith(f"25 guarded steps; graph has {graph.version} ops (0.00 ops per step")
    assert "MiB" in str(stats) and " ms" in str(stats)


def test_count_warn_keeps_running_and_stats_measure_the_leak(model):
    graph, sess, x, _, loss = model
    start = graph.version
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with GraphGuard(sess, mode="count", warmup_steps=0, on_growth="warn") as guarded:
            for _ in range(6):
                guarded.run(tf.add(x, 1.0), {x: FEED})  # WARN-LEAK
    assert graph.version == start + 12
    stats = guarded.stats
    assert (stats.steps, stats.ops, stats.ops_added_per_step) == (6, start + 12, 2.0)
    assert "2.00 ops per step" in str(stats)
    growth = [w for w in caught if issubclass(w.category, RuntimeWarning)]
    assert len(growth) == 1  # once per creating line, not once per step
    assert growth[0].filename == str(HERE) and growth[0].lineno == _line("WARN-LEAK")
    assert f"test_guard.py:{_line('WARN-LEAK')}" in str(growth[0].message)


def test_large_burst_is_sampled_per_op_type(model, monkeypatch):
    graph, sess, x, _, loss = model
    monkeypatch.setattr(guard_module, "_EXACT_OPS", 10)
    with pytest.raises(GraphGrowthError) as info:
        with GraphGuard(sess, mode="count") as guarded:
            guarded.run(loss, {x: FEED})
            consts = [tf.constant(float(i)) for i in range(30)]  # BURST
            guarded.run(loss, {x: FEED})
    first = str(info.value).splitlines()[0]
    assert first.startswith("+30 ops at step 1 (after the 1 warm-up step): 30 x Const at ")
    assert first.endswith(f"test_guard.py:{_line('BURST')}")


# -- surface -------------------------------------------------------------------------------------


def test_delegates_session_attributes(model):
    graph, sess, x, _, loss = model
    guarded = GraphGuard(sess)
    assert guarded.graph is sess.graph is graph
    assert guarded.sess_str == sess.sess_str
    assert any(d.device_type == "CPU" for d in guarded.list_devices())
    with pytest.raises(AttributeError):
        guarded.no_such_attribute
    guarded.close()
    assert sess._closed and not graph.finalized


def test_rss_is_none_without_psutil(model, monkeypatch):
    graph, sess, x, _, loss = model
    monkeypatch.setitem(sys.modules, "psutil", None)  # makes `import psutil` raise ImportError
    with GraphGuard(sess) as guarded:
        guarded.run(loss, {x: FEED})
    stats = guarded.stats
    assert stats.steps == 1 and stats.rss_bytes is None and stats.rss_growth_bytes is None
    assert "RSS not measured" in str(stats)


def test_rejects_bad_arguments(model):
    _, sess, *_ = model
    for kwargs in ({"mode": "strict"}, {"on_growth": "warn"}, {"mode": "count", "warmup_steps": -1}):
        with pytest.raises(ValueError):
            GraphGuard(sess, **kwargs)
