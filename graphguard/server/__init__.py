"""``graphguard server``: a Language Server (LSP 3.17, JSON-RPC over stdio) built on pygls 2.

What it does, in an editor:

* **Diagnostics** for every open Python document, on open and save at once and on change after a
  pause in typing (``debounce``, 200 ms by default): severity Warning for the rules' findings (the
  program runs; it slows down and leaks), Error for ``GG001`` (the file cannot be parsed); ``source``
  ``"graphguard"``, ``code`` the rule code, the rule's name before its message, and the loop that
  repeats the construction as related information. ``# noqa`` comments and ``per-file-ignores`` are
  applied as ``graphguard check`` applies them (:func:`graphguard.lint.kept`).
* **Code actions**: a ``quickfix`` per finding that has a fix (:func:`graphguard.fix.propose_fixes`),
  and ``source.fixAll.graphguard``, every safe fix of the document applied pass after pass and
  checked as ``check --fix`` does (:func:`graphguard.fix.apply.fix_text`), sent as one whole-document
  edit. The server never writes a file except its cache: edits go to the client as WorkspaceEdits.
* **Project context**: the workspace root (the first workspace folder) is the folder ``graphguard
  check`` would be run in: its ``[tool.graphguard]`` configuration is read
  (:mod:`graphguard.config`), the project's files are those ``graphguard check .`` finds there
  (:func:`graphguard.discovery.find_python_files`), and each lint checks them all together, the open
  documents from their unsaved text and the others from the facts cache (``.graphguard_cache``,
  shared with ``graphguard check`` run from the root, kept in memory between lints): a helper in
  another file is followed as ``check`` follows it. A lint of the whole project also publishes again every other open
  document and notebook whose findings it changed (with that document's version, and only while
  every open document is as the lint read it). A notebook's JSON opened as a text document gets no
  diagnostics.
* **Notebooks** (LSP 3.17 notebook document sync): the code cells of an open notebook, in order, are
  one module, IPython syntax neutralised row for row as ``check`` does (:mod:`graphguard.notebook`);
  each finding is published on its cell's document. Code actions are not offered in notebooks.

Lints and code actions run in a child process (:mod:`graphguard.server.worker`), never on the event
loop nor in its process: the server sends the document's text and settings, one request at a time,
from one worker thread; a lint of a version no longer current is not sent, and its result is dropped
when the document changed meanwhile. A child that dies is started again and the server goes on. An
internal error is logged (``window/logMessage``) and the server goes on.

Positions: graphguard counts 1-based rows and columns in characters (code points) of the text;
LSP counts 0-based lines and, by default, UTF-16 code units (the encoding pygls negotiated with the
client, :attr:`pygls.workspace.Workspace.position_codec`, is used).
:func:`~graphguard.server.protocol.lsp_position` converts.

The package has four parts along its jobs: :mod:`graphguard.server.protocol` speaks LSP (the
server, its handlers and scheduling), :mod:`graphguard.server.worker` lints and computes code actions
in the child process (positions, diagnostics, notebook cells, fixes as edits),
:mod:`graphguard.server.wire` holds what pygls keeps for it, made to last a day of typing (bounded
message frames, the protocol's bookkeeping, documents edited line by line, ordering mistakes logged),
and :mod:`graphguard.server.project` knows the workspace (root, configuration, files, cache, the scope
of a lint and the import closure). Importing this package imports pygls; ``graphguard --version`` and
the other commands never import it.
"""

from graphguard.server.project import (  # noqa: F401
    PROJECT_BUDGET,
    SCOPES,
    Project,
    ProjectCache,
    encode_text,
    imported_modules,
)
from graphguard.server.protocol import (  # noqa: F401
    DEFAULT_DEBOUNCE,
    FIX_ALL,
    LOOP_NOTE,
    GraphguardServer,
    build_server,
    lsp_position,
    serve,
    split_rows,
    utf16_units,
)

# The names of the single module this package replaced.
_Project = Project
_Cache = ProjectCache
_encode = encode_text

__all__ = [
    "DEFAULT_DEBOUNCE", "FIX_ALL", "LOOP_NOTE", "PROJECT_BUDGET", "SCOPES", "GraphguardServer", "Project",
    "ProjectCache", "build_server", "encode_text", "imported_modules", "lsp_position", "serve", "split_rows",
    "utf16_units",
]
