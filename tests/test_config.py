"""[tool.graphguard] configuration: every key, discovery, --config, and one-line errors (exit 2)."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

LEAKY = textwrap.dedent(
    """\
    import tensorflow as tf

    sess = tf.Session()
    for step in range(100):
        sess.run(tf.argmax(y, 1))
        saver = tf.train.Saver()
    """
)


def graphguard(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "graphguard", *args], capture_output=True, text=True,
                          cwd=cwd, timeout=120)


def codes(result) -> list[tuple[str, str, int]]:
    return [(Path(f["filename"]).name, f["code"], f["location"]["row"]) for f in json.loads(result.stdout)]


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "train.py").write_text(LEAKY)
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_train.py").write_text(LEAKY)
    return tmp_path


def configure(project: Path, body: str) -> None:
    (project / "pyproject.toml").write_text("[tool.graphguard]\n" + textwrap.dedent(body))


def test_defaults_without_config(project):
    result = graphguard("check", "--output-format", "json", ".", cwd=project)
    assert codes(result) == [("train.py", "GG101", 5), ("train.py", "GG102", 6),
                             ("test_train.py", "GG101", 5), ("test_train.py", "GG102", 6)]


def test_select_and_extend_select(project):
    configure(project, 'select = ["GG102"]\n')
    assert {c for _, c, _ in codes(graphguard("check", "--output-format", "json", ".", cwd=project))} == {"GG102"}
    configure(project, 'select = ["GG102"]\nextend-select = ["GG101"]\n')
    assert {c for _, c, _ in codes(graphguard("check", "--output-format", "json", ".", cwd=project))} == {"GG101", "GG102"}


def test_ignore_with_prefix(project):
    configure(project, 'ignore = ["GG1"]\n')
    result = graphguard("check", ".", cwd=project)
    assert (result.returncode, result.stdout) == (0, "")


def test_command_line_select_overrides_config(project):
    configure(project, 'select = ["GG102"]\n')
    result = graphguard("check", "--select", "GG101", "--output-format", "json", ".", cwd=project)
    assert {c for _, c, _ in codes(result)} == {"GG101"}


def test_per_file_ignores(project):
    configure(project, '[tool.graphguard.per-file-ignores]\n"tests/*" = ["GG101", "GG102"]\n')
    assert [n for n, _, _ in codes(graphguard("check", "--output-format", "json", ".", cwd=project))] == ["train.py"] * 2


def test_exclude_replaces_defaults_and_extend_exclude_adds(project):
    configure(project, 'extend-exclude = ["tests"]\n')
    assert {n for n, _, _ in codes(graphguard("check", "--output-format", "json", ".", cwd=project))} == {"train.py"}
    (project / "build").mkdir()
    (project / "build" / "gen.py").write_text(LEAKY)
    configure(project, 'exclude = ["tests"]\n')  # build/ is no longer excluded by default
    assert {n for n, _, _ in codes(graphguard("check", "--output-format", "json", ".", cwd=project))} == {"train.py", "gen.py"}


def test_respect_gitignore(project):
    subprocess.run(["git", "init", "-q"], cwd=project, check=True)
    (project / ".gitignore").write_text("tests/\n")
    assert {n for n, _, _ in codes(graphguard("check", "--output-format", "json", ".", cwd=project))} == {"train.py"}
    configure(project, "respect-gitignore = false\n")
    assert {n for n, _, _ in codes(graphguard("check", "--output-format", "json", ".", cwd=project))} == {"train.py", "test_train.py"}


def test_session_names_and_factories(project):
    source = textwrap.dedent(
        """\
        import tensorflow as tf
        from infra.sessions import open_training_session

        worker = open_training_session()
        for step in range(100):
            worker.run(tf.argmax(y, 1))
        for step in range(100):
            runner.run(tf.reduce_sum(y))
        """
    )
    (project / "src" / "train.py").write_text(source)
    result = graphguard("check", "--output-format", "json", "src", cwd=project)
    assert codes(result) == []
    configure(project, 'session-factories = ["infra.sessions.open_training_session"]\nsession-names = ["runner"]\n')
    result = graphguard("check", "--output-format", "json", "src", cwd=project)
    assert codes(result) == [("train.py", "GG101", 6), ("train.py", "GG101", 8)]


def test_output_format_from_config(project):
    configure(project, 'output-format = "json-lines"\n')
    result = graphguard("check", "src", cwd=project)
    assert [json.loads(line)["code"] for line in result.stdout.splitlines()] == ["GG101", "GG102"]


def test_closest_config_wins_and_config_flag_overrides(project):
    configure(project, 'select = ["GG101"]\n')
    (project / "src" / "pyproject.toml").write_text('[tool.graphguard]\nselect = ["GG102"]\n')
    assert {c for _, c, _ in codes(graphguard("check", "--output-format", "json", "src", cwd=project))} == {"GG102"}
    result = graphguard("check", "--config", str(project / "pyproject.toml"), "--output-format", "json", "src", cwd=project)
    assert {c for _, c, _ in codes(result)} == {"GG101"}


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ("selct = []\n", "pyproject.toml: [tool.graphguard] unknown key 'selct'"),
        ('select = "GG101"\n', "pyproject.toml: [tool.graphguard] select: expected a list"),
        ('select = ["GG999"]\n', "pyproject.toml: [tool.graphguard] select: unknown rule code or prefix 'GG999'"),
        ("respect-gitignore = 1\n", "pyproject.toml: [tool.graphguard] respect-gitignore: expected true or false"),
        ('output-format = "xml"\n', "pyproject.toml: [tool.graphguard] output-format: 'xml' is not one of"),
        ('[tool.graphguard.per-file-ignores]\n"a.py" = ["XX1"]\n', "per-file-ignores 'a.py': unknown rule code"),
        ("select = [\n", "pyproject.toml: invalid TOML"),
        ("max-bounded-iterations = -1\n", "max-bounded-iterations: expected a whole number >= 0"),
        ('select = [""]\n', "select: an empty rule code"),
        ('session-factories = ["make_session"]\n', "session-factories: 'make_session' is not a dotted name"),
        ('[tool.graphguard.per-file-ignores]\n"*.py" = [""]\n', "per-file-ignores '*.py': an empty rule code"),
        ('max-bounded-iterations = "5"\n', "max-bounded-iterations: expected a whole number"),
        ("max-bounded-iterations = true\n", "max-bounded-iterations: expected a whole number"),
    ],
)
def test_bad_configuration_is_one_line_and_exit_2(project, body, message):
    (project / "pyproject.toml").write_text("[tool.graphguard]\n" + body)
    result = graphguard("check", ".", cwd=project)
    assert result.returncode == 2
    assert result.stdout == ""
    assert len(result.stderr.splitlines()) == 1
    assert message in result.stderr


def test_max_bounded_iterations(project):
    # range(100) is reported by default (100 > 10); with the bound at 100 it is a handful; 0 turns it off.
    (project / "src" / "cases.py").write_text(LEAKY.replace("range(100)", "(1, 2, 3)"))
    rows = lambda: {(name, code) for name, code, _ in codes(graphguard("check", "--output-format", "json", "src", cwd=project))}
    assert rows() == {("train.py", "GG101"), ("train.py", "GG102")}
    configure(project, "max-bounded-iterations = 100\n")
    assert rows() == set()
    configure(project, "max-bounded-iterations = 0\n")
    assert rows() == {("train.py", "GG101"), ("train.py", "GG102"), ("cases.py", "GG101"), ("cases.py", "GG102")}


def test_missing_config_file_is_exit_2(project):
    result = graphguard("check", "--config", "nope.toml", ".", cwd=project)
    assert (result.returncode, result.stderr.strip()) == (2, "graphguard: error: --config: nope.toml: no such file")


def test_a_pyproject_that_is_not_ours_never_breaks_the_run(tmp_path):
    # Regressions (issue 12, item 4): `tool = 1` in any pyproject.toml up the tree, and TOML nested 500
    # deep (RecursionError in tomllib), were tracebacks.
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "train.py").write_text(LEAKY)
    for body in ("tool = 1\n", "[tool]\nx = " + "[" * 500 + "]" * 500 + "\n"):
        (tmp_path / "pyproject.toml").write_text(body)
        result = graphguard("check", "--no-cache", "train.py", cwd=tmp_path / "src")
        assert result.returncode == 1 and "Traceback" not in result.stderr
    (tmp_path / "pyproject.toml").write_text("[tool.graphguard]\nx = " + "[" * 500 + "]" * 500 + "\n")
    result = graphguard("check", "--no-cache", "train.py", cwd=tmp_path / "src")
    assert result.returncode == 2 and len(result.stderr.splitlines()) == 1
    assert "invalid TOML: nested too deeply to read" in result.stderr


def test_empty_codes_and_a_utf16_configuration_are_errors(project):
    # Regressions (issue 12, item 6): `--select ''` selected nothing while `select = [""]` selected
    # everything; a UTF-16 pyproject.toml with [tool.graphguard] was ignored silently.
    result = graphguard("check", "--select", "", ".", cwd=project)
    assert result.returncode == 2 and "an empty rule code" in result.stderr
    (project / "pyproject.toml").write_bytes("[tool.graphguard]\nselect = [\"GG1\"]\n".encode("utf-16"))
    result = graphguard("check", ".", cwd=project)
    assert result.returncode == 2 and "pyproject.toml: invalid TOML: not UTF-8 text" in result.stderr


def test_a_huge_pyproject_is_not_read_whole(tmp_path):
    # Regression (issue 12, fuzz pass item 11): a 500 MB pyproject.toml was read into memory.
    import os
    import subprocess
    import sys

    (tmp_path / "pyproject.toml").write_bytes(b"[tool.graphguard]\n")
    os.truncate(tmp_path / "pyproject.toml", 64 * 1024 * 1024)
    (tmp_path / "a.py").write_text("x = 1\n")
    result = subprocess.run([sys.executable, "-m", "graphguard", "check", "--no-cache", "."], capture_output=True,
                            text=True, cwd=tmp_path, timeout=60)
    assert result.returncode == 0
    assert "cannot read" in result.stderr and "file too large (64.0 MiB; graphguard reads up to 4.0 MiB)" in result.stderr
    named = subprocess.run([sys.executable, "-m", "graphguard", "check", "--no-cache", "--config", "pyproject.toml", "."],
                           capture_output=True, text=True, cwd=tmp_path, timeout=60)
    assert named.returncode == 2 and len(named.stderr.splitlines()) == 1 and "file too large" in named.stderr


def test_session_names_must_be_python_names(tmp_path):
    # Regression (fourth fuzz pass): "(" and "x y" were accepted silently.
    import subprocess
    import sys

    (tmp_path / "pyproject.toml").write_text('[tool.graphguard]\nsession-names = ["x y"]\n')
    (tmp_path / "a.py").write_text("x = 1\n")
    result = subprocess.run([sys.executable, "-m", "graphguard", "check", "."], capture_output=True, text=True,
                            cwd=tmp_path, timeout=60)
    assert result.returncode == 2 and "session-names: 'x y' is not a Python name" in result.stderr


def _fnmatch_reference(relative: str, patterns) -> bool:
    """What ``Config._matches`` answered before its patterns were compiled into one expression."""
    import fnmatch

    parts = relative.split("/")
    for pattern in patterns:
        pattern = pattern.rstrip("/")
        if fnmatch.fnmatch(relative, pattern) or any(fnmatch.fnmatch(part, pattern) for part in parts):
            return True
    return False


@pytest.mark.parametrize("patterns", [
    (), ("tests",), ("tests/",), ("*.egg-info", "build"), ("src/gen/*.py",), ("[ab]*", "?x"), ("**/old",),
    ("a.b",), ("*",), ("",), ("/",), ("(x)|y", "+", "{a,b}"), ("[!t]ests",), ("legacy*.ipynb", ".venv"),
])
@pytest.mark.parametrize("relative", [
    "tests/test_a.py", "src/tests", "build", "pkg.egg-info/x.py", "src/gen/a.py", "src/gen/sub/a.py", "ab/c.py",
    "x/yx", "old", "a/b/old", "aXb", "a.b", "", "(x)|y/z.py", "+", "{a,b}", "rests/a.py", "legacy1.ipynb", ".venv",
])
def test_exclude_patterns_match_as_fnmatch_does(patterns, relative):
    # Regression guard for the compiled matcher (issue 18: fnmatch per pattern and part was 0.4 s of a
    # 3,300-file walk): the same answer as fnmatch for every pattern and path.
    from graphguard.config import Config

    assert Config._matches(relative, patterns) is _fnmatch_reference(relative, patterns)
