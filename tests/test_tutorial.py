"""The instructor's first-term tutorial (docs/tutorials/instructor.md), run word for word.

The page's blocks are MyST code blocks with a class: ``term-run`` blocks are shell commands, run
in order with bash, each from the course folder; ``term-course-yaml`` blocks are lines the reader
adds to course.yaml, merged into it here; ``term-manual`` blocks (a browser, the first clone) are
skipped, and the test says which. It runs in a copy of the course (as `course_copy` makes), with
this environment's `course`, `nbgrader` and `pytest` on the PATH; `course` there is this
environment's, told to use the copy's course.yaml (a clone's own `.venv/bin/course` does that by
itself), and HOME is a scratch folder, so nothing of the user's own Jupyter set-up counts.
"""

import csv
import os
import re
import subprocess
import sys
import time
import warnings

import pytest
import yaml

pytestmark = pytest.mark.slow
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PAGE = os.path.join(ROOT, "docs", "tutorials", "instructor.md")
BLOCK = re.compile(r"^```\{code-block\} (\w+)\n:class: (term-[\w-]+)\n\n(.*?)^```$", re.M | re.S)


def blocks(path=PAGE):
    """The page's tutorial blocks in order: (kind, language, text, line)."""
    with open(path) as fh:
        page = fh.read()
    return [(m[2], m[1], m[3], page.count("\n", 0, m.start()) + 1) for m in BLOCK.finditer(page)]


def merge(into, extra):
    """``extra`` (a mapping read from a block) merged into ``into``, mapping by mapping."""
    for key, value in extra.items():
        if isinstance(value, dict) and isinstance(into.get(key), dict):
            merge(into[key], value)
        else:
            into[key] = value


def test_the_page_has_the_tutorials_blocks():
    found = blocks()
    kinds = [k for k, *_ in found]
    assert kinds.count("term-run") >= 10 and "term-course-yaml" in kinds and "term-manual" in kinds
    assert all(lang == "yaml" for kind, lang, *_ in found if kind == "term-course-yaml")
    for kind, _, text, line in found:             # every command of the term is on the page
        assert text.strip(), f"{PAGE}:{line}: an empty block"
    text = "\n".join(t for k, _, t, _ in found if k == "term-run")
    for command in ("course release", "course exchange --setup", "nbgrader release_assignment",
                    "nbgrader submit", "nbgrader collect", "course grade", "course export",
                    "nbgrader generate_feedback", "nbgrader release_feedback", "course regrade"):
        assert command in text, command


def _shim(folder, course_yaml):
    """A `course` for the copy: this environment's, with the copy's course.yaml."""
    os.makedirs(folder)
    path = os.path.join(folder, "course")
    with open(path, "w") as fh:
        fh.write(f'#!/bin/sh\nexec "{os.path.join(os.path.dirname(sys.executable), "course")}" '
                 f'--config "{course_yaml}" "$@"\n')
    os.chmod(path, 0o755)
    return folder


def test_the_first_term_tutorial_runs_word_for_word(course, tmp_path, copy_course):
    folder = tmp_path / "attention-course"
    copy_course(str(folder))
    home = tmp_path / "home"
    home.mkdir()
    bin_dir = os.path.dirname(sys.executable)
    env = {"PATH": os.pathsep.join([_shim(str(tmp_path / "shim"), str(folder / "course.yaml")), bin_dir,
                                    "/usr/local/bin:/usr/bin:/bin"]),
           "HOME": str(home), "LANG": "C.UTF-8", "MPLBACKEND": "Agg"}
    for name in ("TINYSHAKESPEARE", "OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE", "COURSE_SANDBOX"):
        if name in os.environ:
            env[name] = os.environ[name]
    skipped, outputs = [], []
    for kind, _, text, line in blocks():
        if kind == "term-manual":
            skipped.append(f"line {line}: {text.strip().splitlines()[0]}")
            continue
        if kind == "term-course-yaml":
            with open(folder / "course.yaml") as fh:
                raw = yaml.safe_load(fh)
            merge(raw, yaml.safe_load(text))
            with open(folder / "course.yaml", "w") as fh:
                yaml.safe_dump(raw, fh, sort_keys=False)
            continue
        started = time.monotonic()
        done = subprocess.run(["bash", "-euo", "pipefail", "-c", text], cwd=folder, env=env,
                              capture_output=True, text=True, timeout=600)
        print(f"{time.monotonic() - started:6.1f} s  {PAGE}:{line}")
        assert done.returncode == 0, f"{PAGE}:{line}: exit {done.returncode}\n{text}\n{done.stdout}\n{done.stderr}"
        outputs.append((text, done.stdout))
    if skipped:
        warnings.warn("the tutorial's blocks marked not run (the page says why each is not):\n  "
                      + "\n  ".join(skipped))

    # what the page says happened, happened
    assert sorted(os.listdir(folder / "submitted")) == ["alice", "bob"]
    assignment = course.assignment("attention")
    full = sum(p.points for p in assignment.parts)
    with open(folder / "totals.csv") as fh:
        totals = {row[0]: row for row in list(csv.reader(fh))[1:]}     # ids are quoted: text, not formulas
    assert float(totals["alice"][1]) == full          # the extension: her full total again
    assert float(totals["bob"][1]) == 0
    first_regrade = next(out for text, out in outputs if text.strip() == "course regrade")
    assert "alice" in first_regrade and f"{full / 2:g}" in first_regrade   # half, the cap, while late
    assert (folder / "reports" / "alice" / "attention.html").exists()
    # on one account, nbgrader's fetch_feedback brings every hand-in's page the account submitted
    fetched = sorted(p.read_text() for p in (tmp_path / "students" / "alice" / "attention" / "feedback")
                     .glob("*/attention.html"))
    assert len(fetched) == 2 and sum(f"Score: {full:.1f} / " in page for page in fetched) == 1
