"""Where a hoisted statement goes: just before its loop, or above the ``with`` blocks around the loop
that only open a session or a guard, when nothing in the region crossed could see the difference.

Used by :mod:`graphguard.fix.hoist` (the loop-invariant move) and :mod:`graphguard.fix.feed` (a
placeholder built once). Code climbs above a statement only when
that statement binds or reads none of the names the moved code reads or binds, changes none of them
(``model.build()``), builds nothing a Saver or initializer would capture, and reads no graph collection
the moved code would join.
"""

from __future__ import annotations

import ast
import builtins
import re
from typing import Optional

import libcst as cst

from graphguard.fix import source
from graphguard.fix.reads import makes_variables
from graphguard.fix.safety import adds_to_collections, tf_name
from graphguard.fix.safety import reads_collections as _reads_collections
from graphguard.fix.source import EFFECT_METHODS, Region


#: What a context manager that changes where or how ops are built looks like (hoisted code stays inside
#: it): a graph made default, a name or variable scope, a device, control dependencies, a session on
#: another graph (``graph=``), a gradient tape.
_GRAPH_CONTEXTS = re.compile(r"as_default|_scope\(|\.scope\(|device\(|control_dependencies|colocate_with|Graph\(|"
                             r"graph\s*=|gradient_override_map|GradientTape")


def hoist_point(module: Region, loop: cst.CSTNode, names: set, capturing: frozenset = frozenset(),
                floor: Optional[cst.CSTNode] = None, collecting: frozenset = frozenset(),
                target: Optional[str] = None) -> cst.CSTNode:
    """The statement the hoisted code goes before: the loop, or the outermost ``with`` statements
    wrapping it that only open sessions or guards (``with tf.Session() as sess:``, ``with
    GraphGuard(sess) as guarded:``, which finalizes the graph), when the hoisted code reads nothing they
    bind. Graph, scope and device contexts are never left, nor any context graphguard does not know
    leaves the graph alone (``with sess:`` enters the session's graph). ``capturing``: the collections
    code that captures what the graph holds reads (a Saver and an initializer the variables,
    ``merge_all()`` the summaries); it does not climb above a call before the loop that may add to them
    (a layer, a helper graphguard cannot see into) or that reads the whole graph (``FileWriter(logdir,
    sess.graph)``): it would miss what that builds. ``sess.run(tf.global_variables_initializer())`` adds
    to none, so a Saver climbs above it, where ``MonitoredSession`` and finalize mode need it (a
    fourteenth new user's trial). ``floor``: a statement moved earlier in the pass whose name the code
    reads, which it must stay below. ``collecting``: the graph collections the code adds to
    (:func:`graphguard.fix.safety.adds_to_collections`: summaries, variables, ``tf.losses`` losses); it
    does not climb above a statement that reads one of them (``merge_all()``, an initializer, a
    ``Saver``): it would join what that reads (a summary that needs a feed in ``merge_all()``).
    ``target``: the name a moved ``target = ...`` binds, which no statement it climbs above may read or
    bind (``print(sess.run(y))`` there would print the new ``y``: issue 36's audit)."""
    anchor = loop
    node = module.parents.get(loop)
    while isinstance(node, cst.IndentedBlock) and anchor is not floor:
        owner = module.parents.get(node)
        if not isinstance(owner, cst.With) or owner.body is not node:
            break
        if not all(_leaves_graph_alone(module, item.item) for item in owner.items):
            break
        bound = set()
        for item in owner.items:
            if item.asname is not None:
                bound |= {n.value for n in source.names_in(item.asname.name)}
        index = next(i for i, statement in enumerate(node.body) if statement is anchor)
        for statement in node.body[:index]:
            bound |= source.assigned_names(statement)
        if bound & names or "*" in bound:
            break
        if target and (target in bound or any(source.mentions(statement, target) for statement in node.body[:index])):
            break
        if any(_may_change(statement, names - module.aliases.keys()) for statement in node.body[:index]):
            break  # ``model.build()`` or ``ops["y"] = ...`` before the loop makes what the code reads
        if capturing and any(_may_add(module, call, capturing) for statement in node.body[:index]
                             for call in source.calls(statement)):
            break
        if collecting and any(_reads_collections(module, call, collecting) for statement in node.body[:index]
                              for call in source.calls(statement)):
            break
        anchor = owner
        node = module.parents.get(owner)
    return anchor


#: Context managers that open a session or guard one and leave the default graph as it is (without a
#: ``graph=`` argument), by their last name.
_SESSION_CONTEXTS = frozenset({"Session", "InteractiveSession", "MonitoredTrainingSession", "MonitoredSession",
                               "SingularMonitoredSession", "managed_session", "GraphGuard", "nullcontext",
                               "TemporaryDirectory", "open"})


def _leaves_graph_alone(module: Region, item: cst.BaseExpression) -> bool:
    """Whether the ``with`` item ``item`` is known to leave the default graph, name scope and device as
    they are: a session or guard opened there (``tf.Session(config=...)``, ``GraphGuard(sess)``), a
    temporary folder or file, or a function of this file whose code enters no graph, scope or device.
    Anything else (``with sess:``, ``with ctx:``, ``with tf.GradientTape():``) may not."""
    if not isinstance(item, cst.Call):
        return False
    code = module.module.code_for_node(item)
    if _GRAPH_CONTEXTS.search(code):
        return False
    name = source.dotted(item.func)
    if name is None:
        return False
    last = name.rsplit(".", 1)[-1]
    if last in _SESSION_CONTEXTS:
        # ``tf.Session("", g)`` (target, graph, config) and ``tf.Session(**options)`` may name a graph,
        # which the session's ``with`` makes the default: ops built inside belong to it
        sessions = last in ("Session", "InteractiveSession")
        return not (sessions and (len(item.args) >= 2 or any(arg.star for arg in item.args)))
    function = module.file.functions.get(name)
    if function is None:
        return False
    return not _GRAPH_CONTEXTS.search(ast.get_source_segment(module.text, function) or "Graph")


def _may_change(statement: cst.CSTNode, names: set) -> bool:
    """Whether ``statement`` may change what an expression reading ``names`` finds: it assigns into an
    attribute or item of one of them (``m.z = ...``, ``ops["y"] = ...``), or calls something that is
    handed one of them or is a method of one (``model.build()``, ``ops.update(...)``, ``build(model)``),
    other than a session run, an ``eval`` or a builtin. Found by a new user: a safe fix moved
    ``tf.argmax(model.logits, 1)`` above ``with tf.Session():`` whose body first ran ``model.build()``."""
    for node in source.nodes(statement, cst.BaseSmallStatement):
        targets = ([t.target for t in node.targets] if isinstance(node, cst.Assign)
                   else [node.target] if isinstance(node, (cst.AugAssign, cst.AnnAssign)) else [])
        if any(isinstance(t, (cst.Attribute, cst.Subscript)) and any(n.value in names for n in source.names_in(t))
               for target in targets for t in source.nodes(target, cst.BaseExpression)):
            return True
    for call in source.calls(statement):
        func = call.func
        if isinstance(func, cst.Attribute) and func.attr.value in ("run", "eval"):
            continue
        if isinstance(func, cst.Name) and hasattr(builtins, func.value):
            continue
        if any(n.value in names for n in source.names_in(call)):
            return True
    return False


def _may_add(module: Region, call: cst.Call, kinds: frozenset) -> bool:
    """Whether ``call``, made before the loop, may change what code reading the collections ``kinds``
    finds when it is built: it may add to them (a variable, a layer, a summary), graphguard cannot
    tell what it builds (a helper, a method), or it reads the whole graph (``sess.graph``,
    ``get_default_graph()``: a FileWriter writing the graph out). A session run, a save, a print, a
    builtin, and TensorFlow calls that join none of ``kinds`` (an initializer) do not."""
    if _only_runs(call):
        return False
    name = tf_name(module, call)
    if name is None:
        return True
    if any(_WHOLE_GRAPH.search(module.module.code_for_node(arg.value)) for arg in call.args):
        return True
    return bool(adds_to_collections([name], makes_variables(name)) & kinds)


#: An argument that hands a call the whole graph.
_WHOLE_GRAPH = re.compile(r"\.graph\b|get_default_graph|as_graph_def")


def _only_runs(call: cst.Call) -> bool:
    """A call that builds no op: a session run, a save, a print, a builtin."""
    if isinstance(call.func, cst.Attribute):
        return call.func.attr.value in EFFECT_METHODS
    return isinstance(call.func, cst.Name) and hasattr(builtins, call.func.value)
