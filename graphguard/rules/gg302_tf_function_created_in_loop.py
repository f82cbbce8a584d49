"""GG302 tf-function-created-in-loop."""

from graphguard.analysis.catalog import Effect
from graphguard.rules.base import Rule


class TfFunctionCreatedInLoop(Rule):
    """
    ## What it does
    Finds a new `tf.function` made on every iteration of a loop: `tf.function(f)` called in the loop
    (also `tf.function(f)(x)`), a `@tf.function` def in the loop body, or a call in the loop of a function
    that makes one each time it runs (a nested `@tf.function` def, `tf.function(f)` in its body). A
    `tf.function` made at module level, in a class body, in `__init__` or behind a once-guard is made once.
    A loop that builds a new model per iteration (a sweep) is GG201's business, not this rule's.

    ## Why is this bad?
    Traces belong to the function object: a new `tf.function` has none, so its first call traces again,
    every iteration. Measured on TF 2.21: 9.8 ms per iteration for a small function made and called once
    per iteration, and about 9 KiB of RSS kept per iteration; the per-step cost grows with the function.

    Make the `tf.function` once, before the loop (at module level, in `__init__`, or in a factory called
    once), and call that object in the loop.

    ## References
    - [Better performance with tf.function: controlling retracing](https://www.tensorflow.org/guide/function#controlling_retracing)
    - [`tf.function`](https://www.tensorflow.org/api_docs/python/tf/function)
    """

    CODE = "GG302"
    NAME = "tf-function-created-in-loop"
    EFFECTS = frozenset({Effect.NEW_FUNCTION})
    TITLE = "tf.function made in a loop"
    MESSAGE = "{subject} makes a tf.function, traced anew, in the loop at line {loop_row}"
    ADVICE = (
        "make the tf.function once, before the loop, and call it in the loop"
    )

    FIX_SAFETY = """\
No automatic fix. Moving `tf.function(f)` before the loop is not always the same program: a function
traced once bakes in the Python values its body reads at trace time (a closure over a loop variable,
a global changed in the loop), where the original traced afresh each iteration.
"""

    VALID = (
        # The fix: one tf.function, made once.
        """\
import tensorflow as tf

def compute_loss(x, y):
    return loss_fn(y, model(x, training=False))

fast_loss = tf.function(compute_loss)
for x, y in val_ds:
    total += fast_loss(x, y)
""",
        # A factory called once, before the loop.
        """\
import tensorflow as tf

def make_train_step(model, optimizer):
    @tf.function
    def train_step(x, y):
        with tf.GradientTape() as tape:
            loss = loss_fn(y, model(x, training=True))
        optimizer.apply_gradients(zip(tape.gradient(loss, model.trainable_variables), model.trainable_variables))
        return loss
    return train_step

train_step = make_train_step(model, optimizer)
for epoch in range(epochs):
    for x, y in train_ds:
        train_step(x, y)
""",
        # Made in __init__ and cached behind a once-guard.
        """\
import tensorflow as tf

class Predictor:
    def __init__(self, model):
        self.forward = tf.function(model.call)
        self._batched = None

    def predict(self, x):
        if self._batched is None:
            self._batched = tf.function(lambda t: self.forward(t))
        return self._batched(x)

predictor = Predictor(model)
for batch in stream:
    predictor.predict(batch)
""",
        # A sweep: each trial builds a model, so its functions are new anyway (GG201 says how to release them).
        """\
import tensorflow as tf

for units in [32, 64, 128, 256, 512, 1024]:
    tf.keras.backend.clear_session()
    model = tf.keras.Sequential([tf.keras.layers.Dense(units), tf.keras.layers.Dense(10)])
    step = tf.function(lambda x: model(x, training=True))
    for x in train_ds:
        step(x)
""",
        # A decorated method: made once, with its class.
        """\
import tensorflow as tf

class Model(tf.keras.Model):
    @tf.function
    def serve(self, x):
        return self(x, training=False)

model = Model()
for batch in requests:
    model.serve(batch)
""",
        # A function that defines its tf.function and runs the whole loop with it, called once.
        """\
import tensorflow as tf

def main():
    @tf.function
    def step(x):
        return model(x, training=True)

    for epoch in range(epochs):
        for x in train_ds:
            step(x)

main()
""",
        # Three configurations: at most three new functions.
        """\
import tensorflow as tf

for jit in (False, True, None):
    forward = tf.function(model.call, jit_compile=jit)
    benchmark(forward, batch)
""",
        # Each of several functions and layers wrapped once: a different function per iteration.
        """\
import tensorflow as tf

compiled = {}
for name, fn in {"relu": tf.nn.relu, "tanh": tf.tanh}.items():
    compiled[name] = tf.function(fn)
fast_layers = [tf.function(layer) for layer in [tf.keras.layers.Dense(4) for _ in range(10)]]
""",
    )

    INVALID = (
        """\
import tensorflow as tf

def compute_loss(x, y):
    return loss_fn(y, model(x, training=False))

for x, y in val_ds:
    total += tf.function(compute_loss)(x, y)  # GG302
""",
        # A helper that defines its tf.function inside, called per step.
        """\
import tensorflow as tf

def train_on_batch(x, y):
    @tf.function
    def step():
        with tf.GradientTape() as tape:
            loss = loss_fn(y, model(x, training=True))
        optimizer.apply_gradients(zip(tape.gradient(loss, model.trainable_variables), model.trainable_variables))
        return loss
    return step()

for epoch in range(epochs):
    for x, y in train_ds:
        train_on_batch(x, y)  # GG302
""",
        # A decorated def in the loop body.
        """\
import tensorflow as tf

while not done:
    @tf.function  # GG302
    def act(obs):
        return tf.argmax(policy(obs), axis=-1)
    action = act(observation)
    observation, reward, done, info = env.step(action.numpy())
""",
        # A method that wraps the model on every call, called per batch.
        """\
import tensorflow as tf

class Server:
    def __init__(self, model):
        self.model = model

    def predict(self, x):
        return tf.function(self.model)(x)

server = Server(model)
for batch in requests:
    server.predict(batch)  # GG302
""",
        # A comprehension that makes a function per element.
        """\
import tensorflow as tf

outputs = [tf.function(lambda t: model(t, training=False))(x) for x in batches]  # GG302
""",
        # A while loop that re-wraps its step function.
        """\
import tensorflow as tf

while not converged:
    step_fn = tf.function(lambda: optimizer.minimize(loss, model.trainable_variables))  # GG302
    step_fn()
    converged = check()
""",
    )

    FIXES: dict = {}  # no automatic fix: see Fix safety
