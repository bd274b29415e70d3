"""The two screens people use, driven in a real browser (Debian's Chromium through Playwright).

Students: JupyterLab on a released assignment, with nbgrader's exchange behind its Assignments
tab: fetch, write a cell, run the part's check cell, Validate, submit. Instructors: formgrader on
a course folder `course grade` wrote: the scores, a written answer graded by hand, the exports.
Each server starts once for the module; every step leaves a screenshot in artifacts/browser/.
"""

import csv
import json
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request

import pytest

from autograder import cli
from autograder.mistakes import cohort
from selfcheck.program import grade_id

sync_api = pytest.importorskip("playwright.sync_api",
                               reason="playwright is a test extra: `make test` installs it (pip install -e '.[test]')")

pytestmark = pytest.mark.slow

BIN = os.path.dirname(sys.executable)
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SHOTS = os.path.join(ROOT, "artifacts", "browser")
TOKEN = "browser-test-token"
# Lab settings of a quiet, predictable screen: every cell in the page (no windowing), no news prompt.
LAB_SETTINGS = {
    "@jupyterlab/notebook-extension/tracker.jupyterlab-settings": {"windowingMode": "none"},
    "@jupyterlab/apputils-extension/notification.jupyterlab-settings": {"fetchNews": "false",
                                                                        "checkForUpdates": False},
}


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _env(home):
    """A student's or TA's session: its own HOME and Jupyter folders, the course's programs."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("JUPYTER", "MPLBACKEND"))}
    env.update(HOME=str(home), PATH=BIN + os.pathsep + env.get("PATH", ""),
               JUPYTER_CONFIG_DIR=str(home / ".jupyter"), JUPYTER_DATA_DIR=str(home / ".local/share/jupyter"),
               JUPYTER_RUNTIME_DIR=str(home / ".runtime"))
    return env


@pytest.fixture(scope="module")
def serve(tmp_path_factory):
    """``serve(folder, home)``: JupyterLab on 127.0.0.1 serving ``folder`` (its cwd too, so nbgrader
    reads the nbgrader_config.py there), with token auth; stopped when the module ends."""
    started = []

    def start(folder, home):
        settings = home / ".lab-settings"
        for name, values in LAB_SETTINGS.items():
            os.makedirs((settings / name).parent, exist_ok=True)
            (settings / name).write_text(json.dumps(values))
        port = _free_port()
        cmd = [os.path.join(BIN, "jupyter"), "lab", "--no-browser", "--ip=127.0.0.1", f"--port={port}",
               "--ServerApp.port_retries=0", f"--IdentityProvider.token={TOKEN}",
               f"--ServerApp.root_dir={folder}", f"--LabApp.user_settings_dir={settings}",
               f"--LabApp.workspaces_dir={home / '.workspaces'}"]
        if os.geteuid() == 0:
            cmd.append("--allow-root")
        log = open(home / ".jupyter-server.log", "w")
        proc = subprocess.Popen(cmd, cwd=folder, env=_env(home), stdout=log, stderr=subprocess.STDOUT)
        started.append((proc, log))
        url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 60
        while True:
            try:
                with urllib.request.urlopen(f"{url}/api/status?token={TOKEN}", timeout=2):
                    return url
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"JupyterLab did not start:\n{(home / '.jupyter-server.log').read_text()[-3000:]}")
                time.sleep(0.3)

    yield start
    for proc, log in started:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()


@pytest.fixture(scope="module")
def browser(chromium):
    with sync_api.sync_playwright() as pw:
        launched = pw.chromium.launch(executable_path=chromium, args=["--no-sandbox", "--disable-gpu"])
        yield launched
        launched.close()


@pytest.fixture
def page(browser):
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    context.set_default_timeout(30_000)
    yield context.new_page()
    context.close()


def _shot(page, name, folder=SHOTS):
    os.makedirs(folder, exist_ok=True)
    page.screenshot(path=os.path.join(folder, f"{name}.png"))


# --- students, in JupyterLab ---------------------------------------------------------------------------

@pytest.fixture(scope="module")
def student(course, copy_course, serve, tmp_path_factory):
    """A course with its exchange open and `attention` released into it, and a student's JupyterLab
    whose nbgrader config names that exchange: (url, the student's folder, the course)."""
    base = tmp_path_factory.mktemp("student")
    home_course, exchange, desk = base / "course", base / "exchange", base / "desk"
    copy_course(home_course)
    desk.mkdir()
    course_cmd = [os.path.join(BIN, "course"), "--config", str(home_course / "course.yaml")]
    for cmd, cwd in ((course_cmd + ["exchange", "--setup", "--root", str(exchange), str(home_course)], base),
                     ([os.path.join(BIN, "nbgrader"), "release_assignment", "attention"], home_course)):
        done = subprocess.run(cmd, cwd=cwd, env=_env(base), capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stdout + done.stderr
    (desk / ".jupyter").mkdir()
    # what the README tells a student to write in ~/.jupyter/nbgrader_config.py
    (desk / ".jupyter" / "nbgrader_config.py").write_text(
        f"c = get_config()\nc.Exchange.root = {str(exchange)!r}\n"
        f"c.CourseDirectory.course_id = {course.course_id!r}\n")
    return serve(desk, desk), desk, course


def _open_lab(page, url, path=""):
    page.goto(f"{url}/lab/tree/{path}?reset&token={TOKEN}" if path else f"{url}/lab?reset&token={TOKEN}")
    page.wait_for_selector("#jp-main-dock-panel")
    if path:
        page.keyboard.press("Control+B")          # the file browser aside: the notebook at full width


def _assignment_list(page):
    page.get_by_role("menuitem", name="Nbgrader").click()
    page.get_by_role("menuitem", name="Assignment List").click()
    return page.locator("#released_assignments_list")


def test_a_student_fetches_the_assignment_in_the_assignments_tab(student, page):
    url, desk, _ = student
    _open_lab(page, url)
    released = _assignment_list(page)
    released.locator(".list_item", has_text="attention").get_by_role("button", name="Fetch").click()
    page.locator("#fetched_assignments_list .list_item", has_text="attention").first.wait_for()
    _shot(page, "student-1-fetched")
    assert (desk / "attention" / "attention.ipynb").exists()
    assert (desk / "attention" / "selfcheck").is_dir()


@pytest.fixture(scope="module")
def fetched(student):
    """The fetched folder, fetched here with nbgrader's command when the Assignments tab test did not run."""
    url, desk, course = student
    if not (desk / "attention").exists():
        done = subprocess.run([os.path.join(BIN, "nbgrader"), "fetch_assignment", "attention"], cwd=desk,
                              env=_env(desk), capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stdout + done.stderr
    return student


def _cells(page):
    """The cells of the notebook on screen (a lab that restores its tabs keeps others, hidden)."""
    return page.locator(".jp-NotebookPanel:not(.lm-mod-hidden) .jp-Notebook .jp-Cell")


def _run(page, index, code=None):
    """Run cell ``index`` with Shift+Enter, first typing ``code`` over its text (select all, type)
    as a student would; returns its output once its prompt shows a new execution count."""
    cell = _cells(page).nth(index)
    prompt = cell.locator(".jp-InputPrompt").element_handle()
    before = prompt.inner_text()
    _click(page, cell.locator(".cm-content"))
    if code is not None:
        page.keyboard.press("Control+A")
        page.keyboard.insert_text(code)
    started = "([el, before]) => el.textContent !== before"      # '[*]:' while it runs, then its count
    for attempt in range(3):        # a key press can be lost while the lab is still busy: press again
        page.keyboard.press("Shift+Enter")
        try:
            page.wait_for_function(started, arg=[prompt, before], timeout=20_000)
            break
        except sync_api.TimeoutError:
            _click(page, cell.locator(".cm-content"))
    page.wait_for_function("([el, before]) => !el.textContent.includes('*') && el.textContent !== before",
                           arg=[prompt, before], timeout=90_000)
    return cell.locator(".jp-OutputArea").inner_text()


def _click(page, target):
    """Click ``target``. The lab asks for a kernel when the notebook's was slow to start (a loaded
    machine): take the one it offers, as a student would. Any other dialog in the way fails the
    test with what it says."""
    for attempt in range(2):
        try:
            target.click(timeout=15_000)
            return
        except sync_api.TimeoutError:
            dialog = page.locator(".jp-Dialog")
            if not dialog.count():
                raise
            text = dialog.first.inner_text()
            if attempt or not text.startswith("Select Kernel"):
                raise AssertionError(f"a dialog is in the way: {text!r}") from None
            dialog.first.locator(".jp-mod-accept").click()


def _index(nb, gid):
    return next(i for i, c in enumerate(nb["cells"]) if grade_id(c) == gid)


def test_the_check_cell_on_screen_for_a_wrong_then_a_right_answer(fetched, page):
    url, desk, course = fetched
    assignment = course.assignment("attention")
    solved = cohort.solved(course, assignment)
    code = {grade_id(c): c["source"] for c in solved["cells"]}
    mistake = cohort.catalogue(course, "softmax")[0]["softmax-no-max-shift"]["cells"]["softmax"].strip()
    _open_lab(page, url, "attention/attention.ipynb")
    page.wait_for_selector(".jp-Notebook-ExecutionIndicator[data-status='idle']", timeout=90_000)
    _run(page, _index(solved, "imports"))
    for gid in ("softmax", "entropy_bits", "attend"):
        _run(page, _index(solved, gid), mistake if gid == "softmax" else code[gid])
    check = _index(solved, "check_softmax")
    wrong = _run(page, check)
    _cells(page).nth(check).scroll_into_view_if_needed()
    _shot(page, "student-2-check-wrong")
    assert "SelfCheckFailed" in wrong and "FAIL" in wrong
    assert "overflow" in wrong.lower() or "largest score" in wrong.lower(), wrong

    _run(page, _index(solved, "softmax"), code["softmax"])
    right = _run(page, check)
    _cells(page).nth(check).scroll_into_view_if_needed()
    _shot(page, "student-3-check-right")
    assert "public checks pass" in right and "FAIL" not in right and "Error" not in right, right


def test_a_student_submits_in_the_assignments_tab_and_sees_it_listed(fetched, page):
    url, desk, course = fetched
    _open_lab(page, url)
    _assignment_list(page)
    fetched_row = page.locator("#fetched_assignments_list .list_item", has_text="attention").first
    fetched_row.get_by_role("button", name="Submit").click()
    submitted = page.locator("#submitted_assignments_list .list_item", has_text="attention").first
    submitted.wait_for()
    _shot(page, "student-5-submitted")
    inbound = desk.parent / "exchange" / course.course_id / "inbound"
    assert [name for name in os.listdir(inbound) if "+attention+" in name]


def _validate(page):
    """Click nbgrader's Validate in the notebook's toolbar; the text of the dialog it opens."""
    page.locator(".validate-button").click()
    dialog = page.locator(".jp-Dialog", has_text="Validation Results")
    dialog.wait_for(timeout=180_000)
    return dialog


@pytest.mark.parametrize("state", ["stub", "solved"])
def test_validate_agrees_with_the_self_check(fetched, page, state):
    url, desk, course = fetched
    assignment = course.assignment("attention")
    folder = desk / f"validate-{state}"
    shutil.copytree(course.release(assignment), folder, ignore=shutil.ignore_patterns("__pycache__"))
    nb = cohort.solved(course, assignment) if state == "solved" else cohort.stub(course, assignment)
    (folder / assignment.notebook).write_text(json.dumps(nb))
    _open_lab(page, url, f"{folder.name}/{assignment.notebook}")
    dialog = _validate(page)
    _shot(page, f"student-4-validate-{state}")
    text = dialog.inner_text()
    if state == "solved":
        assert "Success! Your notebook passes all the tests." in text, text
    else:
        for part in assignment.parts:       # each check cell fails, and says what is left to write
            assert f"SelfCheckFailed: {part.id}: " in text, text
        assert "not written yet" in text, text
        assert "selfcheck/__init__.py" not in text, text     # the error points at the cell, not the runner


# --- instructors, in formgrader -------------------------------------------------------------------------

@pytest.fixture(scope="module")
def formgrader(graded_demo, serve, tmp_path_factory):
    """JupyterLab (formgrader inside) in a copy of the folder `course grade` wrote for the demo cohort."""
    folder = tmp_path_factory.mktemp("formgrader") / "course"
    shutil.copytree(graded_demo[0], folder)
    home = folder.parent / "ta"
    home.mkdir()
    return serve(folder, home), folder


def _csv(path):
    with open(path) as fh:
        return list(csv.DictReader(fh))


def _score_cells(page, url, assignment_id):
    """formgrader's Manage Submissions table: {student id: "score / max"} once every row is in."""
    page.goto(f"{url}/formgrader/manage_submissions/{assignment_id}")
    page.locator("#main-table td.student-id").first.wait_for()
    rows = page.locator("#main-table tr")
    return {rows.nth(i).locator(".student-id").inner_text(): rows.nth(i).locator(".score").inner_text()
            for i in range(rows.count())}


def _hand_grade(page, url, student, assignment_id, cell, points, comment):
    """Grade written answer ``cell`` of ``student``'s submission in formgrader, with a comment."""
    page.goto(f"{url}/formgrader/manage_students/{student}/{assignment_id}")
    page.locator("a[href*='/formgrader/submissions/']").first.click()
    page.wait_for_load_state("networkidle")      # the grades and comments are loaded, their fields live
    for field, value, api in ((f"input#{cell}", str(points), "grade"),
                              (f"textarea#{cell}-comment", comment, "comment")):
        # formgrader saves a field when it loses focus
        with page.expect_response(lambda r: f"/formgrader/api/{api}/" in r.url and r.request.method == "PUT"):
            page.locator(field).fill(value)
            page.locator(field).press("Tab")
    page.locator(f"input#{cell}").scroll_into_view_if_needed()


def test_formgrader_shows_the_grades_and_takes_a_hand_grade_that_the_exports_carry(course, formgrader, page):
    url, folder = formgrader
    grades = _csv(folder / "grades.csv")
    _open_lab(page, url)                 # the token logs the browser in; formgrader's pages take the cookie
    for assignment in course.assignments:
        shown = _score_cells(page, url, assignment.id)
        # grades.csv has a row (a 0) for every student; formgrader lists those who handed it in
        expected = {r["student_id"]: r for r in grades if r["assignment"] == assignment.id
                    and (folder / "submitted" / r["student_id"] / assignment.id).is_dir()}
        assert set(shown) == set(expected), assignment.id
        for student, text in shown.items():
            score, top = (float(x) for x in text.split("/"))
            assert score == pytest.approx(float(expected[student]["score"]), abs=0.01), (student, text)
            assert top == pytest.approx(float(expected[student]["max_score"]), abs=0.01), (student, text)
    _shot(page, "instructor-1-submissions")

    assignment = next(a for a in course.assignments if a.written)
    cell, points = next(iter(assignment.written.items()))
    comment = "Right: the keys differ along the query's direction."
    _hand_grade(page, url, "reference", assignment.id, cell, points, comment)
    _shot(page, "instructor-2-hand-grade")

    assert cli.main(["export", str(folder)]) == 0
    ref = next(r for r in _csv(folder / "totals.csv") if r["student_id"] == "reference")
    assert float(ref[assignment.id]) == sum(p.points for p in assignment.parts) + points
    with open(folder / "gradescope" / "reference" / assignment.id / "results.json") as fh:
        result = json.load(fh)
    hand = next(t for t in result["tests"] if t["number"] == cell)
    assert hand["score"] == points and hand["status"] == "passed" and comment in hand["output"]


def _statuses(page, url, assignment_id):
    """formgrader's Manage Submissions table: {student id: its status ("graded", "needs manual grading")}."""
    page.goto(f"{url}/formgrader/manage_submissions/{assignment_id}")
    page.locator("#main-table td.student-id").first.wait_for()
    rows = page.locator("#main-table tr")
    return {rows.nth(i).locator(".student-id").inner_text(): rows.nth(i).locator(".status").inner_text().strip()
            for i in range(rows.count())}


def test_a_submission_the_ta_graded_stays_graded_in_formgrader_after_a_regrade(course, formgrader, page):
    url, folder = formgrader
    assignment = next(a for a in course.assignments if a.written)
    _open_lab(page, url)
    for cell, points in assignment.written.items():         # the TA grades each of its answers
        _hand_grade(page, url, "reference", assignment.id, cell, points / 2, f"half of {cell}")
    assert _statuses(page, url, assignment.id)["reference"] == "graded"
    # grading it again autogrades the assignment's every hand-in in nbgrader, as any new hand-in does
    assert cli.main(["grade", str(folder / "submitted"), "--out", str(folder), "--student", "reference",
                     "--force"]) == 0
    shown = _statuses(page, url, assignment.id)
    _shot(page, "instructor-3-graded-after-regrade")
    assert shown["reference"] == "graded", shown
    assert {s for s, status in shown.items() if status == "graded"} == {"reference"}, shown
