"""TensorFlow 1.x names that TF 2.21's API (``tf_api.json``) no longer has, classified from TF 1.x's sources.

``tf.contrib.*`` (removed in TF 2.0) and the TF 0.x spellings renamed for TF 1.0 are missing from the
generated data. Instead of guessing from the layout of a name, each name here was classified by
reading its TF 1.x source (``tensorflow/tensorflow`` at r1.15 for ``tensorflow/contrib``; the
``google-research/tf-slim`` package, whose first commits are a verbatim copy of r1.15's
``contrib/slim``, ``contrib/layers``, ``contrib/framework`` variables and ``contrib/training``, for
the slim and layers bodies). :mod:`graphguard.analysis.catalog` consults these tables after its
``OVERRIDES`` and ``tf_api.json``; a name found nowhere builds nothing as far as graphguard is
concerned (``Effect.NONE``), so an unknown name never produces a finding.

Four tables:

* :data:`TF1_EFFECTS`: canonical name -> :class:`~graphguard.analysis.catalog.Effect`;
* :data:`RENAMED`: a TF 0.x name -> its TF 1.0 name, whose effect it has;
* :data:`TWIN_MODULES`: a contrib module -> the core module it became, whose names it shares when
  the core name is in the generated data;
* :data:`TF1_PREFIXES`: a module whose every public *function* (lowercase name) does the same.

Spellings: a name reached through TF 1.x's internal module paths is looked up under its public
spelling too (:func:`candidates`): ``tf.contrib.layers.python.layers.layers.conv2d`` as
``tf.contrib.layers.conv2d``, ``tf.contrib.slim.python.slim.nets.vgg.vgg_16`` as
``tf.contrib.slim.nets.vgg.vgg_16``.
"""

from __future__ import annotations

from graphguard.analysis.effects import Effect

NONE = Effect.NONE
OP = Effect.OP
SAVER = Effect.SAVER
INITIALIZER = Effect.INITIALIZER
ASSIGN = Effect.ASSIGN
CONSTANT = Effect.CONSTANT
VARIABLE = Effect.VARIABLE
SUMMARY = Effect.SUMMARY
FILE_WRITER = Effect.FILE_WRITER


def _names(prefixes: tuple[str, ...], names: str, effect: Effect) -> dict[str, Effect]:
    """Every ``prefix + name`` for the space-separated ``names``, with ``effect``."""
    return {prefix + name: effect for prefix in prefixes for name in names.split()}


#: How TF 1.x code spells the modules of contrib.layers: ``slim`` re-exports all of it
#: (contrib/slim/__init__.py: ``from tensorflow.contrib.layers.python.layers import *``).
_LAYERS = ("tf.contrib.layers.", "tf.contrib.slim.", "tf.contrib.slim.layers.")
#: contrib.framework's variables and arg_scope, also re-exported by slim (contrib/slim/__init__.py).
_FRAMEWORK = ("tf.contrib.framework.", "tf.contrib.slim.", "tf.contrib.slim.variables.")
#: contrib.training and slim.learning share their training helpers (slim's learning.py calls training's).
_TRAINING = ("tf.contrib.training.", "tf.contrib.slim.learning.")
#: The slim nets, through ``slim.nets`` or ``from tensorflow.contrib.slim.nets import resnet_v1``.
_NETS = "tf.contrib.slim.nets."

TF1_EFFECTS: dict[str, Effect] = {
    # contrib/layers/python/layers/layers.py (__all__): each creates its variables and ops.
    **_names(_LAYERS, "avg_pool2d avg_pool3d batch_norm bias_add conv1d conv2d conv2d_in_plane conv2d_transpose "
                      "conv3d conv3d_transpose convolution convolution1d convolution2d convolution2d_in_plane "
                      "convolution2d_transpose convolution3d convolution3d_transpose dense_to_sparse dropout elu "
                      "flatten fully_connected gdn images_to_sequence layer_norm legacy_fully_connected legacy_linear "
                      "legacy_relu linear max_pool2d max_pool3d maxout one_hot_encoding pool relu relu6 repeat "
                      "scale_gradient separable_conv2d separable_convolution2d sequence_to_images softmax "
                      "spatial_softmax stack unit_norm", OP),
    # contrib/layers/python/layers/normalization.py, embedding_ops.py, encoders.py, feature_column_ops.py,
    # rev_block_lib.py, ops/bucketization_op.py, ops/sparse_feature_cross_op.py, ops/sparse_ops.py: build ops.
    **_names(_LAYERS, "group_norm instance_norm embed_sequence bow_encoder embedding_lookup_unique "
                      "safe_embedding_lookup_sparse scattered_embedding_lookup scattered_embedding_lookup_sparse "
                      "embedding_lookup_sparse_with_distributed_aggregation input_from_feature_columns "
                      "sequence_input_from_feature_columns weighted_sum_from_feature_columns "
                      "joint_weighted_sum_from_feature_columns parse_feature_columns_from_examples "
                      "parse_feature_columns_from_sequence_examples transform_features rev_block bucketize "
                      "sparse_feature_cross dense_to_sparse_tensor indicators_to_sparse_ids sparse_row_envelope", OP),
    # contrib/layers/python/layers/optimizers.py: optimize_loss builds gradients and the train op;
    # adaptive_clipping_fn returns a function.
    **_names(_LAYERS, "optimize_loss", OP),
    **_names(_LAYERS, "adaptive_clipping_fn", NONE),
    # contrib/layers/python/layers/regularizers.py: the *_regularizer functions return a function (no op
    # until it is applied); apply_regularization applies one and adds the penalty ops.
    **_names(_LAYERS, "l1_regularizer l2_regularizer l1_l2_regularizer sum_regularizer", NONE),
    **_names(_LAYERS, "apply_regularization", OP),
    # contrib/layers/python/layers/initializers.py: return an initializer function.
    **_names(_LAYERS, "xavier_initializer xavier_initializer_conv2d variance_scaling_initializer", NONE),
    # contrib/layers/python/layers/summaries.py: summary ops.
    **_names(_LAYERS, "summarize_activation summarize_activations summarize_biases summarize_collection "
                      "summarize_tensor summarize_tensors summarize_variables summarize_weights", SUMMARY),
    # contrib/layers/python/layers/feature_column.py: column descriptions (Python objects); the
    # placeholders helper makes placeholders.
    **_names(_LAYERS, "real_valued_column sparse_column_with_hash_bucket sparse_column_with_keys "
                      "sparse_column_with_vocabulary_file sparse_column_with_integerized_feature "
                      "weighted_sparse_column embedding_column shared_embedding_columns one_hot_column "
                      "bucketized_column crossed_column scattered_embedding_column create_feature_spec_for_parsing "
                      "infer_real_valued_columns check_feature_columns", NONE),
    **_names(_LAYERS, "make_place_holder_tensors_for_base_features", VARIABLE),
    # contrib/layers/python/layers/utils.py: collection and static-shape helpers; smart_cond builds a cond.
    **_names(("tf.contrib.layers.utils.", "tf.contrib.slim.utils."),
             "collect_named_outputs convert_collection_to_dict get_variable_collections append_tensor_alias "
             "gather_tensors_aliases get_tensor_aliases constant_value static_cond channel_dimension "
             "last_dimension two_element_tuple n_positive_integers", NONE),
    **_names(("tf.contrib.layers.utils.", "tf.contrib.slim.utils."), "smart_cond", OP),
    # contrib/framework/python/ops/variables.py: variable makers, collection lookups (lists of existing
    # variables), and the checkpoint helpers. assign_from_checkpoint_fn builds a tf.train.Saver for the
    # variables and returns a callback that restores it; assign_from_checkpoint/assign_from_values build
    # placeholders and assign ops.
    **_names(_FRAMEWORK, "model_variable variable local_variable global_variable create_global_step", VARIABLE),
    **_names(_FRAMEWORK, "add_model_variable assert_global_step assert_or_get_global_step filter_variables "
                         "get_local_variables get_model_variables get_trainable_variables get_unique_variable "
                         "get_variable_full_name get_variables get_variables_by_name get_variables_by_suffix "
                         "get_variables_to_restore VariableDeviceChooser", NONE),
    **_names(_FRAMEWORK, "assign_from_checkpoint assign_from_values assign_from_values_fn", ASSIGN),
    **_names(_FRAMEWORK, "assign_from_checkpoint_fn", SAVER),
    **_names(_FRAMEWORK, "zero_initializer", INITIALIZER),
    # contrib/framework/python/ops/arg_scope.py: context manager and decorators.
    **_names(_FRAMEWORK, "arg_scope add_arg_scope current_arg_scope has_arg_scope arg_scoped_arguments "
                         "arg_scope_func_key", NONE),
    # contrib/framework/python/framework/tensor_util.py, checkpoint_utils.py, ops.py, deprecation
    # re-exports: static checks and name helpers are host-side; the shape asserts and sort build ops.
    **_names(("tf.contrib.framework.",), "get_name_scope get_graph_from_inputs prepend_name_scope "
                                         "strip_name_scope deprecated deprecated_args deprecated_arg_values "
                                         "is_tensor assert_same_float_dtype assert_scalar_int "
                                         "is_numeric_tensor", NONE),
    **_names(("tf.contrib.framework.",), "reduce_sum_n remove_squeezable_dimensions with_shape with_same_shape "
                                         "sort is_non_decreasing is_strictly_increasing assert_scalar", OP),
    **_names(("tf.contrib.framework.",), "convert_to_tensor_or_sparse_tensor", CONSTANT),
    # contrib/slim/python/slim/learning.py and contrib/training/python/training/training.py:
    # create_train_op builds gradients and the update op; train() opens its own Supervisor /
    # MonitoredTrainingSession and runs the loop itself (its default Saver and init ops are made once
    # per call, as tf.train.Supervisor's, which catalog.OVERRIDES also leaves out); train_step runs
    # ops built beforehand.
    **_names(_TRAINING, "create_train_op clip_gradient_norms multiply_gradients", OP),
    **_names(_TRAINING, "add_gradients_summaries", SUMMARY),
    **_names(_TRAINING, "train train_step clip_gradient_norms_fn", NONE),
    # contrib/slim/python/slim/evaluation.py and contrib/training/python/training/evaluation.py:
    # checkpoints_iterator/wait_for_new_checkpoint poll a folder (time.sleep, latest_checkpoint);
    # evaluate_once/evaluation_loop/evaluate_repeatedly run their own MonitoredSession;
    # get_or_create_eval_step makes its variable once per graph (like get_or_create_global_step).
    **_names(("tf.contrib.slim.evaluation.", "tf.contrib.training."),
             "checkpoints_iterator wait_for_new_checkpoint evaluate_once evaluation_loop evaluate_repeatedly "
             "get_or_create_eval_step", NONE),
    # contrib/training/python/training/bucket_ops.py, sampling_ops.py, resample.py,
    # sequence_queueing_state_saver.py: queue-based input pipelines.
    **_names(("tf.contrib.training.",), "bucket bucket_by_sequence_length batch_sequences_with_states "
                                        "rejection_sample resample_at_rate stratified_sample "
                                        "stratified_sample_unknown_dist weighted_resample", OP),
    # contrib/slim/python/slim/data/prefetch_queue.py, parallel_reader.py, dataset_data_provider.py: the
    # readers and queues of slim's input pipeline (DatasetDataProvider's constructor calls parallel_read);
    # get_data_files globs file names.
    **_names(("tf.contrib.slim.prefetch_queue.",), "prefetch_queue", OP),
    **_names(("tf.contrib.slim.parallel_reader.",), "parallel_read single_pass_read", OP),
    **_names(("tf.contrib.slim.parallel_reader.",), "get_data_files", NONE),
    **_names(("tf.contrib.slim.dataset_data_provider.",), "DatasetDataProvider", OP),
    # contrib/slim/python/slim/nets/*.py: the *_arg_scope functions return a dict of layer defaults
    # (they make regularizer functions, no op); resnet_v*_block returns a Block namedtuple. The network
    # functions themselves build ops (TF1_PREFIXES).
    **{f"{_NETS}{module}.{name}": NONE for module, names in (
        ("alexnet", "alexnet_v2_arg_scope"),
        ("inception", "inception_v1_arg_scope inception_v2_arg_scope inception_v3_arg_scope"),
        ("inception_v1", "inception_v1_arg_scope"),
        ("inception_v2", "inception_v2_arg_scope"),
        ("inception_v3", "inception_v3_arg_scope"),
        ("overfeat", "overfeat_arg_scope"),
        ("resnet_utils", "resnet_arg_scope Block"),
        ("resnet_v1", "resnet_arg_scope resnet_v1_block"),
        ("resnet_v2", "resnet_arg_scope resnet_v2_block"),
        ("vgg", "vgg_arg_scope"),
    ) for name in names.split()},
    # contrib/crf/python/ops/crf.py: viterbi_decode is NumPy ("outside of TensorFlow"); the rest build ops.
    "tf.contrib.crf.viterbi_decode": NONE,
    # contrib/metrics/python/ops/metric_ops.py: the aggregate helpers regroup (value, update) pairs.
    **_names(("tf.contrib.metrics.", "tf.contrib.slim.metrics."), "aggregate_metrics aggregate_metric_map", NONE),
    # contrib/losses/python/losses/loss_ops.py: collection lookups; get_total_loss sums with add_n.
    **_names(("tf.contrib.losses.", "tf.contrib.slim.losses."), "add_loss get_losses get_regularization_losses",
             NONE),
    # contrib/learn/python/learn/learn_io/graph_io.py: queue-based readers (the rest of contrib.learn is
    # host-side: TF1_PREFIXES).
    **_names(("tf.contrib.learn.", "tf.contrib.learn.io."),
             "read_batch_examples read_batch_features read_batch_record_features read_keyed_batch_examples "
             "read_keyed_batch_features read_keyed_batch_examples_shared_queue "
             "read_keyed_batch_features_shared_queue", OP),
    # contrib/lookup/lookup_ops.py (re-exported from python/ops/lookup_ops.py): build a table op.
    **_names(("tf.contrib.lookup.",), "index_table_from_file index_table_from_tensor index_to_string_table_from_file "
                                      "index_to_string_table_from_tensor index_to_string", OP),
    # contrib/tpu/python/tpu/tpu.py, tpu_estimator.py: graph rewrites that build the TPU computation.
    **_names(("tf.contrib.tpu.",), "rewrite shard batch_parallel replicate outside_compilation initialize_system "
                                   "shutdown_system model_fn_inference_on_tpu", OP),
    # contrib/memory_stats/python/ops/memory_stats_ops.py: CamelCase functions that build one op each.
    **_names(("tf.contrib.memory_stats.",), "BytesInUse BytesLimit MaxBytesInUse", OP),
    # contrib/summary/summary.py (python/ops/summary_ops_v2.py): v2 summary ops and their writer.
    **_names(("tf.contrib.summary.",), "scalar histogram image audio generic", SUMMARY),
    **_names(("tf.contrib.summary.",), "create_file_writer", FILE_WRITER),
    # contrib/quantize/python/quantize_graph.py: rewrite the default graph with fake-quant ops.
    **_names(("tf.contrib.quantize.",), "create_training_graph create_eval_graph "
                                        "experimental_create_training_graph experimental_create_eval_graph", OP),
    # contrib/util/__init__.py (python/framework/tensor_util.py): protobuf helpers.
    **_names(("tf.contrib.util.",), "make_tensor_proto make_ndarray constant_value", NONE),
    # python/ops/rnn.py at r0.12: the static RNNs before they moved to tf.contrib.rnn / tf.nn.static_rnn.
    **_names(("tf.nn.",), "rnn bidirectional_rnn state_saving_rnn", OP),
    # python/ops/nn_ops.py before r0.7: deconv2d, later conv2d_transpose.
    "tf.nn.deconv2d": OP,
    # python/client/session.py: Session.reset(target) is a static method that clears resource
    # containers on a server; it builds nothing (the generated data lists no static methods of Session).
    "tf.Session.reset": NONE,
    "tf.InteractiveSession.reset": NONE,
    # python/training/server_lib.py: a static method that starts an in-process server.
    "tf.train.Server.create_local_server": NONE,
    # python/summary/writer/writer_cache.py: FileWriterCache.get returns the one cached writer per
    # logdir (no new event file after the first call); clear closes them.
    "tf.summary.FileWriterCache.get": NONE,
    "tf.summary.FileWriterCache.clear": NONE,
    # examples/tutorials/mnist/input_data.py (contrib/learn/python/learn/datasets/mnist.py): NumPy arrays.
    "tf.examples.tutorials.mnist.input_data.read_data_sets": NONE,
}

#: TF 0.x names and their TF 1.0 names (tools/compatibility/tf_upgrade.py, ``symbol_renames``): the
#: old name does what the new one does (``tf.histogram_summary`` is ``tf.summary.histogram``).
RENAMED: dict[str, str] = {
    "tf.inv": "tf.reciprocal",
    "tf.contrib.deprecated.scalar_summary": "tf.summary.scalar",
    "tf.contrib.deprecated.histogram_summary": "tf.summary.histogram",
    "tf.listdiff": "tf.setdiff1d",
    "tf.list_diff": "tf.setdiff1d",
    "tf.mul": "tf.multiply",
    "tf.neg": "tf.negative",
    "tf.sub": "tf.subtract",
    "tf.train.SummaryWriter": "tf.summary.FileWriter",
    "tf.scalar_summary": "tf.summary.scalar",
    "tf.histogram_summary": "tf.summary.histogram",
    "tf.audio_summary": "tf.summary.audio",
    "tf.image_summary": "tf.summary.image",
    "tf.merge_summary": "tf.summary.merge",
    "tf.merge_all_summaries": "tf.summary.merge_all",
    "tf.image.per_image_whitening": "tf.image.per_image_standardization",
    "tf.all_variables": "tf.global_variables",
    "tf.initialize_all_variables": "tf.global_variables_initializer",
    "tf.initialize_variables": "tf.variables_initializer",
    "tf.initialize_local_variables": "tf.local_variables_initializer",
    "tf.batch_matrix_diag": "tf.matrix_diag",
    "tf.batch_band_part": "tf.matrix_band_part",
    "tf.batch_set_diag": "tf.matrix_set_diag",
    "tf.batch_matrix_transpose": "tf.matrix_transpose",
    "tf.batch_matrix_determinant": "tf.matrix_determinant",
    "tf.batch_matrix_inverse": "tf.matrix_inverse",
    "tf.batch_cholesky": "tf.cholesky",
    "tf.batch_cholesky_solve": "tf.cholesky_solve",
    "tf.batch_matrix_solve": "tf.matrix_solve",
    "tf.batch_matrix_triangular_solve": "tf.matrix_triangular_solve",
    "tf.batch_matrix_solve_ls": "tf.matrix_solve_ls",
    "tf.batch_self_adjoint_eig": "tf.self_adjoint_eig",
    "tf.batch_self_adjoint_eigvals": "tf.self_adjoint_eigvals",
    "tf.batch_svd": "tf.svd",
    "tf.batch_fft": "tf.fft",
    "tf.batch_ifft": "tf.ifft",
    "tf.batch_fft2d": "tf.fft2d",
    "tf.batch_ifft2d": "tf.ifft2d",
    "tf.batch_fft3d": "tf.fft3d",
    "tf.batch_ifft3d": "tf.ifft3d",
    "tf.select": "tf.where",
    "tf.complex_abs": "tf.abs",
    "tf.batch_matmul": "tf.matmul",
    "tf.pack": "tf.stack",
    "tf.unpack": "tf.unstack",
    "tf.op_scope": "tf.name_scope",
    # python/ops/array_ops.py at r1.0: concat_v2 became concat.
    "tf.concat_v2": "tf.concat",
}

#: A contrib module and the core module it became (its __init__.py re-exports the core code, or the
#: module was promoted in TF 1.x): a name takes its core twin's effect when the generated data has it.
#: contrib/data/__init__.py (-> tf.data, tf.data.experimental), contrib/keras/__init__.py (-> tf.keras),
#: contrib/distributions/__init__.py (python/ops/distributions/*), contrib/rnn/__init__.py
#: (python/ops/rnn_cell_impl.py), contrib/signal/__init__.py (-> tf.signal).
TWIN_MODULES: tuple[tuple[str, str], ...] = (
    ("tf.contrib.data.Dataset.", "tf.data.Dataset."),
    ("tf.contrib.data.Iterator.", "tf.data.Iterator."),
    ("tf.contrib.data.", "tf.data."),
    ("tf.contrib.data.", "tf.data.experimental."),
    ("tf.contrib.keras.", "tf.keras."),
    ("tf.contrib.distributions.", "tf.distributions."),
    ("tf.contrib.rnn.", "tf.nn.rnn_cell."),
    ("tf.contrib.signal.", "tf.signal."),
    ("tf.contrib.image.", "tf.image."),
)

#: Modules whose every public function (lowercase name; classes are left to the layout rule) does the
#: same thing. Longest prefix first; :data:`TF1_EFFECTS` and :data:`TWIN_MODULES` are checked before.
TF1_PREFIXES: tuple[tuple[str, Effect], ...] = (
    # contrib/slim/python/slim/nets/*.py: alexnet_v2, inception_v3(_base), resnet_v1_50, vgg_16,
    # conv2d_same, stack_blocks_dense, bottleneck...: build the network's variables and ops.
    (_NETS, OP),
    # contrib/slim/python/slim/model_analyzer.py: prints the ops and variables of the graph.
    ("tf.contrib.slim.model_analyzer.", NONE),
    # contrib/slim/python/slim/summaries.py: add_*_summary(ies) build summary ops.
    ("tf.contrib.slim.summaries.", SUMMARY),
    # contrib/rnn/python/ops/rnn.py, python/ops/rnn.py: static_rnn, static_bidirectional_rnn,
    # stack_bidirectional_(dynamic_)rnn, static_state_saving_rnn; the cells are classes.
    ("tf.contrib.rnn.", OP),
    # contrib/seq2seq/python/ops/decoder.py, loss.py, beam_search_decoder.py, attention_wrapper.py:
    # dynamic_decode, sequence_loss, tile_batch, gather_tree, hardmax, monotonic_attention, safe_cumprod.
    ("tf.contrib.seq2seq.", OP),
    # contrib/legacy_seq2seq/python/ops/seq2seq.py (TF 0.x tf.nn.seq2seq): every function builds a model.
    ("tf.contrib.legacy_seq2seq.", OP),
    ("tf.nn.seq2seq.", OP),
    # contrib/crf/python/ops/crf.py: crf_log_likelihood, crf_sequence_score, crf_log_norm, crf_decode...
    ("tf.contrib.crf.", OP),
    # contrib/metrics/python/ops/metric_ops.py, set_ops.py, confusion_matrix_ops.py: streaming_* make
    # their local variables and update ops.
    ("tf.contrib.metrics.", OP),
    ("tf.contrib.slim.metrics.", OP),
    # contrib/losses/python/losses/loss_ops.py, metric_learning/metric_loss_ops.py: loss ops.
    ("tf.contrib.losses.", OP),
    ("tf.contrib.slim.losses.", OP),
    # contrib/image/python/ops/image_ops.py, distort_image_ops.py: image ops.
    ("tf.contrib.image.", OP),
    # compiler/tf2xla/python/xla.py: wrappers around the XLA ops (gen_xla_ops).
    ("tf.compiler.tf2xla.python.xla.", OP),
    # contrib/framework/__init__.py exports python/util/nest.py: pure-Python structure utilities.
    ("tf.contrib.framework.nest.", NONE),
    # contrib/learn: Estimators (each builds its own graph), datasets (NumPy), preprocessing
    # (VocabularyProcessor), run configs; the queue readers are in TF1_EFFECTS.
    ("tf.contrib.learn.", NONE),
    # contrib/eager/python/tfe.py: eager-mode utilities; implicit_gradients & co. return a function.
    ("tf.contrib.eager.", NONE),
    # contrib/tensorrt/python/trt_convert.py: rewrite a GraphDef, not the live graph.
    ("tf.contrib.tensorrt.", NONE),
    # contrib/tensorboard/plugins/projector: writes a projector config file.
    ("tf.contrib.tensorboard.", NONE),
    # contrib/predictor, contrib/saved_model, contrib/cluster_resolver: host-side loaders and resolvers.
    ("tf.contrib.predictor.", NONE),
    ("tf.contrib.cluster_resolver.", NONE),
)
TF1_PREFIXES = tuple(sorted(TF1_PREFIXES, key=lambda item: -len(item[0])))


def candidates(name: str) -> list[str]:
    """``name`` and its public spellings, for names reached through TF 1.x's internal module paths.

    >>> candidates("tf.contrib.slim.python.slim.nets.vgg.vgg_arg_scope")
    ['tf.contrib.slim.python.slim.nets.vgg.vgg_arg_scope', 'tf.contrib.slim.nets.vgg.vgg_arg_scope']
    >>> candidates("tf.contrib.layers.python.layers.initializers.xavier_initializer")[-1]
    'tf.contrib.layers.xavier_initializer'
    """
    names = [name]
    slim_internal = "tf.contrib.slim.python.slim."
    if name.startswith(slim_internal):
        rest = name[len(slim_internal):]
        names.append("tf.contrib.slim." + (rest[len("data."):] if rest.startswith("data.") else rest))
    elif name.startswith("tf.contrib.") and ".python." in name:
        head, tail = name.split(".python.", 1)
        last = tail.rsplit(".", 1)[-1]
        if tail.startswith("layers.utils."):
            names.append(f"{head}.utils.{last}")
        names.append(f"{head}.{last}")
    for alias, target in (("tf.contrib.slim.initializers.", "tf.contrib.layers."),
                          ("tf.contrib.slim.regularizers.", "tf.contrib.layers.")):
        if name.startswith(alias):
            names.append(target + name[len(alias):])
    return names


def effect(name: str) -> Effect | None:
    """The effect of ``name`` in :data:`TF1_EFFECTS` (under any of its spellings), else None."""
    for spelling in candidates(name):
        found = TF1_EFFECTS.get(spelling)
        if found is not None:
            return found
    return None


def renamed(name: str) -> str | None:
    """The TF 1.0 name of a TF 0.x name (:data:`RENAMED`), else None."""
    return RENAMED.get(name)


def twins(name: str) -> list[str]:
    """The core names a contrib name may have become (:data:`TWIN_MODULES`), in order."""
    return [core + name[len(contrib):] for contrib, core in TWIN_MODULES if name.startswith(contrib)]


def prefix_effect(name: str) -> Effect | None:
    """The effect of a public function of a :data:`TF1_PREFIXES` module; None for classes and others."""
    for spelling in candidates(name):
        last = spelling.rsplit(".", 1)[-1]
        if not last[:1].islower():
            continue
        for prefix, found in TF1_PREFIXES:
            if spelling.startswith(prefix):
                return found
    return None
