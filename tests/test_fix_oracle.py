"""Issue 36: a safe fix never changes what a program prints. Each program below is a shape from the
adversarial audit; it runs under TensorFlow before and after ``graphguard check --fix`` (safe fixes
only), and both runs must print the same. A shape graphguard cannot show safe is left unchanged."""

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytest.importorskip("tensorflow.compat.v1")

ROOT = Path(__file__).resolve().parents[1]
HEAD = "import tensorflow.compat.v1 as tf\ntf.disable_v2_behavior()\n"

#: name -> program; every one builds an op in a session loop (a finding) in a shape the audit broke.
PROGRAMS = {
    # the moved target is read by the loop's header: the header saw the earlier value once
    "target_read_by_header": """
        x = tf.constant([1.0, 2.0])
        y = x
        with tf.Session() as sess:
            for v in sess.run(y):
                y = tf.square(x)
                print(v, sess.run(y))
        """,
    # the moved target is read in the with body the move would climb above
    "target_read_before_loop": """
        x = tf.constant(3.0)
        y = x
        with tf.Session() as sess:
            print(sess.run(y))
            for step in range(30):
                y = tf.square(x)
                print(sess.run(y))
        """,
    # an earlier value read after a loop that may run no iteration
    "earlier_value_read_after": """
        x = tf.constant(3.0)
        y = x
        with tf.Session() as sess:
            for step in range(int(sess.run(x)) - 3):
                sess.run(x)
                y = tf.square(x)
            print(sess.run(y))
        """,
    # changed through a container that holds it (a new user's trial: the safe fix froze the first value)
    "changed_through_a_container": """
        import numpy as np
        data = [np.full((2,), float(i), dtype=np.float32) for i in range(3)]
        x = tf.placeholder(tf.float32, [2])
        cfg = {"scale": 1.0}
        opts = {"cfg": cfg}
        with tf.Session() as sess:
            for epoch in range(len(data)):
                opts["cfg"]["scale"] = float(epoch)
                for i in range(len(data)):
                    print(sess.run(tf.multiply(x, cfg["scale"]), {x: data[i]}))
        """,
    # changed through a NumPy view made before the loop
    "changed_through_a_view": """
        import numpy as np
        data = [np.full((2,), float(i), dtype=np.float32) for i in range(3)]
        x = tf.placeholder(tf.float32, [2])
        arr = np.ones(2, dtype=np.float32)
        view = arr[:]
        with tf.Session() as sess:
            for epoch in range(len(data)):
                view += 1.0
                for i in range(len(data)):
                    print(sess.run(tf.add(x, arr), {x: data[i]}))
        """,
}


@pytest.fixture(scope="module")
def outputs(tf1_runner, tmp_path_factory):
    """name -> (what the program printed before the fix, after it, whether graphguard reported it).
    All programs run in one TensorFlow process (``tf1_runner``), and ``graphguard check --fix`` runs
    once over their folder, as a user runs it on a project."""
    folder = tmp_path_factory.mktemp("oracle")
    paths = {name: folder / f"{name}.py" for name in PROGRAMS}
    for name, path in paths.items():
        path.write_text(HEAD + textwrap.dedent(PROGRAMS[name]).lstrip())
    before = {name: tf1_runner(path) for name, path in paths.items()}
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    command = [sys.executable, "-m", "graphguard", "check", "--no-cache"]
    report = subprocess.run([*command, "--output-format", "json", "."], cwd=folder, env=env, capture_output=True,
                            text=True, timeout=120)
    reported = {Path(item["filename"]).stem for item in json.loads(report.stdout)}
    fixed = subprocess.run([*command, "--fix", "."], cwd=folder, env=env, capture_output=True, text=True, timeout=120)
    assert fixed.returncode in (0, 1), fixed.stderr
    return {name: (before[name], tf1_runner(path), name in reported) for name, path in paths.items()}


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_safe_fix_keeps_what_the_program_prints(outputs, name):
    before, after, reported = outputs[name]
    assert reported  # the shape is a finding
    assert after == before
