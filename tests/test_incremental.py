"""Runs after an edit are the cold run's answer, byte for byte: an edit that only moves lines is answered
from the last run's findings (graphguard.incremental), any other from the facts (phases 2-3 in full)."""

from __future__ import annotations

import io
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import graphguard.checker as checker_module
from graphguard.analysis.facts import FunctionFacts, Loop, ModuleFacts, Site
from graphguard.cache import FactsCache
from graphguard.checker import Checker
from graphguard.discovery import find_python_files
from graphguard.incremental import moved_rows
from graphguard.reporters import write_concise

OPS = textwrap.dedent(
    '''\
    """Helpers every trainer imports."""
    import tensorflow as tf


    def head(logits):
        return tf.argmax(logits, 1)


    def apply(fn, value):
        return fn(value)


    def make_model(units):
        model = tf.keras.Sequential([tf.keras.layers.Dense(units)])
        model.compile("sgd", "mse")
        return model
    '''
)
TRAIN = textwrap.dedent(
    """\
    import tensorflow as tf

    from common import ops
    from common.ops import head

    x = tf.placeholder(tf.float32, [None, 4])
    loss = tf.reduce_mean(x)
    sess = tf.Session()
    double = lambda t: t * {n}
    for step in range(1000000):
        sess.run(head(x))
        sess.run(ops.apply(double, loss))
        sess.run(ops.apply(lambda t: t + {n}, loss))
        sess.run(tf.train.Saver())  # noqa: GG102
        sess.run(tf.reduce_sum(x) * {n})
    kept = []
    for units in sizes({n}):
        model = ops.make_model(units)
        model.fit(x, x)
        kept.append(model)
    """
)


def _project(root: Path, trainers: int = 12) -> list[str]:
    (root / "common").mkdir()
    (root / "common" / "__init__.py").write_text("")
    (root / "common" / "ops.py").write_text(OPS)
    for n in range(trainers):
        (root / f"train{n}.py").write_text(TRAIN.format(n=n))
    (root / "data.py").write_text("import numpy as np\n\n\ndef sizes(n):\n    return [n, 2 * n]\n")
    return find_python_files([str(root)])


def _concise(report) -> str:
    out = io.StringIO()
    write_concise(report.diagnostics, out)
    return out.getvalue()


@pytest.fixture
def phases(monkeypatch):
    """How many runs computed phases 2-3 (built a Project)."""
    count = [0]
    real = checker_module.Project

    def counting(*args, **kwargs):
        count[0] += 1
        return real(*args, **kwargs)

    monkeypatch.setattr(checker_module, "Project", counting)
    return count


def _edit(path: Path, change) -> None:
    text = path.read_text()
    assert change(text) != text
    path.write_text(change(text))


EDITS_THAT_MOVE = [
    ("comment at the top of the module every trainer imports", "common/ops.py", lambda t: "# a comment\n" + t),
    ("blank lines between helpers", "common/ops.py", lambda t: t.replace("\n\n\ndef apply", "\n\n\n\n\n\ndef apply")),
    ("comment above a trainer's lambdas and loops", "train3.py", lambda t: t.replace("sess = tf", "# session\nsess = tf")),
    ("comment inside a trainer's loop", "train4.py", lambda t: t.replace("    sess.run(head", "    # step\n    sess.run(head")),
    ("lines removed above findings", "train5.py", lambda t: t.replace("\nx = tf", "x = tf")),
    ("the noqa line moved down", "train6.py", lambda t: t.replace("x = tf.placeholder", "\n\nx = tf.placeholder")),
]
EDITS_THAT_CHANGE = [
    ("a helper that stops building ops", "common/ops.py", lambda t: t.replace("return tf.argmax(logits, 1)", "return logits")),
    ("two helpers swapped", "common/ops.py", lambda t: t.replace("def head(logits):\n    return tf.argmax(logits, 1)\n\n\n", "")
                                              + "\n\ndef head(logits):\n    return tf.argmax(logits, 1)\n"),
    ("a line re-indented", "train2.py", lambda t: t.replace("    sess.run(head(x))", "    sess.run(  head(x))")),
    ("a finding added", "train7.py", lambda t: t + "for i in range(10**6):\n    sess.run(tf.argmax(x, 1))\n"),
]


@pytest.mark.parametrize("name, target, change", EDITS_THAT_MOVE, ids=[e[0] for e in EDITS_THAT_MOVE])
def test_an_edit_that_moves_lines_is_answered_from_the_last_run(tmp_path, phases, name, target, change):
    paths = _project(tmp_path)
    cache = tmp_path / ".cache"
    first = Checker().check_paths(paths, jobs=2, cache=FactsCache(str(cache), "t"))
    assert first.diagnostics and phases[0] == 1
    _edit(tmp_path / target, change)
    after = Checker().check_paths(paths, jobs=2, cache=FactsCache(str(cache), "t"))
    assert phases[0] == 1, "phases 2-3 ran again"
    assert after.read == 1
    cold = Checker().check_paths(paths, jobs=1)
    assert _concise(after) == _concise(cold) != _concise(first)
    assert sorted(after.sources) == sorted(cold.sources)
    # and the run after it (nothing changed) is the same again, from the stored result
    assert _concise(Checker().check_paths(paths, jobs=2, cache=FactsCache(str(cache), "t"))) == _concise(cold)


@pytest.mark.parametrize("name, target, change", EDITS_THAT_CHANGE, ids=[e[0] for e in EDITS_THAT_CHANGE])
def test_an_edit_that_changes_facts_recomputes_the_run(tmp_path, phases, name, target, change):
    paths = _project(tmp_path)
    cache = tmp_path / ".cache"
    Checker().check_paths(paths, jobs=2, cache=FactsCache(str(cache), "t"))
    _edit(tmp_path / target, change)
    after = Checker().check_paths(paths, jobs=2, cache=FactsCache(str(cache), "t"))
    assert phases[0] == 2
    assert _concise(after) == _concise(Checker().check_paths(paths, jobs=1))


def test_edits_in_a_row_and_files_added_and_removed_match_cold_runs(tmp_path):
    paths = _project(tmp_path)
    cache = str(tmp_path / ".cache")
    steps = [*EDITS_THAT_MOVE, *EDITS_THAT_CHANGE, *EDITS_THAT_MOVE]
    for number, (name, target, change) in enumerate(steps):
        if number == 5:
            (tmp_path / "train99.py").write_text(TRAIN.format(n=99))
        if number == 9:
            (tmp_path / "train1.py").unlink()
        paths = find_python_files([str(tmp_path)])
        _edit(tmp_path / target, change)
        after = Checker().check_paths(paths, jobs=2, cache=FactsCache(cache, "t"))
        assert _concise(after) == _concise(Checker().check_paths(paths, jobs=1)), name


def test_the_command_line_after_a_moving_edit_prints_what_a_cold_run_prints(tmp_path):
    _project(tmp_path, trainers=3)

    def check(*extra):
        return subprocess.run([sys.executable, "-m", "graphguard", "check", *extra, "."], capture_output=True,
                              text=True, cwd=tmp_path, timeout=120)

    assert check().returncode == 1
    _edit(tmp_path / "train1.py", EDITS_THAT_MOVE[-1][2])  # the noqa comment moves with its line
    _edit(tmp_path / "common" / "ops.py", EDITS_THAT_MOVE[0][2])
    warm, cold = check(), check("--no-cache")
    assert (warm.returncode, warm.stdout, warm.stderr) == (cold.returncode, cold.stdout, cold.stderr)
    assert "GG102" not in warm.stdout and "ops.py:7)" in warm.stdout


def _facts(rows: list[int], lambda_row: int = 3) -> ModuleFacts:
    facts = ModuleFacts("m.py")
    function = FunctionFacts(f"<lambda:{lambda_row}:4>", builds={})
    facts.functions[function.name] = function
    function.constructions = [Site(row, 5, row, 9) for row in rows]
    facts.loops = [Loop(0, rows[0], 1)]
    return facts


def test_moved_rows_pairs_rows_and_refuses_anything_else():
    assert moved_rows(_facts([4, 8]), _facts([4, 8])) == {3: 3, 4: 4, 8: 8}
    assert moved_rows(_facts([4, 8], 3), _facts([5, 9], 4)) == {3: 4, 4: 5, 8: 9}
    assert moved_rows(_facts([4, 8]), _facts([9, 5])) is None  # lines swapped
    assert moved_rows(_facts([4, 8]), _facts([5, 5])) is None  # two rows onto one
    assert moved_rows(_facts([4, 8]), _facts([4, 8, 9])) is None
    other = _facts([4, 8])
    other.functions[next(iter(other.functions))].constructions[0] = Site(4, 6, 4, 9)  # a column moved
    assert moved_rows(_facts([4, 8]), other) is None
    assert moved_rows(None, None) == {} and moved_rows(None, _facts([1])) is None
    # lambdas renamed with their rows, in names and keys; one renamed onto another's old name is a move too
    two = lambda first, second: ModuleFacts("m.py", functions={f"<lambda:{first}:4>": FunctionFacts("a"),
                                                               f"<lambda:{second}:4>": FunctionFacts("b")})
    assert moved_rows(two(9, 12), two(10, 13)) == {9: 10, 12: 13}
    assert moved_rows(two(9, 12), two(12, 13)) == {9: 12, 12: 13}
    assert moved_rows(two(9, 12), two(13, 12)) is None


def test_a_file_with_a_syntax_error_comes_from_the_cache_and_moves_like_the_others(tmp_path, phases):
    # Regression (found by a trial on public notebooks): a cached FileResult holding GG001 was refused as
    # damaged (its findings are (code, message, row, column) tuples), so such files were read on every run
    # and an edit of one always recomputed the run.
    paths = _project(tmp_path, trainers=3)
    broken = tmp_path / "old.py"
    broken.write_text("import tensorflow as tf\n\ndef f(:\n")
    paths = find_python_files([str(tmp_path)])
    cache = str(tmp_path / ".cache")
    Checker().check_paths(paths, jobs=1, cache=FactsCache(cache, "t"))
    _edit(tmp_path / "train1.py", EDITS_THAT_MOVE[2][2])
    after = Checker().check_paths(paths, jobs=1, cache=FactsCache(cache, "t"))
    assert after.read == 1 and phases[0] == 1  # old.py from the cache; nothing recomputed
    _edit(broken, lambda text: text + "# a comment after the error\n")
    after = Checker().check_paths(paths, jobs=1, cache=FactsCache(cache, "t"))
    assert after.read == 1 and phases[0] == 1
    assert _concise(after) == _concise(Checker().check_paths(paths, jobs=1)) and "old.py:3:" in _concise(after)


TWO_CALLBACKS = textwrap.dedent(
    """\
    import tensorflow.compat.v1 as tf


    def train_loop(sess, build):
        for i in range(100):
            sess.run(build())


    x = tf.ones([2, 2])
    with tf.Session() as sess:
        train_loop(sess, lambda: tf.reduce_sum(x))
        train_loop(sess, lambda: tf.argmax(x, 1))
    """
)


def test_findings_do_not_depend_on_the_hash_seed_or_on_lines_moved(tmp_path):
    # Regression (found by a new user): two callbacks passed to one parameter of a loop helper; which one
    # the message named came from a set's iteration order (PYTHONHASHSEED), and a moving edit answered
    # from the cache kept the old pick while a cold run made another.
    (tmp_path / "one.py").write_text(TWO_CALLBACKS)

    def check(seed, *extra):
        return subprocess.run([sys.executable, "-m", "graphguard", "check", *extra, "one.py"], capture_output=True,
                              text=True, cwd=tmp_path, timeout=120, env={**os.environ, "PYTHONHASHSEED": str(seed)})

    outputs = {check(seed, "--no-cache").stdout for seed in range(6)}
    assert len(outputs) == 1 and "GG101" in outputs.pop()
    for seed in range(6):
        _edit(tmp_path / "one.py", lambda text: "# moved\n" + text)
        assert check(seed).stdout == check(seed + 100, "--no-cache").stdout
