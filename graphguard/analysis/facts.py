"""The facts phase 1 reads from one file (:mod:`graphguard.analysis.reader`) and phases 2 and 3 use
(:mod:`graphguard.analysis.fixpoint`, :mod:`graphguard.analysis.findings`).

Facts are small, picklable records with positions: no syntax tree is kept, so a module's tree is
freed as soon as it is read, facts travel from worker processes and live in the cache.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from typing import NamedTuple

from graphguard.analysis.bindings import Ref
from graphguard.analysis.catalog import Effect
from graphguard.analysis.syntax import short

#: Effects whose construction's ``callee`` is already the whole subject (```step` in `train_step(...)```)
EAGER_SUBJECTS = frozenset({Effect.RETRACE_ARGUMENT, Effect.NEW_FUNCTION, Effect.PREDICT, Effect.RECOMPILE,
                            Effect.TRACED_VARIABLE, Effect.FIT})

#: Marks an exemption ``(EVERY, loop index, k)``: what is under ``if i % k == 0:`` runs on every
#: ``k``-th iteration of that loop (a loop of known count then counts ``ceil(trips / k)``).
EVERY = "every"
#: The loop index that stands for "the caller's loop" in exemptions made at function level.
CALLER = -1
#: The first item of an exemption mark ``(FLAG, parameter, truth)``: the construction or call stands in
#: the branch of ``if parameter:`` (truth True) or its ``else`` (False), where ``parameter`` is one of
#: the function's own. A call that passes the other truth for it (``run_epoch(is_training=True)``
#: and a ``tf.no_op()`` in the ``else``) does not run what stands there.
FLAG = "flag"
#: The first item of a mark ``(PASSED, parameter, values)``: the call or construction happens only
#: through a call of the function's parameter ``parameter`` (``action()`` in ``def button(msg,
#: action)``), made for what callers pass there, the resolved ``values`` (a frozenset of
#: ``("function", path, name)``). A call that passes another known function for it does not run it:
#: every caller of such a helper is not blamed for what one of the functions passed to it builds.
PASSED = "passed"


def flag_marks(marks: frozenset) -> bool:
    """Whether an exemption's ``marks`` are all :data:`FLAG` marks: a branch on a parameter, which
    exempts nothing by itself (only a call passing the other truth does)."""
    return all(mark.__class__ is tuple and mark[0] in (FLAG, PASSED) for mark in marks)


def flags_of(exempt: frozenset) -> frozenset:
    """The :data:`FLAG` marks ``(FLAG, parameter, truth)`` and :data:`PASSED` marks ``(PASSED, parameter,
    values)`` among a construction's or call's exemptions."""
    return frozenset(mark for mark in exempt if mark.__class__ is tuple and mark[0] in (FLAG, PASSED))
#: Marks a construction of a project class in a ``tf.function`` whose object the body never builds
#: (never calls it, nor ``build``s it): a Keras layer's sublayers made there have no variables yet.
UNBUILT = -2


@dataclass(eq=False)
class Loop:
    """A loop: a ``for``/``while`` statement or a comprehension, at ``row``/``column`` (1-based)."""

    index: int
    row: int
    column: int
    runs_step: bool = False
    #: it calls a Keras model's ``fit``/``predict`` in a module whose graph code is spelled through
    #: ``compat.v1``: a session step only when the program runs in graph mode (phase 2 sets
    #: ``runs_step`` unless :attr:`graphguard.analysis.fixpoint.Project.eager_program`)
    keras_step: bool = False
    resets_graph: bool = False
    #: How many times the body runs, when the source says (``for case in (a, b, c)``: 3, ``range(4)``:
    #: 4); 1 for one-shot setup over one model's variables or a file of saved weights; None: unknown
    #: (a ``while`` loop, an epoch or batch loop, anything data-sized).
    trips: int | None = None
    #: what repeats the body when no loop statement does: ``"search"`` (a search driver calling its
    #: objective per trial), ``"request handler"`` (a web route's function, per request); ``""``: a loop
    kind: str = ""
    #: (function, symbolic values) when the loop runs over what a parameter or a project call gives:
    #: phase 2 sets ``trips`` to 1 when every value that reaches it is one model's fixed collection
    over: tuple | None = None


class Site(NamedTuple):
    """Where an expression is: 1-based rows and columns (characters), end exclusive."""

    row: int
    column: int
    end_row: int
    end_column: int


class Construction(NamedTuple):
    """An expression that builds graph ops: ``effect`` says what, ``callee`` is how it was written
    (``tf.train.Saver``), ``loops`` are the indices of the enclosing loops (outermost first) and
    ``exempt`` the loops that do not repeat it (fresh graph or once-guard inside them). ``in_graph``:
    it stands in a ``with <graph>.as_default():`` block (or ``with Session(graph=g):``), where ops go
    to that graph even when eager execution is on (a TF 2 module's test that builds a TF1 graph)."""

    effect: Effect
    site: Site
    callee: str
    loops: tuple
    exempt: frozenset
    in_graph: bool = False
    #: the innermost loop around it when ``loops`` stops at an outer one (a ``predict`` reported at the
    #: loop that changes its data): an inner loop that trains a model per iteration makes it that
    #: trial's evaluation; -1 when ``loops`` ends at the innermost loop
    inner: int = -1


class ProjectCall(NamedTuple):
    """A call of project code (``build_head(x)``, ``self.evaluate()``, ``model.Model()``).

    ``bound`` is true when the callee's first parameter is bound implicitly (``obj.method()``,
    ``Class()``). Which parameters receive a session is decided by the value flow over ``values``
    (:mod:`graphguard.analysis.values`)."""

    ref: Ref
    site: Site
    callee: str
    loops: tuple
    exempt: frozenset
    bound: bool = False
    #: (position or keyword, value) of the arguments whose values the analysis knows or can follow:
    #: a session, a TensorFlow object, an instance or function of the project, the caller's own
    #: parameter or the result of a project call (see :mod:`graphguard.analysis.values`)
    values: tuple = ()
    #: (position or keyword, loop index) of the arguments that are one sample (loop index: the
    #: innermost loop, or :data:`CALLER` for a call outside loops) or that the loop at that index
    #: changes per iteration (GG303 through a helper that predicts on its parameter)
    samples: tuple = ()
    #: the call stands in ``tf.variable_scope(..., reuse=True or tf.AUTO_REUSE)``: the callee's
    #: ``tf.get_variable`` returns the variables made before, so it makes none for this caller
    reuses: bool = False
    #: the call stands under an ``if`` inside its innermost loop (at function level when it is in
    #: none): it may not run on every iteration (``if done: self.replay()``)
    branched: bool = False
    #: (position or keyword, truth) of the arguments written as ``True``, ``False`` or ``None``, and
    #: (keyword, None) of its other keyword arguments: a callee's branch on that parameter (``if
    #: is_training:``) that the call never takes builds nothing for it (:data:`FLAG`)
    flags: tuple = ()
    #: how many positional arguments it passes (-1: ``*args`` or ``**kwargs``, not known): a parameter
    #: past them that no keyword names takes its default
    nargs: int = -1


class DeferredUse(NamedTuple):
    """``X.method(...)`` or ``X(...)`` where ``X`` is a parameter or what a project call returned: what
    it builds is known once phase 2 knows the values that reach ``X`` (a variable passed to
    ``set_lr(var, value)``, a ``Classifier`` passed to ``evaluate(sess, model)``, the closure that
    ``make_scorer(logits)`` returns). ``method`` is None for a call of ``X`` itself."""

    receiver: object
    method: str | None
    site: Site
    callee: str
    loops: tuple
    exempt: frozenset
    values: tuple = ()
    #: as :attr:`ProjectCall.samples`: ``agent.act(state)`` on a parameter ``agent`` that a caller
    #: gives an object of a project class whose ``act`` predicts on ``state``
    samples: tuple = ()


class DeferredStep(NamedTuple):
    """``X.run(...)`` where ``X`` came from project function ``ref``: a step if it returns a session."""

    ref: Ref
    loops: tuple


class DeferredOperator(NamedTuple):
    """An operator whose operands may be tensors once project functions are known (``model.logits() * 2``),
    in a loop (outside loops it could not be reported, so it is not recorded)."""

    construction: Construction
    refs: tuple
    #: parameters of the function the operator acts on: a tensor when a caller passes one (phase 2's
    #: values), as ``def evaluate(sess, logits): sess.run(logits * 2)`` called with the model's output
    params: tuple = ()


class Retention(NamedTuple):
    """A store that keeps a value made on every iteration of loop ``loop`` in a container made outside
    that loop (``models.append(model)``, ``results[lr] = solver``), for ``model-retained-across-iterations``.

    ``text`` is the store as written, ``value`` how the message names the kept value (```Solver(...)``,
    line 40``). ``refs`` are project calls that decide, in phase 2, whether the value is a model:
    ``(ref, "returns")`` when the value is what ``ref`` returned, ``(ref, "builds")`` when it is an
    instance of a class whose ``__init__`` builds a Keras model; empty when it is known to be one.
    No exemptions: a fresh graph or a once-guard does not free what a container holds. ``nest``: every
    loop around the store that the container outlives (how many values it keeps is their product)."""

    site: Site
    text: str
    value: str
    loop: int
    refs: tuple = ()
    nest: tuple = ()


class Trial(NamedTuple):
    """A Keras model made at ``site`` and used as a trial in the same iteration: trained, evaluated,
    saved, or handed to project code (GG201). ``loops`` enclose where it was made, ``exempt`` are the
    loops that do not repeat it there; ``refs`` are the project calls whose summaries decide whether
    it is a Keras model (``(ref, "builds")``), empty when it is known to be one."""

    site: Site
    subject: str
    loops: tuple
    exempt: frozenset
    refs: tuple = ()



class SessionOpen(NamedTuple):
    """A new session made in a loop (``tf.Session()``), for ``graph-not-reset-in-loop``."""

    site: Site
    callee: str
    loops: tuple


@dataclass(eq=False)
class FunctionFacts:
    """What one function (or the module body, ``<module>``) does, as read from its source."""

    name: str
    #: Effect -> (row, subject) of the first construction outside any loop that runs on every call
    #: (aggregated: a helper's summary needs no more, and facts stay small for workers and the cache)
    builds: dict = field(default_factory=dict)
    params: tuple = ()  #: positional parameter names, in order
    # The lists below but ``constructions`` and ``calls`` are rare: a shared empty tuple until the first
    # entry (:func:`add`). A module has thousands of functions, and each empty list is an object to make,
    # pickle in a worker and unpickle in the main process.
    param_steps: tuple | list = ()  #: (parameter, loops) of ``param.run(...)``
    constructions: list = field(default_factory=list)
    calls: list = field(default_factory=list)
    deferred_steps: tuple | list = ()
    deferred_operators: tuple | list = ()
    session_opens: tuple | list = ()
    opens_session: bool = False  #: makes a new session somewhere in its body
    runs_step: bool = False
    resets_graph: bool = False  #: resets the default graph at function level (not only inside a loop)
    returns_session: bool = False
    returns: tuple | list = ()  #: refs whose results it returns
    #: Values it returns that phase 2 follows (an object, a local function, a parameter); rare, so a
    #: shared empty tuple until the first one
    return_values: tuple | list = ()
    deferred_uses: tuple | list = ()  #: :class:`DeferredUse` records, rare as well
    #: (parameter, Site, subject) of the operators outside loops on parameters it passes to no TensorFlow
    #: call (``def scaled(logits): return logits * 2``): ops when a call passes a tensor (phase 3)
    param_operators: tuple | list = ()
    # The GG201/GG202 facts below are rare: they start as a shared empty tuple, and become a list or a
    # set on first use (a module has thousands of functions; each empty list costs time and memory).
    retentions: tuple | list = ()  #: :class:`Retention` stores in its loops
    trials: tuple | list = ()  #: :class:`Trial` models made and used, in loops or not
    #: Where it returns a model-like object (a Keras model, a ``...Net``, a graph): None for the whole
    #: value, an index for an element of a returned tuple (``return model, history``)
    model_positions: frozenset | set = frozenset()
    #: (position, ref, kind): project calls that decide ``model_positions`` in phase 2
    model_returns: tuple | list = ()
    #: it returns a model-like value that it trained, evaluated, saved or handed on first (GG202: a loop
    #: that keeps what it returns keeps trials, not the parts of one model)
    uses_returned: bool = False
    #: 1 when decorated with ``tf.function`` (every call with new Python values traces it again), 2 when
    #: the decorator gives an ``input_signature`` (a Python value cannot change its trace); 0 otherwise
    traced: int = 0
    #: (parameter, construction, model): ``model.predict(parameter)`` at function level (parameter
    #: None: on one sample), where ``model`` is True or the (ref, kind) pairs that decide it is a Keras
    #: model (kind ``"absent"``: that project method must not exist); GG303 at callers' loops
    predicts: tuple | list = ()
    #: (construction, kind, refs) of TF 2 findings that phase 3 decides: ``"traced"`` when the callee
    #: ``refs[0]`` is a ``tf.function`` of another module, ``"model"`` when one of ``refs`` ((ref, kind)
    #: as :meth:`Project.is_model` takes them) gives a Keras model
    eager_checks: tuple | list = ()
    #: Constructions (effect FIT) of Keras ``fit`` calls that are a whole training run (``epochs=`` more
    #: than one): a loop that runs one per iteration is a trial loop, where one ``predict`` per iteration
    #: is the trial's evaluation (GG303 does not apply); at function level the function trains per call
    trainings: tuple | list = ()
    #: parameters whose default is ``True``, ``False`` or ``None``, with its truth (:data:`FLAG`)
    flag_defaults: tuple = ()
    #: Effect -> the :data:`FLAG` marks that every construction of ``builds`` of that effect stands
    #: under (``tf.no_op()`` in the ``else`` of ``if is_training:``); absent: some stands under none
    build_flags: tuple | dict = ()


@dataclass(eq=False)
class ClassFacts:
    name: str
    bases: list = field(default_factory=list)  #: Refs of project base classes
    attributes: dict = field(default_factory=dict)  #: ``self.X`` bindings made in its methods
    #: it derives from ``threading.Thread`` or ``multiprocessing.Process`` (by the base's last name):
    #: its instances are workers that run side by side (A3C's one model per worker thread)
    worker: bool = False


@dataclass(eq=False)
class ModuleFacts:
    """Everything phase 2 needs from one file. Picklable: no syntax tree inside."""

    path: str
    functions: dict = field(default_factory=dict)
    classes: dict = field(default_factory=dict)
    loops: list = field(default_factory=list)
    #: the module turns TF 2 behaviour off, or runs on TF1 graphs with no eager signal: GG3xx do not apply
    eager_off: bool = False
    #: it makes a placeholder at module level outside a graph block, which raises under eager execution:
    #: whatever its spelling, its program runs TF1 graphs (:attr:`graphguard.analysis.fixpoint.Project.eager_program`)
    graph_only: bool = False
    #: how the module runs TensorFlow: ``"off"`` it turns TF 2 behaviour off; ``"v1"`` it builds graphs
    #: with TF 1.x names (sessions, placeholders) as TF 1.x spells them; ``"compat"`` it does so through
    #: ``compat.v1`` (code for TF 2); ``"eager"`` it shows eager execution of its own (``.numpy()``,
    #: ``tf.GradientTape``, ``tf.function``) and graph names only through ``compat.v1``, if any; ``""``
    #: it shows nothing
    tf_mode: str = ""
    #: the Keras era its source shows (:attr:`graphguard.analysis.runtimes.Runtime.keras_era`)
    keras_era: str = ""
    #: it runs only on TensorFlow before 2.0 (:func:`graphguard.analysis.runtimes.spells_tf1`): for
    #: its program's Keras era it counts as ``"old"`` (Keras 2.4 and later need TF 2.2)
    tf1: bool = False
    #: its Keras' ``predict`` is cheap (:attr:`graphguard.analysis.runtimes.Runtime.cheap_predict`):
    #: no GG303 here, even where eager TensorFlow code beside it keeps the other TF 2 rules on
    cheap_predict: bool = False
    #: the row of a module-level ``tf.get_variable_scope().reuse_variables()`` (0: none): a helper's
    #: ``tf.get_variable`` called below it returns the existing variable
    reuse_from: int = 0
    #: module-level names bound to code of the checked tree defined elsewhere, and where that is:
    #: ``from .ops import pred`` -> ``{"pred": Ref(".ops", "pred")}``, ``pred = _pred`` -> ``Ref("", "_pred")``
    #: (an importer of this module reaches them through it, as a package's ``__init__`` re-exports)
    exports: dict = field(default_factory=dict)
    #: modules of the checked tree star-imported at module level, the last one first
    stars: tuple = ()
    #: modules it may import that could be of the checked tree (``"helpers"``, ``".model"``,
    #: ``"pkg.module"`` for ``from pkg import module``), in source order: the program's import graph
    imports: tuple = ()


def add(facts: FunctionFacts, name: str, item) -> None:
    """Append ``item`` to the list ``facts.<name>``, made on first use (rare lists start as ``()``)."""
    items = getattr(facts, name)
    if items.__class__ is tuple:
        items = list(items)
        setattr(facts, name, items)
    items.append(item)


#: The end of a project call's ``callee`` text for a read of a ``@property`` (``net.predictions``): a
#: message names it without ``(...)``.
PROPERTY = " [property]"


def called(callee: str) -> str:
    """How a message names a project call: ```train(...)```, or ```net.predictions``` for a property read."""
    return f"`{callee[:-len(PROPERTY)]}`" if callee.endswith(PROPERTY) else f"`{callee}(...)`"


def subject_of(construction: Construction) -> str:
    """How a message names a construction: ```loss * 2``` or ```tf.argmax(...)```."""
    if construction.effect is Effect.OPERATOR or construction.effect in EAGER_SUBJECTS:
        return f"`{construction.callee}`"
    return f"`{construction.callee}(...)`"


def aggregate_builds(facts: FunctionFacts, skip: frozenset = frozenset()) -> None:
    """At the end of reading a function: its constructions outside loops that run on every call become
    :attr:`FunctionFacts.builds` (the first of each effect) and :attr:`FunctionFacts.build_flags` (the
    FLAG marks every one of an effect shares); only those in loops stay in ``constructions``. Effects
    in ``skip`` are dropped (a module that turns TF 2 behaviour off repeats no TF 2 work)."""
    kept = []
    for construction in facts.constructions:
        if construction.effect in skip:
            continue
        if construction.loops:
            kept.append(construction)
        elif CALLER not in construction.exempt and construction.effect not in facts.builds:
            if construction.callee.__class__ is not str:  # an operator named by its node (_operator)
                construction = construction._replace(callee=short(ast.unparse(construction.callee)))
            facts.builds[construction.effect] = (construction.site.row, subject_of(construction))
            marks = flags_of(construction.exempt) if construction.exempt else None
            if marks:
                facts.build_flags = {**(facts.build_flags or {}), construction.effect: marks}
        elif CALLER not in construction.exempt and construction.effect in facts.build_flags:
            marks = facts.build_flags[construction.effect] & flags_of(construction.exempt)
            facts.build_flags = {**(facts.build_flags or {}), construction.effect: marks}
            if not marks:
                del facts.build_flags[construction.effect]
    facts.constructions = kept
