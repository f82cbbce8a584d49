"""A finding, as every reporter sees it."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

#: The codes that can have a fix (``graphguard check --fix``; the others never do): ruff's ``[*]`` in
#: ``--statistics``. Here, below every layer, so that reporting them loads no fixer (nor libcst).
FIXABLE_CODES = frozenset({"GG101", "GG102", "GG103", "GG104", "GG105", "GG106", "GG107", "GG110", "GG201", "GG303"})


#: The codes whose finding is an error (the file was not checked); every other finding is a warning.
ERROR_CODES = frozenset({"GG001", "GG002"})


def level(code: str) -> str:
    """``"error"`` for a file that could not be checked (``GG001``, ``GG002``), ``"warning"`` for a
    finding: the program still runs, it slows down or leaks and may die hours later, a bug to fix but
    not a line that fails. One level everywhere: the editor's severity, GitHub's annotation
    (``::warning``), SARIF's ``level``. (The exit status is 1 either way.)"""
    return "error" if code in ERROR_CODES else "warning"


@dataclass(frozen=True, order=True)
class Diagnostic:
    """One finding. Rows and columns are 1-based, as editors and ruff show them.

    ``end_row``/``end_column`` point just past the reported expression. ``loop_row``/``loop_column``
    locate the loop that repeats it (None for checker codes such as ``GG001``).

    In a Jupyter notebook the analysis counts rows in the module its code cells form; for output
    (:func:`graphguard.notebook.in_cells`) rows are made rows within a cell, and ``cell`` /
    ``loop_cell`` give the cells (1-based among all the notebook's cells). None outside notebooks.
    """

    filename: str
    row: int
    column: int
    code: str
    name: str
    message: str
    end_row: int
    end_column: int
    loop_row: int | None = None
    loop_column: int | None = None
    #: A :class:`graphguard.fix.Fix`, attached only where fixes were asked for (``--fix``, ``--diff``,
    #: JSON and SARIF output); not part of a finding's identity.
    fix: Any = field(default=None, compare=False)
    #: Why a finding of a fixable code has no fix (``"it reads step, which the loop assigns ..."``),
    #: where fixes were asked for; None otherwise.
    fix_unavailable: Any = field(default=None, compare=False)
    #: What to do about it (the rule's ``ADVICE``): ``full`` output, JSON ``help``, SARIF ``help``,
    #: the editor's hover. Empty for checker codes, whose message says it.
    advice: str = field(default="", compare=False)
    #: The notebook cell of ``row`` (and of ``end_row``), once rows are made rows within cells.
    cell: int | None = field(default=None, compare=False)
    #: The notebook cell of ``loop_row``: the loop may be in a later cell than a helper it calls.
    loop_cell: int | None = field(default=None, compare=False)

    @property
    def url(self) -> str | None:
        """A link to the rule's documentation: None, since graphguard has no published documentation
        site yet (a path relative to a repository the user does not have would mislead; ``graphguard
        rule CODE`` prints the page, and SARIF carries it in ``help``)."""
        return None
