"""The real pre-commit tool, with this checkout as the hook repository, on a temporary git repository."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PRE_COMMIT = [sys.executable, "-m", "pre_commit"]


def _git(*args: str, cwd: Path) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True).stdout.strip()


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_hook_fails_on_a_leaky_file_and_passes_on_a_clean_one(tmp_path):
    pytest.importorskip("pre_commit")
    try:
        rev = _git("rev-parse", "HEAD", cwd=ROOT)
    except subprocess.CalledProcessError:
        pytest.skip("this checkout is not a git repository")
    repo = tmp_path / "project"
    repo.mkdir()
    _git("init", "-q", cwd=repo)
    (repo / ".pre-commit-config.yaml").write_text(
        f"repos:\n  - repo: {ROOT}\n    rev: {rev}\n    hooks:\n      - id: graphguard\n"
    )
    (repo / "train.py").write_text(
        "import tensorflow as tf\nsess = tf.Session()\nfor step in range(100):\n"
        "    sess.run(train_op)\n    tf.train.Saver().save(sess, 'ckpt')\n"
    )
    (repo / "clean.py").write_text(
        "import tensorflow as tf\nsaver = tf.train.Saver()\nsess = tf.Session()\nfor step in range(100):\n"
        "    sess.run(train_op)\n    saver.save(sess, 'ckpt')\n"
    )
    _git("add", ".", cwd=repo)
    env = {**os.environ, "PRE_COMMIT_HOME": str(tmp_path / "cache")}
    bad = subprocess.run([*PRE_COMMIT, "run", "--files", "train.py"], cwd=repo, env=env,
                         capture_output=True, text=True, timeout=600)
    assert bad.returncode == 1, bad.stdout + bad.stderr
    assert "train.py:5:5: GG102 saver-in-session-loop" in bad.stdout
    good = subprocess.run([*PRE_COMMIT, "run", "--files", "clean.py"], cwd=repo, env=env,
                          capture_output=True, text=True, timeout=600)
    assert good.returncode == 0, good.stdout + good.stderr
    assert "Passed" in good.stdout


def test_the_docs_hooks_match_the_hook_definition():
    # A new user's trial: the docs' snippets had placeholders (graphguard is not on PyPI). The local hook
    # in docs/check.md must run what .pre-commit-hooks.yaml runs, and the repository hook name its id.
    yaml = pytest.importorskip("yaml")
    (defined,) = yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text())
    text = (ROOT / "docs" / "check.md").read_text()
    section = text[text.index("## pre-commit"):text.index("## GitHub Actions")]
    blocks = [yaml.safe_load(block.split("```", 1)[0]) for block in section.split("```yaml\n")[1:]]
    remote, local = blocks
    assert "<" not in section and remote["repos"][0]["hooks"] == [{"id": defined["id"]}]
    (hook,) = local["repos"][0]["hooks"]
    assert local["repos"][0]["repo"] == "local" and hook["language"] == "system"
    for key in ("id", "entry", "types_or", "require_serial"):
        assert hook[key] == defined[key], key
