"""GG306 keras-fit-per-step."""

from graphguard.analysis.catalog import Effect
from graphguard.rules.base import Rule


class KerasFitPerStep(Rule):
    """
    ## What it does
    Finds Keras `model.fit(x, y)` called in a loop on one sample (`x[None]`, a row of a minibatch), on a
    replay minibatch drawn on every call (`random.sample(memory, 32)` and the arrays and lists filled from
    it), or on a slice of at most 256 rows cut by hand (`x[i:i + 32]`); also a call in the loop of a
    function that fits on such data (a DQN's `replay()` called on every environment step) or on what the
    loop passes it. The model is a Keras model the analysis knows, a parameter used as one in a module
    that uses TensorFlow or Keras, or any object when the call passes a keyword only Keras' `fit` takes
    (`validation_split=`, `steps_per_epoch=`). Not reported: a `fit` on other data the loop changes (a
    shard, the training set shuffled or augmented each epoch), a `fit` that asks for several epochs
    (`epochs=5`) or batches data other than a minibatch itself (`batch_size=`), and a loop that builds a
    new model on every iteration (a sweep or a k-fold: GG201's business).

    ## Why is this bad?
    `fit` is built to train over a dataset: every call makes a data adapter and iterator, callbacks, a
    progress bar and a `History`. Measured on TF 2.21 on a small Dense model and a 64-row minibatch:
    42-44 ms and 16-20 KiB of RSS per `fit` call against 0.8 ms for `train_on_batch` on the same batch
    (about 50x). In a DQN that trains on every step, that fixed cost is most of the run.

    Use `model.train_on_batch(x, y)` for one gradient step on one batch (or a `tf.function` train step
    with `tf.GradientTape`); collect the data and call `fit` once when many steps are wanted.

    ## References
    - [`Model.train_on_batch`](https://keras.io/api/models/model_training_apis/#trainonbatch-method)
      ("Runs a single gradient update on a single batch of data")
    - [`Model.fit`](https://keras.io/api/models/model_training_apis/#fit-method)
    """

    CODE = "GG306"
    NAME = "keras-fit-per-step"
    EFFECTS = frozenset({Effect.FIT})
    TITLE = "Keras fit per step in a loop"
    MESSAGE = "{subject} runs Keras' fit on a small batch in the loop at line {loop_row}"
    ADVICE = (
        "each fit call builds a data pipeline and callbacks: use model.train_on_batch(x, y) for one step"
    )

    FIX_SAFETY = """\
No automatic fix: `fit` splits its input into batches of 32 and returns a `History`, while
`train_on_batch` takes one gradient step on the whole input and returns the loss, so the training and
the value returned change; which one is wanted is the author's decision.
"""

    VALID = (
        # One gradient step per minibatch with train_on_batch: the fix.
        """\
import random

import numpy as np
import tensorflow as tf

class Agent:
    def __init__(self):
        self.model = tf.keras.models.load_model("q.keras")
        self.memory = []

    def replay(self):
        batch = random.sample(self.memory, 32)
        states = np.array([s for s, _ in batch])
        targets = np.array([t for _, t in batch])
        self.model.train_on_batch(states, targets)

agent = Agent()
for step in range(100000):
    agent.replay()
""",
        # One epoch at a time over the whole training set, to check something between epochs.
        """\
import tensorflow as tf

model = tf.keras.Sequential([tf.keras.layers.Dense(10)])
model.compile(optimizer="adam", loss="mse")
for epoch in range(100):
    model.fit(x_train, y_train, epochs=1, verbose=0)
    check(model)
""",
        # A new model per fold: GG201's business, not a per-step fit.
        """\
import tensorflow as tf

for train, test in folds:
    model = tf.keras.Sequential([tf.keras.layers.Dense(1)])
    model.compile(optimizer="adam", loss="mse")
    model.fit(x[train], y[train], epochs=1, verbose=0)
""",
        # Several epochs on each shard: the fixed cost is spread over them.
        """\
import tensorflow as tf

model = tf.keras.models.load_model("base.keras")
for path in shards:
    x, y = load_shard(path)
    model.fit(x, y, epochs=5, verbose=0)
""",
        # TF1 Keras on graphs: fit is a session step there, not this rule's business.
        """\
import tensorflow.compat.v1 as tf
tf.disable_v2_behavior()

model = tf.keras.models.load_model("q.h5")
for x_batch, y_batch in batches():
    model.fit(x_batch, y_batch, verbose=0)
""",
        # scikit-learn's fit is not Keras'.
        """\
from sklearn.linear_model import SGDRegressor

regressor = SGDRegressor()
for x, y in stream:
    regressor.fit(x, y)
""",
    )

    INVALID = (
        # A DQN that fits its replay minibatch on every environment step.
        """\
import random

import numpy as np
import tensorflow as tf

class Agent:
    def __init__(self):
        self.model = tf.keras.models.load_model("q.keras")
        self.memory = []

    def replay(self):
        batch = random.sample(self.memory, 32)
        states = np.array([s for s, _ in batch])
        targets = np.array([t for _, t in batch])
        self.model.fit(states, targets, epochs=1, verbose=0)

agent = Agent()
for step in range(100000):
    agent.replay()  # GG306
""",
        # One sample at a time, on a model the function is given.
        """\
import tensorflow as tf

def learn(model, transitions):
    for state, target in transitions:
        model.fit(state[None], target[None], epochs=1, verbose=0)  # GG306
""",
        # Batch by batch, cut by hand.
        """\
from tensorflow import keras

model = keras.models.load_model("regressor.keras")
for epoch in range(20):
    for i in range(0, len(x_train), 32):
        model.fit(x_train[i:i + 32], y_train[i:i + 32], verbose=0)  # GG306
""",
        # A helper that fits what it is given, called with a minibatch on every step.
        """\
import random

import numpy as np
import tensorflow as tf

model = tf.keras.models.load_model("critic.keras")

def train(states, targets):
    model.fit(states, targets, verbose=0)

for step in range(50000):
    batch = random.sample(memory, 64)
    states = np.array([s for s, _ in batch])
    targets = np.array([t for _, t in batch])
    train(states, targets)  # GG306
""",
        # Keras 3 without TensorFlow imports, one row at a time.
        """\
import keras

model = keras.models.load_model("online.keras")
for i in range(len(x_stream)):
    model.fit(x_stream[i:i + 1], y_stream[i:i + 1], verbose=0)  # GG306
""",
        # An episode loop that fits the state it just saw.
        """\
import numpy as np
from tensorflow.keras.models import load_model

model = load_model("agent.h5")
state = env.reset()
while True:
    action = int(np.argmax(model(state[None], training=False)))
    next_state, reward, done, info = env.step(action)
    target = reward + 0.99 * np.max(model(next_state[None], training=False))
    model.fit(np.array([state]), np.array([[target]]), epochs=1, verbose=0)  # GG306
    state = env.reset() if done else next_state
""",
    )
