"""The primer: graphguard over judged public repositories, one commit against another.

As mypy_primer and ruff's ecosystem check do, this runs two versions of graphguard over a fixed list of
public repositories at pinned commits and prints what changed; unlike them it also knows, for every
finding judged so far, whether it is true (T: grows on every iteration of a loop that runs many times),
true but noise (Tb: the loop runs a handful of times) or false (F), and the real bugs that were missed
(found by reading the loops). So a diff says at once whether a change gained or lost real bugs.

Files beside this script (CSV, a header row each):

- ``repos.csv``: ``set,repo,commit,date,issue`` -- every repository ever judged (``owner/name``, the commit
  judged, when, for which issue). A repository listed here is never again "unseen".
- ``verdicts.csv``: ``repo,path,line,cell,code,verdict,reason,judged`` -- one row per finding judged.
- ``misses.csv``: ``repo,path,line,cell,code,reason`` -- real bugs found by reading that a judged run did
  not report (``code`` is the rule a reader expected, or ``other``).

The repositories themselves are not committed and the network is not needed: fetch each one (the search
tool's ``fetch``, or ``git clone`` and ``git checkout COMMIT``), then copy its Python files and notebooks
into one folder per repository named ``owner+name``::

    python bench/primer/primer.py extract /work/.mirror/owner+name/repo ~/primer/owner+name
    python bench/primer/primer.py diff --repos ~/primer HEAD~3 HEAD      # what changed, with verdicts
    python bench/primer/primer.py score --repos ~/primer --set B HEAD   # precision and recall of one commit

A commit is any git revision of this repository, or ``WORKTREE`` for the files as they are now. Each is
run as its own ``python -m graphguard check --output-format json --no-cache`` in the repository's folder.
Exit codes: 0 done, 2 bad arguments or a repository folder missing.
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import os
import re
import subprocess
import sys
import tarfile
import tempfile
from collections import Counter
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
KEPT = (".py", ".pyi", ".ipynb", "pyproject.toml", ".gitignore", ".txt", "setup.cfg", ".yml", ".yaml", "Pipfile")


def _declares_dependencies(path: str) -> bool:
    """Whether a text file is one where a project pins its dependencies (requirements*.txt, environment.yml)."""
    name = path.rsplit("/", 1)[-1].lower()
    return name.startswith("requirement") or name.startswith("environment") or name.startswith("conda")


def read_csv(name: str) -> list[dict[str, str]]:
    """Rows of one of the primer's CSV files (an empty list when it does not exist)."""
    path = HERE / name
    if not path.exists():
        return []
    with path.open(newline="", encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


def key(repo: str, path: str, line: str | int, cell: str | int | None, code: str) -> tuple:
    """Where a finding is, as verdicts name it: (repo, path, line, cell or '', code)."""
    return (repo, path, str(line), "" if cell in (None, "") else str(cell), code)


def extract(mirror: str, dest: str) -> int:
    """Copy the Python files, notebooks and configuration of a fetched repository's HEAD into ``dest``.

    Blobs the snapshot lacks (files over its size limit) are skipped and counted. Returns an exit code.
    """
    git = os.path.join(mirror, ".git") if os.path.isdir(os.path.join(mirror, ".git")) else mirror
    listing = subprocess.run(["git", "--git-dir", git, "ls-tree", "-r", "-z", "HEAD"], capture_output=True)
    if listing.returncode:
        print(f"error: {mirror} is not a git repository with a HEAD", file=sys.stderr)
        return 2
    commit = subprocess.run(["git", "--git-dir", git, "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()
    missing = copied = 0
    for record in listing.stdout.split(b"\0"):
        if not record:
            continue
        meta, raw = record.split(b"\t", 1)
        path = raw.decode("utf-8", "surrogateescape")
        mode, kind, sha = meta.decode().split()
        if kind != "blob" or not path.endswith(KEPT) or (path.endswith((".txt", ".yml", ".yaml")) and not _declares_dependencies(path)):
            continue
        blob = subprocess.run(["git", "--git-dir", git, "cat-file", "blob", sha], capture_output=True)
        if blob.returncode:
            missing += 1
            continue
        target = Path(dest) / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(blob.stdout)
        copied += 1
    print(f"{dest}: commit {commit}, {copied} files copied, {missing} missing from the snapshot")
    return 0


def checkout(rev: str, scratch: Path) -> Path:
    """A folder holding the ``graphguard`` package as it is at ``rev`` (``WORKTREE``: this checkout)."""
    if rev == "WORKTREE":
        return ROOT
    target = scratch / rev.replace("/", "_")
    target.mkdir()
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", rev, "graphguard"], capture_output=True, check=True)
    with tarfile.open(fileobj=io.BytesIO(archive.stdout)) as tar:
        tar.extractall(target, filter="data")
    return target


def findings(tree: Path, folder: Path, vias: set | None = None) -> Counter:
    """graphguard's findings in one repository folder, counted by their key (see ``key``). A finding at a
    call names the helper line it goes through (``(through ... at core/model.py:104)``, or ``at
    train.ipynb:cell 11:32`` in a notebook): ``vias`` gets those places, ``(repo, path, line, cell or
    "")``, as lines the run reports too."""
    repo = folder.name.replace("+", "/", 1)
    folder = folder.resolve()  # a folder of symlinks to the sets' folders works too
    run = subprocess.run(
        [sys.executable, "-c", _FROM_TREE, str(tree),
         "check", ".", "--output-format", "json", "--no-cache", "--exit-zero", "-q"],
        cwd=folder, capture_output=True, text=True,
    )
    if run.returncode:
        raise SystemExit(f"error: graphguard failed in {folder}: {run.stderr.strip()[-300:]}")
    if vias is not None and not run.stdout.startswith("["):
        raise SystemExit(f"error: graphguard printed no JSON in {folder}: {run.stdout[:300]}")
    counts: Counter = Counter()
    for item in json.loads(run.stdout or "[]"):
        path = os.path.relpath(item["filename"], folder)
        counts[key(repo, path, item["location"]["row"], item["cell"], item["code"])] += 1
        # A finding at a call names the helper's line it goes through: that line is reported too.
        if vias is None:
            continue
        message, here = item["message"], os.path.dirname(os.path.join(folder, item["filename"]))
        through = NOTEBOOK_VIA.search(message)
        if through:  # ``at train.ipynb:cell 11:32``: that cell's row
            vias.add((repo, os.path.relpath(os.path.join(folder, through[1]), folder), through[3], through[2]))
            continue
        through = VIA.search(message)
        if through:
            vias.add((repo, os.path.relpath(os.path.join(folder, through[1]), folder), through[2], ""))
            continue
        # Since 2026-12-06: ``(via `tf.reduce_mean(...)` at line 12)`` in the finding's own file,
        # ``at cell 5, line 4`` in its own notebook, ``at nets/metrics.py:7`` or ``at nb.ipynb:cell 3:2``
        # from the finding's folder.
        through = VIA_OWN_CELL.search(message)
        if through:
            vias.add((repo, path, through[2], through[1]))
            continue
        through = VIA_OWN_LINE.search(message)
        if through:
            vias.add((repo, path, through[1], ""))
            continue
        through = VIA_NOTEBOOK.search(message)
        if through:
            vias.add((repo, os.path.relpath(os.path.join(here, through[1]), folder), through[3], through[2]))
            continue
        through = VIA_FILE.search(message)
        if through:
            vias.add((repo, os.path.relpath(os.path.join(here, through[1]), folder), through[2], ""))
    return counts


#: ``python -c`` code that runs ``graphguard`` from the tree given as its first argument. PYTHONPATH is not
#: enough: an editable install (``pip install -e .``, as ``make`` does) puts a finder on ``sys.meta_path``
#: that is asked before the path, so every commit ran this checkout's package (a diff of HEAD and
#: WORKTREE showed no change for a change that removed 7 findings).
_FROM_TREE = ("import runpy, sys\n"
              "sys.meta_path[:] = [f for f in sys.meta_path if 'Editable' not in getattr(f, '__name__', type(f).__name__)]\n"
              "sys.path.insert(0, sys.argv.pop(1))\n"
              "import graphguard\n"
              "assert graphguard.__file__.startswith(sys.path[0]), graphguard.__file__\n"
              "sys.argv[0] = 'graphguard'\n"
              "runpy.run_module('graphguard', run_name='__main__', alter_sys=True)\n")

#: ``(through `self.model.predict(...)` at core/model.py:104)`` in a message.
VIA = re.compile(r"\(through `.*?` at (\S+?):(\d+)\)")
#: ``(through `model.predict(...)` at notebooks/train.ipynb:cell 17:13)``: a notebook's cell and row.
NOTEBOOK_VIA = re.compile(r"\(through `.*?` at (.+?\.ipynb):cell (\d+):(\d+)\)")
#: The same since 2026-12-06, ``via`` (see :func:`findings`).
VIA_OWN_LINE = re.compile(r"\(via `.*?` at line (\d+)\)")
VIA_OWN_CELL = re.compile(r"\(via `.*?` at cell (\d+), line (\d+)\)")
VIA_NOTEBOOK = re.compile(r"\(via `.*?` at (.+?\.ipynb):cell (\d+):(\d+)\)")
VIA_FILE = re.compile(r"\(via `.*?` at (\S+?):(\d+)\)")


def selected(args) -> list[dict[str, str]]:
    """The repositories of the chosen set(s) that have a folder under ``--repos``."""
    rows = [r for r in read_csv("repos.csv") if not args.set or r["set"] in args.set]
    present = [r for r in rows if (Path(args.repos) / r["repo"].replace("/", "+")).is_dir()]
    for row in rows:
        if row not in present:
            print(f"warning: {row['repo']} has no folder under {args.repos}: left out", file=sys.stderr)
    return present


def score(found: Counter, repos: set[str], vias: set = frozenset()) -> dict[str, float | int]:
    """Precision and recall of one commit's findings against the stored verdicts and misses.

    Precision is T over judged findings (Tb counts as noise, as a user sees it); recall is the real bugs
    reported over all real bugs known (T verdicts of any commit, and misses); a real bug is reported when
    any finding stands at its repo, path, line and cell, or goes through that line of a helper (``vias``,
    from :func:`findings`; a reader's expected code is a guess).
    """
    verdicts = {key(v["repo"], v["path"], v["line"], v["cell"], v["code"]): v["verdict"] for v in read_csv("verdicts.csv")}
    tally = Counter()
    for k, n in found.items():
        tally[verdicts.get(k, "unjudged")] += n
    real = [k for k, v in verdicts.items() if v == "T" and k[0] in repos]
    real += [key(m["repo"], m["path"], m["line"], m["cell"], m["code"]) for m in read_csv("misses.csv") if m["repo"] in repos]
    places = {k[:4] for k in found} | set(vias)
    real_places = {k[:4] for k in real}
    hit = len(real_places & places)
    judged = tally["T"] + tally["Tb"] + tally["F"]
    return {
        "findings": sum(found.values()), "T": tally["T"], "Tb": tally["Tb"], "F": tally["F"], "unjudged": tally["unjudged"],
        "precision": tally["T"] / judged if judged else float("nan"),
        "real": len(real_places), "found": hit, "recall": hit / len(real_places) if real_places else float("nan"),
    }


def run_all(revs: list[str], rows, repos_dir: str) -> list[tuple[Counter, set]]:
    """Each commit's findings over the repositories of ``rows``, and the helper lines they go through."""
    with tempfile.TemporaryDirectory() as scratch:
        trees = [checkout(rev, Path(scratch)) for rev in revs]
        results = [(Counter(), set()) for _ in revs]
        for row in rows:
            folder = Path(repos_dir) / row["repo"].replace("/", "+")
            for tree, (result, vias) in zip(trees, results):
                result.update(findings(tree, folder, vias))
        return results


def print_score(label: str, s: dict) -> None:
    print(f"{label}: {s['findings']} findings, T {s['T']} Tb {s['Tb']} F {s['F']} unjudged {s['unjudged']}, "
          f"precision {s['precision']:.2f}; real bugs found {s['found']} of {s['real']}, recall {s['recall']:.2f}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    ex = sub.add_parser("extract", help="copy a fetched repository's Python files into a folder")
    ex.add_argument("mirror")
    ex.add_argument("dest")
    for name in ("diff", "score"):
        p = sub.add_parser(name)
        p.add_argument("--repos", required=True, help="the folder holding one owner+name folder per repository")
        p.add_argument("--set", action="append", help="only repositories of this set (repeatable)")
        p.add_argument("--unjudged", action="store_true", help="list the findings with no verdict yet")
        p.add_argument("revs", nargs=2 if name == "diff" else 1)
    sub.choices["score"].add_argument("--noise", action="store_true", help="list the findings judged Tb or F, with their reasons")
    sub.choices["score"].add_argument("--missed", action="store_true", help="list the real bugs (T verdicts and misses) no finding reports")
    args = parser.parse_args(argv)
    if args.command == "extract":
        return extract(args.mirror, args.dest)
    rows = selected(args)
    repos = {r["repo"] for r in rows}
    results = run_all(args.revs, rows, args.repos)
    verdicts = {key(v["repo"], v["path"], v["line"], v["cell"], v["code"]): v for v in read_csv("verdicts.csv")}
    if args.command == "diff":
        (old, _), (new, _) = results
        for repo in sorted(repos):
            gone = [k for k in old if k[0] == repo and old[k] > new[k]]
            came = [k for k in new if k[0] == repo and new[k] > old[k]]
            if not (gone or came):
                continue
            print(f"\n{repo}")
            for sign, keys in (("-", gone), ("+", came)):
                for k in sorted(keys):
                    v = verdicts.get(k)
                    where = f"{k[1]}:{'cell ' + k[3] + ':' if k[3] else ''}{k[2]}"
                    print(f"  {sign} {where} {k[4]}  {v['verdict'] + ': ' + v['reason'] if v else 'unjudged'}")
    print()
    for rev, (result, vias) in zip(args.revs, results):
        print_score(rev, score(result, repos, vias))
    if getattr(args, "noise", False):
        print("\nfindings judged noise (Tb) or false (F):")
        for k in sorted(k for k in results[0][0] if verdicts.get(k, {}).get("verdict") in ("Tb", "F")):
            v = verdicts[k]
            print(f"  {v['verdict']:2} {k[4]} {k[0]} {k[1]}:{'cell ' + k[3] + ':' if k[3] else ''}{k[2]}  {v['reason']}")
    if getattr(args, "missed", False):
        found, vias = results[0]
        places = {k[:4] for k in found} | set(vias)
        print("\nreal bugs no finding reports:")
        real = [(key(v["repo"], v["path"], v["line"], v["cell"], v["code"]), v["reason"]) for v in read_csv("verdicts.csv")
                if v["verdict"] == "T" and v["repo"] in repos]
        real += [(key(m["repo"], m["path"], m["line"], m["cell"], m["code"]), m["reason"]) for m in read_csv("misses.csv")
                 if m["repo"] in repos]
        shown = set()
        for k, reason in sorted(real):
            if k[:4] not in places and k[:4] not in shown:
                shown.add(k[:4])
                print(f"  {k[4]} {k[0]} {k[1]}:{'cell ' + k[3] + ':' if k[3] else ''}{k[2]}  {reason}")
    if args.unjudged:
        print("\nunjudged findings:")
        for k in sorted({k for result, _ in results for k in result if k not in verdicts}):
            print(f"  {k[0]} {k[1]}:{'cell ' + k[3] + ':' if k[3] else ''}{k[2]} {k[4]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
