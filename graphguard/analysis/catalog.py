"""What TensorFlow's public API does to the graph, by canonical name.

Every name the analysis resolves is canonical: ``tensorflow.compat.v1.train.Saver``,
``tensorflow.train.Saver`` and ``tf1.train.Saver`` (after ``tf1 = tf.compat.v1``) are all
``tf.train.Saver``. This module answers one question about such a name: when it is *called*, what
does it add to the default graph?

The answer is one of the :class:`Effect` values, looked up in this order:

1. :data:`OVERRIDES`: graphguard's own decisions where they differ from TensorFlow's layout, each
   with its reason (``tf.train.get_or_create_global_step`` builds its variable once per graph);
2. ``tf_api.json``, generated from the installed TensorFlow's public API by
   ``tools/generate_tf_api.py`` (module and class rules, overrides with reasons, checked by calling
   names in a fresh graph);
3. for names TF 2.21 no longer has: :data:`FALLBACK_EFFECTS`; the TF 1.x tables of
   :mod:`graphguard.analysis.tf1_names` (``tf.contrib.*`` and TF 0.x/1.x names, classified from TF
   1.x's sources); internal ``tensorflow.python`` modules (only ``ops`` builds); the core twin of a
   ``tf.contrib`` name; :data:`NO_OP_MODULES`; an unbound method spelled through its class. A name
   found nowhere builds nothing (``Effect.NONE``): graphguard does not guess, so an unknown name
   never produces a finding.

Measured costs of the common calls (``Graph.version`` deltas, TF 2.21 graph mode) are in the team's
TF-FACTS: ``tf.constant`` +1 op, ``tf.reduce_sum(x)`` +2, ``Saver()`` +13 with one variable,
``global_variables_initializer()`` +1, ``GradientDescentOptimizer.minimize`` +19.
"""

from __future__ import annotations

from graphguard.analysis import tf1_names, tf_api
from graphguard.analysis.effects import EAGER_EFFECTS, Effect  # noqa: F401 (imported from here across the analysis)


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
        "tf.keras.utils",  # NumPy helpers (to_categorical)
        "tf.keras.applications",  # model constructors (GG201) and NumPy preprocess_input
        "tf.nest",  # pure-Python structure utilities
        "tf.graph_util",  # works on GraphDef protos, not the live graph (import_graph_def is matched before)
        "tf.compat.v1.graph_util",  # same
        "tf.initializers",  # initializer objects (the variables initializers are matched before this)
        "tf.keras.initializers",  # initializer objects
        "tf.keras.preprocessing",  # host-side data helpers
        "tf.keras.datasets",  # downloads NumPy arrays
        "tf.keras.callbacks",  # callback objects
        "tf.keras.optimizers",  # optimizer objects; ops come when they are applied
        "tf.keras.layers",  # layer objects; ops come when a layer is called
        "tf.keras.models",  # model objects: the constructors are MODEL_NAMES (GG201)
        "tf.keras.saving",  # serialisation helpers: load_model is in MODEL_NAMES
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

#: Names the generated data does not have (TF 1.x spellings gone from TF 2.21, ``tf.contrib``), with
#: what calling each does. Everything else comes from ``tf_api.json`` or the layout default.
FALLBACK_EFFECTS = {
    "tf.VariableV1": Effect.VARIABLE,  # TF 1.x name of tf.Variable
    "tf.constant_v1": Effect.CONSTANT,  # TF 1.x internal spelling of tf.constant
    "tf.train.SummaryWriter": Effect.FILE_WRITER,  # TF 0.x name of tf.summary.FileWriter
    "tf.Summary.Value": Effect.NONE,  # protobuf
    "tf.print_function": Effect.NONE,  # __future__ alias
    "tf.keras.backend.set_learning_phase": Effect.NONE,  # sets a Python value
    "tf.contrib.framework.get_variables": Effect.NONE,  # lists existing variables
    "tf.contrib.slim.get_variables": Effect.NONE,  # lists existing variables
    "tf.contrib.slim.get_model_variables": Effect.NONE,  # lists existing variables
    "tf.contrib.slim.arg_scope": Effect.NONE,  # context manager
    "tf.contrib.framework.arg_scope": Effect.NONE,  # context manager
}

#: Modules whose every lowercase function (and listed class) builds a ``tf.data`` dataset.
DATASET_PREFIXES = ("tf.data.Dataset.", "tf.data.TFRecordDataset", "tf.data.TextLineDataset",
                    "tf.data.FixedLengthRecordDataset", "tf.data.experimental.")

#: ``tf.summary`` functions that are not summary ops.
SUMMARY_NON_OPS = frozenset({"tf.summary.FileWriter", "tf.summary.FileWriterCache", "tf.summary.Summary",
                             "tf.summary.Event", "tf.summary.SummaryDescription", "tf.summary.TaggedRunMetadata",
                             "tf.summary.get_summary_description"})

#: What kind of object a TensorFlow call returns, for the calls whose result has op-building methods
#: other than a tensor's. Anything else that builds ops returns a ``tensor``.
_CLASS_KINDS = (
    ("Optimizer", "optimizer"),
    ("ExponentialMovingAverage", "ema"),
    ("Queue", "queue"),
    ("Supervisor", "supervisor"),
    ("Saver", "saver"),
    ("FileWriter", "file_writer"),
    ("Reader", "reader"),
)

#: Methods that build ops, by the kind of object they are called on. Only used on receivers the
#: analysis knows came from a TF call, so ``list.assign`` or a Keras ``model.fit`` are not matched.
METHOD_EFFECTS = {
    "variable": {
        **{m: Effect.ASSIGN for m in ("assign", "assign_add", "assign_sub", "scatter_update",
                                      "scatter_add", "scatter_sub", "scatter_nd_update", "scatter_nd_add",
                                      "scatter_nd_sub", "batch_scatter_update")},
        **{m: Effect.OP for m in ("read_value", "initialized_value", "count_up_to", "sparse_read", "value")},
    },
    "optimizer": {m: Effect.OP for m in ("minimize", "apply_gradients", "compute_gradients")},
    "dataset": {
        **{m: Effect.DATASET for m in (
            "batch", "map", "shuffle", "repeat", "prefetch", "filter", "padded_batch", "flat_map",
            "interleave", "take", "skip", "cache", "concatenate", "zip", "unbatch", "window", "apply",
            "shard", "enumerate", "map_with_legacy_function", "with_options", "rebatch")},
        **{m: Effect.ITERATOR for m in ("make_one_shot_iterator", "make_initializable_iterator")},
    },
    "iterator": {m: Effect.ITERATOR for m in ("get_next", "make_initializer", "string_handle")},
    "ema": {m: Effect.OP for m in ("apply",)},
    "queue": {m: Effect.OP for m in ("enqueue", "enqueue_many", "dequeue", "dequeue_many", "dequeue_up_to",
                                     "close", "size")},
    "reader": {m: Effect.OP for m in ("read", "read_up_to", "num_records_produced", "reset")},
    # an RNN cell's initial state: ``cell.zero_state(batch, tf.float32)`` fills new tensors on every call
    "layer": {m: Effect.OP for m in ("zero_state", "get_initial_state")},
}
METHOD_EFFECTS["tensor"] = {**METHOD_EFFECTS["variable"]}  # a tf.get_variable result is often unknown

#: Keywords only Keras' ``Model.fit`` takes among the ``fit`` methods of the libraries ML code uses
#: (scikit-learn, XGBoost and LightGBM take ``verbose``/``callbacks`` too, darts and other PyTorch
#: libraries ``epochs``: none of these).
KERAS_FIT_KEYWORDS = frozenset({"validation_split", "steps_per_epoch", "initial_epoch", "validation_steps",
                                "validation_freq"})
#: Keywords of Keras' ``Model.compile`` (a receiver compiled with one is a Keras model).
KERAS_COMPILE_KEYWORDS = frozenset({"optimizer", "loss", "metrics", "loss_weights", "run_eagerly", "jit_compile",
                                    "steps_per_execution"})

#: Methods that return a session (``sv.managed_session()``) or an object of another kind.
SESSION_METHODS = {"supervisor": frozenset({"managed_session", "prepare_or_wait_for_session"})}

#: What a kind's method returns when it is not a tensor.
METHOD_RESULT_KINDS = {
    ("dataset", "make_one_shot_iterator"): "iterator",
    ("dataset", "make_initializable_iterator"): "iterator",
    ("optimizer", "compute_gradients"): "pairs",  # a list of (gradient, variable) tuples
}


#: Methods that only TensorFlow objects have, whatever the receiver is known to be: what calling one
#: builds and the kind of object it returns (a dataset from a helper still makes an iterator here).
DISTINCT_METHODS = {
    "make_one_shot_iterator": (Effect.ITERATOR, "iterator"),
    "make_initializable_iterator": (Effect.ITERATOR, "iterator"),
}


#: Names that exist only for TF1 graph mode: a module that calls one runs Keras on graphs, where
#: ``model.predict`` is a session step.
GRAPH_MODE_NAMES = frozenset({"tf.Session", "tf.InteractiveSession", "tf.placeholder", "tf.keras.backend.function",
                              "tf.keras.backend.gradients", "tf.keras.backend.get_session",
                              "tf.keras.backend.learning_phase", "tf.disable_eager_execution",
                              "tf.disable_v2_behavior", "tf.keras.backend.placeholder",
                              "tf.python.framework.ops.disable_eager_execution",
                              "tf.python.compat.v2_compat.disable_v2_behavior"})

#: Names used only with eager execution (TF 2): a module that uses one is not run on TF1 graphs, even
#: if it also opens a ``tf.compat.v1.Session`` somewhere.
EAGER_NAMES = frozenset({"tf.GradientTape", "tf.function", "tf.enable_eager_execution", "tf.executing_eagerly"})

#: Calls that turn TF 2 behaviour off for the whole program: a module that calls one runs on TF1 graphs,
#: whatever TF 2 names it also uses (``tf.function`` then builds into the default graph; the GG3xx rules,
#: about eager retracing, do not apply).
V1_ONLY_NAMES = frozenset({"tf.disable_v2_behavior", "tf.disable_eager_execution",
                           # the same functions imported from where TensorFlow defines them
                           "tf.python.framework.ops.disable_eager_execution",
                           "tf.python.compat.v2_compat.disable_v2_behavior"})

#: Canonical module prefixes of the Keras optimizer classes (TF 2 and Keras 3): making one makes its
#: ``iterations`` variable and, on first use, a slot variable per weight (measured on TF 2.21: a Keras
#: optimizer made inside a ``tf.function`` raises ValueError, as a ``tf.Variable`` does).
KERAS_OPTIMIZER_PREFIXES = ("tf.keras.optimizers.", "tf.optimizers.")


#: graphguard's own decisions where they differ from the generated data, with the reason.
OVERRIDES = {
    # Creates the step variable on the first call in a graph, then returns it: fine in a loop.
    "tf.train.get_or_create_global_step": Effect.NONE,
    # A Supervisor's constructor builds its init/ready/Saver ops, but a loop that makes one per
    # iteration is a sweep; its managed_session() is what matters here.
    "tf.train.Supervisor": Effect.NONE,
    # TF 1.x contrib, gone from TF 2.21's API: a NumPy function ("outside of TensorFlow", its docstring).
    "tf.contrib.crf.viterbi_decode": Effect.NONE,
    # TF1 Keras: K.function builds a Function whose __init__ groups the model's update ops into new
    # ops (keras/backend/tensorflow_backend.py, Function.__init__); K.learning_phase() makes its
    # placeholder once per graph and returns it afterwards (_GRAPH_LEARNING_PHASES), so it is fine in a loop.
    "tf.keras.backend.function": Effect.OP,
    "tf.keras.backend.learning_phase": Effect.NONE,
    # Keras 3's spelling of tf.keras.backend.clear_session (keras/src/backend/common/global_state.py):
    # it drops Keras' global state and, with the TensorFlow backend, resets the default graph.
    "tf.keras.utils.clear_session": Effect.RESET,
}

#: Calls that make a Keras model (GG201, GG202): the constructors, and the functions that load, clone
#: or rebuild one. Each new model keeps its layers, weights, optimizer slots and traced functions in
#: Keras' global state (and, in graph mode, its ops in the default graph) until
#: ``tf.keras.backend.clear_session()``; TF-FACTS measured about 5.2 MB of RSS kept per model built
#: and fit in a loop without it. Every CamelCase class of ``tf.keras.applications`` (``ResNet50``) is
#: one too (:func:`effect_of`).
MODEL_NAMES = frozenset(
    {
        "tf.keras.Model",
        "tf.keras.Sequential",
        "tf.keras.models.Model",
        "tf.keras.models.Sequential",
        "tf.keras.models.load_model",
        "tf.keras.models.clone_model",
        "tf.keras.models.model_from_json",
        "tf.keras.models.model_from_yaml",
        "tf.keras.models.model_from_config",
        "tf.keras.saving.load_model",
        "tf.keras.experimental.load_from_saved_model",
    }
)


def effect_of(name: str) -> Effect:
    """The :class:`Effect` of calling the canonical TensorFlow name ``name`` (``"tf.train.Saver"``).

    Looked up in :data:`OVERRIDES`, then in the data generated from TensorFlow's public API
    (:mod:`graphguard.analysis.tf_api`), then for names that TF 2.21 no longer has (``tf.contrib.*``,
    TF 0.x spellings) in the TF 1.x tables and the fallbacks of :func:`_layout_effect`; a name known
    nowhere is ``Effect.NONE``. Remembered per name (the tables do not change during a run; a file
    calls the same few hundred names thousands of times).
    """
    effect = _EFFECTS.get(name)
    if effect is None:
        effect = _EFFECTS[name] = _effect_of(name)
    return effect


_EFFECTS: dict[str, Effect] = {}


def _effect_of(name: str) -> Effect:
    override = OVERRIDES.get(name)
    if override is not None:
        return override
    if name in MODEL_NAMES or (name.startswith("tf.keras.applications.") and name.rsplit(".", 1)[-1][:1].isupper()):
        return Effect.MODEL
    generated = tf_api.load().effect(name)
    if generated is not None:
        return Effect(generated)
    return _layout_effect(name)


def _known_effect(name: str) -> Effect | None:
    """The effect of ``name`` when a table says it (no fallback rule): OVERRIDES, the generated data,
    :data:`FALLBACK_EFFECTS` or the TF 1.x table."""
    known = OVERRIDES.get(name)
    if known is not None:
        return known
    generated = tf_api.load().effect(name)
    if generated is not None:
        return Effect(generated)
    known = FALLBACK_EFFECTS.get(name)
    if known is not None:
        return known
    return tf1_names.effect(name)


def _tf1_effect(name: str) -> Effect | None:
    """What TF 1.x's sources say about ``name`` (:mod:`graphguard.analysis.tf1_names`), or None: its
    entry, its TF 1.0 name if it is a TF 0.x one, its core twin if the data has it, its module's rule."""
    known = tf1_names.effect(name)
    if known is not None:
        return known
    new_name = tf1_names.renamed(name)
    if new_name is not None:
        return effect_of(new_name)
    for twin in tf1_names.twins(name):
        known = _known_effect(twin)
        if known is not None:
            return known
    return tf1_names.prefix_effect(name)


def _layout_effect(name: str) -> Effect:
    """The hand-made fallback for names missing from the generated data.

    TF 1.x names are looked up in :mod:`graphguard.analysis.tf1_names`. Then a ``tf.contrib.*``
    function was usually promoted into core TensorFlow under the same name
    (``tf.contrib.framework.get_global_step`` became ``tf.train.get_global_step``): when the core
    name is in the generated data, its effect is used. A name that no table knows builds nothing."""
    known = FALLBACK_EFFECTS.get(name)
    if known is not None:
        return known
    known = _tf1_effect(name)
    if known is not None:
        return known
    if name.rsplit(".", 1)[-1].startswith(("is_", "has_")):
        return Effect.NONE  # predicates (``ragged_tensor.is_ragged``: an isinstance check)
    if name.startswith("tf.python."):
        # TensorFlow's internal modules: only tensorflow.python.ops (and its gen_*_ops) builds ops;
        # platform, framework, lib.io, eager... are host-side (tf_logging.info, file_io, dtypes).
        return Effect.OP if name.startswith("tf.python.ops.") and not name.rsplit(".", 1)[-1][:1].isupper() else Effect.NONE
    if name.startswith("tf.contrib."):
        last = name.rsplit(".", 1)[-1]
        api = tf_api.load()
        for core in (f"tf.{last}", f"tf.train.{last}", f"tf.nn.{last}", f"tf.layers.{last}", f"tf.losses.{last}"):
            generated = OVERRIDES.get(core) or (Effect(api.effect(core)) if api.effect(core) else None)
            if generated is not None:
                return generated
    if name.startswith(DATASET_PREFIXES):
        return Effect.DATASET
    if name.startswith("tf.summary.") and name not in SUMMARY_NON_OPS:
        return Effect.SUMMARY
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
    if last.endswith(("_initializer", "_regularizer")):
        # tf.zeros_initializer(), tf.contrib.layers.l2_regularizer(): objects and functions, no op yet.
        return Effect.NONE
    method = _unbound_method_effect(name)
    if method is not None:
        return method
    # Not in any table (a contrib module nobody classified, a misspelling, a name TensorFlow never
    # had): graphguard does not guess that it builds ops.
    return Effect.NONE


def _unbound_method_effect(name: str) -> Effect | None:
    """``tf.train.AdamOptimizer.compute_gradients(self, loss)`` in a subclass: the method of a known
    class, called through the class; None when the class or the method is not known to build."""
    owner, _, method = name.rpartition(".")
    if not owner.rsplit(".", 1)[-1][:1].isupper():
        return None
    owner_effect = _known_effect(owner)
    if owner_effect is None:
        return None
    return method_effect(result_kind(owner, owner_effect), method)


#: Functions that return a Python list or tuple of tensors: indexing the result adds no op.
SEQUENCE_RESULTS = frozenset({"gradients", "split", "unstack", "meshgrid", "dynamic_partition", "moments",
                              "top_k", "while_loop", "tuple", "unique", "batch", "shuffle_batch", "tensor_array",
                              "split_v", "svd", "get_collection", "get_collection_ref", "compute_gradients",
                              "import_graph_def"})


def method_effect(kind: str, method: str) -> Effect | None:
    """The :class:`Effect` of calling ``method`` on an object of ``kind`` (``"optimizer"``,
    ``"minimize"`` -> ``Effect.OP``), or None when it builds nothing. Hand-made table first, then the
    method lists generated from TensorFlow's classes."""
    effect = METHOD_EFFECTS.get(kind, {}).get(method)
    if effect is not None:
        return effect
    if method.startswith("__") or method not in tf_api.load().methods(kind):
        return None
    if kind == "dataset":
        return Effect.ITERATOR if "iterator" in method else Effect.DATASET
    if kind == "iterator":
        return Effect.ITERATOR
    if kind == "variable" and method.startswith(("assign", "scatter", "batch_scatter")):
        return Effect.ASSIGN
    return Effect.OP


#: Modules whose classes make layers or models: calling the object (``Dense(10)(x)``) builds ops.
_LAYER_MODULES = ("tf.keras.layers.", "tf.layers.", "tf.keras.Model", "tf.keras.Sequential", "tf.keras.models.",
                  "tf.keras.applications.", "tf.contrib.rnn.", "tf.nn.rnn_cell.")


#: Functions that return a tuple of Python lists (or of a list and a state tuple): the static RNNs, the
#: TF 1.x seq2seq builders (``outputs, losses = tf.nn.seq2seq.model_with_buckets(...)``) and the CTC
#: decoders (``decoded, log_probs = tf.nn.ctc_beam_search_decoder(...)``: a list of SparseTensors).
#: Indexing a part (``losses[bucket]``, ``decoded[0]``) adds no op.
LISTS_RESULTS = frozenset({"model_with_buckets", "static_rnn", "static_bidirectional_rnn", "static_state_saving_rnn",
                           "rnn", "bidirectional_rnn", "basic_rnn_seq2seq", "tied_rnn_seq2seq", "embedding_rnn_seq2seq",
                           "embedding_tied_rnn_seq2seq", "embedding_attention_seq2seq", "one2many_rnn_seq2seq",
                           "rnn_decoder", "attention_decoder", "embedding_rnn_decoder", "embedding_attention_decoder",
                           "ctc_beam_search_decoder", "ctc_beam_search_decoder_v2", "ctc_greedy_decoder"})


def result_kind(name: str, effect: Effect) -> str:
    """The kind of object calling ``name`` returns (``"optimizer"`` for ``tf.train.AdamOptimizer``,
    ``"sequence"`` for ``tf.gradients``). Remembered per (name, effect), as :func:`effect_of` is."""
    kind = _KINDS.get((name, effect))
    if kind is None:
        kind = _KINDS[(name, effect)] = _result_kind(name, effect)
    return kind


_KINDS: dict[tuple, str] = {}


def _result_kind(name: str, effect: Effect) -> str:
    if effect is Effect.MODEL:
        return "model"  # calling it builds its layers' ops, like a layer (``model(x)``)
    if name.rsplit(".", 1)[-1] in SEQUENCE_RESULTS:
        return "sequence"
    if name.rsplit(".", 1)[-1] in LISTS_RESULTS:
        return "lists"
    last = name.rsplit(".", 1)[-1]
    if last[:1].isupper() and name.startswith(_LAYER_MODULES):
        return "layer"  # calling a layer or model object builds its ops
    generated = tf_api.load().returns(name)
    if generated is not None:
        return generated
    if effect is Effect.VARIABLE and not name.endswith("placeholder"):
        return "variable"
    if effect is Effect.DATASET:
        return "dataset"
    if effect is Effect.ITERATOR:
        return "iterator"
    last = name.rsplit(".", 1)[-1]
    for suffix, kind in _CLASS_KINDS:
        if last.endswith(suffix):
            return kind
    return "tensor" if effect is not Effect.NONE else "object"


#: Functions that list one model's variables (``tf.trainable_variables()``, ``slim.get_variables()``):
#: their result is a Python list of variables, and a loop over it is one-shot setup.
def lists_variables(name: str) -> bool:
    """Whether the canonical name ``name`` returns a Python list of existing variables."""
    last = name.rsplit(".", 1)[-1]
    return last.endswith("variables") and last.startswith(_VARIABLE_LISTS) or last == "get_variables_to_restore"


_VARIABLE_LISTS = ("trainable_variables", "global_variables", "local_variables", "model_variables", "all_variables",
                   "moving_average_variables", "get_variables", "get_model_variables", "get_trainable_variables",
                   "get_local_variables", "get_global_variables")
