"""GG107 placeholder-in-session-loop."""

from graphguard.analysis.catalog import Effect
from graphguard.rules.base import Rule


class PlaceholderInSessionLoop(Rule):
    """
    ## What it does
    Finds `tf.placeholder(...)`, `tf.Variable(...)` and `tf.get_variable(...)` called on every
    iteration of a loop that runs session steps. `tf.get_variable` inside
    `tf.variable_scope(..., reuse=tf.AUTO_REUSE)` (or `reuse=True`) is not reported: it returns the
    existing variable and adds no op.

    ## Why is this bad?
    A placeholder is an op; a variable is several (the variable, its initial value, its initializer).
    Made per iteration they grow the graph, and the new variables are uninitialized, so the next run
    that needs them fails unless an initializer is built and run for them too, which grows the graph
    again.

    Create placeholders and variables once, with the model, before the loop.

    ## References
    - [`tf.compat.v1.placeholder`](https://www.tensorflow.org/api_docs/python/tf/compat/v1/placeholder)
    """

    CODE = "GG107"
    NAME = "placeholder-in-session-loop"
    EFFECTS = frozenset({Effect.VARIABLE})
    TITLE = "Placeholder or variable made in a session loop"
    MESSAGE = "{subject} makes a placeholder or variable in the loop at line {loop_row}"
    ADVICE = (
        "create it once with the model, before the loop"
    )

    VALID = (
        # The fix for the first INVALID example: one placeholder, made with the model.
        """\
import tensorflow as tf

image = tf.placeholder(tf.float32, [1, 256, 256, 3])
stylized = transform(image)
with tf.Session() as sess:
    for path in paths:
        sess.run(stylized, {image: load(path)})
""",
        # One placeholder per feature, in a comprehension that runs no step.
        """\
import tensorflow.compat.v1 as tf

inputs = {name: tf.placeholder(tf.float32, [None], name=name) for name in FEATURES}
logits = wide_and_deep(inputs)
sess = tf.Session()
for rows in reader:
    sess.run(logits, {inputs[name]: rows[name] for name in FEATURES})
""",
        # One variable per layer, in a loop that runs no step.
        """\
import tensorflow as tf

weights = []
for i, (n_in, n_out) in enumerate([(784, 256), (256, 10)]):
    weights.append(tf.get_variable("w%d" % i, [n_in, n_out]))
logits = mlp(x, weights)
with tf.Session() as sess:
    sess.run(tf.global_variables_initializer())
    for xs, ys in batches:
        sess.run(train_op, {x: xs, y: ys})
""",
        # Each trial has its own graph, so its placeholders and variables are new on purpose.
        """\
import tensorflow as tf

for hidden in [64, 128, 256]:
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [None, 784])
        w = tf.Variable(tf.zeros([784, hidden]))
        train_op = build_head(x, w)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            for xs in batches:
                sess.run(train_op, {x: xs})
""",
        # Keras clears its session (and the default graph) at the start of every trial.
        """\
import tensorflow as tf
from keras import backend as K

for trial in range(20):
    K.clear_session()
    dropout = tf.placeholder_with_default(0.5, [])
    model = build_model(sample_params(), dropout)
    sess = K.get_session()
    for xs, ys in batches:
        sess.run(model.train_op, {model.x: xs, model.y: ys})
""",
        # A once-guard: an input placeholder and network per image size, made the first time it is seen.
        """\
from tensorflow.compat import v1

class Stylizer:
    def __init__(self, sess):
        self.sess = sess
        self._nets = {}

    def stylize(self, image):
        if image.shape not in self._nets:
            x = v1.placeholder(v1.float32, (1,) + image.shape)
            self._nets[image.shape] = (x, transform_net(x))
        x, y = self._nets[image.shape]
        return self.sess.run(y, {x: image[None]})

stylizer = Stylizer(sess)
for path in paths:
    save(stylizer.stylize(load(path)))
""",
        # Under reuse=tf.AUTO_REUSE (or reuse=True), get_variable returns the existing variable: no new op.
        """\
import tensorflow as tf

with tf.compat.v1.Session() as sess:
    for step in range(1000):
        with tf.compat.v1.variable_scope("attack", reuse=tf.compat.v1.AUTO_REUSE):
            noise = tf.compat.v1.get_variable("noise", [1, 299, 299, 3])
        sess.run(attack_op, {image: sess.run(noise) + batch})
""",
        # The global step is created once per graph, then returned.
        """\
import tensorflow as tf

with tf.Session() as sess:
    for step in range(100000):
        global_step = tf.train.get_or_create_global_step()
        sess.run(train_op)
        if sess.run(global_step) % 1000 == 0:
            saver.save(sess, "ckpt/model", global_step=global_step)
""",
    )

    INVALID = (
        """\
import tensorflow as tf

with tf.Session() as sess:
    for path in paths:
        image = tf.placeholder(tf.float32, [1, 256, 256, 3])  # GG107
        sess.run(transform(image), {image: load(path)})
""",
        # A new head variable per task, in a new variable scope each time; tf.compat.v1 spelled out.
        """\
import tensorflow as tf

with tf.compat.v1.Session() as sess:
    for task, (xs, ys) in enumerate(tasks):
        with tf.compat.v1.variable_scope("task%d" % task):
            w = tf.compat.v1.get_variable("w", [512, 10])  # GG107
        sess.run(w.initializer)
        sess.run(train_op, {x: xs, y: ys})
""",
        # A variable per restart; InteractiveSession, an op's run() as the step.
        """\
import numpy as np
import tensorflow as tf

sess = tf.InteractiveSession()
for restart in range(num_restarts):
    w = tf.Variable(np.random.randn(784, 10).astype(np.float32))  # GG107
    sess.run(w.initializer)
    for xs, ys in batches:
        train_step.run(feed_dict={x: xs, y_: ys})
""",
        # A keep-probability placeholder made per epoch, outside the inner batch loop.
        """\
import tensorflow.compat.v1 as tf

sess = tf.Session()
for epoch in range(50):
    keep_prob = tf.placeholder(tf.float32, [])  # GG107
    for xs, ys in batches:
        sess.run(train_op, {x: xs, y: ys, keep_prob: 0.5})
""",
        # A session parameter, a while loop over a queue of requests.
        """\
from tensorflow.compat import v1

def serve(sess, requests):
    while not requests.empty():
        features = requests.get()
        inputs = v1.placeholder(v1.float32, [None, features.shape[1]])  # GG107
        yield sess.run(ranker(inputs), {inputs: features})
""",
        # A same-module helper makes the placeholder: reported at its call in the loop.
        """\
import tensorflow as tf

def image_input(height, width):
    return tf.placeholder(tf.float32, [1, height, width, 3], name="image")

class Stylizer:
    def __init__(self):
        self.sess = tf.Session()

    def run(self, images):
        for image in images:
            x = image_input(*image.shape[:2])  # GG107
            yield self.sess.run(self.net(x), {x: image[None]})
""",
        # A MonitoredTrainingSession loop making a variable to keep the best score.
        """\
import tensorflow as tf

with tf.train.MonitoredTrainingSession(checkpoint_dir="ckpt") as mon_sess:
    while not mon_sess.should_stop():
        _, acc = mon_sess.run([train_op, accuracy])
        best = tf.Variable(acc, trainable=False, name="best_accuracy")  # GG107
""",
    )

    #: The "Fix safety" section of the docs (ruff's heading).
    FIX_SAFETY = """\
Safe for a placeholder whose dtype and shape do not change in the loop: it is created once, before
the loop, and the loop feeds it as before. Variables (`tf.Variable`, `tf.get_variable`) are never
moved: they must be created with the model and initialized, which a fix cannot arrange.
"""

    #: What ``--fix --unsafe-fixes`` makes of INVALID[i] (Fixit's expected_replacement); the tests
    #: check it, the docs show it.
    FIXES = {
        0: """\
import tensorflow as tf

image = tf.placeholder(tf.float32, [1, 256, 256, 3])  # GG107
with tf.Session() as sess:
    for path in paths:
        sess.run(transform(image), {image: load(path)})
""",
        3: """\
import tensorflow.compat.v1 as tf

sess = tf.Session()
keep_prob = tf.placeholder(tf.float32, [])  # GG107
for epoch in range(50):
    for xs, ys in batches:
        sess.run(train_op, {x: xs, y: ys, keep_prob: 0.5})
""",
    }
