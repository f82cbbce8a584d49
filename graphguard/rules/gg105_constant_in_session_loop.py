"""GG105 constant-in-session-loop."""

from graphguard.analysis.catalog import Effect
from graphguard.rules.base import Rule


class ConstantInSessionLoop(Rule):
    """
    ## What it does
    Finds `tf.constant(...)` and `tf.convert_to_tensor(...)` called on every iteration of a loop that
    runs session steps, usually to turn a fresh NumPy batch into a tensor.

    ## Why is this bad?
    A constant is a node of the graph that holds its data: every call copies the value into a new
    `Const` op. Per batch, the graph grows by the size of the data itself, the `.meta` file and RAM
    balloon, and every `Session.run` gets slower.

    Feed changing data through a `tf.placeholder` and `feed_dict`, or read it with `tf.data`.

    ## References
    - [`tf.compat.v1.placeholder`](https://www.tensorflow.org/api_docs/python/tf/compat/v1/placeholder)
    """

    CODE = "GG105"
    NAME = "constant-in-session-loop"
    EFFECTS = frozenset({Effect.CONSTANT})
    MESSAGE = (
        '{subject} copies its value into a new constant op on every iteration of the session loop at line {loop_row}; feed changing data through a placeholder and feed_dict (or tf.data)'
    )

    VALID = (
        """\
import tensorflow as tf

images = tf.placeholder(tf.float32, [None, 28, 28, 1])
logits = model(images)
with tf.Session() as sess:
    for batch in batches:
        sess.run(logits, feed_dict={images: batch})
""",
    )

    INVALID = (
        """\
import tensorflow as tf

with tf.Session() as sess:
    for batch in batches:
        images = tf.constant(batch)  # GG105
        sess.run(model(images))
""",
    )
