"""What SweepGuard costs per trial: the same trial with and without ``with sweep.trial():``, in one process.

    python bench/sweep_overhead.py [--keras] [--rounds 5] [--trials 6]

The trial is a NumPy matrix product (about 20 ms) or, with ``--keras``, a small Keras model built and fit
for one epoch (Keras is imported first, so the process holds TensorFlow's ~330,000 gc-tracked objects).
Rounds alternate plain and guarded loops; printed are the median wall time per trial of each, the
added cost per trial (guarded minus plain) and the ratio, and the guard's own ``guard_seconds``
(both ends of the trial). Tests never assert timings; this script is where they are measured.
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

    body()  # warm caches for both variants
    plain, guarded, guard = [], [], []
    for _ in range(args.rounds):
        start = time.perf_counter()
        for _ in range(args.trials):
            body()
        plain.append((time.perf_counter() - start) / args.trials)
        sweep = SweepGuard(on_leak="ignore", max_retained_bytes=None, track_models=not args.no_track_models)
        start = time.perf_counter()
        for i in range(args.trials):
            with sweep.trial():
                body()
        guarded.append((time.perf_counter() - start) / args.trials)
        guard.append(statistics.median(r.guard_seconds for r in sweep.records))
    p, g = statistics.median(plain), statistics.median(guarded)
    print(f"{'keras' if args.keras else 'numpy'} trial, track_models={not args.no_track_models}: "
          f"plain {p * 1000:.0f} ms, guarded {g * 1000:.0f} ms per trial; added {1000 * (g - p):.0f} ms "
          f"(x{g / p:.2f}); guard_seconds median {1000 * statistics.median(guard):.0f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
