"""GG110 summary-in-session-loop."""

from graphguard.analysis.catalog import Effect
from graphguard.rules.base import Rule


class SummaryInSessionLoop(Rule):
    """
    ## What it does
    Finds v1 summary ops (`tf.summary.scalar`, `histogram`, `image`, `merge`, `merge_all`) and
    `tf.summary.FileWriter(...)` made on every iteration of a loop that runs session steps.

    ## Why is this bad?
    Each summary call adds ops to the graph and to the `SUMMARIES` collection, so a later `merge_all()`
    merges every copy made so far: the graph grows and each merged summary gets bigger. A `FileWriter`
    per iteration opens a new event file and background thread each time.

    Define the summaries and one `merged = tf.summary.merge_all()` and one `FileWriter` before the loop;
    in the loop run `merged` and call `writer.add_summary`.

    ## References
    - [`tf.compat.v1.summary.merge_all`](https://www.tensorflow.org/api_docs/python/tf/compat/v1/summary/merge_all)
    """

    CODE = "GG110"
    NAME = "summary-in-session-loop"
    EFFECTS = frozenset({Effect.SUMMARY, Effect.FILE_WRITER})
    MESSAGE = (
        '{subject} builds a new summary op or event writer on every iteration of the session loop at line {loop_row}; define summaries, merge_all() and the FileWriter once before the loop'
    )

    VALID = (
        """\
import tensorflow as tf

tf.summary.scalar("loss", loss)
merged = tf.summary.merge_all()
writer = tf.summary.FileWriter("logs")
with tf.Session() as sess:
    for step in range(1000):
        summary, _ = sess.run([merged, train_op])
        writer.add_summary(summary, step)
""",
    )

    INVALID = (
        """\
import tensorflow as tf

writer = tf.summary.FileWriter("logs")
with tf.Session() as sess:
    for step in range(1000):
        tf.summary.scalar("loss", loss)  # GG110
        summary, _ = sess.run([tf.summary.merge_all(), train_op])  # GG110
        writer.add_summary(summary, step)
""",
    )
