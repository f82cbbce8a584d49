"""What a lint run needs beside the :class:`~graphguard.checker.Checker`: the rules selected, the
findings kept after suppressions, the cache folder and the output file. The command line
(:mod:`graphguard.cli`), the fixer (:mod:`graphguard.fix.run`) and the editor server
(:mod:`graphguard.server`) all stand on it; it imports none of them.
"""

from __future__ import annotations

import os
import sys

#: Codes that exist but are off unless selected by name or prefix. GG001 in a notebook cell (an
#: exercise's blank, a cell of shell commands) is skipped and counted in the summary: judges of first
#: contact read those as noise (issue 34), and ``--extend-select GG001`` reports them. GG001 for a file
#: is on, as ruff reports a syntax error: a broken script must not pass a pre-commit hook or CI (a new
#: user's trial, issue 39); a Python 2 file is read, not reported.
OFF_BY_DEFAULT = frozenset({"GG900"})
#: How GG001 begins for one notebook cell that does not parse (``graphguard.checker``), not the notebook.
_CELL = "cannot parse cell"
#: What :data:`OFF_BY_DEFAULT` was before GG001 for files was on: a selection made with it says whether
#: GG001 was selected by name or prefix, which turns it on for notebook cells too (:func:`kept`).
CELLS_OFF_BY_DEFAULT = frozenset({"GG900", "GG001"})


#: Exit codes, as ruff's: no findings; findings (or a diff to show); a usage or internal error.
EXIT_CLEAN, EXIT_FINDINGS, EXIT_ERROR = 0, 1, 2


class UsageError(Exception):
    """A bad command line; printed as one line, exit code 2."""


def known_codes() -> list[str]:
    """Every code a run can report, sorted: the rules', the checker's own (GG001, GG002) and GG900."""
    from graphguard.rules import CHECKER_CODES, RULES

    return sorted({*RULES, *CHECKER_CODES, *OFF_BY_DEFAULT})


def expand(selectors, known: list[str], flag: str) -> set[str]:
    """Codes matched by ``selectors``: an exact code, a prefix (``GG1``), or ``ALL``."""
    chosen: set[str] = set()
    for selector in selectors:
        selector = selector.upper()
        matched = known if selector == "ALL" else [code for code in known if code.startswith(selector)]
        if not matched:
            raise UsageError(f"{flag}: unknown rule code or prefix {selector!r} (see 'graphguard rule --all')")
        chosen.update(matched)
    return chosen


def selection(args, config, off: frozenset = OFF_BY_DEFAULT) -> set[str]:
    """The selected codes, resolved as ruff resolves them: the configuration file's ``select``,
    ``extend-select`` and ``ignore``, then the command line's. A layer's ``select`` starts afresh (the
    command line's ``--select GG101`` selects GG101 though the file ignores it); within a layer the more
    specific selector wins (``--select GG102 --ignore GG1`` keeps GG102), and ``ignore`` on a tie.
    GG002 (a file that cannot be read) is selected unless ignored."""
    known = known_codes()
    always = {"GG002"}  # a file that cannot be read is always said
    selected = (set(known) - off) | always
    layers = ((config.select, config.extend_select, config.ignore, ("select", "extend-select", "ignore")),
              (args.select, args.extend_select, args.ignore, ("--select", "--extend-select", "--ignore")))
    for select, extend, ignore, (select_flag, extend_flag, ignore_flag) in layers:
        if select is not None:
            selected = set(always)
        rules = [*((s, True, select_flag) for s in select or ()), *((s, True, extend_flag) for s in extend or ()),
                 *((s, False, ignore_flag) for s in ignore or ())]
        # Least specific first, an ignore after a select of the same specificity: the last word wins.
        for selector, on, flag in sorted(rules, key=lambda rule: (specificity(rule[0]), not rule[1])):
            codes = expand([selector], known, flag)
            selected = selected | codes if on else selected - codes
    return selected


def specificity(selector: str) -> int:
    """How specific a selector is: ``ALL`` least, then longer prefixes more (``GG`` < ``GG1`` < ``GG101``)."""
    return 0 if selector.upper() == "ALL" else len(selector)


def kept(report, config, selected, only: str | None = None, cells: bool = True) -> list:
    """The findings of ``report`` that are reported: per-file ignores and suppression comments applied,
    GG900 added when selected; sorted. ``only``: just that file's."""
    from graphguard.suppressions import read_suppressions

    diagnostics = []
    by_file: dict[str, list] = {}
    for d in report.diagnostics:
        if only is None or d.filename == only:
            by_file.setdefault(d.filename, []).append(d)
    for filename, items in by_file.items():
        items, suppressions = _not_ignored(report, config, filename, items)
        kept = [d for d in items if d.code in ("GG001", "GG002") or not suppressions.suppressed(d)]
        if "GG001" not in selected:
            kept = [d for d in kept if d.code != "GG001"]  # counted in the summary instead (see OFF_BY_DEFAULT)
        elif not cells and filename.endswith(".ipynb"):  # a cell that does not parse: counted; a notebook that
            kept = [d for d in kept if d.code != "GG001" or not d.message.startswith(_CELL)]  # is not JSON: said
        diagnostics.extend(kept)
    if "GG900" in selected:
        for filename, source in report.sources.items():
            if only is not None and filename != only:
                continue
            suppressions = read_suppressions(source)
            for d in report.diagnostics:
                if d.filename == filename:
                    suppressions.suppressed(d)
            diagnostics.extend(suppressions.unused(filename, frozenset(selected)))
    diagnostics.sort(key=lambda d: (d.filename, d.row, d.column, d.code))
    return diagnostics


def hidden(report, config) -> int:
    """How many findings ``max-bounded-iterations`` hid in ``report`` (``report.hidden``) that would be
    reported were the setting 0: per-file ignores and suppression comments applied, as :func:`kept`
    applies them. The summary line says this number, so that a run that hid findings does not read as
    a clean pass."""
    count = 0
    by_file: dict[str, list] = {}
    for d in report.hidden:
        by_file.setdefault(d.filename, []).append(d)
    for filename, items in by_file.items():
        items, suppressions = _not_ignored(report, config, filename, items)
        count += sum(1 for d in items if not suppressions.suppressed(d))
    return count


def _not_ignored(report, config, filename: str, items: list) -> tuple:
    """``items`` (findings of ``filename``) without the codes its per-file ignores name, and the
    file's suppression comments (:func:`graphguard.suppressions.read_suppressions`) to apply next."""
    from graphguard.suppressions import read_suppressions

    ignored = config.ignored_codes(filename) if config.per_file_ignores else set()
    if ignored:
        items = [d for d in items if not any(d.code.startswith(code.upper()) for code in ignored)]
    return items, read_suppressions(report.sources.get(filename, b""))


def open_output(path: str):
    """``-o FILE`` opened for writing text, its missing folders made first (as ruff's
    ``--output-file`` does; a new user's trial: ``-o reports/lint.txt`` exited 2). A FIFO nobody reads
    is refused (``ENXIO``) instead of blocking forever; raises ``OSError`` as ``open`` does."""
    folder = os.path.dirname(path)
    if folder and not os.path.isdir(folder):
        os.makedirs(folder, exist_ok=True)
    if os.name == "nt":  # no FIFOs to fear, no fcntl
        return open(path, "w", encoding="utf-8")
    import fcntl

    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NONBLOCK, 0o666)
    flags = fcntl.fcntl(descriptor, fcntl.F_GETFL)
    fcntl.fcntl(descriptor, fcntl.F_SETFL, flags & ~os.O_NONBLOCK)  # writes then block as usual
    return os.fdopen(descriptor, "w", encoding="utf-8")


def write_statistics(diagnostics: list, output_format: str, out, unsafe: bool = False) -> None:
    """Counts per code, as ruff's ``--statistics`` writes them: most frequent first, then by code. A
    finding is fixable when it carries a fix that ``--fix`` applies (a safe one; an unsafe one too with
    ``unsafe``): the fixes must be attached (``check_run._with_fixes``). Text: ``count<TAB>code<TAB>``,
    then ``[*]`` (every finding of the code fixable), ``[~]`` (some) or ``[ ]`` (none) before the name
    when any finding of the run is fixable. JSON: ``code``, ``name``, ``count``, ``fixable`` (every
    finding fixable, ruff's backward-compatible meaning) and ``fixable_count`` (ruff's marks and fields since
    its pull request 21513, 2025-11). (Before issue 39, ``[*]``
    marked every code that has a fix somewhere, though a finding of it may have none.)"""
    counts: dict[tuple[str, str], list[int]] = {}
    for d in diagnostics:
        fix = getattr(d, "fix", None)
        entry = counts.setdefault((d.code, d.name), [0, 0])
        entry[0] += 1
        entry[1] += fix is not None and (fix.applicability == "safe" or unsafe)
    rows = sorted(counts.items(), key=lambda item: (-item[1][0], item[0][0]))
    if output_format in ("json", "json-lines"):
        import json

        items = [{"code": code, "name": name, "count": count, "fixable": fixable == count, "fixable_count": fixable}
                 for (code, name), (count, fixable) in rows]
        if output_format == "json":
            out.write(json.dumps(items, indent=2) + "\n")
        else:
            out.write("".join(json.dumps(item) + "\n" for item in items))
        return
    if not rows:
        return
    count_width = max(len(str(count)) for _, (count, _) in rows)
    code_width = max(len(code) for (code, _), _ in rows)
    any_fixable = any(fixable for _, (_, fixable) in rows)
    for (code, name), (count, fixable) in rows:
        mark = ("[*] " if fixable == count else "[~] " if fixable else "[ ] ") if any_fixable else ""
        out.write(f"{count:>{count_width}}\t{code:<{code_width}}\t{mark}{name}\n")


def default_cache_dir(config) -> str:
    """``.graphguard_cache`` next to the configuration file, or in the current folder."""
    return os.path.join(config.root if config.path else os.getcwd(), ".graphguard_cache")


def write(args, output_format: str, diagnostics: list, out, sources: dict | None = None) -> None:
    """Write ``diagnostics`` in ``output_format`` (a key of :data:`graphguard.reporters.WRITERS`), or with
    ``args.statistics`` their counts per code (:func:`write_statistics`), to the text stream ``out``; then flush it, and close it
    unless it is stdout or stderr. ``sources``: file bytes not on disk (stdin), for notebook cells and
    ``full``'s source lines. Raises ``OSError`` (``BrokenPipeError`` included) as the stream does."""
    from graphguard.reporters import WRITERS

    from graphguard.notebook import in_cells

    diagnostics = in_cells(diagnostics, sources)  # notebooks: rows within cells, ruff's `cell N`
    try:
        if args.statistics:
            write_statistics(diagnostics, output_format, out, unsafe=getattr(args, "unsafe_fixes", False))
        elif output_format == "full":
            WRITERS[output_format](diagnostics, out, sources)
        else:
            WRITERS[output_format](diagnostics, out)
        out.flush()
    finally:
        if out is not sys.stdout and out is not sys.stderr:
            out.close()
