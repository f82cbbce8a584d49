"""Output formats for ``graphguard check``: ``concise`` (default) and ``json``."""

from __future__ import annotations

import json
import os
from typing import TextIO

from graphguard.diagnostics import Diagnostic

FORMATS = ("concise", "json")


def write_concise(diagnostics: list[Diagnostic], out: TextIO) -> None:
    """One line a finding, ``path:row:col: CODE name: message``: clickable in editors and terminals."""
    for d in diagnostics:
        out.write(f"{d.filename}:{d.row}:{d.column}: {d.code} {d.name}: {d.message}\n")


def write_json(diagnostics: list[Diagnostic], out: TextIO) -> None:
    """A JSON array with ruff's keys (``code``, ``message``, ``filename`` (absolute), ``location``,
    ``end_location``, ``fix``, ``url``) plus ``name`` and ``loop`` (the loop that repeats the finding,
    or null). Rows and columns are 1-based."""
    items = [
        {
            "code": d.code,
            "name": d.name,
            "message": d.message,
            "filename": os.path.abspath(d.filename),
            "location": {"row": d.row, "column": d.column},
            "end_location": {"row": d.end_row, "column": d.end_column},
            "loop": None if d.loop_row is None else {"row": d.loop_row, "column": d.loop_column},
            "fix": None,
            "url": d.url,
        }
        for d in diagnostics
    ]
    json.dump(items, out, indent=2)
    out.write("\n")


WRITERS = {"concise": write_concise, "json": write_json}
