"""The students' written answers as the course's feedback page shows them.

Read from the autograded notebooks (``autograded/<student>/<assignment>/``, through the reader:
never a link) and rendered by the pass formgrader's copy went through
(:class:`~autograder.nbgrader.preprocessors.SanitizeMarkdown`), once more: safe HTML, a pasted
image in it as the image itself, so the student sees on the page the answer the TA graded. The
page loads nothing: an image the answer links to on the web is a note naming it.
"""

import os
from collections.abc import Iterable, Mapping

import nbformat

from autograder.course.config import Course
from autograder.grade import handin
from selfcheck.program import MAX_NOTEBOOK_BYTES, NotebookError, grade_id, parse_notebook, source


def written_answers(course: Course, out: str, student: str, assignment_id: str) -> dict[str, str]:
    """grade id -> the written answer's HTML, for the answers ``course.yaml`` grades by hand
    that the autograded notebook holds (none when it cannot be read)."""
    from autograder.nbgrader.preprocessors import SanitizeMarkdown
    from autograder.nbgrader.preprocessors.sanitizemarkdown import inline_images_only
    assignment = course.assignment(assignment_id)
    shown = f"autograded/{student}/{assignment_id}/{assignment.notebook}"
    try:
        with handin.folder(os.path.join(out, "autograded"), student, assignment_id) as fd:
            raw = handin.read_at(fd, assignment.notebook, MAX_NOTEBOOK_BYTES, shown)
        nb = parse_notebook(raw[:MAX_NOTEBOOK_BYTES])
    except (OSError, handin.Refused, NotebookError):
        return {}
    cells = {}
    for cell in nb.get("cells", []):
        gid = grade_id(cell)
        if gid in assignment.written and gid not in cells and cell.get("cell_type") == "markdown":
            cells[gid] = nbformat.v4.new_markdown_cell(source(cell))
            if isinstance(cell.get("attachments"), dict):
                cells[gid]["attachments"] = cell["attachments"]
    clean, _ = SanitizeMarkdown().preprocess(nbformat.v4.new_notebook(cells=list(cells.values())), {})
    return {gid: inline_images_only(cell.source) for gid, cell in zip(cells, clean.cells)}


def add_answers(course: Course, out: str, gradebook: Mapping[tuple[str, str], dict],
                keys: Iterable[tuple[str, str]] | None = None) -> None:
    """Each hand-graded answer of ``gradebook`` (:func:`autograder.nbgrader.gradebook_rows.scores`), of
    the (student, assignment) ``keys`` when given, given its ``answer``: the HTML of
    :func:`written_answers`, or "" when there is none."""
    for key in gradebook if keys is None else keys:
        entry = gradebook.get(key) or {}
        if not entry.get("written"):
            continue
        found = written_answers(course, out, *key)
        for cell, written in entry["written"].items():
            written["answer"] = found.get(cell, "")
