"""``graphguard check --fix``: fixes for findings, proposed with libcst, checked before they are written.

:func:`propose_fixes` gives each finding of a file its :class:`Fix` where one is known (the ``fix``
field of JSON output, SARIF ``fixes``, ``[*]`` in the summary); :func:`fix_text` applies them pass
after pass, as ruff does, until nothing more applies, and checks the result (:mod:`graphguard.fix.apply`).
libcst is imported only here, so ``graphguard check`` without fixes never loads it.
"""

from __future__ import annotations

from graphguard.fix.edits import FIXABLE_CODES, SAFE, UNSAFE, Edit, Fix

__all__ = ["Edit", "FIXABLE_CODES", "Fix", "SAFE", "UNSAFE", "propose_fixes"]


def propose_fixes(text: str, diagnostics: list, reasons: dict | None = None) -> dict:
    """``{diagnostic: Fix}`` for the findings of one file whose text is ``text`` that have a fix.

    ``diagnostics`` are :class:`~graphguard.diagnostics.Diagnostic` s of that file; findings without
    a fix (other codes, code that cannot move: see :mod:`graphguard.fix.hoist`) are left out; with
    ``reasons``, it receives ``{diagnostic: why there is no fix}`` for those of fixable codes."""
    from graphguard.fix import hoist, reads, source

    wanted = [d for d in diagnostics if d.code in FIXABLE_CODES and d.loop_row is not None]
    if not wanted:
        return {}
    module = source.parse(text)
    if module is None:
        return {}
    module.prepare([d.loop_row for d in wanted])
    found = {}
    for d in wanted:
        if d.code == "GG201":
            from graphguard.fix.keras import propose_clear_session

            fix = propose_clear_session(module, d.loop_row, d.loop_column)
            if fix is not None:
                found[d] = fix
            elif reasons is not None:
                reasons[d] = ("the loop is not a for or while statement, or the file has no TensorFlow or Keras "
                              "import to spell clear_session() with")
        elif d.code == "GG303":
            from graphguard.fix.predict import predict_on_batch

            fix, why = predict_on_batch(module, d.row, d.column, through="(via " in d.message)
            if fix is not None:
                found[d] = fix
            elif reasons is not None:
                reasons[d] = why
    wanted = sorted((d for d in wanted if d.code in hoist.CODES), key=lambda d: (d.row, d.column))
    moved: dict = {}  # statements moved by this pass's earlier proposals: a chain moves in one pass
    for d in wanted:
        try:
            found[d] = hoist.propose(module, d.row, d.column, d.end_row, d.end_column, d.loop_row, d.loop_column,
                                     through="(via " in d.message, pass_moves=moved, outer_row=_outer_row(d.message))
        except reads.NotFixable as why:
            if reasons is not None:
                reasons[d] = str(why)
            continue
    _say_partial(module, found, wanted, reasons)
    return found


def _say_partial(module, found: dict, wanted: list, reasons: dict | None) -> None:
    """A fix that moves a call out of a loop whose statement unpacks its result there (``logits, h =
    step_fn_op``) leaves in the loop the findings that read those names (``tf.argmax(logits, 1)``: "it
    reads logits, which the loop assigns"): its message says it is partial and what stays (a
    twenty-eighth new user's trial: the fixed decoder still grew, and nothing had said so)."""
    import ast
    from dataclasses import replace

    if not found or not reasons:
        return
    for d, fix in list(found.items()):
        if d.code not in ("GG101", "GG106") or "(via " not in d.message:
            continue
        names = {target.id for statement in ast.walk(module.tree)
                 if isinstance(statement, ast.Assign) and statement.lineno == d.row
                 for node in statement.targets for target in ast.walk(node) if isinstance(target, ast.Name)}
        if not names:
            continue
        left = [other for other in wanted if other is not d and other.loop_row == d.loop_row and other not in found
                and reasons.get(other, "").startswith("it reads ")
                and names & set(reasons[other][len("it reads "):].partition(", which")[0].split(", "))]
        if left:
            stays = ", ".join(f"line {other.row}" for other in left)
            found[d] = replace(fix, message=f"{fix.message} (partial: what it returns is read by the finding at {stays}, "
                                            f"which stays in the loop)")


def _outer_row(message: str) -> int:
    """The row of the loop a finding names as repeating it too (``(inside the loop at line 6)``), or 0."""
    import re

    found = re.search(r"\(inside the loop at line (\d+)\)", message)
    return int(found[1]) if found else 0
