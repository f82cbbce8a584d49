"""GG108 graph-import-in-session-loop."""

from graphguard.analysis.catalog import Effect
from graphguard.rules.base import Rule


class GraphImportInSessionLoop(Rule):
    """
    ## What it does
    Finds `tf.train.import_meta_graph(...)`, `tf.import_graph_def(...)` and
    `tf.saved_model.loader.load(...)` into the live graph on every iteration of a loop that runs
    session steps, such as evaluating every checkpoint or serving every request.

    ## Why is this bad?
    Importing a graph copies every node of the saved graph into the current one. Done per iteration,
    the graph doubles, triples, and so on: memory explodes and each run copies the whole graph again.

    Import once before the loop and restore only the weights per checkpoint (`saver.restore`), or give
    each import its own `tf.Graph()` and session.

    ## References
    - [`tf.compat.v1.train.import_meta_graph`](https://www.tensorflow.org/api_docs/python/tf/compat/v1/train/import_meta_graph)
    """

    CODE = "GG108"
    NAME = "graph-import-in-session-loop"
    EFFECTS = frozenset({Effect.GRAPH_IMPORT})
    MESSAGE = (
        '{subject} imports a whole graph into the live graph on every iteration of the session loop at line {loop_row}; import once before the loop (restore weights per checkpoint), or use a fresh tf.Graph() per import'
    )

    VALID = (
        """\
import tensorflow as tf

saver = tf.train.import_meta_graph("model.meta")
with tf.Session() as sess:
    for checkpoint in checkpoints:
        saver.restore(sess, checkpoint)
        sess.run("accuracy:0")
""",
    )

    INVALID = (
        """\
import tensorflow as tf

with tf.Session() as sess:
    for checkpoint in checkpoints:
        saver = tf.train.import_meta_graph(checkpoint + ".meta")  # GG108
        saver.restore(sess, checkpoint)
        sess.run("accuracy:0")
""",
    )
