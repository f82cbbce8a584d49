"""How fast ``graphguard check`` is, against CPython's own parser over the same files.

Usage::

    python bench/lint_speed.py --generate 200000      # a synthetic TF1-style corpus of ~200k lines
    python bench/lint_speed.py DIR [DIR ...]          # any folders (e.g. fetched public repositories)

In one run it measures, over the same files:

* the floor: ``ast.parse`` of every file, one process;
* graphguard cold: the command as a user runs it, ``graphguard check FOLDER ...`` with an empty cache
  (``--cache-dir``), ``--jobs`` processes (default: CPU count): its start, the walk, reading, the
  phases, the cache written, the output; timed from start to exit;
* graphguard warm: the same with the cache filled by the cold run and nothing changed (answered from
  the last run's findings), and again after one edit of the module most files import (a comment line
  added at its top, so every row below moves: that file read again, the others' facts from the
  cache), checked against a cold run of the edited files;
* graphguard serial: ``--jobs 1``, and whether its findings are byte-identical to the parallel run's;
* graphguard with every file named (as pre-commit passes them), no cache;
* how many files the warm runs read (``Checker.check_paths`` in this process, on copies of the cache);
* where a cold serial run's time goes, stage by stage (read, prefilter, parse, phase 1, pickling the
  facts as workers send them back, phases 2-3), and the size of the facts;
* Fixit (``fixit lint``, its default rules), if Fixit is installed.

Folders given are copied first (their Python files and notebooks), and the edit is made on the copy.
It prints lines per second and the ratios (cold/floor, warm/cold), and the peak RSS of the command's
main process (its own ``getrusage`` as it exits) and of the largest process of any run (the workers
included). Nothing is asserted: the figures are for people, the ratios are what to compare across
machines.
"""

from __future__ import annotations

import argparse
import ast
import gc
import os
import random
import resource
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

_ROOT = str(Path(__file__).resolve().parents[1])
sys.path.insert(0, _ROOT)

from graphguard.cache import FactsCache  # noqa: E402
from graphguard.checker import Checker  # noqa: E402
from graphguard.discovery import find_python_files  # noqa: E402

# ---------------------------------------------------------------------- the synthetic corpus

_MODEL = '''\
"""Model {n}: a small {kind} network, built once per graph."""
import tensorflow as tf

from {pkg}.layers import dense_block{n}


def build_{kind}{n}(images, num_classes={classes}, training=True):
    with tf.variable_scope("{kind}{n}", reuse=tf.AUTO_REUSE):
        net = tf.reshape(images, [-1, {side} * {side}])
        for units in ({units}):
            net = dense_block{n}(net, units, training=training)
        logits = tf.layers.dense(net, num_classes, name="logits")
    return logits


def loss_{kind}{n}(logits, labels, weight_decay={decay}):
    xent = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits))
    l2 = tf.add_n([tf.nn.l2_loss(v) for v in tf.trainable_variables() if "kernel" in v.name])
    return xent + weight_decay * l2


def accuracy_{kind}{n}(logits, labels):
    return tf.reduce_mean(tf.cast(tf.equal(tf.argmax(logits, 1), labels), tf.float32))
'''

_LAYERS = '''\
"""Layers shared by the models."""
import tensorflow as tf


def dense_block{n}(inputs, units, training=True, rate={rate}):
    net = tf.layers.dense(inputs, units, activation=tf.nn.relu)
    net = tf.layers.batch_normalization(net, training=training)
    return tf.layers.dropout(net, rate=rate, training=training)
'''

_TRAIN = '''\
"""Training script {n}."""
import argparse
import os
import time

import numpy as np
import tensorflow as tf

from {pkg}.models.model{n} import build_{kind}{n}, loss_{kind}{n}, accuracy_{kind}{n}
from {pkg}.data import batches{n}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default={steps})
    parser.add_argument("--lr", type=float, default={lr})
    parser.add_argument("--logdir", default="/tmp/run{n}")
    args = parser.parse_args()

    images = tf.placeholder(tf.float32, [None, {side}, {side}, 1])
    labels = tf.placeholder(tf.int64, [None])
    logits = build_{kind}{n}(images)
    loss = loss_{kind}{n}(logits, labels)
    train_op = tf.train.AdamOptimizer(args.lr).minimize(loss)
    saver = tf.train.Saver(max_to_keep=3)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        start = time.time()
        for step, (xs, ys) in enumerate(batches{n}(args.steps)):
            _, loss_value = sess.run([train_op, loss], {{images: xs, labels: ys}})
            if step % 100 == 0:
{bug}                print(step, loss_value, time.time() - start)
                saver.save(sess, os.path.join(args.logdir, "model"), global_step=step)


if __name__ == "__main__":
    main()
'''

_BUGS = (
    "                acc = sess.run(accuracy_{kind}{n}(logits, labels), {{images: xs, labels: ys}})\n",
    "                tf.train.Saver().save(sess, os.path.join(args.logdir, 'extra'))\n",
    "                sess.run(tf.assign(tf.train.get_global_step(), step))\n",
    "",
    "",
    "",
)

_DATA = '''\
"""Input data {n}: NumPy only."""
import numpy as np


def batches{n}(steps, batch_size={batch}, side={side}, seed={n}):
    rng = np.random.RandomState(seed)
    for _ in range(steps):
        xs = rng.rand(batch_size, side, side, 1).astype(np.float32)
        ys = rng.randint(0, 10, size=batch_size)
        yield xs, ys


def normalise{n}(xs):
    mean = xs.mean(axis=(1, 2), keepdims=True)
    std = xs.std(axis=(1, 2), keepdims=True) + 1e-6
    return (xs - mean) / std
'''


def generate(folder: Path, total_lines: int, seed: int = 0) -> int:
    """Write a synthetic project of about ``total_lines`` lines of TF1-style code into ``folder``:
    packages of models, shared layers, NumPy data modules and training scripts (some with the bug).
    Returns the number of lines written."""
    rng = random.Random(seed)
    written = 0
    package = 0
    while written < total_lines:
        pkg = f"project{package}"
        root = folder / pkg
        (root / "models").mkdir(parents=True, exist_ok=True)
        for name in ("__init__.py", "models/__init__.py"):
            (root / name).write_text("")
        layers = []
        data = []
        for n in range(20):
            kind = rng.choice(["mlp", "convnet", "resnet", "tagger"])
            values = dict(
                n=n, kind=kind, pkg=pkg, classes=rng.choice([10, 100, 1000]), side=rng.choice([28, 32, 64]),
                units=", ".join(str(rng.choice([64, 128, 256, 512])) for _ in range(rng.randint(2, 4))),
                decay=rng.choice([1e-4, 5e-4]), rate=rng.choice([0.1, 0.3, 0.5]), steps=rng.choice([1000, 20000]),
                lr=rng.choice([1e-3, 1e-4]), batch=rng.choice([32, 64, 128]),
            )
            values["bug"] = rng.choice(_BUGS).format(**values)
            texts = {
                root / "models" / f"model{n}.py": _MODEL.format(**values),
                root / f"train{n}.py": _TRAIN.format(**values),
            }
            layers.append(_LAYERS.format(**values))
            data.append(_DATA.format(**values))
            for path, text in texts.items():
                path.write_text(text)
                written += text.count("\n")
        for path, parts in ((root / "layers.py", layers), (root / "data.py", data)):
            text = "\n\n".join(parts)
            path.write_text(text)
            written += text.count("\n")
        package += 1
    return written


# ---------------------------------------------------------------------- measuring


def _lines(files: list[str]) -> int:
    total = 0
    for path in files:
        with open(path, "rb") as handle:
            total += handle.read().count(b"\n")
    return total


#: CPU seconds (user + system) of each floor and of each command timed with a label, its worker
#: processes included: on a machine whose speed drifts, the CPU each run needs is the steadier figure,
#: and the cold run's CPU over 2 cores says how close to the floor its wall time can come.
_CPU: dict[str, list] = {}


def _floor(files: list[str]) -> float:
    sources = []
    for path in files:
        with open(path, "rb") as handle:
            sources.append(handle.read())
    start, cpu = time.perf_counter(), time.process_time()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for source in sources:
            try:
                ast.parse(source)
            except (SyntaxError, ValueError):
                pass
    elapsed = time.perf_counter() - start
    _CPU.setdefault("floor", []).append(time.process_time() - cpu)
    return elapsed


#: Runs the command line (``graphguard check ...``) as the console script does, and writes the main
#: process's peak RSS (KiB, ``getrusage``) to the file given first as it exits: the command leaves by
#: ``os._exit``, so the figure is taken there (in the main process only, not in its workers).
_COMMAND = """
import os, resource, sys
main_pid, where = os.getpid(), sys.argv[1]
leave = os._exit
def _exit(status):
    if os.getpid() == main_pid:
        with open(where, "w") as handle:
            handle.write(str(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss))
    leave(status)
os._exit = _exit
sys.argv = ["graphguard", *sys.argv[2:]]
from graphguard.cli import main
sys.exit(main())
"""


def _run(targets: list[str], jobs: int, cache_dir: str | None, scratch: str,
         label: str | None = None) -> tuple[float, str, int]:
    """``graphguard check`` on ``targets`` (folders, or every file named) in a process of its own:
    (seconds from start to exit, its concise output, its main process's peak RSS in bytes). With a
    ``label``, its CPU seconds (its workers' included) go to ``_CPU[label]``."""
    where = os.path.join(scratch, "rss")
    cache = ["--no-cache"] if cache_dir is None else ["--cache-dir", cache_dir]
    argv = [sys.executable, "-c", _COMMAND, where, "check", "--output-format", "concise", "--quiet",
            "--jobs", str(jobs), *cache, "--", *targets]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, (_ROOT, os.environ.get("PYTHONPATH"))))}
    # Bytecode cached as a normal install has it: with PYTHONDONTWRITEBYTECODE set (as on the project's
    # machine) every start compiled graphguard's modules again, about 0.05 s of a 0.3 s warm run.
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(argv, capture_output=True, text=True, cwd=scratch, env=env)
    elapsed = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if label is not None:
        _CPU.setdefault(label, []).append(after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime)
    if done.returncode not in (0, 1):
        raise SystemExit(f"graphguard check failed ({done.returncode}): {done.stderr.strip()[-2000:]}")
    with open(where) as handle:
        rss = int(handle.read()) * 1024
    return elapsed, done.stdout, rss


def _files_read(files: list[str], jobs: int, cache_dir: str, scratch: str):
    """The :class:`~graphguard.checker.Report` of a run in this process on a copy of the command's cache
    as it is now (``report.read``: the files not answered from it), untimed."""
    copy = tempfile.mkdtemp(prefix="cache-copy-", dir=scratch)
    shutil.rmtree(copy)
    shutil.copytree(cache_dir, copy)
    # Keyed as the command keys its cache (no configuration in the copies of the folders).
    return Checker().check_paths(files, jobs=jobs, cache=FactsCache(copy, Checker().settings_key))


def _breakdown(files: list[str]) -> dict[str, float]:
    """Where a cold serial run's time goes, one stage at a time over every file (seconds): read the bytes,
    the prefilter's byte searches, ``ast.parse`` of the files it keeps, phase 1 (``read_module``), the
    facts pickled and unpickled as a worker sends them back (and their size, bytes), phases 2-3.
    Notebooks are left out (their JSON decoding is a stage of its own)."""
    import pickle

    from graphguard.analysis.reader import read_module
    from graphguard.checker import Report, _project_names
    from graphguard.prefilter import _imports_project, relevant

    files = [path for path in files if path.endswith((".py", ".pyi"))]
    project = _project_names(files)
    times = dict.fromkeys(("read", "prefilter", "parse", "phase 1", "pickle", "phases 2-3"), 0.0)
    start = time.perf_counter()
    sources = []
    for path in files:
        with open(path, "rb") as handle:
            sources.append((path, handle.read()))
    times["read"] = time.perf_counter() - start
    start = time.perf_counter()
    kept = [(path, source) for path, source in sources if relevant(source) or _imports_project(source, project)]
    times["prefilter"] = time.perf_counter() - start
    # File by file, the tree dropped once its facts are read, with gc off: as the checker's workers do
    # (keeping every tree alive makes the collector's passes, not the parser, the cost).
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, 20_000))
    modules = []
    gc.disable()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for path, source in kept:
                start = time.perf_counter()
                try:
                    tree = ast.parse(source, filename=path)
                except (SyntaxError, ValueError):
                    continue
                parsed = time.perf_counter()
                times["parse"] += parsed - start
                lines = None if source.isascii() else source.splitlines(keepends=True)
                try:
                    modules.append(read_module(tree, path, lines, frozenset(), frozenset(), project))
                except RecursionError:
                    pass
                del tree
                times["phase 1"] += time.perf_counter() - parsed
    finally:
        gc.enable()
        sys.setrecursionlimit(limit)
    gc.disable()  # as in the checker's run: the collector's passes over live facts are not the stages' cost
    try:
        start = time.perf_counter()
        blobs = [pickle.dumps(module, protocol=pickle.HIGHEST_PROTOCOL) for module in modules]
        modules = [pickle.loads(blob) for blob in blobs]
        times["pickle"] = time.perf_counter() - start
        times["facts bytes"] = float(sum(map(len, blobs)))
        start = time.perf_counter()
        Checker()._report(modules, Report(files=len(modules)))
        times["phases 2-3"] = time.perf_counter() - start
    finally:
        gc.enable()
    return times


def _copy(paths: list[str], into: Path) -> list[str]:
    """Copy the files graphguard would check under each of ``paths`` into ``into/<n>/<folder name>``,
    keeping their relative paths (module names do not change); returns the new folders."""
    copies = []
    for number, path in enumerate(paths):
        root = Path(path).resolve()
        target = into / str(number) / root.name
        target.mkdir(parents=True, exist_ok=True)
        for found in find_python_files([str(root)]):
            relative = Path(found).resolve().relative_to(root) if root.is_dir() else Path(root.name)
            (target / relative).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(found, target / relative)
        copies.append(str(target))
    return copies


def _most_imported(files: list[str]) -> tuple[str, int]:
    """The ``.py`` file that the most other files of the run import (by its dotted names, as the
    checker's prefilter reads imports), and how many import it."""
    from graphguard.analysis.fixpoint import module_names
    from graphguard.prefilter import imported_names

    by_name: dict[str, set] = {}
    for path in files:
        if path.endswith(".py"):
            for name in module_names(path):
                by_name.setdefault(name, set()).add(path)
    importers: dict[str, set] = {}
    for path in files:
        with open(path, "rb") as handle:
            source = handle.read()
        for name in imported_names(source):
            for target in by_name.get(name, ()):
                if target != path and os.path.basename(target) != "__init__.py":
                    importers.setdefault(target, set()).add(path)
    if not importers:
        return files[len(files) // 2], 0
    edited = max(sorted(importers), key=lambda target: len(importers[target]))
    return edited, len(importers[edited])


def _fixit(files: list[str]) -> float | None:
    if shutil.which("fixit") is None:
        return None
    start = time.perf_counter()
    subprocess.run(["fixit", "lint", *files], capture_output=True, timeout=3600)
    return time.perf_counter() - start


class _Terminated(BaseException):
    """SIGTERM reached the bench, as KeyboardInterrupt says SIGINT did (see :func:`main`)."""


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark; returns the exit status: 130 after Ctrl-C, 143 (128 + SIGTERM) after SIGTERM
    (``kill``, ``timeout``), each with one line on stderr instead of a traceback. The first of them stops
    the run where it is, by an exception: ``subprocess.run`` kills the ``graphguard check`` it waits for
    (its workers die with it) and the temporary folder is removed; any later one does nothing, so that
    this cleanup runs to its end."""
    stopped: list[int] = []

    def stop(signum: int, frame) -> None:
        if not stopped:
            stopped.append(signum)
            raise KeyboardInterrupt if signum == signal.SIGINT else _Terminated

    # A signal ignored as the bench started (a background job of a script) stays ignored, as Python leaves it.
    previous = {signum: signal.signal(signum, stop) for signum in (signal.SIGINT, signal.SIGTERM)
                if signal.getsignal(signum) is not signal.SIG_IGN}
    try:
        return _bench(argv)
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 128 + signal.SIGINT
    except _Terminated:
        print("terminated", file=sys.stderr)
        return 128 + signal.SIGTERM
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)


def _positive(text: str) -> int:
    """An argparse type: an int >= 1 (``--jobs 0``, ``--repeat -1``, ``--generate -5`` are usage errors)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer >= 1, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected an integer >= 1, got {value}")
    return value


def _bench(argv: list[str] | None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("paths", nargs="*", help="folders to check")
    parser.add_argument("--generate", type=_positive, metavar="LINES", help="generate a synthetic corpus of about LINES lines")
    parser.add_argument("--jobs", type=_positive, default=os.cpu_count() or 1)
    parser.add_argument("--repeat", type=_positive, default=3, metavar="N",
                        help="measure each run but the serial one N times, the cold and named ones each between "
                             "two floors (default 3: a shared 2-core machine drifts by 10-30%% within minutes)")
    parser.add_argument("--no-fixit", action="store_true", help="skip Fixit even when it is installed")
    parser.add_argument("--keep", metavar="DIR", help="write the generated corpus here and keep it")
    args = parser.parse_args(argv)
    if not args.paths and not args.generate:
        parser.error("give folders to check, or --generate LINES")
    for path in args.paths:
        if not os.path.isdir(path):
            parser.error(f"{path}: not a folder")
    if args.keep and os.path.exists(args.keep) and not os.path.isdir(args.keep):
        parser.error(f"--keep {args.keep}: not a folder")

    scratch = tempfile.mkdtemp(prefix="graphguard-bench-")
    try:
        # Measured on a copy of the folders given (their Python files and notebooks): the edit below
        # never touches them. A generated corpus is the bench's own, edited where it is written.
        paths = _copy(args.paths, Path(scratch) / "copy") if args.paths else []
        if args.generate:
            target = Path(args.keep) if args.keep else Path(scratch) / "corpus"
            target.mkdir(parents=True, exist_ok=True)
            generate(target, args.generate)
            paths.append(str(target))
        files = find_python_files(paths)
        if not any(file.endswith((".py", ".pyi")) for file in files):
            parser.error("no Python files in the folders given (the floor and the edit need .py files)")
        lines = _lines(files)
        # The floor between every two runs of graphguard, ``--repeat`` times over: floor, cold, floor,
        # named, floor, cold, ... A shared 2-core machine drifts by 10-30% over tens of seconds (the
        # floor alone measured 4.5-6.7 s within ten minutes), so each run is set against the mean of the
        # floors just before and after it, and the ratios' median is the figure; the table keeps each
        # run's fastest.
        floors, colds, nameds, cold_ratios, named_ratios = [_floor(files)], [], [], [], []
        for repeat in range(max(1, args.repeat)):
            cache_dir = os.path.join(scratch, f"cache-{repeat}")  # empty: a cold run writes it
            colds.append(_run(paths, args.jobs, cache_dir, scratch, "cold"))
            floors.append(_floor(files))
            cold_ratios.append(colds[-1][0] / ((floors[-2] + floors[-1]) / 2))
            nameds.append(_run(files, args.jobs, None, scratch, "named"))  # what pre-commit does: every file named
            floors.append(_floor(files))
            named_ratios.append(nameds[-1][0] / ((floors[-2] + floors[-1]) / 2))
        floor = min(floors)
        cold, cold_out, cold_rss = min(colds)
        named, named_out, named_rss = min(nameds)
        outputs_agree = all(out == cold_out for _, out, _ in (*colds, *nameds))
        warm, warm_out, _ = min(_run(paths, args.jobs, cache_dir, scratch) for _ in range(max(1, args.repeat)))
        warm_report = _files_read(files, args.jobs, cache_dir, scratch)
        # One edit of the module most files import: a comment line added at its top (every row below it
        # moves), as a developer's commit would; its facts are read again, the others' come from the
        # cache. (On the copy; put back afterwards for the runs below.)
        edited, importers = _most_imported(files)
        with open(edited, "rb") as handle:
            original = handle.read()
        edit = b"# edited by bench/lint_speed.py\n" + original
        try:
            with open(edited, "wb") as handle:
                handle.write(edit)
            touched_report = _files_read(files, args.jobs, cache_dir, scratch)
            touches = []
            for repeat in range(max(1, args.repeat)):  # each on a copy of the cache as the edit found it
                before_edit = os.path.join(scratch, f"cache-edited-{repeat}")
                shutil.copytree(cache_dir, before_edit)
                touches.append(_run(paths, args.jobs, before_edit, scratch))
            touched, touched_out, _ = min(touches)
            edited_cold, edited_cold_out, _ = _run(paths, args.jobs, None, scratch)
        finally:
            with open(edited, "wb") as handle:
                handle.write(original)
        serial, serial_out, serial_rss = _run(paths, 1, None, scratch)
        stages = _breakdown(files)
        fixit = None if args.no_fixit else _fixit(files)
        main_rss = max(cold_rss, serial_rss, named_rss)
        child_rss = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024

        print(f"corpus: {len(files)} files, {lines:,} lines ({', '.join(paths)})")
        print(f"findings: {len(cold_out.splitlines())}; files skipped by the prefilter: {warm_report.skipped}; "
              f"jobs: {args.jobs}")
        print()
        print(f"{'run':<42}{'seconds':>9}{'lines/s':>12}{'x floor':>9}")
        jobs = f"{args.jobs} job{'s' if args.jobs != 1 else ''}"
        rows = [("ast.parse floor (1 process)", floor), (f"graphguard cold ({jobs}, empty cache)", cold),
                (f"graphguard warm ({jobs}, cache)", warm),
                ("graphguard warm, 1 module edited", touched), ("graphguard serial (1 job, no cache)", serial),
                (f"graphguard, every file named ({jobs})", named)]
        if fixit is not None:
            rows.append(("fixit lint (default rules)", fixit))
        for name, seconds in rows:
            print(f"{name:<42}{seconds:>9.2f}{lines / seconds:>12,.0f}{seconds / floor:>9.2f}")
        print()
        print(f"against the floors measured just before and after each run (median of {len(cold_ratios)}): "
              f"cold {statistics.median(cold_ratios):.2f}x ({', '.join(f'{r:.2f}' for r in cold_ratios)}), "
              f"every file named {statistics.median(named_ratios):.2f}x ({', '.join(f'{r:.2f}' for r in named_ratios)}); "
              f"floors {', '.join(f'{f:.2f}' for f in floors)} s")
        print(f"fastest against fastest: cold / floor: {cold / floor:.2f}x   warm / cold: {warm / cold:.3f}x   "
              f"serial / floor: {serial / floor:.2f}x"
              + (f"   fixit / cold: {fixit / cold:.1f}x" if fixit is not None else ""))
        floor_cpu = statistics.median(_CPU["floor"])
        cores = max(1, min(args.jobs, os.cpu_count() or 1))  # what the workers can run on at once
        print(f"CPU seconds{', workers included' if args.jobs > 1 else ''} (median): " + ", ".join(
            f"{label} {statistics.median(_CPU[label]):.2f} s ({statistics.median(_CPU[label]) / floor_cpu:.2f}x the floor's)"
            for label in ("floor", "cold", "named"))
              + f"; on {cores} core{'s' if cores != 1 else ''} the cold run needs at least "
              f"{statistics.median(_CPU['cold']) / cores / floor_cpu:.2f}x the floor's time")
        print(f"warm run read {warm_report.read} of {len(files)} files; after one edit, {touched_report.read}")
        print(f"edited: {edited} (imported by {importers} file{'s' if importers != 1 else ''}): {touched / cold:.3f}x cold; "
              f"output identical to a cold run of the edited files: {'yes' if touched_out == edited_cold_out else 'NO'}")
        print(f"{'parallel' if args.jobs > 1 else 'cold'} output byte-identical to serial"
              f"{'' if args.jobs > 1 else ' (both 1 job)'}: {'yes' if cold_out == serial_out else 'NO'}; "
              f"named identical to found: {'yes' if named_out == cold_out else 'NO'}; "
              f"every repeat identical: {'yes' if outputs_agree and all(out == touched_out for _, out, _ in touches) else 'NO'}; "
              f"warm run identical to cold: {'yes' if warm_out == cold_out else 'NO'}")
        facts_bytes = stages.pop("facts bytes")
        total = sum(stages.values())
        print("cold serial run by stage (.py files; seconds, share, x floor): " + "; ".join(
            f"{name} {seconds:.2f} s {seconds / total:.0%} {seconds / floor:.2f}x" for name, seconds in stages.items()))
        print(f"facts {'sent back by workers' if args.jobs > 1 else 'a worker would send back (none with 1 job)'}: "
              f"{facts_bytes / 2**20:.1f} MiB pickled ({facts_bytes / max(lines, 1):.0f} bytes per line)")
        print(f"peak RSS: the command's main process {main_rss / 2**20:.0f} MiB (cold, serial or named, the "
              f"largest); the largest process of any run {child_rss / 2**20:.0f} MiB")
    finally:
        try:
            shutil.rmtree(scratch, ignore_errors=True)
        finally:  # again if a signal cut that short: any later one does nothing (see main)
            shutil.rmtree(scratch, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
