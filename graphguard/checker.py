"""Check a set of files: read each once into facts, summarise the project, report through the rules.

The three phases (:mod:`graphguard.analysis.reader`, :mod:`graphguard.analysis.fixpoint`,
:mod:`graphguard.analysis.findings`) see every
file of the run together, so a helper in ``model.py`` called from the loop in ``train.py`` is found
when both are checked in one run (``graphguard check src/``), and not when ``train.py`` is checked
alone.

Cost model, cheapest first:

* **Prefilter.** A file can take part in a finding only through its own imports: it must name
  TensorFlow or Keras, run something (``.run(``, ``.eval(``, ``partial_run``, ``make_callable``,
  ``sess``), make an object of a class named like a model (``TwoLayerNet(``, ``Solver(``: GG202 in
  NumPy code), or import a module of the checked tree (an absolute import whose dotted name is a module
  or package of the run, or any relative import), through which a helper, a factory or a session can
  reach it. A file with none of these is skipped after a few byte searches, unparsed, unless a module
  read calls it with a function or class of the project (:func:`graphguard.prefilter.skipped_drivers`: a search driver that runs
  the trials it is handed names no TensorFlow). Aliases
  (``tf1 = tf.compat.v1``) start from an import that names ``tensorflow``, so they keep the file; so
  does a helper module that only receives a session as a parameter (``s.run(``).
* **Cache.** Phase-1 facts are kept in ``.graphguard_cache/`` keyed by path, mtime and size
  (:mod:`graphguard.cache`); phases 2 and 3 always run, so cross-module results stay right.
* **Parallel.** Phase 1 runs in worker processes (``--jobs``, default the CPU count; forked on Linux,
  so workers start without re-importing anything); results are merged in path order, so the output is
  identical to a serial run.
* **One pass.** Files are parsed with CPython's ``ast`` (about 12x faster than libcst here) and read by
  one visitor for all rules; a module's syntax tree is dropped as soon as its facts are read; the
  effect-to-rule dispatch table is built once per run.
"""

from __future__ import annotations

import ast
import gc
import hashlib
import os
import pickle
import sys
import warnings
from collections.abc import Iterable
from dataclasses import dataclass, field

from graphguard.analysis import tf_api
from graphguard.analysis.facts import ModuleFacts
from graphguard.analysis.findings import Finding, era_hidden_findings, findings as project_findings, hidden_findings
from graphguard.analysis.runtimes import read_runtime
from graphguard.analysis.fixpoint import Project, module_names
from graphguard.diagnostics import Diagnostic
from graphguard.notebook import NotebookError, is_notebook, python_source, read_notebook
from graphguard.prefilter import MENTIONS_TF, _imports_project, relevant, skipped_drivers
from graphguard.python2 import read_python2
from graphguard.reading import MAX_FILE_BYTES, FileTooLarge, read_regular, too_large
from graphguard.rules import CHECKER_CODES, RULES, Rule
from graphguard.suppressions import has_marker
from graphguard.workers import WORKER as _WORKER, workers as _workers

@dataclass
class FileResult:
    """What reading one file produced: facts (None when skipped or unparsable), its ``GG001``/``GG002``
    findings, an internal error (one line), and whether it holds suppression comments."""

    facts: ModuleFacts | None = None
    diagnostics: list = field(default_factory=list)
    error: str | None = None
    suppressions: bool = False


@dataclass
class Report:
    """The result of one run: findings sorted by file and position, and internal errors (one line each)."""

    diagnostics: list[Diagnostic] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    files: int = 0
    #: path -> bytes, for files with suppression comments that hold a finding (every such file when
    #: GG900, unused suppressions, is selected: a file without findings has nothing else to suppress)
    sources: dict = field(default_factory=dict)
    marked: list = field(default_factory=list)  #: every file with suppression comments, in path order
    read: int = 0  #: files read in this run (not taken from the cache)
    skipped: int = 0  #: files the prefilter skipped unparsed
    #: the rule findings behind ``diagnostics``, in the order phase 3 made them (kept by the cache, so an
    #: edit that only moves lines is answered by moving them: :mod:`graphguard.incremental`)
    findings: list = field(default_factory=list, repr=False)
    #: findings that ``max-bounded-iterations`` hid (a 5-fold loop of models): not reported, counted in
    #: the summary line (:func:`graphguard.lint.hidden`); one per code and position, none where a
    #: finding is reported
    hidden: list[Diagnostic] = field(default_factory=list)
    #: the rule findings behind ``hidden``, kept by the cache as ``findings`` are
    hidden_findings: list = field(default_factory=list, repr=False)
    #: TF 2 findings not reported because another module of the program spells TF 1.x's own names
    #: (:func:`graphguard.analysis.findings.era_hidden_findings`), and those modules' paths
    era_hidden: list[Diagnostic] = field(default_factory=list)
    era_evidence: list[str] = field(default_factory=list)


def _utf8_lines(source: bytes) -> list[bytes]:
    """The lines of ``source`` as :mod:`ast` counts column offsets in them: UTF-8 bytes of the decoded
    text (a coding cookie such as ``latin-1`` honoured), without a UTF-8 byte-order mark."""
    import io
    import tokenize

    encoding, _ = tokenize.detect_encoding(io.BytesIO(source).readline)
    if encoding == "utf-8-sig":
        return source[3:].splitlines() if source.startswith(b"\xef\xbb\xbf") else source.splitlines()
    if encoding == "utf-8":
        return source.splitlines()
    return source.decode(encoding, "replace").encode("utf-8").splitlines()


def read_source(source: bytes, path: str, settings: tuple, project: frozenset | None,
                prefilter: bool = True) -> FileResult:
    """Phase 1 for one file: prefilter, parse, read facts. ``settings`` is (session names, session
    factories); ``project`` the dotted module names of the run (None: every import may be project
    code, and no prefilter)."""
    result = FileResult(suppressions=has_marker(source))
    if is_notebook(path):
        # The prefilter reads the notebook's JSON as it is (the patterns survive JSON's escaping); only
        # a notebook that may hold a finding, or imports something, is decoded into one module.
        if prefilter and project is not None and not relevant(source) and b"import" not in source:
            return result
        try:
            notebook = read_notebook(source)
        except NotebookError as error:
            if MENTIONS_TF.search(source):
                # at the file's row and column the message names (a new user's trial: "1:1: ... at line 32")
                result.diagnostics.append(("GG001", f"cannot read notebook: {error}", error.row, error.column))
            return result
        if notebook.errors and MENTIONS_TF.search(source):  # cells that do not parse (left out of the module)
            result.diagnostics.extend(("GG001", f"cannot parse cell: {message}", row, column)
                                      for row, column, message in notebook.errors)
        source = notebook.python
    if (prefilter and project is not None and not relevant(source)
            and not _imports_project(source, project)
            and not (b"\0" in source and MENTIONS_TF.search(source.replace(b"\0", b"")))):  # UTF-16: GG001 below
        return result
    limit = sys.getrecursionlimit()
    try:
        # Deeply nested code (a 250-term ``a + b + ...``) needs more Python frames than the default
        # 1,000, in the parser's conversion to Python objects and in the visitor. The limit is raised
        # for both, so a worker (whose stack starts deeper) and the main process (``--jobs 1``) agree.
        sys.setrecursionlimit(max(limit, 20_000))
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # SyntaxWarning for "\d" in old code is not ours to print
                tree = ast.parse(source, filename=path)
        except SyntaxError as error:
            python3 = read_python2(source, path)  # TF1-era code is often Python 2 (None: it is not)
            if python3 is None:
                # GG001 is for files that mention TensorFlow or Keras, however named (in UTF-16 too)
                if MENTIONS_TF.search(source) or (b"\0" in source and MENTIONS_TF.search(source.replace(b"\0", b""))):
                    result.diagnostics.append(("GG001", f"cannot parse file: {error.msg}", max(1, error.lineno or 1),
                                               max(1, error.offset or 1)))
                return result
            tree, source = python3
        except (ValueError, UnicodeDecodeError, LookupError) as error:
            # NUL bytes (Python 3.10; 3.11.4+ raises SyntaxError, above), a bad encoding: source CPython
            # cannot compile, so GG001 for a file that mentions TensorFlow or Keras, as above; nothing
            # for others (a binary file named ``.py`` is not graphguard's to judge). It was GG002 on
            # 3.10 and GG001 or nothing on 3.11 (issue 39).
            if MENTIONS_TF.search(source) or (b"\0" in source and MENTIONS_TF.search(source.replace(b"\0", b""))):
                result.diagnostics.append(("GG001", f"cannot decode file: {error}", 1, 1))
            return result
        except (RecursionError, MemoryError):
            # CPython's own compiler refuses such a file too: a syntax-level problem, not graphguard's.
            # (Its parser raises MemoryError, not RecursionError, for thousands of nested unary
            # operators; files are at most max-file-bytes long, 16 MiB by default.)
            if MENTIONS_TF.search(source):
                result.diagnostics.append(("GG001", "cannot parse file: too deeply nested", 1, 1))
            return result
        lines = None if source.isascii() else _utf8_lines(source)
        from graphguard.analysis.reader import read_module  # (phase 1: not imported by a run that reads nothing)

        result.facts = read_module(tree, path, lines, settings[0], settings[1], project, read_runtime(source), source)
    except RecursionError:
        # Parsed, but nested deeper than the analysis can follow (thousands of chained operators, which
        # CPython's compiler refuses as well): reported like a file that cannot be parsed.
        result.facts = None
        result.diagnostics.append(("GG001", "cannot analyse file: too deeply nested", 1, 1))
    except MemoryError:
        result.error = f"{path}: out of memory while analysing it"
    except Exception as error:  # a bug in graphguard: reported, the other files still checked
        result.error = f"{path}: {type(error).__name__}: {error}"
    finally:
        sys.setrecursionlimit(limit)
    return result


def _read_file(path: str, settings: tuple, project: frozenset | None, prefilter: bool = True) -> FileResult:
    try:
        source = read_regular(path, settings[2])
    except OSError as error:
        what = "folder" if os.path.isdir(path) else "file"
        message = error.strerror if isinstance(error, FileTooLarge) else f"cannot read {what}: {error.strerror}"
        return FileResult(diagnostics=[("GG002", message, 1, 1)])
    return read_source(source, path, settings, project, prefilter)


def _worker_read(path: str) -> bytes:
    """One file's :class:`FileResult`, pickled here: the main process keeps these bytes as the file's
    cache entry and unpickles them once (the pool would otherwise unpickle the result and the cache
    pickle it again)."""
    result = _read_file(path, _WORKER["settings"], _WORKER["project"], _WORKER["prefilter"])
    return pickle.dumps(result, protocol=pickle.HIGHEST_PROTOCOL)


class Checker:
    """Checks source files against a fixed selection of rules.

    ``codes`` are the selected codes (rule codes and checker codes such as ``GG001``); the default is
    every code. ``session_names``, ``session_factories``, ``max_bounded_iterations`` (an ``int``
    >= 0: constructions whose loops run at most this many times in all are not GG101-GG110 findings)
    and ``max_file_bytes`` (an ``int`` >= 1: larger files are a GG002 finding, not read) come from the
    configuration. Raises ``ValueError`` for a bound of the wrong type or range.

    ``keep_facts``: the last run's facts and summaries stay referenced by the checker (until the next
    run or the checker's end) instead of being freed as the run returns. For a process that ends right
    after, as the command line does (:func:`graphguard.cli.main` leaves by ``os._exit``, as mypy's
    ``hard_exit`` does): freeing them object by object was about 0.8 s of a 9-11 s cold run over 720k
    lines, and the interpreter's own shutdown more.
    """

    def __init__(self, codes: Iterable[str] | None = None, *, session_names: Iterable[str] = (),
                 session_factories: Iterable[str] = (), max_bounded_iterations: int = 10,
                 max_file_bytes: int = MAX_FILE_BYTES, keep_facts: bool = False) -> None:
        for name, value, least in (("max_bounded_iterations", max_bounded_iterations, 0),
                                   ("max_file_bytes", max_file_bytes, 1)):
            if isinstance(value, bool) or not isinstance(value, int) or value < least:
                raise ValueError(f"{name}: expected an int >= {least}, got {value!r}")
        if not isinstance(keep_facts, bool):
            raise ValueError(f"keep_facts: expected True or False, got {keep_facts!r}")
        self._bound = max_bounded_iterations
        selected = set(RULES) | set(CHECKER_CODES) if codes is None else set(codes)
        self.codes = frozenset(selected)
        self._settings = (frozenset(session_names), frozenset(session_factories), max_file_bytes)
        self._keep_facts = keep_facts
        self._kept: list = []  #: with ``keep_facts``, what the last run would otherwise have freed
        #: What files given as bytes read to, by (path, digest of the bytes, project, prefilter): the
        #: editor passes every open buffer on every lint, and all but the edited one are unchanged.
        self._by_content: dict = {}
        self._by_content_bytes = 0
        self._by_effect: dict = {}
        for code, rule in RULES.items():
            if code in selected:
                for effect in rule.EFFECTS:
                    self._by_effect[effect] = rule

    @property
    def settings_key(self) -> str:
        """What a cache of phase-1 facts depends on besides graphguard's version."""
        api = tf_api.load()
        return repr((sorted(self._settings[0]), sorted(self._settings[1]), api.tensorflow_version, api.keras_version,
                     self._bound, self._settings[2]))

    # ------------------------------------------------------------------ entry points

    def check_paths(self, paths: list[str], sources: dict[str, bytes] | None = None, *, jobs: int = 1,
                    cache=None, prefilter: bool = True, explicit: Iterable[str] = (),
                    context: Iterable[str] = ()) -> Report:
        """Check the files at ``paths`` together (helpers in one are seen from loops in another).

        ``sources`` gives the bytes of files that are not read from disk (``check -`` reads stdin);
        ``jobs`` > 1 reads files in that many processes; ``cache`` is a
        :class:`~graphguard.cache.FactsCache`; ``prefilter`` skips files that cannot take part in a
        finding (see the module docstring), wherever a file came from: named on the command line
        (``explicit``, kept for the cache's run key), found in a folder, or given in ``sources``. A
        file that mentions TensorFlow or Keras always passes it, so its syntax errors (GG001) are
        still reported; one that does not would get no GG001 anyway.

        ``context`` names more files that are read and analysed with ``paths`` (the project modules the
        named files import: calls into them are followed, as mypy follows imports) but not reported: no
        finding, hidden finding or skip of theirs is in the report."""
        # Facts, syntax trees and the summaries hold no reference cycles: reference counting frees
        # them, and the cyclic collector only rescans millions of live objects (on 723k lines it
        # took over half of phase 2, and more of loading the cache). Paused for the run.
        collecting = gc.isenabled()
        gc.disable()
        try:
            try:
                return self._check_paths(paths, sources, jobs=jobs, cache=cache, prefilter=prefilter,
                                         explicit=explicit, context=tuple(context))
            except Exception:
                if cache is None:
                    raise
                # Facts from a damaged cache (valid pickles of the wrong shape inside): read afresh.
                return self._check_paths(paths, sources, jobs=jobs, cache=None, prefilter=prefilter,
                                         explicit=explicit, context=tuple(context))
        finally:
            if collecting:
                gc.enable()

    def _check_paths(self, paths: list[str], sources: dict[str, bytes] | None, *, jobs: int, cache,
                     prefilter: bool, explicit: Iterable[str], context: tuple = ()) -> Report:
        report = Report(files=len(paths))
        if context:
            reported = frozenset(paths)
            paths = [*paths, *(path for path in context if path not in reported)]
        self._kept = []  # the previous run's, freed now
        project = _project_names(paths)
        keys = {}
        run_key = None
        if cache is not None:
            # Files given as ``sources`` (stdin, a fix being checked) are read from those bytes; the
            # others may come from the cache. A whole run is cached only when every file is on disk.
            cache.select(project_digest(project))
            keys = {path: cache.key(path) for path in paths if not (sources and path in sources)}
            if not sources and not context:  # (a run with context files is filtered after phase 3)
                run_key = hashlib.sha256(repr((sorted(keys.items()), sorted(self.codes), prefilter,
                                               sorted(explicit))).encode("utf-8", "surrogateescape")).hexdigest()
            last = cache.run_result(run_key) if run_key is not None else None
            if _valid_last(last):  # nothing changed since the last run with these settings
                return self._replay(paths, last, {}, {})
        results: dict[str, FileResult] = {}
        todo = []
        cached = []
        for path in paths:
            if sources and path in sources:
                size, limit = len(sources[path]), self._settings[2]
                if size > limit:
                    # ``check -`` reads stdin up to one byte over the limit: how much more there was is unknown.
                    message = too_large(None if size == limit + 1 else size, limit)
                    results[path] = FileResult(diagnostics=[("GG002", message, 1, 1)])
                elif cache is None:
                    results[path] = read_source(sources[path], path, self._settings, project, prefilter)
                else:
                    results[path] = self._read_bytes(sources[path], path, project, prefilter)
            elif cache is not None and keys[path] is not None and cache.has(path, keys[path]):
                cached.append(path)
            else:
                todo.append(path)
        before = {}  # what the cache held for the files read again (the previous run's, if it was kept)
        for path, (result, pickled) in zip(todo, self._read_all(todo, project, jobs, prefilter)):
            results[path] = result
            # Not cached: an internal error, or a file that could not be read (made readable again
            # by chmod, it keeps its modification time).
            if (cache is not None and keys.get(path) is not None and result.error is None
                    and not any(d[0] == "GG002" for d in result.diagnostics)):
                before[path] = cache.stored(path)
                cache.put(path, keys[path], result, pickled)
        signature = (sorted(self.codes), prefilter, sorted(explicit))
        if run_key is not None:
            last = cache.last_run()
            moved = self._moved_only(paths, keys, todo, results, before, last, signature)
            if moved is not None:
                moved.read = len(todo)
                checker = {**last[2], **{path: results[path].diagnostics for path in todo}}
                self._store(cache, run_key, signature, keys, moved, {path: d for path, d in checker.items() if d})
                return moved
        for path in cached:
            hit = cache.get(path, keys[path])
            if not _valid_result(hit):  # a cache written by hand or damaged is read afresh
                hit = _read_file(path, self._settings, project, prefilter)
                todo.append(path)
                if hit.error is None and not any(d[0] == "GG002" for d in hit.diagnostics):
                    cache.put(path, keys[path], hit)
            elif hit.facts is not None and hit.facts.path != path:
                # Entries are keyed by absolute path: the facts of ``sub/t.py`` answer ``../sub/t.py``
                # from a folder beside it (the same module names, so the same cache file). The module
                # path is the only place phase 1 writes it; findings are reported as this run names it.
                hit.facts.path = path
            results[path] = hit
        if prefilter:
            # A driver module handed the project's functions (``Hyperband(get_params, try_params)``,
            # ``search.run(build_model)``) names no TensorFlow of its own, so the prefilter skipped it;
            # the loop that calls them is in it (a first-contact set: a Hyperband driver's trials missed).
            read_now = set(todo)
            for path in skipped_drivers(results, paths):
                hit = _read_file(path, self._settings, project, prefilter=False)
                results[path] = hit
                if path not in read_now:
                    todo.append(path)
                if (cache is not None and keys.get(path) is not None and hit.error is None
                        and not any(d[0] == "GG002" for d in hit.diagnostics)):
                    cache.put(path, keys[path], hit)
        report.read = len(todo)

        modules = []
        for path in paths:
            result = results[path]
            if context and path not in reported:
                if result.facts is not None:
                    modules.append(result.facts)
                continue
            if result.error is not None:
                report.errors.append(result.error)
            for code, message, row, column in result.diagnostics:
                report.diagnostics += self._checker_diagnostic(path, code, message, row, column)
            if result.facts is not None:
                modules.append(result.facts)
            elif not result.diagnostics and result.error is None:
                report.skipped += 1
            if result.suppressions:
                report.marked.append(path)
        self._report(modules, report, paths=paths)
        if self._keep_facts:
            self._kept += (results, modules)
        if context:
            report.diagnostics = [d for d in report.diagnostics if d.filename in reported]
            report.findings = [f for f in report.findings if f.path in reported]
            report.hidden_findings = [f for f in report.hidden_findings if f.path in reported]
        report.diagnostics = _unique(report.diagnostics)
        self._hide(report)
        self._read_marked(report, sources)
        if run_key is not None:
            self._store(cache, run_key, signature, keys, report,
                        {path: result.diagnostics for path, result in results.items() if result.diagnostics})
        return report

    #: At most this many bytes of source are remembered by :meth:`_read_bytes` (its results are several
    #: times larger): 50 open files of 2,000 lines are about 4 MB.
    BY_CONTENT_BYTES = 32 * 1024 * 1024

    def _read_bytes(self, source: bytes, path: str, project: frozenset, prefilter: bool) -> FileResult:
        """:func:`read_source` of ``source``, remembered by content: a file given as bytes (an editor's
        open buffer) that has not changed since the last run is not parsed again. A run that is cached
        at all uses this; ``--no-cache`` reads every time. (Before issue 38 every open document was read
        on every keystroke: 1.9 s per keystroke with 50 open 2,000-line files.)"""
        key = (path, hashlib.blake2b(source, digest_size=16).digest(), project, prefilter)
        entry = self._by_content.pop(key, None)
        if entry is None:
            hit = read_source(source, path, self._settings, project, prefilter)
            if hit.error is not None:
                return hit
            self._by_content_bytes += len(source)
        else:
            hit = entry[0]
        self._by_content[key] = (hit, len(source))  # the most recently used last
        while self._by_content_bytes > self.BY_CONTENT_BYTES and len(self._by_content) > 1:
            _, size = self._by_content.pop(next(iter(self._by_content)))
            self._by_content_bytes -= size
        return hit

    def _store(self, cache, run_key: str, signature: tuple, keys: dict, report: Report, checker: dict) -> None:
        """Keep the run in the cache (when it had no internal error and read every file): the selection,
        every file's key, the ``GG001`` findings by file (``checker``), the rule findings, the files the
        prefilter skipped and those with suppression comments. The next run replays it when nothing
        changed, or when an edit only moved lines (:meth:`_replay`)."""
        if not report.errors and not any(d.code == "GG002" for d in report.diagnostics):
            cache.put_run_result(run_key, (signature, keys, checker, report.findings, report.skipped,
                                           sorted(report.marked), report.hidden_findings))
        cache.save()

    def _replay(self, paths: list[str], last: tuple, maps: dict, suppressions: dict) -> Report:
        """The report of a stored run (:meth:`_store`), the rows of the files in ``maps`` (path -> old
        row -> new row) moved; ``suppressions``: path -> whether a file read again has suppression
        comments now. Raises KeyError when a row to move is not in its file's map."""
        from graphguard.incremental import move_finding

        _, _, checker, findings, skipped, with_suppressions, hidden = last
        findings = [move_finding(finding, maps) for finding in findings] if maps else findings
        hidden = [move_finding(finding, maps) for finding in hidden] if maps else hidden
        suppressed = {path for path in with_suppressions if path not in suppressions}
        suppressed.update(path for path, has in suppressions.items() if has)
        report = Report(files=len(paths), skipped=skipped, findings=findings, hidden_findings=hidden)
        for path in paths:
            for code, message, row, column in checker.get(path, ()):
                report.diagnostics += self._checker_diagnostic(path, code, message, row, column)
            if path in suppressed:
                report.marked.append(path)
        for finding in findings:
            report.diagnostics.append(self._diagnostic(self._by_effect[finding.effect], finding))
        report.diagnostics = _unique(report.diagnostics)
        self._hide(report)
        self._read_marked(report, None)
        return report

    def _read_marked(self, report: Report, sources: dict | None) -> None:
        """Fill ``report.sources`` (see :class:`Report`): the files with suppression comments that hold a
        finding, or all of them when GG900 is selected. Reading every marked file (73 on the public
        corpus, notebooks decoded) was about 0.05 s of a 0.4 s warm run, for files with nothing to suppress."""
        wanted = (None if "GG900" in self.codes
                  else {d.filename for diagnostics in (report.diagnostics, report.hidden) for d in diagnostics})
        for path in report.marked:
            if wanted is None or path in wanted:
                report.sources[path] = python_source(path, sources[path]) if sources and path in sources else _read_bytes(path)

    def _hide(self, report: Report) -> None:
        """Fill ``report.hidden`` from ``report.hidden_findings``: one finding per code and position,
        none where ``report.diagnostics`` (final) holds one of the same code."""
        if not report.hidden_findings:
            return
        shown = {(d.filename, d.row, d.column, d.code) for d in report.diagnostics}
        bounded = [f for f in report.hidden_findings if not f.hidden_by]
        era = [f for f in report.hidden_findings if f.hidden_by]
        hidden = [d for d in (self._diagnostic(self._by_effect[f.effect], f) for f in bounded)
                  if (d.filename, d.row, d.column, d.code) not in shown]
        report.hidden = _unique(hidden)
        if era:
            report.era_hidden = _unique([self._diagnostic(self._by_effect[f.effect], f) for f in era])
            report.era_evidence = sorted({f.hidden_by for f in era})

    def _moved_only(self, paths: list[str], keys: dict, changed: list[str], results: dict, before: dict, last,
                    signature: tuple) -> Report | None:
        """The report of this run when it differs from the last one only by files whose lines moved
        (:func:`graphguard.incremental.moved_rows`): the last run's findings with their rows moved. None
        when that cannot be said (another selection, files added or removed, a file whose facts changed,
        anything read or kept differently), and the run is computed in full."""
        from graphguard.cache import loads
        from graphguard.incremental import moved_rows

        if not _valid_last(last) or not changed:
            return None
        last_signature, last_keys, checker = last[:3]
        if last_signature != signature or set(last_keys) != set(paths) or any(
                keys.get(path) is None or (path not in results and keys[path] != last_keys[path]) for path in paths):
            return None  # another selection or file list, a file that cannot be read, one read for another reason

        maps = {}
        for path in changed:
            old, new = before.get(path), results[path]
            if isinstance(old, tuple) and isinstance(old[1], bytes):  # a FactsCache keeps entries pickled
                old = (old[0], loads(old[1]))
            if (not isinstance(old, tuple) or old[0] != last_keys[path] or not _valid_result(old[1])
                    or old[1].diagnostics != new.diagnostics or old[1].error is not None or new.error is not None
                    or list(checker.get(path, ())) != old[1].diagnostics):
                return None
            rows = moved_rows(old[1].facts, new.facts)
            if rows is None:
                return None
            maps[path] = rows
        try:
            return self._replay(paths, last, maps, {path: results[path].suppressions for path in changed})
        except KeyError:
            return None

    def check_source(self, source: bytes, filename: str, *, frees: bool = True,
                     context: Iterable[str] = ()) -> list[Diagnostic]:
        """Findings for one file's ``source`` bytes (its encoding cookie is honoured), checked alone and
        without the prefilter (with ``context``: those files read too, for the calls into them, and not
        reported). Raises what an internal error raises (tests want the traceback).

        ``frees=False`` reads the file as if it freed nothing: its ``clear_session()`` and
        ``reset_default_graph()`` calls (in a loop, or in a function a loop calls) are left out, so a
        loop that builds a model per iteration is a GG201/GG111 loop whether or not it frees the last
        one (``graphguard run --sweep`` picks its trial loop so, before and after ``--fix``)."""
        report = Report(files=1)
        result = read_source(source, filename, self._settings, None)
        if result.error is not None:
            raise RuntimeError(result.error)
        if not frees and result.facts:
            for loop in result.facts.loops:
                loop.resets_graph = False
            for facts in result.facts.functions.values():
                facts.resets_graph = False
        for code, message, row, column in result.diagnostics:
            report.diagnostics += self._checker_diagnostic(filename, code, message, row, column)
        modules = [result.facts] if result.facts else []
        for path in context:
            extra = _read_file(path, self._settings, None, prefilter=False)
            if extra.facts is not None:
                modules.append(extra.facts)
        self._report(modules, report, reraise=True)
        return [d for d in _unique(report.diagnostics) if d.filename == filename]

    # ------------------------------------------------------------------ phases

    def _read_all(self, paths: list[str], project, jobs: int, prefilter: bool = True) -> list[tuple]:
        """(:class:`FileResult`, its pickle or None) for each of ``paths``, in order."""
        if jobs <= 1 or len(paths) < 2 * jobs:
            return [(_read_file(path, self._settings, project, prefilter), None) for path in paths]
        # Imported here, not with the module: a run answered from the cache needs neither the pool nor
        # phase 1 (about 0.1 s of a 0.6 s warm start). The reader before the fork: not once per worker.
        import multiprocessing
        from concurrent.futures.process import BrokenProcessPool

        import graphguard.analysis.reader  # noqa: F401

        method = "fork" if sys.platform.startswith("linux") else "spawn"
        context = multiprocessing.get_context(method)
        chunk = max(1, min(64, len(paths) // (jobs * 8)))
        initargs = (self._settings, project, prefilter)
        # Largest files first, so the last chunks handed out are small ones and neither worker is left
        # reading a large file while the other waits; the results go back to the order of ``paths``.
        order = sorted(range(len(paths)), key=lambda index: -_size(paths[index]))
        ordered = [paths[index] for index in order]
        results: list[FileResult] = []
        try:
            # concurrent.futures, not multiprocessing.Pool: a worker that dies (the OOM killer on a huge
            # file, ``kill -9``) breaks the pool with an error instead of hanging the run forever.
            with _workers(jobs, context, initargs) as pool:
                for pickled in pool.map(_worker_read, ordered, chunksize=chunk):
                    results.append((pickle.loads(pickled), pickled))
        except BrokenProcessPool:
            # Read what is left one file per process, to name the file whose reader dies.
            for path in ordered[len(results):]:
                try:
                    with _workers(1, context, initargs) as pool:
                        pickled = pool.submit(_worker_read, path).result()
                        results.append((pickle.loads(pickled), pickled))
                except BrokenProcessPool:
                    results.append((FileResult(error=f"{path}: the process reading it died (killed, or out of memory)"), None))
        in_order: list = [None] * len(paths)
        for index, result in zip(order, results):
            in_order[index] = result
        return in_order

    def _report(self, modules: list[ModuleFacts], report: Report, reraise: bool = False,
                paths: list[str] | None = None) -> None:
        if not self._by_effect or not modules:
            return
        # Phases 2 and 3 mark loops (session loops through calls, trip counts through values) from
        # what *other* modules do; the facts are cached per file, so those marks are undone after the
        # run (a stale mark made a loop a session loop after its helper stopped running steps).
        marks = [(loop, loop.runs_step, loop.resets_graph, loop.trips) for module in modules for loop in module.loops]
        try:
            self._report_modules(modules, report, reraise, paths)
        finally:
            for loop, runs_step, resets_graph, trips in marks:
                loop.runs_step, loop.resets_graph, loop.trips = runs_step, resets_graph, trips

    def _report_modules(self, modules: list[ModuleFacts], report: Report, reraise: bool,
                        paths: list[str] | None = None) -> None:
        project = Project(modules, bound=self._bound, paths=paths)
        if self._keep_facts:
            self._kept.append(project)
        for module in modules:
            try:
                findings = project_findings(project, module)
            except Exception as error:
                if reraise:
                    raise
                report.errors.append(f"{module.path}: {type(error).__name__}: {error}")
                continue
            for finding in findings:
                rule = self._by_effect.get(finding.effect)
                if rule is not None:
                    report.diagnostics.append(self._diagnostic(rule, finding))
                    report.findings.append(finding)
            try:
                hidden = hidden_findings(project, module, findings) + era_hidden_findings(project, module)
            except Exception as error:
                if reraise:
                    raise
                report.errors.append(f"{module.path}: {type(error).__name__}: {error}")
                continue
            report.hidden_findings += [finding for finding in hidden if finding.effect in self._by_effect]

    @staticmethod
    def _diagnostic(rule: type[Rule], finding: Finding) -> Diagnostic:
        site = finding.site
        return Diagnostic(
            filename=finding.path,
            row=site.row,
            column=site.column,
            code=rule.CODE,
            name=rule.NAME,
            message=rule.message(finding.subject, finding.loop_row, finding.via, finding.loop_kind, finding.outer_row,
                                 finding.path),
            advice=rule.ADVICE,
            end_row=site.end_row,
            end_column=site.end_column,
            loop_row=finding.loop_row,
            loop_column=finding.loop_column,
        )

    def _checker_diagnostic(self, filename, code, message, row=1, column=1) -> list[Diagnostic]:
        if code not in self.codes:
            return []
        name = CHECKER_CODES[code][0]
        return [Diagnostic(filename, row, column, code, name, message, row, column)]


def _valid_result(value) -> bool:
    """Whether a cached per-file value has the shape this version writes."""
    return (isinstance(value, FileResult) and (value.facts is None or isinstance(value.facts, ModuleFacts))
            and isinstance(value.diagnostics, list) and all(_checker_finding(d) for d in value.diagnostics)
            and (value.error is None or isinstance(value.error, str)))


def _checker_finding(value) -> bool:
    """A ``(code, message, row, column)`` of :attr:`FileResult.diagnostics` (``GG001``, ``GG002``).
    (Before issue 18 this was checked as a Diagnostic, so a file with a syntax error never came from
    the cache.)"""
    return (isinstance(value, tuple) and len(value) == 4 and isinstance(value[0], str) and isinstance(value[1], str)
            and isinstance(value[2], int) and isinstance(value[3], int))


def _valid_last(value) -> bool:
    """Whether a run the cache kept has the shape :meth:`Checker._store` writes."""
    return (isinstance(value, tuple) and len(value) == 7 and isinstance(value[1], dict) and isinstance(value[2], dict)
            and isinstance(value[3], list) and all(isinstance(f, Finding) for f in value[3])
            and isinstance(value[4], int) and isinstance(value[5], list)
            and isinstance(value[6], list) and all(isinstance(f, Finding) for f in value[6]))


def project_digest(project: frozenset) -> str:
    """The cache selector for a run: which imports are project code depends on the run's modules."""
    return hashlib.sha256("\0".join(sorted(project)).encode("utf-8", "surrogateescape")).hexdigest()


def _project_names(paths: list[str]) -> frozenset:
    """Every dotted module or package name the files of the run answer to, with their prefixes: the
    names :func:`~graphguard.analysis.fixpoint.module_names` gives and their prefixes.

    Only names an ``import`` statement can write: a script ``numpy/lab-05.py`` (a hyphen) or a folder
    ``01 - Basic`` answers to no name, so ``numpy`` stays a third-party module for every file of the
    run (as one tutorial repository's ``numpy/`` folder made every ``np.*`` call in the run a project
    call, and every file importing numpy pass the prefilter). The names within a folder's path are
    made once per folder, then each file adds the few that end in its module."""
    names: set = set()
    folders: dict = {}  # folder -> its importable parts (after the last that is not a name), or None
    tails: dict = {}  # folder -> "a.b.", "b.": the runs of those parts that end in it, once a module reached it
    for path in paths:
        if path.endswith(".ipynb"):
            continue  # nothing can import a notebook
        folder, _, last = os.path.normpath(path).rpartition(os.sep)
        if last.endswith((".py", ".pyi")):
            last = last.rsplit(".", 1)[0]
        package = last == "__init__" or last in ("", ".", "..")  # the module is the folder itself
        if folder not in folders:
            parts = [part for part in folder.split(os.sep) if part not in ("", ".", "..")]
            first = next((index + 1 for index in range(len(parts) - 1, -1, -1) if not parts[index].isidentifier()), 0)
            folders[folder] = None if any("." in part for part in parts) else parts[first:]
        parts = folders[folder]
        if parts is None or (not package and "." in last):
            _dotted_names(path, names)  # a part with a dot in it (``v1.2/``, a named ``run.sh``): as written
            continue
        if not package and not last.isidentifier():
            continue  # ``lab-05.py``: no import can name it, nor the folders through it
        if folder not in tails:  # the folder's own names, once, when a module makes them reachable
            names.update(".".join(parts[start:end]) for start in range(len(parts)) for end in range(start + 1, len(parts) + 1))
            tails[folder] = [".".join(parts[start:]) + "." for start in range(len(parts))]
        if not package:
            names.add(last)
            names.update(tail + last for tail in tails[folder])
    return frozenset(names)


def _dotted_names(path: str, names: set) -> None:
    """Add to ``names`` the project names of ``path`` one at a time (the general case of
    :func:`_project_names`, for paths with dots inside their parts)."""
    for name in module_names(path):
        parts = name.split(".")
        if all(part.isidentifier() for part in parts):
            names.update(".".join(parts[:i]) for i in range(1, len(parts) + 1))


def _size(path: str) -> int:
    """``path``'s size in bytes, 0 when it cannot be read (the reader reports that)."""
    try:
        return os.stat(path).st_size
    except (OSError, ValueError):
        return 0


def _read_bytes(path: str) -> bytes:
    """The source the analysis read for ``path`` (a notebook's code cells as one module), for
    suppression comments; ``b""`` if it cannot be read now."""
    try:
        return python_source(path, read_regular(path, limit=1 << 31))  # read once within the limit already
    except OSError:
        return b""


def _unique(diagnostics: list[Diagnostic]) -> list[Diagnostic]:
    """Sorted, one finding per code and position: a chain such as
    ``Dataset.from_tensor_slices(x).shuffle(n).batch(b)`` is one finding at its start, and a helper
    that builds both a dataset and an iterator is one GG109 at the call."""
    seen = {}
    for d in diagnostics:
        seen.setdefault((d.filename, d.row, d.column, d.code), d)
    return sorted(seen.values(), key=lambda d: (d.filename, d.row, d.column, d.code))
