"""Loop-invariant hoisting: move graph construction that repeats in a session loop to just before it.

For one finding (GG101-GG107, GG110) this module reads the file with libcst, finds the loop and the
reported expression by their positions, and proposes a :class:`~graphguard.fix.edits.Fix`:

- **statement move**: the finding is the whole value of a top-level ``name = <expr>`` statement of the
  loop body, ``name`` is assigned nowhere else in the loop and not read before it: the statement moves
  to just before the loop (``saver = tf.train.Saver()``, the demo's model, losses and train op);
- **fresh name**: otherwise ``<fresh> = <expr>`` is inserted just before the loop and the expression
  in the loop reads ``<fresh>`` (``accuracy = tf.reduce_mean(...)`` for an op inside ``sess.run``).

A proposal is made only when the expression is *loop-invariant*: every name it reads is assigned
nowhere in the loop (the loop target included), no attribute or item of those names is assigned or
deleted in it, and the expression calls nothing but TensorFlow graph builders and a few pure builtins.
It is **safe** when, in addition, nothing in the loop could change what the moved code sees: no method
call on an object it reads, no helper that could create variables before a hoisted ``Saver`` or
initializer. It is **unsafe** (``--unsafe-fixes``) when it calls a helper of the project or a method
that creates variables (``opt.minimize``) or reads an object a method in the loop may change. Loops
that reset or replace the default graph, code under a ``with`` inside the loop (a name scope, a
device, control dependencies), comprehensions, nested functions and variable creators such as
``tf.get_variable`` are never changed: the finding stays, without a fix.

libcst keeps every comment and blank line (``graphguard check`` itself runs on :mod:`ast`; this module
is imported only when fixes are asked for).
"""

from __future__ import annotations

import ast
import builtins
import re
from dataclasses import dataclass, field
from typing import Iterable, Optional

import libcst as cst
from libcst.metadata import CodePosition, CodeRange, MetadataWrapper, ParentNodeProvider, PositionProvider

from graphguard.analysis.catalog import Effect, effect_of
from graphguard.analysis.syntax import dotted_name
from graphguard.fix.edits import FIXABLE_CODES, SAFE, UNSAFE, Edit, Fix

#: The codes this module proposes fixes for (GG201: :mod:`graphguard.fix.keras`).
CODES = FIXABLE_CODES - {"GG201"}

#: Builtins that compute a value from their arguments and nothing else.
_PURE_BUILTINS = frozenset({"len", "int", "float", "bool", "str", "abs", "round", "min", "max", "tuple", "range"})
#: TensorFlow names (canonical ``tf.`` spelling) that create variables: moved only as unsafe fixes.
_VARIABLE_PREFIXES = ("tf.layers.", "tf.contrib.layers.", "tf.keras.", "tf.contrib.rnn.", "tf.nn.rnn_cell.",
                      "tf.contrib.slim.", "tf.contrib.seq2seq.", "tf.estimator.")
_VARIABLE_NAMES = frozenset({"tf.nn.dynamic_rnn", "tf.nn.static_rnn", "tf.nn.bidirectional_dynamic_rnn",
                             "tf.contrib.rnn.static_rnn", "tf.train.get_or_create_global_step",
                             "tf.train.create_global_step"})
#: Methods that create variables (optimizer slots, a global step) when called.
_VARIABLE_METHODS = frozenset({"minimize", "apply_gradients"})
#: Placeholders are VARIABLE-effect names that create no variable.
_PLACEHOLDERS = frozenset({"tf.placeholder", "tf.placeholder_with_default", "tf.sparse_placeholder"})
#: Effects whose builders may move; others (datasets and iterators: their state restarts; graph
#: imports; file writers: an event file each) are never moved.
_MOVABLE = frozenset({Effect.OP, Effect.OPERATOR, Effect.CONSTANT, Effect.ASSIGN, Effect.SUMMARY, Effect.SAVER,
                      Effect.INITIALIZER, Effect.VARIABLE})
#: Builders that capture what the graph holds when they are built: moved only when nothing else in the
#: loop may add variables or summaries before them.
_CAPTURING = frozenset({Effect.SAVER, Effect.INITIALIZER})
#: Methods that change the object they are called on (in place).
_MUTATORS = frozenset({"append", "extend", "insert", "pop", "remove", "clear", "update", "setdefault", "popitem",
                       "sort", "reverse", "add", "discard", "fill", "resize", "put", "__setitem__"})
#: Methods called for what they do, not for a value: a helper calling one is never moved.
_EFFECT_METHODS = frozenset({"run", "eval", "save", "restore", "write", "dump", "add_summary", "flush", "close",
                             "append", "extend", "update", "insert", "pop", "remove", "clear", "put", "send",
                             "info", "debug", "warning", "error", "log", "print", "savefig", "show"})
#: Calls that read what the graph holds when they run (collections, variable lists, merge_all).
_CAPTURING_NAMES = re.compile(r"merge_all|get_collection|(?:trainable|global|local|all|model|moving_average)_variables")
_GRAPH_CHANGERS = frozenset({"tf.reset_default_graph", "tf.Graph", "tf.keras.backend.clear_session",
                             "tf.train.import_meta_graph", "tf.import_graph_def"})


class _File:
    """What every proposal needs from the whole file, read with :mod:`ast` (fast): the imports, the
    names in use, the line ends, and where each top-level statement starts and ends. libcst parses
    only the top-level statements that hold a loop with a finding (:meth:`region`), so the cost of a
    fix grows with the code it touches, not with the file."""

    def __init__(self, text: str, tree: ast.Module) -> None:
        from graphguard.fix.edits import line_starts

        self.text = text
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
        self._pure: dict[str, bool] = {}
        self.spans = [(min([node.lineno] + [d.lineno for d in getattr(node, "decorator_list", [])]),
                       node.end_lineno or node.lineno) for node in tree.body]
        self._regions: dict[int, Optional[_Module]] = {}

    def globals_set(self, name: str, seen: Optional[set] = None) -> set:
        """The module-level names the function ``name`` of this file (and the functions of this file
        it calls) rebinds through ``global`` statements."""
        seen = set() if seen is None else seen
        function = self.functions.get(name)
        if function is None or name in seen:
            return set()
        seen.add(name)
        found: set = set()
        for node in ast.walk(function):
            if isinstance(node, ast.Global):
                found.update(node.names)
            elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
                found |= self.globals_set(node.func.id, seen)
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
                if isinstance(node.func, ast.Attribute) and node.func.attr in _EFFECT_METHODS:
                    return False
                continue  # a method on a computed value: tf.train.AdamOptimizer(lr).minimize(loss)
            head, _, rest = dotted.partition(".")
            imported = self.aliases.get(head)
            if imported is not None:
                if _canonical(imported + ("." + rest if rest else "")) is not None:
                    continue
                if imported.split(".")[0] in ("numpy", "np") and ".random" not in "." + rest:
                    continue
                return False
            if "." in dotted:
                if head not in local or dotted.rsplit(".", 1)[1] in _EFFECT_METHODS:
                    return False
                continue
            if dotted in _PURE_BUILTINS or dotted in local:
                continue
            if not self.builds_only(dotted):
                return False
        return True

    def region(self, row: int) -> Optional["_Module"]:
        """The top-level statement holding ``row``, parsed with libcst (None: not parsable alone)."""
        for first, last in self.spans:
            if first <= row <= last:
                break
        else:
            return None
        if first not in self._regions:
            end = self.starts[last] if last < len(self.starts) else len(self.text)
            self._regions[first] = _Module.parse(self, self.text[self.starts[first - 1]:end], first - 1)
        return self._regions[first]


class _Module:
    """One top-level statement of the file, parsed with libcst; positions are the file's rows."""

    def __init__(self, file: _File, module: cst.Module, positions: dict, parents: dict) -> None:
        self.file, self.module, self.positions, self.parents = file, module, positions, parents
        self.text, self.newline, self.aliases = file.text, file.newline, file.aliases
        self.identifiers, self.taken = file.identifiers, file.taken
        self.loops: dict = {}  #: (row, column 0-based) -> For/While node
        self.expressions: dict = {}  #: (row, column, end row, end column), 0-based columns -> outermost expression
        for node, where in positions.items():
            if isinstance(node, cst.BaseExpression):
                key = (where.start.line, where.start.column, where.end.line, where.end.column)
                known = self.expressions.get(key)
                if known is None or _inside(parents, known, node):
                    self.expressions[key] = node
            elif isinstance(node, (cst.For, cst.While)):
                self.loops[(where.start.line, where.start.column)] = node

    @classmethod
    def parse(cls, file: _File, text: str, offset: int) -> Optional["_Module"]:
        try:
            module = cst.parse_module(text)
        except (cst.ParserSyntaxError, RecursionError, ValueError):
            return None
        wrapper = MetadataWrapper(module, unsafe_skip_copy=True)
        shifted = {
            node: CodeRange(CodePosition(r.start.line + offset, r.start.column), CodePosition(r.end.line + offset, r.end.column))
            for node, r in wrapper.resolve(PositionProvider).items()
        }
        return cls(file, module, shifted, wrapper.resolve(ParentNodeProvider))


def parse(text: str) -> Optional[_File]:
    """The file ``text`` for :func:`propose`, or None when it does not parse."""
    try:
        return _File(text, ast.parse(text))
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None


def _inside(parents: dict, inner: cst.CSTNode, outer: cst.CSTNode) -> bool:
    node = parents.get(inner)
    while node is not None:
        if node is outer:
            return True
        node = parents.get(node)
    return False


def _dotted(node: cst.BaseExpression) -> Optional[str]:
    if isinstance(node, cst.Name):
        return node.value
    if isinstance(node, cst.Attribute):
        base = _dotted(node.value)
        return f"{base}.{node.attr.value}" if base else None
    return None


def _canonical(dotted: str) -> Optional[str]:
    """``tensorflow.compat.v1.train.Saver`` -> ``tf.train.Saver``; None when not TensorFlow's."""
    for prefix in ("tensorflow.compat.v1.", "tensorflow.compat.v2.", "tensorflow."):
        if dotted.startswith(prefix):
            return "tf." + dotted[len(prefix):]
    return None


class _NotFixable(Exception):
    """Why a finding gets no fix (kept for the note and the tests)."""


@dataclass
class _Reads:
    names: set = field(default_factory=set)
    roots: set = field(default_factory=set)  #: names whose attributes or items the expression reads
    tf_calls: list = field(default_factory=list)  #: canonical TF names called
    helpers: list = field(default_factory=list)  #: project callables called (unsafe)
    creates_variables: bool = False
    opens_files: bool = False  #: a FileWriter: one event file instead of one per iteration


def _reads(module: _Module, expr: cst.BaseExpression, trusted: Optional[cst.Call] = None) -> _Reads:
    """What evaluating ``expr`` reads and calls; raises :class:`_NotFixable` for what cannot move.
    ``trusted`` is a method call the analysis found to build graph ops itself (``var.assign_add(1)``,
    ``tensor.eval`` excluded): not taken for a helper."""
    reads = _Reads()

    def visit(node: cst.CSTNode) -> None:
        if isinstance(node, (cst.Lambda, cst.ListComp, cst.SetComp, cst.DictComp, cst.GeneratorExp, cst.Yield,
                             cst.Await, cst.NamedExpr)):
            raise _NotFixable("a lambda, comprehension or assignment expression inside it")
        if isinstance(node, cst.Name):
            reads.names.add(node.value)
            return
        if isinstance(node, cst.Attribute):
            dotted = _dotted(node)
            root = _root(node)
            if root is not None and root not in module.aliases:
                reads.roots.add(root)
            if dotted is None:
                visit(node.value)
                return
            reads.names.add(dotted.split(".")[0])
            return
        if isinstance(node, cst.Subscript):
            root = _root(node.value)
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
        if isinstance(func, (cst.Name, cst.Attribute)) and _dotted(func) is not None:
            reads.names.add(_dotted(func).split(".")[0])
        else:
            visit(func)

    def _call(node: cst.Call) -> None:
        dotted = _dotted(node.func)
        if (node is trusted and isinstance(node.func, cst.Attribute) and node.func.attr.value not in ("run", "eval")
                and (dotted is None or dotted.split(".")[0] not in module.aliases)):
            if node.func.attr.value in _VARIABLE_METHODS:
                reads.creates_variables = True
            reads.tf_calls.append("." + node.func.attr.value)  # a TensorFlow object's method
            return
        if dotted is None:  # a method on a result: tf.train.AdamOptimizer(lr).minimize(loss)
            if isinstance(node.func, cst.Attribute):
                visit(node.func.value)
                if node.func.attr.value in _VARIABLE_METHODS:
                    reads.creates_variables = True
                    return
            raise _NotFixable("a call on a computed value")
        head, _, rest = dotted.partition(".")
        imported = module.aliases.get(head)
        if imported is not None:
            name = _canonical(imported + ("." + rest if rest else ""))
            if name is None:
                if imported.split(".")[0] in ("numpy", "np") and ".random" not in "." + rest:
                    return  # NumPy computes values from its arguments (its random module does not)
                raise _NotFixable(f"it calls {dotted}, whose code is in another module")
            effect = effect_of(name)
            if name in _GRAPH_CHANGERS:
                raise _NotFixable(f"{name} changes the graph")
            if effect is Effect.VARIABLE and name not in _PLACEHOLDERS:
                raise _NotFixable(f"{name} creates a variable: create it once with the model, by hand")
            if effect is Effect.FILE_WRITER:
                reads.opens_files = True
            elif effect not in _MOVABLE and effect is not Effect.NONE:
                raise _NotFixable(f"{name} ({effect.value}) cannot move out of the loop")
            if name in _VARIABLE_NAMES or name.startswith(_VARIABLE_PREFIXES):
                reads.creates_variables = True
            reads.tf_calls.append(name)
            return
        if "." not in dotted and dotted in _PURE_BUILTINS and dotted not in module.aliases:
            return
        if "." in dotted:
            method = dotted.rsplit(".", 1)[1]
            if method in _VARIABLE_METHODS:
                reads.creates_variables = True
                return
            if method in ("run", "eval"):
                raise _NotFixable("it runs the session")
            raise _NotFixable(f"it calls the method {dotted}, which may do more than build ops")
        if not module.file.builds_only(dotted):
            raise _NotFixable(f"it calls {dotted}, which does more than build ops (or is not defined in this file)")
        reads.helpers.append(dotted)

    visit(expr)
    return reads


def _root(node: cst.BaseExpression) -> Optional[str]:
    while isinstance(node, (cst.Attribute, cst.Subscript, cst.Call)):
        node = node.func if isinstance(node, cst.Call) else node.value
    return node.value if isinstance(node, cst.Name) else None


@dataclass
class _LoopFacts:
    """What the loop assigns, deletes and calls (nested functions and comprehensions excluded)."""

    names: set = field(default_factory=set)
    attribute_roots: set = field(default_factory=set)  #: names whose attribute or item is assigned/deleted
    method_roots: set = field(default_factory=set)  #: names a method is called on
    changes_graph: bool = False
    rebinds_anything: bool = False  #: exec, globals(), setattr...: any name may change
    with_blocks: list = field(default_factory=list)


def _loop_facts(module: _Module, loop: cst.CSTNode) -> _LoopFacts:
    facts = _LoopFacts()

    def target(node: cst.CSTNode) -> None:
        if isinstance(node, cst.Name):
            facts.names.add(node.value)
        elif isinstance(node, (cst.Tuple, cst.List)):
            for element in node.elements:
                target(element.value)
        elif isinstance(node, cst.StarredElement):
            target(node.value)
        elif isinstance(node, (cst.Attribute, cst.Subscript)):
            root = _root(node)
            if root is not None:
                facts.attribute_roots.add(root)

    def visit(node: cst.CSTNode) -> None:
        if isinstance(node, (cst.FunctionDef, cst.ClassDef)):
            facts.names.add(node.name.value)
            return
        if isinstance(node, (cst.Lambda, cst.ListComp, cst.SetComp, cst.DictComp, cst.GeneratorExp)):
            return
        if isinstance(node, cst.Assign):
            for t in node.targets:
                target(t.target)
        elif isinstance(node, (cst.AugAssign, cst.AnnAssign)):
            target(node.target)
        elif isinstance(node, (cst.For,)):
            target(node.target)
        elif isinstance(node, cst.NamedExpr):
            target(node.target)
        elif isinstance(node, cst.Del):
            target(node.target)
        elif isinstance(node, cst.WithItem) and node.asname is not None:
            target(node.asname.name)
        elif isinstance(node, cst.ExceptHandler) and node.name is not None:
            target(node.name.name)
        elif isinstance(node, (cst.MatchAs, cst.MatchStar)) and node.name is not None:
            target(node.name)  # `case w:` binds w
        elif isinstance(node, cst.MatchMapping) and node.rest is not None:
            target(node.rest)
        elif isinstance(node, (cst.Import, cst.ImportFrom)) and not isinstance(getattr(node, "names", None), cst.ImportStar):
            for alias in node.names:
                name = alias.asname.name if alias.asname is not None else alias.name
                facts.names.add(_dotted(name).split(".")[0] if _dotted(name) else "")
        elif isinstance(node, (cst.Global, cst.Nonlocal)):
            for item in node.names:
                facts.names.add(item.name.value)
        elif isinstance(node, cst.With) and node is not loop:
            facts.with_blocks.append(node)
        elif isinstance(node, cst.Call):
            dotted = _dotted(node.func)
            if isinstance(node.func, cst.Attribute):
                root = _root(node.func.value)
                if root is not None and root not in module.aliases:
                    facts.method_roots.add(root)
                    if node.func.attr.value in _MUTATORS and isinstance(node.func.value, cst.Name):
                        facts.attribute_roots.add(root)  # y.append(1): y's contents change in the loop
            if isinstance(node.func, cst.Name):
                if node.func.value in ("exec", "globals", "vars", "setattr", "delattr", "locals"):
                    facts.rebinds_anything = True
                else:  # a function of this file that rebinds globals (`global y; y = ...`)
                    facts.names |= module.file.globals_set(node.func.value)
            if dotted is not None:
                head, _, rest = dotted.partition(".")
                imported = module.aliases.get(head)
                name = _canonical(imported + ("." + rest if rest else "")) if imported else None
                if name in _GRAPH_CHANGERS:
                    facts.changes_graph = True
        for child in node.children:
            visit(child)

    visit(loop)
    return facts


def _indent(text: str, row: int, starts: list[int]) -> str:
    line = text[starts[row - 1]:]
    return line[: len(line) - len(line.lstrip(" \t"))]


_WORDS = {cst.Add: "plus", cst.Subtract: "minus", cst.Multiply: "times", cst.Divide: "over",
          cst.FloorDivide: "floordiv", cst.Modulo: "mod", cst.Power: "pow", cst.MatrixMultiply: "matmul"}


def _word(node: cst.BaseExpression) -> str:
    """A word for what ``node`` holds: a name, an attribute's name, a call's function name."""
    if isinstance(node, cst.Name):
        return node.value
    if isinstance(node, cst.Attribute):
        return node.attr.value
    if isinstance(node, cst.Subscript):
        return _word(node.value)
    if isinstance(node, cst.Call):
        return _word(node.func)
    return "value"


def _fresh(module: _Module, expr: cst.BaseExpression, reads: _Reads) -> str:
    """A readable name for the hoisted value, used nowhere in the file: ``argmax_op``, ``saver``,
    ``init_op``, ``loss_times_op``."""
    if isinstance(expr, cst.Call):
        last = reads.tf_calls[0].rsplit(".", 1)[-1] if reads.tf_calls and _dotted(expr.func) else _word(expr.func)
        if last == "Saver":
            candidates = ["saver", "checkpoint_saver"]
        elif last.endswith(("initializer", "initialize_all_variables", "initialize_local_variables")):
            candidates = ["local_init_op" if "local" in last else "init_op"]
        elif last == "merge_all":
            candidates = ["summary_op"]
        else:
            candidates = [re.sub(r"(?<!^)(?=[A-Z])", "_", last).lower() + "_op"]
    elif isinstance(expr, cst.BinaryOperation):
        candidates = [f"{_word(expr.left)}_{_WORDS.get(type(expr.operator), 'op')}_op"]
    elif isinstance(expr, cst.Subscript):
        candidates = [f"{_word(expr.value)}_item_op"]
    else:
        candidates = ["hoisted_op"]
    for name in candidates:
        if name not in module.identifiers and name not in module.taken and not hasattr(builtins, name):
            break
    else:
        base, number = candidates[0], 2
        name = f"{base}_{number}"
        while name in module.identifiers or name in module.taken or hasattr(builtins, name):
            number += 1
            name = f"{base}_{number}"
    module.taken.add(name)
    return name


def _short(code: str) -> str:
    line = code.strip().splitlines()[0] if code.strip() else code
    return line if len(line) <= 40 else line[:37] + "..."


def propose(file: _File, row: int, column: int, end_row: int, end_column: int,
            loop_row: int, loop_column: int, others: Iterable[tuple] = (), through: bool = False) -> Fix:
    """The fix for the expression at ``(row, column)``-``(end_row, end_column)`` (1-based, end
    exclusive) repeated by the loop at ``(loop_row, loop_column)``; ``others`` are the positions
    (row, column, end_row, end_column) of the file's other findings; ``through``: the finding is a
    call to a helper that builds the ops (the call is then not trusted to do only that). Raises
    :class:`_NotFixable`."""
    module = file.region(loop_row)
    if module is None:
        raise _NotFixable("its top-level statement does not parse alone")
    loop = module.loops.get((loop_row, loop_column - 1))
    if loop is None:
        raise _NotFixable("the loop is not a for or while statement")
    expr = _expression_at(module, row, column - 1, end_row, end_column - 1)
    if expr is None:
        raise _NotFixable("the reported expression was not found")
    chain = _ancestors(module, expr, loop)
    if chain is None:
        raise _NotFixable("the expression is not in the loop's body")
    body = loop.body
    statement = None
    guarded, child = [], expr
    for node in chain:
        # Code that runs only under a condition: moved before the loop it runs unconditionally, once.
        # A condition on what it reads (`y is not None`) may be what keeps it from failing.
        if isinstance(node, (cst.If, cst.IfExp, cst.While)) and child is not node.test:
            guarded.append(node.test)
        elif isinstance(node, cst.BooleanOperation) and child is node.right:
            guarded.append(node.left)
        child = node
        if isinstance(node, (cst.FunctionDef, cst.ClassDef, cst.Lambda)):
            raise _NotFixable("inside a function or class defined in the loop")
        if isinstance(node, cst.With):
            raise _NotFixable("under a with statement inside the loop (a scope, device or dependency)")
        if isinstance(node, (cst.ListComp, cst.SetComp, cst.DictComp, cst.GeneratorExp)):
            raise _NotFixable("inside a comprehension")
        if isinstance(node, (cst.For, cst.While)) and node is not loop:
            raise _NotFixable("inside an inner loop")
        if statement is None and isinstance(node, cst.SimpleStatementLine):
            statement = node
    if not isinstance(body, cst.IndentedBlock) or statement is None:
        raise _NotFixable("the loop body is on the loop's line")
    facts = _loop_facts(module, loop)
    if facts.changes_graph:
        raise _NotFixable("the loop resets or replaces the default graph")
    if facts.rebinds_anything:
        raise _NotFixable("the loop calls exec, globals() or setattr(), which may change any name")
    if through and isinstance(statement.body[0], cst.Expr) and statement.body[0].value is expr:
        # `save_checkpoint(sess, step)`: called for what it does (saving, logging), not for a value.
        # Moving the call would do that once; the fix belongs inside the helper (build its Saver once).
        raise _NotFixable("a helper called for its effect builds the ops; build them once inside it")
    reads = _reads(module, expr, trusted=None if through else expr if isinstance(expr, cst.Call) else None)
    if not reads.tf_calls and not isinstance(expr, (cst.BinaryOperation, cst.UnaryOperation, cst.Subscript)):
        if not reads.helpers:
            raise _NotFixable("it builds nothing graphguard knows")
    variant = sorted(reads.names & facts.names)
    if variant:
        if any(effect_of(name) is Effect.ASSIGN or name in (".assign", ".assign_add", ".assign_sub")
               for name in reads.tf_calls):
            from graphguard.fix.feed import propose_feed

            fix = propose_feed(module, loop, expr, set(), facts.names)
            if fix is not None:
                return fix
        if any(effect_of(name) is Effect.CONSTANT for name in reads.tf_calls):
            from graphguard.fix.feed import propose_constant_feed

            fix = propose_constant_feed(module, loop, expr, statement, facts.names)
            if fix is not None:
                return fix
        raise _NotFixable(f"it reads {', '.join(variant)}, which the loop assigns (a value that changes per "
                          "iteration: feed it through a placeholder)")
    mutated = sorted((reads.roots | reads.names) & facts.attribute_roots)
    if mutated:
        raise _NotFixable(f"the loop assigns attributes or items of {', '.join(mutated)}")
    effects = {effect_of(name) for name in reads.tf_calls}
    capturing = bool(effects & _CAPTURING) or any(_CAPTURING_NAMES.search(name) for name in reads.tf_calls)
    if capturing and _builds_more(module, loop, expr, others):
        raise _NotFixable("the loop still builds a model, variables or summaries that a hoisted Saver or "
                          "initializer would miss; those are fixed first")
    unsafe = []
    if any(isinstance(node, (cst.Try, cst.TryStar)) and node.body in chain for node in chain):
        unsafe.append("it moves out of a try block: an error building it is no longer handled there")
    conditions = {n.value for test in guarded for n in _names_in(test)}
    if conditions & (reads.names | reads.roots):
        unsafe.append("it runs only when a condition on its inputs holds; before the loop it runs anyway")
    if reads.helpers:
        unsafe.append(f"it calls {', '.join(sorted(set(reads.helpers)))}, which may do more than build ops")
    if reads.creates_variables:
        unsafe.append("it may create variables, which the initializer run before the loop must see")
    if reads.opens_files:
        if any(isinstance(c.func, cst.Attribute) and c.func.attr.value == "close" for c in _calls(loop.body)):
            raise _NotFixable("the loop closes a writer: one writer for all iterations would be closed after the first")
        unsafe.append("a FileWriter opens an event file: there will be one instead of one per iteration")
    touched = sorted((reads.roots | reads.names) & facts.method_roots - set(module.aliases))
    if touched:
        unsafe.append(f"a method called in the loop may change {', '.join(touched)}")

    text, newline = module.text, module.newline
    starts = file.starts
    anchor = _anchor(module, loop, reads.names, capturing)
    anchor_start = module.positions[anchor].start
    indent = _indent(text, anchor_start.line, starts)
    insert_at = (anchor_start.line, 1)
    code = module.module.code_for_node(expr)
    applicability = UNSAFE if unsafe else SAFE
    why = f" (unsafe: {'; '.join(unsafe)})" if unsafe else ""

    moved = _movable_statement(module, statement, expr, body, facts)
    if moved is not None:
        name, first_row, last_row = moved
        lines = text[starts[first_row - 1]: starts[last_row] if last_row < len(starts) else len(text)]
        own = _indent(text, first_row, starts)
        moved_text = "".join(indent + line[len(own):] if line.startswith(own) else line
                             for line in lines.splitlines(keepends=True))
        if not moved_text.endswith(("\n", "\r")):
            moved_text += newline
        end = (last_row + 1, 1) if last_row < len(starts) else _end_position(text, starts)
        only = len(body.body) == 1
        edits = [Edit(*insert_at, *insert_at, moved_text),
                 Edit(first_row, 1, *end, f"{own}pass{newline}" if only else "")]
        what = f"`{name} = ...`" if name else f"`{_short(code)}`"
        return Fix(applicability, f"Move {what} before the loop at line {loop_row}{why}", tuple(edits))
    fresh = _fresh(module, expr, reads)
    edits = (Edit(*insert_at, *insert_at, f"{indent}{fresh} = {code}{newline}"),
             Edit(row, column, end_row, end_column, fresh))
    return Fix(applicability, f"Build `{fresh}` once before the loop at line {loop_row}{why}", edits)


def _builds_more(module: _Module, loop: cst.CSTNode, expr: cst.CSTNode, others: Iterable[tuple]) -> bool:
    """Whether another finding inside ``loop`` may add variables or summaries (a helper, a layer, an
    optimizer's minimize, a summary op): a Saver or initializer built before it would miss them."""
    for row, column, end_row, end_column in others:
        node = _expression_at(module, row, column - 1, end_row, end_column - 1)
        if node is None or node is expr or not _inside(module.parents, node, loop):
            continue
        try:
            reads = _reads(module, node)
        except _NotFixable:
            return True
        effects = {effect_of(name) for name in reads.tf_calls}
        if reads.helpers or reads.creates_variables or Effect.SUMMARY in effects or Effect.VARIABLE in effects:
            return True
    return False


#: Context managers that change where or how ops are built: hoisted code stays inside them.
_GRAPH_CONTEXTS = re.compile(r"as_default|scope|device|control_dependencies|colocate|Graph|graph|gradient_override")


def _anchor(module: _Module, loop: cst.CSTNode, names: set, capturing: bool = False) -> cst.CSTNode:
    """The statement the hoisted code goes before: the loop, or the outermost ``with`` statements
    wrapping it that only open sessions or guards (``with tf.Session() as sess:``, ``with
    GraphGuard(sess) as guarded:``, which finalizes the graph), when the hoisted code reads nothing they
    bind. Graph, scope and device contexts are never left. ``capturing`` code (a Saver, an initializer,
    a collection read) does not climb above a block that builds anything before the loop: it would
    miss what that builds."""
    anchor = loop
    node = module.parents.get(loop)
    while isinstance(node, cst.IndentedBlock):
        owner = module.parents.get(node)
        if not isinstance(owner, cst.With) or owner.body is not node:
            break
        if any(_GRAPH_CONTEXTS.search(module.module.code_for_node(item.item)) for item in owner.items):
            break
        bound = set()
        for item in owner.items:
            if item.asname is not None:
                bound |= {n.value for n in _names_in(item.asname.name)}
        index = next(i for i, statement in enumerate(node.body) if statement is anchor)
        for statement in node.body[:index]:
            bound |= _assigned_names(statement)
        if bound & names:
            break
        if capturing and any(not _only_runs(call) for statement in node.body[:index] for call in _calls(statement)):
            break
        anchor = owner
        node = module.parents.get(owner)
    return anchor


def _nodes(node: cst.CSTNode, kind: type) -> Iterable:
    """Every node of type ``kind`` in ``node``'s tree, ``node`` included, outermost first."""
    if isinstance(node, kind):
        yield node
    for child in node.children:
        yield from _nodes(child, kind)


def _calls(node: cst.CSTNode) -> Iterable[cst.Call]:
    return _nodes(node, cst.Call)


def _names_in(node: cst.CSTNode) -> Iterable[cst.Name]:
    return _nodes(node, cst.Name)


def _only_runs(call: cst.Call) -> bool:
    """A call that builds no op: a session run, a save, a print, a builtin."""
    if isinstance(call.func, cst.Attribute):
        return call.func.attr.value in _EFFECT_METHODS
    return isinstance(call.func, cst.Name) and hasattr(builtins, call.func.value)


def _assigned_names(statement: cst.CSTNode) -> set:
    found = set()

    def visit(node: cst.CSTNode) -> None:
        targets = []
        if isinstance(node, cst.Assign):
            targets = [t.target for t in node.targets]
        elif isinstance(node, (cst.AugAssign, cst.AnnAssign, cst.For, cst.NamedExpr)):
            targets = [node.target]
        elif isinstance(node, cst.WithItem) and node.asname is not None:
            targets = [node.asname.name]
        elif isinstance(node, (cst.FunctionDef, cst.ClassDef)):
            found.add(node.name.value)
        for target in targets:
            found.update(n.value for n in _names_in(target) if not isinstance(target, (cst.Attribute, cst.Subscript)))
        for child in node.children:
            visit(child)

    visit(statement)
    return found


def _end_position(text: str, starts: list[int]) -> tuple[int, int]:
    return len(starts), len(text) - starts[-1] + 1


def _movable_statement(module: _Module, statement: cst.SimpleStatementLine, expr: cst.BaseExpression,
                       body: cst.IndentedBlock, facts: _LoopFacts) -> Optional[tuple[str, int, int]]:
    """(name, first row, last row) when ``statement`` is ``name = expr`` at the top of the loop body,
    alone on its line(s), ``name`` assigned nowhere else in the loop and not read before it there; or
    when it is ``expr`` alone (``tf.summary.scalar("loss", loss)``: name ``""``)."""
    if statement not in body.body or len(statement.body) != 1:
        return None
    assign = statement.body[0]
    if isinstance(assign, cst.Expr) and assign.value is expr:
        where = module.positions[statement]
        return "", where.start.line, where.end.line
    if not isinstance(assign, cst.Assign) or len(assign.targets) != 1 or assign.value is not expr:
        return None
    target = assign.targets[0].target
    if not isinstance(target, cst.Name):
        return None
    name = target.value
    index = body.body.index(statement)
    before = body.body[:index]
    if any(_mentions(node, name) for node in before):
        return None
    after = body.body[index + 1:]
    if any(_assigns(node, name) for node in after):
        return None
    where = module.positions[statement]
    return name, where.start.line, where.end.line


def _mentions(node: cst.CSTNode, name: str) -> bool:
    if isinstance(node, cst.Name) and node.value == name:
        return True
    if isinstance(node, cst.Attribute):
        return _mentions(node.value, name)
    return any(_mentions(child, name) for child in node.children)


def _assigns(node: cst.CSTNode, name: str) -> bool:
    targets = []
    if isinstance(node, cst.Assign):
        targets = [t.target for t in node.targets]
    elif isinstance(node, (cst.AugAssign, cst.AnnAssign, cst.For, cst.NamedExpr)):
        targets = [node.target]
    if any(_mentions(t, name) for t in targets):
        return True
    return any(_assigns(child, name) for child in node.children)


def _expression_at(module: _Module, row: int, column: int, end_row: int, end_column: int):
    return module.expressions.get((row, column, end_row, end_column))


def _ancestors(module: _Module, expr: cst.CSTNode, loop: cst.CSTNode) -> Optional[list]:
    """The nodes from ``expr`` (excluded) up to ``loop``'s body (excluded), innermost first; None when
    ``expr`` is not inside the body."""
    chain = []
    node = module.parents.get(expr)
    while node is not None and node is not loop.body:
        if node is loop:
            return None  # in the header (target, iterable, test) or the else clause
        chain.append(node)
        node = module.parents.get(node)
    return chain if node is loop.body else None
