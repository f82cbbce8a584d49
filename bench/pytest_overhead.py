"""What ``pytest --graphguard`` costs a suite of small TensorFlow tests: the same suite with and without it.

    python bench/pytest_overhead.py [--rounds 5] [--tests 50] [--keep DIR]

Generates a suite of ``--tests`` small tests in a temporary folder (5 files; half TF1 sessions under
``tf.compat.v1``, each building a small model in its own ``tf.Graph`` and running it 20 times, half
TF 2 ``tf.function`` steps called 20 times with tensors: no leak, so both variants pass) and runs it with
``python -m pytest`` as a user would, in a fresh process per run: "plain", "plain again (A/A)" and
"--graphguard", in an order that rotates every round. Per run it measures:

* the wall time of the whole run (start-up, TensorFlow's import, collection, the tests);
* the CPU time of the process (``resource.getrusage(RUSAGE_CHILDREN)``), which other processes' load
  on a shared machine does not inflate;
* the tests' own time: the sum of the ``time`` of every test case in pytest's JUnit XML (setup, call
  and teardown), without start-up and collection.

Ratios are taken per round, guarded over plain, and the median over the rounds is printed; the A/A row
(plain over plain again) shows the noise of the moment. Target: the guarded run at most 10 % longer
(median wall ratio <= 1.10). Exit status 0 if it was met, 1 otherwise.
"""

from __future__ import annotations

import argparse
import os
import platform
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ElementTree
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MAX_RATIO = 1.10
VARIANTS = ("plain", "plain again (A/A)", "--graphguard")

HEADER = '''\
import numpy as np
import tensorflow as tf

v1 = tf.compat.v1
X = np.random.default_rng(0).random((8, 16), dtype=np.float32)


@tf.function
def step(x, w):
    return tf.reduce_sum(tf.nn.relu(tf.matmul(x, w)))
'''

SESSION_TEST = '''

def test_session_{n}():
    with tf.Graph().as_default():
        x = v1.placeholder(tf.float32, [None, 16])
        w = tf.Variable(tf.ones([16, 4]) * {n})
        loss = tf.reduce_mean(tf.nn.relu(tf.matmul(x, w)))
        with v1.Session() as sess:
            sess.run(v1.global_variables_initializer())
            for _ in range(20):
                sess.run(loss, feed_dict={{x: X}})
'''

FUNCTION_TEST = '''

def test_function_{n}():
    x = tf.constant(X)
    w = tf.ones([16, 4]) * {n}
    for _ in range(20):
        step(x, w)
'''


def write_suite(folder: Path, tests: int, files: int = 5) -> None:
    """``tests`` tests in ``files`` modules under ``folder``: sessions and tf.function calls, alternating."""
    per_file = -(-tests // files)
    made = 0
    for f in range(files):
        body = [HEADER]
        for _ in range(min(per_file, tests - made)):
            body.append((SESSION_TEST if made % 2 == 0 else FUNCTION_TEST).format(n=made))
            made += 1
        (folder / f"test_small_{f}.py").write_text("".join(body))


def run(folder: Path, guarded: bool) -> tuple[float, float, float]:
    """(wall seconds, CPU seconds of the process, the tests' own seconds from the JUnit XML) of one run."""
    report = folder / "junit.xml"
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:xdist",
               "-p", "no:hypothesispytest", "--junitxml", str(report), str(folder)]
    if guarded:
        command.append("--graphguard")
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", PYTHONDONTWRITEBYTECODE="1")
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    result = subprocess.run(command, cwd=folder, env=env, capture_output=True, text=True, timeout=600)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if result.returncode != 0:
        raise SystemExit(f"the generated suite failed ({' '.join(command[3:])}):\n{result.stdout[-3000:]}{result.stderr[-2000:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    tests = sum(float(case.get("time", 0)) for case in ElementTree.parse(report).iter("testcase"))
    return wall, cpu, tests


def load_average() -> str:
    try:
        return " ".join(f"{v:.2f}" for v in os.getloadavg())
    except (OSError, AttributeError):
        return "n/a"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5, help="runs of each variant (default 5)")
    parser.add_argument("--tests", type=int, default=50, help="tests in the generated suite (default 50)")
    parser.add_argument("--keep", type=Path, help="write the suite into this folder and keep it")
    args = parser.parse_args()
    import tensorflow as tf  # only for the version line; every run imports its own

    folder = args.keep or Path(tempfile.mkdtemp(prefix="gg-pytest-bench-"))
    folder.mkdir(parents=True, exist_ok=True)
    write_suite(folder, args.tests)
    print(f"graphguard pytest --graphguard overhead: Python {platform.python_version()}, TensorFlow {tf.__version__}, "
          f"{os.cpu_count()} CPUs, load average {load_average()}")
    print(f"suite: {args.tests} small tests ({args.tests - args.tests // 2} TF1 sessions x 21 runs, {args.tests // 2} "
          f"tf.function steps x 20 calls) in 5 files; {args.rounds} rounds of {', '.join(VARIANTS)}")
    results: dict[str, list[tuple[float, float, float]]] = {name: [] for name in VARIANTS}
    try:
        for r in range(args.rounds):
            for k in range(len(VARIANTS)):
                name = VARIANTS[(k + r) % len(VARIANTS)]  # rotate: no variant always first or last
                results[name].append(run(folder, guarded=name == "--graphguard"))
            print(f"  round {r + 1}: " + ", ".join(
                f"{name} {results[name][-1][0]:.2f} s" for name in VARIANTS), flush=True)
    finally:
        if args.keep is None:
            shutil.rmtree(folder, ignore_errors=True)

    def ratios(name: str, index: int) -> list[float]:
        return [a[index] / b[index] for a, b in zip(results[name], results["plain"])]

    for index, what in enumerate(("wall time of the run", "CPU time of the run", "the tests' own time (JUnit)")):
        plain = statistics.median(result[index] for result in results["plain"])
        aa, guarded = ratios("plain again (A/A)", index), ratios("--graphguard", index)
        print(f"{what}: plain {plain:.2f} s; A/A ratio {statistics.median(aa):.3f} (rounds {min(aa):.3f}-{max(aa):.3f}); "
              f"--graphguard ratio {statistics.median(guarded):.3f} (rounds {min(guarded):.3f}-{max(guarded):.3f})")
    added = statistics.median(a[2] - b[2] for a, b in zip(results["--graphguard"], results["plain"]))
    print(f"added per test (tests' own time, median over rounds): {added / args.tests * 1e3:+.2f} ms")
    wall = statistics.median(ratios("--graphguard", 0))
    ok = wall <= MAX_RATIO
    print(f"target: --graphguard at most {MAX_RATIO - 1:.0%} longer (median wall ratio <= {MAX_RATIO:.2f}) -> "
          f"{'ok' if ok else 'MISSED'}")
    print(f"load average at the end: {load_average()}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
