"""What SweepGuard costs per trial: the same trial with and without ``with sweep.trial():``, in one process.

    python bench/sweep_overhead.py [--keras] [--rounds 5] [--trials 6]

The trial is a NumPy matrix product (about 20 ms) or, with ``--keras``, a small Keras model built and fit
for one epoch (Keras is imported first, so the process holds TensorFlow's ~330,000 gc-tracked objects).
Rounds alternate a plain loop, a guarded one (``SweepGuard()``: the long-lived objects frozen with
``gc.freeze()``) and a guarded one with ``freeze=False`` (the guard before issue 17: full collections);
each guarded round ends with ``finish()``, which thaws. Printed per variant: the median wall time per
trial, the added cost per trial (guarded minus plain) and the ratio, and the guard's own
``guard_seconds`` (both ends of a trial; the first trial of each round, which does the freeze, is
left out of the median and printed apart). The added cost can be below ``guard_seconds``: while frozen,
the trial's own collections (Keras's ``clear_session()`` runs ``gc.collect()``) are cheap too. Tests
never assert timings; this script is where they are measured.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--keras", action="store_true", help="load Keras and fit a small model per trial")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--trials", type=int, default=6)
    parser.add_argument("--no-track-models", action="store_true", help="SweepGuard(track_models=False)")
    args = parser.parse_args()

    import numpy as np

    from graphguard import SweepGuard

    if args.keras:
        import keras

        x = np.random.rand(256, 16).astype("float32")
        y = np.random.randint(0, 3, 256)

        def body():
            model = keras.Sequential([keras.Input((16,)), keras.layers.Dense(32, activation="relu"), keras.layers.Dense(3)])
            model.compile(optimizer="adam", loss="sparse_categorical_crossentropy")
            model.fit(x, y, epochs=1, verbose=0)
            keras.backend.clear_session()
    else:
        a = np.random.rand(400, 400)

        def body():
            for _ in range(10):
                a @ a

    body()  # warm caches for every variant
    plain: list[float] = []
    guarded: dict[bool, list[float]] = {True: [], False: []}
    guard: dict[bool, list[float]] = {True: [], False: []}
    first: dict[bool, list[float]] = {True: [], False: []}
    for _ in range(args.rounds):
        start = time.perf_counter()
        for _ in range(args.trials):
            body()
        plain.append((time.perf_counter() - start) / args.trials)
        for freeze in (True, False):
            sweep = SweepGuard(on_leak="ignore", max_retained_bytes=None, track_models=not args.no_track_models,
                               freeze=freeze)
            start = time.perf_counter()
            for _ in range(args.trials):
                with sweep.trial():
                    body()
            guarded[freeze].append((time.perf_counter() - start) / args.trials)
            sweep.finish()  # judges the last trial and thaws: the next plain round runs unfrozen
            guard[freeze].extend(r.guard_seconds for r in sweep.records[1:])
            first[freeze].append(sweep.records[0].guard_seconds)
    p = statistics.median(plain)
    kind = "keras" if args.keras else "numpy"
    print(f"{kind} trial, track_models={not args.no_track_models}, {args.rounds} rounds of {args.trials} trials: "
          f"plain {p * 1000:.1f} ms per trial")
    for freeze in (True, False):
        g = statistics.median(guarded[freeze])
        print(f"  SweepGuard(freeze={freeze}): guarded {g * 1000:.1f} ms per trial, added {1000 * (g - p):+.1f} ms "
              f"(x{g / p:.2f}); guard_seconds median {1000 * statistics.median(guard[freeze]):.1f} ms "
              f"(first trial {1000 * statistics.median(first[freeze]):.0f} ms)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
