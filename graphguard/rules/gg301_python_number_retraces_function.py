"""GG301 python-number-retraces-function."""

from graphguard.analysis.catalog import Effect
from graphguard.rules.base import Rule


class PythonNumberRetracesFunction(Rule):
    """
    ## What it does
    Finds a call of a `tf.function` in a loop that passes a Python number changing on every iteration:
    the loop's counter (`for step in range(n)`, the index of `enumerate`), or a number the loop body
    assigns (`step += 1`, `lr = lr * decay`), or arithmetic on one (`epoch * n + i`, `float(lr)`), or a
    tensor or array whose shape such a number sets (`tf.ones((n, 8))`, `np.random.rand(n, 8)`). The
    `tf.function` may be a decorated function or method of the checked tree (also in another module) or
    `f = tf.function(g)`, or what a project factory returns (`train_step = make_train_step(model)`). A
    function with an `input_signature` is not reported.

    ## Why is this bad?
    A `tf.function` traces a new graph for every new Python value it is given: Python numbers are part
    of its trace key, tensors by shape and dtype (inputs of a new shape each call: 50 traces in 50 calls).
    Passing the step as an `int` traces on every step:
    measured on TF 2.21, 200 traces in 200 calls, 12.5 ms per call against 0.34 ms with a tensor (37x),
    and about 148 KiB of RSS kept per call, since each trace keeps its concrete function.
    `reduce_retracing=True` does not help here (measured: 20 traces in 20 calls); TensorFlow warns only
    after five retraces in a row, and never names the calling line.

    Pass a tensor instead (`tf.constant(step)`, `tf.convert_to_tensor(lr)`), keep the value in a
    `tf.Variable` the function reads, or give the function an `input_signature`.

    ## References
    - [Better performance with tf.function: rules of tracing](https://www.tensorflow.org/guide/function#rules_of_tracing)
    - [`tf.function`](https://www.tensorflow.org/api_docs/python/tf/function) (`input_signature`, `reduce_retracing`)
    """

    CODE = "GG301"
    NAME = "python-number-retraces-function"
    EFFECTS = frozenset({Effect.RETRACE_ARGUMENT})
    TITLE = "Python number passed to a tf.function in a loop"
    MESSAGE = "{subject}: a new value per iteration of the loop at line {loop_row} retraces the tf.function"

    @classmethod
    def message(cls, subject: str, loop_row: int, via=None, kind: str = "", outer_row: int = 0,
                path: str | None = None) -> str:
        """As :meth:`Rule.message`, saying "a new shape" for a tensor whose shape a number sets, and "a new
        value or shape" when both kinds of argument change (a twenty-sixth new user's trial: arrays of a
        new length per epoch were called "a new value")."""
        text = super().message(subject, loop_row, via, kind, outer_row, path)
        arguments = subject.rpartition(" in `")[0]
        if "(shape" in arguments:
            alone = arguments.endswith(("(shapes)", "`)")) and "(shape)" not in arguments  # every one a shape
            text = text.replace(": a new value per", ": a new shape per" if alone else ": a new value or shape per", 1)
        return text
    ADVICE = (
        "a tf.function traces a new graph for every new Python value and every new input shape: pass "
        "numbers as tensors (tf.constant(...)) or give the function an input_signature (None for a "
        "dimension that changes; or reduce_retracing=True)"
    )

    FIX_SAFETY = """\
No automatic fix. Wrapping the argument in `tf.constant(...)` changes what the function body sees: a
Python `if step % 100 == 0:` becomes a tensor condition that AutoGraph turns into `tf.cond`, Python
uses of the value (`range(step)`, a dict key, an f-string) fail or change, and the dtype becomes
int32 or float32. Each call site needs a person to check the body.
"""

    VALID = (
        # The fix: the step goes in as a tensor, so one trace serves every step.
        """\
import tensorflow as tf

@tf.function
def train_step(x, y, step):
    warmup = tf.minimum(1.0, tf.cast(step, tf.float32) / 1000.0)
    with tf.GradientTape() as tape:
        loss = loss_fn(y, model(x, training=True))
    grads = tape.gradient(loss, model.trainable_variables)
    optimizer.apply_gradients([(g * warmup, v) for g, v in zip(grads, model.trainable_variables)])
    return loss

for step, (x, y) in enumerate(dataset):
    train_step(x, y, tf.constant(step))
""",
        # An input_signature fixes what the function takes: a Python value cannot add a trace.
        """\
import tensorflow as tf

@tf.function(input_signature=[tf.TensorSpec([None, 784], tf.float32), tf.TensorSpec([], tf.int64)])
def scaled(x, step):
    return x * tf.cast(step, tf.float32)

for step in range(10000):
    scaled(batch, step)
""",
        # Tensors from a dataset, and a bool flag with two values: two traces in all.
        """\
import tensorflow as tf

@tf.function(reduce_retracing=True)
def forward(x, training):
    return model(x, training=training)

for epoch in range(100):
    for x, y in train_ds:
        forward(x, True)
    for x, y in val_ds:
        forward(x, False)
""",
        # A few values of a bounded sweep: at most three traces.
        """\
import tensorflow as tf

@tf.function
def penalised(w, scale):
    return tf.reduce_sum(w * w) * scale

for scale in [0.1, 0.01, 0.001]:
    penalised(weights, scale)
""",
        # A plain Python function: nothing is traced.
        """\
def log_step(loss, step):
    print(step, float(loss))

for step in range(10000):
    log_step(train_step(next(batches)), step)
""",
        # TF1 graph mode (v2 behaviour off): a tf.function builds into the session's graph, no eager retracing.
        """\
import tensorflow.compat.v1 as tf
tf.disable_v2_behavior()

scaled = tf.function(lambda x, s: x * s)
with tf.Session() as sess:
    for step in range(1000):
        sess.run(train_op)
    print(sess.run(scaled(x, 2.0)))
""",
        # The step kept in a tf.Variable that the function reads.
        """\
import tensorflow as tf

step_var = tf.Variable(0, dtype=tf.int64)

@tf.function
def train_step(x, y, step):
    return model.train_step((x, y))

for step, (x, y) in enumerate(train_ds):
    step_var.assign(step)
    train_step(x, y, step_var)
""",
        # A factory that returns a plain Python function: nothing is traced.
        """\
def make_logger(writer):
    def log(value, step):
        writer.write(f"{step}: {value}")
    return log

log = make_logger(open("train.log", "w"))
for step in range(10000):
    log(0.5, step)
""",
        # A value with two states (a parity, a flag made a number): at most two traces.
        """\
import tensorflow as tf

@tf.function
def augment(images, flip):
    return tf.cond(flip > 0, lambda: tf.image.flip_left_right(images), lambda: images)

for step in range(100000):
    augment(next(batches), step % 2)
    augment(next(batches), float(step > 5000))
""",
        # Batches cut at a fixed length: one shape, and one more for a short last batch.
        """\
import numpy as np
import tensorflow as tf

@tf.function
def score(x):
    return tf.reduce_sum(tf.matmul(x, w))

data = np.ones((100000, 8), np.float32)
for epoch in range(100):
    for start in range(0, len(data), 64):
        score(data[start:start + 64])
""",
        # Four values in all: each epoch passes the same four heads, each traced once.
        """\
import tensorflow as tf

@tf.function
def head_loss(x, head):
    return tf.reduce_mean(model(x)[head])

for epoch in range(100):
    for head in range(4):
        head_loss(batch, head)
""",
    )

    INVALID = (
        # The step as a Python int: a new trace on every step.
        """\
import tensorflow as tf

@tf.function
def train_step(x, y, step):
    warmup = tf.minimum(1.0, tf.cast(step, tf.float32) / 1000.0)
    with tf.GradientTape() as tape:
        loss = loss_fn(y, model(x, training=True))
    grads = tape.gradient(loss, model.trainable_variables)
    optimizer.apply_gradients([(g * warmup, v) for g, v in zip(grads, model.trainable_variables)])
    return loss

for step, (x, y) in enumerate(dataset):
    train_step(x, y, step)  # GG301
""",
        # A decayed learning rate kept as a Python float, and a step counter, through tf.function(...).
        """\
import tensorflow as tf

def apply(grads, lr):
    for g, v in zip(grads, model.trainable_variables):
        v.assign_sub(lr * g)

fast_apply = tf.function(apply)
lr = 0.1
while True:
    grads = compute_grads(next(batches))
    fast_apply(grads, lr)  # GG301
    lr = lr * 0.999
""",
        # A tf.function method called with the epoch number.
        """\
import tensorflow as tf

class Trainer:
    @tf.function
    def evaluate(self, x, epoch):
        tf.summary.scalar("epoch", epoch)
        return self.model(x, training=False)

    def fit(self, epochs):
        for epoch in range(epochs):
            for x in self.val_ds:
                self.evaluate(x, epoch)  # GG301
""",
        # A counter assigned in a while loop, passed by keyword.
        """\
import tensorflow as tf

@tf.function
def log_images(images, step):
    tf.summary.image("inputs", images, step=step)

global_step = 0
while global_step < max_steps:
    images = next(batches)
    log_images(images, step=global_step)  # GG301
    global_step += 1
""",
        # reduce_retracing relaxes shapes, not Python values (measured: one trace per value).
        """\
import tensorflow as tf

@tf.function(reduce_retracing=True)
def noisy(x, sigma):
    return x + tf.random.normal(tf.shape(x)) * sigma

for i in range(num_steps):
    batch = noisy(next(batches), 1.0 - i / num_steps)  # GG301
""",
        # A global step computed from two loop counters.
        """\
import tensorflow as tf

@tf.function
def train_step(x, y, global_step):
    lr = schedule(global_step)
    return apply(x, y, lr)

for epoch in range(epochs):
    for step, (x, y) in enumerate(train_ds):
        train_step(x, y, epoch * steps_per_epoch + step)  # GG301
""",
        # An inner loop of four, but its count grows with the epoch: a new value on every epoch.
        """\
import tensorflow as tf

@tf.function
def probe(x, depth):
    return model.layers[depth](x)

for epoch in range(200):
    for depth in range(epoch):
        probe(batch, depth)  # GG301
""",
        # The tf.function comes from a factory called once; the step still goes in as an int.
        """\
import tensorflow as tf

def make_train_step(model, optimizer):
    @tf.function
    def train_step(x, y, step):
        with tf.GradientTape() as tape:
            loss = loss_fn(y, model(x, training=True)) * tf.minimum(1.0, tf.cast(step, tf.float32) / 100.0)
        optimizer.apply_gradients(zip(tape.gradient(loss, model.trainable_variables), model.trainable_variables))
        return loss
    return train_step

train_step = make_train_step(model, optimizer)
for step, (x, y) in enumerate(train_ds):
    train_step(x, y, step)  # GG301
""",
        # A trainer's step counter kept on the object (set in __init__, increased per batch).
        """\
import tensorflow as tf

class Trainer:
    def __init__(self, model):
        self.model = model
        self.step = 0

    @tf.function
    def train_step(self, x, step):
        return self.model(x, training=True) * tf.cast(step, tf.float32)

    def fit(self, dataset):
        for x in dataset:
            self.train_step(x, self.step)  # GG301
            self.step += 1
""",
        # A tensor whose shape the loop's counter sets: a tensor's shape is part of the trace key.
        """\
import tensorflow as tf

@tf.function
def score(x):
    return tf.reduce_sum(tf.matmul(x, w))

for rows in range(1, 1000):
    score(tf.ones((rows, 8)))  # GG301
""",
    )

    FIXES: dict = {}  # no automatic fix: see Fix safety
