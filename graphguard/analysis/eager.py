"""Phase 1 for TF 2 (eager) code: what retraces a ``tf.function`` or rebuilds Keras state per iteration.

A mixin of :class:`graphguard.analysis.reader.ModuleReader`, sharing its frames, loops, bindings and
once-guards. It records, as constructions of the TF 2 effects (:data:`catalog.EAGER_EFFECTS`):

* ``RETRACE_ARGUMENT`` (GG301): a call of a ``tf.function`` in a loop with an argument that is a
  Python number changing per iteration: the loop's own counter (``for step in range(n)``, the index of
  ``enumerate``) or a number the loop body assigns (``step += 1``, ``lr = lr * decay``). A Python
  value is part of the trace key, so every new value traces a new graph (TF-FACTS: 200 traces in 200
  calls, 37x slower per step; ``reduce_retracing=True`` does not change it, measured: 20 traces in 20
  calls);
* ``NEW_FUNCTION`` (GG302): ``tf.function(f)`` or a ``@tf.function`` def run inside a loop or inside a
  function (every run makes a new function object, traced again on its first call); ``__init__`` and
  module or class bodies make it once per object or program;
* ``PREDICT`` (GG303): Keras ``model.predict(x)`` where ``x`` is one sample (``x[None]``,
  ``np.expand_dims``, ``reshape(1, ...)``, ``[x]``, ``x[i:i+1]``, or a name bound to one) or data the
  loop changes per iteration;
* ``FIT`` (GG306): Keras ``model.fit(x, y)`` on one sample, a minibatch or a slice cut by hand, or on
  what a loop hands out (not on data the body loads or reshuffles), unless it asks for several epochs
  or batches large data itself (``epochs=5``, ``batch_size=`` on data that is not one minibatch);
* ``TRACED_VARIABLE`` (GG304): a ``tf.Variable``, a Keras optimizer or metric made in a
  ``tf.function`` body outside a once-guard, or a Keras layer or model made and built there (called on
  a value or given an input shape; an unbuilt one has no variables yet). TF raises "tf.function only
  supports singleton tf.Variables created on the first call", measured on TF 2.21 for all of them;
* ``RECOMPILE`` (GG305): ``model.compile(...)`` of a model made before the loop, or a new Keras
  optimizer, in a loop.

Which data is one sample, a minibatch or changes per iteration is :mod:`graphguard.analysis.samples`'
(a mixin this one extends). Receivers and callees of other modules are decided in phase 3
(``FunctionFacts.eager_checks``).
"""

from __future__ import annotations

import ast
from typing import NamedTuple

from graphguard.analysis import catalog
from graphguard.analysis.bindings import (
    OTHER,
    CallResult,
    Choice,
    InitParam,
    Instance,
    Param,
    ProjectRef,
    Ref,
    TFName,
    TFObject,
)
from graphguard.analysis.catalog import Effect
from graphguard.analysis.facts import add, flag_marks
from graphguard.analysis.samples import HELPER_DRAW, NO_NAMES, SampleReader
from graphguard.analysis.numbers import NumberReader
from graphguard.analysis.shapes import few_values, same_shape_source, shape_of
from graphguard.analysis.syntax import callee_text, dotted_name, one_sample, short

#: Keyword arguments only Keras' ``Model.predict``/``compile`` take (scikit-learn's ``predict`` takes
#: none of them): a call with one is Keras' whatever the receiver is known to be.
_PREDICT_KEYWORDS = frozenset({"verbose", "batch_size", "steps", "callbacks"})
_FIT_KEYWORDS = catalog.KERAS_FIT_KEYWORDS
_COMPILE_KEYWORDS = catalog.KERAS_COMPILE_KEYWORDS

#: What a Keras model has (``tf.keras.Model``, Keras 3): a parameter used with anything else in the same
#: function (``actor.add_experience(...)``, ``agent.memory``) is a project object with a ``predict`` of its own.
_MODEL_ATTRIBUTES = frozenset({
    "predict", "fit", "compile", "evaluate", "train_on_batch", "predict_on_batch", "test_on_batch", "save",
    "save_weights", "load_weights", "get_weights", "set_weights", "summary", "layers", "inputs", "outputs",
    "input", "output", "input_shape", "output_shape", "weights", "trainable_weights", "non_trainable_weights",
    "variables", "trainable_variables", "non_trainable_variables", "get_layer", "to_json", "count_params",
    "call", "reset_states", "stop_training", "optimizer", "loss", "metrics", "metrics_names", "name", "trainable",
    "built", "build", "predict_generator", "fit_generator", "evaluate_generator", "make_predict_function",
    "_make_predict_function", "history", "reset_metrics", "add_loss", "compute_output_shape", "export",
    "predict_classes", "predict_proba",
})

#: Methods only a Keras model has among the objects a ``predict`` is called on (scikit-learn's
#: estimators, XGBoost's, statsmodels' have none of them): ``self.model.compile(...)`` in one method
#: makes ``self.model.predict(...)`` in another Keras', whatever the class was given.
_KERAS_ONLY_METHODS = frozenset({
    "compile", "train_on_batch", "predict_on_batch", "test_on_batch", "fit_generator", "predict_generator",
    "evaluate_generator", "get_weights", "set_weights", "save_weights", "load_weights",
})

#: Keras model methods read here: method -> what :meth:`EagerReader._keras_call` takes it for.
_KERAS_CALLS = {"predict": "predict", "predict_classes": "predict", "fit": "fit", "compile": "compile"}
#: The per-step Keras calls (GG303, GG306): method -> (effect, keywords only Keras' method takes).
_STEP_CALLS = {"predict": (Effect.PREDICT, _PREDICT_KEYWORDS), "fit": (Effect.FIT, _FIT_KEYWORDS)}

TRACED, SIGNED = 1, 2



#: Random draws: ``np.random.normal(...)``, ``tf.random.uniform(...)``, ``random.random()``, and a
#: generator's methods (``rng.normal(...)``, ``np.random.default_rng().integers(...)``).
_RANDOM_METHODS = frozenset({"normal", "uniform", "randn", "rand", "randint", "integers", "standard_normal",
                             "random", "random_sample", "truncated_normal", "binomial", "poisson", "choice",
                             "permutation", "shuffle", "beta", "gamma", "laplace", "multinomial"})


def _draws_random(node: ast.AST) -> bool:
    """Whether expression ``node`` calls a random draw, so it gives new values on every evaluation."""
    for sub in ast.walk(node):
        if sub.__class__ is ast.Call:
            func = sub.func
            if func.__class__ is ast.Attribute and func.attr in _RANDOM_METHODS:
                return True
            text = dotted_name(func)
            if text is not None and (".random." in f".{text}" or text.startswith("random.")):
                return True
    return False

class _Returns(NamedTuple):
    """A call of what project function ``ref`` returned (a ``tf.function`` if its returns say so)."""

    ref: object


class _ParamMethod(NamedTuple):
    """A call of method ``use`` (``"model.train_step"``) on a parameter of project function ``ref``: a
    ``tf.function`` when a call passes an object of a project class whose method is one (phase 3)."""

    ref: object
    use: str


class EagerReader(NumberReader, SampleReader):
    """The TF 2 half of the reader (see the module docstring). Needs the reader's ``_frame``,
    ``resolve``, ``_new_construction`` and ``_site``; it keeps per loop the names its body binds
    (``_loop_binds``) and decides what depends on them when the function has been read."""

    # ------------------------------------------------------------------ tf.function definitions

    def _traced_by(self, decorators: list) -> tuple[int, ast.AST | None]:
        """(:data:`TRACED`, the decorator) when ``decorators`` include ``tf.function`` (bare or called),
        :data:`SIGNED` with an ``input_signature``, (0, None) otherwise."""
        for decorator in decorators:
            func = decorator.func if isinstance(decorator, ast.Call) else decorator
            value = self.resolve(func)
            if isinstance(value, TFName) and value.path == "tf.function":
                if isinstance(decorator, ast.Call) and any(k.arg == "input_signature" for k in decorator.keywords):
                    return SIGNED, decorator
                return TRACED, decorator
        return 0, None

    def _note_traced_def(self, node: ast.FunctionDef, traced: int, decorator: ast.AST | None) -> None:
        """A ``@tf.function`` def: a new function object each time the enclosing body runs it (reported
        at the decorator)."""
        if not traced:
            return
        frame = self._frame
        self._traced[self._qualname(node.name)] = traced
        if isinstance(decorator, ast.Call) and any(
                k.arg in ("reduce_retracing", "experimental_relax_shapes") and not (
                    isinstance(k.value, ast.Constant) and not k.value.value) for k in decorator.keywords):
            self._relaxed.add(self._qualname(node.name))  # a new shape makes one more general trace
        if frame.is_class or (frame.facts.name == "<module>" and not frame.loops) or _in_init(frame.facts.name):
            return  # once per program, class or object
        frame.facts.constructions.append(
            self._new_construction(Effect.NEW_FUNCTION, decorator, f"@tf.function def {node.name}"))

    def _note_parts(self, target: ast.Tuple, value: ast.Call) -> None:
        """``self.actor, self.critic = build_models(...)``: each target holds one element of what a project
        function returns; whether that element is a Keras model is decided in phase 3 (``returns:N``)."""
        func = self.resolve(value)
        ref = func.ref if isinstance(func, CallResult) else func.cls if isinstance(func, Instance) else None
        if ref is None:
            return
        for index, element in enumerate(target.elts):
            dotted = dotted_name(element) if isinstance(element, (ast.Name, ast.Attribute)) else None
            if dotted is not None:
                self._parts[(self._frame.class_name if dotted.startswith("self.") else self._frame.facts.name, dotted)] = (
                    ref, f"returns:{index}")


    def _defer(self, decide) -> None:
        """Run ``decide()`` when the current function (or module) has been read."""
        frame = self._frame
        if frame.pending_eager is None:
            frame.pending_eager = []
        frame.pending_eager.append(decide)

    def _settle_eager(self, frame) -> None:
        """Decide what :meth:`_defer` put off, at the end of ``frame``'s body (the reader's frame
        stack may already have moved on: the decisions use ``frame`` alone)."""
        for decide in frame.pending_eager or ():
            decide(frame)
        frame.pending_eager = None

    # ------------------------------------------------------------------ one sample

    # ------------------------------------------------------------------ calls

    def _keras_model(self, node: ast.AST, keywords: frozenset, call: ast.Call):
        """Whether the receiver ``node`` of ``call`` is a Keras model: ``True`` when known, a tuple of
        (ref, kind) for phase 3 to decide, None when it cannot be said. A call that passes a
        Keras-only keyword (``keywords``) is Keras' whatever the receiver."""
        value = self.resolve(node)
        if isinstance(value, TFObject):
            return True if value.kind == "model" else None
        if isinstance(value, Choice) and any(isinstance(v, TFObject) and v.kind == "model" for v in value.values):
            return True  # ``self.model = load_model(path) if is_eval else self.build()``: a model either way
        if isinstance(node, (ast.Name, ast.Attribute)) and self._parts:
            dotted = dotted_name(node)
            part = self._parts.get((self._frame.class_name if dotted and dotted.startswith("self.") else self._frame.facts.name,
                                    dotted))
            if part is not None:
                # ``_, model, _ = train(...)``: a model when the call gives one there; or when it is asked
                # what only Keras takes (``model.predict(x, verbose=0)``), whatever phase 2 can follow
                # (a tuple passed through a function handed in as a parameter)
                # (a model bound anew in the innermost loop is a trial's: phase 3 tells its evaluation
                # from a per-step predict through the part, as before)
                frame = self._frame
                per_trial = bool(frame.loops) and frame.loops[-1].index in frame.bound.get(dotted, ())
                return True if not per_trial and any(keyword.arg in keywords for keyword in call.keywords) else (part,)
        if isinstance(value, Instance):
            # An object of a project class that makes a Keras model, unless the class has its own
            # method of that name (``Brain.predict``: a project call, followed as such). A capitalised
            # name imported from another module may be a function that builds one (``YoloV3(...)``).
            refs = ((value.cls.member("__init__"), "builds"), (value.cls.member(call.func.attr), "absent"))
            return (*refs, (value.cls, "builds")) if value.cls.module else refs
        if (isinstance(node, ast.Attribute) and node.attr == "model" and isinstance(node.value, ast.Name)
                and node.value.id == "self" and self._per_step.get(self._frame.class_name) == "callback"):
            return True  # ``self.model`` in a Keras Callback is the model being trained
        if isinstance(value, CallResult):
            # ``network = nets.Net(...)`` (a class of another module, or a factory): a model when the call
            # gives one, unless it is an object whose class has its own method (``Net.predict``).
            return ((value.ref, "builds"), (value.ref.member(call.func.attr), "absent"))
        if isinstance(value, InitParam):
            # ``self.model`` set from ``__init__(self, model)``: a Keras model when the class's methods use
            # it as only one is used, or when the calls of the class (any module) pass one (phase 3)
            if self.keras and node.__class__ is ast.Attribute and self._attribute_is_model(value.cls, node.attr):
                return True
            return ((Ref("", f"{value.cls}.__init__"), f"param:{value.name}.{call.func.attr}"),)
        if isinstance(value, (TFName, ProjectRef)):
            return None
        if any(keyword.arg in keywords or (self.keras and keyword.arg == "epochs" and keywords is _FIT_KEYWORDS)
               for keyword in call.keywords):
            return True  # (``epochs=`` is Keras' only in a module that uses Keras: darts' fit takes it too)
        if self.keras and (value is None or value is OTHER) and node.__class__ is ast.Attribute \
                and node.value.__class__ is ast.Name and node.value.id == "self" and self._frame.class_name:
            return True if self._attribute_is_model(self._frame.class_name, node.attr) else None
        return None

    def _attribute_is_model(self, cls: str, attr: str) -> bool:
        """Whether the class's methods use ``self.attr`` as only a Keras model is used: with a method only
        Keras models have (``self.model.compile(...)``, ``self.target.set_weights(...)``) and with nothing
        a Keras model lacks (``self.agent.remember(...)``: a project object with a predict of its own)."""
        uses = self._self_attributes(cls).get(attr)
        return (uses is not None and not uses.members.isdisjoint(_KERAS_ONLY_METHODS)
                and uses.members <= _MODEL_ATTRIBUTES)

    def _eager_call(self, node: ast.Call, func_value) -> None:
        """Record what call ``node`` (whose callee resolved to ``func_value``) does in TF 2 terms."""
        frame = self._frame
        if isinstance(func_value, TFName):
            path = func_value.path
            if path in catalog.V1_ONLY_NAMES:
                self.eager_off = True
                return
            if path == "tf.function":
                if not (frame.is_class or (frame.facts.name == "<module>" and not frame.loops)
                        or _in_init(frame.facts.name) or self._in_decorator):
                    construction = self._new_construction(Effect.NEW_FUNCTION, node, f"{short(callee_text(node.func))}(...)")
                    if frame.loops and node.args:
                        # ``compiled[name] = tf.function(fn)`` over a dict of functions, ``[tf.function(l) for
                        # l in layers]``: a different function per iteration, each wrapped once.
                        names = self._read_names(node.args[0], numbers_only=False)
                        self._defer(lambda frame, c=construction, names=names: self._settle_new_function(frame, c, names))
                    else:
                        frame.facts.constructions.append(construction)
                return
            if frame.facts.traced and not any(not flag_marks(marks) for marks in frame.exempt):
                effect = catalog.effect_of(path)
                kind = catalog.result_kind(path, effect)
                if effect is Effect.MODEL or kind == "layer":
                    # A layer or model has no variables until it is built: called on a value in this
                    # body, or given an input shape (``Sequential([Dense(2)])`` returned unbuilt makes none).
                    construction = self._new_construction(Effect.TRACED_VARIABLE, node, f"{callee_text(node.func)}(...)")
                    self._defer(lambda frame, c=construction, n=node:
                                built_in(frame.node, n) and self._eager_fact(c, frame=frame))
                    return
                if (path == "tf.Variable"
                        or path.startswith("tf.keras.metrics.") and path.rsplit(".", 1)[-1][:1].isupper()
                        or path.startswith(catalog.KERAS_OPTIMIZER_PREFIXES) and effect is Effect.VARIABLE):
                    self._eager_fact(self._new_construction(Effect.TRACED_VARIABLE, node, f"{callee_text(node.func)}(...)"))
                    return
            if (path.startswith(catalog.KERAS_OPTIMIZER_PREFIXES) and path.rsplit(".", 1)[-1][:1].isupper()
                    and catalog.effect_of(path) is Effect.VARIABLE and not frame.facts.traced
                    and not frame.is_class and not _in_init(frame.facts.name) and id(node) not in self._compiled):
                frame.facts.constructions.append(self._new_construction(
                    Effect.RECOMPILE, node, f"{callee_text(node.func)}(...)"))
            return
        if isinstance(node.func, ast.Attribute) and node.func.attr in _KERAS_CALLS:
            # ``Sequential.predict_classes(x)`` (tf.keras before 2.6) is ``predict`` then an argmax.
            self._keras_call(node, _KERAS_CALLS[node.func.attr])
            return
        if not frame.loops or not (frame.numbers or self._attr_numbers):
            return
        # A call of a tf.function with a Python number that changes per iteration.
        traced = None
        if isinstance(func_value, TFObject) and func_value.kind == "function":
            traced = True
        elif isinstance(func_value, ProjectRef) and not getattr(func_value, "is_class", False):
            traced = self._traced_ref(func_value.ref)
        elif isinstance(node.func, ast.Attribute):
            receiver = self.resolve(node.func.value)
            if isinstance(receiver, Instance):
                traced = self._traced_ref(receiver.cls.member(node.func.attr))
            elif (isinstance(receiver, Param) and node.func.value.__class__ is ast.Name
                  and frame.facts.name != "<module>"):
                # ``def train(model, x): model.train_step(x, 0.01 * step)``: what the calls pass for
                # ``model`` decides (a project model whose ``train_step`` is a tf.function)
                traced = _ParamMethod(Ref("", frame.facts.name), f"{node.func.value.id}.{node.func.attr}")
        elif isinstance(func_value, CallResult):
            traced = _Returns(func_value.ref)  # ``step = make_train_step(model)``: what it returns (phase 3)
        if traced is None or traced is False:
            return
        candidates = []
        for arg in (*node.args, *(keyword.value for keyword in node.keywords)):
            if isinstance(arg, ast.Starred) or few_values(arg):
                continue
            if self._is_number(arg):
                names = self._read_names(arg, numbers_only=True)
            elif arg.__class__ in (ast.Dict, ast.List, ast.Tuple):
                # ``g({"scale": float(i)})``: a Python number inside a structure is part of the trace key
                # too (a twentieth trial); one level, the literal written at the call
                parts = arg.values if arg.__class__ is ast.Dict else arg.elts
                names = frozenset().union(*(
                    self._read_names(part, numbers_only=True) for part in parts
                    if part is not None and not few_values(part) and self._is_number(part)))
            else:
                # ``g(tf.ones((n, 8)))``: a tensor whose shape a changing number sets (a ninth new
                # user's trial); a tensor's shape is part of the trace key (TF-FACTS: 50 traces in 50
                # calls). A slice of fixed length (``data[i:i + 64]``) keeps its shape.
                source = same_shape_source(arg)  # ``step(tf.constant(xb))`` after ``xb = xs[:bs]``: ``xb``'s shape
                shape = shape_of(arg) or (
                    frame.shaped.get(dotted_name(source)) if frame.shaped and source.__class__ in (ast.Name, ast.Attribute)
                    else None)
                if not shape or any(few_values(part) for part in shape) or self._relaxed_callee(func_value, node):
                    continue
                names = frozenset().union(*(self._read_names(part, numbers_only=True) for part in shape))
                if names:  # (a tenth new user's trial: "a Python number" read as if the tensor were one)
                    construction = self._new_construction(
                        Effect.RETRACE_ARGUMENT, arg, f"{short(ast.unparse(arg))}` (shape set by "
                        f"`{'`, `'.join(sorted(names))}`) in `{short(callee_text(node.func))}(...)")
                    candidates.append((construction, names))
                continue
            if names:
                construction = self._new_construction(
                    Effect.RETRACE_ARGUMENT, arg, f"{short(ast.unparse(arg))}` in `{short(callee_text(node.func))}(...)")
                candidates.append((construction, names))
        if candidates:
            self._defer(lambda frame, c=tuple(candidates), t=traced: self._settle_retrace(frame, c, t))

    def _relaxed_callee(self, func_value, node: ast.Call) -> bool:
        """Whether the called tf.function of this module relaxes shapes (``reduce_retracing=True``):
        after a second shape it traces one function for any size, so a changing shape adds no trace."""
        if isinstance(func_value, ProjectRef) and func_value.ref.module == "":
            return func_value.ref.name in self._relaxed
        if isinstance(node.func, ast.Attribute):
            receiver = self.resolve(node.func.value)
            if isinstance(receiver, Instance):
                member = receiver.cls.member(node.func.attr)
                return member.module == "" and member.name in self._relaxed
        return False

    def _settle_new_function(self, frame, construction, names: frozenset) -> None:
        """``tf.function(f)`` in a loop is GG302 unless the loop changes ``f`` (or what it closes over)."""
        if names and self._varying_index(names, construction.loops[-1:]) is not None:
            return
        frame.facts.constructions.append(construction)

    def _settle_retrace(self, frame, candidates: tuple, traced) -> None:
        """The argument of a call that the innermost loop changes per iteration is a GG301 finding there
        (``step(images, resolution, alpha)`` with ``resolution`` set per phase of a three-phase loop and
        ``alpha`` per batch: ``alpha``, the one that retraces most often)."""
        chosen = None
        varying = []  # (construction, depth) of every argument a loop changes
        for construction, names in candidates:
            index = self._varying_index(names, construction.loops)
            if index is not None:
                varying.append((construction, construction.loops.index(index)))
                if chosen is None or construction.loops.index(index) > chosen[1]:
                    chosen = varying[-1]
        if chosen is not None:
            construction, depth = chosen
            names = next(n for c, n in candidates if c is construction)
            others = [c for c, d in varying if c is not construction and d == depth]  # (before the replace below)
            construction = construction._replace(loops=self._value_loops(names, construction.loops[:depth + 1]))
            if others:  # ``train_step(x, step, lr)``: every argument that loop changes, in one finding
                # (a shape and a number too: ``train_step(tf.ones([n, 3]), lr)``, a twentieth trial)
                # the arguments only: "(shape set by ...)" after each made a line of 213 characters
                parts = [(c.callee.rpartition(" in `")[0].split("` (shape set by", 1)[0].rstrip("`"),
                          "` (shape set by" in c.callee) for c in (construction, *others)]
                parts = sorted(set(parts), key=parts.index)
                shapes = all(shape for _, shape in parts)  # "`x`, `y` (shapes)"; else "`x` (shape), `lr`"
                args = [(text if len(text) <= 24 else text[:21] + "...") + ("` (shape)" if shape and not shapes else "`")
                        for text, shape in parts]
                callee = construction.callee.rpartition(" in `")[2]
                construction = construction._replace(
                    callee=", `".join(args) + (" (shapes)" if shapes else "") + " in `" + callee)
            if traced is True:
                self._eager_fact(construction, frame=frame)
            elif isinstance(traced, _Returns):
                self._eager_fact(construction, "returns_traced", (traced.ref,), frame=frame)
            elif isinstance(traced, _ParamMethod):
                self._eager_fact(construction, "param_traced", (traced.ref, traced.use), frame=frame)
            else:
                self._eager_fact(construction, "traced", (traced,), frame=frame)

    def _value_loops(self, names: frozenset, loops: tuple) -> tuple:
        """Of ``loops`` (indices, outermost first; the innermost binds one of ``names``), those that give
        ``names`` new values: a loop whose body binds them other than as the target of a loop nested
        in it. ``for epoch in ...: for k in range(4): step(x, k)`` passes four values in all, so four
        traces (the outer loop repeats them: its trips do not count); ``for k in range(epoch)`` reads
        the outer loop's name, so that loop gives new values too."""
        kept = []
        for position, index in enumerate(loops):
            nested = set()
            for inner in loops[position + 1:]:
                nested |= self._names_in(inner, "target")
            changed = names & self._loop_binds.get(index, set())
            if changed - nested:
                kept.append(index)
            elif changed:
                # a nested target whose iterable reads a name this loop binds (``range(epoch)``)
                binds = self._loop_binds.get(index, set())
                if any(binds & self._names_in(inner, "iter") for inner in loops[position + 1:]):
                    kept.append(index)
        return tuple(kept) or loops[-1:]

    def _names_in(self, index: int, part: str) -> set:
        """The dotted names in the ``target`` or ``iter`` of the ``for`` loop ``index`` (empty for
        another kind of loop)."""
        node = self._for_nodes.get(index)
        if node is None:
            return set()
        return {dotted_name(n) for n in ast.walk(getattr(node, part))
                if n.__class__ is ast.Name or n.__class__ is ast.Attribute} - {None}

    def _traced_ref(self, ref):
        """``True``/``False`` for a function of this module, the ref itself when phase 3 must decide."""
        if ref.module == "":
            return self._traced.get(ref.name, 0) == TRACED
        return ref

    def _keras_call(self, node: ast.Call, method: str) -> None:
        """``model.predict(x)``, ``model.fit(x, y)`` and ``model.compile(...)`` (GG303, GG306, GG305)."""
        frame = self._frame
        receiver = node.func.value
        step = _STEP_CALLS.get(method)
        model = self._keras_model(receiver, _COMPILE_KEYWORDS if step is None else step[1], node)
        data = _data_argument(node)
        if (model is None and step is not None and self.keras and data is not None and receiver.__class__ is ast.Name
                and isinstance(self.resolve(receiver), Param) and self._one_sample(data)
                and self._used_as_model(receiver.id)):
            # ``def detect(Yolo, frame): Yolo.predict(image[np.newaxis])`` in a module that names Keras or
            # TensorFlow: a parameter used as a Keras model is one (a scikit-learn estimator held in an attribute is not
            # taken by its use: its value is unknown, not a parameter), unless a call passes an object of a
            # project class with a ``predict`` of its own (phase 3: ``Project.keras_model``).
            model = ((Ref("", frame.facts.name), f"byuse:{receiver.id}.{method}"),)
        if (model is None and step is not None and receiver.__class__ is ast.Name and frame.facts.name != "<module>"
                and isinstance(self.resolve(receiver), Param) and self._used_as_model(receiver.id)):
            # ``def accuracy(self, model): ... model.predict(batch)``: a Keras model when what the calls
            # pass for ``model`` is one (phase 2's values, decided in phase 3).
            model = ((Ref("", frame.facts.name), f"param:{receiver.id}.{method}"),)
        if model is None:
            return
        text = f"{short(callee_text(node.func))}(...)"
        loops = tuple(loop.index for loop in frame.loops)
        if step is not None:
            if data is None:
                return
            if step[0] is Effect.FIT and any(k.arg == "epochs" and self._count_value(k.value) != 1 for k in node.keywords):
                # ``fit(x, y, epochs=5)``: several passes per call, a fixed cost spread over them; a
                # training run, so the loop around it (or the function's caller's) is a trial loop when
                # it runs on every iteration (not under an ``if`` inside that loop: ``if done: replay()``)
                if not frame.branches or frame.branches[-1] < len(frame.loops):
                    add(frame.facts, "trainings", self._new_construction(Effect.FIT, node, text))
                return
            if any(k.arg == "batch_size" for k in node.keywords) and not self._one_sample(data):
                return  # batched on purpose: a large input, split by predict itself (chunked inference)
            if (step[0] is Effect.FIT and frame.drew is HELPER_DRAW and not one_sample(data, NO_NAMES)
                    and any(k.arg == "batch_size" for k in node.keywords)):
                # ``fit(sample_triplets(data), batch_size=64)``: a helper's draw, maybe a whole epoch's
                # resample, that fit splits into batches itself: no sign of one step per call
                return
            if not frame.loops and frame.params and not self._one_sample(data):
                # ``def act(self, state): return self.model.predict(state)`` (or ``self.reshape(state)``):
                # per call of ``act`` in a loop that passes one sample or the iteration's data for
                # ``state`` (decided at the call, phase 3).
                names = self._read_names(data, numbers_only=False)
                params = {name for name in names if name in frame.params}
                params.update(*(frame.filled[name] for name in names if name in frame.filled))
                if params:
                    construction = self._new_construction(step[0], node, text)
                    frame.facts.predicts = [*frame.facts.predicts, *((p, construction, model) for p in sorted(params))]
                return
            one = self._one_sample(data)
            if step[0] is Effect.PREDICT and not one and self._batch(data):
                return  # ``for x_batch in datagen.flow_from_directory(...)``: batched inference over a dataset
            construction = self._new_construction(step[0], node, text)
            if not loops:
                if one and model is True:
                    frame.facts.constructions.append(construction)  # reported at the calls in loops
                elif one:
                    frame.facts.predicts = [*frame.facts.predicts, (None, construction, model)]
                return
            if step[0] is Effect.FIT and not one and not (data.__class__ is ast.Name and data.id in frame.targets):
                # a fit on other data that changes per iteration (a shard loaded, the training set shuffled
                # or augmented each epoch) is a pass over a dataset; on what a loop hands out
                # (``for state, target in transitions``, ``for x, y in batches()``) it is one step each
                return
            names = self._read_names(data, numbers_only=False)
            drawn = step[0] is Effect.PREDICT and _draws_random(data)
            self._defer(lambda frame, c=construction, names=names, one=one, model=model, drawn=drawn:
                        self._settle_predict(frame, c, names, one, model, drawn))
            return
        else:
            dotted = dotted_name(receiver)
            if frame.loops and dotted is not None and frame.loops[-1].index in frame.bound.get(dotted, ()):
                return  # a model made in this iteration is compiled once (a sweep: GG201's business)
            if (not frame.loops and isinstance(receiver, ast.Name) and receiver.id in frame.scope
                    and not isinstance(frame.scope[receiver.id], Param)):
                return  # ``model = build(); model.compile(...)`` in a factory: compiling the model it made
            construction = self._new_construction(Effect.RECOMPILE, node, text)
            # ``model.compile(optimizer=Adam(lr))``: one finding, at the compile.
            self._compiled.update(id(arg) for arg in (*node.args, *(k.value for k in node.keywords)))
        if model is True:
            frame.facts.constructions.append(construction)
        else:
            self._eager_fact(construction, "model", model)

    def _used_as_model(self, name: str) -> bool:
        """Whether the function being read uses its parameter ``name`` only as a Keras model has it
        (``yolo.predict(x)``, ``net.layers``), not with methods or attributes of a project object
        (``actor.add_experience(...)``, ``actor.train()``: a wrapper with its own ``predict``)."""
        node = self._frame.node
        if node is None:
            return True
        for sub in ast.walk(node):
            if (sub.__class__ is ast.Attribute and sub.value.__class__ is ast.Name and sub.value.id == name
                    and sub.attr not in _MODEL_ATTRIBUTES):
                return False
        return True

    def _settle_predict(self, frame, construction, names: frozenset, one: bool, model, drawn: bool = False) -> None:
        """``model.predict(data)`` in a loop: a finding for the innermost loop that changes ``data``, or
        for the innermost loop when ``data`` is one sample or drawn at random in the call
        (``generator.predict(np.random.normal(size=(64, 100)))``: new noise on every iteration)."""
        index = self._varying_index(names, construction.loops)
        if index is None and drawn:
            index = construction.loops[-1]
        if index is None and not one:
            return
        if index is not None:
            construction = construction._replace(loops=construction.loops[:construction.loops.index(index) + 1],
                                                 inner=construction.loops[-1])
        if one:
            if model is True:
                frame.facts.constructions.append(construction)
            else:
                self._eager_fact(construction, "model", model, frame=frame)
        else:
            # The iteration's data, not one sample: one evaluation per trial when the loop makes a
            # model per iteration (phase 3 says), otherwise per-batch inference.
            self._eager_fact(construction, "data", () if model is True else model, frame=frame)

    def _eager_fact(self, construction, kind: str | None = None, refs: tuple = (), frame=None) -> None:
        """A TF 2 construction that does not propagate to callers (or that phase 3 decides); once per
        site (``total += tf.Variable(...)`` visits its right-hand side twice)."""
        facts = (frame or self._frame).facts
        site = construction.site
        for known, _, _ in facts.eager_checks:
            if known.effect is construction.effect and (known.site == site or (
                    (known.site.row, known.site.column) <= (site.row, site.column)
                    and (site.end_row, site.end_column) <= (known.site.end_row, known.site.end_column))):
                return  # the same site, or inside one reported (``Sequential([Dense(10)])``): one finding

        facts.eager_checks = [*facts.eager_checks, (construction, kind, refs)]




def _data_argument(node: ast.Call) -> ast.AST | None:
    """The input of ``model.predict(x)``/``model.fit(x, y)``: the first argument, or ``x=``."""
    if node.args:
        return node.args[0]
    return next((keyword.value for keyword in node.keywords if keyword.arg == "x"), None)


#: Keyword arguments that give a Keras layer its input shape: it is built, variables and all, when made.
_SHAPE_KEYWORDS = frozenset({"input_shape", "input_dim", "batch_input_shape", "batch_shape"})
#: Methods that build a Keras layer or model (and so make its variables) when called on it.
_BUILDING_METHODS = frozenset({"build", "__call__", "call", "predict", "predict_on_batch", "fit", "evaluate",
                               "train_on_batch", "test_on_batch", "apply"})


def built_in(function: ast.AST | None, node: ast.Call) -> bool:
    """Whether the Keras layer or model that call ``node`` makes is built inside ``function`` (the
    ``def`` holding it), and so makes its variables there: called at once (``Dense(2)(x)``), made with
    an input shape (``Dense(2, input_shape=(3,))``, a ``tf.keras.Input`` in a ``Sequential``'s list), or
    bound to a name or attribute that the body calls or builds (``d = Dense(2)`` ... ``d(x)``,
    ``m.build(shape)``). Keras makes a layer's weights in ``build``, on its first call (Keras API:
    ``Layer.build``); a ``Sequential`` of layers without an input shape is unbuilt until called."""
    for sub in ast.walk(node):
        if sub.__class__ is ast.Call and (any(keyword.arg in _SHAPE_KEYWORDS for keyword in sub.keywords)
                                          or callee_text(sub.func).rsplit(".", 1)[-1] in ("Input", "InputLayer")):
            return True
    if function is None:
        return True
    names = set()
    for sub in ast.walk(function):
        if sub.__class__ is ast.Call and sub.func is node:
            return True
        if sub.__class__ in (ast.Assign, ast.AnnAssign) and sub.value is node:
            for target in (sub.targets if sub.__class__ is ast.Assign else [sub.target]):
                dotted = dotted_name(target)
                if dotted is not None:
                    names.add(dotted)
    if not names:
        return False
    for sub in ast.walk(function):
        if sub.__class__ is ast.Call:
            func = sub.func
            if dotted_name(func) in names or (func.__class__ is ast.Attribute and func.attr in _BUILDING_METHODS
                                              and dotted_name(func.value) in names):
                return True
    return False


def _in_init(name: str) -> bool:
    """Whether the function ``name`` (qualified) is an ``__init__``: it runs once per object."""
    return name.endswith("__init__")
