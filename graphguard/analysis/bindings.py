"""What local names stand for: TensorFlow modules, sessions, graphs, TF-made objects, project code.

A small, pyflakes-style binding model. For a name or an attribute chain in the code the analysis
needs to know only one of these things:

* :class:`TFName` - a canonical TensorFlow path (``import tensorflow.compat.v1 as tf`` binds ``tf``
  to ``TFName("tf")``; ``from tensorflow.train import Saver`` binds ``Saver`` to
  ``TFName("tf.train.Saver")``);
* :data:`SESSION` - a ``tf.Session`` (or another session maker's result);
* :data:`STEP_CALLABLE` - the callable that ``sess.make_callable(...)`` returns: calling it is a step;
* :class:`GraphValue` - a ``tf.Graph()`` and the loops it was created in;
* :class:`TFObject` - anything else a TensorFlow call returned, with its ``kind`` (``tensor``,
  ``variable``, ``optimizer``, ``dataset``, ``iterator``, ...): its methods may build ops;
* :class:`ProjectRef` - a function or class of the checked project (maybe in another module);
* :class:`Instance` - an object of a project class; :class:`CallResult` - what a project function
  returned (a session from a factory, a tensor from a model builder), known only after every module's
  summary is computed;
* :class:`Param` - a function parameter: what callers pass to it is known in phase 2
  (:mod:`graphguard.analysis.fixpoint`), which then decides what its uses build;
* :class:`Elements` - a Python container (a list, tuple, dict, ``zip``, ``enumerate``, a
  comprehension's result) and the value of its elements, so ``for v in self.vars: v.assign(x)`` knows
  ``v`` is a variable; :class:`Parts` - a tuple of values (``zip``'s elements, ``dict.items()``);
  :class:`Choice` - one of several values (``[ClsHead(), BoxHead()]``);
* :data:`OTHER` - a binding the analysis knows nothing about, which shadows outer names.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import NamedTuple


@dataclass(frozen=True)
class TFName:
    """A canonical TensorFlow module, function or class path, always starting with ``"tf"``."""

    path: str

    def attribute(self, attr: str) -> "TFName":
        """The canonical path of ``self.attr``; ``tf.compat.v1`` and ``tf.compat.v2`` fold into ``tf``, and
        ``tensorflow.python.keras`` (the private package TF1-era code imported Keras from) into ``tf.keras``."""
        key = (self.path, attr)
        found = _ATTRIBUTES.get(key)
        if found is None:
            if self.path == "tf.compat" and attr in ("v1", "v2"):
                found = TFName("tf")
            elif self.path == "tf.python" and attr == "keras":
                found = TFName("tf.keras")
            else:
                found = TFName(f"{self.path}.{attr}")
            _ATTRIBUTES[key] = found
        return found


#: (path, attribute) -> :meth:`TFName.attribute`'s answer, made once per process (names are values:
#: a few thousand distinct ones, read hundreds of thousands of times on a large repository)
_ATTRIBUTES: dict = {}


@dataclass(frozen=True)
class TFObject:
    """The result of a TensorFlow call: ``kind`` says which methods build ops (see the catalog)."""

    kind: str


TENSOR = TFObject("tensor")
_OBJECTS: dict = {"tensor": TENSOR}


def tf_object(kind: str) -> TFObject:
    """``TFObject(kind)``, one per kind and process (a value: equal to any other of its kind)."""
    found = _OBJECTS.get(kind)
    if found is None:
        found = _OBJECTS[kind] = TFObject(kind)
    return found


@dataclass(frozen=True)
class GraphValue:
    """A ``tf.Graph()``; ``loops`` are the indices of the loops that enclose its creation."""

    loops: frozenset


#: ``new_tuple(Site, (row, ...))``: a named tuple made without its own ``__new__`` (a Python function:
#: one call more for each of the hundred thousand refs, sites and project calls of a large run)
new_tuple = tuple.__new__


class Ref(NamedTuple):
    """A project function or class: ``module`` is the dotted module as imported (``""`` for the
    module being read), ``name`` the qualified name inside it (``build``, ``Model.loss``).
    A named tuple: refs are hashed and pickled by the hundred thousand, in C."""

    module: str
    name: str

    def member(self, attr: str) -> "Ref":
        return new_tuple(Ref, (self.module, f"{self.name}.{attr}" if self.name else attr))


@dataclass(frozen=True)
class ProjectRef:
    """A name bound to project code (a module, a function or a class); resolved after all files are read.
    ``is_class`` is known for names defined in the module being read, None for imported ones."""

    ref: Ref
    is_class: bool | None = None


@dataclass(frozen=True)
class Instance:
    """An instance of the project class ``cls``."""

    cls: Ref


@dataclass(frozen=True)
class CallResult:
    """What calling the project function ``ref`` returned."""

    ref: Ref


@dataclass(frozen=True)
class MethodResult:
    """What ``receiver.method(...)`` returned, where ``receiver`` is a :class:`Param` or a
    :class:`CallResult` (``ds.make_one_shot_iterator()`` on a dataset parameter): known in phase 2."""

    receiver: object
    method: str


@dataclass(frozen=True)
class Param:
    """A parameter of the function being read."""

    name: str


@dataclass(frozen=True)
class InitParam:
    """``self.X`` read in a method of module class ``cls`` whose ``__init__`` sets ``self.X = name``
    (a parameter): what the calls of the class pass for it, also from other modules (phase 2)."""

    cls: str
    name: str


@dataclass(frozen=True)
class Elements:
    """A Python container whose elements are ``element`` (a value, a :class:`Parts`, or None when
    unknown). ``count`` is its length when the source says (a literal ``[a, b, c]``); ``setup`` marks
    one model's fixed collection (``tf.trainable_variables()``, a file of saved weights): a loop over
    it is one-shot setup, however long. Subscripting it builds no op."""

    element: object = None
    count: int | None = None
    setup: bool = False
    #: Read from a file (``np.load``, ``pickle.load``): its ``items()``, ``keys()``, ``values()`` or a
    #: ``dict`` of it are saved weights by name (setup); the array itself may be data.
    saved: bool = False


@dataclass(frozen=True)
class Parts:
    """A tuple of values, unpacked by ``for var, p in zip(...)`` or ``for name, v in d.items()``."""

    values: tuple


@dataclass(frozen=True)
class Choice:
    """One of several values (the elements of ``[ClsHead(), BoxHead()]``): a method call on it may
    call any of their methods."""

    values: frozenset


class _Marker:
    def __init__(self, name: str) -> None:
        self._name = name

    def __repr__(self) -> str:
        return self._name

    def __reduce__(self):  # markers survive pickling (parallel workers) as the same objects
        return self._name


SESSION = _Marker("SESSION")
STEP_CALLABLE = _Marker("STEP_CALLABLE")
OTHER = _Marker("OTHER")

#: Top-level modules whose names are TensorFlow's, and their canonical root.
_ROOTS = {"tensorflow": "tf", "keras": "tf.keras", "tf_keras": "tf.keras"}


def canonical_module(dotted: str) -> TFName | None:
    """The canonical :class:`TFName` of an imported module path, or None when it is not TensorFlow.

    ``"tensorflow.compat.v1"`` -> ``TFName("tf")``; ``"keras.backend"`` -> ``TFName("tf.keras.backend")``;
    ``"tensorflow.contrib.slim"`` -> ``TFName("tf.contrib.slim")``.
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
