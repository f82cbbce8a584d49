"""``graphguard server`` under ``tracemalloc``, for finding what an RSS step in a soak is made of.

Usage (``bench/server_robustness.py --tracemalloc DIR`` starts it)::

    python bench/traced_server.py DIR [FRAMES] [--late]

Starts ``tracemalloc`` with FRAMES frames per allocation (default 6), then runs the server on stdio;
with ``--late`` tracing starts at the first ``SIGUSR2`` instead (the server runs at full speed until
then: tracing makes it about three times slower). Each ``SIGUSR1`` writes ``DIR/snapshot-N.pickle``
(``tracemalloc.Snapshot.dump``), N counting from 0; before tracing starts it writes nothing.
Compare two with ``python bench/traced_server.py --compare A B``: the 25 allocation sites that grew
most, in KiB.
"""

from __future__ import annotations

import signal
import sys
import tracemalloc
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def compare(before: str, after: str, top: int = 25) -> None:
    old, new = tracemalloc.Snapshot.load(before), tracemalloc.Snapshot.load(after)
    for stat in new.compare_to(old, "traceback")[:top]:
        print(f"{stat.size_diff / 1024:+10.1f} KiB {stat.count_diff:+8d} blocks (now {stat.size / 1024:.1f} KiB)")
        for line in stat.traceback.format()[-12:]:
            print("    " + line)


def main() -> None:
    if sys.argv[1] == "--compare":
        compare(sys.argv[2], sys.argv[3])
        return
    args = [a for a in sys.argv[1:] if a != "--late"]
    folder = Path(args[0])
    folder.mkdir(parents=True, exist_ok=True)
    frames = int(args[1]) if len(args) > 1 else 6
    count = [0]

    def dump(signum, frame) -> None:  # noqa: ARG001
        if tracemalloc.is_tracing():
            tracemalloc.take_snapshot().dump(str(folder / f"snapshot-{count[0]}.pickle"))
            count[0] += 1

    def start(signum, frame) -> None:  # noqa: ARG001
        if not tracemalloc.is_tracing():
            tracemalloc.start(frames)

    if "--late" in sys.argv:
        signal.signal(signal.SIGUSR2, start)
    else:
        tracemalloc.start(frames)
    signal.signal(signal.SIGUSR1, dump)
    sys.path.insert(0, str(ROOT))
    from graphguard.cli import main as cli

    sys.exit(cli(["server"]))


if __name__ == "__main__":
    main()
