"""The protocol side of ``graphguard server``: the pygls :class:`~pygls.lsp.server.LanguageServer`,
its handlers and scheduling (debounce, the lint worker thread, stale results dropped), and the LSP
conversions: positions (0-based lines, UTF-16 code units), diagnostics, code actions and notebook
cells. What a lint checks, and how, is the project side's (:mod:`graphguard.server.project`).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import dataclasses
import json
import os
import re
import threading
import traceback
from urllib.parse import unquote, urlparse

from lsprotocol import types as lsp
from pygls.exceptions import JsonRpcException
from pygls.lsp.server import LanguageServer
from pygls.uris import to_fs_path

from graphguard import __version__
from graphguard.diagnostics import level
from graphguard.server.project import SCOPES, Project, encode_text
from graphguard.server.wire import BoundedInput, Protocol, _error, install_workspace

#: The code action kind of "fix all" (as ruff's ``source.fixAll.ruff``).
FIX_ALL = "source.fixAll.graphguard"
#: Default pause after the last change before a document is linted again, in seconds.
DEFAULT_DEBOUNCE = 0.2
#: Pause after a didOpen before its lint, in seconds (at most the debounce): files opened together are
#: linted together.
OPEN_PAUSE = 0.05
_ROWS = re.compile(r"\r\n|\r|\n")  # the line endings Python's tokenizer (and LSP) count lines by
LOOP_NOTE = "the session loop that repeats it"
_LEVELS = {"error": lsp.MessageType.Error, "warning": lsp.MessageType.Warning, "info": lsp.MessageType.Info,
           "log": lsp.MessageType.Log}


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


@dataclasses.dataclass
class _Lint:
    """The last lint of one document: its version, text (for fixes) and reported findings."""

    version: int | None
    text: str
    path: str
    findings: list
    project: Project


@dataclasses.dataclass
class _Outcome:
    """A lint's result: ``target``, the publications of the document it was for; ``others``, for each
    other open document whose findings the lint covered, ``(URI, its publications, its _Lint or None
    for a notebook)``; ``used``, the version key of each other open document the lint read."""

    target: list
    others: list = dataclasses.field(default_factory=list)
    used: dict = dataclasses.field(default_factory=dict)


def _notebook_json(cells: list) -> bytes:
    """The ``.ipynb`` graphguard reads for an open notebook's cells ``(URI, kind, language, text)``: its
    Python code cells, in order, the other cells as markdown."""
    import json

    return json.dumps({
        "nbformat": 4, "nbformat_minor": 5, "metadata": {},
        "cells": [{"cell_type": "code" if kind == lsp.NotebookCellKind.Code and language == "python"
                   else "markdown", "metadata": {}, "source": text} for _, kind, language, text in cells],
    }).encode("utf-8", "surrogatepass")


class GraphguardServer(LanguageServer):
    """The graphguard language server. ``debounce``: seconds after the last change before a lint."""

    def __init__(self) -> None:
        super().__init__(
            "graphguard", __version__, text_document_sync_kind=lsp.TextDocumentSyncKind.Incremental,
            notebook_document_sync=lsp.NotebookDocumentSyncOptions(
                notebook_selector=[lsp.NotebookDocumentFilterWithCells(
                    notebook="jupyter-notebook", cells=[lsp.NotebookCellLanguage(language="python")])],
                save=True),
            protocol_cls=Protocol,
        )
        self.debounce = DEFAULT_DEBOUNCE
        self.warnings: list[str] = []  #: bad initializationOptions, shown once initialized
        self.project: Project | None = None
        self.lints: dict[str, _Lint] = {}  # document (or notebook) URI -> its last lint
        self.pending: dict[str, asyncio.Task] = {}
        self.latest: dict[str, object] = {}  # URI -> the version the next lint must have
        self.shown: dict[str, list] = {}  # document (or cell) URI -> the diagnostics last published
        #: open document URI -> the version key another document's lint covered it at (its findings came
        #: with that lint's): its own lint of that version is skipped. Opening 50 files was 50 project
        #: lints, each reading every open file (69 s where `graphguard check` took 1.3 s).
        self.covered: dict[str, object] = {}
        self.cells: dict[str, list[str]] = {}  # open notebook URI -> its cells' URIs, in order
        # One worker: lints share the checker and the cache, and a lint of a stale version is skipped.
        self.worker = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="graphguard-lint")
        self.loop: asyncio.AbstractEventLoop | None = None
        self._project_lock = threading.Lock()
        self.exit_code = 1  #: 0 once the client sent ``shutdown`` then ``exit``

    # ------------------------------------------------------------------ logging

    def log(self, message: str, kind: lsp.MessageType | str = lsp.MessageType.Log) -> None:
        """Send ``message`` to the client's log (``window/logMessage``); safe from any thread. ``kind``:
        a message type, or its name as the project side gives it (``"error"``, ``"warning"``...)."""
        if isinstance(kind, str):
            kind = _LEVELS.get(kind, lsp.MessageType.Log)
        params = lsp.LogMessageParams(type=kind, message=message)
        if self.loop is not None and threading.current_thread() is not threading.main_thread():
            self.loop.call_soon_threadsafe(self.window_log_message, params)
        else:
            self.window_log_message(params)

    def shutdown(self) -> None:
        """Stop reading and let the pools go without waiting for them (pygls 2.1 waits for its
        thread pool, which holds a request in flight and the read of stdin)."""
        if self._stop_event is not None:
            self._stop_event.set()
        if self._thread_pool is not None:
            self._thread_pool.shutdown(wait=False, cancel_futures=True)
        self.worker.shutdown(wait=False, cancel_futures=True)

    def report_server_error(self, error: Exception, source) -> None:
        """A body that is not JSON (or not UTF-8) gets the parse error response JSON-RPC 2.0 asks for
        (-32700, id null), not only pygls's message to the user; other errors are pygls's to report."""
        if source is JsonRpcException and isinstance(error, (json.JSONDecodeError, UnicodeDecodeError)):
            self.protocol._send_data(_error(None, -32700, f"parse error: {error}"))
            return
        super().report_server_error(error, source)

    # ------------------------------------------------------------------ positions

    def _units(self):
        codec = self.workspace.position_codec
        return codec.client_num_units

    # ------------------------------------------------------------------ scheduling

    def schedule(self, uri: str, delay: float, typing: bool | None = None) -> None:
        """Lint the document (or notebook) ``uri`` after ``delay`` seconds, replacing a lint not yet
        started; the result is published only if the document has not changed meanwhile. ``typing``
        (default: a delay was given) lints it as after a keystroke (see :meth:`Project.lint_open`)."""
        task = self.pending.pop(uri, None)
        if task is not None:
            task.cancel()
        # Only the version key here: a keystroke costs time proportional to the edit, and the text is
        # read once, when the lint starts.
        key = self._key(uri)
        if key is None:
            return
        self.latest[uri] = key
        self.pending[uri] = asyncio.get_running_loop().create_task(
            self._lint_later(uri, delay, delay > 0 if typing is None else typing))

    async def _lint_later(self, uri: str, delay: float, typing: bool) -> None:
        try:
            if delay > 0:
                await asyncio.sleep(delay)
        except asyncio.CancelledError:
            return
        self.pending.pop(uri, None)
        snapshot = self._snapshot(uri, typing=typing)
        if snapshot is None or snapshot[0] != self.latest.get(uri):
            return
        loop = asyncio.get_running_loop()
        opened = self._open_documents(skip=uri)  # the other open documents, as they are now
        try:
            result = await loop.run_in_executor(self.worker, self._lint_now, uri, snapshot, opened)
        except Exception as error:  # never raised by _lint_now; belt and braces
            self.log(f"graphguard: internal error while linting {uri}: {error!r}", lsp.MessageType.Error)
            return
        if result is None or self.latest.get(uri) != snapshot[0]:
            return  # the document changed (or closed) while it was linted: a newer lint follows
        for params in result.target:
            self._publish(params)
        if not result.others:
            return
        # The other open documents' findings, from the same lint, when they changed: only if every open
        # document the lint read is still as it was (else a newer lint follows, with the newer text).
        if any(self._key(other) != key for other, key in result.used.items()):
            # A document changed during the lint (a newer lint of it follows): the others it covered
            # are linted again on their own, since their own lints were skipped as covered.
            for other, _, _ in result.others:
                if self.covered.pop(other, None) is not None and other not in self.pending:
                    self.schedule(other, 0)
            return
        for other, publications, lint in result.others:
            if lint is not None:
                self.lints[other] = lint
            for params in publications:
                if self.shown.get(params.uri) != list(params.diagnostics):
                    self._publish(params)

    def _publish(self, params: lsp.PublishDiagnosticsParams) -> None:
        self.shown[params.uri] = list(params.diagnostics)
        self.text_document_publish_diagnostics(params)

    def _key(self, uri: str):
        """The version key of the open document (or notebook) ``uri`` now, None once closed: its version
        and the generation of its text (of each cell's, for a notebook), which every change renews
        (:class:`~graphguard.server.wire.Document`), so that a version sent twice or going backwards
        is still a new key. Time independent of the document's size."""
        notebook = self.workspace.get_notebook_document(notebook_uri=uri)
        if notebook is not None:
            documents = self.workspace.text_documents
            return ("notebook", notebook.version,
                    tuple((cell.document, getattr(documents.get(unquote(cell.document)), "generation", None))
                          for cell in notebook.cells))
        document = self.workspace.text_documents.get(unquote(uri))
        if document is None:
            return None
        return (document.version, getattr(document, "generation", id(document)))

    def _snapshot(self, uri: str, typing: bool = False):
        """(version key, what to lint) for an open document or notebook, taken on the event loop."""
        key = self._key(uri)
        if key is None:
            return None
        notebook = self.workspace.get_notebook_document(notebook_uri=uri)
        if notebook is not None:
            cells = []
            for cell in notebook.cells:
                document = self.workspace.text_documents.get(unquote(cell.document))
                text = document.source if document is not None else ""
                language = document.language_id if document is not None else "python"
                cells.append((cell.document, cell.kind, language, text))
            return (key, ("notebook", cells))
        document = self.workspace.text_documents.get(unquote(uri))
        return (key, ("text", document.source, document.version, typing))

    def _open_documents(self, skip: str) -> dict:
        """On the event loop: the open Python documents and notebooks other than ``skip``, as
        ``{uri: snapshot}`` (see :meth:`_snapshot`). Cells are read as part of their notebook; other
        documents (a notebook's JSON opened as text, a ``pyproject.toml``) and ``untitled:`` ones are
        left out."""
        opened = {}
        for notebook in list(self.workspace.notebook_documents.values()):
            if notebook.uri != skip and notebook.uri.startswith("file:"):
                opened[notebook.uri] = self._snapshot(notebook.uri)
        for uri, document in list(self.workspace.text_documents.items()):
            if (uri == skip or unquote(skip) == uri or not uri.startswith("file:")
                    or self.workspace.get_notebook_document(cell_uri=uri)
                    or not urlparse(uri).path.endswith((".py", ".pyi"))):
                continue
            opened[document.uri] = self._snapshot(document.uri)
        return {uri: snapshot for uri, snapshot in opened.items() if snapshot is not None}

    def _lint_now(self, uri: str, snapshot, opened: dict | None = None):
        """On the worker thread: lint one snapshot, with the other open documents ``opened`` (see
        :meth:`_open_documents`) from their text; returns a :class:`_Outcome`, or None when the
        snapshot is stale. Never raises: an internal error is logged."""
        if self.latest.get(uri) != snapshot[0] or self.covered.get(uri) == snapshot[0]:
            return None  # stale, or linted with another document (its findings published with that one's)
        try:
            project = self._project()
            project.refresh()
            sources, paths = {}, {}
            for other, (_, what) in (opened or {}).items():
                path = self._path(project, other, what[0])
                if path not in paths:
                    sources[path] = _notebook_json(what[1]) if what[0] == "notebook" else encode_text(what[1])
                    paths[path] = other
            kind = snapshot[1][0]
            path = self._path(project, uri, kind)
            paths.pop(path, None)
            if kind == "notebook":
                sources[path] = _notebook_json(snapshot[1][1])
                typing = False  # a notebook is always checked with the whole project
            else:
                text, version, typing = snapshot[1][1], snapshot[1][2], snapshot[1][3]
                if path.endswith(".ipynb"):
                    # A notebook's JSON opened as text (an editor without notebook sync): no position in
                    # it means anything, so nothing is published (`graphguard check` checks it).
                    self.lints.pop(uri, None)
                    return _Outcome([lsp.PublishDiagnosticsParams(uri=uri, diagnostics=[], version=version)])
                sources[path] = encode_text(text)
            findings, errors = project.lint_open(path, sources, typing=typing, others=list(paths))
            for error in errors:
                self.log(f"graphguard: internal error: {error} (please report this)", lsp.MessageType.Error)
            outcome = _Outcome(self._publications(uri, snapshot[1], findings.get(path, []), project, path),
                               used={other: key for other, (key, _) in (opened or {}).items()})
            if kind == "text":
                self.lints[uri] = _Lint(version, text, path, findings.get(path, []), project)
            else:
                self.lints.pop(uri, None)
            for other_path, other_findings in findings.items():
                other = paths.get(other_path)
                if other is None:
                    continue
                what = opened[other][1]
                lint = _Lint(what[2], what[1], other_path, other_findings, project) if what[0] == "text" else None
                outcome.others.append((other, self._publications(other, what, other_findings, project, other_path),
                                       lint))
                self.covered[other] = opened[other][0]
            return outcome
        except Exception as error:
            detail = traceback.format_exc(limit=8)
            self.log(f"graphguard: internal error while linting {uri}: {type(error).__name__}: {error} "
                     f"(please report this)\n{detail}", lsp.MessageType.Error)
            return None

    @staticmethod
    def _path(project: Project, uri: str, kind: str) -> str:
        path = project.path_of(uri)
        return path + ".ipynb" if kind == "notebook" and not path.endswith(".ipynb") else path

    def _publications(self, uri: str, what, findings: list, project: Project, path: str) -> list:
        """The PublishDiagnosticsParams of one linted document: ``what`` is its snapshot's second half."""
        if what[0] == "notebook":
            return self._notebook_publications(what[1], findings)
        # Only the rows the findings name: a 20 MB document is not split again after every lint.
        needed = max((max(d.row, d.end_row, d.loop_row or 0) for d in findings), default=0)
        rows = split_rows(what[1], needed + 1)
        return [lsp.PublishDiagnosticsParams(uri=uri, diagnostics=[self._diagnostic(d, rows, uri) for d in findings],
                                             version=what[2])]

    def _project(self) -> Project:
        with self._project_lock:
            if self.project is None:
                self.project = Project(None, self.log)
            return self.project

    def _open_sources(self, project: Project, skip: str) -> dict:
        """The unsaved text of the open Python documents other than ``skip``, by file name."""
        sources = {}
        for uri, document in list(self.workspace.text_documents.items()):
            if uri == skip or not uri.startswith("file:") or self.workspace.get_notebook_document(cell_uri=uri):
                continue
            path = project.path_of(uri)
            if path.endswith((".py", ".pyi")):
                sources[path] = encode_text(document.source)
        return sources

    # ------------------------------------------------------------------ diagnostics

    def _diagnostic(self, d, rows: list[str], uri: str, loop_rows: list[str] | None = None,
                    loop_uri: str | None = None, loop_row: int | None = None) -> lsp.Diagnostic:
        """One graphguard finding as an LSP diagnostic on the document whose rows are ``rows``."""
        units = self._units()
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

    # ------------------------------------------------------------------ notebooks

    def _notebook_publications(self, cells: list, findings: list) -> list:
        """The findings of a notebook whose cells are ``cells`` (``(cell URI, kind, language, text)``),
        each on its cell's document: one PublishDiagnosticsParams per cell."""
        from graphguard.notebook import message_in_cells, read_notebook

        notebook = read_notebook(_notebook_json(cells))
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
            per_cell[cell_uri].append(self._diagnostic(
                moved, rows, cell_uri, loop_rows=list(loop_cell.lines) if loop_cell else rows,
                loop_uri=loop_uri, loop_row=loop_row))
        return [lsp.PublishDiagnosticsParams(uri=cell_uri, diagnostics=items) for cell_uri, items in per_cell.items()]

    # ------------------------------------------------------------------ code actions

    def code_actions(self, params: lsp.CodeActionParams) -> list:
        """The quick fixes for the findings in ``params.range`` and the fix-all action (on the worker
        thread: proposing fixes parses the document with libcst)."""
        uri = params.text_document.uri
        lint = self.lints.get(uri)
        document = self.workspace.text_documents.get(unquote(uri))
        if lint is None or document is None or document.version != lint.version or document.source != lint.text:
            return []  # no lint of this text yet: no positions to trust
        only = params.context.only
        wants_quick = not only or any(k == lsp.CodeActionKind.QuickFix or str(k).startswith("quickfix") for k in only)
        wants_all = not only or any(FIX_ALL.startswith(str(k)) for k in only)
        return self.worker.submit(self._actions, uri, lint, params.range, wants_quick, wants_all).result()

    def _actions(self, uri: str, lint: _Lint, wanted: lsp.Range, quick: bool, fix_all: bool) -> list:
        from graphguard.fix import SAFE, propose_fixes

        rows = split_rows(lint.text)
        units = self._units()
        fixable = [d for d in lint.findings if d.loop_row is not None]
        if not fixable:
            return []
        try:
            fixes = propose_fixes(lint.text, fixable)
        except Exception as error:
            self.log(f"graphguard: internal error while proposing fixes for {uri}: {error!r}", lsp.MessageType.Error)
            return []
        actions = []
        if quick:
            for d, fix in sorted(fixes.items(), key=lambda item: (item[0].row, item[0].column)):
                diagnostic = self._diagnostic(d, rows, uri)
                if not _overlaps(diagnostic.range, wanted):
                    continue
                edits = [lsp.TextEdit(range=lsp.Range(start=lsp_position(rows, e.row, e.column, units),
                                                      end=lsp_position(rows, e.end_row, e.end_column, units)),
                                      new_text=e.content) for e in fix.edits]
                actions.append(lsp.CodeAction(
                    title=f"graphguard: {_fix_title(fix)} ({d.code})", kind=lsp.CodeActionKind.QuickFix,
                    diagnostics=[diagnostic], is_preferred=fix.applicability == SAFE,
                    edit=self._workspace_edit(uri, lint.version, edits)))
        if fix_all and any(fix.applicability == SAFE for fix in fixes.values()):
            new = self._fix_all(lint)
            if new is not None and new != lint.text:
                end = lsp.Position(line=len(rows) - 1, character=units(rows[-1]))
                edit = lsp.TextEdit(range=lsp.Range(start=lsp.Position(line=0, character=0), end=end), new_text=new)
                actions.append(lsp.CodeAction(title="graphguard: fix all safe fixes", kind=FIX_ALL,
                                              edit=self._workspace_edit(uri, lint.version, [edit])))
        return actions

    def _fix_all(self, lint: _Lint) -> str | None:
        """The document's text with every safe fix applied and checked (``check --fix``'s passes), or
        None when a fix failed its checks or an internal error happened (logged)."""
        from graphguard.fix.apply import fix_text

        project = lint.project
        sources = self._open_sources(project, skip="")

        def relint(text: str) -> list:
            findings, _ = project.lint(lint.path, {**sources, lint.path: encode_text(text)})
            return findings

        try:
            result = fix_text(lint.path, lint.text, relint, unsafe=False, first=lint.findings)
        except Exception as error:
            self.log(f"graphguard: internal error while fixing {lint.path}: {error!r}", lsp.MessageType.Error)
            return None
        if result.note:
            self.log(f"graphguard: {lint.path}: {result.note}", lsp.MessageType.Info)
        return result.fixed

    def _workspace_edit(self, uri: str, version: int | None, edits: list) -> lsp.WorkspaceEdit:
        capabilities = self.client_capabilities
        versioned = bool(capabilities and capabilities.workspace and capabilities.workspace.workspace_edit
                         and capabilities.workspace.workspace_edit.document_changes)
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


def _read_options(options, warnings: list) -> dict:
    """The valid ``initializationOptions``: ``debounce`` in seconds (from ``debounce``, else
    ``debounceMs``), ``scope``, and ``unknown``, the keys graphguard does not know. A bad value gets a
    warning in ``warnings`` naming the option, the value and what is accepted, and the default is used."""
    import json

    def shown(value) -> str:
        try:
            return json.dumps(value)
        except (TypeError, ValueError):
            return repr(value)

    def number(value) -> bool:
        return isinstance(value, (int, float)) and not isinstance(value, bool) and value >= 0 and value != float("inf")

    if options is None:
        return {}
    if not isinstance(options, dict):
        warnings.append(f"graphguard: initializationOptions is {shown(options)}; it takes an object with the keys "
                        f"debounce and scope (see docs/editor.md); using the defaults")
        return {}
    read: dict = {"unknown": [key for key in options if key not in ("debounce", "debounceMs", "scope")]}
    if "debounce" in options:
        if number(options["debounce"]):
            read["debounce"] = float(options["debounce"])
        else:
            warnings.append(f"graphguard: initializationOptions.debounce is {shown(options['debounce'])}; it takes a "
                            f"number of seconds, 0 or more (default {DEFAULT_DEBOUNCE}); using the default")
    elif "debounceMs" in options:
        if number(options["debounceMs"]):
            read["debounce"] = options["debounceMs"] / 1000
        else:
            warnings.append(f"graphguard: initializationOptions.debounceMs is {shown(options['debounceMs'])}; it takes "
                            f"a number of milliseconds, 0 or more (default {DEFAULT_DEBOUNCE * 1000:.0f}); using the "
                            f"default")
    if "scope" in options:
        if options["scope"] in SCOPES:
            read["scope"] = options["scope"]
        else:
            accepted = ", ".join(f'"{scope}"' for scope in SCOPES[:-1]) + f' or "{SCOPES[-1]}"'
            warnings.append(f"graphguard: initializationOptions.scope is {shown(options['scope'])}; it takes "
                            f'{accepted} (default "auto"); using the default')
    return read


def _root_of(params: lsp.InitializeParams) -> str | None:
    """The workspace root: the first workspace folder, else ``rootUri``, else ``rootPath``."""
    for uri in [f.uri for f in (params.workspace_folders or [])] + [params.root_uri]:
        if uri and uri.startswith("file:"):
            path = to_fs_path(uri)
            if path and os.path.isdir(path):
                return os.path.normpath(path)
    if params.root_path and os.path.isdir(params.root_path):
        return os.path.normpath(params.root_path)
    return None


def build_server() -> GraphguardServer:
    """The server with its features registered (not started)."""
    server = GraphguardServer()

    @server.feature(lsp.INITIALIZE)
    def initialize(ls: GraphguardServer, params: lsp.InitializeParams) -> None:
        ls.loop = asyncio.get_running_loop()
        install_workspace(ls.protocol, lambda message: ls.log(message, lsp.MessageType.Warning))
        options = _read_options(params.initialization_options, ls.warnings)
        if "debounce" in options:
            ls.debounce = options["debounce"]
        for unknown in sorted(set(options.get("unknown", ()))):
            ls.log(f"graphguard: initializationOptions.{unknown} is not a graphguard option (ignored); the "
                   f"options are debounce, debounceMs and scope", lsp.MessageType.Warning)
        ls.project = Project(_root_of(params), ls.log, options.get("scope", "auto"))

    @server.feature(lsp.EXIT)
    def on_exit(ls: GraphguardServer, params) -> None:
        ls.exit_code = 0 if getattr(ls.protocol, "_shutdown", False) else 1
        ls.protocol.exited = True  # pygls closes stdout next: a reply still being computed is dropped

    @server.feature(lsp.INITIALIZED)
    def initialized(ls: GraphguardServer, params) -> None:
        project = ls.project
        where = project.root if project and project.root else "no workspace folder: documents are checked alone"
        config = project.config.path if project and project.config.path else "defaults"
        if project and project.error:
            config = "invalid (see the error above)"
            ls.window_show_message(lsp.ShowMessageParams(type=lsp.MessageType.Error, message=project.error))
        for warning in ls.warnings:
            ls.log(warning, lsp.MessageType.Warning)
            ls.window_show_message(lsp.ShowMessageParams(type=lsp.MessageType.Warning, message=warning))
        ls.log(f"graphguard {__version__} server: root {where}; configuration {config}; debounce "
               f"{ls.debounce * 1000:.0f} ms", lsp.MessageType.Info)

    @server.feature(lsp.TEXT_DOCUMENT_DID_OPEN)
    def did_open(ls: GraphguardServer, params: lsp.DidOpenTextDocumentParams) -> None:
        if ls.project:
            ls.project.files = None  # a new file may have appeared
        # A short pause, so that the files an editor opens at once (a session restored, 50 tabs) are all
        # read before the first lint, which then covers them all: one project lint, not one per file.
        ls.schedule(params.text_document.uri, min(ls.debounce, OPEN_PAUSE), typing=False)

    @server.feature(lsp.TEXT_DOCUMENT_DID_CHANGE)
    def did_change(ls: GraphguardServer, params: lsp.DidChangeTextDocumentParams) -> None:
        ls.schedule(params.text_document.uri, ls.debounce)

    @server.feature(lsp.TEXT_DOCUMENT_DID_SAVE)
    def did_save(ls: GraphguardServer, params: lsp.DidSaveTextDocumentParams) -> None:
        if ls.project:
            ls.project.files = None
        ls.schedule(params.text_document.uri, 0)

    def forget(ls: GraphguardServer, uri: str, shown_uris: list[str]) -> None:
        """A document (or notebook) closed: no pending lint, no results kept, its diagnostics cleared."""
        task = ls.pending.pop(uri, None)
        if task is not None:
            task.cancel()
        ls.latest.pop(uri, None)
        ls.covered.pop(uri, None)
        ls.lints.pop(uri, None)
        ls.cells.pop(uri, None)
        for shown in shown_uris:
            ls.shown.pop(shown, None)
            ls.text_document_publish_diagnostics(lsp.PublishDiagnosticsParams(uri=shown, diagnostics=[]))

    @server.feature(lsp.TEXT_DOCUMENT_DID_CLOSE)
    def did_close(ls: GraphguardServer, params: lsp.DidCloseTextDocumentParams) -> None:
        forget(ls, params.text_document.uri, [params.text_document.uri])

    @server.feature(lsp.NOTEBOOK_DOCUMENT_DID_OPEN)
    def notebook_open(ls: GraphguardServer, params: lsp.DidOpenNotebookDocumentParams) -> None:
        uri = params.notebook_document.uri
        ls.cells[uri] = [cell.document for cell in params.notebook_document.cells]
        ls.schedule(uri, 0)

    @server.feature(lsp.NOTEBOOK_DOCUMENT_DID_CHANGE)
    def notebook_change(ls: GraphguardServer, params: lsp.DidChangeNotebookDocumentParams) -> None:
        uri = params.notebook_document.uri
        notebook = ls.workspace.get_notebook_document(notebook_uri=uri)
        if notebook is None:
            return  # not open: logged by the workspace
        # A deleted cell's diagnostics are cleared now: a lint publishes only on the cells that are left.
        cells = [cell.document for cell in notebook.cells]
        kept = set(cells)
        for cell in ls.cells.get(uri, []):
            if cell not in kept:
                ls.shown.pop(cell, None)
                ls.text_document_publish_diagnostics(lsp.PublishDiagnosticsParams(uri=cell, diagnostics=[]))
        ls.cells[uri] = cells
        ls.schedule(uri, ls.debounce)

    @server.feature(lsp.NOTEBOOK_DOCUMENT_DID_SAVE)
    def notebook_save(ls: GraphguardServer, params: lsp.DidSaveNotebookDocumentParams) -> None:
        ls.schedule(params.notebook_document.uri, 0)

    @server.feature(lsp.NOTEBOOK_DOCUMENT_DID_CLOSE)
    def notebook_close(ls: GraphguardServer, params: lsp.DidCloseNotebookDocumentParams) -> None:
        # Also cancels a pending lint of the notebook (it could publish on the closed cells).
        uri = params.notebook_document.uri
        closed = [cell.uri for cell in params.cell_text_documents]
        forget(ls, uri, closed + [cell for cell in ls.cells.get(uri, []) if cell not in closed])

    @server.feature(lsp.TEXT_DOCUMENT_CODE_ACTION, lsp.CodeActionOptions(
        code_action_kinds=[lsp.CodeActionKind.QuickFix, FIX_ALL], resolve_provider=False))
    @server.thread()
    def code_action(ls: GraphguardServer, params: lsp.CodeActionParams):
        try:
            return ls.code_actions(params) or None
        except Exception as error:
            ls.log(f"graphguard: internal error in code actions: {error!r}", lsp.MessageType.Error)
            return None

    return server


def _log_pygls_to(server: GraphguardServer) -> None:
    """Send what pygls logs (a message it cannot read, a method it does not know) to the client's log
    as one line each, not to stderr: pygls 2.1 printed a page of chained tracebacks there for a
    position with ``"line": -1``. Warnings and errors only; the traceback is left out."""
    import logging

    class ToClient(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            try:
                lines = record.getMessage().strip().splitlines() or [""]
                text = " ".join(lines[0].split())  # pygls puts a traceback below its first line
                if text.startswith("Unable to deserialize message"):
                    return  # wire.Protocol says which message and why (and answers a request -32602)
                server.log(f"graphguard: {text}", lsp.MessageType.Warning)
            except Exception:  # a log line must never end the server
                pass

    logger = logging.getLogger("pygls")
    logger.handlers[:] = [ToClient(logging.WARNING)]
    logger.propagate = False


def serve(server: GraphguardServer | None = None) -> int:
    """Run ``server`` (default: :func:`build_server`'s) on stdin/stdout until the client sends ``exit``
    or closes stdin, then end the process at once with the exit status LSP asks for: 0 after
    ``shutdown``, 1 without it (and when stdin closes without ``exit``). A lint or request still
    running is abandoned, not waited for (the cache is written atomically, so none is half-written),
    and nothing is written to stderr. Never returns; the return type is the command line's."""
    import sys

    server = server or build_server()
    _log_pygls_to(server)
    status = 1
    try:
        server.start_io(stdin=BoundedInput(sys.stdin.buffer, lambda message: server.log(message,
                                                                                       lsp.MessageType.Warning)))
        status = server.exit_code
    finally:
        # pygls 2.1 joins its thread pool on the way out and Python joins every pool thread at exit: a
        # request in flight kept the process alive until it ended, then wrote its reply to the closed
        # stdout (thousands of chained tracebacks on stderr).
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except (OSError, ValueError):
                pass
        os._exit(status)
