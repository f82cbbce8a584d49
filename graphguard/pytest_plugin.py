"""``pytest --graphguard``: every test run with graphguard's runtime guards on (docs/pytest.md).

Registered through the ``pytest11`` entry point, so pytest loads it wherever graphguard is installed;
it does nothing unless ``--graphguard`` is given. Then, for each test (setup and call):

* every ``tf.compat.v1`` session the test runs gets a count-mode
  :class:`~graphguard.runtime.guard.GraphGuard`, as under ``graphguard run``: ops built after a session's
  warm-up runs by a line that builds again on a later step (a loop that builds an op per step), a line
  that builds ops for each new session on one graph, a burst too large to be a one-off;
* every ``tf.function`` call is counted by a :class:`~graphguard.runtime.trace.TraceGuard`; a function
  object that traces more than ``max_traces`` times (a Python ``int`` step counter) is retracing.

With ``on_growth`` / ``on_retrace`` ``"raise"`` (the defaults) the guard raises at the test's leaking
line, so the test fails there with the guard's message: the op types, the lines that built them and
the fix (graphguard's own frames are left out of the traceback). Growth the test swallowed (a broad
``except``) fails it when the call ends. ``"warn"`` issues the guard's warning and lets the test pass.
The session ends with a ``graphguard`` section (:func:`pytest_terminal_summary`): the tests that ran
TensorFlow, what each one did, and what failed. ``@pytest.mark.graphguard(...)`` sets a test's
options, ``skip=True`` leaves it alone; the suite's options come from ``[tool.graphguard.pytest]`` in
``pyproject.toml`` and pytest's ini (``graphguard_max_traces = 20``; ``-o`` on the command line),
checked by :mod:`graphguard.guard_options`.

Cost: this module imports only pytest and :mod:`graphguard.guard_options` (no TensorFlow, nothing of the
runtime), so pytest starts as fast with it as without. A test that never imports TensorFlow costs a
``sys.modules`` test and a finder in ``sys.meta_path`` for its duration; the runtime is imported when a
test imports TensorFlow (the finder sees ``tensorflow`` being looked up) or starts with it imported.
With TensorFlow, about 4 us per ``Session.run`` and 2 us per ``tf.function`` call (docs/graph-guard.md
and docs/trace-guard.md, "Costs"), and a few microseconds per test for the patches;
``bench/pytest_overhead.py`` measures a suite of small TensorFlow tests with and without the plugin.
"""

from __future__ import annotations

import sys
from typing import Any, Optional

import pytest

from graphguard.guard_options import OPTIONS, PYTEST_DEFAULTS, OptionError, check, parse, toml_key

__all__ = ["pytest_addoption", "pytest_configure", "pytest_unconfigure"]

_MARKER = "graphguard"
_GUARD_ERRORS = ("GraphGrowthError", "RetracingError", "RssGrowthError")
_TF = "tensorflow"
_LISTED = 10  # tests listed in the summary besides the failed and warned ones, unless -v


def pytest_addoption(parser: pytest.Parser) -> None:
    """``--graphguard``, and one ini option per guard option (``graphguard_max_traces`` ...)."""
    group = parser.getgroup("graphguard", "graphguard: TensorFlow graph growth and tf.function retracing")
    group.addoption(
        "--graphguard", action="store_true", default=False,
        help="run each test with graphguard's runtime guards: fail a test whose tf.compat.v1 session loop grows "
             "its graph or whose tf.function keeps retracing (docs/pytest.md)")
    for name, option in OPTIONS.items():
        parser.addini(f"graphguard_{name}", f"pytest --graphguard: {option.help} (default: {option.default})")


def pytest_configure(config: pytest.Config) -> None:
    """Registers the ``graphguard`` marker; with ``--graphguard``, reads the options (one-line
    ``pytest.UsageError`` for a bad one) and registers the per-test guarding."""
    config.addinivalue_line(
        "markers",
        "graphguard(max_traces=8, on_growth='raise', on_retrace='raise', warmup_steps=2, min_growth_steps=2, "
        "min_growth_sessions=3, max_new_ops_per_step=0, skip=False): pytest --graphguard's options for this test; "
        "skip=True leaves it unguarded")
    if not config.getoption("graphguard", False):
        return
    try:
        options = _suite_options(config)
    except OptionError as error:  # a bad pyproject.toml is one too (_suite_options)
        raise pytest.UsageError(str(error)) from None
    config.pluginmanager.register(_Guarding(options, config.getoption("verbose", 0)), "graphguard-guarding")


def pytest_unconfigure(config: pytest.Config) -> None:
    """Stops a test's guards left running (an interrupted session)."""
    guarding = config.pluginmanager.get_plugin("graphguard-guarding")
    if guarding is not None:
        guarding.stop()


def _suite_options(config: pytest.Config) -> dict[str, Any]:
    """The defaults, then ``[tool.graphguard.pytest]`` of the closest ``pyproject.toml`` with a
    ``[tool.graphguard]`` table (from pytest's rootdir up), then pytest's ini options."""
    from graphguard.config import ConfigError, find_config, read_table

    options = dict(PYTEST_DEFAULTS)
    try:
        path = find_config(str(config.rootpath))
        if path is not None:
            where, table = read_table(path)
            written = table.get("pytest", {})
            if not isinstance(written, dict):
                raise OptionError(f"{where}: [tool.graphguard] pytest: expected a table ([tool.graphguard.pytest])")
            for key, value in written.items():
                name = key.replace("-", "_")
                if key != toml_key(name) or name not in OPTIONS:  # snake_case in TOML is unknown, as in ruff
                    raise OptionError(f"{where}: [tool.graphguard.pytest] unknown key {key!r} "
                                      f"(known: {', '.join(toml_key(n) for n in OPTIONS)})")
                options[name] = check(name, value, f"{where}: [tool.graphguard.pytest]", toml_key)
    except ConfigError as error:
        raise OptionError(str(error)) from None
    for name in OPTIONS:
        text = config.getini(f"graphguard_{name}")
        if text:
            options[name] = parse(name, str(text), "pytest ini option", lambda n: f"graphguard_{n}")
    return options


def _marker_options(item: pytest.Item, suite: dict[str, Any]) -> tuple[dict[str, Any], bool]:
    """(the test's options, skip) from its ``graphguard`` markers over ``suite``: a module's or class's
    marker first, the test's own last. Raises :class:`OptionError` for a bad marker (one line)."""
    options, skip = dict(suite), False
    where = f"{item.nodeid}: @pytest.mark.graphguard"
    for mark in reversed(list(item.iter_markers(_MARKER))):
        if mark.args:
            raise OptionError(f"{where}: takes keywords only (max_traces=20, on_growth='warn', skip=True), "
                              f"not {', '.join(repr(arg) for arg in mark.args)}")
        for key, value in mark.kwargs.items():
            if key == "skip":
                if not isinstance(value, bool):
                    raise OptionError(f"{where}: skip must be True or False, not {value!r}")
                skip = value
                continue
            if key not in OPTIONS:
                raise OptionError(f"{where}: unknown keyword {key!r} (known: {', '.join(OPTIONS)}, skip)")
            options[key] = check(key, value, where)
    return options, skip


class _AwaitTensorFlow:
    """A ``sys.meta_path`` finder that starts a test's guards when the test imports TensorFlow, and then
    hands the lookup of ``tensorflow`` to them (their finder patches it as it is executed)."""

    def __init__(self, test: "_TestGuard") -> None:
        self.test = test

    def find_spec(self, fullname: str, path: Any, target: Any = None) -> Any:
        if fullname != _TF:
            return None
        watch = self.test.begin()
        return watch.finder.find_spec(fullname, path, target)


class _TestGuard:
    """One test's guards: its options, and a :class:`~graphguard.runtime.watch.Watch` once TensorFlow is in
    the process (imported before the test, or by it)."""

    def __init__(self, options: dict[str, Any]) -> None:
        self.options = options
        self.watch: Any = None
        self.waiting: Optional[_AwaitTensorFlow] = None

    def start(self) -> None:
        if _TF in sys.modules:
            self.begin()
        else:
            self.waiting = _AwaitTensorFlow(self)
            sys.meta_path.insert(0, self.waiting)

    def begin(self) -> Any:
        self._stop_waiting()
        from graphguard.guard_options import guard_kwargs
        from graphguard.runtime.trace import TraceGuard
        from graphguard.runtime.watch import Watch

        options = self.options
        self.watch = Watch(guard_kwargs(options), TraceGuard(options["max_traces"], options["on_retrace"]))
        self.watch.start()
        return self.watch

    def _stop_waiting(self) -> None:
        if self.waiting is not None:
            if self.waiting in sys.meta_path:
                sys.meta_path.remove(self.waiting)
            self.waiting = None

    def stop(self) -> None:
        self._stop_waiting()
        if self.watch is not None and self.watch.active:
            self.watch.stop(release=True)

    def verdict(self, failure: Optional[BaseException]) -> dict[str, Any]:
        """What the test did, as plain data (it travels from pytest-xdist workers): sessions, steps,
        tf.functions, traces and calls, the growth and retracing found, and whether it fails the test
        (``fail``: the text of the failure when the test did not fail of it already)."""
        record: dict[str, Any] = {"sessions": 0, "steps": 0, "functions": 0, "traces": 0, "calls": 0,
                                  "problems": [], "verdict": "ok", "fail": None}
        watch = self.watch
        if watch is None:
            return record
        reports = watch.reports()
        traces = watch.trace_guard.report()
        record["sessions"] = len(reports)
        record["steps"] = sum(report.stats.steps for _, _, report in reports)
        record["functions"] = len(traces.functions)
        record["traces"] = sum(fn.traces for fn in traces.functions)
        record["calls"] = sum(fn.calls for fn in traces.functions)
        tf = sys.modules.get("tensorflow")
        try:  # TraceGuard judges no call made with eager execution off: say so, or "ok" reads as a pass
            record["eager_off"] = bool(record["functions"] and tf is not None and not tf.executing_eagerly())
        except Exception:  # a partly imported TensorFlow
            record["eager_off"] = False
        grew = [(number, kind, report) for number, kind, report in reports if report.grew or report.stopped]
        problems = [f"graph growth: {growth}" for _, _, report in grew for growth in report.growth]
        problems += [f"stopped: {report.stopped}" for _, _, report in grew if not report.growth]
        retracing = [f"retracing: {fn.summary()} (max_traces={traces.max_traces})"
                     + (f", called from {fn.call_sites[0]}" if fn.call_sites else "") for fn in traces.retracing]
        record["problems"] = problems + retracing
        raising = (grew and self.options["on_growth"] == "raise") or (retracing and self.options["on_retrace"] == "raise")
        if raising:
            record["verdict"] = "failed"
        elif record["problems"]:
            record["verdict"] = "warned"
        if raising and not _is_guard_error(failure):
            text = ["graphguard: this test " + " and ".join(
                what for what, found in (("grew a graph", grew), ("kept retracing a tf.function", retracing)) if found)
                + " (the guard's error did not fail it: the test caught it, or it was raised in another thread)"]
            for number, kind, report in grew:
                text += [f"-- session {number} ({kind}) --", str(report)]
            if retracing:
                text.append(traces.format())
            record["fail"] = "\n".join(text)
        return record


def _is_guard_error(error: Optional[BaseException]) -> bool:
    """``error`` is one of the runtime guards' errors (told by name: the runtime may not be imported)."""
    kind = type(error)
    return error is not None and kind.__name__ in _GUARD_ERRORS and kind.__module__.startswith("graphguard")


def _cut(excinfo: Any) -> Any:
    """A guard error's ``pytest.ExceptionInfo`` on its raw traceback cut after the test's last frame
    (graphguard's runtime and TensorFlow below it dropped); anything else as it is. A new ExceptionInfo:
    pytest rebuilds its Traceback from the raw chain when it cuts it at the test function, so filtering
    ``excinfo.traceback`` would not last."""
    if excinfo is None or not _is_guard_error(excinfo.value) or excinfo.tb is None:
        return excinfo
    from graphguard.runtime.attribution import user_traceback

    return pytest.ExceptionInfo.from_exc_info((excinfo.type, excinfo.value, user_traceback(excinfo.tb)))


class _Guarding:
    """The hooks of ``pytest --graphguard`` (registered by :func:`pytest_configure`)."""

    def __init__(self, options: dict[str, Any], verbose: int) -> None:
        self.options = options
        self.verbose = verbose
        self.test: Optional[_TestGuard] = None
        self.results: list[tuple[str, dict[str, Any]]] = []
        self.skipped: list[str] = []

    def stop(self) -> None:
        if self.test is not None:
            self.test.stop()
            self.test = None

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_setup(self, item: pytest.Item) -> None:
        """Starts the test's guards before its fixtures are set up; a bad marker errors the test (one line)."""
        self.stop()
        try:
            options, skip = _marker_options(item, self.options)
        except OptionError as error:
            bad = str(error)
        else:
            bad = None
        if bad is not None:  # outside the except block: one line, not a chained "during handling" report
            pytest.fail(bad, pytrace=False)
        if skip:
            item.stash[_SKIPPED] = True
            return
        self.test = _TestGuard(options)
        self.test.start()

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_makereport(self, item: pytest.Item, call: pytest.CallInfo) -> Any:
        """Leaves graphguard's frames out of a guard error's traceback; after the call, records what the
        test did and fails a test whose growth or retracing did not fail it already."""
        excinfo = call.excinfo = _cut(call.excinfo)
        # A unittest.TestCase test (tf.test.TestCase) keeps its errors in item._excinfo, which pytest's
        # unittest plugin puts in place of call.excinfo after this hook starts: cut them too.
        held = getattr(item, "_excinfo", None)
        if isinstance(held, list):
            held[:] = [_cut(info) for info in held]
            if excinfo is None or not _is_guard_error(excinfo.value):
                excinfo = next((info for info in held if info is not None and _is_guard_error(info.value)), excinfo)
        outcome = yield
        report = outcome.get_result()
        if item.stash.get(_SKIPPED, False):
            if call.when == "call":
                report.graphguard = {"verdict": "skip"}
            return
        test = self.test
        if test is None or not (call.when == "call" or (call.when == "setup" and report.failed)):
            return
        record = test.verdict(excinfo.value if excinfo is not None else None)
        fail = record.pop("fail")
        if fail and report.passed and not hasattr(report, "wasxfail"):
            report.outcome = "failed"
            report.longrepr = fail
        report.graphguard = record

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_teardown(self, item: pytest.Item) -> None:
        """Stops the test's guards (the guards of sessions still open are released, their reports kept)."""
        self.stop()

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        """Collects each test's record (from pytest-xdist workers too: the record is plain data)."""
        record = getattr(report, "graphguard", None)
        if record is None:
            return
        if record.get("verdict") == "skip":
            self.skipped.append(report.nodeid)
        else:
            record["test_failed"] = bool(report.failed)  # of something else, when graphguard saw nothing
            self.results.append((report.nodeid, record))

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        """The ``graphguard`` section: the tests that ran TensorFlow, what each did, what failed."""
        write = terminalreporter.write_line
        terminalreporter.write_sep("=", "graphguard")
        used = [(nodeid, r) for nodeid, r in self.results if r["sessions"] or r["functions"]]
        failed = [(nodeid, r) for nodeid, r in used if r["verdict"] == "failed"]
        warned = [(nodeid, r) for nodeid, r in used if r["verdict"] == "warned"]
        sessions = sum(1 for _, r in used if r["sessions"])
        functions = sum(1 for _, r in used if r["functions"])
        head = (f"{_plural(len(self.results), 'test')} guarded: {len(used)} ran TensorFlow ({sessions} opened "
                f"tf.compat.v1 sessions, {functions} called tf.functions); {len(failed)} failed, {len(warned)} warned")
        if self.skipped:
            head += f"; {_plural(len(self.skipped), 'test')} left alone (skip=True)"
        write(head)
        for nodeid, record in failed + warned:
            label = "FAILED" if record["verdict"] == "failed" else "WARNED"
            for problem in record["problems"] or ["the guard stopped it"]:
                write(f"{label} {nodeid}: {problem}", red=label == "FAILED", yellow=label == "WARNED")
        quiet = [(nodeid, r) for nodeid, r in used if r["verdict"] == "ok"]
        quiet.sort(key=lambda item: not item[1].get("eager_off"))  # "not judged" is never left unlisted
        shown = quiet if self.verbose > 0 else quiet[:_LISTED]
        for nodeid, record in shown:
            write(f"{_quiet_label(record)} {nodeid}: {_did(record)}")
        if len(shown) < len(quiet):
            write(f"... and {len(quiet) - len(shown)} more tests that ran TensorFlow without growth or retracing (-v lists them)")
        if any(record.get("eager_off") for _, record in used):
            write("not judged: tf.functions called with eager execution off (tf.compat.v1.disable_eager_execution() in "
                  "any imported module turns it off for the whole process; run TF 2 tests in a pytest run of their own)",
                  yellow=True)


def _quiet_label(record: dict[str, Any]) -> str:
    """The summary's label of a test the guards found nothing in: ``ok``, or ``clean`` for a test that
    failed of its own error (a new user's trial: "ok" beside a failed test read as a pass)."""
    return "clean " if record.get("test_failed") else "ok    "


def _did(record: dict[str, Any]) -> str:
    """``1 session, 10 steps; 1 tf.function, 1 trace in 10 calls``."""
    parts = []
    if record["sessions"]:
        parts.append(f"{_plural(record['sessions'], 'session')}, {_plural(record['steps'], 'step')}")
    if record["functions"]:
        parts.append(f"{_plural(record['functions'], 'tf.function')}, {_plural(record['traces'], 'trace')} "
                     f"in {_plural(record['calls'], 'call')}")
        if record.get("eager_off"):
            parts[-1] += " (not judged: eager execution was off)"
    text = "; ".join(parts)
    return text + " (the test failed, not of growth or retracing)" if record.get("test_failed") else text


def _plural(count: int, word: str) -> str:
    return f"{count} {word}{'s' if count != 1 else ''}"


_SKIPPED = pytest.StashKey[bool]()
