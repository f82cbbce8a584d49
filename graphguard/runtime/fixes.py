"""The fix for the ops one user line added, worded as the linter words it (``graphguard rule GG102``).

The runtime guard knows which call on a line built ops (``tf.train.Saver``, ``tf.assign``) and which
op types it built; the linter knows what each TensorFlow name does to the graph
(:func:`graphguard.analysis.catalog.effect_of`) and, per rule, the advice. This module joins them so a
stopped run says "build one Saver before the loop and call its save() in the loop" for a ``Saver``
and "build one placeholder-fed assign op before the loop" for ``tf.assign``, not one generic line.

Nothing here imports TensorFlow; the catalog and the rules are imported when a fix is first asked for.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable

from graphguard.runtime.records import OpGroup, where

__all__ = ["Fix", "fix_for", "fix_lines"]

#: What growth across sessions and a burst of ops mean, and what to do (printed by the guard's errors
#: and reports).
SESSIONS_WHY = (
    "A new session does not start a new graph: it runs the same one, which keeps every copy, so each "
    "session (each request, each trial) builds more ops, copies them all into the C++ session, and "
    "memory keeps growing."
)
SESSIONS_FIX = (
    "Fix: build the graph once and run it in every session (tf.compat.v1.Session(graph=g)); to build a "
    "new model per trial, call tf.compat.v1.reset_default_graph() first or build it inside "
    "'with tf.Graph().as_default():'."
)
BURST_WHY = (
    "Ops built by a Python loop (an unrolled factorisation, a layer or a slice per item) are all copied "
    "into the session on the next run, which makes every later run slower and the process larger."
)
BURST_FIX = (
    "Fix: build that computation once, before the loop that runs the session, as a vectorised op or a "
    "tf.while_loop; if the graph is meant to grow this much once, raise max_burst_ops (None turns the "
    "limit off)."
)

#: Op types that name what built them when the call on the line is unknown (an aliased import, a
#: helper's line). The Saver's ops come first: a Saver also builds Assign and Const ops.
_OP_TYPE_EFFECTS = (
    (frozenset({"SaveV2", "RestoreV2", "SaveSlices", "RestoreSlice", "Restore", "ShardedFilename"}), "saver"),
    (frozenset({"Placeholder", "PlaceholderWithDefault", "VarHandleOp", "VariableV2", "Variable"}), "variable"),
    (frozenset({"Assign", "AssignVariableOp", "AssignAdd", "AssignSub", "AssignAddVariableOp",
                "AssignSubVariableOp"}), "assign"),
    (frozenset({"ScalarSummary", "HistogramSummary", "ImageSummary", "AudioSummary", "MergeSummary",
                "TensorSummaryV2"}), "summary"),
    (frozenset({"IteratorV2", "Iterator", "IteratorGetNext", "MakeIterator", "OneShotIterator",
                "AnonymousIteratorV3", "TensorSliceDataset", "BatchDatasetV2"}), "dataset"),
)
#: What the reader calls the construct, per effect value.
_CONSTRUCTS = {
    "op": "op", "saver": "Saver", "initializer": "initializer", "assign": "assign", "constant": "constant",
    "operator": "operator", "variable": "placeholder or variable", "graph_import": "graph import",
    "dataset": "tf.data pipeline", "iterator": "tf.data pipeline", "summary": "summary",
    "file_writer": "FileWriter",
}


@dataclass(frozen=True)
class Fix:
    """How to stop one construct from growing the graph.

    Attributes:
        construct: what the line builds, in the field's words (``"Saver"``, ``"assign"``, ``"op"``).
        code: the linter rule that reports it statically (``"GG102"``): ``graphguard rule GG102``.
        advice: the rule's advice, as its findings word it.
    """

    construct: str
    code: str
    advice: str


def _canonical(call: str) -> str:
    """``tf.compat.v1.train.Saver`` / ``tensorflow.train.Saver`` -> ``tf.train.Saver``; a method call
    on an object (``tf.train.AdamOptimizer().minimize``) -> its TensorFlow name up to the call."""
    name = call.split("(", 1)[0]
    for prefix in ("tensorflow.compat.v1.", "tensorflow.", "tf.compat.v1.", "v1.", "tf1."):
        if name.startswith(prefix):
            return "tf." + name[len(prefix):]
    return name


def _effect(group: OpGroup) -> str:
    from graphguard.analysis.catalog import METHOD_EFFECTS, effect_of

    calls = [line.call for line in group.lines if line.call]
    for call in calls:
        name = _canonical(call)
        if name.startswith("tf."):
            effect = effect_of(name).value
            if effect in _CONSTRUCTS:
                return effect
        # A method of a TensorFlow object (``opt.minimize``, ``tf.train.AdamOptimizer().minimize``,
        # ``v.assign``): the method says what it builds; its op types would not (``minimize`` builds
        # Assign ops for the optimizer's slots, and is an op per step, not an assign).
        method = call.rsplit(".", 1)[-1]
        if "." in call and method.isidentifier():
            for methods in METHOD_EFFECTS.values():
                effect = methods.get(method)
                if effect is not None and effect.value in _CONSTRUCTS:
                    return effect.value
    types = {op_type for op_type, _ in group.op_types}
    for known, effect in _OP_TYPE_EFFECTS:
        if types & known:
            return effect
    # No call matched on the line: a Python operator on a tensor (``loss * 2``, ``logits[0]``).
    return "op" if calls else "operator"


def fix_for(group: OpGroup) -> Fix:
    """The :class:`Fix` for the ops of ``group`` (one user line, one step)."""
    from graphguard.analysis.catalog import Effect
    from graphguard.rules import RULES

    effect = Effect(_effect(group))
    rule = next(rule for rule in RULES.values() if effect in rule.EFFECTS)
    return Fix(_CONSTRUCTS[effect.value], rule.CODE, rule.fix())


def fix_lines(groups: Iterable[OpGroup], indent: str = "  ", label: str = "fix for ") -> str:
    """One line per distinct fix, naming the creating lines it applies to: ``fix for train.py:12
    (Saver, GG102): build one Saver before the loop and call its save() in the loop``, ``fix for
    train.py:86, 87, 130 (op, GG101): ...``; ``""`` for no groups."""
    by_fix: dict[Fix, dict[tuple, None]] = {}
    for group in groups:
        line = group.lines[0] if group.lines else None
        key = (line.filename, line.lineno) if line is not None else (None, None)
        by_fix.setdefault(fix_for(group), {})[key] = None
    out = []
    for fix, keys in by_fix.items():
        places: dict[str, list] = {}
        for filename, lineno in keys:
            places.setdefault(filename, []).append(lineno)
        where_text = "; ".join(
            where(filename, numbers[0]) + "".join(f", {n}" for n in numbers[1:]) for filename, numbers in places.items()
        )
        out.append(f"{indent}{label}{where_text} ({fix.construct}, {fix.code}): {fix.advice}")
    return "\n".join(out)
