"""Apply fixes to one file, pass after pass, and check the result before anything is written.

As ruff does, fixes are applied in passes: lint, take every applicable fix that does not overlap an
earlier one, apply, lint again; a statement that depended on a moved one becomes movable in the next
pass (the demo's model, then its losses, then its train op). Passes stop when no fix applies, or after
:data:`MAX_PASSES`. The result is kept only if it passes every check:

1. it parses and compiles (:func:`compile`);
2. re-linted, it has fewer findings than the original, and no finding that the original did not have
   (a fix must not create a problem elsewhere);
3. proposing fixes on it again applies nothing (the fix is idempotent);

otherwise the file is left as it was and the findings stay, with a note saying which check failed.
Writing goes through :func:`graphguard.suppressions.write_keeping` (atomic, owner, mode, hard links,
encoding and line endings kept), as ``--add-noqa`` does.
"""

from __future__ import annotations

import difflib
import io
import re
import tokenize
from dataclasses import dataclass, field
from typing import Callable

from graphguard.fix import propose_fixes
from graphguard.fix.edits import SAFE, apply, line_starts
from graphguard.fix.source import compile_problem

#: Passes at most; ruff stops at 100. Each pass moves at least one statement.
MAX_PASSES = 50


@dataclass
class FileFix:
    """What fixing one file gave.

    Attributes:
        path: the file.
        original: its text before; ``fixed``: after (equal when nothing was fixed).
        applied: the fixes applied, in order (one per fixed finding).
        remaining: the findings of ``fixed`` (after a successful fix) or of ``original``.
        note: why nothing was written although fixes were proposed (a failed check), or ``""``.
        hidden: findings whose only fix is unsafe, not applied without ``--unsafe-fixes``.
    """

    path: str
    original: str
    fixed: str
    applied: list = field(default_factory=list)
    remaining: list = field(default_factory=list)
    note: str = ""
    hidden: int = 0
    remaining_before: list = field(default_factory=list)  #: the findings of ``original``

    def diff(self, encoding: str = "utf-8", bom: bool = False, mtime: float | None = None) -> bytes:
        """A unified diff from the original to the fixed text (``b""`` when unchanged), as ``diff -u``
        writes it, so that ``patch`` and ``git apply`` give exactly the fixed file: lines end at
        ``\\n`` only, as for ``patch`` (a ``\\r`` stays inside a line: CR-only and mixed line endings
        apply), changed lines in the file's own ``encoding`` with its byte-order mark (``bom``), and a
        last line without a newline followed by ``\\ No newline at end of file``."""
        mark = "\ufeff" if bom else ""
        # `diff -u` ends each file name with a tab and a time: patch then reads a name with spaces whole.
        # Not the epoch: git apply takes an epoch time for a file that does not exist.
        import time as _time

        stamp = _time.strftime("%Y-%m-%d %H:%M:%S.000000000 +0000", _time.gmtime(mtime))
        lines = difflib.unified_diff(_patch_lines(mark + self.original), _patch_lines(mark + self.fixed),
                                     fromfile=self.path, tofile=self.path, fromfiledate=stamp, tofiledate=stamp)
        text = "".join(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n" for line in lines)
        return text.encode(encoding, "surrogateescape")


def _patch_lines(text: str) -> list[str]:
    """``text`` split after each ``\\n``, the way ``diff`` and ``patch`` count lines."""
    lines = text.split("\n")
    return [line + "\n" for line in lines[:-1]] + ([lines[-1]] if lines[-1] else [])


def _key(d) -> tuple:
    """What a finding is about, wherever it is: its code and its subject (the first `...` of its
    message), not its line, which a fix moves."""
    match = re.search(r"`[^`]*`", d.message)
    return (d.code, match[0] if match else d.message)


def _site(text: str, d, starts: list | None = None) -> tuple:
    """A finding's identity in one version of the text: its code and the source of its expression."""
    from graphguard.fix.edits import line_starts, offset

    starts = line_starts(text) if starts is None else starts
    try:
        return (d.code, text[offset(starts, d.row, d.column): offset(starts, d.end_row, d.end_column)])
    except ValueError:
        return (d.code, d.row)


def fix_text(path: str, text: str, lint: Callable[[str], list], unsafe: bool, first: list | None = None) -> FileFix:
    """Fix ``text`` (the file ``path``) with the fixes :func:`propose_fixes` proposes for the findings
    ``lint(text)`` returns (in the project's context, suppressions applied); ``first``: those findings
    when the caller has them already. ``unsafe`` also applies unsafe fixes.

    Each pass applies every usable fix, then checks the result: it compiles, and re-linted it has no
    finding of a kind the original did not have. When a pass fails, each of its fixes is tried alone;
    those that fail alone are dropped (with a note) and the pass is made again without them, so one bad
    fix does not cost the file its other fixes. Never raises for a fix that fails a check."""
    first = lint(text) if first is None else first
    result = FileFix(path, text, text, remaining=first)
    known = {_key(d) for d in first}
    current, findings, applied, rejected, notes = text, first, [], set(), []
    for _ in range(MAX_PASSES):
        proposals = propose_fixes(current, findings)
        if not applied:
            result.hidden = sum(1 for fix in proposals.values() if fix.applicability != SAFE) if not unsafe else 0
        starts = line_starts(current)
        usable = [(d, fix) for d, fix in sorted(proposals.items(), key=lambda item: (item[0].row, item[0].column))
                  if (unsafe or fix.applicability == SAFE) and (not rejected or _site(current, d, starts) not in rejected)]
        if not usable:
            break
        new, used, after, problem = _attempt(current, [fix for _, fix in usable], path, lint, known)
        if problem is not None:
            for d, fix in usable:  # find the fixes that fail alone
                _, _, _, alone = _attempt(current, [fix], path, lint, known)
                if alone is not None:
                    rejected.add(_site(current, d))
                    notes.append(f"{d.code} at line {d.row}: {alone}")
            continue
        current, findings = new, after
        applied.extend(used)
    else:
        result.note = f"fixes still applied after {MAX_PASSES} passes; left unchanged"
        return result
    result.note = "; ".join(f"fix dropped for {note}" for note in notes)
    if not applied:
        return result
    if len(findings) >= len(first):
        result.note = "the fixed file failed the re-lint check (it would not remove a finding); left unchanged"
        return result
    result.fixed, result.applied, result.remaining_before, result.remaining = current, applied, first, findings
    return result


def _attempt(text: str, fixes: list, path: str, lint: Callable[[str], list], known: set):
    """Apply ``fixes`` to ``text`` and check the result: (new text, fixes applied, its findings,
    None) or (..., a one-line problem: it does not compile, or it has a finding of a new kind)."""
    new, used = apply(text, fixes)
    problem = compile_problem(new, path)
    if problem is not None:
        return new, used, [], f"it would not compile ({problem})"
    after = lint(new)
    added = sorted({_key(d) for d in after} - known)
    if added:
        return new, used, after, f"it would add {added[0][0]} ({added[0][1]})"
    return new, used, after, None


def file_bytes(filename: str, sources: dict | None) -> bytes:
    """The bytes a run checked for ``filename``: stdin's, or the regular file's (already read once
    within the run's size limit). Raises ``OSError`` as :func:`graphguard.reading.read_regular` does."""
    from graphguard.reading import read_regular

    return sources[filename] if sources and filename in sources else read_regular(filename, limit=1 << 31)


def encoding_of(source: bytes) -> str:
    """The encoding ``source`` declares (its coding cookie or byte-order mark), UTF-8 by default."""
    encoding, _ = tokenize.detect_encoding(io.BytesIO(source).readline)
    return "utf-8" if encoding == "utf-8-sig" else encoding


def encode_like(original: bytes, text: str) -> bytes:
    """``text`` encoded as ``original`` was (its coding cookie or byte-order mark kept)."""
    encoding, _ = tokenize.detect_encoding(io.BytesIO(original).readline)
    return text.encode(encoding)


def decode(source: bytes) -> str:
    """A file's bytes as text, honouring its coding cookie and byte-order mark; keeps ``\\r\\n``."""
    encoding, _ = tokenize.detect_encoding(io.BytesIO(source).readline)
    return source.decode(encoding)
