"""Questions about syntax that the reader asks of ``ast`` nodes: dotted names, how a callee is
written, once-guards (``if self._op is None: self._op = ...``), loops that always break, ``as_default()``.

Pure functions of the tree: no bindings, no facts.
"""

from __future__ import annotations

import ast

def dotted_name(node: ast.AST) -> str | None:
    """``self.sess`` for an attribute chain of names, ``sess`` for a name, else None."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        head = dotted_name(node.value)
        return None if head is None else f"{head}.{node.attr}"
    return None


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
    text = " ".join(text.split())
    return text if len(text) <= 60 else text[:57] + "..."


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


def assigned_targets(body: list) -> set[str]:
    """Dotted names assigned (``X = ...``, ``X[k] = ...``, ``setattr``) anywhere in ``body``."""
    names = set()
    for statement in body:
        for node in ast.walk(statement):
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
    return target is not None and target in assigned_targets(body)



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
                names.update(n.id for n in ast.walk(target) if isinstance(n, ast.Name))
        elif isinstance(statement, (ast.AnnAssign, ast.AugAssign)) and isinstance(statement.target, ast.Name):
            names.add(statement.target.id)
        for field_name in ("body", "orelse", "finalbody", "handlers"):
            stack.extend(getattr(statement, field_name, ()) or ())
    return frozenset(names & defined)
