"""A file as the fixes see it: its imports, names and functions from :mod:`ast` (fast), and the
top-level statements that hold a fixable loop parsed with libcst, positioned in the file's rows.

Also the small questions about a libcst tree that every fix asks (dotted names, what a statement
assigns, which names it mentions) and which helpers of the file build nothing but ops
(:meth:`File.builds_only`).
"""

from __future__ import annotations

import ast
import bisect
import gc
import warnings
from typing import Iterable, Optional

import libcst as cst
from libcst.metadata import CodePosition, CodeRange, MetadataWrapper, ParentNodeProvider, PositionProvider
from libcst.metadata.position_provider import PositionProvidingCodegenState

from graphguard.analysis.syntax import dotted_name
from graphguard.notebook import notebook_of
from graphguard.python2 import read_python2

#: Builtins that compute a value from their arguments and nothing else.
PURE_BUILTINS = frozenset({"len", "int", "float", "bool", "str", "abs", "round", "min", "max", "tuple", "range"})


#: Methods that change the object they are called on (in place).
MUTATORS = frozenset({"append", "extend", "insert", "pop", "remove", "clear", "update", "setdefault", "popitem",
                       "sort", "reverse", "add", "discard", "fill", "resize", "put", "__setitem__"})


#: Methods called for what they do, not for a value: a helper calling one is never moved.
EFFECT_METHODS = frozenset({"run", "eval", "save", "restore", "write", "dump", "add_summary", "flush", "close",
                             "append", "extend", "update", "insert", "pop", "remove", "clear", "put", "send",
                             "info", "debug", "warning", "error", "log", "print", "savefig", "show"})


def _initializes(name: str) -> bool:
    """Whether a call of the dotted ``name`` builds or runs a variables initializer, or loads weights."""
    return "initializer" in name or "initialize_all_variables" in name or name.endswith(".load_weights")


class File:
    """What every proposal needs from the whole file, read with :mod:`ast` (fast): the imports, the
    names in use, the line ends, and where each top-level statement starts and ends. libcst parses
    only the top-level statements that hold a loop with a finding (:meth:`region`), so the cost of a
    fix grows with the code it touches, not with the file."""

    def __init__(self, text: str, tree: ast.Module) -> None:
        from graphguard.fix.edits import line_starts

        self.text, self.tree = text, tree
        self.starts = line_starts(text)
        self.newline = next((end for end in ("\r\n", "\r", "\n") if end in text[:4096]), "\n")
        self.taken: set[str] = set()  #: fresh names given in this pass
        self.aliases: dict[str, str] = {}  #: local name -> dotted name it was imported as
        self.identifiers: set[str] = set()  #: every name used anywhere (fresh names avoid them)
        for node in ast.walk(tree):
            if isinstance(node, ast.Name):
                self.identifiers.add(node.id)
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                self.identifiers.add(node.name)
            elif isinstance(node, ast.arg):
                self.identifiers.add(node.arg)
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.asname:
                        self.aliases.setdefault(alias.asname, alias.name)
                    else:
                        top = alias.name.split(".")[0]
                        self.aliases.setdefault(top, top)
            elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
                for alias in node.names:
                    if alias.name != "*":
                        self.aliases.setdefault(alias.asname or alias.name, f"{node.module}.{alias.name}")
        for node in tree.body:  # tf1 = tf.compat.v1; make_saver = tf.train.Saver
            if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
                dotted = dotted_name(node.value)
                head = dotted.split(".")[0] if dotted else None
                if head in self.aliases:
                    self.aliases.setdefault(node.targets[0].id, self.aliases[head] + dotted[len(head):])
        #: module-level functions, by name: a helper moved by an unsafe fix must be one of them
        self.functions = {node.name: node for node in tree.body if isinstance(node, ast.FunctionDef)}
        self.all_functions: dict[str, list] = {}  #: every function of the file, nested ones too, by name
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                self.all_functions.setdefault(node.name, []).append(node)
        self._pure: dict[str, bool] = {}
        self._rebound: Optional[set] = None
        self._graph_values: Optional[set] = None
        self._links: Optional[dict] = None
        self.spans = [(min([node.lineno] + [d.lineno for d in getattr(node, "decorator_list", [])]),
                       node.end_lineno or node.lineno) for node in tree.body]
        self._firsts = [first for first, _ in self.spans]
        self._regions: dict[int, Optional[Region]] = {}
        self._initializers: dict = {}  # id(scope) -> the first row of an initializer in it
        self.bindings: dict = {}  #: id(scope) -> what :func:`graphguard.fix.safety.earlier_value_read_after` reads
        self.whole = None  #: the whole file as one region, once :meth:`prepare` found it worth it

    def initializes_before(self, row: int) -> bool:
        """Whether the function holding line ``row`` (or the module, outside functions) builds or runs a
        variables initializer, or loads weights, on a line before ``row``. Time proportional to the
        top-level statement holding ``row`` (each scope's calls are read once per file)."""
        scope = self.scope_at(row, row)
        first = self._initializers.get(id(scope))
        if first is None:
            first = min((node.lineno for node in ast.walk(scope) if isinstance(node, ast.Call)
                         and _initializes(dotted_name(node.func) or "")), default=float("inf"))
            self._initializers[id(scope)] = first
        return first < row

    def scope_at(self, first_row: int, last_row: int) -> ast.AST:
        """The innermost function whose lines hold ``first_row`` to ``last_row`` (the latest to start
        of those that do), else the module. Only the top-level statements holding ``first_row`` are
        read."""
        scope: ast.AST = self.tree
        for statement in self.statements_at(first_row):
            for node in ast.walk(statement):
                if (isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.lineno <= first_row
                        and last_row <= (node.end_lineno or 0) and node.lineno >= getattr(scope, "lineno", 0)):
                    scope = node
        return scope

    def statements_at(self, row: int) -> list:
        """The top-level statements whose lines (decorators included) hold ``row``, in order (more than
        one only for statements sharing a line, ``a = 1; b = 2``). Time logarithmic in the file."""
        return [self.tree.body[index] for index in self._span_indexes(row)]

    def makes_variables(self, name: str, creates, summaries: bool = False, seen: Optional[set] = None) -> bool:
        """Whether the function ``name`` of this file (or one it calls) calls a TensorFlow name for which
        ``creates(tf_name)`` is true (or, with ``summaries``, a summary op), or a function of another
        module graphguard cannot read."""
        from graphguard.analysis.catalog import Effect, effect_of

        seen = set() if seen is None else seen
        function = self.functions.get(name)
        if function is None or name in seen:
            return False
        seen.add(name)
        for node in ast.walk(function):
            if not isinstance(node, ast.Call):
                continue
            dotted = dotted_name(node.func)
            if dotted is None:
                continue
            head, _, rest = dotted.partition(".")
            imported = self.aliases.get(head)
            if imported is not None:
                full = canonical(imported + ("." + rest if rest else ""))
                if full is not None and (creates(full) or (summaries and effect_of(full) is Effect.SUMMARY)):
                    return True
            elif "." not in dotted and self.makes_variables(dotted, creates, summaries, seen):
                return True
        return False

    def globals_set(self, name: str, seen: Optional[set] = None) -> set:
        """The names the functions called ``name`` in this file (nested ones too, and the functions they
        call) rebind through ``global`` or ``nonlocal`` statements."""
        seen = set() if seen is None else seen
        if name in seen:
            return set()
        seen.add(name)
        found: set = set()
        for function in self.all_functions.get(name, ()):  # nested functions too: `nonlocal y` in a closure
            for node in ast.walk(function):
                if isinstance(node, (ast.Global, ast.Nonlocal)):
                    found.update(node.names)
                elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
                    found |= self.globals_set(node.func.id, seen)
        return found

    def graph_values(self) -> set:
        """The module-level names every module-level binding of which is the result of a TensorFlow call
        (``logits = tf.matmul(x, w)``), and that no function declares ``global``: graph tensors, ops and
        variables, which no Python call changes in place (an op built from one reads its value when it
        runs). Another binding at module level (a loop target, an augmented assignment) leaves a name out."""
        if self._graph_values is None:
            tf_bound: set = set()
            other: set = set(self.rebound_globals())
            todo = list(self.tree.body)
            while todo:
                node = todo.pop()
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
                    other.add(getattr(node, "name", ""))
                    continue  # another scope
                if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
                    value = node.value
                    dotted = dotted_name(value.func) if isinstance(value, ast.Call) else None
                    head = dotted.split(".")[0] if dotted else None
                    full = canonical(self.aliases[head] + dotted[len(head):]) if head in self.aliases else None
                    (tf_bound if full is not None else other).add(node.targets[0].id)
                    todo.append(value)
                    continue
                if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                    other.add(node.id)
                todo.extend(ast.iter_child_nodes(node))
            self._graph_values = tf_bound - other
        return self._graph_values

    def rebound_globals(self) -> set:
        """The names some function of this file (a method, a nested function) declares ``global`` or
        ``nonlocal``: a call of it may rebind them."""
        if self._rebound is None:
            self._rebound = {name for node in ast.walk(self.tree) if isinstance(node, (ast.Global, ast.Nonlocal))
                             for name in node.names}
        return self._rebound

    def sharers(self, names: set) -> set:
        """The names that may hold one of ``names``' objects, or an object inside one, anywhere in the
        file, transitively: ``alias = cfg``, ``view = arr[:]``, ``opts = {"cfg": cfg}``, ``lst = [arr]``,
        ``for a in [arr]``, and the other way round. A change through one of them (``opts["cfg"]["s"] =
        1``, ``view += 1``) changes what ``names`` read (a new user's trial: safe fixes froze values
        changed through such aliases). Call results are new objects and dict keys are not held."""
        if self._links is None:
            links: dict = {}

            def link(target: ast.AST, value: ast.AST) -> None:
                for name in _names_bound(target):
                    for held in _held(value):
                        if held != name:
                            links.setdefault(name, set()).add(held)
                            links.setdefault(held, set()).add(name)

            for node in ast.walk(self.tree):
                if isinstance(node, ast.Assign):
                    for target in node.targets:
                        link(target, node.value)
                elif isinstance(node, (ast.AnnAssign, ast.NamedExpr)) and node.value is not None:
                    link(node.target, node.value)
                elif isinstance(node, (ast.For, ast.AsyncFor, ast.comprehension)):
                    link(node.target, node.iter)
            self._links = links
        found, todo = set(), list(names)
        while todo:
            name = todo.pop()
            for other in self._links.get(name, ()):
                if other not in found and other not in names:
                    found.add(other)
                    todo.append(other)
        return found

    def builds_only(self, name: str) -> bool:
        """Whether the module-level function ``name`` of this file does nothing a caller could miss if
        it ran once instead of per iteration: it runs no session, writes nothing, prints nothing,
        declares no ``global``, changes no object it did not create, and calls only TensorFlow,
        NumPy (not its random module), pure builtins and other such functions of this file
        (``model(images)`` in the demo). Calls of it may then move as unsafe fixes."""
        if name in self._pure:
            return self._pure[name]
        self._pure[name] = False  # recursion: assume not until shown
        function = self.functions.get(name)
        self._pure[name] = function is not None and self._pure_body(function)
        return self._pure[name]

    def _pure_body(self, function: ast.FunctionDef) -> bool:
        local = {arg.arg for arg in ast.walk(function.args) if isinstance(arg, ast.arg)}
        # A mutable default (`cache={}`) lives across calls: changing it is state, not a local.
        positional = function.args.posonlyargs + function.args.args
        for arg, default in zip(positional[len(positional) - len(function.args.defaults):], function.args.defaults):
            if not isinstance(default, ast.Constant):
                local.discard(arg.arg)
        for arg, default in zip(function.args.kwonlyargs, function.args.kw_defaults):
            if default is not None and not isinstance(default, ast.Constant):
                local.discard(arg.arg)
        for node in ast.walk(function):
            if isinstance(node, (ast.Name,)) and isinstance(node.ctx, ast.Store):
                local.add(node.id)
        for node in ast.walk(function):
            if isinstance(node, (ast.Global, ast.Nonlocal, ast.Yield, ast.YieldFrom, ast.Await)):
                return False
            if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Delete)):
                targets = node.targets if isinstance(node, (ast.Assign, ast.Delete)) else [node.target]
                for target in targets:
                    root = target
                    while isinstance(root, (ast.Attribute, ast.Subscript)):
                        root = root.value
                    if target is not root and not (isinstance(root, ast.Name) and root.id in local):
                        return False  # changes an object it did not create
            if not isinstance(node, ast.Call):
                continue
            dotted = dotted_name(node.func)
            if dotted is None:
                if isinstance(node.func, ast.Attribute) and node.func.attr in EFFECT_METHODS:
                    return False
                continue  # a method on a computed value: tf.train.AdamOptimizer(lr).minimize(loss)
            head, _, rest = dotted.partition(".")
            imported = self.aliases.get(head)
            if imported is not None:
                if canonical(imported + ("." + rest if rest else "")) is not None:
                    continue
                if imported.split(".")[0] in ("numpy", "np") and ".random" not in "." + rest:
                    continue
                return False
            if "." in dotted:
                if head not in local or dotted.rsplit(".", 1)[1] in EFFECT_METHODS:
                    return False
                continue
            if dotted in PURE_BUILTINS or dotted in local:
                continue
            if not self.builds_only(dotted):
                return False
        return True

    def prepare(self, rows: list[int]) -> None:
        """Say which rows fixes will be proposed for: when they fall in many top-level statements, the
        file is parsed once, whole (each separate libcst parse has a fixed cost of some milliseconds)."""
        wanted = {self.spans[index][0] for row in rows for index in self._span_indexes(row)}
        if len(wanted) > 40:
            self.whole = Region.parse(self, self.text, 0) or False

    def _span_indexes(self, row: int) -> list[int]:
        """The indexes in :attr:`spans` of the top-level statements holding ``row``, first first."""
        index = bisect.bisect_right(self._firsts, row) - 1
        found = []
        while index >= 0 and self.spans[index][1] >= row:
            found.append(index)
            index -= 1
        return found[::-1]

    def region(self, row: int) -> Optional["Region"]:
        """The top-level statement holding ``row``, parsed with libcst (None: not parsable alone)."""
        indexes = self._span_indexes(row)
        if not indexes:
            return None
        first, last = self.spans[indexes[0]]
        if self.whole is not None:  # many regions wanted: the file was parsed once, whole
            return self.whole or None
        if first not in self._regions:
            end = self.starts[last] if last < len(self.starts) else len(self.text)
            self._regions[first] = Region.parse(self, self.text[self.starts[first - 1]:end], first - 1)
        return self._regions[first]


class Region:
    """One top-level statement of the file, parsed with libcst; positions are the file's rows."""

    def __init__(self, file: File, module: cst.Module, positions: dict, parents: dict) -> None:
        self.file, self.module, self.positions, self.parents = file, module, positions, parents
        self.text, self.newline, self.aliases = file.text, file.newline, file.aliases
        self.identifiers, self.taken = file.identifiers, file.taken
        self.loops: dict = {}  #: (row, column 0-based) -> For/While node
        self.loop_facts: dict = {}  #: id(loop) -> what the loop assigns and calls (hoist's, computed once)
        self.expressions: dict = {}  #: (row, column, end row, end column), 0-based columns -> outermost expression
        self._children: Optional[dict] = None
        for node, where in positions.items():
            if isinstance(node, cst.BaseExpression):
                key = (where.start.line, where.start.column, where.end.line, where.end.column)
                known = self.expressions.get(key)
                if known is None or inside(parents, known, node):
                    self.expressions[key] = node
            elif isinstance(node, (cst.For, cst.While)):
                self.loops[(where.start.line, where.start.column)] = node

    def children(self, node: cst.CSTNode) -> list:
        """``node.children`` in source order, from the parents already known (libcst computes
        ``children`` anew at each call, with a visitor: most of a walk's time on a large loop)."""
        if self._children is None:
            self._children = {}
            for child, parent in self.parents.items():
                self._children.setdefault(parent, []).append(child)
        return self._children.get(node, [])

    @classmethod
    def parse(cls, file: File, text: str, offset: int) -> Optional["Region"]:
        """``text`` (the file's rows from ``offset + 1`` on) parsed, or None when it does not parse alone.

        Python's cycle collector is paused meanwhile: a tree holds no cycles, and the collector went
        over the whole growing tree again and again (a file of 3,000 loops: 21 s to parse and position,
        11 s without)."""
        paused = gc.isenabled()
        gc.disable()
        try:
            try:
                module = cst.parse_module(text)
            except (cst.ParserSyntaxError, RecursionError, ValueError):
                return None
            positions, parents = positions_and_parents(module, offset)
            return cls(file, module, positions, parents)
        finally:
            if paused:
                gc.enable()


class _Recorder:
    """Where :class:`_PositionsAndParents` writes: libcst's ``PositionProvider`` keeps its positions in
    ``_computed``; the parents and the stack of nodes being generated are ours."""

    __slots__ = ("_computed", "parents", "stack")

    def __init__(self) -> None:
        self._computed: dict = {}
        self.parents: dict = {}
        self.stack: list = []


class _PositionsAndParents(PositionProvidingCodegenState):
    """libcst's ``PositionProvider`` code generation, which also notes each node's parent: the node whose
    generation was under way when the node's began."""

    def before_codegen(self, node: cst.CSTNode) -> None:
        stack = self.provider.stack
        if stack:
            self.provider.parents[node] = stack[-1]
        stack.append(node)
        super().before_codegen(node)

    def after_codegen(self, node: cst.CSTNode) -> None:
        self.provider.stack.pop()
        super().after_codegen(node)


def positions_and_parents(module: cst.Module, offset: int = 0) -> tuple[dict, dict]:
    """(node -> ``CodeRange``, node -> parent node) for ``module``: what libcst's ``PositionProvider``
    and ``ParentNodeProvider`` give, with rows ``offset`` lower in the file (a region's first row is
    ``offset + 1``), in one pass of code generation instead of two walks. On 300 small files, resolving
    the two providers through ``MetadataWrapper`` took 2.8 s, mostly ``ParentNodeProvider``'s batched
    visitor (``inspect.getmembers`` per file); this takes about 0.8 s. Falls back to the providers if
    libcst's code generation ever changes shape (tests compare the two on the fixtures)."""
    try:
        recorder = _Recorder()
        state = _PositionsAndParents(default_indent=module.default_indent, default_newline=module.default_newline,
                                     provider=recorder, line=offset + 1)
        module._codegen(state)
        if not recorder.stack:
            return recorder._computed, recorder.parents
    except (AttributeError, TypeError):
        pass
    wrapper = MetadataWrapper(module, unsafe_skip_copy=True)
    shifted = {node: CodeRange(CodePosition(r.start.line + offset, r.start.column),
                               CodePosition(r.end.line + offset, r.end.column))
               for node, r in wrapper.resolve(PositionProvider).items()}
    return shifted, dict(wrapper.resolve(ParentNodeProvider))


def parse(text: str) -> Optional[File]:
    """The file ``text`` for :func:`propose`, or None when it does not parse."""
    try:
        return File(text, ast.parse(text))
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None


def inside(parents: dict, inner: cst.CSTNode, outer: cst.CSTNode) -> bool:
    node = parents.get(inner)
    while node is not None:
        if node is outer:
            return True
        node = parents.get(node)
    return False


def dotted(node: cst.BaseExpression) -> Optional[str]:
    if isinstance(node, cst.Name):
        return node.value
    if isinstance(node, cst.Attribute):
        base = dotted(node.value)
        return f"{base}.{node.attr.value}" if base else None
    return None


def canonical(dotted: str) -> Optional[str]:
    """``tensorflow.compat.v1.train.Saver`` -> ``tf.train.Saver``; None when not TensorFlow's."""
    for prefix in ("tensorflow.compat.v1.", "tensorflow.compat.v2.", "tensorflow."):
        if dotted.startswith(prefix):
            return "tf." + dotted[len(prefix):]
    return None


def root(node: cst.BaseExpression) -> Optional[str]:
    while isinstance(node, (cst.Attribute, cst.Subscript, cst.Call)):
        node = node.func if isinstance(node, cst.Call) else node.value
    return node.value if isinstance(node, cst.Name) else None


def indent(text: str, row: int, starts: list[int]) -> str:
    line = text[starts[row - 1]:]
    return line[: len(line) - len(line.lstrip(" \t"))]


def nodes(node: cst.CSTNode, kind: type) -> Iterable:
    """Every node of type ``kind`` in ``node``'s tree, ``node`` included, outermost first."""
    if isinstance(node, kind):
        yield node
    for child in node.children:
        yield from nodes(child, kind)


def calls(node: cst.CSTNode) -> Iterable[cst.Call]:
    return nodes(node, cst.Call)


def names_in(node: cst.CSTNode) -> Iterable[cst.Name]:
    return nodes(node, cst.Name)


def assigned_names(statement: cst.CSTNode) -> set:
    """The names ``statement`` binds or unbinds anywhere in it (see :func:`assigns`); ``"*"`` among
    them for a star import, which may bind any name (a new user's trial: ``from tensorflow import
    argmax`` in a session block was missed, and a safe fix moved ``argmax(x, 1)`` above it)."""
    found = set()

    def visit(node: cst.CSTNode) -> None:
        targets = []
        if isinstance(node, cst.Assign):
            targets = [t.target for t in node.targets]
        elif isinstance(node, (cst.AugAssign, cst.AnnAssign, cst.For, cst.NamedExpr, cst.Del)):
            targets = [node.target]
        elif isinstance(node, cst.WithItem) and node.asname is not None:
            targets = [node.asname.name]
        elif isinstance(node, cst.ExceptHandler) and node.name is not None:
            targets = [node.name.name]
        elif isinstance(node, (cst.FunctionDef, cst.ClassDef)):
            found.add(node.name.value)
        elif isinstance(node, (cst.Import, cst.ImportFrom)):
            found.update(imported_names(node))
        for target in targets:
            found.update(n.value for n in names_in(target) if not isinstance(target, (cst.Attribute, cst.Subscript)))
        for child in node.children:
            visit(child)

    visit(statement)
    return found


def compile_problem(text: str, path: str) -> Optional[str]:
    """Why ``text`` (a fixed file, or a line a fix adds) does not compile, or None when it does."""
    # A notebook's cells run in IPython, which allows `await` at the top level of a cell.
    flags = ast.PyCF_ALLOW_TOP_LEVEL_AWAIT if path.endswith(".ipynb") else 0
    try:
        compile(text, path, "exec", flags=flags, dont_inherit=True)
    except (SyntaxError, ValueError) as error:
        return getattr(error, "msg", None) or str(error)
    return None


def mentions(node: cst.CSTNode, name: str) -> bool:
    if isinstance(node, cst.Name) and node.value == name:
        return True
    if isinstance(node, cst.Attribute):
        return mentions(node.value, name)
    return any(mentions(child, name) for child in node.children)


def imported_names(node, star: str = "*") -> set:
    """The names an ``import`` or ``from ... import`` statement binds (``import a.b`` binds ``a``);
    ``{star}`` for a star import, which may bind any name."""
    if isinstance(node.names, cst.ImportStar):
        return {star}
    found = set()
    for alias in node.names:
        bound = alias.asname.name if alias.asname is not None else alias.name
        while isinstance(bound, cst.Attribute):
            bound = bound.value
        if isinstance(bound, cst.Name):
            found.add(bound.value)
    return found


def assigns(node: cst.CSTNode, name: str) -> bool:
    """Whether ``node`` binds or unbinds ``name`` anywhere: ``=``, ``+=``, ``for``, ``:=``, ``del``,
    ``with ... as``, ``except ... as`` (unbound after the handler), ``import ... as``, ``def``,
    ``class`` (a new user's trial: ``del m`` in the loop after a moved ``m = ...`` left a NameError)."""
    targets = []
    if isinstance(node, cst.Assign):
        targets = [t.target for t in node.targets]
    elif isinstance(node, (cst.AugAssign, cst.AnnAssign, cst.For, cst.NamedExpr, cst.Del)):
        targets = [node.target]
    elif isinstance(node, cst.WithItem) and node.asname is not None:
        targets = [node.asname.name]
    elif isinstance(node, cst.ExceptHandler) and node.name is not None:
        targets = [node.name.name]
    elif isinstance(node, (cst.FunctionDef, cst.ClassDef)) and node.name.value == name:
        return True
    elif isinstance(node, (cst.Import, cst.ImportFrom)) and name in imported_names(node, star=""):
        return True
    if any(mentions(t, name) for t in targets):
        return True
    return any(assigns(child, name) for child in node.children)


def python2_reason(filename: str, raw: bytes) -> str | None:
    """Why ``filename`` (bytes ``raw``) gets no fixes, when graphguard reads it as Python 2 (a
    notebook: when any of its cells is); else None. Fixes are made on Python 3 syntax and would
    rewrite the Python 2 statements they touch."""
    if filename.endswith(".ipynb"):
        notebook = notebook_of(filename, raw)
        if notebook is None or not notebook.python2:
            return None
        return f"cell {notebook.python2[0]} is Python 2, read for findings only"
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ast.parse(raw)
        return None
    except (SyntaxError, ValueError):
        return "the file is Python 2, read for findings only" if read_python2(raw) else None
    except (RecursionError, MemoryError):
        return None  # nested too deeply for CPython's parser: not Python 2, and no fix either


def _names_bound(target: ast.AST) -> list:
    """The plain names an assignment target binds (``a``, ``a, b``, ``*rest``); none for ``x.y`` or
    ``x[i]``, which bind into an object."""
    if isinstance(target, ast.Name):
        return [target.id]
    if isinstance(target, (ast.Tuple, ast.List)):
        return [name for element in target.elts for name in _names_bound(element)]
    if isinstance(target, ast.Starred):
        return _names_bound(target.value)
    return []


def _held(value: ast.AST) -> set:
    """The names whose objects (or objects inside them) ``value`` may evaluate to: a name, an
    attribute or item of one (a NumPy slice is a view), the elements of a list, tuple or set, the
    values of a dict, either side of a conditional expression."""
    if isinstance(value, ast.Name):
        return {value.id}
    if isinstance(value, (ast.Attribute, ast.Subscript, ast.Starred)):
        return _held(value.value)
    if isinstance(value, (ast.List, ast.Tuple, ast.Set)):
        return {name for element in value.elts for name in _held(element)}
    if isinstance(value, ast.Dict):
        return {name for element in value.values for name in _held(element)}
    if isinstance(value, ast.IfExp):
        return _held(value.body) | _held(value.orelse)
    return set()
