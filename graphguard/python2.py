"""Read Python 2 source: rewrite its statements into Python 3 syntax, keeping every row.

TF1-era code is often Python 2 (``print x``, ``except E, e:``). CPython 3's ``ast`` cannot parse it, so
without this such a file is one GG001 and its loops go unread. :func:`as_python3` is tried only after
``ast.parse`` has failed (files that parse cost nothing more). It scans the source once, skipping
strings and comments, and rewrites the Python 2 forms below; rows never change, and columns change only
after a rewritten form on its line (a finding inside ``print f(x)`` keeps its column):

| Python 2 | read as |
|---|---|
| ``print x, y`` / ``print >>f, x`` | ``print(x, y)`` / ``print(  f, x)`` |
| ``exec code in ns`` | ``exec(code in ns)`` |
| ``except E, e:`` | ``except E as e:`` |
| ``raise E, value`` | ``raise E(value)`` |
| `` `x` `` | ``(x)`` |
| ``a <> b`` | ``a != b`` |
| ``0777``, ``10L``, ``ur"..."`` | `` 777``, ``10 ``, `` r"..."`` |
| tabs in indentation | spaces to the next multiple of 8, as Python 2 counts them |

What the program computes is not kept (``print`` becomes a call, ``repr`` a parenthesis): the result is
read by the analysis and never written or run. Fixes are not offered on it.
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
import warnings

#: A string literal's start: an optional prefix, then the quotes (triple first).
_STRING_START = re.compile(r"""(?i)(?:[rubf]{1,2})?('''|\"\"\"|'|")""")
_NAME = re.compile(r"[A-Za-z_]\w*")
_NUMBER = re.compile(r"0[xXoObB][\da-fA-F_]+[lL]?|(?:\d[\d_]*(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?[jJlL]?")
_STATEMENT_KEYWORDS = {"print", "exec"}


def read_python2(source: bytes, filename: str = "<unknown>") -> tuple[ast.Module, bytes] | None:
    """The syntax tree of ``source`` read as Python 2, and the Python 3 text it was read from (UTF-8),
    or None when it is not Python 2 that this module can read (the caller reports its SyntaxError)."""
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(source).readline)
        text = source.decode(encoding)
    except (SyntaxError, LookupError, UnicodeDecodeError):
        return None
    rewritten = as_python3(text)
    if rewritten is None:
        return None
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            tree = ast.parse(rewritten, filename=filename)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    return tree, rewritten.encode("utf-8", "surrogatepass")


def as_python3(source: str) -> str | None:
    """``source`` rewritten from Python 2 into Python 3 syntax, rows kept, or None when nothing in it
    is Python 2 (so the caller's SyntaxError stands). Tabs in indentation are expanded only when the
    rewritten text still fails on them (Python 3 refuses an inconsistent mix that Python 2 took)."""
    rewritten = _Rewriter(source).run()
    candidate = source if rewritten is None else rewritten
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            compile(candidate, "<python2>", "exec", ast.PyCF_ONLY_AST)
        return rewritten
    except TabError:
        pass
    except (SyntaxError, ValueError):
        return rewritten
    except (RecursionError, MemoryError):  # nested too deeply to read, in either version
        return None
    lines = []
    for line in candidate.splitlines(keepends=True):
        stripped = line.lstrip(" \t\f")
        indent = line[: len(line) - len(stripped)]
        if "\t" in indent:
            column = 0
            for char in indent:
                column = (column // 8 + 1) * 8 if char == "\t" else column + 1
            line = " " * column + stripped
        lines.append(line)
    return "".join(lines)


class _Rewriter:
    """One pass over the source: code outside strings and comments, with bracket depth and where each
    simple statement starts (the start of a logical line, after ``;`` or after a compound header's ``:``)."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.out: list[str] = []
        self.changed = False
        self.depth = 0
        #: closings owed at the end of the current simple statement (``print x`` -> ``print(x``...``)``)
        self.pending = 0
        #: ``except`` / ``raise`` header awaiting its first top-level comma
        self.header: str | None = None
        #: inside a backtick repr
        self.tick = False
        #: open brackets: whether each is a tuple parameter's, written as spaces (``lambda (k, v): v``)
        self.erased: list[bool] = []
        #: the depth at which a ``def``'s or ``lambda``'s parameters stand, while they are read
        self.params_at: int | None = None
        self.def_next = False  # a ``def`` name was read: its ``(`` opens the parameters
        self.param_next = False  # the next token starts a parameter (``(a, b)`` there is a tuple parameter)

    def run(self) -> str | None:
        text, out, i, n = self.text, self.out, 0, len(self.text)
        at_start = True  # at the start of a simple statement
        while i < n:
            char = text[i]
            if char in " \t\f":
                out.append(char)
                i += 1
                continue
            if char == "\\" and text.startswith(("\\\n", "\\\r"), i):  # a continued line: one logical line
                end = i + (3 if text.startswith("\\\r\n", i) else 2)
                out.append(text[i:end])
                i = end
                continue
            if char in "\r\n":
                if self.depth == 0:
                    self._end_statement()
                    at_start = True
                out.append(char)
                i += 1
                continue
            if char == "#":
                end = _line_end(text, i)
                if self.depth == 0 and self.pending:
                    self._end_statement()
                out.append(text[i:end])
                i = end
                continue
            expect_param, self.param_next = self.param_next, False
            match = _STRING_START.match(text, i)
            if match and (match.start(1) == i or _NAME.match(text, i).end() == match.start(1)):
                end = _string_end(text, match.end(1), match.group(1))
                prefix = text[i:match.start(1)]
                if prefix.lower() in ("ur", "ru"):
                    prefix = " " + prefix.replace("u", "").replace("U", "")
                    self.changed = True
                out.append(prefix + text[match.start(1):end])
                i = end
                at_start = False
                continue
            if char.isdigit() or char == "." and text[i + 1:i + 2].isdigit():
                end = _NUMBER.match(text, i).end()
                out.append(self._number(text[i:end]))
                i = end
                at_start = False
                continue
            if char == "_" or char.isalpha():
                end = _NAME.match(text, i).end() if _NAME.match(text, i) else i + 1
                word = text[i:end]
                i = self._word(word, end, at_start)
                at_start = False
                continue
            if char == "`":
                out.append(")" if self.tick else "(")
                self.tick = not self.tick
                self.changed = True
                i += 1
                continue
            if text.startswith("<>", i):
                out.append("!=")
                self.changed = True
                i += 2
                continue
            if char in "([{":
                if char == "(" and self.def_next:
                    self.def_next, self.params_at, self.param_next = False, self.depth + 1, True
                    erase = False
                else:
                    # ``def f((a, b), c)``, ``lambda (k, v): v``: a tuple parameter's brackets become spaces
                    erase = char == "(" and ((self.params_at == self.depth and expect_param)
                                             or bool(self.erased and self.erased[-1]))
                self.erased.append(erase)
                self.depth += 1
                if erase:
                    out.append(" ")
                    self.changed = True
                    i += 1
                    continue
            elif char in ")]}" and self.depth:
                self.depth -= 1
                if self.params_at is not None and self.depth < self.params_at:
                    self.params_at = None  # the end of a ``def``'s parameters
                if self.erased and self.erased.pop():
                    out.append(" ")
                    i += 1
                    continue
            elif char == ";" and self.depth == 0:
                self._end_statement()
                out.append(char)
                i += 1
                at_start = True
                continue
            elif char == ":" and self.params_at == self.depth and not (self.erased and self.erased[-1]):
                self.params_at = None  # the end of a ``lambda``'s parameters
            elif char == ":" and self.depth == 0 and self.header == "except":
                self.header = None
            elif char == "," and self.params_at == self.depth:
                self.param_next = True
            elif char == "," and self.depth == 0 and self.header is not None:
                i = self._header_comma(i)
                continue
            out.append(char)
            i += 1
            # ``if x: print y``: a simple statement may follow a compound header's colon
            at_start = char == ":" and self.depth == 0 and not self.pending
        self._end_statement()
        return "".join(out) if self.changed else None

    def _word(self, word: str, end: int, at_start: bool) -> int:
        text, out = self.text, self.out
        if at_start and self.depth == 0 and word in _STATEMENT_KEYWORDS:
            rest = end
            while rest < len(text) and text[rest] in " \t":
                rest += 1
            follow = text[rest:rest + 2]
            bare = rest >= len(text) or text[rest] in "\r\n#;"
            # ``print(x)``, ``print = f``, ``print.x`` are Python 3 already; ``print x`` is not.
            if rest > end and not bare and follow[:1] not in "(=.,)]}" and not follow.startswith(("==",)):
                out.append(word + "(")
                self.changed = True
                self.pending += 1
                skip = rest
                if text.startswith(">>", rest):  # ``print >>f, x``: the stream becomes the first argument
                    out.append(" " * (rest - end - 1) + "  ")
                    skip = rest + 2
                else:
                    out.append(" " * (rest - end - 1))
                return skip
            out.append(word)
            return end
        if at_start and self.depth == 0 and word in ("except", "raise"):
            self.header = word
        if word == "def":
            self.def_next = True
        elif word == "lambda":
            self.params_at, self.param_next = self.depth, True
        elif word in ("async", "await"):
            rest = end
            while rest < len(text) and text[rest] in " \t":
                rest += 1
            if not (rest < len(text) and (text[rest].isalnum() or text[rest] in "_([")):
                # a name in Python 2 (``async = True``, ``f(async=1)``); not ``async def``, ``await f()``
                out.append(word[:4] + "_")
                self.changed = True
                return end
        out.append(word)
        return end

    def _header_comma(self, i: int) -> int:
        """The first top-level comma of ``except E, e:`` (-> `` as ``) or ``raise E, v`` (-> ``(``)."""
        if self.header == "except":
            self.out.append(" as")
            self.header = None
        else:
            self.out.append("(")
            self.pending += 1
            self.header = None
        self.changed = True
        return i + 1

    def _number(self, literal: str) -> str:
        if len(literal) > 1 and literal[0] == "0" and literal.isdigit() and literal.strip("0"):
            self.changed = True
            return " " + literal[1:]  # ``0777``: an octal literal
        if literal[-1] in "lL":
            self.changed = True
            return self._number(literal[:-1]) + " "  # ``10L``, ``0x1FL``: a long
        return literal

    def _end_statement(self) -> None:
        if self.pending:
            self.out.append(")" * self.pending)
            self.pending = 0
        self.header = None


def _line_end(text: str, i: int) -> int:
    while i < len(text) and text[i] not in "\r\n":
        i += 1
    return i


def _string_end(text: str, i: int, quote: str) -> int:
    """The index just past the string whose body starts at ``i`` (an unterminated one runs to the end
    of its line, or of the text for a triple-quoted one)."""
    n = len(text)
    while i < n:
        char = text[i]
        if char == "\\":
            i += 2
            continue
        if text.startswith(quote, i):
            return i + len(quote)
        if len(quote) == 1 and char in "\r\n":
            return i
        i += 1
    return n
