"""The result cache and parallel checking: invalidation across modules, layout, safety, identical output."""

from __future__ import annotations

import json
import os
import pickle
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from graphguard.cache import CACHEDIR_TAG, FactsCache
from graphguard.checker import Checker, _project_names, project_digest
from graphguard.discovery import find_python_files

ROOT = Path(__file__).resolve().parents[1]

TRAIN = textwrap.dedent(
    """\
    import tensorflow as tf
    import model

    sess = tf.Session()
    for step in range(100):
        sess.run(train_op)
        probs = model.predict(logits)
    """
)
MODEL_CLEAN = "import numpy as np\n\n\ndef predict(logits):\n    return np.exp(logits)\n"
MODEL_LEAKY = "import tensorflow as tf\n\n\ndef predict(logits):\n    return tf.nn.softmax(logits)\n"


def graphguard(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "graphguard", *args], capture_output=True, text=True,
                          cwd=cwd, timeout=120)


def test_changing_a_helper_module_changes_the_findings_of_its_callers(tmp_path):
    (tmp_path / "train.py").write_text(TRAIN)
    (tmp_path / "model.py").write_text(MODEL_CLEAN)
    first = graphguard("check", ".", cwd=tmp_path)
    assert (first.returncode, first.stdout) == (0, "")
    assert (tmp_path / ".graphguard_cache" / "CACHEDIR.TAG").read_text().startswith(
        "Signature: 8a477f597d28d172789f06886806bc55")
    (tmp_path / "model.py").write_text(MODEL_LEAKY)
    os.utime(tmp_path / "model.py", ns=(1, 10**18))  # a different mtime even on coarse clocks
    second = graphguard("check", ".", cwd=tmp_path)
    assert second.returncode == 1
    assert second.stdout.startswith("train.py:7:13: GG101 op-in-session-loop: `model.predict(...)` "
                                    "(via `tf.nn.softmax(...)` at model.py:5)")
    (tmp_path / "model.py").write_text(MODEL_CLEAN)
    os.utime(tmp_path / "model.py", ns=(1, 2 * 10**18))
    assert graphguard("check", ".", cwd=tmp_path).returncode == 0


def test_a_helper_that_stops_running_steps_unmarks_its_callers_loop(tmp_path):
    # Regression: phase 3 marked the caller's loop as a session loop on the cached facts of the
    # caller's file, so after the helper stopped running steps the stale mark still gave a finding.
    (tmp_path / "train.py").write_text(
        "import tensorflow as tf\nfrom util import helper\n\nsess = tf.Session()\n"
        "for step in range(steps):\n    helper(sess, train_op)\n    acc = tf.reduce_mean(x)\n")
    (tmp_path / "util.py").write_text("import tensorflow as tf\n\n\ndef helper(sess, op):\n    sess.run(op)\n")
    assert graphguard("check", ".", cwd=tmp_path).returncode == 1
    (tmp_path / "util.py").write_text("import tensorflow as tf\n\n\ndef helper(sess, op):\n    print(op)\n")
    os.utime(tmp_path / "util.py", ns=(1, 10**18))
    result = graphguard("check", ".", cwd=tmp_path)
    assert (result.returncode, result.stdout) == (0, "")


def test_warm_run_reads_nothing_and_gives_the_same_findings(tmp_path):
    files = find_python_files([str(ROOT / "fixtures" / "analysis")])
    cache_dir = str(tmp_path / "cache")
    cold = Checker().check_paths(files, cache=FactsCache(cache_dir, "k"))
    warm = Checker().check_paths(files, cache=FactsCache(cache_dir, "k"))
    assert cold.read == len(files) and warm.read == 0
    assert warm.diagnostics == cold.diagnostics and cold.diagnostics


def test_other_settings_use_another_cache_file(tmp_path):
    a = FactsCache(str(tmp_path), "settings-a")
    b = FactsCache(str(tmp_path), "settings-b")
    assert a.path != b.path


def test_parallel_output_is_identical_to_serial():
    files = find_python_files([str(ROOT / "fixtures"), str(ROOT / "graphguard")])
    serial = Checker().check_paths(files, jobs=1)
    parallel = Checker().check_paths(files, jobs=2)
    assert parallel.diagnostics == serial.diagnostics and serial.diagnostics


def test_no_cache_and_cache_dir_and_clean(tmp_path):
    (tmp_path / "train.py").write_text(TRAIN)
    graphguard("check", "--no-cache", ".", cwd=tmp_path)
    assert not (tmp_path / ".graphguard_cache").exists()
    graphguard("check", "--cache-dir", "elsewhere", ".", cwd=tmp_path)
    assert (tmp_path / "elsewhere" / "CACHEDIR.TAG").exists()
    graphguard("check", ".", cwd=tmp_path)
    cleaned = graphguard("clean", cwd=tmp_path)
    assert cleaned.returncode == 0 and not (tmp_path / ".graphguard_cache").exists()
    refused = graphguard("clean", "--cache-dir", ".", cwd=tmp_path)
    assert refused.returncode == 2 and "is not a graphguard cache" in refused.stderr
    assert (tmp_path / "train.py").exists()


class _Exploit:
    def __reduce__(self):
        return (os.system, ("touch pwned",))


def test_a_planted_cache_cannot_run_code(tmp_path):
    (tmp_path / "train.py").write_text(TRAIN)
    cache = FactsCache(str(tmp_path / "cache"), Checker().settings_key)  # the file the CLI reads:
    cache.select(project_digest(_project_names(["./train.py"])))
    os.makedirs(os.path.dirname(cache.path))
    (tmp_path / "cache" / "CACHEDIR.TAG").write_text(CACHEDIR_TAG)  # planted with graphguard's marker
    with open(cache.path, "wb") as handle:
        pickle.dump({"x": _Exploit()}, handle)
    (tmp_path / "train.py").write_text(TRAIN)
    result = graphguard("check", "--cache-dir", "cache", ".", cwd=tmp_path)
    assert result.returncode == 0 and result.stdout == ""
    assert not (tmp_path / "pwned").exists()
    rewritten = FactsCache(str(tmp_path / "cache"), Checker().settings_key)
    rewritten.select(project_digest(_project_names(["./train.py"])))
    assert rewritten.path == cache.path
    assert rewritten.get(str(tmp_path / "train.py"), FactsCache.key(str(tmp_path / "train.py"))) is not None


def test_dotted_global_names_are_refused():
    # Regression: find_class("graphguard.checker", "os.system") resolved to os.system (protocol 4
    # looks dotted names up attribute by attribute). This payload runs `true` under plain pickle.
    import io

    import pytest

    from graphguard.cache import _SafeUnpickler

    payload = b"\x80\x04\x8c\x12graphguard.checker\x94\x8c\tos.system\x94\x93\x94\x8c\x04true\x94\x85\x94R\x94."
    assert pickle.loads(payload) == 0  # it is a working exploit
    with pytest.raises(pickle.UnpicklingError):
        _SafeUnpickler(io.BytesIO(payload)).load()


def test_the_project_folder_as_cache_dir_is_never_written_or_cleaned(tmp_path):
    # Regression: `graphguard clean --cache-dir .` deleted the project's files; then (issue 12) the
    # check wrote CACHEDIR.TAG and a `*` .gitignore into the project root.
    (tmp_path / "train.py").write_text(TRAIN)
    (tmp_path / "notes.txt").write_text("keep me\n")
    assert graphguard("check", "--cache-dir", ".", "train.py", cwd=tmp_path).returncode == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["notes.txt", "train.py"]
    assert graphguard("clean", "--cache-dir", ".", cwd=tmp_path).returncode == 2
    assert sorted(p.name for p in tmp_path.iterdir()) == ["notes.txt", "train.py"]


def test_a_change_to_graphguards_own_code_starts_a_new_cache(tmp_path, monkeypatch):
    # Regression: with an editable install, a rule's new message was answered from the run cache that
    # the previous code wrote under the same version (the sweep demo printed the old GG202 wording).
    from graphguard import cache

    before = FactsCache(str(tmp_path), "settings")
    monkeypatch.setattr(cache, "_STAMP", ["another-build-of-graphguard"])
    after = FactsCache(str(tmp_path), "settings")
    assert after.path != before.path and after.run_path != before.run_path
    monkeypatch.setattr(cache, "_STAMP", [])
    assert cache._code_stamp() == cache._code_stamp() != "another-build-of-graphguard"


def test_a_folder_that_is_not_graphguards_is_never_written_or_cleaned(tmp_path):
    # Regressions (issue 12, item 2): `clean --cache-dir .` deleted data/run-001.pickle and empty
    # folders; `check --cache-dir .` wrote .gitignore (`*`) and CACHEDIR.TAG into the project root; a
    # .graphguard_cache that is a symbolic link was followed outside the project and cleaned there.
    (tmp_path / "train.py").write_text(TRAIN)
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "run-001.pickle").write_bytes(b"user data")
    (tmp_path / "empty").mkdir()
    before = sorted(p.name for p in tmp_path.iterdir())
    checked = graphguard("check", "--cache-dir", ".", ".", cwd=tmp_path)
    assert checked.returncode == 0 and "checking without a cache" in checked.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == before
    refused = graphguard("clean", "--cache-dir", ".", cwd=tmp_path)
    assert refused.returncode == 2 and "holds files that are not graphguard's" in refused.stderr
    assert (tmp_path / "data" / "run-001.pickle").read_bytes() == b"user data" and (tmp_path / "empty").is_dir()
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "CACHEDIR.TAG").write_text("not ours\n")
    os.symlink(outside, tmp_path / ".graphguard_cache")
    linked = graphguard("check", ".", cwd=tmp_path)
    assert linked.returncode == 0 and "is a symbolic link" in linked.stderr
    assert sorted(p.name for p in outside.iterdir()) == ["CACHEDIR.TAG"]
    assert graphguard("clean", cwd=tmp_path).returncode == 2
    assert (outside / "CACHEDIR.TAG").exists()
    (tmp_path / ".graphguard_cache").unlink()
    assert graphguard("clean", cwd=tmp_path).returncode == 0  # nothing to clean: exit 0


_VICTIM: list = []


def _dying_reader(path):
    """A worker's reader that dies on one file, as the OOM killer would kill it."""
    import graphguard.checker as checker_module

    if path in _VICTIM:
        os._exit(9)
    return pickle.dumps(checker_module._read_file(path, checker_module._WORKER["settings"],
                                                  checker_module._WORKER["project"], checker_module._WORKER["prefilter"]))


def test_a_worker_that_dies_is_reported_not_waited_for(tmp_path, monkeypatch):
    # Regression (issue 12, item 3): a worker process killed while reading (the OOM killer, kill -9)
    # hung the whole run forever. Now the file whose reader dies is named as an internal error and
    # the other files are still checked.
    import graphguard.checker as checker_module

    for index in range(8):
        (tmp_path / f"m{index}.py").write_text(MODEL_LEAKY + "\nsess = tf.Session()\nfor step in range(steps):\n"
                                                 "    sess.run(tf.argmax(y, 1))\n")
    victim = str(tmp_path / "m3.py")
    monkeypatch.setattr(checker_module, "_worker_read", _dying_reader)
    monkeypatch.setattr(sys.modules[__name__], "_VICTIM", [victim])
    paths = sorted(str(p) for p in tmp_path.glob("*.py"))
    report = Checker().check_paths(paths, jobs=2)
    assert report.errors == [f"{victim}: the process reading it died (killed, or out of memory)"]
    assert sorted({d.filename for d in report.diagnostics}) == [p for p in paths if p != victim]


def test_a_file_name_that_is_not_utf8_is_checked_and_printed(tmp_path):
    # Regression (issue 12, item 4): a non-UTF-8 file name in a walked folder was a traceback (in the
    # gitignore call, the cache digest and the concise/full/github/junit output).
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    name = os.path.join(os.fsencode(tmp_path), b"caf\xe9.py")
    with open(name, "wb") as handle:
        handle.write(MODEL_LEAKY.encode() + b"\nsess = tf.Session()\nfor s in range(steps):\n    sess.run(tf.argmax(y, 1))\n")
    for output in ("concise", "full", "github", "junit", "json", "sarif"):
        result = graphguard("check", "--output-format", output, ".", cwd=tmp_path)
        assert result.returncode == 1 and "Traceback" not in result.stderr, (output, result.stderr)
    assert graphguard("check", ".", cwd=tmp_path).stdout.startswith("caf\\udce9.py:9:")


def test_a_damaged_cache_is_read_afresh(tmp_path):
    # Regression (issue 12, item 4): a cache holding valid pickles of the wrong shape crashed every run
    # until `graphguard clean`.
    from graphguard.analysis.facts import Loop

    (tmp_path / "train.py").write_text(MODEL_LEAKY + "\nsess = tf.Session()\nfor s in range(steps):\n    sess.run(tf.argmax(y, 1))\n")
    assert graphguard("check", ".", cwd=tmp_path).returncode == 1
    folder = tmp_path / ".graphguard_cache"
    (facts,) = folder.glob("*/facts-*.pickle")
    from graphguard.cache import _SafeUnpickler
    import io

    entries = _SafeUnpickler(io.BytesIO(facts.read_bytes())).load()
    def wrong_functions(key, value):
        result = pickle.loads(value)
        result.facts.functions = 5
        return key, pickle.dumps(result)

    # Entries are kept pickled, one each: damaged as a whole, inside, and cut short
    for damage in ((lambda key, value: (key, Loop(1, 2, 3))), (lambda key, value: (key, pickle.dumps(Loop(1, 2, 3)))),
                   wrong_functions, (lambda key, value: (key, value[:20]))):
        entries = {path: damage(*entry) for path, entry in entries.items()}
        facts.write_bytes(pickle.dumps(entries))
        for run in folder.glob("*/run-*.pickle"):
            run.unlink()
        result = graphguard("check", ".", cwd=tmp_path)
        assert result.returncode == 1 and "Traceback" not in result.stderr and "GG101" in result.stdout
        entries = _SafeUnpickler(io.BytesIO(facts.read_bytes())).load()


def test_only_regular_files_are_read_and_never_too_much(tmp_path):
    # Regressions (issue 12, item 5): a named FIFO hung the run; a named symlink to /dev/zero read GBs
    # into memory; a FIFO planted as the cache file hung every run.
    os.mkfifo(tmp_path / "pipe.py")
    os.symlink("/dev/zero", tmp_path / "zero.py")
    (tmp_path / "big.py").write_text("x = 1\n" * 3_000_000)
    for name, message in (("pipe.py", "cannot read file: not a regular file"), ("zero.py", "cannot read file: not a regular file"),
                          ("big.py", "file too large (17.2 MiB; graphguard reads up to 16.0 MiB: max-file-bytes)")):
        result = subprocess.run([sys.executable, "-m", "graphguard", "check", "--no-cache", name], capture_output=True,
                                text=True, cwd=tmp_path, timeout=60)
        assert result.returncode == 1 and f"GG002 io-error: {message}" in result.stdout
    (tmp_path / "big.py").unlink()
    (tmp_path / "train.py").write_text(TRAIN)
    assert graphguard("check", "train.py", cwd=tmp_path).returncode == 0
    (run,) = (tmp_path / ".graphguard_cache").glob("*/run-*.pickle")
    run.unlink()
    os.mkfifo(run)
    assert subprocess.run([sys.executable, "-m", "graphguard", "check", "train.py"], capture_output=True,
                          cwd=tmp_path, timeout=60).returncode == 0


def test_columns_on_a_long_non_ascii_line_are_right_and_fast():
    # Regression (issue 12, item 5): columns were computed by decoding the line's prefix per finding
    # (quadratic on a long non-ASCII line with many findings).
    source = "import tensorflow as tf\nsess = tf.Session()\nfor s in range(steps):\n    sess.run(['é' * 3, tf.argmax(y, 1), 'ü€😀', tf.reduce_sum(z)])\n"
    assert [(d.code, d.column) for d in Checker().check_source(source.encode(), "t.py")] == [("GG101", 24), ("GG101", 48)]
    line = "    sess.run([" + ", ".join(f"'é' + tf.argmax(y{i}, 1)" for i in range(3000)) + "])\n"
    found = Checker().check_source(("import tensorflow as tf\nsess = tf.Session()\nfor s in range(steps):\n" + line).encode(), "t.py")
    assert len(found) == 3000 and found[-1].column == line.rindex("'é' + tf.argmax") + 1


def test_jobs_1_and_jobs_n_agree_on_deeply_nested_code(tmp_path):
    # Regression (issue 12, item 8): workers parsed with the default recursion limit from a deeper
    # stack than the main process, so --jobs 1 and --jobs N disagreed on long operator chains.
    for n in (500, 3000, 8000):
        (tmp_path / f"chain{n}.py").write_text("import tensorflow as tf\nsess = tf.Session()\nfor s in range(steps):\n"
                                               "    sess.run(tf.argmax(y, 1) + " + " + ".join(["x"] * n) + ")\n")
    for index in range(8):
        (tmp_path / f"pad{index}.py").write_text("import tensorflow as tf\n")
    runs = [graphguard("check", "--no-cache", "--jobs", jobs, ".", cwd=tmp_path) for jobs in ("1", "2")]
    assert runs[0].stdout == runs[1].stdout and runs[0].stderr == runs[1].stderr and runs[0].returncode == runs[1].returncode
    assert "chain3000.py:4:14: GG106" in runs[0].stdout


@pytest.mark.parametrize(
    "source, column",
    [
        # A coding cookie: ast counts UTF-8 bytes of the decoded text, not the file's latin-1 bytes.
        (b'# -*- coding: latin-1 -*-\nimport tensorflow as tf\nsess = tf.Session()\nfor s in range(steps):\n'
         b'    x = "\xe9\xe9\xe9"; sess.run(tf.argmax(y, 1))\n', 25),
        # Line 1 of a file with a UTF-8 byte-order mark: ast does not count the mark.
        (b'\xef\xbb\xbfimport tensorflow as tf; sess = tf.Session(); [sess.run(tf.argmax(y, 1)) for s in range(steps)]\n', 57),
    ],
)
def test_columns_in_latin1_files_and_after_a_byte_order_mark(source, column):
    # Regression (issue 12, item 10).
    assert [(d.code, d.column) for d in Checker().check_source(source, "t.py")] == [("GG101", column)]


def test_workers_end_when_the_main_process_is_killed(tmp_path):
    # Regression (issue 12, fuzz pass): SIGTERM to the main process alone left its workers running.
    import signal
    import time

    psutil = pytest.importorskip("psutil")
    if not sys.platform.startswith("linux"):
        pytest.skip("PR_SET_PDEATHSIG is Linux's")
    body = "import tensorflow as tf\nsess = tf.Session()\nfor s in range(99):\n" + "    sess.run(tf.argmax(y, 1) + x)\n" * 400
    for index in range(300):
        (tmp_path / f"m{index}.py").write_text(body)
    proc = subprocess.Popen([sys.executable, "-m", "graphguard", "check", "--no-cache", "-j", "2", "."], cwd=tmp_path,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    parent = psutil.Process(proc.pid)
    deadline = time.time() + 30
    while len(parent.children()) < 2 and time.time() < deadline:
        time.sleep(0.05)
    workers = parent.children()
    assert workers, "no worker started"
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=30) == -signal.SIGTERM
    # Gone by the time the exit status is known (fifth fuzz pass: one was still running just after).
    def running(worker):
        try:
            return worker.status() != psutil.STATUS_ZOMBIE
        except psutil.NoSuchProcess:
            return False
    assert not [worker for worker in workers if running(worker)]


def test_a_second_ctrl_c_neither_hangs_nor_prints_worker_tracebacks(tmp_path):
    # Regression (third fuzz pass): two SIGINTs to the process group 50 ms apart hung the run in the
    # pool's shutdown for good; 10 ms apart, every worker printed a KeyboardInterrupt traceback.
    import signal
    import time

    body = "import tensorflow as tf\nsess = tf.Session()\n" + "".join(
        f"def f{i}(sess):\n    for s in range(99):\n        sess.run(tf.argmax(x{i}, 1))\n" for i in range(200))
    psutil = pytest.importorskip("psutil")
    for index in range(800):
        (tmp_path / f"m{index}.py").write_text(body)
    for gap in (0.01, 0.1):
        # Ctrl-C as a terminal sends it: to a command whose SIGINT is not ignored (a test run started in the
        # background of a shell without job control inherits it ignored, and so would the command).
        proc = subprocess.Popen([sys.executable, "-m", "graphguard", "check", "--no-cache", "-q", "-j", "2", "."],
                                cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True,
                                preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
        deadline = time.time() + 30
        while len(psutil.Process(proc.pid).children()) < 2 and time.time() < deadline:
            time.sleep(0.02)
        time.sleep(0.3)  # the workers are reading
        os.killpg(proc.pid, signal.SIGINT)
        time.sleep(gap)
        try:
            os.killpg(proc.pid, signal.SIGINT)
        except ProcessLookupError:
            pass
        _, err = proc.communicate(timeout=60)
        assert proc.returncode == 130 and b"Traceback" not in err, err.decode()[-500:]


def test_workers_read_largest_files_first_and_answer_in_path_order(tmp_path):
    # The parallel reader hands the largest files out first (load balance on 2 cores); what it returns
    # must still line up with the paths it was given, or facts would be filed under another module.
    paths = []
    for number in range(12):
        path = tmp_path / f"m{number}.py"
        path.write_text("import tensorflow as tf\n" + "x = tf.constant(1)\n" * ((number * 7) % 12 + 1))
        paths.append(str(path))
    results = Checker()._read_all(paths, _project_names(paths), jobs=2)
    assert [result.facts.path for result, _ in results] == paths


def test_a_file_cached_under_another_spelling_is_reported_as_this_run_names_it(tmp_path):
    # The cache is keyed by absolute path, and ``sub`` from the project and ``../sub`` from a folder
    # beside it give the same module names (the same cache file): the second run printed the
    # first run's ``sub/t.py`` for its ``../sub/t.py``.
    (tmp_path / "pyproject.toml").write_text("[tool.graphguard]\n")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "t.py").write_text(TRAIN.replace("    probs = model.predict(logits)\n",
                                                         "    probs = tf.argmax(logits, 1)\n"))
    (tmp_path / "docs").mkdir()
    first = graphguard("check", "--output-format", "concise", "sub", cwd=tmp_path)
    assert first.stdout.startswith(f"sub{os.sep}t.py:7:")
    second = graphguard("check", "--output-format", "concise", "../sub", cwd=tmp_path / "docs")
    assert second.stdout.startswith(f"..{os.sep}sub{os.sep}t.py:7:"), second.stdout
    assert second.stdout.replace(f"..{os.sep}", "", 1) == first.stdout
    again = graphguard("check", "--output-format", "concise", "--no-cache", "../sub", cwd=tmp_path / "docs")
    assert again.stdout == second.stdout


FIXABLE = textwrap.dedent(
    """\
    import tensorflow.compat.v1 as tf
    x = tf.placeholder(tf.float32, [None])
    y = x * {scale}
    with tf.Session() as sess:
        for step in range(100):
            print(sess.run(tf.argmax(y), {{x: [1.0]}}))
    """
)


def test_fixes_in_json_and_sarif_are_cached_and_follow_an_edit(tmp_path):
    """Issue 38: JSON and SARIF attach each finding's fix; the second run answers them from the cache
    (the same bytes), and a file edited since gets fixes for its new text."""
    for index in range(12):
        (tmp_path / f"m{index}.py").write_text(FIXABLE.format(scale=index))
    runs = {fmt: graphguard("check", "--output-format", fmt, ".", cwd=tmp_path) for fmt in ("json", "sarif")}
    assert all(run.returncode == 1 for run in runs.values())
    assert list((tmp_path / ".graphguard_cache").glob("*/fixes-*.pickle"))
    for fmt, run in runs.items():
        again = graphguard("check", "--output-format", fmt, ".", cwd=tmp_path)
        assert again.stdout == run.stdout
    uncached = graphguard("check", "--no-cache", "--output-format", "json", ".", cwd=tmp_path)
    assert uncached.stdout == runs["json"].stdout
    (tmp_path / "m3.py").write_text("# moved down a line\n" + FIXABLE.format(scale=3))
    edited = json.loads(graphguard("check", "--output-format", "json", "m3.py", cwd=tmp_path).stdout)
    fresh = json.loads(graphguard("check", "--no-cache", "--output-format", "json", "m3.py", cwd=tmp_path).stdout)
    assert edited == fresh and edited[0]["fix"]["edits"]


def test_fixes_from_worker_processes_match_the_serial_ones(tmp_path):
    for index in range(12):
        (tmp_path / f"m{index}.py").write_text(FIXABLE.format(scale=index))
    serial = graphguard("check", "--no-cache", "--jobs", "1", "--output-format", "json", ".", cwd=tmp_path)
    parallel = graphguard("check", "--no-cache", "--jobs", "2", "--output-format", "json", ".", cwd=tmp_path)
    assert parallel.stdout == serial.stdout and '"fix": {' in serial.stdout


def test_a_damaged_fixes_cache_is_computed_afresh(tmp_path):
    (tmp_path / "m.py").write_text(FIXABLE.format(scale=2))
    first = graphguard("check", "--output-format", "json", ".", cwd=tmp_path)
    (stored,) = (tmp_path / ".graphguard_cache").glob("*/fixes-*.pickle")
    stored.write_bytes(b"\x80\x05not a pickle")
    again = graphguard("check", "--output-format", "json", ".", cwd=tmp_path)
    assert again.stdout == first.stdout


def test_stored_fixes_come_back_through_the_safe_unpickler(tmp_path):
    from graphguard.fix.edits import Edit, Fix

    fix = Fix("safe", "move it", (Edit(3, 1, 3, 5, "abc"),))
    cache = FactsCache(str(tmp_path / "cache"), "settings")
    cache.put_fixes("m.py", ("key",), [(fix, None), (None, "why not")])
    cache.save()
    again = FactsCache(str(tmp_path / "cache"), "settings")
    assert again.get_fixes("m.py", ("key",)) == [(fix, None), (None, "why not")]
    assert again.get_fixes("m.py", ("other",)) is None


def test_files_given_as_bytes_are_read_once_per_content(monkeypatch):
    # Issue 38: the editor passes every open buffer on every lint; each was parsed again every time
    # (1.9 s per keystroke with 50 open 2,000-line files). Unchanged bytes are now read once.
    from graphguard import checker as module
    from graphguard.cache import MemoryCache

    read = []
    real = module.read_source
    monkeypatch.setattr(module, "read_source", lambda source, path, *rest: read.append(path) or real(source, path, *rest))
    checker, cache = module.Checker(), MemoryCache()
    sources = {"a.py": b"import tensorflow as tf\nsess = tf.Session()\nfor i in range(100):\n    sess.run(tf.argmax(y, 1))\n",
               "b.py": b"import tensorflow as tf\nx = tf.constant(1)\n"}
    reports = [checker.check_paths(["a.py", "b.py"], dict(sources), cache=cache) for _ in range(3)]
    assert sorted(read) == ["a.py", "b.py"]
    assert [[d.code for d in r.diagnostics] for r in reports] == [["GG101"]] * 3
    sources["a.py"] += b"# typed\n"
    assert [d.code for d in checker.check_paths(["a.py", "b.py"], dict(sources), cache=cache).diagnostics] == ["GG101"]
    assert read[2:] == ["a.py"]  # only the edited buffer is read again
    checker.check_paths(["a.py", "b.py"], dict(sources), cache=None)
    assert read[3:] == ["a.py", "b.py"]  # without a cache (--no-cache), every file is read
