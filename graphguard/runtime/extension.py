"""``%load_ext graphguard``: every session and ``tf.function`` run by a notebook's cells, guarded (docs/notebooks.md).

From the cell that loads the extension on, every ``tf.compat.v1`` session the cells run gets a
count-mode :class:`~graphguard.runtime.guard.GraphGuard` and every ``tf.function`` call is counted by a
:class:`~graphguard.runtime.trace.TraceGuard`, as under ``graphguard run`` (:mod:`graphguard.runtime.watch`).
A cell whose loop builds ops per step, or calls a ``tf.function`` with a Python number that changes,
stops with the guard's error under it, naming the cell's line as IPython's tracebacks do
(``cell In[7], line 3``, :func:`graphguard.runtime.notebook.cell_label`), the op types and the fix.
The traceback shows the cell's frames only, not graphguard's or TensorFlow's. Sessions outlive cells:
a session's warm-up (its first 2 runs) is counted once, and a cell that builds ops into a guarded
session's graph each time it is re-run is growth too, the second time its line builds again.

``%graphguard`` says whether it is on and what it counted; ``%graphguard off`` stops guarding (open
sessions' guards are released, their reports kept); ``%graphguard on [max_traces=20 on_growth=warn ...]``
starts again, or goes on, with those options (:mod:`graphguard.guard_options`: for sessions opened from
then on and every ``tf.function`` call; a session guarded before ``off`` resumes without a second
warm-up); ``%graphguard report`` prints every
session's report and the ``tf.function`` table. A bad command or option is IPython's one-line
``UsageError``.

TensorFlow is not imported by the extension: a cell's own ``import tensorflow`` is seen by the watch's
finder. IPython is not imported either: the shell is the one given to :func:`load`.
"""

from __future__ import annotations

from typing import Any, Optional

from graphguard.guard_options import DEFAULTS, OPTIONS, OptionError, guard_kwargs, parse
from graphguard.runtime.attribution import user_traceback
from graphguard.runtime.errors import GraphGrowthError, RssGrowthError
from graphguard.runtime.trace import RetracingError, TraceGuard
from graphguard.runtime.trace_report import TraceReport
from graphguard.runtime.watch import SessionReport, Watch

__all__ = ["NotebookGuard", "load", "unload"]

_ERRORS = (GraphGrowthError, RetracingError, RssGrowthError)
_USAGE = "%graphguard [on [option=value ...] | off | report]"


class NotebookGuard:
    """The guards of one IPython shell (made by ``%load_ext graphguard``).

    Args:
        shell: the running ``InteractiveShell`` (``get_ipython()``, or the ipykernel shell).

    Attributes:
        options: the options in use (:data:`graphguard.guard_options.DEFAULTS` until ``%graphguard on ...``).
        watch: the running :class:`~graphguard.runtime.watch.Watch`, ``None`` when off.
    """

    def __init__(self, shell: Any) -> None:
        self.shell = shell
        self.options: dict[str, Any] = dict(DEFAULTS)
        self.watch: Optional[Watch] = None
        self._sessions: list[SessionReport] = []  # from watches stopped by %graphguard off
        self._traces: list[TraceReport] = []
        self._custom_exc = False
        self._last: Optional[Watch] = None  # the watch %graphguard off stopped: the next one resumes it

    # -- on and off ---------------------------------------------------------------------------------

    def on(self, options: Optional[dict[str, Any]] = None) -> None:
        """Guard every session and ``tf.function`` from now on, with ``options`` (checked) over the
        current ones. While guarding: the options apply to sessions opened from now on and to
        ``tf.function`` calls; open sessions keep their guards (their warm-up is not counted again).
        After ``off``: a session guarded before resumes under its number, without a second warm-up."""
        self.options.update(options or {})
        if self.watch is not None:
            self.watch.sessions.options = guard_kwargs(self.options)
            trace = self.watch.trace_guard
            if trace is not None:
                trace.max_traces, trace.on_retrace = self.options["max_traces"], self.options["on_retrace"]
            return
        self.watch = Watch(guard_kwargs(self.options), TraceGuard(self.options["max_traces"], self.options["on_retrace"]),
                           after=self._last)
        self.watch.start()
        if not self.shell.custom_exceptions:  # a handler the user set is left alone
            self.shell.set_custom_exc(_ERRORS, _show_error)
            self._custom_exc = True

    def off(self) -> None:
        """Stop guarding; the guards of open sessions are released and every report is kept."""
        watch, self.watch = self.watch, None
        if watch is not None:
            watch.stop(release=True)
            self._sessions += watch.reports()
            self._traces.append(watch.trace_guard.report())
            self._last = watch
        if self._custom_exc and self.shell.custom_exceptions == _ERRORS:
            self.shell.set_custom_exc((), None)
        self._custom_exc = False

    # -- what it counted ---------------------------------------------------------------------------

    def sessions(self) -> list[SessionReport]:
        """Every guarded session's report since the extension was loaded, numbered in order."""
        out = list(self._sessions)
        if self.watch is not None:
            out += self.watch.reports()
        return out

    def traces(self) -> list[TraceReport]:
        """The ``tf.function`` reports, one per ``%graphguard on`` period that called one."""
        out = list(self._traces)
        if self.watch is not None:
            out.append(self.watch.trace_guard.report())
        return [report for report in out if report.functions]

    def status(self) -> str:
        """One line: on or off, the options, what was counted."""
        state = "on" if self.watch is not None else "off"
        options = " ".join(f"{name}={value}" for name, value in self.options.items())
        sessions = {number for number, _, _ in self.sessions()}  # a session resumed after off is one session
        functions = sum(len(report.functions) for report in self.traces())
        return (f"graphguard: {state} ({options}); {len(sessions)} session{'s' * (len(sessions) != 1)} guarded, "
                f"{functions} tf.function{'s' * (functions != 1)} counted ({_USAGE})")

    def report(self) -> str:
        """Every session's report (as ``graphguard run`` prints them) and the ``tf.function`` table."""
        sessions, traces = self.sessions(), self.traces()
        if not sessions and not traces:
            return "graphguard: no tf.compat.v1 session ran and no tf.function was called under the guards yet"
        lines = []
        if sessions:
            numbers = {number for number, _, _ in sessions}
            grew = len({number for number, _, report in sessions if report.grew or report.stopped})
            lines.append(f"graphguard: {len(numbers)} session{'s' * (len(numbers) != 1)} guarded (count mode, "
                         f"{self.options['warmup_steps']} warm-up steps per session), {grew} grew")
            shown: set[int] = set()
            for number, kind, report in sessions:
                again = " after %graphguard off and on" if number in shown else ""
                shown.add(number)
                lines += [f"-- session {number} ({kind}){again} --", str(report)]
        lines += [report.format() for report in traces]
        return "\n".join(lines)

    # -- the magic ---------------------------------------------------------------------------------

    def magic(self, line: str) -> None:
        """``%graphguard [on [option=value ...] | off | report]``; raises IPython's ``UsageError``
        (one line) for anything else."""
        words = line.split()
        command = words[0] if words else ""
        if not words:
            print(self.status())
        elif command == "on":
            self.on(_options(words[1:]))
            print(self.status())
        elif command == "off" and len(words) == 1:
            self.off()
            print(self.status())
        elif command == "report" and len(words) == 1:
            print(self.report())
        else:
            raise _usage(f"%graphguard: unknown command {line.strip()!r}: {_USAGE}")


def _usage(message: str) -> Exception:
    from IPython.core.error import UsageError  # IPython is running: this is its magic

    return UsageError(message)


def _options(words: list[str]) -> dict[str, Any]:
    """``["max_traces=20", "on_growth=warn"]`` -> checked options; ``UsageError`` for a bad one."""
    out: dict[str, Any] = {}
    for word in words:
        name, equals, value = word.partition("=")
        try:
            if not equals or not value:
                raise OptionError(f"%graphguard on: {word!r} is not option=value (options: {', '.join(OPTIONS)})")
            out[name] = parse(name, value, "%graphguard on")
        except OptionError as error:
            message = str(error)
        else:
            continue
        raise _usage(message)
    return out


def _show_error(shell: Any, etype: type, value: BaseException, tb: Any, tb_offset: Optional[int] = None) -> None:
    """IPython's custom exception handler for the guards' errors: the traceback cut after the cell's
    last frame (TensorFlow's and graphguard's frames below it left out), then the error's message."""
    shell.showtraceback((etype, value, user_traceback(tb)), tb_offset=tb_offset)


_LOADED: dict[int, NotebookGuard] = {}


def _note_cell(info: Any) -> None:
    """IPython's ``pre_run_cell`` event: :func:`graphguard.runtime.notebook.note_cell`."""
    from graphguard.runtime.notebook import note_cell, running_shell

    shell = running_shell()
    if shell is not None:
        note_cell(shell, getattr(info, "raw_cell", ""))


def load(shell: Any) -> NotebookGuard:
    """``%load_ext graphguard``: guard from now on and register ``%graphguard``; returns the guard."""
    guard = _LOADED.get(id(shell))
    if guard is None:
        guard = _LOADED[id(shell)] = NotebookGuard(shell)
        shell.register_magic_function(guard.magic, magic_kind="line", magic_name="graphguard")
        events = getattr(shell, "events", None)
        if events is not None:
            events.register("pre_run_cell", _note_cell)
    if guard.watch is None:
        guard.on()
    return guard


def unload(shell: Any) -> None:
    """``%unload_ext graphguard``: stop guarding and remove ``%graphguard``."""
    guard = _LOADED.pop(id(shell), None)
    if guard is None:
        return
    guard.off()
    events = getattr(shell, "events", None)
    if events is not None and _note_cell in events.callbacks.get("pre_run_cell", ()):
        events.unregister("pre_run_cell", _note_cell)
    magics = getattr(getattr(shell, "magics_manager", None), "magics", {})
    magics.get("line", {}).pop("graphguard", None)
