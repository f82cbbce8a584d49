"""Issue 37: the house's imports run one way. The contracts live in pyproject.toml
(``[tool.importlinter]``): no cycles among sibling modules or packages (lazy imports count), the command
line on top of the server, the fixer and the lint run, the linter free of TensorFlow and the runtime
guards, the analysis free of its front ends, pictures free of reports (ARCHITECTURE.md)."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
LINT_IMPORTS = shutil.which("lint-imports", path=str(Path(sys.executable).parent)) or shutil.which("lint-imports")

pytestmark = pytest.mark.skipif(LINT_IMPORTS is None, reason="import-linter is not installed")


def _lint_imports(folder: Path) -> subprocess.CompletedProcess:
    return subprocess.run([LINT_IMPORTS, "--no-cache"], cwd=folder, capture_output=True, text=True, timeout=120,
                          env={"PYTHONPATH": str(folder), "PATH": str(Path(sys.executable).parent)})


def test_the_contracts_are_kept():
    result = _lint_imports(ROOT)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "0 broken" in result.stdout


@pytest.mark.parametrize(("module", "line", "contract"), [
    # a lazy import of the command line from the fixer: a cycle, and the layers broken
    ("fix/run.py", "def _cycle():\n    from graphguard import cli\n", "No import cycles"),
    # the linter importing the runtime guard
    ("checker.py", "def _heavy():\n    from graphguard.runtime import guard\n", "never imports TensorFlow"),
])
def test_a_new_cycle_or_a_forbidden_import_fails_the_check(tmp_path, module, line, contract):
    shutil.copytree(ROOT / "graphguard", tmp_path / "graphguard", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    with open(tmp_path / "graphguard" / module, "a", encoding="utf-8") as handle:
        handle.write("\n\n" + line)
    result = _lint_imports(tmp_path)
    assert result.returncode == 1, result.stdout + result.stderr
    summary = " ".join(result.stdout.split())  # lint-imports wraps long contract names
    statuses = re.findall(r"(.*?) (KEPT|BROKEN)\b", summary.split("Contracts: ")[0])
    assert any(contract in name and status == "BROKEN" for name, status in statuses), result.stdout
