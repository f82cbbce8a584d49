"""Render each rule's documentation page from its docstring and its VALID/INVALID examples.

``python -m graphguard.rules.docs [DIR]`` writes ``DIR/GGxxx.md`` (default ``docs/rules``);
``graphguard rule CODE`` prints the same text. ``tests/test_docs.py`` fails when the committed pages
differ from what this renders, so the docs cannot drift from the rules.
"""

from __future__ import annotations

import inspect
import sys
from pathlib import Path

from graphguard.rules import RULES, Rule


def _fence(code: str) -> str:
    return f"```python\n{code.rstrip()}\n```\n"


def _twin(example: str, valid: tuple[str, ...]) -> str:
    """The snippet of ``valid`` most like ``example`` (difflib's ratio over lines): "Use instead" shows
    the fixed twin of the example, not whichever valid snippet was written first (a new user's trial:
    GG101's page answered a `sess.run(tf.argmax(...))` loop with an unrelated replay buffer)."""
    import difflib

    lines = example.splitlines()
    return max(valid, key=lambda code: difflib.SequenceMatcher(None, lines, code.splitlines()).ratio())


def render(rule: type[Rule]) -> str:
    """The markdown page of ``rule``: What it does / Why is this bad? / Example / Use instead /
    More examples / References (ruff's headings)."""
    doc = inspect.cleandoc(rule.__doc__ or "")
    twin = _twin(rule.INVALID[0], rule.VALID)
    main, _, references = doc.partition("## References")
    parts = [
        f"# {rule.CODE} {rule.NAME}\n\n",
        main.strip() + "\n\n",
        "## Example\n\n",
        _fence(rule.INVALID[0]),
        "\n## Use instead\n\n",
        _fence(twin),
        "\n## More examples\n\n",
        "Lines marked with a comment are reported; every snippet is also a test case.\n\n",
        "### Reported\n\n",
        *(_fence(code) + "\n" for code in rule.INVALID[1:]),
        "### Not reported\n\n",
        *(_fence(code) + "\n" for code in rule.VALID if code is not twin),
        "## Fix safety\n\n",
        " ".join(rule.FIX_SAFETY.split()) + "\n",
    ]
    if rule.FIXES:
        index = min(rule.FIXES)
        parts += [f"\nThe {'example above' if index == 0 else f'reported example {index}'} after "
                  "`graphguard check --fix --unsafe-fixes`:\n\n", _fence(rule.FIXES[index])]
    if references.strip():
        parts.append("\n## References\n\n" + references.strip() + "\n")
    return "".join(parts)


def write_all(folder: Path) -> list[Path]:
    """Write every rule's page into ``folder``; returns the paths written."""
    folder.mkdir(parents=True, exist_ok=True)
    written = []
    for code, rule in RULES.items():
        path = folder / f"{code}.md"
        path.write_text(render(rule), encoding="utf-8")
        written.append(path)
    return written


if __name__ == "__main__":
    for path in write_all(Path(sys.argv[1] if len(sys.argv) > 1 else "docs/rules")):
        print(path)
