"""The protocol side of ``graphguard server``: the pygls :class:`~pygls.lsp.server.LanguageServer`,
its handlers and scheduling (debounce, the worker thread that hands lints and code actions to the
child process, stale results dropped). The lints, code actions and LSP conversions (positions,
diagnostics, notebook cells) run in the child (:mod:`graphguard.server.worker`); what a lint checks,
and how, is the project side's (:mod:`graphguard.server.project`).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import dataclasses
import json
import os
import threading
import traceback
from urllib.parse import unquote, urlparse

from lsprotocol import types as lsp
from pygls.exceptions import JsonRpcException
from pygls.lsp.server import LanguageServer
from pygls.uris import to_fs_path

from graphguard import __version__
from graphguard.server.project import SCOPES, Project
from graphguard.server.wire import BoundedInput, Protocol, _error, install_workspace
from graphguard.server.worker import (  # noqa: F401  (the package's names, from before the child process)
    FIX_ALL,
    LOOP_NOTE,
    LintProcess,
    lsp_position,
    split_rows,
    utf16_units,
)

#: Default pause after the last change before a document is linted again, in seconds.
DEFAULT_DEBOUNCE = 0.2
#: Pause after a didOpen before its lint, in seconds (at most the debounce): files opened together are
#: linted together.
OPEN_PAUSE = 0.05
_LEVELS = {"error": lsp.MessageType.Error, "warning": lsp.MessageType.Warning, "info": lsp.MessageType.Info,
           "log": lsp.MessageType.Log}


@dataclasses.dataclass
class _Lint:
    """The last lint of one document: its version, text (for fixes), file name and reported findings."""

    version: int | None
    text: str
    path: str
    findings: list


@dataclasses.dataclass
class _Outcome:
    """A lint's result: ``target``, the publications of the document it was for; ``others``, for each
    other open document whose findings the lint covered, ``(URI, its publications, its _Lint or None
    for a notebook)``; ``used``, the version key of each other open document the lint read."""

    target: list
    others: list = dataclasses.field(default_factory=list)
    used: dict = dataclasses.field(default_factory=dict)


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
        # One worker thread, which sends the lints and code actions to the child process one at a time
        # and waits (the GIL free meanwhile); a lint of a stale version is skipped before it is sent.
        self.worker = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="graphguard-lint")
        self.lint_process: LintProcess | None = None  #: the child that lints (:mod:`graphguard.server.worker`)
        self.rescan = True  #: list the project's files again at the next lint (a file opened or saved)
        #: document URI -> (the _Lint its fix-all action was computed for, that action or None)
        self.fix_all_cache: dict[str, tuple] = {}
        self.fix_all_runs = 0  #: fix-all actions computed (what a test counts)
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
        if self.lint_process is not None:
            self.lint_process.close()

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
                self.fix_all_cache.pop(other, None)
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
        """On the worker thread: lint one snapshot in the child process (:mod:`graphguard.server.worker`),
        with the other open documents ``opened`` (see :meth:`_open_documents`) from their text; returns
        a :class:`_Outcome`, or None when the snapshot is stale or the lint failed. Never raises: an
        internal error is logged."""
        if self.latest.get(uri) != snapshot[0] or self.covered.get(uri) == snapshot[0]:
            return None  # stale, or linted with another document (its findings published with that one's)
        opened = opened or {}
        try:
            rescan, self.rescan = self.rescan, False
            answer = self._process().call("lint", uri, snapshot, opened, self._encoding(), rescan)
            if answer is None:
                self.rescan = self.rescan or rescan
                return None
            target, path, findings, others = answer
            outcome = _Outcome(target, used={other: key for other, (key, _) in opened.items()})
            self.fix_all_cache.pop(uri, None)
            if snapshot[1][0] == "text" and findings is not None:
                self.lints[uri] = _Lint(snapshot[1][2], snapshot[1][1], path, findings)
            else:
                self.lints.pop(uri, None)
            for other, publications, other_path, other_findings in others:
                what = opened[other][1]
                lint = _Lint(what[2], what[1], other_path, other_findings) if what[0] == "text" else None
                outcome.others.append((other, publications, lint))
                self.covered[other] = opened[other][0]
            return outcome
        except Exception as error:
            detail = traceback.format_exc(limit=8)
            self.log(f"graphguard: internal error while linting {uri}: {type(error).__name__}: {error} "
                     f"(please report this)\n{detail}", lsp.MessageType.Error)
            return None

    def _process(self) -> LintProcess:
        """The child process that lints (started at ``initialize``; here, without one, for no workspace)."""
        with self._project_lock:
            if self.lint_process is None:
                self.lint_process = LintProcess(None, "auto", self.log)
            return self.lint_process

    def _encoding(self) -> str:
        """The position encoding pygls negotiated with the client (``"utf-16"`` by default)."""
        return str(getattr(self.workspace.position_codec, "encoding", None) or lsp.PositionEncodingKind.Utf16)

    def _open_texts(self) -> dict:
        """The unsaved text of the open documents (not notebook cells) with a ``file:`` URI, by URI."""
        texts = {}
        for uri, document in list(self.workspace.text_documents.items()):
            if uri.startswith("file:") and not self.workspace.get_notebook_document(cell_uri=uri):
                texts[uri] = document.source
        return texts

    # ------------------------------------------------------------------ code actions

    def code_actions(self, params: lsp.CodeActionParams) -> list:
        """The quick fixes for the findings in ``params.range`` and the fix-all action, computed in the
        child process (proposing fixes parses the document with libcst); called on a pygls thread."""
        uri = params.text_document.uri
        lint = self.lints.get(uri)
        document = self.workspace.text_documents.get(unquote(uri))
        if lint is None or document is None or document.version != lint.version or document.source != lint.text:
            return []  # no lint of this text yet: no positions to trust
        only = params.context.only
        wants_quick = not only or any(k == lsp.CodeActionKind.QuickFix or str(k).startswith("quickfix") for k in only)
        wants_all = not only or any(FIX_ALL.startswith(str(k)) for k in only)
        if not any(d.loop_row is not None for d in lint.findings):
            return []  # nothing has a fix: the child is not asked
        # Fix-all relints the document pass after pass: computed once per lint of a version (an editor
        # asks for code actions at every move of the cursor), kept until the next lint or close.
        cached = self.fix_all_cache.get(uri)
        known = wants_all and cached is not None and cached[0] is lint
        capabilities = self.client_capabilities
        versioned = bool(capabilities and capabilities.workspace and capabilities.workspace.workspace_edit
                         and capabilities.workspace.workspace_edit.document_changes)
        actions: list = []
        if wants_quick or (wants_all and not known):
            request = (uri, (lint.version, lint.text, lint.path, lint.findings), params.range, wants_quick,
                       wants_all and not known, self._encoding(), versioned)
            answer = self.worker.submit(self._actions, request, wants_all and not known).result()
            if answer is None:
                return []  # the child died (logged)
            actions = answer
        if wants_all:
            if known:
                fix_all = cached[1]
                if fix_all is not None:
                    actions.append(fix_all)
            else:
                self.fix_all_cache[uri] = (lint, next((a for a in actions if a.kind == FIX_ALL), None))
        return actions

    def _actions(self, request: tuple, fix_all: bool) -> list | None:
        """On the worker thread: the child's code actions for ``request`` (see :meth:`code_actions`),
        None when the child died."""
        if fix_all:
            self.fix_all_runs += 1
        texts = self._open_texts() if fix_all else {}
        return self._process().call("actions", *request, texts)


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
        # The child imports the checker meanwhile (about a second); the first lint waits for it.
        ls.lint_process = LintProcess(ls.project.root, ls.project.scope, ls.log)
        ls.lint_process.start()

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
        ls.rescan = True  # a new file may have appeared
        # A short pause, so that the files an editor opens at once (a session restored, 50 tabs) are all
        # read before the first lint, which then covers them all: one project lint, not one per file.
        ls.schedule(params.text_document.uri, min(ls.debounce, OPEN_PAUSE), typing=False)

    @server.feature(lsp.TEXT_DOCUMENT_DID_CHANGE)
    def did_change(ls: GraphguardServer, params: lsp.DidChangeTextDocumentParams) -> None:
        ls.schedule(params.text_document.uri, ls.debounce)

    @server.feature(lsp.TEXT_DOCUMENT_DID_SAVE)
    def did_save(ls: GraphguardServer, params: lsp.DidSaveTextDocumentParams) -> None:
        ls.rescan = True
        ls.schedule(params.text_document.uri, 0)

    def forget(ls: GraphguardServer, uri: str, shown_uris: list[str]) -> None:
        """A document (or notebook) closed: no pending lint, no results kept, its diagnostics cleared."""
        task = ls.pending.pop(uri, None)
        if task is not None:
            task.cancel()
        ls.latest.pop(uri, None)
        ls.covered.pop(uri, None)
        ls.lints.pop(uri, None)
        ls.fix_all_cache.pop(uri, None)
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
