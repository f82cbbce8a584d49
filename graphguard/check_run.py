"""One run of ``graphguard check`` as a library: the configuration resolved, the rules selected, the
files found and checked, then the findings fixed (``--fix``, ``--diff``), suppressed (``--add-noqa``) or
written with the summary line. :mod:`graphguard.cli` parses the command line and calls :func:`check`;
this module stands on :mod:`graphguard.lint` and :mod:`graphguard.fix` and is imported by nothing
but the command line.

Errors are one line on stderr (:class:`~graphguard.lint.UsageError`, exit 2), never a traceback.
"""

from __future__ import annotations

import errno
import gc
import os
import sys

from graphguard.lint import (
    CELLS_OFF_BY_DEFAULT,
    EXIT_CLEAN,
    EXIT_ERROR,
    EXIT_FINDINGS,
    UsageError,
    default_cache_dir,
    hidden,
    kept,
    known_codes,
    open_output,
    selection,
    write,
)

#: Set by :func:`check` when run as the command (:func:`graphguard.cli.main` without ``argv``): the
#: checker that holds the run's facts until the process ends (see :func:`graphguard.cli.main`).
HELD: list = []


def _common_folder(paths: list[str]) -> str:
    """Where the configuration is looked for: the path itself when there is one, else the deepest
    folder holding every path. The same files give the same settings in any order (a new user's trial:
    with the first path's ``pyproject.toml``, pre-commit's order of the staged files decided whether a
    commit passed)."""
    if len(paths) == 1:
        return paths[0]
    try:
        return os.path.commonpath([os.path.abspath(path) for path in paths])
    except ValueError:  # paths on different drives (Windows)
        return paths[0]


def check(args) -> int:
    """Run ``graphguard check`` with the parsed command line ``args`` (the ``argparse.Namespace`` that
    :mod:`graphguard.cli` builds: ``paths``, ``select``, ``output_format``, ``fix`` and the other flags of
    ``graphguard check --help``); returns the exit status (``EXIT_CLEAN``, ``EXIT_FINDINGS`` or
    ``EXIT_ERROR``). Resolves the configuration (``--config`` or the nearest ``pyproject.toml`` /
    ``graphguard.toml`` above the paths), selects the rules, finds the files, runs the
    :class:`~graphguard.checker.Checker` (with the facts cache), then fixes (:mod:`graphguard.fix.run`),
    adds noqa comments, or writes the findings and the summary line.

    Raises :class:`~graphguard.lint.UsageError` for a bad command line or configuration; writes only
    with ``--fix``, ``--fix-only`` and ``--add-noqa`` (and ``-o``)."""
    from graphguard.checker import Checker
    from graphguard.config import ConfigError, apply_override, find_config, load_config
    from graphguard.discovery import find_python_files, followed_imports
    from graphguard.suppressions import add_noqa

    paths = args.paths or ["."]
    stdin = paths == ["-"]
    if "-" in paths and not stdin:
        raise UsageError("'-' (stdin) cannot be combined with other paths")
    if stdin and args.add_noqa:
        raise UsageError("--add-noqa cannot write to stdin")
    if args.add_noqa and (args.fix or args.fix_only or args.diff):
        raise UsageError("--add-noqa cannot be combined with --fix, --fix-only or --diff")
    if args.stdin_filename and not stdin:
        raise UsageError("--stdin-filename names the file read from stdin: pass '-' as the path")
    # ``--config`` as ruff's: a file (at most one), or ``KEY = VALUE`` pairs applied over the configuration.
    config_files = [value for value in args.config or () if "=" not in value or os.path.exists(value)]
    overrides = [value for value in args.config or () if value not in config_files]
    if len(config_files) > 1:
        raise UsageError(f"--config: one configuration file at most, got {', '.join(config_files)}")
    config_file = config_files[0] if config_files else None
    for flag, value in (("--config", config_file), ("--cache-dir", args.cache_dir), ("-o", args.output_file),
                        ("--stdin-filename", args.stdin_filename)):
        if value == "":
            raise UsageError(f"{flag}: an empty path")
    start = args.stdin_filename if stdin and args.stdin_filename else _common_folder(paths) if not stdin else "."
    try:
        notes: list[str] = []
        config_path = config_file if config_file else find_config(start, notes)
        for note in notes:
            print(note, file=sys.stderr)
        if config_file and not os.path.isfile(config_file):
            what = ("is a folder, not a file" if os.path.isdir(config_file)
                    else "is not a regular file" if os.path.exists(config_file) else "no such file")
            raise UsageError(f"--config: {config_file}: {what}")
        config = load_config(config_path, known_codes())
        for override in overrides:
            apply_override(config, override, known_codes())
    except ConfigError as error:
        raise UsageError(str(error)) from None
    selected = selection(args, config)
    output_format = args.output_format or config.output_format or "concise"
    if args.statistics and output_format not in ("concise", "full", "json", "json-lines"):
        raise UsageError(f"--statistics prints text or JSON, not {output_format}")

    sources = None
    if stdin:
        if sys.stdin is None:  # started with `<&-`
            raise UsageError("standard input is closed: pass the file to check instead of '-'")
        name = args.stdin_filename or "-"
        if args.force_exclude and args.stdin_filename and config.is_excluded(args.stdin_filename):
            # As ruff: an excluded --stdin-filename is not checked (an editor passes every buffer), and a
            # fix gives the source back as it came (found by a new user: it was fixed and printed).
            if args.fix or args.fix_only:
                import shutil

                shutil.copyfileobj(sys.stdin.buffer, sys.stdout.buffer)
                sys.stdout.flush()
            return EXIT_CLEAN
        files = [name]
        sources = {name: sys.stdin.buffer.read(config.max_file_bytes + 1)}  # more: GG002, not GBs in memory
    else:
        try:
            files = find_python_files(paths, config, force_exclude=args.force_exclude)
        except FileNotFoundError as missing:
            raise UsageError(f"{missing.args[0]}: no such file or directory") from None
        if not args.quiet:
            for note in _excluded_notes(paths, files, config):
                print(note, file=sys.stderr)
            if not files:  # ruff's warning, and its exit status: 0 (an empty folder, only .txt files)
                print("graphguard: warning: No Python files found under the given path(s)", file=sys.stderr)
    if args.output_file and os.path.exists(args.output_file):
        for file in files:
            try:
                if os.path.samefile(args.output_file, file):
                    raise UsageError(f"-o: {args.output_file} is one of the files being checked")
            except OSError:
                continue
    if args.show_files:
        from graphguard.reporters import shown

        listing = "".join(shown(file) + "\n" for file in files)  # a newline in a name must not make two lines
        if args.output_file:
            with open_output(args.output_file) as out:
                out.write(listing)
        else:
            sys.stdout.write(listing)
        return EXIT_CLEAN

    if args.jobs is not None and args.jobs < 1:
        raise UsageError("--jobs must be at least 1")
    hold = args.hold
    checker = Checker(selected | {"GG001"}, session_names=config.session_names, session_factories=config.session_factories,
                      max_bounded_iterations=config.max_bounded_iterations,
                      max_file_bytes=config.max_file_bytes, keep_facts=hold)
    if hold:
        HELD.append(checker)
    cache = None
    if not args.no_cache and not stdin:
        from graphguard.cache import FactsCache, unusable

        folder = args.cache_dir or default_cache_dir(config)
        reason = unusable(folder)
        if reason is None:
            cache = FactsCache(folder, checker.settings_key)
        else:
            print(f"graphguard: the cache folder {folder} {reason}; checking without a cache", file=sys.stderr)
    jobs = min(args.jobs or os.cpu_count() or 1, 4 * (os.cpu_count() or 1))  # more processes than that only cost
    explicit = [os.path.normpath(p) for p in paths if not stdin and os.path.isfile(p)]
    context, left = followed_imports(explicit, files, config) if explicit else ([], [])
    if stdin and args.stdin_filename and os.path.isfile(args.stdin_filename):
        # an editor's buffer, named: the project modules it imports are read as for a named file (a
        # twenty-third new user's trial: `check -` dropped the findings through a helper in model.py)
        context, left = followed_imports(files, files, config, sources=sources)
    report = checker.check_paths(files, sources, jobs=jobs, cache=cache, explicit=explicit, context=context)
    if hold:
        gc.freeze()  # the held facts: never to be scanned by the collector, nor freed (see main())
    for error in report.errors:  # a bug in graphguard: say where; the other files were still checked
        print(f"graphguard: internal error: {error} (please report this)", file=sys.stderr)

    cells = "GG001" in selection(args, config, CELLS_OFF_BY_DEFAULT)  # GG001 named: notebook cells too
    diagnostics = kept(report, config, selected, cells=cells)
    fixing = args.fix or args.fix_only or args.diff
    if fixing and cache is None and not args.add_noqa and not stdin:
        from graphguard.cache import MemoryCache

        cache = MemoryCache()  # each file's re-lints read the other files' facts from memory, not disk
    if fixing and not args.add_noqa:
        from graphguard.fix.run import run_fixes

        def relint(filename: str, text: bytes) -> list:
            again = checker.check_paths(files, {**(sources or {}), filename: text}, jobs=1, cache=cache,
                                        explicit=explicit, context=context)
            return [d for d in kept(again, config, selected, only=filename, cells=cells) if d.filename == filename]

        return run_fixes(args, files, sources, diagnostics, relint, report.errors, output_format,
                         lambda found, out: write(args, output_format, found, out, sources),
                         note=_hidden_note(hidden(report, config), config.max_bounded_iterations,
                                           any(d.code == "GG201" for d in report.hidden)))

    if args.add_noqa:
        from graphguard.notebook import is_notebook
        from graphguard.notebook_edit import add_noqa_notebook

        added, failed = 0, False
        suppressible = [d for d in diagnostics if d.code not in ("GG001", "GG002", "GG900")]
        for filename in sorted({d.filename for d in suppressible}):
            suppress = add_noqa_notebook if is_notebook(filename) else add_noqa
            try:
                changed, skipped = suppress(filename, [d for d in suppressible if d.filename == filename])
            except (OSError, ValueError) as error:
                print(f"graphguard: error: {filename}: {getattr(error, 'strerror', None) or error}", file=sys.stderr)
                failed = True
                continue
            added += changed
            for row in skipped:
                print(f"graphguard: warning: {filename}:{_cell_row(filename, row)}: no safe place for a noqa "
                      "comment; suppress it by hand", file=sys.stderr)
        if not args.quiet:
            print(f"Added {added} noqa comment{'s' if added != 1 else ''}.", file=sys.stderr)
        return EXIT_ERROR if report.errors or failed else EXIT_CLEAN

    fixable_files = _fixable_files(diagnostics) if output_format == "concise" and not args.quiet else 0
    if args.statistics or output_format in ("json", "json-lines", "sarif", "full") or 0 < fixable_files <= _NOTE_FILES:
        # (--statistics counts the findings --fix would fix, as ruff does: it needs their fixes; so does
        # the concise summary's "[*] N fixable" line, for runs with a finding of a rule that has a fix in
        # a few files: libcst reads each such file, about 3x its parse)
        diagnostics = _with_fixes(diagnostics, sources, cache, jobs)
    out = sys.stdout
    if args.output_file:
        try:
            out = open_output(args.output_file)
        except OSError as error:
            reason = "a pipe that nothing reads" if error.errno == errno.ENXIO else error.strerror
            raise UsageError(f"-o: {args.output_file}: {reason}") from None
    try:
        write(args, output_format, diagnostics, out, sources)
    except BrokenPipeError:
        # `graphguard check | head`: stop quietly, but keep the exit status honest (pipefail).
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return EXIT_FINDINGS if diagnostics and not args.exit_zero else EXIT_CLEAN
    except OSError as error:
        raise UsageError(f"cannot write the findings: {error.strerror or error}") from None

    if not args.quiet:
        flagged = len({d.filename for d in diagnostics})
        unparsed = _unparsed(report, diagnostics)
        hid = _hidden_note(hidden(report, config), config.max_bounded_iterations,
                           any(d.code == "GG201" for d in report.hidden)) + _era_note(report)
        # One line: what was found, then a clause per thing not shown or not read, each "; ..." (a new
        # user's trial: "(1 file checked; 1 file could not be parsed ... (--extend-select GG001 ...))")
        if diagnostics:
            noun = "finding" if len(diagnostics) == 1 else "findings"
            print(f"Found {len(diagnostics)} {noun} in {flagged} of {_count(len(files), 'file')} checked{unparsed}{hid}.",
                  file=sys.stderr)
        elif report.errors:
            print(f"No findings, but {_count(len(report.errors), 'file')} could not be checked "
                  f"({_count(len(files), 'file')} in all){unparsed}{hid}.", file=sys.stderr)
        elif unparsed or hid:  # not "All checks passed": some code was not read, or some finding not
            # shown (new users' trials: a summary that read as a pass over a hidden decay op per 100 steps)
            print(f"No findings shown ({_count(len(files), 'file')} checked){unparsed}{hid}.", file=sys.stderr)
        elif files and report.skipped >= len(files):
            # (seventeenth and eighteenth trials: a broken file with no TensorFlow in it "passed")
            why = ("it names no TensorFlow or Keras, so it was not parsed" if len(files) == 1
                   else "none names TensorFlow or Keras, so none was parsed")
            print(f"All checks passed ({_count(len(files), 'file')} checked: {why}){hid}.", file=sys.stderr)
        else:
            print(f"All checks passed ({_count(len(files), 'file')} checked){hid}.", file=sys.stderr)

        if output_format in ("concise", "full"):  # after --statistics too, as ruff prints it
            note = _fixable_note(diagnostics, args.unsafe_fixes)
            if not note and fixable_files > _NOTE_FILES:
                note = ("(findings in {} files are of rules with automatic fixes: --diff shows what --fix would change, "
                        "--diff --unsafe-fixes what --unsafe-fixes would)").format(fixable_files)
            if note:
                print(note, file=sys.stderr)
        note = _unfollowed_note(left)
        if note:
            print(note, file=sys.stderr)

    if report.errors:
        return EXIT_ERROR
    if diagnostics and not args.exit_zero:
        return EXIT_FINDINGS
    return EXIT_CLEAN


def _cell_row(filename: str, row: int) -> str:
    """``row`` of ``filename`` as shown: ``cell N:R`` in a notebook (its module row otherwise)."""
    from graphguard.notebook import load

    notebook = load(filename)
    if notebook is None:
        return str(row)
    cell, cell_row = notebook.locate(row)
    return f"cell {cell}:{cell_row}"


def _with_fixes(diagnostics: list, sources: dict | None, cache=None, jobs: int = 1) -> list:
    """``diagnostics`` with the fix of each fixable finding attached (JSON ``fix``, SARIF ``fixes``).
    Only files with a fixable code are read again, and only they load libcst; a file whose fixes the
    cache holds for the same file and findings is not read at all, and the others are fixed in ``jobs``
    worker processes when there are enough of them (:mod:`graphguard.fix.attach`)."""
    import dataclasses

    from graphguard.fix.edits import FIXABLE_CODES

    from graphguard.rules import RULES

    # A rule without any automatic fix says so, and where its doc explains why (ruff's "Fix safety").
    diagnostics = [dataclasses.replace(d, fix_unavailable=f"{d.code} has no automatic fix (see `graphguard rule "
                                       f"{d.code}`, Fix safety)")
                   if d.code in RULES and d.code not in FIXABLE_CODES else d for d in diagnostics]
    files = sorted({d.filename for d in diagnostics if d.code in FIXABLE_CODES})
    if not files:
        return diagnostics
    from graphguard.fix.attach import fixes_for_file, job_key

    answers, todo = {}, []
    for filename in files:
        mine = [d for d in diagnostics if d.filename == filename]
        key = job_key(cache.key(filename), mine) if cache is not None and filename not in (sources or {}) else None
        cached = cache.get_fixes(filename, key) if key is not None else None
        if cached is not None and len(cached) == len(mine):
            answers.update(zip(mine, cached))
        else:
            todo.append((filename, (sources or {}).get(filename), mine, key))
    if todo:
        jobs_ = [(filename, raw, mine) for filename, raw, mine, _ in todo]
        if jobs > 1 and len(todo) >= 4 * jobs:
            from graphguard.workers import worker_pool

            with worker_pool(jobs) as pool:
                results = list(pool.map(fixes_for_file, jobs_, chunksize=max(1, len(todo) // (jobs * 4))))
        else:
            results = [fixes_for_file(job) for job in jobs_]
        for (filename, _, mine, key), result in zip(todo, results):
            answers.update(zip(mine, result))
            if key is not None:
                cache.put_fixes(filename, key, result)
        if cache is not None:
            cache.save()
    attached = []
    for d in diagnostics:
        fix, reason = answers.get(d, (None, None))
        attached.append(dataclasses.replace(d, fix=fix, fix_unavailable=reason) if fix is not None or reason is not None
                        else d)
    return attached


def _unfollowed_note(left: list[str]) -> str:
    """The hint for imported project modules past :data:`graphguard.discovery.FOLLOW_LIMIT`: calls into them are not followed.
    Empty when there is nothing to say."""
    if not left:
        return ""
    listed = ", ".join(left[:3]) + (", ..." if len(left) > 3 else "")
    return (f"hint: {_count(len(left), 'more imported project module')} not read ({listed}): calls into "
            f"{'it' if len(left) == 1 else 'them'} are not followed; check the folder (graphguard check .) to follow them")


#: The most files with findings of rules that have fixes for which the concise summary works out the
#: fixes to say "[*] N fixable" (libcst reads each, about 3x its parse: on 1,264 files of 27 public
#: repositories with findings in 38, the cold run took about 1.5x as long); more get a pointer to --diff.
_NOTE_FILES = 16


def _fixable_files(diagnostics: list) -> int:
    """How many files have a finding of a rule that has an automatic fix (a check of codes, no libcst)."""
    if not diagnostics:
        return 0
    from graphguard.fix.edits import FIXABLE_CODES

    return len({d.filename for d in diagnostics if d.code in FIXABLE_CODES})


def _fixable_note(diagnostics: list, unsafe: bool) -> str:
    """ruff's line after the summary: ``[*] 2 fixable with the `--fix` option (1 hidden fix can be enabled
    with the `--unsafe-fixes` option).``, from the fixes attached to ``diagnostics``; empty when none."""
    fixes = [d.fix for d in diagnostics if getattr(d, "fix", None) is not None]
    safe = sum(fix.applicability == "safe" for fix in fixes)
    hidden = 0 if unsafe else len(fixes) - safe
    fixable = len(fixes) if unsafe else safe
    extra = (f" ({hidden} hidden fix{'es' if hidden != 1 else ''} can be enabled with the `--unsafe-fixes` option)"
             if hidden else "")
    # A Saver or initializer whose fix waits for the loop's other builds to move first: --fix re-lints
    # after each pass and fixes it then (a fourth new user's trial: "6 fixable", then "7 fixed").
    from graphguard.fix.edits import WAITS_FOR_OTHERS

    later = sum(1 for d in diagnostics if getattr(d, "fix_unavailable", None) == WAITS_FOR_OTHERS)
    after = f", and {later} more once those are applied" if later and (fixable or hidden) else ""
    if fixable:
        return f"[*] {fixable} fixable with the `--fix` option{extra}{after}."
    return f"No fixes available{extra}{after}." if hidden else ""


def _hidden_note(count: int, bound: int, models: bool = False) -> str:
    """The summary's note on findings ``max-bounded-iterations`` hid (:func:`graphguard.lint.hidden`):
    not shown by design (a loop over three test cases is noise on real code), but a run that hid some
    must not read as a clean pass (a new user's trial: a Saver made every 20th of 100 steps, a model
    per fold of a 5-fold loop). ``models``: some hidden finding is GG201, whose bound for Keras models in
    TF 2 code is three times the setting (:data:`graphguard.analysis.findings.EAGER_MODEL_FACTOR`; a
    second trial's 24-model grid was hidden under a note that said 10)."""
    if not count:
        return ""
    from graphguard.analysis.findings import EAGER_MODEL_FACTOR

    where = "1 finding in a short loop" if count == 1 else f"{count} findings in short loops"
    eager = f", {bound * EAGER_MODEL_FACTOR} for TF 2 Keras models" if models else ""
    return (f"; {where} not shown (max-bounded-iterations = {bound}{eager}; --config 'max-bounded-iterations = 0' "
            f"shows {'it' if count == 1 else 'them'})")


def _era_note(report) -> str:
    """The summary's note on TF 2 findings left out because another module of the program spells TF
    1.x's own names (:func:`graphguard.analysis.findings.era_hidden_findings`): ``; 2 TF 2 findings in
    1 file not shown: bis/tiny.py spells TF 1.x (tf.placeholder ...), so its program runs Keras before
    2.4 (docs/analysis.md)``. Empty when there are none."""
    if not report.era_hidden:
        return ""
    count, files = len(report.era_hidden), len({d.filename for d in report.era_hidden})
    where = report.era_evidence[0] + (f" and {len(report.era_evidence) - 1} more" if len(report.era_evidence) > 1 else "")
    return (f"; {_count(count, 'TF 2 finding')} in {_count(files, 'file')} not shown: {where} spells TF 1.x's own "
            f"names, so the program is taken to run Keras before 2.4, whose predict is cheap (docs/analysis.md)")


def _unparsed(report, diagnostics: list) -> str:
    """The summary's note on files skipped because they (or some of their notebook cells) do not parse,
    and whose GG001 is not reported (unselected, or a notebook's cell without GG001 named)."""
    count = len({d.filename for d in report.diagnostics if d.code == "GG001"}
                - {d.filename for d in diagnostics if d.code == "GG001"})
    if not count:
        return ""
    return f"; {_count(count, 'file')} could not be parsed in whole or part: --extend-select GG001 lists {'it' if count == 1 else 'them'}"


def _excluded_notes(paths: list[str], files: list[str], config) -> list[str]:
    """One line per folder named on the command line that holds Python files none of which is
    checked, saying why (``exclude`` or ``.gitignore``): "All checks passed (0 files)" must not
    pass silently in CI."""
    from graphguard.config import gitignored
    from graphguard.discovery import SUFFIXES

    notes = []
    checked = [os.path.abspath(f) for f in files]
    for path in paths:
        if not os.path.isdir(path):
            continue
        root = os.path.abspath(path)
        if any(f.startswith(root + os.sep) for f in checked):
            continue
        everything = [os.path.join(folder, name) for folder, _, names in os.walk(path) for name in names
                      if name.endswith(SUFFIXES)][:1000]
        if not everything:
            continue
        if config.is_excluded(path) or any(config.is_excluded(f) for f in everything[:50]):
            reason = "excluded by `exclude`/`extend-exclude` (or the defaults: build, dist, caches, virtual environments)"
        elif config.respect_gitignore and gitignored(everything[:50]):
            reason = "ignored by .gitignore (respect-gitignore = false in the configuration checks them)"
        else:
            reason = "excluded"
        notes.append(f"graphguard: {path}: 0 of its Python files checked: {reason}; name the files to check them")
    return notes


def _count(number: int, noun: str) -> str:
    """``1 file``, ``3 files``."""
    return f"{number} {noun}" if number == 1 else f"{number} {noun}s"
