"""Finalize-mode interception: TensorFlow's finalization check, replaced on one graph object.

Every change TensorFlow makes to a graph first calls ``Graph._check_not_finalized()``. The guard puts
its own check there (:class:`Interceptor`), on the guarded graph only, so that a refused op raises
:class:`~graphguard.GraphGrowthError` at the user's line, and so that the per-run path learns that
the graph changed from a Python flag instead of reading ``Graph.version`` on every run.

Nothing here imports TensorFlow (the op type of a C op is read lazily, on the error path only).
"""

from __future__ import annotations

import sys
from typing import Any, Optional

from graphguard.runtime.errors import GraphGrowthError


# ---------------------------------------------------------------------------------------------------
# Finalize-mode interception
#
# TF checks finalization in Graph._check_not_finalized(), called first thing (before any lock) by
# _create_op_internal (every op built through op_def_library / create_op), _create_op_from_tf_operation
# and _add_new_tf_operations (while_loop, import_graph_def), add_to_collection(s), clear_collection and
# _add_function / _remove_function. tf.Graph subclasses the pybind PyGraph, which accepts instance
# attributes, and _check_not_finalized is a plain method (a non-data descriptor), so an instance
# attribute of that name shadows it for that one graph object only: no class-wide monkeypatch, no
# effect on other graphs or threads using other graphs, and `del` restores TF's method. The override
# keeps TF's semantics (it raises only when graph.finalized is true) and raises GraphGrowthError, a
# RuntimeError subclass, at creation time, from the user's own call, with or without a `with` block.
# The op type comes from the caller's locals (op_type in _create_op_internal, the C op otherwise).
# Limits: it relies on private names (_check_not_finalized, _create_op_internal); if a future TF
# refuses the instance attribute, install fails quietly and GraphGuard.__exit__ converts TF's plain
# RuntimeError instead (after the fact, and only inside a `with` block).

_CHECK_NAME = "_check_not_finalized"

TF_CHANGERS = frozenset({
    "_create_op_internal", "_create_op_from_tf_operation", "_add_new_tf_operations",
    "add_to_collection", "add_to_collections", "clear_collection", "_add_function", "_remove_function",
})


class Interceptor:
    """Stands in for ``Graph._check_not_finalized`` on one graph object.

    TensorFlow calls that method before every change to the graph (every new op, collection change,
    library function). On a finalized graph the stand-in calls ``monitor._refuse(frame)``, which
    raises; otherwise it sets ``monitor._changed``, so the per-run path tests a Python attribute
    instead of reading ``Graph.version`` through pybind on every run. Another guard's stand-in on the
    same graph (installed earlier) is called too.
    """

    def __init__(self, graph: Any, monitor: Any) -> None:
        self._graph = graph
        self._monitor = monitor
        self._previous: Any = None
        self.installed = False

    def install(self) -> bool:
        graph = self._graph
        current = getattr(graph, _CHECK_NAME, None)
        # An instance attribute already there (another guard on the same graph) is put back later.
        own = getattr(type(graph), _CHECK_NAME, None)
        self._previous = None if getattr(current, "__func__", None) is own else current
        try:
            setattr(graph, _CHECK_NAME, self._check)
        except (AttributeError, TypeError):
            return False
        self.installed = getattr(graph, _CHECK_NAME, None) == self._check
        return self.installed

    def remove(self) -> None:
        if not self.installed:
            return
        self.installed = False
        graph = self._graph
        if getattr(graph, _CHECK_NAME, None) == self._check:
            # Guards closed out of order leave removed stand-ins in the chain: put back the first
            # one still in use (or what was there before any guard), not a removed one.
            previous = self._previous
            while isinstance(getattr(previous, "__self__", None), Interceptor) and not previous.__self__.installed:
                previous = previous.__self__._previous
            if previous is not None:
                setattr(graph, _CHECK_NAME, previous)
            else:
                delattr(graph, _CHECK_NAME)

    def _check(self) -> None:
        # TF's condition, a clearer error: called on every op creation, so the common case is short.
        if self.installed:  # once removed, a stand-in still chained by a later guard only passes on
            if self._graph.finalized:
                try:
                    self._monitor._refuse(sys._getframe(1))
                except GraphGrowthError as error:  # the guard's refusal: raised from here, its traceback cut
                    __tracebackhide__ = True  # noqa: F841 - read by pytest and IPython
                    raise error.with_traceback(None)
            self._monitor._changed = True
        if self._previous is not None:
            self._previous()


def refused_change(frame: Any) -> tuple[Optional[str], str]:
    """(op_type, description) of what the TF method in ``frame`` was about to add."""
    name = frame.f_code.co_name
    local = frame.f_locals
    if name == "_create_op_internal":
        op_type = str(local.get("op_type"))
        return op_type, f"add a new {op_type!r} op"
    if name == "_create_op_from_tf_operation":
        try:
            from tensorflow.python.client import pywrap_tf_session  # lazy: only on the error path

            op_type = pywrap_tf_session.TF_OperationOpType(local["c_op"])
            return op_type, f"add a new {op_type!r} op"
        except Exception:
            return None, "add new ops"
    if name in ("add_to_collection", "add_to_collections", "clear_collection"):
        return None, f"change graph collection {local.get('name', local.get('names'))!r}"
    if name in ("_add_function", "_remove_function"):
        fn_name = getattr(local.get("function"), "name", local.get("name"))
        if isinstance(fn_name, bytes):
            fn_name = fn_name.decode("utf-8", "replace")
        verb = "add" if name == "_add_function" else "remove"
        return None, f"{verb} library function {fn_name!r}"
    if name == "_add_new_tf_operations":
        return None, "add new ops"
    return None, "modify the graph"
