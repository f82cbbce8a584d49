"""GG103 initializer-in-session-loop."""

from graphguard.analysis.catalog import Effect
from graphguard.rules.base import Rule


class InitializerInSessionLoop(Rule):
    """
    ## What it does
    Finds a variables initializer (`tf.global_variables_initializer()`,
    `tf.local_variables_initializer()`, `tf.variables_initializer(...)`, `tf.tables_initializer()` and
    their deprecated spellings) built on every iteration of a loop that runs session steps.

    ## Why is this bad?
    Each call adds a new initializer op to the graph, so the graph grows every iteration and every later
    `Session.run` gets slower. Running it per iteration also resets every variable to its initial value,
    which throws training away: a loop that re-initializes per epoch never learns past one epoch.

    Build the initializer once, before the loop, and run it once. To reset some state on purpose (a
    metric's local variables per epoch), build that initializer once too and run it in the loop.

    ## References
    - [`tf.compat.v1.global_variables_initializer`](https://www.tensorflow.org/api_docs/python/tf/compat/v1/global_variables_initializer)
    - [`tf.compat.v1.local_variables_initializer`](https://www.tensorflow.org/api_docs/python/tf/compat/v1/local_variables_initializer)
    """

    CODE = "GG103"
    NAME = "initializer-in-session-loop"
    EFFECTS = frozenset({Effect.INITIALIZER})
    TITLE = "Initializer built in a session loop"
    MESSAGE = "{subject} builds an initializer op in the loop at line {loop_row}"
    ADVICE = (
        "build it once before the loop (and run it once, unless resetting is the point)"
    )

    VALID = (
        """\
import tensorflow as tf

init = tf.global_variables_initializer()
with tf.Session() as sess:
    sess.run(init)
    for epoch in range(10):
        sess.run(train_op)
""",
        # Resetting metric variables every epoch with an op built once.
        """\
import tensorflow.compat.v1 as tf

reset_metrics = tf.local_variables_initializer()
sess = tf.Session()
for epoch in range(10):
    sess.run(reset_metrics)
    sess.run(update_accuracy)
""",
        # Initializing once, before the loop, inline in the run call.
        """\
import tensorflow as tf

sess = tf.Session()
sess.run([tf.global_variables_initializer(), tf.local_variables_initializer()])
while True:
    sess.run(train_op)
""",
        # Each trial has its own graph and initializer.
        """\
import tensorflow as tf

for trial in range(5):
    with tf.Graph().as_default():
        build_model()
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
""",
        # Each fold resets the default graph first.
        """\
import tensorflow as tf

for fold in range(5):
    tf.reset_default_graph()
    build_model()
    sess = tf.Session()
    sess.run(tf.global_variables_initializer())
""",
        # Initializers built per model in a loop that runs no step.
        """\
import tensorflow as tf

inits = [tf.variables_initializer(tf.global_variables(scope)) for scope in scopes]
with tf.Session() as sess:
    sess.run(inits)
    for step in range(100):
        sess.run(train_op)
""",
    )

    INVALID = (
        """\
import tensorflow as tf

with tf.Session() as sess:
    for epoch in range(num_epochs):
        sess.run(tf.global_variables_initializer())  # GG103
        sess.run(train_op)
""",
        # A while loop, the compat module spelled out.
        """\
import tensorflow as tf

sess = tf.compat.v1.Session()
while not done:
    init = tf.compat.v1.local_variables_initializer()  # GG103
    sess.run(init)
    done = sess.run(finished)
""",
        # Deprecated spelling, InteractiveSession, the initializer's own run() as the step.
        """\
import tensorflow as tf

sess = tf.InteractiveSession()
for epoch in range(num_epochs):
    tf.initialize_all_variables().run()  # GG103
    train_op.run()
""",
        # Nested loops: re-initialized per epoch, stepped per batch.
        """\
from tensorflow.compat import v1 as tf

with tf.Session() as session:
    for epoch in range(num_epochs):
        session.run(tf.variables_initializer(tf.local_variables()))  # GG103
        for batch in batches:
            session.run(train_op, feed_dict={x: batch})
""",
        # Imported by name.
        """\
from tensorflow.compat.v1 import tables_initializer

def serve(sess, requests):
    for request in requests:
        sess.run(tables_initializer())  # GG103
        yield sess.run(lookup, {keys: request})
""",
        # A session made once, the loop inside a method.
        """\
import tensorflow.compat.v1 as tf

class Model:
    def fit(self, data):
        self._session = tf.Session()
        for batch in data:
            self._session.run(tf.global_variables_initializer())  # GG103
            self._session.run(self.train_op, {self.x: batch})
""",
    )

    #: The "Fix safety" section of the docs (ruff's heading).
    FIX_SAFETY = """\
Safe: the initializer op is built once, before the loop, and its `run` stays where it was (resetting
may be the point); unsafe under a condition, as for GG101. It moves only when nothing else in the loop still creates variables, which an
initializer built earlier would not initialize; otherwise there is no fix.
"""

    #: What ``--fix --unsafe-fixes`` makes of INVALID[i] (Fixit's expected_replacement); the tests
    #: check it, the docs show it.
    FIXES = {
        0: """\
import tensorflow as tf

init_op = tf.global_variables_initializer()
with tf.Session() as sess:
    for epoch in range(num_epochs):
        sess.run(init_op)  # GG103
        sess.run(train_op)
""",
        1: """\
import tensorflow as tf

sess = tf.compat.v1.Session()
init = tf.compat.v1.local_variables_initializer()  # GG103
while not done:
    sess.run(init)
    done = sess.run(finished)
""",
        2: """\
import tensorflow as tf

sess = tf.InteractiveSession()
init_op = tf.initialize_all_variables()
for epoch in range(num_epochs):
    init_op.run()  # GG103
    train_op.run()
""",
        3: """\
from tensorflow.compat import v1 as tf

init_op = tf.variables_initializer(tf.local_variables())
with tf.Session() as session:
    for epoch in range(num_epochs):
        session.run(init_op)  # GG103
        for batch in batches:
            session.run(train_op, feed_dict={x: batch})
""",
        4: """\
from tensorflow.compat.v1 import tables_initializer

def serve(sess, requests):
    init_op = tables_initializer()
    for request in requests:
        sess.run(init_op)  # GG103
        yield sess.run(lookup, {keys: request})
""",
        5: """\
import tensorflow.compat.v1 as tf

class Model:
    def fit(self, data):
        self._session = tf.Session()
        init_op = tf.global_variables_initializer()
        for batch in data:
            self._session.run(init_op)  # GG103
            self._session.run(self.train_op, {self.x: batch})
""",
    }
