"""The worker processes of a check: a pool that never outlives an interrupted run.

:func:`workers` is the pool the checker reads files with (:meth:`graphguard.checker.Checker.check_paths`)
and :func:`worker_pool` the one JSON and SARIF output attach fixes with (:mod:`graphguard.check_run`).
Their workers ignore Ctrl-C (only the main process answers it), die with the main process
(``prctl(PR_SET_PDEATHSIG)`` on Linux) and are killed at once when the run is interrupted.
"""

from __future__ import annotations

import contextlib
import gc
import os
import signal
import sys
import threading

__all__ = ["WORKER", "die_with_parent", "worker_init", "worker_pool", "workers"]


#: What :func:`worker_init` was given, in a worker process: ``settings``, ``project``, ``prefilter``.
WORKER: dict = {}


def worker_init(settings: tuple, project: frozenset | None, prefilter: bool) -> None:
    WORKER["settings"], WORKER["project"], WORKER["prefilter"] = settings, project, prefilter
    gc.disable()  # as in :meth:`graphguard.checker.Checker.check_paths`: a worker's trees and facts hold no cycles
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the main process's to answer
    die_with_parent()


def worker_pool(jobs: int):
    """A pool of ``jobs`` worker processes (forked on Linux) for work other than reading files (the
    fixes that JSON and SARIF output attach): like the readers', its workers ignore Ctrl-C, die with
    the main process, and are killed at once when the run is interrupted. A context manager."""
    import multiprocessing

    method = "fork" if sys.platform.startswith("linux") else "spawn"
    return workers(jobs, multiprocessing.get_context(method), (None, None, True))


@contextlib.contextmanager
def workers(jobs: int, context, initargs: tuple):
    """A process pool that never outlives an interrupted run. Workers ignore SIGINT (Ctrl-C reaches the
    whole process group; only the main process answers it, without worker tracebacks). When the run is
    interrupted (KeyboardInterrupt, SystemExit) or terminated (SIGTERM to the main process), the workers
    are killed at once instead of being waited for: a second Ctrl-C used to hang the run in the pool's
    shutdown, and a worker deep in a large file kept a Ctrl-C waiting for 25 s."""
    from concurrent.futures import ProcessPoolExecutor

    pool = ProcessPoolExecutor(jobs, mp_context=context, initializer=worker_init, initargs=initargs)

    def kill_workers() -> None:
        for process in list((getattr(pool, "_processes", None) or {}).values()):
            try:
                process.kill()
            except (OSError, ValueError, AttributeError):
                pass

    def on_term(signum, frame) -> None:  # die by SIGTERM as before, the workers first
        kill_workers()
        for process in list((getattr(pool, "_processes", None) or {}).values()):
            try:
                process.join(1.0)  # gone before we are: none is left running after the exit status
            except (OSError, ValueError, AssertionError, RuntimeError):
                pass
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGTERM)

    main_thread = threading.current_thread() is threading.main_thread()
    previous_term = signal.signal(signal.SIGTERM, on_term) if main_thread else None
    previous_int = signal.getsignal(signal.SIGINT) if main_thread else None
    try:
        yield pool
    except (KeyboardInterrupt, SystemExit):
        if main_thread:
            # A second Ctrl-C must not interrupt the cleanup, nor the exit that follows (130).
            signal.signal(signal.SIGINT, signal.SIG_IGN)
            previous_int = None
        # The pool's manager thread then finds its workers gone; on 3.11 it raises InvalidStateError for
        # futures the interrupted map() cancelled. The run is ending: that thread has nothing to say.
        threading.excepthook = lambda args: None
        kill_workers()
        pool.shutdown(wait=False)  # not cancel_futures: 3.11's manager thread then raises InvalidStateError
        raise
    except BaseException:
        kill_workers()
        pool.shutdown(wait=False)
        raise
    else:
        pool.shutdown(wait=True)
    finally:
        if main_thread:
            signal.signal(signal.SIGTERM, previous_term if previous_term is not None else signal.SIG_DFL)
            if previous_int is not None:
                signal.signal(signal.SIGINT, previous_int)


def die_with_parent() -> None:
    """On Linux, ask the kernel to send this worker SIGTERM when the process that started it dies
    (``prctl(PR_SET_PDEATHSIG)``): a ``kill`` of the main process alone (SIGTERM, SIGKILL) left the
    workers reading files for minutes. Elsewhere the pool's own shutdown is all there is."""
    if not sys.platform.startswith("linux"):
        return
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(1, int(signal.SIGTERM))  # 1 = PR_SET_PDEATHSIG
        if os.getppid() == 1:  # the parent died before the request was made
            os._exit(143)
    except (OSError, AttributeError):
        pass
