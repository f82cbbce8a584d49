"""GG109 iterator-in-session-loop."""

from graphguard.analysis.catalog import Effect
from graphguard.rules.base import Rule


class IteratorInSessionLoop(Rule):
    """
    ## What it does
    Finds a `tf.data` dataset, an iterator (`make_one_shot_iterator`, `make_initializable_iterator`)
    or its `get_next()` built on every iteration of a loop that runs session steps.

    ## Why is this bad?
    Datasets and iterators are graph ops in graph mode. Rebuilding the input pipeline per epoch, or
    calling `iterator.get_next()` per step (which adds a new `IteratorGetNext` op each time instead of
    reusing one), grows the graph and slows every step.

    Build the dataset, the iterator and one `next_batch = iterator.get_next()` before the loop; rerun
    `iterator.initializer` per epoch.

    ## References
    - [`tf.compat.v1.data.Iterator`](https://www.tensorflow.org/api_docs/python/tf/compat/v1/data/Iterator)
    """

    CODE = "GG109"
    NAME = "iterator-in-session-loop"
    EFFECTS = frozenset({Effect.DATASET, Effect.ITERATOR})
    MESSAGE = (
        '{subject} builds a new tf.data pipeline op on every iteration of the session loop at line {loop_row}; build the dataset, iterator and get_next() once before the loop, and rerun iterator.initializer per epoch'
    )

    VALID = (
        """\
import tensorflow as tf

dataset = tf.data.Dataset.from_tensor_slices((features, labels)).batch(32)
iterator = tf.data.make_initializable_iterator(dataset)
next_batch = iterator.get_next()
with tf.Session() as sess:
    for epoch in range(10):
        sess.run(iterator.initializer)
        sess.run(next_batch)
""",
    )

    INVALID = (
        """\
import tensorflow as tf

dataset = tf.data.Dataset.from_tensor_slices((features, labels)).batch(32)
iterator = tf.data.make_one_shot_iterator(dataset)
with tf.Session() as sess:
    for step in range(1000):
        sess.run(iterator.get_next())  # GG109
""",
    )
