"""GraphGuard against real TensorFlow (tf.compat.v1 graph mode). Every test builds its own tf.Graph.

Lines that must be reported are marked with a ``# <NAME>`` comment; ``_line(NAME)`` finds them, so
the assertions check exact file:line attribution. Step-time tests drive the guard's clock from a
fake session (no timing assertions); RSS-limit tests use a fake psutil process with known figures.
"""

import importlib.util
import json
import re
import sys
import threading
import warnings
from pathlib import Path

import numpy as np

import pytest

tf = pytest.importorskip("tensorflow.compat.v1")
# Graph mode comes from each test's own `with tf.Graph().as_default()` (the `model` fixture), not from
# tf.disable_eager_execution(): that switch is process-wide and cannot be undone once a graph was
# used, so calling it at import would change every other test module collected in the same run.

from graphguard import GraphGrowthError, GraphGuard  # noqa: E402
from graphguard.runtime import (  # noqa: E402
    GraphGrowthWarning,
    GuardReport,
    RssGrowthError,
    SlowdownWarning,
)
from graphguard.runtime import attribution  # noqa: E402
from graphguard.runtime import guard as guard_module  # noqa: E402
from graphguard.runtime.report import where  # noqa: E402

HERE = Path(__file__).resolve()
_spec = importlib.util.spec_from_file_location("guard_helper_ops", HERE.parent / "guard_helper_ops.py")
helper = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(helper)


def _line(marker, path=HERE):
    hits = [n for n, text in enumerate(path.read_text().splitlines(), 1) if text.rstrip().endswith(f"# {marker}")]
    assert len(hits) == 1, (marker, hits)
    return hits[0]


def _at(marker, path=HERE):
    """The ``file:line`` text the guard prints for a marked line (relative to the current directory)."""
    return where(str(path), _line(marker, path))


def _traceback_below_test(err):
    """The frames of ``err``'s traceback below this test file's, as ``(file name, function)``, and its
    text as plain Python prints it (``traceback.format_exception``, what ``sys.excepthook`` shows)."""
    import traceback

    frames = traceback.extract_tb(err.__traceback__)
    ours = max(i for i, frame in enumerate(frames) if frame.filename == str(HERE))
    text = "".join(traceback.format_exception(type(err), err, err.__traceback__))
    return [(Path(frame.filename).name, frame.name) for frame in frames[ours + 1:]], text


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
    assert message.splitlines()[0].endswith(f"test_guard.py:{line} (tf.square)")
    assert f"test_guard.py:{line}: doubled = tf.square(x)" in message
    assert "placeholder" in message and "before the loop" in message
    assert guarded.stats.steps == 3
    assert "doubled" not in locals()
    # Issue 39: the traceback stops at the user's line: no TensorFlow or graphguard frame below it.
    below, text = _traceback_below_test(err)
    assert below == [] and "graphguard/runtime" not in text and "tensorflow" not in text.split("graphguard.Graph")[0]
    assert f'File "{HERE}", line {line}, in test_finalize_names_op_type_user_line_and_step' in text.split("graphguard.G")[0]


def test_finalize_report_lists_the_refused_op(model):
    graph, sess, x, _, loss = model
    guarded = GraphGuard(sess)
    guarded.run(loss, {x: FEED})
    with pytest.raises(GraphGrowthError) as info:
        tf.reduce_max(x)  # REFUSED
    report = guarded.report()
    assert isinstance(report, GuardReport) and report.grew and report.mode == "finalize"
    assert info.value.report.growth == report.growth
    plain = json.loads(json.dumps(report.as_dict()))  # plain data, as SweepReport.as_dict (issue 39)
    assert plain["grew"] is True and plain["mode"] == "finalize" and plain["growth"][0]["refused"] == "add a new 'Const' op"
    (growth,) = report.growth
    assert (growth.first_step, growth.steps, growth.ops_per_step, growth.refused) == (1, 1, 0, "add a new 'Const' op")
    (group,) = growth.groups
    assert group.op_types == (("Const", 1),)
    assert (group.lines[0].lineno, group.lines[0].call, group.lines[0].text) == (_line("REFUSED"), "tf.reduce_max", "tf.reduce_max(x)  # REFUSED")
    assert str(growth) == f"refused at step 1 (graph finalized, nothing added): Const at {_at('REFUSED')} (tf.reduce_max)"
    assert report.stopped == "GraphGrowthError at step 1"
    assert f"built once: {growth}" in str(report)  # in no loop: a fourteenth new user's trial read "growth:"
    guarded.release()


def test_finalize_raises_at_creation_without_with_block(model):
    graph, sess, x, _, loss = model
    guarded = GraphGuard(sess)
    guarded.run(loss, {x: FEED})
    with pytest.raises(GraphGrowthError) as info:
        guarded.run(tf.reduce_sum(x), {x: FEED})  # INLINE-LEAK
    assert (info.value.lineno, info.value.step) == (_line("INLINE-LEAK"), 1)
    # Without a with block, plain Python shows TensorFlow's own wrapper (its frames are filtered by TF)
    # and one guard frame, the one that raised again with the traceback cut (_refuse is gone).
    below = _traceback_below_test(info.value)[0]
    assert [frame for frame in below if frame[0] in ("interception.py", "guard.py", "growth.py")] == [("interception.py", "_check")]
    assert below[-1] == ("interception.py", "_check")
    assert graph.finalized
    guarded.release()
    assert not graph.finalized


def test_finalize_callable_gets_the_report_then_the_error_is_raised(model):
    graph, sess, x, _, loss = model
    seen = []
    with pytest.raises(GraphGrowthError):
        with GraphGuard(sess, on_growth=seen.append) as guarded:
            guarded.run(loss, {x: FEED})
            tf.reduce_min(x)  # CALLABLE-REFUSED
    (report,) = seen
    assert report.growth[0].groups[0].lines[0].lineno == _line("CALLABLE-REFUSED")
    assert report.stats.steps == 1


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
    report = guarded.report()
    assert not report.grew and report.growth == () and report.stopped is None
    # finalize mode has no warm-up (a tenth new user's trial read "after warm-up" there)
    assert "no graph growth (finalize mode: no op was added)" in str(report)


def test_unfinalized_after_exit_and_session_still_usable(model):
    graph, sess, x, _, loss = model
    with GraphGuard(sess) as guarded:
        guarded.run(loss, {x: FEED})
    assert not graph.finalized
    total = tf.reduce_sum(x)  # TF's own check is back and the graph is editable
    assert sess.run(total, {x: FEED}) == pytest.approx(6.0)
    assert guarded.run(total, {x: FEED}) == pytest.approx(6.0)  # released: straight to the session
    assert guarded.stats.steps == 1
    graph.finalize()
    with pytest.raises(RuntimeError) as info:
        tf.reduce_max(x)
    assert type(info.value) is RuntimeError  # interception removed: TF's plain error, not ours
    assert str(info.value) == "Graph is finalized and cannot be modified."


@pytest.mark.parametrize("mode", ["finalize", "count"])
def test_finalized_before_stays_finalized(model, mode):
    graph, sess, x, _, loss = model
    graph.finalize()  # as MonitoredSession does
    with GraphGuard(sess, mode=mode) as guarded:
        guarded.run(loss, {x: FEED})
        with pytest.raises(GraphGrowthError) as info:
            tf.reduce_max(x)
        assert "finalized before guarding started" in str(info.value)
    assert graph.finalized
    guarded.close()
    assert sess._closed


def test_exit_converts_tf_error_when_interception_cannot_be_installed(model, monkeypatch):
    graph, sess, x, _, loss = model
    monkeypatch.setattr(guard_module._Interceptor, "install", lambda self: False)
    with pytest.raises(GraphGrowthError) as info:
        with GraphGuard(sess) as guarded:
            guarded.run(loss, {x: FEED})
            tf.reduce_max(x)  # FALLBACK-LEAK
    err = info.value
    assert type(err.__cause__) is RuntimeError
    assert (err.lineno, err.step) == (_line("FALLBACK-LEAK"), 1)
    assert not graph.finalized


# -- count mode ----------------------------------------------------------------------------------
def test_count_without_interception_still_sees_growth_within_ten_steps(model, monkeypatch):
    graph, sess, x, _, loss = model
    monkeypatch.setattr(guard_module._Interceptor, "install", lambda self: False)
    with pytest.raises(GraphGrowthError) as info:
        with GraphGuard(sess, mode="count") as guarded:
            for step in range(30):
                if step in (3, 15):
                    tf.square(x)  # UNFLAGGED-LEAK
                guarded.run(loss, {x: FEED})
    # No flag from the interception: the version comparison every 10 steps (after steps 1, 11, 21, ...)
    # finds the first op after step 11 (a one-off so far) and the second after step 21, where the
    # growth is sustained (2 steps), still attributed to its line.
    assert (info.value.step, info.value.lineno, info.value.ops_added) == (21, _line("UNFLAGGED-LEAK"), 1)
    assert [e.first_step for e in info.value.earlier] == [11]




def test_count_tolerates_warmup_and_raises_after_it(model):
    graph, sess, x, _, loss = model
    with pytest.raises(GraphGrowthError) as info:
        with GraphGuard(sess, mode="count", min_growth_steps=1) as guarded:
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
    assert str(err).splitlines()[0] == f"+2 ops at step 3: Const, AddV2 at {_at('COUNT-LEAK')} (tf.add)"
    assert _traceback_below_test(err)[0] == []  # cut at the user's `guarded.run(...)` line by the with block
    assert f"test_guard.py:{line}: total = tf.add(x, 1.0)" in str(err)
    assert guarded.stats.steps == 3
    assert err.report.warmup_ops == 2 and err.report.growth == (err.growth,)


def test_lazy_ops_within_warmup_are_tolerated(model):
    graph, sess, x, _, loss = model
    cache = {}
    start = graph.version
    with GraphGuard(sess, mode="count", warmup_steps=3) as guarded:
        for step in range(10):
            if step < 3 and step not in cache:  # Keras-style lazy build in the first iterations
                cache[step] = tf.reduce_sum(x * float(step))
            guarded.run([loss, cache[min(step, 2)]], {x: FEED})
    report = guarded.report()
    assert not report.grew and report.warmup_ops == graph.version - start == 12 and report.stats.steps == 10
    assert "(12 ops built during warm-up or within max_new_ops_per_step)" in str(report)


def test_max_new_ops_per_step_tolerates_small_steps(model):
    graph, sess, x, _, loss = model
    with pytest.raises(GraphGrowthError) as info:
        with GraphGuard(sess, mode="count", max_new_ops_per_step=2, min_growth_steps=1) as guarded:
            guarded.run(loss, {x: FEED})
            tf.add(x, 1.0)  # +2 ops: tolerated
            guarded.run(loss, {x: FEED})
            tf.reduce_sum(tf.add(x, 2.0))  # +4 ops: growth
            guarded.run(loss, {x: FEED})
    assert info.value.ops_added == 4 and info.value.step == 2
    assert info.value.report.tolerated_ops == 2


def test_count_attributes_ops_to_helper_module_line(model):
    graph, sess, x, _, loss = model
    guarded = GraphGuard(sess, mode="count", warmup_steps=2)
    with pytest.raises(GraphGrowthError) as info:
        for _ in range(5):
            guarded.run(helper.mean_of(x), {x: FEED})  # HELPER-CALL
    helper_path = Path(helper.__file__).resolve()
    err = info.value
    # Ops added at step 2 are a one-off until step 3 adds them again: sustained growth, both named.
    assert (err.filename, err.lineno, err.step) == (str(helper_path), _line("HELPER-LEAK", helper_path), 3)
    assert [e.first_step for e in err.earlier] == [2]
    assert _traceback_below_test(err)[0] == [("guard.py", "run")]  # no with block: the one frame that raised again
    (pattern,) = err.report.growth
    assert (pattern.first_step, pattern.last_step, pattern.steps) == (2, 3, 2)
    assert "return tf.reduce_mean(x)" in str(err)
    (group,) = err.growth.groups
    assert group.op_types == (("Const", 1), ("Mean", 1))
    # The helper module has no loop: the call in the loop is named too (a new user's trial).
    assert str(group) == (f"Const, Mean at {_at('HELPER-LEAK', helper_path)} (tf.reduce_mean), "
                          f"called from {_at('HELPER-CALL')}")
    guarded.release()


def test_report_aggregates_steps_as_in_the_issue(model):
    """The issue's format: ``+N ops/step since step S: ... at file:line; ... (tf.train.Saver)``."""
    graph, sess, x, w, loss = model
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", GraphGrowthWarning)
        with GraphGuard(sess, mode="count", warmup_steps=2, on_growth="warn") as guarded:
            for step in range(6):
                mean = tf.reduce_mean(tf.constant([1.0, 2.0, 3.0]) * x)  # ISSUE-MEAN
                saver = tf.train.Saver([w])  # ISSUE-SAVER
                guarded.run(mean, {x: FEED})
    (growth,) = guarded.report().growth
    assert (growth.first_step, growth.last_step, growth.steps) == (2, 5, 4)
    mean_group, saver_group = growth.groups
    assert mean_group.op_types == (("Const", 2), ("Mul", 1), ("Mean", 1))
    assert dict(saver_group.op_types)["SaveV2"] == 1
    assert growth.ops_per_step == mean_group.ops + saver_group.ops == 4 + saver_group.ops
    text = str(growth)
    assert text == (
        f"+{growth.ops_per_step} ops/step since step 2 (4 steps to step 5): "
        f"2 x Const, Mul, Mean at {_at('ISSUE-MEAN')} (tf.reduce_mean); "
        f"{str(saver_group).split(' at ')[0]} at {_at('ISSUE-SAVER')} (tf.train.Saver)"
    )
    assert growth.ops == 4 * growth.ops_per_step


def test_growth_every_n_steps_is_reported_as_such_not_per_step(model):
    """Issue 39: a Saver built every 5th step (an epoch's checkpoint) is ``+N ops every 5 session runs``, in the
    report and in the error's first line, not ``+N ops/step``."""
    graph, sess, x, w, loss = model
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", GraphGrowthWarning)
        with GraphGuard(sess, mode="count", on_growth="warn") as guarded:
            for step in range(1, 23):
                guarded.run(loss, {x: FEED})
                if step % 5 == 0:
                    saver = tf.train.Saver([w])  # EPOCH-SAVER
    (growth,) = guarded.report().growth
    assert (growth.first_step, growth.last_step, growth.steps, growth.min_gap, growth.max_gap) == (5, 20, 4, 5, 5)
    assert growth.every == "5 session runs" and growth.rate() == f"+{growth.ops_per_step} ops every 5 session runs"
    assert str(growth).startswith(f"+{growth.ops_per_step} ops every 5 session runs since step 5 (4 times, to step 20): ")
    assert "ops/step" not in str(guarded.report())

    with pytest.raises(GraphGrowthError) as info:
        with GraphGuard(sess, mode="count") as guarded:
            for step in range(1, 23):
                guarded.run(loss, {x: FEED})
                if step % 5 == 0:
                    saver = tf.train.Saver([w])  # EPOCH-SAVER-RAISE
    first = str(info.value).splitlines()[0]
    # two events are one gap, no cadence yet (a sixth new user's trial): their steps and spacing
    assert re.match(r"\+\d+ ops at steps 5 and 10 \(5 session runs apart\): ", first), first
    assert (info.value.step, info.value.lineno) == (10, _line("EPOCH-SAVER-RAISE")) and saver is not None


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
    assert isinstance(stats.rss_bytes_per_step, float)
    assert str(stats).startswith(f"25 guarded steps; graph has {graph.version} ops (0.00 ops per step")
    assert "MiB" in str(stats) and " ms" in str(stats) and "per step)" in str(stats)


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
    growth = [w for w in caught if issubclass(w.category, GraphGrowthWarning)]
    assert len(growth) == 1  # once per creating line, not once per step
    assert issubclass(GraphGrowthWarning, RuntimeWarning)
    assert growth[0].filename == str(HERE) and growth[0].lineno == _line("WARN-LEAK")
    assert f"test_guard.py:{_line('WARN-LEAK')}" in str(growth[0].message)
    (pattern,) = guarded.report().growth
    assert str(pattern) == f"+2 ops/step since step 0 (6 steps to step 5): Const, AddV2 at {_at('WARN-LEAK')} (tf.add)"


def test_count_tolerates_ops_built_once_after_the_loop(model, tmp_path):
    """The MNIST tutorial shape: train, then build an evaluation op and a Saver once, run each once."""
    graph, sess, x, w, loss = model
    with GraphGuard(sess, mode="count") as guarded:  # raises by default
        for _ in range(20):
            guarded.run(loss, {x: FEED})
        accuracy = tf.reduce_mean(tf.cast(tf.equal(x, 2.0), tf.float32))  # AFTER-LOOP-EVAL
        assert guarded.run(accuracy, {x: FEED}) == pytest.approx(np.mean(np.equal(FEED, 2.0)))
        saver = tf.train.Saver([w])  # AFTER-LOOP-SAVER
        saver.save(sess, str(tmp_path / "model.ckpt"))
    report = guarded.report()
    assert not report.grew and report.growth == () and report.stopped is None
    (one_off,) = report.one_off  # the Saver's ops were built after the last guarded run
    assert one_off.first_step == 20 and one_off.steps == 1
    assert {line.lineno for g in one_off.groups for line in g.lines} == {_line("AFTER-LOOP-EVAL")}
    text = str(report)
    assert "no sustained graph growth after warm-up" in text
    assert f"one-off (tolerated: its lines added ops on fewer than min_growth_steps=2 steps): +{one_off.ops_per_step} ops at step 20" in text
    assert (tmp_path / "model.ckpt.index").is_file()


def test_count_growth_on_two_steps_raises_naming_both_lines(model):
    graph, sess, x, _, loss = model
    with pytest.raises(GraphGrowthError) as info:
        with GraphGuard(sess, mode="count") as guarded:
            for step in range(10):
                if step == 2:
                    tf.negative(x)  # ONE-OFF
                if step >= 5:  # a loop body that leaks on two lines, from step 5 on
                    tf.reduce_max(x)  # FIRST-LINE
                    tf.square(x)  # SECOND-LINE
                guarded.run(loss, {x: FEED})
    err = info.value
    # Step 5's ops are held as a one-off; step 6 adds them again: sustained, raised at step 6.
    assert (err.step, err.lineno, err.op_type, err.ops_added) == (6, _line("FIRST-LINE"), "Const", 3)
    assert [e.first_step for e in err.earlier] == [5]
    message = str(err)
    first = f"Const, Max at {_at('FIRST-LINE')} (tf.reduce_max); Square at {_at('SECOND-LINE')} (tf.square)"
    assert message.splitlines()[0] == f"+3 ops at step 6: {first}"
    # the held event is named too, in one line when its lines are the ones above (a fifth new user's trial)
    assert "Growth also at an earlier step (5), held as a one-off until growth came again" in message
    assert "tf.reduce_max(x)  # FIRST-LINE" in message and "tf.square(x)  # SECOND-LINE" in message
    report = err.report
    (growth,) = report.growth
    assert report.grew and (growth.first_step, growth.last_step, growth.steps, growth.ops) == (5, 6, 2, 6)
    (one_off,) = report.one_off  # the unrelated single burst stays a tolerated one-off
    assert one_off.first_step == 2 and one_off.groups[0].lines[0].lineno == _line("ONE-OFF")
    assert report.stopped == "GraphGrowthError at step 6" and guarded.stats.steps == 6


def test_min_growth_steps_option(model):
    graph, sess, x, _, loss = model
    with GraphGuard(sess, mode="count", min_growth_steps=3) as guarded:
        for step in range(6):
            if step in (2, 4):
                tf.square(x)
            guarded.run(loss, {x: FEED})
    report = guarded.report()
    assert not report.grew and [e.first_step for e in report.one_off] == [2, 4]


def test_count_callable_gets_every_event_and_the_run_goes_on(model):
    graph, sess, x, _, loss = model
    reports = []
    with GraphGuard(sess, mode="count", on_growth=reports.append) as guarded:
        for step in range(5):
            guarded.run(tf.square(x) if step else loss, {x: FEED})  # CALLABLE-LEAK
    # The first event (step 1) is held as a one-off; from step 2 on the growth is sustained and the
    # callable gets every event, the held one included in the pattern.
    assert len(reports) == 3 and guarded.stats.steps == 5
    assert [r.growth[0].steps for r in reports] == [2, 3, 4]
    assert reports[0].growth[0].first_step == 1 and reports[0].one_off == ()
    assert reports[-1].growth[0].groups[0].lines[0].lineno == _line("CALLABLE-LEAK")
    assert all(r.stopped is None for r in reports)


def test_a_loop_over_a_handful_of_cases_is_not_growth_and_a_longer_or_repeated_one_is(model):
    # Issue 40's new-user trial: an op per dtype in a 4-case loop failed a TensorFlow-style test, with a
    # fix that cannot apply (a placeholder has one dtype). runtime/bounded.py reads the loop's count.
    graph, sess, x, _, loss = model
    with graph.as_default():
        with GraphGuard(sess, mode="count") as guarded:
            for dtype in (tf.float16, tf.float32, tf.float64, tf.int32):
                case = tf.constant([-1, 0, 2], dtype=dtype)
                guarded.run(tf.nn.relu(case))
        assert guarded.report().growth == ()
        with pytest.raises(GraphGrowthError):
            with GraphGuard(sess, mode="count") as guarded:
                for epoch in range(3):  # the same four cases again every epoch: growth
                    for dtype in (tf.float16, tf.float32, tf.float64, tf.int32):
                        guarded.run(tf.nn.relu(tf.constant([1], dtype=dtype)))


def test_large_burst_is_sampled_per_op_type(model, monkeypatch):
    graph, sess, x, _, loss = model
    monkeypatch.setattr(attribution, "EXACT_OPS", 10)
    with pytest.raises(GraphGrowthError) as info:
        with GraphGuard(sess, mode="count", min_growth_steps=1) as guarded:
            guarded.run(loss, {x: FEED})
            consts = [tf.constant(float(i)) for i in range(30)]  # BURST
            guarded.run(loss, {x: FEED})
    first = str(info.value).splitlines()[0]
    assert first == f"+30 ops at step 1: 30 x Const at {_at('BURST')} (tf.constant)"


# -- nothing lost: a checkpoint before the guard stops a run -------------------------------------


def _restored_w(graph, saver, path, w):
    with graph.as_default(), tf.Session(graph=graph) as fresh:
        saver.restore(fresh, path)
        return fresh.run(w)


@pytest.mark.parametrize("mode", ["count", "finalize"])
def test_checkpoint_saved_before_raising(model, tmp_path, mode):
    graph, sess, x, w, loss = model
    increment = tf.assign_add(w, 1.0)
    saver = tf.train.Saver([w])
    prefix = str(tmp_path / "ckpt" / "stopped.ckpt")  # regression: a missing parent folder lost the checkpoint
    with pytest.raises(GraphGrowthError) as info:
        with GraphGuard(sess, mode, saver=saver, checkpoint_path=prefix) as guarded:
            for step in range(5):
                if step == 3 or (mode == "count" and step == 2):  # count mode: growth on 2 steps is sustained
                    tf.square(x)
                guarded.run(increment)
    err = info.value
    assert err.checkpoint == prefix and err.report.checkpoint == prefix
    assert f"Saved a checkpoint of the variables at step 3 before stopping: {prefix}" in str(err)
    assert (tmp_path / "ckpt" / "stopped.ckpt.index").is_file()
    assert _restored_w(graph, saver, prefix, w) == pytest.approx(5.0)  # 2.0 + 3 steps
    assert f"checkpoint saved before stopping: {prefix}" in str(guarded.report())


def test_checkpoint_failure_is_reported_and_the_error_still_raised(model, tmp_path):
    graph, sess, x, w, loss = model
    saver = tf.train.Saver([w])
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    with pytest.raises(GraphGrowthError) as info:
        with GraphGuard(sess, "count", min_growth_steps=1, saver=saver, checkpoint_path=str(blocker / "ckpt")) as guarded:
            guarded.run(loss, {x: FEED})
            tf.square(x)
            guarded.run(loss, {x: FEED})
    assert info.value.checkpoint is None
    assert f"Could not save a checkpoint to {blocker / 'ckpt'}" in str(info.value)


# -- step time: SlowdownWarning, driven by a fake clock --------------------------------------------


class _Clock:
    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now


class _TimedSession:
    """A session stand-in whose run takes ``durations[step]`` seconds of the fake clock."""

    def __init__(self, clock, durations):
        self.graph = tf.Graph()
        self.clock = clock
        self.durations = durations
        self.calls = 0

    def run(self, fetches, feed_dict=None, options=None, run_metadata=None):
        self.clock.now += self.durations[self.calls]
        self.calls += 1
        return fetches


def _run_timed(monkeypatch, durations, **options):
    clock = _Clock()
    monkeypatch.setattr(guard_module, "_clock", clock)
    sess = _TimedSession(clock, durations)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with GraphGuard(sess, mode="count", rss_every=None, **options) as guarded:
            for _ in range(len(durations)):
                guarded.run(None)  # TIMED-RUN
    return guarded.report(), [w for w in caught if issubclass(w.category, SlowdownWarning)]


def test_slowdown_warning_reports_both_medians(monkeypatch):
    ms = 1e-3
    # step 1 slow (executor creation), 2-40 at 1 ms, 41-80 at 4 ms, 81-120 at 12 ms
    durations = [50 * ms] + [1 * ms] * 39 + [4 * ms] * 40 + [12 * ms] * 40
    report, caught = _run_timed(monkeypatch, durations)
    first, second = report.slowdowns
    assert (first.step, first.baseline_steps, first.recent_steps) == (51, (2, 21), (32, 51))
    assert first.baseline_seconds == pytest.approx(1 * ms) and first.recent_seconds == pytest.approx(4 * ms)
    assert first.ratio == pytest.approx(4.0) and first.ops_added == 0
    assert (second.step, second.ratio) == (91, pytest.approx(12.0))  # the next warning needs 9x
    assert len(caught) == 2
    message = str(caught[0].message)
    assert message.startswith("step time 4 ms (median of steps 32-51) is 4.0x the 1 ms median of steps 2-21")
    assert "the graph did not grow" in message and "Load average" in message
    assert caught[0].filename == str(HERE) and caught[0].lineno == _line("TIMED-RUN")
    assert "slowdown: step time 4 ms" in str(report)


def test_slowdown_judged_per_fetch_when_runs_alternate(monkeypatch):
    """A loop that alternates a training run (1 ms, then 12 ms from step 200) with an evaluation run
    (20 ms throughout): a median over every run mixes the two; each fetch is judged on its own samples,
    and the warning names the training run's line, not the line that happened to end the window."""
    ms = 1e-3
    steps = 400
    durations = []
    for step in range(1, steps + 1):
        training = step % 2 == 1
        durations.append((12 * ms if step > 200 else 1 * ms) if training else 20 * ms)
    clock = _Clock()
    monkeypatch.setattr(guard_module, "_clock", clock)
    sess = _TimedSession(clock, durations)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with GraphGuard(sess, mode="count", rss_every=None) as guarded:
            for step in range(1, steps + 1):
                if step % 2 == 1:
                    guarded.run("GradientDescent_3")  # TRAIN-RUN
                else:
                    guarded.run(["eval/Mean_2:0", "eval/accuracy:0"])  # EVAL-RUN
    slow = [w for w in caught if issubclass(w.category, SlowdownWarning)]
    slowdowns = guarded.report().slowdowns
    assert {(s.fetch, s.lineno) for s in slowdowns} == {("GradientDescent", _line("TRAIN-RUN"))}
    assert slowdowns[0].baseline_seconds == pytest.approx(1 * ms) and slowdowns[0].recent_steps[1] > 200
    assert slowdowns[-1].recent_seconds == pytest.approx(12 * ms) and slowdowns[-1].runs == 10
    assert len(slow) == len(slowdowns) and {w.lineno for w in slow} == {_line("TRAIN-RUN")}
    assert str(slow[-1].message).startswith("step time of GradientDescent runs at ")
    assert "12 ms (median of 10 sampled in steps" in str(slow[-1].message)


def test_alternating_runs_with_flat_times_give_no_slowdown(monkeypatch):
    """Training 1 ms and evaluation 30 ms, alternating, neither slower over time: no warning (a median
    over every run would swing between the two as the window's parity changes)."""
    ms = 1e-3
    durations = [1 * ms if step % 2 else 30 * ms for step in range(1, 401)]
    clock = _Clock()
    monkeypatch.setattr(guard_module, "_clock", clock)
    sess = _TimedSession(clock, durations)
    with GraphGuard(sess, mode="count", rss_every=None) as guarded:
        for step in range(1, 401):
            guarded.run("train_op" if step % 2 else "eval_op")
    assert guarded.report().slowdowns == ()


@pytest.mark.parametrize(
    "durations",
    [
        [0.3e-3] * 21 + [0.9e-3] * 60,  # 3x, but under 1 ms slower: noise on a loaded machine
        [1e-3, 2.5e-3] * 40,  # jitter up to 2.5x around a flat median
        [20e-3] * 21 + [50e-3] * 60,  # 2.5x: under the default factor of 3
    ],
    ids=["small-steps", "jitter", "under-factor"],
)
def test_no_slowdown_warning_on_noise(monkeypatch, durations):
    report, caught = _run_timed(monkeypatch, durations)
    assert report.slowdowns == () and caught == []


def test_slowdown_factor_option_and_off(monkeypatch):
    durations = [20e-3] * 21 + [50e-3] * 60
    assert len(_run_timed(monkeypatch, durations, slowdown_factor=2.0)[0].slowdowns) == 1
    assert _run_timed(monkeypatch, [1e-3] * 21 + [90e-3] * 60, slowdown_factor=None)[0].slowdowns == ()


# -- memory: RSS sampled every N steps, max_rss_growth ----------------------------------------------


class _FakeProcess:
    """psutil.Process stand-in: RSS starts at 100 MiB and grows by ``step`` bytes per read."""

    def __init__(self, step):
        self.reads = 0
        self.step = step

    def memory_info(self):
        self.reads += 1
        return type("mem", (), {"rss": 100 * 2**20 + (self.reads - 1) * self.step})()


def test_rss_sampled_every_n_steps(model, monkeypatch):
    graph, sess, x, _, loss = model
    monkeypatch.setattr(guard_module, "_RSS_SECONDS", 0.0)
    guarded = GraphGuard(sess, mode="count", rss_every=5, slowdown_factor=None)
    guarded._core._process = fake = _FakeProcess(2**20)
    for _ in range(21):
        guarded.run(loss, {x: FEED})
    assert fake.reads == 5  # step 1 (baseline), 6, 11, 16, 21
    stats = guarded.stats  # one more read, at step 21
    assert (stats.rss_growth_bytes, stats.rss_bytes_per_step) == (5 * 2**20, 5 * 2**20 / 20)
    assert "+6.0 MiB since warm-up (+307.2 KiB per step)" in str(guarded.report())  # and one more read
    guarded.release()


def test_rss_time_gate_skips_samples_within_a_second(model):
    graph, sess, x, _, loss = model
    guarded = GraphGuard(sess, mode="count", rss_every=1, slowdown_factor=None)
    guarded._core._process = fake = _FakeProcess(0)
    for _ in range(30):
        guarded.run(loss, {x: FEED})
    assert fake.reads < 5  # 30 fast steps, at most one read a second after the baseline
    guarded.release()


def test_max_rss_growth_stops_with_a_checkpoint(model, monkeypatch, tmp_path):
    graph, sess, x, w, loss = model
    monkeypatch.setattr(guard_module, "_RSS_SECONDS", 0.0)
    increment = tf.assign_add(w, 1.0)
    saver = tf.train.Saver([w])
    prefix = str(tmp_path / "rss.ckpt")
    guarded = GraphGuard(sess, mode="count", rss_every=1, max_rss_growth=25 * 2**20, saver=saver, checkpoint_path=prefix)
    guarded._core._process = _FakeProcess(10 * 2**20)
    with pytest.raises(RssGrowthError) as info:
        for _ in range(10):
            guarded.run(increment)
    err = info.value
    assert (err.step, err.rss_growth_bytes, err.limit_bytes) == (4, 30 * 2**20, 25 * 2**20)
    assert str(err).startswith("RSS grew by 30.0 MiB since step 1 (100.0 MiB -> 130.0 MiB, +10.0 MiB per step)")
    assert "The graph did not grow" in str(err)
    assert err.checkpoint == prefix and _restored_w(graph, saver, prefix, w) == pytest.approx(6.0)
    assert err.report.stopped == "RssGrowthError at step 4"
    guarded.release()


# -- threads ---------------------------------------------------------------------------------------


def test_threads_count_every_step_and_report_growth_once(model):
    graph, sess, x, _, loss = model
    events = []
    # Four threads share two cores: step times rise with contention, a real slowdown but not this test.
    # min_growth_steps=1: every event is acted on, so the callable shows each op reported once.
    guarded = GraphGuard(
        sess, mode="count", min_growth_steps=1, on_growth=events.append, rss_every=None, slowdown_factor=None
    )
    coord = tf.train.Coordinator()
    barrier = threading.Barrier(5)

    def worker():
        barrier.wait()
        for _ in range(150):
            guarded.run(loss, {x: FEED})

    threads = [threading.Thread(target=worker) for _ in range(4)]
    for t in threads:
        t.start()
    barrier.wait()
    while guarded.stats.steps < 20:
        pass
    tf.add(x, 3.0)  # built while four threads run  # THREAD-LEAK
    coord.join(threads)
    for _ in range(10):  # in case the threads finished first; the 10-step version check at the latest
        guarded.run(loss, {x: FEED})
    report = guarded.report()
    assert report.stats.steps == 610
    # Every op reported exactly once: in one event, or split over two steps when another thread ran
    # between TensorFlow creating the Const and the AddV2.
    assert sum(g.ops for g in report.growth) == 2 and 1 <= len(events) <= 2
    assert {line.lineno for g in report.growth for group in g.groups for line in group.lines} == {_line("THREAD-LEAK")}
    guarded.release()


# -- a real distributed target: tf.train.Server on loopback ----------------------------------------


@pytest.fixture(scope="module")
def server():
    return tf.train.Server.create_local_server()


@pytest.mark.parametrize("mode", ["finalize", "count"])
def test_loopback_server_target(server, mode):
    graph = tf.Graph()
    with graph.as_default():
        x = tf.placeholder(tf.float32, [None])
        w = tf.get_variable(f"w_server_{mode}", [], initializer=tf.constant_initializer(3.0))
        loss = tf.reduce_mean(x * w)
        with tf.Session(server.target, graph=graph) as sess:
            assert tf.compat.as_str(sess.sess_str).startswith("grpc://localhost:")
            sess.run(w.initializer)
            with pytest.raises(GraphGrowthError) as info:
                with GraphGuard(sess, mode) as guarded:
                    for step in range(4):
                        if step == 2 or (mode == "count" and step == 3):  # count mode: sustained growth
                            tf.negative(x)  # SERVER-LEAK
                        assert guarded.run(loss, {x: FEED}) == pytest.approx(6.0)
    stop = 2 if mode == "finalize" else 3
    assert (info.value.lineno, info.value.step) == (_line("SERVER-LEAK"), stop)
    assert guarded.stats.steps == stop


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
    with pytest.raises(ValueError, match="psutil"):
        GraphGuard(sess, max_rss_growth=2**30)


@pytest.mark.parametrize(
    "kwargs",
    [
        {"mode": "strict"},
        {"on_growth": "warn"},
        {"on_growth": "ignore"},
        {"mode": "count", "warmup_steps": -1},
        {"mode": "count", "max_new_ops_per_step": -1},
        {"mode": "count", "min_growth_steps": 0},
        {"slowdown_factor": 1.0},
        {"rss_every": 0},
        {"max_rss_growth": 0},
        {"checkpoint_path": "/tmp/x"},
        {"saver": object()},
    ],
)
def test_rejects_bad_arguments(model, kwargs):
    graph, sess, *_ = model
    with pytest.raises(ValueError):
        GraphGuard(sess, **kwargs)
    assert not graph.finalized


def test_an_aliased_tensorflow_function_is_named_as_written_with_its_fix(model):
    # tf.mod is TensorFlow's floor_mod under another name: the spelling matches no function the op's
    # stack went through, so the call is resolved through this module's globals (it was unnamed, and
    # the fix said "operator, GG106" as for `loss * 2`).
    graph, sess, x, _, loss = model
    with pytest.raises(GraphGrowthError) as info:
        with GraphGuard(sess, mode="count") as guarded:
            for step in range(4):
                guarded.run(tf.mod(x, 3.0), {x: FEED})  # ALIAS-LEAK
    err = info.value
    assert str(err).splitlines()[0].endswith(f"FloorMod at {_at('ALIAS-LEAK')} (tf.mod)")
    assert f"{_at('ALIAS-LEAK')} (op, GG101)" in str(err)


def _evaluate(guarded, x):
    return guarded.run(tf.reduce_sum(x), {x: FEED})  # EVAL-HELPER


def test_a_helper_called_for_validation_then_test_after_training_is_two_one_offs(model):
    # Counted per line and call path: the same helper line reached from two call sites once each is
    # not a loop (it was growth at its second call, min_growth_steps=2, with the advice "build it once
    # before the loop" where there is no loop).
    graph, sess, x, _, loss = model
    with GraphGuard(sess, mode="count") as guarded:
        for step in range(5):
            guarded.run(loss, {x: FEED})
        _evaluate(guarded, x)  # validation
        _evaluate(guarded, x)  # test
    report = guarded.report()
    assert not report.grew and len(report.one_off) == 2


def test_the_same_helper_called_from_a_loop_is_growth(model):
    graph, sess, x, _, loss = model
    with pytest.raises(GraphGrowthError) as info:
        with GraphGuard(sess, mode="count") as guarded:
            _evaluate(guarded, x)  # once before: another path, a one-off
            for step in range(5):
                guarded.run(loss, {x: FEED})
                _evaluate(guarded, x)
    assert info.value.lineno == _line("EVAL-HELPER")


def test_warn_mode_warns_once_per_line_across_sessions_on_one_graph():
    graph = tf.Graph()
    with graph.as_default():
        x = tf.placeholder(tf.float32, [])
        with pytest.warns(GraphGrowthWarning) as caught:
            for request in range(8):
                doubled = x * 2.0  # one op per session: growth across sessions from session 4
                with tf.Session() as sess:
                    GraphGuard(sess, mode="count", on_growth="warn", warmup_steps=0).run(doubled, {x: 1.0})
    assert len([w for w in caught if issubclass(w.category, GraphGrowthWarning)]) == 1


@pytest.mark.parametrize("sess", [None, "sess", 3])
def test_something_other_than_a_session_is_a_type_error_saying_what_to_pass(sess):
    with pytest.raises(TypeError, match="pass a tf.compat.v1.Session or MonitoredSession"):
        GraphGuard(sess)


def test_a_graph_instead_of_a_session_is_a_type_error():
    with pytest.raises(TypeError, match="not Graph"):
        GraphGuard(tf.Graph())


@pytest.mark.parametrize("option, match", [
    ({"slowdown_factor": "3"}, "slowdown_factor must be a number"),
    ({"max_rss_growth": "2G"}, "max_rss_growth must be a number of bytes"),
    ({"warmup_steps": True}, "warmup_steps"),
    ({"checkpoint_path": 123, "saver": object()}, "checkpoint_path must be a path"),
    ({"checkpoint_path": "ckpt", "saver": "x"}, "saver must be a tf.compat.v1.train.Saver"),
])
def test_options_of_the_wrong_type_fail_at_the_call_with_what_to_pass(model, option, match):
    graph, sess, x, _, loss = model
    with pytest.raises(ValueError, match=match):
        GraphGuard(sess, mode="count", **option)


def test_a_call_spread_over_several_lines_is_named_with_its_fix(model):
    # Only the call's first line is in the traceback: `tf.reduce_mean(` alone did not parse, so the
    # ops had no call name and the fix for a Python operator (GG106).
    graph, sess, x, _, loss = model
    with pytest.raises(GraphGrowthError) as info:
        with GraphGuard(sess, mode="count") as guarded:
            for step in range(4):
                guarded.run(tf.reduce_mean(  # MULTILINE-LEAK
                    tf.square(x)), {x: FEED})
    first = str(info.value).splitlines()[0]
    assert f"at {_at('MULTILINE-LEAK')} (tf.reduce_mean)" in first
    assert f"{_at('MULTILINE-LEAK')} (op, GG101)" in str(info.value)


def test_a_saver_built_before_guarding_saves_and_restores_through_the_guard(model, tmp_path):
    # A twenty-second new user's trial: `saver.save(guarded, ...)` after replacing every `sess` with the
    # guard raised "TypeError: 'sess' must be a Session" at the end of the first epoch, although
    # docs/graph-guard.md says a Saver built earlier keeps working.
    graph, sess, x, w, loss = model
    step = tf.assign_add(w, 1.0)
    saver = tf.train.Saver([w])
    with GraphGuard(sess) as guarded:
        for epoch in range(3):
            for _ in range(4):
                guarded.run(step)
            path = saver.save(guarded, str(tmp_path / "model"), global_step=epoch)
        saver.restore(guarded, path)
        assert guarded.run(w) == 14.0 and w.eval(session=guarded) == 14.0  # 2.0 + 12 steps
        assert isinstance(guarded, GraphGuard) and type(guarded).__name__ == "GraphGuard"
        assert guarded.graph is sess.graph and guarded.sess_str == sess.sess_str
