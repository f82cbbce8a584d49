"""Phase 1, the sweep facts: models made, trained and kept in loops (GG201, GG202, hand-off drivers).

A mixin of :class:`graphguard.analysis.reader.ModuleReader`. It records, per function, the Keras
models an iteration makes and uses as a trial (:class:`~graphguard.analysis.facts.Trial`), the stores
that keep each iteration's model in a container that outlives the loop
(:class:`~graphguard.analysis.facts.Retention`), and the search and hand-off drivers (Optuna, Hyperopt,
``map``, ``delayed``, the scikit-learn Keras wrappers, Keras Tuner) that call a function once per
trial, as loops around that function.
"""

from __future__ import annotations

import ast
import re

from graphguard.analysis import catalog
from graphguard.analysis.bindings import OTHER, GraphValue, Instance, Param, ProjectRef, TFName
from graphguard.analysis.catalog import Effect
from graphguard.analysis.facts import CALLER, Retention, Trial
from graphguard.analysis.resolution import BUILTINS, project_class
from graphguard.analysis.syntax import callee_text, dotted_name, is_as_default, short
from graphguard.analysis.values import param_ref

#: Class names that say "a model" (``TwoLayerNet``, ``ResNet``, ``LinearModel``, ``Solver``): objects
#: that hold a model's parameters, whether Keras, NumPy or anything else (GG202). A project class so
#: named must also have a training method (phase 2: ``MODEL_METHODS``), which tells a ``TwoLayerNet``
#: from a pydantic ``ItemModel``; a class from outside the checked tree counts only with the suffixes
#: of :data:`_EXTERNAL_MODEL_CLASS` (``gurobipy.Model``, ``lmfit.Model`` are not networks; CS231n's
#: ``Solver`` is often imported from a package outside the checked tree).
_MODEL_CLASS = re.compile(r"^(?:[A-Z]\w*)?(?:Net|Network|Model|Solver)$")
_EXTERNAL_MODEL_CLASS = re.compile(r"^(?:[A-Z]\w*)?(?:Net|Network|Solver)$")
#: Methods that use a model as a trial: made and then trained, evaluated or saved in the iteration
#: (GG201, GG202), Keras' and the usual NumPy ones (CS231n's ``solver.train()``, ``net.loss(X)``). A
#: model made in a loop and only called on tensors or stored is a block of a larger model.
TRIAL_METHODS = frozenset({"compile", "fit", "fit_generator", "evaluate", "evaluate_generator", "predict",
                            "predict_generator", "predict_on_batch", "train_on_batch", "test_on_batch",
                            "load_weights", "set_weights", "save", "save_weights", "train", "loss",
                            "step", "train_step", "partial_fit", "score", "predict_proba"})
#: Training methods whose result refers to the model trained (Keras' History, scikit-learn's self).
_FIT_METHODS = frozenset({"fit", "fit_generator"})
#: Hyperparameter-search drivers that call the objective function they are given once per trial:
#: Optuna's ``study.optimize``, Hyperopt's ``fmin``, scikit-optimize's ``*_minimize``, and
#: bayes_opt's ``BayesianOptimization(f=...)``. The call counts as a loop around the objective.
#: Also what calls a function once per element or per fit: ``map`` (builtin, ``executor.map``,
#: ``pool.map``), ``executor.submit``, joblib's and dask's ``delayed(f)``, hyperas' ``optim.minimize``,
#: and the scikit-learn wrappers of Keras (``KerasClassifier(build_fn=...)``, scikeras' ``model=``), whose
#: every fit in a ``GridSearchCV`` or ``cross_val_score`` builds a new model. Keras Tuner is not one
#: here: it calls ``clear_session()`` before building each trial's model.
SEARCH_DRIVERS = frozenset({"map", "submit", "delayed", "minimize", "best_ensemble", "best_models",
                             "RandomSearch", "Hyperband", "GridSearch",
                             "KerasClassifier", "KerasRegressor", "SKLearnClassifier", "SKLearnRegressor",
                             "optimize", "fmin", "gp_minimize", "forest_minimize", "gbrt_minimize",
                             "dummy_minimize", "BayesianOptimization"})
KERAS_WRAPPERS = frozenset({"KerasClassifier", "KerasRegressor", "SKLearnClassifier", "SKLearnRegressor"})  # (Keras 3's own)
#: scikit-learn's model selection, which fits a copy of its estimator per candidate and fold: name ->
#: whether it fits the best candidate once more at the end (``refit=True``, the default).
SEARCH_FITS = {"GridSearchCV": True, "RandomizedSearchCV": True, "cross_val_score": False,
               "cross_validate": False, "cross_val_predict": False}
#: Keywords of drivers that say how many trials they run (Hyperopt/hyperas, Optuna, scikit-optimize).
_TRIAL_COUNT_KEYWORDS = frozenset({"max_evals", "n_trials", "n_calls"})
#: Keras model methods that run a session step on TF1 graphs (``Model.predict`` calls the backend's
#: function, which runs ``Session.run``).
KERAS_STEP_METHODS = frozenset({"predict", "predict_on_batch", "train_on_batch", "test_on_batch", "evaluate", "fit"})
#: Keywords of those drivers that take the objective (positional arguments are always looked at).
_OBJECTIVE_KEYWORDS = frozenset({"fn", "func", "f", "objective", "build_fn", "model", "hypermodel"})
#: Keras Tuner's tuners (``BayesianOptimization`` too when it has a tuner's keywords, not bayes_opt's ``f=``).
_TUNERS = frozenset({"RandomSearch", "Hyperband", "GridSearch"})
_TUNER_KEYWORDS = frozenset({"hypermodel", "objective", "max_trials"})
#: Container methods that keep their argument: method -> index of the kept argument.
KEEPING_METHODS = {"append": 0, "appendleft": 0, "add": 0, "insert": 1, "extend": 0}


class Made:
    """A model-like value bound to a name: how to name it (``subject``), the loops active when it was
    made, the project calls that decide whether it is a model (see :class:`Retention`), and the
    :class:`Trial` to record when the iteration uses it (None when it cannot be a Keras model).

    ``always``: kept whether or not the iteration uses it (a graph or session, what a project function
    returns (it may have trained it), the result of ``fit``); otherwise a store counts only if the
    iteration trains, evaluates or hands on the model (sub-blocks collected for one model are not
    trials). Made for a call (``written``: the call node, its site, its loops' exemptions, the refs
    that decide a Keras model or None), the subject and trial are written on first use: most values
    bound from project calls are never used as models (writing them was about 3% of phase 1 on the
    public corpus)."""

    __slots__ = ("loops", "refs", "always", "trained", "_subject", "_trial", "_written")

    def __init__(self, subject: str | None, loops: tuple, refs: tuple, trial: Trial | None = None,
                 always: bool = False, written: tuple | None = None, trained: bool = False) -> None:
        self.loops, self.refs, self.always, self.trained = loops, refs, always, trained
        self._subject, self._trial, self._written = subject, trial, written

    def _write(self) -> None:
        node, site, exempt, keras = self._written
        text = callee_text(node.func)
        self._subject = f"`{text}(...)` from line {node.lineno}"
        if keras is not None:
            self._trial = Trial(site, f"`{text}(...)`", self.loops, exempt, keras)
        self._written = None

    @property
    def subject(self) -> str:
        if self._written is not None:
            self._write()
        return self._subject

    @property
    def trial(self) -> Trial | None:
        if self._written is not None:
            self._write()
        return self._trial


def _unused(retention: Retention) -> Retention:
    """A store of a value the iteration does not use as a trial: what a project function returns counts
    when that function trains or evaluates it (``results.append(train(config))``), not when it only
    builds it (``self.blocks[res] = self.build_block(res)``: the parts of one model); a graph, a
    session or a ``fit`` result counts as it is (phase 3, :func:`graphguard.analysis.fixpoint._is_model`)."""
    if not retention.refs:
        return retention
    return retention._replace(refs=tuple((ref, f"trained_{kind}") if kind.startswith("returns") else (ref, kind)
                                         for ref, kind in retention.refs))


class SweepReader:
    """Models made, trained and kept in loops (mixed into the reader)."""

    def _model_value(self, node: ast.AST) -> Made | None:
        """Whether ``node`` evaluates to a model-like object, made where: a Keras model, a ``tf.Graph``
        or session, an object of a class named like a model (``TwoLayerNet``, ``Solver``), what a
        project function returns or a project class makes (decided in phase 2), or a name bound to one."""
        cls = node.__class__
        if cls is ast.Name or cls is ast.Attribute:
            made = self._frame.made
            if not made:
                return None
            dotted = dotted_name(node)
            return None if dotted is None else made.get(dotted)
        if cls is not ast.Call:
            return None
        if isinstance(node.func, ast.Attribute) and node.func.attr == "track" and len(node.args) == 1:
            return self._model_value(node.args[0])  # SweepGuard's ``trial.track(obj)`` returns ``obj``
        if isinstance(node.func, ast.Attribute) and node.func.attr in _FIT_METHODS:
            # Keras' ``fit`` returns a History whose ``.model`` is the model (measured, Keras 3.15: a
            # History kept alive keeps its model alive after clear_session()); scikit-learn's returns
            # the estimator itself. Either holds the model, made where the model was made.
            trained = self._model_value(node.func.value)
            if trained is not None:
                return Made(f"the result of `{callee_text(node.func)}(...)` from line {node.lineno}", trained.loops,
                            trained.refs, always=True, trained=True)  # (the model's own line made it 237 characters)
            return None
        func = self.resolve(node.func)
        keras = None  # refs deciding whether it is a Keras model; None: it cannot be one
        if isinstance(func, TFName):
            effect = catalog.effect_of(func.path)
            if effect not in (Effect.MODEL, Effect.GRAPH, Effect.SESSION):
                return None
            refs = ()
            keras = () if effect is Effect.MODEL else None
            always = effect is not Effect.MODEL
        elif isinstance(func, ProjectRef):
            if not project_class(func):
                refs = ((func.ref, "returns"),)
                keras = ((func.ref, "builds"),)
                always = True
            else:
                always = False
                init = (func.ref.member("__init__"), "builds")
                keras = (init,)
                if _MODEL_CLASS.match(func.ref.name.rsplit(".", 1)[-1]):
                    refs = ((func.ref, "class"), init)
                else:
                    refs = (init,)
        elif (func is None and isinstance(node.func, ast.Attribute)
              and isinstance(owner := self.resolve(node.func.value), Instance)):
            # ``self.build(cfg)``: what a method of a project class returns (decided in phase 2).
            method = owner.cls.member(node.func.attr)
            refs = ((method, "returns"),)
            keras = ((method, "builds"),)
            always = True
        elif isinstance(func, Param) and isinstance(node.func, ast.Name):
            # ``model = get_model_func()``: a builder handed in as a parameter; what the callers pass
            # decides (phase 2, :func:`graphguard.analysis.values.param_ref`).
            ref = param_ref(self._frame.facts.name, func.name)
            refs = ((ref, "returns"),)
            keras = ((ref, "builds"),)
            always = True
        elif isinstance(func, GraphValue):
            if not is_as_default(node):
                return None
            refs = ()  # ``g.as_default()``, ``tf.Graph().as_default()``: the graph itself
            always = True
        elif func is None or func is OTHER:
            # A class from outside the checked tree, named like a network.
            last = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
            if not _EXTERNAL_MODEL_CLASS.match(last):
                return None
            refs = ()
            always = False
        else:
            return None
        frame = self._frame
        loops = tuple(loop.index for loop in frame.loops)
        exempt = (frozenset().union(*frame.exempt) if frame.exempt else frozenset()) if keras is not None else None
        return Made(None, loops, refs, always=always,
                    written=(node, self._site(node) if keras is not None else None, exempt, keras))

    def _use_as_trial(self, node: ast.AST, keras: bool = False) -> None:
        """``node`` (a name, or a call that makes a model) is trained, evaluated, saved or handed to
        project code here: the Keras model it holds is a trial of the loop it was made in. ``keras``:
        the use takes a keyword only Keras takes, so it is a Keras model whatever made it."""
        made = self._model_value(node)
        if made is None:
            return
        frame = self._frame
        frame.used.add(made.subject)
        trial = made.trial
        if trial is not None and trial.site not in frame.trial_sites:
            frame.trial_sites.add(trial.site)
            if keras and trial.refs:
                trial = trial._replace(refs=())
            facts = frame.facts
            facts.trials = [*facts.trials, trial]

    def _close_frame(self, frame) -> None:
        """At the end of a body: keep the stores of models that the body uses as trials."""
        for retention, subject, owner, always in frame.pending_retentions:
            if retention.loop != CALLER and owner in frame.returned:
                continue  # ``models.append(model)`` in a loop, then ``return models``: the ensemble it builds
            if subject in frame.used or always == "trained":  # (a fit's History: trained here)
                frame.facts.retentions = [*frame.facts.retentions, retention]
            elif always:
                frame.facts.retentions = [*frame.facts.retentions, _unused(retention)]

    def _note_made(self, targets, value: ast.AST) -> None:
        """After ``targets = value``: remember which targets now hold a model-like value, and which names
        hold the Keras wrapper just made (:meth:`_note_search_fits`)."""
        if self._last_wrapper is not None or self._estimators:
            wrapper = self._last_wrapper is not None and self._last_wrapper[2] is value
            for target in targets:
                if target.__class__ is ast.Name:
                    self._estimators[(id(self._frame), target.id)] = wrapper
        made = None
        for target in targets:
            if isinstance(target, (ast.Tuple, ast.List)) and not any(isinstance(e, ast.Starred) for e in target.elts):
                if isinstance(value, (ast.Tuple, ast.List)) and len(value.elts) == len(target.elts):
                    for element, part in zip(target.elts, value.elts):  # ``model, n = Sequential(), 3``
                        self._note_made((element,), part)
                elif isinstance(value, ast.Call) and isinstance(func := self.resolve(value.func), ProjectRef) \
                        and func.is_class is not True:
                    # ``model, history = train(config)``: decided by what ``train`` returns at each position.
                    subject = f"`{callee_text(value.func)}(...)` from line {value.lineno}"
                    loops = tuple(loop.index for loop in self._frame.loops)
                    frame = self._frame
                    exempt = frozenset().union(*frame.exempt) if frame.exempt else frozenset()
                    # If the builder makes a Keras model, the element trained here is a trial (GG201).
                    trial = Trial(self._site(value), f"`{callee_text(value.func)}(...)`", loops, exempt,
                                  ((func.ref, "builds"),))
                    for index, element in enumerate(target.elts):
                        dotted = dotted_name(element)
                        if dotted is not None:
                            frame.made[dotted] = Made(subject, loops, ((func.ref, f"returns:{index}"),), trial,
                                                       always=True)
                continue
            if isinstance(target, (ast.Name, ast.Attribute)):
                dotted = dotted_name(target)
                if dotted is None:
                    continue
                if made is None:
                    made = self._model_value(value) or False
                if made:
                    self._frame.made[dotted] = made

    def _retention(self, container: ast.AST, values, node: ast.AST, text: str | None = None) -> None:
        """Record ``node`` when it keeps, in ``container``, a model-like value made on each iteration of
        a loop that ``container`` outlives (it was not bound again inside that loop); ``text`` names the
        keeping statement (by default its source)."""
        while True:
            if isinstance(container, ast.Subscript):
                container = container.value  # ``solvers[rule].append(solver)``: kept as long as ``solvers`` is
            elif (isinstance(container, ast.Call) and isinstance(container.func, ast.Attribute)
                  and container.func.attr in ("setdefault", "get")):
                container = container.func.value  # ``by_fold.setdefault(fold, []).append(model)``
            else:
                break
        owner = dotted_name(container)
        if owner is None:
            return
        frame = self._frame
        if not frame.loops and not self._outlives_call(owner):
            return
        owner_loops = frame.bound.get(owner, ())
        stack = list(values)
        while stack:
            value = stack.pop()
            if isinstance(value, (ast.Tuple, ast.List, ast.Set)):
                stack.extend(value.elts)
                continue
            if isinstance(value, ast.Dict):
                stack.extend(value.values)
                continue
            if isinstance(value, ast.Starred):
                stack.append(value.value)
                continue
            made = self._model_value(value)
            if made is None:
                continue
            if not frame.loops:
                if not made.loops:
                    # ``BUILT.append(model)`` at function level, into a global or an attribute: every
                    # call keeps its model (reported at the calls in loops, phase 3).
                    retention = Retention(self._site(node), text or short(ast.unparse(node)), made.subject, CALLER, made.refs)
                    frame.pending_retentions.append((retention, made.subject, owner, "trained" if made.trained else made.always))
                return
            for loop in reversed(frame.loops):
                if loop.index in made.loops and loop.index not in owner_loops:
                    nest = tuple(outer.index for outer in frame.loops if outer.index not in owner_loops)
                    retention = Retention(self._site(node), text or short(ast.unparse(node)), made.subject,
                                          loop.index, made.refs, nest)
                    frame.pending_retentions.append((retention, made.subject, owner, "trained" if made.trained else made.always))
                    return

    def _kept_by_trials(self, node: ast.Call, objectives) -> None:
        """hyperopt's ``fmin`` keeps every dict the objective returns (``Trials.results``, the ``trials=``
        object or fmin's own until it returns): an objective that returns its model
        (``return {"loss": -acc, "status": STATUS_OK, "model": model}``) keeps every trial's model
        alive, the memory growth reported for hyperas (maxpumperla/hyperas#16)."""
        trials = next((k.value for k in node.keywords if k.arg == "trials"), None)
        container = trials if isinstance(trials, (ast.Name, ast.Attribute)) else ast.Name("Trials", ast.Load())
        for where, _ref, bound in objectives:
            if bound or not isinstance(where, (ast.Name, ast.Attribute)):
                continue
            call = ast.copy_location(ast.Call(where, [], []), node)
            self._synthetic.append(call)  # kept alive: the memo is keyed by id()
            self._retention(container, (call,), node, dotted_name(container) if trials is not None else "fmin")

    def _may_retain(self) -> bool:
        """Whether a store here may keep a model across iterations: inside a loop, or in a function
        body (whose every call may store into a container that outlives it)."""
        frame = self._frame
        return bool(frame.loops) or (not frame.is_class and len(self._frames) > 1)

    def _outlives_call(self, owner: str) -> bool:
        """Whether the container ``owner`` (a dotted name) outlives every call of the current function:
        a module-level name the function does not bind itself (``BUILT_MODELS``). An attribute of
        ``self`` lives as long as its object, which a loop may drop each iteration."""
        return "." not in owner and owner not in self._frame.scope and owner in self._frames[0].scope

    def _search_driver(self, node: ast.Call) -> None:
        """``study.optimize(objective, n_trials=50)``, ``fmin(fn=objective, ...)``: the driver calls the
        project function it is given once per trial, so the call counts as a loop (at the driver's
        line) that calls that function (GG201, GG111 through its summary)."""
        objectives = []  # (where, ref, bound)
        for arg in (*node.args, *(keyword.value for keyword in node.keywords if keyword.arg in _OBJECTIVE_KEYWORDS)):
            target = arg
            if isinstance(arg, ast.Lambda) and isinstance(arg.body, ast.Call):
                target = arg.body.func  # ``lambda t: objective(t, x, y)``
            elif (isinstance(arg, ast.Call) and callee_text(arg.func).rsplit(".", 1)[-1] == "partial"
                  and arg.args):
                target = arg.args[0]  # ``functools.partial(objective, x=x)``
            value = self.resolve(target)
            if isinstance(value, ProjectRef) and not project_class(value):
                objectives.append((target, value.ref, False))
            elif isinstance(value, Instance):
                # A callable object: ``study.optimize(Objective(x, y))`` or a name bound to one; a
                # Keras Tuner ``HyperModel`` is called through its ``build(hp)``.
                objectives.append((arg, value.cls.member("build" if is_tuner(node) else "__call__"), True))
        if not objectives:
            return
        loop = self._new_loop(node)
        loop.kind = "search"
        if is_tuner(node):
            # Keras Tuner calls clear_session() before building each trial's model (Tuner._try_build in
            # keras_tuner/src/engine/tuner.py): a release per trial. What build() keeps is still kept.
            loop.resets_graph = True
        for keyword in node.keywords:
            if keyword.arg in _TRIAL_COUNT_KEYWORDS and self._count_value(keyword.value) is not None:
                loop.trips = self._count_value(keyword.value)  # ``max_evals=20``, ``n_trials=N_TRIALS``
        if callee_text(node.func).rsplit(".", 1)[-1] in KERAS_WRAPPERS:
            # ``KerasClassifier(build_fn=make_model)``: a model per fit of the search it is given to
            # (:meth:`_note_search_fits`, which may come first when the wrapper is written inside it).
            self._wrapper_loops.append(loop)
            if id(node) in self._search_fits:
                self._add_fits(loop, self._search_fits.pop(id(node)))
            self._last_wrapper = (self._frame, loop, node)
        self._frame.loops.append(loop)
        for where, ref, bound in objectives:
            self._project_call(ref, where, callee_text(where), bound)
        if callee_text(node.func).rsplit(".", 1)[-1] == "fmin":
            self._kept_by_trials(node, objectives)
        self._frame.loops.pop()


    def _note_search_fits(self, node: ast.Call, name: str) -> None:
        """``GridSearchCV(wrapper, {"units": [32, 64, 128]}, cv=5)``, ``cross_val_score(wrapper, x, y,
        cv=kfold)``: the Keras wrapper given builds its model once per fit, candidates x folds (+1
        refit), so its loop runs that often in all (summed over the searches it is given to; unknown
        once one of them is). The wrapper is the call written in place, or the last one made in this
        function before the search."""
        keywords = {keyword.arg: keyword.value for keyword in node.keywords}
        estimator = keywords.get("estimator", node.args[0] if node.args else None)
        if estimator is None:
            return
        fits = self._fits(node, name, keywords)
        if estimator.__class__ is ast.Call:
            self._search_fits[id(estimator)] = fits  # read when the wrapper's call is visited, next
            return
        if estimator.__class__ is ast.Name and self._estimators.get((id(self._frame), estimator.id)) is False:
            # ``clf = RandomForestClassifier()`` then ``GridSearchCV(clf, ...)``: not the Keras wrapper made
            # earlier under the same name (a first-contact notebook: twelve scikit-learn searches of `clf`
            # were added to its Keras wrapper's fits, and its 3-fold cross-validation was reported)
            return
        last = self._last_wrapper
        if estimator.__class__ is not ast.Name or last is None or last[0] is not self._frame:
            self._unplaced_search = True  # (a wrapper given by a caller, or made in another module)
            return
        self._add_fits(last[1], fits)

    def _add_fits(self, loop, fits: int | None) -> None:
        """One more search of the wrapper of ``loop``: its fits add up (unknown once one search's are)."""
        if id(loop) not in self._searched_loops:
            self._searched_loops.add(id(loop))
            loop.trips = fits
        elif loop.trips is not None:
            loop.trips = None if fits is None else loop.trips + fits

    def _settle_wrappers(self) -> None:
        """After the module: a Keras wrapper no search or cross-validation of the module was given
        (``VotingClassifier(estimators=[("a", KerasClassifier(build_fn=mlp))])``, a plain ``fit``)
        builds its model once per ``fit``, unless some search of the module could not be matched to
        its wrapper (then it may be that one, and stays unknown)."""
        if self._unplaced_search:
            return
        for loop in self._wrapper_loops:
            if id(loop) not in self._searched_loops:
                loop.trips = 1

    def _fits(self, node: ast.Call, name: str, keywords: dict) -> int | None:
        """How many fits a scikit-learn search or cross-validation ``node`` makes (None: unknown, and
        for a search scikit-learn does not have, such as scikit-optimize's ``BayesSearchCV``)."""
        if name not in SEARCH_FITS:
            return None
        cv = keywords.get("cv")
        if cv is None:
            folds = 5  # scikit-learn 0.22 and later
        elif cv.__class__ is ast.Name and self._named_count(cv.id, "splits") is not None:
            folds = self._named_count(cv.id, "splits")  # ``cv=kfold`` after ``kfold = KFold(3)``
        else:
            folds = self._splits(cv) or self._count_value(cv)
        if folds is None:
            return None
        if name == "RandomizedSearchCV":
            n_iter = keywords.get("n_iter")
            candidates = 10 if n_iter is None else self._count_value(n_iter)
        elif name == "GridSearchCV":
            grid = keywords.get("param_grid", node.args[1] if len(node.args) > 1 else None)
            candidates = None if grid is None else self._grid_size(grid)
        else:
            candidates = 1
        if candidates is None:
            return None
        refit = keywords.get("refit")
        return candidates * folds + (1 if SEARCH_FITS[name] and not (
            refit.__class__ is ast.Constant and refit.value is False) else 0)

    def _grid_size(self, grid: ast.AST) -> int | None:
        """Candidates in a ``param_grid``: the product of its lists' lengths (a dict literal, ``dict(...)``,
        or a name bound once to one; a list of grids sums them)."""
        if grid.__class__ is ast.Name:
            grid = self._grids.get(grid.id) if self._grids else None
            if grid is None:
                return None
        if grid.__class__ is ast.List:
            sizes = [self._grid_size(element) for element in grid.elts]
            return None if not sizes or None in sizes else sum(sizes)
        if grid.__class__ is ast.Dict and None not in grid.keys:
            values = grid.values
        elif (grid.__class__ is ast.Call and grid.func.__class__ is ast.Name and grid.func.id == "dict"
              and not grid.args and all(keyword.arg for keyword in grid.keywords)):
            values = [keyword.value for keyword in grid.keywords]
        else:
            return None
        size = 1
        for value in values:
            count = self._trips(value)
            if count is None:
                return None
            size *= count
        return size


def is_tuner(node: ast.Call) -> bool:
    """Whether ``node`` makes a Keras Tuner tuner (``kt.RandomSearch(build_model, objective=...)``)."""
    name = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
    return name in _TUNERS or (name == "BayesianOptimization"
                               and any(keyword.arg in _TUNER_KEYWORDS for keyword in node.keywords))


#: Calls that only look at a value: logging methods (``log.info("loaded %s", model)``) and builtins.
_LOGGING_METHODS = frozenset({"debug", "info", "warning", "warn", "error", "exception", "critical", "log",
                              "write", "format"})


def inert_call(func: ast.AST) -> bool:
    """Whether a call of ``func`` neither trains nor keeps its arguments as a model's user would: a
    container method (``blocks.append(block)``: GG202 looks at those itself), a logging or
    formatting method, or a Python builtin (``print``, ``len``, ``isinstance``)."""
    if isinstance(func, ast.Attribute):
        return func.attr in KEEPING_METHODS or func.attr in _LOGGING_METHODS
    return isinstance(func, ast.Name) and func.id in BUILTINS
