"""What shape a tensor argument takes, and how many values a number takes (GG301).

``tf.function`` traces once per input shape and per Python value (TF-FACTS: 50 traces in 50 calls for
a new shape each call), so a call in a loop retraces when a number the loop changes sets the shape of
a tensor it passes (``step(np.random.rand(n, 4))``, ``step(data[:n])``), unless the number takes a few
values only (``i % 2``). Read by :class:`graphguard.analysis.eager.EagerReader`.
"""

from __future__ import annotations

import ast

from graphguard.analysis.syntax import callee_text

__all__ = ["few_values", "shape_of", "shape_of_new", "sliced_shape"]


#: Calls that make a tensor or array of the shape given by their first argument (or ``shape=``/``size=``).
_SHAPED_FIRST = frozenset({"tf.ones", "tf.zeros", "tf.fill", "tf.random.normal", "tf.random.uniform",
                           "tf.random.truncated_normal", "tf.random_normal", "tf.random_uniform", "np.ones",
                           "np.zeros", "np.empty", "np.full", "numpy.ones", "numpy.zeros", "numpy.empty", "numpy.full"})
#: A NumPy ``Generator``'s (``rng = np.random.default_rng()``) draws, whose ``size=`` (or, for
#: ``standard_normal`` and ``random``, first argument) is the shape.
_GENERATOR_DRAWS = frozenset({"standard_normal", "random", "normal", "uniform", "integers", "choice", "binomial",
                              "poisson", "exponential"})
#: Calls whose positional arguments are the dimensions: ``np.random.rand(n, 8)``.
_SHAPED_ALL = frozenset({"np.random.rand", "np.random.randn", "numpy.random.rand", "numpy.random.randn"})


def shape_of_new(node: ast.AST) -> tuple | None:
    """The shape expressions of the tensor or array that ``node`` makes (``tf.ones((n, 8))``: ``n``,
    ``8``), or None when ``node`` makes none of those or its shape is not written out."""
    if not isinstance(node, ast.Call):
        return None
    name = callee_text(node.func)
    if name in _SHAPED_ALL or ("." in name and name.rpartition(".")[2] in ("rand", "randn") and node.args
                               and not node.keywords):
        return tuple(node.args)  # (``rng.randn(n, 4)`` of a ``np.random.RandomState`` too)
    shape = next((k.value for k in node.keywords if k.arg in ("shape", "size", "dims")), None)
    if shape is None and name in _SHAPED_FIRST and node.args:
        shape = node.args[0]
    last = name.rpartition(".")[2]
    if shape is None and "." in name and last in ("standard_normal", "random") and node.args:
        shape = node.args[0]  # ``rng.standard_normal((16, T, 4))``: a NumPy Generator's draw of that shape
    if shape is None or name not in _SHAPED_FIRST and not name.startswith(("np.random.", "numpy.random.", "tf.random.")) \
            and last not in _GENERATOR_DRAWS:
        return None
    return tuple(shape.elts) if isinstance(shape, (ast.Tuple, ast.List)) else (shape,)


def sliced_shape(node: ast.AST) -> tuple | None:
    """The length expression of a slice whose length its upper bound sets (``data[:n]``,
    ``xs[0:10 + epoch]``, ``x[:, :n]``), or a window ``x[i:i + w]`` whose width is a name or an
    expression (``(w,)``: it changes when ``w`` does: ``xs[start:start + bs]`` over ``for bs in range(5, 45)``),
    as a shape: ``(n,)``; None for other subscripts. Another slice with a lower bound that is not a
    constant is a window of fixed length (``data[i:i + 64]``, ``x[k * bs:(k + 1) * bs]``)."""
    if node.__class__ is not ast.Subscript:
        return None
    index = node.slice
    for part in (index.elts if index.__class__ is ast.Tuple else (index,)):
        if part.__class__ is not ast.Slice or part.step is not None:
            continue
        if part.upper is None or part.upper.__class__ is ast.Constant:
            continue
        if part.lower is None or part.lower.__class__ is ast.Constant:
            return (part.upper,)
        upper = part.upper
        if (upper.__class__ is ast.BinOp and upper.op.__class__ is ast.Add and upper.right.__class__ is not ast.Constant
                and ast.dump(upper.left) == ast.dump(part.lower)):
            return (upper.right,)  # ``xs[start:start + bs]``: a window whose width ``bs`` sets
    return None


def few_values(node: ast.AST) -> bool:
    """Whether the number ``node`` takes only a few values however often it changes: ``i % 2`` (at most
    8 values), ``float(i > 50)``, ``int(done)`` of a comparison: a few traces, not one per iteration."""
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mod):
        right = node.right
        return isinstance(right, ast.Constant) and type(right.value) is int and 0 < right.value <= 8
    if isinstance(node, ast.Call) and len(node.args) == 1 and isinstance(node.func, ast.Name) \
            and node.func.id in ("int", "float"):
        return isinstance(node.args[0], (ast.Compare, ast.BoolOp)) or (
            isinstance(node.args[0], ast.UnaryOp) and isinstance(node.args[0].op, ast.Not)) or few_values(node.args[0])
    return False


#: Calls that keep their input's shape: ``tf.constant(x)``, ``np.asarray(x)`` (and ``x.astype(...)``,
#: ``x.copy()``).
_SAME_SHAPE = frozenset({"tf.constant", "tf.convert_to_tensor", "np.asarray", "np.array", "numpy.asarray", "numpy.array"})


def same_shape_source(node: ast.AST) -> ast.AST:
    """What ``node`` takes its shape from, through calls that keep it (``tf.constant(xb)``: ``xb``;
    ``np.random.rand(16, T, 4).astype(...)``: the ``rand`` call); ``node`` itself otherwise."""
    for _ in range(4):
        if node.__class__ is not ast.Call:
            break
        func = node.func
        if func.__class__ is ast.Attribute and func.attr in ("astype", "copy"):
            node = func.value
        elif node.args and callee_text(func) in _SAME_SHAPE:
            node = node.args[0]
        else:
            break
    return node


def shape_of(node: ast.AST) -> tuple | None:
    """The shape expressions of the tensor ``node`` passes, made (:func:`shape_of_new`) or sliced
    (:func:`sliced_shape`), through calls that keep the shape (``np.random.rand(16, T, 4).astype(...)``,
    a twenty-third new user's trial); None when neither says."""
    node = same_shape_source(node)
    return shape_of_new(node) or sliced_shape(node)
