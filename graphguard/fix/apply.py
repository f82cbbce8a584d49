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
import tokenize
from dataclasses import dataclass, field
from typing import Callable

from graphguard.fix import propose_fixes
from graphguard.fix.edits import SAFE, apply

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

    def diff(self, encoding: str = "utf-8", bom: bool = False) -> bytes:
        """A unified diff from the original to the fixed text (``b""`` when unchanged), as ``diff -u``
        writes it, so that ``patch`` and ``git apply`` give exactly the fixed file: lines end at
        ``\\n`` only, as for ``patch`` (a ``\\r`` stays inside a line: CR-only and mixed line endings
        apply), changed lines in the file's own ``encoding`` with its byte-order mark (``bom``), and a
        last line without a newline followed by ``\\ No newline at end of file``."""
        mark = "\ufeff" if bom else ""
        lines = difflib.unified_diff(_patch_lines(mark + self.original), _patch_lines(mark + self.fixed),
                                     fromfile=self.path, tofile=self.path)
        text = "".join(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n" for line in lines)
        return text.encode(encoding, "surrogateescape")


def _patch_lines(text: str) -> list[str]:
    """``text`` split after each ``\\n``, the way ``diff`` and ``patch`` count lines."""
    lines = text.split("\n")
    return [line + "\n" for line in lines[:-1]] + ([lines[-1]] if lines[-1] else [])


def _key(d) -> tuple:
    return (d.code, d.message.split(" on every ", 1)[0])


def fix_text(path: str, text: str, lint: Callable[[str], list], unsafe: bool, first: list | None = None) -> FileFix:
    """Fix ``text`` (the file ``path``) with the fixes :func:`propose_fixes` proposes for the findings
    ``lint(text)`` returns (in the project's context, suppressions applied); ``first``: those findings
    when the caller has them already. ``unsafe`` also applies unsafe fixes. Never raises for a fix
    that fails a check: see :class:`FileFix`."""
    first = lint(text) if first is None else first
    result = FileFix(path, text, text, remaining=first)
    current, findings, applied = text, first, []
    for _ in range(MAX_PASSES):
        proposals = propose_fixes(current, findings)
        usable = [fix for d, fix in sorted(proposals.items(), key=lambda item: (item[0].row, item[0].column))
                  if unsafe or fix.applicability == SAFE]
        if not applied:
            result.hidden = sum(1 for fix in proposals.values() if fix.applicability != SAFE) if not unsafe else 0
        if not usable:
            break
        new, used = apply(current, usable)
        problem = _compile_problem(new, path)
        if problem is not None and len(used) > 1:  # try the first alone before giving up
            new, used = apply(current, usable[:1])
            problem = _compile_problem(new, path)
        if problem is not None:
            result.note = f"a fix would not compile ({problem}); left unchanged"
            return result
        current, findings = new, lint(new)
        applied.extend(used)
    else:
        result.note = f"fixes still applied after {MAX_PASSES} passes; left unchanged"
        return result
    if not applied:
        return result
    before, after = [_key(d) for d in first], [_key(d) for d in findings]
    new_kinds = set(after) - set(before)
    if len(after) >= len(before) or new_kinds:
        what = f"it would add {sorted(new_kinds)[0][0]}" if new_kinds else "it would not remove a finding"
        result.note = f"the fixed file failed the re-lint check ({what}); left unchanged"
        return result
    result.fixed, result.applied, result.remaining_before, result.remaining = current, applied, first, findings
    return result


def _compile_problem(text: str, path: str):
    try:
        compile(text, path, "exec", dont_inherit=True)
    except (SyntaxError, ValueError) as error:
        return getattr(error, "msg", None) or str(error)
    return None


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
