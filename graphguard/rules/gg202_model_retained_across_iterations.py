"""GG202 model-retained-across-iterations."""

from graphguard.analysis.catalog import Effect
from graphguard.rules.base import Rule


class ModelRetainedAcrossIterations(Rule):
    """
    ## What it does
    Finds a loop that keeps the model it makes and trains (or evaluates, or hands to other code) on
    each iteration in a container that outlives the loop:
    `models.append(model)`, `solvers[lr] = solver`, `results.append((score, model))`,
    `self.models += [model]`, `by_fold.setdefault(fold, []).append(model)`, a comprehension of
    trained models (`[train(units) for units in grid]`), `histories.append(model.fit(...))` (a Keras `History` refers to its
    model). A model here is a Keras model, an object of a class named like one
    (`TwoLayerNet`, `ResNet`, `LinearModel`, `Solver`; a project class so named needs a training
    method such as `loss`, `train` or `fit`), a `tf.Graph` or session, or what a project function
    returns when it returns one of these. Keeping one value (`best_model = model`,
    `best["model"] = model`) is fine, and so is a container made inside the loop, and one the
    function returns (`return models`: the ensemble it builds, kept on purpose). Another ensemble
    that needs every member after the loop keeps them on purpose too: save each member to disk and
    keep the paths, or suppress the finding with `# noqa: GG202`.

    ## Why is this bad?
    A kept reference keeps the whole model alive: its weights, its gradients and optimizer state, and
    what it refers to (a solver holds its model, its data and its history). `del model`,
    `gc.collect()` and `tf.keras.backend.clear_session()` cannot free an object that a list or dict
    still holds, so memory grows by one model per iteration until the sweep swaps or is killed, and
    every later trial runs slower.

    Keep what the comparison needs: the scores, the best model (one name, replaced when a better one
    comes), or its weights (`model.get_weights()`, `solver.best_params`).

    ## References
    - [Python `gc` module: objects are freed when no reference to them remains](https://docs.python.org/3/library/gc.html)
    - [`tf.keras.backend.clear_session`](https://www.tensorflow.org/api_docs/python/tf/keras/backend/clear_session)
    """

    CODE = "GG202"
    NAME = "model-retained-across-iterations"
    EFFECTS = frozenset({Effect.RETAINED})
    TITLE = "Models kept across loop iterations"
    MESSAGE = "{subject} keeps each model of the loop at line {loop_row} alive"

    @classmethod
    def message(cls, subject: str, loop_row: int, via=None, kind: str = "", outer_row: int = 0,
                path: str | None = None) -> str:
        """As :meth:`Rule.message`; a search driver's trials are named as such (``keeps the model of
        every trial of the search at line 12 alive``)."""
        text = super().message(subject, loop_row, via, kind, outer_row, path)
        if kind == "search":
            text = text.replace(f"each model of the loop at line {loop_row}",
                                f"the model of every trial of the search at line {loop_row}", 1)
        return text
    ADVICE = (
        "no earlier iteration's model can be freed (not by del, gc.collect() or clear_session()): keep only "
        "what you need (the scores, the best model, its weights)"
    )

    VALID = (
        # A function that builds an ensemble and returns it: keeping every member is its purpose.
        """\
import tensorflow as tf

def train_ensemble(x, y, seeds):
    members = []
    for seed in seeds:
        tf.keras.utils.set_random_seed(seed)
        member = tf.keras.Sequential([tf.keras.layers.Dense(1)])
        member.compile(optimizer="adam", loss="mse")
        member.fit(x, y, epochs=5, verbose=0)
        members.append(member)
    return members
""",
        # The fix for the first INVALID example: keep the scores and the best model only.
        """\
results = {}
best_val, best_model = -1.0, None
for lr in learning_rates:
    model = TwoLayerNet(input_dim=3072, hidden_dim=100, num_classes=10)
    solver = Solver(model, data, optim_config={"learning_rate": lr}, num_epochs=5)
    solver.train()
    results[lr] = solver.best_val_acc
    if solver.best_val_acc > best_val:
        best_val, best_model = solver.best_val_acc, model
""",
        # A Keras k-fold that keeps each fold's score and the weights of the best fold only.
        """\
from tensorflow import keras

scores, best_weights, best_score = [], None, 0.0
for train_idx, val_idx in kfold.split(x):
    keras.backend.clear_session()
    model = keras.Sequential([keras.layers.Dense(32, activation="relu"), keras.layers.Dense(10)])
    model.compile(optimizer="adam", loss="sparse_categorical_crossentropy", metrics=["accuracy"])
    model.fit(x[train_idx], y[train_idx], epochs=3, verbose=0)
    score = model.evaluate(x[val_idx], y[val_idx], verbose=0)[1]
    scores.append(score)
    if score > best_score:
        best_score, best_weights = score, model.get_weights()
""",
        # The helper trains and releases its model, returning only numbers: nothing is kept.
        """\
import tensorflow as tf

def run_trial(lr):
    tf.keras.backend.clear_session()
    model = tf.keras.Sequential([tf.keras.layers.Dense(10)])
    model.compile(optimizer=tf.keras.optimizers.SGD(lr), loss="mse")
    return model.fit(x, y, epochs=2).history["loss"][-1]

losses = []
for lr in (0.1, 0.01, 0.001):
    losses.append(run_trial(lr))
""",
        # A while loop that snapshots one model's weights: the model is made once, before the loop.
        """\
from tensorflow import keras

model = keras.Sequential([keras.layers.Dense(10)])
model.compile(optimizer="adam", loss="mse")
snapshots = []
epoch = 0
while epoch < 20:
    model.fit(x, y, epochs=1, verbose=0)
    snapshots.append(model.get_weights())
    epoch += 1
""",
        # Nested loops keeping each pair's accuracy, and the best network under a constant key.
        """\
accuracies, best = {}, {}
for reg in [0.0, 1e-3]:
    for lr in [1e-3, 1e-2]:
        net = TwoLayerNet(hidden_dim=50, reg=reg)
        acc = train(net, lr)
        accuracies[(lr, reg)] = acc
        if acc > best.get("acc", 0.0):
            best["acc"], best["model"] = acc, net
""",
        # Blocks collected while one network is assembled: never trained on their own.
        """\
import tensorflow as tf

class ConvBlock(tf.keras.Model):
    def __init__(self, filters):
        super().__init__()
        self.conv = tf.keras.layers.Conv2D(filters, 3)

    def call(self, x):
        return self.conv(x)

class Backbone(tf.keras.Model):
    def __init__(self):
        super().__init__()
        self.blocks = []
        for filters in (32, 64, 128):
            self.blocks.append(ConvBlock(filters))

    def call(self, x):
        for block in self.blocks:
            x = block(x)
        return x
""",
        # Histories as plain dicts of numbers, not the models.
        """\
import tensorflow as tf

histories = {}
for batch_size in batch_sizes:
    tf.keras.backend.clear_session()
    model = tf.keras.Sequential([tf.keras.layers.Dense(1)])
    model.compile(optimizer="adam", loss="mse")
    histories[batch_size] = model.fit(x, y, batch_size=batch_size, verbose=0).history
""",
        # A hyperopt objective that returns the loss alone: Trials keeps numbers, not models.
        """\
from hyperopt import STATUS_OK, fmin, hp, tpe
from tensorflow import keras

def objective(params):
    keras.backend.clear_session()
    model = keras.Sequential([keras.layers.Dense(params["units"]), keras.layers.Dense(1)])
    model.compile(optimizer="adam", loss="mse")
    loss = model.fit(x, y, epochs=5, verbose=0).history["loss"][-1]
    return {"loss": loss, "status": STATUS_OK}

best = fmin(objective, {"units": hp.choice("units", [16, 64, 256])}, algo=tpe.suggest, max_evals=100)
""",
    )

    INVALID = (
        """\
results = {}
solvers = {}
for lr in learning_rates:
    model = TwoLayerNet(input_dim=3072, hidden_dim=100, num_classes=10)
    solver = Solver(model, data, optim_config={"learning_rate": lr}, num_epochs=5)
    solver.train()
    results[lr] = solver.best_val_acc
    solvers[lr] = solver  # GG202
""",
        # A release in a helper does not help: the list still holds every fold's model.
        """\
from tensorflow import keras

def release():
    keras.backend.clear_session()

models = []
for train_idx, val_idx in kfold.split(x):
    model = keras.Sequential([keras.layers.Dense(32, activation="relu"), keras.layers.Dense(10)])
    model.compile(optimizer="adam", loss="sparse_categorical_crossentropy")
    model.fit(x[train_idx], y[train_idx], epochs=3, verbose=0)
    models.append(model)  # GG202
    release()
""",
        # A while loop keeping (score, model) pairs to pick the best one afterwards.
        """\
import keras

trials = []
trial = 0
while trial < 20:
    keras.utils.clear_session()
    units = sample_units()
    model = keras.Sequential([keras.layers.Dense(units), keras.layers.Dense(1)])
    model.compile(optimizer="adam", loss="mse")
    score = model.fit(x, y, verbose=0).history["loss"][-1]
    trials.append((score, model))  # GG202
    trial += 1
best_score, best_model = min(trials, key=lambda t: t[0])
""",
        # Under SweepGuard: `trial.track(x)` returns `x`, still kept in the dict.
        """\
from graphguard import SweepGuard

sweep = SweepGuard()
solvers = {}
for lr in learning_rates:
    with sweep.trial(f"lr={lr:g}") as trial:
        solver = trial.track(Solver(TwoLayerNet(hidden_dim=100), data, learning_rate=lr))
        solver.train()
        solvers[lr] = solver  # GG202
""",
        # Nested loops: every (lr, reg) pair's network stays in the results dict.
        """\
results = {}
for lr in learning_rates:
    for reg in regularizations:
        net = TwoLayerNet(hidden_dim=50, reg=reg)
        val_acc = train(net, lr)
        results[(lr, reg)] = (val_acc, net)  # GG202
""",
        # The model comes from a helper that returns it.
        """\
import tensorflow as tf

def train_model(lr):
    model = tf.keras.Sequential([tf.keras.layers.Dense(10)])
    model.compile(optimizer=tf.keras.optimizers.Adam(lr), loss="mse")
    model.fit(x, y, epochs=2)
    return model

ensemble = []
for lr in learning_rates:
    tf.keras.backend.clear_session()
    ensemble.append(train_model(lr))  # GG202
""",
        # Keras' History keeps its model (`history.model`): clear_session() cannot free any of them.
        """\
import tensorflow as tf

histories = {}
for batch_size in batch_sizes:
    tf.keras.backend.clear_session()
    model = tf.keras.Sequential([tf.keras.layers.Dense(1)])
    model.compile(optimizer="adam", loss="mse")
    histories[batch_size] = model.fit(x, y, batch_size=batch_size, verbose=0)  # GG202
""",
        # An attribute that outlives the loop: the sweep object holds every trial's graph.
        """\
import tensorflow.compat.v1 as tf

class Sweep:
    def __init__(self):
        self.graphs = []

    def run(self, configs):
        for config in configs:
            graph = tf.Graph()
            with graph.as_default():
                train(config)
            self.graphs += [graph]  # GG202
""",
        # hyperopt keeps every dict the objective returns (`Trials.results`): each trial's model too.
        """\
from hyperopt import STATUS_OK, Trials, fmin, hp, tpe
from tensorflow import keras

def objective(params):
    keras.backend.clear_session()
    model = keras.Sequential([keras.layers.Dense(params["units"]), keras.layers.Dense(1)])
    model.compile(optimizer="adam", loss="mse")
    loss = model.fit(x, y, epochs=5, verbose=0).history["loss"][-1]
    return {"loss": loss, "status": STATUS_OK, "model": model}

trials = Trials()
best = fmin(objective, {"units": hp.choice("units", [16, 64, 256])}, algo=tpe.suggest, max_evals=100, trials=trials)  # GG202
""",
    )

    #: The "Fix safety" section of the docs (ruff's heading).
    FIX_SAFETY = """\
No automatic fix: what to keep of each iteration (its score, its weights on disk) instead of the
model is the user's decision.
"""

    FIXES: dict = {}  # no automatic fix: see Fix safety
