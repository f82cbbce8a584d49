"""Check files: read, prefilter, parse once, analyse once, report through the selected rules.

Cost model (the linter is designed for speed from here on): libcst parses about ten times slower
than ``ast.parse``, and its metadata costs more again, so

* a file that cannot hold a finding is never parsed: every finding needs a TensorFlow or Keras
  import in the same file, so a file whose bytes mention neither ``tensorflow`` nor ``keras`` is
  skipped after one substring search (this stays correct as long as the analysis resolves names only
  through the file's own imports; cross-module analysis will have to revisit it);
* one traversal (:class:`~graphguard.analysis.loops.SessionLoopVisitor`) serves every rule; the
  effect-to-rule dispatch table is built once per run;
* positions (libcst's ``PositionProvider``) are computed only for files that have findings.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable

import libcst as cst
from libcst.metadata import MetadataWrapper, PositionProvider

from graphguard.analysis.loops import SessionLoopVisitor
from graphguard.diagnostics import Diagnostic
from graphguard.rules import CHECKER_CODES, RULES, Rule

#: Byte strings at least one of which a file must contain to be analysed at all.
PREFILTER = (b"tensorflow", b"keras")

_LIBCST_POSITION = re.compile(r"error at (\d+):(\d+)")


def _callee_text(module: cst.Module, func: cst.BaseExpression) -> str:
    """The callee as the user wrote it, on one line, with inner calls' arguments elided:
    ``tf.train.AdamOptimizer(...).minimize``."""
    if isinstance(func, cst.Name):
        return func.value
    if isinstance(func, cst.Attribute):
        return f"{_callee_text(module, func.value)}.{func.attr.value}"
    if isinstance(func, cst.Call):
        return f"{_callee_text(module, func.func)}(...)"
    text = " ".join(module.code_for_node(func).split())
    return text if len(text) <= 60 else text[:57] + "..."


class Checker:
    """Checks source files against a fixed selection of rules.

    ``codes`` are the selected codes (rule codes and checker codes such as ``GG001``); the default is
    every code.
    """

    def __init__(self, codes: Iterable[str] | None = None) -> None:
        selected = set(RULES) | set(CHECKER_CODES) if codes is None else set(codes)
        self.codes = frozenset(selected)
        self._by_effect = {rule.EFFECT: rule for code, rule in RULES.items() if code in selected}

    def check_file(self, path: str) -> list[Diagnostic]:
        """Findings for the file at ``path``; an unreadable file gives one ``GG002`` finding."""
        try:
            with open(path, "rb") as handle:
                source = handle.read()
        except OSError as error:
            return self._checker_diagnostic(path, "GG002", f"cannot read file: {error.strerror}", 1, 1)
        return self.check_source(source, path)

    def check_source(self, source: bytes, filename: str) -> list[Diagnostic]:
        """Findings for ``source`` (the file's bytes; its encoding cookie is honoured), sorted by position."""
        if not any(marker in source for marker in PREFILTER):
            return []
        try:
            module = cst.parse_module(source)
        except cst.ParserSyntaxError as error:
            return self._syntax_error(source, filename, error)
        except (UnicodeDecodeError, LookupError, SyntaxError) as error:
            return self._checker_diagnostic(filename, "GG002", f"cannot decode file: {error}", 1, 1)
        visitor = SessionLoopVisitor()
        module.visit(visitor)
        constructions = [c for c in visitor.constructions if c.effect in self._by_effect]
        if not constructions:
            return []
        positions = MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)
        found = []
        for construction in constructions:
            rule: type[Rule] = self._by_effect[construction.effect]
            where = positions[construction.node]
            loop = positions[construction.loop].start
            call = _callee_text(module, construction.func)
            found.append(
                Diagnostic(
                    filename=filename,
                    row=where.start.line,
                    column=where.start.column + 1,
                    code=rule.CODE,
                    name=rule.NAME,
                    message=rule.message(call, loop.line),
                    end_row=where.end.line,
                    end_column=where.end.column + 1,
                    loop_row=loop.line,
                    loop_column=loop.column + 1,
                )
            )
        return sorted(found)

    def _checker_diagnostic(self, filename, code, message, row, column) -> list[Diagnostic]:
        if code not in self.codes:
            return []
        name = CHECKER_CODES[code][0]
        return [Diagnostic(filename, row, column, code, name, message, row, column)]

    def _syntax_error(self, source: bytes, filename: str, error: cst.ParserSyntaxError) -> list[Diagnostic]:
        # CPython's own parser gives the better message and position ("Missing parentheses in call to
        # 'print'"); libcst's is the fallback for syntax only libcst rejects.
        try:
            ast.parse(source)
        except SyntaxError as py_error:
            row = py_error.lineno or 1
            column = py_error.offset or 1
            message = py_error.msg
        except (ValueError, UnicodeDecodeError) as py_error:  # NUL bytes, bad encoding
            return self._checker_diagnostic(filename, "GG002", f"cannot decode file: {py_error}", 1, 1)
        else:
            match = _LIBCST_POSITION.search(error.message)
            row, column = (int(match[1]), int(match[2])) if match else (error.raw_line, error.raw_column + 1)
            message = error.message.split("\n", 1)[0]
        return self._checker_diagnostic(filename, "GG001", f"cannot parse file: {message}", row, column)
