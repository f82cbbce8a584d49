"""Edits that only move code: the previous run's findings, with their rows moved, are the answer.

Phases 2 and 3 (:mod:`graphguard.analysis.fixpoint`, :mod:`graphguard.analysis.findings`) read rows
only as labels: they copy them into findings and messages, and sort a module's findings by them. So when
a changed file's new facts are its old facts with every row renamed by one strictly increasing map
(a comment or a blank line added or removed, a docstring grown: anything that moves lines without
changing what is on them), the run's findings are the previous run's with the same map applied to
the rows in that file (the findings located there, their loop rows, and ``through ... at file:row``
in other files' messages). Nothing else has to be loaded or recomputed: on the public corpus, one
comment added at the top of the module 186 files import was answered in a few hundredths of a second
instead of a cold run's seconds.

:func:`moved_rows` decides whether two facts are alike in that way, comparing them field by field. Rows
are recognised where the facts keep them (:class:`~graphguard.analysis.facts.Site` rows,
:class:`~graphguard.analysis.facts.Loop` rows, the row of each entry of ``FunctionFacts.builds``); every
other value must be equal, strings included (a row written inside a name, ``<lambda:12:4>``, or a
message, ``from line 12``, differs, and the run is computed in full). Columns must be equal: a
re-indented line is computed in full too. A row field this module does not know of makes the facts
differ, never a wrong answer.
"""

from __future__ import annotations

import enum
import re
from dataclasses import replace

from graphguard.analysis.facts import FunctionFacts, Loop, ModuleFacts, Site
from graphguard.analysis.findings import Finding

_PLAIN = (int, float, bool, bytes, type(None), complex)
#: Rows phase 1 writes inside text: a lambda's name (``ModuleReader._lambda_name``: its row and column, in
#: every name that refers to it, ``train.<locals>.<lambda:12:30>``) and where a sweep's model was made
#: (``SweepReader``: ```build(...)` from line 12``, in messages)
_ROW_IN_TEXT = re.compile(r"(?:(?<=<lambda:)|(?<=from line ))(\d+)")


class _Differs(Exception):
    pass


def moved_rows(old: ModuleFacts | None, new: ModuleFacts | None) -> dict[int, int] | None:
    """The map from ``old``'s rows to ``new``'s when the two facts differ only by rows moved in one
    strictly increasing map (``{}`` for facts with no rows, identity entries included), or None when
    they differ otherwise. Both None (a file the prefilter skips both times) gives ``{}``."""
    if old is None or new is None:
        return {} if old is new else None
    rows: dict[int, int] = {}
    names: dict[str, str] = {}
    try:
        _same(old, new, rows, names)
    except (_Differs, RecursionError):
        return None
    pairs = sorted(rows.items())
    if any(a[1] >= b[1] for a, b in zip(pairs, pairs[1:])):
        return None  # lines swapped: not a move
    return rows


def _row(old: int, new: int, rows: dict) -> None:
    if old.__class__ is not int or new.__class__ is not int or rows.setdefault(old, new) != new:
        raise _Differs


def _text(a: str, b: str, rows: dict, names: dict) -> None:
    """Two strings that are equal but for the rows written in them (:data:`_ROW_IN_TEXT`)."""
    first, second = _ROW_IN_TEXT.split(a), _ROW_IN_TEXT.split(b)
    if len(first) != len(second) or first[0::2] != second[0::2]:
        raise _Differs
    for old, new in zip(first[1::2], second[1::2]):
        _row(int(old), int(new), rows)
    if "<lambda:" in a and names.setdefault(a, b) != b:
        raise _Differs


def _same(a, b, rows: dict, names: dict) -> None:
    cls = a.__class__
    if cls is not b.__class__:
        raise _Differs
    if cls is str:
        if a == b and "<lambda:" not in a and "from line " not in a:
            return
        _text(a, b, rows, names)
    elif cls in _PLAIN or isinstance(a, enum.Enum):
        if a != b:
            raise _Differs
    elif cls is Site:
        if a.column != b.column or a.end_column != b.end_column:
            raise _Differs
        _row(a.row, b.row, rows)
        _row(a.end_row, b.end_row, rows)
    elif cls is Loop:
        _row(a.row, b.row, rows)
        _fields(a, b, rows, names, skip="row")
    elif cls is FunctionFacts:
        _same(list(a.builds), list(b.builds), rows, names)
        for (effect, (row, subject)), (row2, subject2) in zip(a.builds.items(), b.builds.values()):
            _row(row, row2, rows)
            _same(subject, subject2, rows, names)
        _fields(a, b, rows, names, skip="builds")
    elif isinstance(a, tuple) or cls is list:  # named tuples (Site is above) and lists, element by element
        if len(a) != len(b):
            raise _Differs
        for x, y in zip(a, b):
            _same(x, y, rows, names)
    elif cls is dict:
        # The same keys (lambdas renamed) in the same order: iteration order decides "the first".
        _same(list(a), list(b), rows, names)
        for x, y in zip(a.values(), b.values()):
            _same(x, y, rows, names)
    elif cls in (set, frozenset):
        if a != b:  # no order to pair elements by: equal, or the facts differ
            raise _Differs
    elif hasattr(a, "__dict__"):
        _fields(a, b, rows, names)
    elif a is not b and a != b:  # markers (SESSION) survive pickling as the same objects
        raise _Differs


def _fields(a, b, rows: dict, names: dict, skip: str = "") -> None:
    first, second = vars(a), vars(b)
    if list(first) != list(second):
        raise _Differs
    for name, value in first.items():
        if name != skip:
            _same(value, second[name], rows, names)


def move_finding(finding: Finding, maps: dict[str, dict[int, int]]) -> Finding:
    """``finding`` with the rows of moved files renamed (``maps``: path -> old row -> new row): its
    site and loop row when it is in one, and its ``via`` origin when that is in one. Raises KeyError
    when a row to move is not in its file's map (the caller then computes the run in full). Rows written
    in the subject (``from line 12``) are moved with the rows of the file the text was read in."""
    rows = maps.get(finding.path)
    if rows is not None:
        site = finding.site
        finding = replace(finding, site=Site(rows[site.row], site.column, rows[site.end_row], site.end_column),
                          loop_row=rows[finding.loop_row], subject=_moved_text(finding.subject, rows),
                          outer_row=rows[finding.outer_row] if finding.outer_row else 0)
    via = finding.via
    if via is not None and via.path in maps:
        rows = maps[via.path]
        finding = replace(finding, via=replace(via, row=rows[via.row], subject=_moved_text(via.subject, rows)))
    return finding


def _moved_text(text: str, rows: dict) -> str:
    return _ROW_IN_TEXT.sub(lambda match: str(rows[int(match[1])]), text) if "<lambda:" in text or "from line " in text else text
