"""Writing edits back into a Jupyter notebook: only the edited lines of code cells change.

Jupyter (through nbformat) writes a notebook as JSON with one space of indentation, keys in the order
read, non-ASCII characters as they are and a final newline. A notebook is edited by loading that JSON,
replacing the edited cells' ``source`` (a list of lines stays a list split as nbformat splits it, a
string stays a string) and dumping it in the layout the file already had, which is found by dumping
the unedited notebook and comparing it with the file byte for byte: outputs, metadata, cell ids,
execution counts and everything else come out exactly as they were. A file in a layout graphguard
cannot reproduce (written by another tool) is left unchanged, with a one-line reason, rather than
reformatted. The result is checked before it is written: it must be JSON that reads back as a
notebook whose code parses to the same syntax tree apart from the edit's comments (for ``--add-noqa``).
Writes are atomic (:func:`graphguard.suppressions.write_keeping`). Used by ``--add-noqa`` (:func:`add_noqa_notebook`)
and ``--fix``/``--diff`` (:func:`with_module`, which puts a fixed module back into its cells).
"""

from __future__ import annotations

import json
import re
from typing import Any, Callable, Optional

from graphguard.notebook import Notebook, NotebookError, read_notebook

__all__ = ["add_noqa_notebook", "layout_of", "with_module"]

_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n|$)")


def layout_of(raw: bytes, data: Any) -> Optional[Callable[[Any], bytes]]:
    """A function that dumps a notebook's JSON exactly as ``raw`` is laid out (``data`` is
    ``json.loads(raw)``), or None if no layout graphguard knows reproduces ``raw`` byte for byte:
    indentation 1 (Jupyter's), 2, 4 or none; non-ASCII as is or escaped; with or without a final
    newline; ``\r\n`` line endings (git's ``core.autocrlf``) and a UTF-8 byte-order mark kept."""
    bom = b"\xef\xbb\xbf" if raw.startswith(b"\xef\xbb\xbf") else b""
    crlf = b"\r\n" in raw
    body = raw[len(bom):].replace(b"\r\n", b"\n") if crlf else raw[len(bom):]
    if not bom and not crlf:
        return _plain_layout(body, data)
    plain = _plain_layout(body, data)
    if plain is None:
        return None
    return lambda value: bom + (plain(value).replace(b"\n", b"\r\n") if crlf else plain(value))


def _plain_layout(raw: bytes, data: Any) -> Optional[Callable[[Any], bytes]]:
    for indent in (1, 2, 4, None):
        for ensure_ascii in (False, True):
            separators = (",", ": ") if indent is not None else (", ", ": ")

            def dump(value: Any, indent=indent, ensure_ascii=ensure_ascii, separators=separators) -> bytes:
                return json.dumps(value, indent=indent, ensure_ascii=ensure_ascii,
                                  separators=separators).encode("utf-8")

            try:
                text = dump(data)
            except (TypeError, ValueError):
                return None
            for ending in (b"\n", b""):
                if text + ending == raw:
                    return lambda value, dump=dump, ending=ending: dump(value) + ending
    return None


def _set_line(source: Any, row: int, new: str) -> Any:
    """``source`` (a cell's: a string or a list of lines) with row ``row`` (1-based) replaced by ``new``."""
    text = source if isinstance(source, str) else "".join(source)
    lines = _LINE.findall(text)
    if lines and lines[-1] == "":
        lines.pop()
    line = lines[row - 1]
    body = line.rstrip("\r\n")
    lines[row - 1] = new + line[len(body):]
    text = "".join(lines)
    return text if isinstance(source, str) else text.splitlines(True)


def add_noqa_notebook(path: str, diagnostics: list) -> tuple[int, list[int]]:
    """:func:`graphguard.suppressions.add_noqa` for a notebook: a ``# noqa: CODES`` comment at the end of
    each finding's line in its cell (rows of ``diagnostics`` are rows of the notebook's module, as the
    analysis reports them). A comment is never put on a line of its own (cell rows would shift) nor on
    a line holding IPython syntax. Returns (lines changed, module rows not suppressed). Raises
    ``ValueError`` (one line) when the notebook is left unchanged as a whole: read-only, not a
    notebook, a JSON layout Jupyter does not write, or comments that would change the code."""
    from graphguard.suppressions import noqa_text, read_for_edit, write_keeping

    real, info, raw = read_for_edit(path)
    try:
        notebook = read_notebook(raw)
    except NotebookError as error:
        raise ValueError(f"{error}; left unchanged") from None
    data = json.loads(raw)
    dump = layout_of(raw, data)
    if dump is None:
        raise ValueError("not in the JSON layout Jupyter writes (another tool wrote it): left unchanged rather "
                         "than reformatted")
    text = notebook.python.decode("utf-8", "surrogatepass")
    new_text, changed, skipped = noqa_text(text, notebook.python, diagnostics, insert=False)
    if not changed:
        return 0, skipped
    old_rows, new_rows = text.split("\n"), new_text.split("\n")
    edits = 0
    for row, (old, new) in enumerate(zip(old_rows, new_rows), start=1):
        if old == new:
            continue
        index, cell_row = notebook.locate(row)
        cell = notebook.cell(index)
        if cell is None or cell.lines[cell_row - 1] != old:  # a row that stands in for IPython syntax
            skipped.append(row)
            continue
        target = data["cells"][index - 1]
        target["source"] = _set_line(target["source"], cell_row, new)
        edits += 1
    if not edits:
        return 0, sorted(skipped)
    out = dump(data)
    _check(out, notebook)
    write_keeping(real, info, out)
    return edits, sorted(skipped)


def _at_cell_starts(opcodes: list, old_rows: list[str], new_rows: list[str], notebook: Notebook) -> list:
    """``opcodes`` with each change that ends a cell and adds rows split in two: the rows that pair with
    the changed ones (by similarity, in order) stay, and the added rows after them become an insertion
    before the next cell's first row, so they go into that cell. difflib cannot know where a cell ends:
    a line hoisted above a loop that opens a cell would otherwise end the cell before it."""
    import difflib

    ends = {cell.start + cell.rows - 1 for cell in notebook.cells}
    out = []
    for tag, i1, i2, j1, j2 in opcodes:
        grows = (j2 - j1) > (i2 - i1) > 0
        if tag != "replace" or not grows or i2 not in ends or i2 >= len(old_rows) - 1:
            out.append((tag, i1, i2, j1, j2))
            continue
        kept = i2 - i1

        def score(start: int) -> float:
            return sum(difflib.SequenceMatcher(a=old_rows[i1 + m], b=new_rows[start + m]).ratio() for m in range(kept))

        if score(j1) >= score(j2 - kept):  # the added rows come after the changed ones: the next cell's
            out.append(("replace", i1, i2, j1, j1 + kept))
            out.append(("insert", i2, i2, j1 + kept, j2))
        else:
            out.append((tag, i1, i2, j1, j2))
    return out


def _check(out: bytes, before: Notebook) -> None:
    """The edited notebook reads back, with code that parses to the same tree as before."""
    import ast

    try:
        after = read_notebook(out)
        same = ast.dump(ast.parse(after.python)) == ast.dump(ast.parse(before.python))
    except (NotebookError, SyntaxError, ValueError):
        same = False
    if not same or len(after.cells) != len(before.cells):
        raise ValueError("the edit would change the notebook's code; left unchanged")


def with_module(raw: bytes, new_text: str) -> bytes:
    """The notebook ``raw`` with its code cells changed as its module text (``read_notebook(raw).python``)
    was changed into ``new_text`` by a fix: each changed run of rows goes back into the one cell it
    came from (lines inserted between two cells go into the later one, before the line they precede:
    a Saver hoisted above a loop that opens its cell stays in that cell), and the JSON is dumped in the
    file's own layout. Raises ``ValueError`` (one line) when the change cannot be put back that way: it
    spans two cells, touches a row that stands in for IPython syntax, or the file is not in a layout
    graphguard can reproduce."""
    import difflib

    try:
        notebook = read_notebook(raw)
    except NotebookError as error:
        raise ValueError(str(error)) from None
    data = json.loads(raw)
    dump = layout_of(raw, data)
    if dump is None:
        raise ValueError("not in the JSON layout Jupyter writes (another tool wrote it)")
    old_rows = notebook.python.decode("utf-8", "surrogatepass").split("\n")
    new_rows = new_text.split("\n")
    lines = {cell.index: list(cell.lines) for cell in notebook.cells}
    ends = {cell.index: cell.start + cell.rows - 1 for cell in notebook.cells}
    matcher = difflib.SequenceMatcher(a=old_rows, b=new_rows, autojunk=False)
    changed = set()
    for tag, i1, i2, j1, j2 in reversed(_at_cell_starts(matcher.get_opcodes(), old_rows, new_rows, notebook)):
        if tag == "equal":
            continue
        if i1 >= len(old_rows) - 1 and notebook.cells:  # appended after the last row
            cell, row = notebook.cells[-1].index, notebook.cells[-1].rows + 1
        else:
            cell, row = notebook.locate(i1 + 1)
        if i2 > i1:
            last_cell, _ = notebook.locate(i2)
            if last_cell != cell or i2 > ends[cell]:
                raise ValueError("a fix changes lines of two cells")
            for k in range(i1, i2):
                if old_rows[k] != lines[cell][row - 1 + k - i1]:
                    raise ValueError("a fix changes a line that holds IPython syntax")
        lines[cell][row - 1 : row - 1 + (i2 - i1)] = new_rows[j1:j2]
        changed.add(cell)
    for index in changed:
        target = data["cells"][index - 1]
        source = target["source"]
        text = source if isinstance(source, str) else "".join(source)
        newline = "\r\n" if "\r\n" in text else "\n"  # the cell's own line endings
        new = newline.join(lines[index]) + (newline if text.endswith("\n") else "")
        target["source"] = new if isinstance(source, str) else new.splitlines(True)
    out = dump(data)
    try:
        after = read_notebook(out).python.decode("utf-8", "surrogatepass")
    except NotebookError:
        after = None
    if after != new_text:
        raise ValueError("the fixed cells do not read back as the fixed code")
    return out
