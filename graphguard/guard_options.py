"""The runtime guards' options where users write them outside Python calls.

``pytest --graphguard`` reads them from ``[tool.graphguard.pytest]`` in ``pyproject.toml`` (kebab-case
keys: ``max-traces = 20``), from pytest's ini (``graphguard_max_traces = 20``, also ``-o`` on the command
line) and from ``@pytest.mark.graphguard(max_traces=20)``; ``%graphguard on max_traces=20`` in IPython.
This module holds their names, their defaults (those of ``graphguard run``) and the checks that turn a
bad value into one line (:class:`OptionError`). It imports nothing: the pytest plugin loads it at
start-up, and ``graphguard check`` never does.

The options map onto the guards' own arguments: ``max_traces`` and ``on_retrace`` onto
:class:`~graphguard.runtime.trace.TraceGuard`, the others onto the count-mode
:class:`~graphguard.runtime.guard.GraphGuard` made for each session (docs/graph-guard.md, "Options and units").
"""

from __future__ import annotations

from typing import Any, Optional

__all__ = ["DEFAULTS", "OPTIONS", "OptionError", "check", "guard_kwargs", "parse", "toml_key"]


class OptionError(ValueError):
    """A bad option name or value, as one line that says where it was written and what to write."""


class Option:
    """One option: its default, and either the least whole number it takes or the words it takes."""

    __slots__ = ("name", "default", "minimum", "choices", "help")

    def __init__(self, name: str, default: Any, help: str, minimum: Optional[int] = None,
                 choices: tuple[str, ...] = ()) -> None:
        self.name, self.default, self.help, self.minimum, self.choices = name, default, help, minimum, choices

    def expected(self) -> str:
        """What a value must be, in words: ``a whole number >= 1`` or ``'raise' or 'warn'``."""
        if self.choices:
            return " or ".join(repr(choice) for choice in self.choices)
        return f"a whole number >= {self.minimum}"


#: The options, by their Python name (as in a marker or a magic; ``toml_key`` gives the TOML spelling).
#: Defaults are graphguard run's (``graphguard run --help``); tests/test_pytest_plugin.py checks they agree.
OPTIONS: dict[str, Option] = {option.name: option for option in (
    Option("max_traces", 8, "traces one tf.function object may make (TraceGuard max_traces)", minimum=1),
    Option("on_growth", "raise", "graph growth: 'raise' fails the test at the leaking step, 'warn' warns",
           choices=("raise", "warn")),
    Option("on_retrace", "raise", "retracing: 'raise' fails the test at the call past max_traces, 'warn' warns",
           choices=("raise", "warn")),
    Option("warmup_steps", 2, "runs per session during which new ops are tolerated", minimum=0),
    Option("min_growth_steps", 2, "distinct steps on which a line must add ops before it is growth", minimum=1),
    Option("min_growth_sessions", 3, "sessions after the first on one graph a line may build ops for", minimum=1),
    Option("max_new_ops_per_step", 0, "ops a step may add after warm-up", minimum=0),
    Option("max_bounded_iterations", 10, "growth in loops the source counts, at most this many runs in all, is "
           "tolerated as bounded (0: act on any growth)", minimum=0),
)}

#: The defaults, by name.
DEFAULTS: dict[str, Any] = {name: option.default for name, option in OPTIONS.items()}
#: ``pytest --graphguard``'s defaults: a test's loop is short on purpose, so growth in it is acted on
#: however few its runs (``max_bounded_iterations = 0``; set it in ``[tool.graphguard.pytest]`` to differ).
PYTEST_DEFAULTS: dict[str, Any] = {**DEFAULTS, "max_bounded_iterations": 0}


def toml_key(name: str) -> str:
    """``max_traces`` -> ``max-traces``, the spelling of ``[tool.graphguard.pytest]``."""
    return name.replace("_", "-")


def _unknown(name: str, where: str, spell: Any = str) -> OptionError:
    known = ", ".join(spell(option) for option in OPTIONS)
    return OptionError(f"{where}: unknown option {name!r} (known: {known})")


def check(name: str, value: Any, where: str, spell: Any = str) -> Any:
    """``value`` for option ``name`` as written in a typed source (a marker keyword, a TOML value).

    Args:
        name: the option's Python name (``max_traces``).
        value: its value: an ``int`` (not a ``bool``) for counts, one of the words for ``on_*``.
        where: where it was written, the start of the error line (``pyproject.toml: [tool.graphguard.pytest]``).
        spell: how option names are spelled in that source (:func:`toml_key` for TOML), for the
            list of known names in the error.

    Raises:
        OptionError: unknown name, or a value of the wrong type or range (one line).
    """
    option = OPTIONS.get(name)
    if option is None:
        raise _unknown(spell(name), where, spell)
    if option.choices:
        if value not in option.choices:
            raise OptionError(f"{where}: {spell(name)} must be {option.expected()}, not {value!r}")
    elif not isinstance(value, int) or isinstance(value, bool) or value < option.minimum:
        raise OptionError(f"{where}: {spell(name)} must be {option.expected()}, not {value!r}")
    return value


def parse(name: str, text: str, where: str, spell: Any = str) -> Any:
    """Option ``name`` from text (pytest's ini, an IPython magic): a count is read as an ``int``.
    Raises :class:`OptionError` as :func:`check`."""
    option = OPTIONS.get(name)
    if option is None:
        raise _unknown(spell(name), where, spell)
    value: Any = text.strip()
    if not option.choices:
        try:
            value = int(value)
        except ValueError:
            raise OptionError(f"{where}: {spell(name)} must be {option.expected()}, not {text!r}") from None
    return check(name, value, where, spell)


def guard_kwargs(options: dict[str, Any]) -> dict[str, Any]:
    """The keyword arguments of the count-mode ``GraphGuard`` each session gets, from checked ``options``."""
    return {
        "mode": "count",
        "warmup_steps": options["warmup_steps"],
        "max_new_ops_per_step": options["max_new_ops_per_step"],
        "min_growth_steps": options["min_growth_steps"],
        "min_growth_sessions": options["min_growth_sessions"],
        "max_bounded_iterations": options["max_bounded_iterations"],
        "on_growth": options["on_growth"],
    }
