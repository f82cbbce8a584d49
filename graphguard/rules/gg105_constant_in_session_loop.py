"""GG105 constant-in-session-loop."""

from graphguard.analysis.catalog import Effect
from graphguard.rules.base import Rule


class ConstantInSessionLoop(Rule):
    """
    ## What it does
    Finds `tf.constant(...)` and `tf.convert_to_tensor(...)` called on every iteration of a loop that
    runs session steps, usually to turn a fresh NumPy batch into a tensor.

    ## Why is this bad?
    A constant is a node of the graph that holds its data: every call copies the value into a new
    `Const` op. Per batch, the graph grows by the size of the data itself, the `.meta` file and RAM
    balloon, and every `Session.run` gets slower.

    Feed changing data through a `tf.placeholder` and `feed_dict`, or read it with `tf.data`.

    ## References
    - [`tf.compat.v1.placeholder`](https://www.tensorflow.org/api_docs/python/tf/compat/v1/placeholder)
    """

    CODE = "GG105"
    NAME = "constant-in-session-loop"
    EFFECTS = frozenset({Effect.CONSTANT})
    TITLE = "Constant made in a session loop"
    MESSAGE = "{subject} makes a constant op in the loop at line {loop_row}"
    ADVICE = (
        "the value is copied into the graph each time: feed changing data through a placeholder and feed_dict"
        " (or tf.data)"
    )

    VALID = (
        # The fix for the first INVALID example: one placeholder, the batch fed through feed_dict.
        """\
import tensorflow as tf

images = tf.placeholder(tf.float32, [None, 28, 28, 1])
logits = model(images)
with tf.Session() as sess:
    for batch in batches:
        sess.run(logits, feed_dict={images: batch})
""",
        # Constants built once with the graph, before the loop, and only run in it.
        """\
import tensorflow.compat.v1 as tf

mean_rgb = tf.constant([123.68, 116.78, 103.94])
images = tf.placeholder(tf.float32, [None, 224, 224, 3])
logits = vgg16(images - mean_rgb)
sess = tf.Session()
while True:
    batch = next_batch()
    if batch is None:
        break
    print(sess.run(logits, {images: batch}))
""",
        # One constant per layer, in a loop that runs no step.
        """\
import tensorflow as tf

kernels = []
for name in ["conv1", "conv2", "conv3"]:
    kernels.append(tf.constant(pretrained[name], name=name + "_kernel"))
net = build_net(images, kernels)
with tf.Session() as sess:
    for batch in batches:
        sess.run(net, {images: batch})
""",
        # Each fold has its own graph, so its data can be a constant.
        """\
import tensorflow as tf

for fold, (x_train, y_train) in enumerate(folds):
    with tf.Graph().as_default():
        features = tf.constant(x_train, dtype=tf.float32)
        labels = tf.constant(y_train)
        train_op = build_model(features, labels)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            for step in range(500):
                sess.run(train_op)
""",
        # A once-guard: the constant (and the op around it) is made on the first call only.
        """\
import tensorflow as tf

class Sampler:
    def __init__(self, sess, logits):
        self.sess = sess
        self.logits = logits
        self._probs = None

    def sample(self, feed):
        if self._probs is None:
            self._probs = tf.nn.softmax(self.logits / tf.constant(TEMPERATURE))
        return self.sess.run(self._probs, feed)

sampler = Sampler(sess, logits)
for step in range(200):
    text += pick(sampler.sample({inputs: encode(text)}))
""",
        # NumPy conversions, and tf.make_tensor_proto (a host-side protobuf), build no op.
        """\
import numpy as np
import tensorflow as tf

with tf.Session() as sess:
    for batch in batches:
        images = np.asarray(batch, dtype=np.float32) / 255.0
        embeddings = sess.run(embed, {x: images})
        request.inputs["embeddings"].CopyFrom(tf.make_tensor_proto(embeddings))
        stub.Predict(request)
""",
    )

    INVALID = (
        """\
import tensorflow as tf

with tf.Session() as sess:
    for batch in batches:
        images = tf.constant(batch)  # GG105
        sess.run(model(images))
""",
        # Labels one-hot encoded with TF on every batch (the tf.one_hot around it is GG101).
        """\
import tensorflow as tf

sess = tf.InteractiveSession()
for xs, ys in batches:
    ys_onehot = tf.one_hot(tf.constant(ys), 10).eval()  # GG105
    train_step.run(feed_dict={x: xs, y_: ys_onehot})
""",
        # The validation set turned into a constant after every epoch's batch loop.
        """\
import tensorflow.compat.v1 as tf

sess = tf.Session()
sess.run(tf.global_variables_initializer())
for epoch in range(30):
    for xs, ys in train_batches:
        sess.run(train_op, {x: xs, y: ys})
    val_logits = build_model(tf.constant(x_val), reuse=True)  # GG105
    print(sess.run(val_logits))
""",
        # A temperature made a constant per sampled character (the division is GG106 too).
        """\
from tensorflow.compat import v1

sess = v1.Session()
text = seed
for i in range(200):
    scaled = logits / v1.constant(temperature)  # GG105
    text += pick(sess.run(scaled, {inputs: encode(text)}))
""",
        # convert_to_tensor in a comprehension; tf.compat.v1 spelled out.
        """\
import tensorflow as tf

sess = tf.compat.v1.Session()
codes = [sess.run(encoder(tf.compat.v1.convert_to_tensor(b))) for b in batches]  # GG105
""",
        # A same-module helper makes the constant: reported at its call in the loop.
        """\
import tensorflow as tf

def predict(sess, batch):
    images = tf.constant(batch, dtype=tf.float32)
    return sess.run(net(images))

with tf.Session() as sess:
    predictions = []
    for batch in batches:
        predictions.append(predict(sess, batch))  # GG105
""",
        # The session held on the object; a MonitoredTrainingSession.
        """\
import tensorflow as tf

class Evaluator:
    def __init__(self):
        self.sess = tf.train.MonitoredTrainingSession(checkpoint_dir="ckpt")

    def evaluate(self, batches):
        for batch in batches:
            inputs = tf.convert_to_tensor(batch, dtype=tf.float32)  # GG105
            yield self.sess.run(self.model(inputs))
""",
    )

    #: The "Fix safety" section of the docs (ruff's heading).
    FIX_SAFETY = """\
Safe when the data does not change in the loop: the constant is built once, before the loop. Data that
changes per step, in `name = tf.constant(batch)` at the top of the loop body, becomes a placeholder
built once before the loop (`name = tf.placeholder(...)`), and every `run` after it in the loop that
uses `name` feeds it (`feed_dict={name: batch}`, merged into an existing feed). That fix is unsafe:
the placeholder's shape is left open, and its dtype is the `dtype=` given, the one the value's source
shows (`tf.string` for a string, `tf.bool` for a comparison, `tf.int32` for an int or a `range`
counter), or else a guess (`float32`, where `tf.constant` of a float64 array made float64). Ops built from the constant in the
loop stay findings of their own (GG101).
"""

    #: What ``--fix --unsafe-fixes`` makes of INVALID[i] (Fixit's expected_replacement); the tests
    #: check it, the docs show it.
    FIXES = {
        0: """\
import tensorflow as tf

images = tf.placeholder(tf.float32)
with tf.Session() as sess:
    for batch in batches:
        sess.run(model(images), feed_dict={images: batch})
""",
        2: """\
import tensorflow.compat.v1 as tf

sess = tf.Session()
sess.run(tf.global_variables_initializer())
constant_op = tf.constant(x_val)
for epoch in range(30):
    for xs, ys in train_batches:
        sess.run(train_op, {x: xs, y: ys})
    val_logits = build_model(constant_op, reuse=True)  # GG105
    print(sess.run(val_logits))
""",
        3: """\
from tensorflow.compat import v1

sess = v1.Session()
text = seed
scaled = logits / v1.constant(temperature)  # GG105
for i in range(200):
    text += pick(sess.run(scaled, {inputs: encode(text)}))
""",
        6: """\
import tensorflow as tf

class Evaluator:
    def __init__(self):
        self.sess = tf.train.MonitoredTrainingSession(checkpoint_dir="ckpt")

    def evaluate(self, batches):
        inputs = tf.placeholder(tf.float32)
        for batch in batches:
            yield self.sess.run(self.model(inputs), feed_dict={inputs: batch})
""",
    }
