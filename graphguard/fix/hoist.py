"""Loop-invariant hoisting: move graph construction that repeats in a session loop to just before it
(before the outermost loop around it that repeats it unchanged: :func:`propose`).

For one finding (GG101-GG107, GG110) this module reads the file with libcst, finds the loop and the
reported expression by their positions, and proposes a :class:`~graphguard.fix.edits.Fix`:

- **statement move**: the finding is the whole value of a top-level ``name = <expr>`` statement of the
  loop body, ``name`` is assigned nowhere else in the loop and not read before it: the statement moves
  to just before the loop (``saver = tf.train.Saver()``, the demo's model, losses and train op);
- **fresh name**: otherwise ``<fresh> = <expr>`` is inserted just before the loop and the expression
  in the loop reads ``<fresh>`` (``accuracy = tf.reduce_mean(...)`` for an op inside ``sess.run``).

A proposal is made only when the expression is *loop-invariant*: every name it reads is assigned
nowhere in the loop (the loop target, ``case`` captures and globals rebound by functions of the file
included), no attribute or item of those names is assigned, deleted or changed in place
(``y.append(...)``) in it, and it calls nothing but TensorFlow graph builders, pure builtins and
helpers of the same file that build nothing but ops (:meth:`~graphguard.fix.source.File.builds_only`).
It is **safe** when, in addition, nothing could change what the moved code sees or whether it runs.
It is **unsafe** (``--unsafe-fixes``) when it calls such a helper, a method that creates variables
(``opt.minimize``), reads an object a method called in the loop may change, runs only under a
condition on its own inputs (``if y is not None``), or sits in a ``try`` block. Loops that reset or
replace the default graph or call ``exec``/``globals()``, code under a ``with`` inside the loop (a
name scope, a device, control dependencies), comprehensions, nested functions, a helper called for
its effect and variable creators such as ``tf.get_variable`` are never changed: the finding stays,
without a fix.

libcst keeps every comment and blank line (``graphguard check`` itself runs on :mod:`ast`; this module
is imported only when fixes are asked for).
"""

from __future__ import annotations

import builtins
import functools
import re
from dataclasses import dataclass, field
from typing import Optional

import libcst as cst

from graphguard.analysis.catalog import Effect, effect_of
from graphguard.fix.edits import FIXABLE_CODES, SAFE, UNSAFE, WAITS_FOR_OTHERS, Edit, Fix
from graphguard.fix import source
from graphguard.fix.source import MUTATORS, PURE_BUILTINS, File, Region
from graphguard.fix.safety import (
    CAPTURING as _CAPTURING,
    CAPTURING_NAMES as _CAPTURING_NAMES,
    adds_to_collections,
    earlier_value_read_after,
    per_instance,
    savers_to_keep_all,
    with_keep_all,
    reads_collections as _reads_collections,
    tf_name,
)
from graphguard.fix.anchor import hoist_point
from graphguard.fix.reads import (
    GRAPH_CHANGERS as _GRAPH_CHANGERS,
    VARIABLE_METHODS as _VARIABLE_METHODS,
    WORDS as _WORDS,
    NotFixable as _NotFixable,
    Reads as _Reads,
    Varies as _Varies,
    Walled as _Walled,
    expression_reads as _reads,
    free_name,
    makes_variables as _makes_variables,
    slotless as _slotless,
    word as _word,
)

#: The codes this module proposes fixes for (GG201: :mod:`graphguard.fix.keras`; GG303:
#: :mod:`graphguard.fix.predict`).
CODES = FIXABLE_CODES - {"GG201", "GG303"}

@dataclass
class _LoopFacts:
    """What the loop assigns, deletes and calls (nested functions and comprehensions excluded)."""

    names: set = field(default_factory=set)
    attribute_roots: set = field(default_factory=set)  #: names whose attribute or item is assigned/deleted
    method_roots: set = field(default_factory=set)  #: names a method is called on
    changes_graph: bool = False
    rebinds_anything: bool = False  #: exec, globals(), setattr...: any name may change
    with_blocks: list = field(default_factory=list)
    #: names handed to a call that may change them in place (``np.random.shuffle(data)``,
    #: ``np.multiply(w, 2, out=w)``, ``decay(cfg)``): not a TensorFlow builder, a session run or a
    #: builtin that only reads
    passed: set = field(default_factory=set)
    #: ``a = b`` in the loop: both names hold one object, so a change through one is a change of both
    aliases: list = field(default_factory=list)
    #: it calls something of this file or another module (a function, a method): a global rebound by
    #: any function of the file may change
    calls_code: bool = False
    #: names changed by an augmented assignment (``v += 1``, ``cfg |= {...}``): in place, for a list, a
    #: dict or a NumPy array
    augmented: set = field(default_factory=set)


def _loop_facts(module: Region, loop: cst.CSTNode) -> _LoopFacts:
    facts = _LoopFacts()

    def target(node: cst.CSTNode) -> None:
        if isinstance(node, cst.Name):
            facts.names.add(node.value)
        elif isinstance(node, (cst.Tuple, cst.List)):
            for element in node.elements:
                target(element.value)
        elif isinstance(node, cst.StarredElement):
            target(node.value)
        elif isinstance(node, (cst.Attribute, cst.Subscript)):
            root = source.root(node)
            if root is not None:
                facts.attribute_roots.add(root)

    def visit(node: cst.CSTNode) -> None:
        kind = type(node)
        if kind not in _LOOP_FACT_NODES:  # most nodes (names, whitespace, operators): only their children
            for child in children(node):
                visit(child)
            return
        if isinstance(node, (cst.FunctionDef, cst.ClassDef)):
            facts.names.add(node.name.value)
            return
        if isinstance(node, (cst.Lambda, cst.ListComp, cst.SetComp, cst.DictComp, cst.GeneratorExp)):
            return
        if isinstance(node, cst.Assign):
            for t in node.targets:
                target(t.target)
                if isinstance(t.target, cst.Name) and isinstance(node.value, (cst.Name, cst.Attribute)):
                    aliased = source.root(node.value)
                    if aliased is not None:
                        facts.aliases.append((t.target.value, aliased))
        elif isinstance(node, (cst.AugAssign, cst.AnnAssign)):
            target(node.target)
            if isinstance(node, cst.AugAssign) and isinstance(node.target, cst.Name):
                facts.augmented.add(node.target.value)  # `v += 1` changes v's object when it is mutable
        elif isinstance(node, (cst.For,)):
            target(node.target)
        elif isinstance(node, cst.NamedExpr):
            target(node.target)
        elif isinstance(node, cst.Del):
            target(node.target)
        elif isinstance(node, cst.WithItem) and node.asname is not None:
            target(node.asname.name)
        elif isinstance(node, cst.ExceptHandler) and node.name is not None:
            target(node.name.name)
        elif isinstance(node, (cst.MatchAs, cst.MatchStar)) and node.name is not None:
            target(node.name)  # `case w:` binds w
        elif isinstance(node, cst.MatchMapping) and node.rest is not None:
            target(node.rest)
        elif isinstance(node, (cst.Import, cst.ImportFrom)) and not isinstance(getattr(node, "names", None), cst.ImportStar):
            for alias in node.names:
                name = alias.asname.name if alias.asname is not None else alias.name
                facts.names.add(source.dotted(name).split(".")[0] if source.dotted(name) else "")
        elif isinstance(node, (cst.Global, cst.Nonlocal)):
            for item in node.names:
                facts.names.add(item.name.value)
        elif isinstance(node, cst.With) and node is not loop:
            facts.with_blocks.append(node)
        elif isinstance(node, cst.Call):
            dotted = source.dotted(node.func)
            _note_passed(module, node, dotted, facts)
            if isinstance(node.func, cst.Attribute):
                root = source.root(node.func.value)
                if root is not None and root not in module.aliases and node.func.attr.value not in ("run", "eval"):
                    facts.method_roots.add(root)  # `self.sess.run(...)` runs the graph: it changes no Python value
                    if node.func.attr.value in MUTATORS and isinstance(node.func.value, cst.Name):
                        facts.attribute_roots.add(root)  # y.append(1): y's contents change in the loop
            if isinstance(node.func, cst.Name):
                if node.func.value in ("exec", "globals", "vars", "setattr", "delattr", "locals"):
                    facts.rebinds_anything = True
                else:  # a function of this file that rebinds globals (`global y; y = ...`)
                    facts.names |= module.file.globals_set(node.func.value)
            if dotted is not None:
                name = tf_name(module, node)
                if name is not None and (name in _GRAPH_CHANGERS or name.endswith(("set_random_seed", "random.set_seed"))):
                    facts.changes_graph = True  # a seed set per iteration: random ops built later differ
            if isinstance(node.func, cst.Attribute) and node.func.attr.value in ("__enter__", "__exit__"):
                facts.changes_graph = True  # a context entered by hand: a device or scope, maybe
        for child in children(node):
            visit(child)

    children = module.children
    visit(loop)
    return facts


#: The node types :func:`_loop_facts` notes something about (libcst's parser makes these exact types).
_LOOP_FACT_NODES = frozenset({
    cst.FunctionDef, cst.ClassDef, cst.Lambda, cst.ListComp, cst.SetComp, cst.DictComp, cst.GeneratorExp,
    cst.Assign, cst.AugAssign, cst.AnnAssign, cst.For, cst.NamedExpr, cst.Del, cst.WithItem, cst.ExceptHandler,
    cst.MatchAs, cst.MatchStar, cst.MatchMapping, cst.Import, cst.ImportFrom, cst.Global, cst.Nonlocal, cst.With,
    cst.Call})


#: Builtins that only read their arguments.
_READING_BUILTINS = PURE_BUILTINS | {"print", "repr", "format", "isinstance", "type", "id", "hash", "sum", "any",
                                     "all", "sorted", "list", "dict", "set", "enumerate", "zip", "iter", "next",
                                     "reversed", "map", "filter", "open", "divmod", "pow", "hasattr", "getattr"}


def _note_passed(module: Region, call: cst.Call, dotted: Optional[str], facts: _LoopFacts) -> None:
    """Record in ``facts`` the names ``call`` is handed (arguments, or the receiver of a method of
    another module's object) when the call may change them in place: anything but a TensorFlow
    builder, a session ``run``/``eval`` or a builtin that only reads."""
    if dotted is not None:
        if tf_name(module, call) is not None:
            return  # a TensorFlow name: it builds ops from its inputs and changes no Python value
        imported = module.aliases.get(dotted.partition(".")[0])
        if imported is None and "." not in dotted and dotted in _READING_BUILTINS:
            return
        if "." in dotted and dotted.rsplit(".", 1)[1] in ("run", "eval"):
            return  # a session run: its feeds are read
        if imported is None:
            facts.calls_code = True
    else:
        facts.calls_code = True
    for arg in call.args:
        for name in source.names_in(arg.value):
            if name.value not in ("True", "False", "None"):  # constants: nothing changes them
                facts.passed.add(name.value)


def _fresh(module: Region, expr: cst.BaseExpression, reads: _Reads) -> str:
    """A readable name for the hoisted value, used nowhere in the file: ``argmax_op``, ``saver``,
    ``init_op``, ``loss_times_op``."""
    if isinstance(expr, cst.Call):
        last = reads.tf_calls[0].rsplit(".", 1)[-1] if reads.tf_calls and source.dotted(expr.func) else _word(expr.func)
        if last == "Saver":
            candidates = ["saver", "checkpoint_saver"]
        elif last.endswith(("initializer", "initialize_all_variables", "initialize_local_variables")):
            candidates = ["local_init_op" if "local" in last else "init_op"]
        elif last == "merge_all":
            candidates = ["summary_op"]
        else:
            candidates = [re.sub(r"(?<!^)(?=[A-Z])", "_", last).lower() + "_op"]
    elif isinstance(expr, cst.BinaryOperation):
        candidates = [f"{_word(expr.left)}_{_WORDS.get(type(expr.operator), 'op')}_op"]
    elif isinstance(expr, cst.Subscript):
        candidates = [f"{_word(expr.value)}_item_op"]
    else:
        candidates = ["hoisted_op"]
    return free_name(module, candidates)


def _short(code: str) -> str:
    line = code.strip().splitlines()[0] if code.strip() else code
    return line if len(line) <= 40 else line[:37] + "..."


def propose(file: File, row: int, column: int, end_row: int, end_column: int,
            loop_row: int, loop_column: int, through: bool = False, pass_moves: Optional[dict] = None,
            outer_row: int = 0) -> Fix:
    """The fix for the expression at ``(row, column)``-``(end_row, end_column)`` (1-based, end
    exclusive) repeated by the loop at ``(loop_row, loop_column)``; ``through``: the finding is a
    call to a helper that builds the ops (the call is then not trusted to do only that). ``pass_moves``
    carries the statements moved by earlier proposals of the same pass (``{(loop, name): (anchor,
    fix)}``): a statement reading such a name may move too, after it, so a chain (model, losses, train
    op) moves in one pass. Raises :class:`_NotFixable`.

    The code goes before the outermost loop around that one that repeats it unchanged (``for epoch``
    around ``for batch``, when nothing it reads changes per epoch either), so one edit fixes the
    finding (issue 36: the edit an editor applies once moved it into the epoch loop, where it was
    reported again); a move out of the outer loop that would be unsafe for a reason the move out of
    the inner one does not have (a condition around the inner loop) stays inside it. ``outer_row``:
    the row of the loop the finding names as repeating it too; when the code cannot leave that loop
    there is no fix (moved only out of the inner loop it would be reported again, a new user's trial)."""
    module = file.region(loop_row)
    if module is None:
        raise _NotFixable("its top-level statement does not parse alone")
    loop = module.loops.get((loop_row, loop_column - 1))
    if loop is None:
        raise _NotFixable("the loop is not a for or while statement")
    expr = _expression_at(module, row, column - 1, end_row, end_column - 1)
    if expr is None:
        raise _NotFixable("the reported expression was not found")
    pass_moves = {} if pass_moves is None else pass_moves
    site = (row, column, end_row, end_column)
    outers = _enclosing_loops(module, loop)
    if not outers:
        return _propose(file, module, site, expr, loop, (), through, pass_moves)
    before = set(module.taken), dict(pass_moves)
    fix = _propose(file, module, site, expr, loop, (), through, pass_moves)
    after = set(module.taken), dict(pass_moves)
    # the loops the finding names as repeating it too must be left, or its edit does not fix it
    needed = next((i for i, outer in enumerate(outers) if module.positions[outer].start.line == outer_row), -1)
    varies = {}
    added: list = []  # why the move out of the loop the finding names is unsafe and the inner move is not
    for index in range(len(outers) - 1, -1, -1):  # the outermost first
        _restore(module, pass_moves, before)
        try:
            lifted = _propose(file, module, site, expr, outers[index], (loop, *outers[:index]), through, pass_moves)
        except _Varies as why:
            varies[index] = why.names
            continue
        except _Walled:
            # a `with` between them: a session opened per iteration (GG111's shape, a model built per
            # iteration, which the code belongs with) or a scope or device the code must stay in
            needed = min(needed, index - 1)
            continue
        except _NotFixable:
            continue
        if index >= needed and _reasons(lifted) <= _reasons(fix):
            return lifted
        if index == needed:
            added = sorted(_reasons(lifted) - _reasons(fix))
    if needed >= 0:
        _restore(module, pass_moves, before)
        where = module.positions[outers[needed]].start.line
        names = next((varies[i] for i in range(needed + 1) if i in varies), None)
        if names:
            raise _NotFixable(f"it reads {', '.join(names)}, which the loop at line {where} around it changes: out of "
                              "the inner loop it would still be built on every iteration of that one (feed the value "
                              "through a placeholder)")
        if added:  # it can leave the inner loop safely, the outer one only with a risk of its own
            raise _NotFixable(f"out of the loop at line {where}, which repeats it too, {'; '.join(added)}: build it by hand "
                              "once before that loop")
        raise _NotFixable(f"it cannot move out of the loop at line {where}, which repeats it too: build it by hand "
                          "once before that loop, feeding what changes through a tf.compat.v1.placeholder")
    _restore(module, pass_moves, after)
    return fix


def _reasons(fix: Fix) -> set:
    """Why ``fix`` is unsafe, one reason per item (empty for a safe fix): a move out of more loops is
    taken only when it adds no reason to those of the move out of the finding's loop."""
    if fix.applicability == SAFE:
        return set()
    text = fix.message.partition(" (unsafe: ")[2]
    return set(text[:-1].split("; ")) if text else {fix.message}


def _restore(module: Region, pass_moves: dict, state: tuple) -> None:
    """Put back the names taken and the statements moved in this pass as they were in ``state``."""
    module.taken.clear()
    module.taken.update(state[0])
    pass_moves.clear()
    pass_moves.update(state[1])


def _enclosing_loops(module: Region, loop: cst.CSTNode) -> list:
    """The ``for``/``while`` loops whose body holds ``loop``, innermost first, up to the function, class
    or module around it (the loop sits in their bodies, not in a header or an ``else`` clause)."""
    found = []
    child, node = loop, module.parents.get(loop)
    while node is not None and not isinstance(node, (cst.FunctionDef, cst.ClassDef, cst.Lambda, cst.Module)):
        if isinstance(node, (cst.For, cst.While)):
            if child is not node.body:
                break
            found.append(node)
        child, node = node, module.parents.get(node)
    return found


def _propose(file: File, module: Region, site: tuple, expr: cst.BaseExpression, loop: cst.CSTNode,
             inner: tuple, through: bool, pass_moves: dict) -> Fix:
    """The fix that builds ``expr`` once before ``loop``; ``inner``: the loops between them (the
    finding's loop first), which the expression leaves too. Raises :class:`_NotFixable`."""
    row, column, end_row, end_column = site
    loop_row = module.positions[loop].start.line
    chain = _ancestors(module, expr, loop)
    if chain is None:
        raise _NotFixable("the expression is not in the loop's body")
    body = loop.body
    statement = None
    conditional, child = False, expr
    for node in chain:
        # Code that runs only under a condition (an if, a conditional expression, the right side of
        # `and`/`or`, a match case, an assert message, or after an earlier `continue`/`break` in the
        # iteration) runs unconditionally once it is before the loop: a None input, a name never bound,
        # a Saver with no variables yet would then fail where the program did not.
        if isinstance(node, (cst.If, cst.IfExp, cst.While)) and child is not node.test and node not in inner:
            conditional = True
        elif isinstance(node, cst.BooleanOperation) and child is node.right:
            conditional = True
        elif isinstance(node, (cst.MatchCase, cst.Assert)) and child is not getattr(node, "test", None):
            conditional = True
        elif isinstance(node, (cst.IndentedBlock, cst.SimpleStatementSuite)) and _exits_before(node, child):
            conditional = True
        child = node
        if isinstance(node, (cst.FunctionDef, cst.ClassDef, cst.Lambda)):
            raise _NotFixable("inside a function or class defined in the loop")
        if isinstance(node, cst.With):
            raise _Walled("under a with statement inside the loop (a scope, device or dependency)")
        if isinstance(node, (cst.ListComp, cst.SetComp, cst.DictComp, cst.GeneratorExp)):
            raise _NotFixable("inside a comprehension")
        if isinstance(node, (cst.For, cst.While)) and node is not loop and node not in inner:
            raise _NotFixable("inside an inner loop")
        if statement is None and isinstance(node, cst.SimpleStatementLine):
            statement = node
    if not isinstance(body, cst.IndentedBlock) or statement is None:
        raise _NotFixable("the loop body is on the loop's line")
    facts = module.loop_facts.get(id(loop))
    if facts is None:
        facts = module.loop_facts[id(loop)] = _loop_facts(module, loop)
    if facts.changes_graph:
        raise _NotFixable("the loop resets or replaces the default graph")
    if facts.rebinds_anything:
        raise _NotFixable("the loop calls exec, globals() or setattr(), which may change any name")
    if through and isinstance(statement.body[0], cst.Expr) and statement.body[0].value is expr:
        # `save_checkpoint(sess, step)`: called for what it does (saving, logging), not for a value.
        # Moving the call would do that once; the fix belongs inside the helper (build its Saver once).
        raise _NotFixable("a helper called for its effect builds the ops; build them once inside it")
    try:
        reads = _reads(module, expr, trusted=None if through else expr if isinstance(expr, cst.Call) else None)
    except _NotFixable:
        # ``sess.run(tf.assign(lr, schedule(step)))``: the helper stays in the loop, in the feed, so what
        # it does besides computing the value does not stop the placeholder-fed fix
        from graphguard.fix.feed import propose_feed

        fix = propose_feed(module, loop, expr, set(), facts.names)
        if fix is not None:
            return fix
        raise
    if not reads.tf_calls and not isinstance(expr, (cst.BinaryOperation, cst.UnaryOperation, cst.Subscript)):
        if not reads.helpers:
            raise _NotFixable("it builds nothing graphguard knows")
    # Looked up by name (a pass holds a move per fixed finding): in the pass's order, as before.
    matched = [(id(loop), name) for name in reads.names if (id(loop), name) in pass_moves]
    if len(matched) > 1:
        order = {key: index for index, key in enumerate(pass_moves)}
        matched.sort(key=order.__getitem__)
    earlier = {name: pass_moves[(loop_id, name)] for loop_id, name in matched}
    variant = sorted((reads.names & facts.names) - set(earlier))
    if variant:
        # A placeholder-fed op reads the changing value when it runs, not when it is built: it leaves
        # the inner loops too (a third new user's trial: `tf.assign(lr, f(step))` in a step loop inside
        # an epoch loop had no fix, the reason naming the wrong loop).
        if any(effect_of(name) is Effect.ASSIGN or name in (".assign", ".assign_add", ".assign_sub")
               for name in reads.tf_calls):
            from graphguard.fix.feed import propose_feed

            fix = propose_feed(module, loop, expr, set(), facts.names)
            if fix is not None:
                return fix
        if any(effect_of(name) is Effect.CONSTANT for name in reads.tf_calls):
            from graphguard.fix.feed import propose_constant_feed

            fix = propose_constant_feed(module, loop, expr, statement, facts.names)
            if fix is not None:
                return fix
        if inner:
            raise _Varies(variant)
        # (a seventeenth new user's trial: `pred = heads[k]` is a tensor, which no placeholder feeds)
        raise _NotFixable(f"it reads {', '.join(variant)}, which the loop assigns: build the op before the loop "
                          "for each tensor it can be, or feed a value that changes per iteration through a placeholder")
    changed = set(facts.attribute_roots)
    for alias, aliased in facts.aliases:  # ``m = model; m.scale = i`` changes model
        if alias in changed or alias in facts.passed:
            changed.add(aliased)
    mutated = sorted((reads.roots | reads.names) & changed)
    if mutated:
        raise _NotFixable(f"the loop changes {', '.join(mutated)} (assigns its attributes or items, or changes it in place)")
    effects = {effect_of(name) for name in reads.tf_calls}
    capturing = bool(effects & _CAPTURING) or any(_CAPTURING_NAMES.search(name) for name in reads.tf_calls)
    if capturing:
        more = _builds_more(module, loop, expr, summaries="tf.summary.merge_all" in reads.tf_calls)
        if more is not None:
            # A helper no fix can read (another module's, or a name it cannot see into) stays in the loop:
            # the Saver would wait for ever, so it is not counted as "1 more once those are applied"
            # (a twenty-first new user's trial: the count promised a fix that never came)
            raise _NotFixable(WAITS_FOR_OTHERS if more is True else
                              f"the loop also calls {more}, whose code graphguard's fixes cannot read: it may "
                              "make variables that a Saver or initializer built before the loop would miss; "
                              "move it by hand")
    unsafe = []
    if any(isinstance(node, (cst.Try, cst.TryStar)) and node.body in chain for node in chain):
        unsafe.append("it moves out of a try block: an error building it is no longer handled there")
    if conditional or _exits_before(body, next(n for n in [expr, *chain] if n in body.body or n is body)):
        unsafe.append("it runs only under a condition; before the loop it runs once whatever the condition")
    if reads.helpers:
        unsafe.append(f"it calls {', '.join(sorted(set(reads.helpers)))}, which may do more than build ops")
    if reads.creates_variables:
        if module.file.initializes_before(module.positions[loop].start.line):
            raise _NotFixable("it creates variables (layers, optimizer slots) and the variables are initialized "
                              "before the loop: move it above the initializer by hand")
        unsafe.append("it may create variables; nothing before the loop initializes variables yet")
    if reads.opens_files:
        if any(isinstance(c.func, cst.Attribute) and c.func.attr.value == "close" for c in source.calls(loop.body)):
            raise _NotFixable("the loop closes a writer: one writer for all iterations would be closed after the first")
        unsafe.append("a FileWriter opens an event file: there will be one instead of one per iteration")
    unsafe.extend(per_instance(module, loop, expr))
    touched = sorted((reads.roots | reads.names) & facts.method_roots - set(module.aliases))
    if touched:
        unsafe.append(f"a method called in the loop may change {', '.join(touched)}")
    # (a graph tensor handed to a call is not changed by it: a tenth new user's trial read "may change
    # logits in place" for `logits = tf.matmul(x, w)`)
    handed = sorted((reads.roots | reads.names) & facts.passed - set(module.aliases) - set(touched)
                    - (module.file.graph_values() if not _in_function(module, loop) else set()))
    if handed:
        unsafe.append(f"the loop hands {', '.join(handed)} to a call that may change it in place; the hoisted "
                      "op would keep the first value")
    read = (reads.roots | reads.names) - set(module.aliases)
    in_place = facts.attribute_roots | facts.passed | facts.method_roots | facts.augmented
    shared = sorted(module.file.sharers(read) & in_place) if in_place else []
    if shared:
        unsafe.append(f"{', '.join(shared)} may hold the same object as what it reads, and the loop changes "
                      f"{'it' if len(shared) == 1 else 'them'} in place; the hoisted op would keep the first value")
    rebound = sorted((reads.names & module.file.rebound_globals()) - facts.names) if facts.calls_code else []
    if rebound:
        unsafe.append(f"a function of this file rebinds {', '.join(rebound)} through `global`, and the loop "
                      "calls code that may run it")

    text, newline = module.text, module.newline
    starts = file.starts
    floor = max((anchor for anchor, _ in earlier.values()), key=lambda node: module.positions[node].start.line,
                default=None)
    collecting = adds_to_collections(reads.tf_calls, reads.creates_variables)
    if collecting and any(_reads_collections(module, call, collecting) for call in source.calls(loop.body)
                          if call is not expr and not source.inside(module.parents, call, expr)):
        unsafe.append("the loop reads a graph collection (merge_all, an initializer, a Saver) that the hoisted "
                      "code joins from the first iteration on")
    moved = _movable_statement(module, statement, expr, loop, inner)
    target = moved[0] if moved else None
    anchor = hoist_point(module, loop, reads.names, _captured(reads.tf_calls) if capturing else frozenset(), floor,
                         collecting, target=target)
    if target and earlier_value_read_after(file, target, module.positions[anchor].start.line,
                                           module.positions[loop].end.line):
        unsafe.append(f"`{target}` has a value before the loop that is read after it: if the loop runs no "
                      "iteration, that value is no longer the one read")
    anchor_start = module.positions[anchor].start
    indent = source.indent(text, anchor_start.line, starts)
    insert_at = (anchor_start.line, 1)
    code = module.module.code_for_node(expr)
    # A move that needs an unsafe one moved first (``per_example`` reads ``rows``, whose move is unsafe)
    # is no safer: --fix could not apply it alone (a new user's trial: "2 fixable", then nothing fixed).
    unsafe.extend(f"it needs the unsafe move of {fix.message[5:].split(' before the loop', 1)[0]} first"
                  for _, fix in earlier.values() if fix.applicability != SAFE)
    applicability = UNSAFE if unsafe else SAFE
    why = f" (unsafe: {'; '.join(unsafe)})" if unsafe else ""
    if anchor is not loop:  # the code climbs above the session's ``with`` (a ninth new user's trial: the
        # message named only the loop, the edit inserted three rows higher)
        why = f", above its `with` statement at line {anchor_start.line}{why}"
    # A Saver with the default max_to_keep would delete what the Savers made per iteration kept.
    keep_all = [(module.module.code_for_node(saver), module.module.code_for_node(with_keep_all(saver)))
                for saver in savers_to_keep_all(module, loop, expr)]
    if keep_all:
        why = f", with max_to_keep=None to keep every checkpoint as before{why}"

    if moved is not None:
        name, first_row, last_row = moved
        lines = text[starts[first_row - 1]: starts[last_row] if last_row < len(starts) else len(text)]
        own = source.indent(text, first_row, starts)
        # Continuation lines are re-indented with the first, unless a string spans them: its text
        # would change (a new user's trial: a triple-quoted constant lost four spaces per line).
        # Left as they were, they are still inside the brackets or the string.
        in_string = any("\n" in module.module.code_for_node(string) or "\r" in module.module.code_for_node(string)
                        for string in source.nodes(statement, cst.BaseString))
        moved_text = "".join(indent + line[len(own):] if line.startswith(own) and (i == 0 or not in_string) else line
                             for i, line in enumerate(re.findall(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+$", lines)))
        if not moved_text.endswith(("\n", "\r")):
            moved_text += newline
        for before, after in keep_all:
            moved_text = moved_text.replace(before, after, 1)
        end = (last_row + 1, 1) if last_row < len(starts) else _end_position(text, starts)
        only = len(module.parents[statement].body) == 1
        edits = [Edit(*insert_at, *insert_at, moved_text),
                 Edit(first_row, 1, *end, f"{own}pass{newline}" if only else "")]
        what = f"`{name} = ...`" if name else f"`{_short(code)}`"
        fix = Fix(applicability, f"Move {what} before the loop at line {loop_row}{why}", tuple(edits),
                  needs=tuple(fix for _, fix in earlier.values()))
        if name:
            pass_moves[(id(loop), name)] = (anchor, fix)
        return fix
    if earlier:
        raise _NotFixable(f"it reads {', '.join(sorted(earlier))}, which moves in this pass; it follows in the next")
    fresh = _fresh(module, expr, reads)
    for before, after in keep_all:
        code = code.replace(before, after, 1)
    if ("\n" in code or "\r" in code) and source.compile_problem(f"_ = {code}", "<fix>") is not None:
        # ``loss *\n 2`` was continued by the call's brackets around it: on its own line it needs its own
        # (a new user's trial: the fix offered in JSON, SARIF and the editor did not compile)
        code = f"({code})"
    edits = (Edit(*insert_at, *insert_at, f"{indent}{fresh} = {code}{newline}"),
             Edit(row, column, end_row, end_column, fresh))
    return Fix(applicability, f"Build `{fresh}` once before the loop at line {loop_row}{why}", edits)


def _exits_before(block: cst.CSTNode, child: cst.CSTNode) -> bool:
    """Whether a statement of ``block`` before ``child`` may leave the iteration (``continue``,
    ``break``, ``return``, ``raise``; not inside a nested loop or function, whose exits are their own)."""
    statements = getattr(block, "body", ())
    if child not in statements:
        return False
    for statement in statements[: statements.index(child)]:
        if _may_exit(statement):
            return True
    return False


@functools.lru_cache(maxsize=1 << 16)
def _may_exit(node: cst.CSTNode) -> bool:
    """Whether ``node`` may leave the iteration (see :func:`_exits_before`). Remembered per node (libcst
    nodes hash by identity and never change): each finding in a loop asked it again of every statement
    before it, so ``--output-format json``/``sarif``/``full`` and ``--fix`` grew with the square of the
    findings in one loop (1,000 findings: 106-114 s, found by a new user's trial, issue 18)."""
    if isinstance(node, (cst.Continue, cst.Break, cst.Return, cst.Raise)):
        return True
    if isinstance(node, (cst.For, cst.While)):
        return any(_may_exit(child) for child in (node.orelse,) if child is not None) or \
            any(isinstance(n, (cst.Return, cst.Raise)) for n in source.nodes(node.body, cst.BaseSmallStatement))
    if isinstance(node, (cst.FunctionDef, cst.ClassDef, cst.Lambda)):
        return False
    return any(_may_exit(child) for child in node.children)


def _builds_more(module: Region, loop: cst.CSTNode, expr: cst.CSTNode, summaries: bool) -> bool | str | None:
    """Whether anything else in ``loop`` may add variables (or, with ``summaries``, summary ops) that
    a Saver, an initializer or ``merge_all()`` built before the loop would miss: ``True`` for a
    TensorFlow variable, layer, metric or model, an optimizer with slots, or a function of this file
    that makes one; the called name (a string) for a function graphguard cannot read (another
    module's, or a name it cannot see into); None for nothing. Read from the code itself, not from the
    findings, so a suppressed or unselected finding (``# noqa``, ``--ignore``) still counts."""
    unseen = None
    own = {id(node) for node in source.calls(expr)}
    for call in source.calls(loop.body):
        if id(call) in own:
            continue
        name = source.dotted(call.func)
        if name is None:  # a method on a computed value: tf.train.AdamOptimizer(lr).minimize(loss)
            if (isinstance(call.func, cst.Attribute) and call.func.attr.value in _VARIABLE_METHODS
                    and not _slotless(module, call.func.value)):
                return True
            continue
        head, _, rest = name.partition(".")
        imported = module.aliases.get(head)
        if imported is not None:
            full = source.canonical(imported + ("." + rest if rest else ""))
            if full is None:
                if imported.split(".")[0] not in _VALUE_MODULES and unseen is None:
                    unseen = name  # a helper of another module: it may
                continue
            if _makes_variables(full) or (summaries and effect_of(full) is Effect.SUMMARY):
                return True
            continue
        if "." in name:
            if name.rsplit(".", 1)[1] in _VARIABLE_METHODS and not _slotless(module, call.func.value):
                return True
            continue  # a method of an object: a run, a save, a print, a NumPy call
        if name in module.file.functions:
            if module.file.makes_variables(name, _makes_variables, summaries):
                return True
        elif not hasattr(builtins, name) and unseen is None:
            unseen = name  # a name graphguard cannot see into
    return unseen


#: Modules whose functions compute values and build no graph (a call to them blocks nothing).
_VALUE_MODULES = frozenset({"numpy", "np", "time", "math", "random", "os", "sys", "json", "logging", "pickle",
                            "collections", "itertools", "functools", "datetime", "shutil", "glob", "re", "scipy",
                            "sklearn", "pandas", "matplotlib", "PIL", "cv2", "tqdm"})


def _captured(tf_calls) -> frozenset:
    """The graph collections code that captures what the graph holds reads when it is built: a Saver,
    an initializer or a variable list the variables, ``merge_all()`` the summaries, ``get_collection``
    any (:func:`graphguard.fix.safety.adds_to_collections` names them)."""
    kinds: set = set()
    for name in tf_calls:
        if "get_collection" in name:
            return frozenset({"summaries", "variables", "losses"})
        if "merge_all" in name:
            kinds.add("summaries")
        elif effect_of(name) in _CAPTURING or _CAPTURING_NAMES.search(name):
            kinds.add("variables")
    return frozenset(kinds)


def _end_position(text: str, starts: list[int]) -> tuple[int, int]:
    return len(starts), len(text) - starts[-1] + 1


def _movable_statement(module: Region, statement: cst.SimpleStatementLine, expr: cst.BaseExpression,
                       loop: cst.CSTNode, inner: tuple = ()) -> Optional[tuple[str, int, int]]:
    """(name, first row, last row) when ``statement`` is ``name = expr`` at the top of the body of
    ``loop`` (or of the innermost of the ``inner`` loops it leaves too, each in the body of the next),
    alone on its line(s), ``name`` assigned nowhere else in those loops and not read before it there
    nor in a loop's header (``for v in sess.run(y): y = tf.square(x)`` reads the earlier ``y`` once);
    or when it is ``expr`` alone (``tf.summary.scalar("loss", loss)``: name ``""``)."""
    if len(statement.body) != 1:
        return None
    body = (inner[0] if inner else loop).body
    if statement not in getattr(body, "body", ()):
        return None
    assign = statement.body[0]
    if isinstance(assign, cst.Expr) and assign.value is expr:
        where = module.positions[statement]
        return "", where.start.line, where.end.line
    if not isinstance(assign, cst.Assign) or len(assign.targets) != 1 or assign.value is not expr:
        return None
    target = assign.targets[0].target
    if not isinstance(target, cst.Name):
        return None
    name = target.value
    child = statement
    for around in (*inner, loop):
        block = around.body
        if module.parents.get(child) is not block:
            return None  # an if, try or with between the loops: the statement stays where it is
        index = block.body.index(child)
        header = [around.iter, around.target] if isinstance(around, cst.For) else [around.test]
        if any(source.mentions(node, name) for node in [*block.body[:index], *header]):
            return None
        if any(source.assigns(node, name) for node in [*block.body[index + 1:], around.orelse] if node is not None):
            return None
        child = around
    where = module.positions[statement]
    return name, where.start.line, where.end.line


def _expression_at(module: Region, row: int, column: int, end_row: int, end_column: int):
    return module.expressions.get((row, column, end_row, end_column))


def _ancestors(module: Region, expr: cst.CSTNode, loop: cst.CSTNode) -> Optional[list]:
    """The nodes from ``expr`` (excluded) up to ``loop``'s body (excluded), innermost first; None when
    ``expr`` is not inside the body."""
    chain = []
    node = module.parents.get(expr)
    while node is not None and node is not loop.body:
        if node is loop:
            return None  # in the header (target, iterable, test) or the else clause
        chain.append(node)
        node = module.parents.get(node)
    return chain if node is loop.body else None


def _in_function(module: Region, node: cst.CSTNode) -> bool:
    """Whether ``node`` stands in a function's body (its names are that function's, not the module's)."""
    parent = module.parents.get(node)
    while parent is not None:
        if isinstance(parent, (cst.FunctionDef, cst.Lambda)):
            return True
        parent = module.parents.get(parent)
    return False
