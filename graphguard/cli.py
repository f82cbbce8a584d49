"""The ``graphguard`` command line.

Exit codes (as ruff's):

* ``0`` - no findings (or ``--exit-zero``, ``--add-noqa`` or ``--fix-only`` done, or ``--diff`` with nothing to fix);
* ``1`` - findings were reported (``GG001`` syntax errors only when selected), or ``--diff`` has changes to show;
* ``2`` - usage error (a bad flag, an unknown code, a missing path, a bad configuration) or an
  internal error.

``graphguard run script.py [args...]`` runs a script with every ``tf.compat.v1`` session guarded
(:mod:`graphguard.runtime.launcher`): it exits with the script's own status, or ``1`` if a guarded
graph grew, or ``2`` for a usage error (a missing script). It is the only command that loads the
runtime guard, lazily; ``check`` and ``rule`` never import TensorFlow.

Errors are one line on stderr, never a traceback. Nothing is written to the user's files except by
``--add-noqa`` and ``--fix`` / ``--fix-only`` (:mod:`graphguard.fix`), which write atomically.
"""

from __future__ import annotations

import argparse
import errno
import gc
import os
import sys

from graphguard import __version__
from graphguard.lint import (
    OFF_BY_DEFAULT,
    UsageError,
    default_cache_dir as _default_cache_dir,
    kept as _kept,
    known_codes as _known_codes,
    open_output,
    selection as _selection,
)

EXIT_CLEAN, EXIT_FINDINGS, EXIT_ERROR = 0, 1, 2


class _Parser(argparse.ArgumentParser):
    def error(self, message: str):  # one line, not argparse's usage block
        raise UsageError(f"{message} (see '{self.prog} --help')")


def _codes(text: str) -> list[str]:
    """Comma-separated rule codes or prefixes; an empty one (``--select ''``, ``GG1,,GG2``) is an
    error, as in the configuration, not "every code" or "none"."""
    parts = [part.strip().upper() for part in text.split(",")]
    if not all(parts):
        raise argparse.ArgumentTypeError(f"an empty rule code in {text!r} (codes or prefixes such as GG1, GG102, ALL)")
    return parts


def _build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="graphguard", description="Find TensorFlow graph growth: ops built inside session loops (TF1), tf.function retracing and Keras state rebuilt per iteration (TF 2), models kept by sweeps.")
    parser.add_argument("--version", action="version", version=f"graphguard {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)

    from graphguard.reporters import FORMATS

    check = commands.add_parser("check", help="lint Python files (default: the current folder)")
    check.add_argument("paths", nargs="*", default=None, metavar="PATH",
                       help="files or folders to check (default: .); '-' reads one file from stdin")
    check.add_argument("--output-format", choices=FORMATS, default=None,
                       help="concise (default), full, json, json-lines, sarif, github, junit")
    check.add_argument("-o", "--output-file", metavar="FILE", help="write the findings to FILE instead of stdout")
    check.add_argument("--config", metavar="FILE", help="use this pyproject.toml instead of the closest one")
    check.add_argument("--select", type=_codes, default=None, metavar="CODES",
                       help="comma-separated codes or prefixes to enable (default: every rule but GG900)")
    check.add_argument("--extend-select", type=_codes, default=[], metavar="CODES", help="codes to enable as well")
    check.add_argument("--ignore", type=_codes, default=[], metavar="CODES", help="codes or prefixes to disable")
    check.add_argument("--exit-zero", action="store_true", help="exit 0 even when there are findings")
    check.add_argument("-q", "--quiet", action="store_true", help="no summary on stderr")
    check.add_argument("--statistics", action="store_true", help="print counts per code instead of findings")
    check.add_argument("--show-files", action="store_true", help="list the files that would be checked, and stop")
    check.add_argument("--force-exclude", action="store_true",
                       help="apply exclude and .gitignore to files named on the command line too (pre-commit)")
    check.add_argument("--stdin-filename", metavar="PATH", help="the name of the file read from stdin")
    check.add_argument("--add-noqa", action="store_true",
                       help="add '# noqa: CODE' comments to every current finding (a clean baseline)")
    check.add_argument("--fix", action="store_true", help="apply the safe fixes (build what repeats once, before the loop)")
    check.add_argument("--unsafe-fixes", action="store_true", help="also apply (or show) the unsafe fixes")
    check.add_argument("--diff", action="store_true",
                       help="print the fixes as a unified diff instead of writing them; exit 1 if there are any")
    check.add_argument("--fix-only", action="store_true", help="apply fixes and report no remaining findings")
    check.add_argument("--jobs", "-j", type=int, default=None, metavar="N",
                       help="processes that read files (default: the CPU count)")
    check.add_argument("--no-cache", action="store_true", help="neither read nor write the result cache")
    check.add_argument("--cache-dir", metavar="DIR", help="where the cache lives (default: .graphguard_cache "
                       "next to the configuration, or in the current folder)")

    clean = commands.add_parser("clean", help="remove the result cache")
    clean.add_argument("--cache-dir", metavar="DIR", help="the cache to remove (default: as for check)")

    rule = commands.add_parser("rule", help="show a rule's documentation")
    rule.add_argument("code", nargs="?", help="a rule code, e.g. GG102")
    rule.add_argument("--all", action="store_true", help="list every rule")
    rule.add_argument("--output-format", choices=("text", "json"), default="text")

    demo = commands.add_parser("demo", help="lint and run a demo: the Tesla P4 slowdown (default), leaking sweeps "
                               "or TF 2 retracing (needs TensorFlow)")
    demo.add_argument("which", nargs="?", choices=("slowdown", "sweep", "tf2"), default="slowdown",
                      help="slowdown (default): the graph that grows in a session loop; sweep: sweeps that keep "
                           "every trial's model, under SweepGuard; tf2: a TF 2 training loop that passes its step "
                           "to a tf.function as a Python int and retraces it every step, under TraceGuard")
    demo.add_argument("--steps", type=int, default=200,
                      help="slowdown and tf2: training steps per script (default: 200)")
    demo.add_argument("--plot", metavar="FILE.png",
                      help="slowdown and sweep: also draw the measured curves into this PNG file (needs matplotlib: "
                           "pip install 'graphguard[plot]')")

    commands.add_parser("server", help="run the language server (LSP over stdio) for editors: see docs/editor.md "
                        "(needs pygls: pip install '.[server]' from a clone)",
                        description="Run graphguard's language server (LSP 3.17, JSON-RPC over stdin/stdout): the "
                        "editor starts `graphguard server` and talks to it; there are no command-line options. "
                        "Settings come as the client's initializationOptions: debounce (seconds after the last "
                        "change before a lint, default 0.2; or debounceMs) and scope (\"auto\", \"project\" or "
                        "\"imports\": which files a lint while typing checks). The configuration is "
                        "[tool.graphguard] in the workspace root's pyproject.toml. Needs pygls: pip install "
                        "'.[server]' from a clone of graphguard. Editor set-up (VS Code, Neovim, Helix): "
                        "docs/editor.md.")

    # Listed here for --help only: main() hands everything after "run" to the launcher untouched.
    commands.add_parser("run", add_help=False, help="run a script with every tf.compat.v1 session guarded and tf.function traces counted (needs TensorFlow)")
    return parser


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


def _run_check(args) -> int:
    from graphguard.checker import Checker
    from graphguard.config import ConfigError, find_config, load_config
    from graphguard.discovery import find_python_files
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
    for flag, value in (("--config", args.config), ("--cache-dir", args.cache_dir), ("-o", args.output_file),
                        ("--stdin-filename", args.stdin_filename)):
        if value == "":
            raise UsageError(f"{flag}: an empty path")
    start = args.stdin_filename if stdin and args.stdin_filename else _common_folder(paths) if not stdin else "."
    try:
        notes: list[str] = []
        config_path = args.config if args.config else find_config(start, notes)
        for note in notes:
            print(note, file=sys.stderr)
        if args.config and not os.path.isfile(args.config):
            what = ("is a folder, not a file" if os.path.isdir(args.config)
                    else "is not a regular file" if os.path.exists(args.config) else "no such file")
            raise UsageError(f"--config: {args.config}: {what}")
        config = load_config(config_path, _known_codes())
    except ConfigError as error:
        raise UsageError(str(error)) from None
    selected = _selection(args, config)
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
        _HELD.append(checker)
    cache = None
    if not args.no_cache and not stdin:
        from graphguard.cache import FactsCache, unusable

        folder = args.cache_dir or _default_cache_dir(config)
        reason = unusable(folder)
        if reason is None:
            cache = FactsCache(folder, checker.settings_key)
        else:
            print(f"graphguard: the cache folder {folder} {reason}; checking without a cache", file=sys.stderr)
    jobs = min(args.jobs or os.cpu_count() or 1, 4 * (os.cpu_count() or 1))  # more processes than that only cost
    explicit = [os.path.normpath(p) for p in paths if not stdin and os.path.isfile(p)]
    report = checker.check_paths(files, sources, jobs=jobs, cache=cache, explicit=explicit)
    if hold:
        gc.freeze()  # the held facts: never to be scanned by the collector, nor freed (see main())
    for error in report.errors:  # a bug in graphguard: say where; the other files were still checked
        print(f"graphguard: internal error: {error} (please report this)", file=sys.stderr)

    diagnostics = _kept(report, config, selected)
    fixing = args.fix or args.fix_only or args.diff
    if fixing and cache is None and not args.add_noqa and not stdin:
        from graphguard.cache import MemoryCache

        cache = MemoryCache()  # each file's re-lints read the other files' facts from memory, not disk
    if fixing and not args.add_noqa:
        from graphguard.fix.run import run_fixes

        def relint(filename: str, text: bytes) -> list:
            again = checker.check_paths(files, {**(sources or {}), filename: text}, jobs=1, cache=cache,
                                        explicit=explicit)
            return [d for d in _kept(again, config, selected, only=filename) if d.filename == filename]

        return run_fixes(args, files, sources, diagnostics, relint, report.errors, output_format,
                         lambda found, out: _write(args, output_format, found, out, sources))

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

    if output_format in ("json", "json-lines", "sarif", "full") and not args.statistics:
        diagnostics = _with_fixes(diagnostics, sources)
    out = sys.stdout
    if args.output_file:
        try:
            out = open_output(args.output_file)
        except OSError as error:
            reason = "a pipe that nothing reads" if error.errno == errno.ENXIO else error.strerror
            raise UsageError(f"-o: {args.output_file}: {reason}") from None
    try:
        _write(args, output_format, diagnostics, out, sources)
    except BrokenPipeError:
        # `graphguard check | head`: stop quietly, but keep the exit status honest (pipefail).
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return EXIT_FINDINGS if diagnostics and not args.exit_zero else EXIT_CLEAN
    except OSError as error:
        raise UsageError(f"cannot write the findings: {error.strerror or error}") from None

    if not args.quiet:
        flagged = len({d.filename for d in diagnostics})
        unparsed = "" if "GG001" in selected else _unparsed(report)
        if diagnostics:
            noun = "finding" if len(diagnostics) == 1 else "findings"
            print(f"Found {len(diagnostics)} {noun} in {flagged} of {_count(len(files), 'file')} checked{unparsed}.", file=sys.stderr)
        elif report.errors:
            print(f"No findings, but {_count(len(report.errors), 'file')} could not be checked "
                  f"({_count(len(files), 'file')} in all{unparsed}).", file=sys.stderr)
        elif unparsed:  # not "All checks passed": some code was not read (a new user's trial)
            print(f"No findings ({_count(len(files), 'file')} checked{unparsed}).", file=sys.stderr)
        else:
            print(f"All checks passed ({_count(len(files), 'file')} checked).", file=sys.stderr)

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


def _with_fixes(diagnostics: list, sources: dict | None) -> list:
    """``diagnostics`` with the fix of each fixable finding attached (JSON ``fix``, SARIF ``fixes``).
    Only files with a fixable code are read again, and only they load libcst."""
    import dataclasses

    from graphguard.fix.edits import FIXABLE_CODES

    from graphguard.rules import RULES

    # A rule without any automatic fix says so, and where its doc explains why (ruff's "Fix safety").
    diagnostics = [dataclasses.replace(d, fix_unavailable=f"{d.code} has no automatic fix (see `graphguard rule "
                                       f"{d.code}`, Fix safety)")
                   if d.code in RULES and d.code not in FIXABLE_CODES else d for d in diagnostics]
    from graphguard.notebook import is_notebook, python_source

    files = sorted({d.filename for d in diagnostics if d.code in FIXABLE_CODES})
    if not files:
        return diagnostics
    from graphguard.fix import propose_fixes
    from graphguard.fix.apply import decode, file_bytes
    from graphguard.fix.source import python2_reason

    fixes, reasons = {}, {}
    for filename in files:
        mine = [d for d in diagnostics if d.filename == filename]
        try:
            raw = file_bytes(filename, sources)
            python2 = python2_reason(filename, raw)
            if python2:
                reasons.update((d, python2) for d in mine if d.code in FIXABLE_CODES)
                continue
            # A notebook's fixes are computed on its cells' module; in_cells then locates them by cell.
            text = python_source(filename, raw).decode("utf-8", "surrogatepass") if is_notebook(filename) else decode(raw)
            fixes.update(propose_fixes(text, mine, reasons))
        except (OSError, UnicodeDecodeError, SyntaxError):
            continue
        except (RecursionError, MemoryError):  # a new user's trial: a 250-term sum was a traceback in SARIF
            reasons.update((d, "the file is nested too deeply to fix") for d in mine if d.code in FIXABLE_CODES)
    return [dataclasses.replace(d, fix=fixes.get(d), fix_unavailable=reasons.get(d)) if d in fixes or d in reasons
            else d for d in diagnostics]


def _unparsed(report) -> str:
    """The summary's note on files skipped because they (or some of their notebook cells) do not parse."""
    count = len({d.filename for d in report.diagnostics if d.code == "GG001"})
    if not count:
        return ""
    return f"; {_count(count, 'file')} could not be parsed in whole or part (--extend-select GG001 lists them)"


def _write(args, output_format: str, diagnostics: list, out, sources: dict | None = None) -> None:
    """Write the findings (or their counts with ``--statistics``) to ``out``, then flush and close it."""
    from graphguard.reporters import WRITERS

    from graphguard.notebook import in_cells

    diagnostics = in_cells(diagnostics, sources)  # notebooks: rows within cells, ruff's `cell N`
    try:
        if args.statistics:
            counts: dict[tuple[str, str], int] = {}
            for d in diagnostics:
                counts[(d.code, d.name)] = counts.get((d.code, d.name), 0) + 1
            if output_format in ("json", "json-lines"):  # ruff's shape: code, name, count
                import json

                items = [{"code": code, "name": name, "count": count} for (code, name), count in sorted(counts.items())]
                if output_format == "json":
                    out.write(json.dumps(items, indent=2) + "\n")
                else:
                    out.write("".join(json.dumps(item) + "\n" for item in items))
            else:
                for (code, name), count in sorted(counts.items()):
                    out.write(f"{count:>6}  {code}  {name}\n")
        elif output_format == "full":
            WRITERS[output_format](diagnostics, out, sources)
        else:
            WRITERS[output_format](diagnostics, out)
        out.flush()
    finally:
        if out is not sys.stdout and out is not sys.stderr:
            out.close()


def _run_clean(args) -> int:
    from graphguard.cache import clean
    from graphguard.config import ConfigError, find_config, load_config

    folder = args.cache_dir
    if folder is None:
        try:
            folder = _default_cache_dir(load_config(find_config("."), _known_codes()))
        except ConfigError as error:
            raise UsageError(str(error)) from None
    try:
        removed = clean(folder)
    except ValueError as error:
        raise UsageError(str(error)) from None
    print(f"Removed {folder}." if removed else f"No cache at {folder}.", file=sys.stderr)
    return EXIT_CLEAN


def _run_rule(args) -> int:
    import json

    from graphguard.rules import CHECKER_CODES, RULES
    from graphguard.rules.docs import render

    if args.all or args.code is None:
        if args.output_format == "json":
            items = [{"code": code, "name": rule.NAME, "summary": rule.summary(), "url": None,
                      "explanation": render(rule)} for code, rule in RULES.items()]
            items += [{"code": code, "name": name, "summary": summary, "url": None, "explanation": summary}
                      for code, (name, summary) in CHECKER_CODES.items()]
            items.append({"code": "GG900", "name": "unused-suppression", "url": None,
                          "summary": "A suppression comment that suppressed nothing (off unless selected).",
                          "explanation": "A suppression comment that suppressed nothing (off unless selected)."})
            json.dump(items, sys.stdout, indent=2)
            sys.stdout.write("\n")
            return EXIT_CLEAN
        for code, rule in RULES.items():
            print(f"{code}  {rule.NAME:<32} {rule.summary()}")
        for code, (name, summary) in CHECKER_CODES.items():
            print(f"{code}  {name:<32} {summary}")
        print(f"GG900  {'unused-suppression':<32} A suppression comment that suppressed nothing (off unless selected).")
        return EXIT_CLEAN
    code = args.code.upper()
    if code in RULES and args.output_format == "json":
        rule = RULES[code]
        json.dump({"code": code, "name": rule.NAME, "summary": rule.summary(), "url": None,
                   "explanation": render(rule)}, sys.stdout, indent=2)
        sys.stdout.write("\n")
        return EXIT_CLEAN
    if code in RULES:
        sys.stdout.write(render(RULES[code]))
        return EXIT_CLEAN
    if code in CHECKER_CODES:
        name, summary = CHECKER_CODES[code]
        print(f"# {code} {name}\n\n{summary}")
        return EXIT_CLEAN
    if code == "GG900":
        print("# GG900 unused-suppression\n\nA `# noqa: GG...` or `# graphguard: ignore[...]` code that "
              "suppressed nothing. Off unless selected (`--extend-select GG900`).")
        return EXIT_CLEAN
    raise UsageError(f"unknown rule code {args.code!r} (see 'graphguard rule --all')")


def _missing(*modules: str) -> list[str]:
    """The modules among ``modules`` that cannot be imported here (found without importing them)."""
    import importlib.util

    missing = []
    for name in modules:
        try:
            if importlib.util.find_spec(name) is None:
                missing.append(name)
        except (ImportError, ValueError):
            missing.append(name)
    return missing


def _plot_target(path: str | None) -> str | None:
    """``--plot``'s ``path`` checked before a long run (:func:`graphguard.plot.check_target`); raises
    :class:`UsageError` (one line, exit 2) when it cannot be drawn."""
    if path is None:
        return None
    from graphguard.plot import PlotUnavailable, check_target

    try:
        return check_target(path)
    except (PlotUnavailable, ValueError) as error:
        raise UsageError(str(error)) from None


def _run_demo(args) -> int:
    if args.plot is not None and args.which == "tf2":
        raise UsageError("--plot draws the slowdown and sweep demos, not tf2")
    plot = _plot_target(args.plot)
    missing = _missing("numpy", "tensorflow", "sklearn", "psutil")
    if missing:
        raise UsageError(f"the demo trains real models and needs {', '.join(missing)}: "
                         "pip install 'graphguard[demo]'")
    if args.which == "sweep":
        from graphguard.demo import run_sweep_demo

        return run_sweep_demo(plot=plot)
    if args.steps < 1:
        raise UsageError("--steps must be at least 1")
    if args.which == "tf2":
        from graphguard.demo_tf2 import run_tf2_demo

        return run_tf2_demo(steps=args.steps)
    from graphguard.demo import run_demo

    return run_demo(steps=args.steps, plot=plot)


def _run_server(args) -> int:
    # Imported here: pygls is an optional extra, and the other commands never load it.
    if _missing("pygls", "lsprotocol"):
        raise UsageError("the language server needs pygls: pip install '.[server]' in a clone of graphguard")
    from graphguard.server import serve

    return serve()


def _run_run(argv: list[str]) -> int:
    # Imported here: the linter never loads the runtime guard (or, through a script, TensorFlow).
    from graphguard.runtime.launcher import main as run_guarded

    return run_guarded(argv)


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


#: Set by ``check`` when run as the command (``main()`` without ``argv``): the checker that holds the
#: run's facts until the process ends (see :func:`main`).
_HELD: list = []


def main(argv: list[str] | None = None) -> int:
    """Run the command line with ``argv`` (default ``sys.argv[1:]``); returns the exit code (130 for
    Ctrl-C at any point, without a traceback).

    As the command (no ``argv``), ``check`` ends the process with ``os._exit`` once its output is
    flushed, as mypy's ``hard_exit`` does: the run's facts and summaries (millions of small objects on
    a large tree) are never freed one by one, which took about 0.8 s of a 10 s cold run over 720k lines,
    and the interpreter's shutdown more. Nothing is left to do by then: the workers have been joined,
    the cache written and ``-o`` closed."""
    try:
        status = _main(argv, hold=argv is None)
    except KeyboardInterrupt:
        import signal

        signal.signal(signal.SIGINT, signal.SIG_IGN)  # a second Ctrl-C while exiting is not a traceback
        if argv is None:  # the command line itself: leave now, without the interpreter's shutdown, whose
            _leave(130)   # thread joins can print "Exception ignored" noise
        return 130
    if _HELD:
        _leave(status)
    return status


def _leave(status: int) -> None:
    """End the process now with ``status``, after flushing the standard streams (see :func:`main`)."""
    for stream in (sys.stdout, sys.stderr):  # (``_main`` has flushed stdout and answered its errors)
        try:
            if stream is not None:
                stream.flush()
        except (OSError, ValueError):
            pass
    os._exit(status)


def _main(argv: list[str] | None, hold: bool = False) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    if sys.stdout is None or sys.stderr is None:  # started with `>&-`: Python has no stream to write to
        if sys.stderr is not None:
            print("graphguard: error: standard output is closed", file=sys.stderr)
        return EXIT_ERROR
    try:
        os.getcwd()
    except FileNotFoundError:  # removed under the shell: every relative path (``.``, the cache) fails
        print("graphguard: error: the current directory no longer exists (cd to one that does)", file=sys.stderr)
        return EXIT_ERROR
    if argv[:1] == ["run"]:  # the script's arguments must reach it as given, so argparse stays out
        return _run_run(argv[1:])
    for stream in (sys.stdout, sys.stderr):
        # A file name that is not valid UTF-8 (kept by Python as surrogate escapes) is printed with
        # backslash escapes, not a UnicodeEncodeError traceback.
        if hasattr(stream, "reconfigure"):
            stream.reconfigure(errors="backslashreplace")
    parser = _build_parser()
    try:
        args, extra = parser.parse_known_args(argv)
        if extra:  # said by the command's own parser, so the hint names its --help
            where = f"graphguard {args.command}" if args.command else "graphguard"
            raise UsageError(f"unrecognized arguments: {' '.join(extra)} (see '{where} --help')")
        if args.command is None:
            parser.print_help()
            return EXIT_ERROR
        runner = {"check": _run_check, "clean": _run_clean, "rule": _run_rule, "demo": _run_demo,
                  "server": _run_server}[args.command]
        args.hold = hold and args.command == "check"
        status = runner(args)
        sys.stdout.flush()  # here, not at exit: a full disk is an error line, not "Exception ignored"
        return status
    except UsageError as error:
        print(f"graphguard: error: {error}", file=sys.stderr)
        return EXIT_ERROR
    except BrokenPipeError:
        # `graphguard check | head`: stop quietly, as other command-line tools do.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return EXIT_CLEAN
    except OSError as error:
        if error.errno not in (errno.ENOSPC, errno.EIO, errno.EBADF, errno.EDQUOT):
            raise
        # Writing the output failed (`> /dev/full`, a full disk): one line, and nothing more to flush.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        print(f"graphguard: error: cannot write the output: {error.strerror}", file=sys.stderr)
        return EXIT_ERROR
