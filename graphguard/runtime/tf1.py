"""``graphguard run --tf1``: a TF1-era script, unchanged, on TensorFlow 2.

Inside the script (and the user's own modules next to it), ``import tensorflow as tf``,
``import tensorflow`` and ``from tensorflow import X`` give ``tensorflow.compat.v1``, with
``tf.compat.v1.disable_v2_behavior()`` called once before the first one returns, so ``tf.Session``,
``tf.placeholder`` and ``tf.train.GradientDescentOptimizer`` are there and the graph is TF1's.

How: ``builtins.__import__`` is wrapped while the script runs, and only imports made by user code
(a file outside the standard library, ``site-packages`` and TensorFlow/Keras, see
:func:`graphguard.runtime.attribution.is_library`) of ``tensorflow`` itself are answered with
``compat.v1``. TensorFlow is imported for real, by its own name, so its thousands of internal
imports (``tensorflow.python...`` by full name) and every library that imports it see the real
package: replacing ``sys.modules["tensorflow"]`` instead would make every later import of a
``tensorflow.python`` submodule search ``_api/v2/compat/v1`` and fail. Dotted imports
(``import tensorflow.compat.v1 as tf``, ``from tensorflow.python.ops import math_ops``) are left to
Python, except the packages TF 2 no longer has (``tensorflow.contrib``, ``tensorflow.examples``,
``tensorflow.estimator``): those are a one-line ``ImportError`` saying what is gone. The hook's own
frames are dropped from the traceback the launcher prints (:meth:`Tf1Shim.hide_frames`), so an uncaught
error ends at the user's import line, not inside graphguard.

``tf.layers`` and ``tf.compat.v1.layers`` need Keras 2 on TF 2.16 and later (Keras 3 says
```dense` is not available with Keras 3``): when the ``tf_keras`` package is installed,
``TF_USE_LEGACY_KERAS=1`` is set before TensorFlow is imported (unless the user set it), so
``tf.layers`` and ``tf.keras`` are Keras 2's; when it is missing and the script's source uses
``.layers.`` or ``.keras.``, a one-line hint says what to install.

Nothing here imports TensorFlow before the script does.
"""

from __future__ import annotations

import ast
import builtins
import importlib.metadata
import importlib.util
import os
import re
import sys
import types
from typing import Any, Optional

__all__ = ["Tf1Shim", "GONE"]

# Top-level parts of the TF 1 API that TF 2 does not have, and what to do instead.
GONE = {
    "contrib": "tf.contrib was removed in TensorFlow 2.0 and --tf1 cannot bring it back "
               "(tf.contrib.layers -> tf.layers or tf_slim, tf.contrib.rnn -> tf.nn.rnn_cell): the script needs an edit",
    "examples": "tensorflow.examples (the MNIST tutorial's input_data) is not part of TensorFlow 2: "
                "load the data with tf.keras.datasets.mnist.load_data() or NumPy instead (an edit)",
    "estimator": "tf.estimator was removed in TensorFlow 2.16 (the last with it is 2.15, on Python <= 3.11): "
                 "the script needs an edit or an older TensorFlow",
}
_USES_KERAS = re.compile(r"\.(layers|keras)\.")
#: What only TF 2 code says: it needs eager execution, which ``--tf1`` turns off.
_TF2_ONLY = re.compile(r"\bGradientTape\b|@tf\.function\b|\btf\.function\(|\.numpy\(\)|\bexecuting_eagerly\(")
#: Errors of TF 2 code run with eager execution off (measured on TF 2.21 with Keras 3: a ``tf.function``
#: returning a SymbolicTensor to ``float()``, Keras 3's ``fit`` iterating a ``tf.data`` dataset).
_EAGER_ONLY_ERRORS = re.compile(r"SymbolicTensor|only supports Python-style iteration in eager mode"
                                r"|only available when eager execution is enabled|Graph execution")


def tf_keras_available() -> bool:
    return importlib.util.find_spec("tf_keras") is not None


def _keras_major() -> Optional[int]:
    try:
        return int(importlib.metadata.version("keras").split(".")[0])
    except (importlib.metadata.PackageNotFoundError, ValueError):
        return None


class Tf1Shim:
    """Installed around one script's run: ``install()`` before, ``uninstall()`` after."""

    def __init__(self, script: str) -> None:
        self.script = script
        self.v1: Any = None
        self.disabled_v2 = False
        self._original_import: Any = None
        self._saved_env: Optional[tuple[bool, Optional[str]]] = None
        #: the :meth:`hint` printed before the script ran (None: none), not to be said again at its error
        self.said: Optional[str] = None

    # -- set-up -----------------------------------------------------------------------------------

    def hint(self) -> Optional[str]:
        """One line when the script is TF 2 code (``tf.GradientTape``, ``tf.function``, ``.numpy()``: it
        needs the eager execution ``--tf1`` turns off), or uses ``tf.layers``/``tf.keras`` and Keras 2 is
        not installed."""
        try:
            with open(self.script, encoding="utf-8", errors="replace") as handle:
                text = handle.read()
        except OSError:
            return None
        tf2 = _TF2_ONLY.search(text)
        if tf2 is not None:
            row = text.count("\n", 0, tf2.start()) + 1
            return (f"graphguard run --tf1: this script is TF 2 code (`{tf2.group(0).strip('(@')}` at line {row}), which "
                    f"needs the eager execution --tf1 turns off: run it without --tf1")
        if tf_keras_available() or (_keras_major() or 3) < 3:
            return None
        if not _uses_keras(text):
            return None
        version = _tf_version()
        pin = f"tf_keras=={version}" if version else "tf_keras (the version of your TensorFlow)"
        return (f"graphguard run --tf1: this script uses tf.layers or tf.keras, which need Keras 2 on TensorFlow "
                f"with Keras 3: pip install {pin}")

    def install(self) -> None:
        if "TF_USE_LEGACY_KERAS" not in os.environ and "tensorflow" not in sys.modules and tf_keras_available():
            self._saved_env = (True, None)
            os.environ["TF_USE_LEGACY_KERAS"] = "1"
        self._original_import = builtins.__import__
        builtins.__import__ = self._import

    def uninstall(self) -> None:
        if self._original_import is not None and builtins.__import__ == self._import:
            builtins.__import__ = self._original_import
        self._original_import = None
        if self._saved_env is not None:
            os.environ.pop("TF_USE_LEGACY_KERAS", None)
            self._saved_env = None
        # v2 behaviour stays disabled: TensorFlow refuses enable_eager_execution() once a graph has been
        # built ("must be called at program startup"), and graphguard run's process ends with the script.

    # -- the import hook --------------------------------------------------------------------------

    def _import(self, name: str, globals: Any = None, locals: Any = None, fromlist: Any = (), level: int = 0) -> Any:
        original = self._original_import
        if level != 0 or not name.startswith("tensorflow") or not _from_user(globals):
            return original(name, globals, locals, fromlist, level)
        parts = name.split(".")
        if parts[0] != "tensorflow":  # tensorflow_hub, tensorflow_datasets: their own packages
            return original(name, globals, locals, fromlist, level)
        if len(parts) > 1:
            if parts[1] in GONE:
                raise ImportError(f"graphguard run --tf1: cannot import {name}: {GONE[parts[1]]}", name=name)
            return original(name, globals, locals, fromlist, level)
        v1 = self._v1(original(name, globals, locals, None, 0))
        for item in fromlist or ():
            if item in GONE:
                raise ImportError(f"graphguard run --tf1: cannot import {item} from tensorflow: {GONE[item]}",
                                  name=f"tensorflow.{item}")
        return v1

    @staticmethod
    def hide_frames(error: BaseException) -> None:
        """Drops the frames of the import hook (``_import``) from the traceback of ``error`` and of the
        exceptions chained to it, as Python drops its own import machinery's: the hook's ``raise`` of a
        gone package, and the hook's call in between when a module the script imports fails."""
        todo, seen = [error], set()
        while todo:
            current = todo.pop()
            if current is None or id(current) in seen:
                continue
            seen.add(id(current))
            todo += [current.__cause__, current.__context__]
            entries, tb = [], current.__traceback__
            while tb is not None:
                entries.append(tb)
                tb = tb.tb_next
            kept = [entry for entry in entries if entry.tb_frame.f_code is not _HOOK_CODE]
            if len(kept) != len(entries):
                rebuilt = None
                for entry in reversed(kept):
                    rebuilt = types.TracebackType(rebuilt, entry.tb_frame, entry.tb_lasti, entry.tb_lineno)
                current.__traceback__ = rebuilt

    def _v1(self, tensorflow: Any) -> Any:
        if self.v1 is None:
            self.v1 = tensorflow.compat.v1
            if self.v1.executing_eagerly():  # not already disabled by the script or by an earlier run
                self.v1.disable_v2_behavior()
                self.disabled_v2 = True
        return self.v1


_HOOK_CODE = Tf1Shim._import.__code__


def keras_2_pin() -> str:
    """What to ``pip install`` for Keras 2 beside the installed TensorFlow: ``tf_keras==2.21.0``."""
    version = _tf_version()
    return f"tf_keras=={version}" if version else "tf_keras (the version of your TensorFlow)"


def _uses_keras(text: str) -> bool:
    """Whether the script's code (not its comments or strings) reads a ``.layers`` or ``.keras``
    attribute (``tf.layers.dense``, ``tf.keras.Model``); the text's match when it does not parse."""
    if not _USES_KERAS.search(text):
        return False
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return True
    return any(isinstance(node, ast.Attribute) and node.attr in ("layers", "keras") for node in ast.walk(tree))


def explain(error: BaseException) -> Optional[str]:
    """A one-line hint for an error a TF1-era script hits under ``--tf1`` on a part TF 2 lacks."""
    text = str(error)
    if isinstance(error, AttributeError):
        match = re.search(r"module 'tensorflow[\w.]*' has no attribute '(\w+)'", text)
        if match and match.group(1) in GONE:
            return f"graphguard run --tf1: {GONE[match.group(1)]}"
    if _EAGER_ONLY_ERRORS.search(text):
        return ("graphguard run --tf1: the script failed on a part of TF 2 that needs eager execution, which "
                "--tf1 turns off: run it without --tf1")
    if "not available with Keras 3" in text and not tf_keras_available():
        version = _tf_version()
        return ("graphguard run --tf1: tf.layers needs Keras 2 on this TensorFlow: "
                f"pip install {f'tf_keras=={version}' if version else 'tf_keras'}")
    return None


#: The distributions TensorFlow is installed as (a new user's trial had ``tensorflow-cpu``).
_TF_DISTRIBUTIONS = ("tensorflow", "tensorflow-cpu", "tensorflow-gpu", "tensorflow-intel", "tensorflow-macos",
                     "tf-nightly", "tf-nightly-cpu")


def _tf_version() -> Optional[str]:
    """The installed TensorFlow's version, from its distribution's metadata (no import), or None."""
    for name in _TF_DISTRIBUTIONS:
        try:
            return importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            continue
    return None


def _from_user(globals: Any) -> bool:
    """True if the importing module is user code: a file outside the stdlib, site-packages and TF."""
    if not isinstance(globals, dict):
        return False
    filename = globals.get("__file__")
    if not isinstance(filename, str):
        return False
    from graphguard.runtime.attribution import is_library

    return not is_library(filename)
