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
from graphguard.analysis.summaries import Origin

#: How a message names what repeats a construction when no loop statement does (``Loop.kind``).
_REPEATERS = {"search": ("trial of", "the search"), "request handler": ("request to", "the handler")}
_ITERATION = re.compile(r"\bin the (?:session )?loop at line")


def _near(other: str, path: str | None) -> str:
    """``other`` as seen from the folder of ``path`` (``agent.py``, ``nets/metrics.py``,
    ``../common/util.py``): a message names the helper's file without repeating the folders the
    finding's own path already shows. As the run names it when ``path`` is unknown or on another drive."""
    if path is None:
        return other
    import os.path

    try:
        near = os.path.relpath(other, os.path.dirname(path) or os.curdir)
    except ValueError:
        return other
    return near.replace(os.sep, "/") if len(near) < len(other) else other


class Rule:
    """Base class. Subclasses set every class attribute below."""

    CODE: ClassVar[str]  #: stable code, ``GG102``
    NAME: ClassVar[str]  #: kebab-case name saying what is wrong, ``saver-in-session-loop``
    EFFECTS: ClassVar[frozenset[Effect]]  #: the construction effects this rule reports
    #: A few words for what the rule finds, without a subject (SARIF's ``shortDescription``).
    TITLE: ClassVar[str]
    #: Message template: what happens, in one short line (the concise output's; ruff's are 60-110
    #: characters). ``{subject}`` is what repeats, as written (```tf.train.Saver(...)```, or
    #: ```build_head(...)` (via `tf.reduce_mean(...)` at line 12)`` for a helper);
    #: ``{loop_row}`` is the 1-based line of the loop that repeats it.
    MESSAGE: ClassVar[str]
    #: What to do about it (and why, where the message has no room): shown by ``full`` output, JSON
    #: ``help``, SARIF ``help``, the editor's hover, ``graphguard rule`` and the runtime guard's ``Fix:``.
    ADVICE: ClassVar[str]
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
                outer_row: int = 0, path: str | None = None) -> str:
        """The finding's message for ``subject`` repeated by the loop at ``loop_row``; ``via`` is where
        a called helper builds it: ``at line 12`` in the finding's own file ``path``, elsewhere named by
        its path from the finding's folder (``lib/__init__.py:3``, ``../common/util.py:7``: a project has
        several ``__init__.py`` and ``model.py``, so the folders stay; a new user's trial). ``kind`` names what
        repeats it when no loop statement does (``Loop.kind``): ``every trial of the search at line 12``,
        ``every request to the handler at line 40``. ``outer_row``: a loop around that one that repeats
        it too (``for epoch`` around ``for batch``), named after it: ``the session loop at line 7
        (inside the loop at line 6)``."""
        if via is not None:
            where = f"line {via.row}" if via.path == path else f"{_near(via.path, path)}:{via.row}"
            subject = f"{subject} (via {via.subject} at {where})"
        text = cls.MESSAGE.format(subject=subject, loop_row=loop_row)
        if kind in _REPEATERS:
            unit, noun = _REPEATERS[kind]
            text = _ITERATION.sub(f"in every {unit} {noun} at line", text)
        elif outer_row:
            text = text.replace(f"loop at line {loop_row}", f"loop at line {loop_row} (inside the loop at line {outer_row})", 1)
        return text

    @classmethod
    def fix(cls) -> str:
        """What to do (:attr:`ADVICE`), for a reader who already knows what repeats: the runtime guard
        prints it under the lines that built ops of this rule's kind."""
        return cls.ADVICE

    @classmethod
    def summary(cls) -> str:
        """The first paragraph of the docstring's "What it does" section, on one line."""
        doc = (cls.__doc__ or "").strip()
        body = doc.split("## What it does", 1)[-1].strip()
        return " ".join(body.split("\n\n", 1)[0].split())
