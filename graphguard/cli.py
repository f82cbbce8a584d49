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
import os
import sys

from graphguard import __version__
from graphguard.check_run import HELD as _HELD, check as _run_check
from graphguard.lint import EXIT_CLEAN, EXIT_ERROR, UsageError, default_cache_dir, known_codes


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
    check.add_argument("--config", metavar="FILE|KEY=VALUE", action="append",
                       help="use this pyproject.toml instead of the closest one, or set one [tool.graphguard] key "
                            "over it: --config 'max-bounded-iterations = 0' (repeatable)")
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
    rule.add_argument("code", nargs="?", help="a rule code or name, e.g. GG102 or saver-in-session-loop")
    rule.add_argument("--all", action="store_true", help="list every rule")
    rule.add_argument("--output-format", choices=("text", "json"), default="text")

    demo = commands.add_parser("demo", help="lint and run a demo: the Tesla P4 slowdown (default), leaking sweeps "
                               "or TF 2 retracing (needs TensorFlow)")
    demo.add_argument("which", nargs="?", choices=("slowdown", "sweep", "tf2"), default="slowdown", metavar="DEMO",
                      help="slowdown (default): the graph that grows in a session loop; sweep: sweeps that keep "
                           "every trial's model, under SweepGuard; tf2: a TF 2 training loop that passes its step "
                           "to a tf.function as a Python int and retraces it every step, under TraceGuard")
    demo.add_argument("--steps", type=int, default=200,
                      help="slowdown and tf2: training steps per script (default: 200)")
    demo.add_argument("--plot", metavar="FILE.png",
                      help="slowdown and sweep: also draw the measured curves into this PNG file (needs matplotlib: "
                           "pip install -e '.[plot]' in a clone of graphguard)")

    commands.add_parser("server", help="run the language server (LSP over stdio) for editors: see docs/editor.md "
                        "(needs pygls: pip install -e '.[server]' from a clone)",
                        description="Run graphguard's language server (LSP 3.17, JSON-RPC over stdin/stdout): the "
                        "editor starts `graphguard server` and talks to it; there are no command-line options. "
                        "Settings come as the client's initializationOptions: debounce (seconds after the last "
                        "change before a lint, default 0.2; or debounceMs) and scope (\"auto\", \"project\" or "
                        "\"imports\": which files a lint while typing checks). The configuration is "
                        "[tool.graphguard] in the workspace root's pyproject.toml. Needs pygls: pip install -e "
                        "'.[server]' from a clone of graphguard. Editor set-up (VS Code, Neovim, Helix): "
                        "docs/editor.md.")

    # Listed here for --help only: main() hands everything after "run" to the launcher untouched.
    commands.add_parser("run", add_help=False, help="run a script with every tf.compat.v1 session guarded and tf.function traces counted (needs TensorFlow)")
    return parser


def _run_clean(args) -> int:
    from graphguard.cache import clean
    from graphguard.config import ConfigError, find_config, load_config

    folder = args.cache_dir
    if folder is None:
        try:
            folder = default_cache_dir(load_config(find_config("."), known_codes()))
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
        import shutil
        import textwrap

        # Each rule's code and name on a line of its own (``| grep GG2`` finds them), its summary
        # wrapped below it, a blank line between rules (a new user's trial: one line of up to 1,400
        # characters per rule). ``graphguard rule CODE`` prints the whole page.
        width = max(40, min(shutil.get_terminal_size((88, 24)).columns, 100) - 1)
        entries = [*((code, rule.NAME, rule.summary()) for code, rule in RULES.items()),
                   *((code, name, summary) for code, (name, summary) in CHECKER_CODES.items()),
                   ("GG900", "unused-suppression", "A suppression comment that suppressed nothing (off unless selected).")]
        blocks = [f"{code}  {name}\n" + textwrap.fill(summary, width, initial_indent="    ", subsequent_indent="    ",
                                                      break_long_words=False, break_on_hyphens=False)
                  for code, name, summary in entries]
        print("\n\n".join(blocks))
        return EXIT_CLEAN
    code = args.code.upper()
    by_name = {rule.NAME: rule_code for rule_code, rule in RULES.items()}
    by_name.update({name: checker_code for checker_code, (name, _) in CHECKER_CODES.items()})
    by_name["unused-suppression"] = "GG900"
    code = by_name.get(args.code.lower(), code)  # ``graphguard rule op-in-session-loop``, as ruff takes names
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
    raise UsageError(f"unknown rule {args.code!r} (see 'graphguard rule --all')")


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
                         "pip install -e '.[demo]' in a clone of graphguard")
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
        raise UsageError("the language server needs pygls: pip install -e '.[server]' in a clone of graphguard")
    from graphguard.server import serve

    return serve()


def _run_run(argv: list[str]) -> int:
    # Imported here: the linter never loads the runtime guard (or, through a script, TensorFlow).
    from graphguard.runtime.launcher import main as run_guarded

    return run_guarded(argv)


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
