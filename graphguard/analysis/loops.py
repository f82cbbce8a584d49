"""Find graph-building calls that repeat on every iteration of a session loop.

One :class:`SessionLoopVisitor` pass over a libcst module does all the work:

1. It keeps bindings (:mod:`graphguard.analysis.bindings`) in source order: imports of TensorFlow,
   aliases, sessions, graphs and objects that TensorFlow calls returned.
2. It keeps, per function body, the stack of loops that enclose the current node: ``for`` and
   ``while`` statements (``async`` too) and comprehensions. A ``for`` loop's iterable and a
   comprehension's first iterable are evaluated once, outside the loop; everything else inside is
   evaluated per iteration.
3. A *session step* (``S.run(...)``, ``S.partial_run(...)``, ``T.eval(...)``, ``OP.run(...)``) marks
   every loop of the current function that encloses it as a *session loop*.
4. A call that builds graph ops (per :mod:`graphguard.analysis.catalog`) inside a loop is recorded
   with the loops around it. After the pass, it becomes a :class:`Construction` when one of those
   loops is a session loop; the innermost such loop is the one reported.

Not findings: calls inside a graph made fresh in the same iteration (``with tf.Graph().as_default():``
inside the loop), calls in a loop whose iteration resets the default graph
(``tf.reset_default_graph()``), calls in a loop that runs no step (a tower loop before training),
and calls inside a nested ``def``/``lambda`` (they run only when called). The page
``docs/analysis.md`` explains these decisions with examples.

Only the outermost op-building call of an expression is reported as an op: ``tf.argmax(tf.nn.softmax(y), 1)``
is one finding. Savers and initializers are reported wherever they appear.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import libcst as cst

from graphguard.analysis import catalog
from graphguard.analysis.bindings import (
    OTHER,
    SESSION,
    GraphValue,
    Scope,
    TFName,
    TFObject,
    canonical_module,
    looks_like_session,
)
from graphguard.analysis.catalog import Effect

_STEP_METHODS = frozenset({"run", "partial_run"})
_STEP_KEYWORDS = frozenset({"feed_dict", "session"})


@dataclass(eq=False)
class Loop:
    """A loop in the code: ``node`` is the ``For``/``While`` statement or the ``CompFor`` clause."""

    node: cst.CSTNode
    runs_step: bool = False
    resets_graph: bool = False


@dataclass(frozen=True, eq=False)
class Construction:
    """A call that adds graph ops on every iteration of a session loop.

    ``node`` is the call expression, ``effect`` what it builds (op, Saver, initializer), ``func`` the
    callee expression as written, and ``loop`` the innermost enclosing session loop's node.
    """

    node: cst.Call
    effect: Effect
    func: cst.BaseExpression
    loop: cst.CSTNode


@dataclass(eq=False)
class _Candidate:
    node: cst.Call
    effect: Effect
    func: cst.BaseExpression
    loops: tuple
    fresh: frozenset


@dataclass(eq=False)
class _Frame:
    """Per function (or module) state: its scope, its loop stack and its fresh-graph contexts."""

    scope: Scope
    loops: list = field(default_factory=list)
    fresh: list = field(default_factory=list)  # one frozenset of Loop ids per active fresh graph


def _dotted(node: cst.BaseExpression) -> str | None:
    """``self.sess`` for an attribute chain of names, ``sess`` for a name, else None."""
    if isinstance(node, cst.Name):
        return node.value
    if isinstance(node, cst.Attribute):
        head = _dotted(node.value)
        return None if head is None else f"{head}.{node.attr.value}"
    return None


def _module_dotted(node: cst.BaseExpression) -> str:
    """Dotted text of an import's module expression (``Name`` or ``Attribute`` chain)."""
    if isinstance(node, cst.Name):
        return node.value
    if isinstance(node, cst.Attribute):
        return f"{_module_dotted(node.value)}.{node.attr.value}"
    return ""


class SessionLoopVisitor(cst.CSTVisitor):
    """One pass over a module; read :attr:`constructions` after ``module.visit(visitor)``."""

    def __init__(self) -> None:
        super().__init__()
        self._frames: list[_Frame] = [_Frame(Scope())]
        self._attributes: dict[str, object] = {}  # "self.sess" -> binding, file-wide
        self._candidates: list[_Candidate] = []
        self._op_depth = 0  # > 0 while inside a recorded op call: nested op calls are not reported
        self._open_op_calls: set[int] = set()  # ids of the op calls that raised _op_depth

    # ------------------------------------------------------------------ results

    @property
    def constructions(self) -> list[Construction]:
        """Every graph-building call that repeats in a session loop, in source order."""
        found = []
        for cand in self._candidates:
            for loop in reversed(cand.loops):
                if loop.runs_step:
                    if id(loop) not in cand.fresh and not loop.resets_graph:
                        found.append(Construction(cand.node, cand.effect, cand.func, loop.node))
                    break
        return found

    # ------------------------------------------------------------------ bindings

    @property
    def _frame(self) -> _Frame:
        return self._frames[-1]

    def _lookup(self, name: str):
        scopes = [f.scope for f in self._frames]
        innermost = scopes[-1]
        if name in innermost:
            return innermost[name]
        for scope in reversed(scopes[:-1]):
            if not scope.is_class and name in scope:
                return scope[name]
        return None

    def _bind(self, target: cst.BaseExpression, value) -> None:
        if isinstance(target, cst.Name):
            self._frame.scope[target.value] = value if value is not None else OTHER
        elif isinstance(target, (cst.Tuple, cst.List)):
            for element in target.elements:
                inner = element.value
                if isinstance(inner, cst.StarredElement):
                    inner = inner.value
                # ``a, b = tf.split(x, 2)``: every part of a TF result is a TF object too.
                self._bind(inner, value if isinstance(value, TFObject) else None)
        elif isinstance(target, cst.Attribute):
            dotted = _dotted(target)
            if dotted is not None:
                self._attributes[dotted] = value if value is not None else OTHER

    def resolve(self, node: cst.BaseExpression):
        """What ``node`` evaluates to, as a binding value, or None when unknown."""
        if isinstance(node, cst.Name):
            return self._lookup(node.value)
        if isinstance(node, cst.Attribute):
            base = self.resolve(node.value)
            if isinstance(base, TFName):
                return base.attribute(node.attr.value)
            dotted = _dotted(node)
            if dotted is not None and dotted in self._attributes:
                return self._attributes[dotted]
            if isinstance(base, GraphValue) and node.attr.value == "as_default":
                return base
            return None
        if isinstance(node, cst.Call):
            func = self.resolve(node.func)
            if isinstance(func, TFName):
                effect = catalog.effect_of(func.path)
                if effect is Effect.SESSION:
                    return SESSION
                if effect is Effect.GRAPH:
                    return GraphValue(frozenset(id(loop) for loop in self._frame.loops))
                if effect is Effect.NONE and func.path.rsplit(".", 1)[-1][:1].islower():
                    return None  # tf.get_default_graph(), tf.gfile.Glob(): not tensors
                return TFObject(func.path)
            if isinstance(func, GraphValue):  # g.as_default()
                return func
            if (
                isinstance(node.func, cst.Attribute)
                and node.func.attr.value not in _STEP_METHODS | {"eval"}
                and isinstance(self.resolve(node.func.value), TFObject)
            ):
                # A method of a TF object (opt.minimize(...), iterator.get_next()) returns TF objects;
                # T.eval() and OP.run() return NumPy values.
                return TFObject(node.func.attr.value)
            return None
        return None

    def visit_Import(self, node: cst.Import) -> bool:
        for alias in node.names:
            dotted = _module_dotted(alias.name)
            if alias.asname is not None:
                target = alias.asname.name
                canonical = canonical_module(dotted)
                self._bind(target, canonical)
            else:
                top = dotted.split(".")[0]
                self._frame.scope[top] = canonical_module(top) or OTHER
        return False

    def visit_ImportFrom(self, node: cst.ImportFrom) -> bool:
        if node.relative or node.module is None or isinstance(node.names, cst.ImportStar):
            return False
        base = canonical_module(_module_dotted(node.module))
        for alias in node.names:
            name = alias.name.value if isinstance(alias.name, cst.Name) else _module_dotted(alias.name)
            target = alias.asname.name if alias.asname is not None else cst.Name(name)
            self._bind(target, base.attribute(name) if base is not None else None)
        return False

    def visit_Assign(self, node: cst.Assign) -> bool:
        node.value.visit(self)
        value = self.resolve(node.value)
        for target in node.targets:
            target.target.visit(self)
            self._bind(target.target, value)
        return False

    def visit_AnnAssign(self, node: cst.AnnAssign) -> bool:
        if node.value is not None:
            node.value.visit(self)
            self._bind(node.target, self.resolve(node.value))
        return False

    # ------------------------------------------------------------------ scopes

    def _enter_function(self, params: cst.Parameters | None, is_class: bool = False) -> None:
        frame = _Frame(Scope(is_class=is_class))
        self._frames.append(frame)
        if params is not None:
            for param in (
                *params.posonly_params,
                *params.params,
                *params.kwonly_params,
                params.star_arg,
                params.star_kwarg,
            ):
                if isinstance(param, cst.Param):
                    frame.scope[param.name.value] = OTHER

    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        for decorator in node.decorators:
            decorator.visit(self)
        node.params.visit(self)  # defaults are evaluated in the enclosing scope
        self._frame.scope[node.name.value] = OTHER
        saved_depth, self._op_depth = self._op_depth, 0
        self._enter_function(node.params)
        node.body.visit(self)
        self._frames.pop()
        self._op_depth = saved_depth
        return False

    def visit_Lambda(self, node: cst.Lambda) -> bool:
        node.params.visit(self)
        saved_depth, self._op_depth = self._op_depth, 0
        self._enter_function(node.params)
        node.body.visit(self)
        self._frames.pop()
        self._op_depth = saved_depth
        return False

    def visit_ClassDef(self, node: cst.ClassDef) -> bool:
        for decorator in node.decorators:
            decorator.visit(self)
        for arg in node.bases:
            arg.visit(self)
        self._frame.scope[node.name.value] = OTHER
        self._enter_function(None, is_class=True)
        node.body.visit(self)
        self._frames.pop()
        return False

    # ------------------------------------------------------------------ loops

    def _loop_body(self, loop_node: cst.CSTNode, *parts) -> None:
        loop = Loop(loop_node)
        self._frame.loops.append(loop)
        for part in parts:
            if part is not None:
                part.visit(self)
        self._frame.loops.pop()

    def visit_For(self, node: cst.For) -> bool:
        node.iter.visit(self)  # evaluated once
        self._bind(node.target, None)
        self._loop_body(node, node.target, node.body)
        if node.orelse is not None:
            node.orelse.visit(self)
        return False

    def visit_While(self, node: cst.While) -> bool:
        self._loop_body(node, node.test, node.body)
        if node.orelse is not None:
            node.orelse.visit(self)
        return False

    def _comprehension(self, node, elements: tuple) -> bool:
        # The first iterable runs once in the enclosing scope; the rest runs per iteration.
        comp: cst.CompFor = node.for_in
        comp.iter.visit(self)
        self._enter_comprehension(comp, elements)
        return False

    def _enter_comprehension(self, comp: cst.CompFor, elements: tuple) -> None:
        loop = Loop(comp)
        self._frame.loops.append(loop)
        self._bind(comp.target, None)
        for condition in comp.ifs:
            condition.visit(self)
        if comp.inner_for_in is not None:
            comp.inner_for_in.iter.visit(self)
            self._enter_comprehension(comp.inner_for_in, elements)
        else:
            for element in elements:
                element.visit(self)
        self._frame.loops.pop()

    def visit_ListComp(self, node: cst.ListComp) -> bool:
        return self._comprehension(node, (node.elt,))

    def visit_SetComp(self, node: cst.SetComp) -> bool:
        return self._comprehension(node, (node.elt,))

    def visit_GeneratorExp(self, node: cst.GeneratorExp) -> bool:
        return self._comprehension(node, (node.elt,))

    def visit_DictComp(self, node: cst.DictComp) -> bool:
        return self._comprehension(node, (node.key, node.value))

    # ------------------------------------------------------------------ with

    def visit_With(self, node: cst.With) -> bool:
        pushed = 0
        for item in node.items:
            item.item.visit(self)
            value = self.resolve(item.item)
            if isinstance(value, GraphValue) and _is_as_default(item.item):
                # Ops built under this graph are fresh for every loop enclosing the graph's creation.
                self._frame.fresh.append(value.loops)
                pushed += 1
            if item.asname is not None:
                self._bind(item.asname.name, value)
        node.body.visit(self)
        del self._frame.fresh[len(self._frame.fresh) - pushed :]
        return False

    # ------------------------------------------------------------------ calls

    def _is_step(self, node: cst.Call) -> bool:
        func = node.func
        if not isinstance(func, cst.Attribute):
            return False
        method = func.attr.value
        if method not in _STEP_METHODS and method != "eval":
            return False
        receiver = self.resolve(func.value)
        if receiver is SESSION or isinstance(receiver, TFObject):
            return True
        if isinstance(receiver, (TFName, GraphValue)):
            return False  # tf.app.run(), a module's run()
        if any(arg.keyword is not None and arg.keyword.value in _STEP_KEYWORDS for arg in node.args):
            return True
        if method in _STEP_METHODS:
            dotted = _dotted(func.value)
            if dotted is not None and looks_like_session(dotted.rsplit(".", 1)[-1]):
                return True
        return False

    def _effect_of_call(self, node: cst.Call) -> Effect:
        func = self.resolve(node.func)
        if isinstance(func, TFName):
            return catalog.effect_of(func.path)
        if (
            isinstance(node.func, cst.Attribute)
            and node.func.attr.value in catalog.OP_METHODS
            and isinstance(self.resolve(node.func.value), TFObject)
        ):
            return Effect.OP
        return Effect.NONE

    def visit_Call(self, node: cst.Call) -> bool:
        frame = self._frame
        if frame.loops and self._is_step(node):
            for loop in frame.loops:
                loop.runs_step = True
        effect = self._effect_of_call(node)
        if effect is Effect.RESET:
            for loop in frame.loops:
                loop.resets_graph = True
        elif effect in (Effect.OP, Effect.SAVER, Effect.INITIALIZER) and frame.loops:
            if effect is not Effect.OP or self._op_depth == 0:
                fresh = frozenset().union(*frame.fresh) if frame.fresh else frozenset()
                self._candidates.append(_Candidate(node, effect, node.func, tuple(frame.loops), fresh))
            if effect is Effect.OP:
                self._op_depth += 1
                self._open_op_calls.add(id(node))
        return True

    def leave_Call(self, original_node: cst.Call) -> None:
        if id(original_node) in self._open_op_calls:
            self._open_op_calls.discard(id(original_node))
            self._op_depth -= 1


def _is_as_default(node: cst.BaseExpression) -> bool:
    return (
        isinstance(node, cst.Call)
        and isinstance(node.func, cst.Attribute)
        and node.func.attr.value == "as_default"
    )
