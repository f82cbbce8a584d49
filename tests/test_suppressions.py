"""Suppression comments, GG900 unused-suppression, and --add-noqa followed by a clean re-run."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from graphguard.checker import Checker
from graphguard.suppressions import read_suppressions

HEADER = "import tensorflow as tf\nsess = tf.Session()\nfor step in range(100):\n    sess.run(train_op)\n"


def findings(tmp_path: Path, body: str, *extra: str) -> list[tuple[str, int]]:
    path = tmp_path / "train.py"
    path.write_text(HEADER + body)
    result = subprocess.run([sys.executable, "-m", "graphguard", "check", "-q", *extra, str(path)],
                            capture_output=True, text=True, timeout=60)
    return [(line.split()[1], int(line.split(":")[1])) for line in result.stdout.splitlines()]


@pytest.mark.parametrize(
    "body",
    [
        "    x = tf.reduce_sum(y)  # noqa\n",
        "    x = tf.reduce_sum(y)  # noqa: GG101\n",
        "    x = tf.reduce_sum(y)  # noqa: GG102, GG101\n",
        "    x = tf.reduce_sum(y)  # NOQA:GG101\n",
        "    x = tf.reduce_sum(y)  # graphguard: ignore[GG101]\n",
        "    x = tf.reduce_sum(y)  # GraphGuard: ignore[GG101]\n",  # the marker is found in any case
        "    # graphguard: ignore[GG101]\n    x = tf.reduce_sum(y)\n",
        "    # noqa: GG101\n    x = tf.reduce_sum(y)\n",
        "    x = tf.reduce_sum(\n        y)  # noqa: GG101\n",
    ],
)
def test_each_suppression_form_suppresses(tmp_path, body):
    assert findings(tmp_path, body) == []


@pytest.mark.parametrize(
    "body",
    [
        "    x = tf.reduce_sum(y)  # noqa: GG102\n",  # another code
        "    x = tf.reduce_sum(y)  # graphguard: ignore[GG105]\n",  # another code
        "    # noqa: GG101\n\n    x = tf.reduce_sum(y)\n",  # not the line above
        "    y = 1  # noqa: GG101\n    x = tf.reduce_sum(y)\n",  # a comment after code on the line above
        "    x = tf.reduce_sum('# noqa')\n",  # inside a string
    ],
)
def test_suppression_elsewhere_or_for_another_code_does_not_suppress(tmp_path, body):
    assert [code for code, _ in findings(tmp_path, body)] == ["GG101"]


def test_file_level_suppression(tmp_path):
    assert findings(tmp_path, "    x = tf.reduce_sum(y)\n# graphguard: noqa\n") == []
    assert findings(tmp_path, "    x = tf.reduce_sum(y)\n    tf.train.Saver()\n# graphguard: noqa: GG102\n") == [("GG101", 5)]


def test_unused_suppression_is_reported_only_when_selected(tmp_path):
    body = "    x = tf.reduce_sum(y)  # noqa: GG101\n    z = 1  # noqa: GG102\n    w = 2  # noqa\n    v = 3  # noqa: E501\n"
    assert findings(tmp_path, body) == []
    assert findings(tmp_path, body, "--extend-select", "GG900") == [("GG900", 6)]


def test_reader_ignores_files_without_markers():
    assert read_suppressions(b"x = 1\n").lines == {}


def test_add_noqa_then_clean_rerun(tmp_path):
    source = textwrap.dedent(
        """\
        # -*- coding: utf-8 -*-
        import tensorflow as tf
        sess = tf.Session()
        for step in range(100):
            sess.run(tf.argmax(y, 1))  # noqa: E501
            saver = tf.train.Saver(); acc = tf.reduce_mean(x)
            print("résumé")
        """
    )
    path = tmp_path / "legacy.py"
    path.write_bytes(source.replace("\n", "\r\n").encode("utf-8"))
    run = lambda *a: subprocess.run([sys.executable, "-m", "graphguard", "check", *a, str(path)],
                                    capture_output=True, text=True, timeout=60)
    assert run().returncode == 1
    added = run("--add-noqa")
    assert added.returncode == 0
    assert "Added 2 noqa comments." in added.stderr
    text = path.read_bytes().decode("utf-8")
    assert "sess.run(tf.argmax(y, 1))  # noqa: E501, GG101\r\n" in text
    assert "saver = tf.train.Saver(); acc = tf.reduce_mean(x)  # noqa: GG101, GG102\r\n" in text
    assert text.count("\r\n") == source.count("\n")  # line endings kept
    rerun = run()
    assert (rerun.returncode, rerun.stdout) == (0, "")
    assert list(tmp_path.iterdir()) == [path]  # no temporary file left behind


def test_checker_reports_before_suppression():
    # Suppression is a reporting step: the checker itself still finds the construction.
    source = (HEADER + "    x = tf.reduce_sum(y)  # noqa\n").encode()
    assert [d.code for d in Checker().check_source(source, "t.py")] == ["GG101"]


def test_add_noqa_never_writes_inside_a_string_or_after_a_backslash(tmp_path):
    # Regression: the comment was appended inside a triple-quoted string that began on the finding's line.
    path = tmp_path / "strings.py"
    source = (
        "import tensorflow as tf\nsess = tf.Session()\nfor step in range(steps):\n"
        '    m = sess.run(tf.reduce_max(x)); msg = """max\n    is here"""\n'
        "    total = 1 + \\\n        sess.run(tf.reduce_sum(x))\n"
    )
    path.write_text(source)
    run = lambda *a: subprocess.run([sys.executable, "-m", "graphguard", "check", "--no-cache", *a, str(path)],
                                    capture_output=True, text=True, timeout=60)
    assert run().returncode == 1
    added = run("--add-noqa")
    assert added.returncode == 0, added.stderr
    text = path.read_text()
    assert '    # noqa: GG101\n    m = sess.run(tf.reduce_max(x)); msg = """max\n    is here"""\n' in text
    assert 'msg = """max\n' in text  # the string's value is unchanged
    assert run().returncode == 0


def test_add_noqa_refuses_a_read_only_file_and_keeps_symlinks(tmp_path):
    body = "import tensorflow as tf\nsess = tf.Session()\nfor s in range(steps):\n    sess.run(tf.argmax(y, 1))\n"
    locked = tmp_path / "locked.py"
    locked.write_text(body)
    locked.chmod(0o444)
    target = tmp_path / "real.py"
    target.write_text(body)
    link = tmp_path / "link.py"
    link.symlink_to(target)
    result = subprocess.run([sys.executable, "-m", "graphguard", "check", "--no-cache", "--add-noqa",
                             str(locked), str(link)], capture_output=True, text=True, timeout=60)
    assert result.returncode == 2
    assert "locked.py: the file is read-only; left unchanged" in result.stderr
    assert locked.read_text() == body
    assert link.is_symlink() and "# noqa: GG101" in target.read_text()


def test_one_file_under_two_names_is_checked_and_commented_once(tmp_path):
    # Regression (issue 12, item 9): a file named twice (a symbolic or hard link) was checked twice,
    # every finding reported twice, and --add-noqa commented its lines twice.
    import os
    import subprocess
    import sys

    (tmp_path / "a.py").write_text("import tensorflow as tf\nsess = tf.Session()\nfor s in range(steps):\n"
                                   "    sess.run(tf.argmax(y, 1))\n")
    os.symlink("a.py", tmp_path / "b.py")
    os.link(tmp_path / "a.py", tmp_path / "c.py")
    run = lambda *args: subprocess.run([sys.executable, "-m", "graphguard", "check", "--no-cache", *args],
                                       capture_output=True, text=True, cwd=tmp_path)
    assert len(run("a.py", "b.py", "c.py").stdout.splitlines()) == 1
    assert len(run(".").stdout.splitlines()) == 1
    run("--add-noqa", "c.py", "b.py", "a.py")
    assert (tmp_path / "a.py").read_text().count("noqa") == 1


@pytest.mark.parametrize(
    "name, source, expected",
    [
        # A form feed or U+2028 inside a line is not a line break for the tokenizer or the compiler.
        ("formfeed.py", b"import tensorflow as tf\nx = 1  # a\x0cb\ny = '\xe2\x80\xa8'\nsess = tf.Session()\n"
                        b"for s in range(steps):\n    sess.run(tf.argmax(y, 1))\n",
         b"import tensorflow as tf\nx = 1  # a\x0cb\ny = '\xe2\x80\xa8'\nsess = tf.Session()\n"
         b"for s in range(steps):\n    sess.run(tf.argmax(y, 1))  # noqa: GG101\n"),
        # Old Mac line endings: rows were counted differently by tokenize and nothing was added.
        ("cr.py", b"import tensorflow as tf\rsess = tf.Session()\rfor s in range(steps):\r    sess.run(tf.argmax(y, 1))\r",
         b"import tensorflow as tf\rsess = tf.Session()\rfor s in range(steps):\r"
         b"    sess.run(tf.argmax(y, 1))  # noqa: GG101\r"),
        # "# noqa" inside a string is not a suppression, and no final newline is added.
        ("string.py", b"import tensorflow as tf\nsess = tf.Session()\nfor s in range(steps):\n"
                      b"    m = '# noqa'; sess.run(tf.argmax(y, 1))",
         b"import tensorflow as tf\nsess = tf.Session()\nfor s in range(steps):\n"
         b"    m = '# noqa'; sess.run(tf.argmax(y, 1))  # noqa: GG101"),
    ],
)
def test_add_noqa_counts_lines_as_the_tokenizer_does_and_changes_nothing_else(tmp_path, name, source, expected):
    # Regression (issue 12, item 9).
    path = tmp_path / name
    path.write_bytes(source)
    run = lambda *a: subprocess.run([sys.executable, "-m", "graphguard", "check", "--no-cache", *a, str(path)],
                                    capture_output=True, text=True, timeout=60)
    assert run("--add-noqa").returncode == 0
    assert path.read_bytes() == expected
    assert run().returncode == 0


@pytest.mark.skipif(not hasattr(__import__("os"), "geteuid") or __import__("os").geteuid() != 0,
                    reason="needs root to give the file another owner")
def test_add_noqa_keeps_the_owner(tmp_path):
    # Regression (issue 12, item 9): the atomic replace gave the file to the user running graphguard.
    import os

    path = tmp_path / "owned.py"
    path.write_text("import tensorflow as tf\nsess = tf.Session()\nfor s in range(steps):\n    sess.run(tf.argmax(y, 1))\n")
    os.chown(path, 4321, 4322)
    result = subprocess.run([sys.executable, "-m", "graphguard", "check", "--no-cache", "--add-noqa", str(path)],
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert "# noqa: GG101" in path.read_text()
    assert (path.stat().st_uid, path.stat().st_gid) == (4321, 4322)


def test_add_noqa_uses_a_later_line_of_the_expression_and_keeps_existing_comments(tmp_path):
    # Regression (issue 12, fuzz pass): a finding on a line continued by a backslash or inside a
    # multi-line string got a new comment line above it (every later line number shifted), and an
    # existing '# NOQA:GG102,GG103' was rewritten as '# noqa: GG101, GG102, GG103'.
    head = "import tensorflow as tf\nsess = tf.Session()\nfor step in range(100):\n"
    cases = {
        "slash.py": (head + "    x = tf.argmax(y, 1) + \\\n        tf.argmax(z, 1); sess.run(x)\n",
                     head + "    x = tf.argmax(y, 1) + \\\n        tf.argmax(z, 1); sess.run(x)  # noqa: GG106\n"),
        "multiline.py": (head + '    sess.run(tf.argmax(y, """\n    multi\n    """))\n',
                      head + '    sess.run(tf.argmax(y, """\n    multi\n    """))  # noqa: GG101\n'),
        "kept.py": (head + "    sess.run(tf.argmax(y, 2))  # NOQA:GG102,GG103\n",
                    head + "    sess.run(tf.argmax(y, 2))  # NOQA:GG102,GG103, GG101\n"),
    }
    for name, (source, _) in cases.items():
        (tmp_path / name).write_text(source)
    run = lambda *a: subprocess.run([sys.executable, "-m", "graphguard", "check", "--no-cache", *a, *cases],
                                    capture_output=True, text=True, timeout=60, cwd=tmp_path)
    assert run("--add-noqa").returncode == 0
    for name, (_, expected) in cases.items():
        assert (tmp_path / name).read_text() == expected
    assert run().returncode == 0


@pytest.mark.parametrize("cached", [False, True])
def test_only_files_with_findings_are_read_for_their_suppressions_unless_gg900_is_selected(tmp_path, cached):
    # Issue 18: every file with a suppression comment was read again for its comments, findings or not
    # (73 on the public corpus, notebooks decoded: 0.05 s of a warm run). Without GG900 only those
    # with a finding are; with GG900 all (an unused suppression may be anywhere); a replayed run alike.
    from graphguard.cache import FactsCache
    from graphguard.rules import RULES

    leaky = tmp_path / "leaky.py"
    leaky.write_text(HEADER + "    x = tf.reduce_sum(y)  # noqa: GG101\n    z = tf.zeros(3)\n")
    quiet = tmp_path / "quiet.py"
    quiet.write_text("import tensorflow as tf\nx = tf.zeros(3)  # noqa: GG105\n")
    paths = [str(leaky), str(quiet)]
    for codes, read in ((set(RULES) - {"GG900"}, [str(leaky)]), (set(RULES) | {"GG900"}, paths)):
        checker = Checker(codes)
        cache = FactsCache(str(tmp_path / f"cache-{len(read)}"), checker.settings_key) if cached else None
        report = checker.check_paths(paths, cache=cache)
        if cached:
            report = checker.check_paths(paths, cache=FactsCache(str(tmp_path / f"cache-{len(read)}"),
                                                                 checker.settings_key))
            assert report.read == 0  # replayed
        assert report.marked == paths
        assert sorted(report.sources) == read
