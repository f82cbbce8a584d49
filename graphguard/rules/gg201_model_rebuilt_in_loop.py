"""GG201 model-rebuilt-in-loop."""

from graphguard.analysis.catalog import Effect
from graphguard.rules.base import Rule


class ModelRebuiltInLoop(Rule):
    """
    ## What it does
    Finds a Keras model (`Sequential`, `Model`, a functional model, a `tf.keras.Model` subclass,
    `load_model`, `clone_model`, an application such as `ResNet50`, or a project function that builds
    one) made on every iteration of a loop and used there as a trial (compiled, trained, evaluated,
    saved, or handed to other code: a hyperparameter sweep, a k-fold, a search), with no release in that
    iteration: no `tf.keras.backend.clear_session()` (called directly or in a function the loop calls),
    no fresh `tf.Graph()`, no `tf.reset_default_graph()`. Any loop counts, not only a loop that runs
    session steps, and a helper that builds and trains a model is reported at its call in the loop.
    A hyperparameter-search driver that calls an objective once per trial (Optuna's
    `study.optimize(objective)`, Hyperopt's `fmin(fn=objective)`, scikit-optimize's `gp_minimize`,
    `BayesianOptimization(f=...)`) is such a loop, at the driver's line, and so is a scikit-learn wrapper
    (`KerasClassifier(build_fn=...)`) given to `GridSearchCV`, `RandomizedSearchCV` or `cross_val_score`,
    which fit it candidates × folds times (+1 refit).
    A loop that runs at most `max-bounded-iterations` times in all (a 5-fold split, `max_evals=10`) is a
    handful of models and is not reported; in TF 2 Keras code, where an old model costs memory but no
    step time, up to three times that (a 15-fold cross-validation).
    Blocks made in a loop while one model is put together (`self.blocks.append(Block(f))`,
    `x = keras.Sequential([...])(x)`) are parts of that model, not trials.

    ## Why is this bad?
    What a model leaves behind outlives the model until `clear_session()`. In TF1 graph mode, and with
    `tf.keras` before Keras 3, every model's ops stay in the default graph (or Keras' session graph):
    trial *n* builds into a graph *n* times as large, so later trials run slower and the process grows
    until it swaps or is killed; `del model` does not help while the graph holds the ops. With Keras 3 on
    TF 2 the model itself is freed, but its traced functions, layer names and optimizer state build
    up: measured on TF 2.21, about 5.2 MB of RSS per small model built and fit without `clear_session()`,
    3.7 MB with it (more for real models; `graphguard demo sweep` shows the per-fold figures).

    Call `tf.keras.backend.clear_session()` (`keras.utils.clear_session()` in Keras 3) at the start (or
    end) of each iteration, or build each trial in its own graph (`with tf.Graph().as_default():` in
    TF1). Keep what you need from a trial (its scores, the best model's weights) outside the model.
    On Keras 3 (TensorFlow 2.16 and later), `clear_session()` frees little of what a model leaves:
    measured on TF 2.21 with Keras 3.15, 40 small models built and fit one after another grew RSS by
    4.2 MiB per model without it and 3.7 MiB with it. The rest is TensorFlow's function library, freed
    with the process: for a long Keras 3 sweep, run each trial (or each few) in a worker process (a
    `multiprocessing` pool with `maxtasksperchild=1`, or a tuner's process workers). `graphguard run
    --sweep` shows what is left as its RSS trend.

    ## References
    - [`tf.keras.backend.clear_session`](https://www.tensorflow.org/api_docs/python/tf/keras/backend/clear_session)
    - [`tf.compat.v1.reset_default_graph`](https://www.tensorflow.org/api_docs/python/tf/compat/v1/reset_default_graph)
    """

    CODE = "GG201"
    NAME = "model-rebuilt-in-loop"
    EFFECTS = frozenset({Effect.MODEL})
    TITLE = "Keras model rebuilt in a loop without release"
    MESSAGE = "{subject} makes a Keras model in the loop at line {loop_row} without clear_session()"
    ADVICE = (
        "call tf.keras.backend.clear_session() (keras.utils.clear_session() in Keras 3) in each iteration, or"
        " build each trial in its own tf.Graph(); on Keras 3 clear_session() frees little of each model's"
        " residue (4.2 -> 3.7 MiB measured), a worker process per trial all of it"
    )

    VALID = (
        # The fold count is a parameter that every call in the module fixes (or leaves at its default):
        # at most five models, a handful.
        """\
import tensorflow as tf

def cross_validate(folds, n_folds=5):
    scores = []
    for train, valid in folds[:n_folds]:
        model = tf.keras.Sequential([tf.keras.layers.Dense(1)])
        model.compile(optimizer="adam", loss="mse")
        model.fit(*train, epochs=3)
        scores.append(model.evaluate(*valid))
    return scores

cross_validate(load_folds(), 3)
cross_validate(load_folds())
""",
        # The fix for the first INVALID example: Keras state is cleared at the start of every trial.
        """\
import tensorflow as tf

scores = {}
for lr in [1e-2, 1e-3, 1e-4]:
    tf.keras.backend.clear_session()
    model = tf.keras.Sequential([tf.keras.layers.Dense(64, activation="relu"), tf.keras.layers.Dense(10)])
    model.compile(optimizer=tf.keras.optimizers.Adam(lr), loss="sparse_categorical_crossentropy")
    model.fit(x_train, y_train, epochs=5)
    scores[lr] = model.evaluate(x_val, y_val)
""",
        # The release is in a helper that every fold calls.
        """\
import keras
from keras import layers

def release():
    keras.backend.clear_session()

def build_model():
    inputs = keras.Input(shape=(64,))
    outputs = layers.Dense(10)(layers.Dense(128, activation="relu")(inputs))
    return keras.Model(inputs, outputs)

for fold, (train_idx, val_idx) in enumerate(kfold.split(x)):
    model = build_model()
    model.compile(optimizer="adam", loss="sparse_categorical_crossentropy")
    model.fit(x[train_idx], y[train_idx], epochs=3)
    score = model.evaluate(x[val_idx], y[val_idx])
    release()
""",
        # Keeping only the best model's weights, with a release per trial: fine.
        """\
from tensorflow import keras

best_score, best_weights = 0.0, None
units = 16
while units <= 256:
    keras.backend.clear_session()
    model = keras.Sequential([keras.layers.Dense(units, activation="relu"), keras.layers.Dense(1)])
    model.compile(optimizer="adam", loss="mse")
    history = model.fit(x, y, validation_split=0.2, epochs=10, verbose=0)
    score = -min(history.history["val_loss"])
    if best_weights is None or score > best_score:
        best_score, best_weights = score, model.get_weights()
    units *= 2
""",
        # TF1 graph mode: each trial builds into a fresh graph.
        """\
import tensorflow.compat.v1 as tf

for dropout in [0.1, 0.3, 0.5]:
    with tf.Graph().as_default():
        model = tf.keras.models.Sequential([tf.keras.layers.Dropout(dropout), tf.keras.layers.Dense(10)])
        model.compile(optimizer="sgd", loss="mse")
        model.fit(x, y, epochs=2)
""",
        # Nested loops: the inner loop clears the session on every fold.
        """\
import tensorflow as tf
from tensorflow.keras.models import load_model

for lr in learning_rates:
    for fold in range(5):
        tf.keras.backend.clear_session()
        model = load_model("base.keras")
        model.optimizer.learning_rate = lr
        model.fit(folds[fold], epochs=2)
""",
        # Sub-models made in a loop while one model is assembled are its blocks, not trials.
        """\
import tensorflow as tf

class ResidualBlock(tf.keras.Model):
    def __init__(self, filters):
        super().__init__()
        self.conv = tf.keras.layers.Conv2D(filters, 3, padding="same")

    def call(self, x):
        return x + self.conv(x)

class ResNet(tf.keras.Model):
    def __init__(self, stages=(16, 32, 64)):
        super().__init__()
        self.stages = [ResidualBlock(filters) for filters in stages]
        self.head = tf.keras.layers.Dense(10)

    def call(self, x):
        for stage in self.stages:
            x = stage(x)
        return self.head(x)
""",
        # An Optuna objective that clears Keras' state at the start of every trial.
        """\
import optuna
import tensorflow as tf

def objective(trial):
    tf.keras.backend.clear_session()
    units = trial.suggest_int("units", 16, 256, log=True)
    model = tf.keras.Sequential([tf.keras.layers.Dense(units, activation="relu"), tf.keras.layers.Dense(10)])
    model.compile(optimizer="adam", loss="sparse_categorical_crossentropy", metrics=["accuracy"])
    model.fit(x_train, y_train, epochs=3, verbose=0)
    return model.evaluate(x_val, y_val, verbose=0)[1]

study = optuna.create_study(direction="maximize")
study.optimize(objective, n_trials=50)
""",
        # One model built before the loop, trained on each fold: nothing is rebuilt.
        """\
from tensorflow import keras

model = keras.Sequential([keras.layers.Dense(10)])
model.compile(optimizer="adam", loss="mse")
initial = model.get_weights()
for x_fold, y_fold in folds:
    model.set_weights(initial)
    model.fit(x_fold, y_fold, epochs=3)
""",
    )

    INVALID = (
        """\
import tensorflow as tf

scores = {}
for lr in learning_rates:
    model = tf.keras.Sequential([tf.keras.layers.Dense(64, activation="relu"), tf.keras.layers.Dense(10)])  # GG201
    model.compile(optimizer=tf.keras.optimizers.Adam(lr), loss="sparse_categorical_crossentropy")
    model.fit(x_train, y_train, epochs=5)
    scores[lr] = model.evaluate(x_val, y_val)
""",
        # The model is built in a helper: reported at the call in the loop.
        """\
import keras
from keras import layers

def build_model():
    inputs = keras.Input(shape=(64,))
    outputs = layers.Dense(10)(layers.Dense(128, activation="relu")(inputs))
    return keras.Model(inputs, outputs)

for fold, (train_idx, val_idx) in enumerate(kfold.split(x)):
    model = build_model()  # GG201
    model.compile(optimizer="adam", loss="sparse_categorical_crossentropy")
    model.fit(x[train_idx], y[train_idx], epochs=3)
    score = model.evaluate(x[val_idx], y[val_idx])
""",
        # A while loop; keeping only the best weights does not release the models built.
        """\
from tensorflow import keras

best_score, best_weights = 0.0, None
units = 16
while units <= 256:
    model = keras.Sequential([keras.layers.Dense(units, activation="relu"), keras.layers.Dense(1)])  # GG201
    model.compile(optimizer="adam", loss="mse")
    history = model.fit(x, y, validation_split=0.2, epochs=10, verbose=0)
    score = -min(history.history["val_loss"])
    if best_weights is None or score > best_score:
        best_score, best_weights = score, model.get_weights()
    units *= 2
""",
        # Nested loops: the release runs once per learning rate, but five models are built per rate.
        """\
import tensorflow as tf
from tensorflow.keras.models import load_model

for lr in learning_rates:
    tf.keras.backend.clear_session()
    for fold in range(5):
        model = load_model("base.keras")  # GG201
        model.optimizer.learning_rate = lr
        model.fit(folds[fold], epochs=2)
""",
        # A subclassed model, made in a trial function that the search loop calls.
        """\
import tensorflow as tf

class Classifier(tf.keras.Model):
    def __init__(self, units):
        super().__init__()
        self.hidden = tf.keras.layers.Dense(units, activation="relu")
        self.out = tf.keras.layers.Dense(10)

    def call(self, x):
        return self.out(self.hidden(x))

def run_trial(units):
    model = Classifier(units)
    model.compile(optimizer="adam", loss="sparse_categorical_crossentropy")
    return model.fit(x, y, epochs=3).history["loss"][-1]

losses = [run_trial(units) for units in unit_choices]  # GG201
""",
        # Optuna calls the objective once per trial: the driver is the loop.
        """\
import optuna
import tensorflow as tf

def objective(trial):
    units = trial.suggest_int("units", 16, 256, log=True)
    model = tf.keras.Sequential([tf.keras.layers.Dense(units, activation="relu"), tf.keras.layers.Dense(10)])
    model.compile(optimizer="adam", loss="sparse_categorical_crossentropy", metrics=["accuracy"])
    model.fit(x_train, y_train, epochs=3, verbose=0)
    return model.evaluate(x_val, y_val, verbose=0)[1]

study = optuna.create_study(direction="maximize")
study.optimize(objective, n_trials=50)  # GG201
""",
        # clone_model per fold; `del` and gc.collect() do not clear Keras' state.
        """\
import gc
from tensorflow import keras

for fold in range(num_folds):
    model = keras.models.clone_model(base_model)  # GG201
    model.compile(optimizer="adam", loss="mse")
    model.fit(x_folds[fold], y_folds[fold])
    del model
    gc.collect()
""",
    )

    #: The "Fix safety" section of the docs (ruff's heading).
    FIX_SAFETY = """\
Unsafe (`--unsafe-fixes`): `clear_session()` is inserted as the first statement of the loop body,
spelled with the file's own import (`tf.keras.backend.clear_session()`, `keras.backend...`). It frees
the previous iteration's model, so it is wrong when later code still uses an earlier model (keep its
score or its weights instead). No fix for a comprehension or a driver such as `study.optimize`.
"""

    #: What ``--fix --unsafe-fixes`` makes of INVALID[i] (Fixit's expected_replacement); the tests
    #: check it, the docs show it.
    FIXES = {
        0: """\
import tensorflow as tf

scores = {}
for lr in learning_rates:
    tf.keras.backend.clear_session()
    model = tf.keras.Sequential([tf.keras.layers.Dense(64, activation="relu"), tf.keras.layers.Dense(10)])  # GG201
    model.compile(optimizer=tf.keras.optimizers.Adam(lr), loss="sparse_categorical_crossentropy")
    model.fit(x_train, y_train, epochs=5)
    scores[lr] = model.evaluate(x_val, y_val)
""",
        1: """\
import keras
from keras import layers

def build_model():
    inputs = keras.Input(shape=(64,))
    outputs = layers.Dense(10)(layers.Dense(128, activation="relu")(inputs))
    return keras.Model(inputs, outputs)

for fold, (train_idx, val_idx) in enumerate(kfold.split(x)):
    keras.backend.clear_session()
    model = build_model()  # GG201
    model.compile(optimizer="adam", loss="sparse_categorical_crossentropy")
    model.fit(x[train_idx], y[train_idx], epochs=3)
    score = model.evaluate(x[val_idx], y[val_idx])
""",
        2: """\
from tensorflow import keras

best_score, best_weights = 0.0, None
units = 16
while units <= 256:
    keras.backend.clear_session()
    model = keras.Sequential([keras.layers.Dense(units, activation="relu"), keras.layers.Dense(1)])  # GG201
    model.compile(optimizer="adam", loss="mse")
    history = model.fit(x, y, validation_split=0.2, epochs=10, verbose=0)
    score = -min(history.history["val_loss"])
    if best_weights is None or score > best_score:
        best_score, best_weights = score, model.get_weights()
    units *= 2
""",
        3: """\
import tensorflow as tf
from tensorflow.keras.models import load_model

for lr in learning_rates:
    tf.keras.backend.clear_session()
    for fold in range(5):
        tf.keras.backend.clear_session()
        model = load_model("base.keras")  # GG201
        model.optimizer.learning_rate = lr
        model.fit(folds[fold], epochs=2)
""",
        6: """\
import gc
from tensorflow import keras

for fold in range(num_folds):
    keras.backend.clear_session()
    model = keras.models.clone_model(base_model)  # GG201
    model.compile(optimizer="adam", loss="mse")
    model.fit(x_folds[fold], y_folds[fold])
    del model
    gc.collect()
""",
    }
