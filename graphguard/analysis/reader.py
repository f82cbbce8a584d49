"""Phase 1: read one module into :class:`ModuleFacts`, in one pass over CPython's ``ast``.

The visitor keeps, in source order:

* bindings (:mod:`graphguard.analysis.bindings`): TensorFlow imports and aliases, sessions, graphs,
  objects that TensorFlow calls returned, and references to the project's own functions and classes;
* per function body, the stack of loops around the current node: ``for``/``while`` statements
  (``async`` too) and comprehensions. A ``for`` loop's iterable and a comprehension's first iterable
  are evaluated once, outside the loop; everything else inside runs per iteration;
* the *exemptions* in force: a graph made fresh inside a loop (``with tf.Graph().as_default():``) and
  a guard that runs its body once (``if self._op is None:``) stop the enclosing loops from repeating
  what is under them.

What an expression evaluates to is :mod:`graphguard.analysis.resolution`'s job, and the sweep facts
(models made, trained and kept in loops; hand-off drivers) are :mod:`graphguard.analysis.sweeps`'s: both
are mixins of :class:`ModuleReader`, sharing its scopes and frames.

It records, per function (:class:`FunctionFacts`): each graph-building construction with its loops;
each session step (marking the loops around it as *session loops*); each session opened; each call of
project code (resolved in phase 2, :mod:`graphguard.analysis.fixpoint`; phase 3,
:mod:`graphguard.analysis.findings`, decides which constructions are findings). Nothing holds on to the syntax tree afterwards: facts carry positions,
so a module's tree is freed as soon as it is read.

Why ``ast`` and not libcst: the analysis needs no lossless tree, and CPython's parser is about 12x
faster than libcst's on TF1-era code (measured on 27k lines: 118k vs 9.6k lines per second). Like
pyflakes, the checker is one visitor with a handler per node type.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field

from graphguard.analysis import catalog, tf_api
from graphguard.analysis.bindings import (
    OTHER,
    SESSION,
    STEP_CALLABLE,
    TENSOR,
    CallResult,
    Choice,
    Elements,
    GraphValue,
    Instance,
    MethodResult,
    Param,
    Parts,
    ProjectRef,
    Ref,
    TFName,
    TFObject,
    canonical_module,
    looks_like_session,
)
from graphguard.analysis.catalog import Effect
from graphguard.analysis.eager import EagerReader
from graphguard.analysis.facts import (
    CALLER,
    ClassFacts,
    Construction,
    DeferredOperator,
    DeferredStep,
    DeferredUse,
    FunctionFacts,
    Loop,
    ModuleFacts,
    ProjectCall,
    Retention,
    SessionOpen,
    Site,
    add,
    subject_of,
)
from graphguard.analysis.resolution import BUILTINS, STEP_METHODS, TENSOR_KINDS, Resolver, followable, project_class
from graphguard.analysis.sweeps import (
    KEEPING_METHODS,
    KERAS_STEP_METHODS,
    KERAS_WRAPPERS,
    SEARCH_DRIVERS,
    TRIAL_METHODS,
    SweepReader,
    inert_call,
)
from graphguard.analysis.syntax import (
    assigned_targets,
    callee_text,
    dotted_name,
    ends_in_break,
    is_as_default,
    is_once_guard,
    names_a_graph,
    present_target,
    rebound_definitions,
    short,
)

_STEP_KEYWORDS = frozenset({"feed_dict", "session"})
#: Kinds of TensorFlow objects whose ``run()``/``eval()`` runs a session step (``train_op.run()``,
#: ``accuracy.eval()``); other objects' ``run`` (a ``tf.distribute`` strategy's) is not one.
_RUNNABLE_KINDS = frozenset({"tensor", "variable", "op", "sequence"})
#: Operators that build ops on tensors (``==`` does not in TF1 graph mode: it compares identities).
_TENSOR_COMPARISONS = (ast.Lt, ast.LtE, ast.Gt, ast.GtE)
_TENSOR_UNARY = (ast.USub, ast.UAdd, ast.Invert)
_SEQUENCE_LITERALS = (ast.Tuple, ast.List, ast.ListComp)
_new_tuple = tuple.__new__  #: ``_new_tuple(Site, (row, ...))``: a named tuple made without its Python ``__new__``


@dataclass(eq=False, slots=True)
class _Frame:
    facts: FunctionFacts
    scope: dict
    is_class: bool = False
    class_name: str | None = None
    loops: list = field(default_factory=list)
    exempt: list = field(default_factory=list)  # frozensets of loop indices, one per active exemption
    tensor_params: set = field(default_factory=set)
    params: set = field(default_factory=set)
    pending_param_operators: list = field(default_factory=list)  # (construction, node it names, parameters)
    bound: dict = field(default_factory=dict)  # dotted name -> loop indices active at its last binding
    made: dict = field(default_factory=dict)  # dotted name -> Made, for names bound to model-like values
    trial_sites: set = field(default_factory=set)  # sites of the trials recorded
    used: set = field(default_factory=set)  # subjects of the made values the function uses as trials
    pending_retentions: list = field(default_factory=list)  # (Retention, subject or None when always kept)
    assigned: set = field(default_factory=set)  # attributes (``self.graph``) assigned in this body
    numbers: set = field(default_factory=set)  # dotted names holding a Python int or float (GG301)
    samples: set = field(default_factory=set)  # dotted names holding a batch of one sample (GG303)
    pending_eager: list | None = None  # TF 2 decisions made when the body has been read (EagerReader._defer)


#: Nodes with nothing below them that the analysis reads.
_LEAVES = (ast.expr_context, ast.Constant, ast.operator, ast.unaryop, ast.cmpop, ast.boolop, ast.alias)
_DISPATCH: dict = {}  #: node class -> the reader's method for it
_CHILD_FIELDS: dict = {}  #: node class -> names of its fields that may hold nodes to visit
#: Fields that never hold a node to visit (names, flags, operators, contexts).
_PLAIN_FIELDS = frozenset({"ctx", "op", "ops", "id", "attr", "arg", "name", "module", "level", "type_comment",
                           "kind", "is_async", "conversion", "simple", "tag"})


def _leaf_classes() -> frozenset:
    """Every concrete class of :data:`_LEAVES`, with the plain values a field can hold."""
    found, todo = set(), list(_LEAVES)
    while todo:
        cls = todo.pop()
        found.add(cls)
        todo.extend(cls.__subclasses__())
    return frozenset(found | {type(None), str, int, bool, float, complex, bytes})


#: Classes generic_visit passes over without a call (``visit_Name`` does nothing either).
_SKIP = _leaf_classes() | {ast.Name}


def _dispatch(cls: type):
    """The reader's method for nodes of ``cls`` (a ``visit_X`` method or :meth:`ModuleReader.generic_visit`)."""
    method = _DISPATCH[cls] = getattr(ModuleReader, "visit_" + cls.__name__, ModuleReader.generic_visit)
    return method


def _child_fields(cls: type) -> tuple:
    """The fields of ``cls`` that can hold nodes (``Global.names``, a list of strings, cannot)."""
    fields = _CHILD_FIELDS[cls] = tuple(name for name in cls._fields if name not in _PLAIN_FIELDS
                                        and not (cls in (ast.Global, ast.Nonlocal) and name == "names"))
    return fields


class ModuleReader(Resolver, SweepReader, EagerReader, ast.NodeVisitor):
    """Reads one module's syntax tree into :class:`ModuleFacts`.

    ``source_lines`` is needed only for files with non-ASCII text (``ast`` columns count UTF-8 bytes).
    """

    def __init__(self, path: str, source_lines: list[bytes] | None = None,
                 session_names: frozenset = frozenset(), session_factories: frozenset = frozenset(),
                 project: frozenset | None = None) -> None:
        self.facts = ModuleFacts(path)
        self._project = project
        self._lines = source_lines
        self._session_names = session_names
        self._session_factories = session_factories
        module = FunctionFacts("<module>")
        self.facts.functions["<module>"] = module
        self._frames: list[_Frame] = [_Frame(module, {})]
        self._frame = self._frames[0]
        self._attributes: dict[str, object] = {}  # "self.sess" -> binding, file-wide
        self._attribute_names: set[str] = set()  # the last part of each of those ("sess")
        self._nested_depth = 0  # > 0 inside a recorded construction: nested generic ones are not recorded
        self._reuse_depth = 0  # > 0 lexically inside ``variable_scope(..., reuse=True or AUTO_REUSE)``
        self._offsets: dict[int, list] = {}  # row -> characters before each byte (non-ASCII lines)
        self._memo: dict[int, object] = {}  # id(node) -> resolved value (the tree outlives the reader)
        self._synthetic: list = []
        self._rebound: frozenset = frozenset()  # module functions rebound at module level
        self._star_modules: list = []  # TensorFlow modules star-imported at module level, last first
        self._per_step: dict = {}  # qualified class name -> "hook" or "callback" (methods run per step)
        self._project_stars: list = []  # modules of the checked tree star-imported at module level, last first
        self._keras_steps: list = []  # loops around ``model.predict(...)`` and the like (steps in graph mode)
        self.graph_mode = False  # the module uses a name that exists only in TF1 graph mode
        self.eager = False  # the module uses TF 2's eager signals (``.numpy()``, ``tf.GradientTape``)
        self.eager_off = False  # the module turns TF 2 behaviour off (``tf.disable_v2_behavior()``)
        self._traced: dict[str, int] = {}  # qualified name -> eager.TRACED or eager.SIGNED
        self._loop_binds: dict[int, set] = {}  # loop index -> dotted names its body binds (GG301, GG303)
        self._in_decorator = False
        self._compiled: set[int] = set()  # ids of the arguments of a reported ``model.compile(...)``
        self._parts: dict = {}  # (class name or frame id, dotted name) -> (ref, "returns:N") (GG303)
        self._attr_numbers: set = set()  # (class name, attribute) set to a Python number in a method (GG301)
        self._counters: list = []  # (name, Loop) of the enclosing ``for name in range(...)`` loops

    # ------------------------------------------------------------------ traversal

    def visit(self, node: ast.AST):
        """Dispatch through a per-class table (``ast.NodeVisitor`` looks the method up by name for
        every node, which was the largest single cost of reading a file)."""
        method = _DISPATCH.get(node.__class__)
        if method is None:
            method = _dispatch(node.__class__)
        return method(self, node)

    def generic_visit(self, node: ast.AST) -> None:
        # The fields that can hold nodes, per class, and the leaf classes as one set: the per-child
        # ``isinstance`` tests against tuples of classes were the visitor's largest single cost.
        fields = _CHILD_FIELDS.get(node.__class__)
        if fields is None:
            fields = _child_fields(node.__class__)
        for name in fields:
            value = getattr(node, name, None)
            if value.__class__ is not list:  # one child (or None): no loop set up for it
                cls = value.__class__
                if cls not in _SKIP:
                    method = _DISPATCH.get(cls)
                    if method is None:
                        if not isinstance(value, ast.AST):
                            continue
                        method = _dispatch(cls)
                    method(self, value)
                continue
            for item in value:
                cls = item.__class__
                if cls not in _SKIP:
                    method = _DISPATCH.get(cls)
                    if method is None:
                        if not isinstance(item, ast.AST):
                            continue
                        method = _dispatch(cls)
                    method(self, item)

    def visit_Attribute(self, node: ast.Attribute) -> None:
        # ``self.a.b.c``: down the chain of attributes in a loop, not a generic visit per level (a
        # third of the generic visits on the public corpus); only what ends it (a call, a subscript)
        # is visited.
        node = node.value
        while node.__class__ is ast.Attribute:
            node = node.value
        if node.__class__ is not ast.Name:
            self.visit(node)

    def visit_keyword(self, node: ast.keyword) -> None:
        value = node.value
        if value.__class__ not in _SKIP:
            self.visit(value)

    def visit_Expr(self, node: ast.Expr) -> None:
        self.visit(node.value)

    def visit_Try(self, node: ast.Try) -> None:
        """The ``try`` body is the normal path: a name it binds keeps that binding after handlers that
        bind it again (``try: from .fast import pred`` / ``except ImportError: from .slow import pred``
        calls the fast one, as it does wherever the import works)."""
        for statement in node.body:
            self.visit(statement)
        scope = self._frame.scope
        after_body = dict(scope) if node.handlers else None
        for handler in node.handlers:
            self.visit(handler)
        if after_body is not None:
            for name, value in after_body.items():
                if scope.get(name) is not value:
                    scope[name] = value
        for statement in node.orelse:
            self.visit(statement)
        for statement in node.finalbody:
            self.visit(statement)

    visit_TryStar = visit_Try

    def visit_Name(self, node: ast.Name) -> None:
        return None  # a leaf: its context needs no visit

    def visit_Constant(self, node: ast.Constant) -> None:
        return None

    # ------------------------------------------------------------------ positions

    def _column(self, row: int, byte_column: int) -> int:
        if self._lines is None:
            return byte_column + 1
        line = self._lines[row - 1] if 0 < row <= len(self._lines) else b""
        if line.isascii():
            return byte_column + 1
        # Characters before each byte offset, computed once per line: decoding the prefix per site was
        # quadratic on a long line of non-ASCII text with many findings.
        offsets = self._offsets.get(row)
        if offsets is None:
            offsets = self._offsets[row] = []
            for count, char in enumerate(line.decode("utf-8", "replace")):
                offsets.extend([count] * max(1, len(char.encode("utf-8", "replace"))))
            offsets.append(len(offsets) and offsets[-1] + 1)
        return (offsets[byte_column] if byte_column < len(offsets) else offsets[-1] + byte_column - len(offsets) + 1) + 1

    def _site(self, node: ast.AST) -> Site:
        end_row = node.end_lineno or node.lineno
        if self._lines is None:  # ASCII source: columns are byte offsets
            end_column = node.end_col_offset if node.end_col_offset is not None else node.col_offset
            # ``tuple.__new__`` directly: a named tuple's own ``__new__`` is a Python function (one
            # call more per site, and there are 160k sites on the public corpus)
            return _new_tuple(Site, (node.lineno, node.col_offset + 1, end_row, end_column + 1))
        return Site(
            node.lineno,
            self._column(node.lineno, node.col_offset),
            end_row,
            self._column(end_row, node.end_col_offset if node.end_col_offset is not None else node.col_offset),
        )

    # ------------------------------------------------------------------ bindings

    def _push(self, frame: _Frame) -> None:
        """Enter a body: ``self._frame`` is the innermost frame (an attribute, not a property: it is read
        two million times on the public corpus)."""
        self._frames.append(frame)
        self._frame = frame

    def _pop(self) -> _Frame:
        frame = self._frames.pop()
        self._frame = self._frames[-1]
        return frame

    def _lookup(self, name: str):
        innermost = self._frames[-1].scope
        if name in innermost:
            return innermost[name]
        for index in range(len(self._frames) - 2, -1, -1):
            frame = self._frames[index]
            if not frame.is_class and name in frame.scope:
                if index == 0 and name in self._rebound:
                    # A module function rebound at module level (``resize = wrap(resize)``): a function
                    # sees whichever binding exists when it runs, so it is unknown here.
                    return None
                return frame.scope[name]
        if self._star_modules and name not in BUILTINS:
            api = tf_api.load()
            for module in self._star_modules:
                candidate = module.attribute(name)
                if api.effect(candidate.path) is not None or candidate.path in catalog.MODEL_NAMES:
                    return candidate
        if self._project_stars and name not in BUILTINS:
            # A name no statement of this module binds, star-imported from a module of the checked
            # tree (the last star import wins; phase 2 finds which, if any, defines it).
            return ProjectRef(Ref(self._project_stars[0], name))
        return None

    def _bind(self, target: ast.AST, value) -> None:
        if isinstance(target, (ast.Name, ast.Attribute)):
            dotted = dotted_name(target)
            if dotted is not None:
                frame = self._frame
                if frame.loops:
                    frame.bound[dotted] = tuple(loop.index for loop in frame.loops)
                elif frame.bound:
                    frame.bound.pop(dotted, None)  # bound outside every loop: the default
                if frame.made:
                    frame.made.pop(dotted, None)
        if isinstance(target, ast.Name):
            self._frame.scope[target.id] = value if value is not None else OTHER
        elif isinstance(target, (ast.Tuple, ast.List)):
            parts = value.values if isinstance(value, Parts) and len(value.values) == len(target.elts) else None
            for index, element in enumerate(target.elts):
                if isinstance(element, ast.Starred):
                    element, parts = element.value, None
                if parts is not None:
                    self._bind(element, parts[index])  # ``for var, p in zip(variables, params)``
                elif isinstance(value, Elements):
                    self._bind(element, value.element)  # ``a, b = heads``
                else:
                    # ``a, b = tf.split(x, 2)``: every part of a TF result is a TF object too.
                    self._bind(element, _part_of(value))
        elif isinstance(target, ast.Attribute):
            self._frame.assigned.add(dotted_name(target))
            if isinstance(value, (Param, MethodResult)):
                value = None  # a parameter means something else in the other methods that read the attribute
            dotted = dotted_name(target)
            if dotted is not None:
                self._attributes[dotted] = value if value is not None else OTHER
                self._attribute_names.add(target.attr)
            owner = self.resolve(target.value) if isinstance(target.value, ast.Name) else None
            if isinstance(owner, Instance) and owner.cls.module == "":
                cls = self.facts.classes.get(owner.cls.name)
                if cls is not None and value is not None:
                    cls.attributes[target.attr] = value

    def _is_factory(self, ref: Ref) -> bool:
        """Whether ``ref`` is one of the configured ``session-factories`` (dotted names, matched by suffix)."""
        dotted = f"{ref.module}.{ref.name}".strip(".")
        return any(dotted == f or dotted.endswith("." + f) or f.endswith("." + dotted) for f in self._session_factories)

    # ------------------------------------------------------------------ imports and assignments

    def _is_project(self, dotted: str) -> bool:
        """Whether an absolute import may name a module of the checked tree (None: anything may)."""
        return self._project is None or dotted in self._project or dotted.split(".")[0] in self._project

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            canonical = canonical_module(alias.name)
            project = canonical is None and self._is_project(alias.name)
            if alias.asname is not None:
                value = canonical if canonical is not None else ProjectRef(Ref(alias.name, "")) if project else OTHER
                self._frame.scope[alias.asname] = value
            else:
                top = alias.name.split(".")[0]
                self._frame.scope[top] = canonical_module(top) or (ProjectRef(Ref(top, "")) if project else OTHER)

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        module = ("." * node.level) + (node.module or "")
        base = canonical_module(node.module) if node.level == 0 and node.module else None
        for alias in node.names:
            if alias.name == "*":
                if base is not None and len(self._frames) == 1:
                    self._star_modules.insert(0, base)  # ``from keras.models import *``: the last one wins
                elif base is None and len(self._frames) == 1 and (node.level or self._is_project(module)):
                    self._project_stars.insert(0, module)  # ``from a02_zoo import *``: phase 2 resolves names
                continue
            target = alias.asname or alias.name
            if base is not None:
                self._frame.scope[target] = base.attribute(alias.name)
            elif node.level or self._is_project(module):
                # ``from pkg import module`` or ``from module import function``: phase 2 decides which.
                self._frame.scope[target] = ProjectRef(Ref(module, alias.name))
            else:
                # Third-party code (numpy, os): nothing graphguard can follow. A configured session
                # factory may still live there.
                ref = Ref(module, alias.name)
                self._frame.scope[target] = ProjectRef(ref) if self._session_factories and self._is_factory(ref) else OTHER

    def visit_Assign(self, node: ast.Assign) -> None:
        self.visit(node.value)
        value = self.resolve(node.value)
        parts = None
        if (isinstance(node.value, (ast.Tuple, ast.List))
                and not any(isinstance(e, ast.Starred) for e in node.value.elts)):
            # ``self.sess, self.step = tf.Session(), 0``: each target takes its own part.
            parts = Parts(tuple(self.resolve(element) for element in node.value.elts))
        for target in node.targets:
            self._visit_target(target)
            if isinstance(target, ast.Subscript) and self._may_retain() and not isinstance(target.slice, ast.Constant):
                # ``results[lr] = model``: a new entry per key (a constant key keeps only one value).
                self._retention(target.value, (node.value,), node)
            elif (self._may_retain() and isinstance(node.value, ast.BinOp) and isinstance(node.value.op, ast.Add)
                  and isinstance(node.value.right, (ast.List, ast.Tuple)) and dotted_name(target) is not None
                  and dotted_name(target) == dotted_name(node.value.left)):
                self._retention(target, node.value.right.elts, node)  # ``models = models + [model]``
            self._bind(target, parts if parts is not None and isinstance(target, (ast.Tuple, ast.List)) else value)
            self._note_number(target, node.value)
        self._note_made(node.targets, node.value)

    def visit_AnnAssign(self, node: ast.AnnAssign) -> None:
        if node.value is not None:
            self.visit(node.value)
            self._visit_target(node.target)
            self._bind(node.target, self.resolve(node.value))
            self._note_number(node.target, node.value)
            self._note_made((node.target,), node.value)

    def visit_AugAssign(self, node: ast.AugAssign) -> None:
        self._visit_target(node.target)
        self._note_number(node.target, node.value, augmented=True)
        if (isinstance(node.op, ast.Add) and isinstance(node.value, (ast.List, ast.Tuple)) and self._may_retain()
                and not isinstance(self.resolve(node.target), TFObject)):
            self._retention(node.target, node.value.elts, node)  # ``models += [model]``
        if isinstance(node.target, (ast.Name, ast.Attribute)):
            # ``total += x`` on a tensor is one construction, whatever the right-hand side holds.
            synthetic = ast.BinOp(node.target, node.op, node.value)
            ast.copy_location(synthetic, node)
            self._synthetic.append(synthetic)  # kept alive: the memo is keyed by id()
            if self._operator(synthetic, node, visit_children=False):
                self._nested_depth += 1
                self.visit(node.value)
                self._nested_depth -= 1
                return
        self.visit(node.value)

    def visit_NamedExpr(self, node: ast.NamedExpr) -> None:
        self.visit(node.value)
        self._bind(node.target, self.resolve(node.value))
        self._note_number(node.target, node.value)
        self._note_made((node.target,), node.value)

    def _visit_target(self, target: ast.AST) -> None:
        # Subscripts and attributes being assigned evaluate their bases, not a new op on the target.
        if isinstance(target, ast.Subscript):
            self.visit(target.slice)
        elif isinstance(target, (ast.Tuple, ast.List)):
            for element in target.elts:
                self._visit_target(element)

    def visit_Return(self, node: ast.Return) -> None:
        if node.value is None:
            return
        self.visit(node.value)
        value = self.resolve(node.value)
        facts = self._frame.facts
        elements = node.value.elts if isinstance(node.value, ast.Tuple) else ()
        for position, element in ((None, node.value), *enumerate(elements)):
            made = self._model_value(element)
            if made is not None:
                if made.refs:
                    facts.model_returns = [*facts.model_returns, *((position, ref, kind) for ref, kind in made.refs)]
                else:
                    facts.model_positions = {*facts.model_positions, position}
        if value is SESSION:
            facts.returns_session = True
        elif isinstance(value, CallResult):
            add(facts, "returns", value.ref)
        followed = followable(value)
        if followed is not None and not isinstance(followed, CallResult) and followed is not SESSION:
            facts.return_values = [*facts.return_values, followed]

    # ------------------------------------------------------------------ functions and classes

    def _qualname(self, name: str) -> str:
        frame = self._frame
        if frame.is_class:
            return f"{frame.facts.name}.{name}" if frame.facts.name != "<module>" else name
        if frame.facts.name == "<module>":
            return name
        return f"{frame.facts.name}.<locals>.{name}"

    def _lambda_name(self, node: ast.Lambda) -> str:
        """A lambda's name in the module's functions, from its position (``<lambda:12:30>``, inside
        its enclosing function's qualified name): the same when it is resolved as an argument and
        when it is read."""
        return self._qualname(f"<lambda:{node.lineno}:{node.col_offset}>")

    def _function(self, node, params: ast.arguments, body, traced: int = 0) -> None:
        for default in (*params.defaults, *(d for d in params.kw_defaults if d is not None)):
            self.visit(default)
        lambda_ = isinstance(node, ast.Lambda)
        qualname = self._lambda_name(node) if lambda_ else self._qualname(node.name)
        enclosing = self._frame
        facts = FunctionFacts(qualname)
        facts.traced = traced
        self.facts.functions[qualname] = facts  # a lambda too: it may be passed on and called
        if not lambda_:
            enclosing.scope[node.name] = ProjectRef(Ref("", qualname), is_class=False)
        frame = _Frame(facts, {}, class_name=enclosing.class_name if enclosing.is_class else None)
        facts.params = tuple(p.arg for p in (*params.posonlyargs, *params.args))
        all_params = [*params.posonlyargs, *params.args, *params.kwonlyargs]
        for extra in (params.vararg, params.kwarg):
            if extra is not None:
                all_params.append(extra)
        for param in all_params:
            frame.scope[param.arg] = Param(param.arg)
            frame.params.add(param.arg)
        if enclosing.is_class and params.args:
            frame.scope[params.args[0].arg] = Instance(Ref("", enclosing.facts.name))
        saved_depth, self._nested_depth = self._nested_depth, 0
        self._push(frame)
        per_step = self._per_step.get(frame.class_name) if enclosing.is_class else None
        if per_step is not None and node.name in _PER_STEP_METHODS[per_step]:
            # ``SessionRunHook.after_run``, ``Callback.on_batch_end``: the framework calls the body on
            # every step (or epoch), so it is the body of a loop that no statement shows.
            loop = self._new_loop(node)
            loop.runs_step = per_step == "hook"  # a hook runs around every session step
            frame.loops.append(loop)
        if isinstance(body, list):
            self._visit_body(body)
        else:
            self.visit(body)
        self._pop()
        self._settle_eager(frame)
        self._close_frame(frame)
        self._nested_depth = saved_depth
        for construction, written, names in frame.pending_param_operators:
            if names & frame.tensor_params:
                facts.constructions.append(construction._replace(callee=written if not construction.loops
                                                                 else short(ast.unparse(written))))

    def _visit_body(self, body: list) -> None:
        """A function body, watching for an early-return cache guard: ``if key in self._ops: return``
        followed by code that fills ``self._ops`` runs once per key, like a once-guard."""
        pushed = 0
        for index, statement in enumerate(body):
            self.visit(statement)
            if (isinstance(statement, ast.If) and not statement.orelse and statement.body
                    and isinstance(statement.body[-1], (ast.Return, ast.Raise))):
                target = present_target(statement.test)
                if target is not None and target in assigned_targets(body[index + 1:]):
                    self._frame.exempt.append(self._exemption())
                    pushed += 1
        del self._frame.exempt[len(self._frame.exempt) - pushed:]

    def visit_FunctionDef(self, node: ast.FunctionDef) -> None:
        self._in_decorator = True
        for decorator in node.decorator_list:
            self.visit(decorator)
            value = self.resolve(decorator.func if isinstance(decorator, ast.Call) else decorator)
            if isinstance(value, TFName) and value.path in catalog.EAGER_NAMES:
                self.eager = True  # ``@tf.function``
        self._in_decorator = False
        traced, decorator = self._traced_by(node.decorator_list) if node.decorator_list else (0, None)
        self._note_traced_def(node, traced, decorator)
        self._function(node, node.args, node.body, traced)

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_Lambda(self, node: ast.Lambda) -> None:
        self._function(node, node.args, node.body)

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        for decorator in node.decorator_list:
            self.visit(decorator)
        bases = []
        keras_base = per_step = None
        for base in node.bases:
            self.visit(base)
            value = self.resolve(base)
            if isinstance(value, ProjectRef):
                bases.append(value.ref)
                if value.ref.module == "" and value.ref.name in self._per_step:
                    per_step = self._per_step[value.ref.name]  # a subclass of the module's own hook base
            elif isinstance(value, TFName) and catalog.effect_of(value.path) is Effect.MODEL:
                keras_base = base
            elif isinstance(value, TFName) and value.path.rsplit(".", 1)[-1] in _PER_STEP_BASES:
                per_step = _PER_STEP_BASES[value.path.rsplit(".", 1)[-1]]
        qualname = self._qualname(node.name)
        if per_step is not None:
            self._per_step[qualname] = per_step
        self.facts.classes[qualname] = ClassFacts(qualname, bases)
        self._frame.scope[node.name] = ProjectRef(Ref("", qualname), is_class=True)
        facts = FunctionFacts(qualname)  # the class body: statements run once, at definition
        self._push(_Frame(facts, {}, is_class=True, class_name=qualname))
        for statement in node.body:
            self.visit(statement)
        self._settle_eager(self._frames[-1])
        self._close_frame(self._pop())
        if keras_base is not None:
            # A subclass of tf.keras.Model: making an instance makes a Keras model (GG201).
            init = self.facts.functions.get(f"{qualname}.__init__")
            if init is None:
                init = self.facts.functions[f"{qualname}.__init__"] = FunctionFacts(f"{qualname}.__init__")
            init.builds.setdefault(Effect.MODEL, (node.lineno, f"`class {node.name}({callee_text(keras_base)})`"))

    # ------------------------------------------------------------------ loops

    def _new_loop(self, node: ast.AST) -> Loop:
        loop = Loop(len(self.facts.loops), node.lineno, self._column(node.lineno, node.col_offset))
        self.facts.loops.append(loop)
        return loop

    def _in_loop(self, loop: Loop, parts) -> None:
        frame = self._frame
        frame.loops.append(loop)
        # ``for attempt in range(3): try: ...; break`` runs its body to the end once: what it builds
        # is not repeated (a retry loop repeats only after a failure).
        once = ends_in_break(parts[-1])
        if once:
            frame.exempt.append(frozenset({loop.index}))
        for part in parts:
            if isinstance(part, list):
                for statement in part:
                    self.visit(statement)
            elif part is not None:
                self.visit(part)
        if once:
            frame.exempt.pop()
        frame.loops.pop()

    def visit_For(self, node: ast.For) -> None:
        self.visit(node.iter)  # evaluated once
        elements = self._elements(node.iter)
        self._bind(node.target, None if elements is None else elements.element)
        for name in assigned_targets([ast.Assign(targets=[node.target], value=node.iter)]):
            self._frame.numbers.discard(name)
        self._note_loop_numbers(node)
        loop = self._new_loop(node)
        self._frame.loops.append(loop)
        self._note_loop_bind(node.target)  # the target changes per iteration
        self._frame.loops.pop()
        loop.trips = self._trips(node.iter)
        if loop.trips is None:
            self._note_over(loop, node.iter)
        # ``for t in range(n):`` takes each value once: ``if t == k:`` in its body holds on one iteration.
        counter = node.target.id if isinstance(node.target, ast.Name) and _is_range(node.iter) else None
        if counter is not None:
            self._counters.append((counter, loop))
        self._in_loop(loop, (node.body,))
        if counter is not None:
            self._counters.pop()
        for statement in node.orelse:
            self.visit(statement)

    visit_AsyncFor = visit_For

    def visit_While(self, node: ast.While) -> None:
        self._in_loop(self._new_loop(node), (node.test, node.body))
        for statement in node.orelse:
            self.visit(statement)

    def _comprehension(self, node, elements) -> None:
        # The first iterable runs once in the enclosing scope; the rest runs per iteration.
        generators = node.generators
        self.visit(generators[0].iter)
        loop = self._new_loop(node)
        trips = 1
        self._frame.loops.append(loop)
        for index, generator in enumerate(generators):
            if index:
                self.visit(generator.iter)
            container = self._elements(generator.iter)
            self._bind(generator.target, None if container is None else container.element)
            self._note_loop_bind(generator.target)
            count = self._trips(generator.iter)
            if count is None and index == 0 and len(generators) == 1:
                self._note_over(loop, generator.iter)
            trips = None if trips is None or count is None else trips * count
            for condition in generator.ifs:
                self.visit(condition)
        loop.trips = trips
        for element in elements:
            self.visit(element)
        if not isinstance(node, ast.GeneratorExp):
            # ``[train(u) for u in units]``: the result keeps every iteration's model. Only values
            # that count without a use (what a project function returns, graphs, sessions): a
            # comprehension of bare constructors makes the blocks of one model.
            made = self._model_value(elements[-1])
            if made is not None and made.always and loop.index in made.loops:
                self._frame.pending_retentions.append(
                    (Retention(self._site(node), short(ast.unparse(node)), made.subject, loop.index, made.refs), None))
        self._frame.loops.pop()

    def visit_ListComp(self, node: ast.ListComp) -> None:
        self._comprehension(node, (node.elt,))

    visit_SetComp = visit_GeneratorExp = visit_ListComp

    def visit_DictComp(self, node: ast.DictComp) -> None:
        self._comprehension(node, (node.key, node.value))

    # ------------------------------------------------------------------ exemptions: fresh graphs, once-guards

    def _exemption(self) -> frozenset:
        """The loops whose iterations are not repeated from here: every loop in the current stack, or
        the caller's loop (:data:`CALLER`) when the exemption is made at function level."""
        loops = self._frame.loops
        return frozenset(loop.index for loop in loops) if loops else frozenset({CALLER})

    def visit_With(self, node: ast.With) -> None:
        pushed = 0
        reuse = 0
        for item in node.items:
            self.visit(item.context_expr)
            if self._reuses_variables(item.context_expr):
                reuse += 1
            value = self.resolve(item.context_expr)
            fresh = value if isinstance(value, GraphValue) and is_as_default(item.context_expr) else None
            if fresh is not None and isinstance(item.context_expr.func.value, ast.Attribute) \
                    and dotted_name(item.context_expr.func.value) not in self._frame.assigned:
                # ``with self.graph.as_default():`` in a method, the graph made once in ``__init__``:
                # re-entering a long-lived graph, where ops accumulate, is not a fresh graph.
                fresh = None
            if fresh is None and isinstance(item.context_expr, ast.Call):
                # ``with tf.Session(graph=g):`` and ``with self.session(graph=tf.Graph()):`` enter the
                # session's graph as the default graph (Session.__enter__ calls graph.as_default()).
                for keyword in item.context_expr.keywords:
                    if keyword.arg == "graph" and isinstance(self.resolve(keyword.value), GraphValue):
                        fresh = self.resolve(keyword.value)
            if fresh is not None:
                # Ops built under this graph are fresh for every loop enclosing the graph's creation.
                self._frame.exempt.append(fresh.loops or frozenset({CALLER}))
                pushed += 1
            elif value is None and is_as_default(item.context_expr) and names_a_graph(item.context_expr.func.value):
                # ``with self._tf_graph.obj.as_default():``: the object's own graph, held where the
                # analysis cannot follow. Its ops do not go to the caller's default graph (as for a
                # graph attribute it can follow); loops in this function still repeat them.
                self._frame.exempt.append(frozenset({CALLER}))
                pushed += 1
            if item.optional_vars is not None:
                self._bind(item.optional_vars, value)
                self._note_made((item.optional_vars,), item.context_expr)  # ``with tf.Graph().as_default() as g:``
        self._reuse_depth += reuse
        for statement in node.body:
            self.visit(statement)
        self._reuse_depth -= reuse
        del self._frame.exempt[len(self._frame.exempt) - pushed:]

    def _reuses_variables(self, node: ast.AST) -> bool:
        """``tf.variable_scope(..., reuse=tf.AUTO_REUSE)`` or ``reuse=True``: ``get_variable`` inside
        returns the existing variable and adds no op (measured on TF 2.21: 0 ops on reuse)."""
        if not isinstance(node, ast.Call):
            return False
        func = self.resolve(node.func)
        if not isinstance(func, TFName) or func.path != "tf.variable_scope":
            return False
        for keyword in node.keywords:
            if keyword.arg == "reuse":
                value = self.resolve(keyword.value)
                if isinstance(value, TFName) and value.path == "tf.AUTO_REUSE":
                    return True
                return isinstance(keyword.value, ast.Constant) and keyword.value.value is True
        return False

    visit_AsyncWith = visit_With

    def _counter_exemption(self, test: ast.AST) -> frozenset | None:
        """``if t == k:`` (or ``k == t``) where ``t`` counts an enclosing ``for t in range(...)`` and ``k``
        does not mention it: the body runs on one iteration of that loop (``if step == decay_at:``), so
        that loop and the loops inside it do not repeat it; loops around it still do."""
        if not (isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], ast.Eq)):
            return None
        for name, other in ((test.left, test.comparators[0]), (test.comparators[0], test.left)):
            if not isinstance(name, ast.Name) or any(isinstance(n, ast.Name) and n.id == name.id for n in ast.walk(other)):
                continue
            for counter, loop in reversed(self._counters):
                if counter == name.id:
                    loops = self._frame.loops
                    if loop in loops:
                        return frozenset(l.index for l in loops[loops.index(loop):])
                    break
        return None

    def visit_If(self, node: ast.If) -> None:
        self.visit(node.test)
        counted = self._counter_exemption(node.test)  # the precise form of `if step == 0:` for a counter
        once = counted is None and is_once_guard(node.test, node.body)
        if counted is not None:
            self._frame.exempt.append(counted)
            once = True
        elif once:
            self._frame.exempt.append(self._exemption())
        for statement in node.body:
            self.visit(statement)
        if once:
            self._frame.exempt.pop()
        for statement in node.orelse:
            self.visit(statement)

    # ------------------------------------------------------------------ constructions

    def _new_construction(self, effect: Effect, node: ast.AST, callee: str) -> Construction:
        frame = self._frame
        exempt = frozenset().union(*frame.exempt) if frame.exempt else frozenset()
        return Construction(effect, self._site(node), callee, tuple(l.index for l in frame.loops), exempt)

    def _construction(self, effect: Effect, node: ast.AST, callee: str, deferred=()) -> Construction:
        frame = self._frame
        construction = self._new_construction(effect, node, callee)
        if deferred:
            add(frame.facts, "deferred_operators", DeferredOperator(construction, tuple(deferred)))
        else:
            frame.facts.constructions.append(construction)
        return construction

    def _tensor_operands_of(self, operands) -> tuple[bool, list, set]:
        """(an operand is a known tensor, refs of project calls whose results may be tensors,
        names of parameters that may be tensors)."""
        refs, params = [], set()
        for operand in operands:
            value = self.resolve(operand)
            if isinstance(value, TFObject) and value.kind in TENSOR_KINDS:
                return True, [], set()
            if isinstance(value, CallResult):
                refs.append(value.ref)
            elif isinstance(value, Param):
                params.add(value.name)
        return False, refs, params

    def _tensor_operands(self, node: ast.AST) -> tuple[bool, list, set]:
        if isinstance(node, ast.BinOp):
            if isinstance(node.left, _SEQUENCE_LITERALS) or isinstance(node.right, _SEQUENCE_LITERALS):
                return False, [], set()  # ``(name,) + outputs``, ``[train_op] + update_ops``: Python sequences
            return self._tensor_operands_of((node.left, node.right))
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, _TENSOR_UNARY):
            return self._tensor_operands_of((node.operand,))
        if isinstance(node, ast.Compare) and all(isinstance(op, _TENSOR_COMPARISONS) for op in node.ops):
            return self._tensor_operands_of((node.left, *node.comparators))
        if isinstance(node, ast.Subscript):
            if isinstance(node.slice, ast.Constant) and isinstance(node.slice.value, str):
                return False, [], set()  # ``features["image"]``: a dict of tensors, not a tensor
            return self._tensor_operands_of((node.value,))
        return False, [], set()

    def _operator(self, node: ast.AST, written: ast.AST | None = None, visit_children: bool = True) -> bool:
        """Record ``node`` (an operator, a subscript, an augmented assignment) when it acts on a tensor.
        The finding names it by the source of ``written`` (default: ``node``), shortened; written out
        only for a construction that is kept (``ast.unparse`` of every operator on a parameter was a
        twentieth of reading a file)."""
        frame = self._frame
        recorded = False
        if self._nested_depth == 0:
            tensor, refs, params = self._tensor_operands(node)
            if tensor:
                # Outside loops only a function's first construction of each kind is named (its
                # ``builds``): the node stands for its text until read_module() knows which.
                self._construction(Effect.OPERATOR, node,
                                   written or node if not frame.loops else short(ast.unparse(written or node)))
                recorded = True
            elif refs:
                if frame.loops:  # outside loops it is never reported (phase 3) nor summarised (phase 2)
                    self._construction(Effect.OPERATOR, node, short(ast.unparse(written or node)), deferred=refs)
                recorded = True
            elif params:
                # Decided when the function ends: a parameter is a tensor if the function passes it to TF.
                frame.pending_param_operators.append((self._new_construction(Effect.OPERATOR, node, ""),
                                                      written or node, params))
                recorded = True
        if not visit_children:
            return recorded
        if recorded:
            self._nested_depth += 1
            self.generic_visit(node)
            self._nested_depth -= 1
        else:
            self.generic_visit(node)
        return recorded

    def visit_BinOp(self, node: ast.BinOp) -> None:
        self._operator(node)

    def visit_UnaryOp(self, node: ast.UnaryOp) -> None:
        self._operator(node)

    def visit_Compare(self, node: ast.Compare) -> None:
        self._operator(node)

    def visit_Subscript(self, node: ast.Subscript) -> None:
        if isinstance(node.ctx, ast.Load):
            self._operator(node)
        else:
            self.generic_visit(node)

    # ------------------------------------------------------------------ calls

    def _is_step(self, node: ast.Call, receiver) -> bool:
        func = node.func
        method = func.attr
        if receiver is SESSION or (isinstance(receiver, TFObject) and receiver.kind in _RUNNABLE_KINDS):
            return True
        if isinstance(receiver, TFObject):
            return False  # ``strategy.run(fn)`` (a tf.distribute strategy), ``opt.run``: not a session step
        if isinstance(receiver, (TFName, GraphValue, ProjectRef)):
            return False  # tf.app.run(), a module's run()
        if any(keyword.arg in _STEP_KEYWORDS for keyword in node.keywords):
            return True
        if method in STEP_METHODS and not isinstance(receiver, Instance):
            dotted = dotted_name(func.value)
            if dotted is not None:
                last = dotted.rsplit(".", 1)[-1]
                if looks_like_session(last) or last in self._session_names or dotted in self._session_names:
                    return True
        return False

    def _mark_step(self) -> None:
        frame = self._frame
        frame.facts.runs_step = True
        for loop in frame.loops:
            loop.runs_step = True

    def _note_tensor_params(self, node: ast.Call) -> None:
        frame = self._frame
        if not frame.params:
            return
        for arg in (*node.args, *(keyword.value for keyword in node.keywords)):
            if isinstance(arg, ast.Name) and arg.id in frame.params:
                frame.tensor_params.add(arg.id)

    def visit_Call(self, node: ast.Call) -> None:
        frame = self._frame
        func_value = self.resolve(node.func)
        if (frame.made and (node.args or node.keywords) and not isinstance(func_value, (TFName, TFObject))
                and not inert_call(node.func)):
            # ``train(model, data)``, ``Solver(model, data)``: handed on to code that uses it. Not a
            # Keras call (``Sequential([block])``) nor a container method (``blocks.append(block)``).
            for arg in (*node.args, *(keyword.value for keyword in node.keywords)):
                if isinstance(arg, (ast.Name, ast.Attribute)):
                    self._use_as_trial(arg)
        self._eager_call(node, func_value)
        effect = Effect.NONE
        name = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", None)
        if name in SEARCH_DRIVERS and (name in KERAS_WRAPPERS or not (
                isinstance(func_value, (TFName, TFObject))
                or isinstance(node.func, ast.Attribute) and isinstance(self.resolve(node.func.value), (TFName, TFObject)))):
            self._search_driver(node)
        if isinstance(func_value, TFName):
            effect = catalog.effect_of(func_value.path)
            if effect is Effect.VARIABLE and self._reuse_depth and func_value.path == "tf.get_variable":
                effect = Effect.NONE
            if effect.builds:
                self._note_tensor_params(node)
        elif func_value is STEP_CALLABLE:
            self._mark_step()
        elif isinstance(func_value, TFObject) and func_value.kind in ("layer", "model"):
            effect = Effect.OP  # ``layer(x)``, ``tf.keras.layers.Dense(2)(x)``: the layer's ops
            self._note_tensor_params(node)
        elif isinstance(func_value, Instance):
            self._project_call(func_value.cls.member("__call__"), node, callee_text(node.func), bound=True)  # ``head(x)``
        elif isinstance(func_value, (Param, CallResult, MethodResult)):
            # ``score(sess, x)``: a closure or a callable argument; ``self.optimizer([...])`` after
            # ``self.optimizer = self.optimizer()`` calls what the method returned, not the method.
            self._deferred_use(func_value, None, node, callee_text(node.func))
        elif isinstance(func_value, ProjectRef):
            ref = func_value.ref
            bound = project_class(func_value)
            if bound:
                ref = ref.member("__init__")
            self._project_call(ref, node, callee_text(node.func), bound)
        elif isinstance(node.func, ast.Attribute):
            method = node.func.attr
            receiver = self.resolve(node.func.value)
            if method in TRIAL_METHODS:
                self._use_as_trial(node.func.value)
            if method == "numpy" and not node.args:
                self.eager = True  # ``t.numpy()`` exists only in eager execution
            if method in KERAS_STEP_METHODS and isinstance(receiver, TFObject) and receiver.kind == "model" \
                    and frame.loops:
                # Keras on TF1 runs a session step here; decided at the end of the module (graph mode).
                self._keras_steps.append(tuple(frame.loops))
            keep = KEEPING_METHODS.get(method)
            if (keep is not None or method in ("update", "setdefault")) and isinstance(receiver, Elements) \
                    and receiver.count is not None and isinstance(node.func.value, ast.Name):
                # ``configs.append(c)``: the literal's length no longer says how many there are.
                self._frame.scope[node.func.value.id] = Elements(receiver.element, None, receiver.setup, receiver.saved)
            if keep is not None and self._may_retain() and len(node.args) > keep and not isinstance(receiver, TFObject):
                kept = node.args[keep]
                if method == "extend":
                    if isinstance(kept, (ast.List, ast.Tuple)):
                        self._retention(node.func.value, kept.elts, node)
                else:
                    self._retention(node.func.value, (kept,), node)
            if method in STEP_METHODS and isinstance(receiver, CallResult):
                # ``s = make_session(); s.run(...)``: a step if the factory returns a session (phase 2),
                # or if the name says so (a factory outside the checked tree).
                dotted = dotted_name(node.func.value)
                if dotted is not None and looks_like_session(dotted.rsplit(".", 1)[-1]):
                    self._mark_step()
                else:
                    add(frame.facts, "deferred_steps", DeferredStep(receiver.ref, tuple(l.index for l in frame.loops)))
            elif (method in STEP_METHODS or method == "eval") and self._is_step(node, receiver):
                self._mark_step()
            elif method in STEP_METHODS and isinstance(receiver, Param):
                # ``def run_epoch(s, ...): s.run(...)``: a step if a caller passes a session (phase 2).
                add(frame.facts, "param_steps", (receiver.name, tuple(l.index for l in frame.loops)))
            elif method in catalog.DISTINCT_METHODS and not isinstance(receiver, (TFName, Instance)):
                effect = catalog.DISTINCT_METHODS[method][0]  # only TensorFlow objects have these methods
            elif isinstance(receiver, TFObject):
                method_effect = catalog.method_effect(receiver.kind, method)
                if method_effect is not None:
                    effect = method_effect
                    self._note_tensor_params(node)
                elif method in catalog.SESSION_METHODS.get(receiver.kind, ()):
                    effect = Effect.SESSION
            elif isinstance(receiver, Instance):
                self._project_call(receiver.cls.member(method), node, callee_text(node.func), bound=True)
            elif isinstance(receiver, Choice):
                for value in receiver.values:  # ``for head in [ClsHead(), BoxHead()]: head.update(sess)``
                    if isinstance(value, Instance):
                        self._project_call(value.cls.member(method), node, callee_text(node.func), bound=True)
            elif isinstance(receiver, (Param, CallResult, MethodResult)) and method not in STEP_METHODS:
                self._deferred_use(receiver, method, node, callee_text(node.func))  # ``model.save(...)``, ``it.get_next()``
            elif (receiver is None and isinstance(node.func.value, ast.Call) and isinstance(node.func.value.func, ast.Name)
                  and node.func.value.func.id == "super" and frame.class_name in self.facts.classes):
                # ``super().__init__(...)``: the base class's method (a tf.keras.Model subclass of a
                # project model class is a model too).
                bases = self.facts.classes[frame.class_name].bases
                if bases:
                    self._project_call(bases[0].member(method), node, callee_text(node.func), bound=True)

        if effect is Effect.RESET:
            if frame.loops:
                for loop in frame.loops:
                    loop.resets_graph = True
            else:
                frame.facts.resets_graph = True
        elif effect is Effect.MODEL:
            self._construction(effect, node, callee_text(node.func))  # any loop repeats it (GG201), nested or not
        elif effect is Effect.SESSION and callee_text(node.func).rsplit(".", 1)[-1] == "get_session":
            pass  # ``K.get_session()`` returns the one global session: it opens nothing new
        elif effect is Effect.SESSION:
            own_graph = any(keyword.arg == "graph" for keyword in node.keywords)
            if frame.loops and not own_graph:
                add(frame.facts, "session_opens", SessionOpen(self._site(node), callee_text(node.func),
                                                              tuple(l.index for l in frame.loops)))
            if not any(CALLER in exemption for exemption in frame.exempt):
                # (``sess = tf.get_default_session()``, ``if sess is None: sess = tf.Session()``: a
                # session made once, when there is none, is not one per call)
                frame.facts.opens_session = True
        elif effect.builds:
            generic = effect is Effect.OP
            if not generic or self._nested_depth == 0:
                self._construction(effect, node, callee_text(node.func))
            self._nested_depth += 1
            self.generic_visit(node)
            self._nested_depth -= 1
            return
        self.generic_visit(node)

    def _project_call(self, ref: Ref, node: ast.Call, callee: str, bound: bool = False) -> None:
        frame = self._frame
        exempt = frozenset().union(*frame.exempt) if frame.exempt else frozenset()
        frame.facts.calls.append(_new_tuple(ProjectCall, (
            ref, self._site(node), callee, tuple(l.index for l in frame.loops), exempt, bound,
            self._argument_values(node), ())))
        self._note_samples(node)

    def _deferred_use(self, receiver, method: str | None, node: ast.Call, callee: str) -> None:
        """Record ``X.method(...)`` or ``X(...)`` on a parameter or a project call's result (phase 2
        decides what it does once it knows the values that reach ``X``)."""
        frame = self._frame
        exempt = frozenset().union(*frame.exempt) if frame.exempt else frozenset()
        use = DeferredUse(receiver, method, self._site(node), callee, tuple(l.index for l in frame.loops), exempt,
                          self._argument_values(node))
        frame.facts.deferred_uses = [*frame.facts.deferred_uses, use]

    def _argument_values(self, node) -> tuple:
        """(position or keyword, value) of the arguments of call ``node`` whose values phase 2 can
        follow; empty when ``node`` is not a call (a function's name handed to a search driver)."""
        if not isinstance(node, ast.Call):
            return ()
        values = []
        for where, arg in (*enumerate(node.args), *((k.arg, k.value) for k in node.keywords if k.arg)):
            followed = followable(self.resolve(arg))
            if followed is not None:
                values.append((where, followed))
        return tuple(values)


#: Framework base classes whose methods run on every step, by their last name, and those methods.
_PER_STEP_BASES = {"SessionRunHook": "hook", "Callback": "callback"}
_PER_STEP_METHODS = {
    "hook": frozenset({"before_run", "after_run"}),
    "callback": frozenset({"on_batch_begin", "on_batch_end", "on_train_batch_begin", "on_train_batch_end",
                           "on_test_batch_begin", "on_test_batch_end", "on_predict_batch_begin",
                           "on_predict_batch_end", "on_epoch_begin", "on_epoch_end"}),
}


def read_module(tree: ast.Module, path: str, source_lines: list[bytes] | None = None,
                session_names: frozenset = frozenset(), session_factories: frozenset = frozenset(),
                project: frozenset | None = None) -> ModuleFacts:
    """Phase 1 for one parsed module: its :class:`ModuleFacts`. ``session_names`` and
    ``session_factories`` are the configuration's extra sessions (``session-names``,
    ``session-factories``); ``project`` the dotted module names of the run (imports of anything
    else are third-party code and are not followed; None: follow every import)."""
    reader = ModuleReader(path, source_lines, session_names, session_factories, project)
    reader._rebound = rebound_definitions(tree.body)
    # A function body runs after the module has run: it sees the module's imports wherever they stand
    # (``def reset(): tf.reset_default_graph()`` above ``import tensorflow as tf``, as a notebook's first
    # cells often are). Module-level code before an import could not run at all, so binding the imports
    # first changes nothing for it; they are read again in order below.
    for statement in tree.body:
        if isinstance(statement, (ast.Import, ast.ImportFrom)) and all(alias.name != "*" for alias in statement.names):
            reader.visit(statement)
    # Likewise the module's functions and classes: ``train()`` calls ``save()`` defined below it (the
    # body runs when the whole module has). Each definition binds its name again where it stands.
    scope = reader._frames[0].scope
    for statement in tree.body:
        cls = statement.__class__
        if cls is ast.FunctionDef or cls is ast.AsyncFunctionDef or cls is ast.ClassDef:
            scope[statement.name] = ProjectRef(Ref("", statement.name), is_class=cls is ast.ClassDef)
    for statement in tree.body:
        reader.visit(statement)
    reader._settle_eager(reader._frames[0])
    reader._close_frame(reader._frames[0])
    reader.facts.eager_off = reader.eager_off or (reader.graph_mode and not reader.eager)
    for name, value in reader._frames[0].scope.items():
        if value.__class__ is ProjectRef and (value.ref.module or value.ref.name != name):
            reader.facts.exports[name] = value.ref  # imported, or another name's function (``pred = _pred``)
    reader.facts.stars = tuple(reader._project_stars)
    reader._loop_binds = reader._compiled = reader._parts = reader._attr_numbers = None  # the tree is not kept
    if reader.graph_mode and not reader.eager:
        # ``model.predict(x)`` runs a session step when Keras runs on TF1 graphs (this module builds
        # with K.gradients, K.function, placeholders or sessions, and shows no eager signal such as
        # ``.numpy()`` or ``tf.GradientTape``); in TF 2 it runs eagerly.
        for loops in reader._keras_steps:
            for loop in loops:
                loop.runs_step = True
    for facts in reader.facts.functions.values():
        kept = []
        for construction in facts.constructions:
            if construction.loops:
                kept.append(construction)
            elif CALLER not in construction.exempt and construction.effect not in facts.builds:
                if construction.callee.__class__ is not str:  # an operator named by its node (_operator)
                    construction = construction._replace(callee=short(ast.unparse(construction.callee)))
                facts.builds[construction.effect] = (construction.site.row, subject_of(construction))
        facts.constructions = kept
    return reader.facts


def _part_of(value):
    """What one target of ``a, b = value`` holds when ``value`` is a TensorFlow result: Python lists
    (of lists) of tensors for the parts of a tuple of lists (``outputs, losses =
    model_with_buckets(...)``), a tensor otherwise (``a, b = tf.split(x, 2)``)."""
    if not isinstance(value, TFObject):
        return None
    return value if value.kind == "lists" else TENSOR


def _is_range(node: ast.AST) -> bool:
    """``range(...)`` (or ``xrange``, ``six.moves.range``): an iterable whose values are all distinct."""
    return isinstance(node, ast.Call) and callee_text(node.func).rsplit(".", 1)[-1] in ("range", "xrange")
