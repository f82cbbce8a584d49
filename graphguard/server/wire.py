"""What pygls keeps for ``graphguard server``, made to hold through a day of typing: the JSON-RPC
stream read in bounded frames (:class:`BoundedInput`), the protocol's answers and bookkeeping
(:class:`Protocol`), and the open documents, edited in time proportional to the edit
(:class:`Document`) in a workspace that logs a client's ordering mistakes instead of raising
(:class:`Workspace`).

Each class works around a named behaviour of pygls 2.1 at the narrowest point it can; the handlers,
scheduling and diagnostics are :mod:`graphguard.server.protocol`'s.
"""

from __future__ import annotations

import itertools
import re
from urllib.parse import unquote

from pygls.exceptions import JsonRpcInternalError, JsonRpcInvalidParams
from pygls.protocol import LanguageServerProtocol
from pygls.workspace import TextDocument
from pygls.workspace import Workspace as _PyglsWorkspace

#: The largest JSON-RPC message body the server reads, in bytes (128 MiB: a 20 MB document opened
#: whole, JSON-escaped, fits several times). A larger ``Content-Length`` is refused with one log line.
MAX_MESSAGE_BYTES = 128 * 1024 * 1024
#: The longest header line read at once, in bytes; a longer line is read (and skipped) in pieces.
MAX_HEADER_LINE = 64 * 1024
_HEADER_AT_END = re.compile(rb"Content-Length: (\d+)\r\n\Z")
#: A ``Content-Length`` header line as pygls 2.1 reads it (exactly so spelled).
_CONTENT_LENGTH = re.compile(rb"Content-Length: (\d+)\r\n")
#: A line with its ending, as LSP counts lines (``\n``, ``\r\n``, ``\r`` only).
_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+\Z")
#: What ``str.splitlines`` breaks at beside ``\n``, ``\r\n`` and ``\r``, and LSP does not.
_OTHER_BREAKS = "\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"
_GENERATIONS = itertools.count(1)


def split_lines(text: str) -> list[str]:
    """``text``'s lines with their endings, split as LSP 3.17 counts lines (``\\n``, ``\\r\\n``, ``\\r``
    only); an empty text has no lines. Time proportional to ``len(text)``."""
    if not any(other in text for other in _OTHER_BREAKS):
        return text.splitlines(True)  # the same lines, three times faster than the expression
    return _LINE.findall(text)


class BoundedInput:
    """The server's standard input (a binary stream) for pygls's reader, with every read bounded and
    every framing fault ending in one line to ``log(message)`` instead of an error or a silent hang.
    pygls 2.1 read any ``Content-Length`` at once (``Content-Length: 99999999999`` ended the server with
    a MemoryError), read every line after headers without a ``Content-Length`` as more headers (every
    later message lost, silently), and handed a body cut short by the end of the input to the JSON
    parser.

    Headers are read here, a whole block at a time, and pygls is handed one clean ``Content-Length``
    line and the blank line after it:

    * a body longer than ``limit`` bytes (default :data:`MAX_MESSAGE_BYTES`) is refused: its bytes
      are read and dropped as they arrive, a piece at a time (memory stays bounded whatever the client
      sends), and pygls gets the next message's body instead;
    * headers ending without a ``Content-Length``: the message is skipped up to the next line ending
      in a ``Content-Length`` header (the lost body has no line break of its own to stop at);
    * the end of the input inside headers or a body: pygls is told the input ended.

    A header line is read at most :data:`MAX_HEADER_LINE` bytes at a time. Reads raise what the stream
    raises (OSError)."""

    def __init__(self, stream, log, limit: int | None = None) -> None:
        self.stream = stream
        self.log = log
        self.limit = MAX_MESSAGE_BYTES if limit is None else limit
        self._pending: list[bytes] = []  # lines handed to pygls before anything more is read

    def readline(self) -> bytes:
        """The next header line for pygls: ``Content-Length: N`` of the next message, then the blank
        line ending its headers (``b""`` at the end of the input)."""
        if self._pending:
            return self._pending.pop()
        size = self._headers()
        if size is None:
            return b""
        self._pending = [b"\r\n"]
        return b"Content-Length: %d\r\n" % size

    def read(self, size: int) -> bytes:
        """The body of ``size`` bytes pygls asks for; for a refused size, the next message's body
        within the limit. ``b""`` at the end of the input (one log line when it cuts a message)."""
        while size > self.limit:
            self.log(f"graphguard: refused a message of {size} bytes (the limit is {self.limit} bytes); "
                     f"reading on from the next message")
            dropped = self._drop(size)
            if dropped < size:
                self.log(f"graphguard: the input ended {dropped} bytes into the refused message of {size} bytes")
                return b""
            size = self._headers()
            if size is None:
                return b""
        body = self.stream.read(size)
        if len(body) < size:
            self.log(f"graphguard: the input ended inside a message: {len(body)} of its {size} bytes arrived; "
                     f"it is dropped")
            return b""
        return body

    def _drop(self, size: int) -> int:
        """Read and forget ``size`` bytes, 64 KiB at a time; the number read (less at the end of the input)."""
        dropped = 0
        while dropped < size:
            piece = self.stream.read(min(size - dropped, 1 << 16))
            if not piece:
                break
            dropped += len(piece)
        return dropped

    def _headers(self) -> int | None:
        """The ``Content-Length`` of the next message, its headers read up to the blank line after them
        (blank lines before them skipped), or None at the end of the input. The first
        ``Content-Length`` counts, spelled as pygls reads it. Headers without one: one log line, and
        the message is skipped up to the next (:meth:`_next_header`)."""
        size, seen = None, False
        while True:
            line = self.stream.readline(MAX_HEADER_LINE)
            if not line:
                if seen:
                    self.log("graphguard: the input ended inside a message's headers")
                return None
            match = _CONTENT_LENGTH.fullmatch(line)
            if match and size is None:
                size = int(match[1])
            if line.strip():
                seen = True
                continue
            if not seen:
                continue  # a blank line between messages
            if size is not None:
                return size
            self.log("graphguard: skipped a message without a Content-Length header; reading on from the next "
                     "Content-Length")
            return self._next_header()

    def _next_header(self) -> int | None:
        """The ``Content-Length`` of the next message, its headers read up to the blank line after them,
        or None at the end of the input. A skipped body need not end with a line break, so the header
        is looked for at the end of each line read, after whatever precedes it."""
        size, tail = None, b""
        while True:
            line = self.stream.readline(MAX_HEADER_LINE)
            if not line:
                return None
            match = _HEADER_AT_END.search(tail + line)
            if match:
                size = int(match[1])
            elif size is not None and not line.strip():
                return size
            tail = line[-64:]  # a header cut by the end of a piece read


#: What :meth:`Protocol.structure_message` gives for a request it has already answered with an error.
_ANSWERED = object()


def _error(msg_id, code: int, message: str) -> dict:
    """A JSON-RPC 2.0 error response (``id`` null when the request's id could not be read)."""
    return {"jsonrpc": "2.0", "id": msg_id, "error": {"code": code, "message": message}}


def _id_of(message) -> int | str | None:
    """A message's id when JSON-RPC allows it (a number or a string), else None."""
    msg_id = message.get("id") if isinstance(message, dict) else getattr(message, "id", None)
    return msg_id if isinstance(msg_id, (int, str)) and not isinstance(msg_id, bool) else None


def _first_cause(error: BaseException) -> str:
    """The innermost plain error under ``error``'s causes and exception groups (cattrs nests a
    ``Position.line should be in range [0:2147483647], but was -1`` several groups deep), on one line."""
    seen = 0
    while seen < 50:
        seen += 1
        inner = getattr(error, "exceptions", None)
        if inner:
            error = inner[0]
        elif error.__cause__ is not None or error.__context__ is not None:
            error = error.__cause__ or error.__context__
        else:
            break
    return " ".join(str(error).split())[:200] or type(error).__name__


class Protocol(LanguageServerProtocol):
    """pygls's protocol, with the answers JSON-RPC 2.0 (section 5.1) and LSP 3.17 require where pygls 2.1
    only showed the client a message, or said nothing, and an editor waited for a response forever:

    * a request whose ``params`` do not have its method's shape: -32602 (invalid params);
    * a request without ``params`` (JSON-RPC allows it): read as ``params: null``, so an unknown
      method gets -32601 (method not found) as it does with params;
    * valid JSON that is not a JSON-RPC 2.0 request or notification (an array, a number, no
      ``"jsonrpc": "2.0"``, a ``method`` that is not a string): -32600 (invalid request), with the
      message's id when it is a number or a string, else null;
    * a request before ``initialize``: -32002 (server not initialized), and notifications then are
      dropped (``exit`` excepted); a request after ``shutdown``: -32600.

    A body that is not JSON gets -32700 (parse error) from ``GraphguardServer.report_server_error``.
    Notifications are never answered: one whose params do not have its method's shape is logged
    (``window/logMessage``, one line) and skipped, and so is a message with neither ``id`` nor
    ``method``.

    Two bookkeeping fixes: the future of every handler run is dropped from pygls's request-futures
    table once it is done (:meth:`_execute_handler`), and after ``exit`` nothing more is written
    (:attr:`exited`)."""

    _initialize_seen = False
    #: Set by the ``exit`` handler: stdout is closed, so any later reply or log is dropped.
    exited = False

    def _execute_handler(self, msg_id, handler, callback, args=None, kwargs=None):
        # pygls 2.1 puts the future of every generator, coroutine or thread handler it runs in
        # ``_request_futures`` under ``msg_id``; only a request's reply removes it. Its built-in
        # notification handlers (didOpen, didChange, didClose, didSave, the notebook events) are
        # generators run under a fresh uuid that nothing removes: about 1 KB kept per notification,
        # forever. Here every future leaves the table when it is done (a request's, as before).
        def done(future) -> None:
            if self._request_futures.get(msg_id) is future:
                del self._request_futures[msg_id]
            callback(future)

        super()._execute_handler(msg_id, handler, done, args, kwargs)

    def _send_data(self, data):
        if self.exited:
            return  # stdout is closed: a reply finishing after ``exit`` has no one to read it
        super()._send_data(data)

    def structure_message(self, data):
        if "jsonrpc" not in data:
            return data  # a nested object, or not a message (handle_message answers that)
        if "id" not in data and "method" not in data:
            # Not a request, a notification nor a response: pygls 2.1 read it as a notification of the
            # method "" and logged a puzzle. Nothing to answer (there is no id): one line in the log.
            log = getattr(getattr(self, "_server", None), "log", None)
            if log is not None:
                log(f"graphguard: ignored a message with neither id nor method (keys: {', '.join(map(str, data))!s:.80})")
            return _ANSWERED
        request = "id" in data and "method" in data
        if request and "params" not in data:
            data = {**data, "params": None}
        try:
            return super().structure_message(data)
        except (JsonRpcInvalidParams, JsonRpcInternalError) as error:
            if not request:
                # A notification is never answered: one line in the client's log, and it is skipped
                # (pygls 2.1 showed the client an error and printed tracebacks to stderr).
                log = getattr(getattr(self, "_server", None), "log", None)
                if log is not None:
                    log(f"graphguard: ignored {data.get('method')!s:.80}: its params do not have the shape LSP "
                        f"gives it ({_first_cause(error)})")
                return _ANSWERED
            if isinstance(error, JsonRpcInvalidParams) and isinstance(data["method"], str):
                self._send_data(_error(_id_of(data), -32602, f"invalid params for {data['method']}"))
            else:
                self._send_data(_error(_id_of(data), -32600, "invalid request"))
            return _ANSWERED

    def handle_message(self, message):
        if message is _ANSWERED:
            return
        method = getattr(message, "method", None)
        if getattr(message, "jsonrpc", None) != "2.0" or (method is not None and not isinstance(method, str)):
            if not (isinstance(message, dict) and "method" in message and "id" not in message):
                self._send_data(_error(_id_of(message), -32600,
                                       'invalid request: not a JSON-RPC 2.0 message ("jsonrpc": "2.0")'))
            return
        request = method is not None and hasattr(message, "id")
        if method == "initialize":
            self._initialize_seen = True
        elif not self._initialize_seen and method not in (None, "exit"):
            if request:
                self._send_data(_error(message.id, -32002, f"server not initialized: send initialize before {method}"))
            return
        if request and getattr(self, "_shutdown", False):
            self._send_data(_error(message.id, -32600, f"the server is shutting down: {method} after shutdown"))
            return
        super().handle_message(message)


class Document(TextDocument):
    """pygls's text document, kept as a list of lines so that an incremental edit costs time
    proportional to the lines it touches, not to the document: pygls 2.1 split the whole text and
    wrote it out again on every change (340 ms a keystroke in a 20 MB document, on the event loop).
    :attr:`source` is joined again only when it is read after an edit.

    Lines are split as LSP 3.17 counts them (:func:`split_lines`). pygls 2.1 splits with
    ``str.splitlines``, which also breaks at a form feed, ``\\x1c``-``\\x1e``, ``\\x85``, ``\\u2028``
    and ``\\u2029``: an edit below one was applied a line too high. :attr:`generation` is a number
    unique to this document's current text among all documents (a new one at each change)."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        # Split at didOpen, which reads the whole text anyway, rather than at the first keystroke.
        self._lines: list[str] | None = split_lines(self._source) if self._source is not None else None
        self.generation = next(_GENERATIONS)

    @property
    def source(self) -> str:
        if self._source is None and self._lines is not None:
            self._source = "".join(self._lines)
        return super().source

    @property
    def lines(self) -> tuple[str, ...]:
        return tuple(self._line_list())

    def _line_list(self) -> list[str]:
        if self._lines is None:
            self._lines = split_lines(self.source)
        return self._lines

    def apply_change(self, change) -> None:
        super().apply_change(change)
        self.generation = next(_GENERATIONS)

    def _apply_full_change(self, change) -> None:
        self._source, self._lines = change.text, None

    def _apply_incremental_change(self, change) -> None:
        lines = self._line_list()
        if not lines:
            self._source, self._lines = None, split_lines(change.text)
            return
        # pygls's own conversion of the range (client units, clamping past the end), on the list.
        span = self._position_codec.range_from_client_units(lines, change.range)
        start = (span.start.line, span.start.character)
        end = max(start, (span.end.line, span.end.character))
        # The edited lines and one on either side, split again: a "\r" before the edit and a "\n"
        # typed after it (or the reverse) make one line ending, not two.
        low, high = max(0, start[0] - 1), min(len(lines), end[0] + 2)
        before = "".join(lines[low:start[0]]) + lines[start[0]][:start[1]]
        after = lines[end[0]][end[1]:] + "".join(lines[end[0] + 1:high])
        lines[low:high] = split_lines(before + change.text + after)
        self._source = None


class Workspace(_PyglsWorkspace):
    """pygls's workspace holding :class:`Document` s, where a change the client sends out of order (to
    a document or notebook that is not open, or to a cell already deleted) is logged with
    ``log(message)`` and skipped, and the rest of the message is applied. pygls 2.1 raised a KeyError
    there, which the client showed as an error ("Error in server: KeyError"), and dropped the rest of
    a notebook's change."""

    def log(self, message: str) -> None:
        """Where ordering mistakes are written (the server sets it); by default nowhere."""

    def _create_text_document(self, doc_uri, source=None, version=None, language_id=None) -> Document:
        return Document(doc_uri, source=source, version=version, language_id=language_id,
                        sync_kind=self._sync_kind, position_codec=self._position_codec)

    def update_text_document(self, text_doc, change) -> None:
        if unquote(text_doc.uri) not in self._text_documents:
            if getattr(self, "_ignored", None) != (text_doc.uri, text_doc.version):  # once per message
                self._ignored = (text_doc.uri, text_doc.version)
                self.log(f"graphguard: ignored a change to {text_doc.uri} (version {text_doc.version}): it is "
                         f"not open (the client sent it before didOpen, after didClose or for a deleted cell)")
            return
        super().update_text_document(text_doc, change)

    def update_notebook_document(self, params) -> None:
        uri = params.notebook_document.uri
        if unquote(uri) not in self._notebook_documents:
            self.log(f"graphguard: ignored a change to the notebook {uri} (version "
                     f"{params.notebook_document.version}): it is not open")
            return
        super().update_notebook_document(params)


def install_workspace(protocol: LanguageServerProtocol, log) -> Workspace:
    """Make the workspace pygls made at ``initialize`` a :class:`Workspace` writing to ``log(message)``
    (pygls 2.1 builds its own ``Workspace`` inside its ``initialize`` handler, which takes no class);
    returns it. Call from the server's ``initialize`` handler, before any document is opened; before
    ``initialize`` pygls raises RuntimeError (no workspace yet)."""
    workspace = protocol.workspace
    workspace.__class__ = Workspace
    workspace.log = log
    return workspace
