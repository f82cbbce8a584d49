"""Every program under fixtures/analysis/ is checked against the findings its header expects.

A header is two comment lines at the top of each file::

    # graphguard fixture: <the real-world situation it models>
    # expect: GG102@14 GG101@22        (or: # expect: none)

A single file is checked alone; a folder is checked as one tree (cross-module helpers).
"""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

import pytest

from graphguard.checker import Checker
from graphguard.discovery import find_python_files

ROOT = Path(__file__).resolve().parents[1] / "fixtures" / "analysis"
EXPECT = re.compile(r"^# expect: (none|(?:GG\d{3}@\d+)(?: GG\d{3}@\d+)*)$", re.M)


def _cases():
    for kind in ("flagged", "lookalike"):
        for entry in sorted((ROOT / kind).iterdir()):
            if entry.suffix == ".py" or entry.is_dir():
                yield pytest.param(entry, id=f"{kind}/{entry.name}")


def _expected(path: Path) -> Counter:
    match = EXPECT.search(path.read_text(encoding="utf-8"))
    assert match, f"{path} has no '# expect:' header"
    if match[1] == "none":
        return Counter()
    return Counter((item.split("@")[0], int(item.split("@")[1])) for item in match[1].split())


@pytest.mark.parametrize("entry", list(_cases()))
def test_fixture(entry: Path):
    files = find_python_files([str(entry)])
    report = Checker().check_paths(files)
    assert report.errors == []
    for file in files:
        got = Counter((d.code, d.row) for d in report.diagnostics if d.filename == file)
        assert got == _expected(Path(file)), file


def test_corpus_size():
    flagged = [p for p in (ROOT / "flagged").iterdir() if p.suffix == ".py" or p.is_dir()]
    lookalike = [p for p in (ROOT / "lookalike").iterdir() if p.suffix == ".py" or p.is_dir()]
    assert len(flagged) >= 25 and len(lookalike) >= 25
    assert len(flagged) + len(lookalike) >= 60
