"""Growth in a loop over a fixed handful of cases: what the linter's ``max-bounded-iterations`` leaves out.

A test that checks an op for each of four dtypes builds a new op in each iteration and runs it::

    for dtype in (tf.float16, tf.float32, tf.float64, tf.int32):
        x = tf.constant([-1, 0, 2], dtype=dtype)
        assert (sess.run(tf.nn.relu(x)) == [0, 0, 2]).all()

The graph grows by one op group per case, four times, and stops, and each op is a different one (its
dtype comes from the case): building it once before the loop is no fix. The linter stays silent on such
a loop (a construction whose loops run at most ``max-bounded-iterations`` times in all, 10 by default,
see docs/check.md); the runtime guards read the same from the source of the line that built the ops and
of the lines that called it on its call path. The growth is *bounded*, held as a one-off and not reported,
when every loop around those lines, in their own functions:

* runs a number of times the source fixes: a literal's length, ``range`` of integer constants, a
  module-level or local name bound once to such a literal; through ``enumerate``, ``zip``, ``sorted``,
  ``list``, ``tuple``, ``reversed``; with a product of at most the bound; and
* hands the line its case: the line reads the loop's target, or a name the loop's body derived from it
  before the line (``x = tf.constant(..., dtype=dtype)``, then ``tf.nn.relu(x)``).

``for step in range(5): sess.run(tf.argmax(y, 1))`` builds the same op five times: not bounded (a
notebook cell run again repeats it). A line in no loop, or in a loop the source does not count (an epoch
loop, a dataset, a ``while``), is not bounded either.

Sources are read with :mod:`linecache` (what tracebacks show) and parsed once per file.
"""

from __future__ import annotations

import ast
import linecache
from typing import Any, Iterable, Optional

from graphguard.analysis.syntax import cli_options, constant_int  # the linter's readings of an int and an option

__all__ = ["BOUND", "bounded_trips", "in_a_loop"]

#: The linter's default ``max-bounded-iterations`` (:class:`graphguard.config.Config`).
BOUND = 10

_Location = tuple  # (filename, lineno)
_trees: dict[Any, Optional[tuple[ast.Module, dict[int, ast.AST]]]] = {}
_SAME_COUNT = frozenset({"enumerate", "sorted", "list", "tuple", "reversed", "set"})


def bounded_trips(locations: Iterable[Optional[_Location]], bound: int = BOUND, cases: bool = True) -> Optional[int]:
    """How many times the lines at ``locations`` run in all (a creating line and its callers, innermost
    first, as :func:`~graphguard.runtime.attribution.op_origin_and_callers` gives them: ``None`` where
    frames that are not the user's came between), when every loop around them in their functions has a
    count the source fixes and the product is at most ``bound``; else None (not bounded: no loop at all,
    a loop of unknown count, more than ``bound`` runs, or a library's frames between two user lines,
    whose loops the source here does not show; the runner's frames outside the outermost user line,
    pytest's, do not count). ``cases=False``: any loop of a count the source fixes, whether or not the
    line reads its case (growth there is real, and bounded: its message says so)."""
    located = list(locations)
    while located and located[-1] is None:
        located.pop()
    if None in located:
        return None
    total, loops = 1, 0
    for filename, lineno in located:
        for count in _loop_counts(filename, lineno, cases):
            if count is None:  # not counted, or the line's op does not come from the case
                return None
            loops += 1
            total *= count
            if total > bound:
                return None
    return total if loops else None


def in_a_loop(locations: Iterable[Optional[_Location]]) -> bool:
    """Whether any of ``locations`` (as :func:`bounded_trips` takes them) stands in a loop of its
    function, or cannot be read (then it may: the usual wording stays)."""
    for location in locations:
        if location is None:
            continue
        if _parsed(location[0]) is None or _loop_counts(location[0], location[1], cases=False):
            return True
    return False


def _loop_counts(filename: str, lineno: int, cases: bool = True) -> list[Optional[int]]:
    """The counts of the loops around line ``lineno`` of ``filename``, innermost first, up to its
    function (None for a loop whose count the source does not fix, or whose case the line does not
    read); [] when the file cannot be read."""
    parsed = _parsed(filename)
    if parsed is None:
        return []
    tree, parents = parsed
    line = node = _innermost(tree, lineno)
    counts: list[Optional[int]] = []
    every: dict[str, int] = {}  # ``if step % 100 == 99:`` around the line: step -> 100
    while node is not None and not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
        parent = parents.get(id(node))
        if isinstance(parent, ast.If) and node in parent.body:
            period = _every(parent.test)
            if period is not None:
                every.setdefault(*period)
        if isinstance(parent, (ast.For, ast.AsyncFor)) and node is not parent.iter and node is not parent.target \
                and node not in parent.orelse:
            # (a line under ``if step % 50 == 0:`` that reads ``step`` is periodic growth, not a case of
            # a loop over a handful: a twenty-sixth new user's trial saw one assign told as five cases)
            reads = not cases or (_reads_case(parent, line) and not (
                isinstance(parent.target, ast.Name) and parent.target.id in every))
            count = _count(parent.iter, tree, _scope(parent, parents)) if reads else None
            if count is not None and isinstance(parent.target, ast.Name) and parent.target.id in every:
                count = -(-count // every[parent.target.id])  # the body's line runs on every k-th step
            counts.append(count)
        elif isinstance(parent, ast.While) and node not in parent.orelse and node is not parent.test:
            counts.append(None)
        node = parent
    return counts


def _every(test: ast.AST) -> Optional[tuple[str, int]]:
    """``if step % k == c:`` (also ``not step % k``, ``(step + 1) % k == 0``) with ``k`` an int literal of
    at least 2: (``step``, ``k``), the body runs on every ``k``-th value of ``step``; the linter reads the
    same guard (:meth:`graphguard.analysis.flow.ValueFlow._every`, there with more spellings of ``k``)."""
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        modulo = test.operand
    elif (isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], ast.Eq)
          and isinstance(test.comparators[0], ast.Constant)):
        modulo = test.left
    else:
        return None
    if not (isinstance(modulo, ast.BinOp) and isinstance(modulo.op, ast.Mod)):
        return None
    counted, k = modulo.left, constant_int(modulo.right)
    if isinstance(counted, ast.BinOp) and isinstance(counted.op, (ast.Add, ast.Sub)) and isinstance(counted.right, ast.Constant):
        counted = counted.left
    if not isinstance(counted, ast.Name) or k is None or k < 2:
        return None
    return counted.id, k


def _reads_case(loop: ast.AST, line: ast.AST) -> bool:
    """``line`` (a statement in ``loop``'s body) reads the loop's target, or a name that an assignment in
    the body before it derived from the target (transitively)."""
    derived = {n.id for n in ast.walk(loop.target) if isinstance(n, ast.Name)}
    for stmt in ast.walk(ast.Module(body=loop.body, type_ignores=[])):
        if stmt is line:
            break
        if isinstance(stmt, (ast.Assign, ast.AnnAssign, ast.AugAssign)) and stmt.value is not None \
                and stmt.lineno < line.lineno and _names(stmt.value) & derived:
            targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
            derived |= {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}
    return bool(_names(line) & derived)


#: Calls that only show their arguments: a case they print reaches no op (``print(step, sess.run(op))``).
_SHOWING = frozenset({"print", "info", "debug", "warning", "error", "write", "format", "set_description",
                      "set_postfix"})


def _names(node: ast.AST) -> set[str]:
    """The names ``node`` reads as values, not those it only tests (``a if step else b`` picks one of
    two ops by the case, and builds the same one again), nor those it only prints: an argument of
    ``print``/``logging``/``str.format`` that is no call (``print(step, sess.run(tf.reduce_max(out)))``
    builds the same op on every 20th step; a tenth new user's trial saw it held as a bounded case)."""
    names, todo = set(), [node]
    while todo:
        current = todo.pop()
        if isinstance(current, ast.Name) and isinstance(current.ctx, ast.Load):
            names.add(current.id)
        if isinstance(current, ast.Call):
            func = current.func
            shown = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else None
            if shown in _SHOWING:
                todo.append(func)
                todo.extend(arg for arg in (*current.args, *(k.value for k in current.keywords))
                            if any(isinstance(n, ast.Call) for n in ast.walk(arg)))
                continue
        for field, value in ast.iter_fields(current):
            if isinstance(current, (ast.IfExp, ast.If, ast.While)) and field == "test":
                continue
            todo.extend(v for v in (value if isinstance(value, list) else [value]) if isinstance(v, ast.AST))
    return names


def _parsed(filename: str) -> Optional[tuple[ast.Module, dict[int, ast.AST]]]:
    key: Any = filename
    if filename.startswith("<"):
        # a name that stands for new code each time (``<timed exec>``: every ``%%time`` cell's body; a
        # twenty-first new user's trial: a timed cell's loop was read from the previous timed cell)
        key = (filename, "".join(linecache.getlines(filename)))
    if key not in _trees:
        source = "".join(linecache.getlines(filename))
        try:
            tree = ast.parse(source) if source else None
        except (SyntaxError, ValueError):
            tree = None
        if tree is None:
            _trees[key] = None
        else:
            parents = {id(child): node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}
            _trees[key] = (tree, parents)
    return _trees[key]


def _innermost(tree: ast.Module, lineno: int) -> Optional[ast.AST]:
    """The innermost statement spanning ``lineno``."""
    best = None
    for node in ast.walk(tree):
        if isinstance(node, ast.stmt) and node.lineno <= lineno <= (node.end_lineno or node.lineno):
            if best is None or (node.lineno, -(node.end_lineno or 0)) >= (best.lineno, -(best.end_lineno or 0)):
                best = node
    return best


def _scope(node: ast.AST, parents: dict[int, ast.AST]) -> list[ast.AST]:
    """The function around ``node`` (its body is searched for a name's binding first), then the module."""
    scopes = []
    while node is not None:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Module)):
            scopes.append(node)
        node = parents.get(id(node))
    return scopes


_options: dict[int, tuple[dict, set]] = {}


def _int_value(node: ast.AST, tree: ast.Module) -> Optional[int]:
    """An int literal, or a command-line option with an int default read from the parsed options
    (``args.steps`` after ``parser.add_argument("--steps", type=int, default=60)``, ``FLAGS.epochs``):
    the count the script runs by default, as the linter reads it (:func:`graphguard.analysis.syntax.cli_options`).
    A run given another value grows more often than that, and :meth:`~graphguard.runtime.growth.GrowthAccounting._within_bound`
    then reports it: a line may not grow more times than its loops were counted."""
    value = constant_int(node)
    if value is not None or not (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)):
        return value
    options = _options.get(id(tree))
    if options is None:
        options = _options[id(tree)] = cli_options(tree)
    defaults, namespaces = options
    return defaults.get(node.attr) if node.value.id in namespaces else None


def _count(iterable: ast.AST, tree: ast.Module, scopes: list[ast.AST]) -> Optional[int]:
    if isinstance(iterable, (ast.Tuple, ast.List, ast.Set)):
        return None if any(isinstance(e, ast.Starred) for e in iterable.elts) else len(iterable.elts)
    if isinstance(iterable, ast.Dict):
        return None if any(k is None for k in iterable.keys) else len(iterable.keys)
    if isinstance(iterable, ast.Call) and isinstance(iterable.func, ast.Name) and not iterable.keywords:
        name = iterable.func.id
        if name == "range" and 1 <= len(iterable.args) <= 3:
            bounds = [_int_value(arg, tree) for arg in iterable.args]
            if None in bounds:
                return None
            try:
                return len(range(*bounds))
            except ValueError:
                return None
        if name in _SAME_COUNT and iterable.args:
            return _count(iterable.args[0], tree, scopes)
        if name == "zip" and iterable.args:
            counts = [_count(arg, tree, scopes) for arg in iterable.args]
            return None if None in counts else min(counts)
        return None
    if isinstance(iterable, ast.Name):
        for scope in scopes:
            values = [stmt.value for stmt in ast.walk(scope) if isinstance(stmt, ast.Assign)
                      and any(isinstance(t, ast.Name) and t.id == iterable.id for t in stmt.targets)]
            if len(values) == 1:
                return _count(values[0], tree, [])
            if values:
                return None
    return None
