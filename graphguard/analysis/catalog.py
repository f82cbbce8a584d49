"""What TensorFlow's public API does to the graph, by canonical name.

Every name the analysis resolves is canonical: ``tensorflow.compat.v1.train.Saver``,
``tensorflow.train.Saver`` and ``tf1.train.Saver`` (after ``tf1 = tf.compat.v1``) are all
``tf.train.Saver``. This module answers one question about such a name: when it is *called*, what
does it add to the default graph?

The answer is one of the :class:`Effect` values. The defaults follow TensorFlow's own layout:

* a lowercase function in the ``tf`` namespace (``tf.argmax``, ``tf.nn.softmax``,
  ``tf.image.resize``, ``tf.layers.dense``) builds ops, unless it is listed in :data:`NO_OP_NAMES`
  or sits in a module of :data:`NO_OP_MODULES` (file I/O, logging, flags, configuration);
* a CamelCase class in the ``tf`` namespace builds nothing when constructed
  (``tf.train.AdamOptimizer(...)``, ``tf.ConfigProto(...)``), unless it is listed in
  :data:`OP_CLASSES` (``tf.Variable``, queues, readers) or is a Saver.

Measured costs of the common calls (``Graph.version`` deltas, TF 2.21 graph mode) are in the team's
TF-FACTS: ``tf.constant`` +1 op, ``tf.reduce_sum(x)`` +2, ``Saver()`` +13 with one variable,
``global_variables_initializer()`` +1, ``GradientDescentOptimizer.minimize`` +19.

This table is written by hand for the first version; the plan (issue 3) is to generate the bulk of it
from the installed TensorFlow's public API and keep only the overrides, with their reasons, here.
"""

from __future__ import annotations

import enum


class Effect(enum.Enum):
    """What calling a TensorFlow name does to the graph."""

    NONE = "none"  #: builds nothing (configuration, I/O, protobufs, context managers)
    OP = "op"  #: adds one or more ops to the default graph
    SAVER = "saver"  #: ``tf.train.Saver``: adds save/restore ops for every variable
    INITIALIZER = "initializer"  #: a variables initializer op
    SESSION = "session"  #: returns a session whose ``run`` is a step
    GRAPH = "graph"  #: returns a new ``tf.Graph``
    RESET = "reset"  #: replaces the default graph (``tf.reset_default_graph``)


#: Calls that make a session. ``MonitoredTrainingSession`` and friends finalize the graph before the
#: first step (``Scaffold.finalize``), so ops built in their loops fail loudly at run time; the linter
#: still reports them, earlier.
SESSION_NAMES = frozenset(
    {
        "tf.Session",
        "tf.InteractiveSession",
        "tf.train.MonitoredTrainingSession",
        "tf.train.MonitoredSession",
        "tf.train.SingularMonitoredSession",
        "tf.keras.backend.get_session",
    }
)

SAVER_NAMES = frozenset({"tf.train.Saver"})

#: Initializer ops. Each call adds a new ``NoOp`` grouping the variables' initial-value assigns.
INITIALIZER_NAMES = frozenset(
    {
        "tf.global_variables_initializer",
        "tf.local_variables_initializer",
        "tf.variables_initializer",
        "tf.tables_initializer",
        "tf.initialize_all_variables",
        "tf.initialize_local_variables",
        "tf.initialize_variables",
        "tf.initialize_all_tables",
        "tf.initializers.global_variables",
        "tf.initializers.local_variables",
        "tf.initializers.variables",
        "tf.initializers.tables_initializer",
    }
)

GRAPH_NAMES = frozenset({"tf.Graph"})

#: Calls that throw the default graph away; ops built after them in the same iteration are fresh.
#: ``clear_session`` resets the default graph under TF1-style Keras (``tf.keras.backend``).
RESET_NAMES = frozenset(
    {
        "tf.reset_default_graph",
        "tf.keras.backend.clear_session",
    }
)

#: Modules whose functions never touch the graph. Reason for each: they are host-side utilities.
NO_OP_MODULES = frozenset(
    {
        "tf.logging",  # Python logging wrapper
        "tf.gfile",  # file I/O
        "tf.io.gfile",  # file I/O
        "tf.app",  # tf.app.run / flags
        "tf.flags",  # absl flags
        "tf.errors",  # exception classes
        "tf.config",  # device and runtime configuration, no graph ops
        "tf.test",  # test utilities
        "tf.sysconfig",  # build information
        "tf.python_io",  # TFRecordWriter/tf_record_iterator: host-side
        "tf.saved_model.utils",  # TensorInfo protos
        "tf.estimator",  # an Estimator builds its own graph per call
        "tf.keras",  # first version: Keras layers build ops only when called (issue 3 refines this)
        "tf.debugging.experimental",  # dump configuration
        "tf.profiler",  # profiler control
        "tf.compat",  # as_bytes, as_text, forward_compatible: host-side helpers
        "tf.dtypes",  # dtype objects
        "tf.autograph",  # conversion control
        "tf.distribute",  # strategy objects are configuration until used
        "tf.lite",  # converters run outside the live graph
        "tf.random.experimental",  # generator configuration
    }
)

#: Single names that build nothing. Reason for each on its line.
NO_OP_NAMES = frozenset(
    {
        "tf.get_default_graph",  # returns the graph
        "tf.get_default_session",  # returns the session
        "tf.reset_default_graph",  # handled as RESET
        "tf.Graph",  # handled as GRAPH
        "tf.name_scope",  # context manager: names only
        "tf.variable_scope",  # context manager: names and reuse only
        "tf.get_variable_scope",  # returns the current scope object
        "tf.device",  # context manager: placement only
        "tf.control_dependencies",  # context manager; ops come from its arguments
        "tf.container",  # context manager
        "tf.colocate_with",  # context manager
        "tf.get_collection",  # reads a collection (TF-FACTS: adds nothing)
        "tf.get_collection_ref",  # reads a collection
        "tf.add_to_collection",  # records an existing object
        "tf.add_to_collections",  # records an existing object
        "tf.trainable_variables",  # lists existing variables
        "tf.global_variables",  # lists existing variables
        "tf.local_variables",  # lists existing variables
        "tf.model_variables",  # lists existing variables
        "tf.all_variables",  # lists existing variables (deprecated alias)
        "tf.moving_average_variables",  # lists existing variables
        "tf.report_uninitialized_variables",  # builds an op: kept out of NO_OP below on purpose
        "tf.set_random_seed",  # sets the graph-level seed attribute
        "tf.random.set_seed",  # sets the global seed
        "tf.disable_eager_execution",  # switches mode
        "tf.enable_eager_execution",  # switches mode
        "tf.disable_v2_behavior",  # switches mode
        "tf.enable_v2_behavior",  # switches mode
        "tf.executing_eagerly",  # query
        "tf.executing_eagerly_outside_functions",  # query
        "tf.train.latest_checkpoint",  # reads the checkpoint state file
        "tf.train.get_checkpoint_state",  # reads the checkpoint state file
        "tf.train.checkpoint_exists",  # file system query
        "tf.train.list_variables",  # reads a checkpoint file
        "tf.train.load_variable",  # reads a checkpoint file
        "tf.train.load_checkpoint",  # returns a reader
        "tf.train.NewCheckpointReader",  # returns a reader
        "tf.train.write_graph",  # writes a GraphDef proto to disk
        "tf.io.write_graph",  # writes a GraphDef proto to disk
        "tf.train.global_step",  # runs the existing global-step tensor in a session
        "tf.train.get_global_step",  # returns the existing global-step tensor
        "tf.train.start_queue_runners",  # starts threads for existing queue runners
        "tf.train.Coordinator",  # thread coordination
        "tf.train.ClusterSpec",  # configuration
        "tf.train.Server",  # server process, not the graph
        "tf.train.SessionRunArgs",  # hook return value
        "tf.train.SessionRunHook",  # hook base class
        "tf.train.StopAtStepHook",  # hook configuration
        "tf.train.LoggingTensorHook",  # hook configuration
        "tf.train.CheckpointSaverHook",  # hook configuration
        "tf.train.Example",  # protobuf
        "tf.train.Features",  # protobuf
        "tf.train.Feature",  # protobuf
        "tf.train.Int64List",  # protobuf
        "tf.train.FloatList",  # protobuf
        "tf.train.BytesList",  # protobuf
        "tf.train.SequenceExample",  # protobuf
        "tf.train.FeatureList",  # protobuf
        "tf.train.FeatureLists",  # protobuf
        "tf.Summary",  # protobuf: a host-side summary, no op
        "tf.Summary.Value",  # protobuf
        "tf.summary.FileWriter",  # an event file writer; no graph op (GG110 will cover per-iteration writers)
        "tf.summary.FileWriterCache",  # writer cache
        "tf.ConfigProto",  # protobuf
        "tf.GPUOptions",  # protobuf
        "tf.GraphOptions",  # protobuf
        "tf.OptimizerOptions",  # protobuf
        "tf.RunOptions",  # protobuf
        "tf.RunMetadata",  # protobuf
        "tf.TensorShape",  # shape object
        "tf.Dimension",  # shape object
        "tf.DType",  # dtype object
        "tf.as_dtype",  # dtype object
        "tf.make_ndarray",  # proto to NumPy
        "tf.make_tensor_proto",  # NumPy to proto, host-side
        "tf.load_op_library",  # loads a shared library
        "tf.load_library",  # loads a shared library
        "tf.resource_loader.get_data_files_path",  # path helper
        "tf.print_function",  # __future__ alias
    }
) - {"tf.report_uninitialized_variables"}

#: CamelCase classes whose constructor adds ops to the default graph.
OP_CLASSES = frozenset(
    {
        "tf.Variable",  # initial value, variable and assign ops
        "tf.SparseTensor",  # converts indices/values/shape to tensors
        "tf.FIFOQueue",
        "tf.PaddingFIFOQueue",
        "tf.RandomShuffleQueue",
        "tf.PriorityQueue",
        "tf.queue.FIFOQueue",
        "tf.queue.PaddingFIFOQueue",
        "tf.queue.RandomShuffleQueue",
        "tf.queue.PriorityQueue",
        "tf.TFRecordReader",
        "tf.WholeFileReader",
        "tf.TextLineReader",
        "tf.FixedLengthRecordReader",
        "tf.IdentityReader",
        "tf.TensorArray",
        "tf.data.TFRecordDataset",
        "tf.data.TextLineDataset",
        "tf.data.FixedLengthRecordDataset",
    }
)

#: Methods that build ops when called on an object that TensorFlow returned (an optimizer, a
#: tensor, a variable, a dataset, an iterator, an EMA). Only used on receivers the analysis knows
#: came from a TF call, so ``list.assign`` or ``model.minimize`` of other libraries are not matched.
OP_METHODS = frozenset(
    {
        "minimize",
        "apply_gradients",
        "compute_gradients",
        "assign",
        "assign_add",
        "assign_sub",
        "scatter_update",
        "scatter_add",
        "scatter_sub",
        "get_next",
        "make_one_shot_iterator",
        "make_initializable_iterator",
        "enqueue",
        "enqueue_many",
        "dequeue",
        "dequeue_many",
        "dequeue_up_to",
        "read",
        "read_value",
        "apply",  # ExponentialMovingAverage.apply
        "average",
        "batch",
        "map",
        "shuffle",
        "repeat",
        "prefetch",
    }
)


def effect_of(name: str) -> Effect:
    """The :class:`Effect` of calling the canonical TensorFlow name ``name`` (``"tf.train.Saver"``).

    ``name`` must start with ``"tf"``. Unknown names follow the layout default described in the
    module docstring: lowercase functions build ops, CamelCase classes do not.
    """
    if name in SESSION_NAMES:
        return Effect.SESSION
    if name in SAVER_NAMES:
        return Effect.SAVER
    if name in INITIALIZER_NAMES:
        return Effect.INITIALIZER
    if name in RESET_NAMES:
        return Effect.RESET
    if name in GRAPH_NAMES:
        return Effect.GRAPH
    if name in NO_OP_NAMES:
        return Effect.NONE
    if name in OP_CLASSES:
        return Effect.OP
    parts = name.split(".")
    for end in range(len(parts) - 1, 0, -1):
        if ".".join(parts[:end]) in NO_OP_MODULES:
            return Effect.NONE
    last = parts[-1]
    if len(parts) == 1:
        return Effect.NONE  # calling the module itself
    if last[:1].isupper():
        # A class. tf.data.Dataset.from_tensor_slices(...) is a static method: lowercase last part.
        return Effect.NONE
    if last.startswith("_"):
        return Effect.NONE
    return Effect.OP
