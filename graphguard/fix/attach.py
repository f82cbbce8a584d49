"""The fixes that JSON, SARIF and ``full`` output attach to findings (ruff's ``fix`` objects), one file
at a time, so that files can be fixed in worker processes and their answers cached.

:func:`fixes_for_file` computes, for one file's findings, each fixable finding's :class:`~graphguard.fix.edits.Fix`
or the reason it has none; :func:`job_key` says when a cached answer still holds (the file's
:meth:`~graphguard.cache.FactsCache.key` and its findings). Nothing here writes a file.
"""

from __future__ import annotations

from graphguard.fix.edits import FIXABLE_CODES


def job_key(file_key: tuple | None, diagnostics: list) -> tuple | None:
    """What a cached answer for a file's fixes depends on: the file as it is on disk (``file_key``,
    :meth:`graphguard.cache.FactsCache.key`; None when it cannot be read: no caching) and, for each of
    its findings, the code, place, loop and message."""
    if file_key is None:
        return None
    return (file_key, tuple((d.code, d.row, d.column, d.loop_row, d.loop_column, d.message) for d in diagnostics))


def fixes_for_file(job: tuple) -> list:
    """``job`` is ``(filename, raw bytes or None to read the file, diagnostics of that file)``; returns,
    for each diagnostic in order, ``(Fix or None, reason or None)``: a fix, why a fixable finding has
    none, or neither (a code with no fix of this kind). Runs in a worker process or in the main one;
    never raises for a file it cannot read or parse (no fix then)."""
    from graphguard.fix import propose_fixes
    from graphguard.fix.apply import decode, file_bytes
    from graphguard.fix.source import python2_reason
    from graphguard.notebook import is_notebook, python_source

    filename, raw, mine = job
    fixes: dict = {}
    reasons: dict = {}
    try:
        raw = file_bytes(filename, None) if raw is None else raw
        python2 = python2_reason(filename, raw)
        if python2:
            reasons.update((d, python2) for d in mine if d.code in FIXABLE_CODES)
        else:
            # A notebook's fixes are computed on its cells' module; in_cells then locates them by cell.
            text = python_source(filename, raw).decode("utf-8", "surrogatepass") if is_notebook(filename) else decode(raw)
            fixes.update(propose_fixes(text, mine, reasons))
    except (OSError, UnicodeDecodeError, SyntaxError):
        pass
    except (RecursionError, MemoryError):  # a new user's trial: a 250-term sum was a traceback in SARIF
        reasons.update((d, "the file is nested too deeply to fix") for d in mine if d.code in FIXABLE_CODES)
    return [(fixes.get(d), reasons.get(d)) for d in mine]
