"""Fixes as data: text edits with ruff's shape, applied to a file's text.

A :class:`Fix` is what ruff's JSON output calls ``fix``: an applicability (``"safe"`` or
``"unsafe"``), a message, and :class:`Edit` s that replace the text between two 1-based (row, column)
positions, columns counted in characters, the end exclusive. SARIF's ``fixes`` carry the same edits as
``replacements``. Nothing here parses Python.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass, field

from graphguard.diagnostics import FIXABLE_CODES

#: Why a ``Saver`` or initializer has no fix yet: it moves once the loop's other builds have moved, and
#: ``--fix`` checks again after each pass (the concise summary counts these: ``and 1 more once those are
#: applied``).
WAITS_FOR_OTHERS = ("the loop still builds a model, variables or summaries that a hoisted Saver or initializer "
                    "would miss; those are fixed first")

__all__ = ["FIXABLE_CODES", "SAFE", "UNSAFE", "Edit", "Fix", "line_starts", "offset", "apply"]

SAFE, UNSAFE = "safe", "unsafe"


@dataclass(frozen=True)
class Edit:
    """Replace rows/columns ``(row, column)`` up to ``(end_row, end_column)`` (exclusive; 1-based,
    columns in characters) with ``content``. An insertion has equal start and end."""

    row: int
    column: int
    end_row: int
    end_column: int
    content: str
    #: In a notebook, for output: the cell whose rows ``row`` and ``end_row`` count (1-based among
    #: all cells); None in a Python file, and while fixes are computed on the notebook's module.
    cell: int | None = field(default=None, compare=False)


@dataclass(frozen=True)
class Fix:
    """One finding's fix: ``applicability`` is ``"safe"`` (the program means the same) or ``"unsafe"``
    (it may not: applied only with ``--unsafe-fixes``); ``message`` says what it does."""

    applicability: str
    message: str
    edits: tuple[Edit, ...]
    #: Fixes this one builds on (a statement reading a name that an earlier fix of the same pass moves
    #: out of the loop): it is applied only with all of them.
    needs: tuple = field(default=(), compare=False)

    def as_json(self) -> dict:
        """ruff's ``fix`` object: ``applicability``, ``message``, ``edits`` with ``content``,
        ``location`` and ``end_location``."""
        return {
            "applicability": self.applicability,
            "message": self.message,
            "edits": [
                {"content": e.content, "location": {"row": e.row, "column": e.column},
                 "end_location": {"row": e.end_row, "column": e.end_column},
                 **({"cell": e.cell} if e.cell is not None else {})}
                for e in self.edits
            ],
        }


def line_starts(text: str) -> list[int]:
    """Offsets where each line of ``text`` starts (``\\n``, ``\\r\\n`` and ``\\r`` end a line, as for
    the tokenizer); index 0 is row 1."""
    starts = [0]
    index, size = 0, len(text)
    while index < size:
        char = text[index]
        if char == "\r":
            index += 2 if text.startswith("\r\n", index) else 1
            starts.append(index)
        elif char == "\n":
            index += 1
            starts.append(index)
        else:
            index += 1
    return starts


def offset(starts: list[int], row: int, column: int) -> int:
    """The offset of 1-based ``(row, column)``; raises ``ValueError`` outside the text."""
    if not 1 <= row <= len(starts):
        raise ValueError(f"row {row} is outside the text")
    return starts[row - 1] + column - 1


def apply(text: str, fixes: list[Fix]) -> tuple[str, list[Fix]]:
    """``text`` with the edits of every fix that does not overlap an earlier one (in the given order)
    applied; returns (new text, the fixes applied). Overlapping fixes are left for a later pass, as
    ruff does. Insertions at one point are kept in the order of ``fixes`` (hoisted statements before
    one loop stay in source order)."""
    starts = line_starts(text)
    ranges: list[tuple[int, int]] = []  # replaced ranges (start < end), sorted
    points: list[int] = []  # insertion points, sorted
    chosen: list[tuple[int, int, int, str]] = []
    applied, applied_ids, seen_edits = [], set(), set()
    for fix in fixes:
        if not all(id(need) in applied_ids for need in fix.needs):
            continue  # what it builds on was not applied in this pass
        if fix.edits in seen_edits:
            continue  # two findings, one fix (two models rebuilt in one loop: one clear_session())
        spans = [(offset(starts, e.row, e.column), offset(starts, e.end_row, e.end_column), e.content) for e in fix.edits]
        if any(_clashes(start, end, ranges, points) for start, end, _ in spans):
            continue
        for start, end, _ in spans:
            if start == end:
                bisect.insort(points, start)
            else:
                bisect.insort(ranges, (start, end))
        chosen.extend((start, end, len(chosen), content) for start, end, content in spans)
        applied.append(fix)
        applied_ids.add(id(fix))
        seen_edits.add(fix.edits)
    # From the end backwards; at one point the later insertion first, so the earlier ends up before it.
    pieces, cursor = [], len(text)
    for start, end, _, content in sorted(chosen, reverse=True):
        pieces.append(text[end:cursor])
        pieces.append(content)
        cursor = start
    pieces.append(text[:cursor])
    return "".join(reversed(pieces)), applied


def _clashes(start: int, end: int, ranges: list, points: list) -> bool:
    """Whether the edit ``[start, end)`` overlaps a replaced range, or (a replacement) swallows an
    insertion point; two insertions never clash. ``ranges`` do not overlap each other."""
    if start == end:
        index = bisect.bisect_left(ranges, (start, start))
        neighbours = ranges[max(0, index - 1): index + 1]
        return any(s < start < e for s, e in neighbours)
    index = bisect.bisect_left(ranges, (start, end))
    for s, e in ranges[max(0, index - 1): index + 1]:
        if start < e and s < end:
            return True
    inside = bisect.bisect_right(points, start)
    return inside < len(points) and points[inside] < end
