"""GG110 summary-in-session-loop."""

from graphguard.analysis.catalog import Effect
from graphguard.rules.base import Rule


class SummaryInSessionLoop(Rule):
    """
    ## What it does
    Finds v1 summary ops (`tf.summary.scalar`, `histogram`, `image`, `merge`, `merge_all`) and
    `tf.summary.FileWriter(...)` made on every iteration of a loop that runs session steps (a writer
    closed in the same iteration, by `with` or `close()`, is not reported).

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
    TITLE = "Summary op or writer built in a session loop"
    MESSAGE = "{subject} builds a summary op or writer in the loop at line {loop_row}"
    ADVICE = (
        "define summaries, merge_all() and the FileWriter once before the loop"
    )

    VALID = (
        # A FileWriter per epoch closed in that epoch (a context manager, or close()): its thread and
        # event file end with the iteration, and it adds no op (first contact: judged not a leak).
        """\
import tensorflow as tf

with tf.Session() as sess:
    for epoch in range(num_epochs):
        with tf.summary.FileWriter("logs/epoch_%d" % epoch) as writer:
            for step in range(100):
                writer.add_summary(sess.run(merged), step)
        for metric in ("bleu", "rouge"):
            writer = tf.summary.FileWriter("logs/best_" + metric, sess.graph)
            writer.add_summary(sess.run(merged), epoch)
            writer.close()
""",
        # The fix for the first INVALID example: summaries, merge_all() and the writer made once.
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
        # Values computed in NumPy logged through tf.Summary protobufs: no op.
        """\
import tensorflow.compat.v1 as tf

writer = tf.summary.FileWriter("logs/eval")
sess = tf.Session()
for epoch in range(50):
    sess.run(train_op)
    accuracy = evaluate_numpy(sess.run(predictions, {x: x_val}), y_val)
    summary = tf.Summary(value=[tf.Summary.Value(tag="val_accuracy", simple_value=accuracy)])
    writer.add_summary(summary, epoch)
    writer.flush()
""",
        # One histogram per variable, in a loop that runs no step, merged once.
        """\
import tensorflow as tf

for var in tf.trainable_variables():
    tf.summary.histogram(var.op.name, var)
merged = tf.summary.merge_all()
writer = tf.summary.FileWriter("logs")
with tf.Session() as sess:
    for step in range(10000):
        summary, _ = sess.run([merged, train_op])
        writer.add_summary(summary, step)
""",
        # Each trial has its own graph, summaries and log directory.
        """\
from tensorflow.compat import v1

for lr in [0.1, 0.01, 0.001]:
    with v1.Graph().as_default():
        loss, train_op = build_model(lr)
        v1.summary.scalar("loss", loss)
        merged = v1.summary.merge_all()
        writer = v1.summary.FileWriter("logs/lr_%g" % lr)
        with v1.Session() as sess:
            sess.run(v1.global_variables_initializer())
            for step in range(1000):
                writer.add_summary(sess.run(merged), step)
""",
        # A once-guard directly in the loop: the summary op is built the first time through.
        """\
import tensorflow as tf

summary_op = None
writer = tf.summary.FileWriter("logs")
with tf.Session() as sess:
    for epoch in range(30):
        for xs, ys in batches:
            sess.run(train_op, {x: xs, y: ys})
        if summary_op is None:
            summary_op = tf.summary.histogram("logits", logits)
        writer.add_summary(sess.run(summary_op, {x: xs}), epoch)
""",
        # A Supervisor loop with every summary built before managed_session().
        """\
import tensorflow as tf

tf.summary.scalar("loss", loss)
summary_op = tf.summary.merge_all()
sv = tf.train.Supervisor(logdir="logs", summary_op=None)
with sv.managed_session() as sess:
    while not sv.should_stop():
        _, step = sess.run([train_op, global_step])
        if step % 100 == 0:
            sv.summary_computed(sess, sess.run(summary_op))
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
        # A FileWriter, histograms and merge_all per epoch: the per-variable loop runs no step, the epoch loop does.
        """\
import tensorflow as tf

with tf.Session() as sess:
    for epoch in range(25):
        writer = tf.summary.FileWriter("runs/epoch_%02d" % epoch, sess.graph)  # GG110
        for var in tf.trainable_variables():
            tf.summary.histogram(var.op.name, var)  # GG110
        merged = tf.summary.merge_all()  # GG110
        for i, (xs, ys) in enumerate(batches):
            _, summary = sess.run([train_op, merged], {x: xs, y: ys})
            writer.add_summary(summary, i)
""",
        # One finding per summary call, at the line where each call starts; tf.compat.v1 spelled out.
        """\
import tensorflow as tf

sess = tf.compat.v1.Session()
for step in range(100000):
    sess.run([d_train, g_train])
    if step % 500 == 0:
        merged = tf.compat.v1.summary.merge([  # GG110
            tf.compat.v1.summary.scalar("d_loss", d_loss),  # GG110
            tf.compat.v1.summary.scalar("g_loss", g_loss),  # GG110
        ])
        writer.add_summary(sess.run(merged), step)
""",
        # A Supervisor's managed session, a while loop.
        """\
import tensorflow.compat.v1 as tf

sv = tf.train.Supervisor(logdir="logs")
with sv.managed_session() as sess:
    while not sv.should_stop():
        _, step = sess.run([train_op, global_step])
        image_summary = tf.summary.image("samples", generated, max_outputs=4)  # GG110
        sv.summary_computed(sess, sess.run(image_summary))
""",
        # A session parameter, image summaries in a comprehension.
        """\
from tensorflow.compat import v1

def log_attention(sess, writer, heads, step):
    summaries = [sess.run(v1.summary.image("head_%d" % i, h)) for i, h in enumerate(heads)]  # GG110
    for summary in summaries:
        writer.add_summary(summary, step)
""",
        # A same-module helper builds the summary: reported at its call in the loop.
        """\
import tensorflow as tf

def log_scalar(sess, writer, name, tensor, step):
    summary = sess.run(tf.summary.scalar(name, tensor))
    writer.add_summary(summary, step)

writer = tf.summary.FileWriter("logs")
with tf.Session() as sess:
    for step in range(10000):
        sess.run(train_op)
        log_scalar(sess, writer, "loss", loss, step)  # GG110
""",
        # The session held on the object; the writer opened per evaluation.
        """\
import tensorflow as tf

class Evaluator:
    def __init__(self):
        self.sess = tf.Session()

    def evaluate_all(self, checkpoints):
        for ckpt in checkpoints:
            self.saver.restore(self.sess, ckpt)
            writer = tf.summary.FileWriter("logs/eval")  # GG110
            writer.add_summary(self.sess.run(self.summary_op), step_of(ckpt))
""",
    )

    #: The "Fix safety" section of the docs (ruff's heading).
    FIX_SAFETY = """\
Safe for summary ops of values that do not change in the loop: built once, before the loop.
`merge_all()` moves only when no other summary is still built in the loop (it merges the summaries
that exist when it runs). A `FileWriter` whose arguments do not change moves only as an unsafe fix:
there is then one event file instead of one per iteration; never when the loop closes a writer.
"""

    #: What ``--fix --unsafe-fixes`` makes of INVALID[i] (Fixit's expected_replacement); the tests
    #: check it, the docs show it.
    FIXES = {
        0: """\
import tensorflow as tf

writer = tf.summary.FileWriter("logs")
tf.summary.scalar("loss", loss)  # GG110
summary_op = tf.summary.merge_all()
with tf.Session() as sess:
    for step in range(1000):
        summary, _ = sess.run([summary_op, train_op])  # GG110
        writer.add_summary(summary, step)
""",
        2: """\
import tensorflow as tf

sess = tf.compat.v1.Session()
merge_op = tf.compat.v1.summary.merge([  # GG110
    tf.compat.v1.summary.scalar("d_loss", d_loss),  # GG110
    tf.compat.v1.summary.scalar("g_loss", g_loss),  # GG110
])
for step in range(100000):
    sess.run([d_train, g_train])
    if step % 500 == 0:
        merged = merge_op
        writer.add_summary(sess.run(merged), step)
""",
        3: """\
import tensorflow.compat.v1 as tf

sv = tf.train.Supervisor(logdir="logs")
image_summary = tf.summary.image("samples", generated, max_outputs=4)  # GG110
with sv.managed_session() as sess:
    while not sv.should_stop():
        _, step = sess.run([train_op, global_step])
        sv.summary_computed(sess, sess.run(image_summary))
""",
        6: """\
import tensorflow as tf

class Evaluator:
    def __init__(self):
        self.sess = tf.Session()

    def evaluate_all(self, checkpoints):
        writer = tf.summary.FileWriter("logs/eval")  # GG110
        for ckpt in checkpoints:
            self.saver.restore(self.sess, ckpt)
            writer.add_summary(self.sess.run(self.summary_op), step_of(ckpt))
""",
    }
