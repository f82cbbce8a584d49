"""Check a set of files: parse each once, read its facts, summarise the project, report through rules.

The three phases (:mod:`graphguard.analysis.loops`, :mod:`graphguard.analysis.project`) see every
file of the run together, so a helper in ``model.py`` called from the loop in ``train.py`` is found
when both are checked in one run (``graphguard check src/``), and not when ``train.py`` is checked
alone.

Cost model: files are parsed with CPython's ``ast`` (about 12x faster than libcst here); a module's
syntax tree is dropped as soon as its facts are read; the effect-to-rule dispatch table is built once
per run, not per file.
"""

from __future__ import annotations

import ast
import warnings
from collections.abc import Iterable
from dataclasses import dataclass, field

from graphguard.analysis.loops import ModuleFacts, read_module
from graphguard.analysis.project import Finding, Project
from graphguard.diagnostics import Diagnostic
from graphguard.rules import CHECKER_CODES, RULES, Rule
from graphguard.suppressions import MARKER


@dataclass
class Report:
    """The result of one run: findings sorted by file and position, and internal errors (one line each)."""

    diagnostics: list[Diagnostic] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    files: int = 0
    sources: dict = field(default_factory=dict)  #: path -> bytes, for files with suppression comments


class Checker:
    """Checks source files against a fixed selection of rules.

    ``codes`` are the selected codes (rule codes and checker codes such as ``GG001``); the default is
    every code.
    """

    def __init__(self, codes: Iterable[str] | None = None, *, session_names: Iterable[str] = (),
                 session_factories: Iterable[str] = ()) -> None:
        selected = set(RULES) | set(CHECKER_CODES) if codes is None else set(codes)
        self.codes = frozenset(selected)
        self._session_names = frozenset(session_names)
        self._session_factories = frozenset(session_factories)
        self._by_effect: dict = {}
        for code, rule in RULES.items():
            if code in selected:
                for effect in rule.EFFECTS:
                    self._by_effect[effect] = rule

    # ------------------------------------------------------------------ entry points

    def check_paths(self, paths: list[str], sources: dict[str, bytes] | None = None) -> Report:
        """Check the files at ``paths`` together (helpers in one are seen from loops in another).
        ``sources`` gives the bytes of files that are not read from disk (``check -`` reads stdin)."""
        report = Report(files=len(paths))
        modules = []
        for path in paths:
            if sources and path in sources:
                source = sources[path]
            else:
                try:
                    with open(path, "rb") as handle:
                        source = handle.read()
                except OSError as error:
                    report.diagnostics += self._checker_diagnostic(path, "GG002", f"cannot read file: {error.strerror}")
                    continue
            if MARKER.search(source):
                report.sources[path] = source  # only files that can hold suppression comments
            self._read(source, path, modules, report)
        self._report(modules, report)
        report.diagnostics = _unique(report.diagnostics)
        return report

    def check_source(self, source: bytes, filename: str) -> list[Diagnostic]:
        """Findings for one file's ``source`` bytes (its encoding cookie is honoured), checked alone.
        Raises what an internal error raises (tests want the traceback)."""
        report = Report(files=1)
        modules: list[ModuleFacts] = []
        self._read(source, filename, modules, report, reraise=True)
        self._report(modules, report, reraise=True)
        return _unique(report.diagnostics)

    # ------------------------------------------------------------------ phases

    def _read(self, source: bytes, path: str, modules: list, report: Report, reraise: bool = False) -> None:
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # SyntaxWarning for "\d" in old code is not ours to print
                tree = ast.parse(source, filename=path)
        except SyntaxError as error:
            message = f"cannot parse file: {error.msg}"
            report.diagnostics += self._checker_diagnostic(path, "GG001", message, error.lineno or 1, error.offset or 1)
            return
        except (ValueError, UnicodeDecodeError, LookupError) as error:  # NUL bytes, bad encoding
            report.diagnostics += self._checker_diagnostic(path, "GG002", f"cannot decode file: {error}")
            return
        except (RecursionError, MemoryError):
            report.errors.append(f"{path}: too deeply nested to parse")
            return
        try:
            lines = None if source.isascii() else source.splitlines()
            modules.append(read_module(tree, path, lines, self._session_names, self._session_factories))
        except Exception as error:
            if reraise:
                raise
            report.errors.append(f"{path}: {type(error).__name__}: {error}")

    def _report(self, modules: list[ModuleFacts], report: Report, reraise: bool = False) -> None:
        if not self._by_effect or not modules:
            return
        project = Project(modules)
        for module in modules:
            try:
                findings = project.findings(module)
            except Exception as error:
                if reraise:
                    raise
                report.errors.append(f"{module.path}: {type(error).__name__}: {error}")
                continue
            for finding in findings:
                rule = self._by_effect.get(finding.effect)
                if rule is not None:
                    report.diagnostics.append(self._diagnostic(rule, finding))

    @staticmethod
    def _diagnostic(rule: type[Rule], finding: Finding) -> Diagnostic:
        site = finding.site
        return Diagnostic(
            filename=finding.path,
            row=site.row,
            column=site.column,
            code=rule.CODE,
            name=rule.NAME,
            message=rule.message(finding.subject, finding.loop_row, finding.via),
            end_row=site.end_row,
            end_column=site.end_column,
            loop_row=finding.loop_row,
            loop_column=finding.loop_column,
        )

    def _checker_diagnostic(self, filename, code, message, row=1, column=1) -> list[Diagnostic]:
        if code not in self.codes:
            return []
        name = CHECKER_CODES[code][0]
        return [Diagnostic(filename, row, column, code, name, message, row, column)]


def _unique(diagnostics: list[Diagnostic]) -> list[Diagnostic]:
    """Sorted, one finding per code and position: a chain such as
    ``Dataset.from_tensor_slices(x).shuffle(n).batch(b)`` is one finding at its start, and a helper
    that builds both a dataset and an iterator is one GG109 at the call."""
    seen = {}
    for d in diagnostics:
        seen.setdefault((d.filename, d.row, d.column, d.code), d)
    return sorted(seen.values(), key=lambda d: (d.filename, d.row, d.column, d.code))
