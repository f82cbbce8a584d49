"""GG104 assign-in-session-loop."""

from graphguard.analysis.catalog import Effect
from graphguard.rules.base import Rule


class AssignInSessionLoop(Rule):
    """
    ## What it does
    Finds `tf.assign(...)`, `tf.assign_add(...)`, `tf.scatter_update(...)` and `variable.assign(...)`
    built on every iteration of a loop that runs session steps, typically to decay a learning rate or
    update a counter.

    ## Why is this bad?
    Each call adds a new `Assign` op, plus a `Const` for a Python value, to the graph. Run per epoch or
    per step, the graph grows without bound and every later `Session.run` gets slower. A public
    Faster R-CNN report shows a step going from 0.4 s to 1 s after 10,000 steps for exactly this
    (`sess.run(tf.assign(lr, ...))` in the loop).

    Build one assign op fed by a placeholder before the loop and run it with the new value in
    `feed_dict`, or write the value with `variable.load(value, sess)`, which adds no op.

    ## References
    - [`tf.compat.v1.assign`](https://www.tensorflow.org/api_docs/python/tf/compat/v1/assign)
    - [`tf.Variable.load`](https://www.tensorflow.org/api_docs/python/tf/compat/v1/Variable#load)
    """

    CODE = "GG104"
    NAME = "assign-in-session-loop"
    EFFECTS = frozenset({Effect.ASSIGN})
    MESSAGE = (
        '{subject} builds a new assign op on every iteration of the session loop at line {loop_row}; build one placeholder-fed assign op before the loop, or use variable.load(value, sess)'
    )

    VALID = (
        """\
import tensorflow as tf

lr = tf.Variable(0.1, trainable=False)
new_lr = tf.placeholder(tf.float32, [])
update_lr = tf.assign(lr, new_lr)
with tf.Session() as sess:
    for epoch in range(100):
        sess.run(update_lr, {new_lr: 0.1 * 0.97 ** epoch})
        sess.run(train_op)
""",
    )

    INVALID = (
        """\
import tensorflow as tf

lr = tf.Variable(0.1, trainable=False)
with tf.Session() as sess:
    for epoch in range(100):
        sess.run(tf.assign(lr, 0.1 * 0.97 ** epoch))  # GG104
        sess.run(train_op)
""",
    )
