"""``TraceGuard``: TF 2 ``tf.function`` retracing counted per function and calling line, with real TensorFlow.

Each retracing shape (a Python int step, a shape change, a dtype change, a new ``tf.function`` per
iteration) must be reported at the calling line with the argument that changed and the fix; each
look-alike (tensors in a loop, ``input_signature``, ``reduce_retracing=True`` with shapes, a
``training`` flag with a last partial batch, a Keras sweep with a new model per trial) must stay silent.
"""

import json
import os
import subprocess
import sys
import textwrap
import warnings
from pathlib import Path

import forked
import pytest

ROOT = Path(__file__).resolve().parents[1]
HERE = os.path.abspath(__file__)


def test_bad_options_fail_at_the_call_saying_what_to_pass():
    from graphguard import TraceGuard

    with pytest.raises(ValueError, match="on_retrace must be 'raise', 'warn' or a callable.*'boom'"):
        TraceGuard(on_retrace="boom")
    for bad in (0, -1, 2.5, True, "8"):
        with pytest.raises(ValueError, match="max_traces must be an int >= 1"):
            TraceGuard(max_traces=bad)


def test_the_guard_imports_tensorflow_only_when_started():
    code = ("import sys; from graphguard import TraceGuard, RetracingError, RetracingWarning; "
            "g = TraceGuard(); print('tensorflow' in sys.modules)")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, cwd=ROOT)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "False"


tf = pytest.importorskip("tensorflow")

from graphguard import RetracingError, RetracingWarning, TraceGuard  # noqa: E402
from graphguard.runtime import trace  # noqa: E402
from graphguard.runtime.report import where  # noqa: E402

FUNCTION = type(tf.function(lambda: 0))
ORIGINAL_CALL, ORIGINAL_INIT = FUNCTION.__dict__["__call__"], FUNCTION.__dict__["__init__"]


def line_of(marker: str) -> int:
    """The line of this file that carries ``# <marker>``."""
    for number, text in enumerate(Path(HERE).read_text().splitlines(), 1):
        if text.rstrip().endswith(f"# {marker}"):
            return number
    raise AssertionError(marker)


def at(marker: str) -> str:
    """``file:line`` of that line as messages print it (relative to the current directory)."""
    return where(HERE, line_of(marker))


@pytest.fixture(autouse=True)
def class_restored():
    yield
    assert FUNCTION.__dict__["__call__"] is ORIGINAL_CALL and FUNCTION.__dict__["__init__"] is ORIGINAL_INIT
    assert trace._GUARDS == ()


# -- what must be reported ---------------------------------------------------------------------------


def test_a_python_int_step_raises_at_the_calling_line_naming_the_argument():
    @tf.function
    def train_step(x, step):
        return x * 2.0

    x = tf.ones((4, 3))
    calls = 0
    with pytest.raises(RetracingError) as info:
        with TraceGuard():
            for step in range(50):
                calls += 1
                train_step(x, step)  # int-step call
    err = info.value
    assert calls == 9  # 8 traces tolerated, the 9th raises after its call returned
    text = str(err)
    assert text.startswith(f"tf.function `{train_step.python_function.__qualname__}` (defined at ")
    assert text.splitlines()[0].endswith(f"called from {at('int-step call')}")
    assert "9 traces in 9 calls" in text
    assert "argument `step`: Python int 7 -> 8" in text
    assert "tf.constant(step)" in text and "input_signature" in text
    assert (err.filename, err.lineno) == (HERE, line_of("int-step call"))
    fn = err.function
    assert fn.retracing == "same_function" and fn.traces == 9 and fn.calls == 9 and fn.functions == 1
    assert fn.filename == HERE and fn.call_sites[0].text == "train_step(x, step)  # int-step call"
    assert err.report.retracing == (fn,)


def test_a_function_defined_again_from_the_same_source_is_a_new_function():
    # Issue 40's second trial: a notebook cell run again after a RetracingError (the fix the docs give)
    # compiles a code object equal to the first, and the new function inherited its traces.
    source = "import tensorflow as tf\n@tf.function\ndef step_fn(v, n):\n    return v * n\n"
    first, second = {}, {}
    exec(compile(source, "<cell In[2]>", "exec"), first)
    v = tf.ones([3])
    with TraceGuard(max_traces=8, on_retrace="warn") as guard:
        with pytest.warns(Warning):
            for n in range(12):
                first["step_fn"](v, n)
        exec(compile(source, "<cell In[4]>", "exec"), second)  # the same source, run again
        for n in range(12):
            second["step_fn"](v, tf.constant(float(n)))
    report = guard.report()
    assert [fn.traces for fn in report.functions] == [12, 1], report.functions
    assert len(report.retracing) == 1 and report.retracing[0].traces == 12


def test_a_loop_over_a_handful_of_dtypes_and_shapes_is_not_retracing():
    # Issue 40's second trial: a TensorFlow-style test of one tf.function over 5 dtypes x 2 shapes traces
    # 10 times, each trace needed; the same calls from an unbounded loop are retracing.
    @tf.function
    def total(x):
        return tf.reduce_sum(x)

    with TraceGuard(max_traces=8) as guard:
        for dtype in (tf.float16, tf.float32, tf.float64, tf.int32, tf.int64):
            for shape in ((2,), (3, 2)):
                total(tf.ones(shape, dtype))
    assert guard.report().retracing == ()
    # ... and the report says why 10 traces under max_traces=8 are no retracing (a twelfth new user's trial)
    assert "total: 9 of its 10 traces not counted against max_traces" in guard.report().format()
    with pytest.raises(RetracingError):
        with TraceGuard(max_traces=8):
            for size in range(1, 30):
                total(tf.ones([size]))


def test_a_shape_change_names_the_shape_and_the_fix():
    @tf.function
    def forward(x):
        return tf.reduce_sum(x)

    with pytest.raises(RetracingError) as info:
        with TraceGuard(max_traces=4):
            for n in range(1, 20):
                forward(tf.ones((n, 10)))  # shape call
    text = str(info.value)
    assert "argument `x`: shape (4, 10) -> (5, 10)" in text
    assert f"called from {at('shape call')}" in text
    assert "input_signature=[tf.TensorSpec(" in text and "reduce_retracing=True" in text


def test_a_dtype_change_names_the_dtype():
    @tf.function
    def forward(x):
        return x + 1

    dtypes = (tf.float32, tf.float64, tf.int32, tf.int64)
    with pytest.raises(RetracingError) as info:
        with TraceGuard(max_traces=3):
            for step in range(20):  # batches of changing dtypes (a loop over 4 dtypes is 4 cases, not retracing)
                forward(tf.ones((2,), dtype=dtypes[step % 4]))
    assert "argument `x`: dtype int32 -> int64" in str(info.value)
    assert "tf.cast(x, tf.float32)" in str(info.value)


def test_a_new_tf_function_per_iteration_names_the_line_that_made_it():
    def body(x):
        return x + 1

    x = tf.ones((3,))
    with pytest.raises(RetracingError) as info:
        with TraceGuard():
            for _ in range(30):
                f = tf.function(body)  # made per iteration
                f(x)  # new-object call
    err = info.value
    text = str(err)
    assert "keeps retracing: 9 traces in 9 calls through 9 tf.function objects" in text
    assert f"a new tf.function object per call: made at {at('made per iteration')}" in text
    assert f"called from {at('new-object call')}" in text
    assert "create the tf.function once, outside the loop" in text
    assert err.function.retracing == "new_function" and err.function.name.endswith("body")


def test_every_cause_is_listed_with_its_line_not_only_the_last():
    # Issue 39: a shape change from one line and a Python float from another; only the float was named.
    @tf.function
    def step(x, lr):
        return tf.reduce_sum(x) * lr

    with pytest.raises(RetracingError) as info:
        with TraceGuard(max_traces=5) as guard:
            batches = [tf.ones((n, 2)) for n in range(1, 4)]  # data of changing shapes
            for batch in batches:
                step(batch, 0.5)  # shape cause
            for lr in (0.1, 0.2, 0.3, 0.4):
                step(tf.ones((3, 2)), lr)  # float cause
    text = str(info.value)
    assert f"argument `x`: shape (2, 2) -> (3, 2) (in 2 of 6 traces; last called from {at('shape cause')})" in text
    assert f"argument `lr`: Python float 0.2 -> 0.3 (in 3 of 6 traces; last called from {at('float cause')})" in text
    assert "tf.TensorSpec" in text and "tf.constant(lr)" in text  # the fix for each cause
    # the float took 5 values (0.5 and four), the shape 3: the float first
    assert [(c.kind, c.argument, c.traces, c.values) for c in info.value.function.changes] == [
        ("value", "lr", 3, 4), ("shape", "x", 2, 3)]
    table = guard.report().format()
    assert "changed: argument `x`: shape" in table and "changed: argument `lr`: Python float" in table


def test_the_cause_with_most_values_comes_first_and_each_cause_has_its_fix_line():
    # A sixteenth new user's trial: a Python float lr halved every epoch and a smaller last batch; the
    # shapes of x and y (two values, more traces) were listed and fixed before lr, the cause of the
    # traces without end, on one long fix line.
    w = tf.Variable(tf.zeros((4, 1)))

    @tf.function
    def train_step(x, y, lr):
        return lr * tf.reduce_mean(tf.matmul(x, w) - y)

    xs, ys = tf.ones((10, 4)), tf.ones((10, 1))
    lr = 0.1
    with pytest.raises(RetracingError) as info:
        with TraceGuard(max_traces=6):
            for epoch in range(6):
                for i in range(0, 10, 4):
                    train_step(xs[i:i + 4], ys[i:i + 4], lr)  # batches of 4, 4, 2
                lr *= 0.5
    causes = info.value.function.changes
    assert [(c.kind, c.argument) for c in causes] == [("value", "lr"), ("shape", "x"), ("shape", "y")]
    assert causes[1].values == 2 and causes[1].values <= causes[1].traces
    text = str(info.value)
    assert "(2 values; in " in text  # a shape that repeats says so; the float's count has no values
    fixes = [line for line in text.splitlines() if line.startswith("  Fix: ")]
    assert len(fixes) == 2, text
    assert "`lr` as a tensor" in fixes[0]
    assert "`x`, `y` took only 2 shapes" in fixes[1] and "input_signature" in fixes[1]


def test_each_line_is_compared_with_its_own_last_trace_when_two_lines_share_a_function():
    # A third new user's trial: a train line changing a float and an evaluation line changing a shape,
    # interleaved in one loop; each trace was compared with the other line's, so each line was blamed
    # for the other's argument.
    @tf.function
    def step(x, lr):
        return tf.reduce_sum(x) * lr

    with TraceGuard(max_traces=100) as guard:
        for i in range(6):
            step(tf.ones([3]), 0.1 * (i + 1))  # float line
            step(tf.ones([i + 1]), 1.0)  # shape line
    (function,) = guard.report().functions
    by_line = {(c.kind, c.argument): c.at for c in function.changes}
    assert by_line.get(("value", "lr")) == at("float line"), function.changes
    assert by_line.get(("shape", "x")) == at("shape line"), function.changes
    assert set(by_line) <= {("value", "lr"), ("shape", "x"), ("value", "x"), ("shape", "lr")}


def test_a_lines_first_trace_is_compared_with_the_trace_it_differs_least_from():
    # A seventh new user's trial: a shape loop, then a float loop on one shape the first loop had traced;
    # the float line's first trace was compared with the shape loop's last trace and blamed for the
    # shape change. Floats read as floats (3.0, not 3).
    @tf.function
    def step(x, scale):
        return tf.reduce_sum(x) * scale

    with TraceGuard(max_traces=100) as guard:
        for i in range(8):
            step(tf.ones([i % 4 + 1, 3]), 0.5)  # shapes loop
        for i in range(5):
            step(tf.ones([2, 3]), float(i))  # floats loop
    (function,) = guard.report().functions
    by_cause = {(c.kind, c.argument): c for c in function.changes}
    assert by_cause[("shape", "x")].at == at("shapes loop"), function.changes
    assert by_cause[("value", "scale")].at == at("floats loop"), function.changes
    assert by_cause[("value", "scale")].before.endswith(".0") and by_cause[("value", "scale")].after.endswith(".0")


def test_reduce_retracing_does_not_help_python_ints():
    # Measured (TF 2.21): reduce_retracing relaxes shapes, not Python values: one trace per int.
    @tf.function(reduce_retracing=True)
    def step_fn(x, step):
        return x

    with pytest.raises(RetracingError, match="argument `step`: Python int"):
        with TraceGuard(max_traces=4):
            for step in range(10):
                step_fn(tf.ones(()), step)


def test_warn_mode_warns_once_at_the_calling_line_and_the_run_goes_on():
    @tf.function
    def scale(x, k):
        return x * k

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with TraceGuard(max_traces=3, on_retrace="warn") as guard:
            for k in range(12):
                scale(tf.ones(()), k)  # warn call
    ours = [w for w in caught if issubclass(w.category, RetracingWarning)]
    assert len(ours) == 1
    assert (ours[0].filename, ours[0].lineno) == (HERE, line_of("warn call"))
    assert "argument `k`: Python int 2 -> 3" in str(ours[0].message)
    report = guard.report()
    (fn,) = report.retracing
    assert fn.traces == 12 and fn.calls == 12 and fn.retracing == "same_function"
    assert "argument `k`: Python int 10 -> 11" in str(fn.changes[0])
    data = json.loads(json.dumps(report.to_dict()))
    assert data["retracing"] == 1 and data["functions"][0]["call_sites"][0]["lineno"] == line_of("warn call")
    table = report.format()
    assert "RETRACING" in table and f"called from {at('warn call')}: scale(tf.ones(()), k)" in table


def test_a_callable_on_retrace_gets_the_function():
    seen = []

    @tf.function
    def f(k):
        return k

    with TraceGuard(max_traces=2, on_retrace=seen.append):
        for k in range(4):
            f(k)
    assert [fn.traces for fn in seen] == [3, 4]


# -- look-alikes that must stay silent -----------------------------------------------------------------


def test_tensors_in_a_loop_input_signature_and_reduce_retracing_stay_silent():
    @tf.function
    def by_tensor(x, step):
        return x * tf.cast(step, tf.float32)

    @tf.function(input_signature=[tf.TensorSpec(shape=(None, 10), dtype=tf.float32)])
    def by_signature(x):
        return tf.reduce_sum(x)

    @tf.function(reduce_retracing=True)
    def relaxed(x):
        return tf.reduce_sum(x)

    with TraceGuard(max_traces=3) as guard:
        for step in range(30):
            by_tensor(tf.ones((4,)), tf.constant(step))
            by_signature(tf.ones((step + 1, 10)))
            relaxed(tf.ones((step + 1, 10)))
    report = guard.report()
    assert report.retracing == ()
    traces = {fn.name.rsplit(".", 1)[-1]: fn.traces for fn in report.functions}
    assert traces == {"by_tensor": 1, "by_signature": 1, "relaxed": 2}
    assert all(fn.calls == 30 for fn in report.functions)


def test_a_training_flag_and_a_last_partial_batch_stay_silent():
    keras = pytest.importorskip("keras")
    import numpy as np

    model = keras.Sequential([keras.Input((10,)), keras.layers.Dense(16, activation="relu"),
                              keras.layers.Dropout(0.1), keras.layers.Dense(3)])
    optimizer = keras.optimizers.Adam()
    loss_fn = keras.losses.SparseCategoricalCrossentropy(from_logits=True)

    @tf.function
    def step(x, y, training):
        with tf.GradientTape() as tape:
            loss = loss_fn(y, model(x, training=training))
        if training:
            grads = tape.gradient(loss, model.trainable_variables)
            optimizer.apply_gradients(zip(grads, model.trainable_variables))
        return loss

    rng = np.random.default_rng(0)
    train = tf.data.Dataset.from_tensor_slices((rng.random((100, 10), dtype=np.float32),
                                                rng.integers(0, 3, 100))).batch(32)  # 3 x 32 + 4
    val = tf.data.Dataset.from_tensor_slices((rng.random((50, 10), dtype=np.float32),
                                              rng.integers(0, 3, 50))).batch(32)  # 32 + 18
    with TraceGuard() as guard:
        for _ in range(4):
            for x, y in train:
                step(x, y, True)
            for x, y in val:
                step(x, y, False)
    (fn,) = guard.report().functions
    assert fn.retracing is None and fn.calls == 4 * (4 + 2)
    assert 4 <= fn.traces <= 8  # measured 5: the first call, which makes variables, traces twice


def test_a_keras_fit_sweep_with_a_new_model_per_trial_stays_silent():
    keras = pytest.importorskip("keras")
    import numpy as np

    rng = np.random.default_rng(0)
    xs, ys = rng.random((100, 10), dtype=np.float32), rng.integers(0, 3, 100)
    with TraceGuard(max_traces=2) as guard:  # tighter than the default: Keras' own functions are judged per object
        for _ in range(3):
            keras.backend.clear_session()
            model = keras.Sequential([keras.Input((10,)), keras.layers.Dense(8, activation="relu"),
                                      keras.layers.Dense(3)])
            model.compile("adam", keras.losses.SparseCategoricalCrossentropy(from_logits=True))
            model.fit(xs, ys, batch_size=32, epochs=2, verbose=0, validation_split=0.2)
            model.predict(xs[:5], verbose=0)
    report = guard.report()
    assert report.retracing == ()
    assert report.functions and all(fn.internal for fn in report.functions)
    assert max(fn.functions for fn in report.functions) >= 3  # a new train function per model


def test_a_keras_model_compiled_per_epoch_is_recompiled_and_fitted_per_epoch_is_not():
    # A twenty-first new user's trial: `for epoch in range(50): m.compile(...); m.fit(...)` was GG305 in
    # graphguard check, and "no tf.function retracing" at run time, its table showing 61 objects.
    keras = pytest.importorskip("keras")
    import numpy as np

    rng = np.random.default_rng(0)
    xs, ys = rng.random((64, 6), dtype=np.float32), rng.integers(0, 2, 64)
    model = keras.Sequential([keras.Input((6,)), keras.layers.Dense(4), keras.layers.Dense(2)])
    model.compile("adam", keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    with TraceGuard(max_traces=3) as guard:
        for epoch in range(6):  # the fix: compiled once, fitted per epoch
            model.fit(xs, ys, epochs=1, verbose=0)
    assert guard.report().retracing == ()
    with TraceGuard(max_traces=3) as guard:
        with pytest.raises(RetracingError) as raised:
            for epoch in range(6):
                model.compile("adam", keras.losses.SparseCategoricalCrossentropy(from_logits=True))
                model.fit(xs, ys, epochs=1, verbose=0)
    assert "tf.function objects made for one Keras model, each traced anew (limit max_traces=3)" in str(raised.value)
    assert "compile the model once, before the loop" in str(raised.value), str(raised.value)
    (fn,) = guard.report().retracing
    assert fn.retracing == "recompiled" and fn.recompiled == 4 and fn.internal
    assert "RECOMPILED" in guard.report().format()


def test_a_step_function_built_per_trial_and_a_method_per_instance_stay_silent():
    def make_step(scale):
        @tf.function
        def step(x):
            return x * scale
        return step

    class Scorer(tf.Module):
        @tf.function
        def score(self, x):
            return tf.reduce_sum(x)

    x = tf.ones((4,))
    with TraceGuard(max_traces=4) as guard:
        for trial in range(10):  # a sweep: one step function per trial, called many times
            step = make_step(float(trial))
            for _ in range(10):
                step(x)
            Scorer().score(x)  # a tf.function method: one object per instance, called once
    report = guard.report()
    assert report.retracing == ()
    counts = {fn.name.rsplit(".", 1)[-1]: (fn.traces, fn.calls, fn.functions) for fn in report.functions}
    assert counts == {"step": (10, 100, 10), "score": (10, 10, 10)}
    # not failed, but not left unexplained: 10 traces through 10 objects made at one line (a twenty-fifth
    # new user's trial: a tf.function made per epoch read "0 retracing" and nothing said why)
    table = report.format()
    step_row = next(line for line in table.splitlines() if "make_step.<locals>.step" in line)
    assert step_row.endswith("remade (see below)")
    assert "  step: 10 tf.function objects made at " in table and "(10 traces in 100 calls): not counted as retracing" in table
    assert "make it once, outside that loop (GG302)" in table
    score_row = next(line for line in table.splitlines() if "Scorer.score" in line)
    assert "remade" not in score_row  # a method: one object per instance, as it must be


def test_a_nested_tf_function_is_counted_but_judged_through_its_caller():
    @tf.function
    def inner(x, k):
        return x * k

    @tf.function
    def outer(x, k):
        return inner(x, k)

    with pytest.raises(RetracingError) as info:
        with TraceGuard(max_traces=3) as guard:
            for k in range(10):
                outer(tf.ones(()), k)
    assert info.value.function.name.endswith("outer")
    inner_fn = next(fn for fn in guard.report().functions if fn.name.endswith("inner"))
    assert inner_fn.traces == 4 and inner_fn.retracing is None


# -- start, stop, nesting --------------------------------------------------------------------------------


def test_guards_nest_re_enter_and_restore_the_class():
    @tf.function
    def f(k):
        return k

    outer, inner = TraceGuard(max_traces=100), TraceGuard(max_traces=100)
    outer.start()
    assert FUNCTION.__dict__["__call__"] is not ORIGINAL_CALL
    f(1)
    with inner:
        with inner:  # re-entered: needs its own exit
            f(2)
        assert inner.active
        f(3)
    assert not inner.active and outer.active
    f(4)
    assert FUNCTION.__dict__["__call__"] is not ORIGINAL_CALL  # the outer guard still counts
    outer.stop()
    outer.stop()  # a second stop does nothing
    assert FUNCTION.__dict__["__call__"] is ORIGINAL_CALL
    f(5)  # not counted (traced while stopped)
    assert [fn.calls for fn in outer.report().functions] == [4]
    assert [fn.calls for fn in inner.report().functions] == [2]
    assert outer.report().functions[0].traces == 4
    with outer:  # started again: counts go on; the trace made while stopped is not counted
        f(5)
        f(1)
    (fn,) = outer.report().functions
    assert (fn.traces, fn.calls) == (4, 6)


def test_an_error_in_the_function_leaves_the_guard_usable():
    @tf.function
    def fails(x):
        tf.debugging.assert_positive(x)
        return x

    with TraceGuard() as guard:
        with pytest.raises(tf.errors.InvalidArgumentError):
            fails(tf.constant(-1.0))
        fails(tf.constant(1.0))
    assert guard.report().functions[0].traces == 1


# -- graphguard run on a TF 2 script ---------------------------------------------------------------------


def graphguard_run(*args, cwd):
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2")
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    return forked.run(["-m", "graphguard", "run", *args], cwd=cwd, env=env, timeout=120)


SCRIPT = textwrap.dedent("""\
    import tensorflow as tf

    @tf.function
    def train_step(x, step):
        return x * 2.0

    x = tf.ones((4,))
    for step in range(20):
        train_step(x, step)
    print("finished")
""")


def test_graphguard_run_stops_a_tf2_script_at_the_calling_line(tmp_path):
    (tmp_path / "train.py").write_text(SCRIPT)
    result = graphguard_run("train.py", cwd=tmp_path)
    err = result.stderr
    assert result.returncode == 1, err[-3000:]
    assert "finished" not in result.stdout
    assert 'File "' + str(tmp_path / "train.py") + '", line 9, in <module>' in err
    assert ("graphguard.RetracingError: tf.function `train_step` (defined at train.py:3) keeps retracing: "
            "9 traces in 9 calls of one tf.function object (limit max_traces=8), called from train.py:9") in err
    assert "called from train.py:9: train_step(x, step) (9 traces)" in err
    assert "changed: argument `step`: Python int 7 -> 8" in err
    assert "fix: pass `step` as a tensor (tf.constant(step, tf.float32) if the function computes in floats" in err
    assert "session" not in err  # a TF 2 script: no session report
    assert err.rstrip().endswith("graphguard run: tf.function retracing found")


def test_graphguard_run_warn_mode_runs_the_script_to_the_end(tmp_path):
    (tmp_path / "train.py").write_text(SCRIPT)
    result = graphguard_run("--on-retrace", "warn", "--max-traces", "5", "train.py", cwd=tmp_path)
    err = result.stderr
    assert result.returncode == 1, err[-3000:]
    assert "finished" in result.stdout
    assert "train.py:9: RetracingWarning: tf.function `train_step`" in err
    assert "train_step  train.py:3      20     20        1  RETRACING" in err
    assert err.rstrip().endswith("graphguard run: tf.function retracing found")


def test_a_callable_object_and_a_partial_are_named_and_placed_where_they_were_made():
    # Fresh-user trial: tf.function(model) was "`function` (defined at <no user frame: created inside TensorFlow>)".
    import functools

    class Scale:
        def __call__(self, x):
            return x * 2.0

    def scaled(x, k):
        return x * k

    guard = TraceGuard(max_traces=100)
    with guard:
        by_object = tf.function(Scale())  # made-object
        by_partial = tf.function(functools.partial(scaled, k=3.0))  # made-partial
        by_object(tf.ones([2]))
        by_partial(tf.ones([2]))
    names = {fn.name: fn.defined_at for fn in guard.report().functions}
    assert names["test_a_callable_object_and_a_partial_are_named_and_placed_where_they_were_made.<locals>.Scale object"] \
        == f"{at('made-object')} (made there)"
    assert names["partial(test_a_callable_object_and_a_partial_are_named_and_placed_where_they_were_made.<locals>.scaled)"] \
        == f"{at('made-partial')} (made there)"


def test_the_table_keeps_the_busiest_functions_and_says_how_many_it_left_out():
    # Fresh-user trial: 300 healthy tf.functions made a 300-row table at every run's end.
    namespace: dict = {}
    exec("".join(f"def f{i}(x):\n    return x + {i}\n" for i in range(25)), namespace)  # 25 different functions
    functions = [tf.function(namespace[f"f{i}"]) for i in range(25)]
    guard = TraceGuard()
    with guard:
        for fn in functions:
            fn(tf.ones([1]))
    text = guard.report().format()
    assert "... and 5 more tf.functions with fewer traces, none retracing" in text
    assert len(guard.report().functions) == 25


def test_a_step_function_given_each_folds_new_model_is_not_retracing():
    # Fresh-user trial: a module-level tf.function taking (model, optimizer) traced once per fold, and the
    # default guard stopped a 10-fold run at fold 8. A new model, layer or optimizer is a new trial.
    keras = pytest.importorskip("keras")

    @tf.function
    def step(model, optimizer, x, y, scale):
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean((model(x) - y) ** 2) * scale
        optimizer.apply_gradients(zip(tape.gradient(loss, model.trainable_variables), model.trainable_variables))
        return loss

    x, y = tf.ones([8, 4]), tf.ones([8, 1])
    with TraceGuard() as guard:
        for fold in range(12):
            net = keras.Sequential([keras.Input((4,)), keras.layers.Dense(1)])
            optimizer = keras.optimizers.SGD()
            optimizer.build(net.trainable_variables)
            for epoch in range(2):
                step(net, optimizer, x, y, 1.0)
    (fn,) = guard.report().functions
    assert fn.traces == 12 and fn.retracing is None
    # The same function given a Python number per call still retraces, model or not.
    with pytest.raises(RetracingError, match="argument `scale`: Python float"):
        with TraceGuard():
            for i in range(12):
                step(net, optimizer, x, y, float(i))


def test_tensorflows_own_warnings_stand_under_the_function_they_name():
    # A new user's trial: TensorFlow's warnings about `f` were printed inside `h`'s section.
    from graphguard.runtime.trace_report import TraceReport, TracedFunction

    def traced(name):
        return TracedFunction(name, "__main__", "t.py", 3, 9, 9, 9 if name == "f" else 1, 1, False,
                              retracing="new_function" if name == "f" else "same_function", fix="keep one")

    warning = "5 out of the last 5 calls to <function {} at 0x7f> triggered tf.function retracing"
    text = TraceReport(2, (traced("f"), traced("h")), (warning.format("f"), warning.format("g"))).format()
    f_part, h_part = text.split("-- f ")[1].split("-- h ")
    assert warning.format("f") in f_part and "<function" not in h_part.split("-- TensorFlow")[0]
    assert text.splitlines()[-2:] == ["-- TensorFlow's own retracing warnings (its counts include calls before the guard) --", f"  {warning.format('g')}"]


def test_more_traces_than_calls_says_why():
    # A fourth new user's trial: "9 traces in 8 calls" with nothing to explain it. Measured on TF 2.21:
    # a first call that creates a variable traces twice (experimental_get_tracing_count() is 2).
    from graphguard.runtime.trace_report import TracedFunction

    fn = TracedFunction("train_step", "__main__", "t.py", 3, 9, 8, 1, 9, False)
    assert fn.summary().endswith("9 traces in 8 calls (a call that creates variables traces twice)")
    # the table says it too (a twenty-eighth trial: Keras' "traces 3, calls 2" looked impossible)
    from graphguard.runtime.trace_report import TraceReport

    assert "(more traces than calls: TensorFlow traces a function twice on a call that creates variables)" in \
        TraceReport(8, (fn,)).format()


def test_the_fix_applied_to_an_object_that_already_retraced_says_so():
    # Issue 40's second trial: after the error, a notebook's next cell passes a tensor to the same object;
    # the new error repeated "pass `n` as a tensor", the fix already applied.
    from graphguard.runtime.trace_report import ArgChange, fix_for

    change = ArgChange("object", "n", "Python int 11", "tensor shape () int32")
    text = fix_for([change], "same_function")
    assert "`n` is a tensor now" in text and "run the cell that defines it again" in text
    assert "as a tensor (tf.constant" not in text


def test_several_number_arguments_share_one_sentence_and_floats_are_shown_short():
    # A fifth new user's trial: the combined fix repeated "so one trace serves every value; or give
    # input_signature" once per argument, and a float read 0.30000000000000004.
    from graphguard.runtime.trace import _diff
    from graphguard.runtime.trace_report import ArgChange, fix_for

    changes = [ArgChange("value", "lr", "Python float 0.1", "0.2"), ArgChange("value", "step", "Python int 7", "8")]
    text = fix_for(changes, "same_function")
    assert text.count("so one trace serves every value") == 1 and text.count("input_signature") == 1
    assert text.startswith("pass `lr`, `step` as tensors (tf.constant(lr); tf.constant(step, tf.float32)")
    (change,) = _diff({"lr": ("value", "float", repr(0.1))}, {"lr": ("value", "float", repr(0.1 * 3))})
    assert (change.before, change.after) == ("Python float 0.1", "0.3")
    (close,) = _diff({"lr": ("value", "float", repr(0.3))}, {"lr": ("value", "float", repr(0.1 * 3))})
    assert close.after == "0.30000000000000004"  # shortened, the two would read alike


def test_a_call_sites_comment_is_left_out_of_the_report_line():
    # A ninth new user's trial: `called from a.py:24: g(tf.ones((n, 8)))   # varying batch size (9 traces)`.
    from graphguard.runtime.trace_report import _without_comment

    assert _without_comment("g(tf.ones((n, 8)))               # varying batch size") == "g(tf.ones((n, 8)))"
    assert _without_comment('log("# of steps", step)  # note') == 'log("# of steps", step)'
    assert _without_comment("step(x, lr)") == "step(x, lr)"


def test_a_python_bool_flag_takes_two_traces_without_counting_as_retracing():
    # A tenth new user's trial: a `training` flag's second trace under a step-decay schedule was counted
    # against max_traces, and the fix said to pass the flag as a tensor (docs call such a flag healthy).
    @tf.function
    def step(x, scale, training):
        return x * scale if training else x

    with TraceGuard(max_traces=2) as guard:
        for epoch in range(8):
            step(tf.constant(1.0), 0.1 * 0.5 ** (epoch // 4), epoch % 2 == 0)  # two rates, two flag values
    assert not guard.report().retracing
    with pytest.raises(RetracingError) as caught, TraceGuard(max_traces=2):
        for epoch in range(8):
            step(tf.constant(1.0), 0.1 * 0.9 ** epoch, epoch % 2 == 0)  # a new rate every epoch
    fix = str(caught.value).split("Fix: ", 1)[1]
    assert "`scale`" in fix and "training" not in fix, fix


def test_a_python_number_in_a_short_loop_is_counted_and_the_error_says_why():
    # A nineteenth new user's trial: `graphguard check` hid `for k in range(10): h(x, k)` as a short loop,
    # and the guard raised on its 10 traces with no word of the difference.
    @tf.function
    def scaled(x, k):
        return x * k

    with pytest.raises(RetracingError) as info:
        with TraceGuard(max_traces=8):
            for k in range(10):
                scaled(tf.ones([2]), k)
    text = str(info.value)
    assert "(Bounded: the loops around the call run 10 times in all" in text
    assert "a Python number per iteration is counted here however short the loop" in text


def test_a_number_inside_a_dict_argument_is_the_one_named_in_the_fix():
    # A twentieth new user's trial: the fix said tf.constant(cfg) for a float at cfg['scale'], which raises.
    @tf.function
    def scaled(cfg):
        return cfg["scale"] * 2.0

    with pytest.raises(RetracingError) as info:
        with TraceGuard(max_traces=4):
            for i in range(40):
                scaled({"scale": float(i)})
    assert "pass `cfg['scale']` as a tensor (tf.constant(cfg['scale']))" in str(info.value)


def test_a_retracing_error_leaving_the_with_block_has_only_the_users_frames():
    # A twenty-first new user's trial: graphguard's own `raise` line in a TraceGuard error's traceback
    # (GraphGuard's, graphguard run's and pytest's showed only the user's frames).
    import traceback

    @tf.function
    def scale(x, k):
        return x * k

    with pytest.raises(RetracingError) as raised:
        with TraceGuard(max_traces=2):
            for k in range(6):
                scale(tf.ones([2]), k)
    files = [frame.filename for frame in traceback.extract_tb(raised.value.__traceback__)]
    assert files and all("graphguard" + os.sep + "runtime" not in name for name in files), files
    assert files[-1] == HERE
