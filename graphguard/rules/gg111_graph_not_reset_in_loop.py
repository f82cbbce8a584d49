"""GG111 graph-not-reset-in-loop."""

from graphguard.analysis.catalog import Effect
from graphguard.rules.base import Rule


class GraphNotResetInLoop(Rule):
    """
    ## What it does
    Finds a loop (a hyperparameter sweep, a k-fold) that builds a model and opens a new session on
    every iteration in the same default graph, without `tf.reset_default_graph()`,
    `tf.keras.backend.clear_session()` or a fresh `tf.Graph()` in that iteration. It is reported once,
    at the session opened in the loop.

    The model building directly in such a loop's body (ops, helper calls that build them,
    `sess.run(tf.global_variables_initializer())`, an imported meta graph) is then not reported call by
    call; constructions inside an inner step loop still are (GG101-GG110). A loop that builds no model
    and only re-initializes local variables or tables in each new session (an evaluator per
    checkpoint) is GG103 instead.

    ## Why is this bad?
    Closing the session does not free the graph: every trial's model stays in the default graph, so
    trial *n* runs on a graph *n* times as large, the first trial is fast and later ones crawl, and the
    process grows until it swaps or is killed.

    Give each iteration its own graph (`with tf.Graph().as_default():`) or reset the default graph at
    the start of each iteration.

    ## References
    - [`tf.compat.v1.reset_default_graph`](https://www.tensorflow.org/api_docs/python/tf/compat/v1/reset_default_graph)
    """

    CODE = "GG111"
    NAME = "graph-not-reset-in-loop"
    EFFECTS = frozenset({Effect.REBUILT_GRAPH})
    TITLE = "Graph not reset in a model-building loop"
    MESSAGE = "{subject} in the loop at line {loop_row} opens sessions on one growing default graph"
    ADVICE = (
        "each iteration builds its ops again into the same graph: give each iteration its own graph (with "
        "tf.Graph().as_default():) or call tf.reset_default_graph() first"
    )

    VALID = (
        # A cached builder: the model and its session are made on the first request only.
        """\
import functools

import tensorflow.compat.v1 as tf
from flask import Flask, request

app = Flask(__name__)

@functools.lru_cache(maxsize=4)
def get_predictor(checkpoint):
    images = tf.placeholder(tf.float32, [None, 224, 224, 3])
    scores = build_network(images)
    sess = tf.Session()
    tf.train.Saver().restore(sess, checkpoint)
    return lambda batch: sess.run(scores, {images: batch})

@app.route("/predict", methods=["POST"])
def predict():
    return {"scores": get_predictor("model.ckpt")(decode(request.data)).tolist()}
""",
        # The fix for the first INVALID example: each trial builds into its own graph.
        """\
import tensorflow as tf

for lr in [0.1, 0.01, 0.001]:
    with tf.Graph().as_default():
        loss = build_model()
        train_op = tf.train.GradientDescentOptimizer(lr).minimize(loss)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            for step in range(1000):
                sess.run(train_op)
""",
        # The default graph is reset at the start of every fold.
        """\
import tensorflow.compat.v1 as tf

for fold, (train_idx, test_idx) in enumerate(kfold.split(x)):
    tf.reset_default_graph()
    logits = build_model(inputs)
    train_op = tf.train.AdamOptimizer(1e-3).minimize(tf.losses.softmax_cross_entropy(labels, logits))
    sess = tf.Session()
    sess.run(tf.global_variables_initializer())
    for step in range(2000):
        sess.run(train_op, batch(train_idx))
    sess.close()
""",
        # Keras: clear_session() per trial resets the graph that the next model is built into.
        """\
import tensorflow as tf
from keras import backend as K

for params in sample_params(20):
    K.clear_session()
    model = build_keras_model(params)
    labels = tf.placeholder(tf.float32, [None, 10])
    loss = tf.reduce_mean(K.categorical_crossentropy(labels, model.output))
    train_op = tf.train.AdamOptimizer(params["lr"]).minimize(loss)
    sess = tf.Session()
    K.set_session(sess)
    sess.run(tf.global_variables_initializer())
    for xs, ys in batches:
        sess.run(train_op, {model.input: xs, labels: ys})
""",
        # A graph object per fold, entered together with a session on it.
        """\
from tensorflow.compat import v1

for fold in range(5):
    g = v1.Graph()
    with g.as_default(), v1.Session(graph=g) as sess:
        loss = v1.reduce_mean(build_model(fold))
        train_op = v1.train.AdamOptimizer().minimize(loss)
        sess.run(v1.global_variables_initializer())
        for step in range(1000):
            sess.run(train_op)
""",
        # A new session per checkpoint, but the model and the Saver are built once, before the loop.
        """\
import tensorflow as tf

logits = build_model(images)
accuracy = tf.reduce_mean(tf.cast(tf.equal(tf.argmax(logits, 1), labels), tf.float32))
saver = tf.train.Saver()
for checkpoint in checkpoints:
    with tf.Session() as sess:
        saver.restore(sess, checkpoint)
        print(checkpoint, sess.run(accuracy, {images: x_test, labels: y_test}))
""",
        # The trial runs in a helper that builds its own graph and session.
        """\
import tensorflow as tf

def run_trial(lr):
    with tf.Graph().as_default():
        loss = build_model()
        train_op = tf.train.AdamOptimizer(lr).minimize(loss)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            for step in range(1000):
                sess.run(train_op)
            return sess.run(loss)

results = {lr: run_trial(lr) for lr in [1e-2, 1e-3, 1e-4]}
""",
        # A FileWriter per evaluation directory adds no op; the environment builds its ops in a graph
        # of its own (held in a wrapper the analysis cannot follow) and opens its session there.
        """\
import tensorflow.compat.v1 as tf

class Env(object):
    def __init__(self, holder):
        self._graph = holder
        with self._graph.obj.as_default():
            self._frames = tf.placeholder(tf.uint8, [None, 84, 84])
            self._session = tf.Session()

def evaluate(policy_dir, holder):
    writer = tf.summary.FileWriter(policy_dir + "/eval")
    env = Env(holder)
    return run_episodes(env, writer)

for policy_dir in tf.gfile.Glob("policies/epoch_*"):
    evaluate(policy_dir, GraphHolder())
""",
    )

    INVALID = (
        """\
import tensorflow as tf

for lr in learning_rates:
    loss = build_model()
    train_op = tf.train.GradientDescentOptimizer(lr).minimize(loss)
    with tf.Session() as sess:  # GG111
        sess.run(tf.global_variables_initializer())
        for step in range(1000):
            sess.run(train_op)
""",
        # k-fold with a same-module model builder and sess = tf.Session() per fold.
        """\
import tensorflow.compat.v1 as tf

def build_model(n_features):
    x = tf.placeholder(tf.float32, [None, n_features])
    y = tf.placeholder(tf.float32, [None])
    loss = tf.losses.mean_squared_error(y, tf.squeeze(tf.layers.dense(x, 1)))
    return x, y, tf.train.AdamOptimizer().minimize(loss)

for fold in range(num_folds):
    x, y, train_op = build_model(20)
    sess = tf.Session()  # GG111
    sess.run(tf.global_variables_initializer())
    for xs, ys in fold_batches(fold):
        sess.run(train_op, {x: xs, y: ys})
    sess.close()
""",
        # An ensemble: a model and an InteractiveSession per member.
        """\
import tensorflow as tf

members = []
for seed in range(num_members):
    tf.set_random_seed(seed)
    logits = build_model(images)
    train_step = tf.train.AdamOptimizer(1e-3).minimize(tf.losses.softmax_cross_entropy(labels, logits))
    sess = tf.InteractiveSession()  # GG111
    tf.global_variables_initializer().run()
    for xs, ys in bootstrap_batches(seed):
        train_step.run(feed_dict={images: xs, labels: ys})
    members.append(sess)
""",
        # Importing a meta graph is building a model too: GG111 here, GG108 is not reported separately.
        """\
import glob

import tensorflow as tf

for meta in sorted(glob.glob("ckpt/model.ckpt-*.meta")):
    saver = tf.train.import_meta_graph(meta)
    with tf.Session() as sess:  # GG111
        saver.restore(sess, meta[:-len(".meta")])
        print(meta, sess.run("accuracy:0", {"images:0": x_test}))
""",
        # The session comes from a same-module factory: reported at the factory call.
        """\
from tensorflow.compat import v1

def new_session():
    config = v1.ConfigProto(gpu_options=v1.GPUOptions(allow_growth=True))
    return v1.Session(config=config)

while trials:
    params = trials.pop()
    loss, train_op = build_graph(params)
    sess = new_session()  # GG111
    sess.run(v1.global_variables_initializer())
    for step in range(500):
        sess.run(train_op)
""",
        # Only the loop that opens the session is reported; ops in its inner step loop are still GG101.
        """\
import tensorflow as tf

for dataset in ["mnist", "fashion_mnist"]:
    for lr in learning_rates:
        logits = build_model(dataset)
        train_op = tf.train.AdamOptimizer(lr).minimize(tf.losses.softmax_cross_entropy(labels, logits))
        with tf.compat.v1.Session() as sess:  # GG111
            sess.run(tf.global_variables_initializer())
            for xs, ys in batches(dataset):
                sess.run(train_op, {images: xs, labels: ys})
                sess.run(tf.argmax(logits, 1), {images: xs})
""",
        # A MonitoredTrainingSession per trial: it finalizes the default graph while open and unfinalizes
        # it on close, so the next trial builds into the same graph.
        """\
import tensorflow as tf

for lr in learning_rates:
    loss = tf.reduce_mean(build_model())
    train_op = tf.train.AdamOptimizer(lr).minimize(loss)
    with tf.train.MonitoredTrainingSession() as sess:  # GG111
        while not sess.should_stop():
            sess.run(train_op)
""",
    )

    #: The "Fix safety" section of the docs (ruff's heading).
    FIX_SAFETY = """\
No automatic fix: giving each iteration its own graph (`with tf.Graph().as_default():`) re-indents
the model building and session code, and which part belongs to a trial is the user's decision.
"""

    #: What ``--fix --unsafe-fixes`` makes of INVALID[i] (Fixit's expected_replacement); the tests
    #: check it, the docs show it.
    FIXES = {
        5: """\
import tensorflow as tf

for dataset in ["mnist", "fashion_mnist"]:
    for lr in learning_rates:
        logits = build_model(dataset)
        train_op = tf.train.AdamOptimizer(lr).minimize(tf.losses.softmax_cross_entropy(labels, logits))
        argmax_op = tf.argmax(logits, 1)
        with tf.compat.v1.Session() as sess:  # GG111
            sess.run(tf.global_variables_initializer())
            for xs, ys in batches(dataset):
                sess.run(train_op, {images: xs, labels: ys})
                sess.run(argmax_op, {images: xs})
""",
    }
