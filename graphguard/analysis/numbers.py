"""The reader's Python numbers, for GG301 (:class:`NumberReader`): which names hold a Python ``int`` or
``float`` that changes per iteration (a loop's counter, ``lr = lr * decay``, an element of ``[0.5 * i for i in
range(100)]``, a value a number-returning function of the module gives, a number a generator of the module
yields), so that a ``tf.function`` called with one retraces per value. A mixin of
:class:`graphguard.analysis.eager.EagerReader`; it needs the reader's ``_frame``, ``resolve`` and the
sample reader's ``_read_names``, ``_one_sample`` and ``_minibatch``."""

from __future__ import annotations

import ast

from graphguard.analysis.bindings import Instance, ProjectRef, TFName, TFObject
from graphguard.analysis.samples import NUMBER_FUNCTIONS, RANDOM_INTS, maybe_number_or_sample_call
from graphguard.analysis.shapes import shape_of
from graphguard.analysis.syntax import assigned_targets, dotted_name, one_sample, parameter_defaults


class NumberReader:
    """Python numbers in the body being read (see the module docstring)."""

    def _note_number(self, target: ast.AST, value: ast.AST | None, augmented: bool = False) -> None:
        """After ``target = value`` (or ``target op= value``): whether ``target`` now holds a Python number
        or a batch of one sample. Called on every assignment: the common case (a call's result bound to
        a name that held neither) returns after a few type checks."""
        kind = target.__class__
        if (kind is ast.Tuple and not augmented and value.__class__ is ast.Tuple and len(target.elts) == len(value.elts)
                and not any(part.__class__ is ast.Starred for part in (*target.elts, *value.elts))):
            for part, part_value in zip(target.elts, value.elts):  # ``xb, yb = xs[i:i + bs], ys[i:i + bs]``
                self._note_number(part, part_value)
            return
        frame = self._frames[-1]
        if frame.loops:
            self._note_loop_bind(target, None if augmented else value)
        if kind is ast.Subscript:
            if (frame.samples or self._sample_loops) and value is not None:
                self._note_filled(target, value)  # ``state[i] = minibatch[i][0]``
            if frame.params and value is not None:
                # ``s[i] = batch[i].state`` into ``np.zeros(...)``: ``s`` holds rows of the parameter
                # ``batch``, so a ``predict(s)`` is one on what the callers pass (a new set's first
                # contact: a DQN's replay minibatch copied row by row into arrays, then predicted)
                read = [name for name in self._read_names(value, numbers_only=False) if name in frame.params]
                container = target
                while container.__class__ is ast.Subscript:
                    container = container.value
                dotted = dotted_name(container)
                if read and dotted is not None and dotted not in frame.params:
                    frame.filled[dotted] = frame.filled.get(dotted, frozenset()) | frozenset(read)
            return
        if kind is ast.Name:
            if frame.filled and not augmented:
                frame.filled.pop(target.id, None)
            self._note_count(frame, target.id, None if augmented else value)
        if kind is ast.Tuple and value is not None and value.__class__ is ast.Call:
            self._note_parts(target, value)
        if self.keras and value is not None and not augmented and (frame.drew or (
                value.__class__ is ast.Call and _may_draw(getattr(value.func, "attr", None) or getattr(value.func, "id", None),
                                                          self._draw_names))) \
                and self._minibatch(value, frame):
            # ``samples = random.sample(self.memory, 32)`` and what is made of it (``states =
            # np.array(...)``): a replay minibatch drawn on every call, which costs predict what one
            # sample does (the fixed cost is per call, ../shared/TF-FACTS.md).
            for name in assigned_targets([ast.Assign(targets=[target], value=value)]):
                frame.samples.add(name)
            return
        if kind is ast.Name:
            dotted = target.id
        elif kind is ast.Attribute:
            dotted = dotted_name(target)
            if dotted is None:
                return
        else:
            return
        numbers, samples = frame.numbers, frame.samples
        if frame.loops or frame.shaped:
            # ``xb = data[:n]`` or ``xb = np.ones((n, 4))`` in a loop: ``step(xb)`` passes a tensor whose
            # shape ``n`` sets (a seventeenth new user's trial: 17 of 19 traces from ``data[:bs]``)
            shape = None if augmented or value is None or not frame.loops else shape_of(value)
            if shape:
                frame.shaped[dotted] = shape
            else:
                frame.shaped.pop(dotted, None)
        if augmented:
            if self._holds_number(dotted, target) and not self._is_tf_value(value):
                return  # ``step += 1``, ``lr *= decay``: still a number
            numbers.discard(dotted)
            samples.discard(dotted)
            return
        if value is None:
            numbers.discard(dotted)
            samples.discard(dotted)
            return
        value_kind = value.__class__
        if value_kind is ast.Call and not maybe_number_or_sample_call(value) and not (
                self._number_returns and self._is_number(value)):
            if numbers:
                numbers.discard(dotted)
            if self._made_of_one_sample(value):
                # ``x = preprocess_input(x, mode="tf")``, ``x = scale(scaler, s.reshape(1, n))``: made from
                # one sample, row for row
                samples.add(dotted)
            elif samples:
                samples.discard(dotted)
            return
        if value_kind in _SEQUENCES and self._number_elements(value):
            frame.number_lists.add(dotted)  # ``lrs = [0.5 * i for i in range(100)]``, then ``for lr in lrs``
        elif frame.number_lists:
            frame.number_lists.discard(dotted)
        if self._is_number(value):
            numbers.add(dotted)
            if kind is ast.Attribute and isinstance(target.value, ast.Name) and target.value.id == "self" \
                    and frame.class_name is not None:
                self._attr_numbers.add((frame.class_name, target.attr))
        else:
            numbers.discard(dotted)
        if self._one_sample(value):
            samples.add(dotted)
        else:
            samples.discard(dotted)

    def _made_of_one_sample(self, value: ast.Call) -> bool:
        """Whether the call ``value`` transforms one sample, row for row: a positional argument is one
        (a name bound to one, or written as one: ``x.reshape(1, n)``) and the call does not repeat rows
        (``np.repeat``, ``np.tile``, ``broadcast_to``)."""
        func = value.func
        if (func.attr if func.__class__ is ast.Attribute else getattr(func, "id", None)) in _REPEATS_ROWS:
            return False
        bound = self._frame.samples.__contains__  # (a name: one when this body bound it to one)
        return any(arg.__class__ is not ast.Constant and one_sample(arg, bound, lists=False) for arg in value.args)

    def _note_loop_numbers(self, node: ast.For) -> None:
        """``for step in range(n)``, ``for i, batch in enumerate(data)``, ``for lr in [0.1, 0.01]``,
        ``for s in scales`` (``scales = [0.5 * i for i in range(100)]``), ``for step, lr in zip(range(n),
        lrs)``: the counter, or the element, is a Python number that changes on every iteration."""
        iterable, target = node.iter, node.target
        numbers = self._frame.numbers
        if isinstance(target, ast.Name):
            if self._number_elements(iterable):
                numbers.add(target.id)
            return
        if not (isinstance(target, (ast.Tuple, ast.List)) and isinstance(iterable, ast.Call)
                and isinstance(iterable.func, ast.Name) and self.resolve(iterable.func) is None):
            return
        name, elements, args = iterable.func.id, target.elts, iterable.args
        if name == "enumerate" and elements and args:
            pairs = [(elements[0], None)] + [(element, args[0]) for element in elements[1:2]]
        elif name == "zip" and len(elements) == len(args) and not iterable.keywords:
            pairs = list(zip(elements, args))
        else:
            return
        for element, sequence in pairs:
            if isinstance(element, ast.Name) and (sequence is None or self._number_elements(sequence)):
                numbers.add(element.id)

    def _note_number_return(self, value: ast.AST) -> None:
        """``def cosine_lr(step, total): return 0.05 * (1 + math.cos(...))``: a function of this module
        whose every ``return`` gives a Python number makes its calls numbers (:meth:`_is_number`; a
        twenty-first new user's trial: a learning-rate schedule's value passed to a ``tf.function``)."""
        frame = self._frame
        if frame.is_class or frame.facts.name == "<module>" or frame.facts.traced:
            return
        name = frame.facts.name
        if not self._number_returns.get(name, True):
            return
        # parameters whose default is a number count as numbers here (``base=0.1``: ``base * step / warmup``)
        added = [param for param in _number_defaults(frame.node) if param not in frame.numbers]
        frame.numbers.update(added)
        try:
            self._number_returns[name] = self._is_number(value)
        finally:
            frame.numbers.difference_update(added)

    def visit_Yield(self, node: ast.Yield) -> None:
        """``def lrs(): ... yield lr``: calling ``lrs()`` hands out Python numbers (``_number_elements``)."""
        frame = self._frame
        if (node.value is not None and not frame.is_class and frame.facts.name != "<module>"
                and self._is_number(node.value)):
            self._number_generators.add(frame.facts.name)
        self.generic_visit(node)

    def _number_elements(self, node: ast.AST) -> bool:
        """Whether iterating ``node`` hands out Python numbers: ``range(n)``, ``[0.1, 0.01]``,
        ``[0.5 * i for i in range(100)]`` (a comprehension whose element is a number once its ``range``
        targets are), or a name bound to one of these in this body."""
        kind = node.__class__
        if kind is ast.Call:
            func = node.func
            if func.__class__ is not ast.Name:
                return False
            value = self.resolve(func)
            if value is not None:  # ``zip(range(n), lrs())`` with ``def lrs(): ... yield v``
                return (bool(self._number_generators) and isinstance(value, ProjectRef) and value.ref.module == ""
                        and value.ref.name in self._number_generators)
            if func.id == "range":
                return True
            return (func.id in ("list", "tuple", "sorted", "reversed") and len(node.args) == 1
                    and self._number_elements(node.args[0]))
        if kind is ast.Name:
            return node.id in self._frame.number_lists
        if kind in (ast.List, ast.Tuple, ast.Set):
            return bool(node.elts) and all(self._is_number(element) for element in node.elts)
        if kind in (ast.ListComp, ast.GeneratorExp, ast.SetComp):
            numbers = self._frame.numbers
            added = []
            for generator in node.generators:
                target = generator.target
                if isinstance(target, ast.Name) and target.id not in numbers and self._number_elements(generator.iter):
                    numbers.add(target.id)
                    added.append(target.id)
            try:
                return self._is_number(node.elt)
            finally:
                numbers.difference_update(added)
        return False

    def _is_tf_value(self, node: ast.AST | None) -> bool:
        return node is not None and isinstance(self.resolve(node), (TFObject, TFName))

    def _is_number(self, node: ast.AST) -> bool:
        """Whether ``node`` evaluates to a Python ``int`` or ``float`` (not a bool, not a tensor)."""
        if isinstance(node, ast.Constant):
            return type(node.value) in (int, float)
        if isinstance(node, (ast.Name, ast.Attribute)):
            return self._holds_number(dotted_name(node), node)
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
            return self._is_number(node.operand)
        if isinstance(node, ast.BinOp):
            # ``1.0 - i / num_steps``: a number and an unknown name make a number; not with a tensor, nor
            # with an element of an iterable the analysis cannot see (``eps * (sigma_i / sigmas[-1]) ** 2``
            # in ``for i, sigma_i in enumerate(sigmas)``, sigmas a tensor: a first-contact set's six F)
            operands = (node.left, node.right)
            return (any(self._is_number(o) for o in operands)
                    and not any(self._is_tf_value(o) or self._unseen_element(o) for o in operands))
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in NUMBER_FUNCTIONS
                and self.resolve(node.func) is None):
            return True
        if (node.__class__ is ast.Call and node.func.__class__ is ast.Attribute and node.func.attr in RANDOM_INTS
                and 1 <= len(node.args) <= 2 and not node.keywords):
            # ``T = np.random.randint(5, 40)``, one integer: a length drawn per iteration (a twenty-third new
            # user's trial: ``np.random.rand(16, T, 4)`` per step, a new input shape each time)
            return True
        if node.__class__ is ast.Call and node.func.__class__ is ast.Name and self._number_returns:
            value = self.resolve(node.func)  # ``cosine_lr(step, total)``, a function of this module
            return (isinstance(value, ProjectRef) and value.ref.module == ""
                    and self._number_returns.get(value.ref.name, False))
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("min", "max")
                and len(node.args) >= 2 and not node.keywords and self.resolve(node.func) is None):
            return all(self._is_number(arg) for arg in node.args)  # ``min(1.0, step / warmup)``
        return False

    def _unseen_element(self, node: ast.AST) -> bool:
        """Whether ``node`` reads a ``for`` target of this body that holds no known number (an element of
        an iterable whose elements the analysis does not know), directly or through arithmetic."""
        kind = node.__class__
        if kind is ast.Name:
            return node.id in self._frame.targets and node.id not in self._frame.numbers
        if kind is ast.BinOp:
            return self._unseen_element(node.left) or self._unseen_element(node.right)
        if kind is ast.UnaryOp:
            return self._unseen_element(node.operand)
        return False

    def _holds_number(self, dotted: str | None, node: ast.AST) -> bool:
        """Whether ``dotted`` (``step``, ``self.step``, ``agent.eps``) holds a Python number here: bound
        to one in this function, or an attribute of a class of this module that one of its methods sets
        to a number (``self.step = 0`` in ``__init__``)."""
        if dotted is None:
            return False
        if dotted in self._frame.numbers:
            return True
        if not self._attr_numbers or not isinstance(node, ast.Attribute):
            return False
        if isinstance(node.value, ast.Name) and node.value.id == "self":
            return (self._frame.class_name, node.attr) in self._attr_numbers
        owner = self.resolve(node.value)
        return isinstance(owner, Instance) and owner.cls.module == "" and (owner.cls.name, node.attr) in self._attr_numbers


def _number_defaults(node: ast.AST | None) -> list[str]:
    """The parameters of the ``def`` ``node`` whose default is a number literal (``base=0.1``)."""
    if node is None or not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return []
    return [name for name, default in parameter_defaults(node.args).items()
            if default.__class__ is ast.Constant and type(default.value) in (int, float)]


#: The literals and comprehensions a list of Python numbers is written as (``_number_elements``).
_SEQUENCES = frozenset({ast.List, ast.Tuple, ast.ListComp, ast.GeneratorExp, ast.Call})
#: Functions that repeat their argument's rows (``np.repeat(x[None], 64, axis=0)``: not one sample).
_REPEATS_ROWS = frozenset({"repeat", "tile", "broadcast_to"})


def _may_draw(name, draws: frozenset) -> bool:
    """Whether a call named ``name`` may draw a random minibatch: one of ``draws`` (``sample``,
    ``choice``, ``randint``, the module's own drawing functions) or a sampler's method of the form
    ``sample_*`` (``memory.sample_memory(batch_size)``, ``replay.sample_batch(64)``)."""
    return name is not None and (name in draws or name.startswith("sample_"))
