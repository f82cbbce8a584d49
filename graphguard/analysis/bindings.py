"""What local names stand for: TensorFlow modules, sessions, graphs and TF-made objects.

A small, pyflakes-style binding model. The analysis needs to know, for a name or an attribute chain
in the code, only one of these things:

* :class:`TFName` - a canonical TensorFlow path (``import tensorflow.compat.v1 as tf`` binds ``tf``
  to ``TFName("tf")``; ``from tensorflow.train import Saver`` binds ``Saver`` to
  ``TFName("tf.train.Saver")``);
* :data:`SESSION` - a ``tf.Session`` (or another session maker's result);
* :class:`GraphValue` - a ``tf.Graph()`` and the loops it was created in;
* :class:`TFObject` - anything else a TensorFlow call returned (a tensor, an op, an optimizer, a
  dataset): methods such as ``minimize`` and ``get_next`` on it build ops, and ``T.eval()`` on it
  is a session step;
* :data:`OTHER` - a binding the analysis knows nothing about, which shadows a name from an outer
  scope.
"""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class TFName:
    """A canonical TensorFlow module, function or class path, always starting with ``"tf"``."""

    path: str

    def attribute(self, attr: str) -> "TFName":
        """The canonical path of ``self.attr``; ``tf.compat.v1`` and ``tf.compat.v2`` fold into ``tf``."""
        if self.path == "tf.compat" and attr in ("v1", "v2"):
            return TFName("tf")
        return TFName(f"{self.path}.{attr}")


@dataclass(frozen=True)
class TFObject:
    """The result of calling the TensorFlow name ``api`` (a tensor, op, optimizer, dataset, ...)."""

    api: str


@dataclass(frozen=True)
class GraphValue:
    """A ``tf.Graph()``; ``loops`` are the ids of the loops that enclose its creation."""

    loops: frozenset


class _Marker:
    def __init__(self, name: str) -> None:
        self._name = name

    def __repr__(self) -> str:
        return self._name


SESSION = _Marker("SESSION")
OTHER = _Marker("OTHER")

#: Top-level modules whose names are TensorFlow's, and their canonical root.
_ROOTS = {"tensorflow": "tf", "keras": "tf.keras", "tf_keras": "tf.keras"}


def canonical_module(dotted: str) -> TFName | None:
    """The canonical :class:`TFName` of an imported module path, or None when it is not TensorFlow.

    ``"tensorflow.compat.v1"`` -> ``TFName("tf")``; ``"keras.backend"`` -> ``TFName("tf.keras.backend")``.
    """
    parts = dotted.split(".")
    root = _ROOTS.get(parts[0])
    if root is None:
        return None
    name = TFName(root)
    for part in parts[1:]:
        name = name.attribute(part)
    return name


# A name the analysis takes for a session when nothing else is known about it: sess, session,
# sess2, train_sess, mon_sess, self._session. Parameters and factory results are usually named so.
_SESSION_NAME = re.compile(r"^(?:\w+_)?sess(?:ion)?(?:_?\d+)?$")


def looks_like_session(identifier: str) -> bool:
    """True when ``identifier`` is conventionally a session (``sess``, ``train_sess``, ``_session``)."""
    return _SESSION_NAME.match(identifier.lstrip("_").lower()) is not None


class Scope(dict):
    """Names bound in one function, class or module body. ``is_class`` scopes are skipped by lookups
    from nested functions, as in Python."""

    __slots__ = ("is_class",)

    def __init__(self, is_class: bool = False) -> None:
        super().__init__()
        self.is_class = is_class
