"""A notebook as JupyterLab 4, Notebook 7 or VS Code saves it is graded like any other.

The notebooks are the solved one saved by a real JupyterLab 4 after a paste (a fixture), and
the solved one saved the way each front end writes it (tests/frontend_notebooks.py):
an image pasted into a written answer (a cell attachment), an ipywidgets state in the metadata,
nbformat 4.5 with cell ids, 4.4 and 4.2 without, VS Code's ``.venv`` kernel and its metadata.
The real ``course grade`` grades them (nbgrader's autograde inside it) and every one is in the
gradebook with full marks; formgrader shows the TA the pasted image, and so does the feedback
page nbgrader's generate_feedback writes. An SVG with a script, or an attachment that is not an
image, is never shown: a note says so where it was. A TA's comment reaches that feedback page
escaped. A raw or markdown cell laying elements over formgrader's controls puts none of its ids or
classes in either page; correct code moved into a markdown cell with the solution's grade id
scores as the stub after it, which is what both pages show.
"""

import copy
import csv
import json
import os
import subprocess
import sys

import pytest

import frontend_notebooks as front
from autograder.mistakes import cohort
from autograder.nbgrader import gradebook, gradebook_rows
from selfcheck.program import grade_id, source
from test_nbgrader_paths import _env, formgrader
from test_nbgrader_units import TAKEOVER, TAKEOVER_MARKS, _marks

pytestmark = pytest.mark.slow

BIN = os.path.dirname(sys.executable)
# the solved notebook as a real JupyterLab 4 and a real Notebook 7 saved it, a PNG pasted into
# answer_selection (jupyterlab4.ipynb, notebook7.ipynb: tests/fixtures/frontends/paste_and_save.py)
SAVED = os.path.join(os.path.dirname(__file__), "fixtures", "frontends")
HTML_ATTACHMENT = "PHNjcmlwdD5hbGVydCgnaHRtbC1hdHRhY2htZW50Jyk8L3NjcmlwdD4="     # <script>alert('html-attachment')</script>
COMMENT = "Good. <script>alert('TA-comment')</script> **well argued** [see](javascript:alert('TA-link'))"
MOVED = "MOVED-SOLUTION: the code below was the answer"


@pytest.fixture(scope="module")
def assignment(course):
    return course.assignment("attention")


def _notebooks(course, assignment):
    solved = cohort.solved(course, assignment)
    svg = front.paste_image(front.jupyterlab(solved, "answer_mask_order"), "answer_selection", "drawing.svg",
                            "image/svg+xml", front.SVG_B64)
    front.paste_image(svg, "answer_selection", "page.html", "text/html", HTML_ATTACHMENT)
    saved = {}
    for front_end in ("jupyterlab4", "notebook7"):
        with open(os.path.join(SAVED, f"{front_end}.ipynb")) as fh:
            saved[front_end] = json.load(fh)
    weblink = front.jupyterlab(solved, "answer_selection")     # and a picture linked from the web
    front.paste_image(weblink, "answer_mask_order", "chart", "image/png", "")
    return {"jupyterlab": saved["jupyterlab4"], "saved-by-notebook7": saved["notebook7"],
            "weblink": _linked(weblink, "answer_mask_order", "https://example.org/chart.png"),
            "lab": front.jupyterlab(solved, "answer_selection"),
            "notebook7": front.notebook7(solved, "answer_mask_order"),
            "vscode": front.vscode(solved, "answer_selection"),
            "vscode44": front.vscode(solved, "answer_selection", minor=4),
            "svg": svg, "plain": solved, "takeover": _takeover(solved)}


def _takeover(nb):
    """``nb`` with a raw and a markdown cell laying elements over formgrader's controls."""
    nb = copy.deepcopy(nb)
    nb["cells"][1:1] = [{"cell_type": "raw", "metadata": {}, "source": TAKEOVER},
                        {"cell_type": "markdown", "metadata": {}, "source": TAKEOVER}]
    return nb


def _softmax_stubs(course, assignment):
    """The solved notebook with the released softmax stub; and with the solution before that stub in
    a markdown cell that carries the solution cell's nbgrader metadata."""
    stubbed = cohort.solved(course, assignment, {"softmax": source(_cell(cohort.stub(course, assignment), "softmax"))})
    moved = copy.deepcopy(stubbed)
    solution = _cell(cohort.solved(course, assignment), "softmax")
    at = moved["cells"].index(_cell(moved, "softmax"))
    moved["cells"].insert(at, {"cell_type": "markdown", "metadata": copy.deepcopy(solution["metadata"]),
                               "source": f"{MOVED}\n{source(solution)}"})
    return {"stub-softmax": stubbed, "moved-softmax": moved}


def _cell(nb, gid):
    return next(c for c in nb["cells"] if grade_id(c) == gid)


def _linked(nb, grade_id, url):
    """The answer ``grade_id`` with its last image taken from ``url`` instead of the notebook."""
    cell = next(c for c in nb["cells"] if (c["metadata"].get("nbgrader") or {}).get("grade_id") == grade_id)
    cell["source"] = cell["source"].replace("(attachment:chart)", f"({url})")
    del cell["attachments"]
    return nb


@pytest.fixture(scope="module")
def graded(course, assignment, tmp_path_factory):
    """The front ends' notebooks graded by the real `course grade`: (folder, its output)."""
    folder = tmp_path_factory.mktemp("frontends")
    for student, nb in {**_notebooks(course, assignment), **_softmax_stubs(course, assignment)}.items():
        cohort.write(nb, str(folder / "submitted"), student, assignment)
    proc = subprocess.run([os.path.join(BIN, "course"), "--config", course.path, "grade",
                           str(folder / "submitted"), "--out", str(folder)],
                          cwd=folder, env=_env(), capture_output=True, text=True, timeout=900)
    return folder, proc


def test_every_front_ends_notebook_is_in_the_gradebook_with_its_score(course, assignment, graded):
    folder, proc = graded
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]
    assert "failed" not in proc.stdout + proc.stderr, proc.stdout[-2000:] + proc.stderr[-3000:]
    full = sum(p.points for p in assignment.parts)
    students = set(_notebooks(course, assignment))
    scores = {s: e["score"] for (s, a), e in gradebook_rows.scores(course, str(folder)).items() if a == assignment.id}
    assert {s: scores[s] for s in students} == {s: full for s in students}, scores
    with open(folder / "grades.csv") as fh:
        rows = {r["student_id"]: float(r["score"]) for r in csv.DictReader(fh)}
    assert {s: rows[s] for s in students} == {s: full for s in students}, rows



def test_formgrader_shows_the_ta_the_pasted_image(course, assignment, graded, tmp_path):
    import json
    import urllib.request
    folder, _ = graded
    token = "frontends-formgrader-token"
    with formgrader(folder, token, tmp_path / "runtime") as base:
        request = urllib.request.Request(f"{base}/formgrader/api/submitted_notebooks/{assignment.id}/attention",
                                         headers={"Authorization": f"token {token}"})
        with urllib.request.urlopen(request, timeout=120) as response:
            ids = {n["student"]: n["id"] for n in json.load(response)}
        pages = {}
        for student in ("jupyterlab", "saved-by-notebook7", "lab", "vscode", "svg"):
            request = urllib.request.Request(f"{base}/formgrader/submissions/{ids[student]}",
                                             headers={"Authorization": f"token {token}"})
            with urllib.request.urlopen(request, timeout=120) as response:
                pages[student] = response.read().decode()
    for student in ("jupyterlab", "saved-by-notebook7", "lab", "vscode"):
        assert f"data:image/png;base64,{front.PNG_B64}" in pages[student], student
    _assert_dropped(pages["svg"])


def _assert_dropped(page):
    """The SVG and the HTML attachment are not in the page; a note stands in for each; the PNG is shown."""
    assert f"data:image/png;base64,{front.PNG_B64}" in page
    assert "image/svg+xml" not in page and front.SVG_B64 not in page and HTML_ATTACHMENT not in page
    assert "svg-script" not in page and "html-attachment" not in page and "attachment:" not in page
    assert "image drawing.svg not shown: an SVG image can carry a script" in page
    assert "image page.html not shown: only PNG, JPEG, GIF and WebP images are shown, not text/html" in page


def test_nbgrader_feedback_shows_the_image_and_escapes_the_tas_comment(course, assignment, graded):
    folder, _ = graded
    gradebook.set_manual_grade(course, str(folder), "lab", assignment.id, "answer_selection", 1, COMMENT)
    proc = subprocess.run([os.path.join(BIN, "nbgrader"), "generate_feedback", assignment.id, "--force"],
                          cwd=folder, env=_env(), capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]
    pages = {}
    for student in ("jupyterlab", "saved-by-notebook7", "lab", "notebook7", "vscode", "vscode44", "svg"):
        with open(folder / "feedback" / student / assignment.id / "attention.html", encoding="utf-8") as fh:
            pages[student] = fh.read()
        assert f"data:image/png;base64,{front.PNG_B64}" in pages[student], student
        assert "IntSliderModel" not in pages[student] and "alert(1)" not in pages[student], student
    _assert_dropped(pages["svg"])
    lab = pages["lab"]
    assert "<strong>well argued</strong>" in lab
    shown = lab[lab.find("<b>Comments:</b>"):][:800]
    assert "&lt;script&gt;alert('TA-comment')&lt;/script&gt;" in shown, shown
    assert "<script>alert('TA-comment')" not in lab and 'href="javascript:' not in lab, shown


def test_the_courses_feedback_page_shows_the_answer_with_its_image(course, assignment, graded):
    folder, _ = graded
    pages = {}
    for student in ("jupyterlab", "saved-by-notebook7", "lab", "notebook7", "vscode", "vscode44", "svg",
                    "plain"):
        with open(folder / "reports" / student / f"{assignment.id}.html", encoding="utf-8") as fh:
            pages[student] = fh.read()
        assert 'id="answer-answer_selection"' in pages[student] and "the softmax" in pages[student], student
    for student in ("jupyterlab", "saved-by-notebook7", "lab", "notebook7", "vscode", "vscode44", "svg"):
        assert f"data:image/png;base64,{front.PNG_B64}" in pages[student], student
    assert "data:image" not in pages["plain"]
    _assert_dropped(pages["svg"])
    with open(folder / "reports" / "weblink" / f"{assignment.id}.html", encoding="utf-8") as fh:
        pages["weblink"] = fh.read()
    assert "(image https://example.org/chart.png not shown here)" in pages["weblink"]   # it loads nothing
    for page in pages.values():
        assert "<script" not in page and 'src="http' not in page


def _pages(course, assignment, folder, tmp_path, students):
    """student -> (formgrader's page of the submission, nbgrader's feedback page)."""
    import urllib.request
    from autograder.nbgrader import apps
    token = "frontends-takeover-token"
    shown = {}
    with formgrader(folder, token, tmp_path / "runtime") as base:
        request = urllib.request.Request(f"{base}/formgrader/api/submitted_notebooks/{assignment.id}/attention",
                                         headers={"Authorization": f"token {token}"})
        with urllib.request.urlopen(request, timeout=120) as response:
            ids = {n["student"]: n["id"] for n in json.load(response)}
        for student in students:
            request = urllib.request.Request(f"{base}/formgrader/submissions/{ids[student]}",
                                             headers={"Authorization": f"token {token}"})
            with urllib.request.urlopen(request, timeout=120) as response:
                shown[student] = response.read().decode()
    pages = {}
    for student in students:
        apps.generate_feedback(course, assignment, str(folder), student)
        with open(folder / "feedback" / student / assignment.id / "attention.html", encoding="utf-8") as fh:
            pages[student] = (shown[student], fh.read())
    return pages


def test_no_student_cell_reaches_formgrader_or_feedback_as_html(course, assignment, graded, tmp_path):
    """The raw and the markdown cell's ids and classes (a score box's grade id, a full-credit link
    over the page, a navigation bar) are in neither page: each id and class is there as often as
    in the plain solved notebook's pages, which have none of the student's."""
    folder, _ = graded
    pages = _pages(course, assignment, folder, tmp_path, ("takeover", "plain"))
    for shown, plain in zip(pages["takeover"], pages["plain"]):
        marks, expected = _marks(shown), _marks(plain)
        assert {m: marks[m] for m in TAKEOVER_MARKS} == {m: expected[m] for m in TAKEOVER_MARKS}
        assert marks["style=z-index:9999"] == marks["name=nav"] == 0
        assert '&lt;span id="check_softmax"&gt;' in shown        # the raw cell, as text


def _answers(page):
    """The text of each nbgrader cell's panel (a solution, a check) of a formgrader or feedback page."""
    from html.parser import HTMLParser
    panels = []

    class Panels(HTMLParser):
        depth = 0

        def handle_starttag(self, tag, attrs):
            if tag != "div":
                return
            if self.depth:
                self.depth += 1
            elif "nbgrader_cell" in (dict(attrs).get("class") or "").split():
                self.depth = 1
                panels.append("")

        def handle_endtag(self, tag):
            if tag == "div" and self.depth:
                self.depth -= 1

        def handle_data(self, data):
            if self.depth:
                panels[-1] += data
    Panels(convert_charrefs=True).feed(page)
    return panels


def test_a_solution_moved_into_another_type_of_cell_earns_nothing(course, assignment, graded, tmp_path):
    """It scores as the stub after it, which formgrader and the feedback page show as the answer."""
    folder, _ = graded
    scores = {s: e["score"] for (s, a), e in gradebook_rows.scores(course, str(folder)).items() if a == assignment.id}
    assert scores["moved-softmax"] == scores["stub-softmax"] < sum(p.points for p in assignment.parts), scores
    stub = source(_cell(cohort.stub(course, assignment), "softmax")).strip()
    for page in _pages(course, assignment, folder, tmp_path, ("moved-softmax",))["moved-softmax"]:
        answers = _answers(page)
        assert any(stub in a for a in answers), answers
        assert not any(MOVED in a for a in answers) and MOVED in page
