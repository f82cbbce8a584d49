"""``graphguard run --sweep script.py``: a script's sweep loop measured by a :class:`SweepGuard`, unedited.

The trials are the iterations of the outermost loop that builds and trains a model. Which loop: the
linter's answer first (the loops of the script's GG201 ``model-rebuilt-in-loop``, GG202
``model-retained-across-iterations`` and GG111 ``graph-not-reset-in-loop`` findings: a model or a TF1
graph built per iteration), read as if the script freed nothing (its ``clear_session()`` and
``reset_default_graph()`` left out: the loop a ``--fix`` freed is still the trial loop, so a run before
and after the fix measures the same trials). Else the outermost loop whose body, or a function of the
script it calls, calls ``.fit(...)`` or ``.train(...)`` (a Keras fit, a CS231n solver) or opens a
``Session`` (a TF1 trial in its own graph). Of nested candidates the outermost is taken: a
learning-rate loop around a k-fold is one trial per learning rate, and a loop that calls the function
holding another candidate loop is taken over that loop.

The script is compiled from its source with that loop's body wrapped, line numbers unchanged::

    for lr in rates:                                  for lr in rates:
        model = build(lr)              becomes            with __graphguard_sweep__.trial(f"lr={lr!r}"):
        model.fit(x, y)                                       model = build(lr)
                                                              model.fit(x, y)

where ``__graphguard_sweep__`` is the launcher's guard, bound in the script's globals (functions of the
script see it too), and ``__graphguard_sweep__.finish()`` follows the loop: its last trial is judged
there, while what the loop's function holds still exists. Its trials track the values the loop's body binds (``model``, ``solver``: the names
rebound during the trial; not numbers, strings, functions, classes or modules), besides the Keras models,
graphs and sessions every ``SweepGuard`` finds by itself. ``break``, ``continue`` and ``return`` leave the ``with`` as they leave the loop.
A ``for`` loop's trials are named by its target (``lr=0.001``, ``fold=2``; each value's ``repr`` cut to
24 characters, so ``tr=array([0, 1, 2, ...`` not the whole array), after its line when the script has
several sweep loops (``line 12: lr=0.001``); a ``while`` loop's are ``trial N``. The guard's report goes to stderr at the end, and a leak makes the exit status 1.

The linter runs in-process on the one script (no TensorFlow import: it never imports it).
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import Optional

__all__ = ["SweepPlan", "plan", "unwrapped_rows", "GUARD_NAME"]

#: The script-global name of the launcher's :class:`SweepGuard`.
GUARD_NAME = "__graphguard_sweep__"
#: what trains (a Keras fit, a solver's train) or starts a TF1 trial (a session of its own)
_TRAIN_CALLS = frozenset({"fit", "train", "fit_generator", "train_model", "Session", "InteractiveSession"})

Loop = (ast.For, ast.AsyncFor, ast.While)


@dataclass(frozen=True)
class SweepPlan:
    """The compiled, instrumented script and what was chosen.

    Attributes:
        code: the script's code object with the trial loops wrapped.
        loops: 1-based line numbers of the loops whose iterations are trials.
        why: how they were chosen (``"a loop that makes a model per iteration, as GG201/GG202/GG111 read
            loops"`` or ``"a loop that calls .fit()/.train() or opens a session"``).
    """

    code: object
    loops: tuple[int, ...]
    why: str


def plan(source: bytes, filename: str) -> Optional[SweepPlan]:
    """The instrumented code of ``source`` (a script's bytes), or ``None`` when no loop builds and trains a
    model. Raises ``SyntaxError`` as ``compile`` does."""
    tree = ast.parse(source, filename)
    loops = {node.lineno: node for node in ast.walk(tree) if isinstance(node, Loop)}
    rows = _finding_rows(source, filename)
    chosen, why = [loops[row] for row in rows if row in loops], "a loop that makes a model per iteration, as GG201/GG202/GG111 read loops"
    if not chosen and rows:
        return None  # the sweep is a comprehension (unwrapped_rows): not the epoch loop inside its function
    if not chosen:
        chosen, why = _by_shape(tree, list(loops.values())), "a loop that calls .fit()/.train() or opens a session"
    chosen = _outermost(tree, [_enclosing(tree, node) for node in chosen])
    if not chosen:
        return None
    for node in chosen:  # two sweeps in one script: each trial says which loop it belongs to
        node.body = [_wrapped(node, f"line {node.lineno}: " if len(chosen) > 1 else "")]
        _finish_after(tree, node, phase=len(chosen) > 1)
    ast.fix_missing_locations(tree)
    code = compile(tree, filename, "exec", dont_inherit=True)
    return SweepPlan(code, tuple(sorted(node.lineno for node in chosen)), why)


def _loop_rows(source: bytes, filename: str, codes: list[str], frees: bool = True, bound: int = 0) -> list[int]:
    """The rows of the loops of the script's ``codes`` findings, however few their iterations (the
    linter's max-bounded-iterations hides only what a user reads as noise; ``bound``: hide loops of at
    most that many, as the linter does); ``frees=False`` reads the script as if it freed nothing. Empty
    when the linter fails: its trouble must not stop the run."""
    from graphguard.checker import Checker
    from graphguard.config import Config
    from graphguard.discovery import followed_imports

    try:
        # the project modules the script imports, read for the calls into them (a twenty-third new user's
        # trial: a sweep whose model builder lives in common.py was "no GG201/GG202 finding")
        context, _ = followed_imports([filename], [filename], Config())
        found = Checker(codes, max_bounded_iterations=bound).check_source(source, filename, frees=frees,
                                                                          context=context)
    except Exception:
        return []
    return sorted({d.loop_row for d in found if d.loop_row is not None})


def _finding_rows(source: bytes, filename: str) -> list[int]:
    """The rows of the loops of the script's GG201/GG202/GG111 findings, read as if it freed nothing:
    every sweep loop, however few its trials (the guard measures what a short one keeps too)."""
    return _loop_rows(source, filename, ["GG201", "GG202", "GG111"], frees=False)


def reported_model_rows(source: bytes, filename: str) -> list[int]:
    """The rows of the loops of the script's GG201/GG202/GG111 findings as ``graphguard check`` reports
    them with its default configuration (short loops left out)."""
    from graphguard.config import Config

    return _loop_rows(source, filename, ["GG201", "GG202", "GG111"], bound=Config().max_bounded_iterations)


def kept_model_rows(source: bytes, filename: str) -> list[int]:
    """The rows of the loops of the script's GG201/GG202 findings as the linter reports them (a loop that
    calls ``clear_session()`` or keeps nothing has none), however few their iterations: the loops that
    ``graphguard run`` without ``--sweep`` does not judge."""
    return _loop_rows(source, filename, ["GG201", "GG202"])


def keras_step_rows(source: bytes, filename: str) -> list[int]:
    """The rows of the loops of the script's GG303/GG306 findings (Keras' predict or fit per step), as
    ``graphguard check`` reports them by default: no runtime guard judges their cost."""
    from graphguard.config import Config

    return _loop_rows(source, filename, ["GG303", "GG306"], bound=Config().max_bounded_iterations)


def unwrapped_rows(source: bytes, filename: str) -> list[int]:
    """The rows of loops the linter reads as making a model per iteration that ``--sweep`` cannot wrap:
    comprehensions (``models = [train(u) for u in range(15)]``), which have no body of statements to put
    in a ``with``. A new user's trial: such a sweep ran unmeasured under a verdict that read as a pass."""
    tree = ast.parse(source, filename)
    comprehensions = {node.lineno for node in ast.walk(tree)
                      if isinstance(node, (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp))}
    return [row for row in _finding_rows(source, filename) if row in comprehensions]


def search_rows(source: bytes, filename: str) -> list[int]:
    """The rows of the script's GG201/GG202 findings whose loop is neither a loop statement nor a
    comprehension: a search engine's call (``study.optimize(objective, n_trials=15)``, ``fmin``,
    ``GridSearchCV(...)``), whose trials ``--sweep`` cannot divide (the engines' callbacks can)."""
    tree = ast.parse(source, filename)
    written = {node.lineno for node in ast.walk(tree)
               if isinstance(node, (Loop, ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp))}
    return [row for row in _finding_rows(source, filename) if row not in written]


def _by_shape(tree: ast.AST, loops: list[ast.AST]) -> list[ast.AST]:
    """The loops whose body trains or opens a session, directly or through the script's own functions
    (by name, transitively); a candidate inside a function that another candidate calls is dropped."""
    functions = {node.name: node for node in ast.walk(tree) if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))}

    def reached(body: list[ast.stmt]) -> set[str]:
        seen: set[str] = set()
        todo = [node for stmt in body for node in ast.walk(stmt)]
        while todo:
            node = todo.pop()
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in functions \
                    and node.func.id not in seen:
                seen.add(node.func.id)
                todo.extend(ast.walk(functions[node.func.id]))
        return seen

    def trains(body: list[ast.stmt]) -> bool:
        return any(isinstance(node, ast.Call) and _callee(node.func) in _TRAIN_CALLS
                   for stmt in body for node in ast.walk(stmt))

    candidates = []
    for loop in loops:
        calls = reached(loop.body)
        if trains(loop.body) or any(trains(functions[name].body) for name in calls):
            candidates.append((loop, calls))
    called = {name for _, calls in candidates for name in calls}
    inside = {id(node) for name in called for node in ast.walk(functions[name])}
    return [loop for loop, _ in candidates if id(loop) not in inside]


def _callee(func: ast.AST) -> str:
    """``fit`` of ``model.fit``, ``Session`` of ``tf.Session`` and of ``Session``."""
    if isinstance(func, ast.Attribute):
        return func.attr
    return func.id if isinstance(func, ast.Name) else ""


def _outermost(tree: ast.AST, chosen: list[ast.AST]) -> list[ast.AST]:
    """``chosen`` without the loops nested in another chosen loop."""
    ids = {id(node) for node in chosen}
    inner: set[int] = set()
    for node in chosen:
        for child in ast.walk(node):
            if child is not node and id(child) in ids:
                inner.add(id(child))
    seen: set[int] = set()
    result = []
    for node in chosen:
        if id(node) not in inner and id(node) not in seen:
            seen.add(id(node))
            result.append(node)
    return result


def _enclosing(tree: ast.AST, loop: ast.AST) -> ast.AST:
    """The outermost loop around ``loop`` in the same function (or at module level), or ``loop``: a
    learning-rate loop around the k-fold that builds the models."""
    parents: dict[int, ast.AST] = {}
    for node in ast.walk(tree):
        for child in ast.iter_child_nodes(node):
            parents[id(child)] = node
    outermost, node = loop, parents.get(id(loop))
    while node is not None and not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
        if isinstance(node, Loop):
            outermost = node
        node = parents.get(id(node))
    return outermost


def _finish_after(tree: ast.AST, loop: ast.AST, phase: bool = False) -> None:
    """``__graphguard_sweep__.finish()`` right after ``loop``, in the same body: the last trial is
    judged while what the loop's function holds still exists (a new user's trial: a grid in ``main()``
    keeping ``results.append((loss, model))`` was judged after ``main()`` returned, its list gone, and
    the last trial read as keeping nothing)."""
    call = ast.Expr(ast.Call(ast.Attribute(ast.Name(GUARD_NAME, ast.Load()), "finish", ast.Load()), [], []))
    start = ast.Expr(ast.Call(ast.Attribute(ast.Name(GUARD_NAME, ast.Load()), "_phase", ast.Load()), [], []))
    for parent in ast.walk(tree):
        for field in ("body", "orelse", "finalbody"):
            statements = getattr(parent, field, None)
            if isinstance(statements, list) and any(statement is loop for statement in statements):
                position = next(i for i, statement in enumerate(statements) if statement is loop)
                statements.insert(position + 1, ast.copy_location(call, loop))
                if phase:  # several sweep loops: each fits its own RSS trend (SweepGuard._phase)
                    statements.insert(position, ast.copy_location(start, loop))
                return


def _names(target: ast.AST) -> list[str]:
    if isinstance(target, ast.Name):
        return [target.id]
    if isinstance(target, (ast.Tuple, ast.List)):
        return [name for element in target.elts for name in _names(element)]
    return []


def _wrapped(loop: ast.AST, prefix: str = "") -> ast.With:
    """``with __graphguard_sweep__.trial(NAME):`` around ``loop``'s body, at its first line; ``prefix``
    before a ``for`` loop's names (``"line 12: "`` when the script has several sweep loops)."""
    names = _names(loop.target) if isinstance(loop, (ast.For, ast.AsyncFor)) else []
    if names:  # __graphguard_sweep__._label((("lr", lr), ...)): short reprs, an array is not 2 KB of name
        pairs = [ast.Tuple([ast.Constant(name), ast.Name(name, ast.Load())], ast.Load()) for name in names]
        label: ast.expr = ast.Call(ast.Attribute(ast.Name(GUARD_NAME, ast.Load()), "_label", ast.Load()),
                                   [ast.Tuple(pairs, ast.Load())], [])
        if prefix:
            label = ast.BinOp(ast.Constant(prefix), ast.Add(), label)
    else:
        label = ast.Constant(None)
    call = ast.Call(ast.Attribute(ast.Name(GUARD_NAME, ast.Load()), "trial", ast.Load()), [label], [])
    first = loop.body[0]
    with_node = ast.With([ast.withitem(call, None)], loop.body)
    return ast.copy_location(with_node, first)
