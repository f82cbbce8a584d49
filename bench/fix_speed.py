"""How long ``graphguard check --fix`` takes on one large file, against ``graphguard check`` on it.

Usage::

    python bench/fix_speed.py                 # generated files, nothing downloaded
    python bench/fix_speed.py --lines 20000

In one run, on generated TF1-style files of about ``--lines`` lines (helpers, comments, and training
loops that build an op and a Saver on every step), it measures in fresh processes:

* ``check``: ``graphguard check --no-cache`` (the baseline);
* ``--fix`` with a few findings (10 in all: a realistic large file);
* ``--fix`` with many findings (one loop every 19 lines: libcst reads nearly the whole file).

It prints seconds and each ratio to the baseline. Nothing is asserted: the figures are for people,
the ratios are what to compare across machines.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

GRAPHGUARD = [sys.executable, "-m", "graphguard"]


def few_findings(lines: int) -> str:
    """Helpers and comments, then 5 training loops (10 findings)."""
    out = ["import tensorflow as tf", "sess = tf.Session()"]
    block = 0
    while len(out) < lines - 25:
        out += [f"def helper_{block}(x):", f"    '''Helper {block}.'''", "    total = 0"]
        out += [f"    total += x * {i}  # comment {i}" for i in range(14)] + ["    return total", ""]
        block += 1
    for loop in range(5):
        out += [f"for step in range({loop}, 10 ** 9):", "    sess.run(train_op)",
                f"    print(sess.run(tf.argmax(logits_{loop}, 1)))", "    saver = tf.train.Saver()"]
    return "\n".join(out) + "\n"


def many_findings(lines: int) -> str:
    """A training loop every 19 lines, each building one op per step."""
    out = ["import tensorflow as tf", "sess = tf.Session()"]
    block = 0
    while len(out) < lines:
        out += [f"for step in range({block}, 10 ** 9):", "    sess.run(train_op)",
                f"    print(sess.run(tf.argmax(logits_{block}, 1)))"] + [f"    x_{block}_{i} = {i}" for i in range(16)]
        block += 1
    return "\n".join(out) + "\n"


def timed(args: list[str], cwd: Path) -> float:
    start = time.perf_counter()
    subprocess.run(args, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lines", type=int, default=10_000, help="lines per generated file (default 10,000)")
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="graphguard-fix-bench-"))
    try:
        for name, make in (("few", few_findings), ("many", many_findings)):
            text = make(args.lines)
            (folder / f"{name}.py").write_text(text)
            check = timed([*GRAPHGUARD, "check", "--no-cache", "-q", f"{name}.py"], folder)
            fix = timed([*GRAPHGUARD, "check", "--no-cache", "-q", "--fix", f"{name}.py"], folder)
            findings = text.count("tf.argmax") + text.count("tf.train.Saver")
            print(f"{name:>4} findings ({findings}, {text.count(chr(10)):,} lines): check {check:.2f} s, "
                  f"--fix {fix:.2f} s ({fix / check:.1f}x check)")
    finally:
        shutil.rmtree(folder)


if __name__ == "__main__":
    main()
