"""What a TensorFlow call does to the graph: the :class:`Effect` every phase of the analysis speaks in.

A module of its own so that the tables that classify names (:mod:`graphguard.analysis.catalog`,
:mod:`graphguard.analysis.tf1_names`) both stand on it and neither imports the other back.
"""

from __future__ import annotations

import enum


class Effect(enum.Enum):
    """What calling a TensorFlow name (or evaluating an expression) does to the graph."""

    # Members are singletons compared by identity: hashed by it too, in C (``Enum.__hash__`` hashes the
    # name in Python, on every lookup in the sets and dicts keyed by effects, in phases 1 to 3).
    __hash__ = object.__hash__

    NONE = "none"  #: builds nothing (configuration, I/O, protobufs, context managers)
    OP = "op"  #: adds one or more ops to the default graph
    SAVER = "saver"  #: ``tf.train.Saver``: adds save/restore ops for every variable
    INITIALIZER = "initializer"  #: a variables initializer op
    ASSIGN = "assign"  #: an assign op (``tf.assign``, ``var.assign``)
    CONSTANT = "constant"  #: a constant holding the argument's data (``tf.constant``, ``tf.convert_to_tensor``)
    OPERATOR = "operator"  #: a Python operator or subscript on a tensor (``loss * 2``)
    VARIABLE = "variable"  #: a placeholder or variable
    GRAPH_IMPORT = "graph_import"  #: a whole imported graph (``import_meta_graph``)
    DATASET = "dataset"  #: a ``tf.data`` dataset
    ITERATOR = "iterator"  #: an iterator or its ``get_next`` op
    SUMMARY = "summary"  #: a v1 summary op (``tf.summary.scalar``, ``merge_all``)
    FILE_WRITER = "file_writer"  #: ``tf.summary.FileWriter``: an event file, no op
    SESSION = "session"  #: returns a session whose ``run`` is a step
    GRAPH = "graph"  #: returns a new ``tf.Graph``
    RESET = "reset"  #: replaces the default graph (``tf.reset_default_graph``)
    #: Not a call's effect: a loop that builds a model and opens a new session per iteration in the
    #: same default graph (``graph-not-reset-in-loop``).
    REBUILT_GRAPH = "rebuilt_graph"
    #: A Keras model (``tf.keras.Sequential``, ``Model``, ``load_model``, ``clone_model``, an
    #: application): repeated by *any* loop without a release, not only a session loop (GG201).
    MODEL = "model"
    #: Not a call's effect: every iteration's model kept in a container that outlives the loop (GG202).
    RETAINED = "retained"
    # TF 2 (eager) effects, repeated by any loop, never by a session loop (GG301-GG306):
    #: a Python number that changes per iteration passed to a ``tf.function``: a new trace per value
    RETRACE_ARGUMENT = "retrace_argument"
    #: a new ``tf.function`` object (``tf.function(f)``, a nested ``@tf.function`` def): traced on its first call
    NEW_FUNCTION = "new_function"
    #: Keras ``model.predict`` on one sample or one iteration's data: a data pipeline and a call per use
    PREDICT = "predict"
    #: Keras ``model.fit`` on one sample, a minibatch or one iteration's data: a data pipeline per step
    FIT = "fit"
    #: a variable, layer, optimizer or model made in a ``tf.function`` body on every trace
    TRACED_VARIABLE = "traced_variable"
    #: ``model.compile(...)`` or a new Keras optimizer: the training state rebuilt
    RECOMPILE = "recompile"

    @property
    def builds(self) -> bool:
        """True for the effects of calls that a rule reports when repeated in a session loop."""
        return self not in _NOT_SESSION_LOOP_EFFECTS


#: The TF 2 effects (GG301-GG306): any unbounded loop repeats them; a session loop alone does not matter.
EAGER_EFFECTS = frozenset({Effect.RETRACE_ARGUMENT, Effect.NEW_FUNCTION, Effect.PREDICT, Effect.TRACED_VARIABLE,
                           Effect.RECOMPILE, Effect.FIT})

_NOT_SESSION_LOOP_EFFECTS = frozenset({Effect.NONE, Effect.SESSION, Effect.GRAPH, Effect.RESET, Effect.REBUILT_GRAPH,
                                       Effect.MODEL, Effect.RETAINED, *EAGER_EFFECTS})
