"""Phase 2, first step: follow values across calls, to a fixpoint over the project.

Phase 1 (:mod:`graphguard.analysis.reader`) records, per function, *symbolic* values where it cannot
know more alone: a parameter (:class:`~graphguard.analysis.bindings.Param`), what a project call
returns (:class:`~graphguard.analysis.bindings.CallResult`), an instance or a function of the project
named in the module that wrote it. This module resolves them over the whole run:

* the values that call sites pass flow into the callee's parameters (``evaluate(sess, model)`` with a
  ``Classifier``: inside ``evaluate``, ``model`` is a ``Classifier``; ``set_lr(lr_var, 0.1)``: ``var``
  is a variable);
* the values a function returns flow to its callers (``make_iterator(ds)`` returns an iterator;
  ``make_scorer(logits)`` returns its local function ``score``);

and then turns each :class:`~graphguard.analysis.facts.DeferredUse` (``model.save(...)``,
``var.assign(...)``, ``it.get_next()``, ``score(sess, x)`` on such a value) into what it is: a call of
project code, or a construction. Those may pass values on in turn, so the two steps repeat until
nothing new appears (in practice two or three rounds).

A resolved value is a small tuple: ``("session",)``, ``("tf", kind)`` (a TensorFlow object of that
kind: ``variable``, ``iterator``, ...), ``("instance", path, qualname)``, ``("class", path, qualname)``
(a class handed on, made where it arrives), ``("function", path,
qualname)``, or ``("elements", value, setup)`` for a Python container of such values (a list of variables
passed to ``sync(variables, values)``, whose loop then knows ``v`` is a variable). Where it stops: values kept in containers or attributes of other objects are followed
only inside one module (phase 1); ``*args``/``**kwargs`` are not followed; a value reaching a parameter
from any caller counts for every call (the analysis does not tell call sites apart), except a function
called through its parameter (``action()`` in ``def button(msg, action)``): what that call builds is
marked with the function passed (:data:`~graphguard.analysis.facts.PASSED`), so a caller that passes
another known function is not blamed for it (:meth:`Project.never_runs`).
"""

from __future__ import annotations

import heapq
import re

from graphguard.analysis import catalog
from graphguard.analysis.bindings import (
    SESSION,
    CallResult,
    Choice,
    Elements,
    InitParam,
    Instance,
    MethodResult,
    Param,
    ProjectRef,
    Ref,
    TFObject,
)
from graphguard.analysis.facts import PASSED, Construction, ModuleFacts, ProjectCall

#: The most rounds of "flow values, then turn uses into calls"; real projects settle in two or three.
MAX_ROUNDS = 6
#: The most passes of one round's value flow (the public corpus settles in under ten).
MAX_FLOWS = 100
SESSION_VALUE = ("session",)
TENSOR_VALUES = frozenset({("tf", "tensor"), ("tf", "variable")})


_NUMBER = re.compile(r"\d+")


def source_order(value) -> tuple:
    """A resolved value's sort key (values are tuples of strings, numbers and values), the numbers in
    its names compared as numbers: the order of a set of values is the same in every process (a set
    of strings iterates in hash order, which ``PYTHONHASHSEED`` changes), and lambdas (``<lambda:9:4>``
    before ``<lambda:10:4>``) keep their order when lines above them move, so an edit that only moves
    lines cannot change which value is taken first (:mod:`graphguard.incremental`)."""
    return tuple((2, source_order(part)) if isinstance(part, tuple)
                 else (1, _NUMBER.sub(lambda match: match[0].zfill(12), part)) if isinstance(part, str)
                 else (0, repr(part)) for part in value)


class StaleEdges:
    """Passes over numbered edges in order, as a naive fixpoint makes them, that skip every edge whose
    inputs have not grown since it last ran (it would add nothing). An edge reads *cells* (value sets,
    summaries: any hashable name) and may grow some; when it grows a cell, the edges that read it run
    again: later in this pass if they come after it, in the next pass if they come before it (or are
    itself), as in a pass over every edge. So each pass ends in the state a full pass would, with the
    same order of first runs. Used by the value flow here and by the summaries
    (:meth:`graphguard.analysis.fixpoint.Project._summarise`); edges are any ordered values."""

    def __init__(self) -> None:
        self._readers: dict = {}  # cell -> edges that read it
        self._stale: set = set()  # edges to run in the next pass

    def reads(self, edge, cells) -> None:
        """``edge`` reads ``cells``: it runs again when one of them grows."""
        readers = self._readers
        for cell in cells:
            edges = readers.get(cell)
            if edges is None:  # (not setdefault: it would make a set per call)
                readers[cell] = {edge}
            else:
                edges.add(edge)

    def grew(self, cell) -> None:
        """``cell`` grew outside a pass: its readers run in the next pass."""
        self._stale.update(self._readers.get(cell, ()))

    def run(self, new, evaluate) -> bool:
        """One pass over the stale edges and the ``new`` ones (never run), in order; ``evaluate(edge)``
        runs one and returns the cells it grew. True when any grew."""
        todo = [*self._stale, *new]
        self._stale = set()
        heapq.heapify(todo)
        queued = set(todo)
        changed = False
        while todo:
            edge = heapq.heappop(todo)
            queued.discard(edge)
            for cell in evaluate(edge):
                changed = True
                for reader in self._readers.get(cell, ()):
                    if reader > edge:
                        if reader not in queued:
                            heapq.heappush(todo, reader)
                            queued.add(reader)
                    else:
                        self._stale.add(reader)
        return changed


def absolute_ref(path: str, qualname: str) -> Ref:
    """A :class:`Ref` that names ``qualname`` in the file ``path`` itself, whatever module reads it
    (phase 2 only: a value followed from another module keeps the module that defined it)."""
    return Ref("\0" + path, qualname)


def param_ref(function: str, param: str) -> Ref:
    """A :class:`Ref` that names whatever function the callers of ``function`` (a qualified name in
    the module that reads it) pass as its parameter ``param``: ``get_model_func`` in
    ``def train_folds(get_model_func): model = get_model_func()``."""
    return Ref("\1" + function, param)


class ValueFlow:
    """The values that reach every parameter and leave every function of a :class:`Project`, and
    the calls and constructions that deferred uses turn out to be.

    ``project`` must offer ``modules``, ``resolve(importer, ref)`` and ``resolve_class(importer, ref)``
    (:class:`graphguard.analysis.fixpoint.Project`)."""

    def __init__(self, project) -> None:
        self.project = project
        self.params: dict[tuple, dict[str, set]] = {}  #: (path, function) -> parameter -> values
        self.returns: dict[tuple, set] = {}  #: (path, function) -> values it returns
        self.extra_calls: dict[tuple, list] = {}  #: (path, function) -> ProjectCall made from uses
        self.extra_constructions: dict[tuple, list] = {}  #: (path, function) -> Construction made from uses
        self._made: set = set()  # (function key, index of the use, value): uses already turned into facts
        #: (module, function key, deferred uses) of the functions that have any
        self._uses = [(module, (module.path, name), facts.deferred_uses) for module in project.modules
                      for name, facts in module.functions.items() if facts.deferred_uses]
        # Which edges read which value sets (cells: ("p", function key, parameter), ("r", function
        # key)), recorded as each edge is evaluated, so a pass re-evaluates only the edges whose inputs
        # grew since they last ran (the others would add nothing). ``concrete`` adds to it when not None.
        self._reads: set | None = None
        self._stale_edges = StaleEdges()
        self._known = (0, 0)  # how many pass and return edges have been seen (the rest have not run)
        # For _materialise: the cells each deferred use read when it last ran ((index in _uses, index
        # of the use) -> cells), and the cells that grew since then. A use none of whose cells grew
        # finds the same values again, all made already: it is skipped.
        self._use_reads: dict[tuple[int, int], set] = {}
        self._grown: set = set()

    # ------------------------------------------------------------------ values

    def concrete(self, module: ModuleFacts, key: tuple, value) -> set:
        """The resolved values that the symbolic ``value``, read in function ``key`` of ``module``,
        may stand for (empty when none is known)."""
        if value is SESSION:
            return {SESSION_VALUE}
        if isinstance(value, TFObject):
            return {("tf", value.kind)}
        if isinstance(value, Param):
            if self._reads is not None:
                self._reads.add(("p", key, value.name))
            return self.params.get(key, {}).get(value.name, set())
        if isinstance(value, InitParam):
            init = (key[0], f"{value.cls}.__init__")  # ``self.actor`` given to the class's constructor
            if self._reads is not None:
                self._reads.add(("p", init, value.name))
            return self.params.get(init, {}).get(value.name, set())
        if isinstance(value, CallResult):
            target = self.project.resolve(module, value.ref)
            if target is None:
                return set()
            if self._reads is not None:
                self._reads.add(("r", (target[0].path, target[1])))
            return self.returns.get((target[0].path, target[1]), set())
        if isinstance(value, Instance):
            target = self.project.resolve_class(module, value.cls)
            return set() if target is None else {("instance", target[0].path, target[1])}
        if isinstance(value, ProjectRef):
            target = self.project.resolve(module, value.ref) if value.is_class is not True else None
            if target is not None:
                return {("function", target[0].path, target[1])}
            if value.is_class is False:
                return set()
            target = self.project.resolve_class(module, value.ref)  # ``run(DQNAgent)``: made in ``run``
            return set() if target is None else {("class", target[0].path, target[1])}
        if isinstance(value, Elements):
            # ``("elements", value, setup)``: setup marks one model's fixed collection (its variables).
            # One level only: a recursive ``def f(x): f([x])`` would nest lists without end.
            return {("elements", element, value.setup) for element in self.concrete(module, key, value.element)
                    if element[0] != "elements"}
        if isinstance(value, MethodResult) and value.method == "__iter__":
            found = set()
            for container in self.concrete(module, key, value.receiver):
                if container[0] == "elements":
                    found.add(container[1])
                elif container == ("tf", "sequence"):
                    found.add(("tf", "tensor"))
            return found
        if isinstance(value, MethodResult):
            found = set()
            for receiver in self.concrete(module, key, value.receiver):
                if receiver[0] == "tf":
                    kind = catalog.METHOD_RESULT_KINDS.get((receiver[1], value.method))
                    effect = catalog.method_effect(receiver[1], value.method)
                    if kind is None and effect is not None:
                        kind = "dataset" if effect is catalog.Effect.DATASET else "tensor"
                    if kind is not None:
                        found.add(("tf", kind))
                elif receiver[0] == "instance":
                    if self._reads is not None:
                        self._reads.add(("r", (receiver[1], f"{receiver[2]}.{value.method}")))
                    found |= self.returns.get((receiver[1], f"{receiver[2]}.{value.method}"), set())
            return found
        if isinstance(value, Choice):
            found = set()
            for part in value.values:
                found |= self.concrete(module, key, part)
            return found
        return set()

    # ------------------------------------------------------------------ the fixpoint

    def refine_loops(self) -> None:
        """A loop over what parameters or project calls give runs once per element of one model's
        fixed collection (``for v, a in zip(variables, arrays)`` given ``tf.trainable_variables()``):
        one-shot setup, as when the collection is written in the loop itself."""
        for module in self.project.modules:
            for loop in module.loops:
                if loop.over is None or loop.trips is not None:
                    continue
                function, symbolic = loop.over
                key = (module.path, function)
                for value in symbolic:
                    found = self.concrete(module, key, value)
                    if found and all(v[0] == "elements" and v[2] for v in found):
                        loop.trips = 1
                        break

    def run(self) -> None:
        """Flow values until nothing changes, turning deferred uses into calls and constructions."""
        passes, returns = self._edges()
        for _ in range(MAX_ROUNDS):
            # The value sets only grow and are drawn from a finite set (no value nests another
            # without bound), so this ends; the count is a safety net, not the expected exit.
            for _ in range(MAX_FLOWS):
                if not self._flow(passes, returns):
                    break
            made = self._materialise()
            if not made:
                break
            for module, key, call in made:
                edge = self._pass_edge(module, key, call)
                if edge is not None:
                    passes.append(edge)

    def returns_tensor(self, module: ModuleFacts, ref: Ref) -> bool:
        """Whether the project function ``ref`` (read in ``module``) may return a tensor or variable:
        an operator on its result builds an op."""
        target = self.project.resolve(module, ref)
        return target is not None and not TENSOR_VALUES.isdisjoint(self.returns.get((target[0].path, target[1]), ()))

    def passes_tensor(self, module: ModuleFacts, name: str, params: tuple) -> bool:
        """Whether some call of function ``name`` (of ``module``) passes a tensor or variable for one of
        ``params``: an operator on that parameter builds an op."""
        given = self.params.get((module.path, name), {})
        return any(not TENSOR_VALUES.isdisjoint(given.get(param, ())) for param in params)

    def calls(self, module: ModuleFacts, name: str, facts) -> list:
        """The project calls of function ``name``: those written, and those its deferred uses became."""
        extra = self.extra_calls.get((module.path, name))
        return facts.calls if not extra else [*facts.calls, *extra]

    def _edges(self) -> tuple[list, list]:
        """Resolve once the calls that pass values to project functions, and the functions that
        return values: the fixpoint then only follows these edges (most calls name no project code)."""
        passes, returns = [], []
        for module in self.project.modules:
            for name, facts in module.functions.items():
                key = (module.path, name)
                for call in facts.calls:
                    if call.values:
                        edge = self._pass_edge(module, key, call)
                        if edge is not None:
                            passes.append(edge)
                if facts.return_values or facts.returns:
                    values = [*facts.return_values, *(CallResult(ref) for ref in facts.returns)]
                    returns.append((module, key, values))
        return passes, returns

    def _pass_edge(self, module: ModuleFacts, key: tuple, call: ProjectCall):
        """``(module, key, params of the callee, [(parameter, value)], callee key)`` for a call that
        passes values to a project function, or None when it names none."""
        target = self.project.resolve(module, call.ref)
        if target is None:
            return None
        callee_facts = target[0].functions[target[1]]
        flows = []
        for where, value in call.values:
            if isinstance(where, int):
                index = where + (1 if self.project.passes_receiver(module, call) else 0)
                if index >= len(callee_facts.params):
                    continue
                where = callee_facts.params[index]
            flows.append((where, value))
        if not flows:
            return None
        callee = (target[0].path, target[1])
        return module, key, self.params.setdefault(callee, {}), flows, callee

    def _flow(self, passes: list, returns: list) -> bool:
        """One pass over the edges (passes, then returns) by :class:`StaleEdges`: the edges that have not
        run yet and those whose inputs grew since they last ran. Every edge runs in the first pass, so
        resolutions are made, and cached, in the same order as in a pass over every edge. True when a
        value set grew."""
        new = [*(("p", index) for index in range(self._known[0], len(passes))),
               *(("r", index) for index in range(self._known[1], len(returns)))]
        self._known = (len(passes), len(returns))

        def evaluate(edge: tuple) -> list:
            grown = []
            self._reads = set()
            if edge[0] == "p":
                module, key, params, flows, callee = passes[edge[1]]
                for where, value in flows:
                    found = self.concrete(module, key, value)
                    if found:
                        known = params.setdefault(where, set())
                        if not found <= known:
                            known |= found
                            grown.append(("p", callee, where))
                            self._grown.add(("p", callee, where))
            else:
                module, key, values = returns[edge[1]]
                found = set()
                for value in values:
                    found |= self.concrete(module, key, value)
                if found:
                    known = self.returns.setdefault(key, set())
                    if not found <= known:
                        known |= found
                        grown.append(("r", key))
                        self._grown.add(("r", key))
            self._stale_edges.reads(edge, self._reads)
            self._reads = None
            return grown

        return self._stale_edges.run(new, evaluate)

    def _materialise(self) -> list:
        """Turn deferred uses whose receivers now have values into calls and constructions; the new
        calls, as ``(module, key, call)``."""
        made = []
        grown, self._grown = self._grown, set()
        for position, (module, key, uses) in enumerate(self._uses):
            for index, use in enumerate(uses):
                reads = self._use_reads.get((position, index))
                if reads is not None and reads.isdisjoint(grown):
                    continue  # the same values as when it last ran: all made then
                self._reads = set()
                values = self.concrete(module, key, use.receiver)
                self._use_reads[(position, index)] = self._reads
                self._reads = None
                # In a fixed order: the calls and constructions made here are "the first" in summaries.
                for value in sorted(values, key=source_order):
                    marker = (key, index, value)
                    if marker in self._made:
                        continue
                    self._made.add(marker)
                    call = self._make(key, use, value)
                    if call is not None:
                        made.append((module, key, call))
        return made

    def _make(self, key: tuple, use, value):
        kind = value[0]
        if kind == "tf" and use.method is not None:
            effect = catalog.method_effect(value[1], use.method)
            if effect is not None:
                construction = Construction(effect, use.site, use.callee, use.loops, use.exempt)
                self.extra_constructions.setdefault(key, []).append(construction)
            return None
        if kind == "instance":
            member = "__call__" if use.method is None else use.method
            ref = absolute_ref(value[1], f"{value[2]}.{member}")
            bound = True
        elif kind == "function" and use.method is None:
            ref = absolute_ref(value[1], value[2])
            bound = False
            if isinstance(use.receiver, Param):
                # ``action()`` in ``def button(msg, action)``: only the calls that pass this function run
                # it (a first-contact set: every menu button blamed for the model one of them builds)
                call = ProjectCall(ref, use.site, use.callee, use.loops,
                                   use.exempt | {(PASSED, use.receiver.name, frozenset({value}))}, bound, use.values,
                                   use.samples)
                self.extra_calls.setdefault(key, []).append(call)
                return call
        elif kind == "class" and use.method is None:
            ref = absolute_ref(value[1], f"{value[2]}.__init__")  # ``agent_cls(4, 2)`` after ``run(DQNAgent)``
            bound = True
        else:
            return None
        call = ProjectCall(ref, use.site, use.callee, use.loops, use.exempt, bound, use.values, use.samples)
        self.extra_calls.setdefault(key, []).append(call)
        return call
