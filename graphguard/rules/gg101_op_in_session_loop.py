"""GG101 op-in-session-loop."""

from graphguard.analysis.catalog import Effect
from graphguard.rules.base import Rule


class OpInSessionLoop(Rule):
    """
    ## What it does
    Finds TensorFlow calls that build graph ops (`tf.argmax`, `tf.reduce_mean`, `tf.nn.softmax`,
    `tf.layers.dense`, `optimizer.minimize`, ...) on every iteration of a loop that also runs a
    session step (`sess.run`, `tensor.eval`, `op.run`).

    ## Why is this bad?
    In graph mode (TF 1.x, or `tf.compat.v1` under TF 2) a call such as `tf.argmax(y, 1)` does not
    compute anything: it adds new nodes to the default graph and returns a symbolic tensor. Inside the
    training loop it adds them again on every step, so the graph grows without bound. After any op is
    added, the next `Session.run` copies the whole graph to the runtime again (about 11-22 us per
    existing op) and builds a new executor for the new fetch, so every step is slower than the last and
    memory climbs until the job dies. In a public report a step took 1.55 s and rose to 1.76 s
    in 17 steps; built once, it took 0.097 s.

    Build every op once, before the loop, and only *run* it in the loop. Feed values that change per
    step through a `tf.placeholder` and `feed_dict`.

    ## References
    - [`tf.Graph.finalize`](https://www.tensorflow.org/api_docs/python/tf/Graph#finalize): makes any
      later op creation raise, the runtime counterpart of this rule (`graphguard.GraphGuard`).
    - [`tf.compat.v1.Session.run`](https://www.tensorflow.org/api_docs/python/tf/compat/v1/Session#run)
    """

    CODE = "GG101"
    NAME = "op-in-session-loop"
    EFFECTS = frozenset({Effect.OP})
    TITLE = "Graph ops built in a session loop"
    MESSAGE = "{subject} builds ops in the loop at line {loop_row}"
    ADVICE = (
        "build it once before the loop and run the existing tensor (feed changing values through a placeholder)"
    )

    VALID = (
        # A once-guard whose body fills its target through a method of the same class.
        """\
import tensorflow.compat.v1 as tf

class Replay:
    def build_targets(self, q):
        batch = tf.placeholder(tf.float32, [None, 4])
        self.targets_fn = (batch, tf.reduce_max(q(batch), axis=1))

    def targets(self, sess, q, rows):
        if not hasattr(self, "targets_fn"):
            self.build_targets(q)
        batch, best = self.targets_fn
        return sess.run(best, {batch: rows})

replay = Replay()
with tf.Session() as sess:
    for step in range(100000):
        sess.run(train_op, {targets: replay.targets(sess, q_network, sample())})
""",
        # The fix for the first INVALID example: built once, run per step.
        """\
import tensorflow.compat.v1 as tf

x = tf.placeholder(tf.float32, [None, 10])
y = tf.layers.dense(x, 3)
prediction = tf.argmax(y, 1)
with tf.Session() as sess:
    sess.run(tf.global_variables_initializer())
    for batch in batches:
        print(sess.run(prediction, feed_dict={x: batch}))
""",
        # A loop that runs no session step: building towers before training is how graphs are made.
        """\
import tensorflow as tf

losses = []
for gpu in range(4):
    with tf.device("/gpu:%d" % gpu):
        losses.append(tf.reduce_mean(tower(gpu)))
total = tf.add_n(losses)
sess = tf.Session()
for step in range(1000):
    sess.run(total)
""",
        # A graph made fresh in the same iteration: each trial has its own small graph.
        """\
import tensorflow as tf

for lr in [0.1, 0.01]:
    with tf.Graph().as_default():
        loss = tf.reduce_mean(model())
        train_op = tf.train.GradientDescentOptimizer(lr).minimize(loss)
        with tf.Session() as sess:
            sess.run(train_op)
""",
        # The default graph is reset at the start of every iteration.
        """\
import tensorflow as tf

for fold in range(5):
    tf.reset_default_graph()
    logits = build_model()
    loss = tf.reduce_mean(logits)
    sess = tf.Session()
    sess.run(loss)
""",
        # A function defined in the loop is not called there; defining it builds nothing.
        """\
import tensorflow as tf

sess = tf.Session()
for step in range(10):
    def make_metric(t):
        return tf.reduce_mean(t)
    sess.run(train_op)
""",
        # Host-side TensorFlow utilities build no ops.
        """\
import tensorflow as tf

with tf.Session() as sess:
    for step in range(100):
        sess.run(train_op)
        tf.logging.info("step %d", step)
        if tf.gfile.Exists("STOP"):
            break
        tf.train.latest_checkpoint("ckpt")
""",
        # Running existing ops and reading tensors by name add nothing.
        """\
import tensorflow as tf

with tf.Session() as sess:
    graph = tf.get_default_graph()
    while True:
        logits = graph.get_tensor_by_name("logits:0")
        sess.run(logits)
""",
        # A helper whose ops are built only for a tensor argument, called per step with Python numbers:
        # the number branch fills its cache once per name.
        """import tensorflow.compat.v1 as tf

_fed = {}

def is_graph_value(x):
    return isinstance(x, (tf.Tensor, tf.Variable))

def track(name, value, sess=None):
    if is_graph_value(value):
        return tf.identity(value, name=name)
    if name not in _fed:
        holder = tf.placeholder(tf.float32)
        _fed[name] = (holder, tf.summary.scalar(name, holder))
    holder, summary = _fed[name]
    return sess.run(summary, {holder: value})

with tf.Session() as sess:
    for step in range(100000):
        loss_value, _ = sess.run([loss, train_op])
        track("loss", loss_value, sess)
        if not tf.is_tensor(step):
            track("step", step, sess)
""",
    )

    INVALID = (
        """\
import tensorflow.compat.v1 as tf

x = tf.placeholder(tf.float32, [None, 10])
y = tf.layers.dense(x, 3)
with tf.Session() as sess:
    sess.run(tf.global_variables_initializer())
    for batch in batches:
        print(sess.run(tf.argmax(y, 1), feed_dict={x: batch}))  # GG101
""",
        # A while loop and an InteractiveSession with T.eval() as the step.
        """\
import tensorflow as tf

sess = tf.InteractiveSession()
step = 0
while step < 1000:
    accuracy = tf.reduce_mean(tf.cast(correct, tf.float32))  # GG101
    print(accuracy.eval(feed_dict={x: xs}))
    step += 1
""",
        # The loss and the train op are rebuilt on every step; the optimizer object itself builds nothing.
        """\
import tensorflow as tf

with tf.Session() as sess:
    for step in range(100):
        loss = tf.reduce_mean(tf.square(pred - y))  # GG101
        train_op = tf.train.AdamOptimizer(1e-3).minimize(loss)  # GG101
        sess.run(train_op)
""",
        # The op is built in the outer loop, the step runs in the inner one: the graph grows per epoch.
        """\
from tensorflow.compat import v1

sess = v1.Session()
for epoch in range(num_epochs):
    for batch in batches:
        sess.run(train_op, feed_dict={x: batch})
    epoch_accuracy = v1.reduce_mean(accuracies)  # GG101
""",
        # tf.compat.v1 spelled out, MonitoredTrainingSession, an op's own run() as the step.
        """\
import tensorflow as tf

with tf.compat.v1.train.MonitoredTrainingSession() as mon_sess:
    while not mon_sess.should_stop():
        step_op = tf.compat.v1.group(train_op, increment_step)  # GG101
        step_op.run(session=mon_sess)
""",
        # A comprehension is a loop too.
        """\
import tensorflow as tf

sess = tf.Session()
scores = [sess.run(tf.nn.softmax(logits), {x: batch}) for batch in batches]  # GG101
""",
        # A session passed in as a parameter, an alias of the module.
        """\
import tensorflow
tf1 = tensorflow.compat.v1

def evaluate(sess, batches):
    for batch in batches:
        sess.run(tf1.image.resize(images, [64, 64]), {raw: batch})  # GG101
""",
    )

    #: The "Fix safety" section of the docs (ruff's heading).
    FIX_SAFETY = """\
Safe when the op's inputs do not change in the loop and it runs on every iteration: it is built
once, just before the loop (the outermost loop that repeats it unchanged, as `for epoch` around
`for batch`; above the `with tf.Session()` or `with GraphGuard(...)` blocks that wrap the loop, never
out of a graph, scope or device context), and the loop runs the built tensor. A top-level `name = ...` statement of the
loop body moves whole; an op inside `sess.run(...)` gets a name (`argmax_op`). Unsafe
(`--unsafe-fixes`) when it runs only under a condition (an `if` such as `if step % 100 == 0:`, a
conditional expression, after an earlier `continue`): built once before the loop it is built whatever
the condition, which fails where its inputs were not ready; when it is in a `try` block; when it calls
a helper of the same file that builds nothing but ops; when it creates variables (`opt.minimize` with
slots, layers) and no initializer has run before the loop (after one, it is not moved at all); or when
it reads an object that a method called in the loop may change. No fix when it reads a value
the loop changes (feed that value through a placeholder), sits under a `with` inside the loop or in a
nested function or comprehension, or the loop resets or replaces the default graph. The safety model
in full: [docs/fixes.md](../fixes.md).
"""

    #: What ``--fix --unsafe-fixes`` makes of INVALID[i] (Fixit's expected_replacement); the tests
    #: check it, the docs show it.
    FIXES = {
        0: """\
import tensorflow.compat.v1 as tf

x = tf.placeholder(tf.float32, [None, 10])
y = tf.layers.dense(x, 3)
argmax_op = tf.argmax(y, 1)
with tf.Session() as sess:
    sess.run(tf.global_variables_initializer())
    for batch in batches:
        print(sess.run(argmax_op, feed_dict={x: batch}))  # GG101
""",
        1: """\
import tensorflow as tf

sess = tf.InteractiveSession()
step = 0
accuracy = tf.reduce_mean(tf.cast(correct, tf.float32))  # GG101
while step < 1000:
    print(accuracy.eval(feed_dict={x: xs}))
    step += 1
""",
        2: """\
import tensorflow as tf

loss = tf.reduce_mean(tf.square(pred - y))  # GG101
train_op = tf.train.AdamOptimizer(1e-3).minimize(loss)  # GG101
with tf.Session() as sess:
    for step in range(100):
        sess.run(train_op)
""",
        3: """\
from tensorflow.compat import v1

sess = v1.Session()
epoch_accuracy = v1.reduce_mean(accuracies)  # GG101
for epoch in range(num_epochs):
    for batch in batches:
        sess.run(train_op, feed_dict={x: batch})
""",
        4: """\
import tensorflow as tf

step_op = tf.compat.v1.group(train_op, increment_step)  # GG101
with tf.compat.v1.train.MonitoredTrainingSession() as mon_sess:
    while not mon_sess.should_stop():
        step_op.run(session=mon_sess)
""",
        6: """\
import tensorflow
tf1 = tensorflow.compat.v1

def evaluate(sess, batches):
    resize_op = tf1.image.resize(images, [64, 64])
    for batch in batches:
        sess.run(resize_op, {raw: batch})  # GG101
""",
    }
