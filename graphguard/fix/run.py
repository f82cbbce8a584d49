"""``graphguard check --fix / --unsafe-fixes / --diff / --fix-only``: the command-line side of fixing.

Each file with a fixable finding is fixed by :func:`graphguard.fix.apply.fix_text`, re-linted in the
context of the whole run (helpers in other files still count); then, as ruff does:

- ``--diff``: the unified diffs go to stdout, nothing is written; exit 1 when there is a diff;
- ``--fix``: changed files are written atomically (as ``--add-noqa`` writes), the remaining findings are
  reported in the chosen format, and the summary says ``Found N findings (F fixed, R remaining).``;
  exit 1 when findings remain;
- ``--fix-only``: the same writing, no findings reported; exit 0;
- stdin (``-``): the fixed source goes to stdout and the remaining findings to stderr.

A file whose fix failed a check is left as it was, with one warning line saying why.
"""

from __future__ import annotations

import os
import sys
from typing import Callable

from graphguard.lint import EXIT_CLEAN, EXIT_ERROR, EXIT_FINDINGS


def run_fixes(args, files: list, sources: dict | None, diagnostics: list, relint: Callable[[str, bytes], list],
              errors: list, output_format: str, write: Callable, note: str = "") -> int:
    """Fix, write or show, report; returns the exit status. ``relint(filename, bytes)`` lints one file's
    new bytes in the run's context and returns its reported findings; ``write(findings, out)`` prints
    findings in the chosen output format; ``note`` ends the summary line (``"; 1 finding in a short
    loop not shown (...)"``: a fix run must not drop what a check run says of hidden findings)."""
    from graphguard.fix.edits import FIXABLE_CODES
    from graphguard.fix.apply import decode, encode_like, encoding_of, file_bytes, fix_text
    import dataclasses

    from graphguard.diagnostics import Diagnostic
    from graphguard.notebook import is_notebook, python_source
    from graphguard.notebook_edit import with_module
    from graphguard.fix.source import python2_reason
    from graphguard.suppressions import write_keeping

    failed = bool(errors)
    candidates = sorted({d.filename for d in diagnostics if d.code in FIXABLE_CODES})
    fixed_files, remaining, applied, hidden = {}, [], 0, 0
    by_file: dict[str, list] = {}
    for d in diagnostics:
        by_file.setdefault(d.filename, []).append(d)
    for filename in candidates:
        notebook = is_notebook(filename)
        try:
            raw = file_bytes(filename, sources)
            python2 = python2_reason(filename, raw)
            if python2:
                print(f"graphguard: warning: {filename}: {python2}; left unchanged", file=sys.stderr)
                continue
            if notebook:  # the fixes work on its code cells as one module; with_module puts them back
                text = python_source(filename, raw).decode("utf-8", "surrogatepass")
                with_module(raw, text)  # unchanged, it must come back as it is (a layout it can write)
            else:
                text = decode(raw)
        except (OSError, UnicodeDecodeError, SyntaxError, ValueError) as error:
            print(f"graphguard: warning: {filename}: cannot fix it: {getattr(error, 'strerror', None) or error}",
                  file=sys.stderr)
            continue

        def lint(new: str, f: str = filename, r: bytes = raw, notebook: bool = notebook) -> list:
            if not notebook:
                return relint(f, encode_like(r, new))
            try:
                return relint(f, with_module(r, new))
            except ValueError as error:  # a new kind of finding: fix_text drops the fix that caused it
                return [Diagnostic(f, 1, 1, "GG001", "syntax-error", f"cannot put the fix back into the notebook: "
                                   f"{error}", 1, 2)]

        try:
            with _ctrl_c_between_files() as interrupted:
                result = fix_text(filename, text, lint, unsafe=args.unsafe_fixes, first=by_file.get(filename, []))
                if notebook and result.fixed != result.original:  # from here on, the notebook's JSON
                    # (decoded as the file is written back, by encode_like: a byte-order mark is the
                    # encoding's, not a character of the text, or writing it would add a second one)
                    result = dataclasses.replace(result, original=decode(raw), fixed=decode(with_module(raw, result.fixed)))
        except (KeyboardInterrupt, SystemExit):
            raise
        except (RecursionError, MemoryError):  # a 500-term sum: libcst cannot hold it (a new user's trial)
            print(f"graphguard: warning: {filename}: nested too deeply to fix; left unchanged", file=sys.stderr)
            continue
        except Exception as error:  # a bug in graphguard: this file is left as it was, the others go on
            if interrupted:
                raise KeyboardInterrupt from None
            what = str(error).splitlines()[0][:200] if str(error) else ""
            print(f"graphguard: internal error: {filename}: while fixing it: {type(error).__name__}: {what} "
                  "(please report this); left unchanged", file=sys.stderr)
            failed = True
            continue
        hidden += result.hidden
        if result.note:
            note = result.note
            if notebook:  # rows of the module the cells form, as cells and rows
                from graphguard.notebook import message_in_cells, notebook_of

                cells = notebook_of(filename, raw)
                note = message_in_cells(note, filename, cells) if cells is not None else note
            print(f"graphguard: warning: {filename}: {note}", file=sys.stderr)
        if result.fixed != result.original:
            fixed_files[filename] = (raw, result)
            # Findings gone, not fixes applied: one fix can remove two findings (an op and its Saver).
            applied += max(0, len(by_file.get(filename, [])) - len(result.remaining))
            by_file[filename] = result.remaining
    remaining = sorted((d for items in by_file.values() for d in items),
                       key=lambda d: (d.filename, d.row, d.column, d.code))

    if args.diff:
        from graphguard.lint import open_output

        out = open_output(args.output_file) if args.output_file else sys.stdout
        out.flush()
        for filename, (raw, result) in sorted(fixed_files.items()):
            try:
                mtime = os.stat(filename).st_mtime
            except OSError:
                mtime = None
            out.buffer.write(result.diff(encoding_of(raw), bom=raw.startswith(b"\xef\xbb\xbf"), mtime=mtime))
        out.buffer.flush()
        if out is not sys.stdout:
            out.close()
        if not args.quiet:
            print(f"Would fix {applied} finding{'s' if applied != 1 else ''}"
                  f"{_hidden(hidden)}." if applied else f"No fixes available{_hidden(hidden)}.", file=sys.stderr)
        return EXIT_ERROR if failed else (EXIT_FINDINGS if fixed_files and not args.exit_zero else EXIT_CLEAN)

    stdin = bool(sources) and files == list(sources)
    if stdin:
        name = files[0]
        raw = sources[name]
        if name in fixed_files:
            sys.stdout.buffer.write(encode_like(raw, fixed_files[name][1].fixed))
        else:
            sys.stdout.buffer.write(raw)
            if sys.stdin is not None:
                # A source over max-file-bytes was read only that far (GG002): the rest follows as it
                # came, so an editor piping its buffer through gets it all back (found by a new user:
                # 17 MB in, 16 MiB out).
                import shutil

                shutil.copyfileobj(sys.stdin.buffer, sys.stdout.buffer)
        sys.stdout.flush()
        if not args.fix_only:
            write(remaining, sys.stderr) if remaining else None
    else:
        for filename, (raw, result) in sorted(fixed_files.items()):
            try:
                real = os.path.realpath(filename)
                info = os.stat(real)
                if not info.st_mode & 0o222:
                    raise ValueError("the file is read-only; left unchanged")
                write_keeping(real, info, encode_like(raw, result.fixed))
            except (OSError, ValueError) as error:
                print(f"graphguard: error: {filename}: {getattr(error, 'strerror', None) or error}", file=sys.stderr)
                failed = True
                applied -= max(0, len(result.remaining_before) - len(result.remaining))
                remaining = [d for d in remaining if d.filename != filename] + list(result.remaining_before)
        if not args.fix_only:
            out = sys.stdout
            if args.output_file:
                from graphguard.lint import open_output

                out = open_output(args.output_file)
            write(remaining, out)

    if applied and note.endswith(("shows it)", "shows them)")):
        # (a tenth new user's trial: "0 remaining", then graphguard run stopped the fixed script at a
        # Saver per epoch of a 6-epoch loop, the short-loop finding the fix left)
        # (a fifteenth trial: graphguard run tolerates such growth now; a guard in a test or a notebook stops it)
        note = note[:-1] + (f"; --fix leaves {'it' if note.endswith('it)') else 'them'}: graphguard run tolerates such "
                            f"growth too, GraphGuard in a test stops it)")
    if not args.quiet:
        if args.fix_only:
            print(f"Fixed {applied} finding{'s' if applied != 1 else ''}{_hidden(hidden)}{note}.", file=sys.stderr)
        elif applied or remaining:
            total = applied + len(remaining)
            print(f"Found {total} finding{'s' if total != 1 else ''} ({applied} fixed, {len(remaining)} remaining)"
                  f"{_hidden(hidden)}{note}.", file=sys.stderr)
        else:  # as check says it: findings left out by the bound are no clean pass
            opening = "No findings shown" if note else "All checks passed"
            print(f"{opening} ({len(files)} file{'s' if len(files) != 1 else ''} checked){note}.", file=sys.stderr)
    if failed:
        return EXIT_ERROR
    if remaining and not args.fix_only and not args.exit_zero:
        return EXIT_FINDINGS
    return EXIT_CLEAN


class _ctrl_c_between_files:
    """Ctrl-C while a file is being fixed takes effect when that file is done (a KeyboardInterrupt
    raised inside libcst's tree walks left it broken, and the next step failed with a KeyError that was
    reported as an internal error): the interrupt is noted, then raised on leaving. Truthy once noted."""

    def __enter__(self):
        import signal
        import threading

        self.noted = False
        self.previous = None
        if threading.current_thread() is threading.main_thread():
            self.previous = signal.signal(signal.SIGINT, self._note)
        return self

    def _note(self, signum, frame) -> None:
        self.noted = True

    def __bool__(self) -> bool:
        return self.noted

    def __exit__(self, *exc) -> bool:
        import signal

        if self.previous is not None:
            signal.signal(signal.SIGINT, self.previous)
        if self.noted and exc[0] is None:
            raise KeyboardInterrupt
        return False


def _hidden(count: int) -> str:
    if not count:
        return ""
    return f"; {count} more fixable with --unsafe-fixes"
