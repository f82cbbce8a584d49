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
    MESSAGE = (
        '{subject} opens a new session on every iteration of the loop at line {loop_row} while the model is built again into the same default graph; give each iteration its own graph (with tf.Graph().as_default():) or call tf.reset_default_graph() first'
    )

    VALID = (
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
    )

    INVALID = (
        """\
import tensorflow as tf

for lr in [0.1, 0.01, 0.001]:
    loss = build_model()
    train_op = tf.train.GradientDescentOptimizer(lr).minimize(loss)
    with tf.Session() as sess:  # GG111
        sess.run(tf.global_variables_initializer())
        for step in range(1000):
            sess.run(train_op)
""",
    )
