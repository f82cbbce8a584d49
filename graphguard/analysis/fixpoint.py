"""Phase 2: resolve calls across the modules of the run and summarise every function by a fixpoint.

:class:`Project` resolves each call of project code (``build_head(x)``, ``self.evaluate()``,
``model.predict_proba(...)``, ``utils.session.make_session()``) to the function it names, in the same
module or another module of the checked tree, and computes a :class:`Summary` per function by a
fixpoint over the call graph: what it builds when called (ops, Savers, initializers, ...), whether it
runs session steps, returns a session, resets the default graph, opens a session.
Phase 3 (:mod:`graphguard.analysis.findings`) then decides the findings.

Module names come from file paths: ``pkg/utils/session.py`` answers to ``pkg.utils.session``,
``utils.session`` and ``session``; an import resolves to the module next to the importer first, then
to the only (or the closest) module with that dotted suffix. Imports that match no checked file are
third-party code and are ignored.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from graphguard.analysis.arguments import CallArguments
from graphguard.analysis.bindings import Param, Ref
from graphguard.analysis.catalog import EAGER_EFFECTS, Effect
from graphguard.analysis.facts import CALLER, ModuleFacts, flags_of, subject_of
from graphguard.analysis.summaries import (MODEL_METHODS, Origin, Summary, add_build, bounded, is_model_summary,
                                          merge_guards)
from graphguard.analysis.values import SESSION_VALUE, StaleEdges, ValueFlow, source_order

__all__ = ["Origin", "Project", "Summary", "bounded", "module_names"]


def _common_prefix(a: tuple, b: tuple) -> int:
    """How many leading parts two split paths share."""
    count = 0
    for x, y in zip(a, b):
        if x != y:
            break
        count += 1
    return count


def module_names(path: str) -> list[str]:
    """Every dotted suffix of the module path: ``a/b/c.py`` -> ``a.b.c``, ``b.c``, ``c``. None for a
    notebook (``.ipynb``): nothing can import it."""
    if path.endswith(".ipynb"):
        return []
    parts = list(os.path.normpath(path).split(os.sep))
    if parts and parts[-1].endswith((".py", ".pyi")):
        parts[-1] = parts[-1].rsplit(".", 1)[0]
    if parts and parts[-1] == "__init__":
        parts.pop()
    parts = [p for p in parts if p not in ("", ".", "..")]
    return [".".join(parts[i:]) for i in range(len(parts))]


_UNKNOWN = object()  # a cache miss, where None is a cached answer


def _era(module) -> str:
    """The Keras era ``module`` shows its program: its own (:attr:`ModuleFacts.keras_era`), or
    ``"old"`` when it runs only on TensorFlow before 2.0 (``tf.Session``, ``tf.placeholder`` spelled as
    TF 1.x spells them: its ``tf.keras`` is TF 1.x's, and the program's standalone Keras is before 2.4,
    which needs TF 2.2 or later; a judge of set X: standalone-Keras agents beside a ``tf.Session`` script)."""
    return "old" if module.tf1 else module.keras_era


def _old_keras_folders(modules: list) -> dict:
    """For a run whose modules show both Keras eras: each folder that holds (at any depth) a module that
    shows an era, as an absolute path, mapped to whether its modules make a program on Keras before 2.4
    (some module says ``"old"``, none ``"new"``)."""
    eras: dict[str, set] = {}
    for module in modules:
        era = _era(module)
        if not era:
            continue
        folder = os.path.dirname(os.path.abspath(module.path))
        while True:
            eras.setdefault(folder, set()).add(era)
            parent = os.path.dirname(folder)
            if parent == folder:
                break
            folder = parent
    return {folder: "new" not in shown for folder, shown in eras.items()}


def _in_folders(folders: dict, module) -> bool:
    """The value of the smallest folder of ``folders`` (absolute paths) that holds ``module``; False
    when none does."""
    folder = os.path.dirname(os.path.abspath(module.path))
    while folder not in folders:
        parent = os.path.dirname(folder)
        if parent == folder:
            return False
        folder = parent
    return folders[folder]


@dataclass(frozen=True)
class _Unread:
    """A file of the run that has no facts (the prefilter skipped it, or it does not parse)."""

    path: str


class Project(CallArguments):
    """All modules of one check run, their summaries, and the findings they lead to."""

    def __init__(self, modules: list[ModuleFacts], bound: int = 5, paths: list[str] | None = None) -> None:
        """``modules``: every file's facts; ``bound``: constructions whose loops run at most this many
        times in all (:func:`bounded`) are not GG101-GG110 findings (configuration key
        ``max-bounded-iterations``); ``paths``: every file of the run in order, those without facts
        too (skipped by the prefilter, unparsable; default: the modules' paths).

        An import resolves among all of ``paths``, as Python would find them: ``import helpers``
        next to a ``helpers.py`` the prefilter skipped names that file (which builds nothing), not
        another folder's ``helpers.py``; a package ``utils/__init__.py`` shadows a module
        ``utils.py`` beside it (``importlib``'s ``FileFinder`` looks for the package first)."""
        self.modules = modules
        self.bound = bound
        #: A TF 2 program: some module builds graphs through ``compat.v1`` and none turns eager
        #: execution off or spells graph code as TF 1.x does. Its ops built outside graph code run
        #: eagerly: they grow no session's graph (:mod:`graphguard.analysis.runtimes`).
        modes = {m.tf_mode for m in modules}
        # (a module-level placeholder would raise under eager execution: such a program runs in graph
        # mode, however it spells TF 1.x names; a third new user's trial: a helper module's op per step)
        self.eager_program = "compat" in modes and not modes & {"off", "v1"} and not any(m.graph_only for m in modules)
        if not self.eager_program:
            for module in modules:
                for loop in module.loops:
                    if loop.keras_step:
                        loop.runs_step = True
        #: A program on standalone Keras before 2.4: some module says so (``lr=``, ``keras.layers.core``)
        #: and none shows TF 2's Keras; its modules that say neither run that Keras too (no GG3xx).
        eras = {_era(m) for m in modules}
        self.old_keras_program = "old" in eras and "new" not in eras
        #: the first module that spells TF 1.x's own names (``tf.placeholder``), or "": what says the
        #: program runs Keras before 2.4 when a module shows no era (findings.era_hidden_findings)
        self.tf1_evidence = next((m.path for m in modules if m.tf1), "")
        #: the same question per folder (:meth:`old_keras`), when the run mixes eras
        self._old_keras_folders = _old_keras_folders(modules) if {"old", "new"} <= eras else {}
        #: modules imported, directly or not, by a module that turns eager execution off (:meth:`eager_off`)
        self._eager_off_imported: frozenset | None = None if "off" in modes else frozenset()
        self._by_path = {os.path.normpath(m.path): m for m in modules}
        #: files of the run without facts: an import that finds one of them calls nothing known
        self._unread: frozenset = frozenset()
        if paths is not None:
            self._unread = frozenset(os.path.normpath(p) for p in paths) - self._by_path.keys()
        packages = {os.path.dirname(path) + ".py" for path in (*self._by_path, *self._unread)
                    if os.path.basename(path) == "__init__.py"}
        self._by_name: dict[str, list[ModuleFacts | _Unread]] = {}
        for path in (m.path for m in modules) if paths is None else paths:
            path = os.path.normpath(path)
            if path in packages:
                continue  # ``utils.py`` beside a ``utils/`` package: no import reaches it
            module = self._by_path.get(path)
            if module is None:
                module = _Unread(path)
            for name in module_names(path):
                self._by_name.setdefault(name, []).append(module)
        self.summaries: dict[tuple[str, str], Summary] = {}
        self._folders: dict[str, str] = {}
        self._modules: dict[tuple[str, str], ModuleFacts | None] = {}
        self._resolved: dict[tuple, tuple[ModuleFacts, str] | None] = {}
        self._abs_parts: dict[str, tuple] = {}
        self._imported: dict[tuple, tuple[ModuleFacts, str] | None] = {}  # (folder, ref, classes) -> _resolve()
        self._calls: dict[tuple[str, str], list] = {}  # (path, function) -> resolved_calls()
        #: whether some summary has ``predict_params`` (only _decide_predicts adds them, and only calls
        #: of such a function can pass them on)
        self._predicts_on_params = False
        self.flow = ValueFlow(self)
        self.flow.run()
        self.flow.refine_loops()
        self._summarise()

    def old_keras(self, module: ModuleFacts) -> bool:
        """Whether ``module``, which shows no Keras era of its own, runs standalone Keras before 2.4: the
        modules of its program say so and none shows TF 2's Keras. Its program is the run when the run
        shows one era. When the run mixes them (a folder of several projects), it is the smallest folder
        holding ``module`` where some module shows an era."""
        if module.keras_era:
            return False
        if not self._old_keras_folders:
            return self.old_keras_program
        return _in_folders(self._old_keras_folders, module)

    def eager_off(self, module: ModuleFacts) -> bool:
        """Whether ``module`` runs with eager execution off: it turns it off itself, or a module that
        imports it (directly or through others) does, and it shows no eager execution of its own
        (``main.py``'s ``disable_eager_execution()`` holds for every module the process imports after).
        Keras there runs in graph mode: ``predict`` runs a function built once (a first-contact judge
        measured 0.37 ms a call against 24.6 ms with eager execution on), and no TF 2 rule applies. A
        script beside it that it does not import keeps its own mode."""
        if module.eager_off:
            return True
        if module.tf_mode == "eager":
            return False
        if self._eager_off_imported is None:
            self._eager_off_imported = self._imported_by([m for m in self.modules if m.tf_mode == "off"])
        return id(module) in self._eager_off_imported

    def _imported_by(self, roots: list) -> frozenset:
        """The ids of the modules ``roots`` import, directly or through others (:attr:`ModuleFacts.imports`)."""
        seen: set[int] = set()
        todo = list(roots)
        while todo:
            importer = todo.pop()
            for dotted in importer.imports:
                found = self._module(importer, dotted)
                if found is not None and id(found) not in seen:
                    seen.add(id(found))
                    todo.append(found)
        return frozenset(seen)

    # ------------------------------------------------------------------ resolution

    def _folder(self, importer: ModuleFacts) -> str:
        folder = self._folders.get(importer.path)
        if folder is None:
            folder = self._folders[importer.path] = os.path.dirname(os.path.normpath(importer.path))
        return folder

    def _module(self, importer: ModuleFacts, dotted: str) -> ModuleFacts | None:
        folder = self._folder(importer)
        key = (folder, dotted)
        if key not in self._modules:
            self._modules[key] = self._find_module(folder, importer, dotted)
        return self._modules[key]

    def _find_module(self, folder: str, importer: ModuleFacts, dotted: str) -> ModuleFacts | None:
        relative_import = dotted.startswith(".")
        if relative_import:
            level = len(dotted) - len(dotted.lstrip("."))
            for _ in range(level - 1):
                folder = os.path.dirname(folder)
            dotted = dotted[level:]
            if not dotted:
                return self._by_path.get(os.path.join(folder, "__init__.py"))
        elif dotted not in self._by_name:
            # No file of the run answers to the name: neither does one beside the importer (its
            # dotted suffixes are all in ``_by_name``), nor one elsewhere.
            return None
        relative = os.path.join(folder, *dotted.split("."))
        for candidate in (os.path.join(relative, "__init__.py"), relative + ".py"):  # a package first
            candidate = os.path.normpath(candidate)
            found = self._by_path.get(candidate)
            if found is not None:
                return found
            if candidate in self._unread:
                return None
        if relative_import:
            return None  # ``from .helpers import f`` means this package's helpers.py, read in this run or not
        matches = self._by_name.get(dotted)
        if not matches:
            return None
        if any(os.path.isfile(candidate) for candidate in (os.path.join(relative, "__init__.py"), relative + ".py")):
            # The importer's own folder has it, left out of the run (pre-commit names only the files
            # staged): Python imports that one (the script's folder comes first on sys.path), not
            # another folder's file of the same name.
            return None
        if len(matches) == 1:
            found = matches[0]
        else:
            # Several files answer to the name: take the one closest to the importer (the longest
            # common run of leading folders). Two as close as each other are two other folders'
            # modules (``a/pkg`` and ``b/pkg`` for ``c/t.py``): no import of the importer reaches
            # either, and which one came first is only the order of the folders given.
            here = self._parts(importer)
            closeness = [_common_prefix(self._parts(m), here) for m in matches]
            best = max(closeness)
            if closeness.count(best) > 1:
                return None
            found = matches[closeness.index(best)]
        return None if found.__class__ is _Unread else found

    def _parts(self, module: ModuleFacts) -> tuple:
        parts = self._abs_parts.get(module.path)
        if parts is None:
            parts = self._abs_parts[module.path] = tuple(os.path.abspath(module.path).split(os.sep))
        return parts

    def resolve(self, importer: ModuleFacts, ref: Ref) -> tuple[ModuleFacts, str] | None:
        """The module and qualified function name that ``ref``, read in ``importer``, calls."""
        key = (importer.path, ref)
        # One lookup on the hot path (hundreds of thousands of calls, a few tens of thousands of keys).
        found = self._resolved.get(key, _UNKNOWN)
        if found is _UNKNOWN:
            self._resolved[key] = None  # guards against import cycles
            found = self._resolved[key] = self._resolve(importer, ref)
        return found

    def resolve_class(self, importer: ModuleFacts, ref: Ref) -> tuple[ModuleFacts, str] | None:
        """The module and qualified class name that ``ref``, read in ``importer``, names."""
        key = (importer.path, ref, "class")
        if key not in self._resolved:
            self._resolved[key] = None
            self._resolved[key] = self._resolve(importer, ref, classes=True)
        return self._resolved[key]

    def _resolve(self, importer: ModuleFacts, ref: Ref, classes: bool = False):
        if not ref.name:
            return None  # a module itself is not callable
        if ref.module.startswith("\1"):  # a function passed to a parameter (values.param_ref)
            values = self.flow.params.get((importer.path, ref.module[1:]), {}).get(ref.name, ())
            for value in sorted(values, key=source_order):
                if value[0] == "function" or (value[0] == "class" and not classes):
                    module = self._by_path.get(os.path.normpath(value[1]))
                    name = value[2] if value[0] == "function" else f"{value[2]}.__init__"  # ``agent_cls(4, 2)``
                    if module is not None and name in module.functions:
                        return module, name
            return None
        if ref.module.startswith("\0"):  # a value followed from its own module (values.absolute_ref)
            module = self._by_path.get(os.path.normpath(ref.module[1:]))
            return None if module is None else self._member(module, ref.name, classes=classes)
        if ref.module == "":
            return self._member(importer, ref.name, classes=classes)
        # An imported name: the answer depends on the importer only through its folder (``_module``
        # answers per folder, ``_member`` not at all), so the modules of one folder share it.
        key = (self._folder(importer), ref, classes)
        found = self._imported.get(key, _UNKNOWN)
        if found is _UNKNOWN:
            parts = ref.name.split(".")
            found = self._resolve_import(importer, ref, parts, classes)
            if found is None and not classes:
                # Phase 1 tells an imported class from a function by its name (PEP 8's CapWords), and
                # records a class's call as its ``__init__``'s. Code names them otherwise too (Google
                # style's ``py_utils.HasRank(x)``, ``LeNet(x)``; ``class resnet``): the call is what
                # the name turns out to be (see :meth:`passes_receiver` for its arguments).
                if len(parts) > 1 and parts[-1] == "__init__":
                    found = self._resolve_import(importer, Ref(ref.module, ref.name[:-len(".__init__")]), parts[:-1],
                                                 False)
                else:
                    cls = self._resolve_import(importer, ref, parts, True)
                    if cls is not None:
                        found = self._member(cls[0], f"{cls[1]}.__init__")
            self._imported[key] = found
        return found

    def _resolve_import(self, importer: ModuleFacts, ref: Ref, parts: list, classes: bool):
        # ``from pkg import module`` then ``module.f()``: the name may start with submodules. Try the
        # longest module path first; a package's own ``__init__`` need not have been read (the
        # prefilter skips an empty one; namespace packages have none).
        for split in range(len(parts) - 1, -1, -1):
            head = parts[:split]
            if not head:
                dotted = ref.module
            elif ref.module.endswith("."):
                dotted = ref.module + ".".join(head)
            else:
                dotted = f"{ref.module}.{'.'.join(head)}"
            module = self._module(importer, dotted)
            if module is not None:
                found = self._member(module, ".".join(parts[split:]), classes=classes)
                if found is not None:
                    return found
        return None

    def _member(self, module: ModuleFacts, name: str, depth: int = 0, classes: bool = False):
        if classes:
            if name in module.classes:
                return module, name
        elif name in module.functions:
            return module, name
        else:
            cls, _, method = name.rpartition(".")
            if cls in module.classes:
                if depth < 10:
                    for base in module.classes[cls].bases:
                        target = self.resolve_class(module, base)
                        if target is not None:
                            found = self._member(target[0], f"{target[1]}.{method}", depth + 1)
                            if found is not None:
                                return found
                return None
        return self._reexported(module, name, classes) if module.exports or module.stars else None

    def _reexported(self, module: ModuleFacts, name: str, classes: bool):
        """What ``name`` (``f``, ``Model.__init__``), not defined in ``module``, names through it: a
        name it imports from the checked tree (a package's ``__init__`` with ``from .ops import f``),
        binds to another (``f = _f``) or star-imports (``from .layers import *``). Resolved where
        ``module`` stands (relative imports from its folder); a cycle of re-exports ends in None
        (:meth:`resolve` answers None for a question being answered)."""
        head, _, rest = name.partition(".")
        resolve = self.resolve_class if classes else self.resolve
        ref = module.exports.get(head)
        if ref is not None:
            return resolve(module, Ref(ref.module, f"{ref.name}.{rest}" if ref.name and rest else ref.name or rest))
        for star in module.stars:
            found = resolve(module, Ref(star, name))
            if found is not None:
                return found
        return None

    def worker_class(self, importer: ModuleFacts, ref: Ref, depth: int = 0) -> bool:
        """Whether ``ref``, read in ``importer``, names a class of workers (``ClassFacts.worker``), itself
        or through a project base class."""
        if ref.name.endswith(".__init__"):  # ``Worker(...)``, called: its constructor
            ref = Ref(ref.module, ref.name[:-len(".__init__")])
        found = self.resolve_class(importer, ref)
        if found is None or depth > 10:
            return False
        module, name = found
        cls = module.classes.get(name)  # (a function passed as a parameter resolves to itself)
        if cls is None:
            return False
        return cls.worker or any(self.worker_class(module, base, depth + 1) for base in cls.bases)

    def summary(self, importer: ModuleFacts, ref: Ref) -> Summary | None:
        """The summary of the function that ``ref``, read in ``importer``, calls (None when it names
        no function of the checked tree)."""
        target = self.resolve(importer, ref)
        return None if target is None else self.summaries.get((target[0].path, target[1]))

    def resolved_calls(self, module: ModuleFacts, name: str) -> list | tuple:
        """``(call, callee summary)`` for the project calls of function ``name`` in ``module`` (as
        :meth:`ValueFlow.calls` lists them, in that order) that name a function of the checked tree:
        what :meth:`summary` answers for each, resolved once by :meth:`_summarise` (phase 3 reads
        them; not to be changed)."""
        return self._calls.get((module.path, name), ())

    # ------------------------------------------------------------------ phase 2

    def runs_eagerly(self, path: str, caller_eager: bool = False) -> bool:
        """Whether the ops built in the module at ``path`` run eagerly: a module whose own code runs
        eagerly and builds no graph (``tf_mode == "eager"``: ``.numpy()`` on its results), or a TF 2
        program's module that shows nothing (see :attr:`eager_program`). ``caller_eager``: the ops are
        built for a caller that runs eagerly, so a helper that shows no graph code of its own runs so too."""
        module = self._by_path.get(os.path.normpath(path))
        if module is None:
            return False
        return (module.tf_mode == "eager" or (not module.tf_mode and (caller_eager or self.eager_program)))

    def _summarise(self) -> None:
        work = []
        predicts = []  # (module, summary, undecided predicts): decided as model summaries become known
        late_retains = []  # function-level stores of what project calls return: decided after the fixpoint
        for module in self.modules:
            for name, facts in module.functions.items():
                summary = Summary(
                    runs_step=facts.runs_step,
                    returns_session=facts.returns_session,
                    resets_graph=facts.resets_graph,
                    opens_session=facts.opens_session,
                    model_positions=frozenset(facts.model_positions),
                    params=facts.params,
                    uses_returned=facts.uses_returned,
                )
                if facts.predicts:
                    predicts.append((module, summary, [(param, Origin(module.path, c.site.row, subject_of(c)), model,
                                                        c.effect) for param, c, model in facts.predicts]))
                key = (module.path, name)
                params = self.flow.params.get(key)
                if params:
                    for param, values in params.items():
                        if SESSION_VALUE in values:
                            summary.session_params.add(param)
                    if any(p in summary.session_params for p, _ in facts.param_steps):
                        summary.runs_step = True
                for retention in facts.retentions:
                    if retention.loop == CALLER and summary.retains is None:
                        if not retention.refs or any(self.is_model(module, ref, kind) for ref, kind in retention.refs
                                                     if kind == "class"):
                            summary.retains = Origin(module.path, retention.site.row, f"`{retention.text}`")
                        else:
                            late_retains.append((module, summary, retention))
                for trial in facts.trials:
                    if not trial.loops and not trial.refs and CALLER not in trial.exempt and summary.trains_model is None:
                        summary.trains_model = Origin(module.path, trial.site.row, trial.subject)
                for training in facts.trainings:
                    if not training.loops and CALLER not in training.exempt:
                        summary.trains = Origin(module.path, training.site.row, subject_of(training))
                        break
                if facts.flag_defaults:
                    summary.flag_defaults = dict(facts.flag_defaults)
                if not facts.resets_graph:
                    for effect, (row, subject) in facts.builds.items():
                        summary.builds[effect] = Origin(module.path, row, subject)
                    if facts.build_flags:
                        summary.guards.update(facts.build_flags)
                    extra = self.flow.extra_constructions.get(key)
                    for construction in (*facts.constructions, *extra) if extra else facts.constructions:
                        if not construction.loops and CALLER not in construction.exempt:
                            add_build(summary, construction.effect, Origin(module.path, construction.site.row,
                                                                            subject_of(construction)),
                                       flags_of(construction.exempt))
                            continue
                        if construction.effect is Effect.MODEL or construction.effect in EAGER_EFFECTS:
                            # Made in a loop: reported at that loop, not at callers; unless the function's
                            # loops run a handful of times (not reported there): then every call makes it a
                            # few times more, and a caller's loop is what repeats it.
                            if (construction.effect in EAGER_EFFECTS and self.bound > 0
                                    and bounded(module, construction.loops, self.bound)
                                    and self._repeats_for_caller(module, construction)):
                                summary.builds.setdefault(construction.effect, Origin(
                                    module.path, construction.site.row, subject_of(construction)))
                            continue
                        if self._repeats_for_caller(module, construction):
                            summary.builds.setdefault(
                                construction.effect,
                                Origin(module.path, construction.site.row, subject_of(construction)),
                            )
                self.summaries[key] = summary
                work.append((module, facts, summary))
        # Resolve every call once; the fixpoint then only follows these edges, and phase 3 reads the
        # resolved calls (resolved_calls) instead of resolving them again.
        edges = []
        for module, facts, summary in work:
            calls = []
            resolved = []
            for call in self.flow.calls(module, facts.name, facts):
                callee = self.summary(module, call.ref)
                if callee is not None:
                    resolved.append((call, callee))
                    repeats = self._repeats_for_caller(module, call)
                    calls.append((call, callee, repeats, repeats and not call.loops))
            if resolved:
                self._calls[(module.path, facts.name)] = resolved
            # (Most functions have none of these: no empty lists built for them.)
            returns = [c for c in (self.summary(module, ref) for ref in facts.returns)
                       if c is not None] if facts.returns else ()
            model_returns = [(position, c, kind) for position, c, kind in
                             ((position, self._model_source(module, ref, kind), self._called_kind(module, ref, kind))
                              for position, ref, kind in facts.model_returns)
                             if c is not None] if facts.model_returns else ()
            trials = [c for trial in facts.trials if not trial.loops and CALLER not in trial.exempt
                      for c in (self.summary(module, ref) for ref, _ in trial.refs)
                      if c is not None] if facts.trials else ()
            if calls or returns or model_returns or trials:
                edges.append((module, summary, calls, returns, model_returns, trials))
        # (a call in a loop that runs a handful of times, ``for _ in range(10)`` in ``replay()``, passes
        # what it predicts on for every call of its function, as a call outside loops does)
        edges_with_samples = [(summary, [(call, callee, repeats and not (call.loops and not bounded(
                                              module, call.loops, max(self.bound, 1), call.exempt)),
                                          self.passes_receiver(module, call))
                                         for call, callee, repeats, _ in calls if call.samples or call.values])
                              for module, summary, calls, *_ in edges]
        edges_with_samples = [(summary, calls) for summary, calls in edges_with_samples if calls]
        # Rounds as a pass over every edge in order would make them, but a pass runs only the edges
        # whose inputs (their callees' summaries, or their own) changed since they last ran
        # (StaleEdges), so every round ends in the same state as a full pass.
        passes = StaleEdges()
        for index, (module, summary, calls, returns, model_returns, trials) in enumerate(edges):
            cells = {id(summary), *(id(c[1]) for c in calls)}
            if returns or model_returns or trials:
                cells.update(id(callee) for callee in (*returns, *(m[1] for m in model_returns), *trials)
                             if isinstance(callee, Summary))  # (a model class's answer is a bool)
            passes.reads(index, cells)

        def update(index: int) -> tuple:
            """One edge: its summary from its callees'; ``(id(summary),)`` when it changed."""
            module, summary, calls, returns, model_returns, trials = edges[index]
            changed = False
            for call, callee, repeats, repeats_model in calls:
                if callee is summary:
                    continue
                if callee.runs_step and not summary.runs_step:
                    summary.runs_step = changed = True
                if callee.opens_session and not summary.opens_session and CALLER not in call.exempt:
                    summary.opens_session = changed = True  # (not behind a once-guard such as ``if sess is None:``)
                if callee.resets_graph and not call.loops and not summary.resets_graph:
                    summary.resets_graph = changed = True
                if repeats_model and callee.trains_model is not None and not summary.resets_graph and not (
                        callee.trains_guard and self.never_runs(module, call, callee, callee.trains_guard)):
                    marks = flags_of(call.exempt) if call.exempt else frozenset()
                    if summary.trains_model is None:
                        summary.trains_model, summary.trains_guard = callee.trains_model, marks
                        changed = True
                    elif summary.trains_guard:
                        merged = merge_guards(summary.trains_guard, marks)
                        if merged != summary.trains_guard:
                            summary.trains_guard = merged
                            changed = True
                if repeats and callee.trains is not None and summary.trains is None and not call.loops and not call.branched:
                    summary.trains = callee.trains
                    changed = True
                if repeats_model and callee.retains is not None and summary.retains is None:
                    summary.retains = callee.retains
                    changed = True
                if repeats and not summary.resets_graph:
                    for effect, origin in callee.builds.items():
                        if (effect is Effect.MODEL or effect in EAGER_EFFECTS) and call.loops:
                            continue  # made in a loop of this function: reported at that loop
                        if effect is Effect.VARIABLE and call.reuses and origin.subject.startswith("`tf.get_variable"):
                            continue  # ``get_variable`` under the caller's reusing scope makes nothing
                        if callee.guards and self.never_runs(module, call, callee, callee.guards.get(effect)):
                            continue  # ``run_epoch(is_training=True)``: the branch that builds it is not taken
                        if add_build(summary, effect, origin, flags_of(call.exempt) if call.exempt else frozenset()):
                            changed = True
            for callee in returns:
                if callee.returns_session and not summary.returns_session:
                    summary.returns_session = changed = True
            if summary.trains_model is None and not summary.resets_graph:
                for callee in trials:  # ``model = build(); model.fit(...)`` at function level
                    if Effect.MODEL in callee.builds:
                        summary.trains_model = callee.builds[Effect.MODEL]
                        changed = True
                        break
            for position, callee, kind in model_returns:
                if position not in summary.model_positions and is_model_summary(callee, kind):
                    summary.model_positions = summary.model_positions | {position}
                    changed = True
                if not summary.uses_returned and not isinstance(callee, bool) and is_model_summary(callee, kind) and (
                        callee.uses_returned or callee.trains_model is not None or callee.trains is not None):
                    summary.uses_returned = changed = True  # ``return train(cfg)``: what the callee trained
            if summary.resets_graph and (summary.builds or summary.trains_model):
                summary.builds.clear()
                summary.trains_model = None
                changed = True
            return (id(summary),) if changed else ()

        new = range(len(edges))
        changed = True
        rounds = 0
        while changed and rounds < 50:
            rounds += 1
            decided: list = []
            changed = bool(predicts) and self._decide_predicts(predicts, edges_with_samples, decided)
            for summary in decided:
                passes.grew(id(summary))
            changed = passes.run(new, update) or changed
            new = ()
        for module, summary, retention in late_retains:
            if summary.retains is None and any(self.is_model(module, ref, kind) for ref, kind in retention.refs):
                summary.retains = Origin(module.path, retention.site.row, f"`{retention.text}`")

    def _decide_predicts(self, predicts: list, edges: list, decided: list) -> bool:
        """One round of GG303's and GG306's value flow: a ``predict`` or ``fit`` on a Keras model whose
        receiver is now known to be one becomes the function's (``builds[effect]`` for one sample,
        ``predict_params`` for a parameter); a call outside loops that passes one sample to such a
        parameter builds it, and one that passes its own parameter predicts on that parameter too.
        True when anything changed; the summaries changed are appended to ``decided``."""
        changed = False
        for module, summary, pending in predicts:
            for entry in list(pending):
                param, origin, model, effect = entry
                if model is not True and not self.keras_model(module, model):
                    continue
                pending.remove(entry)
                if param is None:
                    if effect not in summary.builds:
                        summary.builds[effect] = origin
                        changed = True
                        decided.append(summary)
                elif (param, effect) not in summary.predict_params:
                    summary.predict_params[param, effect] = origin
                    self._predicts_on_params = True
                    changed = True
                    decided.append(summary)
        if not self._predicts_on_params:
            return changed  # no function predicts on a parameter (yet): no call below passes one
        for summary, calls in edges:
            for call, callee, per_call, bound in calls:
                if not callee.predict_params or not per_call:
                    continue
                for (param, effect), origin in list(callee.predict_params.items()):
                    if param not in callee.params:
                        continue
                    position = callee.params.index(param) - (1 if bound else 0)
                    if any(where in (position, param) for where, _ in call.samples):
                        if effect not in summary.builds:
                            summary.builds[effect] = origin
                            changed = True
                            decided.append(summary)
                        continue
                    for where, value in call.values:
                        if (where in (position, param) and isinstance(value, Param)
                                and (value.name, effect) not in summary.predict_params):
                            summary.predict_params[value.name, effect] = origin
                            changed = True
                            decided.append(summary)
        return changed

    def keras_model(self, importer: ModuleFacts, refs: tuple) -> bool:
        """Whether (ref, kind) pairs recorded for a receiver say it is a Keras model: every ``"absent"``
        method is not a project method, and one of the other refs gives a model (:meth:`is_model`)."""
        if any(kind == "absent" and self.resolve(importer, ref) is not None for ref, kind in refs):
            return False
        return any(self._param_is_model(importer, ref, kind[6:]) if kind.startswith("param:")
                   else not self._param_is_project_object(importer, ref, kind[6:]) if kind.startswith("byuse:")
                   else self.is_model(importer, ref, kind) for ref, kind in refs if kind != "absent")

    def _param_is_project_object(self, importer: ModuleFacts, function: Ref, use: str) -> bool:
        """Whether some call passes for the parameter of ``function`` that ``use`` names
        (``param.method``, as ``agent.predict``) an object of a project class that answers the method
        itself: a class that defines it (``class DQN: def predict(self, x): return self.model(x)``, a
        wrapper whose ``predict`` is not Keras'), or whose methods run session steps (``agent = DQN(...)``
        whose ``predict`` is ``self.sess.run(self.q, ...)``, or ``self.predict = self._greedy``: a TF1
        graph's agent). A parameter taken for a Keras model by its use (``agent.predict(s)``) is then
        not one."""
        param, _, method = use.partition(".")
        for value in self.flow.params.get((importer.path, function.name), {}).get(param, ()):
            if value[0] != "instance":
                continue
            module = self._by_path.get(os.path.normpath(value[1]))
            if module is None:
                continue
            prefix = f"{value[2]}."
            if method and f"{prefix}{method}" in module.functions:
                return True
            if any(name.startswith(prefix) and facts.runs_step for name, facts in module.functions.items()):
                return True
        return False

    def param_method_traced(self, importer: ModuleFacts, function: Ref, use: str) -> bool:
        """Whether some call passes for the parameter of ``function`` that ``use`` names
        (``param.method``, as ``model.train_step``) an object of a project class whose method is a
        ``tf.function`` without an input signature (``@tf.function def train_step(self, x, lr)``)."""
        param, _, method = use.partition(".")
        for value in self.flow.params.get((importer.path, function.name), {}).get(param, ()):
            if value[0] != "instance":
                continue
            module = self._by_path.get(os.path.normpath(value[1]))
            facts = None if module is None else module.functions.get(f"{value[2]}.{method}")
            if facts is not None and facts.traced == 1:
                return True
        return False

    def _param_is_model(self, importer: ModuleFacts, function: Ref, use: str) -> bool:
        """Whether some call passes a Keras model for the parameter of ``function`` (of ``importer``)
        that ``use`` names (``param.method``, the method called on it): a TensorFlow model, or an
        instance of a project class that makes one and does not define ``predict`` or that method
        itself (``SelfPlayModel(path)`` that loads a model and whose own ``predict`` calls it through a
        ``tf.function``: a wrapper, not Keras' predict; set X; a ``tf.keras.Model`` subclass whose own
        ``fit`` is a least-squares solve: not Keras' fit, set AE)."""
        param, _, method = use.partition(".")
        for value in self.flow.params.get((importer.path, function.name), {}).get(param, ()):
            if value == ("tf", "model"):
                return True
            if value[0] == "instance":
                module = self._by_path.get(os.path.normpath(value[1]))
                if module is not None and (f"{value[2]}.predict" in module.functions
                                           or (method and f"{value[2]}.{method}" in module.functions)):
                    continue
                summary = None if module is None else self.summary(module, Ref("", f"{value[2]}.__init__"))
                if summary is not None and Effect.MODEL in summary.builds:
                    return True
        return False

    def is_model(self, importer: ModuleFacts, ref: Ref, kind: str) -> bool:
        """Whether what project code ``ref`` gives is a model (see :func:`~graphguard.analysis.summaries.is_model_summary` for ``kind``)."""
        summary = self._model_source(importer, ref, kind)
        return summary is not None and is_model_summary(summary, self._called_kind(importer, ref, kind))

    def _called_kind(self, importer: ModuleFacts, ref: Ref, kind: str) -> str:
        """``kind``, or ``"returns"`` for a constructor's ``"builds"`` when the name called turned out to
        be a function (``return Pipeline(pretrain=True)`` of an imported CapWords function that trains a
        model and returns a dict of scores): what it returns is the question, not what it builds (set
        AA's GG202 on a hyperopt objective, at a sitting's primer diff)."""
        if kind == "builds" and ref.name.endswith(".__init__"):
            target = self.resolve(importer, ref)
            if target is not None and not target[1].endswith(".__init__"):
                return "returns"
        return kind

    def _model_source(self, importer: ModuleFacts, ref: Ref, kind: str):
        """The summary that answers :meth:`is_model`, or for ``"class"`` the answer itself: a project
        class named like a model is one when it has a training method (:data:`MODEL_METHODS`)."""
        if kind == "class":
            return any(self.resolve(importer, ref.member(method)) is not None for method in MODEL_METHODS)
        return self.summary(importer, ref)

    def _repeats_for_caller(self, module: ModuleFacts, item) -> bool:
        """Whether ``item`` (a construction or call) runs on every call of its function: not under a
        once-guard or fresh graph at function level, not inside one of the function's own session
        loops (reported there, unless those loops are bounded: then each call repeats it a few times
        more, and the caller's loop is what makes it grow) or loops that reset the graph."""
        if CALLER in item.exempt:
            return False
        in_session_loop = False
        for index in item.loops:
            loop = module.loops[index]
            if loop.resets_graph or index in item.exempt:
                return False
            in_session_loop = in_session_loop or loop.runs_step
        return not in_session_loop or bounded(module, item.loops, self.bound)
