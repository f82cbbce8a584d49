"""Jupyter notebooks (``.ipynb``, nbformat 4) as Python modules, and findings located by cell.

The code cells of a notebook, in order, form one module: a helper defined in cell 2 and the loop in
cell 7 that calls it give one finding, as they do when the notebook runs top to bottom. Markdown and
raw cells are left out. IPython syntax is not Python, so it is neutralised line for line, the way
ruff reads notebooks, keeping every row where it was:

- a line magic or shell escape (``%matplotlib inline``, ``!pip install x``, ``?obj``, ``obj??``) becomes
  ``pass`` at its indentation (a loop whose body is ``%time step()`` still parses);
- an assignment from one (``files = !ls``, ``t = %timeit -o f()``) keeps its target: ``files = None``;
- a cell magic that runs its body as Python (``%%time``, ``%%timeit``, ``%%capture``, ...) loses only
  its first line; any other (``%%bash``, ``%%writefile``, ``%%html``) makes the whole cell blank.

A cell is transformed only if it does not parse as it is, so Python that merely looks like a magic
(``x = a % b`` on a continued line, ``"!"`` in a string) is never touched. A notebook whose kernel is
not Python (``metadata.kernelspec.language`` or ``metadata.language_info.name``) has no code to check.

Rows are mapped back with :meth:`Notebook.locate`: row 12 of the module is ``(cell 3, row 2)``, cells
numbered from 1 among all cells of the notebook, as Jupyter shows them and ruff reports them
(``nb.ipynb:cell 3:2:5``).

The notebook is read with :mod:`json`, not nbformat: importing nbformat takes 160 ms and its
``reads`` 2.6 ms per notebook against 0.1 ms for :func:`json.loads` (measured on the 2-core machine),
and ``graphguard check`` reads only ``cells[].cell_type`` and ``cells[].source``, whose shape nbformat
4's schema fixes (a string or a list of strings). The tests validate what graphguard writes back
with nbformat's own validator.
"""

from __future__ import annotations

import ast
import bisect
import json
import os
import re
import warnings
from dataclasses import dataclass
from functools import lru_cache
from typing import Optional

from graphguard.python2 import as_python3

__all__ = ["Cell", "Notebook", "NotebookError", "is_notebook", "python_source", "read_notebook"]

#: Cell magics that run their body as Python in the notebook's own namespace (IPython's built-in
#: ones): only their first line goes. ``%%python3``, ``%%pypy`` and the like run it in another
#: process, like ``%%bash``: such a cell is skipped.
PYTHON_CELL_MAGICS = frozenset({"time", "timeit", "capture", "debug", "prun"})

_MAGIC = re.compile(r"^(\s*)(?:[%!?]|[\w.]+\?\??\s*$)")  # %magic, !shell, ?help, obj? / obj??
_ROWS = re.compile(r"\r\n|\r|\n")  # the line endings Python's parser counts rows by
# A future import is legal at the top of any cell, not in the middle of the module the cells form.
_FUTURE = re.compile(r"^(\s*)from\s+__future__\s+import\b.*$")
_TOO_DEEP = "too deeply nested"
_ASSIGNED = re.compile(r"^(\s*[\w.\[\], ]+?\s*=\s*)[%!]")  # files = !ls, t = %timeit -o f()


class NotebookError(ValueError):
    """The file is not a notebook graphguard can read: invalid JSON, or not nbformat 4. ``str()`` is
    one line naming the problem (``invalid JSON at line 3, column 5: Expecting ',' delimiter``);
    ``row`` and ``column`` (1-based) are that place in the file, 1 and 1 when the problem has none."""

    def __init__(self, message: str, row: int = 1, column: int = 1) -> None:
        super().__init__(message)
        self.row, self.column = row, column


def is_notebook(path: str) -> bool:
    """Whether ``path`` names a Jupyter notebook (by its ``.ipynb`` suffix, as Jupyter and ruff do)."""
    return path.endswith(".ipynb")


@dataclass(frozen=True)
class Cell:
    """One code cell: ``index`` (1-based among all the notebook's cells), the module row where it
    starts (1-based), its ``rows``, and its source lines as written (magics included, no endings)."""

    index: int
    start: int
    rows: int
    lines: tuple[str, ...]


@dataclass(frozen=True)
class Notebook:
    """A notebook read as one module: ``python`` (UTF-8 bytes, one row per cell row) and its code ``cells``."""

    python: bytes
    cells: tuple[Cell, ...]
    #: Syntax errors of cells that do not parse even with IPython syntax neutralised, as ``(module row,
    #: column, message)``; such a cell is blank in :attr:`python`, so the others are still checked.
    errors: tuple[tuple[int, int, str], ...] = ()
    #: Indices of the cells read as Python 2 (:mod:`graphguard.python2`): findings only, never fixed.
    python2: tuple[int, ...] = ()

    def locate(self, row: int) -> tuple[int, int]:
        """``(cell index, row in that cell)``, both 1-based, for ``row`` of :attr:`python`. A row past
        the last cell (the end of the module) is the last row of the last cell; ``(1, row)`` if the
        notebook has no code cells."""
        if not self.cells:
            return 1, row
        i = max(0, bisect.bisect_right([c.start for c in self.cells], row) - 1)
        cell = self.cells[i]
        return cell.index, min(max(1, row - cell.start + 1), cell.rows)

    def cell(self, index: int) -> Cell | None:
        """The code cell numbered ``index`` (1-based among all cells), or None."""
        return next((c for c in self.cells if c.index == index), None)


def _text(source) -> str:
    if isinstance(source, str):
        return source
    if isinstance(source, list) and all(isinstance(part, str) for part in source):
        return "".join(source)
    raise NotebookError("a cell's source is neither a string nor a list of strings (nbformat 4)")


def _parses(text: str) -> bool:
    return _syntax_error(text) is None


def _neutralise(lines: list[str]) -> list[str]:
    """IPython syntax in one cell's ``lines`` replaced, row for row (see the module docstring)."""
    first = next((i for i, line in enumerate(lines) if line.strip()), None)
    if first is not None and lines[first].lstrip().startswith("%%"):
        name = lines[first].lstrip()[2:].split(maxsplit=1)
        if name and name[0] in PYTHON_CELL_MAGICS:
            return _neutralise(["" if i == first else line for i, line in enumerate(lines)])
        return [""] * len(lines)
    out = []
    continued = False
    for line in lines:
        if continued:  # a magic continued with a backslash
            out.append("")
            continued = line.rstrip().endswith("\\")
            continue
        assigned = _ASSIGNED.match(line)
        if assigned:
            out.append(assigned[1] + "None")
            continued = line.rstrip().endswith("\\")
            continue
        magic = _MAGIC.match(line)
        if magic and not line.lstrip().startswith("#"):
            out.append(magic[1] + "pass")
            continued = line.rstrip().endswith("\\")
            continue
        out.append(line)
    return out


def _language(data: dict) -> str:
    metadata = data.get("metadata")
    if not isinstance(metadata, dict):
        return "python"
    for key, field in (("kernelspec", "language"), ("language_info", "name")):
        value = metadata.get(key)
        if isinstance(value, dict) and isinstance(value.get(field), str):
            return value[field].lower()
    return "python"


def read_notebook(raw: bytes, cells_only: bool = False) -> Notebook:
    """The notebook in ``raw`` (the file's bytes) as one module. Raises :class:`NotebookError` for
    invalid JSON or UTF-8, or a document that is not nbformat 4 (``nbformat`` not 4, no ``cells``).

    ``cells_only``: only :attr:`Notebook.cells` (``python`` empty, no ``errors``), which do not depend
    on whether a cell parses: what locating findings by cell needs, without parsing every cell."""
    try:
        data = json.loads(raw)
    except json.JSONDecodeError as error:
        raise NotebookError(f"invalid JSON at line {error.lineno}, column {error.colno}: {error.msg}",
                            error.lineno, error.colno) from None
    except (UnicodeDecodeError, ValueError) as error:
        raise NotebookError(f"cannot decode notebook: {error}") from None
    except RecursionError:
        raise NotebookError("invalid JSON: nested too deeply") from None
    if isinstance(data, dict) and isinstance(data.get("nbformat"), int) and data["nbformat"] != 4:
        raise NotebookError(f"nbformat {data['nbformat']} notebook: graphguard reads nbformat 4 "
                            "(`jupyter nbconvert --to notebook` upgrades it)")
    if not isinstance(data, dict) or not isinstance(data.get("cells"), list):
        raise NotebookError("not a Jupyter notebook (no list of cells)")
    if not _language(data).startswith("python"):
        return Notebook(b"", ())
    rows: list[str] = []
    cells = []
    errors: list[tuple[int, int, str]] = []
    python2: list[int] = []
    for index, cell in enumerate(data["cells"], start=1):
        if not isinstance(cell, dict) or cell.get("cell_type") != "code":
            continue
        text = _text(cell.get("source", ""))
        lines = _ROWS.split(text)
        if len(lines) > 1 and not lines[-1]:  # a final line ending starts no row of its own
            lines.pop()
        error = None
        if cells_only or _parses(text):  # cells alone: one row per line, whatever it holds in the module
            python = lines
        else:
            python = _neutralise(lines)
            error = _syntax_error("\n".join(python) + "\n")
        if "__future__" in text:
            python = [_FUTURE.sub(r"\1pass", line) for line in python]
        if error is not None and error[2] != _TOO_DEEP:  # a Python 2 kernel's cell (``print x``): read as Python 3
            rewritten = as_python3("\n".join(python) + "\n")
            if rewritten is not None and _syntax_error(rewritten) is None:
                python, error = rewritten.split("\n")[:len(lines)], None
                python2.append(index)
        if error is not None:  # Jupyter compiles each cell alone: the error stays in its cell
            row, column, message = error
            errors.append((len(rows) + min(max(row, 1), len(lines)), column, message))
            python = [""] * len(lines)
        cells.append(Cell(index, len(rows) + 1, len(lines), tuple(lines)))
        rows.extend(python)
    if cells_only:
        return Notebook(b"", tuple(cells))
    return Notebook(("\n".join(rows) + "\n").encode("utf-8", "surrogatepass") if rows else b"", tuple(cells),
                    tuple(errors), tuple(python2))


def _syntax_error(text: str) -> Optional[tuple[int, int, str]]:
    """``(row, column, message)`` of the syntax error in one cell's code, or None (also for what the
    module's own parse reports better: NUL bytes). A cell nested deeper than Python's parser follows
    at the interpreter's recursion limit (a 10,000-term ``a + b + ...``, which Jupyter cannot run
    either) is an error at its first row, ``too deeply nested``: skipped alone, as any cell that does
    not parse, and not the whole notebook's analysis."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ast.parse(text)
        return None
    except SyntaxError as error:
        return error.lineno or 1, max(1, error.offset or 1), error.msg
    except (RecursionError, MemoryError):  # (MemoryError: the parser's own stack, for nested unary operators)
        return 1, 1, _TOO_DEEP
    except ValueError:
        return None


@lru_cache(maxsize=64)
def _cached(raw: bytes, cells_only: bool = False) -> Notebook:
    return read_notebook(raw, cells_only)


def python_source(path: str, raw: bytes) -> bytes:
    """What graphguard analyses for the file ``path`` with bytes ``raw``: ``raw`` itself, or for a
    notebook its code cells as one module (``b""`` for a notebook it cannot read). Cached by content."""
    if not is_notebook(path):
        return raw
    notebook = notebook_of(path, raw)
    return notebook.python if notebook is not None else b""


def notebook_of(path: str, raw: bytes, cells_only: bool = False) -> Notebook | None:
    """The :class:`Notebook` in ``raw`` if ``path`` is a notebook that can be read, else None
    (``cells_only``: see :func:`read_notebook`)."""
    if not is_notebook(path):
        return None
    try:
        return _cached(raw, cells_only)
    except NotebookError:
        return None


def load(path: str, sources: dict | None = None, cells_only: bool = False) -> Notebook | None:
    """The notebook ``path`` as checked: from ``sources`` (stdin) or read again from disk; None if it
    is not a notebook or cannot be read now (``cells_only``: see :func:`read_notebook`)."""
    from graphguard.reading import read_regular

    if not is_notebook(path):
        return None
    try:
        raw = sources[path] if sources and path in sources else read_regular(path, limit=1 << 31)
    except OSError:
        return None
    return notebook_of(path, raw, cells_only)


_CELL_KEY = re.compile(r'^[ \t]*"cell_type"[ \t]*:')
_SOURCE_LIST = re.compile(r'^[ \t]*"source"[ \t]*:[ \t]*\[[ \t]*$')
#: A cell's ``"source"`` written as one JSON string on its line (nbformat allows either form).
_SOURCE_STRING = re.compile(r'^\s*"source":\s*"')


def file_lines(text: str) -> dict[int, tuple[int, ...]] | None:
    """Where each cell's source lines stand in the notebook's own file: ``{cell index: (file line of
    its row 1, row 2, ...)}``, all 1-based, for a notebook written as Jupyter writes it (nbformat's
    indented JSON: one source line per file line; a ``source`` written as one string puts every row of
    its cell on that string's line; a file of one line holds every row on it). None when the file is laid
    out otherwise: every line found is checked against the parsed cell, so a guess is never
    returned. Used where only a file line can be given (GitHub annotations know no cells)."""
    try:
        cells = json.loads(text).get("cells")
    except (ValueError, AttributeError):
        return None
    if not isinstance(cells, list):
        return None
    lines = text.splitlines()
    found: dict[int, tuple[int, ...]] = {}
    if len(lines) == 1:  # all of it on one line (``json.dump`` without indent): every row is there
        for index, cell in enumerate(cells, 1):
            source = cell.get("source") if isinstance(cell, dict) else None
            rows = len(source) if isinstance(source, list) else len(source.splitlines()) if isinstance(source, str) else 0
            found[index] = (1,) * max(1, rows)
        return found
    index = 0
    for number, line in enumerate(lines):
        if _CELL_KEY.match(line):
            index += 1
        elif index and index not in found and _SOURCE_STRING.match(line) and index <= len(cells):
            # ``"source": "import tensorflow as tf\nx = 1"``: one JSON string, every row on this line
            source = cells[index - 1].get("source") if isinstance(cells[index - 1], dict) else None
            got = line.split(":", 1)[1].strip()
            try:
                if not isinstance(source, str) or json.loads(got[:-1] if got.endswith(",") else got) != source:
                    return None
            except ValueError:
                return None
            found[index] = (number + 1,) * max(1, len(source.splitlines()))
        elif index and index not in found and _SOURCE_LIST.match(line) and index <= len(cells):
            source = cells[index - 1].get("source") if isinstance(cells[index - 1], dict) else None
            expected = source if isinstance(source, list) else None
            if expected is None or number + len(expected) >= len(lines):
                return None
            for k, want in enumerate(expected):
                got = lines[number + 1 + k].strip()
                try:
                    if json.loads(got[:-1] if got.endswith(",") else got) != want:
                        return None
                except ValueError:
                    return None
            found[index] = tuple(range(number + 2, number + 2 + len(expected)))
    return found if index == len(cells) else None


def in_cells(diagnostics: list, sources: dict | None = None) -> list:
    """``diagnostics`` with those in notebooks located by cell: ``row``, ``end_row`` and ``loop_row``
    made rows within their cells, ``cell`` and ``loop_cell`` set (:class:`~graphguard.diagnostics.Diagnostic`).
    Others are returned as they are, and so are findings about a whole notebook (one that cannot be
    read: GG001 ``cannot read notebook``, GG002). A notebook is read again from ``sources`` (stdin) or
    disk, once per call."""
    import dataclasses

    notebooks: dict = {}
    # The cells alone locate rows; a fix's edits are checked against the module's rows as well.
    fixed = {d.filename for d in diagnostics if d.fix is not None}
    out = []
    for d in diagnostics:
        if not is_notebook(d.filename) or d.cell is not None:
            out.append(d)
            continue
        if d.filename not in notebooks:
            notebooks[d.filename] = load(d.filename, sources, cells_only=d.filename not in fixed)
        notebook = notebooks[d.filename]
        if notebook is None or d.code == "GG002" or not notebook.cells:  # the file, not a cell: path:1:1
            out.append(d)
            continue
        cell, row = notebook.locate(d.row)
        end_cell, end_row = notebook.locate(d.end_row)
        if end_cell != cell:  # an expression running into the next cell: underline to the end of the row
            end_row, end_column = row, d.column + 1
        else:
            end_column = d.end_column
        loop_cell = loop_row = None
        if d.loop_row is not None:
            loop_cell, loop_row = notebook.locate(d.loop_row)
        fix, unavailable = d.fix, d.fix_unavailable
        if fix is not None:
            fix, reason = _fix_in_cells(fix, notebook, d.filename)
            unavailable = reason or unavailable
        out.append(dataclasses.replace(d, row=row, end_row=end_row, end_column=end_column, cell=cell,
                                       loop_row=loop_row, loop_cell=loop_cell, fix=fix, fix_unavailable=unavailable,
                                       message=message_in_cells(d.message, d.filename, notebook)))
    return out


def _fix_in_cells(fix, notebook: Notebook, filename: str) -> tuple:
    """``(fix with its edits located by cell, None)``, or ``(None, why)`` when an edit spans two cells or
    touches a row that stands in for IPython syntax (``--fix`` would drop it as well)."""
    import dataclasses

    rows = notebook.python.decode("utf-8", "surrogatepass").split("\n")
    edits = []
    for edit in fix.edits:
        cell, row = notebook.locate(edit.row)
        end_cell, end_row = notebook.locate(edit.end_row)
        found = notebook.cell(cell)
        if end_cell != cell or found is None:
            return None, "its edits would span two notebook cells"
        for module_row in range(edit.row, edit.end_row + 1):
            local = module_row - found.start
            if 0 <= local < found.rows and rows[module_row - 1] != found.lines[local]:
                return None, "it would change a line of IPython syntax"
        edits.append(dataclasses.replace(edit, row=row, end_row=end_row, cell=cell))
    return dataclasses.replace(fix, edits=tuple(edits), message=message_in_cells(fix.message, filename, notebook)), None


_LINE_OF = re.compile(r"\b((?:at|from) )line (\d+)\b")


def message_in_cells(message: str, filename: str, notebook: Notebook) -> str:
    """The rows a message names in its own notebook (``the session loop at line 13``, ``at nb.ipynb:6``)
    as cells and rows (``at cell 5, line 4``, ``at nb.ipynb:cell 3:2``); rows in other files are kept."""

    def line_of(match: re.Match) -> str:
        cell, row = notebook.locate(int(match[2]))
        return f"{match[1]}cell {cell}, line {row}"

    def at_file(match: re.Match) -> str:
        cell, row = notebook.locate(int(match[2]))
        return f"{match[1]}:cell {cell}:{row}"

    message = _LINE_OF.sub(line_of, message)
    name = re.escape(os.path.basename(filename))
    return re.sub(rf"(?<![\w.])({name}):(\d+)\b", at_file, message)
