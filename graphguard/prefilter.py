"""The prefilter: which files of a run can take part in a finding, read with byte searches, not parsed.

A file takes part only through its own imports: it must name TensorFlow or Keras, run something, make an
object of a class named like a model, or import a module of the checked tree (:func:`relevant`,
:func:`imported_names`); the others are skipped unparsed (the cost model in :mod:`graphguard.checker`).
After the files are read, :func:`skipped_drivers` names the skipped ones that a module read hands a
function or class of the project to: a search driver that runs the trials it is handed.
"""

from __future__ import annotations

import os
import re

#: Byte patterns that keep a file (see the module docstring).
#: GG001 (cannot parse) is reported only for files that mention TensorFlow or Keras: a Python 2 script
#: or a template named on the command line is not graphguard's to judge.
MENTIONS_TF = re.compile(rb"tensorflow|keras")
#: A file that holds none of these cannot take part in a finding (``.predict(``: a helper that runs
#: Keras' predict on a model it is handed, GG303, imports nothing), unless it imports a module of the
#: checked tree (:func:`imported_names`).
RELEVANT = (b"tensorflow", b"keras", b".run(", b".eval(", b".predict(", b"partial_run", b"make_callable", b"sess",
            b"Net(", b"Network(", b"Model(", b"Solver(")
#: Blanks or a line continuation between the tokens of a call (``s.run (x)``, ``model.\\`` then
#: ``predict(x)``, ``TwoLayerNet (...)``): the same calls as RELEVANT's, however spaced.
_BLANK = rb"(?:\s|\\)*"
_SPACED_CALLS = re.compile(rb"\." + _BLANK + rb"(?:run|eval|predict)" + _BLANK + rb"\(|(?:Net|Network|Model|Solver)"
                           + _BLANK + rb"\(")
_SPACED_WORDS = (b"run", b"eval", b"predict", b"Net", b"Model", b"Solver")


def relevant(source: bytes) -> bool:
    """Whether ``source`` holds one of :data:`RELEVANT`, as written or with blanks or a line
    continuation between its tokens. A substring search each first (a regular expression of the same
    alternatives scanned 52 MB four times slower, byte by byte); the spaced forms are looked for only
    in a file that holds none of them."""
    for word in RELEVANT:
        if word in source:
            return True
    return any(word in source for word in _SPACED_WORDS) and _SPACED_CALLS.search(source) is not None


#: ``import a.b, c as d`` and ``from .a import b`` anywhere in a line (after ``;``, ``if x:``, a form
#: feed, a byte-order mark), with blanks and line continuations between their words: a superset is
#: harmless (a file kept is only parsed), a miss loses findings.
_SEPARATOR = rb"(?:[ \t\f]|\\\r?\n|\\\r)"
_IMPORTS = re.compile(rb"(?<![\w.])(?:from" + _SEPARATOR + rb"*(\.(?:[.\w]|" + _SEPARATOR + rb")*|[\w.]+)" + _SEPARATOR
                      + rb"*import(?!\w)|import" + _SEPARATOR + rb"+((?:[\w., \t\f]|\\\r?\n|\\\r)+))")
_SEPARATORS = re.compile(_SEPARATOR)


def imported_names(source: bytes):
    """The dotted module names that ``source``'s import statements name, as the prefilter finds them
    (``".a"`` for ``from .a import b``; words of other text that looks like an import too)."""
    for match in _IMPORTS.finditer(source):
        if match[1] is not None:
            yield _SEPARATORS.sub(b"", match[1]).decode("ascii", "replace")
        else:
            for part in _SEPARATORS.sub(b" ", match[2]).decode("ascii", "replace").split(","):
                words = part.split()
                if words:
                    yield words[0]


def _imports_project(source: bytes, project: frozenset) -> bool:
    """Whether ``source`` imports a module of the run (``project``: dotted names) or makes a relative
    import."""
    return any(name.startswith(".") or name in project for name in imported_names(source))


def skipped_drivers(results: dict, paths: list[str]) -> list[str]:
    """The files of ``paths`` the prefilter skipped (``results``: path -> :class:`FileResult`) that a
    module read calls with a function or class of the project as an argument (a callable handed to a
    driver: its loops may run it per trial); matched by module name, the last part of the dotted name
    imported. Reads no file."""
    skipped = [path for path in paths if results[path].facts is None and not results[path].diagnostics
               and results[path].error is None and not path.endswith(".ipynb")]
    if not skipped:
        return []
    from graphguard.analysis.bindings import ProjectRef

    called = set()
    for result in results.values():
        if result.facts is None:
            continue
        for facts in result.facts.functions.values():
            for call in facts.calls:
                if call.ref.module and call.values and any(value.__class__ is ProjectRef for _, value in call.values):
                    called.add(call.ref.module.rpartition(".")[2])
    if not called:
        return []
    found = []
    for path in skipped:
        folder, _, name = path.rpartition(os.sep)
        stem = name[:-3] if name.endswith(".py") else name
        if stem == "__init__":
            stem = folder.rpartition(os.sep)[2]
        if stem in called:
            found.append(path)
    return found
