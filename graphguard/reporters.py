"""Output formats for ``graphguard check --output-format``.

``concise`` (default), ``full`` (with the source lines and the loop), ``json`` (ruff's keys plus
``name`` and ``loop``), ``json-lines``, ``sarif`` (SARIF 2.1.0, with rule metadata and the rule docs as
``help.markdown`` so GitHub code scanning shows them), ``github`` (workflow commands that annotate pull
requests), ``junit`` (one test suite per file, one failing test case per finding).
"""

from __future__ import annotations

import json
import os
import re
from typing import TextIO

from graphguard import __version__
from graphguard.diagnostics import Diagnostic, level

FORMATS = ("concise", "full", "json", "json-lines", "sarif", "github", "junit")


def shown(filename: str) -> str:
    """``filename`` as one line of text: control characters (a newline in a file name would forge an
    output line) as backslash escapes, and ``./`` before a name that starts with ``::`` (GitHub
    Actions would read the line as a workflow command)."""
    if filename.startswith("::"):
        filename = "./" + filename
    if filename.isprintable():
        return filename
    return "".join(c if c.isprintable() else c.encode("unicode_escape", "backslashreplace").decode("ascii")
                   for c in filename)


def _text(name: str) -> str:
    """A file name as Unicode text for JSON and XML: bytes that are not UTF-8 (kept by Python as lone
    surrogates, which strict parsers reject) as ``\\xff`` escapes."""
    return name.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")


_NOT_XML = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def _xml(text: str) -> str:
    """``text`` with the characters XML 1.0 cannot hold (control characters, lone surrogates) escaped."""
    text = _text(text)
    return _NOT_XML.sub(lambda m: m[0].encode("unicode_escape").decode("ascii"), text)


def _where(d: Diagnostic) -> str:
    """``path:row:col``, or in a notebook ``path:cell N:row:col`` (ruff's form)."""
    cell = f"cell {d.cell}:" if d.cell is not None else ""
    return f"{shown(d.filename)}:{cell}{d.row}:{d.column}"


def write_concise(diagnostics: list[Diagnostic], out: TextIO) -> None:
    """One line a finding, ``path:row:col: CODE name: message``: clickable in editors and terminals.
    In a notebook, ``path:cell N:row:col`` with the row inside cell N."""
    for d in diagnostics:
        out.write(f"{_where(d)}: {d.code} {d.name}: {d.message}\n")


def _source_lines(filename: str, sources: dict | None, cache: dict) -> list[str]:
    """The lines of ``filename`` as checked: the bytes given on stdin for it, or the regular file read
    within the size limit (never a FIFO or a device: that would hang or never end), decoded with its
    coding cookie; ``[]`` when it cannot be read."""
    from graphguard.notebook import is_notebook

    if is_notebook(filename):
        return []  # a notebook's lines are its cells': see _cell_lines
    if filename not in cache:
        import io
        import tokenize  # only for `full` output: not on every run's import path

        from graphguard.reading import read_regular

        try:
            raw = sources[filename] if sources and filename in sources else read_regular(filename)
            encoding, _ = tokenize.detect_encoding(io.BytesIO(raw).readline)
            text = raw.decode(encoding, "replace")
        except (OSError, SyntaxError, LookupError, UnicodeError, ValueError):
            text = ""
        cache[filename] = re.split(r"\r\n|\r|\n", text)
    return cache[filename]


def _cell_lines(filename: str, cell: int, sources: dict | None, cache: dict) -> list[str]:
    """The lines of notebook cell ``cell`` (as written, magics included); ``[]`` if unreadable."""
    key = (filename, cell)
    if key not in cache:
        from graphguard.notebook import load

        notebook = load(filename, sources)
        found = notebook.cell(cell) if notebook is not None else None
        cache[key] = list(found.lines) if found is not None else []
    return cache[key]


def write_full(diagnostics: list[Diagnostic], out: TextIO, sources: dict | None = None) -> None:
    """Each finding with the source line it points at, underlined, and the line of its loop.
    ``sources`` holds the bytes of files not read from disk (stdin). In a notebook, the lines are
    the cell's and the loop's cell is named."""
    cache: dict = {}
    for d in diagnostics:
        out.write(f"{_where(d)}: {d.code} {d.name}: {d.message}\n")
        if d.code == "GG002":
            lines = []
        elif d.cell is not None:
            lines = _cell_lines(d.filename, d.cell, sources, cache)
        else:
            lines = _source_lines(d.filename, sources, cache)
        line = lines[d.row - 1] if 0 < d.row <= len(lines) else ""
        if line:
            width = len(str(max(d.row, d.loop_row or 0)))
            end = d.end_column if d.end_row == d.row else len(line) + 1
            out.write(f"{'':>{width}} |\n{d.row:>{width}} | {line}\n")
            out.write(f"{'':>{width}} | {' ' * (d.column - 1)}{'^' * max(1, end - d.column)}\n")
            if d.loop_row is not None:
                loop_lines = lines if d.loop_cell == d.cell else _cell_lines(d.filename, d.loop_cell, sources, cache)
                loop = loop_lines[d.loop_row - 1].strip() if 0 < d.loop_row <= len(loop_lines) else ""
                where = f"line {d.loop_row}" if d.loop_cell is None else f"cell {d.loop_cell}, line {d.loop_row}"
                out.write(f"{'':>{width}} = repeated by the loop at {where}: {loop}\n")
            if d.advice:
                out.write(f"{'':>{width}} = help: {d.advice}\n")
            if d.fix is not None:
                out.write(f"{'':>{width}} = fix ({d.fix.applicability}): {d.fix.message}\n")
            elif d.fix_unavailable:
                out.write(f"{'':>{width}} = no automatic fix: {d.fix_unavailable}\n")
        out.write("\n")


def _json_item(d: Diagnostic) -> dict:
    return {
        "code": d.code,
        "name": d.name,
        "message": d.message,
        "help": d.advice or None,
        "filename": _text(os.path.abspath(d.filename)),
        "cell": d.cell,
        "location": {"row": d.row, "column": d.column},
        "end_location": {"row": d.end_row, "column": d.end_column},
        "loop": None if d.loop_row is None else {"row": d.loop_row, "column": d.loop_column,
                                                 **({"cell": d.loop_cell} if d.loop_cell is not None else {})},
        "fix": d.fix.as_json() if d.fix is not None else None,
        "fix_unavailable": d.fix_unavailable,
        "url": d.url,
    }


def write_json(diagnostics: list[Diagnostic], out: TextIO) -> None:
    """A JSON array with ruff's keys (``code``, ``message``, ``filename`` (absolute), ``location``,
    ``end_location``, ``fix``, ``url``) plus ``name``, ``help`` (what to do about it, the rule's advice;
    null for checker codes), ``loop`` (the loop that repeats the finding, or null) and
    ``fix_unavailable`` (why a finding has no fix, or null for GG001/GG002). Rows and
    columns are 1-based. ``cell`` (as ruff's): in a notebook the cell (1-based among all its cells),
    the rows then being rows within that cell (and ``loop.cell``, in notebooks only); null elsewhere."""
    json.dump([_json_item(d) for d in diagnostics], out, indent=2)
    out.write("\n")


def write_json_lines(diagnostics: list[Diagnostic], out: TextIO) -> None:
    """One JSON object (as in ``json``) per line."""
    for d in diagnostics:
        out.write(json.dumps(_json_item(d)) + "\n")


def _escape_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_property(text: str) -> str:
    return _escape_data(text).replace(":", "%3A").replace(",", "%2C")


def write_github(diagnostics: list[Diagnostic], out: TextIO) -> None:
    """GitHub Actions workflow commands (``::warning file=...,line=...::message``; ``::error`` for a
    file that could not be checked, as :func:`graphguard.diagnostics.level` says) that annotate the
    pull request's changed lines. GitHub knows no notebook cells: a finding in a cell is placed on the
    line of the ``.ipynb`` file that holds that cell's row (:func:`graphguard.notebook.file_lines`),
    without columns, and its text begins with the cell and row."""
    layouts: dict[str, dict | None] = {}
    for d in diagnostics:
        place = (("line", d.row), ("col", d.column), ("endLine", d.end_row), ("endColumn", d.end_column))
        cell = ""
        if d.cell is not None:
            cell = f"cell {d.cell}, line {d.row}: "
            if d.filename not in layouts:
                layouts[d.filename] = _notebook_layout(d.filename)
            rows = (layouts[d.filename] or {}).get(d.cell, ())
            if 1 <= d.row <= len(rows):
                place = (("line", rows[d.row - 1]), ("endLine", rows[min(d.end_row, len(rows)) - 1]))
            else:
                place = ()  # a layout not known: the file, not a wrong line of it (the text names the cell)
        properties = ",".join(
            f"{key}={_escape_property(str(value))}"
            for key, value in (("file", d.filename), *place, ("title", f"{d.code} {d.name}"))
        )
        out.write(f"::{level(d.code)} {properties}::{_escape_data(f'{cell}{d.code} {d.message}')}\n")


def _notebook_layout(filename: str) -> dict | None:
    """:func:`graphguard.notebook.file_lines` of the notebook on disk, or None when it cannot be read."""
    from graphguard.notebook import file_lines

    try:
        with open(filename, encoding="utf-8") as handle:
            return file_lines(handle.read())
    except (OSError, UnicodeDecodeError):
        return None


def write_junit(diagnostics: list[Diagnostic], out: TextIO) -> None:
    """JUnit XML: a ``testsuite`` per file, a failing ``testcase`` per finding; no finding is one
    passing ``testcase`` named ``No errors found``, as ruff writes it (a thirteenth new user's trial: CI
    showed "no tests" for a clean run)."""
    from xml.etree import ElementTree  # (here: most runs write no XML, and the import costs a warm run 10 ms)

    root = ElementTree.Element("testsuites", name="graphguard", tests=str(len(diagnostics) or 1),
                               failures=str(len(diagnostics)))
    if not diagnostics:
        suite = ElementTree.SubElement(root, "testsuite", name="graphguard", tests="1", failures="0")
        ElementTree.SubElement(suite, "testcase", name="No errors found", classname="graphguard")
    by_file: dict[str, list[Diagnostic]] = {}
    for d in diagnostics:
        by_file.setdefault(d.filename, []).append(d)
    for filename, items in by_file.items():
        name = _xml(filename)  # a control character in a file name made the XML unreadable
        suite = ElementTree.SubElement(root, "testsuite", name=name, tests=str(len(items)),
                                       failures=str(len(items)))
        for d in items:
            cell = f"cell {d.cell}:" if d.cell is not None else ""
            case = ElementTree.SubElement(suite, "testcase", name=f"{d.code} {d.name}",
                                          classname=f"{name}:{cell}{d.row}:{d.column}")
            failure = ElementTree.SubElement(case, "failure", message=_xml(d.message), type=d.code)
            failure.text = f"{shown(name)}:{cell}{d.row}:{d.column}: {d.code} {_xml(d.message)}"
    ElementTree.indent(root)
    out.write('<?xml version="1.0" encoding="UTF-8"?>\n')
    out.write(ElementTree.tostring(root, encoding="unicode"))
    out.write("\n")


def write_sarif(diagnostics: list[Diagnostic], out: TextIO) -> None:
    """A SARIF 2.1.0 log: one run, the tool's rules with their docs (``help.markdown``), one result per
    finding with its region and, as a related location, the loop that repeats it. Artifact URIs are
    relative to the current folder (``%SRCROOT%``), as GitHub code scanning expects."""
    from graphguard.rules import CHECKER_CODES, RULES
    from graphguard.rules.docs import render

    rules = []
    index = {}
    for code, rule in RULES.items():
        index[code] = len(rules)
        rules.append({
            "id": code,
            "name": rule.NAME,
            "shortDescription": {"text": rule.TITLE},
            "fullDescription": {"text": rule.summary()},
            "help": {"text": f"{rule.ADVICE[0].upper()}{rule.ADVICE[1:]}.", "markdown": render(rule)},
            "defaultConfiguration": {"level": level(code)},
        })
    for code, (name, summary) in {**CHECKER_CODES, "GG900": ("unused-suppression", "A suppression comment that suppressed nothing.")}.items():
        index[code] = len(rules)
        rules.append({"id": code, "name": name, "shortDescription": {"text": summary},
                      "defaultConfiguration": {"level": level(code)}})
    from urllib.parse import quote

    root = os.path.abspath(os.getcwd())
    results = []
    for d in diagnostics:
        uri = quote(os.path.relpath(os.path.abspath(d.filename), root).replace(os.sep, "/"), safe="/",
                    errors="surrogateescape")  # a URI reference: spaces, '#', '%', non-ASCII percent-encoded
        location = {"physicalLocation": {
            "artifactLocation": {"uri": uri, "uriBaseId": "%SRCROOT%"},
            "region": _region(d.row, d.column, d.end_row, d.end_column, d.cell),
        }}
        result = {
            "ruleId": d.code,
            "ruleIndex": index.get(d.code, 0),
            "level": level(d.code),
            "message": {"text": d.message},
            "locations": [location],
        }
        if d.fix is not None:
            result["fixes"] = [_sarif_fix(d.fix, uri)]
        if d.loop_row is not None:
            result["relatedLocations"] = [{
                "id": 1,
                "message": {"text": "the loop that repeats it"},
                "physicalLocation": {
                    "artifactLocation": {"uri": uri, "uriBaseId": "%SRCROOT%"},
                    "region": _region(d.loop_row, d.loop_column, cell=d.loop_cell),
                },
            }]
        results.append(result)
    log = {
        "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {"name": "graphguard", "version": __version__,
                                "rules": rules}},
            "originalUriBaseIds": {"%SRCROOT%": {"uri": "file://" + root.replace(os.sep, "/") + "/"}},
            "results": results,
        }],
    }
    json.dump(log, out, indent=2)
    out.write("\n")


def _region(row: int, column: int, end_row: int | None = None, end_column: int | None = None,
            cell: int | None = None) -> dict:
    """A SARIF region; in a notebook its lines are within the cell named in the region's property
    bag (``properties.cell``, 1-based), SARIF having no notion of cells."""
    region = {"startLine": row, "startColumn": column}
    if end_row is not None:
        region.update(endLine=end_row, endColumn=end_column)
    if cell is not None:
        region["properties"] = {"cell": cell}
    return region


def _sarif_fix(fix, uri: str) -> dict:
    """A SARIF ``fix``: the edits as ``replacements`` of one artifact (an insertion deletes an empty
    region)."""
    return {
        # (an unsafe fix's message already says "(unsafe: why)": not "(unsafe)" again)
        "description": {"text": fix.message if f"({fix.applicability}" in fix.message
                        else f"{fix.message} ({fix.applicability})"},
        "artifactChanges": [{
            "artifactLocation": {"uri": uri, "uriBaseId": "%SRCROOT%"},
            "replacements": [{
                "deletedRegion": _region(e.row, e.column, e.end_row, e.end_column, e.cell),
                "insertedContent": {"text": e.content},
            } for e in fix.edits],
        }],
    }


WRITERS = {
    "concise": write_concise,
    "full": write_full,
    "json": write_json,
    "json-lines": write_json_lines,
    "sarif": write_sarif,
    "github": write_github,
    "junit": write_junit,
}
