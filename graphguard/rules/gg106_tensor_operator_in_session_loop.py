"""GG106 tensor-operator-in-session-loop."""

from graphguard.analysis.catalog import Effect
from graphguard.rules.base import Rule


class TensorOperatorInSessionLoop(Rule):
    """
    ## What it does
    Finds a Python operator or subscript applied to a tensor (`loss * 2`, `logits[0]`, `-x`, `a + b`,
    `x @ w`, `y > 0.5`) on every iteration of a loop that runs session steps.

    ## Why is this bad?
    On a tensor, Python operators are TensorFlow ops: `loss * 2` adds a `Mul` op, `logits[0]` a
    `StridedSlice`. Written inside the training loop they grow the graph on every step, which is easy
    to miss because nothing looks like a TensorFlow call. (A TensorFlow maintainer, on a public issue:
    "`a[0]` adds a `strided_slice` op to the graph. It's the same problem if you did `sess.run(a+b)`.")

    Compute the expression once, before the loop, and run the resulting tensor; or run the tensor
    and apply the operator to the NumPy result that `sess.run` returns.

    ## References
    - [TensorFlow issue 7127: graph nodes inside `sess.run()` brackets](https://github.com/tensorflow/tensorflow/issues/7127)
    """

    CODE = "GG106"
    NAME = "tensor-operator-in-session-loop"
    EFFECTS = frozenset({Effect.OPERATOR})
    MESSAGE = (
        '{subject} applies an operator to a tensor, which builds a new op on every iteration of the session loop at line {loop_row}; build the expression once before the loop, or apply it to the NumPy value sess.run returns'
    )

    VALID = (
        """\
import tensorflow as tf

logits = tf.layers.dense(features, 10)
scaled = logits * 2.0
with tf.Session() as sess:
    for batch in batches:
        print(sess.run(scaled, {features: batch}))
""",
    )

    INVALID = (
        """\
import tensorflow as tf

logits = tf.layers.dense(features, 10)
with tf.Session() as sess:
    for batch in batches:
        print(sess.run(logits * 2.0, {features: batch}))  # GG106
""",
    )
