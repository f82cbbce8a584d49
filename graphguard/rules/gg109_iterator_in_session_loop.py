"""GG109 iterator-in-session-loop."""

from graphguard.analysis.catalog import Effect
from graphguard.rules.base import Rule


class IteratorInSessionLoop(Rule):
    """
    ## What it does
    Finds a `tf.data` dataset, an iterator (`make_one_shot_iterator`, `make_initializable_iterator`)
    or its `get_next()` built on every iteration of a loop that runs session steps.

    ## Why is this bad?
    Datasets and iterators are graph ops in graph mode. Rebuilding the input pipeline per epoch, or
    calling `iterator.get_next()` per step (which adds a new `IteratorGetNext` op each time instead of
    reusing one), grows the graph and slows every step.

    Build the dataset, the iterator and one `next_batch = iterator.get_next()` before the loop; rerun
    `iterator.initializer` per epoch.

    ## References
    - [`tf.compat.v1.data.Iterator`](https://www.tensorflow.org/api_docs/python/tf/compat/v1/data/Iterator)
    """

    CODE = "GG109"
    NAME = "iterator-in-session-loop"
    EFFECTS = frozenset({Effect.DATASET, Effect.ITERATOR})
    TITLE = "tf.data pipeline built in a session loop"
    MESSAGE = "{subject} builds a tf.data pipeline in the loop at line {loop_row}"
    ADVICE = (
        "build the dataset, iterator and get_next() once before the loop, and rerun iterator.initializer per epoch"
    )

    VALID = (
        # The fix for the first INVALID example: dataset, iterator and get_next() built once;
        # the iterator re-initialized per epoch.
        """\
import tensorflow as tf

dataset = tf.data.Dataset.from_tensor_slices((features, labels)).batch(32)
iterator = tf.data.make_initializable_iterator(dataset)
next_batch = iterator.get_next()
with tf.Session() as sess:
    for epoch in range(10):
        sess.run(iterator.initializer)
        sess.run(next_batch)
""",
        # One get_next() op, run until the dataset is exhausted.
        """\
import tensorflow.compat.v1 as tf

dataset = tf.data.TFRecordDataset(files).map(parse).batch(64)
images, labels = dataset.make_one_shot_iterator().get_next()
train_op = build_model(images, labels)
sess = tf.Session()
while True:
    try:
        sess.run(train_op)
    except tf.errors.OutOfRangeError:
        break
""",
        # A feedable iterator: the string handles are built once, then fed per step.
        """\
import tensorflow as tf

handle = tf.placeholder(tf.string, [])
iterator = tf.data.Iterator.from_string_handle(handle, train_ds.output_types, train_ds.output_shapes)
images, labels = iterator.get_next()
train_it = train_ds.make_one_shot_iterator()
valid_it = valid_ds.make_initializable_iterator()
with tf.Session() as sess:
    train_handle, valid_handle = sess.run([train_it.string_handle(), valid_it.string_handle()])
    for step in range(100000):
        sess.run(train_op, {handle: train_handle})
        if step % 1000 == 0:
            sess.run(valid_it.initializer)
            sess.run(loss, {handle: valid_handle})
""",
        # Each fold builds its input pipeline in its own graph.
        """\
from tensorflow.compat import v1

for fold, (train_idx, _) in enumerate(splits):
    with v1.Graph().as_default():
        dataset = v1.data.Dataset.from_tensor_slices((x[train_idx], y[train_idx])).shuffle(1000).batch(32)
        xs, ys = v1.data.make_one_shot_iterator(dataset).get_next()
        train_op = build_model(xs, ys)
        with v1.Session() as sess:
            sess.run(v1.global_variables_initializer())
            for step in range(1000):
                sess.run(train_op)
""",
        # One dataset per source built in a loop that runs no step, then sampled from once.
        """\
import tensorflow as tf

sources = []
for path in ["data/clean.tfrecord", "data/noisy.tfrecord"]:
    sources.append(tf.data.TFRecordDataset(path).map(parse).repeat())
dataset = tf.data.experimental.sample_from_datasets(sources, weights=[0.8, 0.2])
images, labels = tf.data.make_one_shot_iterator(dataset.batch(32)).get_next()
train_op = build_model(images, labels)
with tf.Session() as sess:
    for step in range(10000):
        sess.run(train_op)
""",
        # tf.io.tf_record_iterator is a plain Python generator over a file: no op.
        """\
import tensorflow as tf

with tf.Session() as sess:
    for path in shards:
        for record in tf.io.tf_record_iterator(path):
            example = tf.train.Example.FromString(record)
            sess.run(embed, {serialized: [example.SerializeToString()]})
""",
        # A once-guard: one get_next() op cached per split.
        """\
import tensorflow as tf

class Inputs:
    def __init__(self, datasets):
        self.datasets = datasets
        self._next = {}

    def batch(self, sess, split):
        if split not in self._next:
            self._next[split] = tf.data.make_one_shot_iterator(self.datasets[split]).get_next()
        return sess.run(self._next[split])

inputs = Inputs({"train": train_ds, "valid": valid_ds})
with tf.Session() as sess:
    for step in range(10000):
        xs, ys = inputs.batch(sess, "train")
        sess.run(train_op, {x: xs, y: ys})
""",
    )

    INVALID = (
        """\
import tensorflow as tf

dataset = tf.data.Dataset.from_tensor_slices((features, labels)).batch(32)
iterator = tf.data.make_one_shot_iterator(dataset)
with tf.Session() as sess:
    for step in range(1000):
        sess.run(iterator.get_next())  # GG109
""",
        # The whole pipeline rebuilt per epoch: every stage is a new op.
        """\
import tensorflow.compat.v1 as tf

sess = tf.Session()
for epoch in range(30):
    dataset = tf.data.Dataset.from_tensor_slices((x_train, y_train))  # GG109
    dataset = dataset.shuffle(50000)  # GG109
    dataset = dataset.batch(128)  # GG109
    iterator = dataset.make_one_shot_iterator()  # GG109
    next_batch = iterator.get_next()  # GG109
    while True:
        try:
            sess.run(train_op, dict(zip((x, y), sess.run(next_batch))))
        except tf.errors.OutOfRangeError:
            break
""",
        # A validation iterator and its get_next() made after every epoch's steps.
        """\
import tensorflow as tf

with tf.Session() as sess:
    for epoch in range(100):
        for step in range(1000):
            sess.run(train_op)
        valid_it = tf.data.make_one_shot_iterator(valid_ds)  # GG109
        valid_next = valid_it.get_next()  # GG109
        print(sess.run(valid_next))
""",
        # Peeking at 50 batches in a comprehension: a new IteratorGetNext op each time.
        """\
from tensorflow.compat import v1

iterator = v1.data.make_one_shot_iterator(dataset)
with v1.Session() as sess:
    preview = [sess.run(iterator.get_next()) for _ in range(50)]  # GG109
""",
        # An iterator held on the object, get_next() per step of a MonitoredTrainingSession.
        """\
import tensorflow as tf

class Trainer:
    def __init__(self, dataset):
        self.iterator = tf.compat.v1.data.make_initializable_iterator(dataset)

    def train(self):
        with tf.compat.v1.train.MonitoredTrainingSession() as sess:
            sess.run(self.iterator.initializer)
            while not sess.should_stop():
                images, labels = sess.run(self.iterator.get_next())  # GG109
                sess.run(self.train_op, {self.images: images, self.labels: labels})
""",
        # A map over an existing dataset is a new dataset op too; a session parameter.
        """\
import tensorflow as tf

base = tf.data.TFRecordDataset("train.tfrecord")

def train(sess, epochs):
    for epoch in range(epochs):
        augmented = base.map(random_crop)  # GG109
        it = augmented.make_initializable_iterator()  # GG109
        sess.run(it.initializer)
        sess.run(train_op)
""",
        # A same-module helper makes the iterator: reported at its call in the loop.
        """\
import tensorflow as tf

def batches_of(dataset):
    iterator = tf.data.make_one_shot_iterator(dataset)
    return iterator.get_next()

with tf.Session() as sess:
    for epoch in range(num_epochs):
        images, labels = batches_of(train_ds)  # GG109
        while True:
            try:
                sess.run(train_op, {x: sess.run(images), y: sess.run(labels)})
            except tf.errors.OutOfRangeError:
                break
""",
    )

    #: The "Fix safety" section of the docs (ruff's heading).
    FIX_SAFETY = """\
No automatic fix: a dataset or iterator built once keeps its position, while one built per
iteration starts again from the beginning; which one the loop needs is the user's choice.
"""

    FIXES: dict = {}  # no automatic fix: see Fix safety
