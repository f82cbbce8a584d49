"""GG108 graph-import-in-session-loop."""

from graphguard.analysis.catalog import Effect
from graphguard.rules.base import Rule


class GraphImportInSessionLoop(Rule):
    """
    ## What it does
    Finds `tf.train.import_meta_graph(...)`, `tf.import_graph_def(...)` and
    `tf.saved_model.loader.load(...)` into the live graph on every iteration of a loop that runs
    session steps, such as evaluating every checkpoint or serving every request.

    When the same iteration also opens a new session, the import is part of rebuilding the model in
    the same default graph, and the loop is reported once as GG111 instead.

    ## Why is this bad?
    Importing a graph copies every node of the saved graph into the current one. Done per iteration,
    the live graph gains a whole copy of the model every time: memory grows with each import and every
    later run copies the whole, ever larger graph to the runtime again.

    Import once before the loop and restore only the weights per checkpoint (`saver.restore`), or give
    each import its own `tf.Graph()` and session.

    ## References
    - [`tf.compat.v1.train.import_meta_graph`](https://www.tensorflow.org/api_docs/python/tf/compat/v1/train/import_meta_graph)
    """

    CODE = "GG108"
    NAME = "graph-import-in-session-loop"
    EFFECTS = frozenset({Effect.GRAPH_IMPORT})
    TITLE = "Graph imported in a session loop"
    MESSAGE = "{subject} imports a whole graph in the loop at line {loop_row}"
    ADVICE = (
        "import once before the loop (restore weights per checkpoint), or use a fresh tf.Graph() per import"
    )

    VALID = (
        # The fix for the first INVALID example: import once, restore only the weights per checkpoint.
        """\
import tensorflow as tf

saver = tf.train.import_meta_graph("model.meta")
with tf.Session() as sess:
    for checkpoint in checkpoints:
        saver.restore(sess, checkpoint)
        sess.run("accuracy:0")
""",
        # A frozen GraphDef imported once; tensors looked up by name in the loop.
        """\
import tensorflow.compat.v1 as tf

with tf.gfile.GFile("frozen.pb", "rb") as f:
    graph_def = tf.GraphDef.FromString(f.read())
tf.import_graph_def(graph_def, name="")
sess = tf.Session()
for image in images:
    probs = sess.graph.get_tensor_by_name("softmax:0")
    print(sess.run(probs, {"input:0": image[None]}))
""",
        # Each checkpoint gets its own graph object and session.
        """\
import tensorflow as tf

for checkpoint in checkpoints:
    graph = tf.Graph()
    with graph.as_default():
        saver = tf.train.import_meta_graph(checkpoint + ".meta")
        with tf.Session(graph=graph) as sess:
            saver.restore(sess, checkpoint)
            print(checkpoint, sess.run("accuracy:0", {"images:0": x_test}))
""",
        # Comparing frozen models: each is imported into a fresh graph.
        """\
from tensorflow.compat import v1

for path in ["resnet.pb", "mobilenet.pb"]:
    with v1.Graph().as_default():
        v1.import_graph_def(load_graph_def(path), name="")
        with v1.Session() as sess:
            for batch in batches:
                sess.run("logits:0", {"input:0": batch})
""",
        # The default graph is reset before every import.
        """\
import tensorflow as tf

for checkpoint in tf.train.get_checkpoint_state("ckpt").all_model_checkpoint_paths:
    tf.reset_default_graph()
    saver = tf.train.import_meta_graph(checkpoint + ".meta")
    sess = tf.Session()
    saver.restore(sess, checkpoint)
    print(sess.run("loss:0", {"x:0": x_val}))
""",
        # A once-guard: the graph is imported on the first request only.
        """\
import tensorflow as tf

class Scorer:
    def __init__(self, graph_def):
        self.sess = tf.Session()
        self.graph_def = graph_def
        self._scores = None

    def score(self, features):
        if self._scores is None:
            self._scores = tf.import_graph_def(self.graph_def, return_elements=["scores:0"])
        return self.sess.run(self._scores, {"import/features:0": features})[0]

scorer = Scorer(graph_def)
for request in requests:
    request.reply(scorer.score(request.features))
""",
    )

    INVALID = (
        """\
import tensorflow as tf

with tf.Session() as sess:
    for checkpoint in checkpoints:
        saver = tf.train.import_meta_graph(checkpoint + ".meta")  # GG108
        saver.restore(sess, checkpoint)
        sess.run("accuracy:0")
""",
        # A server importing its frozen GraphDef per request, in a while loop: reported at the call's first line.
        """\
import tensorflow.compat.v1 as tf

sess = tf.Session()
while True:
    request = queue.get()
    scores, = tf.import_graph_def(graph_def, name="ranker",  # GG108
                                  return_elements=["scores:0"])
    reply(sess.run(scores, {"ranker/features:0": request}))
""",
        # A SavedModel loaded into the same session per request; tf.compat.v1 spelled out.
        """\
import tensorflow as tf

sess = tf.compat.v1.Session()
for request in requests:
    tf.compat.v1.saved_model.loader.load(sess, ["serve"], "export/1")  # GG108
    reply(sess.run("scores:0", {"features:0": request}))
""",
        # The newest checkpoint's meta graph re-imported into one InteractiveSession, evaluated with eval().
        """\
import time

import tensorflow as tf

sess = tf.InteractiveSession()
while True:
    ckpt = tf.train.latest_checkpoint("train_dir")
    saver = tf.train.import_meta_graph(ckpt + ".meta")  # GG108
    saver.restore(sess, ckpt)
    accuracy = tf.get_default_graph().get_tensor_by_name("accuracy:0")
    print(accuracy.eval(feed_dict={"images:0": x_val}))
    time.sleep(600)
""",
        # A session parameter; the import is reported per model, in the outer loop.
        """\
from tensorflow.compat import v1

def evaluate(sess, graph_defs, batches):
    for name, graph_def in graph_defs.items():
        v1.import_graph_def(graph_def, name=name)  # GG108
        for batch in batches:
            sess.run(name + "/logits:0", {name + "/input:0": batch})
""",
        # A same-module helper imports the graph: reported at its call in the loop.
        """\
import tensorflow as tf

def load_frozen(path):
    with tf.gfile.GFile(path, "rb") as f:
        graph_def = tf.GraphDef.FromString(f.read())
    logits, = tf.import_graph_def(graph_def, return_elements=["logits:0"])
    return logits

with tf.Session() as sess:
    for path in model_paths:
        logits = load_frozen(path)  # GG108
        print(path, sess.run(logits, {"import/input:0": x_test}))
""",
        # The session held on the object, restored per checkpoint with a new import.
        """\
import tensorflow as tf

class Evaluator:
    def __init__(self):
        self.sess = tf.Session()

    def run(self, checkpoints):
        for ckpt in checkpoints:
            saver = tf.train.import_meta_graph(ckpt + ".meta", clear_devices=True)  # GG108
            saver.restore(self.sess, ckpt)
            yield self.sess.run("accuracy:0")
""",
    )

    #: The "Fix safety" section of the docs (ruff's heading).
    FIX_SAFETY = """\
No automatic fix: importing a graph once changes which tensors the loop's names refer to (they must
be looked up in the imported graph), so graphguard only reports it.
"""

    FIXES: dict = {}  # no automatic fix: see Fix safety
