"""GG304 variable-created-in-tf-function."""

from graphguard.analysis.catalog import Effect
from graphguard.rules.base import Rule


class VariableCreatedInTfFunction(Rule):
    """
    ## What it does
    Finds a `tf.Variable`, a Keras optimizer or metric made in the body of a `tf.function` (a
    decorated function or method), outside a once-guard (`if self.v is None:`), or a call there of a
    project function that makes one; and a Keras layer or model made there and built there: called on
    a value, given an input shape, or bound to a name the body calls. A layer made and kept unbuilt
    (assembled into a `Sequential` that is returned or stored) has no variables yet: Keras makes a
    layer's weights when it is first called.

    ## Why is this bad?
    The body runs on every trace, so it would make new variables on every trace. TensorFlow refuses:
    measured on TF 2.21, each of `tf.Variable(1.0)`, `tf.keras.layers.Dense(2)(x)` and
    `tf.keras.optimizers.SGD(0.1)` inside a `tf.function` raises `ValueError: tf.function only supports
    singleton tf.Variables created on the first call` on the first call; code that works around it by
    retracing makes new variables per trace.

    Make variables, layers, optimizers and models outside the function (in `__init__`, or before the
    loop) and use them inside, or create them once behind a guard (`if self.v is None:`).

    ## References
    - [Better performance with tf.function: creating tf.Variables](https://www.tensorflow.org/guide/function#creating_tfvariables)
    - SonarQube Python rule S6911: "tf.Variable objects should not be created inside tf.function"
    """

    CODE = "GG304"
    NAME = "variable-created-in-tf-function"
    EFFECTS = frozenset({Effect.TRACED_VARIABLE})
    TITLE = "Variable made inside a tf.function"
    MESSAGE = "{subject} makes a variable on every trace of its tf.function, which TensorFlow refuses"
    ADVICE = (
        "make it once, outside the tf.function (or behind an `is None` guard)"
    )

    FIX_SAFETY = """\
No automatic fix: where the variable, layer or optimizer should live (an attribute made in
`__init__`, a module-level object, an `is None` guard) depends on the program.
"""

    VALID = (
        # The fix: the variable and layer are made once, outside.
        """\
import tensorflow as tf

scale = tf.Variable(1.0)
dense = tf.keras.layers.Dense(10)

@tf.function
def forward(x):
    return dense(x) * scale
""",
        # Created on the first trace only, behind a guard.
        """\
import tensorflow as tf

class Counter(tf.Module):
    def __init__(self):
        self.count = None

    @tf.function
    def __call__(self, x):
        if self.count is None:
            self.count = tf.Variable(0)
        self.count.assign_add(1)
        return x
""",
        # Not a tf.function: an eager helper may make what it likes.
        """\
import tensorflow as tf

def make_state(n):
    return [tf.Variable(tf.zeros([n])) for _ in range(3)]
""",
        # A tf.Module with its variables made in __init__.
        """\
import tensorflow as tf

class Affine(tf.Module):
    def __init__(self, n):
        self.w = tf.Variable(tf.random.normal([n, n]))
        self.b = tf.Variable(tf.zeros([n]))

    @tf.function
    def __call__(self, x):
        return x @ self.w + self.b
""",
        # A helper that only reads existing variables.
        """\
import tensorflow as tf

def l2(variables):
    return tf.add_n([tf.reduce_sum(v * v) for v in variables])

@tf.function
def regularized_loss(x, y):
    return loss_fn(y, model(x)) + 1e-4 * l2(model.trainable_variables)
""",
        # Layers assembled in a traced method and stored unbuilt: no variables until first called.
        """\
import tensorflow as tf

class Generator(tf.keras.Model):
    def __init__(self):
        super().__init__()
        self.assemble()

    @tf.function
    def assemble(self):
        self.body = tf.keras.Sequential([tf.keras.layers.Dense(64), tf.keras.layers.Dense(1)])
""",
        # A Keras layer's weights, made by build() once.
        """\
import tensorflow as tf

class Scale(tf.keras.layers.Layer):
    def build(self, input_shape):
        self.scale = self.add_weight(shape=(), initializer="ones")

    def call(self, x):
        return x * self.scale
""",
    )

    INVALID = (
        """\
import tensorflow as tf

@tf.function
def forward(x):
    scale = tf.Variable(1.0)  # GG304
    return tf.keras.layers.Dense(10)(x) * scale  # GG304
""",
        # A method with its optimizer made inside, and a helper that makes a variable.
        """\
import tensorflow as tf

def moving_average(shape):
    return tf.Variable(tf.zeros(shape), trainable=False)

class Trainer:
    @tf.function
    def train_step(self, x, y):
        optimizer = tf.keras.optimizers.Adam(1e-3)  # GG304
        average = moving_average(x.shape[1:])  # GG304
        with tf.GradientTape() as tape:
            loss = self.loss_fn(y, self.model(x, training=True))
        optimizer.apply_gradients(zip(tape.gradient(loss, self.model.trainable_variables), self.model.trainable_variables))
        return loss
""",
        # A whole model made inside the step.
        """\
import tensorflow as tf

@tf.function
def predict(x):
    model = tf.keras.Sequential([tf.keras.layers.Dense(10)])  # GG304
    return model(x)
""",
        # Keras 3 layers inside a jit-compiled tf.function method.
        """\
import keras
import tensorflow as tf

class Block:
    @tf.function(jit_compile=True)
    def __call__(self, x):
        x = keras.layers.LayerNormalization()(x)  # GG304
        return keras.layers.Dense(64)(x)  # GG304
""",
        # Variables made per element of a Python loop, inside the function.
        """\
import tensorflow as tf

@tf.function
def mixture(x):
    total = 0.0
    for k in range(4):
        total += tf.Variable(tf.ones([1])) * x  # GG304
    return total
""",
        # A helper that builds a layer's variable, called from the traced step.
        """\
import tensorflow as tf

def bias(n):
    return tf.Variable(tf.zeros([n]))

@tf.function
def forward(x):
    return x + bias(10)  # GG304
""",
        # A Keras metric keeps its totals in variables.
        """\
import tensorflow as tf

@tf.function
def mean_loss(losses):
    mean = tf.keras.metrics.Mean()  # GG304
    mean.update_state(losses)
    return mean.result()
""",
    )

    FIXES: dict = {}  # no automatic fix: see Fix safety
