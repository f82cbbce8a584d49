"""Phase 1, operators on tensors: ``loss * 2``, ``logits[0]``, ``-x``, ``x > 0`` (GG106).

A mixin of :class:`graphguard.analysis.reader.ModuleReader` (it uses the reader's frames, constructions
and value resolution). An operator builds an op only when an operand is a tensor: known here (a
TensorFlow result), decided in phase 2 (what a project call returns) or when the function ends (a
parameter the function passes to TensorFlow).
"""

from __future__ import annotations

import ast

from graphguard.analysis.bindings import CallResult, Param, TFObject
from graphguard.analysis.catalog import Effect
from graphguard.analysis.resolution import TENSOR_KINDS
from graphguard.analysis.syntax import short

#: Operators that build ops on tensors (``==`` does not in TF1 graph mode: it compares identities).
_TENSOR_COMPARISONS = (ast.Lt, ast.LtE, ast.Gt, ast.GtE)
_TENSOR_UNARY = (ast.USub, ast.UAdd, ast.Invert)
_SEQUENCE_LITERALS = (ast.Tuple, ast.List, ast.ListComp)


class OperatorReader:
    """Records operators and subscripts that act on tensors."""

    def _tensor_operands_of(self, operands) -> tuple[bool, list, set]:
        """(an operand is a known tensor, refs of project calls whose results may be tensors,
        names of parameters that may be tensors)."""
        refs, params = [], set()
        for operand in operands:
            value = self.resolve(operand)
            if isinstance(value, TFObject) and value.kind in TENSOR_KINDS:
                return True, [], set()
            if isinstance(value, CallResult):
                refs.append(value.ref)
            elif isinstance(value, Param):
                params.add(value.name)
        return False, refs, params

    def _tensor_operands(self, node: ast.AST) -> tuple[bool, list, set]:
        if isinstance(node, ast.BinOp):
            if isinstance(node.left, _SEQUENCE_LITERALS) or isinstance(node.right, _SEQUENCE_LITERALS):
                return False, [], set()  # ``(name,) + outputs``, ``[train_op] + update_ops``: Python sequences
            return self._tensor_operands_of((node.left, node.right))
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, _TENSOR_UNARY):
            return self._tensor_operands_of((node.operand,))
        if isinstance(node, ast.Compare) and all(isinstance(op, _TENSOR_COMPARISONS) for op in node.ops):
            return self._tensor_operands_of((node.left, *node.comparators))
        if isinstance(node, ast.Subscript):
            if isinstance(node.slice, ast.Constant) and isinstance(node.slice.value, str):
                return False, [], set()  # ``features["image"]``: a dict of tensors, not a tensor
            return self._tensor_operands_of((node.value,))
        return False, [], set()

    def _operator(self, node: ast.AST, written: ast.AST | None = None, visit_children: bool = True) -> bool:
        """Record ``node`` (an operator, a subscript, an augmented assignment) when it acts on a tensor.
        The finding names it by the source of ``written`` (default: ``node``), shortened; written out
        only for a construction that is kept (``ast.unparse`` of every operator on a parameter was a
        twentieth of reading a file)."""
        frame = self._frame
        recorded = False
        if self._nested_depth == 0:
            tensor, refs, params = self._tensor_operands(node)
            if tensor:
                # Outside loops only a function's first construction of each kind is named (its
                # ``builds``): the node stands for its text until read_module() knows which.
                self._construction(Effect.OPERATOR, node,
                                   written or node if not frame.loops else short(ast.unparse(written or node)))
                recorded = True
            elif refs:
                if frame.loops:  # outside loops it is never reported (phase 3) nor summarised (phase 2)
                    self._construction(Effect.OPERATOR, node, short(ast.unparse(written or node)), deferred=refs)
                recorded = True
            elif params:
                # Decided when the function ends: a parameter is a tensor if the function passes it to TF.
                frame.pending_param_operators.append((self._new_construction(Effect.OPERATOR, node, ""),
                                                      written or node, params))
                recorded = True
        if not visit_children:
            return recorded
        if recorded:
            self._nested_depth += 1
            self.generic_visit(node)
            self._nested_depth -= 1
        else:
            self.generic_visit(node)
        return recorded

    def visit_BinOp(self, node: ast.BinOp) -> None:
        self._operator(node)

    def visit_UnaryOp(self, node: ast.UnaryOp) -> None:
        self._operator(node)

    def visit_Compare(self, node: ast.Compare) -> None:
        self._operator(node)

    def visit_Subscript(self, node: ast.Subscript) -> None:
        if isinstance(node.ctx, ast.Load):
            self._operator(node)
        else:
            self.generic_visit(node)
