"""Phase 1, the reader's calls: what calling something does.

A mixin of :class:`graphguard.analysis.reader.ModuleReader`: a call of a TensorFlow name or object
(its :class:`~graphguard.analysis.catalog.Effect`: ops, a Saver, an initializer, a session, a graph
reset), a session step (``sess.run``, ``op.run()``, ``t.eval()``, a callable made by
``make_callable``), a call of the checked project's code (:class:`~graphguard.analysis.facts.ProjectCall`,
resolved in phase 2, with the values of its arguments that phase 2 can follow), and a use of a
parameter or a project call's result whose effect phase 2 decides
(:class:`~graphguard.analysis.facts.DeferredUse`, :class:`~graphguard.analysis.facts.DeferredStep`).
"""

from __future__ import annotations

import ast

from graphguard.analysis import catalog
from graphguard.analysis.bindings import (
    SESSION,
    STEP_CALLABLE,
    CallResult,
    Choice,
    Elements,
    GraphValue,
    InitParam,
    Instance,
    MethodResult,
    OTHER,
    Param,
    ProjectRef,
    Ref,
    TFName,
    TFObject,
    looks_like_session,
    new_tuple,
)
from graphguard.analysis.catalog import Effect
from graphguard.analysis.eager import built_in
from graphguard.analysis.facts import CALLER, UNBUILT, DeferredStep, DeferredUse, ProjectCall, SessionOpen, add
from graphguard.analysis.resolution import STEP_METHODS, followable, project_class
from graphguard.analysis.sweeps import (
    KEEPING_METHODS,
    KERAS_STEP_METHODS,
    KERAS_WRAPPERS,
    SEARCH_DRIVERS,
    SEARCH_FITS,
    TRIAL_METHODS,
    inert_call,
)
from graphguard.analysis.syntax import callee_text, dotted_name

_STEP_KEYWORDS = frozenset({"feed_dict", "session"})
#: Kinds of TensorFlow objects whose ``run()``/``eval()`` runs a session step (``train_op.run()``,
#: ``accuracy.eval()``); other objects' ``run`` (a ``tf.distribute`` strategy's) is not one.
_RUNNABLE_KINDS = frozenset({"tensor", "variable", "op", "sequence"})


class CallReader:
    """Calls: effects, steps, project calls, deferred uses (mixed into the reader)."""

    # ------------------------------------------------------------------ calls

    def _is_step(self, node: ast.Call, receiver) -> bool:
        func = node.func
        method = func.attr
        if receiver is SESSION or (isinstance(receiver, TFObject) and receiver.kind in _RUNNABLE_KINDS):
            return True
        if isinstance(receiver, TFObject):
            return False  # ``strategy.run(fn)`` (a tf.distribute strategy), ``opt.run``: not a session step
        if isinstance(receiver, (TFName, GraphValue, ProjectRef)):
            return False  # tf.app.run(), a module's run()
        if any(keyword.arg in _STEP_KEYWORDS for keyword in node.keywords):
            return True
        if method in STEP_METHODS and not isinstance(receiver, Instance):
            dotted = dotted_name(func.value)
            if dotted is not None:
                last = dotted.rsplit(".", 1)[-1]
                if looks_like_session(last) or last in self._session_names or dotted in self._session_names:
                    return True
        return False

    def _hands_session(self, node: ast.Call) -> bool:
        """Whether call ``node`` passes a session: a name that holds one (``sess = tf.Session()``) or is
        named like one (``sess``, ``session``; ``sess=sess``). Only looked at for a callee nothing
        else is known of."""
        for arg in (*node.args, *(keyword.value for keyword in node.keywords)):
            if arg.__class__ is ast.Name and (looks_like_session(arg.id) or self.resolve(arg) is SESSION):
                return True
        return False

    def _mark_step(self) -> None:
        frame = self._frame
        frame.facts.runs_step = True
        for loop in frame.loops:
            loop.runs_step = True

    def _note_tensor_params(self, node: ast.Call) -> None:
        frame = self._frame
        if not frame.params:
            return
        for arg in (*node.args, *(keyword.value for keyword in node.keywords)):
            if isinstance(arg, ast.Name) and arg.id in frame.params:
                frame.tensor_params.add(arg.id)

    def visit_Call(self, node: ast.Call) -> None:
        frame = self._frame
        func_value = self.resolve(node.func)
        if (frame.made and (node.args or node.keywords) and not isinstance(func_value, (TFName, TFObject))
                and not inert_call(node.func)):
            # ``train(model, data)``, ``Solver(model, data)``: handed on to code that uses it. Not a
            # Keras call (``Sequential([block])``) nor a container method (``blocks.append(block)``).
            for arg in (*node.args, *(keyword.value for keyword in node.keywords)):
                if isinstance(arg, (ast.Name, ast.Attribute)):
                    self._use_as_trial(arg)
        self._eager_call(node, func_value)
        effect = Effect.NONE
        name = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", None)
        if name in SEARCH_DRIVERS and (name in KERAS_WRAPPERS or not (
                isinstance(func_value, (TFName, TFObject))
                or isinstance(node.func, ast.Attribute) and isinstance(self.resolve(node.func.value), (TFName, TFObject)))):
            self._search_driver(node)
        elif name in SEARCH_FITS or (name is not None and name.endswith("SearchCV")
                                     and not isinstance(func_value, ProjectRef)):
            # (``BayesSearchCV``, ``HyperbandSearchCV``, ``TuneSearchCV``: a search of unknown size, not
            # one fit of the wrapper it is given; a project's own ``kerasGridSearchCV`` is read as code)
            self._note_search_fits(node, name)
        if name == "reuse_variables" and isinstance(node.func, ast.Attribute) and not node.args:
            # ``tf.get_variable_scope().reuse_variables()``, ``scope.reuse_variables()``: from here to the end
            # of the enclosing ``with`` (or of the module: a notebook's later cells), get_variable reuses.
            if not self._reuse_depth and len(self._frames) == 1 and not self.facts.reuse_from:
                self.facts.reuse_from = node.lineno  # helpers called below it reuse their variables too
            self._reuse_depth += 1
        if isinstance(func_value, TFName):
            effect = catalog.effect_of(func_value.path)
            if effect is Effect.VARIABLE and self._reuse_depth and func_value.path == "tf.get_variable":
                effect = Effect.NONE
            if effect.builds:
                self._note_tensor_params(node)
        elif func_value is STEP_CALLABLE:
            self._mark_step()
        elif isinstance(func_value, TFObject) and func_value.kind in ("layer", "model"):
            effect = Effect.OP  # ``layer(x)``, ``tf.keras.layers.Dense(2)(x)``: the layer's ops
            self._note_tensor_params(node)
        elif isinstance(func_value, Instance):
            self._project_call(func_value.cls.member("__call__"), node, callee_text(node.func), bound=True)  # ``head(x)``
        elif isinstance(func_value, (Param, CallResult, MethodResult, InitParam)):
            # ``score(sess, x)``: a closure or a callable argument; ``self.optimizer([...])`` after
            # ``self.optimizer = self.optimizer()`` calls what the method returned, not the method.
            self._deferred_use(func_value, None, node, callee_text(node.func))
        elif isinstance(func_value, ProjectRef):
            ref = func_value.ref
            bound = project_class(func_value)
            if bound:
                ref = ref.member("__init__")
            self._project_call(ref, node, callee_text(node.func), bound)
        elif isinstance(node.func, ast.Attribute):
            method = node.func.attr
            receiver = self.resolve(node.func.value)
            if method in TRIAL_METHODS:
                # ``model.fit(ds, steps_per_epoch=n)``, ``model.compile(optimizer=...)``: keywords only
                # Keras takes say the value is a Keras model, whatever made it (a builder handed in)
                keywords = (catalog.KERAS_FIT_KEYWORDS if method == "fit"
                            else catalog.KERAS_COMPILE_KEYWORDS if method == "compile" else ())
                self._use_as_trial(node.func.value, keras=bool(keywords) and any(k.arg in keywords for k in node.keywords))
            if method == "numpy" and not node.args:
                self.eager = True  # ``t.numpy()`` exists only in eager execution
            if method in KERAS_STEP_METHODS and isinstance(receiver, TFObject) and receiver.kind == "model" \
                    and frame.loops:
                # Keras on TF1 runs a session step here; decided at the end of the module (graph mode).
                self._keras_steps.append(tuple(frame.loops))
            keep = KEEPING_METHODS.get(method)
            if keep is not None and frame.loops:
                self._note_accumulation(node)
            if (keep is not None or method in ("update", "setdefault")) and isinstance(receiver, Elements) \
                    and receiver.count is not None and isinstance(node.func.value, ast.Name):
                # ``configs.append(c)``: the literal's length no longer says how many there are.
                self._frame.scope[node.func.value.id] = Elements(receiver.element, None, receiver.setup, receiver.saved)
            if keep is not None and self._may_retain() and len(node.args) > keep and not isinstance(receiver, TFObject):
                kept = node.args[keep]
                if method == "extend":
                    if isinstance(kept, (ast.List, ast.Tuple)):
                        self._retention(node.func.value, kept.elts, node)
                else:
                    self._retention(node.func.value, (kept,), node)
            if method in STEP_METHODS and isinstance(receiver, CallResult):
                # ``s = make_session(); s.run(...)``: a step if the factory returns a session (phase 2),
                # or if the name says so (a factory outside the checked tree).
                dotted = dotted_name(node.func.value)
                if dotted is not None and looks_like_session(dotted.rsplit(".", 1)[-1]):
                    self._mark_step()
                else:
                    add(frame.facts, "deferred_steps", DeferredStep(receiver.ref, tuple(l.index for l in frame.loops)))
            elif (method in STEP_METHODS or method == "eval") and self._is_step(node, receiver):
                self._mark_step()
            elif method in STEP_METHODS and isinstance(receiver, Param):
                # ``def run_epoch(s, ...): s.run(...)``: a step if a caller passes a session (phase 2).
                add(frame.facts, "param_steps", (receiver.name, tuple(l.index for l in frame.loops)))
            elif method in catalog.DISTINCT_METHODS and not isinstance(receiver, (TFName, Instance)):
                effect = catalog.DISTINCT_METHODS[method][0]  # only TensorFlow objects have these methods
            elif isinstance(receiver, TFObject):
                method_effect = catalog.method_effect(receiver.kind, method)
                if method_effect is not None:
                    effect = method_effect
                    self._note_tensor_params(node)
                elif method in catalog.SESSION_METHODS.get(receiver.kind, ()):
                    effect = Effect.SESSION
            elif isinstance(receiver, Instance):
                self._project_call(receiver.cls.member(method), node, callee_text(node.func), bound=True)
            elif isinstance(receiver, Choice):
                for value in receiver.values:  # ``for head in [ClsHead(), BoxHead()]: head.update(sess)``
                    if isinstance(value, Instance):
                        self._project_call(value.cls.member(method), node, callee_text(node.func), bound=True)
            elif isinstance(receiver, (Param, CallResult, MethodResult, InitParam)) and method not in STEP_METHODS:
                self._deferred_use(receiver, method, node, callee_text(node.func))  # ``model.save(...)``, ``it.get_next()``
                if receiver.__class__ is InitParam and self._hands_session(node):
                    self._mark_step()  # (what phase 2 finds for it may not be known: a class made elsewhere)
            elif (receiver is None or receiver is OTHER) and self._hands_session(node):
                # ``self.actor.get_action(state, sess)`` on an object the analysis cannot follow (made
                # in another module, given to a constructor there): code handed the session runs it.
                self._mark_step()
            elif (receiver is None and isinstance(node.func.value, ast.Call) and isinstance(node.func.value.func, ast.Name)
                  and node.func.value.func.id == "super" and frame.class_name in self.facts.classes):
                # ``super().__init__(...)``: the base class's method (a tf.keras.Model subclass of a
                # project model class is a model too).
                bases = self.facts.classes[frame.class_name].bases
                if bases:
                    self._project_call(bases[0].member(method), node, callee_text(node.func), bound=True)

        if effect is Effect.RESET:
            if frame.loops:
                for loop in frame.loops:
                    loop.resets_graph = True
            else:
                frame.facts.resets_graph = True
        elif effect is Effect.MODEL:
            self._construction(effect, node, callee_text(node.func))  # any loop repeats it (GG201), nested or not
        elif effect is Effect.SESSION and callee_text(node.func).rsplit(".", 1)[-1] == "get_session":
            pass  # ``K.get_session()`` returns the one global session: it opens nothing new
        elif effect is Effect.SESSION:
            own_graph = any(keyword.arg == "graph" for keyword in node.keywords)
            if frame.loops and not own_graph:
                add(frame.facts, "session_opens", SessionOpen(self._site(node), callee_text(node.func),
                                                              tuple(l.index for l in frame.loops)))
            if not any(CALLER in exemption for exemption in frame.exempt):
                # (``sess = tf.get_default_session()``, ``if sess is None: sess = tf.Session()``: a
                # session made once, when there is none, is not one per call)
                frame.facts.opens_session = True
        elif effect.builds:
            generic = effect is Effect.OP
            if not generic or self._nested_depth == 0:
                self._construction(effect, node, callee_text(node.func))
            self._nested_depth += 1
            self.generic_visit(node)
            self._nested_depth -= 1
            return
        self.generic_visit(node)

    def _project_call(self, ref: Ref, node: ast.Call, callee: str, bound: bool = False) -> None:
        frame = self._frame
        exempt = frozenset().union(*frame.exempt) if frame.exempt else frozenset()
        frame.facts.calls.append(new_tuple(ProjectCall, (
            ref, self._site(node), callee, tuple(l.index for l in frame.loops), exempt, bound,
            self._argument_values(node), (), self._reuse_depth > 0 or self._passes_reuse(node),
            bool(frame.branches) and frame.branches[-1] >= len(frame.loops), *_flag_arguments(node))))
        if bound and frame.facts.traced and node.__class__ is ast.Call:
            call = frame.facts.calls[-1]
            self._defer(lambda frame, call=call, node=node: built_in(frame.node, node) or _mark_unbuilt(frame, call))
        self._note_samples(node)

    def _deferred_use(self, receiver, method: str | None, node: ast.Call, callee: str) -> None:
        """Record ``X.method(...)`` or ``X(...)`` on a parameter or a project call's result (phase 2
        decides what it does once it knows the values that reach ``X``)."""
        frame = self._frame
        exempt = frozenset().union(*frame.exempt) if frame.exempt else frozenset()
        use = DeferredUse(receiver, method, self._site(node), callee, tuple(l.index for l in frame.loops), exempt,
                          self._argument_values(node))
        frame.facts.deferred_uses = [*frame.facts.deferred_uses, use]
        if method is not None:
            self._note_samples(node, "deferred_uses")  # (a set-up time, a third of a second per 880k lines)

    def _argument_values(self, node) -> tuple:
        """(position or keyword, value) of the arguments of call ``node`` whose values phase 2 can
        follow; empty when ``node`` is not a call (a function's name handed to a search driver)."""
        if not isinstance(node, ast.Call):
            return ()
        values = []
        for where, arg in (*enumerate(node.args), *((k.arg, k.value) for k in node.keywords if k.arg)):
            followed = followable(self.resolve(arg))
            if followed is not None:
                values.append((where, followed))
        return tuple(values)


def _flag_arguments(node) -> tuple[tuple, int]:
    """:attr:`ProjectCall.flags` and :attr:`ProjectCall.nargs` of call ``node``."""
    if not isinstance(node, ast.Call):
        return (), -1
    flags = [(position, bool(arg.value)) for position, arg in enumerate(node.args)
             if arg.__class__ is ast.Constant and arg.value.__class__ in (bool, type(None))]
    nargs = len(node.args)
    for keyword in node.keywords:
        if keyword.arg is None:
            nargs = -1  # ``**options``: any parameter may be given
            continue
        value = keyword.value
        flags.append((keyword.arg, bool(value.value) if value.__class__ is ast.Constant
                      and value.value.__class__ in (bool, type(None)) else None))
    if any(arg.__class__ is ast.Starred for arg in node.args):
        nargs = -1
    return tuple(flags), nargs


def _mark_unbuilt(frame, call: ProjectCall) -> None:
    """Mark ``call`` (an object of a project class made in a ``tf.function``) as never built there."""
    calls = frame.facts.calls
    for index, known in enumerate(calls):
        if known is call:
            calls[index] = call._replace(exempt=call.exempt | {UNBUILT})
            return
