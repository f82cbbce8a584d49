"""Phase 1 for GG303 and GG306: which data a Keras ``predict`` or ``fit`` gets in a loop.

A mixin of :class:`graphguard.analysis.reader.ModuleReader` (through
:class:`graphguard.analysis.eager.EagerReader`), sharing its frames, loops and bindings. It says which
values are one sample or a small batch, whose fixed per-call cost is most of a ``predict`` or ``fit``
(TF-FACTS: 66-190 ms per ``predict`` whatever the rows up to 64, 42-44 ms per ``fit`` against 0.8 ms for
``train_on_batch``):

* one sample as written (``x[None]``, ``np.expand_dims(x, 0)``, ``[x]``, :func:`syntax.one_sample`), a
  slice of at most :data:`MINIBATCH_ROWS` rows cut by hand (``x[i:i + 32]``), or a name bound to one;
* a random minibatch drawn in the body (``random.sample(memory, 32)``, ``buffer.sample(32)``, a
  function of the module that returns one), what is made of it (``np.array(states)``), the rows of a
  loop over it, and the containers filled from it (``states[i] = minibatch[i][0]``, ``X.append(s)``);

and which names a loop changes per iteration (its target, or a name its body binds), with two
exceptions: data reordered in place (``x, y = shuffle(x, y)``) and a rollout that a nested loop fills
one row per step (``states.append(state)``, then one update per episode).
"""

from __future__ import annotations

import ast

from graphguard.analysis.bindings import ProjectRef
from graphguard.analysis.facts import CALLER
from graphguard.analysis.syntax import (
    ARRAY_FUNCTIONS,
    ONE_SAMPLE_FUNCTIONS,
    SAME_ROWS,
    SHAPED,
    assigned_targets,
    dotted_name,
    loaded_names,
    one_sample,
)

#: Builtins whose result is a Python number when their argument is one.
NUMBER_FUNCTIONS = frozenset({"int", "float", "round", "abs", "len"})
#: Methods that draw one random integer (``random.randint(5, 40)``, ``np.random.randint(5, 40)``, a
#: generator's ``integers``): a length drawn per iteration (GG301: a new input shape each time)
RANDOM_INTS = frozenset({"randint", "randrange", "integers"})

#: The most rows a slice cut by hand may take and still be a minibatch (``x[i:i + 32]``) for GG303/GG306:
#: the fixed cost of predict does not depend on the batch up to 64 rows (TF-FACTS), and is still most of
#: a call at a few hundred.
MINIBATCH_ROWS = 256
#: ``Frame.drew`` when the body's minibatch came from a function of the module (its size unknown here).
HELPER_DRAW = "helper"
#: A ``bound`` for :func:`syntax.one_sample` that knows no name: one sample as written, nothing else.
NO_NAMES = frozenset().__contains__

#: Functions and methods that make a data source handing out batches of a finite dataset: Keras'
#: ``ImageDataGenerator.flow``/``flow_from_directory``/``flow_from_dataframe`` (``batch_size`` 32 by
#: default), ``tf.data.Dataset.batch``/``padded_batch`` and Keras' ``*_dataset_from_directory`` /
#: ``timeseries_dataset_from_array``. A loop over one runs ``predict`` once per batch of the dataset:
#: ordinary batched inference, nothing to hoist (issue 34's shape 3), unless the batch is one row.
BATCH_SOURCES = frozenset({"flow", "flow_from_directory", "flow_from_dataframe", "batch", "padded_batch",
                           "image_dataset_from_directory", "text_dataset_from_directory",
                           "audio_dataset_from_directory", "timeseries_dataset_from_array"})

#: Functions that return their arguments' rows in another order (scikit-learn's ``shuffle`` and
#: ``resample``, NumPy's ``permutation``).
_REORDERING_FUNCTIONS = frozenset({"shuffle", "permutation", "resample"})


def _reorders(value: ast.AST) -> bool:
    """Whether ``value`` may be its operands' rows reordered: ``shuffle(x, y)``, ``x[order]``."""
    if value.__class__ is ast.Subscript:
        return value.slice.__class__ is ast.Name
    if value.__class__ is ast.Call:
        func = value.func
        return (func.attr if func.__class__ is ast.Attribute else getattr(func, "id", None)) in _REORDERING_FUNCTIONS
    return False


def maybe_number_or_sample_call(node: ast.Call) -> bool:
    """Whether call ``node`` may give a Python number or a batch of one (by the function's last name)."""
    func = node.func
    name = func.attr if func.__class__ is ast.Attribute else getattr(func, "id", None)
    return (name in NUMBER_FUNCTIONS or name in ONE_SAMPLE_FUNCTIONS or name == "reshape" or name in ARRAY_FUNCTIONS
            or name in SAME_ROWS or name in SHAPED or name in ("min", "max") or name in RANDOM_INTS)


#: Argument node types that may be a batch of one (:meth:`SampleReader._one_sample`).
_SAMPLE_NODES = (ast.Name, ast.Attribute, ast.Subscript, ast.Call, ast.List, ast.Tuple)



def draws_minibatch(value: ast.Call) -> bool:
    """Whether the call ``value`` draws a random minibatch itself: ``random.sample(memory, n)``,
    ``buffer.sample(32)``, ``memory.sample_memory(batch_size)``, ``replay.sample_batch(64)``,
    ``np.random.choice(len(memory), 32)``, ``np.random.randint(0, n, size=32)``."""
    func = value.func
    last = func.attr if func.__class__ is ast.Attribute else getattr(func, "id", None)
    sampler = last == "sample" or (last is not None and last.startswith("sample_"))
    return (sampler and (len(value.args) + len(value.keywords)) >= 1) or (
        last in ("choice", "randint") and (len(value.args) >= (2 if last == "choice" else 3)
                                           or any(k.arg == "size" for k in value.keywords)))

class SampleReader:
    """The samples half of the TF 2 reader (see the module docstring). Needs the reader's ``_frame``,
    ``resolve``, ``_count_value`` and ``_defer``; keeps per loop the names its body binds
    (``_loop_binds``), the loops over a minibatch (``_sample_loops``) and where containers are filled
    (``_accumulated``)."""

    def _minibatch(self, value: ast.AST, frame) -> bool:
        """Whether ``value`` is a random minibatch drawn here (``random.sample(memory, n)``,
        ``buffer.sample(n)``, ``np.random.choice(len(memory), n)``) or is made from one bound in this
        body (``np.array(states).reshape(n, -1)``, ``memory[indices]``, ``zip(*samples)``)."""
        if value.__class__ is ast.Call:
            func = value.func
            last = func.attr if func.__class__ is ast.Attribute else getattr(func, "id", None)
            if draws_minibatch(value):
                frame.drew = True
                return True
            if self._minibatch_functions and last in self._draw_names:
                ref = getattr(self.resolve(value), "ref", None)
                if ref is not None and ref.module == "" and ref.name in self._minibatch_functions:
                    # ``states, ... = self.get_random_batch()``: a draw of a size this body does not say
                    frame.drew = frame.drew or HELPER_DRAW
                    return True
        elif value.__class__ is ast.Constant:
            return False
        if not frame.drew:
            return False
        return not frame.samples.isdisjoint(self._read_names(value, numbers_only=False))

    def _note_sample_loop(self, loop, iterable: ast.AST, target: ast.AST) -> None:
        """``for i, (s, a, r) in enumerate(minibatch):``, ``for s, a in random.sample(memory, 32):`` -- a
        loop over a minibatch drawn in this body: its targets are one sample each, and
        the lists it fills are one too (:meth:`_note_filled`)."""
        frame = self._frame
        if ((iterable.__class__ is ast.Call and not frame.loops and self._minibatch(iterable, frame))
                or not frame.samples.isdisjoint(self._read_names(iterable, numbers_only=False))):
            self._sample_loops.add(loop.index)
            # ``for state, action, reward in minibatch:``: each target is one row, one sample
            frame.samples.update(name for name in assigned_targets([ast.Assign(targets=[target], value=iterable)]))

    def _batch_source(self, value: ast.AST) -> bool:
        """Whether ``value`` is a batching data source (:data:`BATCH_SOURCES`) whose batches may hold
        more than one row, or a name this body bound to one; ``enumerate(source)`` is one too."""
        if value.__class__ is ast.Name:
            return value.id in self._frame.batch_sources
        if value.__class__ is not ast.Call:
            return False
        func = value.func
        name = func.attr if func.__class__ is ast.Attribute else getattr(func, "id", None)
        if name == "enumerate" and value.args:
            return self._batch_source(value.args[0])
        size = next((k.value for k in value.keywords if k.arg == "batch_size"), None)
        if name not in BATCH_SOURCES and not (size is not None and isinstance(self.resolve(func), ProjectRef)):
            # (a loader of the project given ``batch_size=`` -- ``load_test_set(path, batch_size=64)``,
            # ``DataGenerator(files, batch_size=32)`` -- hands out batches of that size, whatever it
            # calls inside: its batches are ordinary batched inference too)
            return False
        if size is None and name in ("batch", "padded_batch") and value.args:
            size = value.args[0]
        rows = None if size is None else self._count_value(size)
        return rows is None or rows > 1

    def _note_batch_source(self, target: ast.AST, value: ast.AST) -> None:
        """``generator = datagen.flow_from_directory(folder, batch_size=64)``: ``generator`` hands out
        batches (a name bound to anything else is not, or no longer, one)."""
        if target.__class__ is ast.Name:
            self._frame.batches.discard(target.id)  # bound anew: no longer the batch a loop handed out
            if self._batch_source(value):
                self._frame.batch_sources.add(target.id)
            else:
                self._frame.batch_sources.discard(target.id)

    def _note_batch_loop(self, iterable: ast.AST, target: ast.AST) -> None:
        """``for x_batch, y_batch in generator:``: each target is one batch of a finite dataset."""
        if self._batch_source(iterable):
            self._frame.batches.update(assigned_targets([ast.Assign(targets=[target], value=iterable)]))

    def _batch(self, node: ast.AST) -> bool:
        """Whether ``node`` is a batch a loop over a batching data source handed out (``x_batch``,
        ``batch[0]``)."""
        while node.__class__ is ast.Subscript:
            node = node.value
        return node.__class__ is ast.Name and node.id in self._frame.batches

    def _note_accumulation(self, node: ast.Call) -> None:
        """``states.append(state)`` in a loop: remember the loop nest (a name filled by a nested loop is
        a rollout, :meth:`_varying_index`), and whether ``states`` now holds a minibatch's rows."""
        dotted = dotted_name(node.func.value)
        if dotted is not None:
            self._accumulated.setdefault(dotted, set()).add(tuple(loop.index for loop in self._frame.loops))
        if self._sample_loops or self._frame.samples:
            self._note_filled(node.func.value, node.args[0] if node.args else None)

    def _note_filled(self, container: ast.AST, value: ast.AST | None) -> None:
        """``X.append(minibatch[i][1])`` or ``X[i] = minibatch[i][0]`` (into ``np.zeros((32, n))``), or any
        fill in a loop over a minibatch (``for s, a in batch: X.append(s)``): ``X`` holds a minibatch's
        rows (then ``model.fit(np.array(X), ...)``)."""
        while container.__class__ is ast.Subscript:
            container = container.value
        dotted = dotted_name(container)
        frame = self._frame
        if dotted is not None and ((frame.loops and frame.loops[-1].index in self._sample_loops) or (
                frame.drew and value is not None
                and not frame.samples.isdisjoint(self._read_names(value, numbers_only=False)))):
            frame.samples.add(dotted)

    def _note_loop_bind(self, target: ast.AST, value: ast.AST | None = None, own: int | None = None) -> None:
        """``target`` is bound in the body of every enclosing loop: remember it per loop, so that a value
        read in the loop is known to change per iteration once the function has been read (a name
        assigned after its use, ``state = next_state`` at the end of the body, counts too). A call or
        subscript ``value`` made of the targets themselves (``x, y = shuffle(x, y)``, ``x = x[order]``:
        the same data reordered each epoch) is not new data."""
        loops = self._frame.loops
        if not loops:
            return
        if value is not None and _reorders(value):
            names = {dotted_name(node) for node in (target.elts if target.__class__ is ast.Tuple else (target,))}
            read = value.value if value.__class__ is ast.Subscript else value
            if None not in names and names <= {dotted_name(node) for node in loaded_names(read)}:
                return
        stack = [target]
        while stack:
            node = stack.pop()
            if isinstance(node, (ast.Tuple, ast.List)):
                stack.extend(node.elts)
                continue
            if isinstance(node, (ast.Starred, ast.Subscript)):
                node = node.value
            dotted = dotted_name(node)
            if dotted is not None:
                for loop in loops:
                    self._loop_binds.setdefault(loop.index, set()).add(dotted)
                    if own is None or loop.index == own:  # (``own``: the target of that loop itself)
                        self._bound_here.setdefault(loop.index, set()).add(dotted)

    def _read_names(self, node: ast.AST, numbers_only: bool) -> frozenset:
        """The dotted names ``node`` reads (``numbers_only``: those that hold Python numbers now)."""
        kind = node.__class__
        if kind is ast.Name or kind is ast.Attribute:  # most arguments: no walk
            dotted = dotted_name(node)
            if dotted is None or numbers_only and not self._holds_number(dotted, node):
                return frozenset() if kind is ast.Name else self._read_names(node.value, numbers_only)
            return frozenset((dotted,))
        if kind is ast.Constant:
            return frozenset()
        names = set()
        for sub in loaded_names(node):
            dotted = dotted_name(sub)
            if dotted is not None and (not numbers_only or self._holds_number(dotted, sub)):
                names.add(dotted)
        return frozenset(names)

    def _varying_index(self, names: frozenset, loops: tuple) -> int | None:
        """The innermost of ``loops`` (indices) whose body binds one of ``names``; called once the
        function is read (:meth:`_settle_eager`). A rollout is not the iteration's data: a list that a
        loop nested in that body fills, one row per inner step (``states.append(state)`` in an episode's
        step loop, then ``agent.learn(states)`` once per episode), so the work of one call is many steps'.
        Nor is what a finished nested loop left in its target (``for x, y in batches: ...`` then
        ``plot_samples(x)`` once per epoch): the call runs once per pass over that loop's data."""
        for index in reversed(loops):
            binds = self._loop_binds.get(index)
            if binds:
                varying = names & binds
                if varying and not all(self._rollout(name, index) or name not in self._bound_here.get(index, ())
                                       for name in varying):
                    return index
        return None

    def _rollout(self, name: str, index: int) -> bool:
        """Whether ``name`` is appended to in a loop nested in the body of loop ``index``."""
        return any(index in nest and nest[-1] != index for nest in self._accumulated.get(name, ()))

    def _one_sample(self, node: ast.AST) -> bool:
        """Whether ``node`` is a batch of one (:func:`syntax.one_sample`), or a name bound to one here."""
        samples = self._frame.samples
        if not samples and (node.__class__ is ast.Name or node.__class__ is ast.Attribute):
            return False  # a name holds one sample only when this body bound it to one
        if node.__class__ is ast.Subscript and samples and dotted_name(node.value) in samples:
            return True  # ``batch[:, :4]``: part of a sample or of a minibatch is no bigger
        if node.__class__ is ast.Subscript and self._small_slice(node.slice):
            return True  # ``x[i:i + 32]``: a minibatch cut by hand
        if (node.__class__ is ast.Call and samples and node.args and getattr(node.func, "attr", None) in ARRAY_FUNCTIONS
                and not samples.isdisjoint(self._read_names(node.args[0], numbers_only=False))):
            return True  # ``np.array(X)``, ``np.array([b[0] for b in batch])``: a minibatch's rows
        return one_sample(node, samples.__contains__)

    def _small_slice(self, index: ast.AST) -> bool:
        """Whether ``index`` cuts at most :data:`MINIBATCH_ROWS` rows: ``i:i + 32``, ``i:i + batch_size``
        (a count the source fixes), ``i * 32:(i + 1) * 32``."""
        part = index.elts[0] if index.__class__ is ast.Tuple and index.elts else index
        if part.__class__ is not ast.Slice or part.lower is None or part.upper is None or part.step is not None:
            return False
        lower, upper = part.lower, part.upper
        if upper.__class__ is ast.BinOp and upper.op.__class__ is ast.Add and ast.dump(upper.left) == ast.dump(lower):
            width = self._count_value(upper.right)  # ``i:i + 32``
        elif (lower.__class__ is ast.BinOp and upper.__class__ is ast.BinOp and lower.op.__class__ is ast.Mult
              and upper.op.__class__ is ast.Mult and ast.dump(lower.right) == ast.dump(upper.right)):
            width = self._count_value(upper.right)  # ``i * 32:(i + 1) * 32``
        else:
            return False
        return width is not None and 0 < width <= MINIBATCH_ROWS

    def _note_samples(self, node: ast.AST, kind: str = "calls") -> None:
        """For the project call just recorded from ``node`` (in a loop): which arguments are one sample
        or change per iteration (:attr:`ProjectCall.samples`, settled when the function is read).
        ``kind``: the facts' list that holds it, ``"calls"`` or ``"deferred_uses"`` (a method called on
        a parameter, :class:`~graphguard.analysis.facts.DeferredUse`)."""
        if not isinstance(node, ast.Call):
            return  # a function handed to a search driver (``study.optimize(objective)``)
        if not self._frame.loops:
            # Outside loops only one sample matters (``self.predict(s.reshape(1, n))`` in a helper).
            ones = ()
            for where, arg in (*enumerate(node.args), *((k.arg, k.value) for k in node.keywords if k.arg)):
                if isinstance(arg, _SAMPLE_NODES) and (arg.__class__ is not ast.Call or maybe_number_or_sample_call(arg)) \
                        and self._one_sample(arg):
                    ones = (*ones, (where, CALLER))
            if ones:
                calls = getattr(self._frame.facts, kind)
                calls[-1] = calls[-1]._replace(samples=ones)
            return
        arguments = []
        for where, arg in (*enumerate(node.args), *((k.arg, k.value) for k in node.keywords if k.arg)):
            if isinstance(arg, (ast.Constant, ast.Starred, ast.Lambda)):
                continue
            names = self._read_names(arg, numbers_only=False)
            one = isinstance(arg, _SAMPLE_NODES) and (arg.__class__ is not ast.Call or maybe_number_or_sample_call(arg)) \
                and self._one_sample(arg)
            # ``learner.update(random.sample(memory, 32))``: a minibatch drawn in the call, per iteration
            one = one or (arg.__class__ is ast.Call and draws_minibatch(arg))
            if names or one:
                arguments.append((where, names, one))
        if arguments:
            position = len(getattr(self._frame.facts, kind)) - 1
            self._defer(lambda frame, p=position, a=tuple(arguments), k=kind: self._settle_samples(frame, p, a, k))

    def _settle_samples(self, frame, position: int, arguments: tuple, kind: str = "calls") -> None:
        calls = getattr(frame.facts, kind)
        call = calls[position]
        samples = []
        for where, names, one in arguments:
            index = self._varying_index(names, call.loops) if names else None
            if index is None and one:
                index = call.loops[-1]
            if index is not None:
                samples.append((where, index))
        if samples:
            calls[position] = call._replace(samples=tuple(samples))
