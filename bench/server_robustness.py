"""``graphguard server`` through a day of typing (issue 41): memory per notification, the cost of a
keystroke in a large document, and how fast the server answers while one is typed.

Usage::

    .venv/bin/python bench/server_robustness.py [--edits 5000] [--big-mb 20] [--keystrokes 50]
        [--soak-seconds 0]

It starts ``python -m graphguard server`` through pygls's client and measures:

1. **RSS per notification**: a 2,000-line module (``bench/server_latency.py``'s) opened, 500 edits to
   warm up, then ``--edits`` single-character ``didChange`` with a long debounce (no lint runs, as the
   issue measured); the server's RSS (``/proc/PID/status``) before and after, in MiB.
2. **A keystroke in a large document**, in this process: ``graphguard.server.wire.Document`` against
   pygls's ``TextDocument`` on a ``--big-mb`` MB text, ms per single-character edit.
3. **Typing in it, over the pipe**: the document opened in the server, ``--keystrokes`` keystrokes
   30 ms apart with the default debounce, and a ping (a request the server answers on its event loop
   with "method not found") every 20 ms meanwhile: ping round trips (median, max), the server's RSS
   before, after typing and after closing.
4. With ``--soak-seconds``: edits, saves, opens, closes and notebook edits for that long, the RSS
   printed every tenth of it (flat after warm-up is the goal). ``--soak-only`` skips 1-3;
   ``--tracemalloc DIR`` runs that server under ``bench/traced_server.py`` (a snapshot per sample;
   ``--trace-from SECONDS`` starts tracing that far in, and the soak then waits for a ping every 500
   operations, as a traced server is slower).

Prints figures; asserts nothing.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from lsprotocol import types as T  # noqa: E402
from pygls.lsp.client import LanguageClient  # noqa: E402
from pygls.uris import from_fs_path  # noqa: E402

from server_latency import module  # noqa: E402


def rss_mib(pid: int) -> float:
    """The resident set size of process ``pid`` in MiB (Linux)."""
    with open(f"/proc/{pid}/status", encoding="ascii") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def tree_rss_mib(pid: int) -> float:
    """The resident set size of process ``pid`` and its children (the lint worker) in MiB (Linux)."""
    total = rss_mib(pid)
    try:
        with open(f"/proc/{pid}/task/{pid}/children", encoding="ascii") as children:
            for child in children.read().split():
                try:
                    total += rss_mib(int(child))
                except OSError:
                    continue  # a worker that just ended
    except OSError:
        pass
    return total


def filler(megabytes: float) -> str:
    """About ``megabytes`` MB of Python lines no rule reads."""
    line = "value = compute(value, 1)  # a line of filler, about sixty characters long\n"
    return line * int(megabytes * 1_000_000 / len(line))


class Server:
    def __init__(self) -> None:
        self.client = LanguageClient("bench", "0")
        for method in (T.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS, T.WINDOW_LOG_MESSAGE):
            # the bench reads neither; without a handler pygls logs a line per notification
            self.client.feature(method)(lambda params: None)

    async def start(self, workspace: Path, debounce: float, traced: str | None = None, late: bool = False) -> None:
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        command = ["-m", "graphguard", "server"] if traced is None else [
            str(ROOT / "bench" / "traced_server.py"), traced, *(["--late"] if late else [])]
        await self.client.start_io(sys.executable, *command, env=env)
        uri = from_fs_path(str(workspace))
        await self.client.initialize_async(T.InitializeParams(
            capabilities=T.ClientCapabilities(), root_uri=uri,
            workspace_folders=[T.WorkspaceFolder(uri=uri, name="b")], initialization_options={"debounce": debounce}))
        self.client.initialized(T.InitializedParams())

    @property
    def pid(self) -> int:
        return self.client._server.pid

    async def ping(self) -> float:
        """Seconds for a request the event loop answers at once (an unknown method: an error reply)."""
        start = time.perf_counter()
        try:
            await asyncio.wait_for(self.client.protocol.send_request_async("graphguard/ping", None), 120)
        except asyncio.TimeoutError:
            raise
        except Exception:
            pass  # "method not found": the answer
        return time.perf_counter() - start

    def open(self, uri: str, text: str) -> None:
        self.client.text_document_did_open(T.DidOpenTextDocumentParams(
            T.TextDocumentItem(uri=uri, language_id="python", version=1, text=text)))

    def edit(self, uri: str, version: int, line: int, column: int, text: str, delete: int = 0) -> None:
        self.client.text_document_did_change(T.DidChangeTextDocumentParams(
            text_document=T.VersionedTextDocumentIdentifier(uri=uri, version=version),
            content_changes=[T.TextDocumentContentChangePartial(
                range=T.Range(T.Position(line, column), T.Position(line, column + delete)), text=text)]))

    async def stop(self) -> None:
        await self.client.shutdown_async(None)
        self.client.exit(None)
        await asyncio.wait_for(self.client._server.wait(), 30)
        await self.client.stop()


async def notifications(workspace: Path, edits: int) -> None:
    server = Server()
    await server.start(workspace, debounce=3600)
    uri = from_fs_path(str(workspace / "train.py"))
    text = module(2000)
    server.open(uri, text)
    version = 1

    async def type_(count: int) -> None:
        nonlocal version
        for i in range(count):
            version += 1
            server.edit(uri, version, 30 + i % 1500, 0, "#" if version % 2 == 0 else "", 0 if version % 2 == 0 else 1)
            if i % 500 == 0:
                await server.ping()
        await server.ping()

    await type_(500)
    before = rss_mib(server.pid)
    await type_(edits)
    after = rss_mib(server.pid)
    print(f"1. {edits} didChange on a {text.count(chr(10))}-line module, no lint: RSS {before:.1f} -> {after:.1f} MiB "
          f"({after - before:+.2f} MiB, {(after - before) * 1024 * 1024 / edits:.0f} bytes per notification)")
    await server.stop()


def keystroke_in_process(megabytes: float) -> None:
    from pygls.workspace import TextDocument

    from graphguard.server.wire import Document

    text = filler(megabytes)
    for name, cls in (("graphguard Document", Document), ("pygls 2.1 TextDocument", TextDocument)):
        document = cls("file:///big.py", source=text)
        times = []
        rounds = 20 if cls is Document else 3
        for i in range(rounds):
            change = T.TextDocumentContentChangePartial(
                range=T.Range(T.Position(1000 + i, 5), T.Position(1000 + i, 5)), text="x")
            start = time.perf_counter()
            document.apply_change(change)
            times.append(time.perf_counter() - start)
        print(f"2. a keystroke in a {len(text) / 1e6:.0f} MB document, {name}: median "
              f"{statistics.median(times) * 1000:.3f} ms, max {max(times) * 1000:.3f} ms ({rounds} keystrokes)")


async def typing_big(workspace: Path, megabytes: float, keystrokes: int) -> None:
    server = Server()
    await server.start(workspace, debounce=0.2)
    uri = from_fs_path(str(workspace / "big.py"))
    text = filler(megabytes)
    start_rss = rss_mib(server.pid)
    server.open(uri, text)
    await server.ping()
    opened = rss_mib(server.pid)
    pings: list[float] = []
    done = False

    async def pinger() -> None:
        while not done:
            pings.append(await server.ping())
            if os.environ.get("BENCH_VERBOSE") and pings[-1] > 0.05:
                print(f"   slow ping: {pings[-1] * 1000:.0f} ms, ending {time.perf_counter() - start:.2f} s after the "
                      f"first keystroke")
            await asyncio.sleep(0.02)

    start = time.perf_counter()
    task = asyncio.ensure_future(pinger())
    for i in range(keystrokes):
        server.edit(uri, i + 2, 500 + i, 10, "x")
        await asyncio.sleep(0.03)
    final = await server.ping()
    typed = time.perf_counter() - start
    await asyncio.sleep(1.0)  # the lint after the last keystroke
    done = True
    await task
    typing_rss = rss_mib(server.pid)
    server.client.text_document_did_close(T.DidCloseTextDocumentParams(T.TextDocumentIdentifier(uri)))
    await server.ping()
    closed = rss_mib(server.pid)
    ms = sorted(p * 1000 for p in pings)
    print(f"3. {keystrokes} keystrokes 30 ms apart in a {len(text) / 1e6:.0f} MB document over the pipe: "
          f"all handled {typed:.2f} s after the first (ping after the last: {final * 1000:.1f} ms); "
          f"{len(ms)} pings meanwhile: median {statistics.median(ms):.1f} ms, p90 "
          f"{ms[int(0.9 * (len(ms) - 1))]:.1f} ms, p99 {ms[int(0.99 * (len(ms) - 1))]:.1f} ms, max {ms[-1]:.1f} ms")
    print(f"   RSS: {start_rss:.0f} MiB at start, {opened:.0f} opened, {typing_rss:.0f} after typing, {closed:.0f} "
          f"after closing")
    await server.stop()


async def soak(workspace: Path, seconds: float, traced: str | None = None, trace_from: float = 0) -> None:
    server = Server()
    await server.start(workspace, debounce=0.05, traced=traced, late=trace_from > 0)
    tracing = traced is not None and not trace_from
    text = module(2000)
    uri = from_fs_path(str(workspace / "train.py"))
    notebook = from_fs_path(str(workspace / "nb.ipynb"))
    cells = [f"vscode-notebook-cell:{workspace / 'nb.ipynb'}#cell{i}" for i in range(2)]
    server.open(uri, text)
    server.client.notebook_document_did_open(T.DidOpenNotebookDocumentParams(
        notebook_document=T.NotebookDocument(uri=notebook, notebook_type="jupyter-notebook", version=1,
                                             cells=[T.NotebookCell(kind=T.NotebookCellKind.Code, document=c) for c in cells]),
        cell_text_documents=[T.TextDocumentItem(uri=c, language_id="python", version=1, text=t) for c, t in zip(
            cells, ["import tensorflow as tf\nsess = tf.Session()", "for step in range(100):\n    sess.run(tf.argmax(y, 1))"])]))
    start = time.perf_counter()
    version, operations, samples, step = 1, 0, [], seconds / 10
    next_sample = start
    while time.perf_counter() - start < seconds:
        version += 1
        operations += 1
        # A "#" typed at a line's start, then deleted on the same line: the document stays the same size.
        # (Typing on one line and deleting on the next grew every other line by a "#" per 1,500 edits and
        # emptied the rest: 1.4 MB more text after 3 M edits. That was not the cause of the server's RSS
        # step at 2,900-3,240 s: it came with balanced edits too.)
        line = 30 + (version // 2) % 1500
        server.edit(uri, version, line, 0, "#" if version % 2 == 0 else "", 0 if version % 2 == 0 else 1)
        if version % 50 == 0:
            server.client.text_document_did_save(T.DidSaveTextDocumentParams(text_document=T.TextDocumentIdentifier(uri)))
            other = from_fs_path(str(workspace / f"other{version % 7}.py"))
            server.open(other, "import tensorflow as tf\nx = 1\n")
            server.client.text_document_did_close(T.DidCloseTextDocumentParams(T.TextDocumentIdentifier(other)))
            server.client.notebook_document_did_change(T.DidChangeNotebookDocumentParams(
                notebook_document=T.VersionedNotebookDocumentIdentifier(uri=notebook, version=version),
                change=T.NotebookDocumentChangeEvent(cells=T.NotebookDocumentCellChanges(text_content=[
                    T.NotebookDocumentCellContentChanges(
                        document=T.VersionedTextDocumentIdentifier(uri=cells[0], version=version),
                        # a "#" typed at the start of the cell's second line, then deleted: the cell stays
                        # the same size (it gained a "#" per 100 operations before: 30 KB after 3 M)
                        changes=[T.TextDocumentContentChangePartial(
                            range=T.Range(T.Position(1, 0), T.Position(1, 0 if version % 100 else 1)),
                            text="#" if version % 100 else "")])]))))
        if version % 10 == 0:
            await asyncio.sleep(0.01)  # typing speed: about 10 operations per 10 ms
        if traced is not None and not tracing and time.perf_counter() - start >= trace_from:
            os.kill(server.pid, signal.SIGUSR2)  # tracing starts (bench/traced_server.py --late)
            tracing = True
        if tracing and version % 500 == 0:
            await server.ping()  # a traced server is slower: wait for it, or the pipe backs up
        if time.perf_counter() >= next_sample:
            if tracing:
                os.kill(server.pid, signal.SIGUSR1)  # a tracemalloc snapshot (bench/traced_server.py)
            await server.ping()
            samples.append((time.perf_counter() - start, operations, rss_mib(server.pid), tree_rss_mib(server.pid)))
            next_sample += step
    await server.ping()
    samples.append((time.perf_counter() - start, operations, rss_mib(server.pid), tree_rss_mib(server.pid)))
    print(f"4. soak, {seconds:.0f} s of edits, saves, opens, closes and notebook edits (time/operations: server "
          f"RSS, with its lint worker): " + ", ".join(f"{t:.0f} s/{n} ops {r:.1f} ({w:.1f}) MiB" for t, n, r, w in samples))
    await server.stop()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--edits", type=int, default=5000)
    parser.add_argument("--big-mb", type=float, default=20)
    parser.add_argument("--keystrokes", type=int, default=50)
    parser.add_argument("--soak-seconds", type=float, default=0)
    parser.add_argument("--soak-only", action="store_true", help="skip measurements 1-3")
    parser.add_argument("--tracemalloc", metavar="DIR",
                        help="run the soak's server under tracemalloc, a snapshot in DIR per sample")
    parser.add_argument("--trace-from", type=float, default=0, metavar="SECONDS",
                        help="with --tracemalloc: start tracing this far into the soak (full speed before)")
    args = parser.parse_args(argv)
    print(f"{os.cpu_count()} CPUs; Python {sys.version.split()[0]}")
    with tempfile.TemporaryDirectory() as folder:
        workspace = Path(folder) / "workspace"
        workspace.mkdir()
        (workspace / "train.py").write_text(module(2000), encoding="utf-8")
        if not args.soak_only:
            asyncio.run(notifications(workspace, args.edits))
            keystroke_in_process(args.big_mb)
            asyncio.run(typing_big(workspace, args.big_mb, args.keystrokes))
        if args.soak_seconds:
            asyncio.run(soak(workspace, args.soak_seconds, args.tracemalloc, args.trace_from))
    return 0


if __name__ == "__main__":
    sys.exit(main())
