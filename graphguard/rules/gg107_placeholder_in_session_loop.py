"""GG107 placeholder-in-session-loop."""

from graphguard.analysis.catalog import Effect
from graphguard.rules.base import Rule


class PlaceholderInSessionLoop(Rule):
    """
    ## What it does
    Finds `tf.placeholder(...)`, `tf.Variable(...)` and `tf.get_variable(...)` called on every
    iteration of a loop that runs session steps.

    ## Why is this bad?
    A placeholder is an op; a variable is several (the variable, its initial value, its initializer).
    Made per iteration they grow the graph, and new variables are uninitialized, so the next run that
    needs them fails, or, with `AUTO_REUSE`, silently reuses the old one while still adding lookups.

    Create placeholders and variables once, with the model, before the loop.

    ## References
    - [`tf.compat.v1.placeholder`](https://www.tensorflow.org/api_docs/python/tf/compat/v1/placeholder)
    """

    CODE = "GG107"
    NAME = "placeholder-in-session-loop"
    EFFECTS = frozenset({Effect.VARIABLE})
    MESSAGE = (
        '{subject} creates a new placeholder or variable on every iteration of the session loop at line {loop_row}; create it once with the model, before the loop'
    )

    VALID = (
        """\
import tensorflow as tf

image = tf.placeholder(tf.float32, [1, 256, 256, 3])
stylized = transform(image)
with tf.Session() as sess:
    for path in paths:
        sess.run(stylized, {image: load(path)})
""",
    )

    INVALID = (
        """\
import tensorflow as tf

with tf.Session() as sess:
    for path in paths:
        image = tf.placeholder(tf.float32, [1, 256, 256, 3])  # GG107
        sess.run(transform(image), {image: load(path)})
""",
    )
