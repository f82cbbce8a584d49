"""TF1-era scripts on TF 2 (issue 15): attribution that survives ``sys.modules["tensorflow"]``
replaced by ``tensorflow.compat.v1``, and ``graphguard run --tf1`` on scripts written for TF 1.x.

Everything runs through the real command line in a subprocess: both change process-wide state
(``sys.modules``, ``disable_v2_behavior()``) that must not leak into the rest of the suite.
"""

import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

pytest.importorskip("tensorflow.compat.v1")


def graphguard(*args, cwd=ROOT, timeout=180):
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2")
    env.pop("TF_USE_LEGACY_KERAS", None)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    return subprocess.run([sys.executable, "-m", "graphguard", *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=timeout)


def _write(path, body):
    path.write_text(textwrap.dedent(body).lstrip())
    return path


def _growth(stderr):
    return next(line for line in stderr.splitlines() if line.startswith("growth: +"))


# -- part 4: attribution whatever module object `tensorflow` is ------------------------------------

ALIASED = """
    import sys

    import tensorflow.compat.v1

    sys.modules["tensorflow"] = tensorflow.compat.v1  # the common way to run a TF1 script on TF 2
    import tensorflow as tf

    tf.disable_v2_behavior()
    x = tf.placeholder(tf.float32, [3])
    {before}
    with tf.Session() as sess:
        for step in range(6):
            {inside}
            sess.run(mean, {{x: [1.0, 2.0, 3.0]}})
"""


def test_ops_of_a_script_that_aliases_tensorflow_to_compat_v1_are_attributed_to_its_line(tmp_path):
    # Regression: internal frames were found with find_spec("tensorflow"), which then answers with
    # tensorflow/_api/v2/compat/v1, so every op was reported at TensorFlow's own ops.py.
    script = _write(tmp_path / "aliased.py", ALIASED.format(before="", inside="mean = tf.reduce_mean(x * 2.0)"))
    result = graphguard("run", str(script), cwd=tmp_path)
    assert result.returncode == 1, result.stderr[-3000:]
    growth = _growth(result.stderr)
    assert re.search(r": 2 x Const, Mul, Mean at aliased\.py:13 \(tf\.reduce_mean\)$", growth), growth
    assert "ops.py" not in result.stderr and "site-packages" not in growth


def test_the_fixed_aliased_script_reports_nothing(tmp_path):
    script = _write(tmp_path / "aliased.py", ALIASED.format(before="mean = tf.reduce_mean(x * 2.0)", inside="pass"))
    result = graphguard("run", str(script), cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "growth" not in result.stderr.replace("no graph growth", "")
    assert result.stderr.rstrip().endswith("graphguard run: no graph growth")
