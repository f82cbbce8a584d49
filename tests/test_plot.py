"""Pictures (graphguard.plot): each drawing from canned reports is a PNG of the expected size whose
curves say what the numbers say; without matplotlib, one line and exit 2."""

from __future__ import annotations

import os
import struct
import subprocess
import sys
from pathlib import Path

import forked
import pytest

from graphguard.demo import CORRECT, INCORRECT, StepRecord
from graphguard.runtime.report import GuardReport, GuardStats, Growth, OpGroup, SourceLine, StepSample, StepSeconds

matplotlib = pytest.importorskip("matplotlib")

from graphguard import plot  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]


def _png_size(path: Path) -> tuple[int, int]:
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and data[12:16] == b"IHDR", "not a PNG file"
    return struct.unpack(">II", data[16:24])


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def demo_runs(steps: int = 200) -> dict:
    """The slowdown demo's shape: the incorrect script's step time and ops climb, the correct one's stay."""
    return {
        INCORRECT: {s: StepRecord(0.1 + 1.6 * s / steps, 1_000 + 2_000 * s) for s in range(1, steps + 1)},
        CORRECT: {s: StepRecord(0.1, 1_000) for s in range(1, steps + 1)},
    }


def sweep_report(leaking: bool, trials: int = 4) -> dict:
    """``SweepReport.as_dict()``-shaped data: a leaking sweep keeps 72 MiB and one model per trial."""
    return {"max_retained_bytes": 32 * 2**20, "trials": [
        {"name": f"lr={10 ** -i:g}", "seconds": 1.5, "leaked": leaking and i > 1,
         "retained_bytes": (72 if leaking else 0.5) * 2**20,
         "alive": [{"name": "Solver", "leaked": True}] if leaking and i > 1 else []}
        for i in range(1, trials + 1)]}


def guard_report() -> GuardReport:
    series = tuple(StepSample(step, 0.004 + step * 3e-5, 12 + 4 * step, (700 + step // 10) * 2**20 if step % 50 == 0 else None)
                   for step in range(1, 301, 10))
    line = SourceLine("/work/train.py", 10, "sess.run(tf.reduce_mean(y * 2.0))", "tf.reduce_mean")
    growth = Growth(2, 300, 299, 4, (OpGroup((("Const", 2), ("Mean", 1)), (line,)),))
    stats = GuardStats(301, 1207, 4.0, StepSeconds(0.02, 0.008, 0.013), 750 * 2**20, 28 * 2**20)
    return GuardReport("count", 2, stats, (growth,), 0, 0, (), series=series)


def _red_rows(image, columns: range, color: tuple = (0xD6, 0x27, 0x28)) -> list[float]:
    """Mean row of the incorrect script's red (or ``color``) in each of ``columns`` (NaN where there is none)."""
    import numpy as np

    rgb = image[..., :3]
    target = np.array(color) / 255
    red = np.all(np.abs(rgb - target) < 0.08, axis=-1)
    return [float(np.nonzero(red[:, c])[0].mean()) if red[:, c].any() else float("nan") for c in columns]


BLUE = (0x1F, 0x77, 0xB4)


def test_the_demo_picture_shows_the_incorrect_script_slowing_down(tmp_path):
    path = tmp_path / "demo.png"
    assert plot.plot_demo(demo_runs(), str(path), incorrect=INCORRECT, correct=CORRECT) == str(path)
    assert _png_size(path) == (1100, 440)
    assert path.stat().st_mode & 0o777 == 0o666 & ~_umask()  # as any file the user writes, not private
    import matplotlib.image

    image = matplotlib.image.imread(path)
    height, width = image.shape[:2]
    # The step-time panel is the left half (the legend is below the panels): where the red curve is
    # found, its right end is higher in the picture (a smaller row) than its left end.
    rows = [r for r in _red_rows(image[: int(height * 0.8)], range(0, width // 2)) if r == r]
    assert len(rows) > 100
    assert rows[-1] < rows[0] - 50, "the incorrect script's last step is not drawn slower than its first"
    # Graph size on a linear axis (issue 39): ops added at a constant rate are a straight line, whose
    # middle is halfway between its ends (on the log axis it was, and looked as if growth levelled off).
    ops = [r for r in _red_rows(image[: int(height * 0.8)], range(width // 2, width)) if r == r]
    assert len(ops) > 100 and abs(ops[len(ops) // 2] - (ops[0] + ops[-1]) / 2) < 12, (ops[0], ops[len(ops) // 2], ops[-1])


def test_the_sweep_picture_and_each_report_picture(tmp_path):
    pairs = [("NumPy sweep", sweep_report(True), sweep_report(False)),
             ("Keras k-fold", sweep_report(True, 5), sweep_report(False, 5))]
    assert _png_size(Path(plot.plot_sweeps(pairs, str(tmp_path / "sweep.png")))) == (1100, 610)
    import matplotlib.image

    # The fixed sweeps keep 0 objects: drawn as a blue dash and "0" per trial, not an invisible bar
    # (issue 39). The right-hand panels, above the legend, held no blue at all before.
    image = matplotlib.image.imread(tmp_path / "sweep.png")
    right = image[: int(image.shape[0] * 0.9), image.shape[1] // 2:]
    assert sum(r == r for r in _red_rows(right, range(right.shape[1]), BLUE)) >= 9 * 20  # 9 dashes, ~25 px each
    assert _png_size(Path(guard_report().plot(str(tmp_path / "guard.png")))) == (1000, 780)

    class Report:  # what SweepReport.plot hands over: its as_dict()
        def as_dict(self):
            return sweep_report(True)

    assert _png_size(Path(plot.plot_sweep_report(Report(), str(tmp_path / "trials.png")))) == (1000, 640)


def test_nothing_to_draw_and_a_bad_target_are_one_line_errors(tmp_path):
    with pytest.raises(ValueError, match="no step"):
        plot.plot_demo({}, str(tmp_path / "x.png"), incorrect=INCORRECT, correct=CORRECT)
    with pytest.raises(ValueError, match="no step"):
        GuardReport("finalize", 2, GuardStats(0, 5, 0.0, None, None, None), (), 0, 0, ()).plot(str(tmp_path / "x.png"))
    with pytest.raises(ValueError, match="not a .png"):
        plot.check_target(str(tmp_path / "x.jpg"))
    with pytest.raises(ValueError, match="no folder"):
        plot.check_target(str(tmp_path / "missing" / "x.png"))
    assert not list(tmp_path.iterdir())  # nothing written, no temporary file left


def _without_matplotlib(tmp_path: Path) -> dict:
    """An environment whose ``import matplotlib`` fails, as where the extra is not installed."""
    fake = tmp_path / "fake"
    (fake / "matplotlib").mkdir(parents=True)
    (fake / "matplotlib" / "__init__.py").write_text("raise ImportError('No module named matplotlib')\n")
    return {**os.environ, "PYTHONPATH": f"{fake}{os.pathsep}{ROOT}"}


@pytest.mark.parametrize("command", [["demo", "--plot", "out.png"], ["demo", "sweep", "--plot", "out.png"],
                                     ["run", "--plot", "out.png", "script.py"]])
def test_without_matplotlib_one_line_says_how_to_install_it_and_exit_2(tmp_path, command):
    (tmp_path / "script.py").write_text("print('ran')\n")
    result = subprocess.run([sys.executable, "-m", "graphguard", *command], capture_output=True, text=True,
                            cwd=tmp_path, env=_without_matplotlib(tmp_path), timeout=120)
    assert result.returncode == 2
    assert result.stderr == "graphguard: error: drawing a plot needs matplotlib: pip install -e '.[plot]' in a clone of graphguard\n"
    assert result.stdout == "" and not (tmp_path / "out.png").exists()


def test_graphguard_check_does_not_import_matplotlib(tmp_path):
    (tmp_path / "m.py").write_text("import tensorflow as tf\n")
    code = ("import sys, graphguard.cli as c; c.main(['check', '--no-cache', '-q', '.']);"
            "print('matplotlib' in sys.modules)")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path, timeout=120)
    assert result.stdout.strip().endswith("False")


LEAKING_SCRIPT = """\
import numpy as np
import tensorflow.compat.v1 as tf

tf.disable_v2_behavior()
x = tf.placeholder(tf.float32, [None, 4])
y = tf.matmul(x, tf.ones([4, 4]))
sess = tf.Session()
for step in range(60):
    sess.run(tf.reduce_mean(y * 2.0), {x: np.ones((8, 4))})
"""


def test_a_guard_records_its_series_and_graphguard_run_draws_it(tmp_path):
    # Real TensorFlow: the series the guard records (every 10th step at most), and --plot end to end.
    tf = pytest.importorskip("tensorflow")
    from graphguard import GraphGuard

    graph = tf.Graph()
    with graph.as_default():
        x = tf.compat.v1.placeholder(tf.float32, [None, 2])
        evaluate = tf.reduce_max(x, name="evaluate")
        with tf.compat.v1.Session(graph=graph) as sess:
            with GraphGuard(sess, mode="count", on_growth="warn", min_growth_steps=2) as guarded:
                with pytest.warns(Warning):
                    for _ in range(45):  # a training run, then an evaluation run: the runs alternate
                        guarded.run(tf.reduce_sum(x * 3.0), {x: [[1.0, 2.0]]})
                        guarded.run(evaluate, {x: [[1.0, 2.0]]})
            report = guarded.report()
    steps = [sample.step for sample in report.series]
    assert steps == sorted(steps) and steps[-1] == 90 and len(steps) >= 8
    assert report.series[-1].ops > report.series[0].ops  # the graph grew between the points
    assert all(sample.seconds > 0 for sample in report.series)
    # Issue 39: each point names its fetch, and both runs of the alternating loop are sampled (checks
    # every 10th step alone would only ever see the evaluation run: 10 is even).
    fetches = {sample.fetch for sample in report.series}
    assert {"Sum", "evaluate"} <= fetches, fetches
    assert _png_size(Path(report.plot(str(tmp_path / "guard.png")))) == (1000, 780)
    import matplotlib.image

    top = matplotlib.image.imread(tmp_path / "guard.png")[30:250]  # the step-time panel: one line per fetch
    assert all(sum(r == r for r in _red_rows(top, range(80, 990), color)) > 100 for color in ((0xD6, 0x27, 0x28), BLUE))

    (tmp_path / "leak.py").write_text(LEAKING_SCRIPT)
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2")  # (the other forked tests' start-up environment)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    result = forked.run(["-m", "graphguard", "run", "--on-growth", "warn", "--plot", "run.png", "leak.py"],
                        cwd=tmp_path, env=env, timeout=300)
    assert result.returncode == 1, result.stderr  # growth found: the exit status is the run's
    assert "graphguard run: picture of session 1: run.png" in result.stderr
    assert _png_size(tmp_path / "run.png") == (1000, 780)


def test_graphguard_run_sweep_draws_the_sweep(tmp_path):
    pytest.importorskip("psutil")
    (tmp_path / "sweep.py").write_text(
        "import numpy as np\n\n\nclass Net:\n    def __init__(self, n):\n        self.w = np.ones((n, n))\n\n"
        "    def fit(self, lr):\n        self.w -= lr\n        return self\n\n\nkept = []\n"
        "for lr in (0.1, 0.01, 0.001):\n    net = Net(1500)\n    net.fit(lr)\n    kept.append(net)\n")
    result = subprocess.run([sys.executable, "-m", "graphguard", "run", "--sweep", "--plot", "trials.png", "sweep.py"],
                            capture_output=True, text=True, cwd=tmp_path, timeout=300)
    assert result.returncode == 1, result.stderr  # every net kept: objects alive
    assert "graphguard run: picture of the sweep: trials.png" in result.stderr
    assert _png_size(tmp_path / "trials.png") == (1000, 640)


def test_a_trial_flagged_by_rss_alone_is_not_drawn_as_a_kept_object(tmp_path, monkeypatch):
    # A third new user's trial: a correct k-fold whose RSS rose was drawn red, "11 judged to leak", as
    # the real leak is; the table says it is RSS alone (LEAK? (RSS), RSS trend), and so does the picture now.
    class Report:
        def as_dict(self):
            kept = {"leaked": True, "chain_text": "module-level `m.KEPT` -> list[0] -> Sequential"}
            return {"max_retained_bytes": 32 * 2**20, "rss_trend": None, "trials": [
                {"name": "fold=1", "seconds": 1.0, "leaked": False, "warmup": True, "retained_bytes": 0, "alive": []},
                {"name": "fold=2", "seconds": 1.0, "leaked": True, "warmup": False, "retained_bytes": 40 * 2**20,
                 "alive": []},
                {"name": "fold=3", "seconds": 1.0, "leaked": True, "warmup": False, "retained_bytes": 2**20,
                 "alive": [kept]},
                {"name": "fold=4", "seconds": 1.0, "leaked": False, "warmup": False, "retained_bytes": 0, "alive": []}]}

    drawn = {}
    monkeypatch.setattr(plot, "_save", lambda figure, path: drawn.setdefault("figure", figure) and path)
    plot.plot_sweep_report(Report(), str(tmp_path / "t.png"))
    figure = drawn["figure"]
    assert figure._suptitle.get_text() == ("graphguard: 4 trials, 1 of them kept objects or graph ops, 1 flagged by RSS "
                                           "only (reported, not failed)")
    labels = [text.get_text() for legend in figure.legends for text in legend.get_texts()]
    assert labels[:3] == ["kept objects or graph ops (LEAK)", "RSS rose, nothing kept (reported, not failed)", "nothing kept"]
    memory = figure.axes[1]
    assert [text.get_text() for text in memory.texts] == ["RSS"]  # fold 3's bar is too short for a word
    colors = [bar.get_facecolor()[:3] for bar in memory.patches]
    assert colors[1] != colors[2] and colors[1] != colors[3]


def test_the_sweep_legend_lists_only_what_is_drawn_and_explains_the_crosses(tmp_path, monkeypatch):
    # A tenth new user's trial: "nothing kept" (blue) in the legend with no blue bar, and red crosses that
    # no legend entry explained.
    kept = {"leaked": True, "chain_text": "module-level `m.KEPT` -> list[0] -> Sequential"}

    class Report:
        def as_dict(self):
            return {"max_retained_bytes": 32 * 2**20, "rss_trend": None, "trials": [
                {"name": f"lr={n}", "seconds": 1.0, "leaked": True, "warmup": False, "retained_bytes": 2**20,
                 "alive": [kept]} for n in range(1, 5)]}

    drawn = {}
    monkeypatch.setattr(plot, "_save", lambda figure, path: drawn.setdefault("figure", figure) and path)
    plot.plot_sweep_report(Report(), str(tmp_path / "t.png"))
    labels = [text.get_text() for legend in drawn["figure"].legends for text in legend.get_texts()]
    assert labels == ["kept objects or graph ops (LEAK)", "limit: 32 MiB retained per trial",
                      "LEAK on a bar too short to write it in"], labels



def test_a_sweep_flagged_by_rss_alone_is_drawn_neutral_and_titled_as_a_note(tmp_path, monkeypatch):
    # A new user's trial: a correct Keras sweep (clear_session(), del, gc.collect() per trial) was drawn
    # mostly orange, titled "35 flagged by RSS only", above an exit status of 0 and "reported, not failed".
    trend = {"bytes_per_trial": 3.6 * 2**20, "first": 2, "last": 8, "trials": 7, "r2": 0.99}

    class Report:
        def __init__(self, over=()):
            self.over = over

        def as_dict(self):
            return {"max_retained_bytes": 32 * 2**20, "rss_trend": trend, "trials": [
                {"name": f"units={n}", "seconds": 0.4, "leaked": n >= 6 or n in self.over, "warmup": n == 1,
                 "retained_bytes": (40 if n in self.over else 3.6) * 2**20, "alive": [],
                 "rss_trend": trend if n >= 6 else None} for n in range(1, 9)]}

    drawn = []
    monkeypatch.setattr(plot, "_save", lambda figure, path: drawn.append(figure) or path)
    plot.plot_sweep_report(Report(), str(tmp_path / "t.png"))
    plot.plot_sweep_report(Report(over=(3,)), str(tmp_path / "t.png"))
    trend_only, over = drawn
    assert trend_only._suptitle.get_text() == ("graphguard: 8 trials\nnote: RSS rises about 3.6 MiB per trial: reported, "
                                               "not failed; no trial kept objects or graph ops")
    memory = trend_only.axes[1]
    colors = [matplotlib.colors.to_hex(bar.get_facecolor()) for bar in memory.patches]
    assert colors == [plot.CORRECT_COLOR] * 5 + [plot.RSS_ONLY_COLOR] * 3 and "#ff7f0e" not in colors
    assert len(memory.texts) == 0 and not [line for line in memory.lines if line.get_marker() not in ("None", None, "")]
    labels = [text.get_text() for legend in trend_only.legends for text in legend.get_texts()]
    assert labels[0] == "RSS rose, nothing kept (reported, not failed)"
    assert over._suptitle.get_text().endswith("note: RSS rises about 3.6 MiB per trial; RSS over the 32 MiB limit in 1 "
                                              "trial: reported, not failed; no trial kept objects or graph ops")
    assert [text.get_text() for text in over.axes[1].texts] == ["RSS"]  # the trial over the limit is marked

def test_awkward_reports_still_draw(tmp_path):
    # From a new user's trial: names with $ (mathtext), unicode, tabs and empty names; 60 trials; leaking
    # trials that retain nothing; 60 growth patterns; a run of one step.
    class Report:
        def __init__(self, trials):
            self.trials = trials

        def as_dict(self):
            return {"max_retained_bytes": 32 * 2**20, "trials": self.trials}

    odd = ["x=$^$", "a=$\\frac$", "学习率=0.1", "tab\there", "", "line\nbreak"]
    trials = [{"name": odd[i % len(odd)] + str(i), "seconds": 0.1, "leaked": i % 3 == 0, "warmup": i == 0,
               "retained_bytes": (i % 5) * 2**20 if i % 2 else 0, "alive": []} for i in range(60)]
    assert _png_size(Path(plot.plot_sweep_report(Report(trials), str(tmp_path / "many.png")))) == (1000, 640)
    line = SourceLine("/work/train.py", 10, "", "tf.add")
    growth = tuple(Growth(i + 3, 300, 4, 1, (OpGroup((("Add", 1),), (SourceLine("/work/t.py", i + 1, "", "tf.add"),)),))
                   for i in range(60))
    many = GuardReport("count", 2, guard_report().stats, growth, 0, 0, (), series=guard_report().series)
    assert _png_size(Path(many.plot(str(tmp_path / "growth.png")))) == (1000, 780)
    one = GuardReport("finalize", 2, GuardStats(1, 9, 0.0, None, 700 * 2**20, None), (), 0, 0, (),
                      stopped="GraphGrowthError at step 1", series=(StepSample(1, 0.02, 9, 700 * 2**20),))
    assert _png_size(Path(one.plot(str(tmp_path / "one.png")))) == (1000, 780)
    assert line.call == "tf.add"


def test_a_picture_is_a_png_written_where_asked_or_an_error_naming_that_path(tmp_path):
    for name in ("r.pdf", "r.svg", "r"):
        with pytest.raises(ValueError, match="not a .png"):
            guard_report().plot(str(tmp_path / name))
    with pytest.raises(OSError, match=f"cannot write {tmp_path / 'nope' / 'r.png'}"):
        guard_report().plot(str(tmp_path / "nope" / "r.png"))
    (tmp_path / "dir.png").mkdir()
    with pytest.raises(ValueError, match="it is a folder"):
        plot.check_target(str(tmp_path / "dir.png"))
    with pytest.raises(OSError, match="cannot write"):
        guard_report().plot(str(tmp_path / "dir.png"))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["dir.png"]  # no temporary file left


def test_the_guards_series_stays_bounded_and_keeps_its_rss_samples():
    from types import SimpleNamespace

    from graphguard.runtime.guard import _SERIES_POINTS, _Monitor

    monitor = SimpleNamespace(_series=[], _series_every=1, _series_skipped=0, _seconds=[0.001],
                              _graph=SimpleNamespace(version=5))
    for step in range(1, 200_001):
        _Monitor._sample(monitor, step, 2**20 * step if step % 1000 == 0 or step == 1 else None)
    series = monitor._series
    assert len(series) < _SERIES_POINTS and series[0].step == 1
    assert [p.step for p in series] == sorted(p.step for p in series)
    rss_steps = [p.step for p in series if p.rss_bytes is not None]
    assert rss_steps[:2] == [1, 1000] and len(rss_steps) == 201  # every RSS sample kept


def test_the_reports_own_last_sample_is_not_a_fetch_line():
    # A fifth new user's trial: the step-time legend listed "fetch not recorded: 1 point", the report's own
    # last sample (no run fetched it) beside the two fetches of an alternating loop.
    pytest.importorskip("matplotlib")
    from graphguard.plot import _figure, _step_times

    series = [StepSample(step, 0.002 if step % 2 else 0.03, 100, None, "train" if step % 2 else "[eval/Mean]")
              for step in range(1, 61)]
    series.append(StepSample(61, 0.002, 100, 700 * 2**20))
    figure = _figure(6, 3)
    axes = figure.add_subplot(1, 1, 1)
    _step_times(axes, series)
    labels = [text.get_text() for text in axes.get_legend().get_texts()]
    assert labels == ["sess.run(train): 30 points", "sess.run([eval/Mean]): 30 points"]


def test_fetches_without_the_reports_own_sample_are_drawn():
    # An eighteenth new user's trial: `graphguard run --plot` of a 900-run session whose sampled runs all
    # named their fetch said "no picture: None" (a KeyError for the unnamed group it tried to drop).
    pytest.importorskip("matplotlib")
    from graphguard.plot import _figure, _step_times, error_line

    series = [StepSample(step, 0.002 if step % 3 else 0.03, 100, None, "train" if step % 3 else "[eval/Mean]")
              for step in range(1, 91)]
    axes = _figure(6, 3).add_subplot(1, 1, 1)
    _step_times(axes, series)
    assert len(axes.get_legend().get_texts()) == 2
    assert error_line(KeyError(None)) == "KeyError: None"
