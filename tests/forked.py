"""Programs that import TensorFlow, run for the tests from one process that has imported it already.

``run(["-m", "graphguard", "run", "script.py"], cwd=..., env=..., timeout=...)`` returns what
``subprocess.run([sys.executable, ...], capture_output=True, text=True)`` returns, but the program is
a fork of a server process that imported ``tensorflow`` (and, through it, Keras) once: importing them
costs about 5 s of CPU per process on the CI machine, and the suite started about 57 such processes
(issue 38).

What differs from a fresh ``python``: ``tensorflow`` is in ``sys.modules`` before the program runs.
That is the path ``%load_ext graphguard`` and ``pytest --graphguard`` take
(:mod:`graphguard.runtime.watch` patches a TensorFlow imported already); the path where the script's
own ``import tensorflow`` fires graphguard's import hook, and ``--tf1``'s Keras choice made before
TensorFlow is imported, are tested with real processes (tests/test_launcher.py, tests/test_tf1.py and
``graphguard demo`` in tests/test_demo.py do not use this module).

A server is started per environment that matters at start-up (:data:`STARTUP`: the Python path,
warning filters, hash seed, TensorFlow's log level, Keras' choice), the first time a test asks for one,
and lives until the test process ends. ``GRAPHGUARD_TESTS_NO_FORK=1`` runs every program as a fresh
process instead; so does a machine without TensorFlow.
"""

from __future__ import annotations

import atexit
import json
import locale
import os
import select
import signal
import subprocess
import sys
import tempfile
import time

#: Variables read when Python or TensorFlow starts: a program whose environment differs in one of them
#: from a server's gets its own server.
STARTUP = ("PYTHONPATH", "PYTHONWARNINGS", "PYTHONHASHSEED", "PYTHONDONTWRITEBYTECODE", "PYTHONUTF8",
           "PYTHONIOENCODING", "PYTHONDEVMODE", "TF_CPP_MIN_LOG_LEVEL", "TF_ENABLE_ONEDNN_OPTS",
           "TF_USE_LEGACY_KERAS", "KERAS_BACKEND", "CUDA_VISIBLE_DEVICES")

#: The server: imports TensorFlow, then for each request (one JSON line) forks a child that becomes
#: ``python -m MODULE ARGS`` or ``python SCRIPT ARGS`` with the request's folder, environment and
#: output files, and answers the child's pid, then its exit status.
SERVER = r"""
import json, os, runpy, sys
import tensorflow
print("ready", flush=True)
while True:
    line = sys.stdin.readline()
    if not line:
        break
    request = json.loads(line)
    pid = os.fork()
    if pid == 0:
        os.setpgid(0, 0)
        for fd, path, flags in ((0, os.devnull, os.O_RDONLY),
                                (1, request["stdout"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC),
                                (2, request["stderr"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC)):
            os.dup2(os.open(path, flags, 0o600), fd)
        os.chdir(request["cwd"])
        os.environ.clear()
        os.environ.update(request["env"])
        argv = request["argv"]
        del line, request, pid
        if argv[0] == "-m":
            sys.argv = argv[1:]
            sys.path[0] = os.getcwd()
            runpy.run_module(argv[1], run_name="__main__", alter_sys=True)
        else:
            sys.argv = argv
            sys.path[0] = os.path.dirname(os.path.abspath(argv[0]))
            runpy.run_path(argv[0], run_name="__main__")
        sys.exit(0)
    print(pid, flush=True)
    print(os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]), flush=True)
"""


class _Server:
    """One server process and the line-reading of its answers."""

    def __init__(self, env: dict) -> None:
        self.process = subprocess.Popen([sys.executable, "-c", SERVER], stdin=subprocess.PIPE,
                                        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env)
        self._buffer = b""
        self.ready = self._line(timeout=300) == "ready"

    def _line(self, timeout: float | None) -> str | None:
        """The next line the server answers, or None when ``timeout`` seconds pass (or it died)."""
        deadline = None if timeout is None else time.monotonic() + timeout
        fd = self.process.stdout.fileno()
        while b"\n" not in self._buffer:
            left = None if deadline is None else max(0.0, deadline - time.monotonic())
            if not select.select([fd], [], [], left)[0]:
                return None
            chunk = os.read(fd, 4096)
            if not chunk:
                return None
            self._buffer += chunk
        line, self._buffer = self._buffer.split(b"\n", 1)
        return line.decode()

    def run(self, argv: list, cwd: str, env: dict, timeout: float | None) -> subprocess.CompletedProcess:
        with tempfile.TemporaryDirectory(prefix="graphguard-forked-") as folder:
            out, err = os.path.join(folder, "stdout"), os.path.join(folder, "stderr")
            request = {"argv": argv, "cwd": cwd, "env": env, "stdout": out, "stderr": err}
            self.process.stdin.write((json.dumps(request) + "\n").encode())
            self.process.stdin.flush()
            pid = self._line(timeout=60)
            if pid is None:
                raise RuntimeError("tests/forked.py: the TensorFlow server did not start the program")
            status = self._line(timeout)
            if status is None:
                try:
                    os.killpg(int(pid), signal.SIGKILL)
                except ProcessLookupError:
                    pass
                self._line(timeout=60)
                raise subprocess.TimeoutExpired([sys.executable, *argv], timeout, _read(out), _read(err))
            return subprocess.CompletedProcess([sys.executable, *argv], int(status), _read(out), _read(err))

    def close(self) -> None:
        if self.process.poll() is None:
            self.process.stdin.close()
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.process.kill()


def _read(path: str) -> str:
    """A child's output as ``text=True`` reads it: the locale's encoding, universal newlines."""
    try:
        with open(path, encoding=locale.getpreferredencoding(False), errors="strict", newline=None) as handle:
            return handle.read()
    except FileNotFoundError:
        return ""


_SERVERS: dict = {}


def _server(env: dict) -> _Server | None:
    key = tuple(env.get(name) for name in STARTUP)
    server = _SERVERS.get(key)
    if server is None or (server.ready and server.process.poll() is not None):  # (one that never started stays)
        server = _SERVERS[key] = _Server(env)
    return server if server.ready else None


@atexit.register
def _close_all() -> None:
    for server in _SERVERS.values():
        server.close()


def run(argv: list, *, cwd, env: dict | None = None, timeout: float | None = None) -> subprocess.CompletedProcess:
    """``subprocess.run([sys.executable, *argv], cwd=cwd, env=env, capture_output=True, text=True,
    timeout=timeout)``, forked from a process that has imported TensorFlow (see the module docstring).
    ``argv`` is ``["-m", module, *args]`` or ``[script, *args]``. Raises ``subprocess.TimeoutExpired``
    as ``subprocess.run`` does."""
    env = dict(os.environ if env is None else env)
    server = None if os.environ.get("GRAPHGUARD_TESTS_NO_FORK") else _server(env)
    if server is None:
        return subprocess.run([sys.executable, *argv], cwd=cwd, env=env, capture_output=True, text=True,
                              timeout=timeout)
    return server.run([str(a) for a in argv], os.fspath(cwd), env, timeout)
