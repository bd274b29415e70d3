"""The course's nbgrader extensions on in-memory notebooks, as nbgrader tests its own
preprocessors: each one run on a notebook built with nbformat, no nbgrader command, no kernel.
Where a preprocessor reads nbgrader's gradebook, it is a real one in a temporary folder."""

import copy
import json
import os
import shutil
import sqlite3
import stat

import nbformat
import nbgrader.api
import pytest
import sqlalchemy
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook
from nbgrader.api import Gradebook
from nbgrader.preprocessors import ComputeChecksums, OverwriteCells, SaveAutoGrades, SaveCells
from traitlets.config import Config
from traitlets.utils.importstring import import_item

from autograder.nbgrader import settings, staging
from autograder.records import store
from autograder.nbgrader import selfcheck_kit
from autograder.nbgrader.preprocessors import (AddSelfCheckKit, ApplyResults, Refuse, RestoreCells,
                                               SanitizeMarkdown, SaveGrades)
from autograder.records.results import Submission
from selfcheck.program import grade_id, program, read_notebook, source


def _cell(gid, code="", **nbgrader):
    return new_code_cell(code, metadata={"nbgrader": {"grade_id": gid, "grade": False, "solution": False,
                                                      "locked": False, "schema_version": 3, **nbgrader}})


def _ids(nb):
    return [c.metadata.get("nbgrader", {}).get("grade_id") for c in nb.cells]


# --- RestoreCells ---------------------------------------------------------------------------------

def _released():
    """The released notebook, as generate_assignment leaves it (checksums of its nbgrader cells)."""
    nb = new_notebook(cells=[
        _cell("imports", "import numpy as np", locked=True),
        _cell("softmax", "def softmax(z): ...", solution=True),
        _cell("show_table", "show(softmax)", locked=True),
        _cell("check_softmax", "check('softmax')", grade=True, locked=True, points=4),
        _cell("causal_mask", "def causal_mask(n): ...", solution=True),
        _cell("check_causal_mask", "check('causal_mask')", grade=True, locked=True, points=3)])
    return ComputeChecksums().preprocess(nb, {})[0]


@pytest.fixture
def gradebook(tmp_path):
    """The URL of a gradebook holding the released notebook's cells, as generate_assignment
    records them (nbgrader's SaveCells). nbgrader stamps a new database's schema version by running
    its alembic command, seconds of CPU; nothing here migrates, so the version table is made first."""
    path = tmp_path / "gradebook.db"
    with sqlite3.connect(path) as db:
        db.execute("CREATE TABLE alembic_version (version_num VARCHAR(32) NOT NULL)")
    url = f"sqlite:///{path}"
    with Gradebook(url) as gb:
        gb.add_assignment("attention")
    SaveCells().preprocess(_released(), _resources(url))
    return url


def _resources(url):
    return {"nbgrader": {"db_url": url, "assignment": "attention", "notebook": "attention"}}


def _without_checks():
    """A hand-in whose student deleted both check cells and the locked show_ cell before the first."""
    nb = _released()
    nb.cells = [c for c in nb.cells if c.metadata.nbgrader["grade_id"] in ("imports", "softmax", "causal_mask")]
    nb.cells[1].source = "def softmax(z): return z"
    return nb


def test_a_deleted_check_cell_comes_back_after_the_nearest_earlier_cell_the_hand_in_has(gradebook):
    nb, _ = RestoreCells(add_missing_cells=True).preprocess(_without_checks(), _resources(gradebook))
    assert _ids(nb) == ["imports", "softmax", "check_softmax", "causal_mask", "check_causal_mask"]
    restored = nb.cells[2]
    assert restored.metadata["nbgrader"]["points"] == 4 and restored.metadata["nbgrader"]["grade"]
    assert restored["id"] == "restored-check_softmax"
    assert restored.source.endswith("check('softmax')")
    nbformat.validate(nb)


def test_nbgrader_s_own_overwritecells_fails_on_that_hand_in(gradebook):
    """Why RestoreCells exists: nbgrader looks the restored cell's neighbour (show_table) up among
    the hand-in's grade and solution cells, and the whole submission fails."""
    with pytest.raises(KeyError):
        OverwriteCells(add_missing_cells=True).preprocess(_without_checks(), _resources(gradebook))


def test_restorecells_overwrites_a_test_cell_the_student_edited(gradebook):
    nb = _without_checks()
    edited = copy.deepcopy(_released().cells[-1])
    edited.source, edited.metadata.nbgrader["points"] = "print('all passed')", 30
    nb.cells.append(edited)
    nb, _ = RestoreCells(add_missing_cells=True).preprocess(nb, _resources(gradebook))
    check = nb.cells[_ids(nb).index("check_causal_mask")]
    assert check.source == "check('causal_mask')" and check.metadata["nbgrader"]["points"] == 3


def test_restorecells_overwrites_a_hand_in_as_nbgrader_s_overwritecells_reading_its_cells_once(gradebook):
    """Where nbgrader's OverwriteCells does not fail, RestoreCells leaves the very notebook it
    leaves (edited locked and test cells put back, points as released, a grade id the gradebook
    does not know dropped, a changed cell type undone), reading the gradebook's cells once where
    nbgrader's reads them one query each."""
    nb = _released()
    nb.cells[0].source = "import numpy as np  # and more"
    nb.cells[3].metadata.nbgrader["points"] = 40
    nb.cells[2] = new_markdown_cell("a table", metadata=nb.cells[2].metadata)
    nb.cells.append(_cell("made_up", "x = 1", locked=True))
    more = copy.deepcopy(nb)
    more.cells += [_cell(f"made_up_{i}", "x = 1", locked=True) for i in range(10)]
    queries = []
    with Gradebook(gradebook) as gb:            # the process's engine for this gradebook
        sqlalchemy.event.listen(gb.engine, "before_cursor_execute", lambda *args: queries.append(args[2]))

    def overwritten(preprocessor, notebook):
        queries.clear()
        out, _ = preprocessor.preprocess(copy.deepcopy(notebook), _resources(gradebook))
        return out, len(queries)
    (theirs, few), (_, many) = overwritten(OverwriteCells(), nb), overwritten(OverwriteCells(), more)
    assert many == few + 10
    (ours, few), (_, many) = overwritten(RestoreCells(), nb), overwritten(RestoreCells(), more)
    assert many == few
    assert ours == theirs and ours.cells[0].source == "import numpy as np"
    assert "made_up" not in [c.metadata.nbgrader.get("grade_id") for c in ours.cells]


# --- SaveGrades -----------------------------------------------------------------------------------

def _autograded(student):
    """A hand-in as autograde's SaveAutoGrades sees it: ``ann`` answered causal_mask and failed its
    check, ``ben`` answered nothing and passed both (a TA had scored his check_softmax by hand)."""
    nb = _released()
    if student == "ann":
        nb.cells[4].source = "def causal_mask(n): return n"
        nb.cells[5].outputs = [nbformat.v4.new_output("error", ename="AssertionError", evalue="", traceback=[])]
    return nb


def _saved(url, preprocessor):
    """The gradebook's grades and comments after ``preprocessor`` saved both hand-ins, and its commits."""
    commits = []
    with Gradebook(url) as gb:
        sqlalchemy.event.listen(gb.engine, "commit", lambda *args: commits.append(1))
    for student in ("ann", "ben"):
        preprocessor.preprocess(_autograded(student), {"nbgrader": {**_resources(url)["nbgrader"], "student": student}})
    with sqlite3.connect(url[len("sqlite:///"):]) as db:
        rows = {table: sorted(db.execute(f"SELECT * FROM {table}").fetchall()) for table in ("grade", "comment")}
    return rows, len(commits)


def test_savegrades_leaves_the_gradebook_as_nbgrader_s_saveautogrades_reading_and_committing_once(gradebook, tmp_path):
    """SaveGrades writes every score, flag and comment nbgrader's SaveAutoGrades writes (a failed
    check 0, a passed one its points, a hand score flagged again, an unchanged answer "No
    response."), with one commit a notebook where nbgrader's makes one a cell."""
    with Gradebook(gradebook) as gb:
        for student in ("ann", "ben"):
            gb.add_student(student)
            gb.add_submission("attention", student)
        gb.find_grade("check_softmax", "attention", "attention", "ben").manual_score = 2.0
        gb.db.commit()
    theirs_url = f"sqlite:///{tmp_path / 'theirs.db'}"
    shutil.copy(gradebook[len("sqlite:///"):], theirs_url[len("sqlite:///"):])
    (theirs, their_commits), (ours, our_commits) = _saved(theirs_url, SaveAutoGrades()), _saved(gradebook, SaveGrades())
    assert ours == theirs
    # a notebook: one commit opening the gradebook (nbgrader's course check), then ours one for its
    # rows, nbgrader's one for each of its two scores and two comments
    assert (our_commits, their_commits) == (2 * (1 + 1), 2 * (1 + 4))
    with Gradebook(gradebook) as gb:
        ann, ben = (gb.find_submission_notebook("attention", "attention", s) for s in ("ann", "ben"))
        assert (ann.score, ben.score) == (4.0, 2.0 + 3.0)
        assert ben.needs_manual_grade and not ann.needs_manual_grade
        assert gb.find_comment("softmax", "attention", "attention", "ann").auto_comment == "No response."
        assert gb.find_comment("causal_mask", "attention", "attention", "ann").auto_comment is None


# --- ApplyResults ---------------------------------------------------------------------------------

def _record(student, **changes):
    check = {"name": "t", "doc": "sums to one", "visibility": "hidden", "weight": 1, "status": "failed",
             "message": "sums to one: got 2"}
    record = {"student": student, "assignment": "attention", "notebook": "attention.ipynb", "problem": None,
              "parts": [{"part": "softmax", "score": 2.5, "max_score": 4, "status": "partial",
                         "reason": "1 of 2 checks did not pass", "checks": [dict(check, status="passed"), check]}]}
    return Submission.from_json({**record, **changes})


def _graded_notebook():
    return new_notebook(cells=[_cell("softmax", "def softmax(z): ...", solution=True),
                               _cell("check_softmax", "check('softmax')", grade=True, points=4),
                               _cell("check_causal_mask", "check('causal_mask')", grade=True, points=4)])


def _apply(tmp_path, student):
    return ApplyResults(results_dir=str(tmp_path / "results")).preprocess(
        _graded_notebook(), {"nbgrader": {"student": student, "assignment": "attention", "notebook": "attention"}})


def test_each_test_cell_gets_its_part_s_verdict_and_a_part_without_one_scores_zero(tmp_path):
    store.write_result(str(tmp_path), _record("ann"))
    nb, _ = _apply(tmp_path, "ann")
    solution, graded, ungraded = nb.cells
    assert solution.get("outputs") == []
    stream, result = graded.outputs
    assert result.output_type == "execute_result" and result.data["text/plain"] == "2.5"
    assert stream.text.startswith("softmax: 2.5 / 4 (partial)")
    assert "FAIL [hidden] sums to one" in stream.text and "ok   [hidden] sums to one" in stream.text
    assert [o.output_type for o in ungraded.outputs] == ["error"]
    nbformat.validate(nb)


def test_a_hand_in_without_a_result_is_not_recorded_rather_than_scored_zero(tmp_path):
    """Its results file gone or unreadable is the grader's problem: nbgrader's autograde fails for
    it, saying why, and the gradebook keeps what it held."""
    with pytest.raises(RuntimeError, match="nobody: no result to record"):
        _apply(tmp_path, "nobody")
    (tmp_path / "results" / "ann").mkdir(parents=True)
    (tmp_path / "results" / "ann" / "attention.json").write_text("{ not json")
    with pytest.raises(RuntimeError, match="ann: no result to record"):
        _apply(tmp_path, "ann")


def test_a_hand_in_the_grader_failed_on_is_not_recorded(tmp_path):
    store.write_result(str(tmp_path), _record("bob", problem="grader error: the sandbox did not start",
                                        parts=[{"part": "softmax", "score": 0, "max_score": 4,
                                                "status": "grader-error", "reason": "the sandbox did not start"}]))
    with pytest.raises(RuntimeError, match="bob: not graded"):
        _apply(tmp_path, "bob")


# --- SanitizeMarkdown -----------------------------------------------------------------------------

def test_a_written_answer_keeps_its_text_and_loses_its_script():
    answer = ("The **keys** are alike, $\\sqrt{d_k}$ scales them.\n\n| d_k | entropy |\n|---|---|\n| 4 | 1.2 |\n\n"
              "<script>alert('HOSTILE')</script><img src=x onerror=alert(1)>\n\n[more](javascript:alert(2))")
    code = new_code_cell("x = '<script>'")
    nb, _ = SanitizeMarkdown().preprocess(new_notebook(cells=[new_markdown_cell(answer), code]), {})
    html = nb.cells[0].source
    assert "<strong>keys</strong>" in html and "\\sqrt{d_k}" in html and "<td>1.2</td>" in html
    assert "<script" not in html and "onerror" not in html and "javascript:" not in html
    assert html.startswith("<div>\n") and "\n\n" not in html      # one block nbgrader passes through
    assert nb.cells[1].source == "x = '<script>'"


def test_a_huge_markdown_cell_is_shown_as_text_not_rendered_at_the_graders_cost():
    """A megabyte of markdown (rendered, it costs the grader minutes outside any sandbox) is shown
    as escaped text, its start and its length, in a fraction of that; the answers beside it are
    rendered as before."""
    import signal
    answer = "The **keys** are alike."
    huge = "*_" * 250_000 + "<script>alert(1)</script>\n\n[x](javascript:alert(2))"
    cells = [new_markdown_cell(huge), new_markdown_cell(answer)]

    def too_slow(*_):
        raise AssertionError("rendering took more than 10 s")
    previous = signal.signal(signal.SIGALRM, too_slow)
    signal.setitimer(signal.ITIMER_REAL, 10)
    try:
        nb, _ = SanitizeMarkdown().preprocess(new_notebook(cells=cells), {})
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    shown = nb.cells[0].source
    assert shown.startswith("<div>\n<pre>*_*_") and "500,0" in shown and "\n\n" not in shown
    assert "<script" not in shown and len(shown) < 30_000
    assert "<strong>keys</strong>" in nb.cells[1].source


def _sanitized(*cells):
    nb, _ = SanitizeMarkdown().preprocess(new_notebook(cells=list(cells)), {})
    return [c.source for c in nb.cells]


def test_a_pasted_image_is_shown_and_stays_shown_when_sanitised_again():
    """JupyterLab's attachment (markdown and HTML references) is written into the cell as the image,
    checked again at generate_feedback like any image in a cell; the source then holds no
    ``attachment:`` reference for a renderer to miss."""
    import frontend_notebooks as front
    cell = new_markdown_cell("See ![image.png](attachment:image.png) and <img src=\"attachment:my%20plot.png\">")
    cell.attachments = {"image.png": {"image/png": front.PNG_B64}, "my plot.png": {"image/png": front.PNG_B64}}
    once = _sanitized(cell)[0]
    shown = f'src="data:image/png;base64,{front.PNG_B64}"'
    assert once.count(shown) == 2 and "attachment:" not in once and "\n\n" not in once
    again = _sanitized(new_markdown_cell(once))[0]
    assert again.count(shown) == 2 and "attachment:" not in again


def test_an_attachment_that_is_not_a_safe_image_is_a_note():
    import base64
    import frontend_notebooks as front
    fake_png = base64.b64encode(b"<html><script>alert(1)</script></html>").decode()
    cell = new_markdown_cell("".join(f"![{n}](attachment:{n})\n\n" for n in ("a.svg", "b.png", "c.html", "gone.png")))
    cell.attachments = {"a.svg": {"image/svg+xml": front.SVG_B64}, "b.png": {"image/png": fake_png},
                        "c.html": {"text/html": fake_png}}
    html = _sanitized(cell)[0]
    assert "data:" not in html and "<script" not in html and "attachment:" not in html
    assert "(image a.svg not shown: an SVG image can carry a script" in html
    assert "(image b.png not shown: not a PNG image)" in html
    assert "(image c.html not shown: only PNG, JPEG, GIF and WebP images are shown, not text/html)" in html
    assert "(image gone.png not shown: the notebook has no such attachment)" in html
    typed = _sanitized(new_markdown_cell(f'<img src="data:image/svg+xml;base64,{front.SVG_B64}">'))[0]
    assert "data:" not in typed


def test_a_tas_comment_is_escaped_for_nbgraders_feedback_page():
    cell = new_markdown_cell("answer")
    cell.metadata["nbgrader"] = {"comment": "<b onclick=x()>ok</b> **good** [x](javascript:alert(1))"}
    nb, _ = SanitizeMarkdown().preprocess(new_notebook(cells=[cell]), {})
    comment = nb.cells[0].metadata["nbgrader"]["comment"]
    assert "&lt;b onclick=x()&gt;ok&lt;/b&gt;" in comment and "<strong>good</strong>" in comment
    assert "javascript:" not in comment and "<b " not in comment


# --- CheckCellMetadata ----------------------------------------------------------------------------

def _metadata_cases():
    """(name, notebook): valid ones, and one of every way nbgrader's check refuses a notebook."""
    valid = _released()
    cases = {"valid": valid, "no nbgrader metadata": new_notebook(cells=[new_code_cell("x = 1")])}

    def changed(name, i, **meta):
        nb = copy.deepcopy(valid)
        nb.cells[i].metadata.nbgrader.update(meta)
        for key in [k for k, v in meta.items() if v is None]:
            del nb.cells[i].metadata.nbgrader[key]
        cases[name] = nb
    changed("points not a number", 3, points="four")
    changed("no points", 3, points=None)
    changed("no grade id", 1, grade_id=None)
    changed("an empty grade id", 1, grade_id="")
    changed("a duplicate grade id", 4, grade_id="softmax")
    changed("an unknown key", 0, colour="red")
    changed("locked not a flag", 0, locked="yes")
    changed("schema too old", 0, schema_version=2)
    changed("schema too new", 0, schema_version=4)
    nb = copy.deepcopy(valid)
    nb.cells.append(new_markdown_cell("answer", metadata={"nbgrader": {
        "grade_id": "answer", "grade": True, "solution": False, "locked": False, "points": 1, "schema_version": 3}}))
    cases["a markdown grade cell that is not a solution"] = nb
    return cases


def _outcome(check, nb):
    try:
        check(nb)
    except Exception as exc:  # noqa: BLE001 - the outcome compared is the exception itself
        return type(exc), str(exc)
    return None


@pytest.mark.parametrize("case", sorted(_metadata_cases()))
def test_check_cell_metadata_accepts_and_refuses_as_nbgrader_s_own(case):
    """The course's CheckCellMetadata (the schema checked once) accepts what nbgrader's accepts
    and raises what nbgrader's raises, with its words, on every way the metadata can be wrong."""
    from nbgrader.nbgraderformat import MetadataValidator
    from nbgrader.preprocessors import CheckCellMetadata as Nbgraders

    from autograder.nbgrader.preprocessors import CheckCellMetadata
    nb = _metadata_cases()[case]
    for _ in range(2):        # the second time with the validator built the first time
        assert _outcome(lambda n: CheckCellMetadata().preprocess(n, {}), copy.deepcopy(nb)) == \
            _outcome(lambda n: Nbgraders().preprocess(n, {}), copy.deepcopy(nb))
    assert (case == "valid" or case.startswith("no nbgrader")) == \
        (_outcome(lambda n: MetadataValidator().validate_nb(n), nb) is None)


# --- Refuse, and nbgrader's configuration -----------------------------------------------------------

def test_refuse_stops_the_converter_with_course_yaml_s_problem():
    with pytest.raises(RuntimeError, match="until course.yaml is fixed: limits: memory_mb"):
        Refuse(problem="limits: memory_mb must be a number").preprocess(_graded_notebook(), {})


def _ours(cfg):
    """Every dotted name of a class in nbgrader's configuration that is the course's."""
    names = []
    for section in cfg.values():
        for value in section.values():
            for name in value if isinstance(value, list) else [value]:
                if isinstance(name, str) and name.startswith("autograder."):
                    names.append(name)
    return names


def test_a_course_yaml_that_does_not_load_refuses_every_converter(tmp_path, capsys):
    (tmp_path / "course.yaml").write_text("course_id: [\n")
    cfg = Config()
    settings.configure(cfg, out=str(tmp_path), course_yaml=str(tmp_path / "course.yaml"))
    refuse = [f"{settings.PACKAGE}.preprocessors.Refuse"]
    for converter in ("GenerateAssignment", "GenerateFeedback"):
        assert cfg[converter].preprocessors == refuse
    assert cfg.Autograde.sanitize_preprocessors == cfg.Autograde.autograde_preprocessors == refuse
    assert import_item(refuse[0]) is Refuse and cfg.Refuse.problem
    assert capsys.readouterr().err.startswith("error: ")


def test_every_class_nbgrader_is_given_by_name_is_there(course, tmp_path):
    cfg = Config()
    settings.configure(cfg, out=str(tmp_path), course_yaml=course.path)
    names = _ours(cfg)
    assert {n.rsplit(".", 1)[1] for n in names} == {"SafeCollect", "SafeReleaseFeedback", "SafeCsvExport",
                                                    "RestoreCells", "SanitizeMarkdown", "ApplyResults",
                                                    "AddSelfCheckKit", "CourseLatePenalties", "CheckCellMetadata",
                                                    "SaveGrades"}
    for name in names:
        assert isinstance(import_item(name), type), name
    assert stat.S_IMODE(os.stat(tmp_path).st_mode) == 0o700


def test_grades_csv_declares_the_ids_nbgrader_export_writes():
    """grades.csv's Output (tests/test_hostile.py checks its id columns unchanged) and SafeCsvExport,
    which writes them and which plain `nbgrader export` loads on its own, name the same id columns:
    neither can import the other without loading nbgrader or an import circle."""
    from autograder.nbgrader import grades_csv
    from autograder.nbgrader.plugins import SafeCsvExport
    assert grades_csv.EXPORT.outputs[0].ids == SafeCsvExport.IDS


# what `course grade --out DIR` wrote into DIR/nbgrader_config.py before the package was laid out
EARLIER_CONFIG = """# Written by `course grade`: this folder holds one batch's working state.
import os
from autograder.nbgrader_bridge import configure

configure(get_config(), out=os.path.dirname(os.path.abspath(__file__)),  # noqa: F821
          course_yaml={course_yaml!r})
"""


def _load_config(path):
    """What nbgrader's configuration is after it runs the ``nbgrader_config.py`` at ``path``."""
    cfg = Config()
    with open(path) as fh:
        exec(compile(fh.read(), str(path), "exec"), {"get_config": lambda: cfg, "__file__": str(path)})
    return cfg


@pytest.mark.parametrize("written_by", ["this version", "an earlier version"])
def test_a_grading_folder_s_nbgrader_config_configures_the_course(course, tmp_path, written_by):
    if written_by == "this version":
        settings.write_course_folder(course, str(tmp_path))
    else:
        (tmp_path / "nbgrader_config.py").write_text(EARLIER_CONFIG.format(course_yaml=course.path))
    cfg = _load_config(tmp_path / "nbgrader_config.py")
    expected = settings.settings(course, str(tmp_path))
    for section in ("CourseDirectory", "Autograde", "ApplyResults", "ExchangeFactory", "GenerateFeedback"):
        assert cfg[section] == expected[section], section
    assert cfg.AddSelfCheckKit.course_yaml == course.path


# --- AddSelfCheckKit ------------------------------------------------------------------------------

def test_nbgrader_s_generate_assignment_gets_the_self_check_kit(course, tmp_path):
    assignment = course.assignment("weighted_attention")
    cfg = Config()
    cfg.CourseDirectory.release_directory = str(tmp_path)
    nb = new_notebook(cells=[_cell("imports")])
    kit = AddSelfCheckKit(config=cfg, course_yaml=course.path)
    out, _ = kit.preprocess(nb, {"nbgrader": {"assignment": assignment.id, "notebook": "weighted_attention"}})
    assert out is nb
    folder = tmp_path / assignment.id
    shipped = sorted(os.path.relpath(os.path.join(d, f), folder / "selfcheck")
                     for d, _, files in os.walk(folder / "selfcheck") for f in files if f.endswith(".py"))
    assert shipped == selfcheck_kit.kit_modules(course, assignment)
    manifest = json.loads((folder / "selfcheck" / "manifest.json").read_text())
    assert [p["id"] for p in manifest["parts"]] == [p.id for p in assignment.parts]
    assert (folder / "conftest.py").read_text() == selfcheck_kit.CONFTEST
    for part in assignment.parts:         # its public checks, from the part's folder
        with open(os.path.join(course.root, part.public)) as fh:
            assert (folder / part.public_file).read_text() == fh.read()


# --- the staged converters' reading of a hand-in --------------------------------------------------

@pytest.fixture(scope="module")
def release(course):
    assignment = course.assignment("attention")
    return read_notebook(course.release(assignment, assignment.notebook))


def _as_json(nb):
    return json.dumps(nb).encode()


def test_a_hand_in_carries_the_release_s_nbgrader_metadata_never_its_own(release):
    check = next(i for i, c in enumerate(release["cells"]) if c["metadata"].get("nbgrader", {}).get("grade"))
    nb = copy.deepcopy(release)
    nb["cells"][check]["metadata"]["nbgrader"]["points"] = 100          # claims more points
    duplicate = copy.deepcopy(nb["cells"][check])                        # and a second cell of that id
    invented = copy.deepcopy(nb["cells"][check])
    invented["metadata"]["nbgrader"]["grade_id"] = "check_bonus"         # and a test cell of its own
    nb["cells"] += [duplicate, invented]
    raw, why = staging.as_released(_as_json(nb), release)
    assert why is None
    cells = json.loads(raw)["cells"]
    assert cells[check]["metadata"]["nbgrader"] == release["cells"][check]["metadata"]["nbgrader"]
    assert "nbgrader" not in cells[-2]["metadata"] and "nbgrader" not in cells[-1]["metadata"]
    assert [c["source"] for c in cells] == [source(c) for c in nb["cells"]]


def test_a_hand_in_nbformat_would_refuse_is_handed_to_nbgrader_as_a_valid_notebook(release):
    """Fields nbformat's schema refuses (a text execution count, no outputs, keys of its own, a
    kernelspec that is a number, an id nbformat does not allow, twice) are not the student's
    answers: nbgrader gets a valid notebook with every cell's source, never a refusal (a 0)."""
    nb = copy.deepcopy(release)
    for cell in nb["cells"]:
        if cell["cell_type"] == "code":
            cell["execution_count"] = "not-a-number"
            cell.pop("outputs", None)
            cell["bogus_key"] = 1
        cell["id"] = "not a valid id!"
    nb["metadata"]["kernelspec"] = 5
    raw, why = staging.as_released(_as_json(nb), release)
    assert why is None
    nbformat.validate(nbformat.reads(raw.decode(), as_version=4))
    assert [source(c) for c in json.loads(raw)["cells"]] == [source(c) for c in nb["cells"]]


def test_a_cell_whose_type_changed_loses_its_grade_id(release):
    nb = copy.deepcopy(release)
    solution = next(c for c in nb["cells"] if c["metadata"].get("nbgrader", {}).get("solution")
                    and c["cell_type"] == "code")
    solution["cell_type"] = "markdown"
    raw, why = staging.as_released(_as_json(nb), release)
    assert why is None
    assert all(c["metadata"].get("nbgrader", {}).get("grade_id") != solution["metadata"]["nbgrader"]["grade_id"]
               for c in json.loads(raw)["cells"])


@pytest.mark.parametrize("raw, reason", [
    (b"not json", "not valid JSON"),
    (b'{"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": []}', "not this assignment's notebook"),
])
def test_a_hand_in_grading_cannot_read_is_not_handed_to_nbgrader(release, raw, reason):
    data, why = staging.as_released(raw, release)
    assert data is None and reason in why


def test_only_the_release_s_files_are_read_and_a_linked_notebook_is_not(course, tmp_path):
    assignment = course.assignment("attention")
    release_dir = course.release(assignment)
    honest = tmp_path / "submitted" / "ann" / assignment.id
    honest.mkdir(parents=True)
    with open(course.release(assignment, assignment.notebook), "rb") as fh:
        (honest / assignment.notebook).write_bytes(fh.read())
    (honest / "notes.html").write_text("<script>alert(1)</script>")
    (honest / ".course-staged.json").write_text("{}")      # the course's note beside a copy it staged
    files, problems, left_out = staging.read_handin(str(tmp_path / "submitted"), "ann", assignment.id, release_dir)
    assert set(files) == {assignment.notebook} and problems == [] and left_out == ["notes.html"]
    linked = tmp_path / "submitted" / "bob" / assignment.id
    linked.mkdir(parents=True)
    (linked / assignment.notebook).symlink_to(course.source(assignment, assignment.notebook))
    files, problems, _ = staging.read_handin(str(tmp_path / "submitted"), "bob", assignment.id, release_dir)
    with open(course.release(assignment, assignment.notebook), "rb") as fh:
        assert files == {assignment.notebook: fh.read()}            # the released stub stands in
    assert len(problems) == 1 and "link" in problems[0]


def test_a_new_gradebook_reads_its_schema_version_in_this_process(tmp_path, monkeypatch):
    """nbgrader would start `alembic heads` as a program for every new gradebook: not here."""
    import subprocess
    import nbgrader.api
    from autograder.nbgrader import apps      # what runs nbgrader's converters

    def no_programs(*args, **kwargs):
        raise AssertionError(f"a program was started: {args[0]}")
    monkeypatch.setattr(subprocess, "check_output", no_programs)
    with Gradebook(f"sqlite:///{tmp_path / 'gradebook.db'}", "course") as gb:
        version = gb.db.execute(nbgrader.api.text("SELECT version_num FROM alembic_version")).scalar()
    assert version == apps.alembic_head.head()


@pytest.mark.slow      # starts `alembic` as nbgrader does
def test_the_schema_version_read_here_is_what_alembic_prints():
    import subprocess
    import sys
    import nbgrader.api
    from autograder.nbgrader import alembic_head
    with nbgrader.api._temp_alembic_ini("sqlite:////tmp/gradebook.db") as ini:
        printed = subprocess.check_output([os.path.join(os.path.dirname(sys.executable), "alembic"), "-c", ini,
                                           "heads"], text=True)
    assert printed.split()[0] == alembic_head.head()


def test_gradebooks_of_one_url_share_an_engine_each_with_its_own_session(tmp_path):
    """Every Gradebook nbgrader opens on a URL gets the process's one engine (its compiled
    statements kept), with a session of its own: what one has not committed the other does not
    see, one closing leaves the other working, and a gradebook deleted and made again is read
    afresh, no connection left open on the old file."""
    from nbgrader.api import MissingEntry
    from autograder.nbgrader import shared_engine  # noqa: F401 - what every module running nbgrader imports
    path = tmp_path / "gradebook.db"
    url = f"sqlite:///{path}"
    with Gradebook(url) as one, Gradebook(url) as other:
        assert one.engine is other.engine and one.db is not other.db
        one.add_student("ann")
        one.db.add(nbgrader.api.Student(id="ben"))
        one.db.flush()
        with pytest.raises(MissingEntry):
            other.find_student("ben")
        one.db.commit()
        one.close()
        assert other.find_student("ben").id == "ben"
        other.add_student("cleo")
    with Gradebook(url) as again:
        assert [s.id for s in again.students] == ["ann", "ben", "cleo"]
    path.unlink()
    with Gradebook(url) as made_again:
        assert made_again.students == []
    with Gradebook(f"sqlite:///{tmp_path / 'other.db'}") as elsewhere:
        assert elsewhere.engine is not made_again.engine


def test_one_autograde_run_holds_its_connections_and_asks_once_for_tables_and_course(tmp_path):
    """Within ``held`` (one autograde run) Gradebooks on a URL reuse one connection, a gradebook
    made within it gets its tables (the answer for a database still without them is never kept),
    and the course is asked for once; after it no connection is left open, and a gradebook
    deleted and made again, between runs or within one, is read afresh."""
    from sqlalchemy import event
    from autograder.nbgrader import shared_engine
    path = tmp_path / "gradebook.db"
    url = f"sqlite:///{path}"
    with shared_engine.held():
        with Gradebook(url, "course") as first:      # a new file: nbgrader makes its tables here
            engine = first.engine
            first.add_student("ann")
        opened, asked = [], []
        event.listen(engine, "connect", lambda *args: opened.append(1))
        event.listen(engine, "before_cursor_execute", lambda conn, cursor, sql, *rest: asked.append(sql))
        for _ in range(3):
            with Gradebook(url, "course") as again:
                assert [s.id for s in again.students] == ["ann"]
        assert opened == [], "a Gradebook within one run made a connection of its own"
        assert sum("sqlite_master" in sql for sql in asked) == 1, asked      # once, now that all are there
        assert not any("FROM course" in sql for sql in asked), asked
    assert engine.pool.checkedin() == 0, "a connection outlived the run"
    path.unlink()
    with shared_engine.held(), Gradebook(url, "course") as made_again:
        assert made_again.students == []
        assert [c.id for c in made_again.db.query(nbgrader.api.Course)] == ["course"]
    with shared_engine.held():        # deleted within a run: opened afresh, never the file that is gone
        with Gradebook(url, "course") as before:
            before.add_student("dee")
        path.unlink()
        with Gradebook(url, "course") as after:
            assert after.students == []
            after.add_student("eve")
    with Gradebook(url, "course") as read:
        assert [s.id for s in read.students] == ["eve"]


@pytest.mark.slow      # runs nbgrader's generate_assignment, and `course release`
def test_a_release_is_registered_once_and_again_when_its_points_change(course_copy, tmp_path, monkeypatch):
    from autograder import cli
    from autograder.nbgrader import apps, gradebook

    def only_first(raw):
        raw["assignments"] = dict([next(iter(raw["assignments"].items()))])
    copy = course_copy(only_first)
    assignment, out = copy.assignments[0], str(tmp_path / "out")
    settings.write_course_folder(copy, out)
    assert not gradebook.holds_release(copy, assignment, out)
    apps.register(copy, assignment, out)
    assert gradebook.holds_release(copy, assignment, out)
    with monkeypatch.context() as patched:
        patched.setattr(apps, "generate", lambda *args, **kwargs: pytest.fail("registered again, unchanged"))
        apps.register(copy, assignment, out)

    part = assignment.parts[0]
    changed = course_copy(lambda raw: raw["assignments"][assignment.id]["parts"][part.id].update(
        points=part.points + 1))
    assert cli.main(["--config", changed.path, "release"]) == 0
    assert not gradebook.holds_release(changed, assignment, out)
    apps.register(changed, assignment, out)
    assert gradebook.holds_release(changed, assignment, out)
    with Gradebook(settings.settings(changed, out).CourseDirectory.db_url, changed.course_id) as gb:
        cell = gb.find_grade_cell(part.check_cell, os.path.splitext(assignment.notebook)[0], assignment.id)
        assert cell.max_score == part.points + 1


def test_course_late_penalties_reads_course_yaml_again_once_it_changes(course_copy):
    """CourseLatePenalties parses course.yaml once, not for every notebook, and again as soon as its
    text changes (a due date moved between two autogrades in formgrader's one process)."""
    from autograder.nbgrader.preprocessors import courselatepenalties
    copy_ = course_copy()
    assert courselatepenalties._course(copy_.path) is courselatepenalties._course(copy_.path)
    first = copy_.assignments[0].id
    changed = course_copy(lambda raw: raw["assignments"][first].update(due="2030-01-02T03:04:00+00:00"))
    assert courselatepenalties._course(changed.path).assignment(first).due == changed.assignment(first).due
    assert changed.assignment(first).due != copy_.assignments[0].due


@pytest.mark.slow     # a fresh Python that imports nbgrader: seconds, more than make check's share
def test_loading_nbgrader_leaves_jsonschema_s_iri_grammars_until_an_iri_is_checked(tmp_path):
    """rfc3987_syntax builds its Lark grammars only when jsonschema first checks an IRI, and then
    answers as it does loaded up front: in the course's commands, and (the .pth file make writes)
    in a plain interpreter of the environment, as nbgrader and jupyter run, from any folder,
    without importing the course's code (which the grading account may own: root runs the .pth)."""
    import subprocess
    import sys
    from autograder import lazy_iri
    check = ("from jsonschema import FormatChecker; c = FormatChecker(); "
             "print(c.conforms('http://example.com/ä', 'iri'), c.conforms('not an iri', 'iri'), "
             "c.conforms('a b', 'iri-reference'))")
    untouched = "import sys, jsonschema; assert 'rfc3987_syntax.syntax_helpers' not in sys.modules; "
    eager = f"import sys; sys.modules.pop({lazy_iri.NAME!r}); " + check
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    said = [subprocess.run([sys.executable, "-c", code], cwd=cwd, capture_output=True, text=True, check=True).stdout
            for code, cwd in (("from autograder.nbgrader import apps; " + untouched + check, root),
                              ("import sys; assert 'autograder' not in sys.modules; " + untouched + check, tmp_path),
                              (eager, tmp_path))]
    assert said == ["True False False\n"] * 3


# --- the written answers of the course's feedback page --------------------------------------------

def test_the_written_answers_are_read_through_the_reader(course, tmp_path):
    """An autograded notebook that is a link (to the solution) gives no answers; a real one its
    answers, rendered safely."""
    from autograder.mistakes import cohort
    from autograder.nbgrader.answers import written_answers
    assignment = course.assignment("attention")
    folder = tmp_path / "autograded" / "linked" / assignment.id
    folder.mkdir(parents=True)
    os.symlink(course.source(assignment, assignment.notebook), folder / assignment.notebook)
    assert written_answers(course, str(tmp_path), "linked", assignment.id) == {}
    nb = cohort.stub(course, assignment)
    cell = next(c for c in nb["cells"] if (c["metadata"].get("nbgrader") or {}).get("grade_id") == "answer_selection")
    cell["source"] = "mine <script>alert(1)</script> ![x](http://example.org/x.png)"
    cohort.write(nb, str(tmp_path / "autograded"), "real", assignment)
    found = written_answers(course, str(tmp_path), "real", assignment.id)
    assert set(found) == set(assignment.written)
    assert "mine" in found["answer_selection"] and "<script" not in found["answer_selection"]
    assert "(image http://example.org/x.png not shown here)" in found["answer_selection"]


@pytest.mark.filterwarnings("ignore:Object of type:sqlalchemy.exc.SAWarning")   # nbgrader's add_submission
def test_a_running_formgrader_reads_what_course_grade_wrote_and_the_tas_first_save_counts(tmp_path):
    """formgrader keeps one gradebook session for its server's life; a resubmission graded in
    another process flags a hand grade again. The next request must show the flag, and the TA's
    confirming save (the same score) must clear it in the gradebook, the first time."""
    from types import SimpleNamespace

    from nbgrader.server_extensions.formgrader.base import BaseHandler

    from autograder.nbgrader import formgrader_session
    url = f"sqlite:///{tmp_path}/gradebook.db"
    with Gradebook(url) as gb:
        gb.add_assignment("attention")
        gb.add_notebook("attention", "attention")
        gb.add_grade_cell("answer_selection", "attention", "attention", max_score=1.0, cell_type="markdown")
        gb.add_student("carol")
        gb.add_submission("attention", "carol")
    formgrader_session.install()
    served = Gradebook(url)          # formgrader's, for the life of its server

    def request():                   # a handler per request, as tornado makes them
        gb = BaseHandler.gradebook.fget(SimpleNamespace(settings={"nbgrader_gradebook": served}))
        return gb, gb.find_grade("answer_selection", "attention", "attention", "carol")
    gb, grade = request()
    grade.manual_score, grade.needs_manual_grade = 0.35, False      # the TA grades it
    gb.db.commit()
    gb, grade = request()             # the page shows it graded: read into the session
    assert grade.needs_manual_grade is False
    with Gradebook(url) as other:     # carol resubmits; `course grade` flags the hand grade again
        other.find_grade("answer_selection", "attention", "attention", "carol").needs_manual_grade = True
        other.db.commit()
    gb, grade = request()
    assert grade.needs_manual_grade is True, "formgrader must show the flag course grade set"
    grade.manual_score, grade.needs_manual_grade = 0.35, False      # the TA confirms the same score
    gb.db.commit()
    served.close()
    with Gradebook(url) as check:
        assert check.find_grade("answer_selection", "attention", "attention", "carol").needs_manual_grade is False


# --- what a student's cell can put in formgrader's page --------------------------------------------

# formgrader's score controls are found by the grade id, a click on `full-credit` saves the full score
TAKEOVER = ('<div class="nbgrader_cell"><span id="check_softmax"></span><a class="full-credit modal-backdrop in">'
            '</a></div><nav class="navbar navbar-fixed-top" id="fake-nav" style="z-index:9999" name="nav">x</nav>')
TAKEOVER_MARKS = {"check_softmax", "fake-nav", "nbgrader_cell", "full-credit", "modal-backdrop", "in", "navbar",
                  "navbar-fixed-top"}


def _formgrade_page(course, nb, staged=True):
    """``nb`` staged, sanitised at autograde and rendered as formgrader renders a submission
    (without ``staged``, ``nb`` rendered as it is)."""
    from nbconvert.exporters import HTMLExporter
    from nbgrader.server_extensions.formgrader import handlers
    clean = nbformat.reads(json.dumps(nb), as_version=4)
    if staged:
        raw, why = staging.as_released(_as_json(nb), read_notebook(course.release(course.assignment("attention"),
                                                                                    "attention.ipynb")))
        assert why is None
        clean, _ = SanitizeMarkdown().preprocess(nbformat.reads(raw.decode(), as_version=4), {})
    config = settings.settings(course)
    config.HTMLExporter.template_name = "formgrade"
    config.HTMLExporter.extra_template_basedirs = [handlers.template_path]
    resources = {"base_url": "", "index": 0, "total": 1, "assignment_id": "attention", "notebook_id": "attention"}
    return HTMLExporter(config=config).from_notebook_node(clean, resources=resources)[0]


def _marks(page):
    """How many elements carry each id, each class and each style and name (``style=...``) of the page."""
    from collections import Counter
    from html.parser import HTMLParser
    found: Counter = Counter()

    class Marks(HTMLParser):
        def handle_starttag(self, tag, attrs):
            for name, value in attrs:
                if name == "id" and value:
                    found[value] += 1
                elif name == "class" and value:
                    found.update(value.split())
                elif name in ("style", "name"):
                    found[f"{name}={value}"] += 1
    Marks().feed(page)
    return found


def test_no_student_cell_puts_an_id_or_class_in_formgraders_page(course, release):
    """A raw cell (nbconvert passes it through as HTML with its ids and classes) and a markdown
    cell holding elements that formgrader's script finds (the grade id's score box, a
    full-credit link over the page, a navigation bar): the page has each id and class as often
    as the released notebook's page has it, and the raw cell's text is shown as text. A raw cell
    of a notebook autograded before it was staged so is not in the page at all."""
    nb = copy.deepcopy(release)
    html = {"raw_mimetype": "text/html"}
    nb["cells"][1:1] = [{"cell_type": "raw", "id": "raw-1", "metadata": {}, "source": TAKEOVER},
                        new_markdown_cell(f"## check_softmax\n\n{TAKEOVER}\n\n<p id='check_softmax'>answer</p>"),
                        {"cell_type": "raw", "id": "raw-2", "metadata": html, "source": TAKEOVER}]
    page, plain = _formgrade_page(course, nb), _formgrade_page(course, release)
    marks, expected = _marks(page), _marks(plain)
    assert {m: marks[m] for m in TAKEOVER_MARKS} == {m: expected[m] for m in TAKEOVER_MARKS}
    assert marks["style=z-index:9999"] == marks["name=nav"] == 0
    assert page.count('&lt;span id="check_softmax"&gt;') == 2       # the raw cells, as text
    nb["cells"][2:3] = []       # a notebook autograded before raw cells were staged as markdown
    before = _marks(_formgrade_page(course, nb, staged=False))
    assert {m: before[m] for m in TAKEOVER_MARKS} == {m: expected[m] for m in TAKEOVER_MARKS}


def test_a_solution_moved_into_another_type_of_cell_is_text_and_the_stub_is_the_answer(release):
    """Correct code in a markdown or raw cell with the solution's grade id, before the untouched
    stub: staging gives the id to the stub, and grading (selfcheck/program.py) runs the stub,
    the code formgrader shows."""
    at = next(i for i, c in enumerate(release["cells"]) if grade_id(c) == "softmax")
    for kind in ("markdown", "raw"):
        moved = {"cell_type": kind, "metadata": copy.deepcopy(release["cells"][at]["metadata"]),
                 "source": "def softmax(z):\n    return z"}
        nb = {**release, "cells": [*release["cells"][:at], moved, *release["cells"][at:]]}
        staged = json.loads(staging.as_released(_as_json(nb), release)[0])
        assert "nbgrader" not in staged["cells"][at]["metadata"] and staged["cells"][at]["cell_type"] == "markdown"
        assert grade_id(staged["cells"][at + 1]) == "softmax"
        assert ("softmax", source(release["cells"][at])) in program(nb, release).cells
        assert program(staged, release).cells == program(nb, release).cells
