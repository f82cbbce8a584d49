"""GG305 model-recompiled-in-loop."""

from graphguard.analysis.catalog import Effect
from graphguard.rules.base import Rule


class ModelRecompiledInLoop(Rule):
    """
    ## What it does
    Finds, in a loop that runs more than `max-bounded-iterations` times, `model.compile(...)` of a model
    made before the loop, or a new Keras optimizer (`tf.keras.optimizers.Adam(lr)`), directly or in a
    function the loop calls. A loop that makes a new model on every iteration (a sweep, a k-fold) is not
    reported here: its compile and optimizer belong to the new model (GG201 says how to release the old
    ones). A compile call on an unknown object is Keras' when it passes `optimizer=` or `loss=`.

    ## Why is this bad?
    `compile` throws away the model's train, test and predict functions, so the next `fit` traces them
    again, and a new optimizer starts its state over: Adam's moments and step count are lost, which
    changes training, not only its speed. Per iteration, that is a retrace and new optimizer variables
    every epoch; a new optimizer inside a `tf.function` step is refused outright (GG304).

    Compile once and make one optimizer before the loop; change the learning rate with
    `optimizer.learning_rate.assign(lr)` (or a `LearningRateSchedule`, or the `LearningRateScheduler`
    callback), and train for several epochs with one `fit(epochs=...)`.

    ## References
    - [`Model.compile`](https://keras.io/api/models/model_training_apis/#compile-method)
    - [Learning rate schedules](https://keras.io/api/optimizers/learning_rate_schedules/)
    - [`LearningRateScheduler`](https://keras.io/api/callbacks/learning_rate_scheduler/)
    """

    CODE = "GG305"
    NAME = "model-recompiled-in-loop"
    EFFECTS = frozenset({Effect.RECOMPILE})
    TITLE = "Keras model recompiled in a loop"
    MESSAGE = "{subject} recompiles the model or makes an optimizer in the loop at line {loop_row}"
    ADVICE = (
        "Keras traces its functions again and the optimizer starts over: compile once before the loop and "
        "change the learning rate with optimizer.learning_rate.assign(...) or a schedule"
    )

    FIX_SAFETY = """\
No automatic fix: replacing a recompile with `optimizer.learning_rate.assign(...)` keeps the
optimizer's state (moments, step count), which changes training; whether that is wanted is the
author's decision.
"""

    VALID = (
        # One optimizer per member of an ensemble, made once into a list: a collection, not a rebuild.
        """\
import tensorflow as tf

class Ensemble:
    def __init__(self, members, lr=1e-3):
        self.members = [make_member() for _ in range(members)]
        self.optimizers = [tf.keras.optimizers.Adam(learning_rate=lr) for _ in range(members)]

    def train(self, batches):
        for x, y in batches:
            for member, optimizer in zip(self.members, self.optimizers):
                step(member, optimizer, x, y)
""",
        # The fix: one compile, the learning rate changed in place.
        """\
import tensorflow as tf

model.compile(optimizer=tf.keras.optimizers.Adam(1e-3), loss="mse")
for epoch in range(epochs):
    model.optimizer.learning_rate.assign(1e-3 * 0.95 ** epoch)
    model.fit(x, y, epochs=1, verbose=0)
""",
        # A sweep: each trial is a new model with its own optimizer.
        """\
import tensorflow as tf

for lr in learning_rates:
    tf.keras.backend.clear_session()
    model = tf.keras.Sequential([tf.keras.layers.Dense(10)])
    model.compile(optimizer=tf.keras.optimizers.Adam(lr), loss="mse")
    model.fit(x, y, epochs=5)
""",
        # Two fine-tuning stages: a bounded loop.
        """\
import tensorflow as tf

for stage, lr in [("head", 1e-3), ("all", 1e-5)]:
    base.trainable = stage == "all"
    model.compile(optimizer=tf.keras.optimizers.Adam(lr), loss="sparse_categorical_crossentropy")
    model.fit(train_ds, epochs=5)
""",
        # One optimizer for the whole custom loop.
        """\
import tensorflow as tf

optimizer = tf.keras.optimizers.Adam(1e-3)
for step, (x, y) in enumerate(train_ds):
    with tf.GradientTape() as tape:
        loss = loss_fn(y, model(x, training=True))
    optimizer.apply_gradients(zip(tape.gradient(loss, model.trainable_variables), model.trainable_variables))
""",
        # Each fold builds its model in a helper and compiles it.
        """\
from tensorflow import keras

def build(units):
    return keras.Sequential([keras.layers.Dense(units), keras.layers.Dense(1)])

for train_idx, val_idx in folds:
    keras.backend.clear_session()
    model = build(64)
    model.compile(optimizer=keras.optimizers.Adam(1e-3), loss="mse")
    model.fit(x[train_idx], y[train_idx], epochs=10)
""",
        # A regular expression is compiled, not a model.
        """\
import re
import tensorflow as tf

for line in open("log.txt"):
    if re.compile(r"loss: ([0-9.]+)").search(line):
        print(line)
""",
    )

    INVALID = (
        """\
import tensorflow as tf

model = tf.keras.Sequential([tf.keras.layers.Dense(64, activation="relu"), tf.keras.layers.Dense(10)])
lr = 1e-3
for epoch in range(epochs):
    model.compile(optimizer=tf.keras.optimizers.Adam(lr), loss="sparse_categorical_crossentropy")  # GG305
    model.fit(x_train, y_train, epochs=1)
    lr *= 0.9
""",
        # A custom loop that makes its optimizer anew on every step.
        """\
import tensorflow as tf

for step, (x, y) in enumerate(train_ds):
    optimizer = tf.keras.optimizers.SGD(learning_rate=0.1 / (1 + step))  # GG305
    with tf.GradientTape() as tape:
        loss = loss_fn(y, model(x, training=True))
    optimizer.apply_gradients(zip(tape.gradient(loss, model.trainable_variables), model.trainable_variables))
""",
        # Keras 3 without TensorFlow imports.
        """\
import keras

model = keras.Sequential([keras.layers.Dense(1)])
for epoch in range(num_epochs):
    model.compile(optimizer=keras.optimizers.SGD(0.01 * 0.9 ** epoch), loss="mse")  # GG305
    model.fit(x, y, epochs=1, verbose=0)
""",
        # A helper that recompiles, called per epoch.
        """\
import keras

def set_learning_rate(model, lr):
    model.compile(optimizer=keras.optimizers.Adam(lr), loss="mse")

model = keras.models.load_model("base.keras")
for epoch in range(num_epochs):
    set_learning_rate(model, 1e-3 / (epoch + 1))  # GG305
    model.fit(x, y, epochs=1)
""",
        # A compile on a model handed in, told apart by Keras' own keywords.
        """\
def train(model, data, epochs):
    for epoch in range(epochs):
        model.compile(loss="categorical_crossentropy", optimizer="adam")  # GG305
        model.fit(data, epochs=1)
""",
        # An optimizer per epoch in a custom loop.
        """\
import tensorflow as tf

for epoch in range(epochs):
    optimizer = tf.optimizers.Adam(learning_rate=schedule(epoch))  # GG305
    for x, y in train_ds:
        with tf.GradientTape() as tape:
            loss = loss_fn(y, model(x, training=True))
        optimizer.apply_gradients(zip(tape.gradient(loss, model.trainable_variables), model.trainable_variables))
""",
    )

    FIXES: dict = {}  # no automatic fix: see Fix safety
