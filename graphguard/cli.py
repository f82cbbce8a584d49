"""The ``graphguard`` command line.

Exit codes (as ruff's):

* ``0`` - no findings (or ``--exit-zero``);
* ``1`` - findings were reported (``GG001`` syntax errors included);
* ``2`` - usage error (a bad flag, an unknown code, a missing path) or an internal error.

Errors are one line on stderr, never a traceback.
"""

from __future__ import annotations

import argparse
import os
import sys

from graphguard import __version__

EXIT_CLEAN, EXIT_FINDINGS, EXIT_ERROR = 0, 1, 2


class UsageError(Exception):
    """A bad command line; printed as one line, exit code 2."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str):  # one line, not argparse's usage block
        raise UsageError(f"{message} (see '{self.prog} --help')")


def _codes(text: str) -> list[str]:
    return [part.strip().upper() for part in text.split(",") if part.strip()]


def _expand(selectors: list[str], known: list[str], flag: str) -> set[str]:
    """Codes matched by ``selectors``: an exact code, a prefix (``GG1``), or ``ALL``."""
    chosen: set[str] = set()
    for selector in selectors:
        matched = known if selector == "ALL" else [code for code in known if code.startswith(selector)]
        if not matched:
            raise UsageError(f"{flag}: unknown rule code or prefix {selector!r} (see 'graphguard rule --all')")
        chosen.update(matched)
    return chosen


def _build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="graphguard", description="Find TensorFlow graph growth: ops built inside session loops.")
    parser.add_argument("--version", action="version", version=f"graphguard {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)

    check = commands.add_parser("check", help="lint Python files (default: the current folder)")
    check.add_argument("paths", nargs="*", default=["."], metavar="PATH", help="files or folders to check")
    check.add_argument("--output-format", choices=("concise", "json"), default="concise", help="default: concise")
    check.add_argument("--select", type=_codes, default=None, metavar="CODES",
                       help="comma-separated codes or prefixes to enable (default: ALL)")
    check.add_argument("--ignore", type=_codes, default=[], metavar="CODES", help="codes or prefixes to disable")
    check.add_argument("--exit-zero", action="store_true", help="exit 0 even when there are findings")
    check.add_argument("-q", "--quiet", action="store_true", help="no summary on stderr")
    check.add_argument("--statistics", action="store_true", help="print counts per code instead of findings")

    rule = commands.add_parser("rule", help="show a rule's documentation")
    rule.add_argument("code", nargs="?", help="a rule code, e.g. GG102")
    rule.add_argument("--all", action="store_true", help="list every rule")

    demo = commands.add_parser("demo", help="lint and run the Tesla P4 slowdown demo (needs TensorFlow)")
    demo.add_argument("--steps", type=int, default=200, help="training steps per script (default: 200)")
    return parser


def _run_check(args) -> int:
    from graphguard.checker import Checker
    from graphguard.discovery import find_python_files
    from graphguard.reporters import WRITERS
    from graphguard.rules import CHECKER_CODES, RULES

    known = sorted(set(RULES) | set(CHECKER_CODES))
    selected = _expand(args.select, known, "--select") if args.select else set(known)
    selected -= _expand(args.ignore, known, "--ignore")
    try:
        files = find_python_files(args.paths)
    except FileNotFoundError as missing:
        raise UsageError(f"{missing.args[0]}: no such file or directory") from None

    report = Checker(selected).check_paths(files)
    diagnostics = report.diagnostics
    for error in report.errors:  # a bug in graphguard: say where; the other files were still checked
        print(f"graphguard: internal error: {error} (please report this)", file=sys.stderr)

    if args.statistics:
        counts: dict[tuple[str, str], int] = {}
        for d in diagnostics:
            counts[(d.code, d.name)] = counts.get((d.code, d.name), 0) + 1
        for (code, name), count in sorted(counts.items()):
            sys.stdout.write(f"{count:>6}  {code}  {name}\n")
    else:
        WRITERS[args.output_format](diagnostics, sys.stdout)

    if not args.quiet:
        flagged = len({d.filename for d in diagnostics})
        if diagnostics:
            noun = "finding" if len(diagnostics) == 1 else "findings"
            print(f"Found {len(diagnostics)} {noun} in {flagged} of {len(files)} files checked.", file=sys.stderr)
        else:
            print(f"All checks passed ({len(files)} files checked).", file=sys.stderr)

    if report.errors:
        return EXIT_ERROR
    if diagnostics and not args.exit_zero:
        return EXIT_FINDINGS
    return EXIT_CLEAN


def _run_rule(args) -> int:
    from graphguard.rules import CHECKER_CODES, RULES
    from graphguard.rules.docs import render

    if args.all or args.code is None:
        for code, rule in RULES.items():
            print(f"{code}  {rule.NAME:<32} {rule.summary()}")
        for code, (name, summary) in CHECKER_CODES.items():
            print(f"{code}  {name:<32} {summary}")
        return EXIT_CLEAN
    code = args.code.upper()
    if code in RULES:
        sys.stdout.write(render(RULES[code]))
        return EXIT_CLEAN
    if code in CHECKER_CODES:
        name, summary = CHECKER_CODES[code]
        print(f"# {code} {name}\n\n{summary}")
        return EXIT_CLEAN
    raise UsageError(f"unknown rule code {args.code!r} (see 'graphguard rule --all')")


def _run_demo(args) -> int:
    if args.steps < 1:
        raise UsageError("--steps must be at least 1")
    from graphguard.demo import run_demo

    return run_demo(steps=args.steps)


def main(argv: list[str] | None = None) -> int:
    """Run the command line with ``argv`` (default ``sys.argv[1:]``); returns the exit code."""
    parser = _build_parser()
    try:
        args = parser.parse_args(argv)
        if args.command is None:
            parser.print_help()
            return EXIT_ERROR
        runner = {"check": _run_check, "rule": _run_rule, "demo": _run_demo}[args.command]
        return runner(args)
    except UsageError as error:
        print(f"graphguard: error: {error}", file=sys.stderr)
        return EXIT_ERROR
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        # `graphguard check | head`: stop quietly, as other command-line tools do.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return EXIT_CLEAN
