"""What a call passes to the function it calls, read at the call site (phase 2 and 3): whether its
receiver is passed as the first argument, which truth it gives a flag parameter, which project function
it passes for a parameter, and so whether the branches a construction stands in (FLAG and PASSED marks,
:mod:`graphguard.analysis.facts`) are ever taken by that call (``run_epoch(sess, is_training=True)``,
``button("Quit", quit_game)``).

A mixin of :class:`graphguard.analysis.fixpoint.Project`: it uses the project's ``resolve`` and its
value ``flow``.
"""

from __future__ import annotations

from graphguard.analysis.bindings import ProjectRef
from graphguard.analysis.facts import PASSED, ModuleFacts
from graphguard.analysis.summaries import Summary


class CallArguments:
    """Call-site reading for :class:`~graphguard.analysis.fixpoint.Project` (see the module docstring)."""

    def never_runs(self, importer: ModuleFacts, call, callee: Summary, marks) -> bool:
        """Whether ``call`` (read in ``importer``) of a function with summary ``callee`` never takes
        the branches ``marks`` stand in: for a FLAG mark's parameter it passes ``True``, ``False`` or
        ``None`` of the other truth, or leaves it at such a default (``run_epoch(sess, data,
        is_training=True)`` and ``tf.no_op()`` under ``else``); for a PASSED mark's parameter it passes
        a known function other than those the mark names (``button("Quit", quit_game)``)."""
        if not marks:
            return False
        for kind, param, truth in marks:
            if kind == PASSED:
                passed = self._function_given(importer, call, callee, param)
                if passed is not None and passed.isdisjoint(truth):
                    return True  # ``button("Quit", quit_game)``: the model comes from another function passed
                continue
            given = self._flag_given(importer, call, callee, param)
            if given is not None and given is not truth:
                return True
        return False

    def _function_given(self, importer: ModuleFacts, call, callee: Summary, param: str) -> set | None:
        """The project functions ``call`` passes for ``param`` of ``callee`` (resolved values
        ``("function", path, name)``), when the argument names one; None when it passes something else
        or nothing the analysis follows (a lambda, its own parameter, ``*args``)."""
        if call.nargs < 0 or param not in callee.params:
            return None
        position = callee.params.index(param) - (1 if self.passes_receiver(importer, call) else 0)
        for where, value in call.values:
            if where == param or where == position:
                if not isinstance(value, ProjectRef):
                    return None
                found = self.flow.concrete(importer, None, value)
                return found if found and all(v[0] == "function" for v in found) else None
        return None

    def _flag_given(self, importer: ModuleFacts, call, callee: Summary, param: str) -> bool | None:
        """The truth ``call`` gives parameter ``param`` of ``callee``, when the source says (a constant
        argument, or no argument and a constant default); None otherwise."""
        for where, given in call.flags:
            if where == param:
                return given
        if call.nargs < 0:
            return None  # ``*args`` or ``**kwargs``: any parameter may be given
        if param in callee.params:
            position = callee.params.index(param) - (1 if self.passes_receiver(importer, call) else 0)
            if position < 0:
                return None
            if position < call.nargs:
                return next((given for where, given in call.flags if where == position), None)
        return callee.flag_defaults.get(param)

    def passes_receiver(self, importer: ModuleFacts, call) -> bool:
        """Whether ``call`` (a :class:`~graphguard.analysis.facts.ProjectCall` read in ``importer``)
        passes its receiver as the first argument: a method's call, or a class's (its ``__init__``),
        lower-case class names too, but not a function's that phase 1 took for a class by its name
        (``py_utils.HasRank(x)``)."""
        if not call.ref.name.endswith("__init__"):
            if not call.bound:  # ``resnet(x)`` of a class named in lower case: its ``__init__`` takes ``self``
                target = self.resolve(importer, call.ref) if call.ref.module else None
                return target is not None and target[1].endswith(".__init__")
            return True
        if not call.bound:
            return False  # ``Base.__init__(self, x)``: the receiver is written
        target = self.resolve(importer, call.ref)
        return target is None or target[1].endswith("__init__")
