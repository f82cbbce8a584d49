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
    TITLE = "Assign op built in a session loop"
    MESSAGE = "{subject} builds an assign op in the loop at line {loop_row}"
    ADVICE = (
        "build one placeholder-fed assign op before the loop, or use variable.load(value, sess)"
    )

    VALID = (
        # The fix for the first INVALID example: one assign op fed by a placeholder, built once.
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
        # variable.load(value, sess) writes the value through the existing variable: no new op.
        """\
import tensorflow.compat.v1 as tf

lr_var = tf.Variable(0.1, trainable=False)
sess = tf.Session()
sess.run(tf.global_variables_initializer())
for epoch in range(160):
    if epoch in (80, 120):
        lr_var.load(sess.run(lr_var) * 0.1, sess)
    for xs, ys in batches:
        sess.run(train_op, {x: xs, y: ys})
""",
        # Target-network sync ops built once, in a comprehension that runs no step, then run every 1000 steps.
        """\
import tensorflow as tf

sync_target = [tf.assign(t, o) for t, o in zip(target_vars, online_vars)]
with tf.Session() as sess:
    sess.run(tf.global_variables_initializer())
    for step in range(1000000):
        sess.run(train_op, feed_dict=replay.sample(32))
        if step % 1000 == 0:
            sess.run(sync_target)
""",
        # A once-guard: the assign op is built on the first call only, then fed.
        """\
import tensorflow as tf

class LearningRate:
    def __init__(self, variable):
        self.variable = variable
        self.value = tf.placeholder(tf.float32, [])
        self._update = None

    def set(self, sess, value):
        if self._update is None:
            self._update = tf.assign(self.variable, self.value)
        sess.run(self._update, {self.value: value})

schedule = LearningRate(lr)
with tf.Session() as sess:
    for epoch in range(90):
        schedule.set(sess, 0.1 * 0.1 ** (epoch // 30))
        sess.run(train_op)
""",
        # InteractiveSession: an increment op built once and evaluated per batch.
        """\
import tensorflow as tf

sess = tf.InteractiveSession()
seen = tf.Variable(0, trainable=False)
count_batch = tf.assign_add(seen, 1)
tf.global_variables_initializer().run()
for xs, ys in batches:
    train_step.run(feed_dict={x: xs, y_: ys})
    count_batch.eval()
""",
        # Each fold resets the default graph before building its variables and assign ops.
        """\
from tensorflow.compat import v1

for fold in range(5):
    v1.reset_default_graph()
    lr = v1.Variable(0.01, trainable=False)
    halve_lr = v1.assign(lr, lr / 2)
    train_op = build_model(folds[fold], lr)
    sess = v1.Session()
    sess.run(v1.global_variables_initializer())
    for epoch in range(10):
        sess.run(train_op)
        if epoch % 5 == 4:
            sess.run(halve_lr)
""",
        # Not TensorFlow's assign: pandas' DataFrame.assign on NumPy results.
        """\
import pandas as pd
import tensorflow as tf

table = pd.DataFrame({"path": paths})
with tf.Session() as sess:
    for fold, checkpoint in enumerate(checkpoints):
        saver.restore(sess, checkpoint)
        scores = sess.run(probabilities, {images: load(paths)})
        table = table.assign(**{"fold%d" % fold: scores[:, 1]})
""",
        # `if t == decay_at:` on the loop's own range() counter holds on one iteration: one assign op.
        """\
import tensorflow.compat.v1 as tf

lr_var = tf.Variable(0.1, trainable=False)
with tf.Session() as sess:
    for t in range(200):
        if t == decay_at:
            sess.run(tf.assign(lr_var, decayed_lr))
        sess.run(train_op)
""",
        # The same on a while loop's counter, bumped on every pass (a skip in an except clause is the
        # error path): `if it == drop_at:` holds once.
        """\
import tensorflow.compat.v1 as tf

lr_var = tf.Variable(0.1, trainable=False)
with tf.Session() as sess:
    it = 1
    while it <= max_iters:
        if it == drop_at + 1:
            sess.run(tf.assign(lr_var, lr_var * 0.1))
        try:
            sess.run(train_op, next_feed())
        except ValueError:
            continue
        it += 1
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
        # variable.assign() in a while loop; InteractiveSession, the assign op's own eval() as the step.
        """\
import tensorflow as tf

sess = tf.InteractiveSession()
epsilon = tf.Variable(1.0, trainable=False)
tf.global_variables_initializer().run()
episode = 0
while episode < 500:
    eps = epsilon.eval()
    play_episode(eps)
    epsilon.assign(max(0.05, eps * 0.99)).eval()  # GG104
    episode += 1
""",
        # A counter bumped after the inner batch loop: one new assign op per epoch.
        """\
import tensorflow.compat.v1 as tf

epochs_done = tf.get_variable("epochs_done", [], tf.int32, trainable=False)
sess = tf.Session()
sess.run(tf.global_variables_initializer())
for epoch in range(20):
    for xs, ys in batches:
        sess.run(train_op, {x: xs, y: ys})
    sess.run(tf.assign_add(epochs_done, 1))  # GG104
""",
        # A memory bank written with scatter_update on every step of a MonitoredTrainingSession.
        """\
from tensorflow.compat import v1

memory = v1.get_variable("memory", [50000, 128], trainable=False)
with v1.train.MonitoredTrainingSession() as mon_sess:
    while not mon_sess.should_stop():
        feats, idx = mon_sess.run([features, indices])
        mon_sess.run(v1.scatter_update(memory, idx, feats))  # GG104
""",
        # A variable held on the object, the session too.
        """\
import tensorflow as tf

class Trainer:
    def __init__(self):
        self.lr = tf.Variable(0.01, trainable=False)
        self.sess = tf.Session()

    def fit(self, epochs):
        for epoch in range(epochs):
            self.sess.run(self.lr.assign(0.01 * 0.95 ** epoch))  # GG104
            self.sess.run(self.train_op)
""",
        # A session parameter; tf.compat.v1 spelled out.
        """\
import tensorflow as tf

def anneal(sess, temperature, epochs):
    for epoch in range(epochs):
        sess.run(train_op)
        sess.run(tf.compat.v1.assign(temperature, max(0.5, 0.99 ** epoch)))  # GG104
""",
        # A same-module helper builds the assign: reported at its call in the loop.
        """\
import tensorflow as tf

lr = tf.Variable(0.1, trainable=False)

def set_learning_rate(sess, value):
    sess.run(tf.assign(lr, value))

with tf.Session() as sess:
    for epoch in range(90):
        set_learning_rate(sess, 0.1 * 0.1 ** (epoch // 30))  # GG104
        for xs, ys in batches:
            sess.run(train_op, {x: xs, y: ys})
""",
        # An attribute assigned a tf.Variable in its class, read on an instance; the Keras session.
        """\
import tensorflow as tf

class QNetwork:
    def __init__(self, num_actions):
        self.states = tf.placeholder(tf.float32, [None, 4])
        self.epsilon = tf.Variable(1.0, trainable=False)
        self.q_values = tf.layers.dense(self.states, num_actions)

model = QNetwork(2)
sess = tf.keras.backend.get_session()
for episode in range(500):
    eps = sess.run(model.epsilon)
    play(sess, model, eps)
    sess.run(model.epsilon.assign(max(0.05, eps * 0.99)))  # GG104
""",
        # The compat module under another name; a SingularMonitoredSession.
        """\
import tensorflow as tf
tf1 = tf.compat.v1

step_var = tf1.get_variable("step", [], tf.int64, trainable=False)
with tf1.train.SingularMonitoredSession() as sess:
    while not sess.should_stop():
        sess.run(train_op)
        sess.run(step_var.assign_add(1))  # GG104
""",
        # The same guard on an inner loop's counter: the epoch loop around it repeats the assign.
        """\
import tensorflow.compat.v1 as tf

lr_var = tf.Variable(0.1, trainable=False)
with tf.Session() as sess:
    for epoch in range(100):
        for t in range(50):
            if t == 0:
                sess.run(tf.assign(lr_var, 0.1 * 0.9 ** epoch))  # GG104
            sess.run(train_op)
""",
    )

    #: The "Fix safety" section of the docs (ruff's heading).
    FIX_SAFETY = """\
Safe when the assigned value does not change in the loop (`tf.assign_add(step, 1)`): the assign
op is built once, before the loop. A value that changes per iteration, in `sess.run(tf.assign(lr,
new_lr))` or `sess.run(lr.assign(new_lr))`, becomes a placeholder of the variable's own dtype and
shape (`lr.dtype.base_dtype`, `lr.shape`: nothing is guessed) and one assign op built from it before
the loop; the run feeds the value (`feed_dict={lr_value: new_lr}`, merged into an existing feed).
That fix is unsafe: feeding needs a Python or NumPy value, and graphguard cannot always see that the
value is not a tensor. An assign in any other place is not fixed automatically.
"""

    #: What ``--fix --unsafe-fixes`` makes of INVALID[i] (Fixit's expected_replacement); the tests
    #: check it, the docs show it.
    FIXES = {
        0: """\
import tensorflow as tf

lr = tf.Variable(0.1, trainable=False)
lr_value = tf.placeholder(lr.dtype.base_dtype, lr.shape)
assign_lr_op = tf.assign(lr, lr_value)
with tf.Session() as sess:
    for epoch in range(100):
        sess.run(assign_lr_op, feed_dict={lr_value: 0.1 * 0.97 ** epoch})  # GG104
        sess.run(train_op)
""",
        2: """\
import tensorflow.compat.v1 as tf

epochs_done = tf.get_variable("epochs_done", [], tf.int32, trainable=False)
sess = tf.Session()
sess.run(tf.global_variables_initializer())
assign_add_op = tf.assign_add(epochs_done, 1)
for epoch in range(20):
    for xs, ys in batches:
        sess.run(train_op, {x: xs, y: ys})
    sess.run(assign_add_op)  # GG104
""",
        4: """\
import tensorflow as tf

class Trainer:
    def __init__(self):
        self.lr = tf.Variable(0.01, trainable=False)
        self.sess = tf.Session()

    def fit(self, epochs):
        lr_value = tf.placeholder(self.lr.dtype.base_dtype, self.lr.shape)
        assign_lr_op = self.lr.assign(lr_value)
        for epoch in range(epochs):
            self.sess.run(assign_lr_op, feed_dict={lr_value: 0.01 * 0.95 ** epoch})  # GG104
            self.sess.run(self.train_op)
""",
        5: """\
import tensorflow as tf

def anneal(sess, temperature, epochs):
    temperature_value = tf.compat.v1.placeholder(temperature.dtype.base_dtype, temperature.shape)
    assign_temperature_op = tf.compat.v1.assign(temperature, temperature_value)
    for epoch in range(epochs):
        sess.run(train_op)
        sess.run(assign_temperature_op, feed_dict={temperature_value: max(0.5, 0.99 ** epoch)})  # GG104
""",
        7: """\
import tensorflow as tf

class QNetwork:
    def __init__(self, num_actions):
        self.states = tf.placeholder(tf.float32, [None, 4])
        self.epsilon = tf.Variable(1.0, trainable=False)
        self.q_values = tf.layers.dense(self.states, num_actions)

model = QNetwork(2)
sess = tf.keras.backend.get_session()
epsilon_value = tf.placeholder(model.epsilon.dtype.base_dtype, model.epsilon.shape)
assign_epsilon_op = model.epsilon.assign(epsilon_value)
for episode in range(500):
    eps = sess.run(model.epsilon)
    play(sess, model, eps)
    sess.run(assign_epsilon_op, feed_dict={epsilon_value: max(0.05, eps * 0.99)})  # GG104
""",
        8: """\
import tensorflow as tf
tf1 = tf.compat.v1

step_var = tf1.get_variable("step", [], tf.int64, trainable=False)
assign_add_op = step_var.assign_add(1)
with tf1.train.SingularMonitoredSession() as sess:
    while not sess.should_stop():
        sess.run(train_op)
        sess.run(assign_add_op)  # GG104
""",
    }
