"""What a moved expression reads and calls, and the names a fix gives: shared by the hoist
(:mod:`graphguard.fix.hoist`) and the placeholder fixes built on it (:mod:`graphguard.fix.feed`).

:func:`expression_reads` walks an expression with libcst and says which names it reads, whose
attributes or items, which TensorFlow names and project helpers it calls, and whether it creates
variables or opens files; it raises :class:`NotFixable` for what can never move (a session run, a
method of an unknown object, a variable creator, a graph reset). :func:`free_name` picks a name used
nowhere in the file.
"""

from __future__ import annotations

import builtins
from dataclasses import dataclass, field
from typing import Optional

import libcst as cst

from graphguard.analysis.catalog import Effect, effect_of
from graphguard.fix import source
from graphguard.fix.safety import PLACEHOLDERS as _PLACEHOLDERS
from graphguard.fix.source import PURE_BUILTINS, Region

#: TensorFlow names (canonical ``tf.`` spelling) that create variables: moved only as unsafe fixes.
VARIABLE_PREFIXES = ("tf.layers.", "tf.contrib.layers.", "tf.keras.", "tf.contrib.rnn.", "tf.nn.rnn_cell.", "tf.metrics.",
                      "tf.contrib.slim.", "tf.contrib.seq2seq.", "tf.estimator.")
VARIABLE_NAMES = frozenset({"tf.nn.dynamic_rnn", "tf.nn.static_rnn", "tf.nn.bidirectional_dynamic_rnn",
                             "tf.contrib.rnn.static_rnn", "tf.train.get_or_create_global_step",
                             "tf.train.create_global_step"})
#: Methods that create variables (optimizer slots, a global step) when called.
VARIABLE_METHODS = frozenset({"minimize", "apply_gradients"})
#: Effects whose builders may move; others (datasets and iterators: their state restarts; graph
#: imports; file writers: an event file each) are never moved.
MOVABLE = frozenset({Effect.OP, Effect.OPERATOR, Effect.CONSTANT, Effect.ASSIGN, Effect.SUMMARY, Effect.SAVER,
                      Effect.INITIALIZER, Effect.VARIABLE})
GRAPH_CHANGERS = frozenset({"tf.reset_default_graph", "tf.Graph", "tf.keras.backend.clear_session",
                             "tf.train.import_meta_graph", "tf.import_graph_def"})


class NotFixable(Exception):
    """Why a finding gets no fix (kept for the note and the tests)."""


class Walled(NotFixable):
    """A ``with`` statement (a session opened per iteration, a scope, a device) stands between the
    expression and a loop around it: the code cannot leave that loop, whatever it reads."""


class Varies(NotFixable):
    """The expression reads names a loop around the finding's loop assigns: it cannot leave that loop."""

    def __init__(self, names: list):
        super().__init__(f"it reads {', '.join(names)}, which the outer loop assigns")
        self.names = names


@dataclass
class Reads:
    names: set = field(default_factory=set)
    roots: set = field(default_factory=set)  #: names whose attributes or items the expression reads
    tf_calls: list = field(default_factory=list)  #: canonical TF names called
    helpers: list = field(default_factory=list)  #: project callables called (unsafe)
    creates_variables: bool = False
    opens_files: bool = False  #: a FileWriter: one event file instead of one per iteration


def expression_reads(module: Region, expr: cst.BaseExpression, trusted: Optional[cst.Call] = None) -> Reads:
    """What evaluating ``expr`` reads and calls; raises :class:`NotFixable` for what cannot move.
    ``trusted`` is a method call the analysis found to build graph ops itself (``var.assign_add(1)``,
    ``tensor.eval`` excluded): not taken for a helper."""
    reads = Reads()

    def visit(node: cst.CSTNode) -> None:
        if isinstance(node, (cst.Lambda, cst.ListComp, cst.SetComp, cst.DictComp, cst.GeneratorExp, cst.Yield,
                             cst.Await, cst.NamedExpr)):
            raise NotFixable("a lambda, comprehension or assignment expression inside it")
        if isinstance(node, cst.Name):
            reads.names.add(node.value)
            return
        if isinstance(node, cst.Attribute):
            dotted = source.dotted(node)
            root = source.root(node)
            if root is not None and root not in module.aliases:
                reads.roots.add(root)
            if dotted is None:
                visit(node.value)
                return
            reads.names.add(dotted.split(".")[0])
            return
        if isinstance(node, cst.Subscript):
            root = source.root(node.value)
            if root is not None:
                reads.roots.add(root)
        if isinstance(node, cst.Call):
            _call(node)
            for arg in node.args:
                visit(arg.value)
            visit_callee(node.func)
            return
        for child in node.children:
            visit(child)

    def visit_callee(func: cst.BaseExpression) -> None:
        if isinstance(func, (cst.Name, cst.Attribute)) and source.dotted(func) is not None:
            reads.names.add(source.dotted(func).split(".")[0])
        else:
            visit(func)

    def _call(node: cst.Call) -> None:
        dotted = source.dotted(node.func)
        if (node is trusted and isinstance(node.func, cst.Attribute) and node.func.attr.value not in ("run", "eval")
                and (dotted is None or dotted.split(".")[0] not in module.aliases)):
            if node.func.attr.value in VARIABLE_METHODS and not slotless(module, node.func.value):
                reads.creates_variables = True
            visit(node.func.value)
            reads.tf_calls.append("." + node.func.attr.value)  # a TensorFlow object's method
            return
        if dotted is None:  # a method on a result: tf.train.AdamOptimizer(lr).minimize(loss)
            if isinstance(node.func, cst.Attribute):
                visit(node.func.value)
                if node.func.attr.value in VARIABLE_METHODS and not slotless(module, node.func.value):
                    reads.creates_variables = True
                    return
            raise NotFixable("a call on a computed value")
        head, _, rest = dotted.partition(".")
        imported = module.aliases.get(head)
        if imported is not None:
            name = source.canonical(imported + ("." + rest if rest else ""))
            if name is None:
                if imported.split(".")[0] in ("numpy", "np") and ".random" not in "." + rest:
                    return  # NumPy computes values from its arguments (its random module does not)
                raise NotFixable(f"it calls {dotted}, whose code is in another module")
            effect = effect_of(name)
            if name in GRAPH_CHANGERS:
                raise NotFixable(f"{name} changes the graph")
            if effect is Effect.VARIABLE and name not in _PLACEHOLDERS:
                raise NotFixable(f"{name} creates a variable: create it once with the model, by hand")
            if effect is Effect.FILE_WRITER:
                reads.opens_files = True
            elif effect not in MOVABLE and effect is not Effect.NONE:
                raise NotFixable(f"{name} ({effect.value}) cannot move out of the loop")
            if name in VARIABLE_NAMES or name.startswith(VARIABLE_PREFIXES):
                reads.creates_variables = True
            reads.tf_calls.append(name)
            return
        if "." not in dotted and dotted in PURE_BUILTINS and dotted not in module.aliases:
            return
        if "." in dotted:
            method = dotted.rsplit(".", 1)[1]
            if method in VARIABLE_METHODS:
                reads.creates_variables = True
                return
            if method in ("run", "eval"):
                raise NotFixable("it runs the session")
            raise NotFixable(f"it calls the method {dotted}, which may do more than build ops")
        if not module.file.builds_only(dotted):
            raise NotFixable(f"it calls {dotted}, which does more than build ops (or is not defined in this file)")
        reads.helpers.append(dotted)

    visit(expr)
    return reads


WORDS = {cst.Add: "plus", cst.Subtract: "minus", cst.Multiply: "times", cst.Divide: "over",
          cst.FloorDivide: "floordiv", cst.Modulo: "mod", cst.Power: "pow", cst.MatrixMultiply: "matmul"}


def word(node: cst.BaseExpression) -> str:
    """A word for what ``node`` holds: a name, an attribute's name, a call's function name."""
    if isinstance(node, cst.Name):
        return node.value
    if isinstance(node, cst.Attribute):
        return node.attr.value
    if isinstance(node, cst.Subscript):
        return word(node.value)
    if isinstance(node, cst.Call):
        return word(node.func)
    return "value"


def free_name(module: Region, candidates: list[str]) -> str:
    """The first of ``candidates`` used nowhere in the file (nor given earlier in this pass, nor a
    builtin), else the first with the lowest free ``_2``, ``_3``... suffix; taken for this pass."""
    def used(name: str) -> bool:
        return name in module.identifiers or name in module.taken or hasattr(builtins, name)

    name = next((candidate for candidate in candidates if not used(candidate)), None)
    number = 2
    while name is None or used(name):
        name, number = f"{candidates[0]}_{number}", number + 1
    module.taken.add(name)
    return name


def slotless(module: Region, optimizer: cst.BaseExpression) -> bool:
    """Whether ``optimizer`` is built right there as plain gradient descent, whose ``minimize`` creates
    no variable (no slots; a ``global_step`` is passed in, not created)."""
    if not isinstance(optimizer, cst.Call):
        return False
    name = source.dotted(optimizer.func)
    head = name.split(".")[0] if name else None
    full = source.canonical(module.aliases[head] + name[len(head):]) if head in module.aliases else None
    return full in ("tf.train.GradientDescentOptimizer", "tf.keras.optimizers.SGD")


def makes_variables(name: str) -> bool:
    """Whether the TensorFlow name ``name`` (``tf.`` spelling) creates variables when called."""
    effect = effect_of(name)
    return ((effect is Effect.VARIABLE and name not in _PLACEHOLDERS) or effect is Effect.MODEL
            or name in VARIABLE_NAMES or name.startswith(VARIABLE_PREFIXES))
