"""Questions about syntax that the reader asks of ``ast`` nodes: dotted names, how a callee is
written, once-guards (``if self._op is None: self._op = ...``), loops that always break, ``as_default()``.

Pure functions of the tree: no bindings, no facts.
"""

from __future__ import annotations

import ast

def dotted_name(node: ast.AST) -> str | None:
    """``self.sess`` for an attribute chain of names, ``sess`` for a name, else None."""
    cls = node.__class__
    if cls is ast.Name:
        return node.id
    if cls is not ast.Attribute:
        return None
    parts = []
    while cls is ast.Attribute:
        parts.append(node.attr)
        node = node.value
        cls = node.__class__
    if cls is not ast.Name:
        return None
    parts.append(node.id)
    return ".".join(reversed(parts))


_NODE_FIELDS: dict = {}  # node class -> its fields but contexts (the walk below reads no context node)


_ASSIGNMENTS = frozenset({ast.Assign, ast.AnnAssign, ast.AugAssign})
_NAMES = (ast.Name, ast.Attribute)


def _nodes_of(roots: list, classes: tuple) -> list:
    """Every node of one of ``classes`` in the trees ``roots``, as ``ast.walk`` over each would find
    them, in no particular order (without its generators: an early-return guard asks this of the rest
    of its body)."""
    stack, found = list(roots), []
    while stack:
        current = stack.pop()
        cls = current.__class__
        if cls in classes:
            found.append(current)
        fields = _NODE_FIELDS.get(cls)
        if fields is None:
            fields = _NODE_FIELDS[cls] = tuple(name for name in cls._fields if name != "ctx")
        for name in fields:
            value = getattr(current, name, None)
            if value.__class__ is list:
                stack.extend(item for item in value if isinstance(item, ast.AST))
            elif isinstance(value, ast.AST):
                stack.append(value)
    return found


def loaded_names(node: ast.AST) -> list:
    """The ``Name`` and ``Attribute`` nodes in ``node`` (itself included) read in ``Load`` context, every
    one that ``ast.walk`` would give, in no particular order; without ``ast.walk``'s generators (it
    was a tenth of reading a file with many calls in loops)."""
    return [found for found in _nodes_of([node], _NAMES) if found.ctx.__class__ is ast.Load]


def callee_text(func: ast.AST) -> str:
    """The callee as written, on one line, with inner calls' arguments elided:
    ``tf.train.AdamOptimizer(...).minimize``."""
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute):
        return f"{callee_text(func.value)}.{func.attr}"
    if isinstance(func, ast.Call):
        return f"{callee_text(func.func)}(...)"
    return short(ast.unparse(func))


def short(text: str) -> str:
    """``text`` on one line, cut to 40 characters (``...`` at the end): a subject in a one-line message."""
    text = " ".join(text.split())
    return text if len(text) <= 40 else text[:37] + "..."


def guarded_target(test: ast.AST) -> str | None:
    """The name, attribute or container a once-guard tests: ``X`` in ``X is None``, ``not X``,
    ``not hasattr(o, "X")`` (as ``o.X``), ``key not in X``."""
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        operand = test.operand
        if (isinstance(operand, ast.Call) and isinstance(operand.func, ast.Name) and operand.func.id == "hasattr"
                and len(operand.args) == 2 and isinstance(operand.args[1], ast.Constant)):
            owner = dotted_name(operand.args[0])
            return None if owner is None else f"{owner}.{operand.args[1].value}"
        return dotted_name(operand)
    if isinstance(test, ast.Compare) and len(test.ops) == 1:
        op, right = test.ops[0], test.comparators[0]
        if isinstance(op, (ast.Is, ast.Eq)) and isinstance(right, ast.Constant) and right.value is None:
            return dotted_name(test.left)  # `X is None`, and `X == None` in older code
        if isinstance(op, ast.NotIn):
            return dotted_name(right)
    return None


def present_target(test: ast.AST) -> str | None:
    """What an early-return guard finds already made: ``D`` in ``key in D``, ``X`` in ``X is not None``
    or ``if X:``, ``o.X`` in ``hasattr(o, "X")``."""
    if isinstance(test, ast.Compare) and len(test.ops) == 1:
        op, right = test.ops[0], test.comparators[0]
        if isinstance(op, ast.In):
            return dotted_name(right)
        if isinstance(op, ast.IsNot) and isinstance(right, ast.Constant) and right.value is None:
            return dotted_name(test.left)
    if (isinstance(test, ast.Call) and isinstance(test.func, ast.Name) and test.func.id == "hasattr"
            and len(test.args) == 2 and isinstance(test.args[1], ast.Constant)):
        owner = dotted_name(test.args[0])
        return None if owner is None else f"{owner}.{test.args[1].value}"
    return dotted_name(test)


#: The fields through which statements hold statements (an ``except`` clause's and a ``case``'s too).
_STATEMENT_FIELDS = ("body", "orelse", "finalbody", "handlers", "cases")


def _statements_of(body: list, classes: tuple) -> list:
    """Every statement of one of ``classes`` in ``body`` and the statements nested in it (``def`` and
    ``class`` bodies included), in no particular order. The same as :func:`_nodes_of` for classes of
    statements, without walking a single expression (no statement is inside one)."""
    stack, found = list(body), []
    while stack:
        statement = stack.pop()
        if statement.__class__ in classes:
            found.append(statement)
            continue  # an assignment holds no statement
        for name in _STATEMENT_FIELDS:
            inner = getattr(statement, name, None)
            if inner:
                stack.extend(inner)
    return found


def assigned_targets(body: list) -> set[str]:
    """Dotted names assigned (``X = ...``, ``X[k] = ...``) anywhere in ``body``."""
    names = set()
    for node in _statements_of(body, _ASSIGNMENTS):
        targets = ()
        if isinstance(node, ast.Assign):
            targets = node.targets
        elif isinstance(node, (ast.AnnAssign, ast.AugAssign)):
            targets = (node.target,)
        stack = list(targets)
        while stack:
            target = stack.pop()
            if isinstance(target, (ast.Tuple, ast.List)):
                stack.extend(target.elts)
                continue
            if isinstance(target, ast.Starred):
                target = target.value
            if isinstance(target, ast.Subscript):
                target = target.value
            dotted = dotted_name(target)
            if dotted is not None:
                names.add(dotted)
    return names


def is_once_guard(test: ast.AST, body: list) -> bool:
    """An ``if`` whose body runs once: it tests a name, attribute or cache entry that the body assigns
    (``if self._acc is None: self._acc = ...``, ``if key not in ops: ops[key] = ...``), possibly as one
    part of an ``and`` (or ``&``) of conditions, or it tests a loop counter against zero (``if step ==
    0:``, the first iteration)."""
    if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.Or):
        return any(is_once_guard(value, body) for value in test.values)
    # A conjunction runs the body only while every part holds: one part the body makes false is enough
    # (`if saver is None and self._saver is None:`, or with `&` between parenthesized comparisons).
    if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And):
        return any(is_once_guard(value, body) for value in test.values)
    if isinstance(test, ast.BinOp) and isinstance(test.op, ast.BitAnd):
        return is_once_guard(test.left, body) or is_once_guard(test.right, body)
    if (isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], ast.Eq)
            and isinstance(test.comparators[0], ast.Constant) and test.comparators[0].value == 0
            and isinstance(test.left, ast.Name)):
        return True
    target = guarded_target(test)
    return target is not None and (target in assigned_targets(body) or target in _filled_targets(body))


#: Methods that put something into a container (``if not state: state.append(tf.Variable(x))``).
_FILLING_METHODS = frozenset({"append", "extend", "insert", "add", "update", "setdefault", "appendleft"})


def _filled_targets(body: list) -> set[str]:
    """Dotted names of the containers a statement of ``body`` fills (``state.append(v)``)."""
    names = set()
    for statement in body:
        call = statement.value if statement.__class__ is ast.Expr else None
        if (call.__class__ is ast.Call and call.func.__class__ is ast.Attribute
                and call.func.attr in _FILLING_METHODS):
            dotted = dotted_name(call.func.value)
            if dotted is not None:
                names.add(dotted)
    return names



def ends_in_break(body) -> bool:
    """Whether a loop body always ends its first pass with ``break`` (directly or at the end of a
    ``try`` body): a retry loop or ``while True: ...; break``."""
    while isinstance(body, list) and body:
        last = body[-1]
        if isinstance(last, ast.Break):
            return True
        body = last.body if isinstance(last, ast.Try) else None
    return False


def names_a_graph(node: ast.AST) -> bool:
    """``self._tf_graph.obj``, ``env.graph``: an expression whose names say it is a graph (not
    ``tf.get_default_graph()``, which the analysis resolves)."""
    text = callee_text(node).lower()
    return "graph" in text and "default" not in text


def is_as_default(node: ast.AST) -> bool:
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "as_default"


def rebound_definitions(body: list) -> frozenset:
    """Names that a module both defines (``def``/``class``) and assigns at module level (also under
    ``if``/``try``/``with``/``for``): ``def resize(...)`` then ``resize = wrap(resize)``."""
    names = set()
    defined = set()
    stack = list(body)
    while stack:
        statement = stack.pop()
        if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            defined.add(statement.name)
            continue
        if isinstance(statement, ast.Assign):
            for target in statement.targets:
                if target.__class__ is ast.Name:  # the common case, without ast.walk's generators
                    names.add(target.id)
                else:
                    names.update(n.id for n in ast.walk(target) if isinstance(n, ast.Name))
        elif isinstance(statement, (ast.AnnAssign, ast.AugAssign)) and isinstance(statement.target, ast.Name):
            names.add(statement.target.id)
        for field_name in ("body", "orelse", "finalbody", "handlers"):
            stack.extend(getattr(statement, field_name, ()) or ())
    return frozenset(names & defined)


#: Functions that add a leading batch axis of one (``np.expand_dims(x, 0)``, ``tf.expand_dims``).
ONE_SAMPLE_FUNCTIONS = frozenset({"expand_dims", "atleast_2d"})
#: Methods that keep the rows of their receiver (``x[None].astype(np.float32)``, ``batch.copy()``).
SAME_ROWS = frozenset({"astype", "copy", "float", "double"})
#: NumPy constructors whose first argument is the shape (``np.zeros((1, 7))``: a batch of one).
SHAPED = frozenset({"zeros", "ones", "empty", "full"})
#: Functions that make an array of their first argument (``np.array([x])``: a batch of one).
ARRAY_FUNCTIONS = frozenset({"array", "asarray", "stack", "vstack", "concatenate", "convert_to_tensor", "constant"})


def one_sample(node: ast.AST, bound=None, lists: bool = True) -> bool:
    """Whether ``node`` is written as a batch of one: ``x[None]``, ``x[np.newaxis, ...]``, ``x[i:i+1]``,
    ``x[:1]``, ``np.expand_dims(x, 0)``, ``x.reshape(1, -1)`` (method or ``np.reshape``/``tf.reshape``),
    ``np.array([x])``; with ``lists``, also ``[x]`` and a list or tuple of inputs one of which is
    (a multi-input model's inputs). ``bound(dotted)`` says whether a name holds one (None: never)."""
    if isinstance(node, (ast.Name, ast.Attribute)):
        return bound is not None and bound(dotted_name(node))
    if isinstance(node, (ast.List, ast.Tuple)):
        if not lists:
            return False
        if len(node.elts) == 1 and isinstance(node, ast.List):
            element = node.elts[0]
            if isinstance(element, ast.Subscript) and isinstance(
                    element.slice.elts[0] if isinstance(element.slice, ast.Tuple) and element.slice.elts
                    else element.slice, ast.Slice):
                # ``[x[:36]]``: rows cut from a batch, one input of a multi-input list (a first-contact
                # set's figure of 36 samples once per epoch); ``[x[:1]]`` is one sample
                return one_sample(element, bound, lists)
            return not isinstance(element, (ast.List, ast.Tuple, ast.Starred))
        return any(one_sample(element, bound, lists) for element in node.elts)
    if isinstance(node, ast.Subscript):
        index = node.slice
        parts = index.elts if isinstance(index, ast.Tuple) else (index,)
        if any(isinstance(p, ast.Constant) and p.value is None or isinstance(p, ast.Attribute) and p.attr == "newaxis"
               for p in parts):
            return True
        if not parts:
            return False  # ``x[()]``: a NumPy scalar's value, not a batch
        first = parts[0]
        if not isinstance(first, ast.Slice):
            return False
        if (isinstance(first.upper, ast.Constant) and first.upper.value == 1
                and (first.lower is None or isinstance(first.lower, ast.Constant) and first.lower.value == 0)):
            return True  # ``x[:1]``, ``x[0:1]``
        return (first.lower is not None and isinstance(first.upper, ast.BinOp) and isinstance(first.upper.op, ast.Add)
                and isinstance(first.upper.right, ast.Constant) and first.upper.right.value == 1
                and ast.dump(first.upper.left) == ast.dump(first.lower))  # ``x[i:i+1]``
    if not isinstance(node, ast.Call):
        return False
    name = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", None)
    if name in ONE_SAMPLE_FUNCTIONS:
        return True
    if name in SAME_ROWS and isinstance(node.func, ast.Attribute):
        return one_sample(node.func.value, bound, lists)  # ``x[None].astype(np.float32)``
    if name in SHAPED and node.args:
        shape = node.args[0]  # ``np.zeros((1, 7))``: one row, filled in below
        return (isinstance(shape, (ast.Tuple, ast.List)) and len(shape.elts) > 1
                and isinstance(shape.elts[0], ast.Constant) and shape.elts[0].value == 1)
    if name == "reshape" and node.args:
        if isinstance(node.args[0], ast.Constant):
            shape = ast.Tuple(elts=node.args)  # ``x.reshape(1, -1)``
        else:
            shape = node.args[0] if len(node.args) == 1 else node.args[1]
        return (isinstance(shape, (ast.Tuple, ast.List)) and bool(shape.elts) and isinstance(shape.elts[0], ast.Constant)
                and shape.elts[0].value == 1)
    if name in ARRAY_FUNCTIONS and node.args and isinstance(node.args[0], ast.List):
        return len(node.args[0].elts) == 1 and not isinstance(node.args[0].elts[0], (ast.List, ast.Tuple, ast.Starred))
    return False



#: Decorator methods that register a web route (Flask ``route``, FastAPI/Starlette ``get``/``post``/...).
_ROUTES = frozenset({"route", "get", "post", "put", "patch", "delete", "api_route", "websocket"})


def request_route(decorators: list) -> bool:
    """Whether one of ``decorators`` registers the function as a web request handler: a call of a
    route method on a name or attribute (``@app.route("/predict")``, ``@router.post("/x")``)."""
    for decorator in decorators:
        if (decorator.__class__ is ast.Call and decorator.func.__class__ is ast.Attribute
                and decorator.func.attr in _ROUTES and decorator.func.value.__class__ in (ast.Name, ast.Attribute)
                and decorator.args and decorator.args[0].__class__ is ast.Constant
                and isinstance(decorator.args[0].value, str) and decorator.args[0].value.startswith("/")):
            return True
    return False


#: How methods that find a graph's tensor or op, or a model's layer, by name start (``graph.get_tensor_by_name``,
#: ``model.get_layer``, ``tf.get_collection``, a project's ``self.get_layer_output(name)``).
LOOKUPS = ("get_tensor", "get_operation", "get_layer", "get_collection")


def looks_up_by(body: list, name: str) -> bool:
    """Whether ``body`` passes the loop variable ``name`` to a lookup of the graph's or the model's
    structure (:data:`LOOKUPS`: ``graph.get_tensor_by_name(name + ":0")``, ``model.get_layer(name)``,
    ``self.get_layer_output(name)``)."""
    for statement in body:
        for node in ast.walk(statement):
            if (node.__class__ is ast.Call and node.func.__class__ is ast.Attribute and node.func.attr.startswith(LOOKUPS)
                    and any(part.__class__ is ast.Name and part.id == name
                            for arg in (*node.args, *(keyword.value for keyword in node.keywords))
                            for part in ast.walk(arg))):
                return True
    return False


#: TF1 functions whose argument is a list of variables (``tf.variables_initializer([v])``).
_VARIABLE_LISTS = frozenset({"variables_initializer", "initialize_variables"})


def initializes_each(body: list, name: str) -> bool:
    """Whether ``body`` initialises the loop variable ``name`` as a TensorFlow variable
    (``tf.variables_initializer([v])``, ``v.initializer``): the loop walks a collection of variables,
    one initializer each (a helper that initialises variables in dependency order), not steps."""
    for statement in body:
        for node in ast.walk(statement):
            if node.__class__ is ast.Attribute and node.attr == "initializer" and (
                    node.value.__class__ is ast.Name and node.value.id == name):
                return True
            if node.__class__ is not ast.Call:
                continue
            func = node.func
            if (func.attr if func.__class__ is ast.Attribute else getattr(func, "id", None)) not in _VARIABLE_LISTS:
                continue
            for arg in (*node.args, *(keyword.value for keyword in node.keywords)):
                if arg.__class__ in (ast.List, ast.Tuple) and any(
                        element.__class__ is ast.Name and element.id == name for element in arg.elts):
                    return True
    return False


def work_list(test: ast.AST, body: list, walks) -> bool:
    """Whether ``while test: body`` works through a list: ``test`` reads one name (``while remaining:``,
    ``while len(remaining) > 0:``) that ``body`` loops over (a ``for`` in ``walks``, the loops that walk
    a structure) and binds anew (``remaining = retry``): it runs at most as often as the list is long."""
    names = {node.id for node in ast.walk(test) if node.__class__ is ast.Name and node.id != "len"}
    if len(names) != 1:
        return False
    name = names.pop()
    walked = any(statement.__class__ is ast.For and id(statement) in walks and statement.iter.__class__ is ast.Name
                 and statement.iter.id == name for statement in body)
    return walked and any(node.__class__ is ast.Assign and any(
        target.__class__ is ast.Name and target.id == name for target in node.targets)
        for statement in body for node in ast.walk(statement))  # (also under an ``if``/``else``)


def waits_for_a_person(test: ast.AST | None, body: list) -> bool:
    """Whether every iteration of a loop with ``test`` (a ``while``'s, or None) and ``body`` waits for a
    person: it calls ``input()`` (``raw_input()``), OpenCV's ``waitKey(0)`` (``waitKey()``: block until a
    key), or Matplotlib's ``waitforbuttonpress()``, unconditionally (in the test, in a simple statement of
    the body, or in the test of an ``if`` of the body). An interactive menu, a "press a key for the next
    image" viewer: it runs as often as someone asks, a handful of times, not with time or data."""
    parts = [] if test is None else [test]
    for statement in body:
        if isinstance(statement, (ast.If, ast.While)):
            parts.append(statement.test)
        elif not isinstance(statement, (ast.For, ast.AsyncFor, ast.With, ast.AsyncWith, ast.Try, ast.FunctionDef,
                                        ast.AsyncFunctionDef, ast.ClassDef, ast.Match)):
            parts.append(statement)
    for part in parts:
        for node in ast.walk(part):
            if node.__class__ is not ast.Call:
                continue
            func = node.func
            if func.__class__ is ast.Name and func.id in ("input", "raw_input"):
                return True
            if func.__class__ is ast.Attribute:
                if func.attr == "waitforbuttonpress":
                    return True
                if func.attr == "waitKey" and not node.keywords and (
                        not node.args or (node.args[0].__class__ is ast.Constant and node.args[0].value == 0)):
                    return True
    return False


#: TensorFlow's classes of graph values: ``isinstance(x, tf.Tensor)`` tests whether ``x`` is one.
_TENSOR_TYPES = frozenset({"Tensor", "Variable", "Operation", "SparseTensor", "RaggedTensor", "IndexedSlices",
                           "EagerTensor", "KerasTensor", "RefVariable", "ResourceVariable"})
#: Functions that test whether their argument is a tensor (``tf.is_tensor``, ``K.is_keras_tensor``, ...).
TENSOR_PREDICATES = frozenset({"is_tensor", "is_keras_tensor", "is_symbolic_tensor", "is_tensor_like"})


def names_tensor_types(node: ast.AST) -> bool:
    """Whether ``node``, the second argument of ``isinstance``, names only TensorFlow's tensor classes
    (``tf.Tensor``, ``(tf.Tensor, tf.Variable)``)."""
    parts = node.elts if isinstance(node, ast.Tuple) else (node,)
    return bool(parts) and all((dotted_name(part) or "").rsplit(".", 1)[-1] in _TENSOR_TYPES for part in parts)


def tensor_predicates(body: list) -> frozenset:
    """The module's functions that return whether their first argument is a tensor: ``def
    is_tf_expression(x): return isinstance(x, tf.Tensor) or isinstance(x, tf.Variable)``."""
    found = set()
    for statement in body:
        if not isinstance(statement, ast.FunctionDef) or not statement.args.args:
            continue
        code = [s for s in statement.body if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))]
        if len(code) != 1 or not isinstance(code[0], ast.Return) or code[0].value is None:
            continue
        param = statement.args.args[0].arg
        value = code[0].value
        tests = value.values if isinstance(value, ast.BoolOp) and isinstance(value.op, ast.Or) else [value]
        if all(isinstance(t, ast.Call) and isinstance(t.func, ast.Name) and t.func.id == "isinstance"
               and len(t.args) == 2 and isinstance(t.args[0], ast.Name) and t.args[0].id == param
               and names_tensor_types(t.args[1]) for t in tests):
            found.add(statement.name)
    return frozenset(found)


def closes_writer(body: list, row: int) -> bool:
    """Whether the statements ``body`` (a loop's) close the writer made by a call on ``row``: the call is
    a ``with`` item (``with tf.summary.FileWriter(d) as w:``), or it is assigned to a name
    (``w = tf.summary.FileWriter(d)``) whose ``close()`` the body calls. Nested functions and classes
    are not looked into."""
    names = set()
    stack = list(body)
    closes = set()
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            continue
        if isinstance(node, (ast.With, ast.AsyncWith)):
            if any(item.context_expr.__class__ is ast.Call and item.context_expr.lineno == row for item in node.items):
                return True
        elif isinstance(node, ast.Assign) and node.value.__class__ is ast.Call and node.value.lineno == row:
            names.update(filter(None, (dotted_name(target) for target in node.targets)))
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "close"
              and not node.args):
            closes.add(dotted_name(node.func.value))
        stack.extend(ast.iter_child_nodes(node))
    return bool(names & closes)


def collected_calls(body: list) -> list:
    """The calls whose values the statements ``body`` (a loop's) put into a container, one per
    iteration: ``opts.append(Adam(lr))``, ``steps[k] = tf.function(f)``, or ``opt = Adam(lr)`` then
    ``opts.append(opt)`` (also ``add``, ``insert``, ``appendleft``, and a tuple or list holding the call
    or the name: ``pairs.append((name, opt))``). Nested functions, classes and loops are not looked
    into (their own loops say)."""
    bound: dict[str, list] = {}  # name -> calls assigned to it
    kept_names: set[str] = set()
    calls = []
    stack = list(body)
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda,
                             ast.For, ast.AsyncFor, ast.While)):
            continue
        if isinstance(node, ast.Assign) and node.value.__class__ is ast.Call:
            for target in node.targets:
                if target.__class__ is ast.Name:
                    bound.setdefault(target.id, []).append(node.value)
                elif target.__class__ is ast.Subscript:
                    calls.append(node.value)  # ``steps[k] = tf.function(f)``
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
              and node.func.attr in _COLLECTING and node.args):
            for value in node.args[-1:]:
                for item in (value.elts if isinstance(value, (ast.Tuple, ast.List)) else (value,)):
                    if item.__class__ is ast.Call:
                        calls.append(item)
                    elif item.__class__ is ast.Name:
                        kept_names.add(item.id)
        stack.extend(ast.iter_child_nodes(node))
    for name in kept_names:
        calls.extend(bound.get(name, ()))
    return calls


#: The methods that put a value into a container (a list, set or deque).
_COLLECTING = frozenset({"append", "add", "insert", "appendleft"})


def constant_int(node: ast.AST) -> int | None:
    """An integer constant (``8``, ``-1``), or None."""
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        value = constant_int(node.operand)
        return None if value is None else -value
    if isinstance(node, ast.Constant) and type(node.value) is int:
        return node.value
    return None


def cli_options(tree: ast.Module) -> tuple[dict, set]:
    """(option name -> int default, names bound to the parsed options) of a module: argparse's
    ``add_argument`` with an int ``default`` (the name from ``dest=``, else the first ``--long`` option,
    else the positional name; dashes read as underscores) and ``DEFINE_integer(name, default, ...)`` of
    TF1's or absl's flags; the names bound to ``X.parse_args()`` (or the first of ``parse_known_args()``)
    and ``FLAGS``."""
    defaults: dict = {}
    namespaces = {"FLAGS"}
    for node in ast.walk(tree):
        if node.__class__ is ast.Assign and node.value.__class__ is ast.Call and node.value.func.__class__ is ast.Attribute:
            method = node.value.func.attr
            target = node.targets[0]
            if method == "parse_known_args" and target.__class__ is ast.Tuple and target.elts:
                target = target.elts[0]
            if method in ("parse_args", "parse_known_args") and target.__class__ is ast.Name:
                namespaces.add(target.id)
            continue
        if node.__class__ is not ast.Call or node.func.__class__ is not ast.Attribute:
            continue
        method = node.func.attr
        keywords = {k.arg: k.value for k in node.keywords}
        if method == "add_argument":
            default = constant_int(keywords["default"]) if "default" in keywords else None
            names = [a.value for a in node.args if a.__class__ is ast.Constant and isinstance(a.value, str)]
            dest = keywords.get("dest")
            if dest is not None and dest.__class__ is ast.Constant and isinstance(dest.value, str):
                name = dest.value
            else:
                name = next((n.lstrip("-") for n in names if n.startswith("--")),
                            next((n for n in names if not n.startswith("-")), None))
        elif method == "DEFINE_integer" and node.args and node.args[0].__class__ is ast.Constant:
            name = node.args[0].value
            default = constant_int(node.args[1]) if len(node.args) > 1 else (
                constant_int(keywords["default"]) if "default" in keywords else None)
        else:
            continue
        if isinstance(name, str) and default is not None:
            defaults[name.replace("-", "_")] = default
    return defaults, namespaces


def parameter_defaults(arguments: ast.arguments) -> dict:
    """Parameter name -> its default's expression, for the parameters of ``arguments`` that have one
    (positional and keyword-only)."""
    positional = [*arguments.posonlyargs, *arguments.args]
    defaults = {arg.arg: default for arg, default in zip(positional[len(positional) - len(arguments.defaults):],
                                                         arguments.defaults)}
    defaults.update((arg.arg, default) for arg, default in zip(arguments.kwonlyargs, arguments.kw_defaults)
                    if default is not None)
    return defaults
