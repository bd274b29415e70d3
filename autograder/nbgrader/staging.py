"""A hand-in as nbgrader may read it: copied through the reader (autograder/grade/handin.py).

nbgrader reads a submission by its path: it globs ``submitted/*/<assignment>/*.ipynb``, copies
every other file of the folder into ``autograded/`` (and from there into ``feedback/``, which
formgrader serves on the Jupyter origin) and opens the notebook, following links all the way
and opening FIFOs and devices. So a ``submitted/<s>/<a>`` linked to ``solutions/<a>`` was
graded as the solution and its text shown in the feedback page. Every path that hands a
hand-in to nbgrader (its converters, :mod:`autograder.nbgrader.converters`; ``course grade``,
:func:`stage`) hands it a copy made by :func:`read_handin` instead: the notebook (with the
release's nbgrader metadata, :func:`as_released`), the timestamp and the submission's secret,
read through the reader, and nothing else (a hand-in carries only what the release declares,
and nbgrader copies the release's support files into ``autograded/`` itself).
"""

import copy
import hashlib
import json
import os
import re
import shutil
from typing import Any

from autograder.course.config import Assignment, Course
from autograder.grade import handin, submission_time, versions
from selfcheck.program import MAX_NOTEBOOK_BYTES, NotebookError, grade_id, parse_notebook, read_notebook, source


def as_released(raw: bytes, release: dict, outputs: bool = False) -> tuple[bytes | None, str | None]:
    """The notebook ``raw`` as nbgrader may read it, and why it cannot be this release's hand-in
    (None when it can), as grading decides.

    It is a plain nbformat 4 notebook whatever the hand-in held, so nbgrader's validation never
    refuses it (a refused one would be a 0 in the gradebook beside the course's score): each cell
    only its type, id, source and no outputs, the release's notebook metadata. With ``outputs``
    (an autograded notebook, whose test cells hold the course grader's verdicts) code cells keep theirs.
    Every cell that is not code is markdown, which SanitizeMarkdown makes safe to show: a raw
    cell's text is a code block (:func:`_as_text`).
    Its cells carry the release's nbgrader metadata (grade id, flags, points), never their own:
    the first cell with a grade id of the release whose type is the released cell's keeps its
    place and the student's source; a later cell with the same id, a cell whose id the release
    does not have or whose type changed is a plain cell. Grading reads the same cell
    (:func:`selfcheck.program.program`), so formgrader shows the code that was graded, and
    nbgrader's gradebook holds the release's points and the course grader's verdicts for every hand-in."""
    from autograder.grade.submission import not_this_assignment
    try:
        nb = parse_notebook(raw)
    except NotebookError as exc:
        return None, str(exc)
    problem = not_this_assignment(nb, release)
    if problem:
        return None, problem
    released = {grade_id(c): c for c in release["cells"] if grade_id(c)}
    seen: set[str | None] = set()
    ids: set[str] = set()
    cells = []
    for number, cell in enumerate(nb["cells"]):
        gid, kind = grade_id(cell), cell["cell_type"]
        metadata: dict[str, Any] = {}
        text = source(cell) if kind in ("code", "markdown") else _as_text(source(cell))
        new: dict[str, Any] = {"cell_type": "code" if kind == "code" else "markdown",
                               "id": _cell_id(cell, number, ids), "metadata": metadata, "source": text}
        if new["cell_type"] == "code":
            new.update(execution_count=None, outputs=[])
            if outputs and kind == "code" and isinstance(cell.get("outputs"), list):
                new["outputs"] = copy.deepcopy(cell["outputs"])
        if kind == "markdown" and _attachments(cell.get("attachments")):
            new["attachments"] = copy.deepcopy(cell["attachments"])    # an image pasted into an answer
        if gid in released and gid not in seen and kind == new["cell_type"] == released[gid]["cell_type"]:
            metadata["nbgrader"] = copy.deepcopy(released[gid]["metadata"]["nbgrader"])
            seen.add(gid)
        cells.append(new)
    out = {"nbformat": 4, "nbformat_minor": max(5, release.get("nbformat_minor", 5)),
           "metadata": copy.deepcopy(release.get("metadata", {})), "cells": cells}
    return json.dumps(out, indent=1, ensure_ascii=False).encode("utf-8"), None


_ID = re.compile(r"[a-zA-Z0-9_-]{1,64}")


def _as_text(text: str) -> str:
    """A raw cell's text as a markdown code block, which every renderer shows escaped.

    nbconvert's HTML passes a raw cell through as HTML keeping ``id`` and ``class``, so a
    student's raw cell could lay elements over formgrader's score controls (which it finds by
    the grade id) or its navigation bar; as markdown it is sanitised too (SanitizeMarkdown)."""
    fence = "`" * max(3, 1 + max((len(run) for run in re.findall(r"`+", text)), default=0))
    return f"{fence}\n{text}\n{fence}" if text else ""


def _attachments(found: object) -> bool:
    """Whether a markdown cell's ``attachments`` are as nbformat's schema has them
    (``{name: {mime type: base64 text}}``), so that keeping them keeps the notebook valid."""
    return isinstance(found, dict) and bool(found) and all(
        isinstance(name, str) and isinstance(kinds, dict) and kinds
        and all(isinstance(k, str) and isinstance(v, str) for k, v in kinds.items())
        for name, kinds in found.items())


def _cell_id(cell: dict, number: int, taken: set[str]) -> str:
    """The cell's own id when nbformat accepts it and no earlier cell has it, else a new one."""
    wanted = cell.get("id")
    found = wanted if isinstance(wanted, str) and _ID.fullmatch(wanted) and wanted not in taken else None
    while found is None or found in taken:
        found, number = f"cell-{number}", number + 1
    taken.add(found)
    return found


def read_handin(base: str, student: str, assignment: str, release_dir: str,
                stub: bool = True) -> tuple[dict[str, bytes], list[str], list[str]]:
    """The hand-in ``base/<student>/<assignment>`` as nbgrader may read it: the release's
    notebooks, the timestamp and the submission's secret, read through the reader, and nothing else.

    Returns ``(files, problems, left_out)``: ``{name: bytes}``, why each notebook refused or
    unreadable was not read (staged as the released one with ``stub``, else left out),
    and the paths of the hand-in's files the release does not declare (the release's own support
    files nbgrader copies from the course). Raises handin.Refused for the folder."""
    notebooks = sorted(n for n in os.listdir(release_dir) if n.endswith(".ipynb"))
    shown = f"{os.path.basename(base)}/{student}/{assignment}"
    files, problems, left_out = {}, [], []
    with handin.folder(base, student, assignment) as fd:
        found = handin.entries(fd)
        for name in notebooks:
            if name not in found:
                continue
            released = os.path.join(release_dir, name)
            try:
                data, why = as_released(handin.read_at(fd, name, MAX_NOTEBOOK_BYTES, f"{shown}/{name}"),
                                        read_notebook(released), outputs=not stub)
            except handin.Refused as exc:
                data, why = None, str(exc)
            else:
                why = why and f"{shown}/{name}: {why}"
            if data is not None:
                files[name] = data
                continue
            problems.append(str(why))
            if stub:
                with open(released, "rb") as fh:
                    files[name] = fh.read()
        if submission_time.NAME in found:      # only a time nbgrader reads, so every export has the same one
            try:
                raw = handin.read_at(fd, submission_time.NAME, submission_time.MAX_BYTES)
                stamp = submission_time.normalised(raw)
                if stamp is None:
                    raise handin.Refused("not a time")
                files[submission_time.NAME] = stamp
            except handin.Refused as exc:
                left_out.append(f"{submission_time.NAME} ({exc})")
        if handin.SECRET in found:         # names the hand-in's feedback folder at release_feedback
            try:
                secret = handin.read_at(fd, handin.SECRET, handin.MAX_EXCHANGE_FILE)
                why = handin.secret_problem(secret)
                if why:
                    raise handin.Refused(why)
                files[handin.SECRET] = secret
            except handin.Refused as exc:
                left_out.append(f"{handin.SECRET} ({exc})")
        # the course's own note beside a copy it staged (stage) is no file of the student's to report
        left_out += [p for p in handin.left_out(fd, handin.declared(release_dir))
                     if p not in notebooks and p != versions.STAGED]
    return files, problems, left_out


def write(dest: str, files: dict[str, bytes]) -> None:
    """Lay out a hand-in as :func:`read_handin` read it."""
    os.makedirs(dest)
    for name, data in files.items():
        with open(os.path.join(dest, name), "wb") as fh:
            fh.write(data)


def stage(course: Course, submitted: str, out: str, student: str, assignment: Assignment) -> list[str]:
    """Put one submission where nbgrader reads it (``out/submitted``), as :func:`read_handin` reads
    it: its notebook, or the released one when it cannot be read (its verdicts say why), and its
    timestamp. In place (``submitted`` is ``out/submitted``) nbgrader's autograde reads it so
    itself. Returns the names of the files left out."""
    src = os.path.join(submitted, student, assignment.id)
    dest = os.path.join(out, "submitted", student, assignment.id)
    try:
        files, _, left_out = read_handin(os.path.abspath(submitted), student, assignment.id,
                                         course.release(assignment))
    except handin.Refused:
        files, left_out = {}, []
    if os.path.abspath(src) != os.path.abspath(dest):
        if os.path.exists(dest):
            shutil.rmtree(dest)
        if assignment.notebook not in files:
            with open(course.release(assignment, assignment.notebook), "rb") as fh:
                files[assignment.notebook] = fh.read()
        write(dest, files)
        # nbgrader's autograde in this folder reads this copy: it stands for the hand-in's result
        handin_sha = versions.file_sha256(os.path.join(src, assignment.notebook))
        if handin_sha:
            with open(os.path.join(dest, versions.STAGED), "w", encoding="utf-8") as fh:
                json.dump({"handin": handin_sha, "copy": hashlib.sha256(files[assignment.notebook]).hexdigest()}, fh)
    return left_out


def excluded_students(coursedir: object) -> set[str]:
    """The student ids nbgrader's ``student_id_exclude`` names (comma-separated), as nbgrader reads it."""
    return set(filter(None, (getattr(coursedir, "student_id_exclude", "") or "").split(",")))
