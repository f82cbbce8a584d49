"""TensorFlow's public API as data: what calling each name, or each method of a TF object, builds.

The data is ``tf_api.json`` next to this module. ``tools/generate_tf_api.py`` writes it from the
installed TensorFlow (the rules it follows are in that script's docstring); this module only reads
it, and never imports TensorFlow::

    >>> api = load()
    >>> api.effect("tf.argmax"), api.effect("tf.train.Saver"), api.effect("tf.name_scope")
    ('op', 'saver', 'none')
    >>> "minimize" in api.methods("optimizer")
    True

Names are canonical: ``tensorflow.compat.v1.train.Saver`` and ``tensorflow.train.Saver`` are both
``tf.train.Saver``; static methods are listed under their class (``tf.data.Dataset.range``).
"""

from __future__ import annotations

import functools
import json
from pathlib import Path

DATA_FILE = Path(__file__).with_name("tf_api.json")


class TFApi:
    """The generated data. Build it with :func:`load`."""

    __slots__ = ("tensorflow_version", "keras_version", "effects", "_names", "_methods", "_all", "_returns", "_reasons")

    def __init__(self, data: dict):
        self.tensorflow_version: str = data["tensorflow_version"]
        self.keras_version: str = data.get("keras_version", "")
        #: Effect -> what calling a name with that effect does (``"op"`` -> "adds ops ...").
        self.effects: dict[str, str] = data["effects"]
        self._names: dict[str, str] = data["names"]
        self._methods = {kind: frozenset(names) for kind, names in data["methods"].items()}
        self._all = frozenset().union(*self._methods.values())
        self._returns: dict[str, str] = data.get("returns", {})
        self._reasons: dict[str, str] = data.get("reasons", {})

    def effect(self, name: str) -> str | None:
        """The effect of calling ``name`` (``"op"``, ``"saver"``, ... ``"none"``); None if TF has no such name."""
        return self._names.get(name)

    def methods(self, kind: str) -> frozenset[str]:
        """Methods that build ops on a receiver of ``kind`` (``"tensor"``, ``"optimizer"``...); empty if unknown."""
        return self._methods.get(kind, frozenset())

    def all_methods(self) -> frozenset[str]:
        """Every method that builds ops on some receiver kind."""
        return self._all

    def kinds(self) -> frozenset[str]:
        """The receiver kinds :meth:`methods` knows."""
        return frozenset(self._methods)

    def returns(self, name: str) -> str | None:
        """The receiver kind of what calling ``name`` returns (``tf.train.AdamOptimizer`` -> ``"optimizer"``)."""
        return self._returns.get(name)

    def reason(self, key: str) -> str | None:
        """Why a hand-made override gave ``key`` its effect (``methods.<kind>.<method>`` for methods)."""
        return self._reasons.get(key)

    def names(self) -> dict[str, str]:
        """Every canonical name and its effect (a copy)."""
        return dict(self._names)


@functools.lru_cache(maxsize=1)
def load() -> TFApi:
    """The data in ``tf_api.json``, read once per process."""
    with DATA_FILE.open(encoding="utf-8") as file:
        return TFApi(json.load(file))
