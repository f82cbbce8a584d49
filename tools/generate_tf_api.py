#!/usr/bin/env python
"""Generate ``graphguard/analysis/tf_api.json``: what TensorFlow's public API does to the graph.

The linter never imports TensorFlow. It reads the JSON file this script writes from the installed
TensorFlow (and the Keras it ships as ``tf.keras``)::

    python tools/generate_tf_api.py            # write graphguard/analysis/tf_api.json
    python tools/generate_tf_api.py --check    # exit 1 if the committed file is out of date
    python tools/generate_tf_api.py --verify   # call sample names in fresh graphs, report mismatches

What the file holds
===================
``names``
    Canonical name -> effect, for every public callable (function or class) of ``tf.compat.v1`` (the
    graph-mode API, the main source) and of ``tf`` (TF2 names that ``tf.compat.v1`` lacks, such as
    ``tf.math.*``, ``tf.image.resize``). Canonical names drop the ``compat.v1`` prefix:
    ``tensorflow.compat.v1.train.Saver`` and ``tensorflow.train.Saver`` are both ``tf.train.Saver``.
    Where both APIs have a name, the ``tf.compat.v1`` object decides. Static and class methods that
    build something are listed too, under their class (``tf.data.Dataset.from_tensor_slices``).
``methods``
    Receiver kind -> the methods that build ops when called on such an object in graph mode
    (``"optimizer": ["apply_gradients", "compute_gradients", "minimize"]``).
``returns``
    Name -> receiver kind of the object the call returns, for the kinds of ``methods`` other than
    tensors (``tf.train.AdamOptimizer`` -> ``optimizer``, ``tf.get_variable`` -> ``variable``).
``reasons``
    Every hand-made override below, with its one-sentence reason.

How a name gets its effect (first match wins)
=============================================
1. ``OVERRIDES`` (by canonical name) and ``OBJECT_OVERRIDES`` (by the object's defining
   ``module.qualname``, so every alias follows): hand-made, each entry with its reason. They give the
   categories of the rules table (a Saver, an initializer, a placeholder, a graph import...) and fix
   the few names the automatic rules get wrong.
2. A class is classified by its base classes (``CLASS_RULES``): sessions -> ``session``, ``tf.Graph``
   -> ``graph``, ``Saver`` -> ``saver``, ``FileWriter`` -> ``file_writer``, datasets -> ``dataset``,
   variables -> ``variable``; queues, readers, accumulators, tensor arrays, critical sections, lookup
   tables and distributions create their resource or convert their parameters when constructed ->
   ``op``. Keras 3 classes (layers, metrics, optimizers...) are measured instead: constructed once in
   a fresh graph (required parameters get 1, or 0.5 for a rate); those that grow it create their
   state in the constructor (a seed generator, metric or optimizer variables, a lookup table) ->
   ``variable`` when a variable op appeared, else ``op``. Any other class builds nothing when
   constructed (TF1 optimizers, hooks, initializers, protobufs, scopes): ``none``; what its
   instances build is in ``methods``.
3. A function is classified by the module that defines it, after unwrapping TensorFlow's decorators
   and dispatchers (``tf_decorator.unwrap``, then ``__wrapped__`` chains), using ``MODULE_RULES``: an
   ordered list of (module prefix, pattern on the function's own ``__name__``, effect). The main ones:
   ``tensorflow.python.ops.*`` (including the generated ``gen_*_ops``) -> ``op``, except variable
   updates (``assign*``, ``scatter_*`` of the state and resource-variable modules) -> ``assign``,
   initializer ops -> ``initializer``, variable-collection readers (``trainable_variables``...),
   variable scopes, mode toggles and initializer factories (``init_ops``) -> ``none``;
   ``tensorflow.python.summary`` -> ``summary``; ``tensorflow.python.training.input`` (queue input
   pipelines) and the learning-rate decays -> ``op``; ``tensorflow.python.data.*`` -> ``op``, except
   transformation factories (their code holds a nested ``_apply_fn`` for ``Dataset.apply``: they
   build nothing until applied) and structure helpers; Keras' TF1 backend
   (``keras.src.legacy.backend``), ``keras.ops``, activations, losses, metrics and random functions
   -> ``op``. Everything else (``tensorflow.python.framework``, ``platform``, ``lib.io``, the
   ``training`` helpers, ``checkpoint_management``, ``util``, ``eager``, ``distribute``, ``config``,
   Keras utilities) -> ``none``. Matching the defining function's own name means an alias
   (``tf.initializers.global_variables``) is classified like its target.
4. Static and class methods are listed under the class that defines them (or its V1/V2 twin), when
   they build something: ``Dataset`` ones -> ``dataset``, ``Iterator`` ones -> ``iterator``,
   ``from_*`` alternative constructors -> what the constructor builds, others as functions (step 3).
   Type specs' and protobufs' static methods build nothing and are skipped.
5. ``EXTRA_NAMES``: TF1 names that TensorFlow 2.21 no longer exposes without ``tf_keras``
   (``tf.layers.*``, ``tf.nn.rnn_cell.*``, ``tf.keras.backend.get_session``), listed by hand with
   their TF 1.15 meaning.

How the method lists are derived
================================
They are measured, not typed in. For each receiver kind, ``_receivers`` builds sample objects in a
fresh graph, TF1 behaviour (``tf.compat.v1.disable_v2_behavior()``): float, int and bool tensors;
reference and resource variables; GradientDescent, Momentum, Adam and RMSProp optimizers; v1 and v2
datasets; an initializable iterator; an ``ExponentialMovingAverage``; FIFO, padding and
random-shuffle queues; a ``Saver``; a ``FileWriter``; TFRecord and whole-file readers; a static and a
mutable hash table. Every public method and Python operator (``__add__``, ``__getitem__``...) is
called once with dummy arguments (chosen by parameter name in ``_dummy``, built before measuring)
and is listed when the call grows ``Graph.version``. Methods that take a session (``eval``,
``load``, ``save``, ``restore``) run a step rather than build one and are never called. For datasets,
methods annotated as returning a ``Dataset`` or an ``Iterator`` are listed without calling.
``METHOD_OVERRIDES`` holds the exceptions, with reasons (``reasons`` keys ``methods.<kind>.<name>``).

Checks
======
``--check`` regenerates in memory and compares with the committed file (the test suite runs it where
TensorFlow is installed). ``--verify`` checks the classification against the real thing: the
expected effects of common training-loop names; about 130 sample calls with realistic arguments;
``Saver.save``/``restore`` and ``Variable.load`` on a finalized graph; then every function and class
of the API called with simple dummy arguments, each in a fresh graph, comparing "grew
``Graph.version``" with "the effect builds something". Differences that only the dummy arguments
explain (``tf.cast(x, tf.float32)`` of a float returns ``x``) are listed in ``ARGUMENT_DEPENDENT``.
``--explain NAME`` prints a name's effect and the rule that decided it.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.metadata
import inspect
import io
import json
import logging
import os
import re
import sys
import tempfile
import types
import warnings
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
os.environ.setdefault("KERAS_BACKEND", "tensorflow")

OUTPUT = Path(__file__).resolve().parents[1] / "graphguard" / "analysis" / "tf_api.json"

#: Every effect, with what calling such a name does. The rule codes are graphguard's.
EFFECTS = {
    "op": "adds ops to the default graph (GG101)",
    "saver": "tf.train.Saver: save/restore ops for every variable (GG102)",
    "initializer": "a variables or tables initializer op (GG103)",
    "assign": "an assign or scatter update op on a variable (GG104)",
    "constant": "a constant made from Python or NumPy data (GG105)",
    "variable": "a placeholder or a variable: new graph inputs or state (GG107)",
    "graph_import": "imports a whole graph into the default graph (GG108)",
    "dataset": "builds a tf.data dataset (GG109)",
    "iterator": "builds a tf.data iterator (GG109)",
    "summary": "a summary op (GG110)",
    "file_writer": "opens an event file; no op, but one per iteration leaks files (GG110)",
    "session": "returns a session whose run is a step",
    "graph": "returns a new tf.Graph",
    "reset": "replaces the default graph",
    "none": "builds nothing",
}

#: Effects that add something to the default graph when called in graph mode.
BUILDING_EFFECTS = frozenset(
    {
        "op",
        "saver",
        "initializer",
        "assign",
        "constant",
        "variable",
        "graph_import",
        "dataset",
        "iterator",
        "summary",
    }
)

# --------------------------------------------------------------------------------------------------
# Hand-made overrides: canonical name -> (effect, reason). One sentence per reason.
# --------------------------------------------------------------------------------------------------

_PLACEHOLDER = "creates a new placeholder, a new graph input"
_CONVERT = "converts its Python or NumPy argument into a new Const op"
_RUNS_STEP = "reads existing objects or runs a session step; builds nothing"
_DATASET = "returns a new tf.data dataset"

OVERRIDES: dict[str, tuple[str, str]] = {
    # Sessions and graphs.
    "tf.train.MonitoredTrainingSession": (
        "session",
        "a factory function that returns a MonitoredSession (it adds its own ops, then finalizes the graph)",
    ),
    "tf.reset_default_graph": ("reset", "clears the default graph's stack and replaces it with a new, empty graph"),
    "tf.keras.backend.clear_session": (
        "reset",
        "resets Keras' global state and, with the TensorFlow backend, the default graph",
    ),
    # Savers and graph imports.
    "tf.train.import_meta_graph": ("graph_import", "imports every node of a MetaGraphDef into the default graph"),
    "tf.import_graph_def": ("graph_import", "imports every node of a GraphDef into the default graph"),
    "tf.graph_util.import_graph_def": ("graph_import", "imports every node of a GraphDef into the default graph"),
    "tf.saved_model.load": (
        "graph_import",
        "the TF1 SavedModel loader imports the saved meta graph into the session's graph",
    ),
    "tf.saved_model.loader.load": (
        "graph_import",
        "the TF1 SavedModel loader imports the saved meta graph into the session's graph",
    ),
    "tf.saved_model.load_v2": ("graph_import", "in graph mode, loading a SavedModel builds its functions and restore ops"),
    "tf.saved_model.simple_save": (
        "saver",
        "builds a SavedModelBuilder, which adds a Saver for every variable to the graph",
    ),
    # Initializers.
    "tf.saved_model.main_op.main_op": ("initializer", "groups the global, local and table initializers into one new op"),
    "tf.saved_model.main_op_with_restore": ("op", "groups the initializers with a restore op into one new op"),
    "tf.saved_model.main_op.main_op_with_restore": ("op", "groups the initializers with a restore op into one new op"),
    # Constants.
    "tf.constant": ("constant", _CONVERT),
    "tf.convert_to_tensor": ("constant", _CONVERT),
    "tf.convert_to_tensor_or_indexed_slices": ("constant", _CONVERT),
    "tf.convert_to_tensor_or_sparse_tensor": ("constant", _CONVERT),
    "tf.SparseTensor": ("constant", "converts its indices, values and dense shape to tensors (Const ops from Python data)"),
    "tf.sparse.SparseTensor": ("constant", "converts its indices, values and dense shape to tensors (Const ops from Python data)"),
    "tf.keras.backend.constant": ("constant", _CONVERT),
    "tf.make_tensor_proto": ("none", "builds a TensorProto on the host; no op"),
    # Placeholders and variables.
    "tf.placeholder": ("variable", _PLACEHOLDER),
    "tf.placeholder_with_default": ("variable", _PLACEHOLDER),
    "tf.sparse_placeholder": ("variable", "creates three new placeholders, a new sparse graph input"),
    "tf.sparse.placeholder": ("variable", "creates three new placeholders, a new sparse graph input"),
    "tf.get_variable": ("variable", "creates a variable (or, under reuse, returns the existing one)"),
    "tf.get_local_variable": ("variable", "creates a local variable (or, under reuse, returns the existing one)"),
    "tf.create_partitioned_variables": ("variable", "creates the variables of a partitioned variable"),
    "tf.train.get_or_create_global_step": ("variable", "creates the global-step variable the first time it is called"),
    "tf.train.create_global_step": ("variable", "creates the global-step variable"),
    "tf.keras.backend.variable": ("variable", "creates a variable"),
    "tf.keras.backend.random_normal_variable": ("variable", "creates a variable"),
    "tf.keras.backend.random_uniform_variable": ("variable", "creates a variable"),
    "tf.random.Generator": ("variable", "creates the generator's state variable"),
    "tf.random.experimental.Generator": ("variable", "creates the generator's state variable"),
    "tf.lookup.KeyValueTensorInitializer": ("constant", "converts its keys and values to tensors (Const ops from Python data)"),
    "tf.lookup.TextFileInitializer": ("constant", "converts its file name to a Const op"),
    "tf.train.QueueRunner": ("op", "builds the queue's close and cancel ops"),
    "tf.train.queue_runner.QueueRunner": ("op", "builds the queue's close and cancel ops"),
    # Assigns.
    "tf.keras.backend.update": ("assign", "builds an assign op on the variable"),
    "tf.keras.backend.update_add": ("assign", "builds an assign_add op on the variable"),
    "tf.keras.backend.update_sub": ("assign", "builds an assign_sub op on the variable"),
    "tf.keras.backend.moving_average_update": ("assign", "builds an assign op that moves the variable's average"),
    # Datasets and iterators.
    "tf.data.make_one_shot_iterator": ("iterator", "builds a one-shot iterator over the dataset"),
    "tf.data.make_initializable_iterator": ("iterator", "builds an initializable iterator and its initializer op"),
    "tf.data.experimental.Counter": ("dataset", _DATASET),
    "tf.data.experimental.choose_from_datasets": ("dataset", _DATASET),
    "tf.data.experimental.sample_from_datasets": ("dataset", _DATASET),
    "tf.data.experimental.from_list": ("dataset", _DATASET),
    "tf.data.experimental.make_csv_dataset": ("dataset", _DATASET),
    "tf.data.experimental.make_batched_features_dataset": ("dataset", _DATASET),
    "tf.data.experimental.load": ("dataset", _DATASET),
    "tf.data.experimental.service.from_dataset_id": ("dataset", _DATASET),
    "tf.data.get_output_classes": ("none", "reads the dataset's static structure"),
    "tf.data.get_output_shapes": ("none", "reads the dataset's static structure"),
    "tf.data.get_output_types": ("none", "reads the dataset's static structure"),
    "tf.data.experimental.get_structure": ("none", "reads the dataset's static structure"),
    "tf.data.experimental.enable_debug_mode": ("none", "switches tf.data to eager debugging; no op"),
    "tf.data.experimental.get_model_proto": ("none", "reads an eager iterator's model proto; no op"),
    # File writers and summaries.
    "tf.summary.get_summary_description": ("none", "parses a NodeDef's attribute on the host"),
    "tf.summary.create_file_writer": (
        "file_writer",
        "opens an event file writer (a TF2 summary writer resource); one per iteration leaks files",
    ),
    "tf.summary.create_noop_writer": ("none", "returns a writer that writes nothing"),
    "tf.summary.record_if": ("none", "context manager: sets a recording condition"),
    "tf.summary.should_record_summaries": ("op", "builds a tensor of the recording condition"),
    "tf.summary.experimental.get_step": ("none", "returns the default summary step"),
    "tf.summary.experimental.set_step": ("none", "sets the default summary step"),
    "tf.summary.experimental.summary_scope": ("none", "context manager: names only"),
    "tf.summary.trace_on": ("none", "starts eager tracing; no op"),
    "tf.summary.trace_off": ("none", "stops eager tracing; no op"),
    "tf.summary.trace_export": ("none", "writes a recorded eager trace; no op in graph mode"),
    "tf.summary.all_v2_summary_ops": ("none", "reads a graph collection"),
    # Functions under tensorflow.python.ops that build nothing.
    "tf.get_variable_scope": ("none", "returns the current variable scope object"),
    "tf.variable_op_scope": ("none", "context manager: names and reuse only"),
    "tf.no_regularizer": ("none", "returns None; a regularizer that builds nothing"),
    "tf.make_template": ("none", "returns a Template; ops are built only when the template is called"),
    "tf.custom_gradient": ("none", "a decorator; ops are built only when the decorated function is called"),
    "tf.grad_pass_through": ("none", "a decorator; ops are built only when the decorated function is called"),
    "tf.recompute_grad": ("none", "a decorator; ops are built only when the decorated function is called"),
    "tf.nondifferentiable_batch_function": ("none", "a decorator; ops are built only when the decorated function is called"),
    "tf.fixed_size_partitioner": ("none", "returns a partitioner function"),
    "tf.min_max_variable_partitioner": ("none", "returns a partitioner function"),
    "tf.variable_axis_size_partitioner": ("none", "returns a partitioner function"),
    "tf.is_numeric_tensor": ("none", "checks a dtype on the host"),
    "tf.debugging.is_numeric_tensor": ("none", "checks a dtype on the host"),
    "tf.assert_proper_iterable": ("none", "checks a Python type on the host"),
    "tf.debugging.assert_proper_iterable": ("none", "checks a Python type on the host"),
    "tf.assert_same_float_dtype": ("none", "checks dtypes on the host"),
    "tf.debugging.assert_same_float_dtype": ("none", "checks dtypes on the host"),
    "tf.losses.add_loss": ("none", "records an existing loss tensor in a collection"),
    "tf.losses.get_losses": ("none", "reads a graph collection"),
    "tf.losses.get_regularization_losses": ("none", "reads a graph collection"),
    "tf.get_session_handle": ("op", "builds a GetSessionHandle op"),
    "tf.random.create_rng_state": ("none", "computes a NumPy state on the host"),
    "tf.random.experimental.create_rng_state": ("none", "computes a NumPy state on the host"),
    "tf.random.get_global_generator": ("variable", "creates the global generator's state variable the first time"),
    "tf.random.experimental.get_global_generator": (
        "variable",
        "creates the global generator's state variable the first time",
    ),
    "tf.signal.inverse_stft_window_fn": ("none", "returns a window function"),
    "tf.Variable.from_proto": ("none", "rebuilds the Python object of a variable that is already in the graph"),
    "tf.train.Saver.from_proto": ("none", "rebuilds the Python object of a Saver whose ops are already in the graph"),
    "tf.losses.Reduction.all": ("none", "lists the reduction names"),
    "tf.losses.Reduction.validate": ("none", "checks a reduction name"),
    "tf.distributions.Distribution.param_static_shapes": ("none", "computes static shapes on the host"),
    "tf.random.set_global_generator": ("none", "replaces the global generator object"),
    "tf.random.experimental.set_global_generator": ("none", "replaces the global generator object"),
    "tf.keras.backend.name_scope": ("none", "context manager: names only"),
    # Training helpers that build ops.
    "tf.train.init_from_checkpoint": ("op", "replaces the variables' initializers with restore ops"),
    "tf.train.warm_start": ("op", "replaces the variables' initializers with restore ops"),
    "tf.train.Supervisor": ("op", "builds an init op, a ready op, a Saver and a summary op, then finalizes the graph"),
    "tf.train.global_step": ("none", _RUNS_STEP),
    # Keras backend accessors that build nothing.
    "tf.keras.backend.eval": ("none", _RUNS_STEP),
    "tf.keras.backend.get_value": ("none", _RUNS_STEP),
    "tf.keras.backend.batch_get_value": ("none", _RUNS_STEP),
    "tf.keras.backend.set_value": ("none", "assigns through a cached assign op and placeholder, like Variable.load"),
    "tf.keras.backend.batch_set_value": ("none", "assigns through cached assign ops and placeholders, like Variable.load"),
    "tf.keras.backend.int_shape": ("none", "reads a static shape"),
    "tf.keras.backend.ndim": ("none", "reads a static shape"),
    "tf.keras.backend.dtype": ("none", "reads a dtype"),
    "tf.keras.backend.count_params": ("none", "reads a static shape"),
    "tf.keras.backend.is_sparse": ("none", "checks a Python type"),
    "tf.keras.backend.cast_to_floatx": ("none", "converts a NumPy array on the host"),
}

#: TF1 names that TensorFlow 2.21 no longer exposes without ``tf_keras``, listed from the TF 1.15 API.
_LAYERS_REASON = "a TF 1.15 tf.layers {kind}; listed by hand because tf.compat.v1.layers now needs tf_keras"
_LAYER_FUNCTIONS = (
    "average_pooling1d average_pooling2d average_pooling3d batch_normalization conv1d conv2d "
    "conv2d_transpose conv3d conv3d_transpose dense dropout flatten max_pooling1d max_pooling2d "
    "max_pooling3d separable_conv1d separable_conv2d"
).split()
_LAYER_CLASSES = (
    "AveragePooling1D AveragePooling2D AveragePooling3D BatchNormalization Conv1D Conv2D "
    "Conv2DTranspose Conv3D Conv3DTranspose Dense Dropout Flatten InputSpec Layer MaxPooling1D "
    "MaxPooling2D MaxPooling3D SeparableConv1D SeparableConv2D"
).split()
_RNN_CELLS = (
    "BasicLSTMCell BasicRNNCell DeviceWrapper DropoutWrapper GRUCell LSTMCell LSTMStateTuple "
    "MultiRNNCell RNNCell ResidualWrapper"
).split()

EXTRA_NAMES: dict[str, tuple[str, str]] = {
    **{
        f"tf.layers.{n}": ("op", _LAYERS_REASON.format(kind="function, which builds the layer's variables and ops"))
        for n in _LAYER_FUNCTIONS
    },
    **{
        f"tf.layers.{n}": ("none", _LAYERS_REASON.format(kind="class, which builds ops only when the layer is called"))
        for n in _LAYER_CLASSES
    },
    "tf.layers.experimental.keras_style_scope": ("none", "a TF 1.15 context manager: layer style only"),
    "tf.layers.experimental.set_keras_style": ("none", "a TF 1.15 mode switch: layer style only"),
    **{
        f"tf.nn.rnn_cell.{n}": (
            "none",
            "a TF 1.15 tf.nn.rnn_cell class (needs tf_keras today): ops are built when the cell is called",
        )
        for n in _RNN_CELLS
    },
    "tf.keras.backend.get_session": (
        "session",
        "TF1-era tf.keras (absent from Keras 3): returns Keras' global session, whose run is a step",
    ),
    "tf.keras.backend.set_session": ("none", "TF1-era tf.keras (absent from Keras 3): sets Keras' global session"),
    "tf.keras.backend.placeholder": ("variable", "TF1-era tf.keras (absent from Keras 3): creates a placeholder"),
    "tf.keras.backend.learning_phase": (
        "variable",
        "TF1-era tf.keras (absent from Keras 3): creates the learning-phase placeholder the first time",
    ),
}

# --------------------------------------------------------------------------------------------------
# Automatic rules.
# --------------------------------------------------------------------------------------------------

#: (module prefix, pattern on the defining function's ``__name__`` or None, effect), first match wins.
#: A prefix matches the module itself and its submodules.
MODULE_RULES: list[tuple[str, str | None, str]] = [
    # Variable updates.
    ("tensorflow.python.ops.state_ops", r"^(assign|assign_add|assign_sub|scatter_\w+|batch_scatter_update)$", "assign"),
    ("tensorflow.python.ops.gen_state_ops", r"^(assign|scatter)", "assign"),
    ("tensorflow.python.ops.gen_resource_variable_ops", r"^(assign|resource_scatter)", "assign"),
    # Initializers and variable-collection readers.
    ("tensorflow.python.ops.variables", r"(_initializer|^initialize_\w+)$", "initializer"),
    ("tensorflow.python.ops.lookup_ops", r"^(tables_initializer|initialize_all_tables)$", "initializer"),
    ("tensorflow.python.ops.variables", r"^(trainable|global|local|model|all|moving_average)_variables$", "none"),
    # Mode switches, scopes, decorators and initializer factories that live next to the ops.
    ("tensorflow.python.ops.variable_scope", None, "none"),
    ("tensorflow.python.ops.init_ops", None, "none"),
    ("tensorflow.python.ops.control_flow_v2_toggles", None, "none"),
    ("tensorflow.python.ops.resource_variables_toggle", None, "none"),
    ("tensorflow.python.ops.control_flow_util_v2", None, "none"),
    # TF2 summary writes (the writer itself is an override).
    ("tensorflow.python.ops.summary_ops_v2", r"^(write|write_raw_pb|graph)$", "summary"),
    # Everything else defined with the ops builds ops, and so do the user ops.
    ("tensorflow.python.ops", None, "op"),
    ("tensorflow.python.user_ops", None, "op"),
    # Summaries (TF1 tf.summary) and the TF2 summary writers' ops.
    ("tensorflow.python.summary.summary", None, "summary"),
    # Framework: graph plumbing, dtypes, shapes, protos. Constants and imports are overrides.
    ("tensorflow.python.framework", None, "none"),
    # Training: queue input pipelines and learning-rate schedules build ops; the rest are helpers.
    ("tensorflow.python.training.input", None, "op"),
    ("tensorflow.python.keras.optimizer_v2.legacy_learning_rate_decay", None, "op"),
    ("tensorflow.python.training", None, "none"),
    # tf.data: dataset and iterator ops, except structure helpers.
    ("tensorflow.python.data.util", None, "none"),
    ("tensorflow.python.data", None, "op"),
    # TPU ops; the rest of tf.tpu is configuration.
    ("tensorflow.python.tpu.ops", None, "op"),
    ("tensorflow.python.tpu.tpu", r"^(batch_parallel|initialize_system|replicate|rewrite|shard|shutdown_system)$", "op"),
    # Feature columns: input_layer/linear_model build ops, column constructors build nothing.
    ("tensorflow.python.feature_column.feature_column", r"^(input_layer|linear_model)$", "op"),
    # Keras: the TF1 backend functions, keras.ops, activations, losses, metrics, random, merge layers.
    ("keras.src.legacy.backend", None, "op"),
    ("keras.src.ops.operation_utils", None, "none"),
    ("keras.src.ops", r"^(is_tensor|vectorize|dtype|ndim|custom_gradient)$", "none"),
    ("keras.src.ops", r"^(convert_to_tensor|array)$", "constant"),
    ("keras.src.ops", None, "op"),
    ("keras.src.activations", r"^(?!deserialize$|get$|serialize$)", "op"),
    ("keras.src.losses.losses", None, "op"),
    ("keras.src.metrics", r"^(?!deserialize$|get$|serialize$)", "op"),
    ("keras.src.random", None, "op"),
    ("keras.src.quantizers", r"^(?!deserialize$|get$|serialize$)", "op"),
    ("keras.src.layers.merging", None, "op"),
    ("keras.src.applications", r"^(?!preprocess_input$|decode_predictions$)", "op"),
]

#: Reason of each automatic rule, for the docs and ``--explain``.
RULE_NOTES = {
    "class": "classified by its base class",
    "class-default": "a class: constructing it builds nothing",
    "measured": "a Keras 3 class whose constructor, called once in a fresh graph, grew it",
    "apply_fn": "a tf.data transformation factory: builds nothing until Dataset.apply",
    "default": "not defined in a module that builds ops",
}

#: (base class path, effect) for classes, first match wins.
CLASS_RULES: list[tuple[str, str]] = [
    ("google.protobuf.message.Message", "none"),
    ("tensorflow.python.client.session.BaseSession", "session"),
    ("tensorflow.python.training.monitored_session._MonitoredSession", "session"),
    ("tensorflow.python.framework.ops.Graph", "graph"),
    ("tensorflow.python.training.saver.Saver", "saver"),
    ("tensorflow.python.summary.writer.writer.FileWriter", "file_writer"),
    ("tensorflow.python.data.ops.dataset_ops.DatasetV2", "dataset"),
    ("tensorflow.python.ops.variables.Variable", "variable"),
    ("tensorflow.python.ops.data_flow_ops.QueueBase", "op"),
    ("tensorflow.python.ops.data_flow_ops.ConditionalAccumulatorBase", "op"),
    ("tensorflow.python.ops.io_ops.ReaderBase", "op"),
    ("tensorflow.python.ops.tensor_array_ops.TensorArray", "op"),
    ("tensorflow.python.ops.critical_section_ops.CriticalSection", "op"),
    ("tensorflow.python.ops.lookup_ops.LookupInterface", "op"),
    ("tensorflow.python.ops.distributions.distribution.Distribution", "op"),
    ("keras.src.backend.common.variables.Variable", "variable"),
]

#: Keras 3 classes defined under these modules are classified by measuring their constructor (see
#: :func:`measure_constructor`): unlike TF1-era tf.keras, Keras 3 creates the state of metrics,
#: optimizers, random layers (seed generators) and lookup layers (tables) when they are constructed.
KERAS_MEASURED_MODULES = (
    "keras.src.layers",
    "keras.src.metrics",
    "keras.src.losses",
    "keras.src.optimizers",
    "keras.src.random",
    "keras.src.regularizers",
    "keras.src.initializers",
    "keras.src.constraints",
    "keras.src.models",
    "keras.src.legacy",
)

#: Graph op types that hold state: a constructor that creates one creates a variable.
VARIABLE_OP_TYPES = frozenset({"VarHandleOp", "VariableV2", "Variable"})

#: Overrides keyed by the object's defining path (``module.qualname``): they apply to every alias.
OBJECT_OVERRIDES: dict[str, tuple[str, str]] = {
    "keras.src.optimizers.loss_scale_optimizer.LossScaleOptimizer": (
        "variable",
        "Keras 3 creates its loss-scale and step variables when it is constructed (measuring needs an inner optimizer)",
    ),
    "tensorflow.python.training.experimental.loss_scale.DynamicLossScale": (
        "variable",
        "creates its loss-scale and good-steps variables when constructed",
    ),
}

#: Receiver kinds returned by instances of these classes (for ``returns``).
KIND_CLASSES: list[tuple[str, str]] = [
    ("tensorflow.python.ops.variables.Variable", "variable"),
    ("tensorflow.python.training.optimizer.Optimizer", "optimizer"),
    ("tensorflow.python.data.ops.dataset_ops.DatasetV2", "dataset"),
    ("tensorflow.python.data.ops.iterator_ops.Iterator", "iterator"),
    ("tensorflow.python.training.moving_averages.ExponentialMovingAverage", "ema"),
    ("tensorflow.python.ops.data_flow_ops.QueueBase", "queue"),
    ("tensorflow.python.training.saver.Saver", "saver"),
    ("tensorflow.python.summary.writer.writer.FileWriter", "file_writer"),
    ("tensorflow.python.ops.io_ops.ReaderBase", "reader"),
    ("tensorflow.python.ops.lookup_ops.LookupInterface", "table"),
]

#: Effects whose calls return an object of a receiver kind.
KIND_EFFECTS = {"dataset": "dataset", "iterator": "iterator", "saver": "saver", "file_writer": "file_writer"}

#: Functions (not classes) whose return value is a variable.
VARIABLE_FUNCTIONS = frozenset(
    {
        "tf.get_variable",
        "tf.get_local_variable",
        "tf.train.get_or_create_global_step",
        "tf.train.create_global_step",
        "tf.keras.backend.variable",
        "tf.keras.backend.random_normal_variable",
        "tf.keras.backend.random_uniform_variable",
    }
)

#: Module names (``__name__``) the walk may enter: TensorFlow's generated API packages and the public
#: Keras API. Anything else reached through an attribute (``tf.dtensor.python``, ``unittest.mock``) is
#: an implementation module, not API.
API_MODULE_PREFIXES = (
    "tensorflow._api.v2.",
    "tensorflow.experimental",
    "keras._tf_keras.keras",
    "keras.",
)
API_MODULE_EXACT = frozenset({"tensorflow.python.platform.flags"})  # tf.flags, tf.app.flags

#: Subtrees that are aliases of a root already walked.
SKIP_SUBTREES = frozenset({"tf.compat.v1", "tf.compat.v2"})


# --------------------------------------------------------------------------------------------------
# Walking the API.
# --------------------------------------------------------------------------------------------------


def _quiet():
    """Silence TensorFlow's and absl's import-time chatter."""
    logging.getLogger("tensorflow").setLevel(logging.ERROR)
    warnings.filterwarnings("ignore")


@contextlib.contextmanager
def silenced_stderr():
    """Silence file descriptor 2 (TensorFlow's C++ logging writes there, not to ``sys.stderr``)."""
    sys.stderr.flush()
    saved = os.dup(2)
    try:
        with open(os.devnull, "w") as devnull:
            os.dup2(devnull.fileno(), 2)
        with contextlib.redirect_stderr(io.StringIO()):
            yield
    finally:
        sys.stderr.flush()
        os.dup2(saved, 2)
        os.close(saved)


def import_tensorflow():
    """TensorFlow, switched to TF1 graph mode (everything here is about graph mode)."""
    _quiet()
    with silenced_stderr():
        import tensorflow as tf  # noqa: PLC0415 (only the generator imports TF)

        tf.compat.v1.disable_v2_behavior()
    tf.get_logger().setLevel(logging.ERROR)
    return tf


def _is_api_module(obj) -> bool:
    if not isinstance(obj, types.ModuleType):
        return False
    name = getattr(obj, "__name__", None) or ""
    if name in API_MODULE_EXACT:
        return True
    return name.startswith(API_MODULE_PREFIXES) and ".src" not in name


def _public_attrs(mod) -> list[str]:
    try:
        names = dir(mod)
    except Exception:  # a lazy module whose backing package is missing (tf.compat.v1.layers)
        return []
    return sorted(n for n in names if not n.startswith("_"))


def walk(root, prefix: str, found: dict[str, object], seen: set[int]) -> None:
    """Record every public callable under module ``root`` as ``prefix + path`` (first one wins)."""
    if id(root) in seen:
        return
    seen.add(id(root))
    for attr in _public_attrs(root):
        name = prefix + attr
        try:
            obj = getattr(root, attr)
        except Exception:  # optional dependency missing behind a lazy attribute
            continue
        if isinstance(obj, types.ModuleType):
            if name in SKIP_SUBTREES or not _is_api_module(obj):
                continue
            walk(obj, name + ".", found, seen)
        elif (inspect.isclass(obj) or inspect.isroutine(obj)) and name not in found:
            found[name] = obj  # not objects such as tf.flags.FLAGS or typing aliases


def public_api(tf) -> dict[str, object]:
    """Canonical name -> object, ``tf.compat.v1`` first, then the TF2 names it lacks."""
    found: dict[str, object] = {}
    with contextlib.redirect_stderr(io.StringIO()), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        walk(tf.compat.v1, "tf.", found, set())
        walk(tf, "tf.", found, set())
    return found


# --------------------------------------------------------------------------------------------------
# Classification.
# --------------------------------------------------------------------------------------------------


def _resolve(path: str):
    module, _, attr = path.rpartition(".")
    try:
        mod = __import__(module, fromlist=[attr])
        return getattr(mod, attr)
    except (ImportError, AttributeError):
        return None


def unwrap(func):
    """The function under TensorFlow's decorators, dispatchers and ``functools.wraps`` layers."""
    from tensorflow.python.util import tf_decorator  # noqa: PLC0415

    seen = set()
    while id(func) not in seen:
        seen.add(id(func))
        _, target = tf_decorator.unwrap(func)
        inner = getattr(target, "__wrapped__", None)
        if inner is None or inner is target:
            return target
        func = inner
    return func


def defining_module(obj) -> str:
    module = getattr(obj, "__module__", None)
    if not module:
        module = getattr(inspect.getmodule(obj), "__name__", None) or ""
    return module


def _matches(module: str, prefix: str) -> bool:
    return module == prefix or module.startswith(prefix + ".")


def _is_apply_fn_factory(func) -> bool:
    """A tf.data transformation factory returns a nested ``_apply_fn`` for ``Dataset.apply``."""
    code = getattr(func, "__code__", None)
    return code is not None and any(
        isinstance(c, types.CodeType) and c.co_name == "_apply_fn" for c in code.co_consts
    )


def object_path(obj) -> str:
    return f"{defining_module(obj)}.{getattr(obj, '__qualname__', getattr(obj, '__name__', ''))}"


def measure_constructor(tf, cls) -> str | None:
    """What constructing ``cls`` once in a fresh graph builds: "variable", "op", or None (nothing or failed).

    Required parameters get the number 1 (``Conv2D(filters=1, kernel_size=1)``), or 0.5 when named like
    a rate (``Dropout(rate=0.5)``).
    """
    try:
        params = list(inspect.signature(cls).parameters.values())
    except (TypeError, ValueError):
        return None
    required = {
        p.name: 0.5 if "rate" in p.name else 1
        for p in params
        if p.default is inspect.Parameter.empty and p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)
    }
    with tf.Graph().as_default() as graph, silenced_stderr(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            cls(**required)
        except Exception:  # noqa: BLE001 (needs real arguments: not measured)
            return None
        ops = graph.get_operations()
    if not ops:
        return None
    return "variable" if any(op.type in VARIABLE_OP_TYPES for op in ops) else "op"


class Classifier:
    def __init__(self, tf):
        self.tf = tf
        self.class_rules = [(cls, effect) for path, effect in CLASS_RULES if (cls := _resolve(path))]
        self.kind_classes = [(cls, kind) for path, kind in KIND_CLASSES if (cls := _resolve(path))]
        self.used_overrides: set[str] = set()
        self.object_overrides: dict[str, str] = {}  # canonical name -> object path, as applied

    def classify(self, name: str, obj) -> tuple[str, str]:
        """(effect, rule that decided it)."""
        if name in OVERRIDES:
            self.used_overrides.add(name)
            return OVERRIDES[name][0], "override"
        path = object_path(obj)
        if path in OBJECT_OVERRIDES:
            self.object_overrides[name] = path
            return OBJECT_OVERRIDES[path][0], "override"
        if inspect.isclass(obj):
            for base, effect in self.class_rules:
                if issubclass(obj, base):
                    return effect, "class"
            if defining_module(obj).startswith(KERAS_MEASURED_MODULES):
                measured = measure_constructor(self.tf, obj)
                if measured:
                    return measured, "measured"
            return "none", "class-default"
        func = unwrap(obj)
        module = defining_module(func)
        if _matches(module, "tensorflow.python.data") and _is_apply_fn_factory(func):
            return "none", "apply_fn"
        own_name = getattr(func, "__name__", "") or name.rpartition(".")[2]
        for prefix, pattern, effect in MODULE_RULES:
            if _matches(module, prefix) and (pattern is None or re.search(pattern, own_name)):
                return effect, f"module {prefix}"
        return "none", "default"

    def kind_of(self, name: str, obj, effect: str) -> str | None:
        if inspect.isclass(obj):
            for base, kind in self.kind_classes:
                if issubclass(obj, base):
                    return kind
            return None
        if name in VARIABLE_FUNCTIONS:
            return "variable"
        return KIND_EFFECTS.get(effect)


def _twin_name(cls) -> str:
    return re.sub(r"V[12]$", "", cls.__name__)


def class_methods(cls) -> list[tuple[str, object]]:
    """Public static and class methods of a TensorFlow class (not protobufs, not Keras).

    A method is listed under the class that defines it, or under that class's V1/V2 twin
    (``DatasetV1`` inherits ``counter`` from ``DatasetV2``: both are ``tf.data.Dataset``), not under
    every subclass that inherits it (``tf.data.TFRecordDataset.from_tensor_slices``).
    """
    if not defining_module(cls).startswith("tensorflow."):
        return []
    out = []
    for attr in sorted(dir(cls)):
        if attr.startswith("_"):
            continue
        for klass in cls.__mro__:
            if attr in vars(klass):
                raw = vars(klass)[attr]
                break
        else:
            continue
        if (
            isinstance(raw, (staticmethod, classmethod))
            and defining_module(klass).startswith("tensorflow.")
            and _twin_name(klass) == _twin_name(cls)
        ):
            out.append((attr, raw.__func__))
    return out


def classify_api(tf) -> tuple[dict[str, str], dict[str, str], dict[str, str], Classifier]:
    """(names, returns, rule per name) for the whole public API."""
    from google.protobuf.message import Message  # noqa: PLC0415
    from tensorflow.python.data.ops import dataset_ops, iterator_ops  # noqa: PLC0415
    from tensorflow.python.framework.type_spec import TypeSpec  # noqa: PLC0415

    api = public_api(tf)
    classifier = Classifier(tf)
    names: dict[str, str] = {}
    returns: dict[str, str] = {}
    rules: dict[str, str] = {}
    for name, obj in sorted(api.items()):
        effect, rule = classifier.classify(name, obj)
        names[name], rules[name] = effect, rule
        kind = classifier.kind_of(name, obj, effect)
        if kind:
            returns[name] = kind
        if not inspect.isclass(obj) or issubclass(obj, (Message, TypeSpec)):
            continue  # protobufs and type specs: their static methods build nothing
        class_effect = names[name]
        for attr, func in class_methods(obj):
            full = f"{name}.{attr}"
            if issubclass(obj, dataset_ops.DatasetV2):
                effect, rule, kind = "dataset", "class", "dataset"
            elif issubclass(obj, iterator_ops.Iterator):
                effect, rule, kind = "iterator", "class", "iterator"
            elif attr.startswith("from_") and class_effect != "none":
                # An alternative constructor builds what the constructor builds.
                effect, rule, kind = class_effect, "class", returns.get(name)
            else:
                effect, rule = classifier.classify(full, func)
                kind = None
            if full in OVERRIDES:
                effect, rule = OVERRIDES[full][0], "override"
                classifier.used_overrides.add(full)
            if effect == "none" and rule != "override":
                continue  # only static/class methods that build something (or are overridden) are listed
            names[full], rules[full] = effect, rule
            if kind:
                returns[full] = kind
    for name, (effect, _reason) in EXTRA_NAMES.items():
        if name not in names:
            names[name], rules[name] = effect, "extra"
    return names, returns, rules, classifier


# --------------------------------------------------------------------------------------------------
# Methods, measured on sample receivers.
# --------------------------------------------------------------------------------------------------

#: Python operators a TensorFlow class may overload. Other dunders (``__repr__``...) are never ops.
OPERATOR_DUNDERS = frozenset(
    "__add__ __radd__ __sub__ __rsub__ __mul__ __rmul__ __truediv__ __rtruediv__ __floordiv__ "
    "__rfloordiv__ __mod__ __rmod__ __pow__ __rpow__ __matmul__ __rmatmul__ __and__ __rand__ "
    "__or__ __ror__ __xor__ __rxor__ __lt__ __le__ __gt__ __ge__ __eq__ __ne__ __neg__ __pos__ "
    "__abs__ __invert__ __getitem__ __round__ __div__ __rdiv__ __iadd__ __isub__ __imul__ "
    "__idiv__ __itruediv__ __irealdiv__ __ifloordiv__ __imod__ __ipow__ __imatmul__".split()
)

UNARY_DUNDERS = frozenset({"__neg__", "__pos__", "__abs__", "__invert__", "__round__"})

#: Parameters that mean "a session": such methods run steps and are never called.
SESSION_PARAMS = frozenset({"session", "sess"})

#: Hand-made exceptions to the measured method lists: kind -> method -> (listed?, reason).
METHOD_OVERRIDES: dict[str, dict[str, tuple[bool, str]]] = {
    "tensor": {
        "__eq__": (
            False,
            "TF1 graph mode (disable_v2_behavior) compares tensors by identity; only TF2 tensor equality builds an Equal op",
        ),
        "__ne__": (
            False,
            "TF1 graph mode (disable_v2_behavior) compares tensors by identity; only TF2 tensor equality builds a NotEqual op",
        ),
    },
    "variable": {
        "__eq__": (False, "variables compare by identity in TF1 graph mode"),
        "__ne__": (False, "variables compare by identity in TF1 graph mode"),
        "value": (
            False,
            "on TF1's default reference variables value() returns the cached snapshot; only resource variables add a read op",
        ),
    },
    "iterator": {
        "string_handle": (
            False,
            "returns the iterator's cached handle tensor; only string_handle(name=...) builds a new op",
        ),
    },
}


class Receiver:
    """Sample objects of one kind, and dummy arguments for their methods."""

    def __init__(self, kind, build, special=None, annotated=None, skip=()):
        self.kind = kind
        self.build = build  # (tf, env) -> list of sample objects, built inside a fresh graph
        self.special = special or {}  # method -> (tf, env, obj) -> (args, kwargs)
        self.annotated = annotated  # predicate on a return annotation: listed without measuring
        self.skip = frozenset(skip)  # methods never called (reason in the docstring of RECEIVERS)


def _like(tf, obj):
    """A tensor shaped like ``obj``'s value, to pass as an operand."""
    return tf.zeros_like(tf.convert_to_tensor(obj)) if obj.dtype != tf.bool else tf.zeros(obj.shape, tf.bool)


def _dummy(tf, env, obj, param):
    """A dummy argument for parameter ``param`` of a method of ``obj``."""
    p = param.lower()
    table = {
        "value": lambda: _like(tf, obj),
        "delta": lambda: _like(tf, obj),
        "y": lambda: _like(tf, obj),
        "other": lambda: _like(tf, obj),
        "x": lambda: _like(tf, obj),
        "sparse_delta": lambda: tf.IndexedSlices(_like(tf, obj)[:1], tf.constant([0])),
        "indices": lambda: tf.constant([0]),
        "limit": lambda: 10,
        "shape": lambda: obj.shape,
        "slice_spec": lambda: 0,
        "batch_size": lambda: 2,
        "buffer_size": lambda: 4,
        "count": lambda: 2,
        "size": lambda: 2,
        "num_shards": lambda: 2,
        "index": lambda: 0,
        "n": lambda: 2,
        "vals": lambda: env["qvals"],
        "dataset": lambda: env["dataset"],
        "loss": lambda: env["loss"],
        "grads_and_vars": lambda: env["grads_and_vars"],
        "var_list": lambda: [env["var"]],
        "var": lambda: env["var"],
        "map_func": lambda: (lambda *x: x[0]),
        "predicate": lambda: (lambda *x: tf.constant(True)),
        "transformation_func": lambda: (lambda ds: ds),
        "options": lambda: tf.data.Options(),
        "keys": lambda: env["keys"],
        "queue": lambda: env["queue"],
        "num_records": lambda: 2,
        "state": lambda: env["reader_state"],
        "summary": lambda: env["summary_proto"],
        "graph": lambda: env["graph"],
        "event": lambda: env["event"],
        "session_log": lambda: env["session_log"],
        "run_metadata": lambda: env["run_metadata"],
        "tag": lambda: "tag",
        "meta_graph_def": lambda: env["meta_graph_def"],
        "global_step": lambda: 0,
        "last_checkpoints": lambda: [],
        "last_checkpoints_with_time": lambda: [],
        "checkpoint_paths": lambda: [],
        "path": lambda: env["tmpdir"],
        "initial_state": lambda: tf.constant(0, tf.int64),
        "reduce_func": lambda: (lambda s, x: s + x),
        "scan_func": lambda: (lambda s, x: (s + x, x)),
        "name": lambda: "slot",
    }
    if p not in table:
        raise LookupError(param)
    return table[p]()


def _call_specs(tf, env, obj, method, func, receiver):
    """Argument lists to try for ``obj.method``, each built before measuring."""
    if method in receiver.special:
        yield receiver.special[method](tf, env, obj)
        return
    if method in OPERATOR_DUNDERS:
        if method in UNARY_DUNDERS:
            yield (), {}
        elif method == "__getitem__":
            yield (0,), {}
        else:
            yield (_like(tf, obj),), {}
        return
    try:
        params = list(inspect.signature(func).parameters.values())[1:]
    except (TypeError, ValueError):
        yield (), {}
        return
    required = [
        p
        for p in params
        if p.default is inspect.Parameter.empty and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
    ]
    yield tuple(_dummy(tf, env, obj, p.name) for p in required), {}


def _candidate_methods(obj) -> list[tuple[str, object]]:
    cls = type(obj)
    out = []
    for attr in sorted(dir(cls)):
        if attr.startswith("_") and attr not in OPERATOR_DUNDERS:
            continue
        for klass in cls.__mro__:
            if attr in vars(klass):
                raw = vars(klass)[attr]
                break
        else:
            continue
        if klass is object or isinstance(raw, (staticmethod, classmethod, property, type)):
            continue
        if callable(raw):
            out.append((attr, raw))
    return out


def _graph_env(tf, tmpdir):
    """Shared objects the dummy arguments refer to, built in the current graph."""
    v1 = tf.compat.v1
    env = {"tmpdir": tmpdir}
    env["var"] = v1.Variable(tf.ones([2, 2]), name="env_var")
    env["loss"] = tf.reduce_sum(env["var"] * env["var"])
    grads = tf.gradients(env["loss"], [env["var"]])
    env["grads_and_vars"] = list(zip(grads, [env["var"]]))
    env["dataset"] = v1.data.Dataset.range(4)
    env["qvals"] = [tf.zeros([2])]
    env["keys"] = tf.constant(["a"])
    env["queue"] = v1.FIFOQueue(4, tf.string)
    env["reader_state"] = tf.constant(b"")
    env["graph"] = v1.get_default_graph()
    env["summary_proto"] = v1.Summary(value=[v1.Summary.Value(tag="x", simple_value=1.0)])
    env["event"] = v1.Event()
    env["session_log"] = v1.SessionLog()
    env["run_metadata"] = v1.RunMetadata()
    env["meta_graph_def"] = v1.MetaGraphDef()
    return env


def _returns_dataset_or_iterator(annotation) -> bool:
    text = annotation if isinstance(annotation, str) else repr(annotation)
    return bool(re.search(r"Dataset|Iterator", text))


def _receivers(tf) -> list[Receiver]:
    """The sample receivers. Methods taking a session are never called (they run steps)."""
    v1 = tf.compat.v1

    def tensors(tf, env):
        return [
            v1.placeholder(tf.float32, [2, 2]),
            v1.placeholder(tf.int32, [2, 2]),
            v1.placeholder(tf.bool, [2, 2]),
        ]

    def variables(tf, env):
        out = []
        for use_resource in (False, True):
            out.append(v1.Variable(tf.ones([2, 2]), use_resource=use_resource))
            out.append(v1.Variable(tf.zeros([2, 2], tf.int32), use_resource=use_resource))
            out.append(v1.Variable(tf.zeros([2, 2], tf.bool), use_resource=use_resource))
            out.append(v1.Variable(0, use_resource=use_resource))  # a scalar int, for count_up_to
        return out

    def scatter_nd(tf, env, obj):
        return (tf.constant([[0]]), _like(tf, obj)[:1]), {}

    variable_special = {
        "scatter_nd_add": scatter_nd,
        "scatter_nd_sub": scatter_nd,
        "scatter_nd_update": scatter_nd,
        "scatter_nd_max": scatter_nd,
        "scatter_nd_min": scatter_nd,
        "gather_nd": lambda tf, env, obj: ((tf.constant([[0]]),), {}),
        "set_shape": lambda tf, env, obj: ((obj.shape,), {}),
    }

    def optimizers(tf, env):
        return [
            v1.train.GradientDescentOptimizer(0.1),
            v1.train.MomentumOptimizer(0.1, 0.9),
            v1.train.AdamOptimizer(),
            v1.train.RMSPropOptimizer(0.1),
        ]

    optimizer_special = {
        "get_slot": lambda tf, env, obj: ((env["var"], "m"), {}),
    }

    def datasets(tf, env):
        return [v1.data.Dataset.range(8), tf.data.Dataset.range(8)]

    def ds_range(tf):
        return lambda *x: v1.data.Dataset.range(2)

    dataset_special = {
        "flat_map": lambda tf, env, obj: ((ds_range(tf),), {}),
        "interleave": lambda tf, env, obj: ((ds_range(tf),), {}),
        "map": lambda tf, env, obj: ((lambda x: x * 2,), {}),
        "map_with_legacy_function": lambda tf, env, obj: ((lambda x: x * 2,), {}),
        "filter": lambda tf, env, obj: ((lambda x: x > 0,), {}),
        "filter_with_legacy_function": lambda tf, env, obj: ((lambda x: x > 0,), {}),
        "take_while": lambda tf, env, obj: ((lambda x: x < 4,), {}),
        "apply": lambda tf, env, obj: ((lambda ds: ds.take(1),), {}),
        "unbatch": lambda tf, env, obj: ((), {}),
        "save": lambda tf, env, obj: ((os.path.join(env["tmpdir"], "ds"),), {}),
        "snapshot": lambda tf, env, obj: ((os.path.join(env["tmpdir"], "snap"),), {}),
        "padded_batch": lambda tf, env, obj: ((2,), {}),
        "sparse_batch": lambda tf, env, obj: ((2, [1]), {}),
        "group_by_window": lambda tf, env, obj: ((), {"key_func": lambda x: x % 2, "reduce_func": lambda k, w: w.batch(2), "window_size": 2}),
        "bucket_by_sequence_length": lambda tf, env, obj: ((lambda x: tf.cast(x, tf.int32), [3], [2, 2]), {}),
        "rejection_resample": lambda tf, env, obj: ((lambda x: tf.cast(x % 2, tf.int32), [0.5, 0.5]), {}),
    }

    def iterators(tf, env):
        return [v1.data.make_initializable_iterator(env["dataset"])]

    def emas(tf, env):
        return [v1.train.ExponentialMovingAverage(0.9)]

    ema_special = {
        "apply": lambda tf, env, obj: (([env["var"]],), {}),
        "average": lambda tf, env, obj: ((env["var"],), {}),
        "average_name": lambda tf, env, obj: ((env["var"],), {}),
    }

    def queues(tf, env):
        return [
            v1.FIFOQueue(10, [tf.float32], shapes=[[2]]),
            v1.PaddingFIFOQueue(10, [tf.float32], shapes=[[2]]),
            v1.RandomShuffleQueue(10, 0, [tf.float32], shapes=[[2]]),
        ]

    queue_special = {
        "enqueue_many": lambda tf, env, obj: (([tf.zeros([2, 2])],), {}),
    }

    def savers(tf, env):
        return [v1.train.Saver([env["var"]])]

    def file_writers(tf, env):
        return [v1.summary.FileWriter(env["tmpdir"])]

    writer_special = {
        "add_summary": lambda tf, env, obj: ((env["summary_proto"],), {}),
        "add_graph": lambda tf, env, obj: ((env["graph"],), {}),
        "add_meta_graph": lambda tf, env, obj: ((env["meta_graph_def"],), {}),
        "add_run_metadata": lambda tf, env, obj: ((env["run_metadata"], "tag"), {}),
    }

    def readers(tf, env):
        return [v1.TFRecordReader(), v1.WholeFileReader()]

    reader_special = {
        "read_up_to": lambda tf, env, obj: ((env["queue"], 2), {}),
    }

    def tables(tf, env):
        init = tf.lookup.KeyValueTensorInitializer(tf.constant(["a"]), tf.constant([1], tf.int64))
        return [
            v1.lookup.StaticHashTable(init, -1),
            tf.lookup.experimental.MutableHashTable(tf.string, tf.int64, -1),
        ]

    table_special = {
        "insert": lambda tf, env, obj: ((env["keys"], tf.constant([1], tf.int64)), {}),
        "remove": lambda tf, env, obj: ((env["keys"],), {}),
        "import_": lambda tf, env, obj: ((env["keys"], tf.constant([1], tf.int64)), {}),
        "__getitem__": lambda tf, env, obj: ((env["keys"],), {}),
    }

    return [
        Receiver("tensor", tensors, skip={"eval"}),
        Receiver("variable", variables, variable_special, skip={"eval", "load"}),
        Receiver("optimizer", optimizers, optimizer_special),
        Receiver("dataset", datasets, dataset_special, annotated=_returns_dataset_or_iterator),
        Receiver("iterator", iterators),
        Receiver("ema", emas, ema_special),
        Receiver("queue", queues, queue_special),
        Receiver("saver", savers, skip={"save", "restore"}),
        Receiver("file_writer", file_writers, writer_special),
        Receiver("reader", readers, reader_special),
        Receiver("table", tables, table_special),
    ]


def _takes_session(func) -> bool:
    try:
        return bool(SESSION_PARAMS & set(inspect.signature(func).parameters))
    except (TypeError, ValueError):
        return False


def measure_methods(tf) -> tuple[dict[str, list[str]], dict[str, dict[str, str]]]:
    """kind -> sorted op-building methods; kind -> method -> why it was not measured."""
    methods: dict[str, list[str]] = {}
    unmeasured: dict[str, dict[str, str]] = {}
    with tempfile.TemporaryDirectory() as tmpdir:
        for receiver in _receivers(tf):
            builds: set[str] = set()
            measured: set[str] = set()
            failures: dict[str, str] = {}
            with tf.Graph().as_default():
                count = len(receiver.build(tf, _graph_env(tf, tmpdir)))
            for index in range(count):
                with tf.Graph().as_default() as graph:
                    env = _graph_env(tf, tmpdir)
                    sample = receiver.build(tf, env)[index]
                    for method, func in _candidate_methods(sample):
                        if method in receiver.skip or _takes_session(func):
                            continue
                        if receiver.annotated is not None:
                            try:
                                annotation = inspect.signature(func).return_annotation
                            except (TypeError, ValueError):
                                annotation = inspect.Parameter.empty
                            if annotation is not inspect.Parameter.empty and receiver.annotated(annotation):
                                builds.add(method)
                                measured.add(method)
                                continue
                        for args, kwargs in _safe_specs(tf, env, sample, method, func, receiver, failures):
                            before = graph.version
                            try:
                                with contextlib.redirect_stderr(io.StringIO()), warnings.catch_warnings():
                                    warnings.simplefilter("ignore")
                                    getattr(sample, method)(*args, **kwargs)
                            except Exception as exc:  # noqa: BLE001 (any failure: not measured)
                                failures.setdefault(method, f"{type(exc).__name__}: {str(exc)[:120]}")
                                continue
                            measured.add(method)
                            if graph.version > before:
                                builds.add(method)
            for method, (listed, _reason) in METHOD_OVERRIDES.get(receiver.kind, {}).items():
                (builds.add if listed else builds.discard)(method)
                measured.add(method)
            methods[receiver.kind] = sorted(builds)
            unmeasured[receiver.kind] = {m: r for m, r in sorted(failures.items()) if m not in measured}
    return methods, unmeasured


def _safe_specs(tf, env, sample, method, func, receiver, failures):
    try:
        yield from _call_specs(tf, env, sample, method, func, receiver)
    except Exception as exc:  # noqa: BLE001 (no dummy for some parameter)
        failures.setdefault(method, f"no dummy arguments: {type(exc).__name__}: {exc}")


# --------------------------------------------------------------------------------------------------
# Verification: call names in fresh graphs and compare with their effects.
# --------------------------------------------------------------------------------------------------

#: Effects whose ``Graph.version`` delta is not a yes/no check: a session may add its own ops
#: (``MonitoredSession``), ``tf.Graph()`` builds in its own graph, a reset replaces the graph.
UNCHECKED_EFFECTS = frozenset({"session", "graph", "reset"})


def _verify_env(tf, tmpdir):
    """Dummy arguments for :data:`SAMPLE_CALLS`, built before measuring."""
    v1 = tf.compat.v1
    env = types.SimpleNamespace(tmpdir=tmpdir)
    env.x = v1.placeholder(tf.float32, [4, 4], name="x")
    env.img = v1.placeholder(tf.float32, [1, 8, 8, 3], name="img")
    env.labels = v1.placeholder(tf.int32, [4], name="labels")
    env.pred = v1.placeholder(tf.bool, [], name="pred")
    env.var = v1.get_variable("w", [4, 4])
    env.filters = v1.get_variable("f", [3, 3, 3, 2])
    env.loss = tf.reduce_mean(tf.matmul(env.x, env.var))
    env.onehot = tf.one_hot(env.labels, 4)
    env.zeros = tf.zeros([4, 4])
    env.step = v1.train.get_or_create_global_step()
    env.summary = v1.summary.scalar("existing", env.loss)
    env.queue = v1.FIFOQueue(8, [tf.float32], shapes=[[4]])
    env.enqueue = env.queue.enqueue_many([env.x])
    env.dataset = v1.data.Dataset.range(4)
    env.jpeg = tf.constant(b"")
    env.strings = tf.constant(["a", "b"])
    with tf.Graph().as_default() as other:
        tf.constant(1.0, name="imported")
    env.graph_def = other.as_graph_def()
    path = os.path.join(tmpdir, "model.meta")
    with tf.Graph().as_default():
        v1.Variable(1.0, name="saved")
        v1.train.export_meta_graph(filename=path)
    env.meta_path = path
    return env


def _enter(cm):
    with cm:
        pass


#: Calls a TF1 training loop commonly makes: canonical name -> (env) -> (args, kwargs).
SAMPLE_CALLS: dict[str, object] = {
    "tf.argmax": lambda e: ((e.x, 1), {}),
    "tf.reduce_mean": lambda e: ((e.x,), {}),
    "tf.reduce_sum": lambda e: ((e.x,), {}),
    "tf.equal": lambda e: ((e.x, e.x), {}),
    "tf.cast": lambda e: ((e.x, "int32"), {}),
    "tf.nn.softmax": lambda e: ((e.x,), {}),
    "tf.nn.relu": lambda e: ((e.x,), {}),
    "tf.sigmoid": lambda e: ((e.x,), {}),
    "tf.matmul": lambda e: ((e.x, e.x), {}),
    "tf.nn.conv2d": lambda e: ((e.img, e.filters, [1, 1, 1, 1], "SAME"), {}),
    "tf.nn.max_pool": lambda e: ((e.img, [1, 2, 2, 1], [1, 2, 2, 1], "SAME"), {}),
    "tf.nn.dropout": lambda e: ((e.x,), {"rate": 0.5}),
    "tf.nn.sparse_softmax_cross_entropy_with_logits": lambda e: ((), {"labels": e.labels, "logits": e.x}),
    "tf.nn.softmax_cross_entropy_with_logits_v2": lambda e: ((), {"labels": e.onehot, "logits": e.x}),
    "tf.nn.l2_loss": lambda e: ((e.x,), {}),
    "tf.losses.softmax_cross_entropy": lambda e: ((e.onehot, e.x), {}),
    "tf.metrics.accuracy": lambda e: ((e.labels, e.labels), {}),
    "tf.one_hot": lambda e: ((e.labels, 10), {}),
    "tf.reshape": lambda e: ((e.x, [-1]), {}),
    "tf.concat": lambda e: (([e.x, e.x], 0), {}),
    "tf.shape": lambda e: ((e.x,), {}),
    "tf.identity": lambda e: ((e.x,), {}),
    "tf.zeros": lambda e: (([2],), {}),
    "tf.zeros_like": lambda e: ((e.x,), {}),
    "tf.square": lambda e: ((e.x,), {}),
    "tf.stop_gradient": lambda e: ((e.x,), {}),
    "tf.gradients": lambda e: ((e.loss, [e.var]), {}),
    "tf.clip_by_global_norm": lambda e: (([e.x], 1.0), {}),
    "tf.group": lambda e: ((e.x,), {}),
    "tf.cond": lambda e: ((e.pred, lambda: e.x, lambda: e.zeros), {}),
    "tf.while_loop": lambda e: ((lambda i: i < 3, lambda i: i + 1, [0]), {}),
    "tf.map_fn": lambda e: ((lambda a: a * 2, e.x), {}),
    "tf.print": lambda e: ((e.x,), {}),
    "tf.Print": lambda e: ((e.x, [e.x]), {}),
    "tf.py_func": lambda e: ((lambda a: a, [e.x], "float32"), {}),
    "tf.random_normal": lambda e: (([2],), {}),
    "tf.random_uniform": lambda e: (([2],), {}),
    "tf.truncated_normal": lambda e: (([2],), {}),
    "tf.image.resize_images": lambda e: ((e.img, [4, 4]), {}),
    "tf.image.resize": lambda e: ((e.img, [4, 4]), {}),
    "tf.image.random_flip_left_right": lambda e: ((e.img[0],), {}),
    "tf.image.decode_jpeg": lambda e: ((e.jpeg,), {}),
    "tf.train.exponential_decay": lambda e: ((0.1, e.step, 100, 0.9), {}),
    "tf.train.string_input_producer": lambda e: ((["a.tfrecord"],), {}),
    "tf.train.shuffle_batch": lambda e: (([e.x], 2, 10, 2), {"enqueue_many": True}),
    "tf.report_uninitialized_variables": lambda e: ((), {}),
    "tf.is_variable_initialized": lambda e: ((e.var,), {}),
    "tf.summary.scalar": lambda e: (("loss", e.loss), {}),
    "tf.summary.histogram": lambda e: (("x", e.x), {}),
    "tf.summary.image": lambda e: (("img", e.img), {}),
    "tf.summary.text": lambda e: (("t", e.strings), {}),
    "tf.summary.merge": lambda e: (([e.summary],), {}),
    "tf.summary.merge_all": lambda e: ((), {}),
    "tf.summary.FileWriter": lambda e: ((e.tmpdir,), {}),
    "tf.train.Saver": lambda e: ((), {}),
    "tf.saved_model.simple_save": None,  # needs a session and writes a model: not called
    "tf.train.AdamOptimizer": lambda e: ((0.1,), {}),
    "tf.train.GradientDescentOptimizer": lambda e: ((0.1,), {}),
    "tf.train.MomentumOptimizer": lambda e: ((0.1, 0.9), {}),
    "tf.train.ExponentialMovingAverage": lambda e: ((0.9,), {}),
    "tf.assign": lambda e: ((e.var, e.zeros), {}),
    "tf.assign_add": lambda e: ((e.var, e.zeros), {}),
    "tf.assign_sub": lambda e: ((e.var, e.zeros), {}),
    "tf.scatter_update": lambda e: ((e.var, [0], e.zeros[:1]), {}),
    "tf.constant": lambda e: (([1.0, 2.0],), {}),
    "tf.convert_to_tensor": lambda e: (([1.0, 2.0],), {}),
    "tf.SparseTensor": lambda e: (([[0, 0]], [1.0], [2, 2]), {}),
    "tf.placeholder": lambda e: (("float32",), {}),
    "tf.placeholder_with_default": lambda e: ((1.0, []), {}),
    "tf.sparse_placeholder": lambda e: (("float32",), {}),
    "tf.get_variable": lambda e: (("v", [2]), {}),
    "tf.get_local_variable": lambda e: (("lv", [2]), {}),
    "tf.Variable": lambda e: (([1.0],), {}),
    "tf.train.get_or_create_global_step": None,  # already made by the env: checked separately below
    "tf.train.import_meta_graph": lambda e: ((e.meta_path,), {}),
    "tf.import_graph_def": lambda e: ((e.graph_def,), {}),
    "tf.data.Dataset.from_tensor_slices": lambda e: (([1, 2, 3],), {}),
    "tf.data.Dataset.range": lambda e: ((4,), {}),
    "tf.data.TFRecordDataset": lambda e: ((["a.tfrecord"],), {}),
    "tf.data.make_one_shot_iterator": lambda e: ((e.dataset,), {}),
    "tf.data.make_initializable_iterator": lambda e: ((e.dataset,), {}),
    "tf.global_variables_initializer": lambda e: ((), {}),
    "tf.local_variables_initializer": lambda e: ((), {}),
    "tf.variables_initializer": lambda e: (([e.var],), {}),
    "tf.tables_initializer": lambda e: ((), {}),
    "tf.initialize_all_variables": lambda e: ((), {}),
    "tf.FIFOQueue": lambda e: ((4, "float32"), {}),
    "tf.TFRecordReader": lambda e: ((), {}),
    "tf.train.QueueRunner": lambda e: ((e.queue, [e.enqueue]), {}),
    "tf.lookup.KeyValueTensorInitializer": lambda e: ((["a"], [1]), {}),
    "tf.lookup.TextFileInitializer": lambda e: (("vocab.txt", "string", -2, "int64", -1), {}),
    "tf.random.Generator.from_seed": lambda e: ((1,), {}),
    "tf.data.Iterator.from_structure": lambda e: (("int64", []), {}),
    "tf.lookup.StaticHashTable": None,  # needs an initializer: measured in the table receiver
    "tf.distributions.Normal": lambda e: ((0.0, 1.0), {}),
    "tf.linalg.LinearOperatorFullMatrix": lambda e: ((e.x,), {}),
    "tf.Session": lambda e: ((), {}),
    "tf.InteractiveSession": None,  # installs itself as the default session: not called
    "tf.Graph": lambda e: ((), {}),
    "tf.get_default_graph": lambda e: ((), {}),
    "tf.get_default_session": lambda e: ((), {}),
    "tf.train.latest_checkpoint": lambda e: ((e.tmpdir,), {}),
    "tf.train.get_checkpoint_state": lambda e: ((e.tmpdir,), {}),
    "tf.train.export_meta_graph": lambda e: ((), {}),
    "tf.train.write_graph": lambda e: ((e.graph_def, e.tmpdir, "g.pbtxt"), {}),
    "tf.gfile.Exists": lambda e: ((e.tmpdir,), {}),
    "tf.io.gfile.exists": lambda e: ((e.tmpdir,), {}),
    "tf.logging.info": lambda e: (("checked %d", 1), {}),
    "tf.logging.set_verbosity": lambda e: ((40,), {}),
    "tf.name_scope": lambda e: (("scope",), {}),
    "tf.variable_scope": lambda e: (("vscope",), {}),
    "tf.device": lambda e: (("/cpu:0",), {}),
    "tf.control_dependencies": lambda e: (([e.x],), {}),
    "tf.trainable_variables": lambda e: ((), {}),
    "tf.global_variables": lambda e: ((), {}),
    "tf.get_collection": lambda e: (("losses",), {}),
    "tf.add_to_collection": lambda e: (("mine", e.x), {}),
    "tf.set_random_seed": lambda e: ((1,), {}),
    "tf.train.get_global_step": lambda e: ((), {}),
    "tf.train.Coordinator": lambda e: ((), {}),
    "tf.train.SessionRunArgs": lambda e: ((e.x,), {}),
    "tf.train.StopAtStepHook": lambda e: ((), {"last_step": 10}),
    "tf.train.Scaffold": lambda e: ((), {}),
    "tf.Summary": lambda e: ((), {}),
    "tf.train.Example": lambda e: ((), {}),
    "tf.ConfigProto": lambda e: ((), {}),
    "tf.TensorShape": lambda e: (([2],), {}),
    "tf.constant_initializer": lambda e: ((1.0,), {}),
    "tf.random_normal_initializer": lambda e: ((), {}),
    "tf.make_template": lambda e: (("t", lambda a: a), {}),
    "tf.keras.backend.mean": lambda e: ((e.x,), {}),
    "tf.keras.backend.clear_session": None,  # a reset: checked separately below
    "tf.keras.layers.Dense": lambda e: ((3,), {}),
    "tf.keras.losses.categorical_crossentropy": lambda e: ((e.onehot, e.x), {}),
    "tf.keras.metrics.Mean": lambda e: ((), {}),
    "tf.keras.optimizers.Adam": lambda e: ((), {}),
    "tf.keras.Input": lambda e: ((), {"shape": (3,)}),
}

#: Names of the brief's list that must have these effects (also asserted by tests/test_tf_api.py).
EXPECTED = {
    "tf.argmax": "op",
    "tf.reduce_mean": "op",
    "tf.reduce_sum": "op",
    "tf.equal": "op",
    "tf.cast": "op",
    "tf.nn.softmax": "op",
    "tf.nn.relu": "op",
    "tf.matmul": "op",
    "tf.layers.dense": "op",
    "tf.layers.conv2d": "op",
    "tf.nn.conv2d": "op",
    "tf.one_hot": "op",
    "tf.image.resize_images": "op",
    "tf.image.resize": "op",
    "tf.summary.scalar": "summary",
    "tf.summary.merge_all": "summary",
    "tf.summary.FileWriter": "file_writer",
    "tf.train.Saver": "saver",
    "tf.train.AdamOptimizer": "none",
    "tf.train.GradientDescentOptimizer": "none",
    "tf.assign": "assign",
    "tf.constant": "constant",
    "tf.placeholder": "variable",
    "tf.get_variable": "variable",
    "tf.Variable": "variable",
    "tf.train.import_meta_graph": "graph_import",
    "tf.import_graph_def": "graph_import",
    "tf.data.Dataset.from_tensor_slices": "dataset",
    "tf.Session": "session",
    "tf.get_default_graph": "none",
    "tf.reset_default_graph": "reset",
    "tf.global_variables_initializer": "initializer",
    "tf.train.latest_checkpoint": "none",
    "tf.gfile.Exists": "none",
    "tf.logging.info": "none",
    "tf.name_scope": "none",
    "tf.variable_scope": "none",
    "tf.trainable_variables": "none",
    "tf.get_collection": "none",
    "tf.train.get_or_create_global_step": "variable",
    "tf.train.exponential_decay": "op",
    "tf.py_func": "op",
    "tf.random_normal": "op",
    "tf.keras.backend.clear_session": "reset",
}

#: Functions whose dummy call in the broad probe builds nothing (or something) only because of the
#: dummy arguments; the effect is right for real arguments. Name -> why the probe disagrees.
ARGUMENT_DEPENDENT = {
    **dict.fromkeys(
        (
            "tf.cast tf.dtypes.cast tf.to_float tf.keras.backend.cast tf.conj tf.math.conj tf.real tf.math.real "
            "tf.keras.ops.conj tf.keras.ops.conjugate tf.keras.ops.numpy.conj tf.keras.ops.numpy.conjugate "
            "tf.keras.ops.real tf.keras.ops.numpy.real tf.keras.activations.linear tf.keras.backend.to_dense "
            "tf.experimental.numpy.conj tf.experimental.numpy.conjugate tf.experimental.numpy.real "
            "tf.experimental.numpy.positive tf.experimental.numpy.asarray tf.experimental.numpy.asanyarray "
            "tf.nn.dropout tf.image.central_crop tf.train.limit_epochs tf.stack tf.keras.backend.stack "
            "tf.experimental.numpy.stack tf.convert_to_tensor tf.convert_to_tensor_or_indexed_slices "
            "tf.convert_to_tensor_or_sparse_tensor tf.keras.ops.convert_to_tensor tf.keras.ops.array "
            "tf.keras.ops.numpy.array"
        ).split(),
        "returns its (float, already-a-tensor) argument unchanged; other arguments build ops",
    ),
    **dict.fromkeys(
        (
            "tf.meshgrid tf.keras.ops.meshgrid tf.keras.ops.numpy.meshgrid tf.experimental.numpy.meshgrid "
            "tf.experimental.numpy.atleast_1d tf.experimental.numpy.atleast_2d tf.experimental.numpy.atleast_3d "
            "tf.experimental.numpy.broadcast_arrays tf.experimental.numpy.ix_ tf.experimental.numpy.result_type "
            "tf.summary.merge_all tf.assert_variables_initialized"
        ).split(),
        "called with nothing to work on (no arguments, no summaries, no variables), it returns early",
    ),
    **dict.fromkeys(
        (
            "tf.experimental.numpy.ndim tf.experimental.numpy.shape tf.experimental.numpy.size "
            "tf.experimental.numpy.isscalar"
        ).split(),
        "answers from the static shape when it is fully known; a dynamic shape builds ops",
    ),
    "tf.data.experimental.from_variant": "with a structure that is not a dataset spec it returns without building",
    **dict.fromkeys(
        ("tf.random.get_global_generator", "tf.random.experimental.get_global_generator"),
        "creates the process-wide generator on the first call only; the probe may call an alias first",
    ),
    "tf.ReaderBase": "the base class wraps the reader op it is given; subclasses build one",
    "tf.lookup.KeyValueTensorInitializer": "with tensors for keys and values it converts nothing; Python data builds Const ops",
    **dict.fromkeys(
        "tf.get_seed tf.random.get_seed tf.random.create_rng_state tf.random.experimental.create_rng_state".split(),
        "builds ops only when given a tensor where a Python int is expected",
    ),
}

#: Canonical-name prefixes the broad probe never calls: they touch files, devices, flags, global
#: modes, servers or the network, or (Keras datasets and applications) download data.
PROBE_SKIP_PREFIXES = (
    "tf.raw_ops.",
    "tf.app.",
    "tf.flags.",
    "tf.gfile.",
    "tf.io.gfile.",
    "tf.test.",
    "tf.config.",
    "tf.profiler.",
    "tf.tpu.",
    "tf.distribute.",
    "tf.lite.",
    "tf.saved_model.",
    "tf.debugging.experimental.",
    "tf.experimental.dtensor.",
    "tf.mlir.",
    "tf.sysconfig.",
    "tf.resource_loader.",
    "tf.logging.",
    "tf.summary.trace_",
    "tf.train.start_queue_runners",
    "tf.train.queue_runner.start_queue_runners",
    "tf.train.basic_train_loop",
    "tf.train.remove_checkpoint",
    "tf.train.update_checkpoint_state",
    "tf.train.checkpoints_iterator",
    "tf.data.experimental.service.",
    "tf.keras.utils.",
    "tf.keras.datasets.",
    "tf.keras.applications.",
    "tf.keras.config.",
    "tf.keras.export.",
    "tf.keras.saving.",
    "tf.keras.preprocessing.",
    "tf.keras.visualization.",
    "tf.keras.mixed_precision.",
    "tf.keras.distribution.",
    "tf.keras.backend.clear_session",
    "tf.load_",
)
PROBE_SKIP_CLASSES = re.compile(r"^tf\.Operation$|Server|Thread|Writer|Checkpoint|Session|Supervisor|Interpreter|Profile|GFile")
PROBE_SKIP_PATTERN = re.compile(r"(^|[._])(enable|disable|set|reset|register|unregister)_|experimental_connect")


def _resolve_api(tf, name: str):
    """The object behind a canonical name: ``tf.compat.v1`` first, then ``tf``."""
    parts = name.split(".")[1:]
    for root in (tf.compat.v1, tf):
        obj = root
        try:
            for part in parts:
                obj = getattr(obj, part)
        except Exception:  # noqa: BLE001 (missing attribute or failing lazy module)
            continue
        return obj
    return None


def _measure_call(tf, func, build_args, tmpdir):
    """Graph.version delta of one call in a fresh graph, or the exception it raised."""
    with tf.Graph().as_default() as graph:
        env = _verify_env(tf, tmpdir)
        args, kwargs = build_args(env)
        before = graph.version
        try:
            result = func(*args, **kwargs)
            if hasattr(result, "__enter__") and hasattr(result, "__exit__") and not hasattr(result, "run"):
                _enter(result)
            if hasattr(result, "close") and hasattr(result, "run"):
                result.close()
        except Exception as exc:  # noqa: BLE001
            return None, f"{type(exc).__name__}: {str(exc)[:100]}"
        return graph.version - before, None


def _check_reset(tf, name):
    func = _resolve_api(tf, name)
    old = tf.compat.v1.get_default_graph()
    func()
    return tf.compat.v1.get_default_graph() is not old


def _check_finalized_steps(tf, tmpdir) -> int:
    """Saver.save/restore and Variable.load with objects built before ``Graph.finalize()``."""
    v1 = tf.compat.v1
    with tf.Graph().as_default() as graph:
        var = v1.Variable(1.0)
        saver = v1.train.Saver([var])
        init = v1.global_variables_initializer()
        graph.finalize()
        before = graph.version
        with v1.Session(graph=graph) as sess:
            sess.run(init)
            path = saver.save(sess, os.path.join(tmpdir, "finalized"))
            saver.restore(sess, path)
            var.load(2.0, sess)
        return graph.version - before


def verify() -> int:
    """Check the committed data against calls in fresh graphs; print mismatches; exit 1 if any."""
    tf = import_tensorflow()
    data = json.loads(OUTPUT.read_text())
    names = data["names"]
    mismatches: list[str] = []
    print("== expected effects of common training-loop names")
    for name, effect in EXPECTED.items():
        if names.get(name) != effect:
            mismatches.append(f"{name}: data says {names.get(name)}, expected {effect}")
    print(f"{len(EXPECTED)} names, {sum(names.get(n) == e for n, e in EXPECTED.items())} as expected")

    print("== sample calls (Graph.version delta in a fresh TF1-mode graph)")
    checked = agree = 0
    with tempfile.TemporaryDirectory() as tmpdir:
        for name, build_args in SAMPLE_CALLS.items():
            effect = names.get(name)
            func = _resolve_api(tf, name)
            if build_args is None or func is None:
                print(f"  {name:48} {effect:12} not called")
                continue
            with silenced_stderr():
                delta, error = _measure_call(tf, func, build_args, tmpdir)
            if error:
                print(f"  {name:48} {effect:12} ERROR {error}")
                mismatches.append(f"{name}: sample call failed: {error}")
                continue
            checked += 1
            builds = delta > 0
            ok = effect in UNCHECKED_EFFECTS or builds == (effect in BUILDING_EFFECTS)
            agree += ok
            print(f"  {name:48} {effect:12} +{delta:<4} {'ok' if ok else 'MISMATCH'}")
            if not ok:
                mismatches.append(f"{name}: effect {effect} but the call added {delta} ops")
        with tf.Graph().as_default() as graph:
            before = graph.version
            tf.compat.v1.train.get_or_create_global_step()
            delta = graph.version - before
        print(f"  {'tf.train.get_or_create_global_step':48} {names['tf.train.get_or_create_global_step']:12} +{delta} (first call)")
        for name in ("tf.reset_default_graph", "tf.keras.backend.clear_session"):
            replaced = _check_reset(tf, name)
            print(f"  {name:48} {names[name]:12} default graph replaced: {replaced}")
            if not replaced:
                mismatches.append(f"{name}: did not replace the default graph")
        print(f"{checked} calls measured, {agree} agree")

        print("== methods that run steps: Saver.save/restore and Variable.load on a finalized graph")
        try:
            delta = _check_finalized_steps(tf, tmpdir)
            print(f"  save, restore and load ran on the finalized graph, +{delta} ops")
            if "save" in data["methods"]["saver"] or "restore" in data["methods"]["saver"]:
                mismatches.append("saver: save/restore listed as op-building methods")
        except Exception as exc:  # noqa: BLE001
            mismatches.append(f"saver/variable: a step method failed on a finalized graph: {exc}")

        print("== every function and class, called with (), (x,), (x, x) or (x, 1)")
        mismatches += _broad_probe(tf, names, tmpdir)
    print(f"== {len(mismatches)} mismatches")
    for line in mismatches:
        print("  " + line)
    return 1 if mismatches else 0


def _broad_probe(tf, names, tmpdir) -> list[str]:
    v1 = tf.compat.v1
    attempts = (  # (how the call is shown, the arguments)
        ("()", lambda x: ()),
        ("(x)", lambda x: (x,)),
        ("(x, x)", lambda x: (x, x)),
        ("(x, 1)", lambda x: (x, 1)),
    )
    stats: dict[str, list[int]] = {}
    out: list[str] = []
    explained: list[str] = []
    for name in sorted(names):
        effect = names[name]
        if (
            effect in UNCHECKED_EFFECTS
            or effect == "file_writer"
            or name.startswith(PROBE_SKIP_PREFIXES)
            or PROBE_SKIP_PATTERN.search(name)
        ):
            continue
        func = _resolve_api(tf, name)
        if func is None or (inspect.isclass(func) and PROBE_SKIP_CLASSES.search(name)):
            continue
        for shown, attempt in attempts:
            with tf.Graph().as_default() as graph, silenced_stderr(), warnings.catch_warnings():
                warnings.simplefilter("ignore")
                x = v1.placeholder(tf.float32, [2, 2])
                before = graph.version
                try:
                    result = func(*attempt(x))
                except Exception:  # noqa: BLE001 (wrong dummy arguments: try the next ones)
                    continue
                if hasattr(result, "__enter__") and hasattr(result, "__exit__"):
                    try:
                        _enter(result)
                    except Exception:  # noqa: BLE001
                        pass
                delta = graph.version - before
            builds = delta > 0
            ok = builds == (effect in BUILDING_EFFECTS)
            row = stats.setdefault(effect, [0, 0, 0])
            call = f"{name.rpartition('.')[2]}{shown}"
            if ok:
                row[0] += 1
            elif name in ARGUMENT_DEPENDENT:
                row[1] += 1
                explained.append(f"{name}: {call} added {delta} ops ({ARGUMENT_DEPENDENT[name]})")
            else:
                row[2] += 1
                out.append(f"{name}: effect {effect} but {call} added {delta} ops")
            break
    for effect, (good, known, bad) in sorted(stats.items()):
        print(f"  {effect:12} {good + known + bad:5} called: {good:5} agree, {known:3} argument-dependent, {bad:3} disagree")
    print("argument-dependent (the dummy arguments, not the effect, explain the difference):")
    for line in explained:
        print("  " + line)
    return out


# --------------------------------------------------------------------------------------------------
# The file.
# --------------------------------------------------------------------------------------------------


def generate() -> dict:
    tf = import_tensorflow()
    names, returns, _rules, classifier = classify_api(tf)
    unused = sorted(set(OVERRIDES) - classifier.used_overrides)
    if unused:
        raise SystemExit(f"OVERRIDES name no public callable of TensorFlow {tf.__version__}: {', '.join(unused)}")
    with silenced_stderr():
        methods, _unmeasured = measure_methods(tf)
    reasons = {name: OVERRIDES[name][1] for name in sorted(classifier.used_overrides)}
    reasons.update({name: OBJECT_OVERRIDES[path][1] for name, path in classifier.object_overrides.items()})
    reasons.update({name: reason for name, (_effect, reason) in EXTRA_NAMES.items() if name in names})
    for kind, table in METHOD_OVERRIDES.items():
        for method, (_listed, reason) in table.items():
            reasons[f"methods.{kind}.{method}"] = reason
    return {
        "generator": "tools/generate_tf_api.py",
        "tensorflow_version": tf.__version__,
        "keras_version": importlib.metadata.version("keras"),
        "effects": EFFECTS,
        "names": names,
        "methods": methods,
        "returns": returns,
        "reasons": dict(sorted(reasons.items())),
    }


def describe_changes(old_text: str, new_text: str) -> list[str]:
    """What differs between two renderings, one line per changed entry."""
    try:
        old = json.loads(old_text) if old_text else {}
    except json.JSONDecodeError:
        return ["the committed file is not valid JSON"]
    new = json.loads(new_text)
    lines = []
    for key in ("tensorflow_version", "keras_version"):
        if old.get(key) != new.get(key):
            lines.append(f"{key}: {old.get(key)} -> {new.get(key)}")
    for section in ("names", "returns", "reasons", "methods"):
        before, after = old.get(section, {}), new.get(section, {})
        for name in sorted(set(before) | set(after)):
            if before.get(name) != after.get(name):
                lines.append(f"{section}[{name}]: {before.get(name)} -> {after.get(name)}")
    return lines or ["formatting only"]


def render(data: dict) -> str:
    return json.dumps(data, indent=1, sort_keys=True, ensure_ascii=True) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--output", type=Path, default=OUTPUT, help="where to write (default: %(default)s)")
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--check", action="store_true", help="exit 1 if the file differs from what would be generated")
    mode.add_argument("--verify", action="store_true", help="call sample names in fresh graphs and report mismatches")
    mode.add_argument("--explain", metavar="NAME", help="print the effect of NAME and the rule that decided it")
    mode.add_argument("--unmeasured", action="store_true", help="list methods the receivers could not call")
    args = parser.parse_args(argv)

    if args.verify:
        return verify()
    if args.explain:
        tf = import_tensorflow()
        names, returns, rules, classifier = classify_api(tf)
        name = args.explain
        if name not in names:
            print(f"{name}: not a public callable of TensorFlow {tf.__version__}")
            return 1
        if name in OVERRIDES:
            why = OVERRIDES[name][1]
        elif name in classifier.object_overrides:
            why = OBJECT_OVERRIDES[classifier.object_overrides[name]][1]
        elif name in EXTRA_NAMES:
            why = EXTRA_NAMES[name][1]
        else:
            why = RULE_NOTES.get(rules[name], rules[name])
        print(f"{name}: {names[name]} ({why}); returns: {returns.get(name) or '-'}")
        return 0
    if args.unmeasured:
        _methods, unmeasured = measure_methods(import_tensorflow())
        for kind, table in unmeasured.items():
            for method, why in table.items():
                print(f"{kind}.{method}: {why}")
        return 0

    text = render(generate())
    if args.check:
        try:
            current = args.output.read_text()
        except FileNotFoundError:
            current = ""
        if current == text:
            print(f"{args.output}: up to date")
            return 0
        print(f"{args.output}: out of date; run python tools/generate_tf_api.py", file=sys.stderr)
        for line in describe_changes(current, text)[:40]:
            print("  " + line, file=sys.stderr)
        return 1
    args.output.write_text(text)
    print(f"wrote {args.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
