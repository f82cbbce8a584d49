"""Phase 3: mark session loops and decide what each loop repeats.

A loop is a *session loop* when it runs a step directly or through a call (phase 2 knows which
functions run steps). Reported:

* each construction repeated by its innermost session loop (not exempt: no fresh graph or once-guard
  in that loop, no graph reset in its iteration);
* each call, inside a session loop, of a function that builds something: at the call, once per kind
  of thing it builds, naming where the helper builds it;
* ``graph-not-reset-in-loop``: a loop that builds a model and opens a new session per iteration in
  the same default graph; the constructions directly in that loop are then not reported one by one;
* Keras models rebuilt per iteration of any loop (GG201) and models kept across iterations (GG202).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from graphguard.analysis.bindings import ProjectRef, TFObject
from graphguard.analysis.catalog import EAGER_EFFECTS, Effect
from graphguard.analysis.facts import CALLER, UNBUILT, Construction, FunctionFacts, ModuleFacts, Site, called, subject_of
from graphguard.analysis.fixpoint import Project
from graphguard.analysis.summaries import Origin, bounded


@dataclass(frozen=True)
class Finding:
    """A reportable construction. ``effect`` selects the rule; ``subject`` is the text the message
    starts with; ``loop_row``/``loop_column`` locate the loop that repeats it."""

    path: str
    site: Site
    effect: Effect
    subject: str
    loop_row: int
    loop_column: int
    via: Origin | None = None
    #: what repeats it when no loop statement does (``Loop.kind``: a search, a request handler)
    loop_kind: str = ""
    #: the row of the outermost session loop of the same function around the loop at ``loop_row`` that
    #: repeats it too (``for epoch`` around ``for batch``), or 0: the fix hoists above that loop
    outer_row: int = 0
    #: a TF 2 finding not reported because another module of the program (this path) spells TF 1.x's
    #: own names, so the program runs Keras before 2.4 (:func:`era_hidden_findings`); "" otherwise
    hidden_by: str = ""


def findings(project: Project, module: ModuleFacts) -> list[Finding]:
    """Every finding in ``module``, in source order."""
    loops = module.loops
    for name, facts in module.functions.items():
        if facts.param_steps:
            own = project.summaries[(module.path, name)]
            for param, step_loops in facts.param_steps:
                if param in own.session_params:
                    for index in step_loops:
                        loops[index].runs_step = True
        for call, callee in project.resolved_calls(module, name):
            for index in call.loops:
                if callee.runs_step:
                    loops[index].runs_step = True
                if callee.resets_graph:
                    loops[index].resets_graph = True
        for step in facts.deferred_steps:
            callee = project.summary(module, step.ref)
            if callee is not None and callee.returns_session:
                for index in step.loops:
                    loops[index].runs_step = True
    found: list[Finding] = []
    for facts in module.functions.values():
        found.extend(_function_findings(project, module, facts))
    found.sort(key=lambda f: (f.site.row, f.site.column, f.effect.value))
    kinds = {(loop.row, loop.column): loop.kind for loop in loops if loop.kind} if found else None
    if kinds:
        found = [replace(f, loop_kind=kinds[(f.loop_row, f.loop_column)]) if (f.loop_row, f.loop_column) in kinds
                 else f for f in found]
    return found


def hidden_findings(project: Project, module: ModuleFacts, found: list[Finding]) -> list[Finding]:
    """The findings of ``module`` that ``max-bounded-iterations`` hid: those phase 3 makes when no loop
    counts as bounded (the setting at 0) and not among ``found``, the findings it made with the
    project's bound (a 5-fold loop of models, a Saver made on every 20th of 100 steps). Counted, not
    reported: the summary line says how many there are. Phase 3 is run again for a module only when
    one of its loops has a known trip count (nothing can be bounded otherwise); phase 2 (the
    summaries) keeps the project's bound."""
    bound = project.bound
    if bound <= 0 or not any(loop.trips is not None for loop in module.loops):
        return []
    project.bound = 0
    try:
        unbounded = findings(project, module)
    finally:
        project.bound = bound
    shown = {(f.site.row, f.site.column, f.effect) for f in found}
    return [f for f in unbounded if (f.site.row, f.site.column, f.effect) not in shown]


def era_hidden_findings(project: Project, module: ModuleFacts) -> list[Finding]:
    """The TF 2 findings (GG3xx) of ``module`` that are not reported only because another module of its
    program spells TF 1.x's own names (``tf.placeholder``: the program runs TensorFlow before 2.0, so
    Keras before 2.4, :meth:`Project.old_keras`), each with ``hidden_by`` naming such a module. Counted,
    not reported: the summary line says so (an eleventh new user's trial: a Keras 3 file beside a TF 1.x
    file lost its GG305/GG306 in silence). Empty when ``module`` shows an era or eager mode of its own."""
    evidence = project.tf1_evidence
    if not evidence or module.keras_era or module.tf1 or module.cheap_predict or not project.old_keras(module) \
            or project.eager_off(module):
        return []  # (an old era said by another module's Keras spelling, ``lr=``, is the docs' "one Keras")
    found: list[Finding] = []
    for facts in module.functions.values():
        extra = project.flow.extra_constructions.get((module.path, facts.name))
        constructions = [*facts.constructions, *(c for c in extra if c.loops)] if extra else list(facts.constructions)
        calls = project.resolved_calls(module, facts.name)
        if facts.eager_checks or calls or any(c.effect in EAGER_EFFECTS for c in constructions):
            found.extend(replace(f, hidden_by=evidence)
                         for f in _eager_findings(project, module, facts, constructions, calls))
    return found


#: What rebuilding a model adds to the graph (GG111): ops, variables, an imported graph.
_MODEL_EFFECTS = frozenset({Effect.OP, Effect.OPERATOR, Effect.VARIABLE, Effect.GRAPH_IMPORT})


def _rebuilds_model(effect: Effect, callee: str) -> bool:
    """Whether building ``effect`` (written as ``callee``) in a loop that opens a session per
    iteration means the model is built again: ops, variables, an imported graph, or an initializer
    of all variables (new variables to initialize). An initializer of local variables or tables, a
    Saver or a summary alone (metrics re-initialized per checkpoint) is reported by its own rule."""
    if effect in _MODEL_EFFECTS:
        return True
    return effect is Effect.INITIALIZER and ("global_variables" in callee or "initialize_all" in callee)


def _session_loop(module: ModuleFacts, item, bound: int):
    """The innermost session loop that repeats ``item``, or None (also when the loops around it run
    at most ``bound`` times in all: three test cases, a one-shot loop over a model's variables). A
    loop ``item`` is exempt from (a once-guard, ``if t == k:`` on its counter) does not repeat it, but
    a session loop around that one does."""
    for index in reversed(item.loops):
        loop = module.loops[index]
        if loop.runs_step:
            if index in item.exempt:
                continue
            if loop.resets_graph or bounded(module, item.loops, bound, item.exempt):
                return None
            return loop
    return None

def _outer_row(module: ModuleFacts, item, loop) -> int:
    """The row of the outermost loop around ``loop`` (the innermost session loop that repeats
    ``item``) that repeats ``item`` too: every loop between them runs a step, is no search or handler,
    resets no graph and is not one ``item`` is exempt from. 0 when there is none (issue 36: the finding
    names the loop its fix hoists above, ``for epoch`` around ``for batch``)."""
    position = next((i for i, index in enumerate(item.loops) if module.loops[index] is loop), None)
    outer = None
    for index in reversed(item.loops[:position] if position else ()):
        around = module.loops[index]
        if index in item.exempt or around.resets_graph or not around.runs_step or around.kind:
            break
        outer = around
    return outer.row if outer is not None and outer.row != loop.row else 0


def _param_operator(project: Project, module: ModuleFacts, call, callee) -> Origin | None:
    """Where the function ``call`` runs applies an operator to a parameter that this call passes a
    tensor or variable for (``scaled(pred)`` with ``def scaled(logits): return logits * 2``): the call
    builds an op there. None otherwise."""
    target = project.resolve(module, call.ref)
    if target is None:
        return None
    facts = target[0].functions.get(target[1])
    if facts is None or not facts.param_operators:
        return None
    shift = 1 if call.bound else 0
    for param, site, subject in facts.param_operators:
        index = callee.params.index(param) - shift if param in callee.params else -1
        for where, value in call.values:
            if (where == param or where == index) and isinstance(value, TFObject) and value.kind in ("tensor", "variable"):
                return Origin(target[0].path, site.row, subject)
    return None


def _function_findings(project: Project, module: ModuleFacts, facts: FunctionFacts) -> list[Finding]:
    found: list[Finding] = []
    key = (module.path, facts.name)
    extra = project.flow.extra_constructions.get(key)
    constructions = [*facts.constructions, *(c for c in extra if c.loops)] if extra else list(facts.constructions)
    for deferred in facts.deferred_operators:
        if any(project.flow.returns_tensor(module, ref) for ref in deferred.refs) or (
                deferred.params and project.flow.passes_tensor(module, facts.name, deferred.params)):
            constructions.append(deferred.construction)

    calls = project.resolved_calls(module, facts.name)
    if not (constructions or calls or facts.session_opens or facts.trials or facts.retentions
            or facts.eager_checks):
        return found  # nothing below can report anything (most functions of a project)

    suppressed: set[int] = set()
    opens = [(o.site, o.callee, o.loops) for o in facts.session_opens]
    opens += [(c.site, c.callee, c.loops) for c, s in calls if s.opens_session and c.loops]
    reported_loops = set()
    for site, callee_text, open_loops in opens:
        if not open_loops:
            continue
        index = open_loops[-1]
        loop = module.loops[index]
        if loop.resets_graph or index in reported_loops or bounded(module, open_loops, project.bound):
            continue
        # A FileWriter opens an event file but adds no op (measured): it does not rebuild the graph.
        builders = [c for c in constructions if c.loops and c.loops[-1] == index and index not in c.exempt
                    and c.effect is not Effect.FILE_WRITER]
        builders += [c for c, s in calls if c.loops and c.loops[-1] == index and index not in c.exempt
                     and any(e is not Effect.FILE_WRITER for e in s.builds) and not s.resets_graph]
        # A model is rebuilt when the iteration builds ops, variables or an imported graph; an
        # initializer, Saver or summary alone (a new session per checkpoint that re-initializes the
        # metrics) is reported by its own rule, with its own fix.
        if not any(_rebuilds_model(b.effect, b.callee) if isinstance(b, Construction) else
                   any(_rebuilds_model(effect, origin.subject)
                       for effect, origin in project.summary(module, b.ref).builds.items())
                   for b in builders):
            continue
        reported_loops.add(index)
        suppressed.update(id(b) for b in builders)
        found.append(Finding(module.path, site, Effect.REBUILT_GRAPH, f"`{callee_text}(...)`",
                             loop.row, loop.column))

    eager = project.runs_eagerly(module.path)  # this module's ops run eagerly (TF 2)
    for construction in constructions:
        if id(construction) in suppressed or (eager and not construction.in_graph):
            continue  # (in a ``with graph.as_default():`` block ops go to that graph, eager or not)
        if construction.effect is Effect.MODEL or construction.effect in EAGER_EFFECTS:
            continue  # reported when the iteration uses it as a trial (below), or by _eager_findings
        loop = _session_loop(module, construction, project.bound)
        if loop is not None:
            found.append(Finding(module.path, construction.site, construction.effect, subject_of(construction),
                                 loop.row, loop.column, outer_row=_outer_row(module, construction, loop)))
    rebuilt_sites = {c.site for c in constructions if id(c) in suppressed} if facts.trials and suppressed else ()
    # In TF 2 a model left behind holds memory (about 5 MB for a small one, ../shared/TF-FACTS.md) but
    # slows no later step, where in TF1 every later step runs in the grown graph: a loop of models
    # matters only over more trials.
    # TF 2's Keras in a module that does not turn eager execution off (compat.v1 names beside it, such
    # as a Session made for its GPU options, leave Keras eager): ``tf.keras``, ``from tensorflow import
    # keras`` and ``import keras`` alike, unless the program shows standalone Keras before 2.4 (a new
    # user's trial: the same 15-fold loop was silent through ``tf.keras.Sequential`` only)
    tf2 = eager or (module.keras_era != "old" and module.tf_mode in (None, "", "compat", "eager")
                    and not project.old_keras(module))
    model_bound = project.bound * EAGER_MODEL_FACTOR if tf2 else project.bound
    for trial in facts.trials:
        loop = _model_loop(module, trial, model_bound)
        if loop is None or trial.site in rebuilt_sites:
            continue
        via = None
        if trial.refs and all(project.worker_class(module, ref) for ref, _ in trial.refs):
            continue  # ``workers.append(Worker(model_args))``: one model per worker, the workers run together
        if trial.refs:
            makers = [s for s in (project.summary(module, ref) for ref, _ in trial.refs) if s is not None]
            via = next((s.builds[Effect.MODEL] for s in makers if Effect.MODEL in s.builds), None)
            if via is None:
                continue
        found.append(Finding(module.path, trial.site, Effect.MODEL, trial.subject, loop.row, loop.column, via=via))
    for call, callee in calls:
        if id(call) in suppressed:
            continue
        if not (callee.builds or callee.trains_model):
            via = _param_operator(project, module, call, callee) if call.loops and call.values else None
            loop = None if via is None else _session_loop(module, call, project.bound)
            if loop is not None:
                found.append(Finding(module.path, call.site, Effect.OPERATOR, called(call.callee),
                                     loop.row, loop.column, via=via))
            continue
        if callee.trains_model is not None and not project.worker_class(module, call.ref) and not (
                callee.trains_guard and project.never_runs(module, call, callee, callee.trains_guard)):
            loop = _model_loop(module, call, model_bound)
            if loop is not None:
                found.append(Finding(module.path, call.site, Effect.MODEL, called(call.callee),
                                     loop.row, loop.column, via=callee.trains_model))
        loop = _session_loop(module, call, project.bound)
        if loop is None:
            continue
        for effect, origin in callee.builds.items():
            if callee.guards and project.never_runs(module, call, callee, callee.guards.get(effect)):
                continue  # ``run_epoch(is_training=True)``: the branch that builds it is not taken
            if (effect is Effect.VARIABLE and (call.reuses or module.reuse_from and call.site.row > module.reuse_from)
                    and origin.subject.startswith("`tf.get_variable")):
                continue  # the root variable scope reuses: the helper's get_variable makes nothing
            if effect is Effect.OPERATOR and Effect.OP in callee.builds:
                continue  # one call, one finding: a helper's operators are more of the ops GG101 reports
            if effect is not Effect.MODEL and effect not in EAGER_EFFECTS and not project.runs_eagerly(origin.path, eager):
                found.append(Finding(module.path, call.site, effect, called(call.callee),
                                     loop.row, loop.column, via=origin, outer_row=_outer_row(module, call, loop)))
    for call, callee in calls:
        if callee.retains is not None and call.loops and not bounded(module, call.loops, max(project.bound, 1)):
            loop = module.loops[_once_skipped(module, call.loops)]
            found.append(Finding(module.path, call.site, Effect.RETAINED, called(call.callee),
                                 loop.row, loop.column, via=callee.retains))
    for retention in facts.retentions:
        if retention.loop == CALLER:
            continue  # a store in the function body: reported at the calls in loops (above)
        if retention.refs and not any(project.is_model(module, ref, kind) for ref, kind in retention.refs):
            continue
        nest = retention.nest or (retention.loop,)
        if bounded(module, nest, max(project.bound, 1)):
            continue  # a loop that runs a handful of times keeps a handful of models (once: one)
        loop = module.loops[_once_skipped(module, nest[:nest.index(retention.loop) + 1] if retention.loop in nest
                                          else (retention.loop,))]
        found.append(Finding(module.path, retention.site, Effect.RETAINED,
                             f"`{retention.text}` (holding {retention.value})", loop.row, loop.column))
    if not project.eager_off(module) and not project.old_keras(module):
        eager_found = _eager_findings(project, module, facts, constructions, calls)
        if module.cheap_predict:
            # Keras 3 on JAX or torch (``KERAS_BACKEND``) beside TensorFlow code of its own (a notebook's
            # ``%%backend tensorflow`` cells): predict is cheap there; tf.function still retraces.
            eager_found = [f for f in eager_found if f.effect not in _PIPELINE_EFFECTS]
        found.extend(eager_found)
    return found


#: How many times ``max-bounded-iterations`` a loop of models may run in TF 2 eager code and still be a
#: handful (GG201): there an old model costs memory, not step time.
EAGER_MODEL_FACTOR = 3

#: TF 2 effects that a function's callers repeat when they call it in a loop (GG302, GG303, GG305, GG306).
_CALLER_EAGER_EFFECTS = (Effect.NEW_FUNCTION, Effect.PREDICT, Effect.RECOMPILE, Effect.FIT)
#: Keras calls whose cost is a data pipeline per call (GG303, GG306): cheap on Keras 3's JAX and torch.
_PIPELINE_EFFECTS = (Effect.PREDICT, Effect.FIT)
#: TF 2 effects that belong to a new model: a loop that makes one per iteration (a sweep) needs them anew.
_SWEEP_EFFECTS = (Effect.NEW_FUNCTION, Effect.RECOMPILE)


def _eager_findings(project: Project, module: ModuleFacts, facts: FunctionFacts, constructions: list,
                    calls: list) -> list[Finding]:
    """GG301-GG306 in one function: TF 2 constructions repeated by an unbounded loop (any loop, not only
    a session loop), calls in such loops of functions that make them, and variables made by the
    traces of a ``tf.function``. A loop that makes a model (a sweep) may compile it and make its
    optimizer and functions anew: that is GG201's business."""
    found: list[Finding] = []
    candidates = [c for c in constructions if c.effect in EAGER_EFFECTS]
    per_trial = set()  # predicts on the iteration's data: one evaluation per trial in a loop that makes a model
    for construction, kind, refs in facts.eager_checks:
        if kind == "data":
            if not refs or project.keras_model(module, refs):
                candidates.append(construction)
                per_trial.add(id(construction))
        elif kind is None or _eager_check(project, module, kind, refs):
            candidates.append(construction)
    if not candidates and not calls:
        return found  # nothing to report (most functions): skip finding the loops that make models
    model_loops = {c.loops[-1] for c in constructions if c.effect is Effect.MODEL and c.loops}
    model_loops.update(trial.loops[-1] for trial in facts.trials if trial.loops and (not trial.refs or any(
        Effect.MODEL in summary.builds for summary in (project.summary(module, ref) for ref, _ in trial.refs)
        if summary is not None)))
    model_loops.update(call.loops[-1] for call, callee in calls
                       if call.loops and (Effect.MODEL in callee.builds or callee.trains_model is not None))
    # Trial loops: each iteration is a whole training run (a ``fit`` of several epochs, here or in a
    # callee), so one ``predict`` per iteration is that trial's evaluation, not a per-step cost.
    trial_loops = {training.loops[-1] for training in facts.trainings if training.loops}
    trial_loops.update(call.loops[-1] for call, callee in calls
                       if call.loops and callee.trains is not None and not call.branched)
    for construction in candidates:
        if construction.effect is Effect.TRACED_VARIABLE:
            found.append(Finding(module.path, construction.site, construction.effect, subject_of(construction),
                                 construction.site.row, construction.site.column))
            continue
        loop = _eager_loop(project, module, construction)
        if loop is None or ((construction.effect in _SWEEP_EFFECTS or id(construction) in per_trial)
                            and construction.loops[-1] in model_loops):
            continue
        if construction.effect is Effect.PREDICT and (construction.loops[-1] in trial_loops
                                                      or construction.inner in trial_loops):
            continue
        found.append(Finding(module.path, construction.site, construction.effect, subject_of(construction),
                             loop.row, loop.column))
    for call, callee in calls:
        if facts.traced and not call.loops and CALLER not in call.exempt:
            for effect in (Effect.VARIABLE, Effect.MODEL):
                origin = callee.builds.get(effect)
                if origin is not None and not (effect is Effect.MODEL and UNBUILT in call.exempt):
                    found.append(Finding(module.path, call.site, Effect.TRACED_VARIABLE, called(call.callee),
                                         call.site.row, call.site.column, via=origin))
                    break
        trial = bool(call.loops) and (call.loops[-1] in trial_loops or (callee.trains is not None and not call.branched))
        if call.samples and call.loops and callee.predict_params:
            found.extend(f for f in _predicts_through(project, module, call, callee)
                         if not (trial and f.effect is Effect.PREDICT))
        if not call.loops or not any(effect in callee.builds for effect in _CALLER_EAGER_EFFECTS):
            continue
        loop = _eager_loop(project, module, call)
        if loop is None:
            continue
        sweep = call.loops[-1] in model_loops or Effect.MODEL in callee.builds or callee.trains_model is not None
        for effect in _CALLER_EAGER_EFFECTS:
            origin = callee.builds.get(effect)
            if origin is not None and not (sweep and effect in _SWEEP_EFFECTS) and not (trial and effect is Effect.PREDICT):
                found.append(Finding(module.path, call.site, effect, called(call.callee), loop.row, loop.column,
                                     via=origin))
    return found


def _predicts_through(project: Project, module: ModuleFacts, call, callee) -> list[Finding]:
    """GG303 (GG306) at ``call`` (in a loop) of a function that runs Keras' predict (fit) on a parameter
    (directly or through calls), when the call passes one sample or the iteration's data for it
    (``agent.act(state)``); one finding per effect, none for an effect the callee has anyway."""
    found: dict = {}
    for (param, effect), origin in callee.predict_params.items():
        if effect in found or effect in callee.builds or param not in callee.params:
            continue
        position = callee.params.index(param) - (1 if project.passes_receiver(module, call) else 0)
        index = next((i for where, i in call.samples if where in (position, param)), None)
        if index is None:
            continue
        loops = call.loops[:call.loops.index(index) + 1] if index in call.loops else call.loops
        loop = _eager_loop(project, module, call._replace(loops=loops))
        if loop is None:
            continue
        found[effect] = Finding(module.path, call.site, effect, called(call.callee), loop.row, loop.column,
                                via=origin)
    return list(found.values())


def _eager_check(project: Project, module: ModuleFacts, kind: str, refs: tuple) -> bool:
    """Phase 3's answer for a TF 2 construction recorded with ``FunctionFacts.eager_checks``."""
    if kind == "traced":
        target = project.resolve(module, refs[0])
        return target is not None and target[0].functions[target[1]].traced == 1
    if kind == "returns_traced":
        # ``train_step = make_train_step(model)``: the factory returns a ``tf.function`` object or a
        # ``@tf.function`` def of its own (without an input_signature).
        target = project.resolve(module, refs[0])
        if target is None:
            return False
        for value in target[0].functions[target[1]].return_values:
            if isinstance(value, TFObject) and value.kind == "function":
                return True
            if isinstance(value, ProjectRef):
                inner = project.resolve(target[0], value.ref)
                if inner is not None and inner[0].functions[inner[1]].traced == 1:
                    return True
        return False
    if kind == "param_traced":
        return project.param_method_traced(module, refs[0], refs[1])
    return project.keras_model(module, refs)


def _eager_loop(project: Project, module: ModuleFacts, item):
    """The innermost loop that repeats the TF 2 construction or call ``item``, or None when no loop
    does or the loops around it run at most ``max-bounded-iterations`` times in all."""
    if not item.loops or bounded(module, item.loops, max(project.bound, 1), item.exempt):
        return None
    index = _repeating(module, item)
    return None if index is None else module.loops[index]


def _once_skipped(module: ModuleFacts, loops) -> int:
    """The innermost of ``loops`` (indices, outermost first) that the source does not say runs once
    (``for lr in [1e-3]:``); the innermost when all do."""
    return next((index for index in reversed(loops) if module.loops[index].trips != 1), loops[-1])


def _repeating(module: ModuleFacts, item):
    """The innermost loop around ``item`` that repeats it: a loop ``item`` is exempt from (a retry
    loop that ends in ``break``, a once-guard on its counter) runs it once per entry, so the loop
    around that one repeats it (first contact: a grid over table rows, each trial in a 30-try retry
    loop, was read as built once); so does a loop the source says runs once (``for lr in [1e-3]:``
    inside the sweep's loop, a ninth new user's trial), unless no loop around it repeats it. None
    when every loop is exempt."""
    repeating = [index for index in item.loops if index not in item.exempt]
    return _once_skipped(module, repeating) if repeating else None

def _model_loop(module: ModuleFacts, item, bound: int):
    """The innermost loop that repeats a model construction or call ``item``, or None when that
    loop releases what it builds (a fresh graph or a once-guard in it, a reset or
    ``clear_session()`` anywhere in its iteration, directly or through a call), or when the loops
    around it run at most ``bound`` times in all (``max-bounded-iterations``; at least once)."""
    if not item.loops or bounded(module, item.loops, max(bound, 1), item.exempt):
        return None  # a 5-fold split, ``max_evals=10``, ``for x in [a, b]``: a handful of models
    index = _repeating(module, item)
    if index is None or module.loops[index].resets_graph:
        return None
    return module.loops[index]
