"""When a hoisted op would behave unlike the ops a loop built per iteration: what a safe hoist must
not cross or change (:mod:`graphguard.fix.hoist` proposes the moves; this module says what makes them
unsafe). Graph collections read between the new place and the old one, and ops whose meaning is per
instance (seeded random ops, Savers that delete old checkpoints).
"""

from __future__ import annotations

import ast
import re
from typing import Optional

import libcst as cst

from graphguard.analysis.catalog import Effect, effect_of
from graphguard.fix import source
from graphguard.fix.source import File, Region

#: Placeholders are VARIABLE-effect names that create no variable.
PLACEHOLDERS = frozenset({"tf.placeholder", "tf.placeholder_with_default", "tf.sparse_placeholder"})
#: Builders that capture what the graph holds when they are built: moved only when nothing else in the
#: loop may add variables or summaries before them.
CAPTURING = frozenset({Effect.SAVER, Effect.INITIALIZER})
#: Calls that read what the graph holds when they run (collections, variable lists, merge_all).
CAPTURING_NAMES = re.compile(r"merge_all|get_collection|(?:trainable|global|local|all|model|moving_average)_variables")


def tf_name(module: Region, call: cst.Call) -> Optional[str]:
    """The TensorFlow name ``call`` calls (``tf.`` spelling), or None."""
    dotted = source.dotted(call.func)
    if dotted is None:
        return None
    head, _, rest = dotted.partition(".")
    imported = module.aliases.get(head)
    return source.canonical(imported + ("." + rest if rest else "")) if imported is not None else None


def reads_collections(module: Region, call: cst.Call, kinds: frozenset = frozenset({"summaries", "variables", "losses"})) -> bool:
    """Whether ``call`` reads, when it runs, one of the graph collections ``kinds`` (those
    :func:`adds_to_collections` names): ``merge_all()`` the summaries; a ``Saver``, an initializer and
    the variable lists the variables; ``get_collection()`` any of them. A summary moved out of a loop
    that makes a ``Saver`` per epoch joins nothing the ``Saver`` reads (an eighth new user's trial)."""
    name = tf_name(module, call)
    if name is None:
        return False
    if "get_collection" in name:
        return bool(kinds)
    if "merge_all" in name:
        return "summaries" in kinds
    return "variables" in kinds and (effect_of(name) in CAPTURING or CAPTURING_NAMES.search(name) is not None)


def adds_to_collections(tf_calls: list, creates_variables: bool) -> frozenset:
    """Which graph collections the hoisted code adds to: ``"summaries"`` (a summary op), ``"variables"``
    (a variable, or ``creates_variables``: a layer, an optimizer's slots), ``"losses"`` (a ``tf.losses``
    loss); empty when none. ``tf_calls``: the TensorFlow names it calls."""
    kinds = {"variables"} if creates_variables else set()
    for name in tf_calls:
        effect = effect_of(name)
        if effect is Effect.SUMMARY:
            kinds.add("summaries")
        elif effect is Effect.VARIABLE and name not in PLACEHOLDERS:
            kinds.add("variables")
        elif name.startswith("tf.losses."):
            kinds.add("losses")
    return frozenset(kinds)


#: Random ops that are not named ``random``: each new op draws from its own seed.
_RANDOM_NAMES = frozenset({"tf.truncated_normal", "tf.multinomial", "tf.nn.dropout", "tf.nn.fractional_max_pool",
                           "tf.nn.fractional_avg_pool", "tf.parameterized_truncated_normal"})
_GRAPH_SEED = re.compile(r"set_random_seed|random\.set_seed")


def per_instance(module: Region, loop: cst.CSTNode, expr: cst.BaseExpression) -> list[str]:
    """Why one op built before the loop would behave unlike the ops built per iteration, for ops whose
    meaning is per instance (empty when none):

    * a random op with an op-level ``seed=``, or in a file that sets the graph-level seed: each new op
      repeats the same draws (its seed is fixed by the seeds and the op's place in the graph), where one
      op advances through its sequence (``tf.random.set_seed``, TF API docs);
    * a ``Saver`` whose ``save`` in the loop names checkpoints by step (``global_step=``) and that sets
      ``max_to_keep``: one Saver keeps only its last ``max_to_keep`` and deletes older files, where each
      Saver made per iteration kept its own (``tf.train.Saver``, TF API docs). A Saver that does not
      set it is moved with ``max_to_keep=None`` added (:func:`savers_to_keep_all`): that is no reason."""
    why = []
    calls = [expr, *source.calls(expr)] if isinstance(expr, cst.Call) else list(source.calls(expr))
    names = [(call, tf_name(module, call) or "") for call in calls]
    randoms = [call for call, name in names if name.startswith("tf.") and ("random" in name or name in _RANDOM_NAMES)]
    if randoms and (any(arg.keyword is not None and arg.keyword.value == "seed" for call in randoms for arg in call.args)
                    or _GRAPH_SEED.search(module.text)):
        why.append("a seeded random op repeats the same draws when rebuilt; built once, it draws new values each run")
    if any(not _can_keep_all(call) for call in _deleting_savers(module, loop, names)):
        why.append("one Saver keeps only its last max_to_keep checkpoints and deletes the older ones that the "
                   "Savers made per iteration kept; pass max_to_keep=None to keep them")
    return why


def savers_to_keep_all(module: Region, loop: cst.CSTNode, expr: cst.BaseExpression) -> list[cst.Call]:
    """The ``tf.train.Saver(...)`` calls in ``expr`` that a move before ``loop`` must give
    ``max_to_keep=None``: the loop saves checkpoints named by step, and the call leaves ``max_to_keep``
    at its default (5). Each Saver made per iteration saves one checkpoint and deletes none; one Saver
    for all iterations would delete all but the last five. With ``max_to_keep=None`` the files and the
    ``checkpoint`` state file come out as before (measured on TF 2.21's ``compat.v1``: eight saves,
    eight checkpoints kept and the state file listing only the last, in both versions)."""
    calls = [expr, *source.calls(expr)] if isinstance(expr, cst.Call) else list(source.calls(expr))
    names = [(call, tf_name(module, call) or "") for call in calls]
    return [call for call in _deleting_savers(module, loop, names) if _can_keep_all(call)]


def with_keep_all(saver: cst.Call) -> cst.Call:
    """``saver`` with ``max_to_keep=None`` as its last argument."""
    args = list(saver.args)
    if args:
        args[-1] = args[-1].with_changes(comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" ")))
    args.append(cst.Arg(keyword=cst.Name("max_to_keep"), value=cst.Name("None"),
                        equal=cst.AssignEqual(cst.SimpleWhitespace(""), cst.SimpleWhitespace(""))))
    return saver.with_changes(args=args)


def _deleting_savers(module: Region, loop: cst.CSTNode, names: list) -> list[cst.Call]:
    """The Saver calls of ``names`` (``(call, TF name)`` pairs) that may delete checkpoints once built
    before ``loop``: they do not keep all, and a ``save`` in the loop names checkpoints by step."""
    savers = [call for call, name in names if name == "tf.train.Saver" and not keeps_all(call)]
    if not savers:
        return []
    for call in source.calls(loop.body):
        if (isinstance(call.func, cst.Attribute) and call.func.attr.value == "save"
                and (len([a for a in call.args if a.keyword is None]) >= 3
                     or any(a.keyword is not None and a.keyword.value == "global_step" for a in call.args))):
            return savers
    return []


def _can_keep_all(saver: cst.Call) -> bool:
    """Whether ``max_to_keep=None`` can be added to ``saver``: it does not set ``max_to_keep`` (the
    fourth parameter) and passes no ``*args`` or ``**kwargs``."""
    return (len([a for a in saver.args if a.keyword is None and not a.star]) < 4
            and not any(a.star or (a.keyword is not None and a.keyword.value == "max_to_keep") for a in saver.args))


def keeps_all(saver: cst.Call) -> bool:
    """``tf.train.Saver(max_to_keep=None)`` or ``max_to_keep=0``: it deletes no checkpoint."""
    for arg in saver.args:
        if arg.keyword is not None and arg.keyword.value == "max_to_keep":
            value = arg.value
            return (isinstance(value, cst.Name) and value.value == "None") or (
                isinstance(value, cst.Integer) and value.value == "0")
    return False


def earlier_value_read_after(file: File, name: str, first_row: int, last_row: int) -> bool:
    """Whether ``name``, moved from a loop to line ``first_row`` (the loop ends on ``last_row``), may
    already hold a value bound before ``first_row`` in the same scope (the function around the loop, or
    the module) that code after ``last_row`` reads. A loop that runs no iteration (an empty dataset,
    ``while`` false at once) then left the earlier value in place, where the moved statement replaces it.
    Reads in functions of a module-level scope count (they may read the global).

    Each scope's names are read once per file (:func:`_bindings`): a file with thousands of fixes asks
    this of the module thousands of times."""
    scope = file.scope_at(first_row, last_row)
    index = file.bindings.get(id(scope))
    if index is None:
        index = file.bindings[id(scope)] = _bindings(scope)
    bound, read = index
    return bound.get(name, first_row) < first_row and read.get(name, last_row) > last_row


def _bindings(scope: ast.AST) -> tuple[dict, dict]:
    """``({name: the first row the scope itself binds it on}, {name: the last row it is read on})`` for
    the function or module ``scope``: bindings by assignment, ``del`` or import in the scope's own code
    (a parameter counts as bound on row 0), reads anywhere in it, nested functions and classes too."""
    bound: dict = {}
    read: dict = {}
    stack = [(child, True) for child in ast.iter_child_nodes(scope)]
    while stack:
        node, own = stack.pop()
        if isinstance(node, ast.Name):
            if isinstance(node.ctx, ast.Load):
                read[node.id] = max(read.get(node.id, 0), node.lineno)
            elif own:
                bound[node.id] = min(bound.get(node.id, node.lineno), node.lineno)
        elif own and isinstance(node, ast.arg):
            bound[node.arg] = 0
        elif own and isinstance(node, (ast.Import, ast.ImportFrom)):
            for alias in node.names:
                local = alias.asname or alias.name.split(".")[0]
                bound[local] = min(bound.get(local, node.lineno), node.lineno)
        nested = isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef))
        stack.extend((child, own and not nested) for child in ast.iter_child_nodes(node))
    return bound, read
