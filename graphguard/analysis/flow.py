"""Phase 1, the reader's control flow: which parts of a body repeat, and for which loops.

A mixin of :class:`graphguard.analysis.reader.ModuleReader` (it uses the reader's frames, scopes and
facts): ``for``/``while`` loops and comprehensions (the first iterable evaluated once, the rest per
iteration; how many times a loop runs, :meth:`~graphguard.analysis.resolution.Resolver._trips`), the
*exemptions* that stop enclosing loops from repeating what is under them (a fresh graph entered with
``with tf.Graph().as_default():``, a once-guard ``if self._op is None:``, ``if step == k:`` on a loop
counter, a retry loop that ends in ``break``), and ``try`` statements (the body is the normal path).
"""

from __future__ import annotations

import ast

from graphguard.analysis.bindings import GraphValue, InitParam, Param, TFName
from graphguard.analysis.catalog import Effect
from graphguard.analysis.facts import CALLER, EVERY, FLAG, Loop, Retention

#: What a comprehension whose element is the construction itself makes one of per element, to keep
#: (a new Keras optimizer, a ``tf.function``): a collection, not a rebuild.
_KEPT_PER_ELEMENT = frozenset({Effect.RECOMPILE, Effect.NEW_FUNCTION})
from graphguard.analysis.syntax import (
    collected_calls,
    initializes_each,
    looks_up_by,
    work_list,
    waits_for_a_person,
    assigned_targets,
    callee_text,
    closes_writer,
    dotted_name,
    ends_in_break,
    guarded_target,
    is_as_default,
    is_once_guard,
    TENSOR_PREDICATES,
    names_a_graph,
    names_tensor_types,
    short,
)

#: The trip count taken for a loop that waits for a person on every iteration
#: (:func:`~graphguard.analysis.syntax.waits_for_a_person`): a handful.
PERSON_PACED = 3


class FlowReader:
    """Loops, exemptions and ``try`` (mixed into the reader)."""

    def visit_Try(self, node: ast.Try) -> None:
        """The ``try`` body is the normal path: a name it binds keeps that binding after handlers that
        bind it again (``try: from .fast import pred`` / ``except ImportError: from .slow import pred``
        calls the fast one, as it does wherever the import works)."""
        for statement in node.body:
            self.visit(statement)
        scope = self._frame.scope
        after_body = dict(scope) if node.handlers else None
        for handler in node.handlers:
            self.visit(handler)
        if after_body is not None:
            for name, value in after_body.items():
                if scope.get(name) is not value:
                    scope[name] = value
        for statement in node.orelse:
            self.visit(statement)
        for statement in node.finalbody:
            self.visit(statement)

    visit_TryStar = visit_Try

    # ------------------------------------------------------------------ loops

    def _new_loop(self, node: ast.AST) -> Loop:
        loop = Loop(len(self.facts.loops), node.lineno, self._column(node.lineno, node.col_offset))
        self.facts.loops.append(loop)
        return loop

    def _in_loop(self, loop: Loop, parts) -> None:
        frame = self._frame
        frame.loops.append(loop)
        # ``for attempt in range(3): try: ...; break`` runs its body to the end once: what it builds
        # is not repeated (a retry loop repeats only after a failure).
        once = ends_in_break(parts[-1])
        if once:
            frame.exempt.append(frozenset({loop.index}))
        made, checked = len(frame.facts.constructions), len(frame.facts.eager_checks)
        for part in parts:
            if isinstance(part, list):
                for statement in part:
                    self.visit(statement)
            elif part is not None:
                self.visit(part)
        if once:
            frame.exempt.pop()
        frame.loops.pop()
        if len(frame.facts.constructions) > made:
            self._closed_writers(loop, parts[-1], made)
        if isinstance(parts[-1], list) and (len(frame.facts.constructions) > made or len(frame.facts.eager_checks) > checked):
            kept = collected_calls(parts[-1])
            for call in kept:
                # ``for p in params: opt = Adam(p["lr"]); opts.append(opt)``: one optimizer per
                # element, each kept, as the comprehension makes them (first contact: an optimizer list
                # built once before a grid search, read as GG305 seven times)
                self._one_per_element(loop, self._site(call), made, checked)

    def _closed_writers(self, loop: Loop, body, made: int) -> None:
        """A ``FileWriter`` made on each iteration and closed in that iteration (``with
        tf.summary.FileWriter(...) as w:``, or ``w = ...`` then ``w.close()``) leaves no thread or file
        open and adds no op: no loop around it, nor a caller's, accumulates anything (first contact:
        one writer per metric, each closed, read as GG110)."""
        constructions = self._frame.facts.constructions
        for position in range(made, len(constructions)):
            construction = constructions[position]
            if construction.effect is not Effect.FILE_WRITER or not construction.loops \
                    or construction.loops[-1] != loop.index or not isinstance(body, list):
                continue
            if closes_writer(body, construction.site.row):
                constructions[position] = construction._replace(
                    exempt=construction.exempt | frozenset(construction.loops) | {CALLER})

    def visit_For(self, node: ast.For) -> None:
        self.visit(node.iter)  # evaluated once
        elements = self._elements(node.iter)
        self._bind(node.target, None if elements is None else elements.element)
        for name in assigned_targets([ast.Assign(targets=[node.target], value=node.iter)]):
            self._frame.numbers.discard(name)
            self._frame.targets.add(name)
        self._note_loop_numbers(node)
        self._note_batch_loop(node.iter, node.target)
        loop = self._new_loop(node)
        self._frame.loops.append(loop)
        self._note_loop_bind(node.target, own=loop.index)  # the target changes per iteration
        self._for_nodes[loop.index] = node
        self._frame.loops.pop()
        if self._frame.samples or (node.iter.__class__ is ast.Call and self.keras):
            self._note_sample_loop(loop, node.iter, node.target)
        loop.trips = self._trips(node.iter)
        if loop.trips is None:
            self._note_over(loop, node.iter)
        # ``for t in range(n):`` takes each value once: ``if t == k:`` in its body holds on one iteration.
        counters = [(counter, loop, node.body) for counter in _stepped_counters(node.body)]
        if isinstance(node.target, ast.Name) and _is_range(node.iter):
            counters.append((node.target.id, loop, None))
        elif (isinstance(node.target, ast.Tuple) and node.target.elts and isinstance(node.target.elts[0], ast.Name)
              and isinstance(node.iter, ast.Call) and getattr(node.iter.func, "id", None) == "enumerate"):
            counters.append((node.target.elts[0].id, loop, None))  # ``for i, batch in enumerate(batches):``
        self._counters.extend(counters)
        self._in_loop(loop, (node.body,))
        del self._counters[len(self._counters) - len(counters):]
        if (loop.trips is None and self.lookups and node.target.__class__ is ast.Name
                and looks_up_by(node.body, node.target.id)):
            # ``for name in names: t = graph.get_tensor_by_name(name)``: the loop walks the graph's or the
            # model's structure by name, one element each, whatever the list: one-shot setup.
            loop.trips = 1
        if loop.trips is None and node.target.__class__ is ast.Name and initializes_each(node.body, node.target.id):
            loop.trips = 1  # ``for v in var_list: sess.run(tf.variables_initializer([v]))``: one per variable
            self._walks.add(id(node))
        if loop.trips is None and waits_for_a_person(None, node.body):
            loop.trips = PERSON_PACED
        for statement in node.orelse:
            self.visit(statement)

    visit_AsyncFor = visit_For

    def visit_While(self, node: ast.While) -> None:
        loop = self._new_loop(node)
        counters = [(counter, loop, node.body) for counter in _stepped_counters(node.body)]
        self._counters.extend(counters)
        self._in_loop(loop, (node.test, node.body))
        del self._counters[len(self._counters) - len(counters):]
        if waits_for_a_person(node.test, node.body):
            loop.trips = PERSON_PACED
        elif work_list(node.test, node.body, self._walks):
            loop.trips = 1  # ``while remaining: for v in remaining: ...; remaining = retry``: a pass per level
        for statement in node.orelse:
            self.visit(statement)

    def _comprehension(self, node, elements) -> None:
        # The first iterable runs once in the enclosing scope; the rest runs per iteration.
        generators = node.generators
        self.visit(generators[0].iter)
        loop = self._new_loop(node)
        trips = 1
        self._frame.loops.append(loop)
        for index, generator in enumerate(generators):
            if index:
                self.visit(generator.iter)
            container = self._elements(generator.iter)
            self._bind(generator.target, None if container is None else container.element)
            self._note_loop_bind(generator.target, own=loop.index)
            self._note_batch_loop(generator.iter, generator.target)
            count = self._trips(generator.iter)
            if count is None and index == 0 and len(generators) == 1:
                self._note_over(loop, generator.iter)
            trips = None if trips is None or count is None else trips * count
            for condition in generator.ifs:
                self.visit(condition)
        loop.trips = trips
        facts = self._frame.facts
        made, checked = len(facts.constructions), len(facts.eager_checks)
        for element in elements:
            self.visit(element)
        if elements[-1].__class__ is ast.Call and not isinstance(node, ast.GeneratorExp):
            self._one_per_element(loop, self._site(elements[-1]), made, checked)
        if not isinstance(node, ast.GeneratorExp):
            # ``[train(u) for u in units]``: the result keeps every iteration's model. Only values
            # that count without a use (what a project function returns, graphs, sessions): a
            # comprehension of bare constructors makes the blocks of one model.
            # In a Keras model's ``__init__`` (``self.blocks = [make_block(d) for _ in range(depth)]``,
            # ``Sequential([*[rnn(units) for _ in range(layers)]])``) the elements are the blocks of
            # that one model, made once per instance: a pass over the model's structure.
            owner, _, method = self._frame.facts.name.rpartition(".")
            made = None if method == "__init__" and owner in self._keras_classes else self._model_value(elements[-1])
            if made is not None and made.always and loop.index in made.loops:
                self._frame.pending_retentions.append(
                    (Retention(self._site(node), short(ast.unparse(node)), made.subject, loop.index, made.refs), None, None,
                     True))
        self._frame.loops.pop()

    def _one_per_element(self, loop: Loop, site, made: int, checked: int) -> None:
        """``self.optimizers = [Adam(lr) for _ in models]``: a comprehension whose elements are new
        optimizers or ``tf.function`` objects makes a collection, one object per element, each kept and
        needed: it does not repeat a construction. Loops around the comprehension still do."""
        facts = self._frame.facts
        exempt = frozenset({loop.index})
        for start, items in ((made, facts.constructions), (checked, facts.eager_checks)):
            for position in range(start, len(items)):
                item = items[position]
                construction = item if items is facts.constructions else item[0]
                if construction.site == site and construction.effect in _KEPT_PER_ELEMENT:
                    construction = construction._replace(exempt=construction.exempt | exempt)
                    items[position] = construction if items is facts.constructions else (construction, *item[1:])

    def visit_ListComp(self, node: ast.ListComp) -> None:
        self._comprehension(node, (node.elt,))

    visit_SetComp = visit_GeneratorExp = visit_ListComp

    def visit_DictComp(self, node: ast.DictComp) -> None:
        self._comprehension(node, (node.key, node.value))

    # ------------------------------------------------------------------ exemptions: fresh graphs, once-guards

    def _exemption(self) -> frozenset:
        """The loops whose iterations are not repeated from here: every loop in the current stack, or
        the caller's loop (:data:`CALLER`) when the exemption is made at function level."""
        loops = self._frame.loops
        return frozenset(loop.index for loop in loops) if loops else frozenset({CALLER})

    def visit_With(self, node: ast.With) -> None:
        pushed = 0
        reuse = 0
        for item in node.items:
            self.visit(item.context_expr)
            if self._reuses_variables(item.context_expr):
                reuse += 1
            value = self.resolve(item.context_expr)
            fresh = value if isinstance(value, GraphValue) and is_as_default(item.context_expr) else None
            if fresh is not None and isinstance(item.context_expr.func.value, ast.Attribute) \
                    and dotted_name(item.context_expr.func.value) not in self._frame.assigned:
                # ``with self.graph.as_default():`` in a method, the graph made once in ``__init__``:
                # re-entering a long-lived graph, where ops accumulate, is not a fresh graph.
                fresh = None
            if fresh is None and isinstance(item.context_expr, ast.Call):
                # ``with tf.Session(graph=g):`` and ``with self.session(graph=tf.Graph()):`` enter the
                # session's graph as the default graph (Session.__enter__ calls graph.as_default()).
                for keyword in item.context_expr.keywords:
                    if keyword.arg == "graph" and isinstance(self.resolve(keyword.value), GraphValue):
                        fresh = self.resolve(keyword.value)
            if fresh is not None:
                # Ops built under this graph are fresh for every loop enclosing the graph's creation.
                self._frame.exempt.append(fresh.loops or frozenset({CALLER}))
                pushed += 1
            elif value is None and is_as_default(item.context_expr) and names_a_graph(item.context_expr.func.value):
                # ``with self._tf_graph.obj.as_default():``: the object's own graph, held where the
                # analysis cannot follow. Its ops do not go to the caller's default graph (as for a
                # graph attribute it can follow); loops in this function still repeat them.
                self._frame.exempt.append(frozenset({CALLER}))
                pushed += 1
            if item.optional_vars is not None:
                self._bind(item.optional_vars, value)
                self._note_made((item.optional_vars,), item.context_expr)  # ``with tf.Graph().as_default() as g:``
        saved = self._reuse_depth
        self._reuse_depth += reuse
        graphs = self._frame.graphs
        if pushed or any(is_as_default(item.context_expr) for item in node.items):
            self._frame.graphs += 1  # ops in the block go to a graph, even in eager code
        for statement in node.body:
            self.visit(statement)
        self._frame.graphs = graphs
        self._reuse_depth = saved  # a ``scope.reuse_variables()`` in the block ends with it
        del self._frame.exempt[len(self._frame.exempt) - pushed:]

    def _reuses_variables(self, node: ast.AST) -> bool:
        """``tf.variable_scope(..., reuse=tf.AUTO_REUSE)`` or ``reuse=True``: ``get_variable`` inside
        returns the existing variable and adds no op (measured on TF 2.21: 0 ops on reuse)."""
        if not isinstance(node, ast.Call):
            return False
        func = self.resolve(node.func)
        if not isinstance(func, TFName) or func.path != "tf.variable_scope":
            return False
        return self._passes_reuse(node)

    def _passes_reuse(self, node: ast.Call) -> bool:
        """Whether call ``node`` passes ``reuse=True`` or ``reuse=tf.AUTO_REUSE``: to a variable scope, or
        to a project helper that hands it to one (``generator(z, reuse=True)``, the TF1 idiom for a second
        tower on the same weights), whose ``get_variable`` then returns the existing variables. A helper
        that ignores it makes a second ``get_variable`` of a name fail ("Variable ... already exists"),
        not grow the graph."""
        for keyword in getattr(node, "keywords", ()):  # (a function's name handed to a driver: no call)
            if keyword.arg == "reuse":
                value = self.resolve(keyword.value)
                if isinstance(value, TFName) and value.path == "tf.AUTO_REUSE":
                    return True
                return isinstance(keyword.value, ast.Constant) and keyword.value.value is True
        return False

    visit_AsyncWith = visit_With

    def _counter_exemption(self, test: ast.AST, body: list = ()) -> frozenset | None:
        """``if t == k:`` (or ``k == t``) where ``t`` counts an enclosing ``for t in range(...)`` and ``k``
        does not mention it: the body runs on one iteration of that loop (``if step == decay_at:``), so
        that loop and the loops inside it do not repeat it; loops around it still do. Not when ``body``
        sets ``t`` again (``if updates == 4: train(); updates = 0``): that runs on every ``k``-th
        iteration (:meth:`_every`)."""
        if not (isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], ast.Eq)):
            return None
        for name, other in ((test.left, test.comparators[0]), (test.comparators[0], test.left)):
            if not isinstance(name, ast.Name) or any(isinstance(n, ast.Name) and n.id == name.id for n in ast.walk(other)):
                continue
            if body and _resets(body, name.id):
                return None
            for counter, loop, stepped_in in reversed(self._counters):
                if counter == name.id:
                    loops = self._frame.loops
                    if loop in loops and (stepped_in is None or not _may_skip(stepped_in)):
                        return frozenset(l.index for l in loops[loops.index(loop):])
                    break
        return None

    def _every(self, test: ast.AST, body: list = ()) -> frozenset | None:
        """``if i % k == c:`` (also ``not i % k``, ``(i + 1) % k == 0``) where ``i`` is the variable of an
        enclosing ``for`` over a ``range`` or a counter its body steps, and ``k`` an int the source fixes:
        the body runs on every ``k``-th iteration of that loop (``if epoch % save_every == 0:``). An
        exemption that only scales the loop's count (:func:`fixpoint.bounded`); None otherwise."""
        if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
            modulo = test.operand
        elif (isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], ast.Eq)
              and isinstance(test.comparators[0], ast.Constant)):
            modulo = test.left
            if isinstance(modulo, ast.Name) and body and _resets(body, modulo.id):
                # ``if updates == 4: train(); updates = 0`` with ``updates += 1`` per iteration: every 4th
                return self._every_kth(modulo.id, test.comparators[0])
        else:
            return None
        if not (isinstance(modulo, ast.BinOp) and isinstance(modulo.op, ast.Mod)):
            return None
        counted = modulo.left
        if isinstance(counted, ast.BinOp) and isinstance(counted.op, (ast.Add, ast.Sub)) and isinstance(counted.right, ast.Constant):
            counted = counted.left  # ``(epoch + 1) % 10``
        if not isinstance(counted, ast.Name):
            return None
        return self._every_kth(counted.id, modulo.right)

    def _every_kth(self, name: str, period: ast.AST) -> frozenset | None:
        """The exemption for a body that runs on every ``period``-th value of the counter ``name`` of an
        enclosing loop (``period`` an int of at least 2 the source fixes); None otherwise."""
        if not self._counters:
            return None
        k = self._count_value(period)
        if k is None or k < 2:
            return None
        for counter, loop, _ in reversed(self._counters):
            if counter == name:
                return frozenset({(EVERY, loop.index, k)}) if loop in self._frame.loops else None
        return None

    def _guard_filled_by_method(self, node: ast.If) -> bool:
        """``if not hasattr(self, "fn"): self.build_fn(...)`` where ``build_fn``, a method of the same
        class, assigns ``self.fn``: a once-guard whose body fills its target through a call."""
        target = guarded_target(node.test)
        methods = self._class_methods.get(self._frame.class_name) if self._frame.class_name else None
        if not methods or target is None or not target.startswith("self."):
            return False
        for statement in node.body:
            call = statement.value if isinstance(statement, (ast.Expr, ast.Assign)) else None
            if (isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute)
                    and isinstance(call.func.value, ast.Name) and call.func.value.id == "self"
                    and call.func.attr in methods and target in assigned_targets(methods[call.func.attr].body)):
                return True
        return False

    def _tensor_branch(self, test: ast.AST) -> str:
        """Which branch of ``if test:`` runs only when a parameter holds a TensorFlow tensor: ``"body"``
        for ``isinstance(p, tf.Tensor)``, ``tf.is_tensor(p)`` or a predicate of this module that returns
        such a test of its argument (``is_tf_expression(p)``); ``"orelse"`` for their negation; ``""``
        otherwise."""
        negated = isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not)
        if negated:
            test = test.operand
        if not (isinstance(test, ast.Call) and test.args and isinstance(test.args[0], ast.Name)
                and isinstance(self.resolve(test.args[0]), Param)):
            return ""
        func = test.func
        if isinstance(func, ast.Name) and func.id == "isinstance":
            tested = len(test.args) == 2 and names_tensor_types(test.args[1])
        else:
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            tested = name in TENSOR_PREDICATES or (isinstance(func, ast.Name) and func.id in self._tensor_tests)
        if not tested:
            return ""
        return "orelse" if negated else "body"

    def _flag_test(self, test: ast.expr) -> tuple[str, bool] | None:
        """``(parameter, truth)`` when ``test`` reads the truth of one of the function's parameters,
        still bound to what the caller passed (``if is_training:``, ``if not reuse:``), or of an
        attribute the function set from one (``self.dueling = dueling`` then ``if self.dueling:``)."""
        flag = _flag_of(test)
        if flag is None or self._frame.facts.name == "<module>":
            return None
        value = self.resolve(flag[0])
        if isinstance(value, InitParam) and self._frame.facts.name == f"{value.cls}.__init__":
            value = Param(value.name)  # ``self.dueling = dueling`` above it in ``__init__``: the parameter
        return (value.name, flag[1]) if isinstance(value, Param) and value.name in self._frame.params else None

    def visit_IfExp(self, node: ast.IfExp) -> None:
        """``sess.run(init) if step == 0 else None``: the conditional expression's branches are guarded as
        an ``if`` statement's are, by a counter test (one iteration) or an every-``k``-th test."""
        self.visit(node.test)
        counted = self._counter_exemption(node.test)
        every = None if counted is not None or self._frame.facts.traced else self._every(node.test)
        guard = counted if counted is not None else every
        if guard is not None:
            self._frame.exempt.append(guard)
        self.visit(node.body)
        if guard is not None:
            self._frame.exempt.pop()
        self.visit(node.orelse)

    def visit_If(self, node: ast.If) -> None:
        self.visit(node.test)
        if self._never_true(node.test):
            for statement in node.orelse:  # ``if TUNING:`` after ``TUNING = False``: the body never runs
                self.visit(statement)
            return
        counted = self._counter_exemption(node.test, node.body)  # the precise form of `if step == 0:` for a counter
        once = counted is None and (is_once_guard(node.test, node.body) or self._guard_filled_by_method(node))
        if counted is not None:
            self._frame.exempt.append(counted)
            once = True
        elif once:
            self._frame.exempt.append(self._exemption())
        # ``if is_tensor(value): <build>`` in a helper called in a loop with Python numbers: the branch
        # never runs for that caller (a summary helper that takes a tensor while the graph is built, a
        # number per step). The caller's loop does not repeat what the tensor branch builds.
        tensor_branch = "" if once else self._tensor_branch(node.test)
        every = None if once or tensor_branch or self._frame.facts.traced else self._every(node.test, node.body)
        self._frame.branches.append(len(self._frame.loops))
        flag = None if once else self._flag_test(node.test)
        for branch, statements in (("body", node.body), ("orelse", node.orelse)):
            guarded = branch == tensor_branch
            if guarded:
                self._frame.exempt.append(frozenset({CALLER}))
            if every is not None and branch == "body":
                self._frame.exempt.append(every)
            if flag is not None:
                self._frame.exempt.append(frozenset({(FLAG, flag[0], flag[1] == (branch == "body"))}))
            for statement in statements:
                self.visit(statement)
            if flag is not None:
                self._frame.exempt.pop()
            if guarded or (every is not None and branch == "body"):
                self._frame.exempt.pop()
            if branch == "body" and once:
                self._frame.exempt.pop()
        self._frame.branches.pop()


def _resets(body: list, name: str) -> bool:
    """Whether ``body`` sets ``name`` anew (``name = 0``; not ``name += 1``)."""
    for statement in body:
        for node in ast.walk(statement):
            if node.__class__ is ast.Assign and any(
                    target.__class__ is ast.Name and target.id == name for target in node.targets):
                return True
    return False


def flag_defaults(params: ast.arguments) -> tuple:
    """``(parameter, truth)`` of the parameters whose default is ``True``, ``False`` or ``None``
    (:attr:`graphguard.analysis.facts.FunctionFacts.flag_defaults`)."""
    positional = (*params.posonlyargs, *params.args)
    defaults = [*([None] * (len(positional) - len(params.defaults))), *params.defaults, *params.kw_defaults]
    return tuple((param.arg, bool(default.value)) for param, default in zip((*positional, *params.kwonlyargs), defaults)
                 if default.__class__ is ast.Constant and default.value.__class__ in (bool, type(None)))


def _flag_of(test: ast.expr) -> tuple[ast.expr, bool] | None:
    """``(operand, truth)`` for a test that reads one name's or attribute's truth: ``p`` (True), ``not
    self.p`` (False)."""
    truth = True
    if test.__class__ is ast.UnaryOp and test.op.__class__ is ast.Not:
        test, truth = test.operand, False
    if test.__class__ is ast.Name or (test.__class__ is ast.Attribute and test.value.__class__ is ast.Name):
        return test, truth
    return None


def _stepped_counters(body: list) -> list:
    """Names that a loop body increases as a statement of its own (``iter += 1``, not under an ``if``).
    When the body has no ``continue`` that could skip it (:func:`_may_skip`, checked where a test
    consults the counter), such a name takes each value once, so ``if iter == step_size + 1:`` holds on
    one iteration (a learning-rate drop, a snapshot)."""
    return [statement.target.id for statement in body
            if statement.__class__ is ast.AugAssign and statement.op.__class__ is ast.Add
            and statement.target.__class__ is ast.Name and statement.value.__class__ is ast.Constant
            and type(statement.value.value) is int and statement.value.value > 0]


def _may_skip(body: list) -> bool:
    """Whether a loop body holds a ``continue`` of its own outside ``except`` clauses (the error path)."""
    return any(isinstance(node, ast.Continue) for statement in body for node in _same_loop(statement))


def _same_loop(node: ast.AST):
    """The nodes of a loop body's statement that belong to that loop (not to loops or functions inside),
    outside ``except`` clauses."""
    stack = [node]
    while stack:
        node = stack.pop()
        yield node
        for child in ast.iter_child_nodes(node):
            if not isinstance(child, (ast.For, ast.AsyncFor, ast.While, ast.FunctionDef, ast.AsyncFunctionDef,
                                      ast.Lambda, ast.ClassDef, ast.ExceptHandler)):
                stack.append(child)


def _is_range(node: ast.AST) -> bool:
    """``range(...)`` (or ``xrange``, ``six.moves.range``): an iterable whose values are all distinct."""
    return isinstance(node, ast.Call) and callee_text(node.func).rsplit(".", 1)[-1] in ("range", "xrange")
