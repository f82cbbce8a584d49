"""GG106 tensor-operator-in-session-loop."""

from graphguard.analysis.catalog import Effect
from graphguard.rules.base import Rule


class TensorOperatorInSessionLoop(Rule):
    """
    ## What it does
    Finds a Python operator or subscript applied to a tensor (`loss * 2`, `logits[0]`, `-x`, `a + b`,
    `x @ w`, `y > 0.5`) on every iteration of a loop that runs session steps. A helper's parameter is a
    tensor when a call passes one (`def evaluate(sess, scores): sess.run(scores * 2)` called with the
    model's output; `complement(probs)` with `def complement(p): return 1.0 - p`, at that call).

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
    TITLE = "Tensor operator applied in a session loop"
    MESSAGE = "{subject} on a tensor builds an op in the loop at line {loop_row}"
    ADVICE = (
        "build the expression once before the loop, or apply it to the NumPy value sess.run returns"
    )

    VALID = (
        # The fix for the first INVALID example: the expression built once, before the loop.
        """\
import tensorflow as tf

logits = tf.layers.dense(features, 10)
scaled = logits * 2.0
with tf.Session() as sess:
    for batch in batches:
        print(sess.run(scaled, {features: batch}))
""",
        # Operators on what sess.run returns are NumPy arithmetic.
        """\
import tensorflow.compat.v1 as tf

sess = tf.Session()
total = 0.0
for xs, ys in batches:
    probs, batch_loss = sess.run([probabilities, loss], {x: xs, y: ys})
    total += batch_loss * len(xs)
    confident = probs[:, 1] > 0.5
    margin = -batch_loss
""",
        # Indexing Python lists of tensors, and the list tf.gradients returns, adds no op; nor does .shape.
        """\
import tensorflow as tf

heads = [tf.layers.dense(features, n) for n in (10, 100)]
grads = tf.gradients(loss, params)
with tf.Session() as sess:
    for step in range(1000):
        head = heads[step % len(heads)]
        outputs, first_grad = sess.run([head, grads[0]], {features: next_batch()})
        assert outputs.shape[-1] == head.shape[-1]
""",
        # Every trial has its own graph, so the expression is built into it.
        """\
import tensorflow as tf

for weight in [0.1, 1.0, 10.0]:
    with tf.Graph().as_default():
        recon, kl = build_vae()
        loss = recon + weight * kl
        train_op = tf.train.AdamOptimizer().minimize(loss)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            for step in range(1000):
                sess.run(train_op)
""",
        # A once-guard on the attribute the expression is stored in.
        """\
import tensorflow as tf

class Model:
    def __init__(self):
        self.sess = tf.Session()
        self.inputs = tf.placeholder(tf.float32, [None, 784])
        self.logits = tf.layers.dense(self.inputs, 10)
        self._top = None

    def top_score(self, batch):
        if self._top is None:
            self._top = self.logits[:, 0] * 100.0
        return self.sess.run(self._top, {self.inputs: batch})

model = Model()
for batch in batches:
    print(model.top_score(batch))
""",
        # Strings, lists and loop counters: operators on Python values.
        """\
from tensorflow.compat import v1

fetches = [train_op]
with v1.Session() as sess:
    for step in range(10000):
        results = sess.run(fetches + [loss] if step % 100 == 0 else fetches)
        if step % 100 == 0:
            print("step %d: loss %.3f" % (step, results[-1]))
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
        # Adding the loss tensor instead of its value: a new Add op per batch.
        """\
import tensorflow as tf

loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=logits))
with tf.Session() as sess:
    for epoch in range(10):
        epoch_loss = 0.0
        for xs, ys in batches:
            _, batch_loss = sess.run([train_op, loss], {x: xs, y: ys})
            epoch_loss += loss  # GG106
""",
        # A slice of a tensor, a while loop, InteractiveSession and eval().
        """\
import tensorflow as tf

sess = tf.InteractiveSession()
probs = tf.nn.softmax(logits)
while True:
    batch = next_batch()
    if batch is None:
        break
    print(probs[:, 1].eval(feed_dict={x: batch}))  # GG106
""",
        # A comparison is an op too.
        """\
import tensorflow.compat.v1 as tf

probs = tf.sigmoid(logits)
sess = tf.Session()
for xs in test_batches:
    masks = sess.run(probs > 0.5, {x: xs})  # GG106
""",
        # Matrix product and negation on a placeholder and a variable, in a comprehension.
        """\
from tensorflow.compat import v1

x = v1.placeholder(v1.float32, [None, 784])
w = v1.get_variable("w", [784, 10])
with v1.Session() as sess:
    scores = [sess.run(-(x @ w), {x: xs}) for xs in batches]  # GG106
""",
        # Attributes assigned from TF calls in the class are tensors; the session is an attribute too.
        """\
import tensorflow as tf

class CharRNN:
    def __init__(self, vocab_size):
        self.sess = tf.Session()
        self.inputs = tf.placeholder(tf.int32, [1, None])
        self.logits = tf.layers.dense(embed(self.inputs), vocab_size)

    def sample(self, text, length, temperature):
        for _ in range(length):
            scores = self.sess.run(self.logits[0, -1] / temperature, {self.inputs: [encode(text)]})  # GG106
            text += pick(scores)
        return text
""",
        # A same-module helper applies the operator: reported at its call in the loop.
        """\
import tensorflow as tf

def weight_decay(weights, scale=5e-4):
    return scale * tf.nn.l2_loss(weights)

with tf.Session() as sess:
    for step in range(10000):
        _, reg = sess.run([train_op, weight_decay(w)])  # GG106
""",
        # An attribute set from a TF call in the class is a tensor on its instances too.
        """\
import tensorflow as tf

class Model:
    def __init__(self):
        self.x = tf.placeholder(tf.float32, [None, 784])
        self.loss = tf.reduce_mean(tf.layers.dense(self.x, 10))

model = Model()
with tf.Session() as sess:
    for xs in batches:
        print(sess.run(model.loss * 100.0, {model.x: xs}))  # GG106
""",
    )

    #: The "Fix safety" section of the docs (ruff's heading).
    FIX_SAFETY = """\
Safe when the tensor and the other operand do not change in the loop: the expression is built once,
before the loop (`logits_times_op = logits * 2.0`), and the loop runs it. Unsafe when it reads an
object a method called in the loop may change. No fix when it reads a value the loop changes.
"""

    #: What ``--fix --unsafe-fixes`` makes of INVALID[i] (Fixit's expected_replacement); the tests
    #: check it, the docs show it.
    FIXES = {
        0: """\
import tensorflow as tf

logits = tf.layers.dense(features, 10)
logits_times_op = logits * 2.0
with tf.Session() as sess:
    for batch in batches:
        print(sess.run(logits_times_op, {features: batch}))  # GG106
""",
        2: """\
import tensorflow as tf

sess = tf.InteractiveSession()
probs = tf.nn.softmax(logits)
probs_item_op = probs[:, 1]
while True:
    batch = next_batch()
    if batch is None:
        break
    print(probs_item_op.eval(feed_dict={x: batch}))  # GG106
""",
        5: """\
import tensorflow as tf

class CharRNN:
    def __init__(self, vocab_size):
        self.sess = tf.Session()
        self.inputs = tf.placeholder(tf.int32, [1, None])
        self.logits = tf.layers.dense(embed(self.inputs), vocab_size)

    def sample(self, text, length, temperature):
        logits_over_op = self.logits[0, -1] / temperature
        for _ in range(length):
            scores = self.sess.run(logits_over_op, {self.inputs: [encode(text)]})  # GG106
            text += pick(scores)
        return text
""",
        6: """\
import tensorflow as tf

def weight_decay(weights, scale=5e-4):
    return scale * tf.nn.l2_loss(weights)

weight_decay_op = weight_decay(w)
with tf.Session() as sess:
    for step in range(10000):
        _, reg = sess.run([train_op, weight_decay_op])  # GG106
""",
        7: """\
import tensorflow as tf

class Model:
    def __init__(self):
        self.x = tf.placeholder(tf.float32, [None, 784])
        self.loss = tf.reduce_mean(tf.layers.dense(self.x, 10))

model = Model()
loss_times_op = model.loss * 100.0
with tf.Session() as sess:
    for xs in batches:
        print(sess.run(loss_times_op, {model.x: xs}))  # GG106
""",
    }
