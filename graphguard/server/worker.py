"""Lints and code actions of ``graphguard server`` in a child process, off the server's event loop.

A lint of a large document holds the interpreter for hundreds of milliseconds; on a thread of the
server's own process it held the GIL the event loop needs, and pings (and keystrokes) waited behind
it (300 ms at most, measured on a 13.6 MiB document). Here the server's process only sends the
document's text and the settings, and the child returns the LSP results:

* :class:`LintProcess`, on the server's side: starts the child (``python -c``, this module's
  :func:`child_main`), sends one request at a time and waits for its answer; a child that died is
  started again, the request's answer is None, and the server goes on.
* :class:`Linter`, in the child: the :class:`~graphguard.server.project.Project` (configuration,
  checker, facts cache), the lints and code actions, and the LSP conversions (positions, diagnostics,
  notebook cells, fixes as edits).

Requests and answers are tuples of plain values, lsprotocol objects and graphguard's findings, sent
pickled over the child's stdin and stdout (:class:`multiprocessing.connection.Connection`). The child
writes nothing else on stdout (its descriptor 1 is the pipe: it is moved out of the way first), and
nothing on stderr unless it crashes.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import subprocess
import sys
import threading
import traceback
from multiprocessing.connection import Connection

from lsprotocol import types as lsp

from graphguard.diagnostics import level
from graphguard.server.project import Project, encode_text

#: The code action kind of "fix all" (as ruff's ``source.fixAll.ruff``).
FIX_ALL = "source.fixAll.graphguard"
LOOP_NOTE = "the session loop that repeats it"
_ROWS = re.compile(r"\r\n|\r|\n")  # the line endings Python's tokenizer (and LSP) count lines by


# ---------------------------------------------------------------------- positions


def split_rows(text: str, upto: int | None = None) -> list[str]:
    """``text``'s lines without their endings, split as graphguard and LSP count rows (``\\n``,
    ``\\r\\n``, ``\\r``); row 1 is index 0. An empty text is one empty row. ``upto``: only the
    first ``upto`` rows are split off (the rest of the text is the last item), in time proportional
    to them."""
    return _ROWS.split(text, upto) if upto else _ROWS.split(text)


def lsp_position(rows: list[str], row: int, column: int, units=None) -> lsp.Position:
    """The LSP position of graphguard's 1-based ``(row, column)`` (column counted in characters of
    ``rows[row - 1]``): 0-based line, character in the client's code units. ``units(text) -> int``
    counts code units (default UTF-16). A row past the end is clamped to the end of the text; a column
    past the end of its row to the row's end."""
    count = units or utf16_units
    if row < 1:
        return lsp.Position(line=0, character=0)
    if row > len(rows):
        return lsp.Position(line=len(rows) - 1, character=count(rows[-1]))
    line = rows[row - 1]
    return lsp.Position(line=row - 1, character=count(line[: max(0, column - 1)]))


def utf16_units(text: str) -> int:
    """The number of UTF-16 code units in ``text`` (characters beyond the BMP count two)."""
    return len(text) + sum(1 for char in text if ord(char) > 0xFFFF)


def _units_of(encoding: str):
    """``units(text) -> int`` in the position encoding pygls negotiated (``"utf-16"``, ``"utf-8"``...)."""
    from pygls.workspace import PositionCodec

    return PositionCodec(encoding).client_num_units


def notebook_json(cells: list) -> bytes:
    """The ``.ipynb`` graphguard reads for an open notebook's cells ``(URI, kind, language, text)``: its
    Python code cells, in order, the other cells as markdown."""
    return json.dumps({
        "nbformat": 4, "nbformat_minor": 5, "metadata": {},
        "cells": [{"cell_type": "code" if kind == lsp.NotebookCellKind.Code and language == "python"
                   else "markdown", "metadata": {}, "source": text} for _, kind, language, text in cells],
    }).encode("utf-8", "surrogatepass")


def document_path(project: Project, uri: str, kind: str) -> str:
    """The file name graphguard checks the open document (``kind`` "text") or notebook ``uri`` as."""
    path = project.path_of(uri)
    return path + ".ipynb" if kind == "notebook" and not path.endswith(".ipynb") else path


# ---------------------------------------------------------------------- the child's job


class Linter:
    """What the child process does: lint open documents and compute code actions in the workspace
    ``root`` (None: documents are checked alone) with the lint ``scope``. ``log(message, kind)``
    receives the lines for the client's log (``kind`` a level name or an LSP message type)."""

    def __init__(self, root: str | None, scope: str, log) -> None:
        self.root, self.scope, self.log = root, scope, log
        self.lints = 0  #: the number of lints run (what a test counts)
        self._project: Project | None = None

    def project(self) -> Project:
        """The workspace's :class:`Project`, made at the first request. What it logs while it is made
        is not forwarded: the server's process made the same project at ``initialize`` and logged it."""
        if self._project is None:
            quiet = [True]
            self._project = Project(self.root, lambda *args: None if quiet[0] else self.log(*args), self.scope)
            quiet[0] = False
        return self._project

    def lint(self, uri: str, snapshot, opened: dict, encoding: str, rescan: bool):
        """Lint the open document or notebook ``uri`` from its ``snapshot`` (``(version key, what)``,
        see ``GraphguardServer._snapshot``) with the other open documents ``opened`` (``{uri:
        snapshot}``), positions in ``encoding``. Returns ``(publications, path, findings, others)``:
        the PublishDiagnosticsParams of ``uri``, its file name and reported findings, and for each
        other open document whose findings the lint covered ``(uri, its publications, its file name,
        its findings)``; None after an internal error (logged)."""
        try:
            project = self.project()
            if rescan:
                project.files = None  # a file may have appeared or gone
            project.refresh()
            units = _units_of(encoding)
            sources, paths = {}, {}
            for other, (_, what) in opened.items():
                path = document_path(project, other, what[0])
                if path not in paths:
                    sources[path] = notebook_json(what[1]) if what[0] == "notebook" else encode_text(what[1])
                    paths[path] = other
            kind = snapshot[1][0]
            path = document_path(project, uri, kind)
            paths.pop(path, None)
            if kind == "notebook":
                sources[path] = notebook_json(snapshot[1][1])
                typing = False  # a notebook is always checked with the whole project
            else:
                text, version, typing = snapshot[1][1], snapshot[1][2], snapshot[1][3]
                if path.endswith(".ipynb"):
                    # A notebook's JSON opened as text (an editor without notebook sync): no position in
                    # it means anything, so nothing is published (`graphguard check` checks it).
                    return [lsp.PublishDiagnosticsParams(uri=uri, diagnostics=[], version=version)], path, None, []
                sources[path] = encode_text(text)
            self.lints += 1
            findings, errors = project.lint_open(path, sources, typing=typing, others=list(paths))
            for error in errors:
                self.log(f"graphguard: internal error: {error} (please report this)", lsp.MessageType.Error)
            own = findings.get(path, [])
            others = []
            for other_path, other_findings in findings.items():
                other = paths.get(other_path)
                if other is not None:
                    others.append((other, publications(other, opened[other][1], other_findings, units), other_path,
                                   other_findings))
            return publications(uri, snapshot[1], own, units), path, own, others
        except Exception as error:
            detail = traceback.format_exc(limit=8)
            self.log(f"graphguard: internal error while linting {uri}: {type(error).__name__}: {error} "
                     f"(please report this)\n{detail}", lsp.MessageType.Error)
            return None

    def actions(self, uri: str, lint, wanted: lsp.Range, quick: bool, fix_all: bool, encoding: str,
                versioned: bool, open_texts: dict) -> list:
        """The code actions for the findings of ``lint`` (``(version, text, path, findings)``, the last
        lint of ``uri``) in ``wanted``: a quick fix per finding with a fix when ``quick``, the fix-all
        action when ``fix_all`` (checked against the open documents ``open_texts``, ``{uri: text}``).
        ``versioned``: the client takes versioned document edits. An internal error is logged; the
        actions are then those computed before it."""
        from graphguard.fix import SAFE, propose_fixes

        version, text, path, findings = lint
        rows = split_rows(text)
        units = _units_of(encoding)
        fixable = [d for d in findings if d.loop_row is not None]
        if not fixable:
            return []
        try:
            fixes = propose_fixes(text, fixable)
        except Exception as error:
            self.log(f"graphguard: internal error while proposing fixes for {uri}: {error!r}", lsp.MessageType.Error)
            return []
        actions = []
        if quick:
            for d, fix in sorted(fixes.items(), key=lambda item: (item[0].row, item[0].column)):
                diagnostic = to_diagnostic(d, rows, uri, units)
                if not _overlaps(diagnostic.range, wanted):
                    continue
                edits = [lsp.TextEdit(range=lsp.Range(start=lsp_position(rows, e.row, e.column, units),
                                                      end=lsp_position(rows, e.end_row, e.end_column, units)),
                                      new_text=e.content) for e in fix.edits]
                actions.append(lsp.CodeAction(
                    title=f"graphguard: {_fix_title(fix)} ({d.code})", kind=lsp.CodeActionKind.QuickFix,
                    diagnostics=[diagnostic], is_preferred=fix.applicability == SAFE,
                    edit=_workspace_edit(uri, version, edits, versioned)))
        if fix_all and any(fix.applicability == SAFE for fix in fixes.values()):
            new = self.fix_all(path, text, findings, open_texts)
            if new is not None and new != text:
                end = lsp.Position(line=len(rows) - 1, character=units(rows[-1]))
                edit = lsp.TextEdit(range=lsp.Range(start=lsp.Position(line=0, character=0), end=end), new_text=new)
                actions.append(lsp.CodeAction(title="graphguard: fix all safe fixes", kind=FIX_ALL,
                                              edit=_workspace_edit(uri, version, [edit], versioned)))
        return actions

    def fix_all(self, path: str, text: str, findings: list, open_texts: dict) -> str | None:
        """``text`` (the file ``path``) with every safe fix applied and checked (``check --fix``'s
        passes) in the context of the open documents ``open_texts``, or None when a fix failed its
        checks or an internal error happened (logged)."""
        from graphguard.fix.apply import fix_text

        project = self.project()
        sources = {}
        for uri, source in open_texts.items():
            other = project.path_of(uri)
            if other.endswith((".py", ".pyi")):
                sources[other] = encode_text(source)

        def relint(new: str) -> list:
            found, _ = project.lint(path, {**sources, path: encode_text(new)})
            return found

        try:
            result = fix_text(path, text, relint, unsafe=False, first=findings)
        except Exception as error:
            self.log(f"graphguard: internal error while fixing {path}: {error!r}", lsp.MessageType.Error)
            return None
        if result.note:
            self.log(f"graphguard: {path}: {result.note}", lsp.MessageType.Info)
        return result.fixed


# ---------------------------------------------------------------------- diagnostics


def publications(uri: str, what, findings: list, units) -> list:
    """The PublishDiagnosticsParams of one linted document: ``what`` is its snapshot's second half
    (``("text", text, version, typing)`` or ``("notebook", cells)``)."""
    if what[0] == "notebook":
        return notebook_publications(what[1], findings, units)
    # Only the rows the findings name: a 20 MB document is not split again after every lint.
    needed = max((max(d.row, d.end_row, d.loop_row or 0) for d in findings), default=0)
    rows = split_rows(what[1], needed + 1)
    return [lsp.PublishDiagnosticsParams(uri=uri, diagnostics=[to_diagnostic(d, rows, uri, units) for d in findings],
                                         version=what[2])]


def to_diagnostic(d, rows: list[str], uri: str, units, loop_rows: list[str] | None = None,
                  loop_uri: str | None = None, loop_row: int | None = None) -> lsp.Diagnostic:
    """One graphguard finding as an LSP diagnostic on the document whose rows are ``rows``, columns
    counted by ``units(text) -> int``; the loop on ``loop_rows`` of ``loop_uri`` at ``loop_row`` when
    they differ (a notebook's cells)."""
    start = lsp_position(rows, d.row, d.column, units)
    end = lsp_position(rows, d.end_row, d.end_column, units)
    if (end.line, end.character) < (start.line, start.character):
        end = start
    # One level everywhere (graphguard.diagnostics.level): GitHub's annotations and SARIF say the same.
    severity = lsp.DiagnosticSeverity.Error if level(d.code) == "error" else lsp.DiagnosticSeverity.Warning
    related = None
    if d.loop_row is not None:
        loop_rows = rows if loop_rows is None else loop_rows
        row = d.loop_row if loop_row is None else loop_row
        line = loop_rows[row - 1] if 0 < row <= len(loop_rows) else ""
        loop_start = lsp_position(loop_rows, row, d.loop_column or 1, units)
        loop_end = lsp_position(loop_rows, row, len(line.rstrip()) + 1, units)
        related = [lsp.DiagnosticRelatedInformation(
            location=lsp.Location(uri=loop_uri or uri, range=lsp.Range(start=loop_start, end=loop_end)),
            message=LOOP_NOTE)]
    url = d.url
    return lsp.Diagnostic(
        range=lsp.Range(start=start, end=end),
        severity=severity,
        code=d.code,
        code_description=lsp.CodeDescription(href=url) if url else None,
        source="graphguard",
        message=f"{d.name}: {d.message}" + (f"\n{d.advice[0].upper()}{d.advice[1:]}." if d.advice else ""),
        related_information=related,
        data={"row": d.row, "column": d.column, "code": d.code},
    )


def notebook_publications(cells: list, findings: list, units) -> list:
    """The findings of a notebook whose cells are ``cells`` (``(cell URI, kind, language, text)``),
    each on its cell's document: one PublishDiagnosticsParams per cell."""
    from graphguard.notebook import message_in_cells, read_notebook

    notebook = read_notebook(notebook_json(cells))
    by_index = {cell.index: cell for cell in notebook.cells}
    per_cell: dict[str, list] = {cells[i][0]: [] for i in range(len(cells))}
    cell_rows = {cells[i][0]: split_rows(cells[i][3]) for i in range(len(cells))}
    for d in findings:
        index, row = notebook.locate(d.row)
        cell_uri = cells[index - 1][0] if 0 < index <= len(cells) else cells[0][0] if cells else None
        if cell_uri is None:
            continue
        end_index, end_row = notebook.locate(d.end_row)
        # The message's rows too, as ``check`` says them (``the session loop at cell 5, line 2``).
        moved = dataclasses.replace(d, row=row, end_row=end_row if end_index == index else row,
                                    end_column=d.end_column if end_index == index else d.column + 1,
                                    message=message_in_cells(d.message, d.filename, notebook))
        loop_uri = loop_row = None
        if d.loop_row is not None:
            loop_index, loop_row = notebook.locate(d.loop_row)
            loop_uri = cells[loop_index - 1][0] if 0 < loop_index <= len(cells) else cell_uri
        cell = by_index.get(index)
        rows = list(cell.lines) if cell is not None else cell_rows[cell_uri]
        loop_cell = by_index.get(notebook.locate(d.loop_row)[0]) if d.loop_row is not None else None
        per_cell[cell_uri].append(to_diagnostic(
            moved, rows, cell_uri, units, loop_rows=list(loop_cell.lines) if loop_cell else rows,
            loop_uri=loop_uri, loop_row=loop_row))
    return [lsp.PublishDiagnosticsParams(uri=cell_uri, diagnostics=items) for cell_uri, items in per_cell.items()]


def _workspace_edit(uri: str, version: int | None, edits: list, versioned: bool) -> lsp.WorkspaceEdit:
    if versioned:
        return lsp.WorkspaceEdit(document_changes=[lsp.TextDocumentEdit(
            text_document=lsp.OptionalVersionedTextDocumentIdentifier(uri=uri, version=version), edits=edits)])
    return lsp.WorkspaceEdit(changes={uri: edits})


def _fix_title(fix) -> str:
    """A quick fix's title: the fix's message, which says why an unsafe fix is unsafe (``(unsafe: it
    runs only under a condition; ...)``); an unsafe fix whose message does not say so gets a note."""
    from graphguard.fix import SAFE

    if fix.applicability == SAFE or "unsafe" in fix.message:
        return fix.message
    return f"{fix.message} (unsafe: it may change what the program does)"


def _overlaps(a: lsp.Range, b: lsp.Range) -> bool:
    start_a, end_a = (a.start.line, a.start.character), (a.end.line, a.end.character)
    start_b, end_b = (b.start.line, b.start.character), (b.end.line, b.end.character)
    return start_a <= end_b and start_b <= end_a


# ---------------------------------------------------------------------- the two processes


def child_main(root: str | None, scope: str) -> None:
    """The child process's loop: read a request from stdin, answer on stdout, until stdin ends (the
    server ended or closed it). A request is ``(method, args)`` with method ``"lint"`` or
    ``"actions"`` (:meth:`Linter.lint`, :meth:`Linter.actions`); an answer is ``(result, logs,
    lints run so far)``, logs being ``(message, kind)`` pairs for the client's log."""
    # Descriptor 1 is the answers' pipe; anything else printed goes to stderr, never into it.
    answers = Connection(os.dup(1), readable=False)
    os.dup2(2, 1)
    requests = Connection(os.dup(0), writable=False)
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)  # an editor's Ctrl-C is the server's to handle
    logs: list = []
    linter = Linter(root, scope, lambda message, kind="log": logs.append((message, kind)))
    while True:
        try:
            method, args = requests.recv()
        except (EOFError, OSError):
            return
        logs.clear()
        try:
            result = getattr(linter, method)(*args) if method in ("lint", "actions") else None
        except Exception as error:  # never raised by the linter's methods; belt and braces
            logs.append((f"graphguard: internal error in {method}: {error!r} (please report this)", "error"))
            result = None
        try:
            answers.send((result, list(logs), linter.lints))
        except (OSError, ValueError):
            return


class LintProcess:
    """The server's side of the child process: :meth:`call` sends one request and returns its answer,
    one request at a time (a lock). The child starts at :meth:`start` (about a second to import the
    checker; the first request waits for it) and again after it died (a request it was answering is
    sent once more). ``log(message, kind)`` receives
    the child's log lines and one line when it died."""

    def __init__(self, root: str | None, scope: str, log) -> None:
        self.root, self.scope, self.log = root, scope, log
        self.lints = 0  #: the lints the child ran, since the server started
        self._lock = threading.Lock()
        self._process: subprocess.Popen | None = None
        self._requests = self._answers = None
        self._base = 0  # lints run by children that died

    @property
    def pid(self) -> int | None:
        """The child's process id, None when none runs."""
        process = self._process
        return process.pid if process is not None and process.poll() is None else None

    def start(self) -> None:
        """Start the child process now, if it is not running (returns at once)."""
        with self._lock:
            self._start()

    def _start(self) -> None:
        if self._process is not None:
            if self._process.poll() is None:
                return
            self._ended(f"exit code {self._stop()}")
        package = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
        code = (f"import sys; sys.path[0] = {package!r}; from graphguard.server.worker import child_main; "
                f"child_main({self.root!r}, {self.scope!r})")
        self._process = subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                         cwd=self.root or None)
        self._requests = Connection(os.dup(self._process.stdin.fileno()), readable=False)
        self._answers = Connection(os.dup(self._process.stdout.fileno()), writable=False)
        self._process.stdin.close()
        self._process.stdout.close()

    def call(self, method: str, *args):
        """The child's answer to ``method(*args)`` (see :func:`child_main`), its log lines sent to
        ``log``. A child that died is started again (one log line) and the request sent again, once:
        None when the second child died too."""
        with self._lock:
            for attempt in range(2):
                self._start()
                try:
                    self._requests.send((method, args))
                    result, logs, lints = self._answers.recv()
                    break
                except (EOFError, OSError) as error:
                    self._ended(f"{error.__class__.__name__}, exit code {self._stop()}")
            else:
                return None
            self.lints = self._base + lints
        for message, kind in logs:
            self.log(message, kind)
        return result

    def _ended(self, how: str) -> None:
        self.log(f"graphguard: the lint process ended ({how}); it is started again", "warning")

    def _stop(self):
        """Kill the child (if it still runs) and forget it; its exit code."""
        process, self._process = self._process, None
        for connection in (self._requests, self._answers):
            try:
                connection.close()
            except OSError:
                pass
        self._base = self.lints
        if process is None:
            return None
        process.kill()
        return process.wait()

    def close(self) -> None:
        """End the child at once (a lint it is running is abandoned: the cache is written atomically).
        Does not wait, nor take the lock (a request may be in flight)."""
        requests, process = self._requests, self._process
        if requests is not None:
            try:
                requests.close()
            except OSError:
                pass
        if process is not None and process.poll() is None:
            process.kill()
