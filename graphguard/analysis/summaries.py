"""What calling a function does (phase 2's :class:`Summary` of it), and the bound of a loop nest.

:class:`Summary` is filled by :class:`graphguard.analysis.fixpoint.Project`'s fixpoint over the call graph
and read by phase 3 (:mod:`graphguard.analysis.findings`); :func:`bounded` says whether a nest of loops
runs a handful of times (``max-bounded-iterations``)."""

from __future__ import annotations

from dataclasses import dataclass, field

from graphguard.analysis.catalog import Effect
from graphguard.analysis.facts import FLAG, PASSED, ModuleFacts


@dataclass(frozen=True)
class Origin:
    """Where a helper builds something: ``path:row``, and what it builds there, as the message shows
    it (```tf.reduce_mean(...)``` or ```scale * loss```)."""

    path: str
    row: int
    subject: str


@dataclass(eq=False)
class Summary:
    """What calling one function does, over everything it calls in the checked tree."""

    builds: dict = field(default_factory=dict)  #: Effect -> Origin of the first such construction
    runs_step: bool = False
    returns_session: bool = False
    resets_graph: bool = False
    opens_session: bool = False
    model_positions: frozenset = frozenset()  #: where it returns a model-like object (GG202)
    trains_model: Origin | None = None  #: makes a Keras model and trains or evaluates it on every call (GG201)
    #: the marks every way of ``trains_model`` stands under (as :attr:`guards` for ``builds``)
    trains_guard: frozenset = frozenset()
    #: runs a whole training (a Keras ``fit`` of several epochs) on every call: a loop calling it is a
    #: trial loop, where one ``predict`` per iteration is the trial's evaluation (GG303)
    trains: Origin | None = None
    #: returns a model-like value that it (or the callee it returns from) trained, evaluated, saved or
    #: handed on (:attr:`graphguard.analysis.facts.FunctionFacts.uses_returned`)
    uses_returned: bool = False
    session_params: set = field(default_factory=set)  #: parameters some caller passes a session to
    #: keeps the model it makes in a module-level container on every call (GG202 at calls in loops)
    retains: Origin | None = None
    params: tuple = ()  #: positional parameter names, in order (to place an argument of a call)
    #: (parameter, effect) -> Origin of a Keras ``predict`` (effect PREDICT, GG303) or ``fit`` (FIT, GG306)
    #: on what is passed for the parameter, directly or through calls
    predict_params: dict = field(default_factory=dict)
    #: Effect -> the FLAG marks every way it builds that effect stands under (``if is_training:``, on
    #: its own parameters): a call that passes the other truth does not build it (:meth:`Project.never_runs`)
    guards: dict = field(default_factory=dict)
    #: parameter -> the truth of its default, for those defaulting to ``True``, ``False`` or ``None``
    flag_defaults: dict = field(default_factory=dict)





#: Methods that make a project class named like a model (``TwoLayerNet``) one (GG202).
MODEL_METHODS = ("loss", "train", "fit", "predict", "forward", "call", "step", "train_step", "backward")


def add_build(summary: Summary, effect, origin: Origin, marks: frozenset) -> bool:
    """Record that ``summary``'s function builds ``effect`` (first ``origin`` kept), in the branches
    ``marks``: its guard becomes what every way of building it shares. Whether anything changed."""
    if effect not in summary.builds:
        summary.builds[effect] = origin
        if marks:
            summary.guards[effect] = marks
        return True
    guard = summary.guards.get(effect)
    if guard is None:
        return False
    shared = merge_guards(guard, marks)
    if shared == guard:
        return False
    if shared:
        summary.guards[effect] = shared
    else:
        del summary.guards[effect]
    return True


def merge_guards(guard: frozenset, marks: frozenset) -> frozenset:
    """The marks two ways of building an effect share: the FLAG marks both stand under, and for a
    parameter both reach through a call of it (PASSED marks), the union of the functions passed
    (``button(..., run_agent)`` and ``button(..., train_agent)`` both build a model: a call passing
    ``quit_game`` builds none)."""
    shared = {mark for mark in guard & marks if mark[0] == FLAG}
    passed = {mark[1]: mark[2] for mark in marks if mark[0] == PASSED}
    for mark in guard:
        if mark[0] == PASSED and mark[1] in passed:
            shared.add((PASSED, mark[1], mark[2] | passed[mark[1]]))
    return frozenset(shared)


def is_model_summary(summary, kind: str) -> bool:
    """Whether ``summary`` (a :class:`Summary`, or an answer already known for a class) gives a model
    for ``kind``: ``"builds"`` a Keras model per call, ``"returns"`` one, ``"returns:N"`` one at
    index ``N`` of a returned tuple, ``"class"`` an object of a model class; ``"trained_returns"``
    (``"trained_returns:N"``) one that it also trains or evaluates on every call."""
    if isinstance(summary, bool):
        return summary
    if kind.startswith("trained_"):  # "trained_returns": returns one that it trains or evaluates itself
        return (summary.uses_returned or summary.trains_model is not None or summary.trains is not None) \
            and is_model_summary(summary, kind[8:])
    if kind == "builds":
        return Effect.MODEL in summary.builds
    if kind == "returns":
        return bool(summary.model_positions)  # the model, or a tuple that holds one (``return model, loss``)
    return int(kind.partition(":")[2]) in summary.model_positions  # "returns:1": an element of a returned tuple


def bounded(module: ModuleFacts, loops: tuple, bound: int, exempt: frozenset = frozenset()) -> bool:
    """Whether the nest of ``loops`` (indices into ``module.loops``) runs its body at most ``bound``
    times in all: every loop's trip count is known and their product is at most ``bound``
    (``for case in (a, b, c)``: 3; ``range(8)`` in ``range(4)`` in ``range(4)``: 128, not bounded).
    A loop with an unknown count (an epoch, batch or episode loop, a ``while``) makes the nest unbounded.
    ``exempt`` (the item's): an ``(EVERY, loop, k)`` in it says the item runs on every ``k``-th
    iteration of that loop (``if epoch % 5 == 0:``), so that loop counts ``ceil(trips / k)``."""
    if bound <= 0:
        return False
    product = 1
    for index in loops:
        if index in exempt:
            continue  # it runs the item once per entry (a retry loop's ``break``, a once-guard)
        trips = module.loops[index].trips if index >= 0 else None
        if trips is None:
            return False
        if exempt:
            for mark in exempt:
                if mark.__class__ is tuple and mark[1] == index:
                    trips = -(-trips // mark[2])
        product *= trips
        if product > bound:
            return False
    return True
