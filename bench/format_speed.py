"""How long the output formats that carry fixes (``json``, ``sarif``) take against ``concise``.

Usage::

    python bench/format_speed.py               # 300 generated files, each with one fixable finding
    python bench/format_speed.py --files 1000

In one run, on ``--files`` small generated TF1-style files that each hold one training loop building an
op per step (GG101, which has a fix), it measures in fresh processes, three times each, the median:

* ``concise``: ``graphguard check --no-cache`` (the baseline);
* ``json`` and ``sarif`` cold (``--no-cache``: every fix worked out with libcst);
* ``concise``, ``json`` and ``sarif`` warm (the cache filled by a run of the same format just before);
* ``import libcst`` alone in a fresh interpreter: the least a cold run that works out fixes can cost
  more than one that does not (graphguard computes fixes with libcst; ``check`` never imports it
  otherwise).

It prints seconds and each ratio to the cold ``concise`` run. Nothing is asserted: the figures are for
people, the ratios are what to compare across machines.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

GRAPHGUARD = [sys.executable, "-m", "graphguard", "check"]

SOURCE = """import tensorflow as tf

x = tf.placeholder(tf.float32, [None, 10])
y = tf.layers.dense(x, 2)
sess = tf.Session()
sess.run(tf.global_variables_initializer())
for step in range({steps}):
    sess.run(tf.argmax(y, 1), feed_dict={{x: batch(step)}})
"""


def timed(command: list[str], cwd: Path) -> float:
    """Seconds from start to exit of ``command`` (its output discarded)."""
    start = time.perf_counter()
    subprocess.run(command, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    return time.perf_counter() - start


def median_of(command: list[str], cwd: Path, repeats: int, before: list[str] | None = None) -> float:
    """The median of ``repeats`` timings of ``command``, each after ``before`` (untimed) when given."""
    times = []
    for _ in range(repeats):
        if before is not None:
            subprocess.run(before, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
        times.append(timed(command, cwd))
    return statistics.median(times)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--files", type=int, default=300, help="generated files (default 300)")
    parser.add_argument("--repeats", type=int, default=3, help="timings per figure, the median shown (default 3)")
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="graphguard-format-speed-"))
    try:
        for index in range(args.files):
            (folder / f"train_{index:04d}.py").write_text(SOURCE.format(steps=100 + index))
        rows = []
        cold = median_of([*GRAPHGUARD, "--no-cache", "."], folder, args.repeats)
        rows.append(("concise, cold", cold))
        for fmt in ("json", "sarif"):
            rows.append((f"{fmt}, cold", median_of([*GRAPHGUARD, "--no-cache", "--output-format", fmt, "."], folder,
                                                    args.repeats)))
        for fmt in ("concise", "json", "sarif"):
            command = [*GRAPHGUARD, "--output-format", fmt, "."]
            cache = folder / ".graphguard_cache"
            shutil.rmtree(cache, ignore_errors=True)
            rows.append((f"{fmt}, warm", median_of(command, folder, args.repeats, before=command)))
        rows.append(("import libcst alone", median_of([sys.executable, "-c", "import libcst"], folder, args.repeats)))
        rows.append(("python -c pass", median_of([sys.executable, "-c", "pass"], folder, args.repeats)))
        print(f"{args.files} files, each with one fixable finding; median of {args.repeats} runs")
        for name, seconds in rows:
            print(f"  {name:<22} {seconds:7.3f} s  {seconds / cold:5.2f}x concise cold")
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
