"""Regenerate each rule's ``FIXES`` (what ``graphguard check --fix --unsafe-fixes`` makes of its INVALID
examples) from the current fixer, in place in ``graphguard/rules/gg*.py``.

Usage: ``.venv/bin/python tools/generate_fixes.py`` (prints each rule's fixed example indexes). Read the
``git diff`` before committing: the expected texts are the specification ``tests/test_fix.py`` checks,
and a change there is a change in what --fix does. Then ``python -m graphguard.rules.docs``.
"""
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from graphguard.rules import RULES

out = {}
with tempfile.TemporaryDirectory() as tmp:
    for code, rule in RULES.items():
        for i, src in enumerate(rule.INVALID):
            path = Path(tmp) / f"{code}_{i}.py"
            path.write_text(src)
    subprocess.run([sys.executable, "-m", "graphguard", "check", "--no-cache", "-q", "--fix-only", "--unsafe-fixes", tmp],
                   capture_output=True)
    for code, rule in RULES.items():
        fixes = {}
        for i, src in enumerate(rule.INVALID):
            new = (Path(tmp) / f"{code}_{i}.py").read_text()
            if new != src:
                fixes[i] = new
        out[code] = fixes

for code, fixes in out.items():
    rule = RULES[code]
    module = sys.modules[rule.__module__]
    path = Path(module.__file__)
    text = path.read_text()
    for marker in ("\n    #: What ``--fix --unsafe-fixes``", "\n    FIXES: dict = {}", "\n    FIXES = "):
        if marker in text:
            text = text[:text.index(marker)] + "\n"
            break
    body = "\n    #: What ``--fix --unsafe-fixes`` makes of INVALID[i] (Fixit's expected_replacement); the tests\n    #: check it, the docs show it.\n    FIXES = {\n"
    for i, new in fixes.items():
        assert '"""' not in new
        body += f'        {i}: """\\\n{new}""",\n'
    body += "    }\n" if fixes else ""
    if not fixes:
        body = "\n    FIXES: dict = {}  # no automatic fix: see Fix safety\n"
    text = text.rstrip("\n") + "\n" + body
    path.write_text(text)
    print(code, sorted(fixes))
