"""GG303's fix: ``model.predict(x)`` on one sample becomes ``model.predict_on_batch(x)``.

``predict`` builds a data adapter, an iterator, callbacks and a progress bar on every call, then runs
its batches; ``predict_on_batch`` runs the model on the one batch it is given and returns the same
NumPy array (or structure of arrays): Keras 3's ``predict_on_batch`` maps its outputs to NumPy, as
``predict`` concatenates its batches' NumPy outputs (``keras/src/backend/tensorflow/trainer.py``).
Measured on TF 2.21: 0.9 ms per call against 66-79 ms for ``predict`` on one sample.

The fix is *safe* when the argument is a batch of one written as such (``x[None]``,
``np.expand_dims(x, 0)``, ``x.reshape(1, -1)``, ``np.array([x])``, ``x[i:i+1]``): one batch either way.
It is *unsafe* for other data (the loop's batch, a name bound elsewhere): ``predict`` splits a large
input into batches of 32, ``predict_on_batch`` runs it whole, which may not fit in memory. Only
``verbose=`` (progress output) and, for one sample, ``batch_size=`` (one batch either way) are
dropped; a call with any other argument is left alone. A finding reported at a call of a helper that
predicts is not fixed at that call (its ``predict`` is elsewhere).
"""

from __future__ import annotations

import ast
from typing import Optional

from graphguard.analysis import syntax
from graphguard.fix.edits import SAFE, UNSAFE, Edit, Fix

_DROPPED_ALWAYS = frozenset({"verbose"})
_DROPPED_FOR_ONE = frozenset({"verbose", "batch_size"})


def one_sample(node: ast.AST) -> bool:
    """Whether ``node`` is written as a batch of one, in the forms that mean one array to both
    ``predict`` and ``predict_on_batch`` (not a bare list: :func:`graphguard.analysis.syntax.one_sample`)."""
    return syntax.one_sample(node, lists=False)


def propose_predict_on_batch(file, row: int, column: int, through: bool) -> Optional[Fix]:
    """The GG303 fix for the ``predict`` call starting at ``(row, column)`` (1-based, characters) in
    ``file`` (a :class:`graphguard.fix.source.File`), or None (see the module docstring)."""
    fix, _ = predict_on_batch(file, row, column, through)
    return fix


def predict_on_batch(file, row: int, column: int, through: bool) -> tuple[Optional[Fix], str]:
    """(the fix, or None and why not) for the ``predict`` call at ``(row, column)``: see
    :func:`propose_predict_on_batch`."""
    if through:
        return None, "the predict call is in the function this line calls: fix it there"
    call = _call_at(file, row, column)
    if call is None or not isinstance(call.func, ast.Attribute) or call.func.attr != "predict":
        return None, "the predict call was not found"
    if len(call.args) != 1 or isinstance(call.args[0], ast.Starred):
        return None, "predict is given more than the data as positional arguments"
    if _data_source(file.tree, call.args[0]):
        # (a twenty-seventh new user's trial: ``predict_on_batch(ds)`` raised "Only input tensors may be
        # passed as positional arguments" on a tf.data.Dataset)
        return None, "predict is given a dataset or generator, which predict_on_batch does not take"
    single = one_sample(call.args[0])
    droppable = _DROPPED_FOR_ONE if single else _DROPPED_ALWAYS
    others = sorted(k.arg or "**" for k in call.keywords if k.arg not in droppable)
    if others:
        return None, (f"predict is given {', '.join(o + '=' for o in others)}, which predict_on_batch does not take"
                      + (" (batch_size= matters for data that is not one sample)" if "batch_size" in others else ""))
    func = call.func
    name_end = _char(file, func.end_lineno, func.end_col_offset)
    edits = [Edit(func.end_lineno, name_end - len("predict"), func.end_lineno, name_end, "predict_on_batch")]
    if call.keywords:
        # Everything after the one argument up to the closing parenthesis: ``, verbose=0``.
        arg = call.args[0]
        start = _char(file, arg.end_lineno, arg.end_col_offset)
        end = _char(file, call.end_lineno, call.end_col_offset) - 1
        edits.append(Edit(arg.end_lineno, start, call.end_lineno, end, ""))
    dropped = f", dropping {', '.join(sorted(k.arg + '=' for k in call.keywords))}" if call.keywords else ""
    if single:
        return Fix(SAFE, f"Call predict_on_batch on the one sample{dropped}", tuple(edits)), ""
    return Fix(UNSAFE, f"Call predict_on_batch{dropped} (unsafe: the data is run as one batch, not in batches "
                       "of 32)", tuple(edits)), ""


#: Calls that make a ``tf.data.Dataset`` or a Keras data generator (and methods that chain on one):
#: ``predict`` iterates them, ``predict_on_batch`` takes only arrays and tensors.
_DATA_SOURCES = frozenset({
    "from_tensor_slices", "from_tensors", "from_generator", "batch", "padded_batch", "prefetch", "map",
    "shuffle", "repeat", "take", "skip", "unbatch", "cache", "flow", "flow_from_directory",
    "flow_from_dataframe", "image_dataset_from_directory", "text_dataset_from_directory",
    "audio_dataset_from_directory", "timeseries_dataset_from_array", "TFRecordDataset", "TextLineDataset",
})


def _data_source(tree: ast.AST, node: ast.AST) -> bool:
    """Whether ``node`` (``predict``'s data) is a dataset or a generator: written as one
    (``tf.data.Dataset...batch(16)``, ``datagen.flow(x)``, a generator expression) or a name that an
    assignment of the file binds to one."""
    if isinstance(node, ast.GeneratorExp):
        return True
    if isinstance(node, ast.Call):
        func = node.func
        name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
        return name in _DATA_SOURCES or ".data." in f".{syntax.callee_text(func)}"
    if isinstance(node, ast.Name):
        return any(isinstance(sub, ast.Assign) and any(isinstance(t, ast.Name) and t.id == node.id for t in sub.targets)
                   and not isinstance(sub.value, ast.Name) and _data_source(tree, sub.value) for sub in ast.walk(tree))
    return False


def _call_at(file, row: int, column: int) -> Optional[ast.Call]:
    for node in ast.walk(file.tree):
        if (isinstance(node, ast.Call) and node.lineno == row
                and _char(file, node.lineno, node.col_offset) == column):
            return node
    return None


def _char(file, row: int, byte_column: int) -> int:
    """The 1-based character column of UTF-8 byte offset ``byte_column`` on line ``row``."""
    start = file.starts[row - 1]
    end = file.starts[row] if row < len(file.starts) else len(file.text)
    line = file.text[start:end]
    return len(line.encode("utf-8")[:byte_column].decode("utf-8", "replace")) + 1
