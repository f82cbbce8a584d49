"""The shape of a rule: one small, self-describing class per module (after Fixit's rules).

A rule reports one kind of :class:`~graphguard.analysis.facts.Construction` that the shared analysis
finds; it does no traversal of its own, so adding a rule costs no extra pass over the file. Its class
docstring is its documentation (markdown with ruff's headings), ``MESSAGE`` its message, and its
``VALID`` and ``INVALID`` snippets are both its tests (``tests/test_rules.py``) and the examples in
its generated page (``docs/rules/CODE.md``).

In ``INVALID`` snippets, every line that must be reported ends with a ``# CODE`` comment
(``saver = tf.train.Saver()  # GG102``); no other line may be reported for that code.
"""

from __future__ import annotations

import re
from typing import ClassVar

from graphguard.analysis.catalog import Effect
from graphguard.analysis.fixpoint import Origin

#: How a message names what repeats a construction when no loop statement does (``Loop.kind``).
_REPEATERS = {"search": ("trial of", "the search"), "request handler": ("request to", "the handler")}
_ITERATION = re.compile(r"\b(every|each) iteration of the (?:session )?loop at line")


class Rule:
    """Base class. Subclasses set every class attribute below."""

    CODE: ClassVar[str]  #: stable code, ``GG102``
    NAME: ClassVar[str]  #: kebab-case name saying what is wrong, ``saver-in-session-loop``
    EFFECTS: ClassVar[frozenset[Effect]]  #: the construction effects this rule reports
    #: Message template. ``{subject}`` is what repeats, as written (```tf.train.Saver(...)```, or
    #: ```build_head(...)` (through `tf.reduce_mean(...)` at model.py:12)`` for a helper);
    #: ``{loop_row}`` is the 1-based line of the loop that repeats it.
    MESSAGE: ClassVar[str]
    VALID: ClassVar[tuple[str, ...]]
    INVALID: ClassVar[tuple[str, ...]]
    #: ``{i: text}``: what ``graphguard check --fix --unsafe-fixes`` makes of ``INVALID[i]`` (Fixit's
    #: ``expected_replacement``); an INVALID example not listed is left unchanged.
    FIXES: ClassVar[dict[int, str]] = {}
    #: The "Fix safety" section of the docs (ruff's heading): what is fixed, when it is safe, and why
    #: the rest is not.
    FIX_SAFETY: ClassVar[str] = ""

    @classmethod
    def message(cls, subject: str, loop_row: int, via: Origin | None = None, kind: str = "",
                outer_row: int = 0) -> str:
        """The finding's message for ``subject`` repeated by the loop at ``loop_row``; ``via`` is where
        a called helper builds it, named by its path as the run names files (``lib/__init__.py:3``: a
        project has several ``__init__.py`` and ``model.py``; a new user's trial). ``kind`` names what
        repeats it when no loop statement does (``Loop.kind``): ``every trial of the search at line 12``,
        ``every request to the handler at line 40``. ``outer_row``: a loop around that one that repeats
        it too (``for epoch`` around ``for batch``), named after it: ``the session loop at line 7
        (inside the loop at line 6)``."""
        if via is not None:
            subject = f"{subject} (through {via.subject} at {via.path}:{via.row})"
        text = cls.MESSAGE.format(subject=subject, loop_row=loop_row)
        if kind in _REPEATERS:
            unit, noun = _REPEATERS[kind]
            text = _ITERATION.sub(lambda m: f"{m[1]} {unit} {noun} at line", text)
        elif outer_row:
            text = text.replace(f"loop at line {loop_row}", f"loop at line {loop_row} (inside the loop at line {outer_row})", 1)
        return text

    @classmethod
    def fix(cls) -> str:
        """The advice of the message (what follows its ``; ``), for a reader who already knows what
        repeats: the runtime guard prints it under the lines that built ops of this rule's kind."""
        return cls.MESSAGE.split("; ", 1)[-1]

    @classmethod
    def summary(cls) -> str:
        """The first paragraph of the docstring's "What it does" section, on one line."""
        doc = (cls.__doc__ or "").strip()
        body = doc.split("## What it does", 1)[-1].strip()
        return " ".join(body.split("\n\n", 1)[0].split())
