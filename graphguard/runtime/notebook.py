"""IPython and Jupyter: what a running notebook holds, in the notebook's own words.

In a notebook (ipykernel) or an IPython shell, the value of a cell's last expression is displayed and
kept by IPython's output history: ``Out[N]`` (the dict ``_oh``, also ``shell.history_manager.output_hist``),
the names ``_N``, and the rotating ``_``, ``__``, ``___`` (in the user namespace, in the shell's hidden
namespace ``user_ns_hidden``, and as attributes of the display hook). A model displayed once stays alive
until ``%reset -f out``. :class:`OutputHistory` is a read of that machinery, made once per judgement,
for the :class:`~graphguard.runtime.sweep.SweepGuard` reference search; :func:`cell_label` names the cell
a code object came from (``cell In[3], line 4``), as IPython's own tracebacks do.

Nothing here imports IPython: it is only looked at when already in ``sys.modules`` and a shell is running.
"""

from __future__ import annotations

import re
import sys
from typing import Any, Optional

__all__ = ["OutputHistory", "cell_label", "history_name", "running_shell"]

_OUTPUT_NAME = re.compile(r"_[0-9]+")
_LAST = ("_", "__", "___")
_HISTORY = frozenset({"In", "Out", "_ih", "_oh", "_dh", "_i", "_ii", "_iii", "_exit_code"})
_INPUT_NAME = re.compile(r"_i[0-9]+")


def running_shell() -> Optional[Any]:
    """The running IPython shell (``get_ipython()``), or ``None`` outside IPython. Never imports IPython."""
    module = sys.modules.get("IPython.core.getipython")
    get = getattr(module, "get_ipython", None) if module is not None else None
    if get is None:
        return None
    try:
        shell = get()
    except Exception:
        return None
    return shell if isinstance(getattr(shell, "user_ns", None), dict) else None


def history_name(name: str) -> Optional[str]:
    """What IPython binds ``name`` for in the user namespace: ``"output"`` (``_3``: ``Out[3]``), ``"last"``
    (``_``, ``__``, ``___``: the last three outputs, rebound by the next ones), ``"history"`` (``In``,
    ``Out``, ``_oh``, ``_i3``...: the history containers and input strings), or ``None`` (the user's)."""
    if name in _LAST:
        return "last"
    if _OUTPUT_NAME.fullmatch(name):
        return "output"
    if name in _HISTORY or _INPUT_NAME.fullmatch(name):
        return "history"
    return None


class OutputHistory:
    """IPython's output history as the reference search sees it (ids only; read once per judgement).

    Attributes:
        namespace: ``id()`` of the user namespace (the cells' globals).
        output: ``id()`` of the ``Out`` / ``_oh`` dict, or ``None`` (output caching off).
        hidden: ``id()`` of ``user_ns_hidden`` (IPython's own copies of ``_N``, ``_``...), or ``None``.
        skip: ``id()`` of the objects that mirror ``_`` (the display hook, its ``__dict__``, the last
            ``ExecutionResult``): never followed, so a chain names ``Out[N]`` rather than them.
        label: ``"notebook"`` under ipykernel, else ``"IPython"`` (``notebook variable `solvers```).
    """

    def __init__(self, shell: Any) -> None:
        namespace = shell.user_ns
        self.namespace = id(namespace)
        out = namespace.get("_oh")
        if not isinstance(out, dict):
            out = getattr(getattr(shell, "history_manager", None), "output_hist", None)
        self._out = out if isinstance(out, dict) else {}
        self.output: Optional[int] = id(out) if isinstance(out, dict) else None
        hidden = getattr(shell, "user_ns_hidden", None)
        self.hidden: Optional[int] = id(hidden) if isinstance(hidden, dict) else None
        self._names = namespace
        self.skip: set[int] = set()
        for holder in (getattr(shell, "displayhook", None), getattr(shell, "last_execution_result", None)):
            if holder is None:
                continue
            self.skip.add(id(holder))
            try:
                self.skip.add(id(object.__getattribute__(holder, "__dict__")))
            except (AttributeError, TypeError):
                pass
        self.label = "notebook" if type(shell).__module__.startswith("ipykernel") else "IPython"

    def variable(self, name: str) -> str:
        """A user variable of the cells, as a root: ``notebook variable `solvers```."""
        return f"{self.label} variable `{name}`"

    def output_root(self, key: Any, value: Any) -> str:
        """The root text for ``Out[key]`` holding ``value``: ``output history `Out[3]` (also `_3`)``."""
        text = f"output history `Out[{key}]`"
        if self._names.get(f"_{key}") is value:
            text += f" (also `_{key}`)"
        return text

    def name_root(self, name: str, value: Any) -> str:
        """The root text for the output name ``_3`` (user namespace) holding ``value``."""
        key = name[1:]
        if key.isdigit() and self._out.get(int(key)) is value:
            return self.output_root(int(key), value)
        return f"output history `{name}`"

    def hidden_root(self, name: Any) -> str:
        """The root text for IPython's hidden copy of an output name (``user_ns_hidden['_']``)."""
        return f"IPython's hidden output name `{name}` (get_ipython().user_ns_hidden)"


#: The file name IPython's ``%%time`` compiles a cell's body under (``IPython.core.magics.execution``).
TIMED = "<timed exec>"


def note_cell(shell: Any, raw_cell: str) -> None:
    """Before a cell runs (IPython's ``pre_run_cell`` event, registered by ``%load_ext graphguard``): a
    ``%%time`` cell's body is compiled as ``<timed exec>``, a name no line cache knows; its lines are put
    there, so its ops are located and classified as any cell's (``cell In[4], line 3 (tf.argmax)``; a
    tenth new user's trial read ``<timed exec>:3`` and the wrong rule)."""
    first, _, body = (raw_cell or "").partition("\n")
    if first.strip().split(" ", 1)[0] != "%%time" or not body:
        return
    import linecache

    lines = body.splitlines(keepends=True)
    linecache.cache[TIMED] = (len(body), None, lines, TIMED)


def cell_label(filename: Optional[str], lineno: Optional[int] = None) -> Optional[str]:
    """``"cell In[3], line 4"`` when ``filename`` is the code of an IPython cell run in this process
    (``<ipython-input-3-...>`` in a shell, ``/tmp/ipykernel_123/456.py`` under ipykernel, the body of a
    ``%%time`` cell: :func:`note_cell`), as IPython's tracebacks name it; else ``None``."""
    shell = running_shell()
    if shell is None or not filename:
        return None
    if filename == TIMED:
        # the running cell is the last input IPython stored (its number is counted before or after
        # ``pre_run_cell`` depending on the IPython version); its body starts on the cell's second line
        inputs = getattr(getattr(shell, "history_manager", None), "input_hist_raw", None)
        if not inputs or not str(inputs[-1]).lstrip().startswith("%%time"):
            return None
        line = f", line {lineno + 1}" if lineno is not None else ""
        return f"cell In[{len(inputs) - 1}]{line}"
    compiler = getattr(shell, "compile", None)
    mapping = getattr(compiler, "_filename_map", None)
    number = mapping.get(filename) if isinstance(mapping, dict) else None
    if number is None:
        match = re.fullmatch(r"<ipython-input-([0-9]+)-[0-9a-f]+>", filename)
        if match is None:
            return None
        number = match.group(1)
    return f"cell In[{number}]" + (f", line {lineno}" if lineno is not None else "")
