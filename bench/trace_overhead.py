"""What TraceGuard costs per tf.function call: a small training step and a trivial function, with and without it.

    python bench/trace_overhead.py [--rounds 25] [--steps 200] [--calls 2000]

Everything runs in one process (same TensorFlow, same functions, same threads and caches). The guard
patches TensorFlow's ``Function`` class while active, so "with" and "without" cannot be interleaved
call by call as ``guard_overhead.py`` does: they alternate in blocks of ``--block`` calls (default 10),
the guard started before and stopped after each guarded block (outside the timing), in an order that
alternates every block. Each call is timed on its own; a round's figure per variant is the median call
time, and what is printed is the median over the rounds (ratios and differences are taken per round,
then the median). A second plain variant ("A/A") shows the noise floor of the moment.

1. **A small training step**: a Keras Dense model (10 -> 64 -> 64 -> 1), one step of a
   ``@tf.function`` with ``tf.GradientTape`` and SGD on a batch of 32 (the issue's "small training
   step"). Target: guarded at most 2 % slower (ratio <= 1.02).
2. **A trivial tf.function** (``x + 1`` on a scalar tensor): the added cost per call in microseconds,
   which is the guard's own cost with little of TensorFlow's noise.

Also printed: CPU time of the calling thread (``time.thread_time``), which other processes' load does
not inflate. Exit status 0 if the target was met, 1 otherwise.
"""

from __future__ import annotations

import argparse
import gc
import os
import platform
import statistics
import sys
import time
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

MAX_RATIO = 1.02


def load_average() -> str:
    try:
        return " ".join(f"{v:.2f}" for v in os.getloadavg())
    except (OSError, AttributeError):
        return "n/a"


def blocks(call, guard, rounds: int, calls: int, block: int) -> tuple[dict, dict]:
    """Per round and variant ("plain", "plain again (A/A)", "TraceGuard"): median wall seconds per call
    and CPU seconds of this thread per call. Variants alternate every ``block`` calls."""
    names = ("plain", "plain again (A/A)", "TraceGuard")
    wall_clock, cpu_clock = time.perf_counter, time.thread_time
    wall: dict[str, list[float]] = {name: [] for name in names}
    cpu: dict[str, list[float]] = {name: [] for name in names}
    for r in range(rounds):
        walls: dict[str, list[float]] = {name: [] for name in names}
        cpus = dict.fromkeys(names, 0.0)
        gc.collect()
        for i in range(calls // block):
            for k in range(3):
                name = names[(k + i + r) % 3]  # rotate: no variant runs twice in a row
                if name == "TraceGuard":
                    guard.start()
                for _ in range(block):
                    c0 = cpu_clock()
                    w0 = wall_clock()
                    call()
                    w1 = wall_clock()
                    cpus[name] += cpu_clock() - c0
                    walls[name].append(w1 - w0)
                if name == "TraceGuard":
                    guard.stop()
        for name in names:
            wall[name].append(statistics.median(walls[name]))
            cpu[name].append(cpus[name] / len(walls[name]))
    return wall, cpu


def show(title: str, wall: dict, cpu: dict, unit: str) -> float:
    """Prints one measurement; returns the median ratio guarded / plain."""
    scale = 1e3 if unit == "ms" else 1e6
    base = statistics.median(wall["plain"])
    print(title)
    print(f"  {'plain':<20} {base * scale:8.3f} {unit}/call wall, "
          f"{statistics.median(cpu['plain']) * scale:.3f} {unit}/call CPU of the calling thread")
    result = 1.0
    for name in ("plain again (A/A)", "TraceGuard"):
        ratios = [o / b for o, b in zip(wall[name], wall["plain"])]
        added = statistics.median([o - b for o, b in zip(wall[name], wall["plain"])]) * 1e6
        added_cpu = statistics.median([o - b for o, b in zip(cpu[name], cpu["plain"])]) * 1e6
        med = statistics.median(ratios)
        if name == "TraceGuard":
            result = med
        print(f"  {name:<20} wall ratio {med:.4f} (rounds {min(ratios):.3f}-{max(ratios):.3f}), "
              f"{added:+.2f} us/call; CPU of the calling thread {added_cpu:+.2f} us/call")
    return result


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=25, help="rounds per measurement (default: 25)")
    parser.add_argument("--steps", type=int, default=200, help="training steps per variant and round (default: 200)")
    parser.add_argument("--calls", type=int, default=2000, help="trivial calls per variant and round (default: 2000)")
    parser.add_argument("--block", type=int, default=10, help="calls per block before switching variant (default: 10)")
    args = parser.parse_args(argv)

    import keras
    import numpy as np
    import tensorflow as tf

    from graphguard import TraceGuard

    print(f"graphguard TraceGuard overhead: Python {platform.python_version()}, TensorFlow {tf.__version__}, "
          f"Keras {keras.__version__}, {os.cpu_count()} CPUs, load average {load_average()}")
    model = keras.Sequential([keras.Input((10,)), keras.layers.Dense(64, activation="relu"),
                              keras.layers.Dense(64, activation="relu"), keras.layers.Dense(1)])
    optimizer = keras.optimizers.SGD(0.01)
    rng = np.random.default_rng(0)
    x = tf.constant(rng.random((32, 10), dtype=np.float32))
    y = tf.constant(rng.random((32, 1), dtype=np.float32))

    @tf.function
    def train_step(x, y):
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(tf.square(model(x, training=True) - y))
        grads = tape.gradient(loss, model.trainable_variables)
        optimizer.apply_gradients(zip(grads, model.trainable_variables))
        return loss

    @tf.function
    def trivial(v):
        return v + 1

    one = tf.constant(1.0)
    for _ in range(50):  # traces and caches, before timing
        train_step(x, y)
        trivial(one)
    guard = TraceGuard()
    wall, cpu = blocks(lambda: train_step(x, y), guard, args.rounds, args.steps, args.block)
    ratio = show(f"small training step (Dense 10-64-64-1, GradientTape + SGD, batch 32, in a tf.function): "
                 f"{args.rounds} rounds x {args.steps} steps per variant", wall, cpu, "ms")
    verdict = "ok" if ratio <= MAX_RATIO else "MISSED"
    print(f"  target: guarded at most {(MAX_RATIO - 1) * 100:.0f} % slower (ratio <= {MAX_RATIO}) -> {verdict}")
    wall, cpu = blocks(lambda: trivial(one), guard, args.rounds, args.calls, args.block)
    show(f"trivial tf.function (v + 1 on a scalar): {args.rounds} rounds x {args.calls} calls per variant",
         wall, cpu, "us")
    report = guard.report()
    traced = sum(fn.traces for fn in report.functions)
    print(f"  the guard counted {sum(fn.calls for fn in report.functions)} calls and {traced} traces "
          f"(no retrace while timed)")
    print(f"load average at the end: {load_average()}")
    return 0 if ratio <= MAX_RATIO and traced == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
