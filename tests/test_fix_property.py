"""Issue 36, as a property: a safe fix never changes what a program prints.

Hypothesis writes small TF1 programs that build an op in a session loop (a finding) and mix the shapes
the adversarial audit broke: inputs changed in place (``np.random.shuffle``, ``out=``), through a
helper, an alias, a method that rebinds a global; names read, bound or reset between the old and new
place; a summary beside ``merge_all()``; seeded random ops; conditions; nested loops; a session given
its graph. Each program runs under TensorFlow as written and after ``--fix`` (safe fixes only), in one
TensorFlow process that resets the default graph between programs (``tf1_runner``, conftest.py), and
both runs must print the same.
"""

from __future__ import annotations

import os
import textwrap
from pathlib import Path

import pytest

pytest.importorskip("tensorflow.compat.v1")
hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, given, settings, strategies as st  # noqa: E402

from graphguard.checker import Checker  # noqa: E402
from graphguard.fix.apply import fix_text  # noqa: E402

HEAD = """\
import numpy as np
import tensorflow.compat.v1 as tf
tf.disable_v2_behavior()
K = 1.0
class Cfg:
    scale = 1.0
    def step(self, i):
        global K
        K = K + 1.0
def decay(c):
    c.scale *= 0.5
cfg = Cfg()
data = np.arange(4.0)
x = tf.placeholder(tf.float64, [])
c = tf.constant(2.0, tf.float64)
first = tf.summary.scalar("first", c)
"""

#: The op built in the loop, and what it reads.
EXPRESSIONS = [
    "x * c",
    "tf.square(c)",
    "x * tf.constant(cfg.scale, tf.float64)",
    "x * K",
    "tf.reduce_sum(tf.constant(data))",
    "c + tf.random.uniform([], seed=3, dtype=tf.float64)",
    "tf.reduce_sum(tf.random.shuffle(tf.constant(data), seed=5))",
    "tf.cast(tf.summary.scalar('s', c) is not None, tf.float64)",
]
#: Statements at the top of the loop body, before the op: what they change.
CHANGES = [
    "np.random.shuffle(data)",
    "np.multiply(data, 2, out=data)",
    "decay(cfg)",
    "m = cfg\nm.scale = float(i)",
    "cfg.step(i)",
    "K = K * 2.0",
    "data[0] += 1.0",
    "y = c",
]
#: Statements in the session block before the loop: names read, bound or reset there.
BEFORE = [
    "print(sess.run(c))",
    "y = None",
    "y = c\nprint(sess.run(y))",
    "merged = tf.summary.merge_all()",
    "saver = None",
]
SESSIONS = ["tf.Session()", "tf.Session(graph=tf.get_default_graph())", "tf.Session('', tf.get_default_graph())"]


@st.composite
def programs(draw) -> str:
    expr = draw(st.sampled_from(EXPRESSIONS))
    changes = draw(st.lists(st.sampled_from(CHANGES), max_size=2, unique=True))
    before = draw(st.lists(st.sampled_from(BEFORE), max_size=2, unique=True))
    session = draw(st.sampled_from(SESSIONS))
    nested = draw(st.booleans())
    conditional = draw(st.booleans())
    bind = draw(st.booleans())  # `y = <op>` then run y, or run the op in place
    header_reads_y = draw(st.booleans()) and any(b.startswith("y =") for b in before)
    lines = [f"with {session} as sess:"]
    lines += ["    " + line for b in before for line in b.splitlines()]
    indent = "    "
    if nested:
        lines.append(indent + "for epoch in range(len(data) // 2):")
        indent += "    "
    # data-sized loops: as many iterations as a training loop for the analysis, three when run
    iterable = "range(len(data) - 1)" if not header_reads_y else "range(len(data) - (1 if y is None else 2))"
    lines.append(indent + f"for i in {iterable}:")
    indent += "    "
    lines += [indent + line for change in changes for line in change.splitlines()]
    if conditional:
        lines.append(indent + "if i % 2 == 0:")
        indent += "    "
    if bind:
        lines += [indent + f"y = {expr}", indent + "print(i, sess.run(y, {x: 1.0}))"]
    else:
        lines.append(indent + f"print(i, sess.run({expr}, {{x: 1.0}}))")
    tail = ["print('y' in dir() and y is not None)"]
    if any(b.startswith("merged") for b in before):
        tail = ["    print(len(sess.run(merged, {x: 1.0})))"]
    return HEAD + "\n".join(lines + tail) + "\n"


def _fixed(path: Path, text: str) -> str:
    checker = Checker()
    result = fix_text(str(path), text, lambda t: checker.check_source(t.encode(), str(path)), unsafe=False)
    return result.fixed


@settings(max_examples=int(os.environ.get("GRAPHGUARD_PROPERTY_EXAMPLES", "100")), deadline=None, database=None,
          derandomize=True, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(program=programs())
def test_a_safe_fix_never_changes_what_a_program_prints(tf1_runner, tmp_path_factory, program):
    folder = tmp_path_factory.mktemp("program")
    original, fixed = folder / "original.py", folder / "fixed.py"
    original.write_text(program)
    assert Checker().check_source(program.encode(), str(original)), program  # the loop builds an op: a finding
    fixed_text = _fixed(original, program)
    hypothesis.event("fixed" if fixed_text != program else "no safe fix")
    if fixed_text == program:
        return  # no safe fix: nothing to compare
    fixed.write_text(fixed_text)
    assert tf1_runner(fixed) == tf1_runner(original), textwrap.indent(fixed_text, "  ")


def test_the_generator_covers_the_shapes():
    """Each shape can be drawn (so a run of the property meets them all over its examples)."""
    text = "\n".join([HEAD, *EXPRESSIONS, *CHANGES, *BEFORE, *SESSIONS])
    for shape in ("np.random.shuffle", "out=data", "decay(cfg)", "m.scale", "global K", "merge_all", "seed=",
                  "saver = None", "graph=", "'', tf.get_default_graph()"):
        assert shape in text
