"""Suppression comments: ``# noqa``, ``# noqa: GG101, GG102``, ``# graphguard: ignore[GG101]``, and a
file-level ``# graphguard: noqa`` (optionally ``# graphguard: noqa: GG101``).

A line suppression applies to a finding when it stands on one of the lines of the reported
expression (the end of the statement's line), or alone on the line above it. Comments are found with
:mod:`tokenize`, so a ``#`` inside a string is never taken for one, and only files that contain
``noqa`` or ``graphguard:`` are tokenized.

``GG900 unused-suppression`` (off unless selected) reports codes in ``# noqa: GG...`` and
``# graphguard: ignore[...]`` that suppressed nothing. A bare ``# noqa`` is not reported: other tools
(flake8, ruff) share it.

:func:`add_noqa` writes ``# noqa: CODE`` onto the line of every current finding, atomically, so an old
repository can adopt graphguard with a clean baseline.
"""

from __future__ import annotations

import ast
import io
import os
import re
import tempfile
import tokenize
from dataclasses import dataclass, field

from graphguard.diagnostics import Diagnostic

_NOQA = re.compile(r"#\s*noqa(?::\s*(?P<codes>[A-Za-z]+\d+(?:\s*,\s*[A-Za-z]+\d+|\s+[A-Za-z]+\d+)*))?", re.I)
_IGNORE = re.compile(r"#\s*graphguard:\s*ignore\[(?P<codes>[^\]]*)\]", re.I)
_FILE = re.compile(r"^#\s*graphguard:\s*noqa(?::\s*(?P<codes>[A-Za-z0-9,\s]+))?\s*$", re.I)


def has_marker(source: bytes) -> bool:
    """Whether ``source`` (a file's bytes) may hold a suppression comment: ``noqa`` or ``graphguard:``
    in any case, as the comments are read. Checked on every file before anything is tokenized: a
    lowered copy searched twice costs a tenth of ``re.search(rb"noqa|graphguard:", re.I)``, whose
    case-folding alternation scans byte by byte (0.85 s of CPU on the public corpus's 52 MB)."""
    lowered = source.lower()
    return b"noqa" in lowered or b"graphguard:" in lowered


def _codes(text: str | None) -> frozenset | None:
    if not text:
        return None
    return frozenset(code.strip().upper() for code in re.split(r"[,\s]+", text) if code.strip())


@dataclass(eq=False)
class Suppression:
    """One comment: ``codes`` None means every code. ``alone`` is true for a comment on its own line."""

    row: int
    column: int
    codes: frozenset | None
    alone: bool
    used: set = field(default_factory=set)


@dataclass
class FileSuppressions:
    lines: dict = field(default_factory=dict)  #: row -> [Suppression]
    file_codes: frozenset | None = None  #: file-level: None = no file-level comment
    file_all: bool = False

    def suppressed(self, d: Diagnostic) -> bool:
        """Whether ``d`` is suppressed; marks the suppression used."""
        if self.file_all or (self.file_codes is not None and d.code in self.file_codes):
            return True
        rows = list(range(d.row, max(d.row, d.end_row) + 1))
        for row in rows:
            if self._apply(row, d.code, alone_only=False):
                return True
        return self._apply(d.row - 1, d.code, alone_only=True)

    def _apply(self, row: int, code: str, alone_only: bool) -> bool:
        for suppression in self.lines.get(row, ()):
            if alone_only and not suppression.alone:
                continue
            if suppression.codes is None or code in suppression.codes:
                suppression.used.add(code)
                return True
        return False

    def unused(self, path: str, selected: frozenset) -> list[Diagnostic]:
        """``GG900`` findings for selected ``GG`` codes named in comments that suppressed nothing."""
        found = []
        for suppressions in self.lines.values():
            for s in suppressions:
                if s.codes is None:
                    continue
                unused = sorted(c for c in s.codes if c.startswith("GG") and c in selected and c not in s.used)
                if unused:
                    found.append(Diagnostic(path, s.row, s.column, "GG900", "unused-suppression",
                                            f"unused suppression for {', '.join(unused)}", s.row, s.column))
        return found


def read_suppressions(source: bytes) -> FileSuppressions:
    """The suppression comments of a file's ``source`` bytes (empty when it has none)."""
    result = FileSuppressions()
    if not has_marker(source):
        return result
    try:
        tokens = list(tokenize.tokenize(io.BytesIO(_universal(source)).readline))
    except (tokenize.TokenError, SyntaxError, UnicodeDecodeError):
        return result
    previous_row = 0
    for token in tokens:
        if token.type in (tokenize.NL, tokenize.NEWLINE):
            continue
        if token.type == tokenize.COMMENT:
            row, column = token.start
            alone = previous_row != row
            text = token.string
            whole = _FILE.match(text)
            if whole and alone:
                codes = _codes(whole["codes"])
                if codes is None:
                    result.file_all = True
                else:
                    result.file_codes = (result.file_codes or frozenset()) | codes
                continue
            for pattern in (_NOQA, _IGNORE):
                for match in pattern.finditer(text):
                    result.lines.setdefault(row, []).append(
                        Suppression(row, column + 1 + match.start(), _codes(match["codes"]), alone)
                    )
        else:
            previous_row = token.end[0]
    return result


def add_noqa(path: str, diagnostics: list[Diagnostic]) -> tuple[int, list[int]]:
    """Suppress each of ``diagnostics`` (all in ``path``) with a ``# noqa: CODES`` comment.

    The comment goes at the end of the finding's line (its codes added after those of the line's
    existing ``# noqa: ...`` comment, which is otherwise kept as written; never text inside a string);
    where that line ends inside a multi-line string or with a backslash continuation, at the end of
    the first later line of the reported expression that can take it; failing that, alone on a new
    line above it. Lines are the tokenizer's (``\\n``,
    ``\\r\\n`` or ``\\r``; a form feed or U+2028 does not end one). The result must parse to the same
    syntax tree as before (comments only), or nothing is written. Nothing but the comments changes:
    encoding, line endings, a missing final newline, permissions and owner are kept. Writes atomically
    (a temporary file, then ``os.replace``) through symlinks, and in place for a file with hard links
    or one whose owner cannot be kept; refuses a read-only file. Returns (lines changed, rows that
    could not be suppressed safely). Raises ``ValueError`` (one line) when the file is left unchanged
    as a whole."""
    real, info, source = read_for_edit(path)
    encoding, _ = tokenize.detect_encoding(io.BytesIO(source).readline)
    new_text, changed, skipped = noqa_text(source.decode(encoding), source, diagnostics)
    if not changed:
        return 0, skipped
    write_keeping(real, info, new_text.encode(encoding))
    return changed, sorted(skipped)


def read_for_edit(path: str) -> tuple[str, os.stat_result, bytes]:
    """``(real path, its stat, its bytes)`` of a file about to be rewritten in place (through symlinks).
    Raises ``ValueError`` for a read-only file ("left unchanged"), ``OSError`` as ``open`` does."""
    real = os.path.realpath(path)
    info = os.stat(real)
    if not info.st_mode & 0o222:
        raise ValueError("the file is read-only; left unchanged")
    with open(real, "rb") as handle:
        return real, info, handle.read()


def noqa_text(text: str, source: bytes, diagnostics: list[Diagnostic], insert: bool = True) -> tuple[str, int, list[int]]:
    """:func:`add_noqa` on ``text`` (decoded from ``source``): ``(new text, lines changed, rows that
    could not be suppressed safely)``. ``insert=False``: never a comment on a new line of its own
    (every row keeps its number; such rows are skipped). Raises ``ValueError`` (one line) when the
    comments would change the code."""
    lines = _LINE.findall(text)
    if lines and lines[-1] == "":
        lines.pop()
    newline = next((line[len(line.rstrip("\r\n")):] for line in lines if line.endswith(("\n", "\r"))), "\n")
    ends_inside, starts_inside, comments = _string_rows(source)
    def takes_comment(row: int) -> bool:
        return 1 <= row <= len(lines) and row not in ends_inside and not lines[row - 1].rstrip("\r\n").endswith("\\")

    by_row: dict[int, set] = {}
    for d in diagnostics:
        # The first line of the reported expression that can end with a comment: a line inside a
        # multi-line string or continued with a backslash cannot, but a later line of the expression
        # can (a suppression on any of its lines applies), which keeps every line number.
        row = next((r for r in range(d.row, max(d.row, d.end_row) + 1) if takes_comment(r)), d.row)
        by_row.setdefault(row, set()).add(d.code)
    changed, skipped = 0, []
    for row, codes in sorted(by_row.items(), reverse=True):  # bottom up: inserted lines shift rows below
        if row < 1 or row > len(lines):
            continue
        line = lines[row - 1]
        body = line.rstrip("\r\n")
        ending = line[len(body):]
        if row not in ends_inside and not body.endswith("\\"):
            column = comments.get(row)
            match = _NOQA.search(body, column) if column is not None else None
            if match and match["codes"] is None:
                continue  # a bare noqa already suppresses everything
            if match:  # the comment as written, the new codes after its own
                new_codes = sorted(codes - _codes(match["codes"]))
                if not new_codes:
                    continue
                rest = body[match.end():]
                glue = " " if rest[:1] and not rest[:1].isspace() else ""  # `# noqa: GG999x`: keep the x apart
                body = body[: match.end()] + "".join(f", {code}" for code in new_codes) + glue + rest
            else:
                body = body + "  # noqa: " + ", ".join(sorted(codes))
            lines[row - 1] = body + ending
            changed += 1
        elif insert and row not in starts_inside and not (row > 1 and lines[row - 2].rstrip("\r\n").endswith("\\")):
            indent = body[: len(body) - len(body.lstrip())]
            lines.insert(row - 1, f"{indent}# noqa: {', '.join(sorted(codes))}{newline}")
            changed += 1
        else:
            skipped.append(row)
    if not changed:
        return text, 0, sorted(skipped)
    new_text = "".join(lines)
    try:
        same = ast.dump(ast.parse(new_text)) == ast.dump(ast.parse(text))
    except SyntaxError:
        same = False
    if not same:
        raise ValueError("adding the comments would change the code; left unchanged")
    return new_text, changed, sorted(skipped)


#: One physical line as the tokenizer and the compiler count them, with its ending.
_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n|$)")


def _universal(source: bytes) -> bytes:
    """``source`` with ``\\r\\n`` and lone ``\\r`` line endings as ``\\n``: rows then agree with
    :func:`ast.parse` (which accepts all three), while :mod:`tokenize` on 3.11 splits lines on ``\\n``
    only. Columns are unchanged."""
    return source.replace(b"\r\n", b"\n").replace(b"\r", b"\n") if b"\r" in source else source


def write_keeping(real: str, info: os.stat_result, data: bytes) -> None:
    """Replace the file ``real`` (stat ``info``) by ``data``, keeping its mode, owner and hard links."""
    if info.st_nlink == 1:
        handle, temporary = tempfile.mkstemp(prefix=".graphguard-", suffix=".py", dir=os.path.dirname(real))
        try:
            with os.fdopen(handle, "wb") as out:
                out.write(data)
            made = os.stat(temporary)
            if (made.st_uid, made.st_gid) != (info.st_uid, info.st_gid):
                os.chown(temporary, info.st_uid, info.st_gid)
            os.chmod(temporary, info.st_mode & 0o7777)  # after chown, which clears setuid and setgid
            os.replace(temporary, real)
            return
        except PermissionError:
            os.unlink(temporary)  # the owner cannot be kept: write in place below
        except BaseException:
            if os.path.exists(temporary):
                os.unlink(temporary)
            raise
    with open(real, "r+b") as out:
        out.write(data)
        out.truncate()


def _string_rows(source: bytes) -> tuple[set, set, dict]:
    """(rows whose end lies inside a string literal, rows that begin inside one, row -> column of the
    row's comment), from tokenize."""
    ends_inside, starts_inside, comments = set(), set(), {}
    try:
        for token in tokenize.tokenize(io.BytesIO(_universal(source)).readline):
            if token.type == tokenize.STRING or token.type == getattr(tokenize, "FSTRING_MIDDLE", -1):
                first, last = token.start[0], token.end[0]
                ends_inside.update(range(first, last))
                starts_inside.update(range(first + 1, last + 1))
            elif token.type == tokenize.COMMENT:
                comments[token.start[0]] = token.start[1]
    except (tokenize.TokenError, SyntaxError):
        pass
    return ends_inside, starts_inside, comments
