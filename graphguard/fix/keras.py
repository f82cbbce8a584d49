"""GG201's fix: ``clear_session()`` at the top of the loop body that rebuilds a Keras model.

Keras keeps every model built in a process in its global state (the TF 1.x default graph and its
name counters; the TF 2 Keras session) until ``tf.keras.backend.clear_session()``; a sweep or k-fold
that builds a model per iteration without it grows by a model per trial. The fix inserts the call as
the first statement of the loop body, spelled with the file's own Keras import
(``tf.keras.backend.clear_session()``, ``keras.backend.clear_session()``, ``K.clear_session()``).
It is *unsafe* (``--unsafe-fixes``): a model of an earlier iteration that later code still uses stops
working (its graph is gone), which graphguard cannot always rule out. Source of the behaviour: the
``tf.keras.backend.clear_session`` API documentation.
"""

from __future__ import annotations

from typing import Optional

import libcst as cst

from graphguard.fix.edits import UNSAFE, Edit, Fix


def clear_session_call(aliases: dict) -> Optional[str]:
    """``clear_session()`` spelled with an import the file has, or None."""
    for local, dotted in sorted(aliases.items()):
        if dotted in ("tensorflow.keras.backend", "keras.backend", "tensorflow.python.keras.backend"):
            return f"{local}.clear_session()"
    for local, dotted in sorted(aliases.items()):
        if dotted in ("tensorflow.keras", "keras"):
            return f"{local}.backend.clear_session()"
    for local, dotted in sorted(aliases.items()):
        if dotted == "tensorflow":
            return f"{local}.keras.backend.clear_session()"
    return None


def propose_clear_session(file, loop_row: int, loop_column: int) -> Optional[Fix]:
    """The GG201 fix for the loop at ``(loop_row, loop_column)`` (1-based), or None: a loop that is not a
    ``for``/``while`` statement (a comprehension, ``study.optimize``), a body on the loop's line, or a
    file without a TensorFlow or Keras import to spell the call with."""
    module = file.region(loop_row)
    if module is None:
        return None
    loop = module.loops.get((loop_row, loop_column - 1))
    call = clear_session_call(file.aliases)
    if loop is None or call is None or not isinstance(loop.body, cst.IndentedBlock) or not loop.body.body:
        return None
    first = module.positions[loop.body.body[0]].start
    indent = file.text[file.starts[first.line - 1]: file.starts[first.line - 1] + first.column]
    if indent.strip():
        return None
    return Fix(UNSAFE, f"Clear the Keras session at the top of each iteration of the loop at line {loop_row} "
                       "(unsafe: a model of an earlier iteration used later stops working)",
               (Edit(first.line, 1, first.line, 1, f"{indent}{call}{file.newline}"),))
