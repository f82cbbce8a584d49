"""What keeps an object alive: the reference search of :class:`~graphguard.runtime.sweep.SweepGuard`.

:func:`find_chain` (public) and the guard's :func:`_search` walk referrers breadth-first from an object
with ``gc.get_referrers`` until they reach a root (a module global, a local variable of a running
function, a notebook variable, or IPython's output history ``Out[N]`` / ``_N`` read through
:class:`~graphguard.runtime.notebook.OutputHistory`) and name each hop (``dict['fold 3']``,
``Solver.model``): a :class:`~graphguard.runtime.sweep_report.ReferenceChain`. :class:`_Roots` reads
the roots once per judgement; :func:`loop_variables` gives the names a trial rebound in the code running
the sweep (not roots: the next trial rebinds them).

Cost: one ``gc.get_referrers`` pass over every gc-tracked object per level, for the whole frontier at
once; bounded by :data:`CHAIN_DEPTH` levels, :data:`CHAIN_SECONDS` of wall time and
:data:`CHAIN_FRONTIER` objects per level.

This module imports neither TensorFlow, Keras, NumPy nor IPython (the notebook roots are read only when a
shell is running), and nothing from the guard (:mod:`graphguard.runtime.sweep`).
"""

from __future__ import annotations

import gc
import os
import sys
import time
import types
from typing import Any, Iterable, Optional

from graphguard.runtime.notebook import OutputHistory, history_name, running_shell
from graphguard.runtime.sweep_report import ReferenceChain

__all__ = ["CHAIN_DEPTH", "CHAIN_FRONTIER", "CHAIN_SECONDS", "find_chain", "loop_variables"]

#: Reference-chain search bounds (see :func:`find_chain`): levels of referrers, seconds per object,
#: and nodes kept per level (``gc.get_referrers`` costs one pass over every tracked object per level,
#: times the number of objects searched for, so the frontier is capped).
CHAIN_DEPTH = 12
CHAIN_SECONDS = 5.0
CHAIN_FRONTIER = 64

#: The files of SweepGuard's own code (the guard, its measurements, this search, its records): their frames
#: are neither roots nor holders, and a warning names the first frame outside them.
_GUARD_FILES = frozenset(
    os.path.normcase(os.path.abspath(os.path.join(os.path.dirname(__file__), name)))
    for name in ("sweep.py", "sweep_measure.py", "sweep_references.py", "sweep_report.py", "sweep_engines.py", "sweep_judgement.py")
)


def _type_name(obj: Any) -> str:
    return type(obj).__qualname__


def _module_label(module_name: str, module: Any) -> str:
    """``module_name``, except for the script: ``__main__`` and ``__mp_main__`` (the alias multiprocessing
    adds, e.g. once TensorFlow is imported) are both named by ``__main__``'s file stem."""
    if module_name in ("__main__", "__mp_main__"):
        main = sys.modules.get("__main__")
        filename = getattr(main, "__file__", None) or getattr(module, "__file__", None)
        if filename:
            return os.path.splitext(os.path.basename(filename))[0]
        return "__main__"
    return module_name


def _is_guard_frame(frame: types.FrameType) -> bool:
    return os.path.normcase(os.path.abspath(frame.f_code.co_filename)) in _GUARD_FILES


def _namespace(frame: types.FrameType) -> Any:
    """The variables the code of ``frame`` binds: a function's locals, or at module level (a script, a
    notebook cell) its ``f_locals``, which is the module's globals."""
    return frame.f_locals


def loop_variables(before: dict[str, int], frame: types.FrameType) -> frozenset[str]:
    """The names of ``frame``'s namespace whose value changed or that appeared since ``before``
    (``{name: id(value)}``, taken at the trial's start): the loop variables of that trial. In IPython's
    user namespace (notebook cells), the names IPython binds itself (``_3``, ``_``, ``Out``, ``_i3``) are
    not loop variables: the output history is judged as a holder of its own (:class:`OutputHistory`)."""
    namespace = _namespace(frame)
    shell = running_shell()
    ipython = shell is not None and shell.user_ns is namespace
    return frozenset(name for name, value in list(namespace.items())
                     if before.get(name) != id(value) and not (ipython and history_name(name) is not None))


class _Roots:
    """The roots a chain may start from, read once per trial end.

    ``modules``: ``id(module.__dict__)`` -> module label, for every module in ``sys.modules``.
    ``locals``: ``id(value)`` -> (variable, function) for every local of the frame running the sweep and
    the frames above it (innermost first; the guard's own frames skipped), the sweep frame's loop
    variables excepted. ``loop``: ``id(value)`` -> (root text, loop-variable text) for the sweep frame's
    loop variables (``loop_names``), whether the frame is a function (its locals) or module level (its
    globals). ``loop_namespace``: ``id()`` of the module-level sweep frame's globals, else ``None``.
    ``snapshots``: ids of the ``f_locals`` dicts read (CPython < 3.13 keeps them on the frame), which the
    search must not follow.

    ``engine``: the sweep is driven by a library (``"Optuna"``, ``"Keras"``: see
    :mod:`~graphguard.runtime.sweep_engines`) whose code runs between the sweep's frame and the guard.
    The locals of those running frames (from the innermost frame outside the guard to ``frame``), and of
    every other thread's frames (Optuna's ``n_jobs`` workers running other trials), are the engine's
    work in progress, released when it moves on: like loop variables, they are passed through, and
    excuse an object only when no other root holds it. ``namespaces``: ``id(dict)`` -> label of other
    global namespaces that are roots like modules' (a Ray Tune trainable sent by value runs with globals
    of its own, in no module).
    """

    def __init__(self, frame: Optional[types.FrameType], loop_frame: Optional[types.FrameType],
                 loop_names: frozenset[str] = frozenset(), engine: Optional[str] = None,
                 namespaces: Optional[dict[int, str]] = None) -> None:
        self.modules: dict[int, str] = dict(namespaces or {})
        for name, module in list(sys.modules.items()):
            namespace = getattr(module, "__dict__", None) if module is not None else None
            if isinstance(namespace, dict):
                self.modules.setdefault(id(namespace), _module_label(name, module))
        self.locals: dict[int, tuple[str, str]] = {}
        self.loop: dict[int, tuple[str, str]] = {}
        self.loop_names = loop_names
        self.loop_namespace: Optional[int] = None
        self.snapshots: set[int] = set()
        shell = running_shell()
        self.ipython: Optional[OutputHistory] = OutputHistory(shell) if shell is not None else None
        if self.ipython is not None:
            namespace = shell.user_ns
            self.modules[id(namespace)] = "__main__"  # the cells' globals, even when not a module's (embed())
        if loop_frame is not None and not loop_frame.f_code.co_flags & 0x01:  # module level: globals
            namespace = _namespace(loop_frame)
            module = self.modules.get(id(namespace))
            if module is not None:
                self.loop_namespace = id(namespace)
                for var in loop_names:
                    if var in namespace:
                        if self.ipython is not None and id(namespace) == self.ipython.namespace:
                            texts = (self.ipython.variable(var), self.ipython.variable(var))
                        else:
                            texts = (f"module-level `{module}.{var}`", f"`{var}` at module level of {module}")
                        self.loop.setdefault(id(namespace[var]), texts)
            else:  # exec() with a namespace of its own: its variables are roots like locals
                self.snapshots.add(id(namespace))
                for var, value in list(namespace.items()):
                    if var in loop_names:
                        self.loop.setdefault(id(value), (f"`{var}` at top level", f"`{var}` at top level"))
                    else:
                        self.locals.setdefault(id(value), (var, loop_frame.f_code.co_name))
        while frame is not None:
            if not _is_guard_frame(frame) and frame.f_code.co_flags & 0x01:  # CO_OPTIMIZED: a function
                namespace = frame.f_locals
                self.snapshots.add(id(namespace))
                function = frame.f_code.co_name
                for var, value in namespace.items():
                    if frame is loop_frame and var in loop_names:
                        self.loop.setdefault(id(value), (f"local `{var}` in {function}()", f"`{var}` in {function}()"))
                    else:
                        self.locals.setdefault(id(value), (var, function))
            frame = frame.f_back
        if self.ipython is not None:  # the last outputs `_`, `__`, `___`: rebound by the next ones
            namespace = shell.user_ns
            for var in ("_", "__", "___"):
                if var in namespace and not isinstance(namespace[var], str):
                    self.loop.setdefault(id(namespace[var]), (f"output history `{var}`",
                                                              f"`{var}` (IPython's last outputs, rebound by the next ones)"))
        if engine is not None:
            self._engine_frames(frame, engine)
        for value_id in self.locals:  # also bound to a variable that stays: not excused
            self.loop.pop(value_id, None)


    def _engine_frames(self, sweep_frame: Optional[types.FrameType], engine: str) -> None:
        """The running frames of the engine (see the class docstring) as loop-variable-like holders."""
        stacks = []
        inner = sys._getframe(1)
        while inner is not None and _is_guard_frame(inner):  # this module's frames are guard frames too
            inner = inner.f_back
        stacks.append((inner, ""))  # named per frame: the library whose code it is
        current = sys._getframe()
        for thread_frame in sys._current_frames().values():
            walk = thread_frame
            while walk is not None and walk is not current:
                walk = walk.f_back
            if walk is None:  # another thread's stack
                stacks.append((thread_frame, "another thread (a trial running in parallel)"))
        for top, where_other in stacks:
            walk = top
            while walk is not None and walk is not sweep_frame:
                if walk.f_code.co_flags & 0x01 and not _is_guard_frame(walk):
                    function = walk.f_code.co_name
                    namespace = walk.f_locals
                    package = str(walk.f_globals.get("__name__", "")).partition(".")[0] or engine
                    where = where_other or f"running code of {package}, under {engine}"
                    self.snapshots.add(id(namespace))
                    for var, value in namespace.items():
                        text = f"local `{var}` in {function}() ({where})"
                        self.loop.setdefault(id(value), (text, f"`{var}` in {function}() ({where})"))
                walk = walk.f_back


def _edge(holder: Any, child: Any) -> tuple[str, Any]:
    """How ``holder`` refers to ``child``: ``("key", k)``, ``("index", i)``, ``("attr", name)``,
    ``("dict", None)`` (``child`` is ``holder.__dict__``), ``("local", name)`` for a frame, or
    ``("ref", None)`` when the reference has no name (a C-level field)."""
    if isinstance(holder, dict):
        for key, value in holder.items():
            if value is child:
                return "key", key
        return "ref", None  # a key, not a value
    if isinstance(holder, (list, tuple)):
        for index, value in enumerate(holder):
            if value is child:
                return "index", index
        return "ref", None
    if isinstance(holder, types.FrameType):
        for var, value in holder.f_locals.items():
            if value is child:
                return "local", var
        return "ref", None
    if isinstance(holder, type):
        if any(value is child for value in vars(holder).values()):
            return "attr", next(k for k, v in vars(holder).items() if v is child)
        return "ref", None
    try:
        namespace = object.__getattribute__(holder, "__dict__")
    except (AttributeError, TypeError):
        namespace = None
    if namespace is child:
        return "dict", None
    if isinstance(namespace, dict):
        for key, value in namespace.items():
            if value is child:
                return "attr", key
    for cls in type(holder).__mro__:
        for slot in getattr(cls, "__slots__", ()) if isinstance(getattr(cls, "__slots__", ()), (tuple, list)) else ():
            try:
                if object.__getattribute__(holder, slot) is child:
                    return "attr", slot
            except (AttributeError, TypeError):
                continue
    if isinstance(holder, types.MethodType) and holder.__self__ is child:
        return "attr", "__self__"
    return "ref", None


def _hops(nodes: list[Any], edges: list[tuple[str, Any]]) -> tuple[str, ...]:
    """Render the objects between a root's value and the target (``nodes[:-1]`` with their edges)."""
    hops = []
    skip_next_dict = False
    for i, (node, (kind, label)) in enumerate(zip(nodes, edges)):
        if skip_next_dict:  # this node is the __dict__ the previous hop already named
            skip_next_dict = False
            continue
        owner = node.__name__ if isinstance(node, type) else _type_name(node)
        if kind == "dict" and i + 1 < len(edges) and edges[i + 1][0] == "key":
            hops.append(f"{owner}.{edges[i + 1][1]}")
            skip_next_dict = True
        elif kind == "key":
            hops.append(f"{owner}[{label!r}]")
        elif kind == "index":
            hops.append(f"{owner}[{label}]")
        elif kind == "attr":
            hops.append(f"{owner}.{label}")
        elif kind == "local":
            hops.append(f"frame of {node.f_code.co_name}() (finished; kept by a traceback or generator): local `{label}`")
        else:
            hops.append(owner)
    return tuple(hops)


def find_chain(
    target: Any,
    *,
    frame: Optional[types.FrameType] = None,
    loop_frame: Optional[types.FrameType] = None,
    loop_names: Optional[Iterable[str]] = None,
    depth: int = CHAIN_DEPTH,
    seconds: float = CHAIN_SECONDS,
    frontier_size: int = CHAIN_FRONTIER,
) -> tuple[ReferenceChain, Optional[str]]:
    """The shortest chain of references from a root to ``target``, found breadth-first with ``gc``.

    Roots are module globals (``sys.modules``) and local variables of ``frame`` and the frames above it
    (default: the caller's). Running frames do not show up in ``gc.get_referrers`` (CPython's gc does
    not traverse a running frame's locals), so their locals are read from ``f_locals`` up front and
    matched by identity. From ``target``, each level asks ``gc.get_referrers`` (Python ``gc`` docs: the
    objects that refer to any of the given ones) for the whole frontier at once, names each reference
    (dict key, list index, attribute, slot, a finished frame's local) and stops at the first object that
    is a root's value. The search skips its own containers, the guard's frames and the ``f_locals``
    snapshots, and is bounded: ``depth`` levels, ``seconds`` of wall time, ``frontier_size`` objects per
    level (lists, dicts and instances of user classes first; each level costs one pass over every
    gc-tracked object).

    ``loop_frame`` and ``loop_names``: the variables ``loop_names`` of ``loop_frame`` (its locals, or its
    globals when it runs at module level) are loop variables, rebound by the next trial: they are not
    accepted as roots, nor is a closure cell holding the current value of one (the cell *is* that
    variable); the search goes on through them for another holder. ``loop_names=None``: the variables of
    ``loop_frame`` bound to ``target`` itself.

    Returns ``(chain, loop_variable)``: ``chain`` is a :class:`ReferenceChain` (``root_kind="unknown"``
    when no root was reached within the bounds); ``loop_variable`` (``"`model` in main()"``) is set when
    loop variables were reached and no other root was found, in which case ``chain`` starts at that
    loop variable.
    """
    frame = sys._getframe(1) if frame is None else frame
    if loop_frame is not None and loop_names is None:
        loop_names = [name for name, value in list(_namespace(loop_frame).items()) if value is target]
    roots = _Roots(frame, loop_frame, frozenset(loop_names or ()))
    chain, loop_variable, _, _ = _search(target, roots, depth, seconds, frontier_size, ())
    return chain, loop_variable


def _search(
    target: Any,
    roots: _Roots,
    depth: int,
    seconds: float,
    frontier_size: int,
    ignore: tuple[Any, ...],
    skip_first: frozenset[int] = frozenset(),
) -> tuple[ReferenceChain, Optional[str], frozenset[int], Optional[tuple[Any, ...]]]:
    """:func:`find_chain`, plus the ids of the objects on the chain (the guard's de-duplication; with no
    root found, the ids of every object the search reached) and the
    chain's last link, ``(holder, edge, holder's holder, its edge)`` (``None`` when the target is a root's
    value or no root was found): the guard's one-at-a-time holder test. ``skip_first``: ids of objects
    not accepted as the target's direct referrers (they may appear higher up)."""
    deadline = time.perf_counter() + seconds
    # The first loop variable reached: (id of its value, (root text, loop-variable text)).
    loop_hit: Optional[tuple[int, tuple[str, str]]] = None
    target_name = _type_name(target)
    # down[id(node)] = (id(child), edge); keep[id(node)] = node (holds the objects while searching).
    down: dict[int, tuple[int, tuple[str, Any]]] = {}
    keep: dict[int, Any] = {id(target): target}
    frontier: dict[int, Any] = {id(target): target}
    own = {id(down), id(keep), id(frontier), id(ignore), *map(id, ignore), *roots.snapshots}

    tail: Optional[tuple[Any, ...]] = None
    ipython = roots.ipython
    history: set[int] = set()  # IPython's output history and what mirrors it (OutputHistory)
    if ipython is not None:
        history = {node for node in (ipython.output, ipython.hidden) if node is not None} | ipython.skip

    def chain_from(node_id: int, root_kind: str, root: str) -> tuple[ReferenceChain, frozenset[int]]:
        nonlocal tail
        nodes, edges = [], []
        while node_id in down:
            child_id, edge = down[node_id]
            nodes.append(keep[node_id])
            edges.append(edge)
            node_id = child_id
        if nodes:
            tail = (nodes[-1], edges[-1], *((nodes[-2], edges[-2]) if len(nodes) > 1 else (None, None)))
        return ReferenceChain(root_kind, root, _hops(nodes, edges), target_name), frozenset(map(id, nodes))

    def note_loop(value_id: int) -> None:
        nonlocal loop_hit
        if loop_hit is None and value_id in roots.loop:
            loop_hit = (value_id, roots.loop[value_id])

    def local_root(node_id: int) -> Optional[str]:
        """The root text if ``node_id`` is the value of a local that is not a loop variable; notes
        loop variables (the search goes on through them)."""
        if node_id in roots.locals:
            var, function = roots.locals[node_id]
            return f"local `{var}` in {function}()"
        note_loop(node_id)
        return None

    root = local_root(id(target))
    if root is not None:
        chain, _ = chain_from(id(target), "local", root)
        return chain, None, frozenset(), None
    level = 0
    while frontier and level < depth and time.perf_counter() < deadline:
        level += 1
        wanted = tuple(frontier.values())
        own.add(id(wanted))
        referrers = gc.get_referrers(*wanted)
        own.add(id(referrers))
        if ipython is not None:  # namespaces and the output history first: a global is named before `Out[N]`
            referrers.sort(key=lambda holder: 0 if id(holder) in roots.modules else 1 if id(holder) in history else 2)
        found: dict[int, Any] = {}
        output: Optional[tuple[int, str]] = None  # (id of the value, root text): IPython's output history
        for holder in referrers:
            holder_id = id(holder)
            if holder_id in own or holder_id in keep:
                continue
            if isinstance(holder, types.FrameType) and _is_guard_frame(holder):
                continue
            if level == 1 and holder_id in skip_first:
                continue
            if output is not None and holder_id not in roots.modules and holder_id not in history:
                break  # no global at this level: the output history is the shortest holder
            if holder_id in roots.modules:  # a module global: the root, unless a loop variable
                notebook = ipython is not None and holder_id == ipython.namespace
                for var, value in list(holder.items()):
                    if id(value) not in frontier:
                        continue
                    if notebook and history_name(var) is not None:  # IPython's: `_3` is `Out[3]`
                        if history_name(var) == "output" and output is None:
                            output = (id(value), ipython.name_root(var, value))
                        elif history_name(var) == "last":
                            note_loop(id(value))
                        continue
                    if holder_id == roots.loop_namespace and var in roots.loop_names:
                        note_loop(id(value))
                        continue
                    text = (ipython.variable(var) if notebook
                            else f"module-level `{roots.modules[holder_id]}.{var}`")
                    chain, path = chain_from(id(value), "global", text)
                    return chain, None, path, tail
                continue
            if ipython is not None and holder_id in history:
                if holder_id in ipython.skip:
                    continue
                for key, value in list(holder.items()):
                    if id(value) in frontier and output is None:
                        output = (id(value), ipython.output_root(key, value) if holder_id == ipython.output
                                  else ipython.hidden_root(key))
                continue
            if isinstance(holder, types.CellType):  # a closure's variable
                try:
                    contents = holder.cell_contents
                except ValueError:
                    continue
                if id(contents) in frontier and id(contents) in roots.loop:
                    note_loop(id(contents))  # the loop variable itself, shared with the closure
                    continue
            child = next((ref for ref in gc.get_referents(holder) if id(ref) in frontier), None)
            if child is None:
                continue
            down[holder_id] = (id(child), _edge(holder, child))
            keep[holder_id] = holder
            root = local_root(holder_id)
            if root is not None:  # a local's value (a container, an object) holding the chain
                chain, path = chain_from(holder_id, "local", root)
                return chain, None, path, tail
            found[holder_id] = holder
        del referrers, wanted
        if output is not None:
            chain, path = chain_from(output[0], "output", output[1])
            return chain, None, path, tail
        # Keep the most promising referrers: containers and user objects before functions and cells.
        ranked = sorted(found.items(), key=lambda item: _rank(item[1]))
        frontier = dict(ranked[:frontier_size])
    if loop_hit is not None:
        value_id, (root, loop_variable) = loop_hit
        kind = "local" if root.startswith("local ") else "output" if root.startswith("output history") else "global"
        chain, path = chain_from(value_id, kind, root)
        return chain, loop_variable, path, tail
    reason = "no module global or local variable found within "
    reason += f"{depth} references" if level >= depth or not frontier else f"{seconds:.2g} s of search"
    holders = sorted({_type_name(node) for node_id, node in keep.items() if node_id != id(target)})[:4]
    if holders:
        reason += f" (held by {', '.join(holders)})"
    reached = frozenset(node_id for node_id in keep if node_id != id(target))  # what holds it, for de-duplication
    return ReferenceChain("unknown", reason, (), target_name), None, reached, None


def _rank(obj: Any) -> int:
    if isinstance(obj, (list, dict, tuple, set, frozenset)):
        return 0
    if isinstance(obj, (types.FunctionType, types.MethodType, types.CellType, types.FrameType, type)):
        return 2
    return 1
