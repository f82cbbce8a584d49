"""The summary line and the notes on stderr, as a new user reads them: what a run did not show, what it
did not check, and input with nothing to check (issue 39)."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest


def graphguard(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "graphguard", *args], capture_output=True, text=True, cwd=cwd, timeout=120
    )


#: A Saver made on every 20th of 100 steps: 5 Savers, a loop bounded by max-bounded-iterations (10).
SAVER_EVERY_20 = textwrap.dedent(
    """\
    import tensorflow as tf

    x = tf.placeholder(tf.float32)
    y = x * 2
    with tf.Session() as sess:
        for step in range(100):
            sess.run(y, {x: 1.0})
            if step % 20 == 0:
                saver = tf.train.Saver()
                saver.save(sess, "ckpt")
    """
)
#: A Keras model per fold of a 5-fold loop.
FIVE_FOLDS = textwrap.dedent(
    """\
    from tensorflow import keras

    for fold in range(5):
        model = keras.Sequential([keras.layers.Dense(1)])
        model.compile("adam", "mse")
        model.fit(x[fold], y[fold], epochs=1)
    """
)
HIDDEN_TWO = ("No findings shown (2 files checked); 2 findings in short loops not shown "
              "(max-bounded-iterations = 10, 30 for TF 2 Keras models; --config 'max-bounded-iterations = 0' shows them).\n")


@pytest.fixture
def bounded(tmp_path: Path) -> Path:
    (tmp_path / "saver.py").write_text(SAVER_EVERY_20)
    (tmp_path / "folds.py").write_text(FIVE_FOLDS)
    return tmp_path


def test_findings_hidden_by_the_bound_are_counted_in_the_summary(bounded):
    # A new user's trial: both printed "All checks passed", which the runtime guard then contradicted.
    # They stay unreported (noise on real code), but the summary says so, and how to see them.
    result = graphguard("check", "--no-cache", ".", cwd=bounded)
    assert (result.returncode, result.stdout, result.stderr) == (0, "", HIDDEN_TWO)
    one = graphguard("check", "--no-cache", "saver.py", cwd=bounded)
    assert one.stderr == ("No findings shown (1 file checked); 1 finding in a short loop not shown "
                          "(max-bounded-iterations = 10; --config 'max-bounded-iterations = 0' shows it).\n")
    # The other outputs are unchanged: no finding in them.
    as_json = graphguard("check", "--no-cache", "--output-format", "json", ".", cwd=bounded)
    assert (as_json.returncode, as_json.stdout) == (0, "[]\n")
    quiet = graphguard("check", "--no-cache", "-q", ".", cwd=bounded)
    assert (quiet.returncode, quiet.stdout, quiet.stderr) == (0, "", "")
    # --fix says it too (issue 39: a new user's trial saw the note in check and not in --fix)
    fixing = graphguard("check", "--no-cache", "--fix", "saver.py", cwd=bounded)
    assert fixing.stderr == one.stderr, fixing.stderr


def test_the_setting_the_summary_names_shows_them(bounded):
    (bounded / "pyproject.toml").write_text("[tool.graphguard]\nmax-bounded-iterations = 0\n")
    result = graphguard("check", "--no-cache", ".", cwd=bounded)
    assert result.returncode == 1
    assert "folds.py:4:13: GG201 model-rebuilt-in-loop" in result.stdout
    assert "saver.py:9:21: GG102 saver-in-session-loop" in result.stdout
    assert result.stderr == ("Found 2 findings in 2 of 2 files checked.\n"
                             "No fixes available (2 hidden fixes can be enabled with the `--unsafe-fixes` option).\n")


def test_the_count_comes_through_the_cache_and_an_edit_that_moves_lines(bounded):
    cold = graphguard("check", ".", cwd=bounded)
    warm = graphguard("check", ".", cwd=bounded)  # the whole run replayed from the cache
    assert cold.stderr == warm.stderr == HIDDEN_TWO
    saver = bounded / "saver.py"
    saver.write_text("# a comment that moves every line\n" + saver.read_text())
    moved = graphguard("check", ".", cwd=bounded)  # answered by moving the last run's rows
    assert moved.stderr == HIDDEN_TWO
    for index in range(4):  # enough files for worker processes to read them
        (bounded / f"plain{index}.py").write_text("import tensorflow as tf\n")
    workers = graphguard("check", "--jobs", "2", "--no-cache", ".", cwd=bounded)
    assert workers.stderr == HIDDEN_TWO.replace("(2 files", "(6 files")


def test_suppressed_and_ignored_findings_are_not_counted(bounded):
    saver = bounded / "saver.py"
    saver.write_text(saver.read_text().replace("tf.train.Saver()", "tf.train.Saver()  # noqa: GG102"))
    result = graphguard("check", "--no-cache", ".", cwd=bounded)
    assert result.stderr == ("No findings shown (2 files checked); 1 finding in a short loop not shown "
                             "(max-bounded-iterations = 10, 30 for TF 2 Keras models; --config 'max-bounded-iterations = 0' shows it).\n")
    ignored = graphguard("check", "--no-cache", "--ignore", "GG201", ".", cwd=bounded)
    assert ignored.stderr == "All checks passed (2 files checked).\n"


def test_a_reported_finding_and_a_hidden_one_are_both_said(bounded):
    (bounded / "leaky.py").write_text("import tensorflow as tf\nsess = tf.Session()\nfor step in range(100):\n"
                                      "    sess.run(tf.argmax(y, 1))\n")
    result = graphguard("check", "--no-cache", ".", cwd=bounded)
    assert result.returncode == 1
    assert result.stderr == ("Found 1 finding in 1 of 3 files checked; 2 findings in short loops not shown "
                             "(max-bounded-iterations = 10, 30 for TF 2 Keras models; --config 'max-bounded-iterations = 0' shows them).\n"
                             "[*] 1 fixable with the `--fix` option.\n")
    # After --fix, "0 remaining" must not read as done: the run still stops at what the bound hid (a
    # tenth new user's trial).
    fixed = graphguard("check", "--no-cache", "--fix", ".", cwd=bounded)
    assert fixed.stderr.startswith("Found 1 finding (1 fixed, 0 remaining); 2 findings in short loops"), fixed.stderr
    assert fixed.stderr.endswith("--fix leaves them: graphguard run tolerates such growth too, GraphGuard in a test "
                                 "stops it).\n"), fixed.stderr


@pytest.mark.parametrize("layout", [{}, {"notes.txt": "hello\n", "data/readme.md": "# data\n"}])
def test_no_python_files_is_ruffs_warning_and_exit_0(tmp_path, layout):
    # A new user's trial: an empty folder, or one with only .txt files, said "All checks passed (0 files
    # checked)" and nothing else. ruff warns "No Python files found under the given path(s)", exit 0.
    for name, text in layout.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    result = graphguard("check", "--no-cache", ".", cwd=tmp_path)
    assert (result.returncode, result.stdout) == (0, "")
    assert result.stderr == ("graphguard: warning: No Python files found under the given path(s)\n"
                             "All checks passed (0 files checked).\n")
    quiet = graphguard("check", "--no-cache", "-q", ".", cwd=tmp_path)
    assert (quiet.returncode, quiet.stderr) == (0, "")


@pytest.mark.parametrize("mentions_tf", [False, True])
def test_a_binary_py_file_is_gg001_when_it_mentions_tensorflow_else_skipped(tmp_path, mentions_tf):
    # A new user's trial: the docs said GG002 ("could not be read or decoded") for a .py file with NUL
    # bytes; it was GG002 on Python 3.10 and GG001 or nothing on 3.11+. Now on every version: GG001 when
    # it mentions TensorFlow (counted in the summary when ignored), nothing otherwise.
    head = b"import tensorflow as tf\n" if mentions_tf else b"import os\n"
    (tmp_path / "blob.py").write_bytes(head + b"\x00\x01\x02\xff binary\x00\n")
    result = graphguard("check", "--no-cache", "--ignore", "GG001", "blob.py", cwd=tmp_path)
    assert (result.returncode, result.stdout) == (0, "")
    if mentions_tf:
        assert result.stderr == ("No findings shown (1 file checked); 1 file could not be parsed in whole or part: "
                                 "--extend-select GG001 lists it.\n")
        listed = graphguard("check", "--no-cache", "blob.py", cwd=tmp_path)
        assert listed.returncode == 1 and listed.stdout.startswith("blob.py:")
        assert " GG001 syntax-error: cannot " in listed.stdout and "null bytes" in listed.stdout
    else:
        assert result.stderr == ("All checks passed (1 file checked: it names no TensorFlow or Keras, so it was not "
                                 "parsed).\n")  # (the eighteenth trial: a broken file "passed" silently)
    doc = graphguard("rule", "GG001")
    assert "NUL bytes" in doc.stdout
    assert "decoded" not in graphguard("rule", "GG002").stdout


#: GG101 three times: a fix (safe), none (the op reads the loop's counter), an unsafe fix (under a
#: condition); GG102 once, with a safe fix.
MIXED_FIXES = textwrap.dedent(
    """\
    import tensorflow as tf

    sess = tf.Session()
    for step in range(1000):
        sess.run(tf.argmax(y, 1))
        sess.run(tf.add(x, step))
        if step % 10 == 0:
            sess.run(tf.reduce_sum(x))
        saver = tf.train.Saver()
    """
)


def test_statistics_mark_the_findings_fix_would_fix_as_ruff_does(tmp_path):
    # A new user's trial: `[*]` marked GG101 though one of its findings had no fix. ruff's markers:
    # [*] every finding of the code fixable, [~] some, [ ] none (when any code is); count, tab, code, tab.
    # Then the summary and the fixable count, as without --statistics (a ninth new user's trial).
    (tmp_path / "t.py").write_text(MIXED_FIXES)
    text = graphguard("check", "--no-cache", "--statistics", ".", cwd=tmp_path)
    assert text.returncode == 1
    assert text.stdout == "3\tGG101\t[~] op-in-session-loop\n1\tGG102\t[*] saver-in-session-loop\n"
    assert text.stderr.splitlines()[-1].startswith("[*] 2 fixable with the `--fix` option"), text.stderr
    unsafe = graphguard("check", "--no-cache", "--statistics", "--unsafe-fixes", "--output-format", "json", ".",
                        cwd=tmp_path)
    assert json.loads(unsafe.stdout) == [
        {"code": "GG101", "name": "op-in-session-loop", "count": 3, "fixable": False, "fixable_count": 2},
        {"code": "GG102", "name": "saver-in-session-loop", "count": 1, "fixable": True, "fixable_count": 1},
    ]
    safe = graphguard("check", "--no-cache", "--statistics", "--output-format", "json-lines", ".", cwd=tmp_path)
    assert [json.loads(line)["fixable_count"] for line in safe.stdout.splitlines()] == [1, 1]
    (tmp_path / "t.py").write_text(MIXED_FIXES.replace("    sess.run(tf.argmax(y, 1))\n", "").replace(
        "        sess.run(tf.reduce_sum(x))\n", "        pass\n").replace("    saver = tf.train.Saver()\n", ""))
    none = graphguard("check", "--no-cache", "--statistics", ".", cwd=tmp_path)
    assert none.stdout == "1\tGG101\top-in-session-loop\n"  # no code fixable: no markers, as ruff


def test_rule_all_wraps_each_summary_under_its_code_and_name():
    # A new user's trial: one line per rule, up to 1,400 characters long.
    result = graphguard("rule", "--all")
    assert result.returncode == 0
    lines = result.stdout.splitlines()
    assert max(map(len, lines)) <= 100
    blocks = result.stdout.rstrip("\n").split("\n\n")
    heads = [block.splitlines()[0] for block in blocks]
    assert heads[0] == "GG101  op-in-session-loop" and heads[-1] == "GG900  unused-suppression"
    assert all(line.startswith("    ") for block in blocks for line in block.splitlines()[1:])
    gg201 = next(block for block in blocks if block.startswith("GG201"))
    assert "a 5-fold split" in " ".join(gg201.split())


def test_a_named_file_follows_the_project_modules_it_imports_and_reports_only_itself(tmp_path):
    # New users' trials: `graphguard check train.py` passed a loop whose op-building helper lives in
    # model.py (only named files were read; a later hint said so, and pre-commit, which passes only the
    # changed files, still passed). Imported project modules are now read, and their imports in turn
    # (train -> model -> ops), as mypy follows imports; only the named files are reported.
    (tmp_path / "ops.py").write_text("import tensorflow as tf\n\ndef top(y):\n    return tf.argmax(y, 1)\n")
    (tmp_path / "model.py").write_text(
        "import tensorflow as tf\nfrom ops import top\n\ndef accuracy(y):\n    return top(y)\n\n"
        "def own_loop(sess, y):\n    for step in range(100):\n        sess.run(tf.argmax(y, 1))\n")
    (tmp_path / "utils").mkdir()
    (tmp_path / "utils" / "__init__.py").write_text("")
    (tmp_path / "train.py").write_text(
        "import os\nimport tensorflow as tf\nfrom model import accuracy\nfrom utils import io\n"
        "sess = tf.Session()\nfor step in range(100):\n    sess.run(accuracy(y))\n")
    alone = graphguard("check", "--no-cache", "train.py", cwd=tmp_path)
    assert alone.returncode == 1, alone.stderr
    assert [line.split(":")[:2] for line in alone.stdout.splitlines()] == [["train.py", "7"]], alone.stdout
    assert "hint" not in alone.stderr and alone.stderr.endswith("Found 1 finding in 1 of 1 file checked.\n")
    cached = graphguard("check", "train.py", cwd=tmp_path)  # the facts cache, and the same answer
    cached_again = graphguard("check", "train.py", cwd=tmp_path)
    assert cached.stdout == cached_again.stdout == alone.stdout
    folder = graphguard("check", "--no-cache", ".", cwd=tmp_path)  # the folder: model.py's own loop too
    assert folder.returncode == 1 and sorted(line.split(":")[0] for line in folder.stdout.splitlines()) == [
        "model.py", "train.py"]
    # named by its absolute path, and an editor's buffer on stdin named by --stdin-filename: the same
    # (a twenty-third new user's trial: `check -` dropped the finding through model.py)
    absolute = graphguard("check", "--no-cache", str(tmp_path / "train.py"), cwd=tmp_path.parent)
    assert [line.split(":")[1] for line in absolute.stdout.splitlines()] == ["7"], absolute.stdout + absolute.stderr
    buffer = subprocess.run([sys.executable, "-m", "graphguard", "check", "-", "--stdin-filename",
                             str(tmp_path / "train.py")], input=(tmp_path / "train.py").read_text(),
                            capture_output=True, text=True, cwd=tmp_path, timeout=120)
    assert [line.split(":")[1] for line in buffer.stdout.splitlines()] == ["7"], buffer.stdout + buffer.stderr
    (tmp_path / "pyproject.toml").write_text("[tool.graphguard]\nexclude = ['model.py']\n")
    excluded = graphguard("check", "--no-cache", "train.py", cwd=tmp_path)  # an excluded module is not read
    assert excluded.returncode == 0, excluded.stdout


def test_past_the_follow_limit_imported_modules_are_named_in_a_hint(tmp_path, monkeypatch):
    from graphguard import check_run, discovery
    from graphguard.config import Config

    (tmp_path / "a.py").write_text("import b\n")
    (tmp_path / "b.py").write_text("import c\n")
    (tmp_path / "c.py").write_text("x = 1\n")
    (tmp_path / "train.py").write_text("import a\n")
    monkeypatch.chdir(tmp_path)
    assert discovery.followed_imports(["train.py"], ["train.py"], Config()) == (["a.py", "b.py", "c.py"], [])
    monkeypatch.setattr(discovery, "FOLLOW_LIMIT", 1)
    followed, left = discovery.followed_imports(["train.py"], ["train.py"], Config())
    assert (followed, left) == (["a.py"], ["b"])
    assert check_run._unfollowed_note(left) == (
        "hint: 1 more imported project module not read (b): calls into it are not followed; check the folder "
        "(graphguard check .) to follow them")


def test_an_installed_package_beside_the_current_folder_is_not_a_project_module(tmp_path):
    # A new user's trial: every demo step in graphguard's clone hinted that `graphguard` (the clone's own
    # folder, imported by the demo scripts in fixtures/) was an unchecked project module. A script in a
    # subfolder imports the installed package, not the folder: it is not read; a module beside the
    # script is.
    (tmp_path / "pytest").mkdir()  # an installed package's name that the check never imports (graphguard would shadow the tool)
    (tmp_path / "pytest" / "__init__.py").write_text(
        "import tensorflow as tf\n\ndef top(y):\n    return tf.argmax(y, 1)\n")
    (tmp_path / "scripts").mkdir()
    (tmp_path / "scripts" / "helpers.py").write_text(
        "import tensorflow as tf\n\ndef top(y):\n    return tf.argmax(y, 1)\n")
    (tmp_path / "scripts" / "train.py").write_text(
        "import pytest\nimport helpers\nimport tensorflow as tf\nsess = tf.Session()\n"
        "for step in range(100):\n    sess.run(helpers.top(y))\n    sess.run(pytest.top(y))\n")
    result = graphguard("check", "--no-cache", "scripts/train.py", cwd=tmp_path)
    assert [line.split(":")[1] for line in result.stdout.splitlines()] == ["6"], result.stdout + result.stderr


def test_config_takes_key_value_pairs_as_ruff_does(tmp_path):
    # A new user's trial: the short-loop note said "set it to 0" with no way to do so on the command line.
    (tmp_path / "sweep.py").write_text(FIVE_FOLDS)
    shown = graphguard("check", "--no-cache", "--config", "max-bounded-iterations = 0", "sweep.py", cwd=tmp_path)
    assert shown.returncode == 1 and "not shown" not in shown.stdout and "GG201" in shown.stdout
    (tmp_path / "pyproject.toml").write_text("[tool.graphguard]\nmax-bounded-iterations = 3\nignore = ['GG2']\n")
    both = graphguard("check", "--no-cache", "--config", "pyproject.toml", "--config", "max-bounded-iterations=0",
                      "sweep.py", cwd=tmp_path)
    assert (both.returncode, both.stderr) == (0, "All checks passed (1 file checked).\n")  # the file's ignore, the pair's bound
    bad = graphguard("check", "--config", "max-bounded-iterations = -1", "sweep.py", cwd=tmp_path)
    assert (bad.returncode, bad.stderr) == (2, "graphguard: error: --config: [tool.graphguard] max-bounded-iterations: "
                                               "expected a whole number >= 0, got -1\n")
    unknown = graphguard("check", "--config", "colour = 'red'", "sweep.py", cwd=tmp_path)
    assert unknown.returncode == 2 and "unknown key 'colour'" in unknown.stderr


def test_the_summary_says_what_fix_would_fix_as_ruff_does(tmp_path):
    # A new user's trial: nothing in the default output said that --fix or --unsafe-fixes would help.
    (tmp_path / "train.py").write_text("import tensorflow as tf\nsess = tf.Session()\nfor step in range(100):\n"
                                       "    sess.run(tf.argmax(y, 1))\n    tf.train.Saver().save(sess, 'ckpt')\n")
    safe = graphguard("check", "--no-cache", "train.py", cwd=tmp_path)
    assert safe.stderr.splitlines()[-1] == "[*] 2 fixable with the `--fix` option."
    # (only unsafe fixes: "No fixes available (2 hidden fixes can be enabled ...)", test above)
    quiet = graphguard("check", "--no-cache", "-q", "train.py", cwd=tmp_path)
    assert quiet.stderr == ""


def test_with_fixable_findings_in_many_files_the_summary_points_to_diff_without_working_out_the_fixes(tmp_path):
    # Working out each fix reads the file with libcst (about 3x its parse): a cold run over a big project
    # took about 1.5x as long for the "[*] N fixable" line alone.
    for index in range(17):
        (tmp_path / f"train_{index}.py").write_text("import tensorflow as tf\nsess = tf.Session()\n"
                                                    "for step in range(100):\n    sess.run(tf.argmax(y, 1))\n")
    result = graphguard("check", "--no-cache", ".", cwd=tmp_path)
    assert result.stderr.splitlines()[-1] == ("(findings in 17 files are of rules with automatic fixes: --diff shows "
                                              "what --fix would change, --diff --unsafe-fixes what --unsafe-fixes would)")
