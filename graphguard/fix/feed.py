"""The value-dependent fix: an assign whose value changes per step becomes a placeholder-fed assign op.

``sess.run(tf.assign(lr, new_lr))`` in a loop where ``new_lr`` changes builds an assign op (and a
constant holding ``new_lr``) on every iteration. The fix builds a placeholder of the variable's own
dtype and shape and one assign op from it, before the loop, and feeds the value per step::

    lr_value = tf.placeholder(lr.dtype.base_dtype, lr.shape)
    assign_lr_op = tf.assign(lr, lr_value)
    for epoch in range(epochs):
        ...
        sess.run(assign_lr_op, feed_dict={lr_value: new_lr})

Nothing is guessed about the dtype or shape (they are read from the variable), but the fix is
*unsafe*: feeding needs a Python or NumPy value, and graphguard cannot always see that ``new_lr`` is
not a tensor. Only the form whose assign is the first argument of ``<session>.run(...)`` is fixed; its
feed (none, a dict literal, or any other mapping) gets the new entry.

The same for data copied into a constant per step (GG105): ``images = tf.constant(batch)`` at the top
of the loop body becomes ``images = tf.placeholder(...)`` before the loop, and every ``run`` after it
in the loop feeds ``{images: batch}``. Unsafe too: the dtype is the ``dtype=`` given, the one the
value's source shows (:func:`_written_dtype`), or else a guess (``float32``; ``tf.constant`` of a
float64 array made float64), and the shape is left open.
"""

from __future__ import annotations

import ast

from typing import Optional

import libcst as cst

from graphguard.fix import reads, source
from graphguard.fix.anchor import hoist_point
from graphguard.fix.edits import UNSAFE, Edit, Fix

_ASSIGNS = ("assign", "assign_add", "assign_sub")


def propose_feed(module, loop, expr: cst.BaseExpression, anchor_names: set, loop_names: set) -> Optional[Fix]:
    """The placeholder-fed fix for the assign ``expr`` inside ``loop``, or None when it does not have
    the shape described above. ``loop_names`` are the names the loop assigns."""
    if not isinstance(expr, cst.Call) or not isinstance(expr.func, cst.Attribute) or expr.func.attr.value not in _ASSIGNS:
        return None
    run = module.parents.get(module.parents.get(expr))  # Arg -> Call
    if not (isinstance(run, cst.Call) and isinstance(run.func, cst.Attribute) and run.func.attr.value == "run"
            and run.args and run.args[0].value is expr and run.args[0].keyword is None):
        return None
    method = expr.func.attr.value
    callee = source.dotted(expr.func)
    head = callee.split(".")[0] if callee else None
    module_call = head in module.aliases and source.canonical(module.aliases[head] + callee[len(head):]) is not None
    positional = [arg for arg in expr.args if arg.keyword is None]
    if module_call:  # tf.assign(var, value)
        if len(positional) != 2 or len(expr.args) != 2:
            return None
        variable, value = positional[0].value, positional[1].value
        placeholder = callee[: -len(method)] + "placeholder"
    else:  # var.assign(value)
        if len(positional) != 1 or len(expr.args) != 1:
            return None
        variable, value = expr.func.value, positional[0].value
        placeholder = _placeholder_callee(module)
        if placeholder is None:
            return None
    try:
        variable_reads = reads.expression_reads(module, variable)
        if (isinstance(value, cst.Call) and isinstance(value.func, cst.Name)
                and _python_valued(module, value.func.value)):
            # ``schedule(step)``: a function of this file that names no TensorFlow, called in the feed
            value_reads = reads.Reads()
            value_reads.helpers.append(value.func.value)
            for arg in value.args:
                inner = reads.expression_reads(module, arg.value)
                if inner.tf_calls or inner.helpers:
                    return None
                value_reads.names |= inner.names
        else:
            value_reads = reads.expression_reads(module, value)
    except reads.NotFixable:
        return None
    if variable_reads.names & loop_names or variable_reads.tf_calls or variable_reads.helpers:
        return None
    if (value_reads.tf_calls or not value_reads.names & loop_names
            or any(not _python_valued(module, helper) for helper in value_reads.helpers)):
        return None  # a tensor value, or one that does not change (the plain hoist handles that)
    if _tensor_in_loop(module, loop, value_reads.names & loop_names, variable_reads.names):
        return None  # `new_lr = lr * 0.9` in the loop: a tensor, which a feed cannot take
    code = module.module.code_for_node
    word = reads.word(variable)
    value_name = reads.free_name(module, [f"{word}_value"])
    op_name = reads.free_name(module, [f"{method}_{word}_op"])
    variable_code, value_code = code(variable), code(value)
    assign_code = (f"{callee}({variable_code}, {value_name})" if module_call
                   else f"{variable_code}.{method}({value_name})")
    anchor = hoist_point(module, loop, anchor_names | variable_reads.names)
    start = module.positions[anchor].start
    indent = source.indent(module.text, start.line, module.file.starts)
    newline = module.newline
    inserted = (f"{indent}{value_name} = {placeholder}({variable_code}.dtype.base_dtype, {variable_code}.shape){newline}"
                f"{indent}{op_name} = {assign_code}{newline}")
    edits = [Edit(start.line, 1, start.line, 1, inserted)]
    where = module.positions[expr]
    edits.append(Edit(where.start.line, where.start.column + 1, where.end.line, where.end.column + 1, op_name))
    entry = f"{value_name}: {value_code}"
    edits.append(_feed_edit(module, run, entry))
    message = (f"Build `{op_name}` from the placeholder `{value_name}` once before the loop at line "
               f"{module.positions[loop].start.line}, and feed the value per step (unsafe: the value must "
               "be a Python or NumPy value, not a tensor)")
    return Fix(UNSAFE, message, tuple(edits))


def _python_valued(module, helper: str, seen: Optional[set] = None) -> bool:
    """Whether ``helper`` (``lr_schedule`` in ``tf.assign(lr, lr_schedule(step))``) is a function of
    this file that names no TensorFlow or Keras, directly or through the functions of this file it
    calls: its result is a Python or NumPy value, which a placeholder can take, as when it is first
    bound to a name in the loop (a twenty-second new user's trial had the fix for one spelling and not
    the other). The call stays in the loop, in the feed: what it does besides is done as before."""
    function = module.file.functions.get(helper)
    if function is None:
        return False
    seen = set() if seen is None else seen
    if helper in seen:
        return True
    seen.add(helper)
    tensorflow = {alias for alias, imported in module.aliases.items() if imported.split(".")[0] in ("tensorflow", "keras")}
    for node in ast.walk(function):
        if node.__class__ is ast.Name and node.id in tensorflow:
            return False
        if (node.__class__ is ast.Call and node.func.__class__ is ast.Name and node.func.id != helper
                and node.func.id in module.file.functions and not _python_valued(module, node.func.id, seen)):
            return False
    return True


def _tensor_in_loop(module, loop, names: set, variable_names: set) -> bool:
    """Whether one of ``names`` is assigned in ``loop`` from something that may be a tensor: an
    expression that reads the variable itself (outside a ``run``) or calls TensorFlow."""
    for assign in source.nodes(loop.body, cst.Assign):
        targets = {n.value for t in assign.targets for n in source.names_in(t.target)}
        if not targets & names:
            continue
        if _reads_tensor(assign.value, variable_names | set(module.aliases)):
            return True
    return False


def _reads_tensor(node: cst.CSTNode, tensors: set) -> bool:
    if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and node.func.attr.value in ("run", "eval"):
        return False  # sess.run(lr) * 0.9 is a NumPy value
    if isinstance(node, cst.Name):
        return node.value in tensors
    if isinstance(node, cst.Attribute):
        return _reads_tensor(node.value, tensors)
    return any(_reads_tensor(child, tensors) for child in node.children)


def _feed_edit(module, run: cst.Call, entry: str) -> Edit:
    """The edit that adds ``entry`` (``"lr_value: new_lr"``) to the feed of ``<session>.run(fetches, ...)``:
    a new ``feed_dict={...}`` after the fetches, the first item of a dict literal, or ``{**feed, ...}``."""
    feed = _feed_argument(run)
    if feed is None:
        end = module.positions[run.args[0].value].end
        return Edit(end.line, end.column + 1, end.line, end.column + 1, f", feed_dict={{{entry}}}")
    where = module.positions[feed]
    if isinstance(feed, cst.Dict):
        return Edit(where.start.line, where.start.column + 2, where.start.line, where.start.column + 2,
                    f"{entry}, " if feed.elements else entry)
    return Edit(where.start.line, where.start.column + 1, where.end.line, where.end.column + 1,
                f"{{**{module.module.code_for_node(feed)}, {entry}}}")


def _feed_argument(run: cst.Call) -> Optional[cst.BaseExpression]:
    """The feed of ``<session>.run(fetches, feed_dict, ...)``: its second positional argument or its
    ``feed_dict=`` keyword."""
    for index, arg in enumerate(run.args):
        if arg.keyword is not None and arg.keyword.value == "feed_dict":
            return arg.value
        if arg.keyword is None and index == 1:
            return arg.value
    return None


def _placeholder_callee(module) -> Optional[str]:
    """``tf.placeholder`` spelled with the file's own TensorFlow import (``tf.compat.v1.placeholder``
    when ``tf`` is TensorFlow 2's top-level module), or None without one."""
    for local, dotted in sorted(module.aliases.items()):
        if dotted == "tensorflow.compat.v1":
            return f"{local}.placeholder"
    for local, dotted in sorted(module.aliases.items()):
        if dotted == "tensorflow":  # TF 1.x spelling where the file already uses TF 1.x names
            v1 = any(f"{local}.{name}(" in module.text for name in ("placeholder", "Session", "InteractiveSession"))
            return f"{local}.placeholder" if v1 else f"{local}.compat.v1.placeholder"
    return None


def _written_dtype(value: cst.BaseExpression, loop: cst.CSTNode) -> Optional[str]:
    """The dtype ``tf.constant(value)`` makes when the source says it (a new user's trial: the fix said
    ``float32`` for ``tf.constant(step)`` of a ``range`` loop, and indexing with it then failed): a
    string (literal, f-string, ``"%d" % x``) ``string``, a comparison or ``not`` ``bool``, an int
    literal or a ``for`` target over ``range(...)`` ``int32`` (TensorFlow's type for a Python int);
    None when it does not say."""
    if isinstance(value, (cst.SimpleString, cst.ConcatenatedString, cst.FormattedString)):
        return "string"
    if (isinstance(value, cst.BinaryOperation) and isinstance(value.operator, cst.Modulo)
            and isinstance(value.left, (cst.SimpleString, cst.ConcatenatedString))):
        return "string"
    if isinstance(value, cst.Comparison) or (isinstance(value, cst.UnaryOperation) and isinstance(value.operator, cst.Not)):
        return "bool"
    if isinstance(value, cst.Name) and value.value in ("True", "False"):
        return "bool"
    if isinstance(value, cst.Integer):
        return "int32"
    if (isinstance(value, cst.Name) and isinstance(loop, cst.For) and isinstance(loop.target, cst.Name)
            and loop.target.value == value.value and isinstance(loop.iter, cst.Call)
            and source.dotted(loop.iter.func) in ("range", "xrange", "six.moves.range")):
        return "int32"
    return None


def propose_constant_feed(module, loop, expr: cst.BaseExpression, statement, loop_names: set) -> Optional[Fix]:
    """The placeholder fix for ``name = tf.constant(value[, dtype=...])`` (or ``convert_to_tensor``) at
    the top of ``loop``'s body whose ``value`` changes per iteration, or None when the shape differs:
    ``name`` assigned elsewhere in the loop, no ``run`` after it to feed, ``value`` reassigned later in
    the loop body (the feed would read the new value)."""
    body = loop.body
    if not (isinstance(body, cst.IndentedBlock) and statement in body.body and len(statement.body) == 1):
        return None
    assign = statement.body[0]
    if not (isinstance(assign, cst.Assign) and len(assign.targets) == 1 and assign.value is expr
            and isinstance(assign.targets[0].target, cst.Name) and isinstance(expr, cst.Call)):
        return None
    name = assign.targets[0].target.value
    callee = source.dotted(expr.func)
    method = callee.rsplit(".", 1)[-1] if callee else ""
    if method not in ("constant", "convert_to_tensor") or not expr.args or expr.args[0].keyword is not None:
        return None
    value = expr.args[0].value
    dtype = next((arg.value for arg in expr.args if arg.keyword is not None and arg.keyword.value == "dtype"), None)
    if len(expr.args) > (2 if dtype is not None else 1):
        return None  # a shape, a name or a positional dtype: not rewritten
    index = body.body.index(statement)
    later = body.body[index + 1:]
    if any(source.assigns(node, name) for node in later):
        return None
    value_names = {n.value for n in source.names_in(value)}
    if any(source.assigns(node, value_name) for node in later for value_name in value_names):
        return None
    runs = [call for node in later for call in source.calls(node)
            if isinstance(call.func, cst.Attribute) and call.func.attr.value == "run"
            and any(source.mentions(arg.value, name) for arg in call.args[:1])]
    if not runs:
        return None
    code = module.module.code_for_node
    prefix = callee[: -len(method)]
    written = _written_dtype(value, loop) if dtype is None else None
    placeholder = f"{prefix}placeholder({code(dtype) if dtype is not None else prefix + (written or 'float32')})"
    value_code = code(value)
    dtype_names = {n.value for n in source.names_in(dtype)} if dtype is not None else set()
    start = module.positions[hoist_point(module, loop, dtype_names)].start
    indent = source.indent(module.text, start.line, module.file.starts)
    first, last = module.positions[statement].start.line, module.positions[statement].end.line
    end = (last + 1, 1)
    edits = [Edit(start.line, 1, start.line, 1, f"{indent}{name} = {placeholder}{module.newline}"),
             Edit(first, 1, *end, "")]
    entry = f"{name}: {value_code}"
    for run in runs:
        edits.append(_feed_edit(module, run, entry))
    guess = "" if dtype is not None or written else "; its dtype is a guess (float32): check it"
    message = (f"Make `{name}` a placeholder built once before the loop at line {module.positions[loop].start.line} and feed "
               f"`{value_code}` to each run that uses it (unsafe: the shape is left open{guess})")
    return Fix(UNSAFE, message, tuple(edits))
