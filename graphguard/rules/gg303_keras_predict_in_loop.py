"""GG303 keras-predict-in-loop."""

from graphguard.analysis.catalog import Effect
from graphguard.rules.base import Rule


class KerasPredictInLoop(Rule):
    """
    ## What it does
    Finds Keras `model.predict(x)` (or `predict_classes(x)`, tf.keras before 2.6) called in a loop on one sample (`x[None]`, `x[np.newaxis]`,
    `np.expand_dims(x, 0)`, `x.reshape(1, -1)`, `np.array([x])`, `[x]`, `x[i:i+1]`, or a name bound to
    one of these) or on data the loop changes on every iteration (its target, or a name the body
    assigns: the state of an episode loop, the batch of a batch loop); also a call in the loop of a
    function that predicts on one sample. The model is a Keras model the analysis knows (made by
    `Sequential`, `Model`, `load_model`, a project class or function that builds one), or any object
    when the call passes a keyword only Keras' `predict` takes (`verbose=`, `batch_size=`, `steps=`).
    `predict` on the whole validation set once per epoch is not reported, nor `predict` in a loop whose
    iterations each train a model for several epochs (`fit(..., epochs=100)`, directly or through a
    call: a search or a fold loop evaluating each trial). Nor is `predict_on_batch`:
    measured on TF 2.21 it costs 0.9 ms per call, no more than calling the model.

    ## Why is this bad?
    `predict` is built for large inputs: every call makes a data adapter and iterator, runs callbacks and
    a progress bar, and steps through its batches; Keras' documentation says it "is not intended for use
    inside of loops that iterate over your data and process small numbers of inputs at a time".
    Measured on TF 2.21 and Keras 3 on a small Dense model: 66-79 ms per call on one sample against
    2.1 ms for `model(x, training=False)` (32-37x), and about 20 KB of RSS kept per call.

    Call the model (`model(x, training=False)`, `.numpy()` for an array), or collect the inputs and call
    `predict` once on all of them.

    ## References
    - [`Model.predict`](https://keras.io/api/models/model_training_apis/#predict-method)
      ("For small numbers of inputs that fit in one batch, directly use `__call__()`")
    - [Keras FAQ: what's the difference between `predict()` and `__call__()`?](https://keras.io/getting_started/faq/#whats-the-difference-between-model-methods-predict-and-call)
    """

    CODE = "GG303"
    NAME = "keras-predict-in-loop"
    EFFECTS = frozenset({Effect.PREDICT})
    TITLE = "Keras predict per sample in a loop"
    MESSAGE = "{subject} predicts on one step's data in the loop at line {loop_row}"
    ADVICE = (
        "each predict call builds a data pipeline: call the model (model(x, training=False), or "
        "model.predict_on_batch(x), which --fix writes) or predict once on all the inputs"
    )

    FIX_SAFETY = """\
`--fix` replaces `model.predict(x)` with `model.predict_on_batch(x)`, which runs the model on the one
batch it is given and returns the same NumPy array (or list of arrays); measured on TF 2.21 it costs
0.9 ms per call. The fix is safe when the argument is written as a batch of one (`x[None]`,
`np.expand_dims(x, 0)`, `x.reshape(1, -1)`, `np.array([x])`, `x[i:i+1]`); `verbose=` and
`batch_size=` are dropped (one batch either way). For other data (the loop's batch, a name bound
elsewhere) it is unsafe: `predict` splits a large input into batches of 32, `predict_on_batch` runs it
whole. A call with other arguments, on a dataset or generator (`tf.data`, `datagen.flow(...)`, a name
bound to one: `predict_on_batch` takes only arrays and tensors), or a finding at the call of a helper
that predicts, is not fixed.
Two differences are not counted as a change: `predict_on_batch` prints no progress bar (`predict`
prints `1/1 ━━━ 0s` on every call unless `verbose=0`), and with oneDNN (the default on x86) its float32
results may differ from `predict`'s in the last bits (up to 8e-5 on outputs of about 100, measured
on a SimpleRNN under tf.keras 2; identical with `TF_ENABLE_ONEDNN_OPTS=0` and under Keras 3).
"""

    VALID = (
        # Batched inference over a dataset: a loop over a source that hands out batches (Keras'
        # flow_from_directory, 32 images by default; tf.data's batch(64)) predicts once per batch of
        # a finite dataset, nothing to hoist.
        """\
import numpy as np
import tensorflow as tf
from tensorflow import keras
from tensorflow.keras.preprocessing.image import ImageDataGenerator

encoder = keras.applications.VGG16(include_top=False)
images = ImageDataGenerator(rescale=1 / 255)


def embed(folder, total):
    codes, seen = [], 0
    for pictures, _ in images.flow_from_directory(folder):
        codes.append(encoder.predict(pictures, verbose=0))
        seen += len(pictures)
        if seen >= total:
            break
    return np.concatenate(codes)


def score(table):
    batches = tf.data.Dataset.from_tensor_slices(table).batch(64)
    return [encoder.predict(rows) for rows in batches]
""",
        # A look at the first three batches of a dataset (`take(3)`), or of a generator (`islice`):
        # three predicts, a handful.
        """\
import itertools

import tensorflow as tf

model = tf.keras.models.load_model("forecast.keras")
for x, y in validation.take(3):
    plot(x[0], y[0], model.predict(x[:1])[0])
for x, y in itertools.islice(batches(), 3):
    plot(x[0], y[0], model.predict(x[:1])[0])
""",
        # The fix: call the model on the sample.
        """\
import numpy as np
import tensorflow as tf

model = tf.keras.models.load_model("policy.keras")
state = env.reset()
while True:
    q_values = model(state[None], training=False).numpy()
    state, reward, done, info = env.step(int(np.argmax(q_values)))
    if done:
        state = env.reset()
""",
        # One predict on the whole validation set per epoch.
        """\
import tensorflow as tf

model = tf.keras.Sequential([tf.keras.layers.Dense(10)])
model.compile(optimizer="adam", loss="mse")
for epoch in range(100):
    model.fit(x_train, y_train, epochs=1, verbose=0)
    val_pred = model.predict(x_val, verbose=0)
""",
        # All the inputs in one predict.
        """\
import numpy as np
from tensorflow import keras

model = keras.models.load_model("classifier.keras")
predictions = model.predict(np.stack([load_image(path) for path in paths]), batch_size=64)
""",
        # scikit-learn's predict is not Keras'.
        """\
from sklearn.linear_model import LogisticRegression
import tensorflow as tf

clf = LogisticRegression().fit(features, labels)
for row in rows:
    clf.predict(row.reshape(1, -1))
""",
        # predict_on_batch costs about as much as calling the model (measured 0.9 ms): not reported.
        """\
import tensorflow as tf

model = tf.keras.models.load_model("policy.keras")
for state in states:
    action = model.predict_on_batch(state[None])
""",
        # A trial loop: each iteration trains the model for many epochs, then evaluates it once on the
        # held-out split; that predict is the trial's evaluation, not a per-step cost.
        """\
import tensorflow as tf

model = tf.keras.Sequential([tf.keras.layers.Dense(1)])
model.compile(loss="mse", optimizer="adam")
for seed in range(500):
    x_fit, x_held = split(features, seed)
    model.fit(x_fit, labels, epochs=100, verbose=0)
    scores.append(model.predict(x_held))
""",
        # TF1 Keras on graphs: predict is a session step there, not this rule's business.
        """\
import tensorflow.compat.v1 as tf
tf.disable_v2_behavior()

model = tf.keras.models.load_model("policy.h5")
for state in states:
    action = model.predict(state[None])
""",
    )

    INVALID = (
        # An agent asks for Q-values one state at a time.
        """\
import numpy as np
import tensorflow as tf

model = tf.keras.models.load_model("policy.keras")
state = env.reset()
while True:
    q_values = model.predict(state[None])  # GG303
    state, reward, done, info = env.step(int(np.argmax(q_values)))
    if done:
        state = env.reset()
""",
        # One image at a time, through a helper.
        """\
import numpy as np
from tensorflow import keras

model = keras.Sequential([keras.layers.Flatten(), keras.layers.Dense(10)])

def classify(image):
    batch = np.expand_dims(image, axis=0)
    return int(np.argmax(model.predict(batch)))

labels = [classify(image) for image in images]  # GG303
""",
        # Batch by batch, with Keras' own keyword, in a helper module that imports nothing.
        """\
def score(model, batches):
    scores = []
    for batch in batches:
        scores.append(model.predict(batch, verbose=0))  # GG303
    return scores
""",
        # Keras 3 without TensorFlow imports, one row at a time.
        """\
import keras

model = keras.models.load_model("regressor.keras")
for i in range(len(x_test)):
    y = model.predict(x_test[i:i + 1])  # GG303
""",
        # A project model class, one reshaped image at a time.
        """\
from tensorflow import keras

class Classifier(keras.Model):
    def __init__(self):
        super().__init__()
        self.dense = keras.layers.Dense(10)

    def call(self, x):
        return self.dense(x)

net = Classifier()
for image in images:
    print(net.predict(image.reshape(1, 784)))  # GG303
""",
        # A game loop that wraps the frame in a list.
        """\
import numpy as np
from tensorflow.keras.models import load_model

model = load_model("agent.h5")
frame = game.reset()
while not game.over:
    move = np.argmax(model.predict(np.array([frame])))  # GG303
    frame = game.play(move)
""",
        # A source that hands out one image at a time is one sample per predict.
        """\
from tensorflow import keras
from tensorflow.keras.preprocessing.image import ImageDataGenerator

encoder = keras.applications.VGG16(include_top=False)
for picture, _ in ImageDataGenerator().flow_from_directory("photos", batch_size=1):
    print(encoder.predict(picture).shape)  # GG303
""",
    )

    #: What ``--fix --unsafe-fixes`` makes of INVALID[i] (Fixit's expected_replacement); the tests
    #: check it, the docs show it.
    FIXES = {
        6: """\
from tensorflow import keras
from tensorflow.keras.preprocessing.image import ImageDataGenerator

encoder = keras.applications.VGG16(include_top=False)
for picture, _ in ImageDataGenerator().flow_from_directory("photos", batch_size=1):
    print(encoder.predict_on_batch(picture).shape)  # GG303
""",
        0: """\
import numpy as np
import tensorflow as tf

model = tf.keras.models.load_model("policy.keras")
state = env.reset()
while True:
    q_values = model.predict_on_batch(state[None])  # GG303
    state, reward, done, info = env.step(int(np.argmax(q_values)))
    if done:
        state = env.reset()
""",
        2: """\
def score(model, batches):
    scores = []
    for batch in batches:
        scores.append(model.predict_on_batch(batch))  # GG303
    return scores
""",
        3: """\
import keras

model = keras.models.load_model("regressor.keras")
for i in range(len(x_test)):
    y = model.predict_on_batch(x_test[i:i + 1])  # GG303
""",
        4: """\
from tensorflow import keras

class Classifier(keras.Model):
    def __init__(self):
        super().__init__()
        self.dense = keras.layers.Dense(10)

    def call(self, x):
        return self.dense(x)

net = Classifier()
for image in images:
    print(net.predict_on_batch(image.reshape(1, 784)))  # GG303
""",
        5: """\
import numpy as np
from tensorflow.keras.models import load_model

model = load_model("agent.h5")
frame = game.reset()
while not game.over:
    move = np.argmax(model.predict_on_batch(np.array([frame])))  # GG303
    frame = game.play(move)
""",
    }
