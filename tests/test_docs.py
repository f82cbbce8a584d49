"""The committed rule pages are exactly what the rules render (docs cannot drift)."""

from pathlib import Path

import pytest

from graphguard.rules import RULES
from graphguard.rules.docs import render

DOCS = Path(__file__).resolve().parents[1] / "docs" / "rules"


@pytest.mark.parametrize("code", sorted(RULES))
def test_rule_page_is_up_to_date(code):
    page = DOCS / f"{code}.md"
    assert page.exists(), f"missing {page}; run: python -m graphguard.rules.docs"
    assert page.read_text(encoding="utf-8") == render(RULES[code]), (
        f"{page} is out of date; run: python -m graphguard.rules.docs"
    )
