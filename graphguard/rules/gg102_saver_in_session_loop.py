"""GG102 saver-in-session-loop."""

from graphguard.analysis.catalog import Effect
from graphguard.rules.base import Rule


class SaverInSessionLoop(Rule):
    """
    ## What it does
    Finds a `tf.train.Saver(...)` constructed on every iteration of a loop that runs session steps,
    typically to write a checkpoint every N steps.

    ## Why is this bad?
    A `Saver` is not a file handle: its constructor adds save and restore ops for every variable to the
    graph (13 ops for one variable, 19 for four, measured on TF 2.21). Built in the training loop it adds
    them again on every pass, even when it is never used; the graph and the `.meta` file grow, and every
    later `Session.run` gets slower. In the public report this rule's demo is ported from, a step went
    from 1.55 s to 1.76 s in 17 steps with the Saver and the model built in the loop, and stayed at
    0.097 s with both built once.

    Build one `Saver` before the loop and call its `save()` in the loop; `saver.save` adds no ops.

    ## References
    - [`tf.compat.v1.train.Saver`](https://www.tensorflow.org/api_docs/python/tf/compat/v1/train/Saver)
    """

    CODE = "GG102"
    NAME = "saver-in-session-loop"
    EFFECTS = frozenset({Effect.SAVER})
    TITLE = "Saver built in a session loop"
    MESSAGE = "{subject} builds a Saver in the loop at line {loop_row}"
    ADVICE = (
        "a Saver adds save and restore ops for every variable: build one Saver before the loop and call its "
        "save() in the loop"
    )

    VALID = (
        """\
import tensorflow as tf

saver = tf.train.Saver()
with tf.Session() as sess:
    for step in range(100000):
        sess.run(train_op)
        if step % 1000 == 0:
            saver.save(sess, "ckpt/model", global_step=step)
""",
        # Restoring with a Saver made before the loop.
        """\
import tensorflow.compat.v1 as tf

saver = tf.train.Saver(max_to_keep=3)
sess = tf.Session()
for path in checkpoints:
    saver.restore(sess, path)
    print(sess.run(accuracy))
""",
        # One graph, Saver and session per trial: each trial's graph is fresh.
        """\
import tensorflow as tf

for trial in range(3):
    with tf.Graph().as_default():
        build_model()
        saver = tf.train.Saver()
        with tf.Session() as sess:
            sess.run(train_op)
            saver.save(sess, "trial")
""",
        # A Saver per trial after resetting the default graph.
        """\
import tensorflow as tf

for trial in range(3):
    tf.reset_default_graph()
    build_model()
    saver = tf.train.Saver()
    sess = tf.Session()
    sess.run(train_op)
    saver.save(sess, "trial")
""",
        # A Saver per model in a loop that runs no step.
        """\
import tensorflow as tf

savers = {}
for scope in ["generator", "discriminator"]:
    savers[scope] = tf.train.Saver(tf.trainable_variables(scope))
with tf.Session() as sess:
    for step in range(100):
        sess.run(train_op)
""",
        # Not TensorFlow's Saver.
        """\
from mylib import Saver

with tf_session() as sess:
    for step in range(100):
        sess.run(train_op)
        Saver().save(step)
""",
    )

    INVALID = (
        """\
import tensorflow as tf

with tf.Session() as sess:
    for step in range(100000):
        sess.run(train_op)
        if step % 1000 == 0:
            saver = tf.train.Saver()  # GG102
            saver.save(sess, "ckpt/model", global_step=step)
""",
        # Imported by name from the compat module.
        """\
from tensorflow.compat.v1.train import Saver

sess = tf_session()
for epoch in range(50):
    sess.run(train_op)
    Saver(max_to_keep=5).save(sess, "ckpt")  # GG102
""",
        # A while loop over a MonitoredTrainingSession.
        """\
import tensorflow.compat.v1 as tf

with tf.train.MonitoredTrainingSession(checkpoint_dir=None) as sess:
    while not sess.should_stop():
        sess.run(train_op)
        tf.train.Saver().save(sess._sess._sess._sess._sess, "ckpt")  # GG102
""",
        # The session held on an object.
        """\
import tensorflow as tf

class Trainer:
    def __init__(self):
        self.sess = tf.Session()

    def train(self, steps):
        for step in range(steps):
            self.sess.run(self.train_op)
            saver = tf.train.Saver(var_list=tf.global_variables())  # GG102
            saver.save(self.sess, "ckpt")
""",
        # The module aliased twice, the v1 API spelled out.
        """\
import tensorflow as tensorflow_lib

sess = tensorflow_lib.compat.v1.Session()
for step in range(100):
    sess.run(train_op)
    saver = tensorflow_lib.compat.v1.train.Saver()  # GG102
""",
        # The Saver class kept under another name.
        """\
import tensorflow as tf

make_saver = tf.train.Saver
sess = tf.Session()
for epoch in range(num_epochs):
    for batch in batches:
        sess.run(train_op, {x: batch})
    make_saver().save(sess, "epoch-%d" % epoch)  # GG102
""",
    )

    #: The "Fix safety" section of the docs (ruff's heading).
    FIX_SAFETY = """\
Safe: the Saver is built once, before the loop, as for GG101; unsafe when it is built under a
condition (`if step % 1000 == 0:`): a Saver built before any variable exists raises "No variables to
save", where the branch may never have run. A `Saver` saves the variables that
exist when it is built, so it moves only when nothing else in the loop may still create one: a
TensorFlow variable, layer or metric, an optimizer with slots, a helper of the file that makes one,
or a function of another module. This is read from the code, so a suppressed or unselected finding
still counts; what can move is moved first, pass after pass, and otherwise there is no fix. A Saver in a helper
called from the loop is not fixed automatically.

When the loop saves checkpoints named by step (`global_step=`), the moved Saver gets
`max_to_keep=None`: each Saver made per iteration saved one checkpoint and deleted none, where one
Saver with the default `max_to_keep=5` would delete all but the last five. With it, the checkpoint
files and the `checkpoint` state file are the same as before (measured: 100 saves, both versions).
A Saver that sets `max_to_keep` itself is moved only as an unsafe fix.
"""

    #: What ``--fix --unsafe-fixes`` makes of INVALID[i] (Fixit's expected_replacement); the tests
    #: check it, the docs show it.
    FIXES = {
        0: """\
import tensorflow as tf

checkpoint_saver = tf.train.Saver(max_to_keep=None)
with tf.Session() as sess:
    for step in range(100000):
        sess.run(train_op)
        if step % 1000 == 0:
            saver = checkpoint_saver  # GG102
            saver.save(sess, "ckpt/model", global_step=step)
""",
        1: """\
from tensorflow.compat.v1.train import Saver

sess = tf_session()
saver = Saver(max_to_keep=5)
for epoch in range(50):
    sess.run(train_op)
    saver.save(sess, "ckpt")  # GG102
""",
        2: """\
import tensorflow.compat.v1 as tf

saver = tf.train.Saver()
with tf.train.MonitoredTrainingSession(checkpoint_dir=None) as sess:
    while not sess.should_stop():
        sess.run(train_op)
        saver.save(sess._sess._sess._sess._sess, "ckpt")  # GG102
""",
        3: """\
import tensorflow as tf

class Trainer:
    def __init__(self):
        self.sess = tf.Session()

    def train(self, steps):
        saver = tf.train.Saver(var_list=tf.global_variables())  # GG102
        for step in range(steps):
            self.sess.run(self.train_op)
            saver.save(self.sess, "ckpt")
""",
        4: """\
import tensorflow as tensorflow_lib

sess = tensorflow_lib.compat.v1.Session()
saver = tensorflow_lib.compat.v1.train.Saver()  # GG102
for step in range(100):
    sess.run(train_op)
""",
        5: """\
import tensorflow as tf

make_saver = tf.train.Saver
sess = tf.Session()
saver = make_saver()
for epoch in range(num_epochs):
    for batch in batches:
        sess.run(train_op, {x: batch})
    saver.save(sess, "epoch-%d" % epoch)  # GG102
""",
    }
