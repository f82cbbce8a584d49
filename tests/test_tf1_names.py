"""TF 1.x names missing from the generated API data (graphguard/analysis/tf1_names.py) and how
catalog.effect_of uses them: tf.contrib and TF 0.x/1.x names classified from TF 1.x's sources, and
unknown names that build nothing."""

from __future__ import annotations

import pytest

from graphguard.analysis import catalog, tf1_names, tf_api
from graphguard.analysis.catalog import Effect

#: Names that build something when called, by group, with what they build.
BUILDS = {
    # contrib.layers / slim layers: variables and ops.
    "tf.contrib.layers.fully_connected": Effect.OP,
    "tf.contrib.layers.conv2d": Effect.OP,
    "tf.contrib.layers.batch_norm": Effect.OP,
    "tf.contrib.layers.flatten": Effect.OP,
    "tf.contrib.layers.optimize_loss": Effect.OP,
    "tf.contrib.layers.embed_sequence": Effect.OP,
    "tf.contrib.layers.apply_regularization": Effect.OP,
    "tf.contrib.layers.summarize_activation": Effect.SUMMARY,
    "tf.contrib.slim.conv2d": Effect.OP,
    "tf.contrib.slim.max_pool2d": Effect.OP,
    "tf.contrib.slim.fully_connected": Effect.OP,
    "tf.contrib.slim.dropout": Effect.OP,
    "tf.contrib.slim.flatten": Effect.OP,
    "tf.contrib.slim.repeat": Effect.OP,
    "tf.contrib.slim.layers.conv2d": Effect.OP,
    "tf.contrib.layers.python.layers.layers.conv2d": Effect.OP,  # internal module path
    # slim training, variables and checkpoints.
    "tf.contrib.slim.learning.create_train_op": Effect.OP,
    "tf.contrib.slim.model_variable": Effect.VARIABLE,
    "tf.contrib.framework.model_variable": Effect.VARIABLE,
    "tf.contrib.slim.create_global_step": Effect.VARIABLE,
    "tf.contrib.slim.assign_from_checkpoint_fn": Effect.SAVER,  # builds a Saver, returns a callback
    "tf.contrib.framework.assign_from_checkpoint": Effect.ASSIGN,
    "tf.contrib.slim.prefetch_queue.prefetch_queue": Effect.OP,
    # slim nets: the networks.
    "tf.contrib.slim.nets.resnet_v1.resnet_v1_50": Effect.OP,
    "tf.contrib.slim.nets.inception.inception_v3": Effect.OP,
    "tf.contrib.slim.python.slim.nets.vgg.vgg_16": Effect.OP,
    # rnn, seq2seq, crf, metrics, losses, training, legacy seq2seq.
    "tf.contrib.rnn.static_rnn": Effect.OP,
    "tf.contrib.rnn.static_bidirectional_rnn": Effect.OP,
    "tf.contrib.seq2seq.dynamic_decode": Effect.OP,
    "tf.contrib.seq2seq.sequence_loss": Effect.OP,
    "tf.contrib.seq2seq.tile_batch": Effect.OP,
    "tf.contrib.crf.crf_log_likelihood": Effect.OP,
    "tf.contrib.metrics.streaming_accuracy": Effect.OP,
    "tf.contrib.slim.metrics.streaming_mean": Effect.OP,
    "tf.contrib.losses.softmax_cross_entropy": Effect.OP,
    "tf.contrib.slim.losses.sparse_softmax_cross_entropy": Effect.OP,
    "tf.contrib.training.bucket_by_sequence_length": Effect.OP,
    "tf.contrib.legacy_seq2seq.sequence_loss_by_example": Effect.OP,
    "tf.nn.seq2seq.embedding_attention_seq2seq": Effect.OP,
    "tf.contrib.lookup.index_table_from_file": Effect.OP,
    # contrib modules that became core: the core name's effect.
    "tf.contrib.data.Dataset.from_tensor_slices": Effect.DATASET,
    "tf.contrib.data.Iterator.from_structure": Effect.ITERATOR,
    "tf.contrib.distributions.Normal": Effect.OP,
    # TF 0.x spellings: their TF 1.0 names' effect (tools/compatibility/tf_upgrade.py).
    "tf.histogram_summary": Effect.SUMMARY,
    "tf.merge_all_summaries": Effect.SUMMARY,
    "tf.sub": Effect.OP,
    "tf.pack": Effect.OP,
    "tf.concat_v2": Effect.OP,
    "tf.nn.rnn": Effect.OP,
    "tf.train.SummaryWriter": Effect.FILE_WRITER,
    # TF 1.x queue pipelines (in the generated data through tf.compat.v1).
    "tf.train.match_filenames_once": Effect.OP,
    "tf.train.string_input_producer": Effect.OP,
    "tf.train.batch": Effect.OP,
    # An optimizer's method called through its class (in a subclass).
    "tf.train.AdamOptimizer.compute_gradients": Effect.OP,
}

#: Names that build nothing: host-side utilities, lookups, configuration, their own loops.
BUILDS_NOTHING = [
    "tf.Session.reset",
    "tf.InteractiveSession.reset",
    "tf.train.Server.create_local_server",
    "tf.summary.FileWriterCache.get",
    "tf.contrib.slim.evaluation.wait_for_new_checkpoint",
    "tf.contrib.slim.evaluation.checkpoints_iterator",
    "tf.contrib.slim.evaluation.evaluation_loop",
    "tf.contrib.slim.evaluation.evaluate_once",
    "tf.contrib.training.checkpoints_iterator",
    "tf.contrib.slim.learning.train",
    "tf.contrib.slim.learning.train_step",
    "tf.contrib.slim.arg_scope",
    "tf.contrib.framework.arg_scope",
    "tf.contrib.framework.python.ops.arg_scope",
    "tf.contrib.slim.nets.resnet_v1.resnet_arg_scope",
    "tf.contrib.slim.nets.resnet_utils.resnet_arg_scope",
    "tf.contrib.slim.nets.inception.inception_v3_arg_scope",
    "tf.contrib.slim.nets.vgg.vgg_arg_scope",
    "tf.contrib.slim.python.slim.nets.vgg.vgg_arg_scope",
    "tf.contrib.slim.python.slim.nets.resnet_v1.resnet_v1_block",
    "tf.contrib.slim.get_or_create_global_step",
    "tf.contrib.framework.get_global_step",  # promoted: tf.train.get_global_step
    "tf.contrib.slim.get_variables_to_restore",
    "tf.contrib.slim.get_model_variables",
    "tf.contrib.framework.get_variables",
    "tf.contrib.layers.xavier_initializer",
    "tf.contrib.layers.xavier_initializer_conv2d",
    "tf.contrib.layers.variance_scaling_initializer",
    "tf.contrib.layers.l2_regularizer",
    "tf.contrib.slim.l2_regularizer",
    "tf.contrib.layers.real_valued_column",
    "tf.contrib.layers.python.layers.utils.collect_named_outputs",
    "tf.contrib.slim.model_analyzer.analyze_vars",
    "tf.contrib.slim.python.slim.data.parallel_reader.get_data_files",
    "tf.contrib.crf.viterbi_decode",
    "tf.contrib.metrics.aggregate_metric_map",
    "tf.contrib.framework.nest.map_structure",
    "tf.contrib.learn.preprocessing.VocabularyProcessor.restore",
    "tf.contrib.learn.datasets.load_dataset",
    "tf.contrib.eager.implicit_gradients",
    "tf.contrib.tensorrt.create_inference_graph",
    "tf.contrib.data.map_and_batch",  # a Dataset.apply transformation, built when applied
    "tf.contrib.keras.datasets.cifar10.load_data",
    "tf.examples.tutorials.mnist.input_data.read_data_sets",
    "tf.contrib.rnn.LSTMCell",  # a cell object: ops when it is called
    "tf.contrib.seq2seq.BasicDecoder",
]

#: Names no table knows: no longer guessed to build ops.
UNKNOWN = [
    "tf.contrib.somemodule.some_function",
    "tf.contrib.factorization.python.ops.clustering_ops.nearest_neighbors",
    "tf.image.roi_pooling",
    "tf.moments",
    "tf.keras.backend.image_dim_ordering",
]


@pytest.mark.parametrize("name", sorted(BUILDS))
def test_builds(name):
    assert catalog.effect_of(name) is BUILDS[name]
    assert catalog.effect_of(name).builds


@pytest.mark.parametrize("name", BUILDS_NOTHING)
def test_builds_nothing(name):
    assert catalog.effect_of(name) is Effect.NONE


@pytest.mark.parametrize("name", UNKNOWN)
def test_unknown_names_build_nothing(name):
    assert tf_api.load().effect(name) is None
    assert catalog.effect_of(name) is Effect.NONE


def test_generated_data_and_overrides_come_first():
    # Names TF 2.21's tf.compat.v1 still has keep their generated effect; OVERRIDES still win.
    assert catalog.effect_of("tf.train.get_or_create_global_step") is Effect.NONE
    assert catalog.effect_of("tf.initialize_all_variables") is Effect.INITIALIZER
    for name in tf1_names.TF1_EFFECTS:
        if name in catalog.OVERRIDES:
            assert catalog.effect_of(name) is catalog.OVERRIDES[name]


def test_table_names_are_canonical_and_missing_from_the_data():
    api = tf_api.load()
    for name, effect in tf1_names.TF1_EFFECTS.items():
        assert name.startswith("tf.") and isinstance(effect, Effect), name
        assert api.effect(name) is None, f"{name} is in tf_api.json: the table entry is never used"
    for old, new in tf1_names.RENAMED.items():
        assert api.effect(old) is None or old in ("tf.initialize_all_variables", "tf.initialize_variables",
                                                  "tf.initialize_local_variables", "tf.all_variables",
                                                  "tf.op_scope"), old
        assert catalog.effect_of(new) is not None


def test_prefix_rules_apply_to_functions_only():
    assert tf1_names.prefix_effect("tf.contrib.rnn.static_rnn") is Effect.OP
    assert tf1_names.prefix_effect("tf.contrib.rnn.GRUCell") is None
    assert catalog.result_kind("tf.contrib.rnn.GRUCell", catalog.effect_of("tf.contrib.rnn.GRUCell")) == "layer"


def test_internal_spellings():
    assert "tf.contrib.slim.nets.vgg.vgg_16" in tf1_names.candidates("tf.contrib.slim.python.slim.nets.vgg.vgg_16")
    assert "tf.contrib.layers.xavier_initializer" in tf1_names.candidates(
        "tf.contrib.layers.python.layers.initializers.xavier_initializer")
    assert "tf.contrib.slim.parallel_reader.get_data_files" in tf1_names.candidates(
        "tf.contrib.slim.python.slim.data.parallel_reader.get_data_files")
